"""``nn.Transformer`` and its encoder and decoder stacks and layers (Vaswani et al. 2017, "Attention Is All You
Need"; ``norm_first`` is the pre-norm variant of Xiong et al. 2020) with PyTorch's arguments and names.

PyTorch's inference fast paths (fused kernels, nested tensors) compute the same values in other ways;
where the results differ, these modules reproduce them: where PyTorch would run the stack on a nested
tensor (``enable_nested_tensor``, eval mode, no gradient needed, a left-aligned key padding mask and no
attention mask), the padded positions of ``TransformerEncoder``'s output are zeros (then the final
``norm``'s output for zeros), not the values computed there; where it would run an encoder layer on its
fused kernel, the layer reads its masks as booleans and a query row that sees no key is NaN.
"""
import copy

from ... import ops
from ...amp.autocast_mode import is_autocast_enabled
from ...autograd.grad_mode import is_grad_enabled
from .. import functional as F
from .. import init
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


def _sequence_length(layers, x):
    """The length of sequence x (unbatched (S, E), or batched as the stack's layers take it)."""
    batch_first = layers[0].self_attn.batch_first if len(layers) else False
    return x.shape[0] if x.dim() == 2 else x.shape[1 if batch_first else 0]


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
        """``src`` (S, N, E), (N, S, E) with ``batch_first``, or (S, E); masks as in MultiheadAttention.

        As PyTorch's, the masks are made float (-inf where masked) before attention, and where PyTorch would run
        its fused inference kernel (see ``_takes_fast_path``) they act as booleans instead: any nonzero entry,
        a float one included, masks its position out, and a query row that sees no key comes out NaN.
        """
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", src.dtype)
        if self._takes_fast_path(src):
            src_key_padding_mask = None if src_key_padding_mask is None else src_key_padding_mask != 0
            src_mask = None if src_mask is None else src_mask != 0
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _takes_fast_path(self, src):
        """Whether PyTorch would run this layer on ``torch._transformer_encoder_layer_fwd`` (its conditions)."""
        attn = self.self_attn
        if src.dim() != 3 or self.training or not attn.batch_first or attn.in_proj_bias is None:
            return False
        if not attn._qkv_same_embed_dim or not self.activation_relu_or_gelu or self.norm1.eps != self.norm2.eps:
            return False
        if attn.num_heads % 2 or is_autocast_enabled():
            return False
        if any(m._forward_hooks or m._forward_pre_hooks for m in self.modules()):
            return False
        tensors = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight, attn.out_proj.bias,
                   self.norm1.weight, self.norm1.bias, self.norm2.weight, self.norm2.bias, self.linear1.weight,
                   self.linear1.bias, self.linear2.weight, self.linear2.bias)
        return not (is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors))

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

    engine has no nested tensors: ``enable_nested_tensor`` (kept as ``use_nested_tensor`` when the layer is one
    PyTorch could run nested) and ``mask_check`` only decide when the padded positions come out as zeros, as
    PyTorch's nested path gives them (see the module docstring).
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor and _nestable(encoder_layer)
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """Run the layers in turn; ``is_causal=None`` detects whether ``mask`` is the causal mask."""
        mask = _canonical_mask(mask, "mask", src.dtype)
        is_causal = _is_causal_mask(mask, is_causal, _sequence_length(self.layers, src))
        padded = self._nested_padding(src, mask, src_key_padding_mask)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if padded is not None:
            output = output.masked_fill(padded.unsqueeze(-1), 0.0)
        if self.norm is not None:
            output = self.norm(output)
        return output

    def _nested_padding(self, src, mask, key_padding_mask):
        """The (N, S) padded positions where PyTorch would run this stack on a nested tensor (and so return
        zeros there); None where it would not (PyTorch's conditions, in its order)."""
        if not self.use_nested_tensor or self.layers[0].training or src.dim() != 3 or key_padding_mask is None:
            return None
        padded = key_padding_mask != 0
        valid = ~padded
        if getattr(self, "mask_check", True) and bool((valid[:, 1:] & padded[:, :-1]).any()):
            return None  # not left-aligned: some valid position follows a padded one
        if mask is not None or is_autocast_enabled():
            return None
        layer = self.layers[0]
        weights = (layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias, layer.self_attn.out_proj.weight,
                   layer.self_attn.out_proj.bias, layer.norm1.weight, layer.norm1.bias, layer.norm2.weight,
                   layer.norm2.bias, layer.linear1.weight, layer.linear1.bias, layer.linear2.weight,
                   layer.linear2.bias)
        if is_grad_enabled() and any(t is not None and t.requires_grad for t in (src,) + weights):
            return None
        if bool(padded.all()):  # a nested tensor of empty sequences only: PyTorch cannot pad it back
            raise RuntimeError("to_padded_tensor: at least one constituent tensor should have non-zero numel")
        return padded


def _nestable(layer):
    """Whether PyTorch's encoder could run ``layer`` on nested tensors (its checks in ``__init__``)."""
    attn = getattr(layer, "self_attn", None)
    return (isinstance(layer, TransformerEncoderLayer) and not layer.norm_first and attn.batch_first
            and attn._qkv_same_embed_dim and attn.in_proj_bias is not None and bool(layer.activation_relu_or_gelu)
            and layer.norm1.eps == layer.norm2.eps and attn.num_heads % 2 == 0)


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention from the target to the encoder's ``memory``, and the
    feed-forward block; each with dropout, a residual and a LayerNorm (post-norm, or pre-norm with
    ``norm_first``), as ``TransformerEncoderLayer``."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first, bias=bias,
                                            **factory)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, batch_first=batch_first,
                                                 bias=bias, **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation_fn(activation) if isinstance(activation, str) else activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        """``tgt`` (T, N, E) and ``memory`` (S, N, E) (batch first with ``batch_first``); masks as in
        MultiheadAttention."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    _sa_block = TransformerEncoderLayer._sa_block  # the same self-attention block, with dropout1

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer`` (independent parameters, equal at the start), then ``norm``."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        """Run the layers in turn; ``tgt_is_causal=None`` detects whether ``tgt_mask`` is the causal mask."""
        tgt_is_causal = _is_causal_mask(tgt_mask, tgt_is_causal, _sequence_length(self.layers, tgt))
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                           memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder of the paper: ``num_encoder_layers`` encoder layers and ``num_decoder_layers``
    decoder layers, each stack ending in a LayerNorm; every matrix initialised Xavier-uniform, as torch's."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation=F.relu, custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first, norm_first,
                      bias)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(*layer_args, **factory)
            encoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, encoder_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(*layer_args, **factory)
            decoder_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, decoder_norm)
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        """Encode ``src``, then decode ``tgt`` against it: (T, N, E), or (N, T, E) with ``batch_first``."""
        batched = src.dim() == 3
        if batched and src.shape[1 if not self.batch_first else 0] != tgt.shape[1 if not self.batch_first else 0]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """The causal mask: -inf above the diagonal, 0 elsewhere."""
        return _square_subsequent_mask(sz, device=device, dtype=dtype)


__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder",
           "Transformer"]
