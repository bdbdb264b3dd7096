"""Converters of the detection ops, named by string so that the engine never imports flowvision:
RoIAlign as ONNX ``RoiAlign`` (opset 16: half-pixel alignment is an attribute), NMS as
``NonMaxSuppression`` and Keypoint R-CNN's decoding as a ``Loop`` over the boxes.
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


@converts("flowvision.models.detection._keypoints:_HeatmapsToKeypoints")
def heatmaps_to_keypoints(ctx):
    """Keypoint R-CNN's decoding as a ``Loop`` over the boxes, as torchvision's exporter writes it: each box's
    (K, H, W) heatmaps are resized bicubically (``Resize``, half-pixel, a = -0.75: torch's bicubic) to the box's
    size rounded up, and each keypoint is the argmax cell's centre scaled back into the box. The heatmaps and
    boxes are carried through the loop unchanged, so that the loop's inputs name them."""
    g = ctx.g
    helper = g.onnx.helper
    _, keypoints, height, width = ctx.in_shape(0)
    maps, rois = ctx.input(0, np.float32), ctx.input(1, np.float32)
    index, carried_maps, carried_rois = g.fresh("box_index"), g.fresh("heatmaps_in"), g.fresh("boxes_in")
    condition = g.fresh("condition_in")
    with g.subgraph() as body:
        box_maps = ctx.unsqueeze(g.node("Gather", [carried_maps, index], axis=0), [0])
        box = g.node("Gather", [carried_rois, index], axis=0)
        x1, y1, x2, y2 = ctx.split(box, 0, [1, 1, 1, 1])
        one = g.constant(np.float32(1))
        box_width = g.node("Max", [g.node("Sub", [x2, x1]), one])
        box_height = g.node("Max", [g.node("Sub", [y2, y1]), one])
        width_ceil, height_ceil = g.node("Ceil", [box_width]), g.node("Ceil", [box_height])
        int64 = g.elem_type(np.int64)
        cells_wide = g.node("Cast", [width_ceil], to=int64)
        sizes = g.node("Concat", [g.ints([1, keypoints]), g.node("Cast", [height_ceil], to=int64), cells_wide], axis=0)
        resized = g.node("Resize", [box_maps, "", "", sizes], mode="cubic", cubic_coeff_a=-0.75,
                         coordinate_transformation_mode="half_pixel", exclude_outside=0)
        flat = g.node("Reshape", [resized, g.ints([keypoints, -1])])
        cell = g.node("ArgMax", [flat], axis=1, keepdims=0)
        score = ctx.reduce("ReduceMax", flat, [1], False)
        float32 = g.elem_type(np.float32)
        half = g.constant(np.float32(0.5))
        column = g.node("Cast", [g.node("Mod", [cell, cells_wide])], to=float32)
        row = g.node("Cast", [g.node("Div", [cell, cells_wide])], to=float32)
        x = g.node("Add", [g.node("Mul", [g.node("Add", [column, half]), g.node("Div", [box_width, width_ceil])]), x1])
        y = g.node("Add", [g.node("Mul", [g.node("Add", [row, half]), g.node("Div", [box_height, height_ceil])]), y1])
        ones = g.constant(np.ones((keypoints, 1), np.float32))
        point = g.node("Concat", [ctx.unsqueeze(x, [1]), ctx.unsqueeze(y, [1]), ones], axis=1)
        outputs = [g.node("Identity", [condition]), g.node("Identity", [carried_maps]),
                   g.node("Identity", [carried_rois]), point, score]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(
        body, g.fresh("keypoint_decoding"),
        [value(index, g.elem_type(np.int64), []), value(condition, g.elem_type(np.bool_), []),
         value(carried_maps, float32, [None, keypoints, height, width]), value(carried_rois, float32, [None, 4])],
        [value(outputs[0], g.elem_type(np.bool_), []), value(outputs[1], float32, [None, keypoints, height, width]),
         value(outputs[2], float32, [None, 4]), value(point, float32, [keypoints, 3]),
         value(score, float32, [keypoints])])
    count = g.node("Gather", [ctx.shape_of(rois), g.constant(np.int64(0))], axis=0)
    results = g.node("Loop", [count, g.constant(np.bool_(True)), maps, rois], outputs=4, body=graph)
    return results[2:]
