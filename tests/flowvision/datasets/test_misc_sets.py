"""Omniglot, SEMEION, LFW, CLEVR, Flickr8k/30k, SBU, INaturalist, Imagenette, MovingMNIST, RenderedSST2, FER2013 and
PhotoTour on tiny trees in their real layouts and file formats, item by item against torchvision's classes on the
same root (md5s patched where the classes check them); downloads from a local server."""
import hashlib
import io
import json
import tarfile
import zipfile

import numpy as np
import pytest
import torchvision.datasets as tvd
from PIL import Image

import flowvision.datasets as fd
from flowvision.datasets import inaturalist
from http_server import FileServer


def _md5(data):
    return hashlib.md5(data).hexdigest()


def _zip(folder, names_under=None):
    """Zip bytes of every file below ``folder``, named relative to ``names_under`` (default: ``folder``)."""
    base = names_under or folder
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                z.write(path, str(path.relative_to(base)))
    return buf.getvalue()


def _tar_gz(folder, names_under):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(folder, arcname=str(folder.relative_to(names_under)))
    return buf.getvalue()


def _jpegs(write_image, paths, seed=0, mode="RGB"):
    for i, path in enumerate(paths):
        write_image(path, 6 + i % 3, 8 + i % 2, seed + i, mode=mode)


@pytest.fixture
def server():
    with FileServer() as s:
        yield s


# ---------------------------------------------------------------- Omniglot, SEMEION

def test_omniglot_downloads_and_matches_torchvision(tmp_path, write_image, server, monkeypatch, compare_datasets):
    source = tmp_path / "source"
    for background, folder in ((True, "images_background"), (False, "images_evaluation")):
        for a, alphabet in enumerate(("Greek", "Korean", "Latin")[:2 + background]):
            for c in range(1, 3):
                character = source / folder / alphabet / f"character{c:02d}"
                _jpegs(write_image, [character / f"0{a}{c}{k}_{k:02d}.png" for k in range(1, 3)], 10 * a + c, "L")
            (source / folder / alphabet / "notes.txt").write_text("not a character")
    zips = {name + ".zip": _zip(source / name, source) for name in ("images_background", "images_evaluation")}
    server.files.update(zips)
    md5s = {name[:-4]: _md5(data) for name, data in zips.items()}
    monkeypatch.setattr(fd.Omniglot, "download_url_prefix", server.base_url.rstrip("/"))
    for cls in (fd.Omniglot, tvd.Omniglot):
        monkeypatch.setattr(cls, "zips_md5", md5s)
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted. You can use download=True"):
        fd.Omniglot(str(tmp_path / "root"))
    for background in (True, False):
        ours = fd.Omniglot(str(tmp_path / "root"), background=background, download=True)
        compare_datasets(ours, tvd.Omniglot(str(tmp_path / "root"), background=background))
        assert ours._characters == tvd.Omniglot(str(tmp_path / "root"), background=background)._characters
    fd.Omniglot(str(tmp_path / "root"), download=True)
    assert len(server.requests) == 2
    loaded = fd.Omniglot(str(tmp_path / "root"), loader=lambda p: p[-10:], target_transform=lambda t: -t)
    assert loaded[1] == tvd.Omniglot(str(tmp_path / "root"), loader=lambda p: p[-10:],
                                     target_transform=lambda t: -t)[1]


def test_semeion_downloads_and_matches_torchvision(tmp_path, server, monkeypatch, compare_datasets):
    rng = np.random.default_rng(0)
    lines = []
    for label in rng.integers(0, 10, 5):
        pixels = " ".join(f"{v:.4f}" for v in rng.integers(0, 2, 256))
        lines.append(pixels + " " + " ".join("1" if d == label else "0" for d in range(10)) + " \n")
    data = "".join(lines).encode()
    server.files["semeion.data"] = data
    monkeypatch.setattr(fd.SEMEION, "url", server.url("semeion.data"))
    for cls in (fd.SEMEION, tvd.SEMEION):
        monkeypatch.setattr(cls, "md5_checksum", _md5(data))
    ours = fd.SEMEION(str(tmp_path))
    ref = tvd.SEMEION(str(tmp_path), download=False)
    compare_datasets(ours, ref)
    np.testing.assert_array_equal(ours.labels, ref.labels)
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.SEMEION(str(tmp_path / "none"), download=False)


