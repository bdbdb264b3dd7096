"""Converters of the detection ops, named by string so that the engine never imports flowvision:
RoIAlign as ONNX ``RoiAlign`` (opset 16: half-pixel alignment is an attribute).
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
