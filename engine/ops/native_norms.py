"""aten's native normalisation and dropout ops, which return the statistics they computed beside the output:
``native_batch_norm`` (output, save_mean, save_invstd), ``native_layer_norm`` (output, mean, rstd),
``native_group_norm`` (output, mean, rstd), ``native_dropout`` (output, mask) and ``native_norm``.

The output is the ``nn.functional`` op's (one implementation of each norm, running statistics included);
the statistics are computed beside it. As in torch, those of batch and layer norm carry no gradient, and
those of group norm do (they are differentiable outputs of ``native_group_norm``).
"""
from ..autograd import grad_mode
from ..nn import functional as F
from ..nn.functional.dropout import _check_p, _noise, _ScaleShift
from ..tensor import _new
from ._common import xp_of
from .creation import empty
from .reduction import var_mean, vector_norm


def _mean_rstd(x, dims, eps, keepdim):
    """The biased mean and 1 / sqrt(var + eps) of ``x`` over ``dims``."""
    var, mean = var_mean(x, dims, correction=0, keepdim=keepdim)
    return mean, (var + eps).rsqrt()


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``(output, save_mean, save_invstd)``: batch norm, and in training the batch's per-channel mean and
    inverse standard deviation (empty tensors in evaluation, as torch's CPU kernel)."""
    output = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if not training:
        return output, empty(0, dtype=input.dtype, device=input.device), empty(0, dtype=input.dtype,
                                                                              device=input.device)
    with grad_mode.no_grad():
        mean, invstd = _mean_rstd(input.detach(), (0,) + tuple(range(2, input.ndim)), eps, False)
    return output, mean, invstd


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(output, mean, rstd)``: layer norm over the trailing ``normalized_shape``, and the statistics of
    each normalised row, shaped like the input with those dims of size 1."""
    output = F.layer_norm(input, normalized_shape, weight, bias, eps)
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    dims = tuple(range(input.ndim - k, input.ndim))
    with grad_mode.no_grad():
        mean, rstd = _mean_rstd(input.detach(), dims, eps, True)
    return output, mean, rstd


def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``(output, mean, rstd)``: group norm of an (N, C, *) input whose trailing dims hold ``HxW`` elements,
    and each (sample, group)'s statistics, (N, group), differentiable as torch's."""
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have {N * C * HxW} elements, got {input.numel()} (N={N}, C={C}, "
                           f"HxW={HxW})")
    output = F.group_norm(input, group, weight, bias, eps)
    mean, rstd = _mean_rstd(input.reshape(N, group, -1), 2, eps, False)
    return output, mean, rstd


def native_dropout(input, p, train):
    """``(output, mask)``: in training (``train`` True or None) each element is kept with probability 1 - p
    (the boolean ``mask``) and scaled by 1 / (1 - p); otherwise a copy of ``input`` and an all-True mask."""
    _check_p(p)
    x = input._data
    xp = xp_of(x)
    if train is False:
        return input.clone(), _new(xp.ones(x.shape, bool))
    keep = _noise(x, p, x.shape) if p < 1 else xp.zeros(x.shape, x.dtype)
    scale = keep / x.dtype.type(1.0 - p) if p < 1 else keep
    return _ScaleShift()(input, scale, None), _new(keep.astype(bool))


def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The vector p-norm of ``input``, over all elements or over ``dim`` (aten's ``native_norm``, which torch
    implements for sparse tensors only; here for dense ones)."""
    if dim is not None and not isinstance(dim, (tuple, list)):
        dim = (dim,)
    return vector_norm(input, 2 if p is None else p, None if dim is None else tuple(dim), keepdim, dtype=dtype)


__all__ = ["native_batch_norm", "native_layer_norm", "native_group_norm", "native_dropout", "native_norm"]
