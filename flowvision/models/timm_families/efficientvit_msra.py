"""EfficientViT from MSRA (Liu et al. 2023, "EfficientViT: Memory Efficient Vision Transformer with Cascaded Group
Attention"): efficientvit_m0 to efficientvit_m5.

A small, fast hybrid. A stem of four stride-2 3x3 convolutions makes the image a 16x smaller map; three stages of
"sandwich" blocks follow, each a depthwise convolution and a 1x1-convolution MLP on either side of one attention
layer (every branch residual, every convolution followed by BatchNorm so that it folds away at inference). The
attention runs in local windows (the map padded to whole windows) and is cascaded over the heads: each head sees its
own slice of the channels plus the previous head's output, its queries pass a depthwise convolution, and every
query-key logit gets a learnt bias per head indexed by the pair's absolute offset in the window. Between stages an
inverted-residual block with squeeze-and-excitation halves the map. The features are averaged and classified by
BatchNorm, dropout and a linear layer.

Model names, module names, ``state_dict`` keys, defaults and initialisation follow timm's ``efficientvit_msra``
module, so its checkpoints load directly; as in timm, the attention layers keep their gathered bias tables in eval
mode (a cache emptied by every ``train()``/``eval()`` call and dtype or device move) and ``ConvNorm.fuse()`` /
``NormLinear.fuse()`` fold the BatchNorms into the convolution and linear weights.
"""
from collections import OrderedDict

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, prune_stages, stage_intermediates
from .._helpers import build_model
from ..registry import register_model
from ._attention import CachedBiasAttention, SEModule
from ._layers import SelectAdaptivePool2d, pair, trunc_normal_
from ._reparam import ConvNorm, batchnorm_scale_shift

__all__ = []


class NormLinear(nn.Sequential):
    """The classifier: BatchNorm over the pooled features (``bn``), dropout (``drop``) and a linear layer
    (``linear``, truncated-normal weights of std ``std``, zero bias); ``fuse()`` gives the equivalent single linear
    layer for inference."""

    def __init__(self, in_features, out_features, bias=True, std=0.02, drop=0.0):
        super().__init__()
        self.bn = nn.BatchNorm1d(in_features)
        self.drop = nn.Dropout(drop)
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        trunc_normal_(self.linear.weight, std=std)
        if self.linear.bias is not None:
            nn.init.constant_(self.linear.bias, 0)

    def fuse(self):
        """A new biased ``nn.Linear`` with the BatchNorm's eval-mode scale folded into its weight and its shift
        carried through to the bias."""
        with torch.no_grad():
            scale, shift = batchnorm_scale_shift(self.bn)
            weight = self.linear.weight
            bias = weight @ shift
            if self.linear.bias is not None:
                bias = bias + self.linear.bias
            fused = nn.Linear(weight.shape[1], weight.shape[0])
            fused.weight.copy_(weight * scale[None, :])
            fused.bias.copy_(bias)
        return fused


class PatchMerging(nn.Module):
    """The downsampling between stages, an inverted residual without shortcut: a 1x1 expansion to ``4 * dim``
    (``conv1``), a stride-2 3x3 depthwise convolution (``conv2``; both followed by the ReLU ``act``),
    squeeze-and-excitation (``se``) and a 1x1 projection to ``out_dim`` (``conv3``)."""

    def __init__(self, dim, out_dim):
        super().__init__()
        hid_dim = int(dim * 4)
        self.conv1 = ConvNorm(dim, hid_dim, 1, 1, 0)
        self.act = nn.ReLU()
        self.conv2 = ConvNorm(hid_dim, hid_dim, 3, 2, 1, groups=hid_dim)
        self.se = SEModule(hid_dim, 0.25)
        self.conv3 = ConvNorm(hid_dim, out_dim, 1, 1, 0)

    def forward(self, x):
        x = self.act(self.conv1(x))
        x = self.act(self.conv2(x))
        x = self.se(x)
        x = self.conv3(x)
        return x


class ResidualDrop(nn.Module):
    """``x + m(x)``; in training with ``drop`` > 0, the branch of each sample is dropped with probability ``drop``
    and the kept ones scaled by ``1 / (1 - drop)`` (timm's per-sample mask, drawn after the branch runs)."""

    def __init__(self, m, drop=0.0):
        super().__init__()
        self.m = m
        self.drop = drop

    def forward(self, x):
        branch = self.m(x)
        if self.training and self.drop > 0:
            keep = torch.rand(x.shape[0], 1, 1, 1, device=x.device) >= self.drop
            branch = branch * (keep.float() / (1 - self.drop))
        return x + branch


