"""SelecSLS (Mehta et al. 2020, "XNect: Real-time Multi-Person 3D Motion Capture with a Single RGB Camera"):
selecsls42b, selecsls60 and selecsls60b, and timm's variants without published weights, selecsls42 and selecsls84.

A fast backbone built from selective long- and short-range skip connections. Each block runs a chain of
convolutions (3x3, 1x1, 3x3 at half width, 1x1, 3x3 at half width) and concatenates three points of the chain;
the first block of each level also passes its output on as the level's long-range skip, which every later block of
the level concatenates too, before a 1x1 convolution mixes them. After a 3x3 stride-2 stem and three levels (each
opening with a stride-2 block), a head of four plain convolutions (two of them stride 2) reduces the image by 64
before pooling. Every convolution is followed by BatchNorm and ReLU. The ``b`` variants end the head with a 1x1
convolution back to 1024 channels. Model names, module names, ``state_dict`` keys and initialisation follow timm's
``selecsls`` module, so its checkpoints load directly.
"""
import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import create_classifier

__all__ = []


def conv_bn(in_chs, out_chs, k=3, stride=1, padding=None, dilation=1):
    """A bias-free ``k`` x ``k`` convolution (padded to keep "same" geometry unless ``padding`` is given), BatchNorm
    and ReLU as a Sequential (``0``, ``1``, ``2``), timm's layout."""
    if padding is None:
        padding = ((stride - 1) + dilation * (k - 1)) // 2
    return nn.Sequential(
        nn.Conv2d(in_chs, out_chs, k, stride, padding=padding, dilation=dilation, bias=False),
        nn.BatchNorm2d(out_chs),
        nn.ReLU(inplace=True),
    )


class SequentialList(nn.Sequential):
    """The blocks, run in turn on a list ([features] or [features, level skip]) that each block takes and returns:
    a Sequential whose children pass lists, so that feature taps and truncation work on it as on any Sequential."""

    def forward(self, x):
        for block in self:
            x = block(x)
        return x


class SelectSeq(nn.Module):
    """The blocks' [features, level skip] list back to one map: the element at ``index`` (``mode='index'``) or all
    elements concatenated along the channels (any other mode)."""

    def __init__(self, mode="index", index=0):
        super().__init__()
        self.mode = mode
        self.index = index

    def forward(self, x):
        if self.mode == "index":
            return x[self.index]
        return torch.cat(x, dim=1)


