"""Conversions between PIL images, arrays and tensors for the v2 API."""
import numpy as np
import PIL.Image

import engine

from .... import tv_tensors
from ... import functional as F1


def to_image(inpt):
    """A ``tv_tensors.Image`` from a numpy HWC array, a PIL image or a CHW tensor (no scaling, no copy where
    the data already is a tensor)."""
    if isinstance(inpt, np.ndarray):
        output = engine.from_numpy(np.atleast_3d(inpt)).permute(2, 0, 1).contiguous()
    elif isinstance(inpt, PIL.Image.Image):
        output = F1.pil_to_tensor(inpt)
    elif isinstance(inpt, engine.Tensor):
        output = inpt
    else:
        raise TypeError(f"Input can either be a pure Tensor, a numpy array, or a PIL image, but got {type(inpt)} "
                        f"instead.")
    return tv_tensors.Image(output)


pil_to_tensor = F1.pil_to_tensor
to_pil_image = F1.to_pil_image

__all__ = ["to_image", "pil_to_tensor", "to_pil_image"]
