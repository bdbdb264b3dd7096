"""PP-HGNet and PP-HGNetV2 (PaddlePaddle's PaddleClas team, 2022 and 2023; no paper of their own, their ImageNet
weights distilled with SSLD: Cui et al. 2021, "Beyond Self-Supervision: A Simple Yet Effective Network Distillation
Alternative to Improve Backbones"): hgnet_tiny, hgnet_small, hgnet_base and hgnetv2_b0 to hgnetv2_b6.

A "high performance GPU network": a stem, then four stages of HG blocks, each stage but the first opening with a
3x3 depthwise stride-2 convolution. An HG block runs a chain of convolutions (3x3, or in V2's later stages "light"
ones: a 1x1 convolution and a 5x5 depthwise one), concatenates the block's input with every link's output and mixes
them with a 1x1 aggregation: followed by effective squeeze-and-excitation (ESE: one 1x1 convolution on the pooled map
and a sigmoid gate) in V1, or a squeeze to half the width and an expansion in V2. Every block of a stage but the
first adds its input back. V1's stem is three 3x3 convolutions and a max pool; V2's splits after the first
convolution into a max pool and two 2x2 convolutions, concatenated. The smaller V2 models follow every activation
by a learnable affine map (a scalar scale and bias, ``use_lab``). The head pools, widens the pooled features with a
1x1 convolution and ReLU (``head_hidden_size``, 2048) and classifies. Model names, module names, ``state_dict`` keys
and initialisation follow timm's ``hgnet`` module, so its checkpoints load directly.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._conv import create_conv2d
from ._layers import ClassifierHeadApi, SelectAdaptivePool2d, drop_path_module

__all__ = []


class LearnableAffineBlock(nn.Module):
    """``scale * x + bias`` with one learnable scalar each (starting at 1 and 0): V2's cheap extra degree of freedom
    after each activation, which lets a small model re-scale and shift what ReLU passes on."""

    def __init__(self, scale_value=1.0, bias_value=0.0):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor([scale_value]))
        self.bias = nn.Parameter(torch.tensor([bias_value]))

    def forward(self, x):
        return self.scale * x + self.bias


class ConvBNAct(nn.Module):
    """A bias-free convolution padded to keep "same" geometry (``conv``), BatchNorm (``bn``), then with ``use_act``
    ReLU (``act``) and, with ``use_lab`` too, a learnable affine map (``lab``); the unused slots are identities, as
    in timm's module tree."""

    def __init__(self, in_chs, out_chs, kernel_size, stride=1, groups=1, use_act=True, use_lab=False):
        super().__init__()
        self.conv = create_conv2d(in_chs, out_chs, kernel_size, stride=stride, groups=groups)
        self.bn = nn.BatchNorm2d(out_chs)
        self.act = nn.ReLU() if use_act else nn.Identity()
        self.lab = LearnableAffineBlock() if use_act and use_lab else nn.Identity()

    def forward(self, x):
        x = self.conv(x)
        x = self.bn(x)
        x = self.act(x)
        x = self.lab(x)
        return x


class LightConvBNAct(nn.Module):
    """V2's light convolution: a linear 1x1 convolution to ``out_chs`` (``conv1``) and an activated depthwise
    ``kernel_size`` convolution (``conv2``), far cheaper than one dense convolution of that size."""

    def __init__(self, in_chs, out_chs, kernel_size, use_lab=False):
        super().__init__()
        self.conv1 = ConvBNAct(in_chs, out_chs, 1, use_act=False, use_lab=use_lab)
        self.conv2 = ConvBNAct(out_chs, out_chs, kernel_size, groups=out_chs, use_act=True, use_lab=use_lab)

    def forward(self, x):
        x = self.conv1(x)
        x = self.conv2(x)
        return x


class EseModule(nn.Module):
    """Effective squeeze-and-excitation: the map times a sigmoid gate computed by one biased 1x1 convolution
    (``conv``) on its global average, keeping all channels (no reduction, so no channel information is lost)."""

    def __init__(self, chs):
        super().__init__()
        self.conv = nn.Conv2d(chs, chs, kernel_size=1, stride=1, padding=0)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        gate = x.mean((2, 3), keepdim=True)
        gate = self.conv(gate)
        gate = self.sigmoid(gate)
        return x * gate


