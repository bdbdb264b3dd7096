"""Sparse gradients reaching a leaf, accumulated as torch's AccumulateGrad does: the first becomes ``.grad`` (a
sparse tensor), a second sparse one is concatenated to it (uncoalesced), and a dense one on either side makes the
sum dense. Registered with the backward walker by ``register`` (``autograd/graph.py``'s ``SPARSE_GRADS``)."""
from ..autograd import graph
from ._compressed import CompressedArray
from ._coo import COOArray
from .tensor import SparseTensor, wrap


def accumulate(tensor, grad):
    """Add ``grad`` (a sparse storage or a dense array) into ``tensor.grad``."""
    from ..tensor import _new
    sparse_in = isinstance(grad, (COOArray, CompressedArray))
    if tensor.grad is None:
        tensor.grad = wrap(grad.copy()) if sparse_in else _new(grad.copy())
    elif isinstance(tensor.grad, SparseTensor):
        total = tensor.grad._data + grad
        tensor.grad = wrap(total) if isinstance(total, (COOArray, CompressedArray)) else _new(total)
    else:
        tensor.grad._data += grad.to_dense()


def register():
    """Have the backward walker hand sparse gradients to ``accumulate``."""
    graph.SPARSE_GRADS[COOArray] = accumulate
    graph.SPARSE_GRADS[CompressedArray] = accumulate