# ---------------------------------------------------------------- LFW

@pytest.fixture
def lfw_root(tmp_path, write_image, monkeypatch):
    base = tmp_path / "lfw-py"
    people = {"Aaron_Eckhart": 2, "Bob_Dole": 1, "Carla_Bruni": 3}
    for i, (name, count) in enumerate(people.items()):
        _jpegs(write_image, [base / "lfw_funneled" / name / f"{name}_{n:04d}.jpg" for n in range(1, count + 1)], i)
    lists = {
        "people.txt": "2\n2\nAaron_Eckhart\t2\nBob_Dole\t1\n1\nCarla_Bruni\t3\n",
        "peopleDevTrain.txt": "2\nAaron_Eckhart\t2\nCarla_Bruni\t1\n",
        "lfw-names.txt": "Aaron_Eckhart\t2\nBob_Dole\t1\nCarla_Bruni\t3\n",
        "pairs.txt": "2\t1\nAaron_Eckhart\t1\t2\nAaron_Eckhart\t1\tBob_Dole\t1\nCarla_Bruni\t1\t3\n"
                     "Bob_Dole\t1\tCarla_Bruni\t2\n",
        "pairsDevTest.txt": "2\nCarla_Bruni\t2\t3\nAaron_Eckhart\t1\t2\nAaron_Eckhart\t2\tCarla_Bruni\t1\n"
                            "Bob_Dole\t1\tAaron_Eckhart\t1\n",
    }
    for name, text in lists.items():
        (base / name).write_text(text)
    (base / "lfw-funneled.tgz").write_bytes(b"the archive")
    checksums = {**fd.LFWPeople.checksums, **{name: _md5(text.encode()) for name, text in lists.items()}}
    file_dict = {**fd.LFWPeople.file_dict, "funneled": ("lfw_funneled", "lfw-funneled.tgz", _md5(b"the archive"))}
    for cls in (fd.LFWPeople, fd.LFWPairs, tvd.LFWPeople, tvd.LFWPairs):
        monkeypatch.setattr(cls, "checksums", checksums)
        monkeypatch.setattr(cls, "file_dict", file_dict)
    return tmp_path


@pytest.mark.parametrize("split", ["10fold", "train"])
def test_lfw_people_matches_torchvision(lfw_root, compare_datasets, split):
    ours, ref = fd.LFWPeople(str(lfw_root), split=split), tvd.LFWPeople(str(lfw_root), split=split)
    compare_datasets(ours, ref)
    assert (ours.data, ours.targets, ours.class_to_idx) == (ref.data, ref.targets, ref.class_to_idx)
    assert "Classes (identities): 3" in repr(ours)


@pytest.mark.parametrize("split", ["10fold", "test"])
def test_lfw_pairs_match_torchvision(lfw_root, compare_datasets, split):
    ours = fd.LFWPairs(str(lfw_root), split=split, transform=lambda im: im.size)
    ref = tvd.LFWPairs(str(lfw_root), split=split, transform=lambda im: im.size)
    compare_datasets(ours, ref)
    compare_datasets(fd.LFWPairs(str(lfw_root), split=split), tvd.LFWPairs(str(lfw_root), split=split))
    assert (ours.pair_names, ours.data, ours.targets) == (ref.pair_names, ref.data, ref.targets)


def test_lfw_errors(lfw_root):
    with pytest.raises(ValueError, match="LFW dataset is no longer available for automatic download"):
        fd.LFWPeople(str(lfw_root), download=True)
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.LFWPeople(str(lfw_root), split="test")
    with pytest.raises(ValueError, match="Unknown value 'aligned' for argument image_set"):
        fd.LFWPairs(str(lfw_root), image_set="aligned")


# ---------------------------------------------------------------- CLEVR, captions

