"""Aligned Xception (Chollet 2017, "Xception: Deep Learning with Depthwise Separable Convolutions"; the aligned
variants of Chen et al. 2018, "Encoder-Decoder with Atrous Separable Convolution for Semantic Image
Segmentation", DeepLabv3+): xception41, xception65, xception71 and the pre-activation xception41p, xception65p.

Xception replaces Inception modules by depthwise separable convolutions in residual blocks of three. DeepLabv3+'s
"aligned" version deepens the middle flow (8 or 16 blocks), strides with a separable convolution instead of max
pooling, puts BatchNorm after each depthwise convolution too, and pads every convolution so feature maps stay
aligned with the input (a 3x3 convolution of stride 2 maps H to ceil(H / 2)); ``output_stride`` 8 or 16 trades the
last strides for dilation, as for dense prediction. The pre-activation variants ("p") move BatchNorm and ReLU
in front of each separable convolution. Model names, module names, ``state_dict`` keys and the model API follow
timm, so timm's weights for these five models load as they are.
"""

from functools import partial

from engine import nn

from .._features import FeatureHookNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ...ops.stochastic_depth import StochasticDepth
from ._conv import get_padding
from ._layers import BatchNormAct2d, ClassifierHead, ClassifierHeadApi, ConvNormAct

__all__ = []


def _triple(out_chs):
    """A block's three output widths: one width for all three convolutions, or the three given."""
    return tuple(out_chs) if isinstance(out_chs, (tuple, list)) else (out_chs,) * 3


class SeparableConv2d(nn.Module):
    """A depthwise 3x3 convolution, BatchNorm (and ReLU with ``act``), a pointwise 1x1 convolution, BatchNorm (and
    ReLU with ``act``): DeepLabv3+'s separable convolution, normalised after both halves."""

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=1, act=False, eps=1e-3):
        super().__init__()
        padding = get_padding(kernel_size, stride, dilation)
        self.conv_dw = nn.Conv2d(in_chs, in_chs, kernel_size, stride=stride, padding=padding, dilation=dilation,
                                 groups=in_chs, bias=False)
        self.bn_dw = nn.BatchNorm2d(in_chs, eps=eps)
        self.act_dw = nn.ReLU() if act else nn.Identity()
        self.conv_pw = nn.Conv2d(in_chs, out_chs, kernel_size=1, bias=False)
        self.bn_pw = nn.BatchNorm2d(out_chs, eps=eps)
        self.act_pw = nn.ReLU() if act else nn.Identity()

    def forward(self, x):
        x = self.conv_dw(x)
        x = self.bn_dw(x)
        x = self.act_dw(x)
        x = self.conv_pw(x)
        x = self.bn_pw(x)
        x = self.act_pw(x)
        return x


class PreSeparableConv2d(nn.Module):
    """BatchNorm and ReLU (``norm``; an identity without ``first_act``), then a depthwise 3x3 and a pointwise 1x1
    convolution with nothing between them: the pre-activation separable convolution."""

    def __init__(self, in_chs, out_chs, kernel_size=3, stride=1, dilation=1, first_act=True, eps=1e-3):
        super().__init__()
        padding = get_padding(kernel_size, stride, dilation)
        self.norm = BatchNormAct2d(in_chs, eps=eps) if first_act else nn.Identity()
        self.conv_dw = nn.Conv2d(in_chs, in_chs, kernel_size, stride=stride, padding=padding, dilation=dilation,
                                 groups=in_chs, bias=False)
        self.conv_pw = nn.Conv2d(in_chs, out_chs, kernel_size=1, bias=False)

    def forward(self, x):
        x = self.norm(x)
        x = self.conv_dw(x)
        x = self.conv_pw(x)
        return x


