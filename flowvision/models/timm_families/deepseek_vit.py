"""DeepSeek-V4's vision encoder (DeepSeek-AI 2026, "DeepSeek-V4.1-Flash: Pushing the Limits of KV Cache
Compression"): deepseek_vit_412m (a classifier), deepseek_vit_412m_align (a classifier over the VLM projector's
tokens) and deepseek_vit_412m_enc (the bare encoder with that projector).

A plain pre-norm vision transformer over 14-pixel patches with RMSNorm (computed in float32), fused query-key-value
projections with biases, a bias-free packed SwiGLU MLP, and axial 2-D rotary embeddings (RoPE, "half" layout) as
its only position encoding, so that any patch grid works; a final RMSNorm closes the encoder. The VLM projector
("aligner") gathers each 3x3 block of patch tokens (channel-major, the grid zero-padded to a multiple of 3) and maps
it through a GELU MLP to the language model's width. The classifiers average the tokens, normalise them without
learnt scale and apply a linear head. Model names, module names, ``state_dict`` keys and (seeded) initialisation
follow timm's ``deepseek_vit`` module, so its checkpoints load directly. The layers it shares with Qwen's encoder
(patch embedding, half-layout RoPE, the block) come from ``qwen3_vit``.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet
from .._helpers import build_model
from ..registry import register_model
from ._layers import init_linear_layers
from .qwen3_vit import (AxialRotaryEmbedding, EncoderClassifier, PatchEmbed, RopeBlock, RopeGridEncoderApi,
                        drop_path_rates)
from .vision_transformer import SwiGLUPacked

__all__ = []


class RmsNormFp32(nn.Module):
    """Root-mean-square normalisation over the last axis computed in float32 whatever the input's dtype (the result
    cast back to it), with a learnt scale ``weight`` (starting at 1) unless ``affine=False`` (timm's
    ``RmsNormFp32``)."""

    def __init__(self, channels, eps=1e-6, affine=True):
        super().__init__()
        self.normalized_shape = (channels,)
        self.eps = eps
        self.elementwise_affine = affine
        self.weight = nn.Parameter(torch.ones(channels)) if affine else None

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        if self.weight is not None:
            y = y * self.weight.float()
        return y.to(x.dtype)


class DeepseekVitBlock(RopeBlock):
    """Pre-norm block with RMSNorms, half-layout RoPE attention (biased projections) and a bias-free packed SwiGLU
    MLP (timm's ``GluMlp``, SiLU of the first half gating the second) of hidden width int(dim * mlp_ratio)."""

    def __init__(self, dim, num_heads, mlp_ratio=2.75, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 norm_layer=RmsNormFp32):
        hidden = int(dim * mlp_ratio) * 2
        super().__init__(dim, num_heads, lambda d: SwiGLUPacked(d, hidden, bias=False, drop=proj_drop), norm_layer,
                         proj_drop=proj_drop, attn_drop=attn_drop, drop_path=drop_path)


class DeepseekVitAligner(nn.Module):
    """DeepSeek's VLM projector: each ``downsample_ratio`` (r) x r block of patch tokens gathered channel-major
    (C, r, r) into one token, the grid zero-padded on the bottom and right to a multiple of r; ``fc1`` to
    ``out_features`` (the language model's width) with GELU (``act``), then ``fc2``. ``pre_logits`` stops after
    the activation."""

    def __init__(self, dim, downsample_ratio=3, out_features=0):
        super().__init__()
        if out_features <= 0:
            raise ValueError("the DeepSeek aligner projects to the language model's width: pass out_features")
        self.downsample_ratio = downsample_ratio
        self.hidden_size = dim * downsample_ratio ** 2
        self.out_features = out_features
        self.fc1 = nn.Linear(self.hidden_size, out_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(out_features, out_features)

    def unshuffle(self, x):
        """(N, H, W, C) -> (N, ceil(H / r) * ceil(W / r), C * r * r)."""
        batch, height, width, channels = x.shape
        r = self.downsample_ratio
        x = F.pad(x.permute(0, 3, 1, 2), (0, -width % r, 0, -height % r))
        rows, cols = x.shape[2] // r, x.shape[3] // r
        x = x.reshape(batch, channels, rows, r, cols, r).permute(0, 2, 4, 1, 3, 5)
        return x.reshape(batch, rows * cols, channels * r * r)

    def forward(self, x, pre_logits=False):
        x = self.act(self.fc1(self.unshuffle(x)))
        return x if pre_logits else self.fc2(x)


class DeepseekVitEncoder(RopeGridEncoderApi, nn.Module):
    """DeepSeek's vision encoder: ``patch_embed`` (``dynamic_img_pad`` pads images to whole patches), axial RoPE
    (``rope``, ``rope_temperature``), ``depth`` DeepseekVitBlocks, a final RMSNorm (``norm``) and, with
    ``global_pool='align'``, the VLM projector ``aligner`` (to ``out_features`` channels).

    ``forward_features`` gives the normalised patch tokens as an (N, H, W, C) grid; ``forward`` then the projector's
    tokens (N, ceil(H / 3) * ceil(W / 3), out_features) with 'align', their mean (N, C) with 'avg', or the grid with
    ''. The encoder has no classifier. ``proj_drop_rate``, ``attn_drop_rate`` and ``drop_path_rate`` (of the last
    block, rising linearly from 0) are the blocks' dropouts.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": None}
    feature_wrapper = FeatureGetterNet
    output_fmt = "NHWC"
    projector = "aligner"

    def __init__(self, img_size=546, patch_size=14, in_chans=3, out_features=0, global_pool="align", embed_dim=1024,
                 depth=32, num_heads=16, mlp_ratio=2816 / 1024, downsample_ratio=3, rope_temperature=10000.0,
                 norm_eps=1e-6, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, dynamic_img_pad=False):
        super().__init__()
        if global_pool not in ("", "avg", "align"):
            raise ValueError(f"global_pool must be 'align', 'avg' or '', got {global_pool!r}")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) should be divisible by num_heads ({num_heads})")
        self.in_chans = in_chans
        self.num_classes = 0
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.out_features = out_features
        self.downsample_ratio = downsample_ratio
        self.num_prefix_tokens = 0
        self.feature_dim = -1

        def norm_layer(dim):
            return RmsNormFp32(dim, eps=norm_eps)

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim, dynamic_img_pad=dynamic_img_pad)
        reduction = self.patch_embed.feat_ratio()
        self.rope = AxialRotaryEmbedding(embed_dim // num_heads, temperature=rope_temperature)
        rates = drop_path_rates(drop_path_rate, depth)
        self.blocks = nn.ModuleList([
            DeepseekVitBlock(embed_dim, num_heads, mlp_ratio=mlp_ratio, proj_drop=proj_drop_rate,
                             attn_drop=attn_drop_rate, drop_path=rates[i], norm_layer=norm_layer)
            for i in range(depth)])
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        self.norm = norm_layer(embed_dim)
        self.aligner = None
        if global_pool == "align":
            self.aligner = DeepseekVitAligner(embed_dim, downsample_ratio, out_features)
            self.head_hidden_size = self.aligner.out_features
        init_linear_layers(self)

    def _embed(self, x):
        """Images -> (patch tokens (N, H * W, C), RoPE table, (H, W))."""
        x = self.patch_embed(x)
        batch, height, width, channels = x.shape
        return x.reshape(batch, height * width, channels), self.rope.get_embed((height, width)), (height, width)

    def _final_norm(self, x):
        """The final RMSNorm (``norm``)."""
        return self.norm(x)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """The shared pruning (the blocks after the last one ``indices`` picks; with ``prune_head``, the projector),
        with the pruned blocks' feature_info and, with ``prune_norm``, the final norm; returns the absolute
        indices."""
        take = super().prune_intermediate_layers(indices, prune_head=prune_head)
        self.feature_info = self.feature_info[:max(take) + 1]
        if prune_norm:
            self.norm = nn.Identity()
        return take


class DeepseekVitClassifier(EncoderClassifier):
    """A classifier on DeepSeek's encoder (``encoder``): its normalised patch tokens, or with
    ``encoder_pool='align'`` its projector's tokens (``out_features`` wide), averaged (``global_pool='avg'``; ''
    keeps every token), normalised by an RMSNorm without learnt scale (``norm``; an identity without
    ``final_norm``), dropout (``drop_rate``) and a linear ``head`` (``num_classes``; 0: the normalised features).
    The encoder's arguments are as in ``DeepseekVitEncoder``; the head is initialised as its Linear layers."""

    projector = "aligner"

    def __init__(self, img_size=546, patch_size=14, in_chans=3, num_classes=1000, global_pool="avg", encoder_pool="",
                 out_features=0, embed_dim=1024, depth=32, num_heads=16, mlp_ratio=2816 / 1024, downsample_ratio=3,
                 rope_temperature=10000.0, norm_eps=1e-6, final_norm=True, drop_rate=0.0, proj_drop_rate=0.0,
                 attn_drop_rate=0.0, drop_path_rate=0.0, dynamic_img_pad=False):
        super().__init__()
        self._check_pool(global_pool)
        if encoder_pool not in ("", "align"):
            raise ValueError(f"encoder_pool must be 'align' or '', got {encoder_pool!r}")
        self.in_chans = in_chans
        self.num_classes = num_classes
        self.global_pool = global_pool
        self.encoder_pool = encoder_pool
        self.encoder = DeepseekVitEncoder(
            img_size=img_size, patch_size=patch_size, in_chans=in_chans, out_features=out_features,
            global_pool=encoder_pool, embed_dim=embed_dim, depth=depth, num_heads=num_heads, mlp_ratio=mlp_ratio,
            downsample_ratio=downsample_ratio, rope_temperature=rope_temperature, norm_eps=norm_eps,
            proj_drop_rate=proj_drop_rate, attn_drop_rate=attn_drop_rate, drop_path_rate=drop_path_rate,
            dynamic_img_pad=dynamic_img_pad)
        self._add_head(embed_dim, encoder_pool, norm_eps, final_norm, drop_rate, num_classes)

    @staticmethod
    def _affine_free_norm(dim, eps):
        """An RMSNorm without learnt scale: the encoder already ends in a scaled one."""
        return RmsNormFp32(dim, eps=eps, affine=False)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Prune the encoder's blocks (and norm with ``prune_norm``; with ``prune_head`` its projector, then the
        classifier: the model gives the normalised patch tokens); returns the absolute indices."""
        take = self.encoder.prune_intermediate_layers(indices, prune_norm=prune_norm, prune_head=prune_head)
        self.feature_info = [dict(info, module=f"encoder.{info['module']}") for info in self.encoder.feature_info]
        if prune_head:
            self._drop_classifier()
        return take


# ---- entrypoints ------------------------------------------------------------------------------------------------


@register_model
def deepseek_vit_412m(pretrained=False, progress=True, **kwargs):
    """DeepSeek-V4 / V4.1's vision tower as a classifier: 32 blocks of width 1024."""
    return build_model(DeepseekVitClassifier, "deepseek_vit_412m", pretrained, progress=progress, **kwargs)


@register_model
def deepseek_vit_412m_align(pretrained=False, progress=True, **kwargs):
    """deepseek_vit_412m classifying the projector's tokens (5120 wide, DeepSeek-V4.1-Flash's language width)."""
    return build_model(DeepseekVitClassifier, "deepseek_vit_412m_align", pretrained, progress=progress,
                       **{"encoder_pool": "align", "out_features": 5120, **kwargs})


@register_model
def deepseek_vit_412m_enc(pretrained=False, progress=True, **kwargs):
    """DeepSeek-V4.1-Flash's vision encoder with its projector to 5120 channels."""
    # the encoder has no classifier: timm drops these two
    kwargs = {k: v for k, v in kwargs.items() if k not in ("num_classes", "drop_rate")}
    return build_model(DeepseekVitEncoder, "deepseek_vit_412m_enc", pretrained, progress=progress,
                       **{"out_features": 5120, **kwargs})
