"""MLP-Mixer (Tolstikhin et al. 2021, "MLP-Mixer: An all-MLP Architecture for Vision"), ResMLP (Touvron et al.
2021, "ResMLP: Feedforward networks for image classification with data-efficient training") and gMLP (Liu et al.
2021, "Pay Attention to MLPs"): mixer_s32_224, mixer_s16_224, mixer_b32_224, mixer_b16_224, mixer_l32_224,
mixer_l16_224, gmixer_12_224, gmixer_24_224, resmlp_12_224, resmlp_24_224, resmlp_36_224, resmlp_big_24_224,
gmlp_ti16_224, gmlp_s16_224 and gmlp_b16_224.

Three all-MLP vision models on one trunk: an image is cut into non-overlapping patches embedded by a strided
convolution, and a stack of residual blocks alternates mixing across patches (token mixing, an MLP or a linear
layer over the patch axis) with mixing across channels (a per-patch MLP). MLP-Mixer normalises with LayerNorm
and mixes tokens with an MLP; ResMLP replaces the norms by a learnt per-channel affine map, mixes tokens with a
single linear layer and scales each residual branch by a learnt per-channel factor (layer scale); gMLP has one
branch per block, a channel MLP whose hidden half gates the other half after a linear map across patches (the
spatial gating unit). timm's GLU-Mixer (gmixer) is the Mixer with gated MLPs (SwiGLU: half the hidden width,
through SiLU, gates the other half) for both mixings. Token mixing works on a fixed number of patches, so a model
takes images of its ``img_size`` only. Model names, module names, ``state_dict`` keys and initialisation follow timm's
``mlp_mixer`` module, so timm's checkpoints load directly; the variants timm publishes no weights for (Mixer-S,
Mixer-B/32, Mixer-L/32, GLU-Mixer-12, gMLP-Ti and gMLP-B) are registered too, to train from scratch.
"""
import math
from functools import partial

import engine as torch
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import MeanTokenHeadApi, Mlp, PatchEmbed, drop_path_module, pair

__all__ = []


