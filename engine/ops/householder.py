"""Householder QR in LAPACK's compact form: ``geqrf`` (R above the diagonal, the reflectors' vectors below, their
scales ``tau``), ``orgqr`` (their product Q, also ``linalg.householder_product``) and ``ormqr`` (Q or Q^H times a
matrix without forming Q), as torch's. ``orgqr`` and ``ormqr`` apply the reflectors ``I - tau v v^H`` one by one
with engine ops, so they are differentiable in input, tau and other; ``geqrf`` is not (as in torch). Real and
complex dtypes."""
from .creation import eye
from ..tensor import _new, register_method
from .reduction import return_type
from ._common import xp_of
from .linalg_out import writes_out, writes_out_castable


@writes_out_castable
def geqrf(input, *, out=None):
    """(a, tau): ``input``'s QR by Householder reflections as LAPACK's geqrf stores it (batched over leading
    dimensions)."""
    if input.dim() < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if not (input.dtype.is_floating_point or input.dtype.is_complex) or input.dtype.itemsize < 4:
        raise NotImplementedError(f"\"geqrf_{input.device.type}\" not implemented for '{input.dtype.title}'")
    x = input._data
    xp = xp_of(x)
    packed, tau = xp.linalg.qr(x, mode="raw")  # LAPACK's column-major a, as its transpose
    return return_type("geqrf", ("a", "tau"))(_new(xp.ascontiguousarray(xp.swapaxes(packed, -1, -2))),
                                                _new(xp.ascontiguousarray(tau)))


def _reflectors(input, count):
    """The first ``count`` Householder vectors: input's columns below the diagonal under an implicit 1."""
    m = input.shape[-2]
    return input[..., :count].tril(-1) + eye(m, count, dtype=input.dtype, device=input.device)


def _reflect(c, v, tau, i, from_left):
    """``H_i c`` (``from_left``) or ``c H_i``, with ``H_i = I - tau_i v_i v_i^H``."""
    vi, ti = v[..., i:i + 1], tau[..., i:i + 1].unsqueeze(-1)
    if from_left:
        return c - (ti * vi) @ (vi.mH @ c)
    return c - ((c @ vi) * ti) @ vi.mH


def _check_tau(input, tau, name):
    """torch's checks of tau against input (``name`` the function): one dim fewer, the same batch dims."""
    if tau.ndim != input.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {input.ndim}")
    if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")


def _check_householder(input, tau):
    if input.dim() < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 dimensions.")
    if input.shape[-2] < input.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if input.shape[-1] < tau.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    _check_tau(input, tau, "torch.linalg.householder_product")
    if tau.dtype is not input.dtype:
        raise RuntimeError(f"torch.linalg.householder_product: tau dtype {tau.dtype.title} does not match input "
                           f"dtype {input.dtype.title}")


def orgqr(input, tau):
    """The first ``input.shape[-1]`` columns of Q = H_1 H_2 ... H_k (k = tau.shape[-1]) from geqrf's output."""
    _check_householder(input, tau)
    if not (input.dtype.is_floating_point or input.dtype.is_complex) or input.dtype.itemsize < 4:
        raise NotImplementedError(f"\"orgqr_cpu\" not implemented for '{input.dtype.title}'")
    m, n, k = input.shape[-2], input.shape[-1], tau.shape[-1]
    v = _reflectors(input, k)
    q = eye(m, n, dtype=input.dtype, device=input.device).expand(*input.shape)
    for i in reversed(range(k)):
        q = _reflect(q, v, tau, i, True)
    return q


@writes_out
def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """``op(Q) @ other`` (``left``) or ``other @ op(Q)``, op(Q) = Q or Q^H (``transpose``), for geqrf's Q of
    ``input`` and ``tau``."""
    for name, t in (("input", input), ("other", other)):
        if t.dim() < 2:
            raise RuntimeError(f"torch.ormqr: {name} must have at least 2 dimensions.")
    if other.ndim != input.ndim:
        raise RuntimeError(f"torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.ndim} and input.ndim is equal to {input.ndim}")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    k = tau.shape[-1]
    if k != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")
    _check_tau(input, tau, "torch.ormqr")
    if tuple(other.shape[:-2]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"torch.ormqr: Expected batch dimensions of other to be equal to input.shape[:-2], but "
                           f"got {list(other.shape[:-2])}")
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype is not input.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same dtype, but input has dtype"
                               f"{input.dtype.title} and {name} has dtype {t.dtype.title}")
    if not (input.dtype.is_floating_point or input.dtype.is_complex) or input.dtype.itemsize < 4:
        raise NotImplementedError(f"\"ormqr_{input.device.type}\" not implemented for '{input.dtype.title}'")
    v = _reflectors(input, k)
    if transpose:  # Q^H: each H_i^H = I - conj(tau_i) v_i v_i^H
        tau = tau.conj()
    # Q = H_1 ... H_k: Q c applies H_k first, Q^T c applies H_1 first; c Q applies H_1 first, c Q^T H_k first
    order = range(k) if left == transpose else reversed(range(k))
    for i in order:
        other = _reflect(other, v, tau, i, left)
    return other


for _fn in (geqrf, orgqr, ormqr):
    register_method(_fn)

__all__ = ["geqrf", "orgqr", "ormqr"]
