"""torch's rules for views written in place: how a view was made, its history after a write, and the refusals.

A view shares its base's memory and version counter. When autograd records an in-place write into a base or into
one of its views, the base's history changes (``rebase_history``), and every other view of it must now read its
values from that new history, as torch's views regenerate their ``grad_fn`` (an ``AsStridedBackward0``): a view
taken before the write otherwise sends its gradient into the old graph (a wrong gradient). As torch's, this is
done when the view is next used by autograd, where its version counter has moved since its history was set
(``fresh_history``); only when a write makes a base that did not require grad require it are its views (registered
weakly with it when made) given their new history at once, so that they require grad too.

How a view was made decides whether it may be written in place, or used after its memory was written, while
autograd records (torch's creation meta): a view made in no_grad or inference mode, or one output of an op
that returns several views (``unbind``, ``split``, ``chunk``), and every view of such a view, is refused with
torch's messages.
"""
import weakref

from .. import _dtype
from . import grad_mode, tracing
from .function import Function

#: how a view was made, when torch restricts its in-place use
MULTI_OUTPUT, NO_GRAD, INFERENCE = "multi_output", "no_grad", "inference"

#: id(base) -> {id(view): weak reference to the view}, for the live views of each base
_VIEWS = {}

_MULTI_OUTPUT_TAIL = (" This view is the output of a function that returns multiple views. Such functions do not "
                      "allow the output views to be modified inplace. You should replace the inplace operation by "
                      "an out-of-place one.")
_MODE_TAIL = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
              "moving both the view and the inplace either both inside the {block} block (if you don't want the "
              "inplace to be tracked) or both outside (if you want the inplace to be tracked).")


def made_views(source, results, several):
    """Register ``results``, the views an op made of ``source``, with their base, sharing its version counter,
    and note how they were made (kept by views of views); ``several``: the op returns its views as a tuple (a
    split into one piece, too)."""
    base = source._base if source._base is not None else source
    meta = getattr(source, "_view_meta", None)
    if grad_mode._State.inference:
        meta = None if getattr(source, "_inference", False) else INFERENCE  # a view of an inference tensor is one
    elif not grad_mode._State.enabled:
        meta = NO_GRAD
    elif several and meta is None:
        meta = MULTI_OUTPUT
    table = _VIEWS.get(id(base))
    if table is None:
        table = _VIEWS[id(base)] = {}
        key = id(base)
        table[None] = weakref.ref(base, lambda _, key=key: _VIEWS.pop(key, None))
    unrecorded = grad_mode._State.inference or not grad_mode._State.enabled
    for view in results:
        view._base, view._version_counter, view._seen_version = base, source._version_counter, source._version_counter[0]
        if meta is not None:
            view._view_meta = meta
        if unrecorded and source.requires_grad and (_dtype.is_floating(view._data.dtype) or view.is_complex()):
            view.requires_grad = True  # torch's: it requires grad, as a leaf that no gradient reaches
        key = id(view)
        table[key] = weakref.ref(view, lambda _, table=table, key=key: table.pop(key, None))


def check_view_write(target):
    """torch's refusal of an in-place write that autograd records into a view it restricts."""
    meta = getattr(target, "_view_meta", None)
    if meta is not None:
        raise RuntimeError(_refusal(target, meta, "is being modified inplace"))


def edge_of_view(tensor):
    """Whether gradient flows from a recorded op into ``tensor``, a view, once its history is fresh: not for a
    view made in no_grad or inference mode that has no history (torch's edge to nothing)."""
    fresh_history(tensor)
    return tensor.grad_fn is not None or getattr(tensor, "_view_meta", None) not in (NO_GRAD, INFERENCE)


