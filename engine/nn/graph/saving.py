"""One-file save/load of a compiled inference plan: the op list as JSON in the safetensors
metadata, every tensor the ops read (weights, running stats, constants) as safetensors data.

A saved file is data, never code. Loading never unpickles; an op names an engine ``Function``
class only; an op may name a numpy/CuPy function (its ``ufunc`` field) only from
``ALLOWED_UFUNCS``, the ones the engine's ops use; array dtypes are numeric; and every slot and
tensor reference is checked. A file that breaks any rule is refused with one line at load time,
before anything runs.

A live ``nn.Graph`` traces ``build`` again for each new input signature; a loaded graph has no
module to trace, so it runs only the signature it was saved with (count, structure, shapes, dtypes
and device of its inputs) and refuses any other with one line naming both.
"""
import importlib
import json

import numpy as np

from ... import _dtype
from ..._device import CPU, device, is_cuda_array, move
from ...autograd.function import Function
from ...tensor import Tensor, _new
from .capture import capture_plan
from .plan import CONST, SLOT, TENSOR, Op, Plan

FORMAT = "engine.nn.Graph/2"

# The array-module functions an op's ``ufunc`` field may name, by op class: exactly those the
# engine's comparison, bitwise/logical and predicate ops are built with (engine/ops/elementwise.py).
ALLOWED_UFUNCS = {
    "engine.ops.elementwise:_Compare": frozenset({
        "equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}),
    "engine.ops.elementwise:_Bitwise": frozenset({
        "bitwise_and", "bitwise_or", "bitwise_xor", "invert", "logical_not", "logical_and", "logical_or",
        "logical_xor"}),
    "engine.ops.elementwise:_Predicate": frozenset({"isnan", "isinf", "isfinite"}),
}

_NUMERIC_KINDS = "biufc"  # bool, signed and unsigned integers, floats, complex: no objects or strings


class _Encoder:
    """Turns op states into JSON values, collecting the arrays they hold (on the host) by key."""

    def __init__(self):
        self.arrays = {}
        self.ids = {}

    def array_key(self, arr):
        key = self.ids.get(id(arr))
        if key is None:
            key = self.ids[id(arr)] = f"t{len(self.arrays)}"
            self.arrays[key] = np.ascontiguousarray(move(arr, CPU))
        return key

    def value(self, v, where):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, Tensor):
            return {"__tensor__": self.array_key(v._data)}
        if isinstance(v, np.ndarray) or is_cuda_array(v):
            return {"__array__": self.array_key(v)}
        if isinstance(v, np.generic):
            return v.item()
        if isinstance(v, np.dtype):
            return {"__np_dtype__": v.name}
        if isinstance(v, _dtype.dtype):
            return {"__dtype__": v.name}
        if isinstance(v, tuple):
            return {"__tuple__": [self.value(x, where) for x in v]}
        if isinstance(v, list):
            return [self.value(x, where) for x in v]
        if isinstance(v, dict):
            return {"__dict__": {str(k): self.value(x, where) for k, x in v.items()}}
        if isinstance(v, slice):  # an indexing key (``y[:, :3]``, ``y[..., ::2]``)
            return {"__slice__": [self.value(x, where) for x in (v.start, v.stop, v.step)]}
        if v is Ellipsis:
            return {"__ellipsis__": True}
        raise TypeError(f"nn.Graph.save: {where} holds a {type(v).__name__}, which cannot be saved")


class _Refused(ValueError):
    """A saved graph that breaks a loading rule (the message says which)."""


def _decode(v, arrays):
    """The value ``_Encoder.value`` wrote, with its arrays looked up in ``arrays``."""
    if isinstance(v, list):
        return [_decode(x, arrays) for x in v]
    if not isinstance(v, dict):
        return v
    if "__tensor__" in v:
        return _new(_array(arrays, v["__tensor__"]))
    if "__array__" in v:
        return _array(arrays, v["__array__"])
    if "__np_dtype__" in v:
        return _numeric_dtype(np.dtype(v["__np_dtype__"]))
    if "__dtype__" in v:
        return _dtype.to_dtype(v["__dtype__"])
    if "__tuple__" in v:
        return tuple(_decode(x, arrays) for x in v["__tuple__"])
    if "__slice__" in v:
        return _slice(v["__slice__"])
    if "__ellipsis__" in v:
        return Ellipsis
    return {k: _decode(x, arrays) for k, x in v["__dict__"].items()}


def _slice(bounds):
    """A saved slice: three entries, each an integer or None."""
    if not (isinstance(bounds, list) and len(bounds) == 3
            and all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds)):
        raise _Refused(f"it holds a slice with bounds {bounds!r}, which are not three integers or nulls")
    return slice(*bounds)


def _array(arrays, key):
    if key not in arrays:
        raise _Refused(f"it refers to tensor {key!r}, which the file does not hold")
    return arrays[key]


