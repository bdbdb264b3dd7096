"""VOCDetection / VOCSegmentation on a VOCdevkit tree in the real layout (JPEG images, annotation xml, palette
PNG masks, split lists), against torchvision's classes; download from a local server."""
import hashlib
import io
import os
import tarfile

import pytest
import torchvision.datasets as tvd

import flowvision.datasets as fd
from flowvision.datasets import voc
from http_server import FileServer

@pytest.mark.parametrize("name", ["VOCDetection", "VOCSegmentation"])
@pytest.mark.parametrize("image_set", ["train", "val"])
def test_voc_matches_torchvision(voc_root, compare_datasets, name, image_set):
    ours = getattr(fd, name)(str(voc_root), image_set=image_set)
    ref = getattr(tvd, name)(str(voc_root), image_set=image_set)
    assert ours.images == ref.images and ours.targets == ref.targets
    assert (ours.url, ours.filename, ours.md5) == (ref.url, ref.filename, ref.md5)
    compare_datasets(ours, ref)


def test_voc_object_list_and_transforms(voc_root):
    ds = fd.VOCDetection(str(voc_root), target_transform=lambda t: t["annotation"]["object"])
    assert [len(ds[i][1]) for i in range(3)] == [1, 2, 3]  # a single object is a list too
    assert ds[0][1][0]["part"][1] == {"name": "hand"}
    joint = fd.VOCSegmentation(str(voc_root), transforms=lambda im, m: (im.size, m.mode))
    assert joint[0][1] == "P" and joint.masks == joint.targets
    assert "Number of datapoints: 3" in repr(ds)


@pytest.mark.parametrize("year", ["2007", "2008", "2009", "2010", "2011"])
def test_voc_release_table_matches_torchvision(year):
    for image_set in ["train"] + (["test"] if year == "2007" else []):
        key = "2007-test" if image_set == "test" else year
        ref = tvd.voc.DATASET_YEAR_DICT[key]
        url, filename, md5, base_dir = voc._RELEASES[key]
        assert (url, filename, md5, os.path.join(*base_dir.split("/"))) == (
            ref["url"], ref["filename"], ref["md5"], ref["base_dir"])


def test_voc_errors(tmp_path, voc_root):
    with pytest.raises(ValueError, match=r"Unknown value '2013' for argument year. Valid values are \{'2007'"):
        fd.VOCDetection(str(voc_root), year="2013")
    with pytest.raises(ValueError, match="Expected type str for argument year, but got type <class 'int'>"):
        fd.VOCDetection(str(voc_root), year=2012)
    with pytest.raises(ValueError, match="Unknown value 'test' for argument image_set"):
        fd.VOCSegmentation(str(voc_root), image_set="test")
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted. You can use download=True"):
        fd.VOCDetection(str(tmp_path / "nowhere"))


def test_voc_download_from_local_server(tmp_path, make_voc_tree, monkeypatch, compare_datasets):
    source = tmp_path / "source"
    make_voc_tree(source, base=("VOCdevkit", "VOC2007"), count=2)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(source / "VOCdevkit", arcname="VOCdevkit")
    archive = buf.getvalue()
    with FileServer() as server:
        server.files["voc2007.tar"] = archive
        url, filename, _, base_dir = voc._RELEASES["2007"]
        monkeypatch.setitem(voc._RELEASES, "2007", (server.url("voc2007.tar"), filename,
                                                    hashlib.md5(archive).hexdigest(), base_dir))
        root = tmp_path / "root"
        ours = fd.VOCDetection(str(root), year="2007", download=True)
        fd.VOCDetection(str(root), year="2007", download=True)
        assert len(server.requests) == 1  # the verified archive is not fetched again
    assert (root / filename).is_file()
    compare_datasets(ours, tvd.VOCDetection(str(root), year="2007"))
