"""Kitti, WIDERFace, Cityscapes and CelebA on tiny trees in their real layouts, against torchvision's classes and
its transforms-v2 wrapper on the same root; Kitti's download from a local server."""
import hashlib
import io
import json
import zipfile

import numpy as np
import pytest
import torch
import torchvision.datasets as tvd
from torchvision import tv_tensors as tv_tv_tensors
from torchvision.tv_tensors import _dataset_wrapper as tv_wrapper_module
from PIL import Image

import flowvision.datasets as fd
from http_server import FileServer

_KITTI_TYPES = ["Car", "Pedestrian", "Cyclist", "DontCare", "Van"]


def _kitti(root, write_image):
    rng = np.random.default_rng(0)
    raw = root / "Kitti" / "raw"
    for location, names in (("training", ["000003", "000000", "000011"]), ("testing", ["000001", "000002"])):
        for i, name in enumerate(names):
            write_image(raw / location / "image_2" / f"{name}.png", 10 + i, 14, i)
            if location == "training":
                rows = []
                for _ in range(i + 1):
                    x0, y0 = rng.uniform(0, 6, 2).round(2)
                    kind = _KITTI_TYPES[int(rng.integers(5))]
                    rows.append(f"{kind} {rng.uniform(0, 1):.2f} {int(rng.integers(0, 4))} {rng.uniform(-3, 3):.2f}"
                                f" {x0:.2f} {y0:.2f} {x0 + 5:.2f} {y0 + 4:.2f} "
                                + " ".join(f"{v:.2f}" for v in rng.uniform(-10, 10, 7)))
                (raw / location / "label_2").mkdir(parents=True, exist_ok=True)
                (raw / location / "label_2" / f"{name}.txt").write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize("train", [True, False])
def test_kitti_matches_torchvision(tmp_path, write_image, compare_datasets, train):
    _kitti(tmp_path, write_image)
    ours, ref = fd.Kitti(str(tmp_path), train=train), tvd.Kitti(str(tmp_path), train=train)
    assert ours.images == ref.images and ours.targets == ref.targets
    compare_datasets(ours, ref)
    for keys in (None, "all", ["type", "boxes", "alpha"]):
        compare_datasets(fd.wrap_dataset_for_transforms_v2(ours, keys), tvd.wrap_dataset_for_transforms_v2(ref, keys))


def test_kitti_download_and_errors(tmp_path, write_image, monkeypatch, compare_datasets):
    source = tmp_path / "source"
    _kitti(source, write_image)
    raw = source / "Kitti" / "raw"
    archives = {}
    for name, folder in (("data_object_image_2.zip", "image_2"), ("data_object_label_2.zip", "label_2")):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for path in sorted(raw.rglob(f"{folder}/*")):
                z.write(path, str(path.relative_to(raw)))
        archives[name] = buf.getvalue()
    with pytest.raises(RuntimeError, match="Dataset not found. You may use download=True"):
        fd.Kitti(str(tmp_path / "root"))
    with FileServer() as server:
        server.files.update(archives)
        monkeypatch.setattr(fd.Kitti, "data_url", server.base_url)
        ours = fd.Kitti(str(tmp_path / "root"), download=True)
    compare_datasets(ours, tvd.Kitti(str(tmp_path / "root")))


def _widerface(root, write_image):
    rng = np.random.default_rng(1)
    base = root / "widerface"
    for split in ("train", "val", "test"):
        (base / f"WIDER_{split}").mkdir(parents=True)
    (base / "wider_face_split").mkdir()
    for split in ("train", "val"):
        lines = []
        for i, (event, faces) in enumerate([("0--Parade", 2), ("12--Group", 0), ("0--Parade", 1)]):
            name = f"{event}/{split}_{i}.jpg"
            write_image(base / f"WIDER_{split}" / "images" / name, 12, 15 + i, i)
            lines += [name, str(faces)]
            for _ in range(max(faces, 1)):
                values = [0] * 10 if faces == 0 else list(rng.integers(0, 8, 4)) + list(rng.integers(0, 3, 6))
                lines.append(" ".join(str(int(v)) for v in values) + " ")
        (base / "wider_face_split" / f"wider_face_{split}_bbx_gt.txt").write_text("\n".join(lines) + "\n")
    names = ["0--Parade/test_0.jpg", "12--Group/test_1.jpg"]
    for i, name in enumerate(names):
        write_image(base / "WIDER_test" / "images" / name, 9, 9 + i, 5 + i)
    (base / "wider_face_split" / "wider_face_test_filelist.txt").write_text("\n".join(names) + "\n")


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_widerface_matches_torchvision(tmp_path, write_image, compare_datasets, split):
    _widerface(tmp_path, write_image)
    ours, ref = fd.WIDERFace(str(tmp_path), split=split), tvd.WIDERFace(str(tmp_path), split=split)
    compare_datasets(ours, ref)
    assert [info["img_path"] for info in ours.img_info] == [info["img_path"] for info in ref.img_info]
    for keys in (None, ["bbox", "pose"], ["invalid"]):
        compare_datasets(fd.wrap_dataset_for_transforms_v2(ours, keys), tvd.wrap_dataset_for_transforms_v2(ref, keys))


