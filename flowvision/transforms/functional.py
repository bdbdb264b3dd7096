"""Image transforms as functions (torchvision.transforms.functional): PIL images and engine tensors.

PIL images go through Pillow exactly as torchvision does, so results are pixel-identical. Engine tensors
(``[..., C, H, W]``) are processed as numpy arrays, or CuPy arrays on the GPU for CUDA tensors (results stay on the
tensor's device), with torchvision's float32 arithmetic, rounding and casts. Random parameters, filter kernels and
resampling weights are made on the host and copied to the device.
"""
import math
import numbers
import warnings
from enum import Enum

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

import engine
from engine._device import array_module, device_of, move
from engine.backends.interpolation_geometry import matrix as resampling_matrix
from engine.nn.functional import conv2d, interpolate
from engine.tensor import _new

from . import _torch_float32


class InterpolationMode(Enum):
    """Interpolation modes; the values are the names torch's ``interpolate`` uses."""
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


pil_modes_mapping = {
    InterpolationMode.NEAREST: Image.NEAREST,
    InterpolationMode.NEAREST_EXACT: Image.NEAREST,
    InterpolationMode.BILINEAR: Image.BILINEAR,
    InterpolationMode.BICUBIC: Image.BICUBIC,
    InterpolationMode.BOX: Image.BOX,
    InterpolationMode.HAMMING: Image.HAMMING,
    InterpolationMode.LANCZOS: Image.LANCZOS,
}

_INT_TO_MODE = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR, 3: InterpolationMode.BICUBIC,
                4: InterpolationMode.BOX, 5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}


def _interpolation_modes_from_int(i):
    """Map a Pillow filter constant to the InterpolationMode."""
    return _INT_TO_MODE[i]


def _to_mode(interpolation):
    """Accept an InterpolationMode or a Pillow integer constant."""
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding Pillow integer constant")
    return interpolation


# ---------------------------------------------------------------------------------------------------------------
# helpers: type checks, array <-> tensor


def _is_pil_image(img):
    return isinstance(img, Image.Image)


def _is_tensor(img):
    return engine.is_tensor(img)


def _check_img(img):
    """Raise TypeError unless img is a PIL image or an engine tensor."""
    if not (_is_pil_image(img) or _is_tensor(img)):
        raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")


def _arr(t):
    """The array behind an engine tensor, numpy or CuPy (no copy)."""
    t = t.detach()
    return t.numpy() if isinstance(t._data, np.ndarray) else t._data


def _wrap(a):
    """An engine tensor holding the numpy or CuPy array a (made contiguous)."""
    if isinstance(a, np.ndarray):
        return engine.from_numpy(np.ascontiguousarray(a))
    return _new(array_module(a).ascontiguousarray(a))


def _like(host, a):
    """The host array ``host`` where the array ``a`` is (itself for a numpy ``a``)."""
    return host if isinstance(a, np.ndarray) else move(host, device_of(a))


def _assert_image_array(a):
    if a.ndim < 2:
        raise TypeError("Tensor is not a torch image.")


# torchvision's table of image value ranges: 16-bit images span uint16; floats, bool, uint32 and uint64 count as 1
_MAX_VALUES = {np.dtype(t): int(np.iinfo(t).max) for t in (np.uint8, np.int8, np.int16, np.uint16, np.int32, np.int64)}
# the integer dtypes torchvision rounds float results to (uint16 results are truncated there)
_ROUNDED = {np.dtype(t) for t in (np.uint8, np.int8, np.int16, np.int32, np.int64)}


def _max_value(dtype):
    """Largest value of an image dtype, as torchvision's table has it."""
    return _MAX_VALUES.get(np.dtype(dtype), 1)


def _assert_channels(a, permitted):
    c = 1 if a.ndim == 2 else a.shape[-3]
    if c not in permitted:
        raise TypeError(f"Input image tensor permitted channel values are {permitted}, but found {c}")


def _cast_out(a, dtype):
    """Cast a float result back to the image dtype, rounded first where torchvision rounds."""
    dtype = np.dtype(dtype)
    if a.dtype == dtype:
        return a
    if dtype in _ROUNDED:
        a = a.round()
    return a.astype(dtype)


def _work_float(a):
    """a as float32 unless it is already float32/float64 (torchvision's _cast_squeeze_in)."""
    return a if a.dtype in (np.float32, np.float64) else a.astype(np.float32)


# ---------------------------------------------------------------------------------------------------------------
# sizes and conversions


def get_dimensions(img):
    """[channels, height, width] of a PIL image or a tensor."""
    if _is_tensor(img):
        _assert_image_array(img)
        c = 1 if img.dim() == 2 else img.shape[-3]
        return [c, img.shape[-2], img.shape[-1]]
    if _is_pil_image(img):
        return [len(img.getbands()), img.height, img.width]
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_size(img):
    """[width, height] of a PIL image or a tensor."""
    c, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img):
    """Number of channels of a PIL image or a tensor."""
    return get_dimensions(img)[0]


def to_tensor(pic):
    """PIL image or HWC ndarray -> CHW tensor; uint8 is scaled to [0, 1] in the default float dtype."""
    if not (_is_pil_image(pic) or isinstance(pic, np.ndarray)):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        a = pic[:, :, None] if pic.ndim == 2 else pic
    else:
        np_dtype = {"I": np.int32, "I;16": np.int16, "F": np.float32}.get(pic.mode, np.uint8)
        a = np.array(pic, np_dtype, copy=True)
        if pic.mode == "1":
            a = 255 * a
        a = a.reshape(pic.size[1], pic.size[0], len(pic.getbands()))
    a = a.transpose(2, 0, 1)
    if a.dtype == np.uint8:
        a = a.astype(engine.get_default_dtype().np) / a.dtype.type(255)
        a = a.astype(engine.get_default_dtype().np)
    return _wrap(a)


def pil_to_tensor(pic):
    """PIL image -> CHW tensor with the image's own dtype (no scaling)."""
    if not _is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    a = np.array(pic, copy=True)
    return _wrap(a.reshape(pic.size[1], pic.size[0], len(pic.getbands())).transpose(2, 0, 1))


def _is_float_dtype(dtype):
    """Whether a numpy dtype holds floats (numpy sees ml_dtypes' bfloat16 as kind 'V')."""
    dtype = np.dtype(dtype)
    return dtype.kind == "f" or dtype.name == "bfloat16"