class GatedMlp(nn.Module):
    """gMLP's channel MLP: Linear to ``hidden_features``, activation, dropout, a gate that halves the width
    (the spatial gating unit), Linear back to ``in_features``, dropout.

    ``norm`` is an identity; it is there because timm's module tree has it.
    """

    def __init__(self, in_features, hidden_features, gate_layer, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        if hidden_features % 2:
            raise ValueError(f"the gated MLP splits its hidden width in two: {hidden_features} is odd")
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.gate = gate_layer(hidden_features)
        self.norm = nn.Identity()
        self.fc2 = nn.Linear(hidden_features // 2, in_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop1(x)
        x = self.gate(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class GluMlp(nn.Module):
    """The gated linear unit MLP (timm's ``GluMlp``): ``fc1`` to ``hidden_features``, whose second half, through
    ``act_layer``, gates the first half; dropout, ``norm`` (an identity: timm's slot for a norm), ``fc2`` from the
    gated half back to ``in_features``, dropout.

    ``init_weights`` starts the gate open and flat (gate weights N(0, 1e-6), biases one), as timm does after its
    model-wide init.
    """

    def __init__(self, in_features, hidden_features, act_layer=nn.Sigmoid, drop=0.0):
        super().__init__()
        if hidden_features % 2:
            raise ValueError(f"the gated MLP splits its hidden width in two: {hidden_features} is odd")
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.norm = nn.Identity()
        self.fc2 = nn.Linear(hidden_features // 2, in_features)
        self.drop2 = nn.Dropout(drop)

    def init_weights(self):
        """Gate half of ``fc1``: weights N(0, 1e-6), biases one."""
        gate = self.fc1.weight.shape[0] // 2
        nn.init.ones_(self.fc1.bias[gate:])
        nn.init.normal_(self.fc1.weight[gate:], std=1e-6)

    def forward(self, x):
        x = self.fc1(x)
        x, gate = x.chunk(2, dim=-1)
        x = x * self.act(gate)
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class MixerBlock(nn.Module):
    """The Mixer layer: x + token-mixing MLP (across patches) of norm1(x), then x + channel-mixing MLP of norm2(x).

    ``mlp_ratio`` gives the two MLPs' hidden widths as multiples of ``dim``: (token mixing, channel mixing),
    or one number for both. ``drop_path`` is the probability of dropping a residual branch for a sample.
    """

    def __init__(self, dim, seq_len, mlp_ratio=(0.5, 4.0), mlp_layer=Mlp, norm_layer=partial(nn.LayerNorm, eps=1e-6),
                 act_layer=nn.GELU, drop=0.0, drop_path=0.0):
        super().__init__()
        tokens_ratio, channels_ratio = pair(mlp_ratio)
        self.norm1 = norm_layer(dim)
        self.mlp_tokens = mlp_layer(seq_len, int(tokens_ratio * dim), act_layer=act_layer, drop=drop)
        self.drop_path = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp_channels = mlp_layer(dim, int(channels_ratio * dim), act_layer=act_layer, drop=drop)

    def forward(self, x):
        tokens = self.norm1(x).transpose(1, 2)
        tokens = self.mlp_tokens(tokens).transpose(1, 2)
        x = x + self.drop_path(tokens)
        channels = self.mlp_channels(self.norm2(x))
        x = x + self.drop_path(channels)
        return x


class Affine(nn.Module):
    """ResMLP's normalisation: a learnt per-channel scale ``alpha`` (ones) and shift ``beta`` (zeros), no
    statistics, which lets it train without any batch or layer normalisation."""

    def __init__(self, dim):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, 1, dim))
        self.beta = nn.Parameter(torch.zeros(1, 1, dim))

    def forward(self, x):
        return torch.addcmul(self.beta, self.alpha, x)


class ResBlock(nn.Module):
    """The ResMLP layer: x + ls1 * linear token mixing (across patches) of norm1(x), then x + ls2 * channel MLP of
    norm2(x).

    ``ls1`` and ``ls2`` are the per-channel layer scales, starting at ``init_values`` (smaller for deeper
    models); ``drop_path`` is the probability of dropping a residual branch for a sample.
    """

    def __init__(self, dim, seq_len, mlp_ratio=4, mlp_layer=Mlp, norm_layer=Affine, act_layer=nn.GELU,
                 init_values=1e-4, drop=0.0, drop_path=0.0):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.linear_tokens = nn.Linear(seq_len, seq_len)
        self.drop_path = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp_channels = mlp_layer(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=drop)
        self.ls1 = nn.Parameter(init_values * torch.ones(dim))
        self.ls2 = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        tokens = self.linear_tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        x = x + self.drop_path(self.ls1 * tokens)
        channels = self.mlp_channels(self.norm2(x))
        x = x + self.drop_path(self.ls2 * channels)
        return x


class SpatialGatingUnit(nn.Module):
    """gMLP's gate: the channels split in halves u and v; v is normalised and mapped linearly across patches
    (``proj``), and gates u by an elementwise product.

    ``proj`` starts near the identity gate (weights N(0, 1e-6), biases one), as the paper advises for stable
    training; ``norm`` is a LayerNorm with torch's default eps (1e-5), as in timm.
    """

    def __init__(self, dim, seq_len, norm_layer=nn.LayerNorm):
        super().__init__()
        self.norm = norm_layer(dim // 2)
        self.proj = nn.Linear(seq_len, seq_len)

    def init_weights(self):
        """Near-zero spatial weights and unit biases, so the unit starts as u * 1."""
        nn.init.normal_(self.proj.weight, std=1e-6)
        nn.init.ones_(self.proj.bias)

    def forward(self, x):
        u, v = x.chunk(2, dim=-1)
        v = self.norm(v)
        v = self.proj(v.transpose(-1, -2)).transpose(-1, -2)
        return u * v


class SpatialGatingBlock(nn.Module):
    """The gMLP layer: x + gated channel MLP (``GatedMlp`` with a spatial gating unit) of norm(x).

    ``mlp_ratio`` is the MLP's hidden width over ``dim`` (before the gate halves it); ``drop_path`` is the
    probability of dropping the residual branch for a sample.
    """

    def __init__(self, dim, seq_len, mlp_ratio=4, mlp_layer=GatedMlp, norm_layer=partial(nn.LayerNorm, eps=1e-6),
                 act_layer=nn.GELU, drop=0.0, drop_path=0.0):
        super().__init__()
        self.norm = norm_layer(dim)
        gate_layer = partial(SpatialGatingUnit, seq_len=seq_len)
        self.mlp_channels = mlp_layer(dim, int(dim * mlp_ratio), gate_layer=gate_layer, act_layer=act_layer,
                                      drop=drop)
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        x = x + self.drop_path(self.mlp_channels(self.norm(x)))
        return x


def _lecun_normal_(weight):
    """Flax's LeCun normal: N(0, 1/fan_in) truncated at two standard deviations (its std rescaled so the
    truncated distribution keeps variance 1/fan_in), drawn by inverting the normal CDF as timm does."""
    fan_in = weight[0].numel()
    std = math.sqrt(1.0 / fan_in) / 0.87962566103423978
    bound = math.erf(2.0 / math.sqrt(2.0))
    with torch.no_grad():
        weight.uniform_(-bound, bound)
        weight.erfinv_()
        weight.mul_(math.sqrt(2.0))
        weight.clamp_(min=-2.0, max=2.0)
        weight.mul_(std)


def _init_jax_layer(name, module, head):
    """timm's Flax-like init of the layer ``name``: a Linear whose name starts with ``head`` zeroed, other Linears
    Xavier-uniform with biases N(0, 1e-6) inside MLPs and zero elsewhere, convolutions LeCun-normal with zero
    biases. Returns whether ``module`` was such a layer (other modules are left alone)."""
    if isinstance(module, nn.Linear) and name.startswith(head):
        nn.init.zeros_(module.weight)
        nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Linear):
        nn.init.xavier_uniform_(module.weight)
        if "mlp" in name:
            nn.init.normal_(module.bias, std=1e-6)
        else:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Conv2d):
        _lecun_normal_(module.weight)
        nn.init.zeros_(module.bias)
    else:
        return False
    return True


def _modules_children_first(module, prefix=""):
    """(name, module) of every submodule of ``module``, each after its own children (the order of timm's init)."""
    for name, child in module.named_children():
        path = f"{prefix}.{name}" if prefix else name
        yield from _modules_children_first(child, path)
        yield path, child


def _check_pool(global_pool):
    """The Mixer family pools by averaging the tokens, or not at all."""
    if global_pool not in ("", "avg"):
        raise ValueError(f"global_pool must be 'avg' or '' (no pooling), got {global_pool!r}")


class MlpMixer(MeanTokenHeadApi, nn.Module):
    """Patch embedding ``stem``, ``num_blocks`` residual blocks of ``block_layer`` (Mixer, ResMLP or gMLP layers),
    a final norm, average pooling over the patches and a linear ``head``.

    ``mlp_ratio`` is passed to every block (a pair for Mixer blocks); ``proj_drop_rate`` is the dropout inside
    the MLPs, ``drop_path_rate`` the stochastic depth of every block (the same for all, as in timm),
    ``drop_rate`` the dropout before the head. ``global_pool`` is ``'avg'`` or ``''`` (no pooling: the head
    sees every token); ``num_classes=0`` replaces the head by an identity.
    """

    default_cfg = {"first_conv": "stem.proj", "classifier": "head"}
    # features_only: the blocks' tokens as (N, C, H, W) maps of the patch grid, through forward_intermediates
    feature_wrapper = FeatureGetterNet
    _check_pool = staticmethod(_check_pool)

    def __init__(self, num_classes=1000, img_size=224, in_chans=3, patch_size=16, num_blocks=8, embed_dim=512,
                 mlp_ratio=(0.5, 4.0), block_layer=MixerBlock, mlp_layer=Mlp,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6), act_layer=nn.GELU, drop_rate=0.0, proj_drop_rate=0.0,
                 drop_path_rate=0.0, global_pool="avg"):
        super().__init__()
        _check_pool(global_pool)
        self.num_classes = num_classes
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.stem = PatchEmbed(img_size, patch_size, in_chans, embed_dim)
        self.blocks = nn.Sequential(*[
            block_layer(embed_dim, self.stem.num_patches, mlp_ratio, mlp_layer=mlp_layer, norm_layer=norm_layer,
                        act_layer=act_layer, drop=proj_drop_rate, drop_path=drop_path_rate)
            for _ in range(num_blocks)
        ])
        reduction = max(self.stem.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction)
                             for i in range(num_blocks)]
        self.norm = norm_layer(embed_dim)
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(embed_dim, num_classes) if num_classes > 0 else nn.Identity()
        self._init_weights()

    def _init_weights(self):
        """timm's (Flax-like) init, children before parents: LeCun-normal patch embedding, Xavier-uniform linear
        layers with biases N(0, 1e-6) inside MLPs and zero elsewhere, a zero head; then each block's own
        ``init_weights`` (the spatial gating unit's)."""
        for name, module in _modules_children_first(self):
            if not _init_jax_layer(name, module, "head") and hasattr(module, "init_weights"):
                module.init_weights()

    def forward_features(self, x):
        """The normalised patch tokens after the last block (N, patches, embed_dim)."""
        x = self.stem(x)
        x = self.blocks(x)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the blocks picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, rows,
        cols) maps of the patch grid ('NCHW') or token sequences ('NLC'), and (unless ``intermediates_only``) the
        last tokens run, through the final norm. ``norm`` applies the final norm to each intermediate (every block
        has the final width); ``stop_early`` skips the blocks after the last one picked."""
        take, blocks = intermediate_stages(self.blocks, indices, stop_early, output_fmt, ("NCHW", "NLC"))
        batch = x.shape[0]
        x = self.stem(x)
        intermediates = []
        for i, block in enumerate(blocks):
            x = block(x)
            if i in take:
                intermediates.append(self.norm(x) if norm else x)
        if output_fmt == "NCHW":
            intermediates = [self._as_map(tokens, batch) for tokens in intermediates]
        if intermediates_only:
            return intermediates
        x = self.norm(x)
        return x, intermediates

    def _as_map(self, tokens, batch):
        """(N, patches, C) tokens as an (N, C, rows, cols) map of the patch grid."""
        rows, cols = self.stem.grid_size
        return tokens.reshape(batch, rows, cols, -1).permute(0, 3, 1, 2).contiguous()

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks, the final norm with ``prune_norm`` and the
        classifier with ``prune_head`` (every block has the final width, so ``num_features`` stays); returns the
        absolute indices."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = nn.Sequential(*list(self.blocks)[:max(take) + 1])
        if prune_norm:
            self.norm = nn.Identity()
        if prune_head:
            self.reset_classifier(0, "")
        return take


def _create_mixer(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's getter maps, the last three blocks' unless
    ``out_indices`` says otherwise."""
    return build_model(MlpMixer, variant, pretrained, progress=progress, **kwargs)


@register_model
def mixer_s32_224(pretrained=False, progress=True, **kwargs):
    """Mixer-S/32 at 224x224: 8 blocks, width 512, token MLP 256, channel MLP 2048."""
    return _create_mixer("mixer_s32_224", pretrained, progress, patch_size=32, num_blocks=8, embed_dim=512,
                         **kwargs)


@register_model
def mixer_s16_224(pretrained=False, progress=True, **kwargs):
    """Mixer-S/16 at 224x224: 8 blocks, width 512, token MLP 256, channel MLP 2048."""
    return _create_mixer("mixer_s16_224", pretrained, progress, patch_size=16, num_blocks=8, embed_dim=512,
                         **kwargs)


@register_model
def mixer_b32_224(pretrained=False, progress=True, **kwargs):
    """Mixer-B/32 at 224x224: 12 blocks, width 768, token MLP 384, channel MLP 3072."""
    return _create_mixer("mixer_b32_224", pretrained, progress, patch_size=32, num_blocks=12, embed_dim=768,
                         **kwargs)


@register_model
def mixer_b16_224(pretrained=False, progress=True, **kwargs):
    """Mixer-B/16 at 224x224: 12 blocks, width 768, token MLP 384, channel MLP 3072."""
    return _create_mixer("mixer_b16_224", pretrained, progress, patch_size=16, num_blocks=12, embed_dim=768,
                         **kwargs)


