"""What every dataset builds on, as torchvision.datasets.utils offers it: the VisionDataset base (with
StandardTransform), string-option checks, file listing and checksums, verified atomic downloads with mirrors, and
safe extraction."""
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

__all__ = ["StandardTransform", "VisionDataset", "calculate_md5", "check_integrity", "check_md5", "download_url",
           "extract_archive", "download_and_extract_archive", "iterable_to_str", "list_dir", "list_files",
           "mirror_urls", "verify_str_arg"]

MIRROR_ENV = "FLOWVISION_DATASETS_MIRROR"
_CHUNK = 1 << 16


class StandardTransform:
    """``transform`` on the image and ``target_transform`` on the target, as one ``(image, target)`` callable."""

    def __init__(self, transform=None, target_transform=None):
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, image, target):
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __repr__(self):
        body = [type(self).__name__]
        for head, name in (("Transform: ", "transform"), ("Target transform: ", "target_transform")):
            if getattr(self, name) is not None:
                body += _indented_repr(getattr(self, name), head)
        return "\n".join(body)


def _indented_repr(obj, head):
    """``repr(obj)`` after ``head``, its later lines aligned under the first."""
    lines = repr(obj).splitlines() or [""]
    return [head + lines[0]] + [" " * len(head) + line for line in lines[1:]]


class VisionDataset(Dataset):
    """Base of the image datasets, with torchvision's signature and repr: ``root``, and either a joint
    ``transforms(image, target)`` or the separate ``transform``/``target_transform`` (folded into ``transforms``
    as a StandardTransform, so that either way one callable transforms an item)."""

    _repr_indent = 4

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        self.root = os.path.expanduser(root) if isinstance(root, str) else root
        separate = transform is not None or target_transform is not None
        if transforms is not None and separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = StandardTransform(transform, target_transform) if separate else transforms

    def _apply(self, img, target):
        """Apply ``transform`` and ``target_transform`` to one (image, target) pair."""
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def _format_transform_repr(self, transform, head):
        """torchvision's helper, for subclasses that print a transform of their own in ``extra_repr``."""
        return _indented_repr(transform, head)

    def extra_repr(self):
        return ""

    def __repr__(self):
        body = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if getattr(self, "transforms", None) is not None:
            body.append(repr(self.transforms))  # one entry: only its first line is indented, as in torchvision
        return "\n".join([f"Dataset {type(self).__name__}"] + [" " * self._repr_indent + line for line in body])


def list_dir(root, prefix=False):
    """Names of the folders directly in ``root`` (in listing order), joined to ``root`` when ``prefix``."""
    root = os.path.expanduser(root)
    names = [name for name in os.listdir(root) if os.path.isdir(os.path.join(root, name))]
    return [os.path.join(root, name) for name in names] if prefix is True else names


def list_files(root, suffix, prefix=False):
    """Names of the files directly in ``root`` ending with ``suffix`` (a str or a tuple of them), in listing order,
    joined to ``root`` when ``prefix``."""
    root = os.path.expanduser(root)
    names = [name for name in os.listdir(root) if os.path.isfile(os.path.join(root, name)) and name.endswith(suffix)]
    return [os.path.join(root, name) for name in names] if prefix is True else names


def iterable_to_str(iterable):
    """The items as ``'a', 'b'``: each str() in single quotes, the way torchvision lists valid values (no items
    read ``''``, as there)."""
    return "'" + "', '".join(str(item) for item in iterable) + "'"


def verify_str_arg(value, arg=None, valid_values=None, custom_msg=None):
    """``value`` when it is a string among ``valid_values`` (any string when None); a ValueError otherwise, with
    ``custom_msg`` as its message when given."""
    if not isinstance(value, str):
        raise ValueError(f"Expected type str{f' for argument {arg}' if arg is not None else ''}, "
                         f"but got type {type(value)}.")
    if valid_values is not None and value not in valid_values:
        raise ValueError(custom_msg if custom_msg is not None else
                         f"Unknown value '{value}' for argument {arg}. Valid values are "
                         f"{{{iterable_to_str(valid_values)}}}.")
    return value


def mirror_urls(mirrors, filename):
    """Candidate URLs for ``filename``: the $FLOWVISION_DATASETS_MIRROR base first, then ``mirrors``."""
    bases = list(mirrors)
    if os.environ.get(MIRROR_ENV):
        bases.insert(0, os.environ[MIRROR_ENV])
    return [base.rstrip("/") + "/" + filename for base in bases]


def _file_hash(fpath, algorithm, chunk_size=1 << 20):
    h = hashlib.new(algorithm, usedforsecurity=False)  # a checksum, not security: allowed where FIPS mode is on
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            h.update(chunk)
    return h.hexdigest()


def calculate_md5(fpath, chunk_size=1024 * 1024):
    """Hex md5 of a file."""
    return _file_hash(fpath, "md5", chunk_size)


def check_md5(fpath, md5, **kwargs):
    """Whether the file's md5 is ``md5`` (``kwargs`` go to ``calculate_md5``)."""
    return md5 == calculate_md5(fpath, **kwargs)


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