def _convert_array_dtype(a, dtype):
    """convert_image_dtype on a numpy array (dtype is a numpy dtype). float16 and bfloat16 are scaled in float32 and
    rounded back, as torch computes their products and quotients, so a factor past their range does not overflow.
    Values out of the new type's range wrap or become inf silently, as in torch."""
    dtype = np.dtype(dtype)
    if a.dtype == dtype:
        return a
    with np.errstate(over="ignore", invalid="ignore"):
        return _rescale_array(a, dtype)


def _rescale_array(a, dtype):
    """``a`` rescaled to ``dtype``'s value range (torchvision's rules: floats span [0, 1], integers their bits)."""
    if _is_float_dtype(a.dtype):
        if _is_float_dtype(dtype):
            return a.astype(dtype)
        if (a.dtype == np.float32 and dtype in (np.int32, np.int64)) or (a.dtype == np.float64 and dtype == np.int64):
            raise RuntimeError(f"The cast from {engine._dtype.from_numpy_dtype(a.dtype)} to "
                               f"{engine._dtype.from_numpy_dtype(dtype)} cannot be performed safely.")
        compute = np.promote_types(a.dtype, np.float32)
        scaled = a.astype(compute) * compute.type(_max_value(dtype) + 1.0 - 1e-3)
        return scaled.astype(a.dtype).astype(compute).astype(dtype)  # ml_dtypes would saturate, torch wraps
    input_max = _max_value(a.dtype)
    if _is_float_dtype(dtype):
        compute = np.promote_types(dtype, np.float32)
        return (a.astype(dtype).astype(compute) / compute.type(input_max)).astype(dtype)
    output_max = _max_value(dtype)
    if input_max > output_max:
        return (a // ((input_max + 1) // (output_max + 1))).astype(dtype)
    return a.astype(dtype) * dtype.type((output_max + 1) // (input_max + 1))


def convert_image_dtype(image, dtype=engine.float32):
    """Convert a tensor image to dtype, rescaling values (ints span their range, floats [0, 1])."""
    if not _is_tensor(image):
        raise TypeError("Input img should be Tensor Image")
    if image.dtype == dtype:
        return image
    return _wrap(_convert_array_dtype(_arr(image), dtype.np))


def to_pil_image(pic, mode=None):
    """CHW tensor or HWC ndarray -> PIL image (floats are scaled by 255 unless mode is 'F')."""
    if _is_tensor(pic):
        if pic.dim() not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.dim()} dimensions.")
        a = _arr(pic.cpu())
        if a.ndim == 3:
            a = a.transpose(1, 2, 0)
    elif isinstance(pic, np.ndarray):
        a = pic
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    if a.ndim == 2:
        a = a[:, :, None]
    if a.ndim != 3:
        raise ValueError(f"pic should be 2/3 dimensional. Got {a.ndim} dimensions.")
    if a.shape[-1] > 4:
        raise ValueError(f"pic should not have > 4 channels. Got {a.shape[-1]} channels.")
    if a.dtype.kind == "f" and mode != "F":
        a = (a * 255).astype(np.uint8)
    channels = a.shape[2]
    if channels == 1:
        a = a[:, :, 0]
        expected = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16", np.dtype(np.int32): "I",
                    np.dtype(np.float32): "F"}.get(a.dtype)
        if mode is not None and mode != expected:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {a.dtype}. Should be {expected}")
        mode = expected
    else:
        permitted = {2: ["LA"], 3: ["RGB", "YCbCr", "HSV"], 4: ["RGBA", "CMYK", "RGBX"]}[channels]
        if mode is not None and mode not in permitted:
            raise ValueError(f"Only modes {permitted} are supported for {channels}D inputs")
        if mode is None and a.dtype == np.uint8:
            mode = permitted[0]
    if mode is None:
        raise TypeError(f"Input type {a.dtype} is not supported")
    return Image.frombuffer(mode, (a.shape[1], a.shape[0]), np.ascontiguousarray(a).tobytes(), "raw", mode, 0, 1)


def normalize(tensor, mean, std, inplace=False):
    """(tensor - mean) / std per channel of a float [..., C, H, W] tensor."""
    if not _is_tensor(tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.dim() < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = "
                         f"{tensor.size()}")
    if not inplace:
        tensor = tensor.clone()
    np_dtype = tensor.dtype.np
    mean_a = np.asarray(_arr(mean.cpu()) if _is_tensor(mean) else mean, dtype=np_dtype)
    std_a = np.asarray(_arr(std.cpu()) if _is_tensor(std) else std, dtype=np_dtype)
    if (std_a == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to division by zero.")
    if mean_a.ndim == 1:
        mean_a = mean_a.reshape(-1, 1, 1)
    if std_a.ndim == 1:
        std_a = std_a.reshape(-1, 1, 1)
    a = _arr(tensor)
    return tensor.sub_(_wrap(_like(mean_a, a))).div_(_wrap(_like(std_a, a)))


# ---------------------------------------------------------------------------------------------------------------
# geometry: resize, crop, pad, flips


def _compute_resized_output_size(image_size, size, max_size=None):
    """[new_h, new_w] for torchvision's size rules (short edge for one number, exact for a pair)."""
    h, w = image_size
    short, long = (w, h) if w <= h else (h, w)
    if len(size) == 1:
        requested = size[0]
        new_short, new_long = requested, int(requested * long / short)
        if max_size is not None:
            if max_size <= requested:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the requested "
                                 f"size for the smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        return [new_h, new_w]
    return [size[0], size[1]]


def _aa_weights(n_in, n_out, mode):
    """(n_out, n_in) float64 antialiasing resampling matrix (Pillow/torch's separable filter with widened
    support): engine's, the one behind ``interpolate(antialias=True)``, at half-pixel centres."""
    return resampling_matrix(n_in, n_out, mode, False, None, np.dtype(np.float64), antialias=True)


def _resize_array(a, size, mode, antialias):
    """Resize a [..., H, W] array the way torchvision resizes tensors.

    Integer images take torch's float32 kernels to the bit (``_torch_float32``), so that a value near a .5
    rounds as torchvision's; the matrix products of ``interpolate`` sum in another order, a float32 step away."""
    out_dtype = a.dtype
    lead = a.shape[:-2]
    x = _work_float(a).reshape((-1, 1) + a.shape[-2:])
    exact = out_dtype.kind in "iu" and x.dtype == np.float32 and mode in ("bilinear", "bicubic")
    if exact and antialias:
        y = _torch_float32.antialiased(x, size, mode)
    elif exact:
        y = (_torch_float32.bilinear(x, size, a.shape[-3] if a.ndim > 2 else 1) if mode == "bilinear"
             else _torch_float32.bicubic(x, size))
    elif antialias and mode in ("bilinear", "bicubic"):
        wh = _like(_aa_weights(a.shape[-2], size[0], mode).astype(x.dtype), x)
        ww = _like(_aa_weights(a.shape[-1], size[1], mode).astype(x.dtype), x)
        y = wh @ x @ ww.T
    else:
        align = False if mode in ("bilinear", "bicubic") else None
        y = _arr(interpolate(_wrap(x), size=list(size), mode=mode, align_corners=align))
    if mode == "bicubic" and out_dtype == np.uint8:
        y = y.clip(0, 255)
    return _cast_out(y.reshape(lead + tuple(size)), out_dtype)


def _check_resize_sizes(input_size, output_size):
    """Raise torch's error for an empty tensor image or resize target (rounding can make an edge 0 long)."""
    if min(*input_size, *output_size) <= 0:
        (h, w), (new_h, new_w) = input_size, output_size
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input (H: {h}, W: {w}) "
                           f"output (H: {new_h}, W: {new_w})")


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    """Resize to size (h, w), or match the shorter edge to an int size (keeping the aspect ratio)."""
    interpolation = _to_mode(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in (1, 2):
            raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a {len(size)} element tuple/list")
        if max_size is not None and len(size) != 1:
            raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, "
                             "i.e. size should be an int or a sequence of length 1 in torchscript mode.")
    elif isinstance(size, int):
        size = [size]
    else:
        raise TypeError(f"Size should be int or sequence. Got {type(size)}")
    _check_img(img)
    _, h, w = get_dimensions(img)
    output_size = _compute_resized_output_size((h, w), list(size), max_size)
    if [h, w] == output_size:
        return img
    if _is_pil_image(img):  # torchvision hands NEAREST_EXACT to Pillow as NEAREST
        return img.resize(tuple(output_size[::-1]), pil_modes_mapping[interpolation])
    if interpolation not in (InterpolationMode.NEAREST, InterpolationMode.NEAREST_EXACT,
                             InterpolationMode.BILINEAR, InterpolationMode.BICUBIC):
        raise ValueError("Input tensor: only nearest, nearest-exact, bilinear and bicubic are supported")
    _check_resize_sizes((h, w), output_size)
    return _wrap(_resize_array(_arr(img), output_size, interpolation.value, bool(antialias)))