class XceptionModule(nn.Module):
    """Three separable convolutions (the last one strided) added to the input, or to a strided 1x1
    convolution + BatchNorm of it where the shape changes.

    ``start_with_relu``: a ReLU before each separable convolution (``stack.act1``...); otherwise each separable
    convolution ends in ReLUs of its own (the exit flow's last block). ``no_skip``: no residual connection.
    ``drop_path``: the probability of dropping the residual branch of a sample in training (None: never).
    """

    def __init__(self, in_chs, out_chs, stride=1, dilation=1, start_with_relu=True, no_skip=False, drop_path=None,
                 eps=1e-3):
        super().__init__()
        out_chs = _triple(out_chs)
        self.in_channels = in_chs
        self.out_channels = out_chs[-1]
        self.no_skip = no_skip
        if not no_skip and (self.out_channels != in_chs or stride != 1):
            self.shortcut = ConvNormAct(in_chs, self.out_channels, 1, stride=stride, apply_act=False,
                                        norm_layer=partial(BatchNormAct2d, eps=eps))
        else:
            self.shortcut = None
        self.stack = nn.Sequential()
        for i in range(3):
            if start_with_relu:
                self.stack.add_module(f"act{i + 1}", nn.ReLU())
            self.stack.add_module(f"conv{i + 1}", SeparableConv2d(
                in_chs, out_chs[i], 3, stride=stride if i == 2 else 1, dilation=dilation, act=not start_with_relu,
                eps=eps))
            in_chs = out_chs[i]
        self.drop_path = StochasticDepth(drop_path, "row") if drop_path else None

    def _residual(self, out, x):
        """The stack's output ``out`` plus the block input ``x`` (projected where the shape changes), unless
        ``no_skip``."""
        if self.no_skip:
            return out
        skip = x if self.shortcut is None else self.shortcut(x)
        if self.drop_path is not None:
            out = self.drop_path(out)
        return out + skip

    def forward(self, x):
        return self._residual(self.stack(x), x)

    def forward_with_tap(self, x):
        """The block output and its feature tap: the input of the last (strided) separable convolution."""
        tap = self.stack[:-1](x)
        return self._residual(self.stack[-1](tap), x), tap

    def prune_to_tap(self):
        """Drop the last separable convolution and the residual connection: the block then outputs its tap."""
        self.stack[-1] = nn.Identity()
        self.shortcut = None
        self.no_skip = True


class PreXceptionModule(nn.Module):
    """The pre-activation block: BatchNorm and ReLU of the input (``norm``), three pre-activation separable
    convolutions (the last one strided; the first without a norm of its own) added to the normalised input, or to
    a strided 1x1 convolution of it where the shape changes. ``no_skip`` and ``drop_path`` as in
    ``XceptionModule``."""

    def __init__(self, in_chs, out_chs, stride=1, dilation=1, no_skip=False, drop_path=None, eps=1e-3):
        super().__init__()
        out_chs = _triple(out_chs)
        self.in_channels = in_chs
        self.out_channels = out_chs[-1]
        self.no_skip = no_skip
        if not no_skip and (self.out_channels != in_chs or stride != 1):
            self.shortcut = nn.Conv2d(in_chs, self.out_channels, 1, stride=stride, bias=False)
        else:
            self.shortcut = nn.Identity()
        self.norm = BatchNormAct2d(in_chs, eps=eps)
        self.stack = nn.Sequential()
        for i in range(3):
            self.stack.add_module(f"conv{i + 1}", PreSeparableConv2d(
                in_chs, out_chs[i], 3, stride=stride if i == 2 else 1, dilation=dilation, first_act=i > 0, eps=eps))
            in_chs = out_chs[i]
        self.drop_path = StochasticDepth(drop_path, "row") if drop_path else None

    def _residual(self, out, x):
        """The stack's output ``out`` plus the normalised input ``x`` (projected where the shape changes), unless
        ``no_skip``."""
        if self.no_skip:
            return out
        if self.drop_path is not None:
            out = self.drop_path(out)
        return out + self.shortcut(x)

    def forward(self, x):
        x = self.norm(x)
        return self._residual(self.stack(x), x)

    def forward_with_tap(self, x):
        """The block output and its feature tap: the input of the last (strided) separable convolution."""
        x = self.norm(x)
        tap = self.stack[:-1](x)
        return self._residual(self.stack[-1](tap), x), tap

    def prune_to_tap(self):
        """Drop the last separable convolution and the residual connection: the block then outputs its tap."""
        self.stack[-1] = nn.Identity()
        self.shortcut = nn.Identity()
        self.no_skip = True


