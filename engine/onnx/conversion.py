"""Turn a traced op list into ONNX nodes, op by op through the table, folding constants on the way.

Only the ops the outputs depend on are written. Each slot (traced value) gets an ONNX name, or, when every argument of the op that made it is known
at export time and its shape is fixed, a folded value (an initializer). Eval BatchNorms that follow a
convolution are folded into its weights first (``folding.fold_batchnorms``). Parameters that follow
the input size (see ``variation``) are computed at run time from a dimension of a value that follows it
the same way (``runtime_dim``).
"""
import numpy as np

from ..nn.graph.plan import SLOT, TENSOR
from ..ops.shape import Reshape
from .context import OpContext
from .errors import ExportError, UnsupportedOperatorError
from .folding import evaluate, fold_batchnorms
from .table import converter_of, load_converters


class Conversion:
    """The state of one export: ONNX names and folded values of the slots, and the graph being written."""

    def __init__(self, graph, capture, variation, fold_constants, weights_known=True):
        load_converters()
        self.g = graph
        self.capture = capture
        self.variation = variation
        self.fold_constants = fold_constants
        self.weights_known = weights_known  # False: parameters and buffers are graph inputs (export_params=False)
        self.names = {}
        self.values = {}
        self.overrides = {}
        self.aliases = {}
        self.read = set()

    def name_of(self, slot):
        """The ONNX name of a slot's value (an initializer when it was folded)."""
        slot = self.aliases.get(slot, slot)
        if slot not in self.names and slot in self.values:
            self.names[slot] = self.g.constant(self.values[slot], hint="folded")
        if slot not in self.names:
            index = next(i for i, op in enumerate(self.capture.ops) if slot in op.outs)
            op = self.capture.ops[index]
            raise ExportError(f"engine.onnx.export: output {op.outs.index(slot)} of op '{op.name()}' called in "
                              f"{self.capture.paths[index]} is used, but its ONNX mapping does not write it "
                              f"(ONNX opset {self.g.opset})")
        return self.names[slot]

    def run(self, input_names):
        live = live_ops(self.capture)
        self.read = {slot for index in live for slot in self.capture.ops[index].slot_args()}
        self.read.update(self.capture.output_slots)
        check_inplace_writes(self.capture, live)
        for slot, name in zip(self.capture.input_slots, input_names):
            self.names[slot] = name
        skipped = fold_batchnorms(self, live) if self.fold_constants else set()
        for index, op in enumerate(self.capture.ops):
            if index in skipped or index not in live:
                continue
            if self.fold_constants and self._fold(index, op):
                continue
            self._convert(index, op)

    def _convert(self, index, op):
        converter = converter_of(op.cls)
        ctx = OpContext(self, index, op)
        if converter is None:
            raise UnsupportedOperatorError(f"engine.onnx.export: no ONNX mapping for op '{op.name()}' "
                                           f"({op.cls.__module__}.{op.cls.__qualname__}) called in {ctx.where} "
                                           f"at ONNX opset {self.g.opset}")
        self.g.scope = "/" + "/".join(filter(None, self.capture.scopes[index].split(".") + [op.name()]))
        outs = converter(ctx)
        if ctx.unclaimed():
            raise ctx.unclaimed_error()
        if not isinstance(outs, (tuple, list)):
            outs = [outs]
        for slot, name in zip(op.outs, outs):
            if name is not None:
                self.names[slot] = name

    def _fold(self, index, op):
        """Evaluate an op whose arguments are all known and whose outputs have fixed shapes."""
        if self.variation.of(index) or any(self.variation.dynamic_axes(s) for s in op.outs):
            return False
        arrays = []
        for kind, ref in op.args:
            if kind == SLOT:
                if self.aliases.get(ref, ref) not in self.values:
                    return False
                arrays.append(self.values[self.aliases.get(ref, ref)])
            elif kind == TENSOR:
                arrays.append(ref._data)
            else:
                arrays.append(ref)
        if not op.args or not self._worth_folding(op, arrays):
            return False
        for slot, value in zip(op.outs, evaluate(op, arrays)):
            self.values[slot] = value
        return True

    def _worth_folding(self, op, arrays):
        """Folding stores the result: not when it would blow a small constant up (an Expand to a big shape)."""
        produced = sum(int(np.prod(self.capture.shapes[s])) for s in op.outs)
        read = sum(int(np.size(a)) for a in arrays if a is not None)
        return produced <= max(4 * read, 4096)

    def runtime_dim(self, pair, op):
        """An int64 [1] ONNX value equal at run time to the size that was ``pair`` in the two traces: a
        dimension of a value that follows the input the same way (or a multiple, divisor or offset of one
        of the op's arguments' or the graph inputs' dimensions), else None."""
        a, b = int(pair[0]), int(pair[1])
        shapes_a, shapes_b = self.capture.shapes, self.variation.b.shapes
        near = [ref for kind, ref in op.args if kind == SLOT]
        near += [s for s in self.capture.input_slots if s not in near]
        ordered = near + sorted((s for s in self.variation.dynamic if s not in near and s in self.names), reverse=True)
        for slot in ordered:
            for k in sorted(self.variation.dynamic_axes(slot)):
                if shapes_a[slot][k] == a and shapes_b[slot][k] == b and self._named(slot):
                    return self._dim_of(slot, k)
        for relate in (_relation, _rounded_relation):  # an exact relation to any argument before a rounded one
            for slot in near:
                for k in sorted(self.variation.dynamic_axes(slot)):
                    relation = relate(shapes_a[slot][k], shapes_b[slot][k], a, b)
                    if relation is not None and self._named(slot):
                        return self._related(slot, k, *relation)
        return None

    def _related(self, slot, k, op_type, c):
        """An int64 [1] value: dimension ``k`` of ``slot`` in ``op_type`` relation with ``c`` (see ``_relation``)."""
        dim = self._dim_of(slot, k)
        if op_type == "CeilDiv":
            op_type, dim = "Div", self.g.node("Add", [dim, self.g.ints([c - 1])])
        elif op_type == "RoundDown":
            op_type, dim = "Mul", self.g.node("Div", [dim, self.g.ints([c])])
        return self.g.node(op_type, [dim, self.g.ints([c])])

    def _named(self, slot):
        slot = self.aliases.get(slot, slot)
        return slot in self.names

    def _dim_of(self, slot, axis):
        name = self.name_of(slot)
        if self.g.opset >= 15:
            return self.g.node("Shape", [name], start=axis, end=axis + 1)
        return self.g.node("Gather", [self.g.node("Shape", [name]), self.g.ints([axis])], axis=0)

    def output_name(self, slot):
        """The ONNX name holding an output slot's value (folded outputs become initializers)."""
        return self.name_of(slot)


