"""Loss functions (``F.cross_entropy``, ``F.mse_loss``...) with PyTorch's reductions and semantics.

Cross-entropy, NLL and the binary cross-entropies are single fused Functions (stable log-softmax /
log-sigmoid forms, forward beside backward). The pointwise regression losses are one Function for
the unreduced loss followed by ``_Reduce``; the rarer margin losses are compositions of engine ops.
"""
import math
import warnings

import numpy as np

from ... import _dtype, backends
from ...amp import autocast_mode
from ...autograd.function import Function
from ...autograd.double_backward import constant, recomputed_backward
from ...ops import elementwise as _ew
from ...ops._common import as_operand, cast, check_same_device, float_dtype, result_dtype, xp_of
from ...ops.activation import _sigmoid, _softplus, log_softmax, log_softmax_array, logsigmoid
from ...ops.creation import full_like
from ...ops.ranges import arange
from ...tensor import Tensor
from .distance import _cosine_embedding, pairwise_distance

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(size_average, reduce, reduction):
    """The reduction string, honouring the legacy ``size_average``/``reduce`` flags."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else ("sum" if reduce else "none")
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", stacklevel=3)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _check_sizes(input, target):
    """PyTorch's first step of the pointwise losses: warn on differing sizes, fail on unbroadcastable ones."""
    _ew.check_broadcast(input, target)
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      "broadcasting. Please ensure they have the same size.", stacklevel=3)


class _Reduce(Function):
    """Sum or mean of all elements (the last step of a loss)."""

    uses_inputs = False

    def __init__(self, mean):
        self.mean = mean

    def forward(self, x):
        xp = xp_of(x)
        self.shape, self.n = x.shape, x.size
        if self.mean and x.size == 0:  # the mean of no losses is NaN, as in PyTorch (numpy would warn)
            return xp.full((), np.nan, x.dtype)
        return xp.asarray(x.mean() if self.mean else x.sum(), dtype=x.dtype)

    def backward(self, gy):
        if self.n == 0:
            return xp_of(gy).zeros(self.shape, gy.dtype)
        g = gy / self.n if self.mean else gy
        return xp_of(gy).broadcast_to(g, self.shape)

    def backward_tensors(self, gy):
        if self.n == 0:
            return constant(xp_of(gy._data).zeros(self.shape, gy._data.dtype))
        return (gy / self.n if self.mean else gy).expand(self.shape)


def _reduce(loss, reduction):
    return loss if reduction == "none" else _Reduce(reduction == "mean")(loss)


def _weighted(loss, weight, reduction, mean_by_weight):
    """``loss * weight`` reduced; the weighted mean divides by sum(weight) when ``mean_by_weight``."""
    if weight.shape != loss.shape:
        raise ValueError("Weights and input must have the same size.")
    loss = _ew.mul(loss, weight)
    if reduction == "mean" and mean_by_weight:
        return _ew.div(_Reduce(False)(loss), _Reduce(False)(weight))
    return _reduce(loss, reduction)


# ---- pointwise regression losses ---------------------------------------------------------------
class _Pointwise(Function):
    """An unreduced elementwise loss of (input, target) in the promoted float dtype."""

    uses_inputs = False

    def __init__(self, dtype, param=None):
        self.dtype, self.param = dtype.np, param

    def forward(self, x, t):
        x, t = cast(x, self.dtype), cast(t, self.dtype)
        self.d = xp_of(x, t).subtract(x, t, out=_ew._torch_ordered((x, t), (x, t)))  # laid out as torch's
        self.inputs = x, t  # for the differentiable backward (create_graph)
        return self.loss(xp_of(self.d), self.d)

    def backward(self, gy):
        g = gy * self.dloss(xp_of(gy), self.d)
        return (g if self.needs_input_grad[0] else None,
                -g if self.needs_input_grad[1] else None)

    def backward_tensors(self, gy):
        d = self.saved_input(0, self.inputs[0]) - self.saved_input(1, self.inputs[1])
        g = gy * self.dloss_tensor(d)
        return (g if self.needs_input_grad[0] else None,
                -g if self.needs_input_grad[1] else None)


class _MSE(_Pointwise):
    loss = staticmethod(lambda xp, d: d * d)
    dloss = staticmethod(lambda xp, d: 2 * d)
    dloss_tensor = staticmethod(lambda d: 2 * d)


def _sign0(d):
    """sign(d) with 0 at NaN (an infinite input minus an infinite target): PyTorch's L1 gradient there."""
    return (d > 0).astype(d.dtype) - (d < 0).astype(d.dtype)