def _parse_padding(padding):
    """padding (int or 1/2/4-sequence) -> [left, top, right, bottom]."""
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if isinstance(padding, (tuple, list)):
        if len(padding) not in (1, 2, 4):
            raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
        if len(padding) == 1:
            padding = padding[0]
        elif len(padding) == 2:
            return [padding[0], padding[1], padding[0], padding[1]]
        else:
            return list(padding)
    return [padding] * 4


def _pad_array(a, ltrb, fill=0, mode="constant"):
    """Pad the last two dims of a (negative padding crops)."""
    left, top, right, bottom = ltrb
    h, w = a.shape[-2:]
    a = a[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
    widths = [(0, 0)] * (a.ndim - 2) + [(max(top, 0), max(bottom, 0)), (max(left, 0), max(right, 0))]
    xp = array_module(a)
    if mode == "constant":
        return xp.pad(a, widths, mode="constant", constant_values=np.asarray(float(fill)).astype(a.dtype)[()])
    return xp.pad(a, widths, mode=mode)


def _pad_by_index(a, ltrb, mode):
    """Edge or reflect padding of a tensor's [..., H, W] as torch pads: output pixel i reads input pixel i - pad,
    clamped (edge) or mirrored (reflect) into the image, so that a side cropped away (negative padding) can still
    be padded from the other, where cropping first would leave nothing to repeat. With torch's errors: an
    edge-padded output must keep a pixel, a reflection must be shorter than its edge, a reflected output must not
    be negative and must keep a row or a column."""
    left, top, right, bottom = ltrb
    h, w = a.shape[-2:]
    out_h, out_w = h + top + bottom, w + left + right
    if mode == "edge" and min(out_h, out_w) < 1:
        raise RuntimeError(f"Calculated output H: {out_h} W: {out_w} must be >= 1 in every dimension "
                           f"(input H: {h}, W: {w})")
    if mode == "reflect":
        batch = [int(np.prod(a.shape[:-3], dtype=np.int64)), a.shape[-3]] if a.ndim > 2 else [1, 1]
        for argument, dim, pads, size in ((4, 3, (left, right), w), (6, 2, (top, bottom), h)):
            if max(pads) >= size:
                raise RuntimeError(f"Argument #{argument}: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding {pads} at dimension {dim} of input "
                                   f"{batch + [h, w]}")
        if max(out_h, out_w) < 1 or min(out_h, out_w) < 0:
            raise RuntimeError(f"input (H: {h}, W: {w}) is too small. Calculated output H: {out_h} W: {out_w}")
    index = []
    for size, before, total in ((h, top, out_h), (w, left, out_w)):
        source = np.arange(max(total, 0)) - before
        if mode == "edge":
            source = source.clip(0, size - 1)
        else:
            source = np.abs(source)
            source = np.where(source > size - 1, 2 * (size - 1) - source, source)
        index.append(_like(source, a))
    return a[..., index[0][:, None], index[1][None, :]]


def _fill_dict(fill, img, name="fillcolor"):
    """Pillow's fill keyword for img: one value per band, ints unless mode 'F'."""
    bands = len(img.getbands())
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and bands > 1:
        fill = tuple([fill] * bands)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = tuple(fill) * bands
        elif len(fill) != bands:
            raise ValueError("The number of elements in 'fill' does not match the number of channels of the image "
                             f"({len(fill)} != {bands})")
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(x) for x in fill) if isinstance(fill, tuple) else int(fill)
    return {name: fill}


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad all sides (int, (lr, tb) or (l, t, r, b)); modes constant, edge, reflect, symmetric."""
    _check_img(img)
    if fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate fill arg")
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    ltrb = _parse_padding(padding)
    if _is_tensor(img):
        if fill is None:
            fill = 0
        if not isinstance(fill, (int, float)):
            raise TypeError("Got inappropriate fill arg")
        if padding_mode in ("edge", "reflect"):
            return _wrap(_pad_by_index(_arr(img), ltrb, padding_mode))
        return _wrap(_pad_array(_arr(img), ltrb, fill, padding_mode))
    if padding_mode == "constant":
        opts = _fill_dict(fill, img, name="fill")
        left, top, right, bottom = ltrb
        if min(ltrb) < 0:
            img = img.crop((max(-left, 0), max(-top, 0), img.width - max(-right, 0), img.height - max(-bottom, 0)))
            ltrb = [max(p, 0) for p in ltrb]
        palette = img.getpalette() if img.mode == "P" else None
        out = ImageOps.expand(img, border=tuple(ltrb), **opts)
        if palette is not None:
            out.putpalette(palette)
        return out
    palette = img.getpalette() if img.mode == "P" else None
    a = np.asarray(img)
    hwc = a.ndim == 3
    padded = _pad_array(a.transpose(2, 0, 1) if hwc else a, ltrb, 0, padding_mode)
    out = Image.fromarray(np.ascontiguousarray(padded.transpose(1, 2, 0) if hwc else padded))
    if palette is not None:
        out.putpalette(palette)
    return out


def crop(img, top, left, height, width):
    """The box (top, left, height, width); parts outside the image are zero."""
    _check_img(img)
    if _is_pil_image(img):
        return img.crop((left, top, left + width, top + height))
    a = _arr(img)
    h, w = a.shape[-2:]
    right, bottom = left + width, top + height
    out = a[..., max(top, 0):max(bottom, 0), max(left, 0):max(right, 0)]
    if left < 0 or top < 0 or right > w or bottom > h:
        out = _pad_array(out, [max(-left + min(0, right), 0), max(-top + min(0, bottom), 0),
                               max(right - max(w, left), 0), max(bottom - max(h, top), 0)])
    return _wrap(out)


def _pair(size, name="size"):
    """int or 1/2-sequence -> (h, w)."""
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(f"Please provide only two dimensions (h, w) for {name}.")
    return tuple(size)


def center_crop(img, output_size):
    """Crop the center (zero-padding first where the crop is larger than the image)."""
    crop_h, crop_w = _pair(output_size)
    _, h, w = get_dimensions(img)
    if crop_w > w or crop_h > h:
        ltrb = [(crop_w - w) // 2 if crop_w > w else 0, (crop_h - h) // 2 if crop_h > h else 0,
                (crop_w - w + 1) // 2 if crop_w > w else 0, (crop_h - h + 1) // 2 if crop_h > h else 0]
        img = pad(img, ltrb, fill=0)
        _, h, w = get_dimensions(img)
        if crop_w == w and crop_h == h:
            return img
    return crop(img, int(round((h - crop_h) / 2.0)), int(round((w - crop_w) / 2.0)), crop_h, crop_w)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    """crop then resize."""
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    """Flip left-right."""
    _check_img(img)
    if _is_pil_image(img):
        return img.transpose(Image.FLIP_LEFT_RIGHT)
    return _wrap(_arr(img)[..., ::-1])


def vflip(img):
    """Flip top-bottom."""
    _check_img(img)
    if _is_pil_image(img):
        return img.transpose(Image.FLIP_TOP_BOTTOM)
    return _wrap(_arr(img)[..., ::-1, :])


def five_crop(img, size):
    """(top-left, top-right, bottom-left, bottom-right, center) crops."""
    crop_h, crop_w = _pair(size)
    _, h, w = get_dimensions(img)
    if crop_w > w or crop_h > h:
        raise ValueError(f"Requested crop size {size} is bigger than input size {(h, w)}")
    tl = crop(img, 0, 0, crop_h, crop_w)
    tr = crop(img, 0, w - crop_w, crop_h, crop_w)
    bl = crop(img, h - crop_h, 0, crop_h, crop_w)
    br = crop(img, h - crop_h, w - crop_w, crop_h, crop_w)
    return tl, tr, bl, br, center_crop(img, [crop_h, crop_w])


def ten_crop(img, size, vertical_flip=False):
    """five_crop of the image and of its (horizontal or vertical) flip."""
    size = _pair(size)
    flipped = vflip(img) if vertical_flip else hflip(img)
    return five_crop(img, size) + five_crop(flipped, size)


# ---------------------------------------------------------------------------------------------------------------
# colour


def _blend(a, b, ratio):
    """ratio * a + (1 - ratio) * b in float32/64, clamped to a's range and cast back (truncating)."""
    ft = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
    b = ft.type(b) if isinstance(b, numbers.Number) else b.astype(ft, copy=False)
    out = ft.type(ratio) * a.astype(ft) + ft.type(1.0 - ratio) * b
    return out.clip(0, _max_value(a.dtype)).astype(a.dtype)


