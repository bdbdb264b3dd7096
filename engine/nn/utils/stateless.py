"""Calling a module with other parameters and buffers swapped in for one call (``torch.nn.utils.stateless``).

``functional_call(module, {"weight": w}, x)`` puts ``w`` where ``module.weight`` was, runs ``module(x)`` and puts
the original back, so a module's forward becomes a function of its state: what ``engine.func.grad`` and
``vmap`` need for per-sample gradients or ensembles. The tensors go straight into ``_parameters``/``_buffers``
(a plain tensor may stand where a Parameter was); names the module lacks become attributes for the call.
"""
import contextlib
import itertools
import warnings

from ...tensor import Tensor

__all__ = ["functional_call"]

_MISSING = object()  # a name the module did not have before the call


def _tied_groups(module):
    """{name: all names of the same tensor} for the parameters and buffers registered under several names."""
    by_tensor = {}
    for name, tensor in itertools.chain(module.named_parameters(remove_duplicate=False),
                                        module.named_buffers(remove_duplicate=False)):
        by_tensor.setdefault(id(tensor), []).append(name)
    return {name: names for names in by_tensor.values() if len(names) > 1 for name in names}


def _untie(module, values):
    """``values`` with every name tied to a given one added, holding the given tensor (``tie_weights=True``)."""
    groups = _tied_groups(module)
    out = dict(values)
    for name in values:
        names = groups.get(name)
        if names is None:
            continue
        if len({id(values[n]) for n in names if n in values}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, which are tied. "
                             "Consider using tie_weights=False")
        for tied in names:
            out[tied] = values[name]
    return out


def _check_keys(module, names):
    """The one-line error of ``strict=True`` when ``names`` differ from the module's parameters and buffers."""
    valid = {n for n, _ in itertools.chain(module.named_parameters(remove_duplicate=False),
                                           module.named_buffers(remove_duplicate=False))}
    unexpected, missing = sorted(set(names) - valid), sorted(valid - set(names))
    parts = []
    if unexpected:
        parts.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
    if missing:
        parts.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
    if parts:
        raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}: {' '.join(parts)}")


def _owner(module, path, cache):
    """The submodule holding the dotted ``path``'s last name, and that name (submodules looked up once per call)."""
    from ..modules.module import Module
    prefix, _, attr = path.rpartition(".")
    owner = cache.get(prefix)
    if owner is None:
        owner, walked = module, []
        for part in prefix.split(".") if prefix else ():
            child = getattr(owner, part, None)
            if child is None:
                raise AttributeError(f"{owner._get_name()} has no attribute `{part}`")
            walked.append(part)
            if not isinstance(child, Module):
                raise TypeError(f"submodule `{'.'.join(walked)}`: {child} is not an instance of engine.nn.Module")
            owner = child
        cache[prefix] = owner
    return owner, attr


def _swap(owner, name, value):
    """Put ``value`` under ``name`` in ``owner`` (``_MISSING`` removes it); returns what was there."""
    if value is not _MISSING and value is not None and not isinstance(value, Tensor):
        raise TypeError(f"{value} is not an instance of engine.Tensor")
    for store in (owner._parameters, owner._buffers):
        if name in store:
            old = store[name]
            if value is _MISSING:
                del store[name]
            else:
                store[name] = value
            return old
    old = getattr(owner, name, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{name}`: {old} is not an instance of engine.Tensor")
    if value is not _MISSING:
        setattr(owner, name, value)
    elif old is not _MISSING:
        delattr(owner, name)
    return old


@contextlib.contextmanager
def reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    """Within the block, ``module`` holds ``parameters_and_buffers``; its own tensors come back after it. What the
    module put in place of a swapped tensor during the block (``self.count = self.count + 1``) is written back to
    the caller's dict."""
    values = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        _check_keys(module, values)
    cache = {}
    originals = {}
    try:
        for name, value in values.items():
            owner, attr = _owner(module, name, cache)
            originals[name] = (owner, attr, _swap(owner, attr, value))
        yield
    finally:
        current = {name: _swap(owner, attr, old) for name, (owner, attr, old) in originals.items()}
        parameters_and_buffers.update({k: current[k] for k in parameters_and_buffers if k in current})


def call_with(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with ``parameters_and_buffers`` swapped in (the shared body of both names)."""
    from ..parallel import DataParallel
    if isinstance(module, DataParallel):
        raise RuntimeError("The stateless API can't be used with nn.DataParallel module")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the tensors of ``parameters_and_buffers`` (dotted names) in place of its
    own for this call (deprecated in torch 2.0 for ``engine.func.functional_call``, its drop-in replacement).

    ``tie_weights``: names that share one tensor in the module share the given value (two different values for
    them raise); ``strict``: the names must be exactly the module's parameters and buffers.
    """
    warnings.warn("`engine.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `engine.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return call_with(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
