"""FasterNet (Chen, Kao, He, Zhuo, Wen, Lee and Chan 2023, "Run, Don't Walk: Chasing Higher FLOPS for Faster Neural
Networks"): fasternet_t0, fasternet_t1, fasternet_t2, fasternet_s, fasternet_m and fasternet_l.

A convolutional network built around the partial convolution (PConv): a 3x3 convolution over only a quarter of the
channels, the rest passed through untouched, which cuts both FLOPs and memory traffic so that the layer runs at a
high FLOPS rate. A 4x4 stride-4 patch embedding and four stages, each but the first opening with a 2x2 stride-2
patch merging that doubles the width; a block is a PConv followed by a 1x1 expansion with BatchNorm and activation
and a 1x1 projection back, added to the block's input. The head pools globally, then widens to 1280 channels with a
1x1 convolution and activation before the classifier. Model names, module names, ``state_dict`` keys and (seeded)
initialisation follow timm's ``fasternet`` module, so its checkpoints load directly.
"""
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._layers import SelectAdaptivePool2d, drop_path_module, init_linear_layers

__all__ = []

PCONV_FORWARDS = ("split_cat", "slicing")


class Partial_conv3(nn.Module):
    """The partial convolution: a bias-free 3x3 convolution (``partial_conv3``) over the first ``dim // n_div``
    channels, the others passed on as they are. ``forward_type`` 'split_cat' splits the channels, convolves the first
    part and concatenates (training and inference); 'slicing' writes the convolved channels into a copy of the input
    (inference only, as in timm: autograd refuses the in-place write)."""

    def __init__(self, dim, n_div, forward_type="split_cat"):
        super().__init__()
        if forward_type not in PCONV_FORWARDS:
            raise ValueError(f"unknown pconv_fw_type '{forward_type}': expected one of {PCONV_FORWARDS}")
        self.forward_type = forward_type
        self.dim_conv3 = dim // n_div
        self.dim_untouched = dim - self.dim_conv3
        self.partial_conv3 = nn.Conv2d(self.dim_conv3, self.dim_conv3, 3, 1, 1, bias=False)

    def forward_slicing(self, x):
        """The convolved channels written over those of a copy of ``x`` (the original stays for the residual)."""
        x = x.clone()
        x[:, :self.dim_conv3, :, :] = self.partial_conv3(x[:, :self.dim_conv3, :, :])
        return x

    def forward_split_cat(self, x):
        """The convolved channels concatenated with the untouched ones."""
        convolved, untouched = torch.split(x, [self.dim_conv3, self.dim_untouched], dim=1)
        convolved = self.partial_conv3(convolved)
        return torch.cat((convolved, untouched), 1)

    def forward(self, x):
        if self.forward_type == "slicing":
            return self.forward_slicing(x)
        return self.forward_split_cat(x)


class MLPBlock(nn.Module):
    """FasterNet's block: the partial convolution (``spatial_mixing``), then a 1x1 expansion to ``mlp_ratio`` times
    the width with BatchNorm and activation and a 1x1 projection back (``mlp``), scaled per channel by
    ``layer_scale`` when ``layer_scale_init_value`` is positive, added to the input after stochastic depth
    (``drop_path``)."""

    def __init__(self, dim, n_div, mlp_ratio, drop_path, layer_scale_init_value,
                 act_layer=partial(nn.ReLU, inplace=True), norm_layer=nn.BatchNorm2d, pconv_fw_type="split_cat"):
        super().__init__()
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(
            nn.Conv2d(dim, hidden, 1, bias=False),
            norm_layer(hidden),
            act_layer(),
            nn.Conv2d(hidden, dim, 1, bias=False),
        )
        self.spatial_mixing = Partial_conv3(dim, n_div, pconv_fw_type)
        if layer_scale_init_value > 0:
            self.layer_scale = nn.Parameter(layer_scale_init_value * torch.ones(dim))
        else:
            self.layer_scale = None
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = x
        x = self.spatial_mixing(x)
        x = self.mlp(x)
        if self.layer_scale is not None:
            x = self.layer_scale.unsqueeze(-1).unsqueeze(-1) * x
        return shortcut + self.drop_path(x)


class PatchEmbed(nn.Module):
    """The stem: a bias-free ``patch_size`` convolution of the same stride to ``embed_dim`` channels (``proj``) and a
    norm (``norm``)."""

    def __init__(self, in_chans, embed_dim, patch_size=4, norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, patch_size, patch_size, bias=False)
        self.norm = norm_layer(embed_dim)

    def forward(self, x):
        return self.norm(self.proj(x))


