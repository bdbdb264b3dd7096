"""What changes between two traced runs of a model: dynamic dimensions and input-dependent op parameters.

A trace records concrete numbers: ``x.flatten(1)`` becomes ``Reshape((2, 512))`` for a batch of 2.
The exporter traces twice, the second time with new input values and, along each dynamic axis, a
different size. The two op lists must match op for op (else the model's ops depend on its input,
which one ONNX graph cannot express). What differs then tells the exporter which dims are dynamic
(slot shapes) and which op parameters follow the input (``Reshape``'s 2 becomes the batch size);
converters express each such parameter with runtime shapes, and a parameter left unexpressed, or a
constant tensor whose values follow the input's values, is refused with one line.
"""
import numbers
import types

import numpy as np

from ..nn.parameter import Parameter
from ..nn.graph.plan import SLOT
from ..tensor import Tensor
from .errors import ExportError

_ARGS = "args"
_STATE = "state"


class Variation:
    """The differences between captures ``a`` (the one exported) and ``b`` (the probe)."""

    def __init__(self, a, b, what_changed):
        self.a, self.b = a, b
        self.what_changed = what_changed
        self.varying = {}
        self.dynamic = {}
        if b is None:
            return
        self._check_structure()
        for slot, (sa, sb) in enumerate(zip(a.shapes, b.shapes)):
            axes = {k for k, (da, db) in enumerate(zip(sa, sb)) if da != db}
            if axes:
                self.dynamic[slot] = axes
        for i, (op_a, op_b) in enumerate(zip(a.ops, b.ops)):
            found = {}
            _diff(op_a.state, op_b.state, (_STATE,), found)
            for j, ((kind, ra), (_, rb)) in enumerate(zip(op_a.args, op_b.args)):
                if kind != SLOT:
                    _diff(ra, rb, (_ARGS, j), found)
            if found:
                self.varying[i] = found

    def _check_structure(self):
        a, b = self.a, self.b
        for i, (op_a, op_b) in enumerate(zip(a.ops, b.ops)):
            same = (op_a.cls is op_b.cls and op_a.outs == op_b.outs and len(op_a.args) == len(op_b.args)
                    and all(ka == kb and (ka != SLOT or ra == rb)
                            for (ka, ra), (kb, rb) in zip(op_a.args, op_b.args)))
            if not same:
                raise ExportError(f"engine.onnx.export: the model runs different ops for {self.what_changed} "
                                  f"(op {i}: {op_a.name()} in {a.paths[i]}, then {op_b.name()} in {b.paths[i]}); "
                                  "one ONNX graph cannot hold input-dependent Python control flow")
        if len(a.ops) != len(b.ops):
            raise ExportError(f"engine.onnx.export: the model runs {len(a.ops)} ops, and {len(b.ops)} for "
                              f"{self.what_changed}; one ONNX graph cannot hold input-dependent Python control flow")
        if a.output_slots != b.output_slots or a.output_spec != b.output_spec:
            raise ExportError(f"engine.onnx.export: the model returns different outputs for {self.what_changed}")
        for slot, (da, db, sa, sb) in enumerate(zip(a.dtypes, b.dtypes, a.shapes, b.shapes)):
            if da != db or len(sa) != len(sb):
                raise ExportError(f"engine.onnx.export: value {slot} is {da}{list(sa)} in one run and {db}{list(sb)} "
                                  f"for {self.what_changed}; its type and rank must not depend on the input")

    def of(self, index):
        """{path: (value in a, value in b)} of op ``index``'s parameters that differ between the runs."""
        return self.varying.get(index, {})

    def dynamic_axes(self, slot):
        return self.dynamic.get(slot, set())


def _diff(a, b, path, found):
    """Record into ``found`` every leaf of ``a`` that differs from ``b`` (ints, floats, arrays, tensors...);
    two closures of one function differ where the values they closed over do."""
    if a is b:
        return
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if isinstance(a, Parameter) or isinstance(b, Parameter) or not _same_array(a._data, b._data):
            found[path] = (a, b)
        return
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if not _same_array(a, b):
            found[path] = (a, b)
        return
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        for k, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, path + (k,), found)
        return
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        for k in a:
            _diff(a[k], b[k], path + (k,), found)
        return
    if isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType) and a.__code__ is b.__code__:
        for name, x, y in zip(a.__code__.co_freevars, a.__closure__ or (), b.__closure__ or ()):
            _diff(x.cell_contents, y.cell_contents, path + (name,), found)
        return
    if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
        if a != b and not (a != a and b != b):  # NaN in both traces is the same constant
            found[path] = (a, b)
        return
    if type(a) is not type(b) or not _equal(a, b):
        found[path] = (a, b)


def _same_array(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(np.asarray(a), np.asarray(b),
                                                                            equal_nan=a.dtype.kind in "fc"))


def _equal(a, b):
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def describe_path(path):
    """'argument 2' or 'parameter shape[0]' for a varying value's path."""
    if path[0] == _ARGS:
        rest = "".join(f"[{k}]" for k in path[2:])
        return f"argument {path[1]}{rest}"
    head = path[1] if len(path) > 1 else ""
    rest = "".join(f"[{k}]" for k in path[2:])
    return f"parameter {head}{rest}"


__all__ = ["Variation", "describe_path"]