def test_clevr_downloads_and_matches_torchvision(tmp_path, write_image, server, monkeypatch, compare_datasets):
    data = tmp_path / "source" / "CLEVR_v1.0"
    scenes = {}
    for split, count in (("train", 3), ("val", 2), ("test", 2)):
        names = [f"CLEVR_{split}_{i:06d}.png" for i in (2, 0, 1)[:count]]
        _jpegs(write_image, [data / "images" / split / name for name in names], count)
        scenes[split] = [{"image_filename": name, "objects": [{"shape": "cube"}] * (i + 3)}
                         for i, name in enumerate(names)]
    (data / "scenes").mkdir()
    for split in ("train", "val"):
        (data / "scenes" / f"CLEVR_{split}_scenes.json").write_text(json.dumps({"scenes": scenes[split]}))
    archive = _zip(data, data.parent)
    server.files["CLEVR_v1.0.zip"] = archive
    monkeypatch.setattr(fd.CLEVRClassification, "_URL", server.url("CLEVR_v1.0.zip"))
    monkeypatch.setattr(fd.CLEVRClassification, "_MD5", _md5(archive))
    root = str(tmp_path / "root")
    for split in ("train", "val", "test"):
        ours = fd.CLEVRClassification(root, split=split, download=True)
        ref = tvd.CLEVRClassification(root, split=split)
        compare_datasets(ours, ref)
        assert ours._labels == ref._labels and "split=" + split in repr(ours)
    assert len(server.requests) == 1
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.CLEVRClassification(str(tmp_path / "none"))


def test_flickr_match_torchvision(tmp_path, write_image, compare_datasets):
    ids = ["1000268201", "997722733", "1001773457"]
    _jpegs(write_image, [tmp_path / "images8k" / f"{i}_693b08cb0e.jpg" for i in ids])
    rows = []
    for i in ids:
        link = f"http://www.flickr.com/photos/user/{i}/"
        captions = "".join(f"<li>Caption {k} of {i} .</li>" for k in range(1 + len(i) % 3))
        rows.append(f'<tr><td><a href="{link}">{link}</a></td><td><ul>{captions}</ul></td></tr>\n')
    rows.insert(1, "<tr><td>Image Not Found</td><td><ul><li>orphan caption</li></ul></td></tr>\n")
    html = "<html><body><p>intro</p><table>\n" + "".join(rows) + "</table><ul><li>after</li></ul></body></html>"
    (tmp_path / "Flickr8k.html").write_text(html)
    ours = fd.Flickr8k(str(tmp_path / "images8k"), str(tmp_path / "Flickr8k.html"))
    ref = tvd.Flickr8k(str(tmp_path / "images8k"), str(tmp_path / "Flickr8k.html"))
    compare_datasets(ours, ref)
    assert ours.ids == ref.ids and ours.annotations == ref.annotations
    names = ["36979.jpg", "1000092795.jpg", "65567.jpg"]
    _jpegs(write_image, [tmp_path / "images30k" / name for name in names], 5)
    lines = [f"{name}#{k}\tA caption {k} about {name} .\n" for k in range(3) for name in names[: 3 - k]]
    (tmp_path / "results_20130124.token").write_text("".join(lines))
    ours = fd.Flickr30k(str(tmp_path / "images30k"), str(tmp_path / "results_20130124.token"),
                        target_transform=len)
    ref = tvd.Flickr30k(str(tmp_path / "images30k"), str(tmp_path / "results_20130124.token"), target_transform=len)
    compare_datasets(ours, ref)
    assert ours.ids == ref.ids


