"""Greedy non-maximum suppression on the GPU: boxes sorted by decreasing score (a stable sort: tied
scores keep index order), a kernel builds the overlap bit mask, and a one-block kernel walks it in
order (the twin of ``backends/cpu/nms.py``, whose order of tied survivors of several classes it keeps:
by class, then index). IoU is computed in the boxes' dtype with torchvision's operation order and
compared in double precision."""
import cupy
import numpy as np

from .source import function, launch

# One block walks the mask (see kernels/nms.cu): its threads share the OR of each kept row.
_KEEP_THREADS = 256


def nms(boxes, scores, iou_threshold, classes=None):
    """Indices (int64, by decreasing score) of the boxes greedy NMS keeps; with ``classes`` (one integer
    label per box) only boxes of the same class suppress each other."""
    n = boxes.shape[0]
    if n == 0:
        return cupy.zeros(0, cupy.int64)
    dtype = np.dtype(np.float32) if boxes.dtype == np.float16 else boxes.dtype
    order = _descending(scores)
    sorted_boxes = cupy.ascontiguousarray(boxes[order].astype(dtype, copy=False))
    labels = cupy.zeros(n, cupy.int64) if classes is None else cupy.ascontiguousarray(
        cupy.asarray(classes)[order].astype(cupy.int64, copy=False))
    words = -(-n // 64)
    mask = cupy.empty((n, words), cupy.uint64)
    removed = cupy.zeros(words, cupy.uint64)
    keep = cupy.empty(n, cupy.uint8)
    launch("nms", "nms_mask", dtype, mask.size, sorted_boxes, labels, mask, n, words, np.float64(iou_threshold))
    function("nms", "nms_keep", dtype.str)((1,), (_KEEP_THREADS,), (mask, removed, keep, np.int64(n), np.int64(words)))
    kept = order[cupy.flatnonzero(keep)]
    if classes is not None:  # tied scores by class, then index, as the CPU backend's per-class NMS lists them
        kept = kept[cupy.argsort(cupy.asarray(classes)[kept], kind="stable")]
        kept = kept[_descending(scores[kept])]
    return kept.astype(cupy.int64, copy=False)


def _descending(scores):
    """Indices sorting ``scores`` in decreasing order, ties in place and NaN first (torch's stable sort)."""
    order = cupy.argsort(-scores, kind="stable")
    return order[cupy.argsort(~cupy.isnan(scores[order]), kind="stable")]
