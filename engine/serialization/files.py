"""Where ``engine.save`` writes: a path (atomically, with the usual permissions) or a binary file object."""
import contextlib
import os
import secrets

__all__ = ["writable"]


@contextlib.contextmanager
def writable(f):
    """A binary file to write a checkpoint to.

    For a path, a temporary file in the same folder, created with mode 0666 less the umask (like
    ``open``; ``tempfile.mkstemp`` would give 0600) and renamed over ``f`` once complete: a failed
    save never leaves a partial file under the checkpoint's name. A file object is used as is.
    """
    if not isinstance(f, (str, os.PathLike)):
        if not hasattr(f, "write"):
            raise TypeError(f"engine.save writes to a path or a binary file object, got {type(f).__name__}")
        yield f
        return
    path = os.fspath(f)
    temporary = f"{path}.{secrets.token_hex(4)}.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "wb") as out:
            yield out
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
