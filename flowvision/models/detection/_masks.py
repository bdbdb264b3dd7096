"""Mask R-CNN's mask targets, loss, inference and pasting of the predicted masks into the image."""
import engine as torch
from engine.autograd import tracing
from engine.nn import functional as F
from engine.ops._common import xp_of
from engine.tensor import _new

from ...ops import roi_align


def project_masks_on_boxes(gt_masks, boxes, matched_idxs, M):
    """Crop and resize each matched ground-truth mask to its proposal box (RoIAlign to M x M): the mask targets."""
    matched_idxs = matched_idxs.to(boxes)
    rois = torch.cat([matched_idxs[:, None], boxes], dim=1)
    gt_masks = gt_masks[:, None].to(rois)
    return roi_align(gt_masks, rois, (M, M), 1.0)[:, 0]


def maskrcnn_loss(mask_logits, proposals, gt_masks, gt_labels, mask_matched_idxs):
    """Binary cross-entropy between each positive proposal's mask logits of its gt class and its mask target."""
    discretization_size = mask_logits.shape[-1]
    labels = [gt_label[idxs] for gt_label, idxs in zip(gt_labels, mask_matched_idxs)]
    mask_targets = [project_masks_on_boxes(m, p, i, discretization_size)
                    for m, p, i in zip(gt_masks, proposals, mask_matched_idxs)]
    labels = torch.cat(labels, dim=0)
    mask_targets = torch.cat(mask_targets, dim=0)
    if mask_targets.numel() == 0:
        return mask_logits.sum() * 0
    rows = torch.arange(labels.shape[0], device=labels.device)
    return F.binary_cross_entropy_with_logits(mask_logits[rows, labels], mask_targets)


def maskrcnn_inference(x, labels):
    """Per image, the sigmoid mask probabilities (K, 1, M, M) of each detection's predicted class."""
    mask_prob = x.sigmoid()
    boxes_per_image = [label.shape[0] for label in labels]
    labels = torch.cat(labels)
    index = torch.arange(x.shape[0], device=labels.device)
    mask_prob = mask_prob[index, labels][:, None]
    return mask_prob.split(boxes_per_image, dim=0)


def expand_boxes(boxes, scale):
    """Scale (x1, y1, x2, y2) boxes about their centres by ``scale``."""
    w_half = (boxes[:, 2] - boxes[:, 0]) * 0.5 * scale
    h_half = (boxes[:, 3] - boxes[:, 1]) * 0.5 * scale
    x_c = (boxes[:, 2] + boxes[:, 0]) * 0.5
    y_c = (boxes[:, 3] + boxes[:, 1]) * 0.5
    return torch.stack([x_c - w_half, y_c - h_half, x_c + w_half, y_c + h_half], dim=1)


def expand_masks(mask, padding):
    """Zero-pad (N, 1, M, M) masks by ``padding`` on every side; returns them and the box scale that matches."""
    M = mask.shape[-1]
    scale = float(M + 2 * padding) / M
    return F.pad(mask, (padding,) * 4), scale


def _bilinear_rows(n_in, n_out, start, stop, f, xp):
    """(stop - start, n_in) matrix of torch's bilinear (align_corners=False) resize n_in -> n_out, rows start:stop."""
    dst = xp.arange(start, stop, dtype=f)
    src = xp.maximum(f(n_in) / f(n_out) * (dst + f(0.5)) - f(0.5), f(0))
    i0 = xp.minimum(xp.floor(src).astype(xp.int64), n_in - 1)
    i1 = i0 + (i0 < n_in - 1)
    t = (src - i0).astype(f)
    R = xp.zeros((stop - start, n_in), f)
    rows = xp.arange(stop - start)
    R[rows, i0] += f(1) - t
    R[rows, i1] += t
    return R


