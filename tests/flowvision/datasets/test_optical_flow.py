"""Optical-flow datasets (Sintel, FlyingChairs, FlyingThings3D, KittiFlow, HD1K) and their file formats (.flo, .pfm,
16-bit PNG): tiny trees in the real layouts, item by item against torchvision's classes on the same root, PNGs
against torchvision.io.decode_png (libpng) for every filter type, bit depth, channel count and Adam7."""
import struct
import zlib

import numpy as np
import pytest
import torchvision.datasets as tvd
from PIL import Image
from torchvision.io import ImageReadMode, decode_png, read_file

import flowvision.datasets as fd
from engine.utils.data import ConcatDataset
from flowvision.datasets.flow_formats import read_flo, read_kitti_flow_png, read_pfm
from flowvision.datasets.png_arrays import read_png_array

_ADAM7 = [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2), (1, 0, 2, 1)]
_COLOUR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}


def _filtered(samples, kinds):
    """Scanlines of (h, w, c) ``samples``, row i filtered with kinds[i % len(kinds)] (computed from the raw bytes,
    as an encoder does)."""
    h = samples.shape[0]
    bpp = samples.shape[2] * samples.dtype.itemsize
    raw = samples.astype(samples.dtype.newbyteorder(">")).view(np.uint8).reshape(h, -1, bpp).astype(np.int32)
    a = np.pad(raw, ((0, 0), (1, 0), (0, 0)))[:, :-1]
    b = np.pad(raw, ((1, 0), (0, 0), (0, 0)))[:-1]
    c = np.pad(raw, ((1, 0), (1, 0), (0, 0)))[:-1, :-1]
    pa, pb, pc = np.abs(b - c), np.abs(a - c), np.abs(a + b - 2 * c)
    predictions = [np.zeros_like(raw), a, b, (a + b) >> 1,
                   np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))]
    return b"".join(bytes([kinds[i % len(kinds)]]) +
                    ((raw[i] - predictions[kinds[i % len(kinds)]][i]) & 0xFF).astype(np.uint8).tobytes()
                    for i in range(h))


def _chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _png(width, height, depth, colour, stream, interlace=False):
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, int(interlace))
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(stream)) +
            _chunk(b"IEND", b""))


def encode_png(samples, kinds=(0, 1, 2, 3, 4), interlace=False):
    """PNG bytes of a (h, w, c) uint8/uint16 array, the rows filtered with ``kinds`` in turn, optionally Adam7."""
    h, w, channels = samples.shape
    passes = _ADAM7 if interlace else [(0, 0, 1, 1)]
    stream = b"".join(_filtered(samples[r::dr, c::dc], kinds) for r, c, dr, dc in passes if samples[r::dr, c::dc].size)
    return _png(w, h, 8 * samples.dtype.itemsize, _COLOUR_TYPES[channels], stream, interlace)


def write_flo(path, flow):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PIEH" + struct.pack("<ii", flow.shape[2], flow.shape[1]) +
                     flow.transpose(1, 2, 0).astype("<f4").tobytes())