class PatchMerging(nn.Module):
    """A stage's downsampling: a bias-free ``patch_size`` convolution of the same stride from ``dim`` to twice as
    many channels (``reduction``) and a norm (``norm``)."""

    def __init__(self, dim, patch_size=2, norm_layer=nn.BatchNorm2d):
        super().__init__()
        self.reduction = nn.Conv2d(dim, 2 * dim, patch_size, patch_size, bias=False)
        self.norm = norm_layer(2 * dim)

    def forward(self, x):
        return self.norm(self.reduction(x))


class Block(nn.Module):
    """A stage of ``depth`` blocks of width ``dim`` (``blocks``; block i with stochastic depth
    ``drop_path_rates[i]``), run after the patch merging from half the width (``downsample``) when ``use_merge``.
    As in timm, the blocks are built (and initialised) before the merging that runs first."""

    def __init__(self, dim, depth, n_div, mlp_ratio, drop_path_rates, layer_scale_init_value,
                 act_layer=partial(nn.ReLU, inplace=True), norm_layer=nn.BatchNorm2d, pconv_fw_type="split_cat",
                 use_merge=True, merge_size=2):
        super().__init__()
        self.blocks = nn.Sequential(*[
            MLPBlock(dim, n_div, mlp_ratio, drop_path_rates[i], layer_scale_init_value, act_layer, norm_layer,
                     pconv_fw_type)
            for i in range(depth)
        ])
        self.downsample = PatchMerging(dim // 2, merge_size, norm_layer) if use_merge else nn.Identity()

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class FasterNet(nn.Module):
    """FasterNet: the patch embedding to ``embed_dim`` channels at stride ``patch_size`` (``patch_embed``; its norm
    an identity without ``patch_norm``), ``len(depths)`` stages doubling the width and halving the resolution from
    the second on (``stages``), then the head: global pooling (``global_pool``), a bias-free 1x1 convolution to
    ``feature_dim`` channels (``conv_head``) with ``act_layer`` (``act``), flattening (``flatten``), dropout and the
    classifier (``classifier``).

    ``drop_path_rate`` is the last stage's stochastic depth, the rates rising linearly over the blocks from 0 at the
    first; ``drop_rate`` the dropout before the classifier. ``global_pool``: 'avg', 'max', 'avgmax' or '' (no pooling:
    the 1x1 convolution then runs on the whole map, and the classifier needs ``num_classes=0``); the head's
    convolution fixes the pooled width, so 'catavgmax' is refused. ``pconv_fw_type``: see ``Partial_conv3``.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "classifier"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, num_classes=1000, global_pool="avg", embed_dim=96, depths=(1, 2, 8, 2),
                 mlp_ratio=2.0, n_div=4, patch_size=4, merge_size=2, patch_norm=True, feature_dim=1280,
                 drop_rate=0.0, drop_path_rate=0.1, layer_scale_init_value=0.0,
                 act_layer=partial(nn.ReLU, inplace=True), norm_layer=nn.BatchNorm2d, pconv_fw_type="split_cat"):
        super().__init__()
        if pconv_fw_type not in PCONV_FORWARDS:
            raise ValueError(f"unknown pconv_fw_type '{pconv_fw_type}': expected one of {PCONV_FORWARDS}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.num_stages = len(depths)
        self.feature_info = []
        self.patch_embed = PatchEmbed(in_chans, embed_dim, patch_size, norm_layer if patch_norm else nn.Identity)
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        stages = []
        first_block = 0
        for stage_idx, depth in enumerate(depths):
            dim = int(embed_dim * 2 ** stage_idx)
            stages.append(Block(dim, depth, n_div, mlp_ratio, rates[first_block:first_block + depth],
                                layer_scale_init_value, act_layer, norm_layer, pconv_fw_type,
                                use_merge=stage_idx > 0, merge_size=merge_size))
            first_block += depth
            self.feature_info.append(dict(num_chs=dim, reduction=2 ** (stage_idx + 2), module=f"stages.{stage_idx}"))
        self.stages = nn.Sequential(*stages)
        self.num_features = int(embed_dim * 2 ** (self.num_stages - 1))
        self.head_hidden_size = feature_dim
        self._set_pooling(global_pool)
        self.conv_head = nn.Conv2d(self.num_features, feature_dim, 1, 1, 0, bias=False)
        self.act = act_layer()
        self.flatten = nn.Flatten(1) if global_pool else nn.Identity()
        self._set_classifier(num_classes)
        init_linear_layers(self, std=0.02, types=(nn.Linear, nn.Conv2d))

    def _set_pooling(self, global_pool):
        """The global pooling ``global_pool``, unflattened (the head's 1x1 convolution comes next); pooling that
        changes the width is refused, as the convolution is sized for ``num_features`` channels."""
        pool = SelectAdaptivePool2d(global_pool, flatten=False)
        if pool.feat_mult() != 1:
            raise ValueError(f"global_pool '{global_pool}' changes the pooled width, which FasterNet's head refuses")
        self.global_pool = pool

    def _set_classifier(self, num_classes):
        """A fresh linear classifier for ``num_classes`` (0: an identity) on the head's width."""
        self.classifier = nn.Linear(self.head_hidden_size, num_classes) if num_classes > 0 else nn.Identity()

    def get_classifier(self):
        """The final linear layer."""
        return self.classifier

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh (default-initialised) classifier for ``num_classes`` (0: the head's features), after the pooling
        ``global_pool`` (by default the current one, rebuilt); the head's convolution stays. The new layers take the
        model's training mode."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self._set_pooling(global_pool)
        self.global_pool.train(self.training)
        self.flatten = (nn.Flatten(1) if global_pool else nn.Identity()).train(self.training)
        self._set_classifier(num_classes)
        self.classifier.train(self.training)

    def forward_features(self, x):
        """The last stage's map (N, num_features, H / 32, W / 32)."""
        x = self.patch_embed(x)
        x = self.stages(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling, the 1x1 convolution and activation, flattening and dropout; then the classifier unless
        ``pre_logits``."""
        x = self.global_pool(x)
        x = self.conv_head(x)
        x = self.act(x)
        x = self.flatten(x)
        if self.drop_rate > 0.0:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return x if pre_logits else self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list), and (unless
        ``intermediates_only``) the last map computed; ``stop_early`` skips the stages after the last one picked.
        ``norm`` is accepted for timm's signature: FasterNet has no final norm."""
        return stage_intermediates(x, self.patch_embed, self.stages, indices, stop_early, output_fmt,
                                   intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, when asked or when stages go, the whole head
        (convolution, activation, pooling and classifier); returns the absolute indices. ``prune_norm`` is accepted
        for timm's signature: there is no final norm."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.conv_head = nn.Identity()
            self.act = nn.Identity()
            self.head_hidden_size = self.num_features
            self.reset_classifier(0, "")
        return take


def _create_fasternet(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's four stage outputs (strides 4 to 32) unless ``out_indices`` says otherwise, under
    timm's flattened names (``patch_embed``, ``stages_0``...)."""
    return build_model(FasterNet, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def fasternet_t0(pretrained=False, progress=True, **kwargs):
    """FasterNet-T0: width 40, depths (1, 2, 8, 2), GELU, no stochastic depth."""
    return _create_fasternet("fasternet_t0", pretrained, progress, kwargs, embed_dim=40, depths=(1, 2, 8, 2),
                             drop_path_rate=0.0, act_layer=nn.GELU)


@register_model
def fasternet_t1(pretrained=False, progress=True, **kwargs):
    """FasterNet-T1: width 64, depths (1, 2, 8, 2), GELU, stochastic depth 0.02."""
    return _create_fasternet("fasternet_t1", pretrained, progress, kwargs, embed_dim=64, depths=(1, 2, 8, 2),
                             drop_path_rate=0.02, act_layer=nn.GELU)


@register_model
def fasternet_t2(pretrained=False, progress=True, **kwargs):
    """FasterNet-T2: width 96, depths (1, 2, 8, 2), ReLU, stochastic depth 0.05."""
    return _create_fasternet("fasternet_t2", pretrained, progress, kwargs, embed_dim=96, depths=(1, 2, 8, 2),
                             drop_path_rate=0.05)


@register_model
def fasternet_s(pretrained=False, progress=True, **kwargs):
    """FasterNet-S: width 128, depths (1, 2, 13, 2), ReLU, stochastic depth 0.1."""
    return _create_fasternet("fasternet_s", pretrained, progress, kwargs, embed_dim=128, depths=(1, 2, 13, 2),
                             drop_path_rate=0.1)


@register_model
def fasternet_m(pretrained=False, progress=True, **kwargs):
    """FasterNet-M: width 144, depths (3, 4, 18, 3), ReLU, stochastic depth 0.2."""
    return _create_fasternet("fasternet_m", pretrained, progress, kwargs, embed_dim=144, depths=(3, 4, 18, 3),
                             drop_path_rate=0.2)


@register_model
def fasternet_l(pretrained=False, progress=True, **kwargs):
    """FasterNet-L: width 192, depths (3, 4, 18, 3), ReLU, stochastic depth 0.3."""
    return _create_fasternet("fasternet_l", pretrained, progress, kwargs, embed_dim=192, depths=(3, 4, 18, 3),
                             drop_path_rate=0.3)