class SelecSlsBlock(nn.Module):
    """A SelecSLS block on [x] or [x, skip]: ``conv1`` (3x3 to ``mid_chs``, carrying the stride), ``conv2`` (1x1),
    ``conv3`` (3x3 to half), ``conv4`` (1x1 back), ``conv5`` (3x3 to half); the outputs of ``conv1``, ``conv3``
    and ``conv5`` (and the level's ``skip_chs``-wide skip, unless ``is_first``) are concatenated and mixed by a 1x1
    ``conv6`` to ``out_chs``. Returns [out, skip]: a first block starts its level's skip with its own output."""

    def __init__(self, in_chs, skip_chs, mid_chs, out_chs, is_first, stride, dilation=1):
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"a SelecSLS block's stride must be 1 or 2, got {stride}")
        self.stride = stride
        self.is_first = is_first
        self.conv1 = conv_bn(in_chs, mid_chs, 3, stride, dilation=dilation)
        self.conv2 = conv_bn(mid_chs, mid_chs, 1)
        self.conv3 = conv_bn(mid_chs, mid_chs // 2, 3)
        self.conv4 = conv_bn(mid_chs // 2, mid_chs, 1)
        self.conv5 = conv_bn(mid_chs, mid_chs // 2, 3)
        self.conv6 = conv_bn(2 * mid_chs + (0 if is_first else skip_chs), out_chs, 1)

    def forward(self, x):
        if not isinstance(x, list):
            x = [x]
        if len(x) not in (1, 2):
            raise ValueError(f"a SelecSLS block takes [x] or [x, skip], got a list of {len(x)}")
        d1 = self.conv1(x[0])
        d2 = self.conv3(self.conv2(d1))
        d3 = self.conv5(self.conv4(d2))
        if self.is_first:
            out = self.conv6(torch.cat([d1, d2, d3], 1))
            return [out, out]
        return [self.conv6(torch.cat([d1, d2, d3, x[1]], 1)), x[1]]


class SelecSlsFeatures(FlatFeatureListNet):
    """timm's ``features_only`` SelecSLS: ``FlatFeatureListNet`` (the stem's, blocks' and head's layers lifted to
    ``stem_2``, ``features_1``, ``head_1``...), each tap giving its map: a block's features, not its skip."""

    def forward(self, x):
        features = []
        for name, module in self.named_children():
            x = module(x)
            if name in self._return_layers:
                features.append(x[0] if isinstance(x, list) else x)
        return features


# per family: each block's (in_chs, skip_chs, mid_chs, out_chs, is_first, stride), the (channels, reduction, module)
# of the last block of each level, the head's input and first widths, and (SelecSLS-84's 3x3) its last kernel size
MODEL_CFGS = {
    "selecsls42": dict(
        features=[(32, 0, 64, 64, True, 2), (64, 64, 64, 128, False, 1), (128, 0, 144, 144, True, 2),
                  (144, 144, 144, 288, False, 1), (288, 0, 304, 304, True, 2), (304, 304, 304, 480, False, 1)],
        taps=[(128, 4, "features.1"), (288, 8, "features.3"), (480, 16, "features.5")],
        head_in=480, head_mid=960),
    "selecsls60": dict(
        features=[(32, 0, 64, 64, True, 2), (64, 64, 64, 128, False, 1), (128, 0, 128, 128, True, 2),
                  (128, 128, 128, 128, False, 1), (128, 128, 128, 288, False, 1), (288, 0, 288, 288, True, 2),
                  (288, 288, 288, 288, False, 1), (288, 288, 288, 288, False, 1), (288, 288, 288, 416, False, 1)],
        taps=[(128, 4, "features.1"), (288, 8, "features.4"), (416, 16, "features.8")],
        head_in=416, head_mid=756),
    "selecsls84": dict(
        features=[(32, 0, 64, 64, True, 2), (64, 64, 64, 144, False, 1), (144, 0, 144, 144, True, 2),
                  (144, 144, 144, 144, False, 1), (144, 144, 144, 144, False, 1), (144, 144, 144, 144, False, 1),
                  (144, 144, 144, 304, False, 1), (304, 0, 304, 304, True, 2), (304, 304, 304, 304, False, 1),
                  (304, 304, 304, 304, False, 1), (304, 304, 304, 304, False, 1), (304, 304, 304, 304, False, 1),
                  (304, 304, 304, 512, False, 1)],
        taps=[(144, 4, "features.1"), (304, 8, "features.6"), (512, 16, "features.12")],
        head_in=512, head_mid=960, last_kernel=3),
}


def _selecsls_cfg(variant):
    """timm's model configuration of a variant: ``block``, ``features`` (each block's arguments), ``head`` (each
    head convolution's in, out, kernel size and stride), ``num_features`` and ``feature_info``."""
    base = MODEL_CFGS[variant.removesuffix("b")]
    head_in, head_mid = base["head_in"], base["head_mid"]
    if variant.endswith("b"):
        head = [(head_in, head_mid, 3, 2), (head_mid, 1024, 3, 1), (1024, 1280, 3, 2), (1280, 1024, 1, 1)]
    else:
        head = [(head_in, head_mid, 3, 2), (head_mid, 1024, 3, 1), (1024, 1024, 3, 2),
                (1024, 1280, base.get("last_kernel", 1), 1)]
    num_features = head[-1][1]
    feature_info = [dict(num_chs=32, reduction=2, module="stem.2")]
    feature_info += [dict(num_chs=c, reduction=r, module=m) for c, r, m in base["taps"]]
    feature_info.append(dict(num_chs=1024, reduction=32, module="head.1"))
    feature_info.append(dict(num_chs=num_features, reduction=64, module="head.3"))
    return dict(block=SelecSlsBlock, features=base["features"], head=head, num_features=num_features,
                feature_info=feature_info)


class SelecSls(nn.Module):
    """SelecSLS: a 3x3 stride-2 stem (``stem``), the blocks (``features``, passing [features, level skip] lists),
    the selection of the features (``from_seq``), the head convolutions (``head``), then global pooling
    (``global_pool``), dropout (``head_drop``) and the classifier (``fc``).

    ``cfg`` is timm's model configuration: ``block`` (the block class), ``features`` (each block's arguments),
    ``head`` (each head convolution's in, out, kernel size and stride), ``num_features`` and ``feature_info``.
    """

    default_cfg = {"first_conv": "stem.0", "classifier": "fc"}
    feature_wrapper = SelecSlsFeatures

    def __init__(self, cfg, num_classes=1000, in_chans=3, drop_rate=0.0, global_pool="avg"):
        super().__init__()
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.stem = conv_bn(in_chans, 32, stride=2)
        self.features = SequentialList(*[cfg["block"](*block_args) for block_args in cfg["features"]])
        self.from_seq = SelectSeq()
        self.head = nn.Sequential(*[conv_bn(*conv_args) for conv_args in cfg["head"]])
        self.num_features = cfg["num_features"]
        self.feature_info = cfg["feature_info"]
        self.feature_ends = [self._feature_end(info["module"]) for info in self.feature_info]
        global_pool, fc = create_classifier(self.num_features, num_classes, global_pool)
        self.global_pool = global_pool
        self.head_drop = nn.Dropout(drop_rate)
        self.fc = fc
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")

    def _feature_end(self, module):
        """The position of a feature tap's layer in the chain of blocks and head convolutions (-1: the stem)."""
        name, index = module.split(".")
        if name == "stem":
            return -1
        if name == "features":
            return int(index)
        return len(self.features) + int(index)

    def get_classifier(self):
        """The final linear layer."""
        return self.fc

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after another pooling ``global_pool`` if
        given."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = self.global_pool.pool_type
        self.global_pool, self.fc = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.global_pool.train(self.training)
        self.fc.train(self.training)

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The feature taps' outputs (``feature_info``: the stem, the last block of each level, the head's
        convolutions) picked by ``indices`` (None: all, n: the last n, or a list), and (unless
        ``intermediates_only``) the last output; ``stop_early`` skips the layers after the last tap picked. ``norm``
        changes nothing: there is no final norm (timm's argument)."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = take_indices(len(self.feature_ends), indices)
        last_tap = len(self.feature_ends) - 1
        num_blocks = len(self.features)
        intermediates = []
        x = self.stem(x)
        if 0 in take:
            intermediates.append(x)
        blocks, head = self.features, self.head
        if stop_early:
            end = self.feature_ends[max(take)]
            blocks = self.features[:end + 1]
            head = self.head[:max(0, end - num_blocks + 1)]
        tap = 1
        x_list = [x]
        for i, block in enumerate(blocks):
            x_list = block(x_list)
            if i == self.feature_ends[tap]:
                if tap in take:
                    intermediates.append(x_list[0])
                tap = min(tap + 1, last_tap)
        x = self.from_seq(x_list)
        for i, layer in enumerate(head, start=num_blocks):
            x = layer(x)
            if i == self.feature_ends[tap]:
                if tap in take:
                    intermediates.append(x)
                tap = min(tap + 1, last_tap)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks and head convolutions after the last tap ``indices`` picks (see
        ``forward_intermediates``) and, with ``prune_head`` or when layers go, the classifier and pooling; returns
        the absolute indices."""
        take = take_indices(len(self.feature_ends), indices)
        last = max(take)
        end = self.feature_ends[last]
        prune_end = end < len(self.features) + len(self.head) - 1
        self.head = self.head[:max(0, end - len(self.features) + 1)]
        self.features = self.features[:end + 1]
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.reset_classifier(0, "")
        return take

    def forward_features(self, x):
        """The map after the head convolutions (N, num_features, H / 64, W / 64)."""
        x = self.stem(x)
        x = self.features([x])
        x = self.head(self.from_seq(x))
        return x

    def forward_head(self, x, pre_logits=False):
        """Pooling and dropout; then the classifier unless ``pre_logits``."""
        x = self.global_pool(x)
        x = self.head_drop(x)
        return x if pre_logits else self.fc(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_selecsls(variant, pretrained, progress, **kwargs):
    """Build a registered variant from its configuration; ``features_only`` gives timm's five taps (the stem, the
    last block of each level, the head's second convolution; strides 2 to 32) unless ``out_indices`` says
    otherwise, under timm's flattened names (``stem_2``, ``features_1``, ``head_1``...)."""
    if kwargs.get("features_only") and kwargs.get("out_indices") is None:
        kwargs["out_indices"] = (0, 1, 2, 3, 4)
    return build_model(SelecSls, variant, pretrained, progress=progress, cfg=_selecsls_cfg(variant), **kwargs)


@register_model
def selecsls42(pretrained=False, progress=True, **kwargs):
    """SelecSLS-42."""
    return _create_selecsls("selecsls42", pretrained, progress, **kwargs)


@register_model
def selecsls42b(pretrained=False, progress=True, **kwargs):
    """SelecSLS-42 with the 1024-channel head."""
    return _create_selecsls("selecsls42b", pretrained, progress, **kwargs)


@register_model
def selecsls60(pretrained=False, progress=True, **kwargs):
    """SelecSLS-60."""
    return _create_selecsls("selecsls60", pretrained, progress, **kwargs)


@register_model
def selecsls60b(pretrained=False, progress=True, **kwargs):
    """SelecSLS-60 with the 1024-channel head."""
    return _create_selecsls("selecsls60b", pretrained, progress, **kwargs)


@register_model
def selecsls84(pretrained=False, progress=True, **kwargs):
    """SelecSLS-84: levels of 2, 5 and 6 blocks, a 3x3 last head convolution."""
    return _create_selecsls("selecsls84", pretrained, progress, **kwargs)