def fresh_history(view):
    """Before autograd uses ``view``: where its memory was written since its history was set, the history read
    out of its base's current one, or torch's refusal for a view it restricts."""
    seen = getattr(view, "_seen_version", None)
    if seen is None or view._version_counter[0] == seen or tracing.active is not None:
        return
    meta = getattr(view, "_view_meta", None)
    if meta is not None:
        raise RuntimeError(_refusal(view, meta, "its base or another view of its base has been modified inplace"))
    if view._base.requires_grad and view._data.dtype == view._base._data.dtype:
        _regenerate(view, view._base)
    view._seen_version = view._version_counter[0]


def _refusal(view, meta, what):
    """torch's message for ``view`` (made as ``meta`` says) that ``what`` (was written or had its base written)."""
    node = view.grad_fn
    if node is not None:
        made = {NO_GRAD: " of a view which was created in no_grad mode", INFERENCE: " of a view which was created "
                "in inference mode"}.get(meta, "")
        head = f"Output {view._output_index} of {_title(node)} is a view{made} and {what}"
        head += {NO_GRAD: " with grad mode enabled.", INFERENCE: " in normal mode."}.get(meta, ".")
    elif meta == INFERENCE:
        head = f"A view was created in inference mode and {what} in normal mode."
    else:  # no history: made in no_grad mode, or one of several views of a tensor that did not require grad
        head = f"A view was created in no_grad mode and {what} with grad mode enabled."
    if meta == MULTI_OUTPUT:
        return head + _MULTI_OUTPUT_TAIL
    return head + _MODE_TAIL.format(block="inference_mode" if meta == INFERENCE else "no_grad")


def _title(node):
    """The op's name as torch's messages give it (``Unbind``, ``Split``)."""
    name = type(node).__name__
    if name == "SplitViews":
        return "Unbind" if all(isinstance(p, int) for p in node.parts) else "Split"
    return name


def after_write(target, recorded, base_required_grad):
    """After an in-place write into ``target`` (autograd ``recorded`` it as the history of ``target``, and of its
    base, through ``rebase_history``, where ``target`` is a view): where the write made a base that did not require
    grad (``base_required_grad``) require it, every other view of it gets its history from the base's at once."""
    if not recorded or base_required_grad:
        return
    base = target if target._base is None else target._base
    table = _VIEWS.get(id(base))
    for key, ref in list(table.items()) if table is not None else ():
        view = ref()
        if key is None or view is None or view is target or view._data.dtype != base._data.dtype:
            continue
        if getattr(view, "_view_meta", None) is None:
            _regenerate(view, base)
        else:  # it requires grad, but autograd refuses it (fresh_history)
            view.requires_grad = True


def _regenerate(view, base):
    """Give ``view`` a history that reads its elements out of ``base``'s current one."""
    from ..ops.view_copies import _positions_in
    node = AsStridedView(_positions_in(view._data, base._data), view._data)(base).grad_fn
    view.grad_fn, view._output_index, view.requires_grad = node, 0, True
    view._seen_version = view._version_counter[0]


class AsStridedView(Function):
    """The history of a view regenerated after its base was written in place (torch's ``AsStridedBackward0``):
    its elements are the base's at the flat ``positions``, so its gradient is summed into those positions."""

    uses_inputs, moves_only = False, True

    def __init__(self, positions, array):
        self.positions, self.array = positions, array

    def name(self):
        return "AsStridedBackward0"

    def forward(self, x):
        self.shape = x.shape
        array, self.array = self.array, None
        return array

    def backward(self, gy):
        from .._device import array_module
        xp = array_module(gy)
        g = xp.zeros(self.shape, gy.dtype)
        xp.add.at(g.reshape(-1), self.positions.reshape(-1), gy.reshape(-1))
        return g

    def backward_tensors(self, gy):
        from .double_backward import constant
        from ..ops.creation import zeros
        flat = zeros(self.shape, dtype=gy.dtype, device=gy.device).reshape(-1)
        return flat.index_add(0, constant(self.positions.reshape(-1)), gy.reshape(-1)).reshape(self.shape)
