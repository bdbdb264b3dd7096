"""``engine.sparse``: sparse COO and CSR/CSC tensors with torch's semantics (``torch.sparse``).

The tensors are ``Tensor`` subclasses over a sparse storage (``_coo.COOArray``, ``_compressed.CompressedArray``);
the ops are ``Function`` subclasses on those storages (``_autograd.py``), written against the array module.
Gradients with respect to sparse inputs are sparse, and reach leaves through the backward walker unchanged
(``_grad.py``): ``nn.Embedding(sparse=True)`` gives a sparse ``.grad`` that SGD, SparseAdam and Adagrad take.
"""
from . import _grad, _unary
from .invariants import check_sparse_tensor_invariants
from .dense_queries import (ccol_indices_copy, col_indices_copy, crow_indices_copy, indices_copy,
                            row_indices_copy, values_copy)
from ._construct import (spdiags, sparse_bsc_tensor, sparse_bsr_tensor, sparse_compressed_tensor, sparse_coo_tensor,
                         sparse_csc_tensor, sparse_csr_tensor)
from ._ops import (addmm, cat, hspmm, log_softmax, mm, sampled_addmm, smm, softmax, stack, sum)
from .tensor import SparseCOOTensor, SparseCompressedTensor, SparseTensor

_grad.register()
_unary.install(SparseTensor)


def spmm(input, mat2):
    """``torch.spmm``: sparse @ dense (``sparse.mm``)."""
    return mm(input, mat2)


def dsmm(input, mat2):
    """``torch.dsmm``: sparse @ dense, a dense result."""
    return mm(input, mat2)


def saddmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``torch.saddmm``: ``beta * input + alpha * (mat1 @ mat2)`` as a sparse COO tensor."""
    return addmm(input, mat1, mat2, beta=beta, alpha=alpha).to_sparse()


def sspaddmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``torch.sspaddmm``: like ``saddmm`` with a sparse ``input``."""
    return saddmm(input, mat1, mat2, beta=beta, alpha=alpha)


__all__ = ["spdiags", "sparse_coo_tensor", "sparse_csr_tensor", "sparse_csc_tensor", "sparse_bsr_tensor",
           "sparse_bsc_tensor", "sparse_compressed_tensor", "addmm", "mm",
           "sum", "softmax", "log_softmax", "sampled_addmm", "smm", "hspmm", "spmm", "dsmm", "saddmm", "sspaddmm",
           "cat", "stack", "check_sparse_tensor_invariants", "SparseTensor", "SparseCOOTensor",
           "SparseCompressedTensor", "indices_copy", "values_copy", "crow_indices_copy", "col_indices_copy",
           "ccol_indices_copy", "row_indices_copy"]