class _L1(_Pointwise):
    loss = staticmethod(lambda xp, d: xp.abs(d))
    dloss = staticmethod(lambda xp, d: _sign0(d))
    dloss_tensor = staticmethod(lambda d: constant(_sign0(d._data)))


class _SmoothL1(_Pointwise):
    def loss(self, xp, d):
        beta, ad = self.param, xp.abs(d)
        return xp.where(ad < beta, (0.5 / beta) * d * d, ad - 0.5 * beta)

    def dloss(self, xp, d):
        beta = self.param
        return xp.clip(d * (1 / beta), -1, 1)

    def dloss_tensor(self, d):
        return (d * (1 / self.param)).clamp(-1, 1)


class _Huber(_Pointwise):
    def loss(self, xp, d):
        delta, ad = self.param, xp.abs(d)
        return xp.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))

    def dloss(self, xp, d):
        return xp.clip(d, -self.param, self.param)

    def dloss_tensor(self, d):
        return d.clamp(-self.param, self.param)


def _pointwise(cls, input, target, param=None):
    """The unreduced loss in the type of input and target promoted as tensors of one (broadcast) shape:
    PyTorch broadcasts them first, so a 0-dim target takes part in the promotion like any other."""
    input, target = as_operand(input), as_operand(target, like=input)
    _ew.check_broadcast(input, target)
    if isinstance(input, Tensor) and isinstance(target, Tensor):
        dtype = _dtype.promote_types(input.dtype, target.dtype)
    else:
        dtype = result_dtype(input, target)
    return cls(float_dtype(dtype), param)(input, target)


@autocast_mode.float32("cpu", "cuda")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error; with ``weight``, the mean is sum(w * l) / sum(w)."""
    _check_sizes(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    loss = _pointwise(_MSE, input, target)
    return _reduce(loss, reduction) if weight is None else _weighted(loss, weight, reduction, True)


@autocast_mode.float32("cpu", "cuda")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error; with ``weight``, the mean is sum(w * l) / sum(w)."""
    _check_sizes(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    loss = _pointwise(_L1, input, target)
    return _reduce(loss, reduction) if weight is None else _weighted(loss, weight, reduction, True)


@autocast_mode.float32("cpu", "cuda")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta; beta=0 is the L1 loss."""
    _check_sizes(input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    loss = _pointwise(_SmoothL1, input, target, float(beta)) if beta > 0 else _pointwise(_L1, input, target)
    return _reduce(loss, reduction)


@autocast_mode.float32("cpu", "cuda")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); weighted mean is mean(w * l)."""
    _check_sizes(input, target)
    reduction = _reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    loss = _pointwise(_Huber, input, target, float(delta))
    if input.dtype.is_floating_point:  # PyTorch's huber kernel writes into a tensor of the input's type
        loss = loss.to(input.dtype)
    return _reduce(loss, reduction) if weight is None else _weighted(loss, weight, reduction, False)


# ---- binary cross-entropies --------------------------------------------------------------------
class _BCE(Function):
    """-w (t log x + (1 - t) log(1 - x)), each log clamped at -100 like PyTorch."""

    def forward(self, x, t, w):
        xp = xp_of(x)
        if ((x < 0) | (x > 1)).any():
            raise RuntimeError("all elements of input should be between 0 and 1")
        self.x, self.t, self.w = x, t, w
        with np.errstate(divide="ignore"):
            self.log_x = xp.maximum(xp.log(x), -100)
            self.log_1mx = xp.maximum(xp.log(1 - x), -100)
        loss = -(t * self.log_x + (1 - t) * self.log_1mx)
        return loss if w is None else loss * w

    def backward(self, gy):
        xp, x = xp_of(gy), self.x
        g = gy if self.w is None else gy * self.w
        gx = g * (x - self.t) / xp.maximum((1 - x) * x, 1e-12) if self.needs_input_grad[0] else None
        if self.needs_input_grad[1]:  # unclamped, as PyTorch's: infinite where x is 0 or 1
            with np.errstate(divide="ignore"):
                gt = g * (xp.log1p(-x) - xp.log(x))
        else:
            gt = None
        return gx, gt, None

    def backward_tensors(self, gy):
        x, t = self.saved_input(0, self.x), self.saved_input(1, self.t)
        g = gy if self.w is None else gy * self.saved_input(2, self.w)
        gx = g * (x - t) / ((1 - x) * x).clamp(min=1e-12) if self.needs_input_grad[0] else None
        gt = g * ((-x).log1p() - x.log()) if self.needs_input_grad[1] else None
        return gx, gt, None


_BCE_UNSAFE = ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
               "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
               "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
               "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
               "safe to autocast.")


