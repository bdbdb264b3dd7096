"""Download and cache checkpoints: ``load_state_dict_from_url`` and ``download_url_to_file`` (torch.hub's API).

Files land in ``<get_dir()>/checkpoints`` (``$FLOWVISION_HOME``, default ``~/.cache/flowvision``).
Downloads go through ``engine.hub``'s one downloader (``engine/hub/download.py``: resumed after a cut,
retried, sha256-checked against the full hash when known, else the ``-<hex>`` prefix in the file name, as
torch.hub does, else the sha256 the server states, size-checked, renamed into place under a file lock in
``.locks``); this module names flowvision's deadline variable for it (``timeout=``,
``$FLOWVISION_DOWNLOAD_TIMEOUT``, default 30 minutes) and adds the offline mode and the safetensors cache.

The first load converts a flat state_dict to ``<stem>.safetensors``, recording the source's URL,
hash and size, and deletes the download, so the cache holds one file per checkpoint; later loads
memory-map it. A quantized state_dict is converted too (``cache_format``: its integers and scales, and
a layout that rebuilds it). Any other checkpoint that is not a flat state_dict (nested, holding other
objects) stays as downloaded; a download that does not load is deleted. With ``FLOWVISION_OFFLINE=1`` nothing is
downloaded and nothing is deleted: a missing file is reported with the exact path where a manual
download can be placed, and a corrupt one is moved aside to ``<file>.corrupt``.
"""
import os
import re
import warnings
from collections.abc import Mapping
from urllib.parse import urlparse

import engine
from engine.hub import download as _downloader
from engine.hub.download import CorruptDownloadError, DownloadError, HashMismatchError
from engine.hub.download import file_lock as _file_lock, file_sha256 as _file_sha256, remove as _remove
from engine.serialization import UnpicklingError, load, read_metadata, save

from . import cache_format

__all__ = ["get_dir", "set_dir", "is_offline", "download_timeout", "download_url_to_file",
           "load_state_dict_from_url", "DownloadError", "CorruptDownloadError", "HashMismatchError"]

ENV_HOME = "FLOWVISION_HOME"
ENV_OFFLINE = "FLOWVISION_OFFLINE"
ENV_TIMEOUT = "FLOWVISION_DOWNLOAD_TIMEOUT"
DEFAULT_TIMEOUT = _downloader.DEFAULT_TIMEOUT
_HASH_IN_NAME = re.compile(r"-([a-f0-9]+)\.")
# the clock the downloader waits on between retries (tests patch ``hub.time.sleep`` to skip the back-off)
time = _downloader.time
_hub_dir = None


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


def download_timeout(timeout=None):
    """The deadline in seconds for one download: ``timeout``, else ``$FLOWVISION_DOWNLOAD_TIMEOUT``, else 1800."""
    return _downloader.download_timeout(timeout, ENV_TIMEOUT)


def _expected_hash(file_name, sha256):
    """The hash to check: the full ``sha256`` when given, else the file name's ``-<hex>.`` prefix, else None."""
    if sha256:
        return sha256.lower()
    match = _HASH_IN_NAME.search(file_name)
    return match.group(1) if match else None


def _download(url, dst, hash_prefix, progress, retries=4, backoff=0.5, timeout=None):
    """``download_url_to_file`` without its lock (callers hold it)."""
    _downloader.download(url, dst, hash_prefix, progress, retries, backoff, timeout, ENV_TIMEOUT)


def download_url_to_file(url, dst, hash_prefix=None, progress=True, retries=4, backoff=0.5, timeout=None):
    """Download ``url`` to ``dst``: resumable, retried with backoff, sha256-checked, renamed atomically.

    ``hash_prefix`` is the expected sha256 or a prefix of it; without one the sha256 the server states (the
    Hugging Face hub's ``X-Linked-Etag``) and the size it states are checked. On a mismatch nothing is left
    behind. ``timeout`` is the deadline in seconds for the whole download, retries included (see
    ``download_timeout``). Concurrent calls for the same ``dst`` take turns (a file lock), so each ends with
    the complete file. The machinery is ``engine.hub``'s; this names flowvision's timeout variable.
    """
    _downloader.download_url_to_file(url, dst, hash_prefix, progress, retries, backoff, timeout, ENV_TIMEOUT)


def _is_flat_state_dict(obj):
    """Whether ``obj`` is a dict of string -> tensor (what safetensors can hold)."""
    return isinstance(obj, Mapping) and all(isinstance(k, str) and isinstance(v, engine.Tensor) for k, v in obj.items())


