"""``nn.TransformerEncoderLayer`` and ``nn.TransformerEncoder`` (Vaswani et al. 2017, "Attention Is All You
Need"; ``norm_first`` is the pre-norm variant of Xiong et al. 2020) with PyTorch's arguments and names.

PyTorch's inference fast paths (fused kernels, nested tensors) compute the same values in other ways;
one difference shows: with ``enable_nested_tensor`` and a key padding mask in eval mode, PyTorch
returns zeros at padded positions, while this encoder returns their computed values (as PyTorch
does in training mode or with gradients enabled).
"""
import copy

from ... import ops
from .. import functional as F
from ..functional.attention import _canonical_mask
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


def _activation_fn(activation):
    """``"relu"``/``"gelu"`` as their functions; callables pass through."""
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _square_subsequent_mask(size, device=None, dtype=None):
    """(size, size) float mask: -inf above the diagonal (future positions), 0 elsewhere."""
    return ops.full((size, size), float("-inf"), dtype=dtype, device=device).triu(diagonal=1)


def _is_causal_mask(mask, is_causal, size):
    """Whether ``mask`` is the causal mask (when ``is_causal`` is None), so attention may skip reading it."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    causal = _square_subsequent_mask(size, device=mask.device, dtype=mask.dtype)
    return tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())


class TransformerEncoderLayer(Module):
    """Self-attention and a two-layer feed-forward block, each with dropout, a residual and a LayerNorm.

    Post-norm (``norm_first=False``): x = norm(x + block(x)); pre-norm: x = x + block(norm(x)).
    ``activation`` is ``"relu"``, ``"gelu"`` or any callable (a function or a module).
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _activation_fn(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """``src`` (S, N, E), (N, S, E) with ``batch_first``, or (S, E); masks as in MultiheadAttention."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear1(x)
        x = self.activation(x)
        x = self.dropout(x)
        x = self.linear2(x)
        return self.dropout2(x)


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (independent parameters, equal at the start), then ``norm``.

    ``enable_nested_tensor`` and ``mask_check`` are accepted for PyTorch compatibility; engine has no
    nested tensors (see the module docstring for the one visible consequence).
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """Run the layers in turn; ``is_causal=None`` detects whether ``mask`` is the causal mask."""
        batch_first = self.layers[0].self_attn.batch_first if self.num_layers else False
        seq_len = src.shape[0] if src.dim() == 2 else src.shape[1 if batch_first else 0]
        mask = _canonical_mask(mask, "mask", src.dtype)
        is_causal = _is_causal_mask(mask, is_causal, seq_len)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


__all__ = ["TransformerEncoderLayer", "TransformerEncoder"]
