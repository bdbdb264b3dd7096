"""``torch.return_types``: the named tuples of the ops with several results (``max(dim)``, ``sort``, ``topk``, ``svd``,
``slogdet``...), each made on its first use and kept as this module's attribute under its op's name, so that its
results pickle; they print as torch's do: the qualified name, then one ``field=value`` a line."""
import collections


def _repr(self):
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"{__name__}.{type(self).__name__}(\n{fields})"


def named_result(name, fields):
    """The class of ``name``'s results, a tuple with the named ``fields``."""
    cls = globals().get(name)
    if cls is None:
        cls = type(name, (collections.namedtuple(name, fields),), {"__slots__": (), "__repr__": _repr,
                                                                    "__module__": __name__})
        globals()[name] = cls
    elif cls._fields != tuple(fields):
        raise ValueError(f"return type {name} has the fields {cls._fields}, not {tuple(fields)}")
    return cls
