"""Decoding image files into CHW tensors: ``decode_image`` (PNG, JPEG, GIF, WebP, told apart by their
first bytes), the per-format ``decode_png`` / ``decode_jpeg`` / ``decode_gif`` / ``decode_webp``, and
``read_image``. See ``channels`` for how each ``ImageReadMode`` is produced.

``decode_avif`` and ``decode_heic`` read the two HEIF-based formats, which torchvision decodes only with its
separate ``torchvision-extra-decoders`` package and keeps out of ``decode_image`` (as here): AVIF through
Pillow's own AVIF support (Pillow >= 11.2), HEIC through the ``pillow-heif`` plug-in when it is installed. Pillow
gives 8 bits per channel, so a 10- or 12-bit file decodes to uint8 where torchvision's gives uint16."""
import io
import warnings

import numpy as np
from PIL import Image, ImageOps

import engine

from . import gif, png16
from .channels import channels_in_mode, expanded, hwc_in_mode
from .files import read_file
from .read_mode import ImageReadMode, read_mode

_SIGNATURES = (("png", lambda d: d.startswith(b"\x89PNG\r\n\x1a\n")), ("jpeg", lambda d: d.startswith(b"\xff\xd8\xff")),
               ("gif", lambda d: d.startswith((b"GIF87a", b"GIF89a"))),
               ("webp", lambda d: d[:4] == b"RIFF" and d[8:12] == b"WEBP"),
               ("avif", lambda d: _heif_brand(d) in (b"avif", b"avis")),
               ("heic", lambda d: _heif_brand(d) in (b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"mif1")))
_HEIF_FORMATS = ("avif", "heic")  # decoded only when asked for by name, as torchvision


def _heif_brand(data):
    """The major brand of an ISO-BMFF file (its ``ftyp`` box), None for other files; a generic ``mif1`` HEIF
    whose compatible brands name AVIF counts as AVIF."""
    if data[4:8] != b"ftyp":
        return None
    brand = data[8:12]
    size = int.from_bytes(data[:4], "big")
    if brand == b"mif1" and b"avif" in data[16:size]:
        return b"avif"
    return brand


def _encoded_bytes(input):
    """The bytes of ``input``: a non-empty 1-D uint8 tensor, or a path to read."""
    if not isinstance(input, engine.Tensor):
        input = read_file(str(input))
    if input.dtype != engine.uint8:
        raise RuntimeError(f"Expected a uint8 tensor, got {input.dtype}")
    if input.dim() != 1 or input.numel() == 0:
        raise RuntimeError(f"Expected a non empty 1-dimensional tensor, got shape {tuple(input.shape)}")
    return input.cpu().numpy().tobytes()


def _format_of(data):
    for name, matches in _SIGNATURES:
        if matches(data):
            return name
    raise RuntimeError("Unsupported image file. Only jpeg, png, webp and gif are currently supported.")


def _opened(data, kind):
    """The Pillow image in ``data`` (a one-line RuntimeError when Pillow cannot read it)."""
    try:
        return Image.open(io.BytesIO(data))
    except Exception as e:
        raise RuntimeError(f"cannot decode this {kind} image: {e}") from None


def _loaded(image, kind, apply_exif_orientation):
    """``image`` decoded (turned upright by its EXIF orientation when asked)."""
    try:
        image.load()
    except Exception as e:
        raise RuntimeError(f"cannot decode this {kind} image: {e}") from None
    return ImageOps.exif_transpose(image) if apply_exif_orientation else image


def _tensor(hwc):
    return engine.from_numpy(np.ascontiguousarray(hwc.transpose(2, 0, 1)))


def _png(data, mode, apply_exif_orientation):
    if png16.is_deep_colour(data):
        return _tensor(channels_in_mode(*png16.colour_and_alpha(data, lambda rawmode: _png_unpacked(
            data, rawmode, apply_exif_orientation)), mode))
    image = expanded(_loaded(_opened(data, "png"), "png", apply_exif_orientation))
    return _tensor(hwc_in_mode(image, mode))


def _png_unpacked(data, rawmode, apply_exif_orientation):
    """The PNG ``data`` decoded by Pillow with the raw mode ``rawmode`` (see ``png16``)."""
    image = _opened(data, "png")
    image.tile = [tile._replace(args=rawmode) for tile in image.tile]
    return _loaded(image, "png", apply_exif_orientation)


def _jpeg(data, mode, apply_exif_orientation):
    """libjpeg's outputs: CMYK as stored (Adobe files hold inverted values), grey as the luma channel."""
    if mode in (ImageReadMode.GRAY_ALPHA, ImageReadMode.RGB_ALPHA):
        raise RuntimeError(f"The provided mode ({mode.name}) is not supported for JPEG files")
    image = _opened(data, "jpeg")
    if mode is ImageReadMode.GRAY and image.mode not in ("L", "CMYK"):
        image.draft("L", image.size)  # libjpeg then decodes the luma channel only, as torchvision asks it to
    image = _loaded(image, "jpeg", apply_exif_orientation)
    if image.mode == "CMYK" and mode is ImageReadMode.UNCHANGED:
        cmyk = np.asarray(image)
        return _tensor(255 - cmyk if "adobe" in image.info else cmyk)
    if mode is ImageReadMode.RGB or (image.mode == "CMYK" and mode is ImageReadMode.GRAY):
        image = image.convert("RGB")
    if mode is ImageReadMode.GRAY:
        image = image.convert("L")
    return _tensor(hwc_in_mode(image, ImageReadMode.UNCHANGED))


