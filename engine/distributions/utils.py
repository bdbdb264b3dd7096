"""Helpers shared by the distributions (``torch.distributions.utils``): broadcasting parameters to one shape,
the conversions between probabilities and logits, and ``lazy_property`` (a parameter derived on first use)."""
import numbers

import engine

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property",
           "tril_matrix_to_vec", "vec_to_tril_matrix"]

#: the Euler-Mascheroni constant (``torch.distributions.utils.euler_constant``)
euler_constant = 0.57721566490153286060


def broadcast_params(*values):
    """``broadcast_all``'s tensors and the batch shape they give a distribution: () when every value is a number,
    as torch's, else the tensors' broadcast shape."""
    tensors = broadcast_all(*values)
    scalar = all(isinstance(v, numbers.Number) for v in values)
    return tensors, engine.Size() if scalar else tensors[0].shape


def broadcast_all(*values):
    """The arguments (tensors or numbers) as tensors of one broadcast shape; numbers take the tensors' dtype."""
    if not all(isinstance(v, (engine.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or engine.Tensor.")
    tensors = [v for v in values if isinstance(v, engine.Tensor)]
    if not tensors:
        dtype = engine.get_default_dtype()
        return tuple(engine.tensor(float(v), dtype=dtype) for v in values)
    like = tensors[0]
    values = [v if isinstance(v, engine.Tensor) else engine.tensor(v, dtype=like.dtype, device=like.device)
              for v in values]
    return tuple(engine.broadcast_tensors(*values))


def _sum_rightmost(value, dim):
    """``value`` summed over its ``dim`` rightmost dims."""
    return value if dim == 0 else value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def clamp_probs(probs):
    """Probabilities kept inside (0, 1) by the dtype's epsilon, so their logs stay finite."""
    eps = engine.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    """Sigmoid of the logits (binary) or softmax over the last dim."""
    return engine.sigmoid(logits) if is_binary else engine.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    """The logits of (clamped) probabilities: log-odds (binary) or log-probabilities."""
    clamped = clamp_probs(probs)
    return engine.log(clamped) - engine.log1p(-clamped) if is_binary else engine.log(clamped)


def _tril_pairs(n, diag):
    """(rows, cols) of the entries of an n x n matrix on or below diagonal ``diag``, row by row (empty lists when
    there are none)."""
    pairs = [(i, j) for i in range(n) for j in range(n) if j - i <= diag]
    return [i for i, _ in pairs], [j for _, j in pairs]


def tril_matrix_to_vec(mat, diag=0):
    """The lower triangle (below diagonal ``diag``) of a batch of square matrices, row by row, as vectors."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = _tril_pairs(n, diag)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag=0):
    """The inverse of ``tril_matrix_to_vec``: vectors laid into lower-triangular square matrices."""
    m = vec.shape[-1]
    root = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * m + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(root) - root > engine.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as the lower triangular part "
                         "of a square D x D matrix.")
    n = round(root)
    rows, cols = _tril_pairs(n, diag)
    flat_index = engine.tensor([i * n + j for i, j in zip(rows, cols)], dtype=engine.int64, device=vec.device)
    flat = vec.new_zeros(vec.shape[:-1] + (n * n,))
    flat = flat.scatter(-1, flat_index.expand(vec.shape[:-1] + (m,)), vec)
    return flat.reshape(vec.shape[:-1] + (n, n))


class lazy_property:
    """A property computed once, on first access, and stored on the instance (a parameter derived from another)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with engine.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """Seen on the class, a lazy_property is also a property (so introspection finds it)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


class BinaryProbsLogits:
    """``probs`` and ``logits`` of a distribution with two outcomes per trial, each derived from the other (whichever
    was given) on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


class CountedTrials(BinaryProbsLogits):
    """``total_count`` trials with success ``probs`` or ``logits`` (Binomial, NegativeBinomial): the count and the
    parameter given broadcast together, the count in the parameter's dtype."""

    def _set_trials(self, total_count, probs, logits):
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        count, param = broadcast_all(total_count, value)
        self.total_count = count.type_as(param)
        setattr(self, name, param)
        self._param = param

    def _expand_trials(self, cls, batch_shape, _instance):
        names = ["total_count"] + [name for name in ("probs", "logits") if name in self.__dict__]
        new = self._expand_params(cls, batch_shape, _instance, names)
        new._param = getattr(new, names[-1])
        return new
