"""``vmap``: a function over a batch, from a function over one example (``torch.func.vmap``).

torch pushes a batch dimension through every op with batching rules. Here the function runs once per batch
element, on views of the inputs with the mapped dimension selected away, and the results are stacked along
``out_dims``: semantically what torch's batching computes, and as differentiable (a ``select`` and a ``stack``
around the function), so nested ``vmap``, ``vmap(grad(f))`` and ``grad`` of a vmapped function work. It costs one
call per element instead of one batched call. ``randomness`` (watched on the default CPU generator; the GPUs'
generators keep their state on the device): ``"error"`` raises when the function draws random numbers, ``"same"``
gives every element the same draws (the generator restarts from one state for each), ``"different"`` lets each
element draw its own (other numbers than torch's one batched draw). With ``out_dims=None`` an output must not
depend on the batch; that is checked by comparing the elements' values. An empty batch runs the function once, on
zeros, to learn the outputs' shapes. ``chunk_size`` is accepted; elements run one at a time whatever it is.
In-place writes to unmapped inputs happen once, as in torch, or raise torch's error (``_unmapped.py``); so does
``vmap`` of a module whose batch norms would update running statistics (``batch_norm.py``).
"""
import functools

import numpy as np

from ..tensor import Tensor
from ._pytree import broadcast_to_and_flatten, tree_flatten, tree_unflatten
from ._unmapped import UnmappedWrites
from .batch_norm import check_vmapped_module

__all__ = ["vmap"]


def check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")


def _name(func):
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over dimension ``in_dims`` of its inputs (an int, or a tuple matching the arguments with None
    for those not mapped); the outputs gain the batch dimension at ``out_dims``. See the module's docstring for how
    it runs."""
    check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return _call(func, in_dims, out_dims, randomness, args, kwargs)
    return wrapped


def _check_out_dims(out_dims, func):
    for d in tree_flatten(out_dims)[0]:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a "
                             "python collection of ints representing where in the outputs the vmapped dimension "
                             "should appear.")


def _mapped_inputs(func, in_dims, args):
    """(batch size, flat in_dims made non-negative, flat args, args spec), with torch's checks."""
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you "
                         "are trying to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    dims = broadcast_to_and_flatten(in_dims, spec)
    if dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has "
                         f"structure {tree_flatten(in_dims)[1]} but inputs has structure {spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{where}: Got in_dim={d} for an input but in_dim must be either an integer dimension "
                             "or None.")
        if not isinstance(arg, Tensor):
            raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type {type(arg)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the respective in_dim")
        if not -arg.dim() <= d < arg.dim():
            raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a Tensor of "
                             f"dimensionality {arg.dim()} so expected in_dim to satisfy -{arg.dim()} <= in_dim < "
                             f"{arg.dim()}.")
        if isinstance(d, bool):  # an int to Python, refused by the size() call torch makes with it
            raise TypeError("size(): argument 'dim' (position 1) must be int, not bool")
        dims[i] = d % arg.dim()
    sizes = [arg.shape[d] for arg, d in zip(flat_args, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0], dims, flat_args, spec


class _Randomness:
    """What ``randomness`` asks of the default generator around each element's call."""

    def __init__(self, mode):
        from .. import random
        self.mode, self.random = mode, random
        self.start = random.get_rng_state() if mode == "same" else None

    def before(self):
        if self.mode == "same":
            self.random.set_rng_state(self.start)
        elif self.mode == "error":
            self.state = self.random.get_rng_state().numpy()

    def after(self):
        if self.mode == "error" and not np.array_equal(self.state, self.random.get_rng_state().numpy()):
            raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use "
                               "the 'same' or 'different' randomness flags on vmap or perform the randomness "
                               "operation out of vmap")


def _element(flat_args, dims, index):
    """The arguments of one batch element (a zero-filled stand-in when the batch is empty)."""
    if index is None:
        return [a if d is None else a.new_zeros(a.shape[:d] + a.shape[d + 1:]) for a, d in zip(flat_args, dims)]
    return [a if d is None else a.select(d, index) for a, d in zip(flat_args, dims)]


def _call(func, in_dims, out_dims, randomness, args, kwargs):
    _check_out_dims(out_dims, func)
    size, dims, flat_args, spec = _mapped_inputs(func, in_dims, args)
    check_vmapped_module(func)
    rng = _Randomness(randomness)
    writes = UnmappedWrites(flat_args, dims) if size > 1 else None
    results = []
    for index in range(size) if size else [None]:
        rng.before()
        if writes:
            writes.before()
        results.append(func(*tree_unflatten(_element(flat_args, dims, index), spec), **kwargs))
        rng.after()
        if writes:
            writes.after()
    return _stack_outputs(func, results, out_dims, size)


def _stack_outputs(func, results, out_dims, size):
    """The per-element results as one batched output, the batch at ``out_dims``."""
    from ..ops import stack
    name = _name(func)
    flat_first, out_spec = tree_flatten(results[0])
    if isinstance(results[0], Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            dims = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            dims = list(out_dims)
        else:
            dims = None
    else:
        dims = broadcast_to_and_flatten(out_dims, out_spec)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {tree_flatten(out_dims)[1]} but outputs "
                         f"has structure {out_spec}.")
    per_element = [tree_flatten(r)[0] for r in results]
    out = []
    for k, d in enumerate(dims):
        values = [flat[k] for flat in per_element]
        if d is None:
            if isinstance(values[0], Tensor) and any(
                    v is not values[0] and not np.array_equal(v.detach().cpu().numpy(),
                                                              values[0].detach().cpu().numpy()) for v in values):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            out.append(values[0])
            continue
        if not isinstance(values[0], Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(values[0])}. "
                             "Did you mean to set out_dims= to None for output?")
        batched = stack(values, dim=d)
        out.append(batched if size else batched.narrow(d % batched.dim(), 0, 0))
    return tree_unflatten(out, out_spec)
