"""``record_function(name)``: a named user range around whatever runs inside it (torch's
``torch.profiler.record_function``); a context manager and a decorator. With no profile recording it
does nothing."""
import functools

from . import _hooks


class record_function:
    """Mark a range of code as ``name`` in the active profile; ops inside nest under it."""

    def __init__(self, name, args=None):
        self.name, self.args = name, args
        self._open = []

    def __enter__(self):
        listener = _hooks.active()
        token = None if listener is None else listener.begin(self.name, "user_annotation", None, ())
        self._open.append((listener, token))
        return self

    def __exit__(self, exc_type, exc, tb):
        listener, token = self._open.pop()
        if listener is not None:
            listener.end(token, ())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper
