"""``torch.func.functional_call`` and ``stack_module_state``: a module as a function of its parameters and buffers."""
from collections.abc import Sequence

from ..nn.utils.stateless import call_with


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the given tensors in place of its parameters and buffers for this one call.

    ``parameter_and_buffer_dicts`` is a dict of dotted names to tensors, or a sequence of such dicts with no name
    in two of them (parameters and buffers apart, as ``stack_module_state`` gives them). ``args`` that is not a
    tuple is the one positional argument. ``tie_weights``: names that share one tensor in the module (tied
    embeddings) share the given value; ``strict``: the names must be exactly the module's parameters and buffers.
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        values = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence) and not isinstance(parameter_and_buffer_dicts, str):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        seen, repeated = set(), []
        for d in parameter_and_buffer_dicts:
            for key in d:
                if key in seen and key not in repeated:
                    repeated.append(key)
                seen.add(key)
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        values = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return call_with(module, values, args, kwargs, tie_weights=tie_weights, strict=strict)


def stack_module_state(models):
    """The parameters and buffers of same-class ``models``, each stacked along a new leading dimension, as two
    dicts (an ensemble to ``vmap`` over with ``functional_call``); stacked parameters are new leaves that require
    grad."""
    from ..ops import stack
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def stacked(named):
        tables = [dict(named(m)) for m in models]
        out = {}
        for name in tables[0]:
            tensors = [t[name] for t in tables]
            grads = {t.requires_grad for t in tensors}
            if len(grads) > 1:
                raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
            value = stack(tensors)
            out[name] = value.detach().requires_grad_() if grads == {True} else value
        return out

    return stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers())
