"""Causal attention biases for ``F.scaled_dot_product_attention``: ``causal_upper_left`` and
``causal_lower_right`` (PyTorch's ``torch.nn.attention.bias``).

A ``CausalBias`` is passed as ``attn_mask``; SDPA then hands the call to ``CausalBias._dispatch``.
Upper-left (query i sees keys j <= i) is SDPA's ``is_causal=True``; lower-right aligns the triangle to
the bottom-right corner (query i sees keys j <= i + S - L), which for L != S is applied as the
materialised boolean mask. Where L > S the first L - S query rows of a lower-right bias see no key: as
in PyTorch's math path their outputs (and gradients) are zeros.

Unlike PyTorch's, this ``CausalBias`` is not a Tensor subclass (the engine has no ``__torch_function__``);
``_materialize`` gives the boolean mask as a tensor.
"""
import enum
import warnings

from ... import ops
from ..._dtype import bool_ as _bool

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(enum.IntEnum):
    """Where the causal triangle is anchored: ``UPPER_LEFT`` (``tril`` of an (L, S) matrix of ones) or
    ``LOWER_RIGHT`` (``tril`` with diagonal S - L, the last query row seeing every key)."""
    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias:
    """A causal mask of ``seq_len_q`` x ``seq_len_kv`` held as its variant and lengths, not as data."""

    def __init__(self, variant, seq_len_q, seq_len_kv):
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn("Lower right causal bias will produce NaNs in the output when seq_len_q > seq_len_kv!",
                          stacklevel=2)

    def _upper_left(self, device):
        return ops.ones(self.seq_len_q, self.seq_len_kv, dtype=_bool, device=device).tril()

    def _lower_right(self, device):
        ones = ops.ones(self.seq_len_q, self.seq_len_kv, dtype=_bool, device=device)
        return ones.tril(self.seq_len_kv - self.seq_len_q)

    def _materialize(self, device=None):
        """The (seq_len_q, seq_len_kv) boolean mask (True = may attend), on ``device`` (default the CPU)."""
        device = "cpu" if device is None else device
        if self.variant == CausalVariant.UPPER_LEFT:
            return self._upper_left(device)
        return self._lower_right(device)

    @staticmethod
    def _dispatch(query, key, value, attn_mask, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        """SDPA with this bias as its mask: ``is_causal`` where the triangle is the upper-left one (or the
        lengths are equal), the materialised mask otherwise."""
        from ..functional.attention import scaled_dot_product_attention
        from . import WARN_FOR_UNFUSED_KERNELS  # its value now (users set it on the package)
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if attn_mask.seq_len_q == attn_mask.seq_len_kv or attn_mask.variant == CausalVariant.UPPER_LEFT:
            return scaled_dot_product_attention(query, key, value, None, dropout_p, True, scale, enable_gqa)
        if attn_mask.variant != CausalVariant.LOWER_RIGHT:
            raise ValueError(f"CausalBias.variant must be a CausalVariant type, but found: {attn_mask.variant}")
        if WARN_FOR_UNFUSED_KERNELS:
            warnings.warn("Efficient attention can't be used because: the engine has only the math kernel",
                          stacklevel=3)
            warnings.warn("Flash attention can't be used because: the engine has only the math kernel", stacklevel=3)
        mask = attn_mask._materialize(query.device)
        return scaled_dot_product_attention(query, key, value, mask, dropout_p, False, scale, enable_gqa)

    def __repr__(self):
        return repr(self._materialize())


def causal_upper_left(*size):
    """An upper-left causal bias of ``size`` (seq_len_q, seq_len_kv): SDPA's ``is_causal=True``."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    return CausalBias(CausalVariant.UPPER_LEFT, *size)


def causal_lower_right(*size):
    """A lower-right causal bias of ``size`` (seq_len_q, seq_len_kv): the triangle ends in the bottom-right
    corner, as when the queries are the last L of S positions (decoding with a cache)."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    return CausalBias(CausalVariant.LOWER_RIGHT, *size)