def test_sbu_downloads_photos_and_matches_torchvision(tmp_path, write_image, server, monkeypatch, compare_datasets):
    source = tmp_path / "source"
    photos = ["2.jpg", "gone.jpg", "11.jpg", "5.jpg"]
    _jpegs(write_image, [source / "photos" / name for name in photos if name != "gone.jpg"])
    for name in photos:
        if name != "gone.jpg":
            server.files[f"photos/{name}"] = (source / "photos" / name).read_bytes()
    (source / "dataset").mkdir()
    (source / "dataset" / "SBU_captioned_photo_dataset_urls.txt").write_text(
        "".join(server.url(f"photos/{name}") + "\n" for name in photos))
    (source / "dataset" / "SBU_captioned_photo_dataset_captions.txt").write_text(
        "".join(f"caption of {name} \n" for name in photos))
    archive = _tar_gz(source / "dataset", source)
    server.files["SBUCaptionedPhotoDataset.tar.gz"] = archive
    monkeypatch.setattr(fd.SBU, "url", server.url("SBUCaptionedPhotoDataset.tar.gz"))
    for cls in (fd.SBU, tvd.SBU):
        monkeypatch.setattr(cls, "md5_checksum", _md5(archive))
    ours = fd.SBU(str(tmp_path / "root"))
    ref = tvd.SBU(str(tmp_path / "root"), download=False)
    compare_datasets(ours, ref)
    assert ours.photos == ref.photos == ["2.jpg", "11.jpg", "5.jpg"] and ours.captions == ref.captions
    assert len(server.requests) == 5


# ---------------------------------------------------------------- INaturalist, Imagenette, RenderedSST2

def _inat_2021(folder, write_image):
    species = ["00000_Animalia_Chordata_Aves_Passeriformes_Corvidae_Corvus_corax",
               "00001_Animalia_Chordata_Aves_Passeriformes_Paridae_Parus_major",
               "00002_Plantae_Tracheophyta_Magnoliopsida_Rosales_Rosaceae_Rosa_canina"]
    for i, name in enumerate(species):
        _jpegs(write_image, [folder / name / f"{k}a{i}.jpg" for k in range(2 + i % 2)], 3 * i)


@pytest.mark.parametrize("version, target_type", [("2021_train", "full"), ("2021_train", ["genus", "full", "class"]),
                                                  ("2017", "super"), ("2019", ["full", "super"])])
def test_inaturalist_matches_torchvision(tmp_path, write_image, compare_datasets, version, target_type):
    if version.startswith("2021"):
        _inat_2021(tmp_path / version, write_image)
    else:
        layout = {"Plantae": ["3", "0"], "Aves": ["1", "2"]} if version == "2019" else {"Plantae": ["Rosa"],
                                                                                        "Aves": ["Corvus", "Parus"]}
        for s, (group, species) in enumerate(layout.items()):
            for name in species:
                _jpegs(write_image, [tmp_path / version / group / name / f"{k}.jpg" for k in range(2)], s)
    ours = fd.INaturalist(str(tmp_path), version, target_type)
    ref = tvd.INaturalist(str(tmp_path), version, target_type)
    compare_datasets(ours, ref)
    assert (ours.all_categories, ours.categories_map, ours.categories_index, ours.index) == \
           (ref.all_categories, ref.categories_map, ref.categories_index, ref.index)
    for kind in ["full"] + [t for t in ours.categories_index]:
        assert ours.category_name(kind, 1) == ref.category_name(kind, 1)


def test_inaturalist_download_and_errors(tmp_path, write_image, server, monkeypatch, compare_datasets):
    _inat_2021(tmp_path / "source" / "val", write_image)
    archive = _tar_gz(tmp_path / "source" / "val", tmp_path / "source")
    server.files["val.tar.gz"] = archive
    monkeypatch.setitem(inaturalist.DATASET_URLS, "2021_valid", server.url("val.tar.gz"))
    monkeypatch.setitem(inaturalist.DATASET_MD5, "2021_valid", _md5(archive))
    ours = fd.INaturalist(str(tmp_path / "root"), "2021_valid", download=True)
    compare_datasets(ours, tvd.INaturalist(str(tmp_path / "root"), "2021_valid"))
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        fd.INaturalist(str(tmp_path / "root"), "2018")
    with pytest.raises(ValueError, match="Unknown value 'super' for argument target_type"):
        fd.INaturalist(str(tmp_path / "root"), "2021_valid", "super")
    with pytest.raises(ValueError, match="Invalid category id 9 for genus"):
        ours.category_name("genus", 9)
    (tmp_path / "root" / "2021_valid" / "00007_Bad_Name").mkdir()
    with pytest.raises(RuntimeError, match="Unexpected category name 00007_Bad_Name, wrong number of pieces"):
        fd.INaturalist(str(tmp_path / "root"), "2021_valid")