def test_widerface_errors(tmp_path, write_image):
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted. You can use download=True"):
        fd.WIDERFace(str(tmp_path))
    with pytest.raises(RuntimeError, match="WIDER_train.zip is on Google Drive .* fetch it by hand"):
        fd.WIDERFace(str(tmp_path), download=True)
    _widerface(tmp_path, write_image)
    path = tmp_path / "widerface" / "wider_face_split" / "wider_face_val_bbx_gt.txt"
    path.write_text("0--Parade/val_0.jpg\nnot-a-count\n")
    with pytest.raises(RuntimeError, match="Error parsing annotation file"):
        fd.WIDERFace(str(tmp_path), split="val")


def _cityscapes(root, write_image):
    """Two cities of the fine set (train) with every annotation kind; instance ids mix class and instance ids."""
    rng = np.random.default_rng(2)
    for city, stems in (("aachen", ["aachen_000000_000019", "aachen_000001_000019"]), ("bonn", ["bonn_000004_000019"])):
        for i, stem in enumerate(stems):
            h, w = 6 + i, 8
            write_image(root / "leftImg8bit" / "train" / city / f"{stem}_leftImg8bit.png", h, w, i)
            gt = root / "gtFine" / "train" / city
            gt.mkdir(parents=True, exist_ok=True)
            ids = rng.choice([0, 7, 24, 24000, 24001, 26005], (h, w)).astype(np.uint16)  # 16-bit, as published
            Image.fromarray(ids).save(gt / f"{stem}_gtFine_instanceIds.png")
            Image.fromarray(rng.integers(0, 34, (h, w), dtype=np.uint8)).save(gt / f"{stem}_gtFine_labelIds.png")
            write_image(gt / f"{stem}_gtFine_color.png", h, w, 20 + i)
            (gt / f"{stem}_gtFine_polygons.json").write_text(json.dumps(
                {"imgHeight": h, "imgWidth": w, "objects": [{"label": "car", "polygon": [[0, 0], [3, 1], [2, 4]]}]}))


@pytest.mark.parametrize("target_type", ["instance", "semantic", ["polygon", "color", "semantic"]])
def test_cityscapes_matches_torchvision(tmp_path, write_image, compare_datasets, monkeypatch, target_type):
    _cityscapes(tmp_path, write_image)
    ours = fd.Cityscapes(str(tmp_path), target_type=target_type)
    ref = tvd.Cityscapes(str(tmp_path), target_type=target_type)
    assert ours.images == ref.images and ours.targets == ref.targets and ours.classes == ref.classes
    compare_datasets(ours, ref)
    if target_type == "semantic":
        compare_datasets(fd.wrap_dataset_for_transforms_v2(ours), tvd.wrap_dataset_for_transforms_v2(ref))
    elif target_type == "instance":
        # torchvision's wrapper fails on the 16-bit instance PNGs ('>=' is not implemented for uint16 tensors):
        # compare with it on the ids widened to int32, values only
        monkeypatch.setattr(tv_wrapper_module, "pil_image_to_mask",
                            lambda pil: tv_tv_tensors.Mask(torch.from_numpy(np.asarray(pil).astype(np.int32))[None]))
        wrapped, ref_wrapped = fd.wrap_dataset_for_transforms_v2(ours), tvd.wrap_dataset_for_transforms_v2(ref)
        for i in range(len(ref)):
            target, ref_target = wrapped[i][1], ref_wrapped[i][1]
            assert type(target["masks"]).__name__ == "Mask" and str(target["labels"].dtype) == "engine.uint16"
            np.testing.assert_array_equal(target["masks"].numpy(), ref_target["masks"].numpy())
            np.testing.assert_array_equal(target["labels"].numpy(), ref_target["labels"].numpy())
    else:
        with pytest.raises(RuntimeError, match="target_type=\\['polygon', 'color', ...\\]` is currently not supp"):
            fd.wrap_dataset_for_transforms_v2(ours)