def _gray_array(a):
    """ITU-R 601-2 luma of a [..., 3, H, W] array, cast to its dtype (truncating)."""
    ft = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
    r, g, b = (a[..., i, :, :].astype(ft) for i in range(3))
    return (ft.type(0.2989) * r + ft.type(0.587) * g + ft.type(0.114) * b).astype(a.dtype)[..., None, :, :]


def rgb_to_grayscale(img, num_output_channels=1):
    """Grayscale with 1 or 3 (repeated) channels."""
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if _is_pil_image(img):
        return to_grayscale(img, num_output_channels)
    _check_img(img)
    a = _arr(img)
    _assert_channels(a, [1, 3])
    g = _gray_array(a) if a.shape[-3] == 3 else a.copy()
    if num_output_channels == 3:
        g = array_module(g).broadcast_to(g, a.shape)
    return _wrap(g)


def to_grayscale(img, num_output_channels=1):
    """PIL grayscale (mode L, or RGB with equal bands for 3 channels)."""
    if not _is_pil_image(img):
        if _is_tensor(img):
            return rgb_to_grayscale(img, num_output_channels)
        raise TypeError(f"img should be PIL Image. Got {type(img)}")
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    img = img.convert("L")
    if num_output_channels == 3:
        a = np.asarray(img)
        img = Image.fromarray(np.dstack([a, a, a]), "RGB")
    return img


def _check_factor(value, name):
    if value < 0:
        raise ValueError(f"{name} ({value}) is not non-negative.")


def adjust_brightness(img, brightness_factor):
    """Multiply by brightness_factor (0 gives black)."""
    _check_factor(brightness_factor, "brightness_factor")
    _check_img(img)
    if _is_pil_image(img):
        return ImageEnhance.Brightness(img).enhance(brightness_factor)
    a = _arr(img)
    _assert_channels(a, [1, 3])
    return _wrap(_blend(a, 0.0, brightness_factor))


def adjust_contrast(img, contrast_factor):
    """Blend with the mean gray level (0 gives a solid gray image)."""
    _check_factor(contrast_factor, "contrast_factor")
    _check_img(img)
    if _is_pil_image(img):
        return ImageEnhance.Contrast(img).enhance(contrast_factor)
    a = _arr(img)
    _assert_channels(a, [3, 1])
    ft = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
    src = _gray_array(a) if a.shape[-3] == 3 else a
    mean = src.astype(ft).mean(axis=(-3, -2, -1), keepdims=True, dtype=np.float64).astype(ft)
    return _wrap(_blend(a, mean, contrast_factor))


