"""Inception-ResNet-v2 (Szegedy et al. 2017, "Inception-v4, Inception-ResNet and the Impact of Residual
Connections on Learning").

Inception blocks turned into residual branches: each block's branches are concatenated, projected back to the
trunk's width by a 1x1 convolution with bias, scaled down (0.17, 0.10 and 0.20 in the three sizes; the paper's
remedy for unstable training of wide residual Inceptions) and added to its input before a ReLU. Ten 35x35
blocks, twenty 17x17 blocks and ten 8x8 blocks (the last without ReLU), joined by reduction blocks, on a stem of
unpadded convolutions as in the TensorFlow original (BatchNorm eps 1e-3). Model name, module names,
``state_dict`` keys and the model API follow timm, so timm's ``inception_resnet_v2`` weights (the ImageNet and
the ensemble-adversarial ones) load as they are.

``chain_intermediates`` and ``kept_chain_layers`` give timm's intermediates API (``forward_intermediates``,
``prune_intermediate_layers``) to a model that runs as a chain of layers with taps at some of their outputs;
Inception-v4 uses them too.
"""
from functools import partial

import engine as torch
from engine import nn

from .._features import intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import BatchNormAct2d, ConcatBranches, ConvNormAct, create_classifier

__all__ = []

# the layers of Inception-ResNet-v2, in the order forward_features runs them
_LAYER_NAMES = ("conv2d_1a", "conv2d_2a", "conv2d_2b", "maxpool_3a", "conv2d_3b", "conv2d_4a", "maxpool_5a",
                "mixed_5b", "repeat", "mixed_6a", "repeat_1", "mixed_7a", "repeat_2", "block8", "conv2d_7b")


def chain_intermediates(x, layers, tap_ends, indices, stop_early, output_fmt, intermediates_only):
    """timm's ``forward_intermediates`` for a model that runs as the chain ``layers`` and whose ``feature_info``
    taps are the outputs of the layers at positions ``tap_ends``: the maps of the taps ``indices`` picks (None:
    all, n: the last n, or a list; NCHW only) and, unless ``intermediates_only``, the last map. ``stop_early``
    runs no further than the last tap picked."""
    take, _ = intermediate_stages(tap_ends, indices, stop_early, output_fmt)
    if stop_early:
        layers = layers[:tap_ends[max(take)] + 1]
    x, intermediates = run_stages(x, layers, [tap_ends[i] for i in take])
    return intermediates if intermediates_only else (x, intermediates)


def kept_chain_layers(model, tap_ends, indices):
    """The pruning step shared by the models that ``chain_intermediates`` serves: the absolute tap indices that
    ``indices`` picks, how many layers of the chain run up to the last one picked, and whether later taps go;
    when they do, ``model``'s ``num_features`` and ``head_hidden_size`` become the last kept tap's width."""
    take = take_indices(len(tap_ends), indices)
    last = max(take)
    prune_end = last < len(tap_ends) - 1
    if prune_end:
        model.num_features = model.head_hidden_size = model.feature_info[last]["num_chs"]
    return take, tap_ends[last] + 1, prune_end


class Mixed_5b(ConcatBranches):
    """35x35 entry block: 1x1, 1x1-5x5, 1x1-3x3-3x3 and avgpool-1x1 branches, 96 + 64 + 96 + 64 = 320 channels."""

    def __init__(self, conv_block):
        super().__init__()
        self.branch0 = conv_block(192, 96, kernel_size=1)
        self.branch1 = nn.Sequential(
            conv_block(192, 48, kernel_size=1),
            conv_block(48, 64, kernel_size=5, padding=2),
        )
        self.branch2 = nn.Sequential(
            conv_block(192, 64, kernel_size=1),
            conv_block(64, 96, kernel_size=3, padding=1),
            conv_block(96, 96, kernel_size=3, padding=1),
        )
        self.branch3 = nn.Sequential(
            nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
            conv_block(192, 64, kernel_size=1),
        )


class Block35(nn.Module):
    """Inception-ResNet-A (paper's Figure 16), 35x35x320: 1x1, 1x1-3x3 and 1x1-3x3-3x3 branches, a 1x1
    projection back to 320 channels, scaled by ``scale`` and added to the input; then ReLU."""

    def __init__(self, conv_block, scale=1.0):
        super().__init__()
        self.scale = scale
        self.branch0 = conv_block(320, 32, kernel_size=1)
        self.branch1 = nn.Sequential(
            conv_block(320, 32, kernel_size=1),
            conv_block(32, 32, kernel_size=3, padding=1),
        )
        self.branch2 = nn.Sequential(
            conv_block(320, 32, kernel_size=1),
            conv_block(32, 48, kernel_size=3, padding=1),
            conv_block(48, 64, kernel_size=3, padding=1),
        )
        self.conv2d = nn.Conv2d(128, 320, kernel_size=1)
        self.act = nn.ReLU()

    def forward(self, x):
        x0 = self.branch0(x)
        x1 = self.branch1(x)
        x2 = self.branch2(x)
        out = self.conv2d(torch.cat((x0, x1, x2), 1))
        out = out * self.scale + x
        out = self.act(out)
        return out