def _check_expandable(weight, shape):
    """PyTorch's error where binary_cross_entropy's ``weight`` does not broadcast to the input's shape."""
    for k in range(1, min(weight.ndim, len(shape)) + 1):
        if weight.shape[-k] not in (1, shape[-k]):
            raise RuntimeError(f"Attempting to broadcast a dimension of length {weight.shape[-k]} at {-k}! "
                               f"Mismatching argument at index 1 had {weight.shape}; but expected shape should "
                               f"be broadcastable to {list(shape)}")
    if weight.ndim > len(shape):
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(weight.shape[:weight.ndim - len(shape)]) + list(shape)}")


@autocast_mode.policy(cpu=autocast_mode.FLOAT32, cuda=autocast_mode.refusal(_BCE_UNSAFE))
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross-entropy of probabilities ``input`` (``weight`` is a constant rescaling)."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    if weight is not None:
        _check_expandable(weight, input.shape)
    dt = input.dtype
    fn = _BCE()
    return _reduce(fn(input, target.to(dt), None if weight is None else weight.to(dt)), reduction)


class _BCEWithLogits(Function):
    """(1 - t) x + (1 + (pw - 1) t) softplus(-x), times w: log-sigmoid without overflow."""

    def forward(self, x, t, w, pw):
        xp = xp_of(x)
        self.x, self.t, self.w, self.pw = x, t, w, pw
        self.sp = _softplus(xp, -x)
        if pw is None:
            loss = (1 - t) * x + self.sp
        else:
            loss = (1 - t) * x + (1 + (pw - 1) * t) * self.sp
        return loss if w is None else loss * w

    def backward(self, gy):
        xp, x, t, pw = xp_of(gy), self.x, self.t, self.pw
        g = gy if self.w is None else gy * self.w
        gx = gt = None
        if self.needs_input_grad[0]:
            s = _sigmoid(xp, x)
            gx = g * (s - t) if pw is None else g * ((1 + (pw - 1) * t) * s - pw * t)
        if self.needs_input_grad[1]:
            gt = g * (-x) if pw is None else g * ((pw - 1) * self.sp - x)
        return gx, gt, None, None

    def backward_tensors(self, gy):
        x, t = self.saved_input(0, self.x), self.saved_input(1, self.t)
        pw = None if self.pw is None else self.saved_input(3, self.pw)
        g = gy if self.w is None else gy * self.saved_input(2, self.w)
        gx = gt = None
        if self.needs_input_grad[0]:
            s = x.sigmoid()
            gx = g * (s - t) if pw is None else g * ((1 + (pw - 1) * t) * s - pw * t)
        if self.needs_input_grad[1]:
            gt = g * (-x) if pw is None else g * ((pw - 1) * -logsigmoid(x) - x)
        return gx, gt, None, None


