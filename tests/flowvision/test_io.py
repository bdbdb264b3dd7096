"""``flowvision.io`` against ``torchvision.io``: every PNG and JPEG colour type in every ``ImageReadMode``
decodes to torchvision's tensor (GIF and WebP too), files read and written, EXIF orientation, encoded
PNG/JPEG that decode to the same pixels as torchvision's encodings, and torchvision's errors for bad
input. The few PNG cases where torchvision's output is not meaningful are tested for ours."""
import io
import pathlib
import struct
import warnings
import zlib

import numpy as np
import pytest
import torch
import torchvision.io as tio
from PIL import Image

import engine
import flowvision
import flowvision.io as fio

RNG = np.random.default_rng(3)
MODES = ["UNCHANGED", "GRAY", "GRAY_ALPHA", "RGB", "RGB_ALPHA"]
SMOOTH = (np.add.outer(np.arange(19), np.arange(23))[..., None] * np.array([3, 5, 7]) % 256).astype(np.uint8)


def _encode(image, fmt, **options):
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _pixels(*shape, dtype=np.uint8):
    return RNG.integers(0, np.iinfo(dtype).max + 1, shape, dtype=dtype)


FILES = {
    "png-rgb": lambda: _encode(Image.fromarray(_pixels(7, 5, 3)), "PNG"),
    "png-rgba": lambda: _encode(Image.fromarray(_pixels(7, 5, 4)), "PNG"),
    "png-grey": lambda: _encode(Image.fromarray(_pixels(7, 5)), "PNG"),
    "png-grey-alpha": lambda: _encode(Image.fromarray(_pixels(7, 5, 2), "LA"), "PNG"),
    "png-grey-16bit": lambda: _encode(Image.fromarray(_pixels(7, 5, dtype=np.uint16)), "PNG"),
    "png-palette-transparent": lambda: _encode(Image.fromarray(_pixels(7, 5, 3)).quantize(16), "PNG", transparency=3),
    "png-1bit": lambda: _encode(Image.fromarray(_pixels(7, 5) // 128 * 255).convert("1"), "PNG"),
    "jpeg-colour": lambda: _encode(Image.fromarray(SMOOTH), "JPEG", quality=90),
    "jpeg-colour-444": lambda: _encode(Image.fromarray(SMOOTH), "JPEG", quality=90, subsampling=0),
    "jpeg-grey": lambda: _encode(Image.fromarray(SMOOTH[..., 0]), "JPEG"),
    "jpeg-cmyk": lambda: _encode(Image.fromarray(SMOOTH).convert("CMYK"), "JPEG"),
    "gif": lambda: _encode(Image.fromarray(SMOOTH), "GIF"),
    "gif-2-frames": lambda: _encode(Image.fromarray(SMOOTH), "GIF", save_all=True,
                                    append_images=[Image.fromarray(255 - SMOOTH)]),
    "webp": lambda: _encode(Image.fromarray(SMOOTH), "WEBP", lossless=True),
    "webp-alpha": lambda: _encode(Image.fromarray(np.dstack([SMOOTH, SMOOTH[..., 1]])), "WEBP", lossless=True),
}
# torchvision returns unexpanded palette bytes, or a malformed added alpha channel, here: tested below
NOT_MEANINGFUL_IN_TORCHVISION = {("png-1bit", "GRAY_ALPHA"), ("png-1bit", "RGB_ALPHA"),
                                 ("png-palette-transparent", "UNCHANGED")}


def _theirs(data, mode, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision 0.29 deprecates its image io
        return tio.decode_image(torch.frombuffer(bytearray(data), dtype=torch.uint8), mode, **options)


def _ours(data, mode, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # WebP in a grey mode warns, as torchvision's
        return fio.decode_image(engine.from_numpy(np.frombuffer(data, np.uint8).copy()), mode, **options)


def _outcome(decode, data, mode):
    try:
        out = decode(data, mode)
    except Exception as e:
        return type(e).__name__
    return out


@pytest.mark.parametrize("kind,mode", [(kind, mode) for kind in FILES for mode in MODES
                                       if (kind, mode) not in NOT_MEANINGFUL_IN_TORCHVISION])
def test_decode_image_as_torchvision(kind, mode):
    data = FILES[kind]()
    ours, theirs = _outcome(_ours, data, mode), _outcome(_theirs, data, mode)
    if isinstance(theirs, str):
        assert ours == theirs == "RuntimeError"  # JPEG has no alpha modes
        return
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert np.array_equal(ours.numpy(), theirs.numpy())


def test_where_torchvision_is_not_meaningful():
    """A palette expands to RGB(A) as its colours, 1-bit to 0/255, and an added alpha is opaque."""
    palette = Image.fromarray(_pixels(7, 5, 3)).quantize(16)
    data = _encode(palette, "PNG", transparency=3)
    rgba = np.asarray(Image.open(io.BytesIO(data)).convert("RGBA")).transpose(2, 0, 1)
    assert np.array_equal(_ours(data, "UNCHANGED").numpy(), rgba)
    assert np.array_equal(_ours(_encode(palette, "PNG"), "UNCHANGED").numpy(), rgba[:3])
    bits = _pixels(7, 5) // 128 * 255
    out = _ours(_encode(Image.fromarray(bits).convert("1"), "PNG"), "GRAY_ALPHA").numpy()
    assert np.array_equal(out[0], bits) and (out[1] == 255).all()


def _rgb16_png(pixels):
    """A 16-bit RGB PNG, written by hand: Pillow cannot write one."""
    height, width, _ = pixels.shape
    rows = b"".join(b"\x00" + row.astype(">u2").tobytes() for row in pixels)

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    header = struct.pack(">IIBBBBB", width, height, 16, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def test_sixteen_bit_colour_png_comes_out_as_torchvisions():
    """16-bit colour PNGs decode to torchvision's uint16 values (test_io_fuzz.py: every mode)."""
    data = _rgb16_png(_pixels(3, 4, 3, dtype=np.uint16))
    theirs = _theirs(data, "UNCHANGED").numpy()
    ours = _ours(data, "UNCHANGED").numpy()
    assert theirs.dtype == ours.dtype == np.uint16
    assert np.array_equal(ours, theirs)


@pytest.mark.parametrize("name", ["rocket.jpg", "chelsea.png"])
def test_photos_in_every_mode(name):
    data = (pathlib.Path(__file__).parents[1] / "data" / "images" / name).read_bytes()
    for mode in MODES:
        ours, theirs = _outcome(_ours, data, mode), _outcome(_theirs, data, mode)
        if isinstance(theirs, str):
            assert ours == theirs
            continue
        assert np.array_equal(ours.numpy(), theirs.numpy()), mode


def test_exif_orientation(tmp_path):
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated 90 degrees
    path = tmp_path / "rotated.jpg"
    Image.fromarray(SMOOTH).save(path, format="JPEG", exif=exif)
    for apply in (False, True):
        ours = fio.read_image(path, apply_exif_orientation=apply)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = tio.read_image(str(path), apply_exif_orientation=apply)
        assert tuple(ours.shape) == tuple(theirs.shape) and np.array_equal(ours.numpy(), theirs.numpy())
    assert tuple(ours.shape) == (3, 23, 19)


def test_files_and_paths(tmp_path):
    data = FILES["png-rgb"]()
    path = tmp_path / "image.png"
    path.write_bytes(data)
    raw = fio.read_file(str(path))
    assert raw.dtype == engine.uint8 and raw.shape == (len(data),) and raw.numpy().tobytes() == data
    expected = _theirs(data, "RGB").numpy()
    for source in (str(path), path):
        assert np.array_equal(fio.read_image(source, mode=fio.ImageReadMode.RGB).numpy(), expected)
        assert np.array_equal(fio.decode_image(source, "rgb").numpy(), expected)  # a mode name in any case
    assert fio.write_file(str(tmp_path / "copy.png"), raw) is raw
    assert (tmp_path / "copy.png").read_bytes() == data
    assert fio.ImageReadMode.RGBA is fio.ImageReadMode.RGB_ALPHA
    assert [m.name for m in fio.ImageReadMode] == [m.name for m in tio.ImageReadMode]
    assert [m.value for m in fio.ImageReadMode] == [m.value for m in tio.ImageReadMode]


def test_per_format_decoders():
    png, jpeg = FILES["png-rgba"](), FILES["jpeg-colour"]()
    as_tensor = lambda d: engine.from_numpy(np.frombuffer(d, np.uint8).copy())
    assert np.array_equal(fio.decode_png(as_tensor(png), "RGB").numpy(), _theirs(png, "RGB").numpy())
    batch = fio.decode_jpeg([as_tensor(jpeg), as_tensor(jpeg)], mode="GRAY")
    assert len(batch) == 2 and np.array_equal(batch[1].numpy(), _theirs(jpeg, "GRAY").numpy())
    assert fio.decode_jpeg(as_tensor(jpeg), device="cpu").device.type == "cpu"
    gif = FILES["gif-2-frames"]()
    assert tuple(fio.decode_gif(as_tensor(gif)).shape) == (2, 3, 19, 23)
    with pytest.raises(RuntimeError, match="Content is not png: its first bytes are those of a jpeg file"):
        fio.decode_png(as_tensor(jpeg))
    with pytest.raises(RuntimeError, match="Content is not jpeg"):
        fio.decode_jpeg(as_tensor(png))


def test_decode_jpeg_onto_the_gpu(cuda):
    jpeg = engine.from_numpy(np.frombuffer(FILES["jpeg-colour"](), np.uint8).copy())
    out = fio.decode_jpeg(jpeg, device="cuda")
    assert out.device.type == "cuda" and np.array_equal(out.cpu().numpy(), fio.decode_jpeg(jpeg).numpy())


@pytest.mark.parametrize("channels", [1, 3])
def test_encoded_png_and_jpeg_decode_as_torchvisions(tmp_path, channels):
    pixels = np.ascontiguousarray(np.moveaxis(SMOOTH[..., :channels], -1, 0))
    ours, theirs = engine.from_numpy(pixels.copy()), torch.from_numpy(pixels.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for level in (0, 6, 9):
            png = fio.encode_png(ours, compression_level=level)
            assert png.dtype == engine.uint8 and png.dim() == 1
            assert np.array_equal(_theirs(png.numpy().tobytes(), "UNCHANGED").numpy(), pixels)
        for quality in (1, 75, 100):
            jpeg = fio.encode_jpeg(ours, quality=quality)
            reference = tio.encode_jpeg(theirs, quality=quality)
            assert np.array_equal(_theirs(jpeg.numpy().tobytes(), "UNCHANGED").numpy(),
                                  _theirs(reference.numpy().tobytes(), "UNCHANGED").numpy())
        written = fio.write_png(ours, str(tmp_path / "out.png"))
        assert (tmp_path / "out.png").read_bytes() == written.numpy().tobytes()
        assert np.array_equal(tio.read_image(str(tmp_path / "out.png")).numpy(), pixels)
        fio.write_jpeg(ours, str(tmp_path / "out.jpg"), quality=90)
        assert np.array_equal(tio.read_image(str(tmp_path / "out.jpg")).numpy(),
                              _theirs(tio.encode_jpeg(theirs, quality=90).numpy().tobytes(), "UNCHANGED").numpy())
    strided = engine.from_numpy(np.ascontiguousarray(np.moveaxis(pixels, 0, -1))).permute(2, 0, 1)
    assert np.array_equal(_ours(fio.encode_png(strided).numpy().tobytes(), "UNCHANGED").numpy(), pixels)
    batch = fio.encode_jpeg([ours, ours])
    assert len(batch) == 2 and np.array_equal(batch[0].numpy(), batch[1].numpy())


BAD_CALLS = [
    ("float input", lambda lib, t: lib.decode_image(t(np.zeros(4, np.float32)))),
    ("2-d input", lambda lib, t: lib.decode_image(t(np.zeros((2, 2), np.uint8)))),
    ("empty input", lambda lib, t: lib.decode_image(t(np.zeros(0, np.uint8)))),
    ("bmp", lambda lib, t: lib.decode_image(t(np.frombuffer(_encode(Image.fromarray(SMOOTH), "BMP"), np.uint8)))),
    ("not an image", lambda lib, t: lib.decode_image(t(np.arange(12, dtype=np.uint8)))),
    ("jpeg with alpha", lambda lib, t: lib.decode_image(t(np.frombuffer(FILES["jpeg-colour"](), np.uint8)), "RGBA")),
    ("unknown mode", lambda lib, t: lib.decode_image(t(np.frombuffer(FILES["png-rgb"](), np.uint8)), "RGBX")),
    ("missing file", lambda lib, t: lib.read_image("/nonexistent/image.png")),
    ("encode float", lambda lib, t: lib.encode_png(t(np.zeros((3, 4, 5), np.float32)))),
    ("encode 2-d", lambda lib, t: lib.encode_png(t(np.zeros((4, 5), np.uint8)))),
    ("encode 2 channels", lambda lib, t: lib.encode_png(t(np.zeros((2, 4, 5), np.uint8)))),
    ("encode 4 channels", lambda lib, t: lib.encode_jpeg(t(np.zeros((4, 4, 5), np.uint8)))),
    ("compression 10", lambda lib, t: lib.encode_png(t(np.zeros((3, 4, 5), np.uint8)), 10)),
    ("compression -1", lambda lib, t: lib.encode_png(t(np.zeros((3, 4, 5), np.uint8)), -1)),
    ("quality 0", lambda lib, t: lib.encode_jpeg(t(np.zeros((3, 4, 5), np.uint8)), 0)),
    ("quality 101", lambda lib, t: lib.encode_jpeg(t(np.zeros((3, 4, 5), np.uint8)), 101)),
    ("empty list", lambda lib, t: lib.encode_jpeg([])),
    ("write 2-d", lambda lib, t: lib.write_file("/tmp/never-written.bin", t(np.zeros((2, 2), np.uint8)))),
    ("write float", lambda lib, t: lib.write_file("/tmp/never-written.bin", t(np.zeros(2, np.float32)))),
]


@pytest.mark.parametrize("label,call", BAD_CALLS, ids=[label for label, _ in BAD_CALLS])
def test_bad_input_raises_as_torchvision(label, call):
    def outcome(lib, make):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                call(lib, make)
        except Exception as e:
            return type(e).__name__, str(e)
        return None, None
    ours, message = outcome(fio, lambda a: engine.from_numpy(np.array(a)))
    theirs, _ = outcome(tio, lambda a: torch.from_numpy(np.array(a)))
    assert ours == theirs and ours is not None
    assert "\n" not in message


def test_torchvision_names_are_here():
    missing = [name for name in tio.__all__ if not hasattr(fio, name)]
    assert missing == []
    assert flowvision.io is fio
