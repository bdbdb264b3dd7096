"""Attention: ``F.scaled_dot_product_attention`` and ``F.multi_head_attention_forward`` (Vaswani et al. 2017,
"Attention Is All You Need").

Both are composed from engine ops (matmul, softmax, where, dropout), so autograd, ``nn.Graph`` tracing
and the CUDA backend come with them. As in PyTorch's reference ("math") implementation, a query row
whose keys are all masked out attends to nothing: its output and its gradients are zeros.
"""
import math

from ... import ops
from ..._dtype import bool_ as _bool
from ..._dtype import cpp_name, float32
from ...amp import autocast_mode
from .dropout import dropout
from .linear import linear
from .padding import pad

_NEG_INF = float("-inf")


def _causal_mask(query, key):
    """(L, S) booleans, True where query row i may see key column j (j <= i), on the query's device."""
    rows, cols = query.shape[-2], key.shape[-2]
    return ops.ones(rows, cols, dtype=_bool, device=query.device).tril()


def _repeat_kv_heads(query, key, value):
    """Grouped-query attention: every key/value head serves ``q_heads // kv_heads`` query heads."""
    q_heads, k_heads, v_heads = query.shape[-3], key.shape[-3], value.shape[-3]
    if q_heads % k_heads or q_heads % v_heads:
        raise RuntimeError(f"scaled_dot_product_attention: number of heads in key ({k_heads}) and value "
                           f"({v_heads}) must divide the number of heads in query ({q_heads}) with enable_gqa=True")
    return key.repeat_interleave(q_heads // k_heads, -3), value.repeat_interleave(q_heads // v_heads, -3)


def _masked_softmax(scores):
    """softmax over the last dim, with rows that are -inf throughout giving zeros (and zero gradients)."""
    blocked = (scores == _NEG_INF).all(dim=-1, keepdim=True)
    weights = ops.softmax(ops.where(blocked, 0.0, scores), -1)
    return ops.where(blocked, 0.0, weights)


def _check_sdpa_inputs(query, key, value, attn_mask):
    """torch's checks of the ranks and dtypes of the inputs and of the mask's dtype, with its messages."""
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{cpp_name(query.dtype)} key.dtype: {cpp_name(key.dtype)} and value.dtype: "
                           f"{cpp_name(value.dtype)} instead.")
    if attn_mask is not None and attn_mask.dtype not in (_bool, float32, query.dtype):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {cpp_name(attn_mask.dtype)} and  query.dtype: "
                           f"{cpp_name(query.dtype)} instead.")


