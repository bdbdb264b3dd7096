"""Stereo-matching datasets (KITTI 2012/2015, Middlebury 2014, ETH3D, InStereo2k, CARLA, CREStereo, Falling Things,
SceneFlow, Sintel stereo): tiny trees in the real layouts and file formats (16-bit PNG disparities, PFMs of either
byte order, Sintel's RGB-encoded disparities), item by item against torchvision's classes on the same root;
Middlebury's download from a local server."""
import io
import json
import random
import zipfile

import numpy as np
import pytest
import torchvision.datasets as tvd
from PIL import Image

import flowvision.datasets as fd
from http_server import FileServer

_H, _W = 5, 7


def _write_pfm(path, plane, little_endian=True):
    """A one-channel PFM ('Pf'): rows bottom-up, the scale's sign giving the byte order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = f"Pf\n{plane.shape[1]} {plane.shape[0]}\n{-1.0 if little_endian else 1.0}\n".encode()
    path.write_bytes(header + plane[::-1].astype("<f4" if little_endian else ">f4").tobytes())


def _write_u16(path, rng, low=0, high=65536):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(low, high, (_H, _W)).astype(np.uint16)).save(path)


def _images(write_image, paths, seed):
    """RGB images, except every third one grey and every fourth RGBA (datasets convert them to RGB)."""
    for i, path in enumerate(paths):
        write_image(path, _H, _W, seed + i, mode="L" if i % 3 == 2 else "RGBA" if i % 4 == 3 else "RGB")


@pytest.fixture
def compare(same):
    def check(ours, ref, seed_each=False):
        assert len(ours) == len(ref) > 0
        for i in range(len(ref)):
            if seed_each:  # the same random draws (Middlebury's ambient views) for both
                random.seed(i)
            mine = ours[i]
            if seed_each:
                random.seed(i)
            same(mine, ref[i], f"item {i}")
    return check


# ---------------------------------------------------------------- trees

def _kitti(root, write_image, rng):
    for i, split in enumerate(("training", "testing")):
        names = ["000000_10.png", "000001_10.png", "000002_10.png"][i:]
        base12, base15 = root / "Kitti2012" / split, root / "Kitti2015" / split
        _images(write_image, [base12 / "colored_0" / n for n in names] + [base12 / "colored_1" / n for n in names], i)
        _images(write_image, [base15 / "image_2" / n for n in names] + [base15 / "image_3" / n for n in names], 9 + i)
        if split == "training":
            for n in names:
                _write_u16(base12 / "disp_noc" / n, rng)
                _write_u16(base15 / "disp_occ_0" / n, rng)
                _write_u16(base15 / "disp_occ_1" / n, rng)


def _disparity(rng, with_inf=False):
    plane = rng.uniform(-40, 40, (_H, _W)).astype(np.float32)
    plane[0, :2] = 0
    if with_inf:
        plane[1, 1:3] = [np.inf, -np.inf]
    return plane


def _middlebury_scene(folder, write_image, rng, seed, ambient=True, disparities=True):
    _images(write_image, [folder / "im0.png", folder / "im1.png"], seed)
    if ambient:
        write_image(folder / "im1E.png", _H, _W, seed + 50)
        write_image(folder / "im1L.png", _H, _W, seed + 51)
    if disparities:
        _write_pfm(folder / "disp0.pfm", _disparity(rng, True), little_endian=seed % 2 == 0)
        _write_pfm(folder / "disp1.pfm", _disparity(rng, True))


def _middlebury(root, write_image, rng):
    base = root / "Middlebury2014"
    for i, scene in enumerate(("Adirondack-perfect", "Adirondack-imperfect", "Jadeplant-perfect", "Piano-imperfect")):
        _middlebury_scene(base / "train" / scene, write_image, rng, i, ambient=i != 2)
    _middlebury_scene(base / "additional" / "Backpack-perfect", write_image, rng, 7)
    for i, scene in enumerate(("Plants", "Hoops")):
        _middlebury_scene(base / "test" / scene, write_image, rng, 10 + i, ambient=False, disparities=False)


def _eth3d_and_instereo(root, write_image, rng):
    eth = root / "ETH3D"
    for i, scene in enumerate(("delivery_area_1l", "electro_1s")):
        _images(write_image, [eth / "two_view_training" / scene / "im0.png", eth / "two_view_training" / scene /
                              "im1.png", eth / "two_view_test" / scene / "im0.png",
                              eth / "two_view_test" / scene / "im1.png"], 20 + i)
        _write_pfm(eth / "two_view_training_gt" / scene / "disp0GT.pfm", _disparity(rng), little_endian=i == 0)
        write_image(eth / "two_view_training_gt" / scene / "mask0nocc.png", _H, _W, 30 + i, mode="L")
    for split in ("train", "test"):
        for i, scene in enumerate(("part1_0001", "part2_0042")):
            folder = root / "InStereo2k" / split / scene
            _images(write_image, [folder / "left.png", folder / "right.png"], 40 + i)
            _write_u16(folder / "left_disp.png", rng)
            _write_u16(folder / "right_disp.png", rng)


def _carla_and_crestereo(root, write_image, rng):
    for i, scene in enumerate(("town01_1", "town02_7")):
        folder = root / "carla-highres" / "trainingF" / scene
        _images(write_image, [folder / "im0.png", folder / "im1.png"], 60 + i)
        _write_pfm(folder / "disp0GT.pfm", _disparity(rng), little_endian=i == 1)
        _write_pfm(folder / "disp1GT.pfm", _disparity(rng))
    for i, subset in enumerate(("shapenet", "reflective", "tree", "hole")):
        folder = root / "CREStereo" / subset
        for n in range(1 + i % 2):
            _images(write_image, [folder / f"{n}_left.jpg", folder / f"{n}_right.jpg"], 70 + i)
            _write_u16(folder / f"{n}_left.disp.png", rng)
            _write_u16(folder / f"{n}_right.disp.png", rng)


def _falling_things(root, write_image, rng):
    scenes = [root / "FallingThings" / "single" / "002_master_chef_can_16k" / "kitchen_0",
              root / "FallingThings" / "single" / "003_cracker_box_16k" / "temple_1",
              root / "FallingThings" / "mixed" / "kitchen_3"]
    for i, folder in enumerate(scenes):
        for n in range(2):
            _images(write_image, [folder / f"00000{n}.left.jpg", folder / f"00000{n}.right.jpg"], 80 + 2 * i + n)
            _write_u16(folder / f"00000{n}.left.depth.png", rng, 1)
            _write_u16(folder / f"00000{n}.right.depth.png", rng, 1)
        settings = {"camera_settings": [{"intrinsic_settings": {"fx": 768.1605 + i, "fy": 768.1605}}]}
        (folder / "_camera_settings.json").write_text(json.dumps(settings))


def _scene_flow(root, write_image, rng):
    layouts = {"FlyingThings3D": ["TRAIN/A/0000", "TEST/B/0003"], "Monkaa": ["eating_x2", "flower_storm_x2"],
               "Driving": ["15mm_focallength/scene_backwards/fast"]}
    for variant, scenes in layouts.items():
        for i, scene in enumerate(scenes):
            for cam in ("left", "right"):
                for pass_dir in ("frames_cleanpass", "frames_finalpass"):
                    folder = root / "SceneFlow" / variant / pass_dir / scene / cam
                    _images(write_image, [folder / "0006.png", folder / "0007.png"], 90 + i + len(cam + pass_dir))
                for frame in ("0006", "0007"):
                    _write_pfm(root / "SceneFlow" / variant / "disparity" / scene / cam / f"{frame}.pfm",
                               _disparity(rng), little_endian=frame == "0006")


def _sintel_stereo(root, write_image, rng):
    base = root / "Sintel" / "training"
    for i, scene in enumerate(("alley_1", "bamboo_2")):
        for n in (1, 2):
            name = f"frame_{n:04d}.png"
            _images(write_image, [base / f"{p}_{side}" / scene / name for p in ("final", "clean")
                                  for side in ("left", "right")], 100 + 4 * i + n)
            write_image(base / "disparities" / scene / name, _H, _W, 110 + 2 * i + n)
            for kind in ("occlusions", "outofframe"):
                mask = (rng.integers(0, 2, (_H, _W)) * 255).astype(np.uint8)
                (base / kind / scene).mkdir(parents=True, exist_ok=True)
                Image.fromarray(mask).save(base / kind / scene / name)


@pytest.fixture(scope="module")
def stereo_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("stereo")
    rng = np.random.default_rng(0)

    def write_image(path, height, width, seed, mode="RGB"):
        pixels = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).convert(mode).save(path)

    for build in (_kitti, _middlebury, _eth3d_and_instereo, _carla_and_crestereo, _falling_things, _scene_flow,
                  _sintel_stereo):
        build(root, write_image, rng)
    return root


_CASES = [("Kitti2012Stereo", {}), ("Kitti2012Stereo", {"split": "test"}), ("Kitti2015Stereo", {}),
          ("Kitti2015Stereo", {"split": "test"}), ("Middlebury2014Stereo", {}),
          ("Middlebury2014Stereo", {"calibration": "both"}), ("Middlebury2014Stereo", {"calibration": "imperfect"}),
          ("Middlebury2014Stereo", {"split": "additional"}), ("Middlebury2014Stereo", {"split": "test",
                                                                                      "calibration": None}),
          ("Middlebury2014Stereo", {"calibration": "both", "use_ambient_views": True}),
          ("ETH3DStereo", {}), ("ETH3DStereo", {"split": "test"}), ("InStereo2k", {}),
          ("InStereo2k", {"split": "test"}), ("CarlaStereo", {}), ("CREStereo", {}), ("FallingThingsStereo", {}),
          ("FallingThingsStereo", {"variant": "mixed"}),
          ("FallingThingsStereo", {"variant": "both"}), ("SceneFlowStereo", {}),
          ("SceneFlowStereo", {"variant": "Monkaa", "pass_name": "both"}),
          ("SceneFlowStereo", {"variant": "Driving", "pass_name": "final"}), ("SintelStereo", {}),
          ("SintelStereo", {"pass_name": "both"})]


@pytest.mark.parametrize("name, kwargs", _CASES, ids=[f"{n}-{'-'.join(map(str, k.values()))}" for n, k in _CASES])
def test_stereo_sets_match_torchvision(stereo_root, compare, name, kwargs):
    ours, ref = getattr(fd, name)(str(stereo_root), **kwargs), getattr(tvd, name)(str(stereo_root), **kwargs)
    compare(ours, ref, seed_each=kwargs.get("use_ambient_views", False))
    assert len(ours[0]) == (4 if ref._has_built_in_disparity_mask else 3)


def test_ambient_views_are_drawn(stereo_root):
    ds = fd.Middlebury2014Stereo(str(stereo_root), use_ambient_views=True)
    random.seed(0)
    rights = {np.asarray(ds[0][1]).tobytes() for _ in range(30)}
    assert len(rights) == 3  # im1.png, im1E.png and im1L.png


def test_transforms_get_both_views(stereo_root, compare):
    def transforms(images, disparities, masks):
        assert len(images) == len(disparities) == len(masks) == 2 and masks == (None, None)
        return images[::-1], (disparities[1], disparities[0]), (disparities[1] > 0, None)

    ours = fd.CarlaStereo(str(stereo_root), transforms=transforms)
    compare(ours, tvd.CarlaStereo(str(stereo_root), transforms=transforms))
    assert len(ours[0]) == 4 and ours[0][3].dtype == bool


def test_errors(stereo_root, tmp_path):
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        fd.Kitti2015Stereo(str(stereo_root), split="val")
    with pytest.raises(FileNotFoundError, match="Could not find any files matching the patterns: .*colored_0"):
        fd.Kitti2012Stereo(str(tmp_path))
    with pytest.raises(ValueError, match="Split 'test' has only no calibration settings"):
        fd.Middlebury2014Stereo(str(stereo_root), split="test")
    with pytest.raises(ValueError, match="Split 'train' has calibration settings, however None was provided"):
        fd.Middlebury2014Stereo(str(stereo_root), calibration=None)
    with pytest.raises(FileNotFoundError, match="The train directory was not found"):
        fd.Middlebury2014Stereo(str(tmp_path))
    (tmp_path / "Middlebury2014" / "train" / "Unknown-perfect").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="does not contain any scenes from the train split"):
        fd.Middlebury2014Stereo(str(tmp_path))
    for scene, names in (("s", ["left.png", "right.png", "left_disp.png"]), ("t", [])):
        (tmp_path / "InStereo2k" / "train" / scene).mkdir(parents=True)
        for name in names:
            Image.new("L", (2, 2)).save(tmp_path / "InStereo2k" / "train" / scene / name)
    with pytest.raises(FileNotFoundError, match="Could not find any files matching the patterns: .*right_disp.png"):
        fd.InStereo2k(str(tmp_path))
    for name in ("left.png", "right.png", "left_disp.png", "right_disp.png"):
        Image.new("L", (2, 2)).save(tmp_path / "InStereo2k" / "train" / "t" / name)
    with pytest.raises(ValueError, match="Found 2 left files but 1 right files using"):
        fd.InStereo2k(str(tmp_path))


def _zip(folder, arc_root):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                z.write(path, f"{arc_root}/{path.relative_to(folder)}")
    return buf.getvalue()


def test_middlebury_downloads_from_local_server(tmp_path, write_image, monkeypatch, compare):
    rng = np.random.default_rng(1)
    source = tmp_path / "source"
    files = {}
    for i, scene in enumerate(("Adirondack", "Jadeplant")):
        for calibration in ("perfect", "imperfect"):
            name = f"{scene}-{calibration}"
            _middlebury_scene(source / name, write_image, rng, i)
            files[f"{name}.zip"] = _zip(source / name, name)
    for i, scene in enumerate(("Plants", "Hoops")):
        _middlebury_scene(source / "MiddEval3" / "testF" / scene, write_image, rng, 5 + i, ambient=False,
                          disparities=False)
    files["MiddEval3-data-F.zip"] = _zip(source / "MiddEval3", "MiddEval3")
    monkeypatch.setattr(fd.Middlebury2014Stereo, "splits", {**fd.Middlebury2014Stereo.splits,
                                                            "train": ["Adirondack", "Jadeplant"]})
    root = tmp_path / "root"
    with FileServer() as server:
        server.files.update(files)
        monkeypatch.setattr(fd.Middlebury2014Stereo, "scenes_url", server.base_url.rstrip("/"))
        monkeypatch.setattr(fd.Middlebury2014Stereo, "test_url", server.url("MiddEval3-data-F.zip"))
        train = fd.Middlebury2014Stereo(str(root), calibration="both", download=True)
        test = fd.Middlebury2014Stereo(str(root), split="test", calibration=None, download=True)
        assert len(server.requests) == 5
        fd.Middlebury2014Stereo(str(root), download=True)
        assert len(server.requests) == 5  # the scenes are there: nothing fetched again
    assert sorted(p.name for p in (root / "Middlebury2014").iterdir()) == ["test", "train"]
    assert not list((root / "Middlebury2014" / "train").glob("*.zip"))
    compare(train, tvd.Middlebury2014Stereo(str(root), calibration="both"))
    compare(test, tvd.Middlebury2014Stereo(str(root), split="test", calibration=None))