def _numeric_dtype(dt):
    if dt.kind not in _NUMERIC_KINDS:
        raise _Refused(f"it holds the non-numeric dtype {dt.name!r}")
    return dt


# ---- input signatures ---------------------------------------------------------------------------
def _leaf_signature(t):
    """A tensor input's (shape, dtype, device), as ``nn.Graph`` keys its plans."""
    return [list(t.shape), t.dtype.name, str(t.device)]


def _short(value):
    """A constant argument on one short line."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 40 else text[:37] + "..."


def _render(spec, leaves):
    kind = spec[0]
    if kind == "t":
        shape, dtype, where = next(leaves)
        return f"{dtype}[{', '.join(str(n) for n in shape)}] on {where}"
    if kind in ("tuple", "list"):
        inner = ", ".join(_render(s, leaves) for s in spec[1])
        return f"({inner})" if kind == "tuple" else f"[{inner}]"
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {_render(s, leaves)}" for k, s in spec[1]) + "}"
    return _short(spec[1])


def describe_inputs(spec, leaf_signatures):
    """``(float32[2, 3, 8, 8] on cpu, flag=True)``: a call's arguments as the messages show them."""
    (_, (args_spec, kwargs_spec)), leaves = spec, iter(leaf_signatures)
    parts = [_render(s, leaves) for s in args_spec[1]]
    parts += [f"{k}={_render(s, leaves)}" for k, s in kwargs_spec[1]]
    return f"({', '.join(parts)})"


# ---- saving ---------------------------------------------------------------------------------------
def save_plan(plan, path):
    """Write ``plan`` (compiled by ``nn.Graph``, with its input signature) to the safetensors ``path``."""
    from safetensors.numpy import save_file
    if plan.input_signature is None:
        raise RuntimeError("nn.Graph.save: the plan has no input signature (only plans compiled by a graph "
                           "can be saved)")
    spec, leaves = plan.input_signature
    leaves = [[list(shape), dtype, where] for shape, dtype, where in leaves]
    enc = _Encoder()
    ops = []
    for op in plan.ops:
        name = f"{op.cls.__module__}:{op.cls.__qualname__}"
        args = []
        for kind, ref in op.args:
            if kind == SLOT:
                args.append(["slot", ref])
            elif kind == TENSOR:
                args.append(["tensor", enc.array_key(ref._data)])
            else:
                args.append(["const", enc.value(ref, f"argument of {name}")])
        record = {"op": name, "state": enc.value(op.state, f"state of {name}"), "args": args, "outs": op.outs}
        if op.data_dependent is not None:
            shapes, where = op.data_dependent
            record["traced_sizes"] = [[list(shape) for shape in shapes], where]
        ops.append(record)
    body = {"format": FORMAT, "ops": ops, "inputs": plan.input_slots, "outputs": plan.output_slots,
            "output_spec": enc.value(plan.output_spec, "output structure"), "n_slots": plan.n_slots,
            "input_spec": repr(spec), "input_leaves": leaves, "signature": describe_inputs(spec, leaves),
            "device": leaves[0][2] if leaves else "cpu"}
    save_file(enc.arrays, path, metadata={"graph": json.dumps(body)})


# ---- loading --------------------------------------------------------------------------------------
class LoadedGraph:
    """A saved inference plan, callable like the graph it came from with the inputs it was saved with. On the GPU
    its first call captures the plan into a CUDA graph, which later calls replay (``capture.py``)."""

    def __init__(self, plan, input_spec, input_leaves, signature):
        self.plan = plan
        self.input_spec = input_spec
        self.input_leaves = input_leaves
        self.signature = signature
        self.captured = None  # the plan's capture: made by the first call, False where there is none

    def __call__(self, *args, **kwargs):
        from .graph import _flatten, _unflatten
        leaves = []
        spec = _flatten((args, kwargs), leaves)
        given = [_leaf_signature(t) for t in leaves]
        if repr(spec) != self.input_spec or given != self.input_leaves:
            raise ValueError(f"LoadedGraph: saved for inputs {self.signature}, called with "
                             f"{describe_inputs(spec, given)}; a loaded graph cannot trace again, so save "
                             "one graph per input signature")
        arrays = [t._data for t in leaves]
        if self.captured is None:
            outputs = self.plan.run_arrays(arrays)
            self.captured = capture_plan(self.plan, arrays) or False
        elif self.captured:
            outputs = self.captured(arrays)
        else:
            outputs = self.plan.run_arrays(arrays)
        return _unflatten(self.plan.output_spec, [_new(a) for a in outputs])

    def __repr__(self):
        return f"LoadedGraph(inputs {self.signature}\n{self.plan.describe()}\n)"


