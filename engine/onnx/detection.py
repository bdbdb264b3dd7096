"""Converters of the detection ops, named by string so that the engine never imports flowvision:
RoIAlign as ONNX ``RoiAlign`` (opset 16: half-pixel alignment is an attribute) and NMS as
``NonMaxSuppression``.
"""
import numpy as np

from .table import converts


@converts("flowvision.ops.roi_align:_RoIAlign")
def roi_align(ctx):
    """(K, 5) rois with the image index first become ``RoiAlign``'s boxes and int64 batch indices."""
    if ctx.opset < 16:
        ctx.fail("RoIAlign needs ONNX opset 16 (RoiAlign's coordinate_transformation_mode)")
    spatial_scale, height, width, sampling_ratio, aligned = ctx.state["args"]
    rois = ctx.input(1)
    index, boxes = ctx.split(rois, 1, [1, 4])
    batch = ctx.g.node("Cast", [ctx.squeeze(index, [1])], to=ctx.g.elem_type(np.int64))
    return ctx.g.node("RoiAlign", [ctx.input(0), boxes, batch], mode="avg", output_height=int(height),
                      output_width=int(width), sampling_ratio=max(int(sampling_ratio), 0),
                      spatial_scale=float(spatial_scale),
                      coordinate_transformation_mode="half_pixel" if aligned else "output_half_pixel")


@converts("flowvision.ops.boxes:_NMS")
def nms(ctx):
    """``NonMaxSuppression`` over one batch and one class; per-category NMS shifts each category's boxes
    apart by (largest coordinate + 1) first, as torchvision's exporter does. Returns the kept indices."""
    boxes = ctx.input(0)
    dtype = ctx.in_dtype(0)
    if not ctx.is_none(2):
        largest = ctx.reduce("ReduceMax", boxes, [0, 1], False)
        step = ctx.g.node("Add", [largest, ctx.scalar(1.0, dtype)])
        offsets = ctx.g.node("Mul", [ctx.input(2, dtype), step])
        boxes = ctx.g.node("Add", [boxes, ctx.unsqueeze(offsets, [1])])
    selected = ctx.g.node("NonMaxSuppression", [ctx.unsqueeze(boxes, [0]), ctx.unsqueeze(ctx.input(1), [0, 1]),
                                                ctx.g.ints([2 ** 62]),
                                                ctx.g.constant(np.asarray([ctx.state["iou_threshold"]], np.float32))])
    return ctx.g.node("Gather", [selected, ctx.g.constant(np.int64(2))], axis=1)
