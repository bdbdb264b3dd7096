"""The v2 augmentation functionals: ``erase`` (fill a box with a value) and ``jpeg`` (a JPEG round trip at a
given quality, the compression artefacts being the augmentation).

``jpeg`` encodes and decodes with Pillow (libjpeg-turbo with its default settings), where torchvision calls its
own libjpeg bindings; both use libjpeg's defaults and give the same pixels (see the tests).
"""
import io

import numpy as np
import PIL.Image

import engine

from .... import tv_tensors
from ... import functional as _F1
from ._utils import _register_kernel_internal, dispatch

__all__ = ["erase", "erase_image", "erase_video", "jpeg", "jpeg_image", "jpeg_video"]


def erase(inpt, i, j, h, w, v, inplace=False):
    """Set the box of height ``h`` and width ``w`` at row ``i``, column ``j`` to ``v`` (broadcast to the box)."""
    return dispatch(erase, inpt, i=i, j=j, h=h, w=w, v=v, inplace=inplace)


@_register_kernel_internal(erase, engine.Tensor)
@_register_kernel_internal(erase, tv_tensors.Image)
def erase_image(image, i, j, h, w, v, inplace=False):
    if not inplace:
        image = image.clone()
    image[..., i:i + h, j:j + w] = v
    return image


@_register_kernel_internal(erase, PIL.Image.Image)
def _erase_image_pil(image, i, j, h, w, v, inplace=False):
    erased = erase_image(_F1.pil_to_tensor(image), i=i, j=j, h=h, w=w, v=v, inplace=inplace)
    return _F1.to_pil_image(erased, mode=image.mode)


@_register_kernel_internal(erase, tv_tensors.Video)
def erase_video(video, i, j, h, w, v, inplace=False):
    return erase_image(video, i=i, j=j, h=h, w=w, v=v, inplace=inplace)


def jpeg(image, quality):
    """The image encoded as JPEG at ``quality`` (1-100) and decoded again."""
    return dispatch(jpeg, image, quality=quality)


def _jpeg_round_trip(image, quality):
    """A PIL image through Pillow's JPEG encoder and decoder."""
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=quality)
    with PIL.Image.open(buffer) as decoded:
        return decoded.copy()  # a plain Image, not Pillow's JpegImageFile


def _check_jpeg_input(a, quality):
    """torchvision's encoder checks, in its order and with its exception types."""
    if not 1 <= quality <= 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")
    if a.dtype != np.uint8:
        raise RuntimeError("Input tensor dtype should be uint8")
    if a.shape[-3] not in (1, 3):
        raise RuntimeError(f"The number of channels should be 1 or 3, got: {a.shape[-3]}")


def _jpeg_plane(chw, quality):
    """One uint8 [C, H, W] array through the JPEG round trip."""
    mode = "L" if chw.shape[0] == 1 else "RGB"
    hwc = np.ascontiguousarray(chw.transpose(1, 2, 0) if mode == "RGB" else chw[0])
    decoded = np.asarray(_jpeg_round_trip(PIL.Image.fromarray(hwc, mode), quality))
    return decoded.reshape(chw.shape[1], chw.shape[2], -1).transpose(2, 0, 1)


@_register_kernel_internal(jpeg, engine.Tensor)
@_register_kernel_internal(jpeg, tv_tensors.Image)
def jpeg_image(image, quality):
    a = _F1._arr(image)
    if a.size == 0:
        return image.clone()
    _check_jpeg_input(a, quality)
    host = a if isinstance(a, np.ndarray) else a.get()
    planes = host.reshape((-1,) + host.shape[-3:])
    out = np.stack([_jpeg_plane(plane, quality) for plane in planes]).reshape(host.shape)
    return _F1._wrap(_F1._like(out, a))


@_register_kernel_internal(jpeg, tv_tensors.Video)
def jpeg_video(video, quality):
    return jpeg_image(video, quality=quality)


@_register_kernel_internal(jpeg, PIL.Image.Image)
def _jpeg_image_pil(image, quality):
    return _jpeg_round_trip(image, quality)