def _function_class(name):
    """The engine ``Function`` subclass that ``module:qualname`` names, defined in that module."""
    module_name, _, qualname = name.partition(":")
    if not (module_name == "engine" or module_name.startswith("engine.")):
        raise _Refused(f"op {name!r} is not an engine op")
    try:
        cls = importlib.import_module(module_name)
        for part in qualname.split("."):
            cls = getattr(cls, part)
    except (ImportError, AttributeError):
        raise _Refused(f"op {name!r} does not exist in this engine") from None
    if not (isinstance(cls, type) and issubclass(cls, Function) and cls.__module__ == module_name):
        raise _Refused(f"{name!r} is not an engine Function")
    return cls


def _check_ufunc(name, state):
    """Refuse a ``ufunc`` field that is not one the op's class is built with."""
    if "ufunc" not in state:
        return
    allowed = ALLOWED_UFUNCS.get(name, frozenset())
    if state["ufunc"] not in allowed:
        raise _Refused(f"op {name} names the function {state['ufunc']!r}, which is not one the engine's ops use "
                       f"(allowed: {', '.join(sorted(allowed)) or 'none'})")


def _slot(ref, n_slots, where):
    if isinstance(ref, bool) or not isinstance(ref, int) or not 0 <= ref < n_slots:
        raise _Refused(f"{where} refers to slot {ref!r}, outside the graph's {n_slots} slots")
    return ref


def _op(index, rec, arrays, n_slots):
    """Op ``index`` of the file, each part checked."""
    name = rec["op"]
    cls = _function_class(name)
    state = _decode(rec["state"], arrays)
    if not isinstance(state, dict):
        raise _Refused(f"op {index} ({name}) has a state that is not a record")
    _check_ufunc(name, state)
    args = []
    for kind, ref in rec["args"]:
        if kind == "slot":
            args.append((SLOT, _slot(ref, n_slots, f"op {index} ({name})")))
        elif kind == "tensor":
            args.append((TENSOR, _new(_array(arrays, ref))))
        elif kind == "const":
            args.append((CONST, _decode(ref, arrays)))
        else:
            raise _Refused(f"op {index} ({name}) has an argument of unknown kind {kind!r}")
    outs = [_slot(ref, n_slots, f"op {index} ({name})") for ref in rec["outs"]]
    op = Op(cls, state, args, outs)
    if "traced_sizes" in rec:
        op.data_dependent = _traced_sizes(rec["traced_sizes"], f"op {index} ({name})")
    return op


def _traced_sizes(value, what):
    """A data-dependent op's (traced output shapes, where it was called), checked."""
    try:
        shapes, where = value
        shapes = tuple(tuple(int(n) for n in shape) for shape in shapes)
    except (TypeError, ValueError):
        raise _Refused(f"{what} has traced sizes that are not a list of shapes and a location") from None
    return shapes, str(where)


def _plan(body, arrays):
    """The checked plan and the loaded graph of a file's JSON body."""
    n_slots = body["n_slots"]
    if isinstance(n_slots, bool) or not isinstance(n_slots, int):
        raise _Refused(f"its slot count {n_slots!r} is not an integer")
    ops = [_op(i, rec, arrays, n_slots) for i, rec in enumerate(body["ops"])]
    inputs = [_slot(ref, n_slots, "an input") for ref in body["inputs"]]
    outputs = [_slot(ref, n_slots, "an output") for ref in body["outputs"]]
    plan = Plan(ops, inputs, outputs, _decode(body["output_spec"], arrays), [], n_slots)
    plan.plan_liveness()
    leaves = [[list(shape), str(dtype), str(where)] for shape, dtype, where in body["input_leaves"]]
    if len(leaves) != len(inputs):
        raise _Refused(f"it lists {len(leaves)} input tensors for {len(inputs)} input slots")
    return LoadedGraph(plan, str(body["input_spec"]), leaves, str(body["signature"]))


def load_plan(path):
    """The graph ``save_plan`` wrote to ``path``; its tensors go to the device it was saved on."""
    from safetensors import safe_open
    with safe_open(path, framework="numpy") as f:
        meta = f.metadata() or {}
        if "graph" not in meta:
            raise ValueError(f"{path} is not a saved nn.Graph (no graph metadata)")
        arrays = {k: f.get_tensor(k) for k in f.keys()}
    try:
        body = json.loads(meta["graph"])
        fmt = body.get("format")
        if fmt == "engine.nn.Graph/1":
            raise _Refused("it was saved by an older engine without its input signature; save the graph again")
        if fmt != FORMAT:
            raise _Refused(f"unsupported graph format {fmt!r}")
        target = _saved_device(body["device"])
        if target.type != "cpu":
            arrays = {k: move(a, target) for k, a in arrays.items()}
        return _plan(body, arrays)
    except _Refused as e:
        raise ValueError(f"nn.Graph.load: {path} refused: {e}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ValueError(f"nn.Graph.load: {path} is malformed ({type(e).__name__}: {e})") from None


def _saved_device(name):
    """The device the graph was saved on (its tensors are loaded there)."""
    try:
        return device(name)
    except (RuntimeError, ValueError):
        raise _Refused(f"it names the unknown device {name!r}") from None
