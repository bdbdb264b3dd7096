"""The v2 colour functionals: brightness, contrast, saturation, hue, gamma, sharpness, autocontrast, equalize,
invert, posterize, solarize, grayscale and channel permutation of images (tensor, ``Image``, PIL) and videos.

The tensor kernels follow torchvision v2's arithmetic, which is not always v1's: blends are fused
multiply-adds (torch's ``add_(other, alpha=...)`` is an FMA), ``autocontrast`` divides by a scale, ``equalize``
and ``posterize`` take any dtype, the HSV conversion multiplies by 1/6. Leading dimensions are batch
dimensions. PIL images go through the v1 functionals, which match torchvision's PIL code.
"""
import numpy as np
import PIL.Image

import engine
from engine._device import array_module

from .... import tv_tensors
from ... import functional as _F1
from ...functional import _arr, _convert_array_dtype, _equalize_planes, _max_value, _wrap
from ._utils import _register_kernel_internal, dispatch

__all__ = ["adjust_brightness", "adjust_brightness_image", "adjust_brightness_video",
           "adjust_contrast", "adjust_contrast_image", "adjust_contrast_video",
           "adjust_saturation", "adjust_saturation_image", "adjust_saturation_video",
           "adjust_hue", "adjust_hue_image", "adjust_hue_video",
           "adjust_gamma", "adjust_gamma_image", "adjust_gamma_video",
           "adjust_sharpness", "adjust_sharpness_image", "adjust_sharpness_video",
           "autocontrast", "autocontrast_image", "autocontrast_video",
           "equalize", "equalize_image", "equalize_video",
           "invert", "invert_image", "invert_video",
           "posterize", "posterize_image", "posterize_video",
           "solarize", "solarize_image", "solarize_video",
           "rgb_to_grayscale", "rgb_to_grayscale_image", "to_grayscale",
           "grayscale_to_rgb", "grayscale_to_rgb_image",
           "permute_channels", "permute_channels_image", "permute_channels_video"]

_IMAGE_TYPES = (engine.Tensor, tv_tensors.Image)


def _register_image(functional, pil_kernel):
    """Register the decorated kernel for pure tensors and ``Image``, and ``pil_kernel`` for PIL images."""
    def decorator(kernel):
        for input_type in _IMAGE_TYPES:
            _register_kernel_internal(functional, input_type)(kernel)
        _register_kernel_internal(functional, PIL.Image.Image)(pil_kernel)
        return kernel
    return decorator


def _register_video(functional):
    return _register_kernel_internal(functional, tv_tensors.Video)


# ---------------------------------------------------------------------------------------------------------------
# array helpers


def _float_type(a):
    """The float dtype torch computes a's arithmetic in (a's own for floats, float32 for integers)."""
    return a.dtype if a.dtype.kind == "f" else np.dtype(np.float32)


def _fma(x, alpha, y):
    """``y + alpha * x`` rounded once, as torch's vectorised ``y.add_(x, alpha=alpha)`` computes it.

    float32 operands are fused exactly through float64 (their product is exact there); float64 ones are not
    fused (a rounding step more than torch, within an ulp)."""
    ft = y.dtype
    if ft == np.float32:
        return (np.float64(np.float32(alpha)) * x.astype(np.float64) + y).astype(np.float32)
    return ft.type(alpha) * x.astype(ft) + y


def _check_channels(a):
    c = a.shape[-3]
    if c not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are 1 or 3, but found {c}")


def _luma(a, preserve_dtype):
    """ITU-R 601-2 luma [..., 1, H, W] of RGB a, fused as torch's chain of ``add_`` (truncated to a's dtype
    with ``preserve_dtype``)."""
    ft = _float_type(a)
    r, g, b = (a[..., i:i + 1, :, :] for i in range(3))
    luma = _fma(b, 0.114, _fma(g, 0.587, r.astype(ft) * ft.type(0.2989)))
    return luma.astype(a.dtype) if preserve_dtype else luma