def write_pfm(path, planes, little_endian=True):
    """(C, H, W) ``planes`` (C = 1 or 3) as a PFM file: rows bottom-up, the scale's sign giving the byte order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = f"{'PF' if planes.shape[0] == 3 else 'Pf'}\n{planes.shape[2]} {planes.shape[1]}\n" \
             f"{-1.0 if little_endian else 1.0}\n"
    data = planes[:, ::-1].transpose(1, 2, 0).astype("<f4" if little_endian else ">f4")
    path.write_bytes(header.encode() + data.tobytes())


def _kitti_flow_png(path, rng, h, w):
    samples = np.stack([rng.integers(0, 65536, (h, w)), rng.integers(0, 65536, (h, w)),
                        rng.integers(0, 2, (h, w))], axis=-1).astype(np.uint16)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_png(samples, kinds=(4, 3, 1, 2, 0)))


@pytest.fixture
def compare(same):
    def check(ours, ref):
        assert len(ours) == len(ref) > 0
        for i in range(len(ref)):
            same(ours[i], ref[i], f"item {i}")
    return check


# ---------------------------------------------------------------- file formats

@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_reader_matches_libpng(tmp_path, dtype, channels):
    rng = np.random.default_rng(channels)
    for i, (shape, interlace) in enumerate([((13, 11), False), ((13, 11), True), ((1, 1), True), ((3, 17), False),
                                            ((9, 2), True)]):
        samples = rng.integers(0, np.iinfo(dtype).max + 1, shape + (channels,), dtype=dtype)
        if i % 2:  # few distinct bytes: the predictors' ties (Paeth's order of preference) get exercised
            values = [0, 1, 2, 3] + ([256, 515] if dtype == np.uint16 else [])  # ties: a, b, c = 3, 0, 2
            samples = rng.choice(np.array(values, dtype), samples.shape)
        path = tmp_path / f"{i}.png"
        path.write_bytes(encode_png(samples, kinds=(4, 3, 2, 1, 0)[i:] + (4, 3, 2, 1, 0)[:i], interlace=interlace))
        ours = read_png_array(path)
        ref = decode_png(read_file(str(path)), ImageReadMode.UNCHANGED).permute(1, 2, 0).numpy()
        assert ours.dtype == ref.dtype and ours.dtype.isnative
        np.testing.assert_array_equal(ours, ref)
        np.testing.assert_array_equal(ours, samples)


def test_png_reader_errors(tmp_path):
    good = encode_png(np.zeros((4, 5, 3), np.uint16))
    cases = {"sig.png": (b"GIF89a" + good[6:], "not a PNG file"),
             "crc.png": (good[:-20] + bytes([good[-20] ^ 1]) + good[-19:], "fails its CRC check"),
             "cut.png": (good[:-12], "ends before its IEND chunk"),
             "short.png": (_png(4, 9, 16, 2, bytes(5 * 25)), "too short for its 4x9 size"),
             "filter.png": (_png(4, 5, 8, 0, b"\x00" + bytes(4) + b"\x05" + bytes(4) + bytes(15)),
                            "unknown PNG filter type 5"),
             "zlib.png": (good[:33] + _chunk(b"IDAT", b"not zlib") + _chunk(b"IEND", b""), "corrupt PNG image data")}
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=f"{name}.*{message}|{message}.*{name}"):
            read_png_array(tmp_path / name)
    palette = tmp_path / "palette.png"
    Image.new("P", (3, 2)).save(palette)
    with pytest.raises(ValueError, match="palette.png: PNG colour type 3 with bit depth 1 is not supported"):
        read_png_array(palette)
    grey = tmp_path / "grey.png"
    grey.write_bytes(encode_png(np.zeros((2, 2, 1), np.uint16)))
    with pytest.raises(ValueError, match="grey.png: a KITTI flow PNG has 3 channels"):
        read_kitti_flow_png(grey)


def test_png_reader_inflates_no_more_than_the_image_needs(tmp_path):
    """A 16x16 grey PNG whose image data inflates to 64 MB (from 64 KB) reads its 272 bytes; a header of more
    pixels than Pillow's decompression-bomb limit is refused before anything is inflated."""
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(_png(16, 16, 8, 0, bytes(1 << 26)))
    assert bomb.stat().st_size < 1 << 17
    np.testing.assert_array_equal(read_png_array(bomb), np.zeros((16, 16, 1), np.uint8))
    huge = tmp_path / "huge.png"
    huge.write_bytes(_png(1 << 16, 1 << 16, 8, 0, bytes(16)))
    with pytest.raises(ValueError, match="huge.png: a 65536x65536 PNG exceeds Pillow's decompression-bomb limit"):
        read_png_array(huge)


