"""Bring-your-own-attention networks (timm's ``byoanet``): ResNets whose later bottlenecks replace their 3x3
convolution with a self-attention layer. BoTNet (Srinivas et al. 2021, "Bottleneck Transformers for Visual
Recognition") attends over the whole map with 2-d relative position logits; HaloNet (Vaswani et al. 2021, "Scaling
Local Self-Attention for Parameter Efficient Visual Backbones") attends from each block of the map to the block and a
halo around it (halonet_h1, the paper's HaloNet-H1, in every block of every stage); LambdaNet (Bello 2021,
"LambdaNetworks: Modeling Long-Range Interactions Without Attention") summarises the context into linear functions
("lambdas") applied to each query, with positions from a local 3-d convolution or from relative position embeddings.
The mixed models use a different layer per stage. Models: botnet26t_256, botnet50ts_256, sebotnet33ts_256,
eca_botnext26ts_256, halonet_h1, halonet26t, sehalonet33ts, halonet50ts, eca_halonext26ts, lambda_resnet26t,
lambda_resnet50ts, lambda_resnet26rpt_256, haloregnetz_b, lamhalobotnet50ts_256 and halo2botnet50ts_256.

The networks are ``byobnet.ByobNet`` configurations: the three layers are registered there as the self-attention
layers 'bottleneck', 'halo' and 'lambda' of its 'self_attn' block. BoTNet's and the relative-position lambda
layer's embeddings are sized by the map, so those models take one input size (``img_size``, 256 by default).
Model names, module names, ``state_dict`` keys, initialisation and the model API follow timm's ``byoanet`` module,
so its checkpoints load as they are.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._helpers import build_model
from .._utils import _make_divisible
from ..registry import register_model
from . import _layers
from ._layers import pair
from .byobnet import ByoBlockCfg, ByobNet, ByoModelCfg, interleave_blocks, register_attn

__all__ = []


def _check_heads(dim_out, num_heads):
    """Refuse an output width that does not split evenly over the heads."""
    if dim_out % num_heads:
        raise ValueError(f"{dim_out} output channels do not split over {num_heads} heads")


def _qk_head_width(dim_out, num_heads, dim_head, qk_ratio):
    """The query / key width of one head: ``dim_head`` if set, else ``qk_ratio`` of the output width (rounded to a
    multiple of 8) split over the heads."""
    return dim_head or _make_divisible(dim_out * qk_ratio, 8) // num_heads


def relative_logits_1d(q, rel_k):
    """Relative position logits along one axis: the queries ``q`` (..., n, d) sit at positions 0..n-1 of the axis,
    ``rel_k`` (2m - 1, d) holds one embedding per offset, and query i meets the key at position j (0..m-1) through
    embedding j - i + m - 1. Returns the (..., n, m) dot products."""
    num_q = q.shape[-2]
    num_k = (rel_k.shape[0] + 1) // 2
    logits = q.matmul(rel_k.transpose(0, 1))
    offsets = torch.arange(num_k, device=q.device).view(1, num_k) - torch.arange(num_q, device=q.device).view(num_q, 1)
    offsets = offsets + (num_k - 1)
    return logits.gather(-1, offsets.expand(*logits.shape[:-1], num_k))


class PosEmbedRel(nn.Module):
    """2-d relative position logits of a grid of ``query_size`` queries (height, width) against a grid of
    ``key_size`` keys: one learned ``dim_head``-channel embedding per row offset (``height_rel``) and per column
    offset (``width_rel``); a query-key pair's logit is the query's dot product with the embedding of their row
    offset plus that with the embedding of their column offset. Initialised N(0, ``scale``^2)."""

    def __init__(self, query_size, key_size, dim_head, scale):
        super().__init__()
        self.query_size = pair(query_size)
        self.key_size = pair(key_size)
        self.dim_head = dim_head
        self.height_rel = nn.Parameter(torch.empty(2 * self.key_size[0] - 1, dim_head))
        self.width_rel = nn.Parameter(torch.empty(2 * self.key_size[1] - 1, dim_head))
        nn.init.normal_(self.height_rel, std=scale)
        nn.init.normal_(self.width_rel, std=scale)

    def forward(self, q):
        """Queries (..., query height * width, dim_head), row by row, to logits (..., queries, keys)."""
        lead = tuple(q.shape[:-2])
        query_h, query_w = self.query_size
        q = q.reshape(*lead, query_h, query_w, self.dim_head)
        width_logits = relative_logits_1d(q, self.width_rel)
        height_logits = relative_logits_1d(q.transpose(-3, -2), self.height_rel).transpose(-3, -2)
        logits = height_logits.unsqueeze(-1) + width_logits.unsqueeze(-2)
        return logits.reshape(*lead, query_h * query_w, self.key_size[0] * self.key_size[1])


class RelPosAttention(nn.Module):
    """What BoTNet's and HaloNet's attention share: ``num_heads`` heads with queries and keys ``dim_head`` wide (or
    ``qk_ratio`` of the output width split over the heads) and values splitting ``dim_out``; logits q.k / sqrt(head
    width) plus 2-d relative position logits (``pos_embed``; scaled too with ``scale_pos_embed``)."""

    def _add_heads(self, dim_out, num_heads, dim_head, qk_ratio, scale_pos_embed):
        """The heads' widths and the logit scale."""
        _check_heads(dim_out, num_heads)
        self.num_heads = num_heads
        self.dim_head_qk = _qk_head_width(dim_out, num_heads, dim_head, qk_ratio)
        self.dim_head_v = dim_out // num_heads
        self.dim_out_qk = num_heads * self.dim_head_qk
        self.dim_out_v = num_heads * self.dim_head_v
        self.scale = self.dim_head_qk ** -0.5
        self.scale_pos_embed = scale_pos_embed

    def _reset_pos_embed(self):
        """The relative embeddings truncated N(0, scale^2), as timm draws them."""
        _layers.trunc_normal_(self.pos_embed.height_rel, std=self.scale)
        _layers.trunc_normal_(self.pos_embed.width_rel, std=self.scale)

    def _attention(self, q, k):
        """The attention weights of queries (..., queries, d) and keys (..., d, keys): the softmax of the content and
        relative position logits."""
        if self.scale_pos_embed:
            attn = (q.matmul(k) + self.pos_embed(q)) * self.scale
        else:
            attn = q.matmul(k) * self.scale + self.pos_embed(q)
        return attn.softmax(dim=-1)


class BottleneckAttn(RelPosAttention):
    """BoTNet's multi-head self-attention over the whole map. A 1x1 convolution ``qkv`` gives the queries and keys
    (``dim_head`` channels per head, or ``qk_ratio`` of the output width split over the heads) and the values
    (``dim_out``, by default ``dim``, split over ``num_heads``); every position attends to every position with
    logits q.k / sqrt(head width) plus the 2-d relative position logits (``pos_embed``; scaled too with
    ``scale_pos_embed``); at ``stride`` 2 the result is average-pooled by 2. The relative embeddings are sized by
    the map, so the layer only takes maps of ``feat_size``."""

    def __init__(self, dim, dim_out=None, feat_size=None, stride=1, num_heads=4, dim_head=None, qk_ratio=1.0,
                 qkv_bias=False, scale_pos_embed=False):
        super().__init__()
        if feat_size is None:
            raise ValueError("bottleneck attention needs the map size: build the model with img_size")
        self._add_heads(dim_out or dim, num_heads, dim_head, qk_ratio, scale_pos_embed)
        self.feat_size = pair(feat_size)
        self.qkv = nn.Conv2d(dim, self.dim_out_qk * 2 + self.dim_out_v, 1, bias=qkv_bias)
        self.pos_embed = PosEmbedRel(self.feat_size, self.feat_size, self.dim_head_qk, self.scale)
        self.pool = nn.AvgPool2d(2, 2) if stride == 2 else nn.Identity()
        self.reset_parameters()

    def reset_parameters(self):
        """timm's init: the projection truncated N(0, 1 / fan-in), the embeddings truncated N(0, scale^2)."""
        _layers.trunc_normal_(self.qkv.weight, std=self.qkv.weight.shape[1] ** -0.5)
        self._reset_pos_embed()

    def forward(self, x):
        batch, _, height, width = x.shape
        if (height, width) != self.feat_size:
            raise ValueError(f"bottleneck attention was built for {self.feat_size[0]}x{self.feat_size[1]} maps "
                             f"(the model's img_size), got {height}x{width}")
        heads = batch * self.num_heads
        positions = height * width
        q, k, v = torch.split(self.qkv(x), [self.dim_out_qk, self.dim_out_qk, self.dim_out_v], dim=1)
        q = q.reshape(heads, self.dim_head_qk, positions).transpose(-1, -2)
        k = k.reshape(heads, self.dim_head_qk, positions)
        v = v.reshape(heads, self.dim_head_v, positions).transpose(-1, -2)
        attn = self._attention(q, k)
        out = attn.matmul(v).transpose(-1, -2).reshape(batch, self.dim_out_v, height, width)
        out = self.pool(out)
        return out


