"""Node names as torch.fx gives them: the target's name in snake_case, made a legal identifier, kept off Python's
keywords and builtins, and made unique with ``_1``, ``_2``... (torchvision's feature-extraction names derive from
these, so the rules are torch's)."""
import builtins
import keyword
import math
import re

_SNAKE = re.compile(r"(?<=[a-z])([A-Z])")
_ILLEGAL_CHARS = re.compile("[^0-9a-zA-Z_]+")
_NAME = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")

#: names a node may not take unless it is that very object: keywords, builtins, and the names generated code
#: imports for itself (``engine``, ``torch``, ``inf``, ``nan``, ``device``...)
_RESERVED = {k: object() for k in keyword.kwlist}
_RESERVED.update(builtins.__dict__)
_RESERVED.update(inf=math.inf, nan=math.nan, NoneType=type(None), engine=object(), torch=object(), device=object(),
                 fx_pytree=object(), pytree=object())


#: node names torch gives functions whose ``__name__`` differs from ours (``torch.special.expit`` is the builtin
#: ``special_expit``), by ``id`` of our function; filled by ``patching.py``
TORCH_NAMES = {}


def snake_case(name):
    """``pascalCase`` -> ``pascal_case``, ``ALL_CAPS`` -> ``all_caps`` (dots and underscores kept)."""
    return _SNAKE.sub(r"_\1", name).lower()


def target_to_str(target):
    """The name a node is given for ``target``: a callable's ``__name__`` or the string with dunders stripped."""
    if callable(target):
        name = TORCH_NAMES.get(id(target), target.__name__)
    else:
        name = target
        if name.startswith("__") and name.endswith("__"):
            name = name[2:-2]
    return snake_case(name)


class Namespace:
    """Unique, legal names within one graph (each object keeps the name it was first given)."""

    def __init__(self):
        self._obj_to_name = {}
        self._used = set()
        self._base_count = {}

    def create_name(self, candidate, obj=None):
        """A fresh legal name based on ``candidate``: ``x`` then ``x_1``, ``x_2``; builtins start at ``_1``."""
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)]
        match = _NAME.match(candidate)
        if match is None:
            candidate = _ILLEGAL_CHARS.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _NAME.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used:
            num = self._base_count.get(base, 0)
            if _RESERVED.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used:
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = candidate
        return candidate
