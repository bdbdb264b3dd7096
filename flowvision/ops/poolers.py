"""MultiScaleRoIAlign: RoIAlign over a feature pyramid, each box read from the level that suits its size."""
import numpy as np

import engine
from engine import nn

from ._utils import convert_boxes_to_roi_format
from .boxes import box_area
from .roi_align import roi_align


class LevelMapper:
    """FPN paper eq. 1: level = floor(lvl0 + log2(sqrt(area) / s0) + eps), clamped to [k_min, k_max]."""

    def __init__(self, k_min, k_max, canonical_scale=224, canonical_level=4, eps=1e-6):
        self.k_min = k_min
        self.k_max = k_max
        self.s0 = canonical_scale
        self.lvl0 = canonical_level
        self.eps = eps

    def __call__(self, boxlists):
        """Zero-based pyramid level (int64) of every box of every image, images concatenated."""
        s = engine.sqrt(engine.cat([box_area(boxlist) for boxlist in boxlists]))
        target_lvls = engine.floor(self.lvl0 + engine.log2(s / self.s0) + self.eps)
        target_lvls = engine.clamp(target_lvls, min=self.k_min, max=self.k_max)
        return target_lvls.to(engine.int64) - self.k_min


def initLevelMapper(k_min, k_max, canonical_scale=224, canonical_level=4, eps=1e-6):
    """torchvision's factory name for :class:`LevelMapper`."""
    return LevelMapper(k_min, k_max, canonical_scale, canonical_level, eps)


def _infer_scale(feature, original_size):
    """The power of two closest to feature size / image size (from the height)."""
    approx_scale = float(feature.shape[-2]) / float(original_size[0])
    return float(2 ** float(np.round(np.log2(np.float32(approx_scale)))))


def _setup_scales(features, image_shapes, canonical_scale, canonical_level):
    """Each level's scale and the level mapper, from the largest image size in the batch."""
    if not image_shapes:
        raise ValueError("images list should not be empty")
    original_input_shape = (max(s[0] for s in image_shapes), max(s[1] for s in image_shapes))
    scales = [_infer_scale(feat, original_input_shape) for feat in features]
    lvl_min = -float(np.log2(np.float32(scales[0])))
    lvl_max = -float(np.log2(np.float32(scales[-1])))
    return scales, initLevelMapper(int(lvl_min), int(lvl_max), canonical_scale=canonical_scale,
                                   canonical_level=canonical_level)


def _multiscale_roi_align(features, boxes, output_size, sampling_ratio, scales, mapper):
    """RoIAlign every box on its level; results come back in the boxes' order."""
    rois = convert_boxes_to_roi_format(boxes)
    if len(features) == 1:
        return roi_align(features[0], rois, output_size=output_size, spatial_scale=scales[0],
                         sampling_ratio=sampling_ratio)
    levels = mapper(boxes)
    order = engine.argsort(levels, stable=True)
    sorted_levels = levels[order]
    pooled = []
    for level, (feature, scale) in enumerate(zip(features, scales)):
        idx_in_level = order[sorted_levels == level]
        pooled.append(roi_align(feature, rois[idx_in_level], output_size=output_size, spatial_scale=scale,
                                sampling_ratio=sampling_ratio).to(features[0].dtype))
    return engine.cat(pooled)[engine.argsort(order)]


class MultiScaleRoIAlign(nn.Module):
    """RoIAlign over the feature maps named ``featmap_names`` of a pyramid (an ordered dict of maps).

    The scale of each level is inferred from its size relative to the largest image on the first
    call; a box goes to the level ``LevelMapper`` assigns.
    """

    def __init__(self, featmap_names, output_size, sampling_ratio, *, canonical_scale=224, canonical_level=4):
        super().__init__()
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = featmap_names
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.scales = None
        self.map_levels = None
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level

    def forward(self, x, boxes, image_shapes):
        """``x``: dict of (N, C, H_l, W_l) maps; ``boxes``: per-image Tensor[L, 4]; ``image_shapes``: (h, w) each."""
        x_filtered = [v for k, v in x.items() if k in self.featmap_names]
        if self.scales is None or self.map_levels is None:
            self.scales, self.map_levels = _setup_scales(x_filtered, image_shapes, self.canonical_scale,
                                                         self.canonical_level)
        return _multiscale_roi_align(x_filtered, boxes, self.output_size, self.sampling_ratio, self.scales,
                                     self.map_levels)

    def __repr__(self):
        return (f"{self.__class__.__name__}(featmap_names={self.featmap_names}, "
                f"output_size={self.output_size}, sampling_ratio={self.sampling_ratio})")


__all__ = ["MultiScaleRoIAlign"]