class HaloAttn(RelPosAttention):
    """HaloNet's blocked local multi-head self-attention. The map is cut into ``block_size`` x ``block_size``
    blocks; the queries of a block (1x1 convolution ``q``) attend to the keys and values (1x1 convolution ``kv``,
    each head's keys and values side by side) of a window around it, the block widened by ``halo_size`` on every
    side (zero-padded at the borders), with logits q.k / sqrt(head width) plus 2-d relative position logits. Head
    widths as in ``BottleneckAttn``. At ``stride`` 2 the queries are taken at every second pixel (a strided ``q``),
    or, where the block size is odd or with ``avg_down``, the output is average-pooled by 2. The map's sides must be
    multiples of the block size; ``feat_size`` is accepted and not needed."""

    def __init__(self, dim, dim_out=None, feat_size=None, stride=1, num_heads=8, dim_head=None, block_size=8,
                 halo_size=3, qk_ratio=1.0, qkv_bias=False, avg_down=False, scale_pos_embed=False):
        super().__init__()
        self._add_heads(dim_out or dim, num_heads, dim_head, qk_ratio, scale_pos_embed)
        if stride not in (1, 2):
            raise ValueError(f"halo attention strides by 1 or 2, got {stride}")
        self.block_size = block_size
        self.halo_size = halo_size
        self.win_size = block_size + 2 * halo_size
        avg_pool = stride > 1 and (avg_down or block_size % stride != 0)
        self.block_stride = stride if stride > 1 and not avg_pool else 1
        self.block_size_ds = block_size // self.block_stride
        self.q = nn.Conv2d(dim, self.dim_out_qk, 1, stride=self.block_stride, bias=qkv_bias)
        self.kv = nn.Conv2d(dim, self.dim_out_qk + self.dim_out_v, 1, bias=qkv_bias)
        self.pos_embed = PosEmbedRel(self.block_size_ds, self.win_size, self.dim_head_qk, self.scale)
        self.pool = nn.AvgPool2d(2, 2) if avg_pool else nn.Identity()
        self.reset_parameters()

    def reset_parameters(self):
        """timm's init: both projections truncated N(0, 1 / fan-in), the embeddings truncated N(0, scale^2)."""
        std = self.q.weight.shape[1] ** -0.5
        _layers.trunc_normal_(self.q.weight, std=std)
        _layers.trunc_normal_(self.kv.weight, std=std)
        self._reset_pos_embed()

    def _query_blocks(self, q, heads, rows, cols):
        """(N, heads * d, rows * b, cols * b) queries to (N * heads, blocks, b * b, d), b the (strided) block size."""
        size = self.block_size_ds
        q = q.reshape(heads, self.dim_head_qk, rows, size, cols, size).permute(0, 2, 4, 3, 5, 1)
        return q.reshape(heads, rows * cols, size * size, self.dim_head_qk)

    def _windows(self, kv, heads, rows, cols):
        """(N, heads * (dk + dv), H, W) keys and values to each block's window, (N * heads, blocks, win * win,
        dk + dv)."""
        halo = self.halo_size
        kv = F.pad(kv, [halo, halo, halo, halo])
        kv = kv.unfold(2, self.win_size, self.block_size).unfold(3, self.win_size, self.block_size)
        kv = kv.reshape(heads, self.dim_head_qk + self.dim_head_v, rows * cols, self.win_size * self.win_size)
        return kv.permute(0, 2, 3, 1)

    def _merge_blocks(self, out, batch, rows, cols):
        """(N * heads, blocks, b * b, dv) outputs back to the (N, heads * dv, rows * b, cols * b) map."""
        size = self.block_size_ds
        out = out.reshape(batch, self.num_heads, rows, cols, size, size, self.dim_head_v)
        out = out.permute(0, 1, 6, 2, 4, 3, 5)
        return out.reshape(batch, self.dim_out_v, rows * size, cols * size)

    def forward(self, x):
        batch, _, height, width = x.shape
        if height % self.block_size or width % self.block_size:
            raise ValueError(f"halo attention needs a map whose sides are multiples of {self.block_size}, "
                             f"got {height}x{width}")
        heads = batch * self.num_heads
        rows = height // self.block_size
        cols = width // self.block_size
        q = self._query_blocks(self.q(x), heads, rows, cols)
        k, v = torch.split(self._windows(self.kv(x), heads, rows, cols), [self.dim_head_qk, self.dim_head_v], dim=-1)
        attn = self._attention(q, k.transpose(-1, -2))
        out = self._merge_blocks(attn.matmul(v), batch, rows, cols)
        out = self.pool(out)
        return out


