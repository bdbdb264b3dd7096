"""The graph node of a custom operator: one node per call, whatever the kernel did inside.

With a formula (``register_autograd``) the node's backward calls the user's ``backward(ctx, *grads)`` (one list
for a ``Tensor[]`` output) and maps its one-gradient-per-argument answer (a list for a ``Tensor[]`` argument) onto
the node's tensor inputs, each summed to its input's shape (torch's error where it cannot be). Without
one, the node is still recorded (torch names it ``GeneratedBackwardFor_ns_name_default``) and its backward
raises torch's error: the op's outputs need a gradient only if someone backpropagates through them.
"""
from ..autograd.function import Function, FunctionCtx, _expandable
from ..tensor import Tensor, _new


class AutogradCtx(FunctionCtx):
    """The ``ctx`` that ``setup_context`` fills and ``backward`` reads (torch's custom-op ctx)."""

    def __init__(self, needs_input_grad):
        self.needs_input_grad = needs_input_grad
        self.to_save = ()


def flatten_tensors(values):
    """The tensors among a call's values (those in ``Tensor[]`` lists included), and per value where its
    tensors sit in that flat list: an index, a list of indices (None for a list's None items) or None."""
    flat, where = [], []
    for v in values:
        if isinstance(v, Tensor):
            where.append(len(flat))
            flat.append(v)
        elif isinstance(v, (list, tuple)) and any(isinstance(t, Tensor) for t in v):
            spots = []
            for t in v:
                spots.append(len(flat) if isinstance(t, Tensor) else None)
                if isinstance(t, Tensor):
                    flat.append(t)
            where.append(spots)
        else:
            where.append(None)
    return flat, where


class CustomOpNode(Function):
    """One call of a custom operator in the graph: its forward hands back the outputs the kernel already made."""

    uses_inputs = False

    def __init__(self, op, ctx, out_tensors, where, n_positional, out_is_tensor, input_shapes, list_output):
        self.op, self.ctx, self.outs = op, ctx, out_tensors
        self.where, self.n_positional, self.out_is_tensor = where, n_positional, out_is_tensor
        self.input_shapes, self.list_output = input_shapes, list_output

    @classmethod
    def for_op(cls, namespace, name):
        """The node class of one operator, named as torch's (``GeneratedBackwardFor_ns_name_default``, whose
        ``name()`` adds ``Backward``): a class attribute outlives the release of a node's state after backward."""
        return type(f"GeneratedBackwardFor_{namespace}_{name}_default", (cls,), {})

    def forward(self, *arrays):
        outs = tuple(o._data for o in self.outs)
        del self.outs
        return outs if len(outs) > 1 else outs[0]

    def _user_backward(self, grads):
        formula = self.op._backward_fn
        if formula is None:
            raise RuntimeError(f"Trying to backward through {self.op._namespace}.{self.op._name}.default but no "
                               f"autograd formula was registered. Please use register_autograd to add one.")
        grads = iter(grads)  # one per output of the schema: None for the outputs that are not tensors
        grads = [next(grads) if is_tensor else None for is_tensor in self.out_is_tensor]
        gins = formula(self.ctx, grads) if self.list_output else formula(self.ctx, *grads)
        one_list = len(self.where) == 1 and isinstance(self.where[0], list)
        if not isinstance(gins, (tuple, list)) or one_list and not isinstance(gins[0], (tuple, list)):
            gins = (gins,)
        if len(gins) not in (len(self.where), self.n_positional):
            raise RuntimeError(f"The backward formula for {self.op._namespace}.{self.op._name}.default returned an "
                               f"incorrect number of gradients (expected {len(self.where)}, got {len(gins)}). "
                               f"Expected one gradient for each forward input, or for each positional input to "
                               f"the operator. Use None for inputs that do not require a gradient.")
        flat = [None] * len(self.next_edges)
        for spot, g in zip(self.where, gins):
            if spot is None or g is None:
                continue
            if isinstance(spot, list):
                for i, gi in zip(spot, g):
                    if i is not None:
                        flat[i] = gi
            else:
                flat[spot] = g
        return [self._fitted(i, g) for i, g in enumerate(flat)]

    def _fitted(self, i, grad):
        """The gradient of flat input ``i`` summed to its shape; torch's error where it cannot be."""
        shape = self.input_shapes[i]
        if grad is None or tuple(grad.shape) == shape:
            return grad
        if not _expandable(shape, tuple(grad.shape)):
            raise RuntimeError(f"Function {self.name()} returned an invalid gradient at index {i} - got "
                               f"{list(grad.shape)} but expected shape compatible with {list(shape)}")
        return grad.sum_to_size(shape)

    def backward(self, *grads):
        flat = self._user_backward(tuple(_new(g) for g in grads))
        return tuple(None if g is None else g._data for g in flat)

    def backward_tensors(self, *grads):
        """The user's backward on tensors under grad mode: differentiable where it uses engine ops."""
        return tuple(self._user_backward(grads))