class StemV1(nn.Module):
    """PP-HGNet's stem: 3x3 convolutions through the widths ``stem_chs`` (the input's channels first; the first
    strides 2) in ``stem``, then a 3x3 stride-2 max pool: a quarter of the image's resolution."""

    def __init__(self, stem_chs):
        super().__init__()
        self.stem = nn.Sequential(*[
            ConvBNAct(stem_chs[i], stem_chs[i + 1], 3, stride=2 if i == 0 else 1) for i in range(len(stem_chs) - 1)
        ])
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        x = self.stem(x)
        x = self.pool(x)
        return x


class StemV2(nn.Module):
    """PP-HGNetV2's stem: a 3x3 stride-2 convolution to ``mid_chs`` (``stem1``); then, on the map padded by one
    pixel at the right and bottom, two parallel branches that keep its size: a 2x2 max pool, and a 2x2 convolution
    halving the channels (``stem2a``, padded again) and one restoring them (``stem2b``); their concatenation is
    strided by a 3x3 convolution (``stem3``) and projected to ``out_chs`` by a 1x1 one (``stem4``)."""

    def __init__(self, in_chs, mid_chs, out_chs, use_lab=False):
        super().__init__()
        self.stem1 = ConvBNAct(in_chs, mid_chs, 3, stride=2, use_lab=use_lab)
        self.stem2a = ConvBNAct(mid_chs, mid_chs // 2, 2, stride=1, use_lab=use_lab)
        self.stem2b = ConvBNAct(mid_chs // 2, mid_chs, 2, stride=1, use_lab=use_lab)
        self.stem3 = ConvBNAct(mid_chs * 2, mid_chs, 3, stride=2, use_lab=use_lab)
        self.stem4 = ConvBNAct(mid_chs, out_chs, 1, stride=1, use_lab=use_lab)
        self.pool = nn.MaxPool2d(kernel_size=2, stride=1, ceil_mode=True)

    def forward(self, x):
        x = self.stem1(x)
        x = F.pad(x, (0, 1, 0, 1))
        convolved = self.stem2a(x)
        convolved = F.pad(convolved, (0, 1, 0, 1))
        convolved = self.stem2b(convolved)
        pooled = self.pool(x)
        x = torch.cat([pooled, convolved], dim=1)
        x = self.stem3(x)
        x = self.stem4(x)
        return x


class HighPerfGpuBlock(nn.Module):
    """The HG block: ``layer_num`` convolutions of ``mid_chs`` channels in a chain (``layers``: ``kernel_size``
    ConvBNActs, or LightConvBNActs with ``light_block``), the block's input and every link's output concatenated
    and aggregated to ``out_chs`` (``aggregation``): a 1x1 convolution and ESE with ``agg='ese'`` (V1), a 1x1 squeeze
    to ``out_chs // 2`` and a 1x1 excitation back with ``agg='se'`` (V2). With ``residual`` the input is added back,
    after stochastic depth at rate ``drop_path`` (timm keeps the module, unused, in a block without a residual)."""

    def __init__(self, in_chs, mid_chs, out_chs, layer_num, kernel_size=3, residual=False, light_block=False,
                 use_lab=False, agg="ese", drop_path=0.0):
        super().__init__()
        self.residual = residual
        self.layers = nn.ModuleList()
        for i in range(layer_num):
            layer_in_chs = in_chs if i == 0 else mid_chs
            if light_block:
                self.layers.append(LightConvBNAct(layer_in_chs, mid_chs, kernel_size, use_lab=use_lab))
            else:
                self.layers.append(ConvBNAct(layer_in_chs, mid_chs, kernel_size, stride=1, use_lab=use_lab))
        total_chs = in_chs + layer_num * mid_chs
        if agg == "se":
            self.aggregation = nn.Sequential(
                ConvBNAct(total_chs, out_chs // 2, 1, stride=1, use_lab=use_lab),
                ConvBNAct(out_chs // 2, out_chs, 1, stride=1, use_lab=use_lab),
            )
        else:
            self.aggregation = nn.Sequential(
                ConvBNAct(total_chs, out_chs, 1, stride=1, use_lab=use_lab),
                EseModule(out_chs),
            )
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        shortcut = x
        outputs = [x]
        for layer in self.layers:
            x = layer(x)
            outputs.append(x)
        x = torch.cat(outputs, dim=1)
        x = self.aggregation(x)
        if self.residual:
            x = self.drop_path(x) + shortcut
        return x


class HighPerfGpuStage(nn.Module):
    """A stage: with ``downsample``, a linear 3x3 depthwise convolution of stride ``stride`` (``downsample``, else an
    identity), then ``block_num`` HG blocks (``blocks``), the first widening ``in_chs`` to ``out_chs`` without a
    residual, the others with one; ``drop_path`` is one rate or one per block."""

    def __init__(self, in_chs, mid_chs, out_chs, block_num, layer_num, downsample=True, stride=2, light_block=False,
                 kernel_size=3, use_lab=False, agg="ese", drop_path=0.0):
        super().__init__()
        if downsample:
            self.downsample = ConvBNAct(in_chs, in_chs, 3, stride=stride, groups=in_chs, use_act=False,
                                        use_lab=use_lab)
        else:
            self.downsample = nn.Identity()
        blocks = []
        for i in range(block_num):
            blocks.append(HighPerfGpuBlock(
                in_chs if i == 0 else out_chs, mid_chs, out_chs, layer_num, kernel_size=kernel_size, residual=i > 0,
                light_block=light_block, use_lab=use_lab, agg=agg,
                drop_path=drop_path[i] if isinstance(drop_path, (list, tuple)) else drop_path))
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


def _head_pool(pool_type, num_classes):
    """The head's global pooling, unflattened (the hidden 1x1 convolution runs on the pooled map): no pooling
    ('') only without a classifier, and no pooling that changes the width ('catavgmax')."""
    if pool_type == "" and num_classes != 0:
        raise ValueError("a classifier needs global pooling: use num_classes=0 with global_pool=''")
    global_pool = SelectAdaptivePool2d(pool_type, flatten=False)
    if global_pool.feat_mult() != 1:
        raise ValueError(f"global_pool '{pool_type}' changes the pooled width, which this head does not support")
    return global_pool


class ClassifierHead(nn.Module):
    """HGNet's head (timm's own, not the shared one): global pooling kept as a 1x1 map (``global_pool``); with
    ``hidden_size`` a bias-free 1x1 convolution to that width, ReLU and, with ``use_lab``, a learnable affine map
    (``last_conv``); dropout (``dropout``), flattening (``flatten``, an identity without pooling) and the
    classifier ``fc``. ``num_features`` is the width ``fc`` sees (``hidden_size`` or ``in_features``).

    Without pooling the hidden convolution runs on every position of the map, as in timm."""

    def __init__(self, in_features, num_classes, pool_type="avg", drop_rate=0.0, hidden_size=2048, use_lab=False):
        super().__init__()
        self.in_features = in_features
        self.num_features = in_features
        self.global_pool = _head_pool(pool_type, num_classes)
        if hidden_size is not None:
            self.num_features = hidden_size
            last_conv = [nn.Conv2d(in_features, hidden_size, kernel_size=1, stride=1, padding=0, bias=False),
                         nn.ReLU()]
            if use_lab:
                last_conv.append(LearnableAffineBlock())
            self.last_conv = nn.Sequential(*last_conv)
        else:
            self.last_conv = nn.Identity()
        self.dropout = nn.Dropout(drop_rate)
        self.flatten = nn.Flatten(1) if pool_type else nn.Identity()
        self.fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def reset(self, num_classes, pool_type=None, reset_other=False, in_features=None):
        """A fresh ``fc`` for ``num_classes`` (0: an identity), after new pooling ``pool_type`` if given;
        ``reset_other`` drops the hidden convolution; ``in_features`` (the model's features, narrower after
        pruning) may change only without it."""
        if pool_type is not None:
            self.global_pool = _head_pool(pool_type, num_classes).train(self.training)
            self.flatten = (nn.Flatten(1) if pool_type else nn.Identity()).train(self.training)
        if reset_other:
            self.last_conv = nn.Identity()
            self.num_features = self.in_features
        if in_features is not None and in_features != self.in_features:
            if not isinstance(self.last_conv, nn.Identity):
                raise ValueError("the input width can only change once the hidden convolution is removed "
                                 "(reset_other=True)")
            self.in_features = in_features
            self.num_features = in_features
        self.fc = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.fc.train(self.training)

    def forward(self, x, pre_logits=False):
        x = self.global_pool(x)
        x = self.last_conv(x)
        x = self.dropout(x)
        x = self.flatten(x)
        if pre_logits:
            return x
        x = self.fc(x)
        return x


class HighPerfGpuNet(ClassifierHeadApi, nn.Module):
    """PP-HGNet (``cfg['stem_type']`` 'v1': ``StemV1``, ESE aggregation) or PP-HGNetV2 ('v2': ``StemV2``, squeeze
    and excitation aggregation): the stem (stride 4), four stages (``stages``; each but a first without
    ``downsample`` halving the resolution) and the head (``head``: pooling, the hidden 1x1 convolution to
    ``head_hidden_size`` unless it is None, dropout ``drop_rate``, classifier).

    ``cfg`` is timm's model configuration: ``stem_type``, ``stem_chs`` (V1: the stem convolutions' widths; V2: its
    middle and output widths) and ``stage1`` to ``stage4``, each ``[in_chs, mid_chs, out_chs, blocks, downsample,
    light_block, kernel_size, layer_num]``. ``use_lab`` adds learnable affine maps after the activations.
    ``drop_path_rate`` is the stochastic depth of the last block, rising linearly from 0 at the first.
    """

    feature_wrapper = FlatFeatureListNet

    def __init__(self, cfg, in_chans=3, num_classes=1000, global_pool="avg", head_hidden_size=2048, drop_rate=0.0,
                 drop_path_rate=0.0, use_lab=False):
        super().__init__()
        stem_type = cfg["stem_type"]
        if stem_type not in ("v1", "v2"):
            raise ValueError(f"stem_type must be 'v1' or 'v2', got {stem_type!r}")
        stem_chs = cfg["stem_chs"]
        stages_cfg = [cfg["stage1"], cfg["stage2"], cfg["stage3"], cfg["stage4"]]
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.drop_rate = drop_rate
        self.use_lab = use_lab
        if stem_type == "v2":
            self.stem = StemV2(in_chans, stem_chs[0], stem_chs[1], use_lab=use_lab)
        else:
            self.stem = StemV1([in_chans] + list(stem_chs))
        depths = [stage_cfg[3] for stage_cfg in stages_cfg]
        drop_path_rates = [rates.tolist() for rates in torch.linspace(0, drop_path_rate, sum(depths)).split(depths)]
        stages = []
        self.feature_info = []
        reduction = 4
        for i, stage_cfg in enumerate(stages_cfg):
            in_chs, mid_chs, out_chs, block_num, downsample, light_block, kernel_size, layer_num = stage_cfg
            stages.append(HighPerfGpuStage(
                in_chs, mid_chs, out_chs, block_num, layer_num, downsample=downsample, light_block=light_block,
                kernel_size=kernel_size, use_lab=use_lab, agg="ese" if stem_type == "v1" else "se",
                drop_path=drop_path_rates[i]))
            self.num_features = out_chs
            if downsample:
                reduction *= 2
            self.feature_info.append(dict(num_chs=out_chs, reduction=reduction, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate, head_hidden_size,
                                   use_lab)
        self.head_hidden_size = self.head.num_features
        self._init_weights()

    def _init_weights(self):
        """timm's initialisation, in module order: convolution weights He-normal (fan-out, ReLU gain; ESE's bias
        keeps PyTorch's default), BatchNorm scale 1 and shift 0, the classifier's bias 0 (its weight PyTorch's
        default)."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the stem's first convolution, which V1 and V2 name differently) and
        ``classifier``."""
        first_conv = "stem.stem.0.conv" if isinstance(self.stem, StemV1) else "stem.stem1.conv"
        return {"first_conv": first_conv, "classifier": "head.fc"}

    def reset_classifier(self, num_classes, global_pool=None, reset_other=False):
        """A fresh classifier for ``num_classes`` (0: the head's features), after new pooling ``global_pool`` if
        given; ``reset_other`` also drops the hidden convolution (the features are then the last stage's)."""
        super().reset_classifier(num_classes, global_pool, reset_other=reset_other, in_features=self.num_features)

    def forward_features(self, x):
        """The map after the last stage (N, num_features, H / 32, W / 32)."""
        x = self.stem(x)
        x = self.stages(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list), and (unless
        ``intermediates_only``) the last stage's output; ``stop_early`` skips the stages after the last one picked.
        ``norm`` changes nothing: there is no final norm (timm's argument)."""
        take, stages = intermediate_stages(self.stages, indices, stop_early, output_fmt)
        intermediates = []
        x = self.stem(x)
        for i, stage in enumerate(stages):
            x = stage(x)
            if i in take:
                intermediates.append(x)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, with ``prune_head`` or when stages go, the
        classifier and the hidden convolution (average pooling kept); returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_head or prune_end:
            self.reset_classifier(0, "avg", reset_other=True)
        return take


# timm's configurations. stem_chs: V1, the stem convolutions' widths; V2, the stem's middle and output widths.
# Each stage: in_chs, mid_chs, out_chs, blocks, downsample, light_block, kernel_size, layer_num.
model_cfgs = {
    "hgnet_tiny": {
        "stem_type": "v1",
        "stem_chs": [48, 48, 96],
        "stage1": [96, 96, 224, 1, False, False, 3, 5],
        "stage2": [224, 128, 448, 1, True, False, 3, 5],
        "stage3": [448, 160, 512, 2, True, False, 3, 5],
        "stage4": [512, 192, 768, 1, True, False, 3, 5],
    },
    "hgnet_small": {
        "stem_type": "v1",
        "stem_chs": [64, 64, 128],
        "stage1": [128, 128, 256, 1, False, False, 3, 6],
        "stage2": [256, 160, 512, 1, True, False, 3, 6],
        "stage3": [512, 192, 768, 2, True, False, 3, 6],
        "stage4": [768, 224, 1024, 1, True, False, 3, 6],
    },
    "hgnet_base": {
        "stem_type": "v1",
        "stem_chs": [96, 96, 160],
        "stage1": [160, 192, 320, 1, False, False, 3, 7],
        "stage2": [320, 224, 640, 2, True, False, 3, 7],
        "stage3": [640, 256, 960, 3, True, False, 3, 7],
        "stage4": [960, 288, 1280, 2, True, False, 3, 7],
    },
    "hgnetv2_b0": {
        "stem_type": "v2",
        "stem_chs": [16, 16],
        "stage1": [16, 16, 64, 1, False, False, 3, 3],
        "stage2": [64, 32, 256, 1, True, False, 3, 3],
        "stage3": [256, 64, 512, 2, True, True, 5, 3],
        "stage4": [512, 128, 1024, 1, True, True, 5, 3],
    },
    "hgnetv2_b1": {
        "stem_type": "v2",
        "stem_chs": [24, 32],
        "stage1": [32, 32, 64, 1, False, False, 3, 3],
        "stage2": [64, 48, 256, 1, True, False, 3, 3],
        "stage3": [256, 96, 512, 2, True, True, 5, 3],
        "stage4": [512, 192, 1024, 1, True, True, 5, 3],
    },
    "hgnetv2_b2": {
        "stem_type": "v2",
        "stem_chs": [24, 32],
        "stage1": [32, 32, 96, 1, False, False, 3, 4],
        "stage2": [96, 64, 384, 1, True, False, 3, 4],
        "stage3": [384, 128, 768, 3, True, True, 5, 4],
        "stage4": [768, 256, 1536, 1, True, True, 5, 4],
    },
    "hgnetv2_b3": {
        "stem_type": "v2",
        "stem_chs": [24, 32],
        "stage1": [32, 32, 128, 1, False, False, 3, 5],
        "stage2": [128, 64, 512, 1, True, False, 3, 5],
        "stage3": [512, 128, 1024, 3, True, True, 5, 5],
        "stage4": [1024, 256, 2048, 1, True, True, 5, 5],
    },
    "hgnetv2_b4": {
        "stem_type": "v2",
        "stem_chs": [32, 48],
        "stage1": [48, 48, 128, 1, False, False, 3, 6],
        "stage2": [128, 96, 512, 1, True, False, 3, 6],
        "stage3": [512, 192, 1024, 3, True, True, 5, 6],
        "stage4": [1024, 384, 2048, 1, True, True, 5, 6],
    },
    "hgnetv2_b5": {
        "stem_type": "v2",
        "stem_chs": [32, 64],
        "stage1": [64, 64, 128, 1, False, False, 3, 6],
        "stage2": [128, 128, 512, 2, True, False, 3, 6],
        "stage3": [512, 256, 1024, 5, True, True, 5, 6],
        "stage4": [1024, 512, 2048, 2, True, True, 5, 6],
    },
    "hgnetv2_b6": {
        "stem_type": "v2",
        "stem_chs": [48, 96],
        "stage1": [96, 96, 192, 2, False, False, 3, 6],
        "stage2": [192, 192, 512, 3, True, False, 3, 6],
        "stage3": [512, 384, 1024, 6, True, True, 5, 6],
        "stage4": [1024, 768, 2048, 3, True, True, 5, 6],
    },
}


def _create_hgnet(variant, pretrained, progress, **kwargs):
    """Build a registered variant from its configuration; ``features_only`` gives timm's four stage outputs
    (strides 4 to 32) unless ``out_indices`` says otherwise, under timm's flattened names (``stages_2``...)."""
    return build_model(HighPerfGpuNet, variant, pretrained, progress=progress, cfg=model_cfgs[variant], **kwargs)


@register_model
def hgnet_tiny(pretrained=False, progress=True, **kwargs):
    """PP-HGNet tiny."""
    return _create_hgnet("hgnet_tiny", pretrained, progress, **kwargs)


@register_model
def hgnet_small(pretrained=False, progress=True, **kwargs):
    """PP-HGNet small."""
    return _create_hgnet("hgnet_small", pretrained, progress, **kwargs)


@register_model
def hgnet_base(pretrained=False, progress=True, **kwargs):
    """PP-HGNet base."""
    return _create_hgnet("hgnet_base", pretrained, progress, **kwargs)


@register_model
def hgnetv2_b0(pretrained=False, progress=True, **kwargs):
    """PP-HGNetV2 B0, with learnable affine maps."""
    return _create_hgnet("hgnetv2_b0", pretrained, progress, use_lab=True, **kwargs)


@register_model
def hgnetv2_b1(pretrained=False, progress=True, **kwargs):
    """PP-HGNetV2 B1, with learnable affine maps."""
    return _create_hgnet("hgnetv2_b1", pretrained, progress, use_lab=True, **kwargs)


@register_model
def hgnetv2_b2(pretrained=False, progress=True, **kwargs):
    """PP-HGNetV2 B2, with learnable affine maps."""
    return _create_hgnet("hgnetv2_b2", pretrained, progress, use_lab=True, **kwargs)


@register_model
def hgnetv2_b3(pretrained=False, progress=True, **kwargs):
    """PP-HGNetV2 B3, with learnable affine maps."""
    return _create_hgnet("hgnetv2_b3", pretrained, progress, use_lab=True, **kwargs)


@register_model
def hgnetv2_b4(pretrained=False, progress=True, **kwargs):
    """PP-HGNetV2 B4."""
    return _create_hgnet("hgnetv2_b4", pretrained, progress, **kwargs)


@register_model
def hgnetv2_b5(pretrained=False, progress=True, **kwargs):
    """PP-HGNetV2 B5."""
    return _create_hgnet("hgnetv2_b5", pretrained, progress, **kwargs)


@register_model
def hgnetv2_b6(pretrained=False, progress=True, **kwargs):
    """PP-HGNetV2 B6."""
    return _create_hgnet("hgnetv2_b6", pretrained, progress, **kwargs)
