"""Xception (Chollet 2017, "Xception: Deep Learning with Depthwise Separable Convolutions"): legacy_xception.

The original Xception as Keras trained it on ImageNet: an Inception network whose modules are replaced by
depthwise separable convolutions (a 3x3 depthwise convolution, then a 1x1 pointwise one, with no nonlinearity
between them). Two plain 3x3 convolutions (unpadded) form the stem; three strided blocks (the entry flow), eight
728-channel blocks of three separable convolutions (the middle flow) and a strided block to 1024 channels (the
exit flow) follow, each block with a residual shortcut (a strided 1x1 convolution where the shape changes); two
more separable convolutions widen the map to 2048 channels before global pooling. Model name, module names,
``state_dict`` keys and (He-normal) initialisation follow timm's ``xception`` module, so its ``legacy_xception``
weights (ported from Keras; 299x299 images normalised to [-1, 1]) load directly.
"""
import engine.nn.functional as F
from engine import nn

from .._features import FeatureBodyNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import create_classifier

__all__ = []


class SeparableConv2d(nn.Module):
    """A depthwise separable convolution: a bias-free depthwise ``kernel_size`` convolution (``conv1``), then a
    bias-free 1x1 convolution mixing the channels (``pointwise``), with nothing between them."""

    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1, padding=0, dilation=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, in_channels, kernel_size, stride, padding, dilation, groups=in_channels,
                               bias=False)
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        x = self.conv1(x)
        x = self.pointwise(x)
        return x


class Block(nn.Module):
    """Xception's residual block: ``reps`` times ReLU, a padded 3x3 separable convolution and BatchNorm (``rep``),
    then, for ``strides`` > 1, a 3x3 max pool with that stride; the input is added back, through a strided 1x1
    convolution and BatchNorm (``skip``, ``skipbn``) where the width or the size changes.

    ``grow_first`` widens to ``out_channels`` at the first separable convolution (else at the last);
    ``start_with_relu=False`` leaves out the first ReLU (the block after the stem, whose output is already
    activated). The first ReLU is not in place, as it reads the input the shortcut needs; the others are.
    """

    def __init__(self, in_channels, out_channels, reps, strides=1, start_with_relu=True, grow_first=True):
        super().__init__()
        if out_channels != in_channels or strides != 1:
            self.skip = nn.Conv2d(in_channels, out_channels, 1, stride=strides, bias=False)
            self.skipbn = nn.BatchNorm2d(out_channels)
        else:
            self.skip = None
        if grow_first:
            widths = [in_channels] + [out_channels] * reps
        else:
            widths = [in_channels] * reps + [out_channels]
        layers = []
        for i in range(reps):
            if i > 0 or start_with_relu:
                layers.append(nn.ReLU(inplace=i > 0))
            layers.append(SeparableConv2d(widths[i], widths[i + 1], 3, padding=1))
            layers.append(nn.BatchNorm2d(widths[i + 1]))
        if strides != 1:
            layers.append(nn.MaxPool2d(3, strides, 1))
        self.rep = nn.Sequential(*layers)

    def forward(self, x):
        out = self.rep(x)
        if self.skip is not None:
            x = self.skipbn(self.skip(x))
        return out + x


