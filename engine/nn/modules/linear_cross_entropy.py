"""``nn.LinearCrossEntropyLoss`` (a Linear head fused with cross-entropy) and ``nn.LinearCrossEntropyOptions``,
the configuration that selects ``F.linear_cross_entropy``'s chunked path (torch 2.14)."""
import dataclasses
import math

from ... import _dtype
from .. import functional as F
from .linear import Linear
from .loss import _WeightedLoss

_ACC_POLICIES = ("auto", "accurate", "compact")
_HALF = (_dtype.float16, _dtype.bfloat16)


def _ceil_div(a, b):
    return -(-a // b)


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """How ``F.linear_cross_entropy`` chunks the batch; ``options=None`` there means the reference path.

    ``batch_chunk_size`` rows per chunk (``None``: one chunk, unless a heuristic picks). ``chunking_method``
    ``"auto"`` or ``"aspect_ratio[:N]"`` sizes chunks so a chunk's logits take about the input's memory
    (divided by N), ``None`` uses ``batch_chunk_size``. ``acc_policy`` and ``acc_dtype`` choose the
    accumulation precision (float32 for float16/bfloat16 inputs). ``allow_retain_graph`` keeps the
    precomputed gradients of the scalar reductions so that backward can run more than once.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}; expected one of "
                             f"{', '.join(map(repr, _ACC_POLICIES))}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, colon, factor = self.chunking_method.partition(":")
            factor = factor if colon else "1"
            if name != "aspect_ratio" or not factor.isdigit() or int(factor) < 1:
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if size is not None and not (isinstance(size, int) and size > 0):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        if self.acc_dtype is not None and self.acc_dtype not in (*_HALF, _dtype.float32, _dtype.float64):
            raise ValueError("acc_dtype must be one of {None, torch.float16, torch.bfloat16, torch.float32, "
                             f"torch.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op "
                             "pick automatically.")

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None, prob_target=False):
        """These options made concrete for one call: the policy, the chunk size and the accumulation dtype."""
        policy = self.acc_policy
        if policy == "auto":
            on_cpu = device is not None and device.type == "cpu"
            policy = "accurate" if on_cpu and dtype in _HALF else "compact"
        method = self.chunking_method
        auto = method == "auto"
        if auto:
            method = None if self.batch_chunk_size is not None else "aspect_ratio"
        size = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        if method is not None:
            factor = int(method.partition(":")[2] or 1)
            rows = _ceil_div(num_batches, _ceil_div(num_classes, in_features))
            size = min((1 << (rows - 1).bit_length()) // factor, num_batches)
            if auto and policy == "compact":  # never above the unchunked reference's memory
                cap = num_batches // 2 if prob_target else num_batches * num_classes // (4 * in_features)
                size = max(1, min(size, 1 << (cap.bit_length() - 1) if cap >= 1 else 1))
            if self.batch_chunk_size is not None and self.batch_chunk_size != size:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method ('{method}') "
                                 f"give different chunk sizes ({self.batch_chunk_size} vs {size}); pass only one.")
        acc = self.acc_dtype
        if acc is None:
            auto_acc = self.acc_policy == "auto" and dtype in _HALF and device is not None
            acc = _dtype.float32 if auto_acc else dtype
        return dataclasses.replace(self, acc_policy=policy, chunking_method=method,
                                   batch_chunk_size=max(1, size), acc_dtype=acc)


class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of a bias-optional Linear projection (weight stored flat as ``(C * prod(out_features),
    in_features)`` in ``self.linear``) against class indices or probabilities."""

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes, self.out_features = num_classes, out_features
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias, device=device,
                             dtype=dtype)
        self.options = options

    def forward(self, input, target):
        weight = self.linear.weight.reshape(self.num_classes, *self.out_features, self.linear.in_features)
        bias = self.linear.bias
        bias = None if bias is None else bias.reshape(self.num_classes, *self.out_features)
        return F.linear_cross_entropy(input, weight, target, linear_bias=bias, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]