@autocast_mode.float32("cpu", "cuda")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Sigmoid + binary cross-entropy in one stable step; ``pos_weight`` weighs positive targets."""
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    if pos_weight is not None:
        _ew.check_broadcast(pos_weight, input)
    if weight is not None:
        _ew.check_broadcast(input, weight)
    dt = input.dtype
    w = None if weight is None else weight.to(dt)
    pw = None if pos_weight is None else pos_weight.to(dt)
    loss = _reduce(_BCEWithLogits()(input, target.to(dt), w, pw), reduction)
    # torch's kernel computes in place on a tensor made from the target: the loss has the target's floating type
    return loss.to(target.dtype) if target.dtype.is_floating_point else loss


# ---- class-index losses: nll_loss and cross_entropy ------------------------------------------------
class _ClassLoss(Function):
    """Weighted NLL over class dim 1, from log-probabilities or (fused) from logits with label smoothing.

    Per element n (not ignored): loss_n = -sum_c A[n, c] logp[n, c] with
    A = (1 - eps) w[t_n] onehot(t_n) + (eps / C) w; the mean divides by sum_n w[t_n].
    """

    uses_inputs = False

    def __init__(self, reduction, ignore_index, smoothing, from_logits):
        self.reduction, self.ignore_index = reduction, ignore_index
        self.eps, self.from_logits = smoothing, from_logits

    def forward(self, x, t, w):
        xp = xp_of(x)
        self.unbatched = x.ndim == 1
        self.x = x  # for the differentiable backward (create_graph)
        if self.unbatched:
            x, t = x[None], t[None]
        self.x_shape, n_class = x.shape, x.shape[1]
        valid = t != self.ignore_index
        bad = valid & ((t < 0) | (t >= n_class))
        if not backends.runtime(t).capturing() and bad.any():  # a CUDA graph capture cannot read values
            raise IndexError(f"Target {int(t[bad].ravel()[0])} is out of bounds.")
        tc = xp.where(valid, t, 0)
        logp = log_softmax_array(xp, x, 1) if self.from_logits else x
        # an ignored element adds nothing, even where its log-probabilities are infinite or NaN
        picked = xp.where(valid, xp.take_along_axis(logp, tc[:, None], axis=1)[:, 0], 0)
        wt = valid.astype(x.dtype) if w is None else xp.where(valid, cast(w, x.dtype)[tc], 0).astype(x.dtype)
        loss = picked * wt
        loss *= -(1 - self.eps)
        self.wb = None if w is None else cast(w, x.dtype).reshape((1, n_class) + (1,) * (x.ndim - 2))
        if self.eps:
            smooth = -(logp if w is None else logp * self.wb).sum(axis=1)
            loss += (self.eps / n_class) * xp.where(valid, smooth, 0)
        self.valid, self.tc, self.wt, self.logp = valid, tc, wt, logp
        if self.reduction == "none":
            return loss[0] if self.unbatched else loss
        total = loss.sum()
        if self.reduction == "sum":
            return xp.asarray(total, dtype=x.dtype)
        self.total_weight = wt.sum()
        with np.errstate(invalid="ignore"):  # all targets ignored: nan, like PyTorch
            return xp.asarray(total / self.total_weight, dtype=x.dtype)

    def backward(self, gy):
        xp, n_class = xp_of(gy), self.x_shape[1]
        if self.reduction == "none":
            g = gy[None] if self.unbatched else gy
        elif self.reduction == "sum":
            g = xp.broadcast_to(gy, self.wt.shape)
        else:
            tw = self.total_weight
            g = xp.broadcast_to(gy / xp.where(tw != 0, tw, 1) * (tw != 0), self.wt.shape)  # 0 where tw is 0
        classes = xp.arange(n_class).reshape((1, n_class) + (1,) * (len(self.x_shape) - 2))
        hit = self.tc[:, None] == classes
        gx = hit * ((self.eps - 1) * g * self.wt)[:, None]
        if self.eps:
            spread = (-self.eps / n_class) * (g * self.valid)[:, None]
            gx += spread if self.wb is None else spread * self.wb
        if self.from_logits:
            # d/dlogits of -sum_c A logp = softmax * sum_c A - A
            sum_a = (1 - self.eps) * self.wt
            if self.eps:
                w_sum = n_class if self.wb is None else self.wb.sum()
                sum_a = sum_a + (self.eps / n_class) * w_sum * self.valid
            gx += xp.exp(self.logp) * (g * sum_a)[:, None]
        gx = gx.astype(self.logp.dtype, copy=False)
        return (gx[0] if self.unbatched else gx), None, None

    def backward_tensors(self, gy):
        xp, n_class = xp_of(gy._data), self.x_shape[1]
        dtype = self.logp.dtype
        if self.reduction == "none":
            g = gy[None] if self.unbatched else gy
        elif self.reduction == "sum":
            g = gy.expand(self.wt.shape)
        else:
            tw = self.total_weight
            g = (gy * float(1 / tw if tw != 0 else 0)).expand(self.wt.shape)
        classes = xp.arange(n_class).reshape((1, n_class) + (1,) * (len(self.x_shape) - 2))
        hit = (self.tc[:, None] == classes).astype(dtype)
        gx = constant(hit) * (g * constant(((self.eps - 1) * self.wt).astype(dtype))).unsqueeze(1)
        if self.eps:
            spread = (g * constant(((-self.eps / n_class) * self.valid).astype(dtype))).unsqueeze(1)
            gx = gx + (spread if self.wb is None else spread * constant(self.wb))
        if self.from_logits:
            sum_a = (1 - self.eps) * self.wt
            if self.eps:
                w_sum = n_class if self.wb is None else self.wb.sum()
                sum_a = sum_a + (self.eps / n_class) * w_sum * self.valid
            x = self.saved_input(0, self.x)
            p = (x.unsqueeze(0) if self.unbatched else x).softmax(1)
            gx = gx + p * (g * constant(sum_a.astype(dtype))).unsqueeze(1)
        return (gx[0] if self.unbatched else gx), None, None


def _check_class_target(input, target, weight, ignore_index):
    """PyTorch's checks for (N, C, d...) inputs with (N, d...) integer targets; returns the target (a (1,)
    target of a (C,) input as the 0-dim one it stands for)."""
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    if target.dtype not in (_dtype.int64, _dtype.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {target.dtype.title}")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.title} but found {weight.dtype.title}")
    if input.ndim > 2 and target.dtype is _dtype.uint8 and target.numel():  # the spatial kernel takes Long only
        raise RuntimeError("expected scalar type Long but found Byte")
    if input.ndim == 1:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if target.ndim == 1:
            if target.shape[0] != 1:
                raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                                 f"{target.shape[0]}")
            target = target.reshape(())
    elif input.ndim == 2 and target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    elif target.ndim == 0 or input.shape[0] != target.shape[0]:
        got = target.shape[0] if target.ndim else 0
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({got}).")
    elif input.ndim == 4 and target.ndim != 3:  # PyTorch's 2-d spatial kernel has its own messages
        raise RuntimeError(f"only batches of spatial targets supported (3D tensors) but got targets of "
                           f"dimension: {target.ndim}")
    elif input.ndim == 4 and tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"size mismatch (got input: {list(input.shape)} , target: {list(target.shape)}")
    elif input.ndim > 2 and tuple(target.shape) != (input.shape[0],) + tuple(input.shape[2:]):
        want = [input.shape[0]] + list(input.shape[2:])
        raise RuntimeError(f"Expected target size {want}, got {list(target.shape)}")
    n_class = input.shape[1] if input.ndim > 1 else input.shape[0]
    if weight is not None and weight.numel() != n_class:
        raise RuntimeError(f"weight tensor should be defined either for all {n_class} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")
    return target


@autocast_mode.float32("cpu", "cuda")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities ``input`` (N, C, d...) at class indices ``target``."""
    reduction = _reduction(size_average, reduce, reduction)
    target = _check_class_target(input, target, weight, ignore_index)
    return _ClassLoss(reduction, ignore_index, 0.0, False)(input, target, weight)


