"""``engine.func`` (torch.func): composable function transforms on the ordinary autograd engine.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``functional_call`` / ``stack_module_state`` and ``replace_all_batch_norm_modules_``, with torch's signatures
(``functionalize`` and ``debug_unwrap`` are identities here: there are no wrapper tensors). How they run
without functorch's batched and level-wrapped tensors: ``_level.py`` (nesting), ``eager_transforms.py`` (forward
mode by the double-vjp trick), ``vmap.py`` (one call per batch element).
"""
from .batch_norm import replace_all_batch_norm_modules_
from .eager_transforms import (debug_unwrap, functionalize, grad, grad_and_value, hessian, jacfwd, jacrev, jvp,
                               linearize, vjp)
from .functional_call import functional_call, stack_module_state
from .vmap import vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize", "vmap",
           "functional_call", "stack_module_state", "replace_all_batch_norm_modules_", "functionalize",
           "debug_unwrap"]
