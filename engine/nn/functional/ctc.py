"""``ctc_loss``: connectionist temporal classification, the loss of unsegmented sequence labelling (speech, OCR).

Each sample's loss is minus the log-probability of its target summed over every alignment of the target with
the input frames (the labels with blanks between them, repeats collapsed), computed by torch's log-space
alpha/beta recursions over the extended labels (blank, l1, blank, l2, ..., blank), one step per frame and
vectorised over the batch and the extended positions, on numpy and CuPy alike. The gradient is torch's:
``exp(log_probs)`` minus each label's posterior at each frame, which is the gradient with respect to the logits
of a ``log_softmax`` (torch assumes log_probs come from one); zero past each input length, NaN for an impossible
target (an infinite loss) unless ``zero_infinity``, which zeroes its loss and gradient.
"""
import numpy as np

from ... import _dtype
from ...amp import autocast_mode
from ...autograd.function import Function
from ...ops._common import xp_of
from ...tensor import Tensor, _new
from .loss import _reduction

_CHECKING = " (while checking arguments for ctc_loss_allocate_outputs)"


def _logsumexp3(xp, a, b, c):
    """log(exp(a) + exp(b) + exp(c)) elementwise, -inf where all three are -inf."""
    m = xp.maximum(xp.maximum(a, b), c)
    m = xp.where(m == -np.inf, 0, m)
    return xp.log(xp.exp(a - m) + xp.exp(b - m) + xp.exp(c - m)) + m


def _shift(xp, x, k):
    """x[:, s - k] at position s (k > 0) or x[:, s + |k|] (k < 0), -inf where that is outside."""
    out = xp.full_like(x, -np.inf)
    if k > 0:
        out[:, k:] = x[:, :x.shape[1] - k]
    else:
        out[:, :x.shape[1] + k] = x[:, -k:]
    return out


class CTC(Function):
    """Per-sample CTC losses (N,) of log_probs (T, N, C) for extended labels ``ext`` (N, 2 * L + 1)."""

    def __init__(self, ext, input_lengths, target_lengths, steps, zero_infinity):
        self.ext, self.il, self.tl, self.zero_infinity = ext, input_lengths, target_lengths, zero_infinity
        self.steps = steps  # frames any sample reads: max(input_lengths)

    def forward(self, log_probs):
        xp = xp_of(log_probs)
        ext, il, tl = self.ext, self.il, self.tl
        rows = xp.arange(ext.shape[0])
        emit = log_probs[:, rows[:, None], ext]  # (T, N, K): each extended position's log-probability
        skip = xp.zeros(ext.shape, bool)  # a label may follow the one two positions back (not a blank or repeat)
        skip[:, 2:] = ext[:, 2:] != ext[:, :-2]
        alpha = xp.full(emit.shape, -np.inf, emit.dtype)
        alpha[0, :, :2] = emit[0, :, :2]
        with np.errstate(divide="ignore", invalid="ignore"):
            for t in range(1, self.steps):
                prev = alpha[t - 1]
                alpha[t] = emit[t] + _logsumexp3(xp, prev, _shift(xp, prev, 1),
                                                 xp.where(skip, _shift(xp, prev, 2), -np.inf))
            last = alpha[xp.maximum(il - 1, 0), rows]
            end = last[rows, 2 * tl]
            before = xp.where(tl > 0, last[rows, xp.maximum(2 * tl - 1, 0)], -np.inf)
            ll = _logsumexp3(xp, end, before, xp.full_like(end, -np.inf))
        ll = xp.where(il == 0, xp.where(tl == 0, 0, -np.inf), ll).astype(log_probs.dtype)
        self.log_probs, self.emit, self.alpha, self.skip, self.ll = log_probs, emit, alpha, skip, ll
        nll = -ll
        return xp.where(nll == np.inf, 0, nll) if self.zero_infinity else nll

    def _beta(self, xp):
        """Log-probabilities of the alignments' endings from each (frame, position), its emission included."""
        emit, il, tl = self.emit, self.il[:, None], self.tl[:, None]
        pos = xp.arange(emit.shape[2])[None]
        is_end = (pos == 2 * tl) | (pos == 2 * tl - 1)
        skip = xp.zeros_like(self.skip)  # the position two ahead may be skipped to
        skip[:, :-2] = self.skip[:, 2:]
        beta = xp.full(emit.shape, -np.inf, emit.dtype)
        nxt = xp.full(emit.shape[1:], -np.inf, emit.dtype)  # beta past the last frame read
        for t in range(self.steps - 1, -1, -1):
            rec = emit[t] + _logsumexp3(xp, nxt, _shift(xp, nxt, -1), xp.where(skip, _shift(xp, nxt, -2), -np.inf))
            beta[t] = xp.where(t == il - 1, xp.where(is_end, emit[t], -np.inf), xp.where(t < il - 1, rec, -np.inf))
            nxt = beta[t]
        return beta

    def backward(self, gy):
        xp = xp_of(gy)
        lp, emit, ll, ext = self.log_probs, self.emit, self.ll, self.ext
        steps, n, c = lp.shape
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            beta = self._beta(xp)
            through = xp.where(emit == -np.inf, -np.inf, self.alpha + beta - emit)  # paths through (t, s)
            # torch's quirk: on a sample's last frame a last label equal to the blank hides the final blank
            rows, il, tl = xp.arange(n), xp.maximum(self.il - 1, 0), self.tl
            hidden = (tl > 0) & (ext[rows, xp.maximum(2 * tl - 1, 0)] == ext[rows, 2 * tl])
            through[il, rows, 2 * tl] = xp.where(hidden, -np.inf, through[il, rows, 2 * tl])
            top = through.max(axis=2, keepdims=True)
            top = xp.where(top == -np.inf, 0, top)
            cell = (xp.arange(steps)[:, None, None] * n + xp.arange(n)[None, :, None]) * c + ext[None]
            mass = xp.bincount(cell.ravel(), weights=xp.exp(through - top).ravel().astype(np.float64),
                               minlength=steps * n * c).reshape(lp.shape).astype(lp.dtype)
            grad = xp.exp(lp) - mass * xp.exp(top - ll[None, :, None])
        grad = xp.where(lp == -np.inf, np.nan, grad) * gy[None, :, None]  # torch's exp(-inf - -inf): NaN
        impossible = (ll == -np.inf)[None, :, None]
        grad = xp.where(impossible, 0 if self.zero_infinity else np.nan, grad)
        return xp.where(xp.arange(steps)[:, None, None] < self.il[None, :, None], grad, 0).astype(lp.dtype)


