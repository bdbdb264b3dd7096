"""Inception-v4 (Szegedy et al. 2017, "Inception-v4, Inception-ResNet and the Impact of Residual Connections on
Learning").

A deeper, more uniform Inception: a stem of plain and two-branch layers, then four Inception-A blocks at 35x35,
seven Inception-B blocks at 17x17 (factorised 1x7 / 7x1 convolutions) and three Inception-C blocks at 8x8, with
a reduction block between sizes. Every convolution is bias-free and followed by BatchNorm (eps 1e-3, as in the
TensorFlow original) and ReLU; the valid (unpadded) convolutions of the paper shrink a 299x299 image to 8x8.
Model name, module names, ``state_dict`` keys and the model API follow timm, so timm's ``inception_v4`` weights
load as they are.
"""
from functools import partial

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet
from .._helpers import build_model
from ..registry import register_model
from ._layers import BatchNormAct2d, ConcatBranches, ConvNormAct, create_classifier
from .inception_resnet_v2 import chain_intermediates, kept_chain_layers

__all__ = []


class Mixed3a(ConcatBranches):
    """Stem, 147x147 -> 73x73: a strided max pool beside a strided 3x3 convolution, concatenated (64 + 96)."""

    def __init__(self, conv_block):
        super().__init__()
        self.maxpool = nn.MaxPool2d(3, stride=2)
        self.conv = conv_block(64, 96, kernel_size=3, stride=2)


class Mixed4a(ConcatBranches):
    """Stem, 73x73 -> 71x71: a 1x1-3x3 branch beside a 1x1-7x1-1x7-3x3 branch (96 + 96 channels)."""

    def __init__(self, conv_block):
        super().__init__()
        self.branch0 = nn.Sequential(
            conv_block(160, 64, kernel_size=1),
            conv_block(64, 96, kernel_size=3),
        )
        self.branch1 = nn.Sequential(
            conv_block(160, 64, kernel_size=1),
            conv_block(64, 64, kernel_size=(1, 7), padding=(0, 3)),
            conv_block(64, 64, kernel_size=(7, 1), padding=(3, 0)),
            conv_block(64, 96, kernel_size=3),
        )


class Mixed5a(ConcatBranches):
    """Stem, 71x71 -> 35x35: a strided 3x3 convolution beside a strided max pool (192 + 192 channels)."""

    def __init__(self, conv_block):
        super().__init__()
        self.conv = conv_block(192, 192, kernel_size=3, stride=2)
        self.maxpool = nn.MaxPool2d(3, stride=2)


class InceptionA(ConcatBranches):
    """The 35x35 block (paper's Figure 4): 1x1, 1x1-3x3, 1x1-3x3-3x3 and avgpool-1x1 branches, 4 x 96 channels."""

    def __init__(self, conv_block):
        super().__init__()
        self.branch0 = conv_block(384, 96, kernel_size=1)
        self.branch1 = nn.Sequential(
            conv_block(384, 64, kernel_size=1),
            conv_block(64, 96, kernel_size=3, padding=1),
        )
        self.branch2 = nn.Sequential(
            conv_block(384, 64, kernel_size=1),
            conv_block(64, 96, kernel_size=3, padding=1),
            conv_block(96, 96, kernel_size=3, padding=1),
        )
        self.branch3 = nn.Sequential(
            nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
            conv_block(384, 96, kernel_size=1),
        )


class ReductionA(ConcatBranches):
    """35x35 -> 17x17 (paper's Figure 7, k=192, l=224, m=256, n=384): strided 3x3, 1x1-3x3-strided 3x3 and max
    pool branches, 384 + 256 + 384 = 1024 channels."""

    def __init__(self, conv_block):
        super().__init__()
        self.branch0 = conv_block(384, 384, kernel_size=3, stride=2)
        self.branch1 = nn.Sequential(
            conv_block(384, 192, kernel_size=1),
            conv_block(192, 224, kernel_size=3, padding=1),
            conv_block(224, 256, kernel_size=3, stride=2),
        )
        self.branch2 = nn.MaxPool2d(3, stride=2)