def _load_converted(converted, source, expected, map_location):
    """The cached safetensors conversion of ``source``, or None when it is missing, stale or corrupt.

    It is memory-mapped: cache files are only ever replaced (``os.replace``) or deleted, never rewritten in place.

    A ``source`` file present beside it (a manual download) must have the size it was converted from.
    """
    if not os.path.exists(converted):
        return None
    try:
        meta = read_metadata(converted)
        source_matches = not os.path.exists(source) or os.path.getsize(source) == int(meta.get("source_size", -1))
        if source_matches and (not expected or meta.get("source_sha256", "").startswith(expected)):
            return _read_converted(converted, map_location, meta)
    except (UnpicklingError, ValueError, OSError):
        pass
    _remove(converted)
    return None


def _read_converted(converted, map_location, meta):
    """The state_dict in a cache file: its tensors, put back together when it holds a quantized checkpoint."""
    tensors = load(converted, map_location=map_location, mmap=True)
    layout = meta.get(cache_format.LAYOUT_KEY)
    return tensors if layout is None else cache_format.restore(tensors, layout)


def _convert(source, converted, url, sha256, map_location, weights_only):
    """Read ``source``; a flat state_dict (or a quantized one, see ``cache_format``) is written as safetensors to
    ``converted`` and ``source`` deleted."""
    state_dict = load(source, weights_only=weights_only)
    metadata = {"source_url": url, "source_sha256": sha256, "source_size": str(os.path.getsize(source))}
    if _is_flat_state_dict(state_dict):
        tensors = state_dict
    else:
        flattened = cache_format.flatten(state_dict)
        if flattened is None:
            return load(source, map_location=map_location, weights_only=weights_only)
        tensors, metadata[cache_format.LAYOUT_KEY] = flattened
    save(tensors, converted, metadata=metadata)
    _remove(source)
    return _read_converted(converted, map_location, read_metadata(converted))


def _check_cached(cached, expected, url):
    """The sha256 of the cached download, or None when there is none or it failed its check.

    Online a corrupt file is deleted (and downloaded again); offline it is moved aside, never deleted.
    """
    if not os.path.exists(cached):
        return None
    actual = _file_sha256(cached)
    if not expected or actual.startswith(expected):
        return actual
    if is_offline():
        os.replace(cached, cached + ".corrupt")
        raise HashMismatchError(f"{cached} is corrupt (sha256 {actual}, expected {expected}) and {ENV_OFFLINE} is "
                                f"set: it was moved to {cached}.corrupt; download {url} and place it at {cached}")
    warnings.warn(f"cached file {cached} is corrupt (sha256 {actual}, expected {expected}): downloading it again")
    _remove(cached)
    return None


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=True,
                             file_name=None, weights_only=True, sha256=None, timeout=None):
    """The checkpoint at ``url`` (a dict of engine tensors), downloaded once into the cache.

    ``check_hash`` verifies the sha256: ``sha256`` (full hash, e.g. from the weight manifest) or
    the ``-<hex>`` prefix in the file name. ``map_location`` and ``weights_only`` follow
    ``engine.load``; ``timeout`` is the download's deadline (see ``download_timeout``). A cached file
    that fails its check is downloaded again; a conversion whose metadata or data cannot be read is
    too; a download that does not load raises ``CorruptDownloadError`` and is deleted.
    """
    directory = model_dir if model_dir is not None else os.path.join(get_dir(), "checkpoints")
    os.makedirs(directory, exist_ok=True)
    file_name = file_name or os.path.basename(urlparse(url).path)
    cached = os.path.join(directory, file_name)
    converted = os.path.splitext(cached)[0] + ".safetensors"
    expected = _expected_hash(file_name, sha256) if check_hash else None
    with _file_lock(cached):
        if converted != cached:
            state_dict = _load_converted(converted, cached, expected, map_location)
            if state_dict is not None:
                return state_dict
        elif not expected and os.path.exists(cached):  # a safetensors file, checked when it was downloaded
            return load(cached, map_location=map_location, weights_only=weights_only)
        actual = _check_cached(cached, expected, url)
        downloaded = actual is None
        if downloaded:
            if is_offline():
                raise RuntimeError(f"{ENV_OFFLINE} is set and {file_name} is not in the cache. Download {url} "
                                   f"and place it at {cached}")
            _download(url, cached, expected, progress, timeout=timeout)
            actual = _file_sha256(cached)
        try:
            if converted == cached:
                return load(cached, map_location=map_location, weights_only=weights_only)
            return _convert(cached, converted, url, actual, map_location, weights_only)
        except Exception as e:
            if not downloaded:
                raise
            _remove(cached, converted)
            raise CorruptDownloadError(f"{url} did not give a readable checkpoint ({e}); the download was "
                                       "deleted") from e
