"""``immutable_list`` / ``immutable_dict``: the list and dict types of a ``Node``'s args and kwargs (torch.fx's),
so that editing them in place, which would bypass the node's bookkeeping of its inputs, is an error; assign a
new value to ``node.args`` instead. Both hash, and pickle as their plain counterparts."""

_MESSAGE = ("'{}' object does not support mutation. If you are attempting to modify the kwargs or args of a "
            "engine.fx.Node object,\ninstead create a new copy of it and assign the copy to the node:\n\n"
            "    new_args = ...  # copy and mutate args\n    node.args = new_args")


def _refuse(self, *args, **kwargs):
    raise TypeError(_MESSAGE.format(type(self).__name__))


class immutable_list(list):  # noqa: N801 (torch's name)
    """A list that refuses in-place changes."""
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return (immutable_list, (tuple(self),))


class immutable_dict(dict):  # noqa: N801 (torch's name)
    """A dict that refuses in-place changes."""
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self):
        return hash(tuple(self.items()))

    def __reduce__(self):
        return (immutable_dict, (list(self.items()),))