class _SoftTargetCE(Function):
    """-sum_c w_c t'_c log_softmax(x)_c with t' = (1 - eps) t + eps / C (class probabilities)."""

    uses_inputs = False

    def __init__(self, reduction, smoothing):
        self.reduction, self.eps = reduction, smoothing

    def forward(self, x, t, w):
        xp = xp_of(x)
        self.inputs = x, t, w
        self.unbatched = x.ndim == 1
        if self.unbatched:
            x, t = x[None], t[None]
        n_class = x.shape[1]
        self.logp = log_softmax_array(xp, x, 1)
        self.ts = t * (1 - self.eps) + self.eps / n_class if self.eps else t
        self.wb = None if w is None else w.reshape((1, n_class) + (1,) * (x.ndim - 2))
        self.a = self.ts if w is None else self.ts * self.wb
        loss = -(self.logp * self.a).sum(axis=1)
        if self.reduction == "none":
            return loss[0] if self.unbatched else loss
        self.count = loss.size
        total = loss.sum()
        return xp.asarray(total if self.reduction == "sum" else total / self.count, dtype=x.dtype)

    def backward(self, gy):
        xp = xp_of(gy)
        if self.reduction == "none":
            g = (gy[None] if self.unbatched else gy)[:, None]
        else:
            g = gy / self.count if self.reduction == "mean" else gy
        squeeze = (lambda a: a[0]) if self.unbatched else (lambda a: a)
        gx = gt = gw = None
        if self.needs_input_grad[0]:
            gx = squeeze(g * (xp.exp(self.logp) * self.a.sum(axis=1, keepdims=True) - self.a))
        if self.needs_input_grad[1]:
            d = -(1 - self.eps) * self.logp
            gt = squeeze(g * (d if self.wb is None else d * self.wb))
        if len(self.needs_input_grad) > 2 and self.needs_input_grad[2]:
            contrib = -(g * self.ts * self.logp)
            gw = contrib.sum(axis=tuple(i for i in range(contrib.ndim) if i != 1))
        return gx, gt, gw

    def backward_tensors(self, gy):
        return recomputed_backward(self, self._loss, self.inputs, gy)

    def _loss(self, x, t, w):
        """The loss as engine ops (for the differentiable backward)."""
        if self.unbatched:
            x, t = x.unsqueeze(0), t.unsqueeze(0)
        a = t * (1 - self.eps) + self.eps / x.shape[1] if self.eps else t
        if w is not None:
            a = a * w.reshape((1, x.shape[1]) + (1,) * (x.ndim - 2))
        loss = -(log_softmax(x, 1) * a).sum(1)
        if self.reduction == "none":
            return loss[0] if self.unbatched else loss
        return loss.sum() if self.reduction == "sum" else loss.sum() / self.count


