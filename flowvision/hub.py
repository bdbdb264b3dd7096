"""Download and cache checkpoints: ``load_state_dict_from_url`` and ``download_url_to_file`` (torch.hub's API).

Files land in ``<get_dir()>/checkpoints`` (``$FLOWVISION_HOME``, default ``~/.cache/flowvision``).
A download goes to ``<file>.partial`` (resumed with an HTTP Range request after a cut), is checked
against its sha256 (the full hash when known, else the ``-<hex>`` prefix in the file name, as
torch.hub does) and only then renamed into place, under a file lock (in ``checkpoints/.locks``) so
that concurrent processes end with one valid file. The first load converts a flat state_dict to
``<stem>.safetensors``, recording the source's URL, hash and size, and deletes the download, so the
cache holds one file per checkpoint; later loads memory-map it. A checkpoint that is not a flat
state_dict (nested or holding non-tensors) stays as downloaded. With
``FLOWVISION_OFFLINE=1`` nothing is downloaded and a missing file is reported with the exact
path where a manual download can be placed.
"""
import contextlib
import fcntl
import hashlib
import os
import re
import sys
import time
import warnings
from collections.abc import Mapping
from urllib.parse import urlparse

import requests
from tqdm import tqdm

import engine
from engine.serialization import UnpicklingError, load, read_metadata, save

__all__ = ["get_dir", "set_dir", "is_offline", "download_url_to_file", "load_state_dict_from_url",
           "DownloadError", "HashMismatchError"]

ENV_HOME = "FLOWVISION_HOME"
ENV_OFFLINE = "FLOWVISION_OFFLINE"
_HASH_IN_NAME = re.compile(r"-([a-f0-9]+)\.")
_CHUNK = 1 << 16  # small enough that a cut transfer keeps most of what arrived
_hub_dir = None


class DownloadError(RuntimeError):
    """A download that failed: an HTTP error status, or the network after every retry."""


class HashMismatchError(RuntimeError):
    """A downloaded file whose sha256 is not the expected one (it was deleted)."""


def get_dir():
    """The cache root: ``set_dir``'s value, else ``$FLOWVISION_HOME``, else ``~/.cache/flowvision``."""
    if _hub_dir is not None:
        return _hub_dir
    return os.path.expanduser(os.getenv(ENV_HOME, os.path.join("~", ".cache", "flowvision")))


def set_dir(d):
    """Use ``d`` as the cache root for this process (None goes back to the environment's choice)."""
    global _hub_dir
    _hub_dir = None if d is None else os.path.expanduser(os.fspath(d))


def is_offline():
    """Whether ``FLOWVISION_OFFLINE`` forbids downloads."""
    return os.getenv(ENV_OFFLINE, "").strip().lower() in ("1", "true", "yes", "on")


def _file_sha256(path):
    """The hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _expected_hash(file_name, sha256):
    """The hash to check: the full ``sha256`` when given, else the file name's ``-<hex>.`` prefix, else None."""
    if sha256:
        return sha256.lower()
    match = _HASH_IN_NAME.search(file_name)
    return match.group(1) if match else None


