"""Converter of dropout traced in training mode (``export(training=TrainingMode.TRAINING)``): ONNX ``Dropout``
with ``training_mode`` set, so that the file draws a new mask on every run, as torch's export does.

The mask is drawn over the op's mask shape (the input's, or (N, C, 1, ...) for channel-wise dropout) by
dropping out a tensor of ones, which gives 0 or 1 / (1 - p) per element, and multiplied into the input.
"""
import numpy as np

from ..nn.functional.dropout import _Dropout
from .table import converts


@converts(_Dropout)
def dropout(ctx):
    if ctx.state["alpha"]:
        ctx.fail("alpha dropout in training mode (ONNX Dropout draws plain dropout masks); export in eval mode")
    dtype = ctx.in_dtype(0)
    shape = ctx.ints(("state", "mask_shape"), ctx.state["mask_shape"])
    ones = ctx.g.node("Expand", [ctx.g.constant(np.ones((), dtype)), shape])
    ratio = ctx.g.constant(np.float32(ctx.state["p"]))
    scaled_mask = ctx.g.node("Dropout", [ones, ratio, ctx.g.constant(np.bool_(True))], seed=None)
    return ctx.g.node("Mul", [ctx.input(0), scaled_mask])