@register_model
def mixer_l32_224(pretrained=False, progress=True, **kwargs):
    """Mixer-L/32 at 224x224: 24 blocks, width 1024, token MLP 512, channel MLP 4096."""
    return _create_mixer("mixer_l32_224", pretrained, progress, patch_size=32, num_blocks=24, embed_dim=1024,
                         **kwargs)


@register_model
def mixer_l16_224(pretrained=False, progress=True, **kwargs):
    """Mixer-L/16 at 224x224: 24 blocks, width 1024, token MLP 512, channel MLP 4096."""
    return _create_mixer("mixer_l16_224", pretrained, progress, patch_size=16, num_blocks=24, embed_dim=1024,
                         **kwargs)


@register_model
def gmixer_12_224(pretrained=False, progress=True, **kwargs):
    """GLU-Mixer-12 at 224x224 (timm's): 16x16 patches, 12 blocks, width 384, SwiGLU token MLP 384 and channel
    MLP 1536 (gating halves them)."""
    return _create_mixer("gmixer_12_224", pretrained, progress, patch_size=16, num_blocks=12, embed_dim=384,
                         mlp_ratio=(1.0, 4.0), mlp_layer=GluMlp, act_layer=nn.SiLU, **kwargs)


@register_model
def gmixer_24_224(pretrained=False, progress=True, **kwargs):
    """GLU-Mixer-24 at 224x224 (timm's): 16x16 patches, 24 blocks, width 384, SwiGLU token MLP 384 and channel
    MLP 1536 (gating halves them)."""
    return _create_mixer("gmixer_24_224", pretrained, progress, patch_size=16, num_blocks=24, embed_dim=384,
                         mlp_ratio=(1.0, 4.0), mlp_layer=GluMlp, act_layer=nn.SiLU, **kwargs)


