"""``torch.hub.load_state_dict_from_url``: a checkpoint downloaded once into ``<hub dir>/checkpoints``.

The file is read with ``engine.load`` (PyTorch's zip and legacy formats, safetensors), never with torch. As in
torch, a zip holding exactly one file (a pre-1.6 checkpoint zipped by hand) is extracted beside it and that file
loaded, with torch's FutureWarning.
"""
import os
import re
import sys
import warnings
import zipfile
from urllib.parse import urlparse

from ..serialization import load
from .download import download_url_to_file
from .home import get_dir
from .zip_extract import safe_extract

__all__ = ["HASH_REGEX", "load_state_dict_from_url"]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # the hash prefix in a name such as resnet18-bfd8deac.pth


def _is_legacy_zip(path):
    """Whether ``path`` is a zip archive of exactly one file (not PyTorch's own zip format, which holds many)."""
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
    return len(members) == 1 and not members[0].is_dir()


def _load_legacy_zip(path, model_dir, map_location, weights_only):
    """Extract the one file of the zip at ``path`` into ``model_dir`` and load it."""
    warnings.warn("Falling back to the old format < 1.6. This support will be deprecated in favor of default "
                  "zipfile format introduced in 1.6. Please redo torch.save() to save it in the new zipfile format.",
                  FutureWarning, stacklevel=3)
    with zipfile.ZipFile(path) as archive:
        safe_extract(archive, model_dir)
        extracted = os.path.join(model_dir, archive.infolist()[0].filename)
    return load(extracted, map_location=map_location, weights_only=weights_only)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False,
                             file_name=None, weights_only=True):
    """The object saved at ``url``, downloaded to ``model_dir`` (default ``<get_dir()>/checkpoints``) unless a
    file of that name is already there.

    ``file_name`` replaces the URL's base name. With ``check_hash`` the download's sha256 must start with the
    ``-<hex>.`` part of the file name (as torch's ``resnet18-f37072fd.pth``). ``map_location`` is
    ``engine.load``'s. ``weights_only`` defaults to True, unlike torch's False: the engine's loader never
    unpickles anything but tensors and plain containers, so False is refused (by ``engine.load``).
    """
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stdout.write(f'Downloading: "{url}" to {cached_file}\n')
        match = HASH_REGEX.search(filename) if check_hash else None
        download_url_to_file(url, cached_file, match.group(1) if match else None, progress=progress)
    if _is_legacy_zip(cached_file):
        return _load_legacy_zip(cached_file, model_dir, map_location, weights_only)
    return load(cached_file, map_location=map_location, weights_only=weights_only)
