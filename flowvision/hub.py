"""Download and cache checkpoints: ``load_state_dict_from_url`` and ``download_url_to_file`` (torch.hub's API).

Files land in ``<get_dir()>/checkpoints`` (``$FLOWVISION_HOME``, default ``~/.cache/flowvision``).
A download goes to ``<file>.partial`` (resumed with an HTTP Range request after a cut, the server's
``Content-Range`` checked against the offset asked for), is checked against its sha256 (the full
hash when known, else the ``-<hex>`` prefix in the file name, as torch.hub does, else the sha256 the
server states, as the Hugging Face hub does) and against the size the server stated, and only then
renamed into place. Each destination has a file
lock (in ``.locks`` beside it), so concurrent processes end with one valid file. A whole download
has a deadline (``timeout=``, ``$FLOWVISION_DOWNLOAD_TIMEOUT``, default 30 minutes) besides the 30 s
a stalled connection may wait.

The first load converts a flat state_dict to ``<stem>.safetensors``, recording the source's URL,
hash and size, and deletes the download, so the cache holds one file per checkpoint; later loads
memory-map it. A quantized state_dict is converted too (``cache_format``: its integers and scales, and
a layout that rebuilds it). Any other checkpoint that is not a flat state_dict (nested, holding other
objects) stays as downloaded; a download that does not load is deleted. With ``FLOWVISION_OFFLINE=1`` nothing is
downloaded and nothing is deleted: a missing file is reported with the exact path where a manual
download can be placed, and a corrupt one is moved aside to ``<file>.corrupt``.
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

import engine
from engine.serialization import UnpicklingError, load, read_metadata, save

from . import cache_format

__all__ = ["get_dir", "set_dir", "is_offline", "download_timeout", "download_url_to_file",
           "load_state_dict_from_url", "DownloadError", "CorruptDownloadError", "HashMismatchError"]

ENV_HOME = "FLOWVISION_HOME"
ENV_OFFLINE = "FLOWVISION_OFFLINE"
ENV_TIMEOUT = "FLOWVISION_DOWNLOAD_TIMEOUT"
DEFAULT_TIMEOUT = 1800.0  # seconds for a whole download: the 548 MB vgg19 at 300 KB/s, retries included
_STALL_TIMEOUT = 30.0  # seconds a connection may wait to connect or between two reads
_HASH_IN_NAME = re.compile(r"-([a-f0-9]+)\.")
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# the most bytes taken from the socket at once; a cut transfer keeps what arrived. Bodies are read with
# urllib3's HTTPResponse.read1 (urllib3 >= 2.3), which returns what one read brought, so a server that
# trickles bytes still meets the deadline check between reads.
_CHUNK = 1 << 16
_hub_dir = None


class DownloadError(RuntimeError):
    """A download that failed: an HTTP error status, the network after every retry, or its deadline.

    ``reason`` says which in a few words.
    """

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


class CorruptDownloadError(RuntimeError):
    """A downloaded (or manually placed) file that is not what was expected; it was not kept as valid."""


class HashMismatchError(CorruptDownloadError):
    """A file whose sha256 is not the expected one."""


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
    if timeout is None:
        text = os.getenv(ENV_TIMEOUT, "").strip()
        try:
            timeout = float(text) if text else DEFAULT_TIMEOUT
        except ValueError:
            raise ValueError(f"{ENV_TIMEOUT} must be a number of seconds, got {text!r}") from None
    if not timeout > 0:
        raise ValueError(f"the download timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


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
    """An exclusive ``fcntl`` lock for the file at ``path`` for the duration of the block.

    The lock file is ``.locks/<name>.lock`` in the same folder, so the cache itself only holds checkpoints.
    """
    locks = os.path.join(os.path.dirname(os.path.abspath(path)), ".locks")
    os.makedirs(locks, exist_ok=True)
    with open(os.path.join(locks, os.path.basename(path) + ".lock"), "a+") as handle:
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


class _DeadlinePassed(Exception):
    """Raised inside a transfer when the download's deadline has passed."""


def _remaining(deadline):
    """Seconds left before ``deadline`` (a ``time.monotonic`` value); raises once none are."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _DeadlinePassed
    return left


def _body_start(response, offset, partial):
    """Where the response's body goes in the file: ``offset`` for the part asked for, 0 for the whole file,
    None for a part that does not continue ``partial`` (which is then deleted)."""
    if response.status_code != 206:
        return 0  # the server sent the whole file
    match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    start = int(match.group(1)) if match else None
    if start == offset:
        return offset
    _remove(partial)
    return 0 if start == 0 else None


def _stated_size(response, start):
    """The whole file's size as the server states it (Content-Range, else Content-Length), or None."""
    match = _CONTENT_RANGE.fullmatch(response.headers.get("Content-Range", "").strip())
    if match and match.group(3) != "*":
        return int(match.group(3))
    length = response.headers.get("Content-Length")
    return start + int(length) if length is not None else None