@autocast_mode.lower_precision("cpu", "cuda")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(Q K^T * scale + mask) V over the last two dims, batch dims broadcast.

    query (..., L, E), key (..., S, E), value (..., S, Ev). ``attn_mask``: booleans (True = may attend)
    or floats added to the scores, broadcast to (..., L, S). ``is_causal`` masks key j > query i;
    ``scale`` defaults to 1 / sqrt(E); ``dropout_p`` drops attention weights (always, as in PyTorch:
    callers pass 0 in eval mode). ``attn_mask`` may also be a ``nn.attention.bias.CausalBias``; the
    backends allowed by ``nn.attention.sdpa_kernel`` decide whether the call runs or raises.
    """
    # imported here: engine.nn.attention imports this module (and ``engine.nn.attention`` the attribute may
    # still be nn.modules.attention, star-imported into engine.nn: ``from ..attention`` goes by module name)
    from ..attention import _check_backends, bias
    if isinstance(attn_mask, bias.CausalBias):
        return attn_mask._dispatch(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
    _check_backends(query, key, value, dropout_p)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    _check_sdpa_inputs(query, key, value, attn_mask)
    if enable_gqa:
        key, value = _repeat_kv_heads(query, key, value)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = ops.matmul(query * scale, key.transpose(-2, -1))
    if is_causal:
        attn_mask = _causal_mask(query, key)
    if attn_mask is not None:
        if attn_mask.dtype == _bool:
            scores = ops.where(attn_mask, scores, _NEG_INF)
        else:
            scores = scores + attn_mask.to(scores.dtype)  # a float32 mask keeps half-precision scores
    if scores.shape[-1] == 0:
        weights = scores  # no keys: the output is zeros, as torch's
    else:
        weights = ops.softmax(scores, -1) if attn_mask is None else _masked_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return ops.matmul(weights, value)


def _canonical_mask(mask, name, dtype):
    """A padding or attention mask as floats: booleans (True = masked out) become -inf / 0."""
    if mask is None:
        return None
    if mask.dtype == _bool:
        return ops.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, _NEG_INF)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _project(x, weight, bias):
    """``linear`` over the last dim as one GEMM on the rows of ``x`` (its leading dims flattened first)."""
    rows = linear(x.reshape(-1, x.shape[-1]), weight, bias)
    return rows.reshape(*x.shape[:-1], weight.shape[0])


def _in_projection(query, key, value, weight, bias):
    """q, k and v from one packed (3E, E) weight: one GEMM for self-attention, two when key is value."""
    embed_dim = weight.shape[1]
    if key is value:
        if query is key:
            return _project(query, weight, bias).chunk(3, dim=-1)
        w_q, w_kv = weight.split([embed_dim, 2 * embed_dim])
        b_q, b_kv = (None, None) if bias is None else bias.split([embed_dim, 2 * embed_dim])
        return (_project(query, w_q, b_q),) + tuple(_project(key, w_kv, b_kv).chunk(2, dim=-1))
    w_q, w_k, w_v = weight.chunk(3)
    b_q, b_k, b_v = (None, None, None) if bias is None else bias.chunk(3)
    return _project(query, w_q, b_q), _project(key, w_k, b_k), _project(value, w_v, b_v)


def _in_projection_separate(query, key, value, q_weight, k_weight, v_weight, bias, embed_dim):
    """q, k and v from three weights (key and value may have other widths than the query)."""
    for name, weight, x in (("query", q_weight, query), ("key", k_weight, key), ("value", v_weight, value)):
        if tuple(weight.shape) != (embed_dim, x.shape[-1]):
            raise AssertionError(f"expecting {name} weights shape of {(embed_dim, x.shape[-1])}, but got "
                                 f"{weight.shape}")
    b_q, b_k, b_v = (None, None, None) if bias is None else bias.split([embed_dim, embed_dim, embed_dim])
    return _project(query, q_weight, b_q), _project(key, k_weight, b_k), _project(value, v_weight, b_v)


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the call is batched (a 3-D query) or not (2-D), after torch's checks of the inputs' ranks."""
    if query.dim() not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D "
                             "query tensor")
    batched = query.dim() == 3
    kind, rank = ("batched (3-D)", 3) if batched else ("unbatched (2-D)", 2)
    if key.dim() != rank or value.dim() != rank:
        raise AssertionError(f"For {kind} `query`, expected `key` and `value` to be {rank}-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.dim() != rank - 1:
        raise AssertionError(f"For {kind} `query`, expected `key_padding_mask` to be `None` or {rank - 1}-D but "
                             f"found {key_padding_mask.dim()}-D tensor instead")
    if attn_mask is not None and attn_mask.dim() not in (2, 3):
        raise AssertionError(f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
                             f"{attn_mask.dim()}-D tensor instead")
    if not batched and attn_mask is not None and attn_mask.dim() == 3:
        expected = (num_heads, query.shape[0], key.shape[0])
        if tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
    return batched


def _check_attn_mask(attn_mask, tgt_len, src_len, batch_heads):
    """A 2-D (L, S) mask gets a leading 1; a 3-D mask must be (N * num_heads, L, S)."""
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                               f"{(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (batch_heads, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                               f"{(batch_heads, tgt_len, src_len)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _heads_first(x, batch_heads, head_dim):
    """(S, N, E) -> (N * num_heads, S, head_dim)."""
    return x.reshape(x.shape[0], batch_heads, head_dim).transpose(0, 1)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """Multi-head attention on sequence-first inputs: query (L, N, E), key (S, N, kdim), value (S, N, vdim),
    or the same without the batch dim N. Returns the output (L, N, E) and, with ``need_weights``, the
    attention weights (N, L, S) averaged over heads, or (N, num_heads, L, S).

    ``key_padding_mask`` (N, S) and boolean ``attn_mask`` (L, S) or (N * num_heads, L, S) mark positions
    to ignore with True; float masks are added to the scores. ``bias_k``/``bias_v`` append one learnt
    key/value, ``add_zero_attn`` one zero key/value; ``static_k``/``static_v`` replace the projected
    keys/values ((N * num_heads, S, head_dim)).
    """
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight and tuple(key.shape[:2]) != tuple(value.shape[:2]):
        raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                             f"{value.shape[:2]}")
    if not use_separate_proj_weight and tuple(key.shape) != tuple(value.shape):
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        if key_padding_mask is not None:
            is_causal = False

    if use_separate_proj_weight:
        q, k, v = _in_projection_separate(query, key, value, q_proj_weight, k_proj_weight, v_proj_weight,
                                          in_proj_bias, embed_dim)
    else:
        q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias)
    batch_heads = bsz * num_heads
    if attn_mask is not None:
        attn_mask = _check_attn_mask(attn_mask, tgt_len, key.shape[0], batch_heads)
    if bias_k is not None and bias_v is not None:
        k = ops.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = ops.cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))

    q = _heads_first(q, batch_heads, head_dim)
    k = _heads_first(k, batch_heads, head_dim) if static_k is None else static_k
    v = _heads_first(v, batch_heads, head_dim) if static_v is None else static_v
    if add_zero_attn:
        zero = ops.zeros(batch_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k = ops.cat([k, zero], dim=1)
        v = ops.cat([v, zero], dim=1)
        attn_mask = None if attn_mask is None else pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    if key_padding_mask is not None:
        _check_key_padding_mask(key_padding_mask, bsz, src_len)
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(bsz, num_heads, 1, src_len)
        padding = padding.reshape(batch_heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = ops.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = ops.softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, dropout_p)
        output = ops.matmul(weights, v)
        output = output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        output = linear(output, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            output, weights = output.squeeze(1), weights.squeeze(0)
        return output, weights

    if attn_mask is not None:
        if attn_mask.shape[0] == 1:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    output = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    output = output.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
    output = linear(output, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not is_batched:
        output = output.squeeze(1)
    return output, None


def _check_key_padding_mask(key_padding_mask, bsz, src_len):
    """torch's errors for a key padding mask that is not (batch, source length)."""
    shape = tuple(key_padding_mask.shape)
    if len(shape) == 2:
        for dim, (got, expected) in enumerate(zip(shape, (bsz, src_len))):
            if got != expected:
                raise AssertionError(f"Expected key_padded_mask.shape[{dim}] to be {expected}, but got {got}")
    elif shape != (bsz, src_len):
        raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got {shape}")


__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