def test_imagenette_downloads_matches_torchvision_and_wraps(tmp_path, write_image, server, monkeypatch,
                                                            compare_datasets):
    source = tmp_path / "source" / "imagenette2-160"
    for split, wnids in (("train", ["n03888257", "n01440764", "n03425413"]), ("val", ["n01440764"])):
        for i, wnid in enumerate(wnids):
            _jpegs(write_image, [source / split / wnid / f"{wnid}_{k}.JPEG" for k in range(2)] +
                   [source / split / wnid / "skipped.png"], i)
    archive = _tar_gz(source, source.parent)
    server.files["imagenette2-160.tgz"] = archive
    monkeypatch.setattr(fd.Imagenette, "_ARCHIVES", {**fd.Imagenette._ARCHIVES,
                                                     "160px": (server.url("imagenette2-160.tgz"), _md5(archive))})
    root = str(tmp_path / "root")
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True"):
        fd.Imagenette(root, size="160px")
    for split in ("train", "val"):
        ours = fd.Imagenette(root, split, "160px", download=True)
        ref = tvd.Imagenette(root, split, "160px")
        compare_datasets(ours, ref)
        assert (ours.classes, ours.class_to_idx, ours.wnids, ours._samples) == \
               (ref.classes, ref.class_to_idx, ref.wnids, ref._samples)
    assert len(server.requests) == 1
    compare_datasets(fd.wrap_dataset_for_transforms_v2(fd.Imagenette(root, size="160px")),
                     tvd.wrap_dataset_for_transforms_v2(tvd.Imagenette(root, size="160px")))


def test_rendered_sst2_matches_torchvision(tmp_path, write_image, compare_datasets):
    base = tmp_path / "rendered-sst2"
    for s, folder in enumerate(("train", "valid", "test")):
        for label in ("negative", "positive"):
            _jpegs(write_image, [base / folder / label / f"{k}{s}.png" for k in range(1 + s % 2)], s, "L")
    for split in ("train", "val", "test"):
        compare_datasets(fd.RenderedSST2(str(tmp_path), split), tvd.RenderedSST2(str(tmp_path), split))
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True"):
        fd.RenderedSST2(str(tmp_path / "none"))


# ---------------------------------------------------------------- MovingMNIST, FER2013, PhotoTour

def test_moving_mnist_downloads_and_matches_torchvision(tmp_path, server, monkeypatch, compare_datasets):
    frames = np.random.default_rng(0).integers(0, 256, (20, 3, 64, 64), dtype=np.uint8)
    buf = io.BytesIO()
    np.save(buf, frames)
    server.files["mnist_test_seq.npy"] = buf.getvalue()
    monkeypatch.setattr(fd.MovingMNIST, "_URL", server.url("mnist_test_seq.npy"))
    monkeypatch.setattr(fd.MovingMNIST, "_MD5", _md5(buf.getvalue()))
    fd.MovingMNIST(str(tmp_path), download=True)
    for split, ratio in ((None, 10), ("train", 7), ("test", 7), ("test", 19)):
        ours = fd.MovingMNIST(str(tmp_path), split, ratio, transform=lambda x: x[1:])
        compare_datasets(ours, tvd.MovingMNIST(str(tmp_path), split, ratio, transform=lambda x: x[1:]))
        assert tuple(ours.data.shape) == (3, {None: 20, "train": ratio}.get(split, 20 - ratio), 1, 64, 64)
    with pytest.raises(ValueError, match=r"`split_ratio` should be `1 <= split_ratio <= 19`, but got 20 instead."):
        fd.MovingMNIST(str(tmp_path), "train", 20)
    with pytest.raises(TypeError, match="`split_ratio` should be an integer"):
        fd.MovingMNIST(str(tmp_path), "train", 2.0)


def _fer_pixels(rng):
    return " ".join(str(v) for v in rng.integers(0, 256, 48 * 48))


