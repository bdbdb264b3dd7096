"""``decode_avif`` / ``decode_heic``: the HEIF-based formats that torchvision decodes only with an extra package
(which does not load with this torch), checked against Pillow's own decoding of the same bytes, and kept out of
``decode_image`` as torchvision keeps them."""
import io

import numpy as np
import pytest
from PIL import Image

import engine
import flowvision.io as fio

RNG = np.random.default_rng(11)


def _encoded(array, fmt):
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format=fmt, quality=90)
    return engine.from_numpy(np.frombuffer(buffer.getvalue(), np.uint8).copy())


def _pillow(data, convert=None):
    image = Image.open(io.BytesIO(data.numpy().tobytes()))
    return np.asarray(image.convert(convert) if convert else image)


@pytest.mark.parametrize("channels", [3, 4])
def test_avif_decodes_as_pillow_in_every_mode(channels):
    data = _encoded(RNG.integers(0, 256, (13, 17, channels), dtype=np.uint8), "AVIF")
    unchanged = fio.decode_avif(data)
    assert unchanged.dtype == engine.uint8 and tuple(unchanged.shape) == (channels, 13, 17)
    np.testing.assert_array_equal(unchanged.numpy().transpose(1, 2, 0), _pillow(data))
    np.testing.assert_array_equal(fio.decode_avif(data, fio.ImageReadMode.RGB).numpy().transpose(1, 2, 0),
                                  _pillow(data, "RGB"))
    assert tuple(fio.decode_avif(data, fio.ImageReadMode.GRAY).shape) == (1, 13, 17)
    assert tuple(fio.decode_avif(data, fio.ImageReadMode.RGB_ALPHA).shape) == (4, 13, 17)


def test_decode_image_leaves_heif_formats_to_their_decoders():
    data = _encoded(RNG.integers(0, 256, (5, 6, 3), dtype=np.uint8), "AVIF")
    with pytest.raises(RuntimeError, match="For avif and heic format, please rely on `decode_avif` and `decode_heic`"):
        fio.decode_image(data)
    with pytest.raises(RuntimeError, match="Content is not heic: its first bytes are those of a avif file"):
        fio.decode_heic(data)
    png = _encoded(RNG.integers(0, 256, (5, 6, 3), dtype=np.uint8), "PNG")
    with pytest.raises(RuntimeError, match="Content is not avif"):
        fio.decode_avif(png)


def test_heic_through_pillow_heif():
    pillow_heif = pytest.importorskip("pillow_heif")  # in the test extra; an optional plug-in for users
    pillow_heif.register_heif_opener()
    data = _encoded(RNG.integers(0, 256, (9, 11, 3), dtype=np.uint8), "HEIF")
    decoded = fio.decode_heic(data)
    np.testing.assert_array_equal(decoded.numpy().transpose(1, 2, 0), _pillow(data, "RGB"))


def test_heic_without_pillow_heif_says_what_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "pillow_heif", None)
    heic = engine.from_numpy(np.frombuffer(b"\0\0\0\x18ftypheic\0\0\0\0mif1heic" + bytes(16), np.uint8).copy())
    with pytest.raises(RuntimeError, match=r"decode_heic needs the pillow-heif package \(pip install pillow-heif\)"):
        fio.decode_heic(heic)
