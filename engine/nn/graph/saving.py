"""One-file save/load of a compiled inference plan: the op list as JSON in the safetensors
metadata, every tensor the ops read (weights, running stats, constants) as safetensors data.

Loading never unpickles and imports only engine modules, and only Function subclasses from them.
"""
import importlib
import json

import numpy as np

from ... import _dtype
from ...autograd.function import Function
from ...tensor import Tensor, _new
from .plan import CONST, SLOT, TENSOR, Op, Plan

FORMAT = "engine.nn.Graph/1"


class _Encoder:
    def __init__(self):
        self.arrays = {}
        self.ids = {}

    def array_key(self, arr):
        key = self.ids.get(id(arr))
        if key is None:
            key = self.ids[id(arr)] = f"t{len(self.arrays)}"
            self.arrays[key] = np.ascontiguousarray(arr)
        return key

    def value(self, v, where):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, Tensor):
            return {"__tensor__": self.array_key(v._data)}
        if isinstance(v, np.ndarray):
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
        raise TypeError(f"nn.Graph.save: {where} holds a {type(v).__name__}, which cannot be saved")


def _decode(v, arrays):
    if isinstance(v, list):
        return [_decode(x, arrays) for x in v]
    if not isinstance(v, dict):
        return v
    if "__tensor__" in v:
        return _new(arrays[v["__tensor__"]])
    if "__array__" in v:
        return arrays[v["__array__"]]
    if "__np_dtype__" in v:
        return np.dtype(v["__np_dtype__"])
    if "__dtype__" in v:
        return _dtype.to_dtype(v["__dtype__"])
    if "__tuple__" in v:
        return tuple(_decode(x, arrays) for x in v["__tuple__"])
    return {k: _decode(x, arrays) for k, x in v["__dict__"].items()}


def save_plan(plan, path):
    from safetensors.numpy import save_file
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
        ops.append({"op": name, "state": enc.value(op.state, f"state of {name}"), "args": args, "outs": op.outs})
    body = {"format": FORMAT, "ops": ops, "inputs": plan.input_slots, "outputs": plan.output_slots,
            "output_spec": enc.value(plan.output_spec, "output structure"), "n_slots": plan.n_slots}
    save_file(enc.arrays, path, metadata={"graph": json.dumps(body)})


def _function_class(name):
    module_name, _, qualname = name.partition(":")
    if not (module_name == "engine" or module_name.startswith("engine.")):
        raise ValueError(f"nn.Graph.load: op {name!r} is not an engine op")
    cls = importlib.import_module(module_name)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    if not (isinstance(cls, type) and issubclass(cls, Function)):
        raise ValueError(f"nn.Graph.load: {name!r} is not an engine Function")
    return cls


class LoadedGraph:
    """A saved inference plan, callable like the graph it came from."""

    def __init__(self, plan):
        self.plan = plan

    def __call__(self, *args):
        from .graph import _flatten, _unflatten
        leaves = []
        _flatten((args, {}), leaves)
        arrays = self.plan.run_arrays([t._data for t in leaves])
        return _unflatten(self.plan.output_spec, [_new(a) for a in arrays])

    def __repr__(self):
        return f"LoadedGraph(\n{self.plan.describe()}\n)"


def load_plan(path):
    from safetensors import safe_open
    with safe_open(path, framework="numpy") as f:
        meta = f.metadata() or {}
        if "graph" not in meta:
            raise ValueError(f"{path} is not a saved nn.Graph (no graph metadata)")
        arrays = {k: f.get_tensor(k) for k in f.keys()}
    body = json.loads(meta["graph"])
    if body.get("format") != FORMAT:
        raise ValueError(f"{path}: unsupported graph format {body.get('format')!r}")
    ops = []
    for rec in body["ops"]:
        args = []
        for kind, ref in rec["args"]:
            if kind == "slot":
                args.append((SLOT, ref))
            elif kind == "tensor":
                args.append((TENSOR, _new(arrays[ref])))
            else:
                args.append((CONST, _decode(ref, arrays)))
        state = _decode(rec["state"], arrays)
        ops.append(Op(_function_class(rec["op"]), state, args, rec["outs"]))
    plan = Plan(ops, body["inputs"], body["outputs"], _decode(body["output_spec"], arrays), [], body["n_slots"])
    plan.plan_liveness()
    return LoadedGraph(plan)