class ConvMlp(nn.Module):
    """The feed-forward branch: 1x1 ``ConvNorm`` expansion to ``h`` channels (``pw1``), ReLU (``act``) and 1x1
    ``ConvNorm`` projection back to ``ed`` (``pw2``, its BatchNorm's scale starting at 0 so the branch starts
    silent)."""

    def __init__(self, ed, h):
        super().__init__()
        self.pw1 = ConvNorm(ed, h)
        self.act = nn.ReLU()
        self.pw2 = ConvNorm(h, ed, bn_weight_init=0)

    def forward(self, x):
        x = self.pw2(self.act(self.pw1(x)))
        return x


class CascadedGroupAttention(CachedBiasAttention):
    """Cascaded group attention on a ``resolution`` x ``resolution`` window of ``dim`` channels.

    The channels are split into ``num_heads`` groups. Head i takes its group plus head i-1's output, projects it to
    a query and a key of ``key_dim`` channels and a value of ``attn_ratio * key_dim`` (``qkvs[i]``), passes the query
    through a ``kernels[i]`` depthwise convolution (``dws[i]``), and attends with a learnt bias per (head, absolute
    offset) on each logit (``attention_biases``, gathered by ``attention_bias_idxs``). The heads' outputs are
    concatenated and projected back to ``dim`` after a ReLU (``proj``, its BatchNorm's scale starting at 0).

    In eval mode the gathered biases are computed once and kept per device (``attention_bias_cache``, as timm does):
    ``train()``, ``eval()`` and dtype or device moves empty the cache, so change the biases in training mode or
    switch modes after loading weights in eval mode.
    """

    def __init__(self, dim, key_dim, num_heads=8, attn_ratio=4, resolution=14, kernels=(5, 5, 5, 5)):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.val_dim = int(attn_ratio * key_dim)
        self.attn_ratio = attn_ratio
        qkvs = []
        dws = []
        for i in range(num_heads):
            qkvs.append(ConvNorm(dim // num_heads, self.key_dim * 2 + self.val_dim))
            dws.append(ConvNorm(self.key_dim, self.key_dim, kernels[i], 1, kernels[i] // 2, groups=self.key_dim))
        self.qkvs = nn.ModuleList(qkvs)
        self.dws = nn.ModuleList(dws)
        self.proj = nn.Sequential(nn.ReLU(), ConvNorm(self.val_dim * num_heads, dim, bn_weight_init=0))
        self.resolution = resolution
        self._add_biases(num_heads, pair(resolution), persistent=False)

    def forward(self, x):
        batch, _, height, width = x.shape
        feats_in = x.chunk(len(self.qkvs), dim=1)
        feats_out = []
        feat = feats_in[0]
        attn_bias = self.get_attention_biases(x.device)
        for head_idx, (qkv, dws) in enumerate(zip(self.qkvs, self.dws)):
            if head_idx > 0:
                feat = feat + feats_in[head_idx]
            feat = qkv(feat)
            q, k, v = feat.view(batch, -1, height, width).split([self.key_dim, self.key_dim, self.val_dim], dim=1)
            q = dws(q)
            q = q.flatten(2)
            k = k.flatten(2)
            v = v.flatten(2)
            q = q * self.scale
            attn = q.transpose(-2, -1) @ k
            attn = attn + attn_bias[head_idx]
            attn = attn.softmax(dim=-1)
            feat = v @ attn.transpose(-2, -1)
            feat = feat.view(batch, self.val_dim, height, width)
            feats_out.append(feat)
        x = self.proj(torch.cat(feats_out, 1))
        return x


class LocalWindowAttention(nn.Module):
    """``CascadedGroupAttention`` (``attn``) in non-overlapping windows of ``window_resolution`` (at most the
    ``resolution`` of the map the model was built for): a map of another size is padded with zeros at the bottom and
    right to whole windows, attended window by window and cropped back."""

    def __init__(self, dim, key_dim, num_heads=8, attn_ratio=4, resolution=14, window_resolution=7,
                 kernels=(5, 5, 5, 5)):
        super().__init__()
        if window_resolution <= 0:
            raise ValueError(f"window_resolution must be positive, got {window_resolution}")
        self.dim = dim
        self.num_heads = num_heads
        self.resolution = resolution
        self.window_resolution = window_resolution
        self.attn = CascadedGroupAttention(dim, key_dim, num_heads, attn_ratio=attn_ratio,
                                           resolution=min(window_resolution, resolution), kernels=kernels)

    def forward(self, x):
        batch, channels, height, width = x.shape
        ws = self.attn.resolution
        if height == ws and width == ws:
            return self.attn(x)
        pad_b = (ws - height % ws) % ws
        pad_r = (ws - width % ws) % ws
        x = F.pad(x, (0, pad_r, 0, pad_b))
        padded_h = height + pad_b
        padded_w = width + pad_r
        rows = padded_h // ws
        cols = padded_w // ws
        x = x.view(batch, channels, rows, ws, cols, ws).permute(0, 2, 4, 1, 3, 5)
        x = x.reshape(batch * rows * cols, channels, ws, ws)
        x = self.attn(x)
        x = x.view(batch, rows, cols, channels, ws, ws).permute(0, 3, 1, 4, 2, 5)
        x = x.reshape(batch, channels, padded_h, padded_w)
        return x[:, :, :height, :width].contiguous()


class EfficientVitBlock(nn.Module):
    """The sandwich block: residual depthwise 3x3 convolution (``dw0``) and MLP (``ffn0``), residual window attention
    (``mixer``), then another residual depthwise convolution (``dw1``) and MLP (``ffn1``); the depthwise
    convolutions' BatchNorm scales start at 0."""

    def __init__(self, dim, key_dim, num_heads=8, attn_ratio=4, resolution=14, window_resolution=7,
                 kernels=(5, 5, 5, 5)):
        super().__init__()
        self.dw0 = ResidualDrop(ConvNorm(dim, dim, 3, 1, 1, groups=dim, bn_weight_init=0.0))
        self.ffn0 = ResidualDrop(ConvMlp(dim, int(dim * 2)))
        self.mixer = ResidualDrop(LocalWindowAttention(dim, key_dim, num_heads, attn_ratio=attn_ratio,
                                                       resolution=resolution, window_resolution=window_resolution,
                                                       kernels=kernels))
        self.dw1 = ResidualDrop(ConvNorm(dim, dim, 3, 1, 1, groups=dim, bn_weight_init=0.0))
        self.ffn1 = ResidualDrop(ConvMlp(dim, int(dim * 2)))

    def forward(self, x):
        x = self.dw0(x)
        x = self.ffn0(x)
        x = self.mixer(x)
        x = self.dw1(x)
        x = self.ffn1(x)
        return x


class EfficientVitStage(nn.Module):
    """A stage: with ``downsample`` ``("subsample", stride)``, a residual depthwise convolution and MLP at the input
    width (``downsample.res1``), ``PatchMerging`` to ``out_dim`` (``downsample.patchmerge``) and the same pair at the
    new width (``downsample.res2``); with ``("", 1)`` nothing (an identity; the widths must agree). Then ``depth``
    ``EfficientVitBlock``s (``blocks``). ``resolution`` is the map size the stage is built for, after its
    downsampling."""

    def __init__(self, in_dim, out_dim, key_dim, downsample=("", 1), num_heads=8, attn_ratio=4, resolution=14,
                 window_resolution=7, kernels=(5, 5, 5, 5), depth=1):
        super().__init__()
        if downsample[0] == "subsample":
            self.stride = downsample[1]
            self.resolution = (resolution - 1) // downsample[1] + 1
            self.downsample = nn.Sequential(OrderedDict([
                ("res1", nn.Sequential(
                    ResidualDrop(ConvNorm(in_dim, in_dim, 3, 1, 1, groups=in_dim)),
                    ResidualDrop(ConvMlp(in_dim, int(in_dim * 2))),
                )),
                ("patchmerge", PatchMerging(in_dim, out_dim)),
                ("res2", nn.Sequential(
                    ResidualDrop(ConvNorm(out_dim, out_dim, 3, 1, 1, groups=out_dim)),
                    ResidualDrop(ConvMlp(out_dim, int(out_dim * 2))),
                )),
            ]))
        else:
            if in_dim != out_dim:
                raise ValueError(f"a stage without downsampling keeps its width, got {in_dim} -> {out_dim}")
            self.downsample = nn.Identity()
            self.stride = 1
            self.resolution = resolution
        self.blocks = nn.Sequential(*[
            EfficientVitBlock(out_dim, key_dim, num_heads, attn_ratio, self.resolution, window_resolution, kernels)
            for _ in range(depth)
        ])

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class PatchEmbedding(nn.Sequential):
    """The stem: four stride-2 3x3 ``ConvNorm`` layers widening to ``dim / 8``, ``/ 4``, ``/ 2`` and ``dim``
    (``conv1``...), with a ReLU between them (``relu1``...): a 16x smaller map."""

    def __init__(self, in_chans, dim):
        super().__init__()
        self.add_module("conv1", ConvNorm(in_chans, dim // 8, 3, 2, 1))
        self.add_module("relu1", nn.ReLU())
        self.add_module("conv2", ConvNorm(dim // 8, dim // 4, 3, 2, 1))
        self.add_module("relu2", nn.ReLU())
        self.add_module("conv3", ConvNorm(dim // 4, dim // 2, 3, 2, 1))
        self.add_module("relu3", nn.ReLU())
        self.add_module("conv4", ConvNorm(dim // 2, dim, 3, 2, 1))
        self.patch_size = 16


def _checked_pooling(global_pool, num_classes):
    """Refuse a classifier without pooling (timm asserts the same)."""
    if not global_pool and num_classes > 0:
        raise ValueError("a classifier needs pooled features: give global_pool or num_classes=0")


class EfficientVitMsra(nn.Module):
    """EfficientViT (MSRA): ``patch_embed``, the stages (``stages``), global pooling (``global_pool``) and the
    ``NormLinear`` classifier (``head``, an identity with ``num_classes=0``).

    Stage i has width ``embed_dim[i]``, ``depth[i]`` blocks with ``num_heads[i]`` heads of ``key_dim[i]`` query and
    key channels (values: their share ``embed_dim[i] / num_heads[i]``), attention windows of ``window_size[i]`` and
    query convolutions of ``kernels[head]``; ``down_ops[i]`` says whether it first halves the map. The attention
    windows are sized for ``img_size`` (its smaller side); other input sizes work (windows are padded).
    ``global_pool=''`` with ``num_classes=0`` returns the unpooled map.
    """

    default_cfg = {"first_conv": "patch_embed.conv1.conv", "classifier": "head.linear"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, img_size=224, in_chans=3, num_classes=1000, embed_dim=(64, 128, 192), key_dim=(16, 16, 16),
                 depth=(1, 2, 3), num_heads=(4, 4, 4), window_size=(7, 7, 7), kernels=(5, 5, 5, 5),
                 down_ops=(("", 1), ("subsample", 2), ("subsample", 2)), global_pool="avg", drop_rate=0.0):
        super().__init__()
        _checked_pooling(global_pool, num_classes)
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.patch_embed = PatchEmbedding(in_chans, embed_dim[0])
        stride = self.patch_embed.patch_size
        self.img_size = min(pair(img_size))
        resolution = self.img_size // self.patch_embed.patch_size
        attn_ratio = [embed_dim[i] / (key_dim[i] * num_heads[i]) for i in range(len(embed_dim))]
        self.feature_info = []
        stages = []
        prev_dim = embed_dim[0]
        settings = zip(embed_dim, key_dim, depth, num_heads, attn_ratio, window_size, down_ops)
        for i, (dim, kd, stage_depth, heads, ratio, window, down_op) in enumerate(settings):
            stage = EfficientVitStage(prev_dim, dim, kd, down_op, heads, ratio, resolution, window, kernels,
                                      stage_depth)
            prev_dim = dim
            if down_op[0] == "subsample" and i != 0:
                stride *= down_op[1]
            resolution = stage.resolution
            stages.append(stage)
            self.feature_info.append(dict(num_chs=dim, reduction=stride, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.global_pool = SelectAdaptivePool2d(global_pool, flatten=bool(global_pool))
        self.num_features = embed_dim[-1]
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.head = self._make_head(num_classes)

    def _make_head(self, num_classes):
        """A ``NormLinear`` classifier on the pooled features, or an identity for ``num_classes=0``."""
        if num_classes > 0:
            return NormLinear(self.head_hidden_size, num_classes, drop=self.drop_rate)
        return nn.Identity()

    def get_classifier(self):
        """The final linear layer (the head's ``linear``), or the identity standing for a removed head."""
        return self.head.linear if isinstance(self.head, NormLinear) else self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A new (randomly initialised) head for ``num_classes`` (0: none), and new pooling if ``global_pool`` is
        given."""
        pool_type = self.global_pool.pool_type if global_pool is None else global_pool
        _checked_pooling(pool_type, num_classes)
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = SelectAdaptivePool2d(global_pool, flatten=bool(global_pool))
            self.global_pool.train(self.training)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.head = self._make_head(num_classes)
        self.head.train(self.training)

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) and (unless
        ``intermediates_only``) the last stage's output; ``stop_early`` skips the stages after the last one picked.
        ``norm`` changes nothing: there is no final norm (timm's argument)."""
        return stage_intermediates(x, self.patch_embed, self.stages, indices, stop_early, output_fmt,
                                   intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, with ``prune_head`` or when stages go, the head
        and pooling; returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_features(self, x):
        """The last stage's map (N, num_features, H / 64, W / 64)."""
        x = self.patch_embed(x)
        x = self.stages(x)
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling, then (unless ``pre_logits``) the classifier."""
        x = self.global_pool(x)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_efficientvit_msra(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives the three stages' maps (timm's ``out_indices`` default
    (0, 1, 2)) under timm's flattened names (``stages_0``...)."""
    return build_model(EfficientVitMsra, variant, pretrained, progress=progress, **kwargs)


@register_model
def efficientvit_m0(pretrained=False, progress=True, **kwargs):
    """EfficientViT-M0 (widths 64, 128, 192)."""
    model_args = dict(img_size=224, embed_dim=[64, 128, 192], depth=[1, 2, 3], num_heads=[4, 4, 4],
                      window_size=[7, 7, 7], kernels=[5, 5, 5, 5])
    return _create_efficientvit_msra("efficientvit_m0", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_m1(pretrained=False, progress=True, **kwargs):
    """EfficientViT-M1 (widths 128, 144, 192)."""
    model_args = dict(img_size=224, embed_dim=[128, 144, 192], depth=[1, 2, 3], num_heads=[2, 3, 3],
                      window_size=[7, 7, 7], kernels=[7, 5, 3, 3])
    return _create_efficientvit_msra("efficientvit_m1", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_m2(pretrained=False, progress=True, **kwargs):
    """EfficientViT-M2 (widths 128, 192, 224)."""
    model_args = dict(img_size=224, embed_dim=[128, 192, 224], depth=[1, 2, 3], num_heads=[4, 3, 2],
                      window_size=[7, 7, 7], kernels=[7, 5, 3, 3])
    return _create_efficientvit_msra("efficientvit_m2", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_m3(pretrained=False, progress=True, **kwargs):
    """EfficientViT-M3 (widths 128, 240, 320)."""
    model_args = dict(img_size=224, embed_dim=[128, 240, 320], depth=[1, 2, 3], num_heads=[4, 3, 4],
                      window_size=[7, 7, 7], kernels=[5, 5, 5, 5])
    return _create_efficientvit_msra("efficientvit_m3", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_m4(pretrained=False, progress=True, **kwargs):
    """EfficientViT-M4 (widths 128, 256, 384)."""
    model_args = dict(img_size=224, embed_dim=[128, 256, 384], depth=[1, 2, 3], num_heads=[4, 4, 4],
                      window_size=[7, 7, 7], kernels=[7, 5, 3, 3])
    return _create_efficientvit_msra("efficientvit_m4", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def efficientvit_m5(pretrained=False, progress=True, **kwargs):
    """EfficientViT-M5 (widths 192, 288, 384)."""
    model_args = dict(img_size=224, embed_dim=[192, 288, 384], depth=[1, 3, 4], num_heads=[3, 3, 4],
                      window_size=[7, 7, 7], kernels=[7, 5, 3, 3])
    return _create_efficientvit_msra("efficientvit_m5", pretrained, progress, **dict(model_args, **kwargs))