class Mixed_6a(ConcatBranches):
    """Reduction-A (paper's Figure 7, k=256, l=256, m=384, n=384), 35x35 -> 17x17: 320 + 384 + 384 = 1088
    channels."""

    def __init__(self, conv_block):
        super().__init__()
        self.branch0 = conv_block(320, 384, kernel_size=3, stride=2)
        self.branch1 = nn.Sequential(
            conv_block(320, 256, kernel_size=1),
            conv_block(256, 256, kernel_size=3, padding=1),
            conv_block(256, 384, kernel_size=3, stride=2),
        )
        self.branch2 = nn.MaxPool2d(3, stride=2)


class Block17(nn.Module):
    """Inception-ResNet-B (paper's Figure 17), 17x17x1088: a 1x1 branch and a 1x1-1x7-7x1 branch, projected,
    scaled by ``scale`` and added to the input; then ReLU."""

    def __init__(self, conv_block, scale=1.0):
        super().__init__()
        self.scale = scale
        self.branch0 = conv_block(1088, 192, kernel_size=1)
        self.branch1 = nn.Sequential(
            conv_block(1088, 128, kernel_size=1),
            conv_block(128, 160, kernel_size=(1, 7), padding=(0, 3)),
            conv_block(160, 192, kernel_size=(7, 1), padding=(3, 0)),
        )
        self.conv2d = nn.Conv2d(384, 1088, kernel_size=1)
        self.act = nn.ReLU()

    def forward(self, x):
        x0 = self.branch0(x)
        x1 = self.branch1(x)
        out = self.conv2d(torch.cat((x0, x1), 1))
        out = out * self.scale + x
        out = self.act(out)
        return out


class Mixed_7a(ConcatBranches):
    """Reduction-B (paper's Figure 18), 17x17 -> 8x8: three strided-conv branches and a max pool,
    384 + 288 + 320 + 1088 = 2080 channels."""

    def __init__(self, conv_block):
        super().__init__()
        self.branch0 = nn.Sequential(
            conv_block(1088, 256, kernel_size=1),
            conv_block(256, 384, kernel_size=3, stride=2),
        )
        self.branch1 = nn.Sequential(
            conv_block(1088, 256, kernel_size=1),
            conv_block(256, 288, kernel_size=3, stride=2),
        )
        self.branch2 = nn.Sequential(
            conv_block(1088, 256, kernel_size=1),
            conv_block(256, 288, kernel_size=3, padding=1),
            conv_block(288, 320, kernel_size=3, stride=2),
        )
        self.branch3 = nn.MaxPool2d(3, stride=2)


class Block8(nn.Module):
    """Inception-ResNet-C (paper's Figure 19), 8x8x2080: a 1x1 branch and a 1x1-1x3-3x1 branch, projected,
    scaled by ``scale`` and added to the input; then ReLU, except with ``no_relu`` (the network's last block)."""

    def __init__(self, conv_block, scale=1.0, no_relu=False):
        super().__init__()
        self.scale = scale
        self.branch0 = conv_block(2080, 192, kernel_size=1)
        self.branch1 = nn.Sequential(
            conv_block(2080, 192, kernel_size=1),
            conv_block(192, 224, kernel_size=(1, 3), padding=(0, 1)),
            conv_block(224, 256, kernel_size=(3, 1), padding=(1, 0)),
        )
        self.conv2d = nn.Conv2d(448, 2080, kernel_size=1)
        self.relu = None if no_relu else nn.ReLU()

    def forward(self, x):
        x0 = self.branch0(x)
        x1 = self.branch1(x)
        out = self.conv2d(torch.cat((x0, x1), 1))
        out = out * self.scale + x
        if self.relu is not None:
            out = self.relu(out)
        return out


