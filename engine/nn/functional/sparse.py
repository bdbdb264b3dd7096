"""Index-based lookups: ``F.one_hot`` and ``F.embedding``."""
from ... import _dtype
from ...autograd import grad_mode
from ...autograd.function import Function
from ...ops._common import xp_of
from ...tensor import _new


def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape (*, num_classes) with a 1 at each index (num_classes=-1: max + 1)."""
    if tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    idx = tensor._data
    xp = xp_of(idx)
    if num_classes == -1:
        if idx.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(idx.max()) + 1
    if idx.size:
        if int(idx.min()) < 0:
            raise RuntimeError("Class values must be non-negative.")
        if int(idx.max()) >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    return _new((idx[..., None] == xp.arange(num_classes)).astype(xp.int64))


class _Embedding(Function):
    """weight[indices]; the gradient scatters back into the rows (never into ``padding_idx``)."""

    uses_inputs = False

    def __init__(self, padding_idx, scale_grad_by_freq):
        self.padding_idx, self.scale_grad_by_freq = padding_idx, scale_grad_by_freq

    def forward(self, indices, weight):
        self.indices, self.num = indices, weight.shape[0]
        return weight[indices]

    def backward(self, gy):
        xp = xp_of(gy)
        idx = self.indices.reshape(-1)
        rows = gy.reshape(idx.size, -1)
        if self.scale_grad_by_freq:
            counts = xp.bincount(idx, minlength=self.num)
            rows = rows / counts[idx][:, None]
        gw = xp.zeros((self.num, rows.shape[1]), gy.dtype)
        xp.add.at(gw, idx, rows)
        if self.padding_idx is not None:
            gw[self.padding_idx] = 0
        return None, gw.reshape((self.num,) + gy.shape[self.indices.ndim:])


def _renorm_rows(weight, idx, max_norm, norm_type):
    """In place (no grad): rescale the rows used by ``idx`` whose norm exceeds ``max_norm``."""
    xp = xp_of(idx)
    rows = xp.unique(idx.reshape(-1))
    w = weight._data
    norms = (xp.abs(w[rows]) ** norm_type).sum(axis=1) ** (1.0 / norm_type)
    scale = xp.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).astype(w.dtype)
    w[rows] *= scale[:, None]
    weight._version[0] += 1


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` picked by the integer ``input`` (gradients are always dense)."""
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {input.type()} instead (while checking arguments "
                           f"for embedding)")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= num
    idx = input._data
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        with grad_mode.no_grad():
            _renorm_rows(weight, idx, max_norm, norm_type)
    return _Embedding(padding_idx, scale_grad_by_freq)(input, weight)


__all__ = ["one_hot", "embedding"]
