"""Dataset downloads and archives: verified, atomic downloads with mirrors, and safe extraction."""
import bz2
import gzip
import hashlib
import lzma
import os
import shutil
import sys
import tarfile
import tempfile
import zipfile
from urllib.parse import urlparse


from engine.utils.data import Dataset

__all__ = ["VisionDataset", "calculate_md5", "check_integrity", "download_url", "extract_archive",
           "download_and_extract_archive", "mirror_urls"]

MIRROR_ENV = "FLOWVISION_DATASETS_MIRROR"
_CHUNK = 1 << 16


class VisionDataset(Dataset):
    """Base of the image datasets: ``root``, optional ``transform``/``target_transform`` and a readable repr."""

    def __init__(self, root=None, transform=None, target_transform=None):
        self.root = os.path.expanduser(root) if isinstance(root, str) else root
        self.transform = transform
        self.target_transform = target_transform

    def _apply(self, img, target):
        """Apply the transforms to one (image, target) pair."""
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def extra_repr(self):
        return ""

    def __repr__(self):
        lines = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"Root location: {self.root}")
        lines += [line for line in self.extra_repr().splitlines() if line]
        for name in ("transform", "target_transform"):
            if getattr(self, name) is not None:
                lines.append(f"{name.replace('_', ' ').title().replace(' ', '')}: {getattr(self, name)!r}")
        return "\n".join([f"Dataset {type(self).__name__}"] + ["    " + line for line in lines])


def mirror_urls(mirrors, filename):
    """Candidate URLs for ``filename``: the $FLOWVISION_DATASETS_MIRROR base first, then ``mirrors``."""
    bases = list(mirrors)
    if os.environ.get(MIRROR_ENV):
        bases.insert(0, os.environ[MIRROR_ENV])
    return [base.rstrip("/") + "/" + filename for base in bases]


def _file_hash(fpath, algorithm):
    h = hashlib.new(algorithm)
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def calculate_md5(fpath):
    """Hex md5 of a file."""
    return _file_hash(fpath, "md5")


def check_integrity(fpath, md5=None, sha256=None):
    """True when ``fpath`` exists and matches the given md5/sha256 (when given)."""
    if not os.path.isfile(fpath):
        return False
    if md5 is not None and _file_hash(fpath, "md5") != md5:
        return False
    return sha256 is None or _file_hash(fpath, "sha256") == sha256


def _stream_to(url, fpath, progress, timeout):
    """GET ``url`` into a temporary file beside ``fpath``, then rename it into place."""
    import requests  # here, not at import: requests takes ~0.1 s to import, which every process paid
    from tqdm import tqdm

    fd, partial = tempfile.mkstemp(prefix=os.path.basename(fpath) + ".", suffix=".partial",
                                   dir=os.path.dirname(fpath))
    try:
        with os.fdopen(fd, "wb") as f, requests.get(url, stream=True, timeout=timeout) as response:
            if response.status_code >= 400:
                raise RuntimeError(f"HTTP Error {response.status_code}: {response.reason} for url {url}")
            length = response.headers.get("Content-Length")
            with tqdm(total=int(length) if length else None, unit="B", unit_scale=True, unit_divisor=1024,
                      disable=not progress, desc=os.path.basename(fpath), file=sys.stderr) as bar:
                for chunk in response.iter_content(_CHUNK):
                    f.write(chunk)
                    bar.update(len(chunk))
        os.replace(partial, fpath)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def download_url(url, root, filename=None, md5=None, sha256=None, progress=True, timeout=30):
    """Download ``url`` to ``root/filename`` unless a verified copy is there; verify md5/sha256 after.

    The bytes go to a temporary file that is renamed into place, so an interrupted download never
    leaves a file that looks complete; a file that fails its check is deleted.
    """
    root = os.path.expanduser(root)
    filename = filename or os.path.basename(urlparse(url).path)
    fpath = os.path.join(root, filename)
    os.makedirs(root, exist_ok=True)
    if check_integrity(fpath, md5, sha256):
        return fpath
    import requests

    try:
        _stream_to(url, fpath, progress, timeout)
    except (requests.ConnectionError, requests.Timeout) as e:
        raise RuntimeError(f"Could not download {url} ({type(e).__name__}). If this machine is offline, "
                           f"download the file elsewhere and put it at {fpath}") from e
    if not check_integrity(fpath, md5, sha256):
        os.remove(fpath)
        expected = f"md5 {md5}" if md5 is not None else f"sha256 {sha256}"
        raise RuntimeError(f"File not found or corrupted: {url} does not match the expected {expected}; "
                           f"the download was deleted")
    return fpath


def _safe_zip_members(archive, to_path):
    """Zip members, refusing any whose path would land outside ``to_path``."""
    root = os.path.realpath(to_path)
    for name in archive.namelist():
        target = os.path.realpath(os.path.join(root, name))
        if os.path.commonpath([root, target]) != root:
            raise RuntimeError(f"Refusing to extract {name!r}: it points outside {to_path}")
    return archive.namelist()


_COMPRESSORS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}


def extract_archive(from_path, to_path=None, remove_finished=False):
    """Extract a .tar/.tar.gz/.tgz/.tar.bz2/.tar.xz/.zip archive, or decompress a .gz/.bz2/.xz file.

    Returns the directory extracted to (or the decompressed file's path).
    """
    to_path = to_path if to_path is not None else os.path.dirname(from_path)
    name = from_path.lower()
    if tarfile.is_tarfile(from_path):
        with tarfile.open(from_path) as tar:
            tar.extractall(to_path, filter="data")
        result = to_path
    elif name.endswith(".zip"):
        with zipfile.ZipFile(from_path) as archive:
            archive.extractall(to_path, members=_safe_zip_members(archive, to_path))
        result = to_path
    elif os.path.splitext(name)[1] in _COMPRESSORS:
        stem, suffix = os.path.splitext(os.path.basename(from_path))
        result = os.path.join(to_path, stem)
        with _COMPRESSORS[suffix.lower()](from_path, "rb") as src, open(result + ".partial", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.replace(result + ".partial", result)
    else:
        raise RuntimeError(f"Unsupported archive {from_path}: expected .tar(.gz/.bz2/.xz), .tgz, .zip, .gz, "
                           ".bz2 or .xz")
    if remove_finished:
        os.remove(from_path)
    return result


def download_and_extract_archive(url, download_root, extract_root=None, filename=None, md5=None,
                                 remove_finished=False, progress=True):
    """``download_url`` then ``extract_archive`` into ``extract_root`` (default: the download folder)."""
    extract_root = extract_root or download_root
    archive = download_url(url, download_root, filename, md5, progress=progress)
    return extract_archive(archive, extract_root, remove_finished)