def test_cityscapes_zips_and_errors(tmp_path, write_image, compare_datasets):
    source = tmp_path / "source"
    _cityscapes(source, write_image)
    root = tmp_path / "root"
    root.mkdir()
    for name, top in (("leftImg8bit_trainvaltest.zip", "leftImg8bit"), ("gtFine_trainvaltest.zip", "gtFine")):
        with zipfile.ZipFile(root / name, "w") as z:
            for path in sorted((source / top).rglob("*.*")):
                z.write(path, str(path.relative_to(source)))
    ours = fd.Cityscapes(str(root), target_type="semantic")  # extracts the zips
    compare_datasets(ours, tvd.Cityscapes(str(root), target_type="semantic"))
    assert "Mode: gtFine" in repr(ours)
    with pytest.raises(ValueError, match="Unknown value 'test' for argument split if mode is 'coarse'. "
                                         "Valid values are \\{'train', 'train_extra', 'val'\\}."):
        fd.Cityscapes(str(root), split="test", mode="coarse")
    with pytest.raises(ValueError, match="Unknown value 'depth' for argument target_type"):
        fd.Cityscapes(str(root), target_type="depth")
    with pytest.raises(RuntimeError, match="Dataset not found or incomplete"):
        fd.Cityscapes(str(tmp_path / "empty"), split="val")


@pytest.fixture
def celeba_root(tmp_path, write_image, monkeypatch):
    """The five CelebA tables (three with a count line and a header line) for 6 images, md5s patched in. Each split
    has two images or more: torchvision fails on a split of one."""
    rng = np.random.default_rng(3)
    base = tmp_path / "celeba"
    names = [f"{i:06d}.jpg" for i in range(1, 7)]
    for i, name in enumerate(names):
        write_image(base / "img_align_celeba" / name, 10, 8, i)
    attrs = ["5_o_Clock_Shadow", "Arched_Eyebrows", "Young"]
    tables = {
        "list_eval_partition.txt": "".join(f"{n} {p}\n" for n, p in zip(names, [0, 1, 0, 2, 1, 2])),
        "identity_CelebA.txt": "".join(f"{n} {int(rng.integers(1, 99))}\n" for n in names),
        "list_bbox_celeba.txt": "6\nimage_id x_1 y_1 width height\n" + "".join(
            f"{n}    {'  '.join(str(int(v)) for v in rng.integers(0, 8, 4))}\n" for n in names),
        "list_landmarks_align_celeba.txt": "6\nlefteye_x lefteye_y righteye_x righteye_y nose_x nose_y\n" + "".join(
            f"{n} {' '.join(str(int(v)) for v in rng.integers(0, 8, 6))}\n" for n in names),
        "list_attr_celeba.txt": f"6\n{' '.join(attrs)} \n" + "".join(
            f"{n} {' '.join(str(int(v)) for v in rng.choice([-1, 1], len(attrs)))}\n" for n in names),
    }
    for name, text in tables.items():
        (base / name).write_text(text)
    file_list = [(file_id, hashlib.md5((base / name).read_bytes()).hexdigest() if name in tables else md5, name)
                 for file_id, md5, name in fd.CelebA.file_list]
    for cls in (fd.CelebA, tvd.CelebA):
        monkeypatch.setattr(cls, "file_list", file_list)
    return tmp_path


@pytest.mark.parametrize("split, target_type", [("train", "attr"), ("all", ["identity", "bbox", "landmarks"]),
                                                ("VALID", "bbox"), ("test", [])])
def test_celeba_matches_torchvision(celeba_root, compare_datasets, split, target_type):
    ours = fd.CelebA(str(celeba_root), split=split, target_type=target_type)
    ref = tvd.CelebA(str(celeba_root), split=split, target_type=target_type)
    compare_datasets(ours, ref)
    assert ours.filename == ref.filename and ours.attr_names == ref.attr_names
    if target_type in ("bbox", []):
        compare_datasets(fd.wrap_dataset_for_transforms_v2(ours), tvd.wrap_dataset_for_transforms_v2(ref))


def test_celeba_errors(celeba_root):
    with pytest.raises(RuntimeError, match="target_transform is specified but target_type is empty"):
        fd.CelebA(str(celeba_root), target_type=[], target_transform=len)
    with pytest.raises(ValueError, match="Unknown value 'val' for argument split"):
        fd.CelebA(str(celeba_root), split="val")
    with pytest.raises(ValueError, match='Target type "age" is not recognized.'):
        fd.CelebA(str(celeba_root), target_type="age")[0]
    with pytest.raises(RuntimeError, match="`CelebA` dataset with `target_type=\\['attr', 'landmarks', ...\\]`"):
        fd.wrap_dataset_for_transforms_v2(fd.CelebA(str(celeba_root)))
    (celeba_root / "celeba" / "identity_CelebA.txt").write_text("corrupted")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.CelebA(str(celeba_root))
    with pytest.raises(RuntimeError, match="identity_CelebA.txt is on Google Drive .* fetch it by hand"):
        fd.CelebA(str(celeba_root), download=True)