@autocast_mode.float32("cpu", "cuda")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax + NLL fused; class-index targets (N, d...) or class-probability targets (as input)."""
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if input.ndim >= 1 and target.shape == input.shape:
        if not target.dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class probabilities, "
                               f"got {target.dtype.title}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        n_class = input.shape[1] if input.ndim > 1 else input.shape[0]
        if weight is not None and weight.numel() != n_class:
            raise RuntimeError(f"weight tensor should be defined either for all {n_class} classes or no "
                               f"classes but got weight tensor of shape: {list(weight.shape)}")
        # the loss is -(log_softmax(input) * target * weight).sum(1) in PyTorch: its type is the three's promotion
        dt = _dtype.promote_types(input.dtype, target.dtype)
        if weight is not None:
            dt = _dtype.promote_types(dt, weight.dtype)
        w = None if weight is None else weight.to(dt)
        return _SoftTargetCE(reduction, float(label_smoothing))(input.to(dt), target.to(dt), w)
    target = _check_class_target(input, target, weight, ignore_index)
    return _ClassLoss(reduction, ignore_index, float(label_smoothing), True)(input, target, weight)


# ---- divergences and other losses -----------------------------------------------------------
class _KLDiv(Function):
    """t (log t - x), or exp(t) (t - x) when the target is given as log-probabilities."""

    def __init__(self, log_target):
        self.log_target = log_target

    def forward(self, x, t):
        xp = xp_of(x, t)
        self.x, self.t = x, t
        if self.log_target:
            self.et = xp.exp(t)
            return self.et * (t - x)
        with np.errstate(divide="ignore", invalid="ignore"):  # a target below 0 gives NaN, as torch's xlogy
            return xp.where(t == 0, 0, t * xp.log(t)).astype(t.dtype, copy=False) - t * x

    def backward(self, gy):
        xp, x, t = xp_of(gy), self.x, self.t
        gx = gt = None
        if self.needs_input_grad[0]:
            gx = -gy * (self.et if self.log_target else t)
        if self.needs_input_grad[1]:
            if self.log_target:
                gt = gy * self.et * (t - x + 1)
            else:  # log t + t / t: NaN at t == 0 as in PyTorch (the derivative of xlogy(t, t) there)
                with np.errstate(divide="ignore", invalid="ignore"):
                    gt = gy * (xp.log(t) + t / t - x)
        return gx, gt

    def backward_tensors(self, gy):
        x, t = self.saved_input(0, self.x), self.saved_input(1, self.t)
        et = t.exp() if self.log_target else t
        gx = -gy * et if self.needs_input_grad[0] else None
        gt = None
        if self.needs_input_grad[1]:
            gt = gy * et * (t - x + 1) if self.log_target else gy * (t.log() + t / t - x)
        return gx, gt


@autocast_mode.float32("cpu", "cuda")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence with ``input`` as log-probabilities; 'batchmean' divides by N."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support "
                      "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                      "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                      "major release.", stacklevel=2)
    if reduction not in _REDUCTIONS + ("batchmean",):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    input, target = as_operand(input), as_operand(target, like=input)
    _ew.check_broadcast(target, input)
    dt = float_dtype(result_dtype(input, target))
    loss = _KLDiv(log_target)(input.to(dt), target.to(dt))
    if reduction == "batchmean":
        total = _reduce(loss, "sum")
        return _ew.div(total, input.shape[0]) if input.ndim else total
    return _reduce(loss, reduction)


class _SoftMargin(Function):
    """log(1 + exp(-t x)); the target is not differentiable (as in PyTorch)."""

    def forward(self, x, t):
        xp = xp_of(x)
        self.x, self.t = x, t
        return _softplus(xp, -t * x)

    def backward(self, gy):
        return -gy * self.t * _sigmoid(xp_of(gy), -self.t * self.x), None

    def backward_tensors(self, gy):
        t = constant(self.t)
        return -gy * t * (-t * self.saved_input(0, self.x)).sigmoid(), None


@autocast_mode.float32("cpu", "cuda")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    _ew.check_broadcast(input, target)
    return _reduce(_SoftMargin()(input, target.to(input.dtype)), reduction)


@autocast_mode.float32("cpu", "cuda")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """exp(x) - t x (log_input) or x - t log(x + eps), plus Stirling's term for t > 1 when ``full``."""
    reduction = _reduction(size_average, reduce, reduction)
    if log_input:
        loss = _ew.sub(_ew.exp(input), _ew.mul(target, input))
    else:
        loss = _ew.sub(input, _ew.mul(target, _ew.log(_ew.add(input, eps))))
    if full:
        stirling = _ew.add(_ew.sub(_ew.mul(target, _ew.log(target)), target),
                           _ew.mul(_ew.log(_ew.mul(target, 2 * math.pi)), 0.5))
        loss = _ew.add(loss, _ew.where(_ew.gt(target, 1), stirling, 0.0))
    return _reduce(loss, reduction)