def _stated_sha256(response):
    """The sha256 the server states for the file: the Hugging Face hub's ``X-Linked-Etag`` (the stored file's
    sha256, sent with the redirect to its storage), or None."""
    for hop in (*response.history, response):
        etag = hop.headers.get("X-Linked-Etag", "").strip().removeprefix("W/").strip('"').lower()
        if _SHA256.fullmatch(etag):
            return etag
    return None


def _fetch_once(url, partial, progress, deadline, stated):
    """One GET of ``url`` continuing ``partial``; True when it holds the whole file (as far as the server says).

    The sha256 the server states (``_stated_sha256``) is recorded in the dict ``stated``."""
    import requests  # here, not at import: requests and urllib3 take ~0.1 s to import, which every process paid
    from tqdm import tqdm

    offset = os.path.getsize(partial) if os.path.exists(partial) else 0
    headers = {"Range": f"bytes={offset}-"} if offset else {}
    timeout = min(_STALL_TIMEOUT, _remaining(deadline))
    with requests.get(url, stream=True, headers=headers, timeout=timeout) as response:
        if response.status_code == 416:  # the partial file is not a prefix of this one: start over
            _remove(partial)
            return False
        stated["sha256"] = _stated_sha256(response) or stated.get("sha256")
        if response.status_code >= 400:
            raise DownloadError(f"HTTP Error {response.status_code}: {response.reason} for url {url}",
                                f"HTTP Error {response.status_code}: {response.reason}")
        start = _body_start(response, offset, partial)
        if start is None:
            return False
        total = _stated_size(response, start)
        with open(partial, "ab" if start else "wb") as f, \
                tqdm(total=total, initial=start, unit="B", unit_scale=True, unit_divisor=1024,
                     disable=not progress, desc=os.path.basename(urlparse(url).path), file=sys.stderr) as bar:
            while chunk := response.raw.read1(_CHUNK, decode_content=True):
                f.write(chunk)
                bar.update(len(chunk))
                _remaining(deadline)
    size = os.path.getsize(partial)
    if total is not None and size > total:
        _remove(partial)
        return False
    return total is None or size == total


def _download(url, dst, hash_prefix, progress, retries=4, backoff=0.5, timeout=None):
    """``download_url_to_file`` without its lock (callers hold it)."""
    import requests
    from urllib3.exceptions import ProtocolError, ReadTimeoutError

    partial = dst + ".partial"
    seconds = download_timeout(timeout)
    deadline = time.monotonic() + seconds
    stated = {}
    try:
        for attempt in range(retries + 1):
            try:
                if _fetch_once(url, partial, progress, deadline, stated):
                    break
                error = "the transfer ended early"
            except (requests.ConnectionError, requests.Timeout, ProtocolError, ReadTimeoutError) as e:
                error = e
            if attempt == retries:
                raise DownloadError(f"could not download {url} after {retries + 1} attempts ({error}). Download it "
                                    f"manually and place it at {dst}", "no network connection")
            time.sleep(min(backoff * 2 ** attempt, _remaining(deadline)))
    except _DeadlinePassed:
        raise DownloadError(f"the download of {url} did not finish within {seconds:g} s (the deadline; set "
                            f"{ENV_TIMEOUT} or timeout= for more). Download it manually and place it at {dst}",
                            f"not finished within {seconds:g} s") from None
    expected = hash_prefix or stated.get("sha256")
    if expected:
        actual = _file_sha256(partial)
        if not actual.startswith(expected.lower()):
            _remove(partial)
            source = "" if hash_prefix else " (as the server stated it)"
            raise HashMismatchError(f'invalid hash value for {url}: expected sha256 "{expected}"{source}, '
                                    f'got "{actual}"; the file was deleted')
    os.replace(partial, dst)


def download_url_to_file(url, dst, hash_prefix=None, progress=True, retries=4, backoff=0.5, timeout=None):
    """Download ``url`` to ``dst``: resumable, retried with backoff, sha256-checked, renamed atomically.

    ``hash_prefix`` is the expected sha256 or a prefix of it; without one the sha256 the server states (the
    Hugging Face hub's ``X-Linked-Etag``) and the size it states are checked. On a mismatch nothing is left
    behind. ``timeout`` is the deadline in seconds for the whole download, retries included (see
    ``download_timeout``). Concurrent calls for the same ``dst`` take turns (a file lock), so each ends with
    the complete file.
    """
    with _file_lock(dst):
        _download(url, dst, hash_prefix, progress, retries, backoff, timeout)


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