def _gif(data, mode, apply_exif_orientation):
    """Every frame as RGB, (N, 3, H, W) when there are several (the mode is not used, as torchvision); see
    ``gif`` for how the frames are composed."""
    return engine.from_numpy(gif.decode_frames(data))


def _webp(data, mode, apply_exif_orientation):
    """RGB or RGBA: WebP has no grey, so the grey modes keep the file's colours (with torchvision's warning)."""
    image = _loaded(_opened(data, "webp"), "webp", apply_exif_orientation)
    if mode in (ImageReadMode.GRAY, ImageReadMode.GRAY_ALPHA):
        warnings.warn("Webp does not support grayscale conversions. The returned tensor will be in the colorspace "
                      "of the original image.", stacklevel=3)
    if mode is ImageReadMode.RGB:
        image = image.convert("RGB")
    elif mode is ImageReadMode.RGB_ALPHA:
        image = image.convert("RGBA")
    return _tensor(hwc_in_mode(image, ImageReadMode.UNCHANGED))


def _heif(kind):
    """AVIF or HEIC as RGB or RGBA (grey modes convert, as libavif's and libheif's outputs do for torchvision)."""
    def decode(data, mode, apply_exif_orientation):
        if kind == "heic":
            _register_heif_plugin()
        image = _loaded(_opened(data, kind), kind, apply_exif_orientation)
        return _tensor(hwc_in_mode(image, mode))
    return decode


def _register_heif_plugin():
    try:
        import pillow_heif
    except ImportError:
        raise RuntimeError("decode_heic needs the pillow-heif package (pip install pillow-heif)") from None
    pillow_heif.register_heif_opener()


_DECODERS = {"png": _png, "jpeg": _jpeg, "gif": _gif, "webp": _webp, "avif": _heif("avif"), "heic": _heif("heic")}


def _decode_as(kind, input, mode, apply_exif_orientation):
    """Decode ``input`` as the ``kind`` of file its first bytes say (a mismatch is a one-line error)."""
    data = _encoded_bytes(input)
    found = _format_of(data)
    if kind is None and found in _HEIF_FORMATS:
        raise RuntimeError("Unsupported image file. Only jpeg, png, webp and gif are currently supported by "
                           "decode_image. For avif and heic format, please rely on `decode_avif` and `decode_heic` "
                           "directly.")
    if kind is not None and found != kind:
        raise RuntimeError(f"Content is not {kind}: its first bytes are those of a {found} file")
    return _DECODERS[found](data, read_mode(mode), apply_exif_orientation)


def decode_image(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    """Decode a PNG, JPEG, GIF or WebP file (its bytes as a 1-D uint8 tensor, or its path) into a CHW
    tensor (uint8; uint16 for 16-bit grey PNGs)."""
    return _decode_as(None, input, mode, apply_exif_orientation)


def read_image(path, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    """Read and decode the image file at ``path`` (see ``decode_image``)."""
    return decode_image(read_file(path), mode, apply_exif_orientation)


def decode_png(input, mode=ImageReadMode.UNCHANGED, apply_exif_orientation=False):
    return _decode_as("png", input, mode, apply_exif_orientation)


def decode_jpeg(input, mode=ImageReadMode.UNCHANGED, device="cpu", apply_exif_orientation=False):
    """Decode one JPEG (a 1-D uint8 tensor) or a list of them; the result is put on ``device``."""
    if isinstance(input, (list, tuple)):
        if not input:
            raise ValueError("Input list must contain at least one element")
        return [decode_jpeg(one, mode, device, apply_exif_orientation) for one in input]
    return _decode_as("jpeg", input, mode, apply_exif_orientation).to(device)


def decode_gif(input):
    return _decode_as("gif", input, ImageReadMode.UNCHANGED, False)


def decode_webp(input, mode=ImageReadMode.UNCHANGED):
    return _decode_as("webp", input, mode, False)


def decode_avif(input, mode=ImageReadMode.UNCHANGED):
    """Decode an AVIF image (a 1-D uint8 tensor) into a uint8 CHW tensor, RGB or RGBA as stored."""
    return _decode_as("avif", input, mode, False)


def decode_heic(input, mode=ImageReadMode.UNCHANGED):
    """Decode a HEIC image (a 1-D uint8 tensor) into a uint8 CHW tensor; needs ``pillow-heif``."""
    return _decode_as("heic", input, mode, False)
