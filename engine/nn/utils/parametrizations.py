"""``engine.nn.utils.parametrizations``: ``orthogonal``, ``weight_norm`` and ``spectral_norm`` as
parametrizations (``parametrize.register_parametrization``), with torch's maps, buffers and state-dict keys."""
from enum import Enum, auto

from ... import ops as _ops
from ...ops._common import xp_of
from ...tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...linalg import solve
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from .spectral_norm import _matrix_view, default_dim
from .weight_norm import norm_except_dim, weight_norm_of

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(q):
    n, k = q.shape[-2], q.shape[-1]
    identity = _ops.eye(k, dtype=q.dtype, device=q.device)
    return bool(_ops.allclose(q.mH @ q, identity, atol=10.0 * n * _ops.finfo(q.dtype).eps))


def _make_orthogonal(a):
    """The Q of ``a``'s QR with R's diagonal made positive (Householder QR, as torch's)."""
    x, tau = _ops.geqrf(a)
    q = _ops.orgqr(x, tau)
    return q * x.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps a (batch of) matrix to an orthogonal one: the exponential or the Cayley transform of its skew part,
    or the product of the Householder reflections below its diagonal; with ``use_trivialization`` the result is
    multiplied by the buffer ``base`` (the last assigned orthogonal matrix), so that assignment is exact."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = _ops.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _ops.matrix_exp(A)
            else:
                identity = _ops.eye(n, dtype=A.dtype, device=A.device)
                Q = solve(identity - 0.5 * A, identity + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _ops.orgqr(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        """An ``X`` whose image is ``Q``: with the trivialization, ``base`` becomes ``Q`` (completed to a square
        orthogonal matrix) and ``X`` the matrix whose image is the identity; without it (Householder only), the
        reflectors of ``Q``'s QR."""
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the "
                                              "Cayley parametrizations when use_trivialization=False.")
                A, tau = _ops.geqrf(Q)
                a = A._data
                xp = xp_of(a)
                diag = xp.arange(min(n, k))
                signs = xp.sign(a[..., diag, diag])
                a[..., diag, diag] = xp.where(tau._data == 0, -signs, signs)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = _ops.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(_ops.cat([Q, N], dim=-1))
            self.base = Q
            neg_id = _ops.zeros_like(Q_init)
            xp = xp_of(neg_id._data)
            diag = xp.arange(min(Q_init.shape[-2:]))
            neg_id._data[..., diag, diag] = -1.0
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Keep ``module.<name>`` (a matrix or batch of matrices) orthogonal (or semi-orthogonal, for a non-square
    one). ``orthogonal_map``: "matrix_exp" (the default for square), "cayley" or "householder" (the default
    otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    """``(weight_g, weight_v) -> weight_v * weight_g / ||weight_v||`` (norms over every dim but ``dim``)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_norm_of(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight

    def _upgrade_owner_state_dict(self, state_dict, prefix, tensor_name):
        """Read a checkpoint of the hook-based ``weight_norm`` (``<name>_g``, ``<name>_v``)."""
        g_key, v_key = f"{prefix}{tensor_name}_g", f"{prefix}{tensor_name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{tensor_name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{tensor_name}.original1"] = state_dict.pop(v_key)


def weight_norm(module, name="weight", dim=0):
    """Split ``module.<name>`` into magnitude ``parametrizations.<name>.original0`` and direction ``original1``
    (``dim=None``: one magnitude for the whole tensor); also loads the hook-based version's checkpoints."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``weight -> weight / sigma``, sigma the largest singular value of ``weight`` as a matrix (``dim`` first),
    estimated by power iteration on the buffers ``_u`` and ``_v`` (advanced in training mode only); a vector is
    just normalised."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = _matrix_view(weight, self.dim)
            h, w = weight_mat.shape
            with no_grad():
                u = weight_mat.new_empty(h).normal_(0, 1)
                v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _power_method(self, weight_mat, n_power_iterations):
        """``u <- normalize(W v)``, then ``v <- normalize(W^H u)``, in place, ``n_power_iterations`` times."""
        with no_grad():
            for _ in range(n_power_iterations):
                F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps, out=self._u)
                F.normalize(weight_mat.H.mv(self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = _matrix_view(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = _ops.vdot(u, weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration (buffers
    ``parametrizations.<name>.0._u`` and ``._v``); ``dim`` defaults to 1 for transposed convolutions, else 0."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = default_dim(module)
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