@contextlib.contextmanager
def _file_lock(path):
    """An exclusive ``fcntl`` lock on ``path`` (created if needed) for the duration of the block."""
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove(*paths):
    """Delete the files that exist among ``paths``."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def _fetch_once(url, partial, progress, timeout):
    """One GET of ``url`` appended to ``partial`` (resuming from its size); True when complete."""
    offset = os.path.getsize(partial) if os.path.exists(partial) else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    with requests.get(url, stream=True, headers=headers, timeout=timeout) as response:
        if response.status_code == 416:  # the partial file is not a prefix of this one: start over
            _remove(partial)
            return False
        if response.status_code >= 400:
            raise DownloadError(f"HTTP Error {response.status_code}: {response.reason} for url {url}")
        if response.status_code != 206:
            offset = 0  # the server sent the whole file
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length is not None else None
        with open(partial, "ab" if offset else "wb") as f, \
                tqdm(total=total, initial=offset, unit="B", unit_scale=True, unit_divisor=1024,
                     disable=not progress, desc=os.path.basename(urlparse(url).path), file=sys.stderr) as bar:
            for chunk in response.iter_content(_CHUNK):
                f.write(chunk)
                bar.update(len(chunk))
    return total is None or os.path.getsize(partial) >= total


def download_url_to_file(url, dst, hash_prefix=None, progress=True, retries=4, backoff=0.5, timeout=30):
    """Download ``url`` to ``dst``: resumable, retried with backoff, sha256-checked, renamed atomically.

    ``hash_prefix`` is the expected sha256 or a prefix of it. On a mismatch nothing is left behind.
    """
    partial = dst + ".partial"
    for attempt in range(retries + 1):
        try:
            if _fetch_once(url, partial, progress, timeout):
                break
            error = "the transfer ended early"
        except (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError) as e:
            error = e
        if attempt == retries:
            raise DownloadError(f"could not download {url} after {retries + 1} attempts ({error}). Download it "
                                f"manually and place it at {dst}")
        time.sleep(backoff * 2 ** attempt)
    if hash_prefix:
        actual = _file_sha256(partial)
        if not actual.startswith(hash_prefix.lower()):
            _remove(partial)
            raise HashMismatchError(f'invalid hash value for {url}: expected sha256 "{hash_prefix}", '
                                    f'got "{actual}"; the file was deleted')
    os.replace(partial, dst)


def _is_flat_state_dict(obj):
    """Whether ``obj`` is a dict of string -> tensor (what safetensors can hold)."""
    return isinstance(obj, Mapping) and all(isinstance(k, str) and isinstance(v, engine.Tensor) for k, v in obj.items())


def _load_converted(converted, source, expected, map_location):
    """The cached safetensors conversion of ``source``, or None when it is missing, stale or corrupt.

    A ``source`` file present beside it (a manual download) must have the size it was converted from.
    """
    if not os.path.exists(converted):
        return None
    try:
        meta = read_metadata(converted)
        source_matches = not os.path.exists(source) or os.path.getsize(source) == int(meta.get("source_size", -1))
        if source_matches and (not expected or meta.get("source_sha256", "").startswith(expected)):
            return load(converted, map_location=map_location)
    except (UnpicklingError, ValueError, OSError):
        pass
    _remove(converted)
    return None


def _convert(source, converted, url, sha256, map_location, weights_only):
    """Read ``source``; a flat state_dict is written as safetensors to ``converted`` and ``source`` deleted."""
    state_dict = load(source, weights_only=weights_only)
    if not _is_flat_state_dict(state_dict):
        return load(source, map_location=map_location, weights_only=weights_only)
    save(state_dict, converted, metadata={
        "source_url": url, "source_sha256": sha256, "source_size": str(os.path.getsize(source))})
    _remove(source)
    return load(converted, map_location=map_location)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=True,
                             file_name=None, weights_only=True, sha256=None):
    """The checkpoint at ``url`` (a dict of engine tensors), downloaded once into the cache.

    ``check_hash`` verifies the sha256: ``sha256`` (full hash, e.g. from the weight manifest) or
    the ``-<hex>`` prefix in the file name. ``map_location`` and ``weights_only`` follow
    ``engine.load``. A cached file that fails its check is deleted and downloaded again; a
    conversion whose metadata or data cannot be read is too.
    """
    directory = model_dir if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    os.makedirs(directory, exist_ok=True)
    file_name = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(directory, file_name)
    converted = os.path.splitext(cached)[0] + ".safetensors"
    expected = _expected_hash(file_name, sha256) if check_hash else None
    locks = os.path.join(directory, ".locks")
    os.makedirs(locks, exist_ok=True)
    with _file_lock(os.path.join(locks, file_name + ".lock")):
        if converted != cached:
            state_dict = _load_converted(converted, cached, expected, map_location)
            if state_dict is not None:
                return state_dict
        actual = _file_sha256(cached) if os.path.exists(cached) else None
        if actual is not None and expected and not actual.startswith(expected):
            warnings.warn(f"cached file {cached} is corrupt (sha256 {actual}, expected {expected}): downloading it again")
            _remove(cached)
            actual = None
        if actual is None:
            if is_offline():
                raise RuntimeError(f"{ENV_OFFLINE} is set and {file_name} is not in the cache. Download {url} "
                                   f"and place it at {cached}")
            download_url_to_file(url, cached, expected, progress=progress)
            actual = _file_sha256(cached)
        if converted == cached:
            return load(cached, map_location=map_location, weights_only=weights_only)
        return _convert(cached, converted, url, actual, map_location, weights_only)