@pytest.mark.parametrize("layout", ["challenge", "fer", "icml"])
def test_fer2013_matches_torchvision(tmp_path, monkeypatch, compare_datasets, layout):
    rng = np.random.default_rng(1)
    usages = ["Training", "PublicTest", "Training", "PrivateTest", "Training"]
    if layout == "challenge":
        files = {"train.csv": "emotion,pixels\n" + "".join(f'{k % 7},"{_fer_pixels(rng)}"\n' for k in range(3)),
                 "test.csv": "pixels\n" + "".join(f'"{_fer_pixels(rng)}"\n' for _ in range(2))}
    elif layout == "fer":
        files = {"fer2013.csv": "emotion,pixels,Usage\n" + "".join(f"{k % 7},{_fer_pixels(rng)},{usage}\n"
                                                                   for k, usage in enumerate(usages))}
    else:
        files = {"icml_face_data.csv": "emotion, Usage, pixels\n" + "".join(f"{k % 7},{usage},{_fer_pixels(rng)}\n"
                                                                            for k, usage in enumerate(usages))}
    (tmp_path / "fer2013").mkdir()
    for name, text in files.items():
        (tmp_path / "fer2013" / name).write_text(text)
    resources = {key: (name, _md5(files[name].encode()) if name in files else md5)
                 for key, (name, md5) in fd.FER2013._RESOURCES.items()}
    for cls in (fd.FER2013, tvd.FER2013):
        monkeypatch.setattr(cls, "_RESOURCES", resources)
    for split in ("train", "test"):
        ours, ref = fd.FER2013(str(tmp_path), split), tvd.FER2013(str(tmp_path), split)
        compare_datasets(ours, ref)
        assert len(ours) == {"train": 3, "test": 2}[split]
    (tmp_path / "fer2013" / next(iter(files))).write_text("tampered")
    with pytest.raises(RuntimeError, match="not found in .* or corrupted. You can download it from"):
        fd.FER2013(str(tmp_path))


@pytest.fixture
def phototour_source(tmp_path):
    """notredame/: two grey BMPs of 2x3 and 2x2 patches (the second 70 px high: its lower patches zero-filled),
    point ids and pairs; served as notredame.zip."""
    rng = np.random.default_rng(2)
    folder = tmp_path / "source" / "notredame"
    folder.mkdir(parents=True)
    Image.fromarray(rng.integers(0, 256, (128, 192), dtype=np.uint8)).save(folder / "patches0000.bmp")
    Image.fromarray(rng.integers(0, 256, (70, 128), dtype=np.uint8)).save(folder / "patches0001.bmp")
    (folder / "info.txt").write_text("".join(f"{k // 2} 0\n" for k in range(10)))
    (folder / "m50_100000_100000_0.txt").write_text(
        "".join(f"{a} {a // 2} 0 {b} {b // 2} 0 0\n" for a, b in ((0, 1), (2, 5), (4, 5), (8, 7), (3, 0))))
    return folder


def test_phototour_caches_as_torchvision_does(tmp_path, phototour_source, server, monkeypatch, compare_datasets):
    archive = _zip(phototour_source)
    server.files["notredame.zip"] = archive
    monkeypatch.setattr(fd.PhotoTour, "urls", {"notredame": [server.url("notredame.zip"), "notredame.zip",
                                                             _md5(archive)]})
    for cls in (fd.PhotoTour, tvd.PhotoTour):
        monkeypatch.setattr(cls, "lens", {"notredame": 9})  # of the 10 patches: one cut off
    ours_root, ref_root = tmp_path / "ours", tmp_path / "ref"
    fd.PhotoTour(str(ours_root), "notredame", download=True)
    assert not (ours_root / "notredame.zip").exists() and (ours_root / "notredame.pt").exists()
    ref_root.mkdir()
    (ref_root / "notredame").symlink_to(phototour_source)
    tvd.PhotoTour(str(ref_root), "notredame")
    for train in (True, False):
        # each reads the cache the other wrote
        ours = fd.PhotoTour(str(ref_root), "notredame", train=train)
        ref = tvd.PhotoTour(str(ours_root), "notredame", train=train)
        compare_datasets(ours, ref)
        assert len(ours) == (9 if train else 5)
    assert "Split: Test" in repr(ours)
    with pytest.raises(RuntimeError, match="Dataset not found: neither .*notredame.pt nor .*notredame exists"):
        fd.PhotoTour(str(tmp_path / "none"), "notredame")