def _blend(a, b, ratio):
    """``ratio * a + (1 - ratio) * b`` (one FMA), clamped to a's value range, in a's dtype (truncated)."""
    ft = _float_type(a)
    out = _fma(b, 1.0 - float(ratio), a.astype(ft) * ft.type(ratio))
    out = out.clip(0, _max_value(a.dtype))
    return out if a.dtype.kind == "f" else out.astype(a.dtype)


def _to_dtype(a, dtype):
    """``to_dtype(..., scale=True)`` of v2 on an array: as v1's conversion, except that integers become floats by
    a multiplication with ``1 / max_value`` (v1 divides)."""
    dtype = np.dtype(dtype)
    if a.dtype.kind != "f" and dtype.kind == "f":
        return a.astype(dtype) * dtype.type(1.0 / _max_value(a.dtype))
    return _convert_array_dtype(a, dtype)


def _num_value_bits(dtype):
    """Bits that carry the value of an integer dtype (the sign bit excluded)."""
    return np.iinfo(dtype).bits - (1 if np.dtype(dtype).kind == "i" else 0)


def _invert_array(a):
    if a.dtype.kind == "f":
        return a.dtype.type(1.0) - a
    if a.dtype == np.uint8:
        return ~a
    return a ^ a.dtype.type((1 << _num_value_bits(a.dtype)) - 1)


# ---------------------------------------------------------------------------------------------------------------
# grayscale and channels


def rgb_to_grayscale(inpt, num_output_channels=1):
    """Grayscale (luma) with 1 channel, or 3 equal ones."""
    return dispatch(rgb_to_grayscale, inpt, num_output_channels=num_output_channels)


to_grayscale = rgb_to_grayscale  # v1's name, kept as torchvision v2 keeps it


def _check_num_output_channels(num_output_channels):
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}.")


def _gray_array(a, num_output_channels):
    """a as grayscale; a single channel is copied (or repeated to 3) unchanged."""
    if a.shape[-3] == 1:
        return a.copy() if num_output_channels == 1 else array_module(a).repeat(a, 3, axis=-3)
    if a.shape[-3] != 3:
        raise ValueError(f"too many values to unpack (expected 3, got {a.shape[-3]} channels)")
    luma = _luma(a, preserve_dtype=True)
    return luma if num_output_channels == 1 else array_module(a).broadcast_to(luma, a.shape)


def _rgb_to_grayscale_pil(image, num_output_channels=1):
    _check_num_output_channels(num_output_channels)
    return _F1.to_grayscale(image, num_output_channels=num_output_channels)


@_register_image(rgb_to_grayscale, _rgb_to_grayscale_pil)
def rgb_to_grayscale_image(image, num_output_channels=1):
    _check_num_output_channels(num_output_channels)
    return _wrap(_gray_array(_arr(image), num_output_channels))


def grayscale_to_rgb(inpt):
    """Three channels from one (inputs with 3 or more channels are returned as they are)."""
    return dispatch(grayscale_to_rgb, inpt)


def _grayscale_to_rgb_pil(image):
    return image.convert(mode="RGB")


@_register_image(grayscale_to_rgb, _grayscale_to_rgb_pil)
def grayscale_to_rgb_image(image):
    if image.shape[-3] >= 3:
        return image
    return _wrap(_gray_array(_arr(image), 3))


def permute_channels(inpt, permutation):
    """Channel ``i`` of the output is channel ``permutation[i]`` of the input."""
    return dispatch(permute_channels, inpt, permutation=permutation)


def _permute_channels_pil(image, permutation):
    return _F1.to_pil_image(permute_channels_image(_F1.pil_to_tensor(image), permutation=permutation))


@_register_image(permute_channels, _permute_channels_pil)
def permute_channels_image(image, permutation):
    num_channels = image.shape[-3]
    if len(permutation) != num_channels:
        raise ValueError(f"Length of permutation does not match number of channels: "
                         f"{len(permutation)} != {num_channels}")
    if image.numel() == 0:
        return image
    order = np.asarray(permutation.tolist() if isinstance(permutation, engine.Tensor) else permutation)
    return _wrap(_arr(image)[..., order, :, :])


@_register_video(permute_channels)
def permute_channels_video(video, permutation):
    return permute_channels_image(video, permutation=permutation)


