"""One transform's view of the autograd graph: which tensors it differentiates, and what else its results hang on.

torch's function transforms wrap tensors per nesting level. Here a transform gives ``func`` fresh leaves for the
inputs it differentiates (or views of them where they already require grad: an outer transform or the caller
differentiates through this one) and runs the ordinary autograd engine. Its results keep a graph, built with
``create_graph=True``, only where they depend on something outside the transform that requires grad; otherwise
they come back detached, as torch's unwrapped results do. Nested transforms (``grad(grad(f))``, ``jacrev(jacrev(f))``,
``vmap(grad(f))``) therefore work through higher-order gradients, with no levels of their own.
"""
from ..autograd.graph import reached_leaves
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor


class Level:
    """The tensors one transform call owns, and the grad mode it was called under."""

    def __init__(self):
        self.owned = {}  # id -> tensor: the fresh leaves this transform made (kept alive so ids stay unique)
        self.grad_enabled = is_grad_enabled()

    def differentiable(self, x):
        """``x`` as this transform's input to differentiate: a view where ``x`` already requires grad (so outer
        derivatives flow through), a fresh leaf otherwise."""
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if x.requires_grad:
            return x.view_as(x)
        return self.own(x.detach().requires_grad_())

    def own(self, leaf):
        self.owned[id(leaf)] = leaf
        return leaf

    def reaches_outside(self, tensors):
        """Whether any of ``tensors`` depends on a tensor requiring grad that this transform did not make."""
        return any(id(leaf) not in self.owned for leaf in reached_leaves(tensors))

    def needs_graph(self, tensors):
        """Whether derivatives of ``tensors`` must be recorded (``create_graph``) for someone outside."""
        return self.grad_enabled and self.reaches_outside(tensors)

    def release(self, value):
        """``value`` as the transform returns it: detached unless it depends on something outside."""
        if isinstance(value, Tensor) and value.requires_grad and not self.reaches_outside([value]):
            return value.detach()
        return value