def adjust_saturation(img, saturation_factor):
    """Blend with the grayscale image (0 gives gray, 2 doubles saturation)."""
    _check_factor(saturation_factor, "saturation_factor")
    _check_img(img)
    if _is_pil_image(img):
        return ImageEnhance.Color(img).enhance(saturation_factor)
    a = _arr(img)
    _assert_channels(a, [1, 3])
    if a.shape[-3] == 1:
        return img
    return _wrap(_blend(a, _gray_array(a), saturation_factor))


def _rgb2hsv(a):
    """float RGB [..., 3, H, W] -> HSV in [0, 1]."""
    xp = array_module(a)
    r, g, b = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    maxc, minc = a.max(axis=-3), a.min(axis=-3)
    eqc = maxc == minc
    cr = maxc - minc
    one = xp.ones_like(maxc)
    s = cr / xp.where(eqc, one, maxc)
    div = xp.where(eqc, one, cr)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    hr = (maxc == r) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)) * (4.0 + gc - rc)
    h = xp.fmod((hr + hg + hb) / a.dtype.type(6.0) + a.dtype.type(1.0), a.dtype.type(1.0))
    return xp.stack((h, s, maxc), axis=-3)


def _hsv2rgb(a):
    """float HSV [..., 3, H, W] -> RGB."""
    xp = array_module(a)
    h, s, v = a[..., 0, :, :], a[..., 1, :, :], a[..., 2, :, :]
    one = a.dtype.type(1.0)
    i = xp.floor(h * a.dtype.type(6.0))
    f = h * a.dtype.type(6.0) - i
    i = i.astype(np.int32) % 6
    p = xp.clip(v * (one - s), 0.0, 1.0)
    q = xp.clip(v * (one - s * f), 0.0, 1.0)
    t = xp.clip(v * (one - s * (one - f)), 0.0, 1.0)
    table = xp.stack([xp.stack(c, axis=0) for c in ((v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q))])
    out = xp.take_along_axis(table, i[None, None], axis=1)[:, 0]  # (3, ..., H, W)
    return xp.moveaxis(out, 0, -3)


def adjust_hue(img, hue_factor):
    """Shift the hue channel by hue_factor (in [-0.5, 0.5]) turns."""
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check_img(img)
    if _is_pil_image(img):
        if img.mode in {"L", "1", "I", "F"}:
            return img
        h, s, v = img.convert("HSV").split()
        np_h = np.array(h, dtype=np.uint8)
        np_h += np.array(int(hue_factor * 255)).astype(np.uint8)  # wraps around, as intended
        return Image.merge("HSV", (Image.fromarray(np_h, "L"), s, v)).convert(img.mode)
    a = _arr(img)
    _assert_channels(a, [1, 3])
    if a.shape[-3] == 1:
        return img
    hsv = _rgb2hsv(_convert_array_dtype(a, np.float32))
    hsv[..., 0, :, :] = array_module(a).mod(hsv[..., 0, :, :] + np.float32(hue_factor), np.float32(1.0))
    return _wrap(_convert_array_dtype(_hsv2rgb(hsv), a.dtype))


def adjust_gamma(img, gamma, gain=1):
    """gain * img ** gamma on the [0, 1] scale."""
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    _check_img(img)
    if _is_pil_image(img):
        mode = img.mode
        table = [int((255 + 1 - 1e-3) * gain * pow(v / 255.0, gamma)) for v in range(256)] * 3
        return img.convert("RGB").point(table).convert(mode)
    a = _arr(img)
    _assert_channels(a, [1, 3])
    f = a if a.dtype.kind == "f" else _convert_array_dtype(a, np.float32)
    out = (f.dtype.type(gain) * array_module(f).power(f, f.dtype.type(gamma))).clip(0, 1)
    return _wrap(_convert_array_dtype(out, a.dtype))


def _conv_valid(x, kernel):
    """Per-channel 2-D correlation (valid) of float x [..., H, W] with a 2-D kernel (an array where x is).

    On the GPU a depthwise convolution: the window view's einsum would there copy kh * kw values per pixel."""
    if isinstance(x, np.ndarray):
        win = np.lib.stride_tricks.sliding_window_view(x, kernel.shape, axis=(-2, -1))
        return np.einsum("...ij,ij->...", win, kernel)
    planes = x.reshape((1, -1) + x.shape[-2:])
    weight = array_module(x).broadcast_to(kernel, (planes.shape[1], 1) + kernel.shape)
    y = _arr(conv2d(_wrap(planes), _wrap(weight), groups=planes.shape[1]))
    return y.reshape(x.shape[:-2] + y.shape[-2:])


def _blurred_degenerate(a):
    """Pillow's SMOOTH filter (3x3, center 5) on the interior; borders keep their pixels."""
    ft = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
    kernel = np.ones((3, 3), dtype=ft)
    kernel[1, 1] = 5.0
    kernel /= kernel.sum()
    out = a.copy()
    out[..., 1:-1, 1:-1] = _cast_out(_conv_valid(a.astype(ft), _like(kernel, a)), a.dtype)
    return out


def adjust_sharpness(img, sharpness_factor):
    """Blend with a smoothed image (0 blurs, 1 keeps, 2 sharpens)."""
    _check_factor(sharpness_factor, "sharpness_factor")
    _check_img(img)
    if _is_pil_image(img):
        return ImageEnhance.Sharpness(img).enhance(sharpness_factor)
    a = _arr(img)
    _assert_channels(a, [1, 3])
    if a.shape[-1] <= 2 or a.shape[-2] <= 2:
        return img
    return _wrap(_blend(a, _blurred_degenerate(a), sharpness_factor))


def _check_3d(a):
    if a.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {a.ndim}")


def autocontrast(img):
    """Stretch each channel so its darkest pixel becomes 0 and its lightest the maximum."""
    _check_img(img)
    if _is_pil_image(img):
        return ImageOps.autocontrast(img)
    a = _arr(img)
    _check_3d(a)
    _assert_channels(a, [1, 3])
    bound = _max_value(a.dtype)
    ft = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
    lo = a.min(axis=(-2, -1), keepdims=True).astype(ft)
    hi = a.max(axis=(-2, -1), keepdims=True).astype(ft)
    with np.errstate(divide="ignore"):  # torch's ``bound / t`` is ``t.reciprocal() * bound``
        scale = (ft.type(1) / (hi - lo)) * ft.type(bound)
    xp = array_module(a)
    flat = ~xp.isfinite(scale)
    lo, scale = xp.where(flat, ft.type(0), lo), xp.where(flat, ft.type(1), scale)
    return _wrap(((a.astype(ft) - lo) * scale).clip(0, bound).astype(a.dtype))


