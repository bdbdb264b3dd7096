"""The one downloader: resumable, retried, deadline-bound, sha256-checked, renamed into place under a file lock.

A download goes to ``<file>.partial`` (resumed with an HTTP Range request after a cut, the server's
``Content-Range`` checked against the offset asked for), is checked against its sha256 (the hash prefix given,
else the sha256 the server states, as the Hugging Face hub does) and against the size the server stated, and only
then renamed into place. Each destination has a file lock (in ``.locks`` beside it), so concurrent processes end
with one valid file. A whole download has a deadline (``timeout=``, else an environment variable, default 30
minutes) besides the 30 s a stalled connection may wait.

``engine.hub`` and ``flowvision.hub`` both download through this module; each names its own environment variable
for the deadline (``timeout_env``), so the messages point at the variable its user can set.
"""
import contextlib
import fcntl
import hashlib
import os
import re
import sys
import time
from urllib.parse import urlparse

__all__ = ["DownloadError", "CorruptDownloadError", "HashMismatchError", "download_timeout", "file_sha256",
           "file_lock", "remove", "download", "download_url_to_file", "ENV_TIMEOUT", "DEFAULT_TIMEOUT"]

ENV_TIMEOUT = "ENGINE_DOWNLOAD_TIMEOUT"
DEFAULT_TIMEOUT = 1800.0  # seconds for a whole download: the 548 MB vgg19 at 300 KB/s, retries included
_STALL_TIMEOUT = 30.0  # seconds a connection may wait to connect or between two reads
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# the most bytes taken from the socket at once; a cut transfer keeps what arrived. Bodies are read with
# urllib3's HTTPResponse.read1 (urllib3 >= 2.3), which returns what one read brought, so a server that
# trickles bytes still meets the deadline check between reads.
_CHUNK = 1 << 16


class DownloadError(RuntimeError):
    """A download that failed: an HTTP error status, the network after every retry, or its deadline.

    ``reason`` says which in a few words; ``status`` is the HTTP status for an error status, else None.
    """

    def __init__(self, message, reason, status=None):
        super().__init__(message)
        self.reason = reason
        self.status = status


class CorruptDownloadError(RuntimeError):
    """A downloaded (or manually placed) file that is not what was expected; it was not kept as valid."""


class HashMismatchError(CorruptDownloadError):
    """A file whose sha256 is not the expected one."""


def download_timeout(timeout=None, timeout_env=ENV_TIMEOUT):
    """The deadline in seconds for one download: ``timeout``, else ``$<timeout_env>``, else 1800."""
    if timeout is None:
        text = os.getenv(timeout_env, "").strip()
        try:
            timeout = float(text) if text else DEFAULT_TIMEOUT
        except ValueError:
            raise ValueError(f"{timeout_env} must be a number of seconds, got {text!r}") from None
    if not timeout > 0:
        raise ValueError(f"the download timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


def file_sha256(path):
    """The hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def file_lock(path):
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


def remove(*paths):
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
    remove(partial)
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
            remove(partial)
            return False
        stated["sha256"] = _stated_sha256(response) or stated.get("sha256")
        if response.status_code >= 300:  # what is left of 3xx after requests followed redirects: 300 Multiple Choices
            raise DownloadError(f"HTTP Error {response.status_code}: {response.reason} for url {url}",
                                f"HTTP Error {response.status_code}: {response.reason}", response.status_code)
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
        remove(partial)
        return False
    return total is None or size == total


def download(url, dst, hash_prefix=None, progress=True, retries=4, backoff=0.5, timeout=None,
             timeout_env=ENV_TIMEOUT):
    """``download_url_to_file`` without its lock (callers hold it); ``timeout_env`` names the deadline's
    environment variable (see ``download_timeout``)."""
    import requests
    from urllib3.exceptions import ProtocolError, ReadTimeoutError

    partial = dst + ".partial"
    seconds = download_timeout(timeout, timeout_env)
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
                            f"{timeout_env} or timeout= for more). Download it manually and place it at {dst}",
                            f"not finished within {seconds:g} s") from None
    expected = hash_prefix or stated.get("sha256")
    if expected:
        actual = file_sha256(partial)
        if not actual.startswith(expected.lower()):
            remove(partial)
            source = "" if hash_prefix else " (as the server stated it)"
            raise HashMismatchError(f'invalid hash value for {url}: expected sha256 "{expected}"{source}, '
                                    f'got "{actual}"; the file was deleted')
    os.replace(partial, dst)


def download_url_to_file(url, dst, hash_prefix=None, progress=True, retries=4, backoff=0.5, timeout=None,
                         timeout_env=ENV_TIMEOUT):
    """Download ``url`` to ``dst`` (``torch.hub.download_url_to_file``): resumable, retried with backoff,
    sha256-checked, renamed atomically.

    ``hash_prefix`` is the expected sha256 or a prefix of it; without one the sha256 the server states (the
    Hugging Face hub's ``X-Linked-Etag``) and the size it states are checked. On a mismatch nothing is left
    behind (``HashMismatchError``, a RuntimeError as torch raises). ``timeout`` is the deadline in seconds for
    the whole download, retries included (see ``download_timeout``). Concurrent calls for the same ``dst`` take
    turns (a file lock), so each ends with the complete file.
    """
    dst = os.path.expanduser(os.fspath(dst))
    with file_lock(dst):
        download(url, dst, hash_prefix, progress, retries, backoff, timeout, timeout_env)