def _lengths(value, name):
    """Lengths as a list of ints, from a tensor (flattened, integral) or a sequence of ints."""
    if isinstance(value, Tensor):
        if value.dtype.is_floating_point or value.dtype.is_complex or value.dtype is _dtype.bool_:
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in value.detach().reshape(-1).tolist()]
    try:
        return [int(v) for v in value]
    except TypeError:
        raise TypeError(f"ctc_loss(): {name} must be a tensor or a tuple of ints, not {type(value).__name__}") \
            from None


def _checked(log_probs, targets, il, tl, blank):
    """torch's argument checks, in torch's order."""
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    if log_probs.dtype not in (_dtype.float32, _dtype.float64):
        raise NotImplementedError(f"\"ctc_loss_{log_probs.device.type}\" not implemented for "
                                  f"'{log_probs.dtype.title}'")
    if log_probs.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim()}-dimensional tensor for "
                           f"argument #1 'log_probs'{_CHECKING}")
    if not 1 <= targets.ndim <= 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional tensor for argument "
                           f"#2 'targets'{_CHECKING}")
    steps, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    for lengths, name in ((il, "input_lengths"), (tl, "target_lengths")):
        if len(lengths) != n:
            raise RuntimeError(f"{name} must be of size batch_size")
    for length in tl:
        if length < 0:
            raise RuntimeError(f"Expected target_lengths to have value at least 0, but got value {length}{_CHECKING}")
    expected = sum(tl) if targets.ndim == 1 else n
    if targets.shape[0] != expected:
        raise RuntimeError(f"Expected tensor to have size {expected} at dimension 0, but got size "
                           f"{targets.shape[0]} for argument #2 'targets'{_CHECKING}")
    if targets.ndim == 2 and targets.shape[1] < max(tl):
        raise RuntimeError(f"Expected tensor to have size at least {max(tl)} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets'{_CHECKING}")
    for length in il:
        if not 0 <= length <= steps:
            bound = "at least 0" if length < 0 else f"at most {steps}"
            raise RuntimeError(f"Expected input_lengths to have value {bound}, but got value {length}{_CHECKING}")


def _extended(xp, targets, tl, blank, classes):
    """The extended labels (N, 2 * max(tl) + 1): blanks at even positions, each target's labels at odd ones."""
    n, most = len(tl), max(tl)
    inside = np.arange(most)[None] < np.asarray(tl)[:, None]
    if targets.ndim == 1:  # concatenated: sample i's labels start after the labels of those before it
        starts = np.cumsum([0] + tl[:-1])[:, None]
        labels = targets[xp.asarray(np.where(inside, starts + np.arange(most)[None], 0))]
    else:
        labels = targets[:, :most]
    labels = xp.where(xp.asarray(inside), labels, blank)
    if labels.size and bool(((labels < 0) | (labels >= classes)).any()):
        bad = int(labels[(labels < 0) | (labels >= classes)][0])
        raise IndexError(f"ctc_loss(): target label {bad} is out of bounds for {classes} classes")
    ext = xp.full((n, 2 * most + 1), blank, np.int64)
    ext[:, 1::2] = labels
    return ext


@autocast_mode.float32("cpu", "cuda")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The CTC loss of log_probs (T, N, C) or (T, C) for targets padded (N, S) or concatenated, as torch's."""
    reduction = _reduction(None, None, reduction)
    if isinstance(input_lengths, Tensor) != isinstance(target_lengths, Tensor):
        raise TypeError("ctc_loss(): input_lengths and target_lengths must both be tensors or both tuples of ints")
    il, tl = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    batched = log_probs.dim() == 3
    if not batched:
        log_probs = log_probs.unsqueeze(1)
    xp = xp_of(log_probs._data)
    targets = xp.asarray(targets.detach().to(log_probs.device)._data if isinstance(targets, Tensor) else targets)
    _checked(log_probs, targets, il, tl, blank)
    ext = _extended(xp, targets.astype(np.int64), tl, blank, log_probs.shape[2])
    losses = CTC(ext, xp.asarray(np.array(il, np.int64)), xp.asarray(np.array(tl, np.int64)), max(il),
                     bool(zero_infinity))(log_probs)
    if reduction == "mean":
        return (losses / _new(xp.asarray(np.maximum(tl, 1), dtype=losses._data.dtype))).mean()
    if reduction == "sum":
        return losses.sum()
    return losses if batched else losses.squeeze(0)


__all__ = ["ctc_loss"]