class Xception(nn.Module):
    """Xception for ImageNet: the stem (``conv1``/``bn1``/``act1``, ``conv2``/``bn2``/``act2``; unpadded 3x3
    convolutions, the first strided), ``block1`` to ``block12``, two separable convolutions with BatchNorm and ReLU
    (``conv3``... ``act4``, 1536 then ``num_features`` = 2048 channels), global pooling (``global_pool``), dropout
    (``drop_rate``, functional, as in timm) and the classifier (``fc``).

    The widths are fixed, as in timm. ``feature_info`` holds timm's five taps: the stem, the ReLU that opens
    block2, block3 and block12 (the activated outputs of block1, block2 and block11), and the final ReLU.
    """

    default_cfg = {"first_conv": "conv1", "classifier": "fc"}

    def __init__(self, num_classes=1000, in_chans=3, drop_rate=0.0, global_pool="avg"):
        super().__init__()
        self.drop_rate = drop_rate
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.num_features = 2048
        self.conv1 = nn.Conv2d(in_chans, 32, 3, 2, 0, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(32, 64, 3, bias=False)
        self.bn2 = nn.BatchNorm2d(64)
        self.act2 = nn.ReLU(inplace=True)
        self.block1 = Block(64, 128, 2, 2, start_with_relu=False)
        self.block2 = Block(128, 256, 2, 2)
        self.block3 = Block(256, 728, 2, 2)
        for i in range(4, 12):
            self.add_module(f"block{i}", Block(728, 728, 3, 1))
        self.block12 = Block(728, 1024, 2, 2, grow_first=False)
        self.conv3 = SeparableConv2d(1024, 1536, 3, 1, 1)
        self.bn3 = nn.BatchNorm2d(1536)
        self.act3 = nn.ReLU(inplace=True)
        self.conv4 = SeparableConv2d(1536, self.num_features, 3, 1, 1)
        self.bn4 = nn.BatchNorm2d(self.num_features)
        self.act4 = nn.ReLU(inplace=True)
        self.feature_info = [
            dict(num_chs=64, reduction=2, module="act2"),
            dict(num_chs=128, reduction=4, module="block2.rep.0"),
            dict(num_chs=256, reduction=8, module="block3.rep.0"),
            dict(num_chs=728, reduction=16, module="block12.rep.0"),
            dict(num_chs=2048, reduction=32, module="act4"),
        ]
        # how many blocks run before each tap: the stem's, block1's, block2's, block11's, the exit flow's
        self.feature_ends = [0, 1, 2, 11, 12]
        self.global_pool, self.fc = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self._init_weights()

    def _init_weights(self):
        """timm's init, in module order: He-normal convolutions (fan-out, ReLU gain), unit BatchNorm; the
        classifier keeps its default initialisation."""
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    @property
    def feature_wrapper(self):
        """timm's ``features_only`` model: the whole model under ``body``, its taps' maps as features."""
        return FeatureBodyNet

    def get_classifier(self):
        """The final linear layer."""
        return self.fc

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: an identity), after ``global_pool`` if given (else the
        current pooling)."""
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.num_classes = num_classes
        self.global_pool, self.fc = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.global_pool.train(self.training)
        self.fc.train(self.training)

    def _stem(self, x):
        """The two stem convolutions with their BatchNorms and ReLUs."""
        x = self.act1(self.bn1(self.conv1(x)))
        x = self.act2(self.bn2(self.conv2(x)))
        return x

    def _exit(self, x):
        """The two final separable convolutions with their BatchNorms and ReLUs."""
        x = self.act3(self.bn3(self.conv3(x)))
        x = self.act4(self.bn4(self.conv4(x)))
        return x

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the final activated map (N, 2048, H', W')."""
        x = self._stem(x)
        for i in range(1, 13):
            x = getattr(self, f"block{i}")(x)
        x = self._exit(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The taps of ``feature_info`` picked by ``indices`` (None: all, n: the last n, or a list) and, unless
        ``intermediates_only``, the final map. A block tap is the activated block output (the ReLU the next block
        opens with). ``stop_early`` runs no further than the last tap picked (the final map is then that tap);
        ``norm`` is accepted for timm's signature (there is no final norm)."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = take_indices(len(self.feature_ends), indices)
        last = len(self.feature_ends) - 1
        num_blocks = self.feature_ends[max(take)] if stop_early else self.feature_ends[-1]
        x = self._stem(x)
        intermediates = [x] if 0 in take else []
        for i in range(1, num_blocks + 1):
            x = getattr(self, f"block{i}")(x)
            if i in self.feature_ends[1:last] and self.feature_ends.index(i) in take:
                intermediates.append(F.relu(x))
        if num_blocks == self.feature_ends[-1]:
            x = self._exit(x)
            if last in take:
                intermediates.append(x)
        elif num_blocks > 0:
            x = F.relu(x)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop what runs after the last tap ``indices`` picks, as timm does: the later blocks and the exit
        convolutions become identities, the block after a block tap its opening ReLU (the tap, so the model ends at
        the activated block output), and ``num_features`` the tap's width; the pooling and classifier go when
        asked or when taps go. ``prune_norm`` is accepted for timm's signature (there is no final norm). Returns
        the absolute indices."""
        take = take_indices(len(self.feature_ends), indices)
        last = max(take)
        prune_end = last < len(self.feature_ends) - 1
        if prune_end:
            self._prune_after(last)
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def _prune_after(self, tap):
        """Everything after tap ``tap`` (not the last) made an identity, but the ReLU that taps a block output."""
        num_blocks = self.feature_ends[tap]
        next_block = getattr(self, f"block{num_blocks + 1}")
        setattr(self, f"block{num_blocks + 1}", next_block.rep[0] if tap > 0 else nn.Identity())
        for i in range(num_blocks + 2, self.feature_ends[-1] + 1):
            setattr(self, f"block{i}", nn.Identity())
        for name in ("conv3", "bn3", "act3", "conv4", "bn4", "act4"):
            setattr(self, name, nn.Identity())
        self.num_features = self.head_hidden_size = self.feature_info[tap]["num_chs"]

    def forward_head(self, x, pre_logits=False):
        """Global pooling, dropout in training; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        if self.drop_rate:
            x = F.dropout(x, self.drop_rate, training=self.training)
        return x if pre_logits else self.fc(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


@register_model
def legacy_xception(pretrained=False, progress=True, **kwargs):
    """Xception as ported from Keras (299x299 images)."""
    return build_model(Xception, "legacy_xception", pretrained, progress=progress, **kwargs)