def live_ops(capture):
    """The indices of the ops the outputs depend on (the others are not written)."""
    needed = {slot for slot in capture.output_slots if slot is not None}
    live = set()
    for index in range(len(capture.ops) - 1, -1, -1):
        op = capture.ops[index]
        if any(slot in needed for slot in op.outs):
            live.add(index)
            needed.update(op.slot_args())
    return live


def check_inplace_writes(capture, live):
    """Refuse an in-place op that writes into a tensor another view of which is read afterwards.

    The trace gives the written tensor a new value, so later readers of that tensor see the write; a
    different view of the same storage (``y = x.view(...)``; ``x.relu_()``; then ``y``) would need the
    write to flow back through the view, which one ONNX graph of immutable values cannot express.
    """
    readers = {}
    for index in sorted(live):
        for slot in capture.ops[index].slot_args():
            readers.setdefault(slot, []).append(index)
    root, group = {}, {}
    for index, op in enumerate(capture.ops):
        first = op.args[0] if op.args else None
        if first is None or first[0] != SLOT:
            continue
        source = first[1]
        base = root.get(source, source)
        if op.inplace:
            others = group.get(base, {base}) - {source}
            later = [i for slot in others for i in readers.get(slot, ()) if i > index]
            if later:
                reader = min(later)
                raise ExportError(f"engine.onnx.export: op '{op.name()}' called in {capture.paths[index]} writes in "
                                  f"place into a tensor whose other view is read afterwards (by op "
                                  f"'{capture.ops[reader].name()}' in {capture.paths[reader]}); ONNX values are "
                                  "immutable: write it out of place (inplace=False)")
        elif op.cls.is_view or op.cls is Reshape:
            for slot in op.outs:
                root[slot] = base
                group.setdefault(base, {base}).add(slot)


def _relation(da, db, a, b):
    """How (a, b) follows the dimension (da, db) exactly in both traces: ("Mul", c), ("Div", c), ("Add", c) or
    None."""
    if da > 0 and db > 0 and a % da == 0 and b % db == 0 and a // da == b // db:
        return "Mul", a // da
    if a > 0 and b > 0 and da % a == 0 and db % b == 0 and da // a == db // b:
        return "Div", da // a
    if a - da == b - db:
        return "Add", a - da
    return None


def _rounded_relation(da, db, a, b):
    """How (a, b) follows (da, db) through a rounded division, tried where no exact relation holds: ("Div", c)
    (rounded down), ("CeilDiv", c) (rounded up: chunk's piece size), ("RoundDown", c) (down to a multiple of c:
    x[:, :, :h // 2 * 2]) or None. The probe's sizes have the other parity (exporter._probe), so that a rounded
    division and an exact one are told apart."""
    if a <= 0 or b <= 0:
        return None
    for c in range(max(da // (a + 1), 1), (da // (a - 1) if a > 1 else da) + 2):
        if da // c == a and db // c == b:
            return "Div", c
        if -(-da // c) == a and -(-db // c) == b:
            return "CeilDiv", c
    for c in range(2, min(max(da, db), 64) + 1):
        if da // c * c == a and db // c * c == b:
            return "RoundDown", c
    return None


__all__ = ["Conversion"]