# ---------------------------------------------------------------------------------------------------------------
# brightness, saturation, contrast, sharpness


def _check_factor(value, name):
    if value < 0:
        raise ValueError(f"{name} ({value}) is not non-negative.")


def adjust_brightness(inpt, brightness_factor):
    """Multiply by ``brightness_factor`` (0 gives black), clamped to the value range."""
    return dispatch(adjust_brightness, inpt, brightness_factor=brightness_factor)


@_register_image(adjust_brightness, _F1.adjust_brightness)
def adjust_brightness_image(image, brightness_factor):
    _check_factor(brightness_factor, "brightness_factor")
    a = _arr(image)
    _check_channels(a)
    ft = _float_type(a)
    out = (a.astype(ft) * ft.type(brightness_factor)).clip(0, _max_value(a.dtype))
    return _wrap(out.astype(a.dtype))


@_register_video(adjust_brightness)
def adjust_brightness_video(video, brightness_factor):
    return adjust_brightness_image(video, brightness_factor=brightness_factor)


def adjust_saturation(inpt, saturation_factor):
    """Blend with the grayscale image (0 gives gray, 2 doubles the saturation)."""
    return dispatch(adjust_saturation, inpt, saturation_factor=saturation_factor)


@_register_image(adjust_saturation, _F1.adjust_saturation)
def adjust_saturation_image(image, saturation_factor):
    _check_factor(saturation_factor, "saturation_factor")
    a = _arr(image)
    _check_channels(a)
    if a.shape[-3] == 1:
        return image
    gray = _luma(a, preserve_dtype=False)
    if a.dtype.kind != "f":
        gray = np.floor(gray)
    return _wrap(_blend(a, gray, saturation_factor))


@_register_video(adjust_saturation)
def adjust_saturation_video(video, saturation_factor):
    return adjust_saturation_image(video, saturation_factor=saturation_factor)


def adjust_contrast(inpt, contrast_factor):
    """Blend with the mean gray level (0 gives a uniform gray image)."""
    return dispatch(adjust_contrast, inpt, contrast_factor=contrast_factor)


@_register_image(adjust_contrast, _F1.adjust_contrast)
def adjust_contrast_image(image, contrast_factor):
    _check_factor(contrast_factor, "contrast_factor")
    a = _arr(image)
    _check_channels(a)
    ft = _float_type(a)
    if a.shape[-3] == 3:
        gray = _luma(a, preserve_dtype=False)
        gray = gray if a.dtype.kind == "f" else np.floor(gray)
    else:
        gray = a.astype(ft)
    mean = gray.mean(axis=(-3, -2, -1), keepdims=True, dtype=np.float64).astype(ft)
    return _wrap(_blend(a, mean, contrast_factor))


@_register_video(adjust_contrast)
def adjust_contrast_video(video, contrast_factor):
    return adjust_contrast_image(video, contrast_factor=contrast_factor)


def adjust_sharpness(inpt, sharpness_factor):
    """Blend the interior with a 3x3 smoothed image (0 blurs, 1 keeps, 2 sharpens); borders are kept."""
    return dispatch(adjust_sharpness, inpt, sharpness_factor=sharpness_factor)


def _smoothed_interior(x):
    """Pillow's SMOOTH filter (ones around a 5, over 13) of float x [..., H, W], valid part only."""
    a, b = x.dtype.type(1.0 / 13.0), x.dtype.type(5.0 / 13.0)
    kernel = np.full((3, 3), a, dtype=x.dtype)
    kernel[1, 1] = b
    return _F1._conv_valid(x, _F1._like(kernel, x))


@_register_image(adjust_sharpness, _F1.adjust_sharpness)
def adjust_sharpness_image(image, sharpness_factor):
    a = _arr(image)
    num_channels, height, width = a.shape[-3:]
    if num_channels not in (1, 3):
        raise TypeError(f"Input image tensor can have 1 or 3 channels, but found {num_channels}")
    _check_factor(sharpness_factor, "sharpness_factor")
    if a.size == 0 or height <= 2 or width <= 2:
        return image
    out = a.astype(_float_type(a))
    blurred = _smoothed_interior(out)
    if a.dtype.kind != "f":
        blurred = np.round(blurred)
    interior = out[..., 1:-1, 1:-1]
    out[..., 1:-1, 1:-1] = _fma(blurred - interior, 1.0 - sharpness_factor, interior)
    out = out.clip(0, _max_value(a.dtype))
    return _wrap(out.astype(a.dtype))