class InceptionB(ConcatBranches):
    """The 17x17 block (paper's Figure 5): 7x7 convolutions factorised into 1x7 and 7x1, 384 + 256 + 256 + 128
    channels."""

    def __init__(self, conv_block):
        super().__init__()
        self.branch0 = conv_block(1024, 384, kernel_size=1)
        self.branch1 = nn.Sequential(
            conv_block(1024, 192, kernel_size=1),
            conv_block(192, 224, kernel_size=(1, 7), padding=(0, 3)),
            conv_block(224, 256, kernel_size=(7, 1), padding=(3, 0)),
        )
        self.branch2 = nn.Sequential(
            conv_block(1024, 192, kernel_size=1),
            conv_block(192, 192, kernel_size=(7, 1), padding=(3, 0)),
            conv_block(192, 224, kernel_size=(1, 7), padding=(0, 3)),
            conv_block(224, 224, kernel_size=(7, 1), padding=(3, 0)),
            conv_block(224, 256, kernel_size=(1, 7), padding=(0, 3)),
        )
        self.branch3 = nn.Sequential(
            nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
            conv_block(1024, 128, kernel_size=1),
        )


class ReductionB(ConcatBranches):
    """17x17 -> 8x8 (paper's Figure 8): 1x1-strided 3x3, 1x1-1x7-7x1-strided 3x3 and max pool branches,
    192 + 320 + 1024 = 1536 channels."""

    def __init__(self, conv_block):
        super().__init__()
        self.branch0 = nn.Sequential(
            conv_block(1024, 192, kernel_size=1),
            conv_block(192, 192, kernel_size=3, stride=2),
        )
        self.branch1 = nn.Sequential(
            conv_block(1024, 256, kernel_size=1),
            conv_block(256, 256, kernel_size=(1, 7), padding=(0, 3)),
            conv_block(256, 320, kernel_size=(7, 1), padding=(3, 0)),
            conv_block(320, 320, kernel_size=3, stride=2),
        )
        self.branch2 = nn.MaxPool2d(3, stride=2)


class InceptionC(nn.Module):
    """The 8x8 block (paper's Figure 6): the 3x3 branches end in parallel 1x3 and 3x1 convolutions whose outputs
    are concatenated, 256 + 2 x 256 + 2 x 256 + 256 = 1536 channels."""

    def __init__(self, conv_block):
        super().__init__()
        self.branch0 = conv_block(1536, 256, kernel_size=1)
        self.branch1_0 = conv_block(1536, 384, kernel_size=1)
        self.branch1_1a = conv_block(384, 256, kernel_size=(1, 3), padding=(0, 1))
        self.branch1_1b = conv_block(384, 256, kernel_size=(3, 1), padding=(1, 0))
        self.branch2_0 = conv_block(1536, 384, kernel_size=1)
        self.branch2_1 = conv_block(384, 448, kernel_size=(3, 1), padding=(1, 0))
        self.branch2_2 = conv_block(448, 512, kernel_size=(1, 3), padding=(0, 1))
        self.branch2_3a = conv_block(512, 256, kernel_size=(1, 3), padding=(0, 1))
        self.branch2_3b = conv_block(512, 256, kernel_size=(3, 1), padding=(1, 0))
        self.branch3 = nn.Sequential(
            nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
            conv_block(1536, 256, kernel_size=1),
        )

    def forward(self, x):
        x0 = self.branch0(x)
        x1 = self.branch1_0(x)
        x1 = torch.cat((self.branch1_1a(x1), self.branch1_1b(x1)), 1)
        x2 = self.branch2_0(x)
        x2 = self.branch2_1(x2)
        x2 = self.branch2_2(x2)
        x2 = torch.cat((self.branch2_3a(x2), self.branch2_3b(x2)), 1)
        x3 = self.branch3(x)
        return torch.cat((x0, x1, x2, x3), 1)