@autocast_mode.float32("cpu", "cuda")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -y (x1 - x2) + margin)."""
    reduction = _reduction(size_average, reduce, reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got "
                           f"sizes: input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    z = _ew.add(_ew.mul(_ew.neg(target), _ew.sub(input1, input2)), margin)
    return _reduce(_ew.clamp(z, min=0), reduction)


@autocast_mode.float32("cpu", "cuda")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where y == 1, max(0, margin - x) where y == -1."""
    reduction = _reduction(size_average, reduce, reduction)
    _ew.check_broadcast(target, input)
    zero = _ew.mul(input, 0.0)
    below = _ew.where(_ew.ne(target, 1), _ew.clamp(_ew.sub(margin, input), min=0), zero)
    above = _ew.where(_ew.ne(target, -1), input, zero)
    return _reduce(_ew.add(below, above), reduction)


@autocast_mode.float32("cpu", "cuda")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where y == 1, max(0, cos(x1, x2) - margin) where y == -1."""
    reduction = _reduction(size_average, reduce, reduction)
    sizes = f"{list(input1.shape)} and {list(input2.shape)}"
    if target.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.ndim == 1 and not input1.ndim == input2.ndim == 2:
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes {sizes}.")
    if target.ndim == 0 and not input1.ndim == input2.ndim == 1:
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes {sizes}.")
    _ew.check_broadcast(input1, input2)
    dim = input1.ndim - 1
    if input1.shape == input2.shape:
        cos = _cosine_embedding(input1, input2, dim)
    else:  # PyTorch broadcasts the product only: each squared norm sums its own input's elements
        squares = _ew.mul(_ew.add(_ew.mul(input1, input1).sum(dim), 1e-12),
                          _ew.add(_ew.mul(input2, input2).sum(dim), 1e-12))
        cos = _ew.div(_ew.mul(input1, input2).sum(dim), _ew.sqrt(squares))
    _ew.check_broadcast(target, cos)
    zero = _ew.mul(cos, 0.0)
    pos = _ew.where(_ew.eq(target, 1), _ew.sub(1.0, cos), zero)
    neg = _ew.where(_ew.eq(target, -1), _ew.clamp(_ew.sub(cos, margin), min=0), zero)
    return _reduce(_ew.add(pos, neg), reduction)


def _check_triplet(anchor, positive, negative, margin):
    """torch's checks of the triplet losses: a positive margin, inputs of one rank."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same "
                           f"number of dimensions, but got: anchor {anchor.ndim}D, positive "
                           f"{positive.ndim}D, and negative {negative.ndim}D inputs")


@autocast_mode.float32("cpu", "cuda")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, d(a, p) - d(a, n) + margin) with p-norm distances (``swap``: use min(d(a,n), d(p,n)))."""
    reduction = _reduction(size_average, reduce, reduction)
    _check_triplet(anchor, positive, negative, margin)
    _ew.check_broadcast(anchor, positive)
    _ew.check_broadcast(anchor, negative)
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ew.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_ew.clamp(_ew.add(_ew.sub(d_pos, d_neg), margin), min=0), reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(var) + (input - target)^2 / var), plus 0.5 log(2 pi) when ``full``.

    ``var`` is input's shape, or lacks its last dim, or differs from it in one dim where it is 1 (one
    variance shared along that dim), or is a float. It is clamped at ``eps`` for its value only: the
    gradient passes the clamp unchanged, as in PyTorch.
    """
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = full_like(input, var)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif input.ndim != var.ndim or sum(v for i, v in zip(input.shape, var.shape) if i != v) != 1:
            raise ValueError("var is of incorrect size")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    raw = var.detach()
    var = _ew.add(var, _ew.sub(_ew.clamp(raw, min=eps), raw))
    loss = _ew.mul(_ew.add(_ew.log(var), _ew.div(_ew.pow(_ew.sub(input, target), 2), var)), 0.5)
    if full:
        loss = _ew.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)


def _margin_batch(input, target):
    """The (C) or (N, C) ``input`` and its int64 ``target`` with a batch dim added where it had none."""
    if input.ndim not in (1, 2) or (input.ndim == 1 and input.numel() == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if target.dtype is not _dtype.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.title}")
    if input.ndim == 2:
        return input, target
    return input.unsqueeze(0), target.unsqueeze(0)