def test_flo_and_pfm_readers_and_their_errors(tmp_path):
    rng = np.random.default_rng(0)
    flow = rng.standard_normal((2, 5, 7)).astype(np.float32)
    write_flo(tmp_path / "a.flo", flow)
    np.testing.assert_array_equal(read_flo(tmp_path / "a.flo"), flow)
    planes = rng.standard_normal((3, 4, 6)).astype(np.float32)
    for little in (True, False):
        write_pfm(tmp_path / "b.pfm", planes, little)
        for channels in (1, 2, 3):
            ours = read_pfm(tmp_path / "b.pfm", channels)
            assert ours.dtype == np.float32 and ours.dtype.isnative
            np.testing.assert_array_equal(ours, planes[:channels])
    (tmp_path / "bad.flo").write_bytes(b"PIEX" + (tmp_path / "a.flo").read_bytes()[4:])
    with pytest.raises(ValueError, match=r"bad.flo is not a .flo file: magic number b'PIEX'"):
        read_flo(tmp_path / "bad.flo")
    (tmp_path / "short.flo").write_bytes((tmp_path / "a.flo").read_bytes()[:-4])
    with pytest.raises(ValueError, match=r"short.flo: .flo header says 7x5 \(2 x 35 floats\) but the file holds 276"):
        read_flo(tmp_path / "short.flo")
    pfm = (tmp_path / "b.pfm").read_bytes()
    for name, data, message in [("p1.pfm", b"P6" + pfm[2:], "is not a PFM file: header b'P6'"),
                                ("p2.pfm", pfm.replace(b"6 4\n", b"6x4\n"), "malformed PFM header: no"),
                                ("p3.pfm", pfm.replace(b"1.0\n", b"one\n"), "the scale is not a number"),
                                ("p4.pfm", pfm[:-3], "header says 6x4x3 floats but the file holds 285 bytes")]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match=name + ".*" + message):
            read_pfm(tmp_path / name)


def test_kitti_flow_png_matches_torchvision_reader(tmp_path):
    from torchvision.datasets._optical_flow import _read_16bits_png_with_flow_and_valid_mask as tv_read
    _kitti_flow_png(tmp_path / "f.png", np.random.default_rng(1), 6, 9)
    for ours, ref in zip(read_kitti_flow_png(tmp_path / "f.png"), tv_read(str(tmp_path / "f.png"))):
        assert ours.dtype == ref.dtype and ours.shape == ref.shape
        np.testing.assert_array_equal(ours, ref)


# ---------------------------------------------------------------- dataset trees

def _frames(write_image, folder, names, seed):
    for i, name in enumerate(names):
        write_image(folder / name, 5, 7, seed + i)


@pytest.fixture
def sintel_root(tmp_path, write_image):
    rng = np.random.default_rng(2)
    base = tmp_path / "Sintel"
    for scene, n in (("alley", 3), ("cave", 2), ("bamboo", 4)):
        for seed, pass_name in enumerate(("clean", "final")):
            _frames(write_image, base / "training" / pass_name / scene, [f"frame_{i:04d}.png" for i in range(1, n + 1)],
                    10 * seed + n)
        for i in range(1, n):
            write_flo(base / "training" / "flow" / scene / f"frame_{i:04d}.flo",
                      rng.standard_normal((2, 5, 7)).astype(np.float32))
    for pass_name in ("clean", "final"):
        _frames(write_image, base / "test" / pass_name / "market", ["frame_0001.png", "frame_0002.png"], 40)
    return tmp_path


@pytest.mark.parametrize("split, pass_name", [("train", "clean"), ("train", "final"), ("train", "both"),
                                              ("test", "both")])
def test_sintel_matches_torchvision(sintel_root, compare, split, pass_name):
    compare(fd.Sintel(str(sintel_root), split, pass_name), tvd.Sintel(str(sintel_root), split, pass_name))


def test_flying_chairs_matches_torchvision(tmp_path, write_image, compare):
    rng = np.random.default_rng(3)
    data = tmp_path / "FlyingChairs" / "data"
    for i in range(1, 5):
        _frames(write_image, data, [f"{i:05d}_img1.ppm", f"{i:05d}_img2.ppm"], 2 * i)
        write_flo(data / f"{i:05d}_flow.flo", rng.standard_normal((2, 5, 7)).astype(np.float32))
    with pytest.raises(FileNotFoundError, match="FlyingChairs_train_val.txt file was not found"):
        fd.FlyingChairs(str(tmp_path))
    (tmp_path / "FlyingChairs" / "FlyingChairs_train_val.txt").write_text("1\n2\n1\n2\n")
    for split in ("train", "val"):
        compare(fd.FlyingChairs(str(tmp_path), split), tvd.FlyingChairs(str(tmp_path), split))