def _equalize_planes(planes):
    """Histogram-equalise each row of a uint8 [N, H * W] array (Pillow's LUT construction), all rows at once."""
    xp = array_module(planes)
    n = planes.shape[0]
    rows = xp.arange(n)
    index = planes + rows[:, None] * 256  # into the n histograms (and tables) laid end to end
    hist = xp.bincount(index.reshape(-1), minlength=256 * n).reshape(n, 256)
    # all pixels but those of the last nonzero bin (the largest value), as Pillow counts them
    step = (planes.shape[1] - hist[rows, planes.max(axis=1)]) // 255
    div = xp.maximum(step, 1)[:, None]
    lut = (xp.cumsum(hist, axis=1) + div // 2) // div
    lut = xp.concatenate([xp.zeros_like(lut[:, :1]), lut[:, :-1]], axis=1).clip(0, 255).astype(np.uint8)
    lut = xp.where(step[:, None] == 0, xp.arange(256, dtype=np.uint8), lut)  # step 0: the image as it is
    return lut.reshape(-1)[index]


def equalize(img):
    """Histogram equalisation per channel."""
    _check_img(img)
    if _is_pil_image(img):
        return ImageOps.equalize(img)
    a = _arr(img)
    if not 3 <= a.ndim <= 4:
        raise TypeError(f"Input image tensor should have 3 or 4 dimensions, but found {a.ndim}")
    if a.dtype != np.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(a, [1, 3])
    return _wrap(_equalize_planes(a.reshape(-1, a.shape[-2] * a.shape[-1])).reshape(a.shape))


def posterize(img, bits):
    """Keep the top `bits` bits of each channel."""
    _check_img(img)
    if _is_pil_image(img):
        return ImageOps.posterize(img, bits)
    a = _arr(img)
    _check_3d(a)
    if a.dtype != np.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    _assert_channels(a, [1, 3])
    return _wrap(a & np.uint8((0xFF << (8 - bits)) & 0xFF))


def invert(img):
    """max_value - img."""
    _check_img(img)
    if _is_pil_image(img):
        return ImageOps.invert(img)
    a = _arr(img)
    _check_3d(a)
    _assert_channels(a, [1, 3])
    return _wrap((a.dtype.type(_max_value(a.dtype)) - a).astype(a.dtype))


def solarize(img, threshold):
    """Invert the pixels at or above threshold."""
    _check_img(img)
    if _is_pil_image(img):
        return ImageOps.solarize(img, threshold)
    a = _arr(img)
    _check_3d(a)
    _assert_channels(a, [1, 3])
    if threshold > _max_value(a.dtype):
        raise TypeError("Threshold should be less than bound of img.")
    inverted = (a.dtype.type(_max_value(a.dtype)) - a).astype(a.dtype)
    return _wrap(array_module(a).where(a >= threshold, inverted, a))


def _gaussian_kernel1d(size, sigma, dtype):
    half = (size - 1) * 0.5
    x = np.linspace(-half, half, size).astype(dtype)
    pdf = np.exp(dtype.type(-0.5) * (x / dtype.type(sigma)) ** 2)
    return pdf / pdf.sum()


def _blur_args(kernel_size, sigma):
    """(kernel_size, sigma) of a Gaussian blur as [x, y] pairs, checked (sizes odd and positive, sigmas positive;
    sigma defaults to 0.15 * size + 0.35)."""
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}")
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}")
    for ksize in kernel_size:
        if ksize % 2 == 0 or ksize < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [ksize * 0.15 + 0.35 for ksize in kernel_size]
    if not isinstance(sigma, (int, float, list, tuple)):
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    if isinstance(sigma, (list, tuple)) and len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    return kernel_size, sigma


def gaussian_blur(img, kernel_size, sigma=None):
    """Gaussian blur with reflect padding (kernel sizes odd and positive; sigma defaults from the size)."""
    kernel_size, sigma = _blur_args(kernel_size, sigma)
    _check_img(img)
    t = pil_to_tensor(img) if _is_pil_image(img) else img
    a = _arr(t)
    ft = a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)
    kernel = np.outer(_gaussian_kernel1d(kernel_size[1], sigma[1], ft), _gaussian_kernel1d(kernel_size[0], sigma[0], ft))
    kx, ky = kernel_size[0] // 2, kernel_size[1] // 2
    padded = _pad_array(a.astype(ft), [kx, ky, kx, ky], mode="reflect")
    out = _wrap(_cast_out(_conv_valid(padded, _like(kernel.astype(ft), a)), a.dtype))
    return to_pil_image(out, mode=img.mode) if _is_pil_image(img) else out


def erase(img, i, j, h, w, v, inplace=False):
    """Set the box (i, j, h, w) of a tensor image to v."""
    if not _is_tensor(img):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img


# ---------------------------------------------------------------------------------------------------------------
# affine family


