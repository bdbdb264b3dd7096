"""``register_multi_grad_hook``: one hook over the gradients of several tensors in a backward pass.

``mode="all"``: ``fn(grads)`` once per pass that computes a gradient for any of the tensors, with one entry per
tensor (None for those the pass gave none), called when the pass ends (torch calls it as soon as the last of
them is computed: the same values, a little later). ``mode="any"``: ``fn(grad)`` with the first of them the pass
computes, once per pass. Built on tensor hooks, so it sees the gradients those see.
"""
from .graph import current_pass, queue_callback

_MODES = ("all", "any")


class _Handles:
    """Removes every tensor hook the multi-grad hook installed."""

    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for handle in self.handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register(tensors, fn, mode):
    if mode not in _MODES:
        raise ValueError(f"Expects mode to be one of {_MODES} but got {mode}")
    tensors = tuple(tensors)
    state = {"pass": None, "grads": None}

    def fire():
        grads, state["grads"] = state["grads"], None
        fn(grads)

    def seen(index, grad):
        now = current_pass()
        first = state["pass"] is not now
        state["pass"] = now
        if mode == "any":
            if first:
                fn(grad)
            return
        if first:
            state["grads"] = [None] * len(tensors)
            queue_callback(fire)
        state["grads"][index] = grad

    return _Handles([t.register_hook(lambda grad, i=i: seen(i, grad))
                     for i, t in enumerate(tensors) if t.requires_grad])
