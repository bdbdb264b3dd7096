"""Export-time folding: eval BatchNorm into the preceding convolution's weights, and ops on constants.

A convolution whose only reader is an eval BatchNorm (with running statistics) becomes one ONNX
``Conv`` with the weights and bias the BatchNorm would give: w * scale per output channel and
(b - mean) * scale + beta, computed in float64 and stored in the weights' dtype, where
scale = gamma / sqrt(var + eps). Ops whose arguments are all known at export time are run once
(``evaluate``, the op's own forward on arrays) and stored as initializers.
"""
import numpy as np

from ..nn.functional.conv import ConvNd
from ..nn.functional.normalization import BatchNorm
from ..nn.graph.plan import CONST, SLOT, TENSOR


def evaluate(op, arrays):
    """Run a recorded op's forward on arrays (the way ``Plan.run_arrays`` replays it); returns its outputs."""
    fn = op.make()
    fn.needs_input_grad = (False,) * len(arrays)
    arrays = list(arrays)
    if op.inplace and arrays:
        arrays[0] = arrays[0].copy()
    outs = fn.forward(*arrays)
    return outs if isinstance(outs, tuple) else (outs,)


def fold_batchnorms(conversion, live):
    """Fold every eval BatchNorm that is the only reader of a convolution's output into it.

    Records the folded weight and bias as argument overrides of the convolution, makes the BatchNorm's
    output an alias of the convolution's, and returns the indices of the BatchNorm ops (not written).
    """
    capture = conversion.capture
    readers = {}
    for index in sorted(live):
        for slot in capture.ops[index].slot_args():
            readers.setdefault(slot, []).append(index)
    outputs = set(capture.output_slots)
    skipped = set()
    for index in sorted(live):
        op = capture.ops[index]
        if op.cls is not ConvNd or not _constant_weights(op):
            continue
        out = op.outs[0]
        users = readers.get(out, [])
        if out in outputs or len(users) != 1:
            continue
        bn_index = users[0]
        bn = capture.ops[bn_index]
        if not _foldable_batchnorm(bn, out) or conversion.variation.of(index) or conversion.variation.of(bn_index):
            continue
        weight, bias = _folded(op, bn)
        conversion.overrides[(index, 1)] = weight
        conversion.overrides[(index, 2)] = bias
        conversion.aliases[bn.outs[0]] = out
        skipped.add(bn_index)
    return skipped


def _constant_weights(conv):
    (kw, _), (kb, b) = conv.args[1], conv.args[2]
    return kw == TENSOR and (kb == TENSOR or (kb == CONST and b is None))


def _foldable_batchnorm(bn, conv_out):
    if bn.cls is not BatchNorm or bn.state.get("training") or bn.args[0] != (SLOT, conv_out):
        return False
    mean, var = bn.state["running"]
    if mean is None or var is None:
        return False
    return all(kind == TENSOR or (kind == CONST and ref is None) for kind, ref in bn.args[1:3])


def _folded(conv, bn):
    """The convolution's weight and bias with the BatchNorm applied, in the weight's dtype."""
    w = np.asarray(conv.args[1][1]._data)
    b = conv.args[2][1]
    mean, var = (np.asarray(t._data, dtype=np.float64) for t in bn.state["running"])
    gamma, beta = (None if ref is None else np.asarray(ref._data, dtype=np.float64) for _, ref in bn.args[1:3])
    scale = 1.0 / np.sqrt(var + bn.state["eps"])
    if gamma is not None:
        scale = scale * gamma
    shift = -mean * scale
    if b is not None:
        shift = shift + np.asarray(b._data, dtype=np.float64) * scale
    if beta is not None:
        shift = shift + beta
    weight = w.astype(np.float64) * scale.reshape((-1,) + (1,) * (w.ndim - 1))
    return weight.astype(w.dtype), shift.astype(w.dtype)
