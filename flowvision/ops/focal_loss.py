"""Sigmoid focal loss (RetinaNet, Lin et al. 2017): cross-entropy down-weighted on easy examples."""
import engine
from engine.nn import functional as F

from ._utils import _reduce_loss


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2, reduction="none"):
    """alpha_t * (1 - p_t) ** gamma * BCE(inputs, targets); ``alpha=-1`` drops the class weighting."""
    if not (0 <= alpha <= 1) and alpha != -1:
        raise ValueError(f"Invalid alpha value: {alpha}. alpha must be in the range [0,1] or -1 for ignore.")
    p = engine.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "mean" and loss.numel() == 0:
        return loss.mean()
    return _reduce_loss(loss, reduction)


__all__ = ["sigmoid_focal_loss"]