def rel_pos_indices(size):
    """For a grid of ``size`` (height, width), the (2, H * W, H * W) row and column offsets, shifted to be
    non-negative, from each position (query, rows first) to each position (key)."""
    height, width = pair(size)
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    pos = torch.stack([rows.flatten(), cols.flatten()])
    offsets = pos.unsqueeze(1) - pos.unsqueeze(2)
    return offsets + torch.tensor([height - 1, width - 1]).view(2, 1, 1)


class LambdaLayer(nn.Module):
    """The lambda layer (intra-depth 1). A 1x1 convolution ``qkv`` gives ``num_heads`` queries and one key of
    ``dim_head`` channels (or ``qk_ratio`` of the output width split over the heads) and a value of ``dim_out /
    num_heads`` channels per position; the queries and values are batch-normalised (``norm_q``, ``norm_v``), the
    keys softmax-normalised over the positions. The content lambda, keys^T values, is shared by all positions; the
    position lambdas come from a 3-d convolution of the values over an ``r`` x ``r`` neighbourhood (``conv_lambda``,
    one output per key channel), or, with ``r=None``, from relative position embeddings over a fixed ``feat_size``
    map (``pos_emb``, one per offset). Each query is applied to both lambdas (the heads' outputs side by side); at
    ``stride`` 2 the result is average-pooled by 2."""

    def __init__(self, dim, dim_out=None, feat_size=None, stride=1, num_heads=4, dim_head=16, r=9, qk_ratio=1.0,
                 qkv_bias=False):
        super().__init__()
        dim_out = dim_out or dim
        _check_heads(dim_out, num_heads)
        self.dim_qk = _qk_head_width(dim_out, num_heads, dim_head, qk_ratio)
        self.num_heads = num_heads
        self.dim_v = dim_out // num_heads
        self.qkv = nn.Conv2d(dim, num_heads * self.dim_qk + self.dim_qk + self.dim_v, kernel_size=1, bias=qkv_bias)
        self.norm_q = nn.BatchNorm2d(num_heads * self.dim_qk)
        self.norm_v = nn.BatchNorm2d(self.dim_v)
        if r is not None:
            self.conv_lambda = nn.Conv3d(1, self.dim_qk, (r, r, 1), padding=(r // 2, r // 2, 0))
            self.pos_emb = None
            self.rel_pos_indices = None
            self.feat_size = None
        else:
            if feat_size is None:
                raise ValueError("a lambda layer with relative positions (r=None) needs the map size: build the "
                                 "model with img_size")
            self.feat_size = pair(feat_size)
            self.conv_lambda = None
            self.pos_emb = nn.Parameter(torch.empty(2 * self.feat_size[0] - 1, 2 * self.feat_size[1] - 1,
                                                    self.dim_qk))
            self.register_buffer("rel_pos_indices", rel_pos_indices(self.feat_size), persistent=False)
        self.pool = nn.AvgPool2d(2, 2) if stride == 2 else nn.Identity()
        self.reset_parameters()

    def reset_parameters(self):
        """timm's init: the projection truncated N(0, 1 / fan-in), the position convolution's weight truncated
        N(0, 1 / dim_qk) (its bias keeps the convolution default), the embeddings truncated N(0, 0.02^2)."""
        _layers.trunc_normal_(self.qkv.weight, std=self.qkv.weight.shape[1] ** -0.5)
        if self.conv_lambda is not None:
            _layers.trunc_normal_(self.conv_lambda.weight, std=self.dim_qk ** -0.5)
        if self.pos_emb is not None:
            _layers.trunc_normal_(self.pos_emb, std=0.02)

    def _position_lambdas(self, v, height, width):
        """Each position's (N, 1, M, K, V) lambda from the (N, M, V) values."""
        batch, positions, _ = v.shape
        if self.pos_emb is None:
            lambdas = self.conv_lambda(v.reshape(batch, 1, height, width, self.dim_v))
            return lambdas.reshape(batch, 1, self.dim_qk, positions, self.dim_v).transpose(2, 3)
        if (height, width) != self.feat_size:
            raise ValueError(f"this lambda layer was built for {self.feat_size[0]}x{self.feat_size[1]} maps "
                             f"(the model's img_size), got {height}x{width}")
        embeddings = self.pos_emb[self.rel_pos_indices[0], self.rel_pos_indices[1]]
        embeddings = embeddings.expand(batch, -1, -1, -1)
        return embeddings.transpose(-1, -2).matmul(v.unsqueeze(1)).unsqueeze(1)

    def forward(self, x):
        batch, _, height, width = x.shape
        positions = height * width
        qkv = self.qkv(x)
        q, k, v = torch.split(qkv, [self.num_heads * self.dim_qk, self.dim_qk, self.dim_v], dim=1)
        q = self.norm_q(q).reshape(batch, self.num_heads, self.dim_qk, positions).transpose(-1, -2)
        v = self.norm_v(v).reshape(batch, self.dim_v, positions).transpose(-1, -2)
        k = F.softmax(k.reshape(batch, self.dim_qk, positions), dim=-1)
        content_lambda = k.matmul(v)
        content_out = q.matmul(content_lambda.unsqueeze(1))
        position_lambdas = self._position_lambdas(v, height, width)
        position_out = q.unsqueeze(-2).matmul(position_lambdas).squeeze(-2)
        out = (content_out + position_out).transpose(-1, -2)
        out = out.reshape(batch, self.num_heads * self.dim_v, height, width)
        out = self.pool(out)
        return out


register_attn("bottleneck", BottleneckAttn)
register_attn("halo", HaloAttn)
register_attn("lambda", LambdaLayer)


def _bottlenecks(d, c, s, gs=0, br=0.25):
    """``d`` bottleneck blocks (width ``c``, stride ``s``, group size ``gs``, ratio ``br``)."""
    return ByoBlockCfg(type="bottle", d=d, c=c, s=s, gs=gs, br=br)


def _mixed(d, c, every=1, gs=0, br=0.25, **self_attn):
    """``d`` blocks of width ``c`` (the first strided by 2): self-attention blocks where ``interleave_blocks`` puts
    them for ``every``, bottlenecks elsewhere; ``self_attn`` may name the stage's own self-attention layer."""
    return interleave_blocks(("bottle", "self_attn"), d=d, every=every, c=c, s=2, gs=gs, br=br, **self_attn)


def _resnet26(gs=0):
    """ResNet-26-T's stages (2 blocks each, widths 256 to 2048) with self-attention in the third stage's second block
    and both blocks of the last stage."""
    return (_bottlenecks(2, 256, 1, gs), _bottlenecks(2, 512, 2, gs), _mixed(2, 1024, gs=gs),
            ByoBlockCfg(type="self_attn", d=2, c=2048, s=2, gs=gs, br=0.25))


# ResNet-33-TS's stages with self-attention in the last block of the second and third stages and the whole last stage
_RESNET33 = (_bottlenecks(2, 256, 1), _mixed(3, 512, every=[2]), _mixed(3, 1024, every=[2]),
             ByoBlockCfg(type="self_attn", d=2, c=1536, s=2, gs=0, br=0.333))


def _resnet50(second=None, third=None, fourth=None, second_every=4):
    """ResNet-50-T's stages (3, 4, 6, 3 blocks, widths 256 to 2048) with self-attention in the second stage's last
    block (every second block with ``second_every=1``) and every second block of the third and fourth stages; each
    stage's self-attention layer config (a dict of ``self_attn_layer`` / ``self_attn_kwargs``) if it has its own."""
    return (_bottlenecks(3, 256, 1), _mixed(4, 512, every=second_every, **(second or {})),
            _mixed(6, 1024, **(third or {})), _mixed(3, 2048, **(fourth or {})))


def _halo(**kwargs):
    """A stage's own halo attention config."""
    return dict(self_attn_layer="halo", self_attn_kwargs=kwargs)


# the ResNet-T stems: tiered (24, 32, 64 channels), with or without max pooling
_TIERED = dict(stem_chs=64, stem_type="tiered", stem_pool="maxpool")
_TIERED_NO_POOL = dict(stem_chs=64, stem_type="tiered", stem_pool="")

model_cfgs = dict(
    botnet26t=ByoModelCfg(blocks=_resnet26(), fixed_input_size=True, self_attn_layer="bottleneck", **_TIERED),
    botnet50ts=ByoModelCfg(blocks=_resnet50(), fixed_input_size=True, act_layer="silu", self_attn_layer="bottleneck",
                           **_TIERED),
    sebotnet33ts=ByoModelCfg(blocks=_RESNET33, act_layer="silu", num_features=1280, attn_layer="se",
                             self_attn_layer="bottleneck", **_TIERED_NO_POOL),
    eca_botnext26ts=ByoModelCfg(blocks=_resnet26(gs=16), fixed_input_size=True, act_layer="silu", attn_layer="eca",
                                self_attn_layer="bottleneck", self_attn_kwargs=dict(dim_head=16), **_TIERED),
    # HaloNet-H1: halo attention in every block (no bottleneck: ratio 1), a 7x7 stem with max pooling
    halonet_h1=ByoModelCfg(blocks=tuple(ByoBlockCfg(type="self_attn", d=d, c=c, s=s, gs=0, br=1.0)
                                        for d, c, s in ((3, 64, 1), (3, 128, 2), (10, 256, 2), (3, 512, 2))),
                           stem_chs=64, stem_type="7x7", stem_pool="maxpool", self_attn_layer="halo",
                           self_attn_kwargs=dict(block_size=8, halo_size=3)),
    halonet26t=ByoModelCfg(blocks=_resnet26(), self_attn_layer="halo",
                           self_attn_kwargs=dict(block_size=8, halo_size=2), **_TIERED),
    sehalonet33ts=ByoModelCfg(blocks=_RESNET33, act_layer="silu", num_features=1280, attn_layer="se",
                              self_attn_layer="halo", self_attn_kwargs=dict(block_size=8, halo_size=3),
                              **_TIERED_NO_POOL),
    halonet50ts=ByoModelCfg(blocks=_resnet50(second=_halo(block_size=8, halo_size=3, num_heads=4)), act_layer="silu",
                            self_attn_layer="halo", self_attn_kwargs=dict(block_size=8, halo_size=3), **_TIERED),
    eca_halonext26ts=ByoModelCfg(blocks=_resnet26(gs=16), act_layer="silu", attn_layer="eca", self_attn_layer="halo",
                                 self_attn_kwargs=dict(block_size=8, halo_size=2, dim_head=16), **_TIERED),
    lambda_resnet26t=ByoModelCfg(blocks=_resnet26(), self_attn_layer="lambda", self_attn_kwargs=dict(r=9),
                                 **_TIERED),
    lambda_resnet50ts=ByoModelCfg(blocks=_resnet50(), act_layer="silu", self_attn_layer="lambda",
                                  self_attn_kwargs=dict(r=9), **_TIERED),
    lambda_resnet26rpt_256=ByoModelCfg(blocks=_resnet26(), self_attn_layer="lambda", self_attn_kwargs=dict(r=None),
                                       **_TIERED),
    # RegNetZ-B's stages (inverted bottlenecks, groups of 16) with halo attention in every fourth block of the third
    # stage and the whole last stage
    haloregnetz_b=ByoModelCfg(
        blocks=(_bottlenecks(2, 48, 2, 16, 3), _bottlenecks(6, 96, 2, 16, 3), _mixed(12, 192, every=3, gs=16, br=3),
                ByoBlockCfg(type="self_attn", d=2, c=288, s=2, gs=16, br=3)),
        stem_chs=32, stem_pool="", downsample="", num_features=1536, act_layer="silu", attn_layer="se",
        attn_kwargs=dict(rd_ratio=0.25), block_kwargs=dict(bottle_in=True, linear_out=True), self_attn_layer="halo",
        self_attn_kwargs=dict(block_size=7, halo_size=2, qk_ratio=0.33)),
    lamhalobotnet50ts=ByoModelCfg(
        blocks=_resnet50(second=dict(self_attn_layer="lambda", self_attn_kwargs=dict(r=13)),
                         third=_halo(halo_size=3), fourth=dict(self_attn_layer="bottleneck", self_attn_kwargs={}),
                         second_every=1),
        act_layer="silu", **_TIERED_NO_POOL),
    halo2botnet50ts=ByoModelCfg(
        blocks=_resnet50(second=_halo(halo_size=3), third=_halo(halo_size=3),
                         fourth=dict(self_attn_layer="bottleneck", self_attn_kwargs={}), second_every=1),
        act_layer="silu", **_TIERED_NO_POOL),
)


def _create_byoanet(variant, cfg_name, pretrained, progress, kwargs, img_size=None):
    """Build ``variant`` from the config ``cfg_name``, as timm does: extra keyword arguments replace config fields,
    fixed-size models get ``img_size`` unless given, and ``features_only`` gives timm's five maps unless
    ``out_indices`` says otherwise, under timm's flattened names."""
    if img_size is not None:
        kwargs.setdefault("img_size", img_size)
    if kwargs.get("features_only"):
        kwargs.setdefault("out_indices", (0, 1, 2, 3, 4))
    return build_model(ByobNet, variant, pretrained, progress=progress, cfg=model_cfgs[cfg_name], **kwargs)


@register_model
def botnet26t_256(pretrained=False, progress=True, **kwargs):
    """BoTNet-26-T: ResNet-26-T with bottleneck attention in its last three blocks (256 x 256 inputs)."""
    return _create_byoanet("botnet26t_256", "botnet26t", pretrained, progress, kwargs, img_size=256)


@register_model
def botnet50ts_256(pretrained=False, progress=True, **kwargs):
    """BoTNet-50-TS: ResNet-50-TS (SiLU) with bottleneck attention in the second stage's last block and every second
    block of the last two stages (256 x 256 inputs)."""
    return _create_byoanet("botnet50ts_256", "botnet50ts", pretrained, progress, kwargs, img_size=256)


@register_model
def sebotnet33ts_256(pretrained=False, progress=True, **kwargs):
    """BoTNet-33-TS: ResNet-33-TS (SiLU) with bottleneck attention, SE in the other blocks (256 x 256 inputs)."""
    return _create_byoanet("sebotnet33ts_256", "sebotnet33ts", pretrained, progress, kwargs, img_size=256)


@register_model
def eca_botnext26ts_256(pretrained=False, progress=True, **kwargs):
    """BoTNeXt-26-TS: ResNeXt-26-TS (groups of 16, SiLU) with bottleneck attention (heads of 16 channels), ECA in
    the other blocks (256 x 256 inputs)."""
    return _create_byoanet("eca_botnext26ts_256", "eca_botnext26ts", pretrained, progress, kwargs, img_size=256)


@register_model
def halonet_h1(pretrained=False, progress=True, **kwargs):
    """HaloNet-H1: halo attention (blocks of 8, halos of 3) in all 19 blocks, 64 to 512 channels, a 7x7 stem."""
    return _create_byoanet("halonet_h1", "halonet_h1", pretrained, progress, kwargs)


@register_model
def halonet26t(pretrained=False, progress=True, **kwargs):
    """HaloNet-26-T: ResNet-26-T with halo attention (blocks of 8, halos of 2) in its last three blocks."""
    return _create_byoanet("halonet26t", "halonet26t", pretrained, progress, kwargs)


@register_model
def sehalonet33ts(pretrained=False, progress=True, **kwargs):
    """HaloNet-33-TS: ResNet-33-TS (SiLU) with halo attention (blocks of 8, halos of 3), SE in the other blocks."""
    return _create_byoanet("sehalonet33ts", "sehalonet33ts", pretrained, progress, kwargs)


@register_model
def halonet50ts(pretrained=False, progress=True, **kwargs):
    """HaloNet-50-TS: ResNet-50-TS (SiLU) with halo attention (blocks of 8, halos of 3) in the last three stages."""
    return _create_byoanet("halonet50ts", "halonet50ts", pretrained, progress, kwargs)


@register_model
def eca_halonext26ts(pretrained=False, progress=True, **kwargs):
    """HaloNeXt-26-TS: ResNeXt-26-TS (groups of 16, SiLU) with halo attention (blocks of 8, halos of 2, heads of 16
    channels), ECA in the other blocks."""
    return _create_byoanet("eca_halonext26ts", "eca_halonext26ts", pretrained, progress, kwargs)


@register_model
def lambda_resnet26t(pretrained=False, progress=True, **kwargs):
    """LambdaResNet-26-T: ResNet-26-T with lambda layers (9 x 9 position convolutions) in its last three blocks."""
    return _create_byoanet("lambda_resnet26t", "lambda_resnet26t", pretrained, progress, kwargs)


@register_model
def lambda_resnet50ts(pretrained=False, progress=True, **kwargs):
    """LambdaResNet-50-TS: ResNet-50-TS (SiLU) with lambda layers (9 x 9 position convolutions) in the last three
    stages."""
    return _create_byoanet("lambda_resnet50ts", "lambda_resnet50ts", pretrained, progress, kwargs)


@register_model
def lambda_resnet26rpt_256(pretrained=False, progress=True, **kwargs):
    """LambdaResNet-26-RPT: ResNet-26-T with lambda layers on relative position embeddings (256 x 256 inputs)."""
    return _create_byoanet("lambda_resnet26rpt_256", "lambda_resnet26rpt_256", pretrained, progress, kwargs,
                           img_size=256)


@register_model
def haloregnetz_b(pretrained=False, progress=True, **kwargs):
    """HaloRegNetZ-B: RegNetZ-B's inverted bottlenecks (SE, SiLU) with halo attention (blocks of 7, halos of 2,
    query / key width a third of the values')."""
    return _create_byoanet("haloregnetz_b", "haloregnetz_b", pretrained, progress, kwargs)


@register_model
def lamhalobotnet50ts_256(pretrained=False, progress=True, **kwargs):
    """ResNet-50-TS (SiLU) with lambda layers in the second stage, halo attention in the third and bottleneck
    attention in the last (256 x 256 inputs)."""
    return _create_byoanet("lamhalobotnet50ts_256", "lamhalobotnet50ts", pretrained, progress, kwargs, img_size=256)


@register_model
def halo2botnet50ts_256(pretrained=False, progress=True, **kwargs):
    """ResNet-50-TS (SiLU) with halo attention in the second and third stages and bottleneck attention in the last
    (256 x 256 inputs)."""
    return _create_byoanet("halo2botnet50ts_256", "halo2botnet50ts", pretrained, progress, kwargs, img_size=256)
