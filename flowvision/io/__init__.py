"""``flowvision.io``: read, decode, encode and write images as uint8 (or uint16) CHW tensors, with
``torchvision.io``'s names and outputs, decoded by Pillow.

PNG and JPEG files decode to torchvision's values in every ``ImageReadMode`` (JPEG through the same
libjpeg, PNG's grey conversion with libpng's weights), except where torchvision's own output is not
meaningful (palette PNGs unchanged or with an added alpha, 1-bit PNGs with an added alpha: see
``channels``); 16-bit PNGs decode to uint16 (see ``png16``). GIF (all frames, composed as torchvision
composes them: see ``gif``) and WebP decode as torchvision's do; AVIF and HEIC (``decode_avif``, ``decode_heic``) as
Pillow decodes them. Encoded files are Pillow's bytes: they decode to
the same pixels as torchvision's, not to the same bytes.
"""
from . import decode as image  # noqa: F401  (torchvision.io.image: the decoders' module)
from .decode import decode_avif, decode_gif, decode_heic, decode_image, decode_jpeg, decode_png, decode_webp, read_image
from .encode import encode_jpeg, encode_png, write_jpeg, write_png
from .files import read_file, write_file
from .read_mode import ImageReadMode

__all__ = ["ImageReadMode", "decode_avif", "decode_gif", "decode_heic", "decode_image", "decode_jpeg", "decode_png",
           "decode_webp", "encode_jpeg", "encode_png", "read_file", "read_image", "write_file", "write_jpeg",
           "write_png"]
