"""Containers: Sequential, ModuleList, ModuleDict, ParameterList and ParameterDict."""
import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import islice

from ...tensor import Tensor
from ..parameter import Parameter
from .module import Module, _indent


def _index(idx, size):
    """A non-negative position for ``idx`` in a container of ``size`` items, or IndexError."""
    idx = operator.index(idx)
    if not -size <= idx < size:
        raise IndexError(f"index {idx} is out of range")
    return idx % size


def _renumber(container):
    """Keep keys "0", "1", ... after a deletion or insertion (as PyTorch does)."""
    modules = list(container._modules.values())
    container._modules.clear()
    for i, module in enumerate(modules):
        container._modules[str(i)] = module


class Sequential(Module):
    """Modules run one after the other; built from modules or from an OrderedDict of named ones."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def _key(self, idx):
        return next(islice(self._modules, _index(idx, len(self._modules)), None))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return self._modules[self._key(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx):
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [self._key(idx)]
        for key in keys:
            del self._modules[key]
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError("add operator supports only objects of Sequential class, "
                             f"but {type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other):
        return self.extend(other)

    def _repeats(self, other):
        """Check a repetition factor for ``*`` as PyTorch does: a positive int."""
        if not isinstance(other, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(other)}")
        if other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        return other

    def __mul__(self, other):
        """A new Sequential running these modules ``other`` times (the same module objects, renumbered)."""
        return Sequential(*(list(self) * self._repeats(other)))

    __rmul__ = __mul__

    def __imul__(self, other):
        modules = list(self) * (self._repeats(other) - 1)
        for module in modules:
            self.append(module)
        return self

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        index = index + n if index < 0 else index
        # as torch: the modules from ``index`` on move up one numeric key ("1" to "2"...), other keys stay (a
        # named module in the way is torch's KeyError, raised here before anything moves)
        shifted = [str(i - 1) for i in range(n, index, -1)]
        missing = next((key for key in shifted if key not in self._modules), None)
        if missing is not None:
            raise KeyError(missing)
        for key in shifted:
            self._modules[str(int(key) + 1)] = self._modules[key]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential):
        for module in sequential:
            self.append(module)
        return self

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so their parameters are visible; indexable like a list."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_index(idx, len(self)))]

    def __setitem__(self, idx, module):
        setattr(self, str(_index(idx, len(self))), module)

    def __delitem__(self, idx):
        keys = list(self._modules)[idx] if isinstance(idx, slice) else [str(_index(idx, len(self)))]
        for key in keys:
            del self._modules[key]
        _renumber(self)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList([*self, *other])

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def __repr__(self):
        """Runs of identical consecutive modules print once: ``(0-2): 3 x ReLU()``."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [first index, last index, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [_indent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2) for a, b, r in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def insert(self, index, module):
        n = len(self._modules)
        modules = list(self._modules.values())
        modules.insert(index, module)
        for i in range(n + 1):
            self._modules.pop(str(i), None)
        for i, m in enumerate(modules):
            self.add_module(str(i), m)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def extend(self, modules):
        if isinstance(modules, (Mapping, Tensor)) or not hasattr(modules, "__iter__"):
            raise TypeError("ModuleList.extend should be called with an iterable, "
                            f"but got {type(modules).__name__}")
        for module in modules:
            self.append(module)
        return self


class ModuleDict(Module):
    """An ordered dict of named modules."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        self._modules.clear()

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Add modules from a mapping or an iterable of (name, module) pairs, in their order."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            f"{type(modules).__name__}")
        pairs = not isinstance(modules, (Mapping, ModuleDict))
        for j, item in enumerate(modules if pairs else modules.items()):
            if pairs:
                _check_pair("ModuleDict", j, item)
            self[item[0]] = item[1]


def _check_pair(container, j, item):
    """Element ``j`` of the pairs given to ``update``: an iterable of length 2, with PyTorch's errors."""
    if not isinstance(item, Iterable):
        raise TypeError(f"{container} update sequence element #{j} should be Iterable; is{type(item).__name__}")
    if len(item) != 2:
        raise ValueError(f"{container} update sequence element #{j} has length {len(item)}; 2 is required")


def _param_line(key, value, type_name):
    """One line of ParameterList/ParameterDict's repr: kind, type, size and device of a tensor."""
    if not isinstance(value, Tensor):
        return f"  ({key}): Object of type: {type(value).__name__}"
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    size = "x".join(str(s) for s in value.shape)
    where = f" ({value.device})" if value.device.type == "cuda" else ""
    return f"  ({key}): {kind} containing: [{type_name(value)} of size {size}{where}]"


class ParameterList(Module):
    """A list of parameters (tensors are wrapped as Parameters), registered under "0", "1", ..."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)([self[i] for i in range(len(self))[idx]])
        return getattr(self, str(_index(idx, len(self))))

    def __setitem__(self, idx, param):
        idx = _index(idx, len(self))
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, str(idx), param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, parameters):
        return self.extend(parameters)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value):
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        if isinstance(values, (Mapping, Tensor)) or not hasattr(values, "__iter__"):
            raise TypeError("ParameterList.extend should be called with an iterable, "
                            f"but got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(_param_line(k, p, lambda t: t.dtype) for k, p in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters (tensors are wrapped as Parameters)."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attr(key):
        """The attribute holding ``key``'s value: the key itself, which must be a string."""
        if not isinstance(key, str):
            raise TypeError("Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._attr(key))

    def __setitem__(self, key, value):
        attr = self._attr(key)
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, attr, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._attr(key))

    def __or__(self, other):
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other):
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other):
        self.update(other)
        return self

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        return ParameterDict(OrderedDict((k, self[k]) for k in self._keys))

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        """Add parameters from a mapping or an iterable of (name, value) pairs.

        As in PyTorch, an OrderedDict, a ParameterDict or a sequence of pairs keeps its order while a plain
        mapping is added in sorted key order (so ``state_dict`` keys come out in the same order as PyTorch's).
        """
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            f"{type(parameters).__name__}")
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            items = parameters.items()
        elif isinstance(parameters, Mapping):
            items = sorted(parameters.items())
        else:
            items = parameters
        for j, item in enumerate(items):
            _check_pair("ParameterDict", j, item)
            self[item[0]] = item[1]

    def extra_repr(self):
        return "\n".join(_param_line(k, p, lambda t: t.type()) for k, p in self.items())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")


__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]