def _resmlp(variant, pretrained, progress, patch_size, num_blocks, embed_dim, init_values, **kwargs):
    """A ResMLP variant: ResMLP layers with Affine norms, channel MLP ratio 4, layer scales from ``init_values``."""
    block_layer = partial(ResBlock, init_values=init_values)
    return _create_mixer(variant, pretrained, progress, patch_size=patch_size, num_blocks=num_blocks,
                         embed_dim=embed_dim, mlp_ratio=4, block_layer=block_layer, norm_layer=Affine, **kwargs)


@register_model
def resmlp_12_224(pretrained=False, progress=True, **kwargs):
    """ResMLP-S12: 16x16 patches, 12 blocks, width 384, layer scale 1e-4."""
    return _resmlp("resmlp_12_224", pretrained, progress, 16, 12, 384, 1e-4, **kwargs)


@register_model
def resmlp_24_224(pretrained=False, progress=True, **kwargs):
    """ResMLP-S24: 16x16 patches, 24 blocks, width 384, layer scale 1e-5."""
    return _resmlp("resmlp_24_224", pretrained, progress, 16, 24, 384, 1e-5, **kwargs)


@register_model
def resmlp_36_224(pretrained=False, progress=True, **kwargs):
    """ResMLP-S36: 16x16 patches, 36 blocks, width 384, layer scale 1e-6."""
    return _resmlp("resmlp_36_224", pretrained, progress, 16, 36, 384, 1e-6, **kwargs)


@register_model
def resmlp_big_24_224(pretrained=False, progress=True, **kwargs):
    """ResMLP-B24: 8x8 patches, 24 blocks, width 768, layer scale 1e-6."""
    return _resmlp("resmlp_big_24_224", pretrained, progress, 8, 24, 768, 1e-6, **kwargs)


@register_model
def gmlp_ti16_224(pretrained=False, progress=True, **kwargs):
    """gMLP-Ti: 16x16 patches, 30 blocks, width 128, gated channel MLP 768 (gate 384)."""
    return _create_mixer("gmlp_ti16_224", pretrained, progress, patch_size=16, num_blocks=30, embed_dim=128,
                         mlp_ratio=6, block_layer=SpatialGatingBlock, mlp_layer=GatedMlp, **kwargs)


@register_model
def gmlp_s16_224(pretrained=False, progress=True, **kwargs):
    """gMLP-S: 16x16 patches, 30 blocks, width 256, gated channel MLP 1536 (gate 768)."""
    return _create_mixer("gmlp_s16_224", pretrained, progress, patch_size=16, num_blocks=30, embed_dim=256,
                         mlp_ratio=6, block_layer=SpatialGatingBlock, mlp_layer=GatedMlp, **kwargs)


@register_model
def gmlp_b16_224(pretrained=False, progress=True, **kwargs):
    """gMLP-B: 16x16 patches, 30 blocks, width 512, gated channel MLP 3072 (gate 1536)."""
    return _create_mixer("gmlp_b16_224", pretrained, progress, patch_size=16, num_blocks=30, embed_dim=512,
                         mlp_ratio=6, block_layer=SpatialGatingBlock, mlp_layer=GatedMlp, **kwargs)