def _paste_one(mask, box, im_h, im_w, out, xp):
    """Resize one (M, M) mask array to its integer box (+1 pixel) and write the part inside the image into out."""
    x1, y1, x2, y2 = box
    w = max(x2 - x1 + 1, 1)
    h = max(y2 - y1 + 1, 1)
    x_0, x_1 = max(x1, 0), min(x2 + 1, im_w)
    y_0, y_1 = max(y1, 0), min(y2 + 1, im_h)
    if x_1 <= x_0 or y_1 <= y_0:
        return
    f = out.dtype.type
    rh = _bilinear_rows(mask.shape[0], h, y_0 - y1, y_1 - y1, f, xp)
    rw = _bilinear_rows(mask.shape[1], w, x_0 - x1, x_1 - x1, f, xp)
    out[y_0:y_1, x_0:x_1] = (rh @ mask.astype(f, copy=False)) @ rw.T


def paste_mask_in_image(mask, box, im_h, im_w):
    """Paste one (M, M) mask into an (im_h, im_w) image at its integer box (bilinear resize, as torchvision)."""
    data = mask.detach()._data
    xp = xp_of(data)
    out = xp.zeros((im_h, im_w), data.dtype)
    _paste_one(data, [int(v) for v in box.tolist()], im_h, im_w, out, xp)
    return _new(out)


def _interpolation_rows(starts, stops, n_in, n_image, dtype):
    """(N, n_image, n_in): per box, ``_bilinear_rows`` for the image positions start..stop (the box's integer
    extent, any part outside the image dropped) and zero rows elsewhere, computed with tensor ops."""
    sizes = (stops - starts + 1).clamp(min=1)
    positions = torch.arange(n_image, device=starts.device)
    inside = (positions[None, :] >= starts[:, None]) & (positions[None, :] <= stops[:, None])
    local = (positions[None, :] - starts[:, None]).to(dtype)
    # a quotient of tensors, as the eager path's arrays (a number over a tensor is its reciprocal times the number)
    scale = torch.full_like(sizes, n_in, dtype=dtype) / sizes.to(dtype)
    src = (scale[:, None] * (local + 0.5) - 0.5).clamp(min=0)
    i0 = src.floor().to(torch.int64).clamp(max=n_in - 1)
    i1 = i0 + (i0 < n_in - 1).to(torch.int64)
    t = src - i0.to(dtype)
    taps = torch.arange(n_in, device=starts.device)
    rows = (taps == i0[..., None]).to(dtype) * (1 - t)[..., None] + (taps == i1[..., None]).to(dtype) * t[..., None]
    return rows * inside[..., None].to(dtype)


def _paste_masks_traced(masks, boxes, im_h, im_w):
    """``paste_masks_in_image``'s pasting without a Python loop over the masks or reads of their boxes, as
    traces (nn.Graph, engine.onnx.export) need: per mask, full-image interpolation matrices that are zero
    outside its box, out = rows @ mask @ columns^T. Equal to the eager pasting, which touches only each box."""
    x1, y1, x2, y2 = boxes.unbind(1)
    size = masks.shape[-1]
    rows = _interpolation_rows(y1, y2, size, im_h, masks.dtype)
    columns = _interpolation_rows(x1, x2, size, im_w, masks.dtype)
    return (rows @ masks[:, 0] @ columns.transpose(1, 2))[:, None]


def paste_masks_in_image(masks, boxes, img_shape, padding=1):
    """Paste (N, 1, M, M) mask probabilities into (N, 1, H, W) image-sized masks at their boxes (no gradient)."""
    masks, scale = expand_masks(masks, padding=padding)
    boxes = expand_boxes(boxes, scale).to(dtype=torch.int64)
    im_h, im_w = img_shape
    if tracing.active is not None:
        return _paste_masks_traced(masks.detach(), boxes, im_h, im_w)
    data = masks.detach()._data
    xp = xp_of(data)
    out = xp.zeros((data.shape[0], 1, im_h, im_w), data.dtype)
    for i, box in enumerate(boxes.tolist()):
        _paste_one(data[i, 0], box, im_h, im_w, out[i, 0], xp)
    return _new(out)


__all__ = ["project_masks_on_boxes", "maskrcnn_loss", "maskrcnn_inference", "expand_boxes", "expand_masks",
           "paste_mask_in_image", "paste_masks_in_image"]