def _margin_reduce(loss, reduction, unbatched):
    """Per-sample losses (N,) reduced; the mean over no samples is 0, as in PyTorch's margin kernels."""
    if reduction == "none":
        return loss.squeeze(0) if unbatched else loss
    total = _Reduce(False)(loss)
    if reduction == "sum":
        return total
    return _ew.div(total, max(loss.shape[0], 1))


@autocast_mode.float32("cpu", "cuda")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """Multi-class hinge loss of sample n: sum over i != y of w[y] max(0, margin - x[y] + x[i])^p, over C."""
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x, t = _margin_batch(input, target)
    n, n_class = x.shape
    if tuple(t.shape) != (n,):
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of "
                           f"input samples (batch size). Expected target size [{n}], but got "
                           f"{list(target.shape)}. Input has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != n_class:
        raise RuntimeError(f"inconsistent weight size, expected {n_class} but got {list(weight.shape)}")
    check_same_device(input, target, weight)
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= n_class):
        raise RuntimeError("target out of range")
    picked = x.gather(1, t.unsqueeze(1))
    hinge = _ew.pow(_ew.clamp(_ew.add(_ew.sub(x, picked), margin), min=0), p)
    others = _ew.ne(t.unsqueeze(1), arange(n_class, device=t.device))
    hinge = _ew.where(others, hinge, 0.0)
    if weight is not None:
        hinge = _ew.mul(hinge, weight.to(x.dtype)[t].unsqueeze(1))
    return _margin_reduce(_ew.div(hinge.sum(dim=1), n_class), reduction, input.ndim == 1)


@autocast_mode.float32("cpu", "cuda")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: the target row lists class indices up to its first -1; sample n's loss is
    the sum over listed j and unlisted i of max(0, 1 - (x[j] - x[i])), over C."""
    reduction = _reduction(size_average, reduce, reduction)
    x, t = _margin_batch(input, target)
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    n_class = x.shape[1]
    listed = _ew.eq(_ew.eq(t, -1).cumsum(1), 0)
    tc = _ew.where(listed, t, 0)
    if bool(_ew.logical_and(listed, _ew.logical_or(_ew.lt(t, 0), _ew.ge(t, n_class))).any()):
        raise RuntimeError("argument #2 'target' is out of range")
    hit = _ew.logical_and(listed.unsqueeze(2), _ew.eq(tc.unsqueeze(2), arange(n_class, device=t.device)))
    negatives = _ew.logical_not(hit.any(dim=1))
    pairs = _ew.logical_and(listed.unsqueeze(2), negatives.unsqueeze(1))
    hinge = _ew.clamp(_ew.add(_ew.sub(x.unsqueeze(1), x.gather(1, tc).unsqueeze(2)), 1.0), min=0)
    per_sample = _ew.where(pairs, hinge, 0.0).sum(dim=(1, 2))
    return _margin_reduce(_ew.div(per_sample, n_class), reduction, input.ndim == 1)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-class binary logistic loss averaged over the classes, optionally weighted.

    The classes are the input's last dim, counted from the front of the (broadcast) loss as in PyTorch: a
    (C,) input with an (N, C) target sums over dim 0.
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input.ndim == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    loss = _ew.neg(_ew.add(_ew.mul(target, logsigmoid(input)),
                           _ew.mul(_ew.sub(1, target), logsigmoid(_ew.neg(input)))))
    if weight is not None:
        loss = _ew.mul(loss, weight)
    class_dim = input.ndim - 1
    return _reduce(_ew.div(loss.sum(dim=class_dim), input.shape[class_dim]), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)) with any differentiable ``distance_function`` (default: the
    pairwise 2-norm distance); ``swap`` uses min(d(a, n), d(p, n)) as the negative distance."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    _check_triplet(anchor, positive, negative, margin)
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = _ew.minimum(d_neg, distance(positive, negative))
    return _reduce(_ew.clamp(_ew.sub(_ew.add(d_pos, margin), d_neg), min=0), reduction)


__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "nll_loss", "cross_entropy", "kl_div",
           "soft_margin_loss", "poisson_nll_loss", "margin_ranking_loss", "hinge_embedding_loss",
           "cosine_embedding_loss", "triplet_margin_loss", "gaussian_nll_loss", "multi_margin_loss",
           "multilabel_margin_loss", "multilabel_soft_margin_loss", "triplet_margin_with_distance_loss"]
