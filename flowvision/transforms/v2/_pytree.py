"""Flattening a sample (nested tuples, lists, dicts, OrderedDicts, named tuples) into its leaves and back, as the v2 transforms
see their inputs (torch's ``torch.utils._pytree``, for the containers a dataset returns)."""
import collections


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def tree_flatten(tree):
    """(leaves in order, spec to rebuild ``tree`` from new leaves)."""
    leaves = []
    spec = _flatten_into(tree, leaves)
    return leaves, spec


def _flatten_into(node, leaves):
    if type(node) in (list, tuple) or _is_namedtuple(node):
        return (type(node), None, [_flatten_into(child, leaves) for child in node])
    if type(node) in (dict, collections.OrderedDict):
        keys = list(node)
        return (type(node), keys, [_flatten_into(node[key], leaves) for key in keys])
    leaves.append(node)
    return None


def tree_unflatten(leaves, spec):
    """The tree of ``spec`` with ``leaves`` in its leaves' places."""
    iterator = iter(leaves)
    return _build(spec, iterator)


def _build(spec, leaves):
    if spec is None:
        return next(leaves)
    kind, keys, children = spec
    values = [_build(child, leaves) for child in children]
    if keys is not None:
        return kind(zip(keys, values))
    if hasattr(kind, "_fields"):
        return kind(*values)
    return kind(values)