def _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=True):
    """The 2x3 matrix (flattened) of T * C * RotateScaleShear * C^-1, or its inverse (Pillow wants the inverse)."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        m = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    else:
        m = [x * scale for x in (a, b, 0.0, c, d, 0.0)]
        m[2] += m[0] * (-cx) + m[1] * (-cy) + cx + tx
        m[5] += m[3] * (-cx) + m[4] * (-cy) + cy + ty
    return m


def _grid_sample(x, gx, gy, mode):
    """grid_sample (align_corners=False, zero padding) of x (N, C, H, W) at normalised coords gx, gy (OH, OW)."""
    if mode == "bicubic":
        return _grid_sample_bicubic(x, gx, gy)
    xp = array_module(x)
    h, w = x.shape[-2:]
    if x.dtype == np.float32 and gx.dtype == np.float32:  # torch's arithmetic to the bit
        ix, iy = _torch_float32.grid_coordinates(gx, w), _torch_float32.grid_coordinates(gy, h)
        if mode == "bilinear":
            return _torch_float32.grid_sample_bilinear(x, ix, iy)
    else:
        ix = ((gx + 1) * w - 1) / 2
        iy = ((gy + 1) * h - 1) / 2

    def tap(yy, xx):
        ok = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
        vals = x[..., xp.clip(yy, 0, h - 1), xp.clip(xx, 0, w - 1)]
        return vals * ok

    if mode == "nearest":
        return tap(xp.rint(iy).astype(np.int64), xp.rint(ix).astype(np.int64))
    x0, y0 = xp.floor(ix), xp.floor(iy)
    wx1, wy1 = ix - x0, iy - y0
    wx0, wy0 = 1 - wx1, 1 - wy1
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    return (tap(y0, x0) * (wy0 * wx0) + tap(y0, x0 + 1) * (wy0 * wx1)
            + tap(y0 + 1, x0) * (wy1 * wx0) + tap(y0 + 1, x0 + 1) * (wy1 * wx1))


def _apply_grid(a, gx, gy, mode, fill):
    """Sample a [..., C, H, W] at the grid (moved where a is), filling outside pixels with fill (torchvision's mask
    trick)."""
    xp = array_module(a)
    out_dtype = a.dtype
    ft = gx.dtype
    gx, gy = _like(gx, a), _like(gy, a)
    x = a.astype(ft).reshape((-1,) + a.shape[-3:])
    if fill is not None:
        x = xp.concatenate([x, xp.ones_like(x[:, :1])], axis=1)
    y = _grid_sample(x, gx, gy, mode).astype(ft)
    if fill is not None:
        mask, y = y[:, -1:], y[:, :-1]
        fills = np.asarray(fill if isinstance(fill, (list, tuple)) else [float(fill)], dtype=ft).reshape(1, -1, 1, 1)
        fills = xp.broadcast_to(_like(fills, a), y.shape)
        if mode == "nearest":
            y = xp.where(xp.broadcast_to(mask, y.shape) < 0.5, fills, y)
        else:
            y = y * mask + (1.0 - mask) * fills
    return _cast_out(y.reshape(a.shape[:-2] + y.shape[-2:]), out_dtype)


def _base_coords(start, end, steps, dtype):
    """torch.linspace(start, end, steps) (float32, torch's rounding) as a host array of dtype: the base grid
    coordinates torchvision builds its affine and perspective grids from."""
    return engine.linspace(start, end, steps).numpy().astype(dtype)


def _affine_grid(matrix, w, h, ow, oh, dtype):
    """Normalised sampling grid of torchvision's _gen_affine_grid (centre-origin coordinates), on the host (the
    same numbers for every device; ``_apply_grid`` copies it to the image's). Bit for bit torch's CPU grid: theta
    is divided by the half sizes first, then ``(x * t0 + y * t1) + t2`` is summed in dtype, in that order."""
    theta = np.asarray(matrix, dtype=dtype).reshape(2, 3) / np.asarray([[0.5 * w], [0.5 * h]], dtype=dtype)
    xs = _base_coords(-ow * 0.5 + 0.5, ow * 0.5 + 0.5 - 1, ow, dtype)[None, :]
    ys = _base_coords(-oh * 0.5 + 0.5, oh * 0.5 + 0.5 - 1, oh, dtype)[:, None]
    gx = (xs * theta[0, 0] + ys * theta[0, 1]) + theta[0, 2]
    gy = (xs * theta[1, 0] + ys * theta[1, 1]) + theta[1, 2]
    return gx, gy


def _perspective_grid(coeffs, ow, oh, dtype):
    """Normalised sampling grid of torchvision's _perspective_grid, on the host, bit for bit torch's CPU grid: the
    numerators use the coefficients divided by the half sizes, the denominator ``(x * c6 + y * c7) + 1``, then
    ``num / den - 1``."""
    c = np.asarray(coeffs, dtype=dtype)
    theta = c[:6].reshape(2, 3) / np.asarray([[0.5 * ow], [0.5 * oh]], dtype=dtype)
    xs = _base_coords(0.5, ow * 1.0 + 0.5 - 1.0, ow, dtype)[None, :]
    ys = _base_coords(0.5, oh * 1.0 + 0.5 - 1.0, oh, dtype)[:, None]
    one = dtype.type(1.0)
    den = (xs * c[6] + ys * c[7]) + one
    with np.errstate(all="ignore"):  # degenerate coefficients give torch's infinities and NaN, quietly
        gx = ((xs * theta[0, 0] + ys * theta[0, 1]) + theta[0, 2]) / den - one
        gy = ((xs * theta[1, 0] + ys * theta[1, 1]) + theta[1, 2]) / den - one
    return gx, gy


def _grid_dtype(a):
    return a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)


def _check_grid_args(a, interpolation, fill):
    if interpolation not in (InterpolationMode.NEAREST, InterpolationMode.BILINEAR):
        raise ValueError(f"Interpolation mode '{interpolation.value}' is unsupported with Tensor input")
    if isinstance(fill, (tuple, list)):
        c = a.shape[-3] if a.ndim > 2 else 1
        if len(fill) > 1 and len(fill) != c:
            raise ValueError("The number of elements in 'fill' cannot broadcast to match the number of channels of "
                             f"the image ({len(fill)} != {c})")


def _affine_output_size(matrix, w, h):
    """(w, h) that holds the whole transformed image (PIL's expand rule, 1e-4 tolerance)."""
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0],
                    [0.5 * w, -0.5 * h, 1.0]], dtype=np.float32)
    new = pts @ np.asarray(matrix, dtype=np.float32).reshape(2, 3).T
    lo = new.min(axis=0) + np.array([w * 0.5, h * 0.5], dtype=np.float32)
    hi = new.max(axis=0) + np.array([w * 0.5, h * 0.5], dtype=np.float32)
    tol = np.float32(1e-4)
    size = np.ceil(np.trunc(hi / tol) * tol) - np.floor(np.trunc(lo / tol) * tol)
    return int(size[0]), int(size[1])


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None, fill=None):
    """Rotate counter-clockwise by angle degrees around center (default: the image center)."""
    interpolation = _to_mode(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    _check_img(img)
    if _is_pil_image(img):
        return img.rotate(angle, pil_modes_mapping[interpolation], expand, center, **_fill_dict(fill, img))
    a = _arr(img)
    _check_grid_args(a, interpolation, fill)
    _, h, w = get_dimensions(img)
    center_f = [0.0, 0.0] if center is None else [c - s * 0.5 for c, s in zip(center, (w, h))]
    matrix = _get_inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    ow, oh = _affine_output_size(matrix, w, h) if expand else (w, h)
    gx, gy = _affine_grid(matrix, w, h, ow, oh, _grid_dtype(a))
    return _wrap(_apply_grid(a if a.ndim > 2 else a[None], gx, gy, interpolation.value, fill).reshape(
        a.shape[:-2] + (oh, ow)))


def _affine_args(angle, translate, scale, shear, center):
    """Validated (angle, translate, shear, center) of an affine call (v1 and v2): a number shear shears x only, a
    one-item shear both axes; the angle and center become floats, translate a list."""
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    shear = [shear, 0.0] if isinstance(shear, numbers.Number) else list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None:
        if not isinstance(center, (list, tuple)):
            raise TypeError("Argument center should be a sequence")
        center = [float(c) for c in center]
    return float(angle), list(translate), shear, center


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST, fill=None, center=None):
    """Rotate (clockwise degrees), translate, scale and shear, keeping center fixed."""
    interpolation = _to_mode(interpolation)
    angle, translate, shear, center = _affine_args(angle, translate, scale, shear, center)
    _check_img(img)
    _, h, w = get_dimensions(img)
    if _is_pil_image(img):
        center = [w * 0.5, h * 0.5] if center is None else center
        matrix = _get_inverse_affine_matrix(center, float(angle), list(translate), scale, shear)
        return img.transform((w, h), Image.AFFINE, matrix, pil_modes_mapping[interpolation], **_fill_dict(fill, img))
    a = _arr(img)
    _check_grid_args(a, interpolation, fill)
    center_f = [0.0, 0.0] if center is None else [c - s * 0.5 for c, s in zip(center, (w, h))]
    matrix = _get_inverse_affine_matrix(center_f, float(angle), [float(t) for t in translate], scale, shear)
    gx, gy = _affine_grid(matrix, w, h, w, h, _grid_dtype(a))
    return _wrap(_apply_grid(a if a.ndim > 2 else a[None], gx, gy, interpolation.value, fill).reshape(a.shape))