class XceptionAligned(ClassifierHeadApi, nn.Module):
    """A two-convolution stem (stride 2, 32 then 64 channels), the blocks of ``block_cfg`` (``blocks``), a final
    ReLU for the pre-activation variants (``act``) and a classifier head (``head``).

    ``block_cfg`` lists timm's block dicts: ``in_chs``, ``out_chs`` (one width or three), ``stride`` and optionally
    ``no_skip`` and ``start_with_relu``. ``output_stride`` (8, 16 or 32) replaces the strides that would exceed it
    with dilation. ``preact`` selects the pre-activation blocks; ``norm_eps`` is the BatchNorm epsilon.
    ``drop_path_rate`` grows linearly from 0 at the first block to this value at the last; ``drop_rate`` is the
    dropout before the classifier. The stages end inside the strided blocks, before their last (strided) separable
    convolution, and at the last block (``feature_info``, timm's taps).
    """

    default_cfg = {"first_conv": "stem.0.conv", "classifier": "head.fc"}
    feature_wrapper = FeatureHookNet  # its stages end inside blocks, out of FeatureListNet's reach

    def __init__(self, block_cfg, num_classes=1000, in_chans=3, output_stride=32, preact=False, norm_eps=1e-3,
                 drop_rate=0.0, drop_path_rate=0.0, global_pool="avg"):
        super().__init__()
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride must be 8, 16 or 32, got {output_stride}")
        self.num_classes = num_classes
        norm_layer = partial(BatchNormAct2d, eps=norm_eps)
        self.stem = nn.Sequential(
            ConvNormAct(in_chans, 32, kernel_size=3, stride=2, padding=1, norm_layer=norm_layer),
            nn.Conv2d(32, 64, kernel_size=3, padding=1, bias=False) if preact else
            ConvNormAct(32, 64, kernel_size=3, padding=1, norm_layer=norm_layer),
        )
        block_fn = PreXceptionModule if preact else XceptionModule
        dilation = 1
        reduction = 2
        self.feature_info = []
        self.blocks = nn.Sequential()
        for i, cfg in enumerate(block_cfg):
            cfg = dict(cfg, dilation=dilation, drop_path=drop_path_rate * i / (len(block_cfg) - 1), eps=norm_eps)
            if cfg["stride"] > 1:
                tap = f"blocks.{i}.stack.conv2" if preact else f"blocks.{i}.stack.act3"
                self.feature_info.append(dict(num_chs=_triple(cfg["out_chs"])[-2], reduction=reduction, module=tap))
                if reduction * cfg["stride"] > output_stride:
                    dilation *= cfg["stride"]
                    cfg["stride"] = 1
                else:
                    reduction *= cfg["stride"]
            self.blocks.add_module(str(i), block_fn(**cfg))
        self.num_features = self.blocks[-1].out_channels
        self.feature_info.append(dict(num_chs=self.num_features, reduction=reduction,
                                      module=f"blocks.{len(self.blocks) - 1}"))
        self.act = nn.ReLU() if preact else nn.Identity()
        self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
        self.head_hidden_size = self.head.num_features

    def forward_features(self, x):
        """The map after the last block (and, pre-activated, its ReLU): (N, num_features, H', W')."""
        x = self.stem(x)
        x = self.blocks(x)
        x = self.act(x)
        return x

    def _tap_ends(self):
        """The block of each ``feature_info`` tap: inside each strided block, then the last block."""
        return [int(info["module"].split(".")[1]) for info in self.feature_info]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The taps of ``feature_info`` picked by ``indices`` (None: all, n: the last n, or a list): inside each
        strided block, the input of its last (strided) separable convolution, where the stride is still the one
        before; then the last block's output, before the pre-activation models' final ReLU. Unless
        ``intermediates_only``, also the last map (through that ReLU when every block ran). ``stop_early`` runs no
        further than the last tap picked; ``norm`` is accepted for timm's signature (there is no final norm)."""
        ends = self._tap_ends()
        take, _ = intermediate_stages(ends, indices, stop_early, output_fmt)
        blocks = list(self.blocks)[:ends[max(take)] + 1] if stop_early else list(self.blocks)
        x, intermediates = self._run_blocks(self.stem(x), blocks, ends, take)
        if intermediates_only:
            return intermediates
        if len(blocks) == len(self.blocks):
            x = self.act(x)
        return x, intermediates

    @staticmethod
    def _run_blocks(x, blocks, ends, take):
        """``x`` through ``blocks``: the last output and the maps of the taps in ``take`` (``ends``: each tap's
        block; every tap but the last is inside its block)."""
        last = len(ends) - 1
        intermediates = []
        tap = 0
        for i, block in enumerate(blocks):
            if tap < last and i == ends[tap]:
                x, tapped = block.forward_with_tap(x)
                if tap in take:
                    intermediates.append(tapped)
                tap += 1
            else:
                x = block(x)
                if i == ends[last] and last in take:
                    intermediates.append(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last tap ``indices`` picks and, when that tap is inside a block, the rest of
        that block (its last convolution and residual connection) and the final ReLU: the model then ends at the
        tap, its width the new ``num_features``. The pooling and classifier go when asked or when taps go;
        ``prune_norm`` is accepted for timm's signature (there is no final norm). Returns the absolute indices."""
        ends = self._tap_ends()
        take = take_indices(len(ends), indices)
        last = max(take)
        prune_end = last < len(ends) - 1
        self.blocks = self.blocks[:ends[last] + 1]
        if prune_end:
            self.blocks[-1].prune_to_tap()
            self.act = nn.Identity()
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.head.in_features = self.num_features  # the head's input is now the kept tap, as in timm
            self.reset_classifier(0, "")
        return take


def _create_xception(variant, pretrained, progress, **kwargs):
    """Build a registered variant (``kwargs`` may override its ``block_cfg``, ``preact`` and ``norm_eps``, as in
    timm)."""
    return build_model(XceptionAligned, variant, pretrained, progress=progress, **kwargs)


def _entry_flow():
    """The entry flow of xception41 / xception65: three strided blocks to 728 channels."""
    return [
        dict(in_chs=64, out_chs=128, stride=2),
        dict(in_chs=128, out_chs=256, stride=2),
        dict(in_chs=256, out_chs=728, stride=2),
    ]


def _middle_flow(depth):
    """``depth`` identical 728-channel blocks."""
    return [dict(in_chs=728, out_chs=728, stride=1) for _ in range(depth)]


def _exit_flow(preact):
    """A strided block to 1024 channels, then a block of widening separable convolutions without skip (starting
    with its own ReLUs unless pre-activated)."""
    last = dict(in_chs=1024, out_chs=(1536, 1536, 2048), stride=1, no_skip=True)
    if not preact:
        last["start_with_relu"] = False
    return [dict(in_chs=728, out_chs=(728, 1024, 1024), stride=2), last]


@register_model
def xception41(pretrained=False, progress=True, **kwargs):
    """Aligned Xception-41: 8 middle-flow blocks (27.0M parameters)."""
    block_cfg = _entry_flow() + _middle_flow(8) + _exit_flow(preact=False)
    return _create_xception("xception41", pretrained, progress, **{"block_cfg": block_cfg, "norm_eps": 1e-3, **kwargs})


@register_model
def xception65(pretrained=False, progress=True, **kwargs):
    """Aligned Xception-65: 16 middle-flow blocks (39.9M parameters)."""
    block_cfg = _entry_flow() + _middle_flow(16) + _exit_flow(preact=False)
    return _create_xception("xception65", pretrained, progress, **{"block_cfg": block_cfg, "norm_eps": 1e-3, **kwargs})


@register_model
def xception71(pretrained=False, progress=True, **kwargs):
    """Aligned Xception-71: a longer entry flow (five blocks, alternating strides) and 16 middle-flow blocks
    (42.3M parameters)."""
    entry_flow = [
        dict(in_chs=64, out_chs=128, stride=2),
        dict(in_chs=128, out_chs=256, stride=1),
        dict(in_chs=256, out_chs=256, stride=2),
        dict(in_chs=256, out_chs=728, stride=1),
        dict(in_chs=728, out_chs=728, stride=2),
    ]
    block_cfg = entry_flow + _middle_flow(16) + _exit_flow(preact=False)
    return _create_xception("xception71", pretrained, progress, **{"block_cfg": block_cfg, "norm_eps": 1e-3, **kwargs})


@register_model
def xception41p(pretrained=False, progress=True, **kwargs):
    """Pre-activation Aligned Xception-41 (26.9M parameters); BatchNorm eps 1e-5, as timm trained it."""
    block_cfg = _entry_flow() + _middle_flow(8) + _exit_flow(preact=True)
    return _create_xception("xception41p", pretrained, progress,
                            **{"block_cfg": block_cfg, "preact": True, "norm_eps": 1e-5, **kwargs})


@register_model
def xception65p(pretrained=False, progress=True, **kwargs):
    """Pre-activation Aligned Xception-65 (39.8M parameters)."""
    block_cfg = _entry_flow() + _middle_flow(16) + _exit_flow(preact=True)
    return _create_xception("xception65p", pretrained, progress,
                            **{"block_cfg": block_cfg, "preact": True, "norm_eps": 1e-3, **kwargs})
