"""``nn.MultiheadAttention`` (Vaswani et al. 2017, "Attention Is All You Need") with PyTorch's parameters.

Parameter names and registration order are PyTorch's, so its state_dicts load directly: one packed
``in_proj_weight`` (3E, E) when keys and values have the query's width, else ``q_proj_weight``,
``k_proj_weight`` and ``v_proj_weight``; ``in_proj_bias`` (3E); ``bias_k``/``bias_v`` with
``add_bias_kv``; the output projection ``out_proj``.

PyTorch's inference fast path (``torch._native_multi_head_attention``) computes the same values, except
that a query row whose keys are all masked out comes out NaN where the reference path gives zeros;
``MultiheadAttention`` reproduces that under PyTorch's conditions for taking the fast path.
"""
from ... import ops
from ..._dtype import bool_ as _bool
from ...amp.autocast_mode import is_autocast_enabled
from ...autograd.grad_mode import is_grad_enabled
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ._utils import new_param_data
from .linear import Linear
from .module import Module


class NonDynamicallyQuantizableLinear(Linear):
    """A plain ``Linear``: PyTorch gives attention's output projection this type (its quantization tools
    skip it), so module trees compare equal."""


class MultiheadAttention(Module):
    """Attention over ``num_heads`` subspaces of width ``embed_dim // num_heads``, then an output projection.

    Inputs are (L, N, E) sequence-first, (N, L, E) with ``batch_first``, or unbatched (L, E);
    ``dropout`` drops attention weights in training mode.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(new_param_data((3 * embed_dim, embed_dim), device, dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(new_param_data((embed_dim, embed_dim), device, dtype))
            self.k_proj_weight = Parameter(new_param_data((embed_dim, self.kdim), device, dtype))
            self.v_proj_weight = Parameter(new_param_data((embed_dim, self.vdim), device, dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(new_param_data((3 * embed_dim,), device, dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(new_param_data((1, 1, embed_dim), device, dtype))
            self.bias_v = Parameter(new_param_data((1, 1, embed_dim), device, dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        """Xavier-uniform projections, zero biases, Xavier-normal ``bias_k``/``bias_v``."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """The attention output (shaped like ``query``) and the weights (None unless ``need_weights``)."""
        is_batched = query.dim() == 3
        fast = not need_weights and self._takes_fast_path(query, key, value, attn_mask, key_padding_mask)
        if self.batch_first and is_batched:
            query, key, value = self._sequence_first(query, key, value)
        output, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            output = output.transpose(1, 0)
        if fast:
            output = output.masked_fill(self._dead_rows(output, attn_mask, key_padding_mask), float("nan"))
        return output, weights

    def _takes_fast_path(self, query, key, value, attn_mask, key_padding_mask):
        """Whether PyTorch would run this call on its fused inference kernel (its conditions, in its order)."""
        if any(m is not None and m.dtype.is_floating_point for m in (attn_mask, key_padding_mask)):
            return False
        if query.dim() != 3 or query is not key or key is not value or self.in_proj_weight is None:
            return False
        if self.in_proj_bias is None or query.dtype != self.in_proj_bias.dtype:
            return False  # without an input bias PyTorch takes the reference path
        if query.dtype != self.in_proj_weight.dtype or self.training or self.num_heads % 2:
            return False
        if not self.batch_first or self.bias_k is not None or self.bias_v is not None or self.add_zero_attn:
            return False
        if not self._qkv_same_embed_dim or is_autocast_enabled():
            return False
        tensors = (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight, self.out_proj.bias)
        return not (is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors))

    def _dead_rows(self, output, attn_mask, key_padding_mask):
        """(N, L, 1) booleans: the query rows that some head sees no key from (boolean masks, True = masked)."""
        batch, length = output.shape[:2]
        blocked = None
        if attn_mask is not None:
            blocked = attn_mask.reshape(-1, 1 if attn_mask.dim() == 2 else self.num_heads, length, length)
        if key_padding_mask is not None:
            padding = key_padding_mask.reshape(batch, 1, 1, length)
            blocked = padding if blocked is None else blocked | padding
        if blocked is None:
            return ops.zeros(batch, length, 1, dtype=_bool, device=output.device)
        return blocked.all(dim=-1).any(dim=1).unsqueeze(-1)

    @staticmethod
    def _sequence_first(query, key, value):
        """(N, L, E) inputs as (L, N, E), keeping which of them are the same tensor (self-attention)."""
        if key is value:
            if query is key:
                query = key = value = query.transpose(1, 0)
            else:
                query = query.transpose(1, 0)
                key = value = key.transpose(1, 0)
            return query, key, value
        return query.transpose(1, 0), key.transpose(1, 0), value.transpose(1, 0)


__all__ = ["MultiheadAttention"]