def _get_perspective_coeffs(startpoints, endpoints):
    """The 8 coefficients mapping endpoints back to startpoints (float64 least squares, rounded to float32)."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide exactly four corners, got {len(startpoints)} startpoints "
                         f"and {len(endpoints)} endpoints.")
    rows = []
    for (x, y), (u, v) in zip(endpoints, startpoints):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
    a = np.asarray(rows, dtype=np.float64)
    b = np.asarray(startpoints, dtype=np.float64).reshape(8)
    return np.linalg.lstsq(a, b, rcond=None)[0].astype(np.float32).tolist()


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Warp so the four startpoints land on the four endpoints."""
    interpolation = _to_mode(interpolation)
    coeffs = _get_perspective_coeffs(startpoints, endpoints)
    _check_img(img)
    if _is_pil_image(img):
        return img.transform(img.size, Image.PERSPECTIVE, coeffs, pil_modes_mapping[interpolation],
                             **_fill_dict(fill, img))
    a = _arr(img)
    _check_grid_args(a, interpolation, fill)
    _, h, w = get_dimensions(img)
    gx, gy = _perspective_grid(coeffs, w, h, _grid_dtype(a))
    return _wrap(_apply_grid(a if a.ndim > 2 else a[None], gx, gy, interpolation.value, fill).reshape(a.shape))



# ---------------------------------------------------------------------------------------------------------------
# elastic transform


def _cubic_weights(t):
    """The four cubic-convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 for fractions t (grid_sample's)."""
    a = -0.75

    def far(x):  # |x| in [1, 2)
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    def near(x):  # |x| in [0, 1)
        return ((a + 2) * x - (a + 3)) * x * x + 1

    return far(t + 1), near(t), near(1 - t), far(2 - t)


def _grid_sample_bicubic(x, gx, gy):
    """grid_sample's bicubic mode (align_corners=False, zero padding) of x (N, C, H, W) at gx, gy (OH, OW)."""
    xp = array_module(x)
    h, w = x.shape[-2:]
    ix = ((gx + 1) * w - 1) / 2
    iy = ((gy + 1) * h - 1) / 2
    x0, y0 = xp.floor(ix), xp.floor(iy)
    wx, wy = _cubic_weights(ix - x0), _cubic_weights(iy - y0)
    x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
    out = 0
    for i in range(4):
        yy = y0 - 1 + i
        row = 0
        for j in range(4):
            xx = x0 - 1 + j
            inside = (xx >= 0) & (xx < w) & (yy >= 0) & (yy < h)
            row = row + x[..., yy.clip(0, h - 1), xx.clip(0, w - 1)] * inside * wx[j]
        out = out + row * wy[i]
    return out


def _identity_grid(h, w):
    """torchvision's identity grid (1, H, W, 2): the (x, y) pixel centres normalised to (-1, 1)."""
    grid_y, grid_x = engine.meshgrid(engine.linspace((-h + 1) / h, (h - 1) / h, h),
                                     engine.linspace((-w + 1) / w, (w - 1) / w, w), indexing="ij")
    return engine.stack([grid_x, grid_y], -1).unsqueeze(0)


def elastic_transform(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Sample img at the identity grid plus displacement (1, H, W, 2), in grid_sample's [-1, 1] coordinates."""
    if isinstance(interpolation, int):
        warnings.warn("Argument interpolation should be of type InterpolationMode instead of int. "
                      "Please, use InterpolationMode enum.")
        interpolation = _interpolation_modes_from_int(interpolation)
    if not _is_tensor(displacement):
        raise TypeError("Argument displacement should be a Tensor")
    _check_img(img)
    t = pil_to_tensor(img) if _is_pil_image(img) else img
    shape = (1,) + tuple(t.shape[-2:]) + (2,)
    if shape != tuple(displacement.shape):
        raise ValueError(f"Argument displacement shape should be {shape}, but given {displacement.shape}")
    mode = interpolation.value
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    # the grid is made on the host (like the other transforms' grids); _apply_grid takes it to the image's device
    grid = _arr(_identity_grid(t.shape[-2], t.shape[-1]) + displacement.detach().cpu())
    gx, gy = grid[0, ..., 0], grid[0, ..., 1]
    a = _arr(t)
    a3 = a if a.ndim > 2 else a[None]
    out = _wrap(_apply_grid(a3, gx, gy, mode, fill).reshape(a.shape))
    return to_pil_image(out, mode=img.mode) if _is_pil_image(img) else out


__all__ = [
    "InterpolationMode", "get_dimensions", "get_image_size", "get_image_num_channels", "to_tensor", "pil_to_tensor",
    "to_pil_image", "convert_image_dtype", "normalize", "resize", "pad", "crop", "center_crop", "resized_crop",
    "hflip", "vflip", "five_crop", "ten_crop", "rgb_to_grayscale", "to_grayscale", "adjust_brightness",
    "adjust_contrast", "adjust_saturation", "adjust_hue", "adjust_gamma", "adjust_sharpness", "autocontrast",
    "equalize", "posterize", "invert", "solarize", "gaussian_blur", "erase", "rotate", "affine", "perspective",
    "elastic_transform",
]
