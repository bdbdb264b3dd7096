"""v1 names kept in v2.functional for old code: ``to_tensor`` and ``get_image_size``."""
import warnings

from ... import functional as F1
from ._meta import get_size


def to_tensor(inpt):
    """A float tensor in [0, 1] from a PIL image or array (deprecated: use ``to_image`` then ``to_dtype``)."""
    warnings.warn("The function `to_tensor(...)` is deprecated and will be removed in a future release. "
                  "Instead, please use `to_image(...)` followed by `to_dtype(..., dtype=torch.float32, scale=True)`.")
    return F1.to_tensor(inpt)


def get_image_size(inpt):
    """[width, height] (deprecated: ``get_size`` gives [height, width])."""
    warnings.warn("The function `get_image_size(...)` is deprecated and will be removed in a future release. "
                  "Instead, please use `get_size(...)` which returns `[h, w]` instead of `[w, h]`.")
    height, width = get_size(inpt)
    return [width, height]


__all__ = ["to_tensor", "get_image_size"]
