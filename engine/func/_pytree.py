"""Nested Python containers as flat lists of leaves, for the function transforms (``torch.utils._pytree``'s idea).

Tuples (named tuples keep their type), lists and dicts are nodes; anything else, ``None`` included, is a leaf.
``vmap``'s ``in_dims`` and ``out_dims`` and the cotangents of ``vjp`` are matched against the structure of the
arguments or outputs this way.
"""


class TreeSpec:
    """The shape of a nested container: its type, its keys (dicts) and one spec per child; a leaf has none."""

    __slots__ = ("kind", "context", "children", "num_leaves")

    def __init__(self, kind=None, context=None, children=()):
        self.kind, self.context, self.children = kind, context, tuple(children)
        self.num_leaves = 1 if kind is None else sum(c.num_leaves for c in self.children)

    def is_leaf(self):
        return self.kind is None

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.kind is other.kind and self.context == other.context
                and self.children == other.children)

    def __hash__(self):
        return hash((self.kind, self.children))

    def __repr__(self):
        if self.is_leaf():
            return "*"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind is dict or issubclass(self.kind, dict):
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.context, self.children))
            return "{" + inner + "}"
        if self.kind is list:
            return "[" + inner + "]"
        return "(" + inner + ("," if len(self.children) == 1 else "") + ")"


_LEAF = TreeSpec()


def _children(tree):
    """(container type, context, children) of a node, or None for a leaf."""
    if isinstance(tree, dict):
        return type(tree), tuple(tree), tuple(tree.values())
    if isinstance(tree, (tuple, list)):
        return type(tree), None, tuple(tree)
    return None


def tree_flatten(tree):
    """The leaves of ``tree`` in order, and its spec."""
    leaves = []
    return leaves, _flatten_into(tree, leaves)


def _flatten_into(tree, leaves):
    node = _children(tree)
    if node is None:
        leaves.append(tree)
        return _LEAF
    kind, context, children = node
    return TreeSpec(kind, context, [_flatten_into(c, leaves) for c in children])


def tree_unflatten(leaves, spec):
    """The container of shape ``spec`` holding ``leaves``."""
    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(f"tree_unflatten: spec holds {spec.num_leaves} leaves, got {len(leaves)}")
    return _build(iter(leaves), spec)


def _build(leaves, spec):
    if spec.is_leaf():
        return next(leaves)
    children = [_build(leaves, c) for c in spec.children]
    if spec.context is not None:
        return spec.kind(zip(spec.context, children))
    if spec.kind is not tuple and issubclass(spec.kind, tuple) and hasattr(spec.kind, "_fields"):
        return spec.kind(*children)
    return spec.kind(children)


def tree_leaves(tree):
    return tree_flatten(tree)[0]


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def broadcast_to_and_flatten(tree, spec):
    """``tree`` (a prefix of ``spec``'s structure, e.g. ``in_dims``) with each of its leaves repeated over the leaves
    of ``spec`` below it, flattened; None when the structures do not match."""
    node = _children(tree)
    if node is None:
        return [tree] * spec.num_leaves
    if spec.is_leaf():
        return None
    kind, context, children = node
    if kind is not spec.kind or context != spec.context or len(children) != len(spec.children):
        return None
    out = []
    for child, child_spec in zip(children, spec.children):
        flat = broadcast_to_and_flatten(child, child_spec)
        if flat is None:
            return None
        out.extend(flat)
    return out