class InceptionResnetV2(nn.Module):
    """The paper's Figure 15 with the Inception-v3-style stem of the TensorFlow release: stem convolutions and
    pools, Mixed_5b, 10 x Block35 (``repeat``), Mixed_6a, 20 x Block17 (``repeat_1``), Mixed_7a, 9 x Block8
    (``repeat_2``) and a last Block8 without ReLU (``block8``), a 1x1 convolution to 1536 channels, global pooling,
    dropout (``drop_rate``) and the classifier ``classif``.

    The smallest input is 75x75. ``num_classes=0`` gives the pooled features; ``norm_eps`` is the BatchNorm
    epsilon; ``output_stride`` exists for timm's signature and must be 32.
    """

    default_cfg = {"first_conv": "conv2d_1a.conv", "classifier": "classif"}

    def __init__(self, num_classes=1000, in_chans=3, drop_rate=0.0, output_stride=32, global_pool="avg",
                 norm_eps=1e-3):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"Inception-ResNet-v2 has a fixed output stride of 32, got {output_stride}")
        conv_block = partial(ConvNormAct, padding=0, norm_layer=partial(BatchNormAct2d, eps=norm_eps))
        self.num_classes = num_classes
        self.num_features = 1536
        self.conv2d_1a = conv_block(in_chans, 32, kernel_size=3, stride=2)
        self.conv2d_2a = conv_block(32, 32, kernel_size=3)
        self.conv2d_2b = conv_block(32, 64, kernel_size=3, padding=1)
        self.maxpool_3a = nn.MaxPool2d(3, stride=2)
        self.conv2d_3b = conv_block(64, 80, kernel_size=1)
        self.conv2d_4a = conv_block(80, 192, kernel_size=3)
        self.maxpool_5a = nn.MaxPool2d(3, stride=2)
        self.mixed_5b = Mixed_5b(conv_block)
        self.repeat = nn.Sequential(*[Block35(conv_block, scale=0.17) for _ in range(10)])
        self.mixed_6a = Mixed_6a(conv_block)
        self.repeat_1 = nn.Sequential(*[Block17(conv_block, scale=0.10) for _ in range(20)])
        self.mixed_7a = Mixed_7a(conv_block)
        self.repeat_2 = nn.Sequential(*[Block8(conv_block, scale=0.20) for _ in range(9)])
        self.block8 = Block8(conv_block, no_relu=True)
        self.conv2d_7b = conv_block(2080, self.num_features, kernel_size=1)
        self.feature_info = [
            dict(num_chs=64, reduction=2, module="conv2d_2b"),
            dict(num_chs=192, reduction=4, module="conv2d_4a"),
            dict(num_chs=320, reduction=8, module="repeat"),
            dict(num_chs=1088, reduction=16, module="repeat_1"),
            dict(num_chs=self.num_features, reduction=32, module="conv2d_7b"),
        ]
        self.global_pool, classif = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.head_drop = nn.Dropout(drop_rate)
        self.classif = classif

    def get_classifier(self):
        """The final linear layer."""
        return self.classif

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), optionally with another pooling."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool, self.classif = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()

    def forward_features(self, x):
        """The map after the final 1x1 convolution (N, 1536, H', W')."""
        x = self.conv2d_1a(x)
        x = self.conv2d_2a(x)
        x = self.conv2d_2b(x)
        x = self.maxpool_3a(x)
        x = self.conv2d_3b(x)
        x = self.conv2d_4a(x)
        x = self.maxpool_5a(x)
        x = self.mixed_5b(x)
        x = self.repeat(x)
        x = self.mixed_6a(x)
        x = self.repeat_1(x)
        x = self.mixed_7a(x)
        x = self.repeat_2(x)
        x = self.block8(x)
        x = self.conv2d_7b(x)
        return x

    def _tap_ends(self):
        """The position in ``_LAYER_NAMES`` of each ``feature_info`` tap (a layer's output)."""
        return [_LAYER_NAMES.index(info["module"]) for info in self.feature_info]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The taps of ``feature_info`` picked by ``indices`` (None: all, n: the last n, or a list): the outputs
        of conv2d_2b and conv2d_4a (the stem at strides 2 and 4), of the Block35 and Block17 repeats (strides 8 and
        16) and of the final 1x1 convolution; and, unless ``intermediates_only``, the last map. ``stop_early`` runs
        no further than the last tap picked; ``norm`` is accepted for timm's signature (there is no final norm)."""
        layers = [getattr(self, name) for name in _LAYER_NAMES]
        return chain_intermediates(x, layers, self._tap_ends(), indices, stop_early, output_fmt, intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Replace the layers after the last tap ``indices`` picks by identities (the model then ends at that tap,
        its width the new ``num_features``) and drop the pooling and classifier when asked or when taps go;
        ``prune_norm`` is accepted for timm's signature (there is no final norm). Returns the absolute indices."""
        take, num_layers, prune_end = kept_chain_layers(self, self._tap_ends(), indices)
        for name in _LAYER_NAMES[num_layers:]:
            setattr(self, name, nn.Identity())
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_head(self, x, pre_logits=False):
        """Pool and drop out; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        x = self.head_drop(x)
        return x if pre_logits else self.classif(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


@register_model
def inception_resnet_v2(pretrained=False, progress=True, **kwargs):
    """Inception-ResNet-v2 (55.8M parameters, 299x299 inputs)."""
    return build_model(InceptionResnetV2, "inception_resnet_v2", pretrained, progress=progress, **kwargs)