@_register_video(adjust_sharpness)
def adjust_sharpness_video(video, sharpness_factor):
    return adjust_sharpness_image(video, sharpness_factor=sharpness_factor)


# ---------------------------------------------------------------------------------------------------------------
# hue and gamma


def adjust_hue(inpt, hue_factor):
    """Turn the hue by ``hue_factor`` (in [-0.5, 0.5]) of a full circle."""
    return dispatch(adjust_hue, inpt, hue_factor=hue_factor)


def _rgb_to_hsv(rgb):
    """float32 RGB [..., 3, H, W] -> HSV, in torchvision v2's operation order."""
    xp = array_module(rgb)
    f32 = np.float32
    r, g = rgb[..., 0, :, :], rgb[..., 1, :, :]
    maxc, minc = rgb.max(axis=-3), rgb.min(axis=-3)
    eqc = maxc == minc
    channels_range = maxc - minc
    s = channels_range / xp.where(eqc, f32(1), maxc)
    divisor = xp.where(eqc, f32(1), channels_range)[..., None, :, :]
    rc, gc, bc = (((maxc[..., None, :, :] - rgb) / divisor)[..., i, :, :] for i in range(3))
    not_r, is_g = maxc != r, maxc == g
    hg = ((rc + f32(2)) - bc) * (is_g & not_r)
    hr = (bc - gc) * ~not_r
    hb = ((gc + f32(4)) - rc) * (not_r & ~is_g)
    h = xp.fmod((hr + hg + hb) * f32(1.0 / 6.0) + f32(1), f32(1))
    return h, s, maxc


def _hsv_to_rgb(h, s, v):
    """float32 HSV planes -> RGB [..., 3, H, W], in torchvision v2's operation order."""
    xp = array_module(h)
    f32 = np.float32
    h6 = h * f32(6)
    i = xp.floor(h6)
    f = h6 - i
    sxf = s * f
    one_minus_s = f32(1) - s
    q = ((f32(1) - sxf) * v).clip(0, 1)
    t = ((sxf + one_minus_s) * v).clip(0, 1)
    p = (one_minus_s * v).clip(0, 1)
    sector = i.astype(np.int32) % 6
    vpqt = xp.stack((v, p, q, t))
    select = xp.asarray([[0, 2, 1, 1, 3, 0], [3, 0, 0, 2, 1, 1], [1, 1, 3, 0, 0, 2]])[:, sector]
    rgb = xp.take_along_axis(vpqt, select, axis=0)
    return xp.moveaxis(rgb, 0, -3)


@_register_image(adjust_hue, _F1.adjust_hue)
def adjust_hue_image(image, hue_factor):
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    a = _arr(image)
    _check_channels(a)
    if a.shape[-3] == 1 or a.size == 0:
        return image
    h, s, v = _rgb_to_hsv(_to_dtype(a, np.float32))
    h = array_module(a).mod(h + np.float32(hue_factor), np.float32(1))
    return _wrap(_to_dtype(_hsv_to_rgb(h, s, v), a.dtype))


@_register_video(adjust_hue)
def adjust_hue_video(video, hue_factor):
    return adjust_hue_image(video, hue_factor=hue_factor)


def adjust_gamma(inpt, gamma, gain=1):
    """``gain * image ** gamma`` on the [0, 1] scale."""
    return dispatch(adjust_gamma, inpt, gamma=gamma, gain=gain)


@_register_image(adjust_gamma, _F1.adjust_gamma)
def adjust_gamma_image(image, gamma, gain=1.0):
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    a = _arr(image)
    x = a if a.dtype.kind == "f" else _to_dtype(a, np.float32)
    out = array_module(x).power(x, x.dtype.type(gamma))
    if gain != 1.0:
        out = (out * out.dtype.type(gain)).clip(0.0, 1.0)
    return _wrap(_to_dtype(out, a.dtype))