@pytest.fixture
def things_root(tmp_path, write_image):
    rng = np.random.default_rng(4)
    base = tmp_path / "FlyingThings3D"
    for split in ("TRAIN", "TEST"):
        for seq, frames in (("A/0000", range(6, 9)), ("B/0001", range(3, 5))):
            for pass_dir in ("frames_cleanpass", "frames_finalpass"):
                for cam in ("left", "right"):
                    _frames(write_image, base / pass_dir / split / seq / cam, [f"{f:04d}.png" for f in frames],
                            frames.start + len(pass_dir) + len(cam))
            for direction in ("into_future", "into_past"):
                for cam in ("left", "right"):
                    for f in frames:
                        write_pfm(base / "optical_flow" / split / seq / direction / cam /
                                  f"OpticalFlow{direction}_{f:04d}_{cam[0].upper()}.pfm",
                                  rng.standard_normal((3, 5, 7)).astype(np.float32), little_endian=f % 2 == 0)
    return tmp_path


@pytest.mark.parametrize("kwargs", [{}, {"pass_name": "both", "camera": "both"},
                                    {"split": "test", "pass_name": "final", "camera": "right"}])
def test_flying_things_matches_torchvision(things_root, compare, kwargs):
    compare(fd.FlyingThings3D(str(things_root), **kwargs), tvd.FlyingThings3D(str(things_root), **kwargs))


def test_kitti_flow_and_hd1k_match_torchvision(tmp_path, write_image, compare):
    rng = np.random.default_rng(5)
    kitti = tmp_path / "KittiFlow"
    for i in (0, 1, 2):
        _frames(write_image, kitti / "training" / "image_2", [f"{i:06d}_10.png", f"{i:06d}_11.png"], 3 * i)
        _kitti_flow_png(kitti / "training" / "flow_occ" / f"{i:06d}_10.png", rng, 5, 7)
    _frames(write_image, kitti / "testing" / "image_2", ["000000_10.png", "000000_11.png"], 50)
    hd1k = tmp_path / "hd1k"
    for seq, n in ((0, 3), (1, 1), (35, 2)):
        names = [f"{seq:06d}_{j:04d}.png" for j in range(n)]
        _frames(write_image, hd1k / "hd1k_input" / "image_2", names, seq)
        for name in names:
            _kitti_flow_png(hd1k / "hd1k_flow_gt" / "flow_occ" / name, rng, 5, 7)
    _frames(write_image, hd1k / "hd1k_challenge" / "image_2", ["000000_10.png", "000000_11.png", "000001_10.png",
                                                                "000001_11.png"], 60)
    for cls in ("KittiFlow", "HD1K"):
        for split in ("train", "test"):
            ours, ref = getattr(fd, cls)(str(tmp_path), split), getattr(tvd, cls)(str(tmp_path), split)
            compare(ours, ref)
            assert len(ours[0]) == 4


def test_transforms_loader_and_repeat(sintel_root, compare, same):
    def add_mask(img1, img2, flow, mask):
        assert mask is None
        return img1, img2.upper(), flow * 2, np.ones(flow.shape[1:], bool)

    ours = fd.Sintel(str(sintel_root), transforms=add_mask, loader=lambda p: p[-14:])
    compare(ours, tvd.Sintel(str(sintel_root), transforms=add_mask, loader=lambda p: p[-14:]))
    assert len(ours[0]) == 4 and ours[0][0] == "frame_0001.png"
    repeated = 3 * ours
    assert isinstance(repeated, ConcatDataset) and len(repeated) == 3 * len(ours)
    same(repeated[len(ours) + 1], ours[1])


def test_dataset_errors(tmp_path):
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        fd.Sintel(str(tmp_path), split="val")
    with pytest.raises(ValueError, match="Unknown value 'left' for argument pass_name"):
        fd.FlyingThings3D(str(tmp_path), pass_name="left")
    with pytest.raises(FileNotFoundError, match="Could not find the FlyingThings3D flow images"):
        fd.FlyingThings3D(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="Could not find the Kitti flow images"):
        fd.KittiFlow(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="Could not find the HD1K images"):
        fd.HD1K(str(tmp_path), split="test")


def test_no_transforms_v2_wrapper_as_in_torchvision(sintel_root):
    for module, wrap in ((fd, fd.wrap_dataset_for_transforms_v2), (tvd, tvd.wrap_dataset_for_transforms_v2)):
        with pytest.raises(TypeError, match="No wrapper exists for dataset class Sintel"):
            wrap(module.Sintel(str(sintel_root)))
