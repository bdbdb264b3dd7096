"""Globals the user trusts beyond the built-in allowlist, as ``torch.serialization`` lets them be named.

``add_safe_globals([MyConfig])`` (or the ``safe_globals([...])`` context manager) lets a checkpoint build a
``MyConfig``: its class is resolved, called with the pickled arguments, and its state set (``__setstate__`` or
its ``__dict__``), exactly what the user vouched for; nothing else changes. ``get_unsafe_globals_in_checkpoint``
lists, without unpickling anything, the globals a checkpoint names that neither list allows, so that a user
can see what a file would need before trusting any of it.
"""
import _compat_pickle
import io
import pickletools
import zipfile

__all__ = ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals", "user_global",
           "is_user_type", "get_unsafe_globals_in_checkpoint"]

_USER_GLOBALS = {}  # "module.qualname" -> the object


def _entries(globals_):
    """(name, object) of each of ``globals_``: an object (named ``module.qualname``) or an (object, name) pair."""
    if not isinstance(globals_, (list, tuple)):
        raise TypeError(f"safe_globals takes a list of functions or classes, got {type(globals_).__name__}")
    entries = []
    for entry in globals_:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], str):
                raise ValueError(f"a safe global given as a tuple must be (object, 'module.name'), got {entry!r:.80}")
            entries.append((entry[1], entry[0]))
        else:
            entries.append((f"{entry.__module__}.{entry.__qualname__}", entry))
    return entries


def add_safe_globals(safe_globals):
    """Allow ``engine.load`` to resolve each of ``safe_globals`` (functions or classes, or (object, 'module.name')
    pairs) in every checkpoint from now on."""
    _USER_GLOBALS.update(_entries(safe_globals))


def clear_safe_globals():
    """Forget every global ``add_safe_globals`` allowed."""
    _USER_GLOBALS.clear()


def get_safe_globals():
    """The objects ``add_safe_globals`` allowed."""
    return list(_USER_GLOBALS.values())


class safe_globals:
    """A context manager allowing ``safe_globals`` (as ``add_safe_globals``) inside its ``with`` block only."""

    def __init__(self, safe_globals):
        self._entries = _entries(safe_globals)
        self._saved = None

    def __enter__(self):
        self._saved = dict(_USER_GLOBALS)
        _USER_GLOBALS.update(self._entries)

    def __exit__(self, *exc_info):
        _USER_GLOBALS.clear()
        _USER_GLOBALS.update(self._saved)


def user_global(module, name):
    """The object the user allowed as ``module.name``, or None."""
    return _USER_GLOBALS.get(f"{module}.{name}")


def is_user_type(obj):
    """Whether ``obj`` is an instance of a class the user allowed (whose state a checkpoint may then set)."""
    return any(type(obj) is allowed for allowed in _USER_GLOBALS.values() if isinstance(allowed, type))


def _names(pickled):
    """``module.name`` of each GLOBAL and INST in the pickle bytes (Python 2 names as Python 3's), unpickling
    nothing."""
    names = set()
    for opcode, argument, _ in pickletools.genops(io.BytesIO(pickled)):
        if opcode.name in ("GLOBAL", "INST"):
            module, name = argument.split(" ", 1)
            module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
            names.add(f"{_compat_pickle.IMPORT_MAPPING.get(module, module)}.{name}")
    return names


def get_unsafe_globals_in_checkpoint(f):
    """The globals the zip checkpoint ``f`` (a path or binary file) names that ``engine.load`` would refuse: in
    neither the built-in allowlist nor the user's. Read statically: nothing is unpickled."""
    from .unpickler import allowed_names

    try:
        archive = zipfile.ZipFile(f)
    except zipfile.BadZipFile:
        raise ValueError("Expected input to be a checkpoint returned by torch.save") from None
    with archive:
        records = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if not records:
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        found = _names(archive.read(records[0]))
    return sorted(found - allowed_names() - set(_USER_GLOBALS))