@_register_video(adjust_gamma)
def adjust_gamma_video(video, gamma, gain=1):
    return adjust_gamma_image(video, gamma=gamma, gain=gain)


# ---------------------------------------------------------------------------------------------------------------
# autocontrast, equalize, invert, posterize, solarize


def autocontrast(inpt):
    """Stretch each channel so its darkest pixel becomes 0 and its lightest the maximum value."""
    return dispatch(autocontrast, inpt)


@_register_image(autocontrast, _F1.autocontrast)
def autocontrast_image(image):
    a = _arr(image)
    _check_channels(a)
    if a.size == 0:
        return image
    xp = array_module(a)
    bound = _max_value(a.dtype)
    x = a.astype(_float_type(a))
    f = x.dtype.type
    minimum = x.min(axis=(-2, -1), keepdims=True)
    maximum = x.max(axis=(-2, -1), keepdims=True)
    flat = maximum == minimum
    inv_scale = xp.where(flat, f(1), (maximum - minimum) * f(1.0 / bound))
    minimum = xp.where(flat, f(0), minimum)
    return _wrap(((x - minimum) / inv_scale).clip(0, bound).astype(a.dtype))


@_register_video(autocontrast)
def autocontrast_video(video):
    return autocontrast_image(video)


def equalize(inpt):
    """Histogram equalisation of each channel (Pillow's lookup table), on the uint8 scale."""
    return dispatch(equalize, inpt)


@_register_image(equalize, _F1.equalize)
def equalize_image(image):
    if image.numel() == 0:
        return image
    a = _arr(image)
    u8 = _to_dtype(a, np.uint8)
    out = _equalize_planes(u8.reshape(-1, u8.shape[-2] * u8.shape[-1])).reshape(u8.shape)
    return _wrap(_to_dtype(out, a.dtype))


@_register_video(equalize)
def equalize_video(video):
    return equalize_image(video)


def invert(inpt):
    """The negative: ``max_value - image`` (the bits flipped for integers)."""
    return dispatch(invert, inpt)


@_register_image(invert, _F1.invert)
def invert_image(image):
    return _wrap(_invert_array(_arr(image)))


@_register_video(invert)
def invert_video(video):
    return invert_image(video)


def posterize(inpt, bits):
    """Keep ``bits`` bits per channel (floats: ``2 ** bits`` levels)."""
    return dispatch(posterize, inpt, bits=bits)


@_register_image(posterize, _F1.posterize)
def posterize_image(image, bits):
    if not isinstance(bits, int) or not 0 <= bits <= 8:
        raise TypeError(f"bits must be a positive integer in the range [0, 8], got {bits} instead.")
    a = _arr(image)
    if a.dtype.kind == "f":
        levels = 1 << bits
        f = a.dtype.type
        return _wrap(array_module(a).floor(a * f(levels)).clip(0, levels - 1) * f(1.0 / levels))
    value_bits = _num_value_bits(a.dtype)
    if bits >= value_bits:
        return image
    return _wrap(a & a.dtype.type(((1 << bits) - 1) << (value_bits - bits)))


@_register_video(posterize)
def posterize_video(video, bits):
    return posterize_image(video, bits=bits)


def solarize(inpt, threshold):
    """Invert the values at or above ``threshold``."""
    return dispatch(solarize, inpt, threshold=threshold)


@_register_image(solarize, _F1.solarize)
def solarize_image(image, threshold):
    a = _arr(image)
    if threshold > _max_value(a.dtype):
        raise TypeError(f"Threshold should be less or equal the maximum value of the dtype, but got {threshold}")
    # torch compares with the threshold cast to the promoted dtype (float32 for integer images)
    threshold = _float_type(a).type(threshold)
    return _wrap(array_module(a).where(a >= threshold, _invert_array(a), a))


@_register_video(solarize)
def solarize_video(video, threshold):
    return solarize_image(video, threshold=threshold)
