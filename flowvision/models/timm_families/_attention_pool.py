"""Attention pooling of a 2-d feature map (timm's ``layers/attention_pool2d``), the head of CLIP's modified ResNets
(Radford et al. 2021, "Learning Transferable Visual Models From Natural Language Supervision").

The map's mean is prepended to its pixels as a query token, learnt absolute position embeddings are added, and one
multi-head attention layer lets that token gather the map; its output, projected, is the pooled feature. Module
names, ``state_dict`` keys and initialisation follow timm's ``AttentionPool2d``, so CLIP checkpoints converted by
timm load directly.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from ._layers import pair, trunc_normal_
from .vision_transformer import resample_abs_pos_embed

__all__ = ["AttentionPool2d"]


class AttentionPool2d(nn.Module):
    """Attention pooling with learnt absolute position embeddings (``pos_embed``: one for the mean token, one per
    pixel of a ``feat_size`` map; resampled bicubically for maps of another size).

    The ``in_features`` channels of each pixel (and of the mean token, or of a learnt ``cls_token`` with
    ``class_token``) go through query, key and value projections to ``embed_dim`` (separate ``q``, ``k``, ``v``
    layers with ``qkv_separate``, else one fused ``qkv``), heads of ``head_dim`` channels (or ``num_heads``
    heads), scaled dot-product attention, dropout ``drop_rate`` and the output projection ``proj`` to
    ``out_features`` (None: ``in_features``; 0: no projection, ``embed_dim`` out). ``pool_type`` 'token' returns
    the first token, '' the (N, C, H, W) map of the pixel tokens.

    Weights start as timm's: the projections' default init at construction, then the query, key and value weights
    and the position embeddings truncated normal with std ``in_features ** -0.5``, their biases zero
    (``init_weights``, run again by the network's init).
    """

    def __init__(self, in_features, feat_size=7, out_features=None, embed_dim=None, head_dim=64, num_heads=None,
                 qkv_bias=True, qkv_separate=False, pool_type="token", class_token=False, drop_rate=0.0):
        super().__init__()
        self._check_pool_type(pool_type)
        self.embed_dim = embed_dim = embed_dim or in_features
        self.in_features = in_features
        if out_features is None:
            self.out_features = in_features
        elif out_features > 0:
            self.out_features = out_features
        else:
            self.out_features = embed_dim
        if num_heads is not None:
            head_dim = embed_dim // num_heads
        else:
            num_heads = embed_dim // head_dim
        if head_dim * num_heads != embed_dim:
            raise ValueError(f"embed_dim ({embed_dim}) must split into heads of equal width")
        self.feat_size = pair(feat_size)
        self.seq_len = self.feat_size[0] * self.feat_size[1]
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.pool_type = pool_type
        self.scale = head_dim ** -0.5
        self.cls_token = nn.Parameter(torch.zeros(1, embed_dim)) if class_token else None
        if qkv_separate:
            self.q = nn.Linear(in_features, embed_dim, bias=qkv_bias)
            self.k = nn.Linear(in_features, embed_dim, bias=qkv_bias)
            self.v = nn.Linear(in_features, embed_dim, bias=qkv_bias)
            self.qkv = None
        else:
            self.q = self.k = self.v = None
            self.qkv = nn.Linear(in_features, embed_dim * 3, bias=qkv_bias)
        self.drop = nn.Dropout(drop_rate)
        self.proj = nn.Linear(embed_dim, self.out_features) if out_features != 0 else nn.Identity()
        self.pos_embed = nn.Parameter(torch.zeros(self.seq_len + 1, in_features))
        self.init_weights()

    @staticmethod
    def _check_pool_type(pool_type):
        """Only the query token ('token') or the unpooled map ('') can come out."""
        if pool_type not in ("", "token"):
            raise ValueError(f"attention pooling gives 'token' or '' (the map), got global_pool {pool_type!r}")

    def init_weights(self, zero_init_last=False):
        """Query, key and value weights (separate or fused) and the position embeddings truncated normal with
        std ``in_features ** -0.5``, biases zero."""
        if self.qkv is None:
            layers = (self.q, self.k, self.v)
        else:
            layers = (self.qkv,)
        std = layers[0].in_features ** -0.5
        for layer in layers:
            trunc_normal_(layer.weight, std=std)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)
        trunc_normal_(self.pos_embed, std=std)

    def reset(self, num_classes=None, pool_type=None):
        """Another output: a fresh projection to ``num_classes`` (0: none, the attention's output) and/or another
        ``pool_type``; the attention itself stays (its input width is fixed)."""
        if pool_type is not None:
            self._check_pool_type(pool_type)
            self.pool_type = pool_type
        if num_classes is not None:
            self.proj = nn.Linear(self.embed_dim, num_classes) if num_classes > 0 else nn.Identity()
            self.proj.train(self.training)
            self.out_features = num_classes if num_classes > 0 else self.embed_dim

    def _heads(self, x):
        """(N, L, embed_dim) -> (N, heads, L, head_dim)."""
        batch, length, _ = x.shape
        return x.reshape(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    def _pool(self, x, height, width):
        """The first token, or the pixel tokens as an (N, C, H, W) map."""
        if self.pool_type == "token":
            return x[:, 0]
        return x[:, 1:].reshape(x.shape[0], height, width, -1).permute(0, 3, 1, 2)

    def forward(self, x, pre_logits=False):
        batch, _, height, width = x.shape
        x = x.flatten(2).transpose(1, 2)
        if self.cls_token is None:
            first = x.mean(1, keepdim=True)
        else:
            first = self.cls_token.expand(batch, -1, -1)
        x = torch.cat([first, x], dim=1)
        pos_embed = resample_abs_pos_embed(self.pos_embed.unsqueeze(0), (height, width), self.feat_size,
                                           num_prefix_tokens=1, antialias=True)
        x = x + pos_embed
        if self.qkv is None:
            q, k, v = self._heads(self.q(x)), self._heads(self.k(x)), self._heads(self.v(x))
        else:
            qkv = self.qkv(x).reshape(batch, -1, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
        x = F.scaled_dot_product_attention(q, k, v, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, height * width + 1, -1)
        x = self.drop(x)
        if pre_logits:
            return self._pool(x, height, width)
        x = self.proj(x)
        return self._pool(x, height, width)
