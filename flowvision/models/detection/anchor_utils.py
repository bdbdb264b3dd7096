"""Anchor generators: AnchorGenerator (R-CNN, RetinaNet, FCOS) and DefaultBoxGenerator (SSD).

Anchors are constants of the feature-map geometry, so they are computed with numpy (vectorised over the
grid, in the arithmetic torchvision uses: float32 cell anchors, integer shifts) and wrapped as tensors.
"""
import math

import numpy as np

import engine as torch
from engine import nn

__all__ = ["AnchorGenerator", "DefaultBoxGenerator"]


def _as_dtype(dtype):
    """The numpy dtype of an engine dtype."""
    return np.dtype(dtype.np)


class AnchorGenerator(nn.Module):
    """Anchors of ``sizes[i]`` x ``aspect_ratios[i]`` (height / width) at every location of feature map i."""

    def __init__(self, sizes=((128, 256, 512),), aspect_ratios=((0.5, 1.0, 2.0),)):
        super().__init__()
        if not isinstance(sizes[0], (list, tuple)):
            sizes = tuple((s,) for s in sizes)
        if not isinstance(aspect_ratios[0], (list, tuple)):
            aspect_ratios = (aspect_ratios,) * len(sizes)
        self.sizes = sizes
        self.aspect_ratios = aspect_ratios
        self.cell_anchors = [self.generate_anchors(size, ratio) for size, ratio in zip(sizes, aspect_ratios)]

    def generate_anchors(self, scales, aspect_ratios, dtype=torch.float32, device=torch.device("cpu")):
        """Zero-centred, rounded x1y1x2y2 anchors for every (aspect ratio, scale) pair, ratio-major."""
        np_dtype = _as_dtype(dtype)
        scales = np.asarray(scales, dtype=np_dtype)
        h_ratios = np.sqrt(np.asarray(aspect_ratios, dtype=np_dtype))
        w_ratios = np_dtype.type(1) / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).reshape(-1)
        hs = (h_ratios[:, None] * scales[None, :]).reshape(-1)
        base_anchors = np.stack([-ws, -hs, ws, hs], axis=1) / np_dtype.type(2)
        return torch.as_tensor(np.round(base_anchors), device=device)

    def set_cell_anchors(self, dtype, device):
        """Cast the cell anchors to the features' dtype and device."""
        self.cell_anchors = [cell_anchor.to(dtype=dtype, device=device) for cell_anchor in self.cell_anchors]

    def num_anchors_per_location(self):
        """How many anchors each feature map places at one location."""
        return [len(s) * len(a) for s, a in zip(self.sizes, self.aspect_ratios)]

    def grid_anchors(self, grid_sizes, strides):
        """Per feature map: every cell anchor shifted to every grid location, location-major, as (H*W*A, 4)."""
        if not len(grid_sizes) == len(strides) == len(self.cell_anchors):
            raise ValueError("Anchors should be Tuple[Tuple[int]] because each feature map could potentially have "
                             "different sizes and aspect ratios. There needs to be a match between the number of "
                             f"feature maps passed ({len(grid_sizes)}) and the number of sizes / aspect ratios "
                             f"specified ({len(self.cell_anchors)}).")
        anchors = []
        for (grid_height, grid_width), (stride_height, stride_width), base_anchors in zip(
                grid_sizes, strides, self.cell_anchors):
            base = base_anchors.cpu().numpy()
            shifts_x = np.arange(grid_width, dtype=np.int64) * int(stride_width)
            shifts_y = np.arange(grid_height, dtype=np.int64) * int(stride_height)
            shift_y, shift_x = np.meshgrid(shifts_y, shifts_x, indexing="ij")
            shifts = np.stack([shift_x, shift_y, shift_x, shift_y], axis=-1).reshape(-1, 1, 4).astype(base.dtype)
            grid = (shifts + base[None]).reshape(-1, 4)
            anchors.append(torch.as_tensor(grid, device=base_anchors.device))
        return anchors

    def forward(self, image_list, feature_maps):
        """One (sum over maps of H*W*A, 4) anchor tensor per image of the batch."""
        grid_sizes = [tuple(feature_map.shape[-2:]) for feature_map in feature_maps]
        image_size = image_list.tensors.shape[-2:]
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        strides = [(image_size[0] // g[0], image_size[1] // g[1]) for g in grid_sizes]
        self.set_cell_anchors(dtype, device)
        anchors_over_all_feature_maps = torch.cat(self.grid_anchors(grid_sizes, strides))
        return [anchors_over_all_feature_maps.clone() for _ in image_list.image_sizes]


class DefaultBoxGenerator(nn.Module):
    """SSD's default boxes: two square boxes plus a pair per aspect ratio at every location of each map."""

    def __init__(self, aspect_ratios, min_ratio=0.15, max_ratio=0.9, scales=None, steps=None, clip=True):
        super().__init__()
        if steps is not None and len(aspect_ratios) != len(steps):
            raise ValueError("aspect_ratios and steps should have the same length")
        self.aspect_ratios = aspect_ratios
        self.steps = steps
        self.clip = clip
        num_outputs = len(aspect_ratios)
        if scales is None:
            scales = self._linear_scales(num_outputs, min_ratio, max_ratio)
        self.scales = scales
        self._wh_pairs = self._generate_wh_pairs(num_outputs)

    @staticmethod
    def _linear_scales(num_outputs, min_ratio, max_ratio):
        """Scales spaced linearly from min_ratio to max_ratio, plus 1.0 for the last map's extra box."""
        if num_outputs == 1:
            return [min_ratio, max_ratio]
        range_ratio = max_ratio - min_ratio
        return [min_ratio + range_ratio * k / (num_outputs - 1.0) for k in range(num_outputs)] + [1.0]

    def _generate_wh_pairs(self, num_outputs, dtype=torch.float32, device=torch.device("cpu")):
        """Relative (w, h) of every default box of each feature map."""
        all_pairs = []
        for k in range(num_outputs):
            s_k = self.scales[k]
            s_prime_k = math.sqrt(self.scales[k] * self.scales[k + 1])
            wh_pairs = [[s_k, s_k], [s_prime_k, s_prime_k]]
            for ar in self.aspect_ratios[k]:
                sq_ar = math.sqrt(ar)
                w = self.scales[k] * sq_ar
                h = self.scales[k] / sq_ar
                wh_pairs.extend([[w, h], [h, w]])
            all_pairs.append(torch.as_tensor(wh_pairs, dtype=dtype, device=device))
        return all_pairs

    def num_anchors_per_location(self):
        """2 square boxes + 2 per aspect ratio, for each feature map."""
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def _grid_default_boxes(self, grid_sizes, image_size, dtype=torch.float32):
        """All default boxes as relative (cx, cy, w, h), location-major within each map (numpy array)."""
        np_dtype = _as_dtype(dtype)
        default_boxes = []
        for k, (f_h, f_w) in enumerate(grid_sizes):
            if self.steps is not None:
                x_f_k = image_size[1] / self.steps[k]
                y_f_k = image_size[0] / self.steps[k]
            else:
                y_f_k, x_f_k = f_h, f_w
            shifts_x = ((np.arange(f_w, dtype=np.float32) + np.float32(0.5)) / np.float32(x_f_k)).astype(np_dtype)
            shifts_y = ((np.arange(f_h, dtype=np.float32) + np.float32(0.5)) / np.float32(y_f_k)).astype(np_dtype)
            shift_y, shift_x = np.meshgrid(shifts_y, shifts_x, indexing="ij")
            wh = self._wh_pairs[k].cpu().numpy()
            if self.clip:
                wh = np.clip(wh, 0, 1)
            n = len(wh)
            centres = np.repeat(np.stack([shift_x.reshape(-1), shift_y.reshape(-1)], axis=1), n, axis=0)
            sizes = np.tile(wh, (f_h * f_w, 1)).astype(np_dtype)
            default_boxes.append(np.concatenate([centres, sizes], axis=1))
        return np.concatenate(default_boxes, axis=0)

    def __repr__(self):
        return (f"{self.__class__.__name__}(aspect_ratios={self.aspect_ratios}, clip={self.clip}, "
                f"scales={self.scales}, steps={self.steps})")

    def forward(self, image_list, feature_maps):
        """One (N, 4) x1y1x2y2 tensor of default boxes in input pixels per image of the batch."""
        grid_sizes = [tuple(feature_map.shape[-2:]) for feature_map in feature_maps]
        image_size = image_list.tensors.shape[-2:]
        dtype, device = feature_maps[0].dtype, feature_maps[0].device
        boxes = self._grid_default_boxes(grid_sizes, image_size, dtype=dtype)
        x_y_size = np.array([image_size[1], image_size[0]], dtype=boxes.dtype)
        half = boxes.dtype.type(0.5)
        xyxy = np.concatenate([(boxes[:, :2] - half * boxes[:, 2:]) * x_y_size,
                               (boxes[:, :2] + half * boxes[:, 2:]) * x_y_size], axis=-1)
        return [torch.as_tensor(xyxy.copy(), device=device) for _ in image_list.image_sizes]
