"""``OpContext``: what a converter sees of one traced op, and the helpers it writes ONNX with.

A converter reads the op's recorded parameters (``state``), its arguments as ONNX value names
(``input``), their traced shapes and dtypes, and asks for the parameters that follow the input
size (``varying``; ``ints`` and ``dim`` turn them into runtime values); it returns the ONNX names
of the op's outputs. ``fail`` raises the one-line error that names the op, its module and the opset.
"""
import numpy as np

from ..nn.graph.plan import CONST, SLOT, TENSOR
from .errors import ExportError, UnsupportedOperatorError
from .variation import describe_path


class OpContext:
    """One op being converted (see the module docstring)."""

    def __init__(self, conversion, index, op):
        self.conversion = conversion
        self.g = conversion.g
        self.opset = conversion.g.opset
        self.index = index
        self.op = op
        self.state = op.state
        self.where = conversion.capture.paths[index]
        self._varying = conversion.variation.of(index)
        self.claimed = set()

    @property
    def name(self):
        return self.op.name()

    # ---- errors ---------------------------------------------------------------------------------
    def fail(self, reason):
        """Raise ``UnsupportedOperatorError`` naming the op, where it was called and the opset."""
        raise UnsupportedOperatorError(f"engine.onnx.export: cannot export op '{self.name}' called in {self.where} "
                                       f"to ONNX opset {self.opset}: {reason}")

    def unclaimed(self):
        """Whether a parameter that follows the input was left as a constant by the converter."""
        return bool(set(self._varying) - self.claimed)

    def unclaimed_error(self):
        """The error for a parameter that changes with the input but that the converter wrote as a constant."""
        path = next(p for p in self._varying if p not in self.claimed)
        a, b = self._varying[path]
        return ExportError(f"engine.onnx.export: op '{self.name}' called in {self.where}: its {describe_path(path)} "
                           f"is {_short(a)} here and {_short(b)} for {self.conversion.variation.what_changed}, "
                           f"and ONNX opset {self.opset} export cannot make it follow the input")

    # ---- arguments ------------------------------------------------------------------------------
    def n_args(self):
        return len(self.op.args)

    def kind(self, i):
        return self.op.args[i][0]

    def arg(self, i):
        """The recorded argument ``i``: a constant, a tensor, or a slot number."""
        return self.op.args[i][1]

    def is_none(self, i):
        if (self.index, i) in self.conversion.overrides:
            return False
        return i >= len(self.op.args) or (self.kind(i) == CONST and self.arg(i) is None)

    def value(self, i):
        """Argument ``i``'s value when known at export time (a constant, a tensor, a folded slot), else None."""
        kind, ref = self.op.args[i]
        override = self.conversion.overrides.get((self.index, i))
        if override is not None:
            return override
        if kind == SLOT:
            return self.conversion.values.get(ref)
        if kind == TENSOR:
            if ("args", i) in self._varying:
                return None
            if not self.conversion.weights_known and id(ref._data) in self.g.tensor_names:
                return None
            return ref._data
        return ref

    def input(self, i, dtype=None):
        """The ONNX name of argument ``i`` (None for an absent one), cast to ``dtype`` when given."""
        kind, ref = self.op.args[i]
        override = self.conversion.overrides.get((self.index, i))
        if override is not None:
            return self.g.array(override, hint="folded")
        if kind == CONST:
            if ref is None:
                return None
            to = np.dtype(dtype) if dtype is not None else self.out_dtype()
            pair = self.varying("args", i)
            if pair is not None and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in pair):
                # a Python number that is a size of the input (kl_div's batchmean divides by input.shape[0])
                size = self.g.node("Squeeze", [self.dim(pair, f"its argument {i}"), self.g.ints([0])])
                return self.cast(size, np.int64, to)
            return self.g.constant(ref, dtype=to)
        if kind == TENSOR and ("args", i) in self._varying:
            return self.cast(self._varying_tensor(i), self.in_dtype(i), dtype)
        if kind == TENSOR:
            name = self.g.array(ref._data)
        else:
            name = self.conversion.name_of(ref)
        return self.cast(name, self.in_dtype(i), dtype)

    def _varying_tensor(self, i):
        """A constant tensor whose shape follows the input: ``arange(n)`` as a ``Range`` to the runtime n, or one
        whose values are equal along the changing axes (``torch.zeros(batch, ...)``) as one slice of it expanded
        to the runtime shape."""
        a, b = (t._data for t in self._varying[("args", i)])
        self.claimed.add(("args", i))
        if _is_range(a) and _is_range(b):
            size = self.dim((len(a), len(b)), f"the length of its argument {i} (an arange)")
            count = self.g.node("Squeeze", [size, self.g.ints([0])])
            zero, one = self.g.constant(np.int64(0)), self.g.constant(np.int64(1))
            return self.cast(self.g.node("Range", [zero, count, one]), np.int64, a.dtype)
        axes = [k for k, (m, n) in enumerate(zip(a.shape, b.shape)) if m != n] if a.ndim == b.ndim else []
        first = _first_along(a, axes) if axes else None
        if first is None or not np.array_equal(first, _first_along(b, axes)):
            self.fail(f"its argument {i} is a tensor computed outside the traced ops (from raw arrays) whose values "
                      "follow the input; compute it with engine ops so that the trace records it")
        shape = self.ints(("args", i, "shape"), a.shape, pairs={k: (a.shape[k], b.shape[k]) for k in axes})
        return self.g.node("Expand", [self.g.constant(first), shape])

    # ---- shapes and types -----------------------------------------------------------------------
    def in_shape(self, i):
        kind, ref = self.op.args[i]
        if kind == SLOT:
            return tuple(self.conversion.capture.shapes[ref])
        if kind == TENSOR:
            return tuple(ref._data.shape)
        return np.shape(ref)

    def in_dtype(self, i):
        kind, ref = self.op.args[i]
        if kind == SLOT:
            return np.dtype(self.conversion.capture.dtypes[ref])
        if kind == TENSOR:
            return np.dtype(ref._data.dtype)
        return np.asarray(ref).dtype

    def out_shape(self, j=0):
        return tuple(self.conversion.capture.shapes[self.op.outs[j]])

    def out_dtype(self, j=0):
        return np.dtype(self.conversion.capture.dtypes[self.op.outs[j]])

    def dynamic(self, i):
        """The axes of argument ``i`` whose size follows the input (empty for constants)."""
        kind, ref = self.op.args[i]
        return self.conversion.variation.dynamic_axes(ref) if kind == SLOT else set()

    def used(self, j):
        """Whether output ``j`` is read by an op the outputs need, or is an output itself."""
        return self.op.outs[j] in self.conversion.read

    def out_dynamic(self, j=0):
        return self.conversion.variation.dynamic_axes(self.op.outs[j])

    def cast(self, name, from_dtype, to_dtype):
        if name is None or to_dtype is None or np.dtype(from_dtype) == np.dtype(to_dtype):
            return name
        return self.g.node("Cast", [name], to=self.g.elem_type(to_dtype))

    # ---- parameters that follow the input -------------------------------------------------------
    def varying(self, *path):
        """(value here, value in the probe run) of the parameter at ``path`` when it differs, else None."""
        pair = self._varying.get(path)
        if pair is not None:
            self.claimed.add(path)
        return pair

    def varying_under(self, *prefix):
        """{rest of path: pair} of the differing parameters under ``prefix`` (all claimed)."""
        found = {}
        for path, pair in self._varying.items():
            if path[:len(prefix)] == prefix:
                self.claimed.add(path)
                found[path[len(prefix):]] = pair
        return found

    def dim(self, pair, what):
        """An int64 [1] value equal at run time to the size that was ``pair`` in the two traces."""
        name = self.conversion.runtime_dim(pair, self.op)
        if name is None:
            self.fail(f"{what} is {pair[0]} here and {pair[1]} for {self.conversion.variation.what_changed}, "
                      "and no dimension of the graph's values follows it")
        return name

    def ints(self, prefix, values, pairs=None):
        """A 1-D int64 value holding ``values``; entries that differ between the traces (under ``prefix`` of
        the op's parameters, or given in ``pairs`` by position) are computed at run time."""
        if pairs is None:
            pairs = {path[0]: pair for path, pair in self.varying_under(*prefix).items() if len(path) == 1}
        if not pairs:
            return self.g.ints(values)
        pieces = []
        run = []
        for k, v in enumerate(values):
            if k in pairs:
                if run:
                    pieces.append(self.g.ints(run))
                    run = []
                pieces.append(self.dim(pairs[k], f"entry {k} of its {describe_path(prefix) if prefix else 'shape'}"))
            else:
                run.append(int(v))
        if run:
            pieces.append(self.g.ints(run))
        return pieces[0] if len(pieces) == 1 else self.g.node("Concat", pieces, axis=0)

    def shape_of(self, name, start=None, end=None):
        """``Shape`` of a value (optionally dims [start, end)), as int64."""
        if start is None and end is None:
            return self.g.node("Shape", [name])
        if self.opset >= 15:
            return self.g.node("Shape", [name], start=start, end=end)
        shape = self.g.node("Shape", [name])
        return self.g.node("Slice", [shape, self.g.ints([start]), self.g.ints([end if end is not None else 2**62])])

    # ---- ONNX operators whose signature changed between opsets ----------------------------------
    def reduce(self, op_type, x, axes, keepdims):
        """``Reduce*`` over ``axes`` (an attribute before opset 18, an input after; ReduceSum since 13)."""
        if op_type == "ReduceSum" or self.opset >= 18:
            return self.g.node(op_type, [x, self.g.ints(axes)], keepdims=int(keepdims))
        return self.g.node(op_type, [x], axes=list(axes), keepdims=int(keepdims))

    def squeeze(self, x, axes):
        return self.g.node("Squeeze", [x, self.g.ints(axes)])

    def unsqueeze(self, x, axes):
        return self.g.node("Unsqueeze", [x, self.g.ints(axes)])

    def split(self, x, axis, sizes):
        """``Split`` into pieces of ``sizes`` along ``axis``."""
        if len(sizes) == 1:
            return [self.g.node("Identity", [x])]
        return self.g.node("Split", [x, self.g.ints(sizes)], outputs=len(sizes), axis=axis)

    def is_inf(self, x, dtype, **attrs):
        """``IsInf`` of ``x`` (of ``dtype``); half types are widened first before opset 20, whose IsInf takes them."""
        if np.dtype(dtype).itemsize == 2 and self.opset < 20:
            x = self.g.node("Cast", [x], to=self.g.elem_type(np.float32))
        return self.g.node("IsInf", [x], **attrs)

    def scalar(self, value, dtype=None):
        return self.g.constant(value, dtype=np.dtype(dtype) if dtype is not None else self.out_dtype())


def _short(value):
    text = " ".join(repr(getattr(value, "shape", value) if hasattr(value, "_data") else value).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _first_along(array, axes):
    """The slice at index 0 along ``axes`` when ``array`` is constant along them, else None."""
    if any(array.shape[k] == 0 for k in axes):
        return None
    first = np.ascontiguousarray(array[tuple(slice(0, 1) if k in axes else slice(None) for k in range(array.ndim))])
    return first if np.array_equal(np.broadcast_to(first, array.shape), array) else None


def _is_range(array):
    """Whether ``array`` is 0, 1, ..., n - 1 (an ``arange`` made in the model's Python)."""
    return array.ndim == 1 and array.dtype.kind in "iuf" and bool(np.array_equal(array, np.arange(len(array))))