class InceptionV4(nn.Module):
    """The paper's Figure 9: the stem, 4 x Inception-A, Reduction-A, 7 x Inception-B, Reduction-B, 3 x Inception-C
    (all in ``features``), then global pooling, dropout (``drop_rate``) and the classifier ``last_linear``.

    The smallest input is 75x75 (one pixel left after the last reduction). ``num_classes=0`` gives the pooled
    features; ``norm_eps`` is the BatchNorm epsilon; ``output_stride`` exists for timm's signature and must be 32.
    """

    feature_wrapper = FlatFeatureListNet  # timm's features_only weight names

    default_cfg = {"first_conv": "features.0.conv", "classifier": "last_linear"}

    def __init__(self, num_classes=1000, in_chans=3, output_stride=32, drop_rate=0.0, global_pool="avg",
                 norm_eps=1e-3):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"Inception-v4 has a fixed output stride of 32, got {output_stride}")
        conv_block = partial(ConvNormAct, padding=0, norm_layer=partial(BatchNormAct2d, eps=norm_eps))
        self.num_classes = num_classes
        self.num_features = 1536
        self.features = nn.Sequential(
            conv_block(in_chans, 32, kernel_size=3, stride=2),
            conv_block(32, 32, kernel_size=3),
            conv_block(32, 64, kernel_size=3, padding=1),
            Mixed3a(conv_block),
            Mixed4a(conv_block),
            Mixed5a(conv_block),
            *[InceptionA(conv_block) for _ in range(4)],
            ReductionA(conv_block),
            *[InceptionB(conv_block) for _ in range(7)],
            ReductionB(conv_block),
            *[InceptionC(conv_block) for _ in range(3)],
        )
        self.feature_info = [
            dict(num_chs=64, reduction=2, module="features.2"),
            dict(num_chs=160, reduction=4, module="features.3"),
            dict(num_chs=384, reduction=8, module="features.9"),
            dict(num_chs=1024, reduction=16, module="features.17"),
            dict(num_chs=1536, reduction=32, module="features.21"),
        ]
        self.global_pool, last_linear = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.head_drop = nn.Dropout(drop_rate)
        self.last_linear = last_linear

    def get_classifier(self):
        """The final linear layer."""
        return self.last_linear

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), optionally with another pooling."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool, self.last_linear = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()

    def forward_features(self, x):
        """The map after the last Inception-C block (N, 1536, H', W')."""
        return self.features(x)

    def _tap_ends(self):
        """The position in ``features`` of each ``feature_info`` tap (a block's output)."""
        return [int(info["module"].split(".")[-1]) for info in self.feature_info]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The taps of ``feature_info`` picked by ``indices`` (None: all, n: the last n, or a list): the outputs
        of the stem's last convolution (stride 2), of Mixed3a (stride 4) and of the last Inception-A, -B and -C
        blocks (strides 8, 16 and 32); and, unless ``intermediates_only``, the last map. ``stop_early`` runs no
        further than the last tap picked; ``norm`` is accepted for timm's signature (there is no final norm)."""
        return chain_intermediates(x, list(self.features), self._tap_ends(), indices, stop_early, output_fmt,
                                   intermediates_only)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Cut ``features`` after the last tap ``indices`` picks (the model then ends at that tap, its width the
        new ``num_features``) and drop the pooling and classifier when asked or when taps go; ``prune_norm`` is
        accepted for timm's signature (there is no final norm). Returns the absolute indices."""
        take, num_layers, prune_end = kept_chain_layers(self, self._tap_ends(), indices)
        self.features = self.features[:num_layers]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_head(self, x, pre_logits=False):
        """Pool and drop out; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        x = self.head_drop(x)
        return x if pre_logits else self.last_linear(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


@register_model
def inception_v4(pretrained=False, progress=True, **kwargs):
    """Inception-v4 (42.7M parameters, 299x299 inputs)."""
    return build_model(InceptionV4, "inception_v4", pretrained, progress=progress, **kwargs)
