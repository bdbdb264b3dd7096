"""HRNet (Wang et al. 2019, "Deep High-Resolution Representation Learning for Visual Recognition"; the SSLD weights
from Cui et al. 2021, "Beyond Self-Supervision: A Simple Yet Effective Network Distillation Alternative to Improve
Backbones"): hrnet_w18_small, hrnet_w18_small_v2, hrnet_w18, hrnet_w30, hrnet_w32, hrnet_w40, hrnet_w44, hrnet_w48,
hrnet_w64, hrnet_w18_ssld and hrnet_w48_ssld.

The network keeps a high-resolution representation all the way through instead of recovering it from a
low-resolution one. After a stem of two strided 3x3 convolutions and a first stage of bottleneck blocks at 1/4 of
the input size, each new stage adds a branch at half the resolution and twice the width of the last (1/4 to 1/32,
widths C, 2C, 4C, 8C: the model's name gives C). A stage is a chain of modules; in each, every branch runs its own
residual blocks, then every output branch sums all branches brought to its resolution and width: lower
resolutions through a 1x1 convolution and nearest-neighbour upsampling, higher ones through strided 3x3
convolutions. Transition layers between stages open the new branch from the lowest-resolution one. The
classification head widens each branch with a bottleneck block ("incre" modules, to 128, 256, 512 and 1024
channels), folds them from the highest resolution down with strided 3x3 convolutions, and ends in a 1x1
convolution to 2048 channels, global pooling and a linear classifier.

Model names, module names, ``state_dict`` keys and initialisation follow timm's ``hrnet`` module (its residual
blocks are timm's ResNet blocks), so its checkpoints load directly. ``features_only`` gives timm's
``HighResolutionNetFeatures``: the stem and the four branches, widened by the incre modules unless
``feature_location=''``.
"""
from engine import nn

from .._features import FeatureInfo, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import create_classifier
from .resnet import BasicBlock, Bottleneck

__all__ = []

_BLOCKS = {"BASIC": BasicBlock, "BOTTLENECK": Bottleneck}
_STEM_OUT = 64  # the stem's second convolution, whatever stem_width is
_HEAD_CHANNELS = (32, 64, 128, 256)  # the incre bottlenecks' widths (their outputs are four times wider)
_HEAD_FEATURES = 2048  # the classification head's last convolution
_TRUNK = ("conv1", "bn1", "act1", "conv2", "bn2", "act2", "layer1", "transition1", "stage2", "transition2", "stage3",
          "transition3", "stage4")


def _conv_bn(in_chs, out_chs, kernel_size, stride=1, *tail, bias=False):
    """A convolution ("same" padding for odd kernels) and BatchNorm, followed by the ``tail`` modules, in one
    Sequential (timm's layout for every such pair in HRNet)."""
    return nn.Sequential(
        nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=kernel_size // 2, bias=bias),
        nn.BatchNorm2d(out_chs),
        *tail,
    )


def _make_layer(block, in_chs, planes, num_blocks):
    """``num_blocks`` residual blocks of width ``planes``; the first projects its shortcut (1x1 convolution and
    BatchNorm) when its input is not ``planes * block.expansion`` wide."""
    out_chs = planes * block.expansion
    downsample = None
    if in_chs != out_chs:
        downsample = _conv_bn(in_chs, out_chs, 1)
    layers = [block(in_chs, planes, 1, downsample)]
    for _ in range(1, num_blocks):
        layers.append(block(out_chs, planes))
    return nn.Sequential(*layers)


def _fuse_step(in_chs, out_chs, i, j):
    """How output branch ``i`` receives input branch ``j`` (both ``in_chs``/``out_chs`` wide): as it is when i == j;
    from a lower resolution (j > i) through a 1x1 convolution, BatchNorm and nearest upsampling by 2 ** (j - i); from
    a higher one through i - j strided 3x3 convolutions with BatchNorm, all but the last followed by ReLU and keeping
    the width."""
    if j == i:
        return nn.Identity()
    if j > i:
        return _conv_bn(in_chs, out_chs, 1, 1, nn.Upsample(scale_factor=2 ** (j - i), mode="nearest"))
    steps = [_conv_bn(in_chs, in_chs, 3, 2, nn.ReLU(False)) for _ in range(i - j - 1)]
    steps.append(_conv_bn(in_chs, out_chs, 3, 2))
    return nn.Sequential(*steps)


class HighResolutionModule(nn.Module):
    """One exchange unit: ``num_branches`` parallel branches (each ``num_blocks[i]`` residual blocks of
    ``block_type``, ``num_channels[i]`` wide, taking ``num_in_chs[i]`` channels), then the fuse layers, where output
    branch i is the ReLU of the sum of every branch brought to its resolution and width (see ``_fuse_step``). A
    single branch skips the fusion. ``fuse_method`` 'SUM' is the only one.

    ``forward`` takes and returns the list of branch maps, the highest resolution first.
    """

    def __init__(self, num_branches, block_type, num_blocks, num_in_chs, num_channels, fuse_method="SUM"):
        super().__init__()
        lengths = {"num_blocks": len(num_blocks), "num_channels": len(num_channels), "num_in_chs": len(num_in_chs)}
        for name, length in lengths.items():
            if length != num_branches:
                raise ValueError(f"num_branches ({num_branches}) <> {name} ({length})")
        if fuse_method != "SUM":
            raise ValueError(f"unknown fuse_method '{fuse_method}': only 'SUM' is supported")
        self.num_branches = num_branches
        self.branches = nn.ModuleList([_make_layer(block_type, num_in_chs[i], num_channels[i], num_blocks[i])
                                       for i in range(num_branches)])
        self.num_out_chs = [c * block_type.expansion for c in num_channels]
        if num_branches == 1:
            self.fuse_layers = nn.Identity()
        else:
            chs = self.num_out_chs
            self.fuse_layers = nn.ModuleList([
                nn.ModuleList([_fuse_step(chs[j], chs[i], i, j) for j in range(num_branches)])
                for i in range(num_branches)
            ])
        self.fuse_act = nn.ReLU(False)

    def forward(self, x):
        x = [branch(t) for branch, t in zip(self.branches, x)]
        if self.num_branches == 1:
            return x
        fused = []
        for fuse_into in self.fuse_layers:
            y = fuse_into[0](x[0])
            for j in range(1, self.num_branches):
                y = y + fuse_into[j](x[j])
            fused.append(self.fuse_act(y))
        return fused


def _make_stage(config, num_in_chs):
    """A stage from its configuration (``num_modules`` HighResolutionModules with the branches' ``block_type``,
    ``num_blocks`` and ``num_channels``); returns it (a Sequential that passes the branch list along) and its output
    widths."""
    modules = []
    for _ in range(config["num_modules"]):
        module = HighResolutionModule(config["num_branches"], _BLOCKS[config["block_type"]], config["num_blocks"],
                                      num_in_chs, config["num_channels"], config["fuse_method"])
        modules.append(module)
        num_in_chs = module.num_out_chs
    return nn.Sequential(*modules), num_in_chs


def _make_transition(pre_chs, cur_chs):
    """The layers between two stages, one per branch of the next: a kept branch passes as it is (an identity) or,
    when its width changes, through a 3x3 convolution, BatchNorm and ReLU; a new branch comes from the previous
    stage's lowest resolution through strided 3x3 convolutions (BatchNorm and ReLU each), one per halving, the last
    giving its width."""
    layers = []
    for i, out_chs in enumerate(cur_chs):
        if i < len(pre_chs):
            if out_chs == pre_chs[i]:
                layers.append(nn.Identity())
            else:
                layers.append(_conv_bn(pre_chs[i], out_chs, 3, 1, nn.ReLU(inplace=True)))
            continue
        in_chs = pre_chs[-1]
        steps = [_conv_bn(in_chs, in_chs, 3, 2, nn.ReLU(inplace=True)) for _ in range(i - len(pre_chs))]
        steps.append(_conv_bn(in_chs, out_chs, 3, 2, nn.ReLU(inplace=True)))
        layers.append(nn.Sequential(*steps))
    return nn.ModuleList(layers)


def _feature_info(stem_chs, branch_chs):
    """timm's feature_info: the stem (after the first convolution, 1/2, ``stem_chs`` wide: timm reports the second
    convolution's 64, which every registered model shares) and the four branches (1/4 to 1/32), under timm's names
    ('stem', 'stage1'... are not module names: HRNet has its own feature model)."""
    info = [dict(num_chs=stem_chs, reduction=2, module="stem")]
    for i, chs in enumerate(branch_chs):
        info.append(dict(num_chs=chs, reduction=4 * 2 ** i, module=f"stage{i + 1}"))
    return info


class _HighResolutionTrunk(nn.Module):
    """The forward pass shared by the network and its feature model, over the modules named in ``_TRUNK``."""

    def forward_stem(self, x):
        """The first convolution's map (1/2), then the second's (1/4)."""
        x = self.conv1(x)
        x = self.bn1(x)
        stem = self.act1(x)
        x = self.conv2(stem)
        x = self.bn2(x)
        x = self.act2(x)
        return stem, x

    @staticmethod
    def _transition(transition, branches):
        """The next stage's inputs: the kept branches (identities) as they are, the others through their layers
        from the last branch (timm's and the original HRNet's rule: a kept branch changing width reads the last
        one, which only works for the last)."""
        return [branches[i] if isinstance(t, nn.Identity) else t(branches[-1]) for i, t in enumerate(transition)]

    def stages(self, x):
        """The four stages on the stem's 1/4 map: the list of the last stage's branch maps, 1/4 to 1/32."""
        x = self.layer1(x)
        branches = self.stage2(self._transition(self.transition1, [x]))
        branches = self.stage3(self._transition(self.transition2, branches))
        branches = self.stage4(self._transition(self.transition3, branches))
        return branches


class HighResolutionNetFeatures(_HighResolutionTrunk):
    """timm's ``features_only`` HRNet: a HighResolutionNet's trunk (and its incre modules when ``feature_location``
    is 'incre') under the same names; ``forward`` returns the stem's 1/2 map (index 0) and the four branch maps
    (indices 1-4; 128 to 1024 channels after the incre modules, the raw stage widths with ``feature_location=''``)
    at ``out_indices``: None (all five), n (the last n) or a list (negative from the end), in index order.
    """

    def __init__(self, model, out_indices=None, feature_location="incre"):
        super().__init__()
        if feature_location not in ("incre", ""):
            raise ValueError(f"unknown feature_location '{feature_location}': expected 'incre' or ''")
        if feature_location == "incre" and model.incre_modules is None:
            raise ValueError("feature_location='incre' needs a model with incre modules")
        for name in _TRUNK:
            self.add_module(name, getattr(model, name))
        if feature_location == "incre":
            self.incre_modules = model.incre_modules
            info = model.feature_info
        else:
            self.incre_modules = None
            info = _feature_info(model.conv1.out_channels, model.stage4[-1].num_out_chs)
        indices = sorted(take_indices(len(info), out_indices))
        self.feature_info = FeatureInfo(info, indices)
        self._out_indices = set(indices)

    def forward(self, x):
        stem, x = self.forward_stem(x)
        features = [stem] if 0 in self._out_indices else []
        branches = self.stages(x)
        if self.incre_modules is not None:
            branches = [incre(b) for incre, b in zip(self.incre_modules, branches)]
        features.extend(b for i, b in enumerate(branches, start=1) if i in self._out_indices)
        return features


class HighResolutionNet(_HighResolutionTrunk):
    """HRNet: the stem (``conv1``, ``conv2``: strided 3x3 convolutions, ``stem_width`` then 64 wide, BatchNorm and
    ReLU each), the first stage ``layer1`` (residual blocks at 1/4), then ``stage2``-``stage4`` (chains of
    HighResolutionModules on 2, 3 and 4 branches) behind ``transition1``-``transition3``; the head.

    ``stage1``-``stage4`` are timm's stage configurations (dicts of ``num_modules``, ``num_branches``,
    ``block_type`` 'BASIC' or 'BOTTLENECK', ``num_blocks``, ``num_channels``, ``fuse_method``). ``head``:
    'classification' (the incre modules, ``downsamp_modules``, ``final_layer``, global pooling, dropout
    ``drop_rate`` and the linear ``classifier``; ``head_conv_bias`` gives the head's convolutions biases),
    'incre' (the incre modules only, which ``forward_features`` does not run: it returns the branch list, as timm's)
    or anything else (no head: the branch list). ``num_classes=0`` gives the pooled 2048 features; ``global_pool=''``
    leaves the map unpooled. Convolutions start from He-normal weights (fan-out); the others from PyTorch's defaults.
    """

    default_cfg = {"first_conv": "conv1", "classifier": "classifier"}
    feature_wrapper = HighResolutionNetFeatures

    def __init__(self, stem_width, stage1, stage2, stage3, stage4, in_chans=3, num_classes=1000, output_stride=32,
                 global_pool="avg", drop_rate=0.0, head="classification", head_conv_bias=True):
        super().__init__()
        if output_stride != 32:
            raise ValueError(f"HRNet has a fixed output stride of 32, got {output_stride}")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.conv1 = nn.Conv2d(in_chans, stem_width, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem_width)
        self.act1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(stem_width, _STEM_OUT, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(_STEM_OUT)
        self.act2 = nn.ReLU(inplace=True)

        block = _BLOCKS[stage1["block_type"]]
        self.layer1 = _make_layer(block, _STEM_OUT, stage1["num_channels"][0], stage1["num_blocks"][0])
        branch_chs = [stage1["num_channels"][0] * block.expansion]
        for index, config in enumerate((stage2, stage3, stage4), start=1):
            expansion = _BLOCKS[config["block_type"]].expansion
            stage_chs = [c * expansion for c in config["num_channels"]]
            self.add_module(f"transition{index}", _make_transition(branch_chs, stage_chs))
            stage, branch_chs = _make_stage(config, stage_chs)
            self.add_module(f"stage{index + 1}", stage)

        self.head = head
        self.incre_modules = None
        self.downsamp_modules = None
        self.final_layer = None
        if head in ("classification", "incre"):
            self.num_features = self.head_hidden_size = _HEAD_FEATURES
            self.incre_modules = nn.ModuleList([_make_layer(Bottleneck, chs, planes, 1)
                                                for chs, planes in zip(branch_chs, _HEAD_CHANNELS)])
            branch_chs = [planes * Bottleneck.expansion for planes in _HEAD_CHANNELS]
        else:
            self.num_features = self.head_hidden_size = 256  # timm's value, though this head gives a branch list
        if head == "classification":
            self.downsamp_modules = nn.ModuleList([
                _conv_bn(in_chs, out_chs, 3, 2, nn.ReLU(inplace=True), bias=head_conv_bias)
                for in_chs, out_chs in zip(branch_chs[:-1], branch_chs[1:])
            ])
            self.final_layer = _conv_bn(branch_chs[-1], _HEAD_FEATURES, 1, 1, nn.ReLU(inplace=True),
                                        bias=head_conv_bias)
            global_pool, classifier = create_classifier(self.num_features, num_classes, global_pool)
            self.global_pool = global_pool
            self.head_drop = nn.Dropout(drop_rate)
            self.classifier = classifier
            self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        else:
            self.global_pool = nn.Identity()
            self.head_drop = nn.Identity()
            self.classifier = nn.Identity()
        self.feature_info = _feature_info(stem_width, branch_chs)
        self._init_weights()

    def _init_weights(self):
        """He-normal (fan-out, ReLU gain) weights for every convolution, in module order, as timm's init_weights."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def get_classifier(self):
        """The linear classifier."""
        return self.classifier

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features), after new pooling ``global_pool`` if
        given (by default the current pooling, 'avg' for the heads without one)."""
        self.num_classes = num_classes
        if global_pool is None:
            global_pool = getattr(self.global_pool, "pool_type", "avg")
        self.global_pool, self.classifier = create_classifier(self.num_features, num_classes, global_pool)
        self.head_hidden_size = self.num_features * self.global_pool.feat_mult()
        self.global_pool.train(self.training)
        self.classifier.train(self.training)

    def forward_features(self, x):
        """The classification head's 2048-channel map at 1/32 (N, 2048, H / 32, W / 32): each branch widened by its
        incre module and added, from the highest resolution down, to the strided fold of the ones above it, then the
        final 1x1 convolution. Without that head: the list of the four branch maps; pruned to the stem
        (``prune_intermediate_layers``): the stem's 1/2 map."""
        stem, x = self.forward_stem(x)
        if isinstance(self.layer1, nn.Identity):
            return stem
        branches = self.stages(x)
        if self.incre_modules is None or self.downsamp_modules is None:
            return branches
        y = self.incre_modules[0](branches[0])
        for i in range(1, len(self.incre_modules)):
            y = self.incre_modules[i](branches[i]) + self.downsamp_modules[i - 1](y)
        y = self.final_layer(y)
        return y

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The feature taps picked by ``indices`` (None: all, n: the last n, or a list) and, unless
        ``intermediates_only``, the final output. The taps are timm's: 0 the stem's first (1/2) map, 1-4 the last
        stage's branch maps (1/4 to 1/32), widened by the incre modules where the model has them. The branches come
        out of the fused last stage together, so ``stop_early`` only skips the trunk (for the stem's tap alone) and
        the incre modules after the last tap picked. The final output is ``forward_features``' when every part of
        it ran (the aggregated head map, or the branch list without that head), else the branch list (or the stem's
        map); ``norm`` is accepted for the API, as there is no final norm."""
        take, _ = intermediate_stages(self.feature_info, indices, stop_early, output_fmt)
        last = max(take)
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.act1(x)
        intermediates = [x] if 0 in take else []
        if last == 0 and (stop_early or isinstance(self.layer1, nn.Identity)):
            return intermediates if intermediates_only else (x, intermediates)
        x = self.conv2(x)
        x = self.bn2(x)
        x = self.act2(x)
        branches = self.stages(x)
        if self.incre_modules is None:
            intermediates.extend(b for i, b in enumerate(branches, start=1) if i in take)
            return intermediates if intermediates_only else (branches, intermediates)
        incre_modules = list(self.incre_modules)
        if stop_early:
            incre_modules = incre_modules[:last]
        aggregate = not intermediates_only and self.downsamp_modules is not None
        final, widened = self._incre_taps(branches, incre_modules, take, aggregate)
        intermediates.extend(widened)
        return intermediates if intermediates_only else (final, intermediates)

    def _incre_taps(self, branches, incre_modules, take, aggregate):
        """The branches through ``incre_modules`` (the first ones of the model's): the final output and the widened
        maps of the taps in ``take`` (tap i + 1 is branch i). With ``aggregate`` the widened maps are folded as in
        ``forward_features``, and the final output is the head's map when every incre module ran; otherwise it is
        the branch list."""
        widened = []
        folded = None
        for i, incre in enumerate(incre_modules):
            x = incre(branches[i])
            if i + 1 in take:
                widened.append(x)
            if aggregate:
                folded = x if folded is None else x + self.downsamp_modules[i - 1](folded)
        if aggregate and len(incre_modules) == len(self.downsamp_modules) + 1:
            return self.final_layer(folded), widened
        return branches, widened

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop what the taps ``indices`` picks do not need, as timm's: the branch taps all come out of the whole
        trunk, so only for the stem's tap alone does the trunk after ``act1`` go (its modules replaced by
        identities; ``num_features`` and ``head_hidden_size`` then the stem's width); the incre modules after the
        last tap go; the aggregation head (``downsamp_modules``, ``final_layer``), pooling, dropout and classifier
        go with ``prune_head`` or when a branch tap goes, ``forward_features`` then giving the branch list (or the
        stem's map). ``prune_norm`` is accepted for the API (no final norm). Returns the absolute indices."""
        num_taps = len(self.feature_info)
        take = take_indices(num_taps, indices)
        last = max(take)
        if last == 0:
            for name in _TRUNK[_TRUNK.index("conv2"):]:
                setattr(self, name, nn.Identity())
            self.num_features = self.head_hidden_size = self.feature_info[0]["num_chs"]
        if self.incre_modules is not None:
            self.incre_modules = self.incre_modules[:last]
        if prune_head or last < num_taps - 1:
            self._drop_head()
        return take

    def _drop_head(self):
        """The aggregation head, pooling, dropout and classifier removed (no classes): the features pass through
        ``forward_head``."""
        self.downsamp_modules = None
        self.final_layer = None
        self.num_classes = 0
        self.global_pool = nn.Identity()
        self.head_drop = nn.Identity()
        self.classifier = nn.Identity()

    def forward_head(self, x, pre_logits=False):
        """Global pooling and dropout, then the classifier unless ``pre_logits``; a branch list (no classification
        head) passes through."""
        if isinstance(x, list):
            if not (isinstance(self.global_pool, nn.Identity) and isinstance(self.classifier, nn.Identity)):
                raise ValueError("pooling and a classifier need the classification head: the features are a list "
                                 "of branch maps")
            return x
        x = self.global_pool(x)
        x = self.head_drop(x)
        return x if pre_logits else self.classifier(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _stage(num_modules, block_type, num_blocks, num_channels):
    """One stage's configuration, in timm's form."""
    return dict(num_modules=num_modules, num_branches=len(num_blocks), block_type=block_type,
                num_blocks=num_blocks, num_channels=num_channels, fuse_method="SUM")


def _hrnet_cfg(width, stage1_blocks, stage1_width, modules, blocks):
    """A variant's configuration: the 64-wide stem, a first stage of ``stage1_blocks`` bottlenecks of
    ``stage1_width``, then stages 2-4 of ``modules[i]`` modules with ``blocks`` basic blocks per branch, the branches
    ``width``, 2x, 4x and 8x wide."""
    cfg = dict(stem_width=64, stage1=_stage(1, "BOTTLENECK", (stage1_blocks,), (stage1_width,)))
    for branches, num_modules in enumerate(modules, start=2):
        cfg[f"stage{branches}"] = _stage(num_modules, "BASIC", (blocks,) * branches,
                                         tuple(width * 2 ** i for i in range(branches)))
    return cfg


def _create_hrnet(variant, pretrained, progress, cfg, kwargs):
    """Build a registered variant, its configuration overridden by the caller's ``kwargs``. ``features_only`` wraps
    it in timm's feature model (``feature_location``, ``out_indices``; the head's arguments are ignored there, as in
    timm) after any weights are loaded."""
    kwargs = dict(cfg, **kwargs)
    if not kwargs.pop("features_only", False):
        return build_model(HighResolutionNet, variant, pretrained, progress=progress, **kwargs)
    out_indices = kwargs.pop("out_indices", None)
    feature_location = kwargs.pop("feature_location", "incre")
    kwargs.pop("num_classes", None)
    kwargs.pop("global_pool", None)
    model = build_model(HighResolutionNet, variant, pretrained, progress=progress, **kwargs)
    return HighResolutionNetFeatures(model, out_indices, feature_location)


@register_model
def hrnet_w18_small(pretrained=False, progress=True, **kwargs):
    """HRNet-W18-Small (v1): one bottleneck of width 32, then one module per stage, two blocks per branch, C = 16."""
    return _create_hrnet("hrnet_w18_small", pretrained, progress, _hrnet_cfg(16, 1, 32, (1, 1, 1), 2), kwargs)


@register_model
def hrnet_w18_small_v2(pretrained=False, progress=True, **kwargs):
    """HRNet-W18-Small-v2: two bottlenecks of width 64, then 1, 3 and 2 modules, two blocks per branch, C = 18."""
    return _create_hrnet("hrnet_w18_small_v2", pretrained, progress, _hrnet_cfg(18, 2, 64, (1, 3, 2), 2), kwargs)


@register_model
def hrnet_w18(pretrained=False, progress=True, **kwargs):
    """HRNet-W18: four bottlenecks of width 64, then 1, 4 and 3 modules, four blocks per branch, C = 18."""
    return _create_hrnet("hrnet_w18", pretrained, progress, _hrnet_cfg(18, 4, 64, (1, 4, 3), 4), kwargs)


@register_model
def hrnet_w30(pretrained=False, progress=True, **kwargs):
    """HRNet-W30: HRNet-W18's depths, C = 30."""
    return _create_hrnet("hrnet_w30", pretrained, progress, _hrnet_cfg(30, 4, 64, (1, 4, 3), 4), kwargs)


@register_model
def hrnet_w32(pretrained=False, progress=True, **kwargs):
    """HRNet-W32: HRNet-W18's depths, C = 32."""
    return _create_hrnet("hrnet_w32", pretrained, progress, _hrnet_cfg(32, 4, 64, (1, 4, 3), 4), kwargs)


@register_model
def hrnet_w40(pretrained=False, progress=True, **kwargs):
    """HRNet-W40: HRNet-W18's depths, C = 40."""
    return _create_hrnet("hrnet_w40", pretrained, progress, _hrnet_cfg(40, 4, 64, (1, 4, 3), 4), kwargs)


@register_model
def hrnet_w44(pretrained=False, progress=True, **kwargs):
    """HRNet-W44: HRNet-W18's depths, C = 44."""
    return _create_hrnet("hrnet_w44", pretrained, progress, _hrnet_cfg(44, 4, 64, (1, 4, 3), 4), kwargs)


@register_model
def hrnet_w48(pretrained=False, progress=True, **kwargs):
    """HRNet-W48: HRNet-W18's depths, C = 48."""
    return _create_hrnet("hrnet_w48", pretrained, progress, _hrnet_cfg(48, 4, 64, (1, 4, 3), 4), kwargs)


@register_model
def hrnet_w64(pretrained=False, progress=True, **kwargs):
    """HRNet-W64: HRNet-W18's depths, C = 64."""
    return _create_hrnet("hrnet_w64", pretrained, progress, _hrnet_cfg(64, 4, 64, (1, 4, 3), 4), kwargs)


@register_model
def hrnet_w18_ssld(pretrained=False, progress=True, **kwargs):
    """HRNet-W18 for PaddleClas's SSLD-distilled weights: its head convolutions have no biases."""
    return _create_hrnet("hrnet_w18_ssld", pretrained, progress,
                         dict(_hrnet_cfg(18, 4, 64, (1, 4, 3), 4), head_conv_bias=False), kwargs)


@register_model
def hrnet_w48_ssld(pretrained=False, progress=True, **kwargs):
    """HRNet-W48 for PaddleClas's SSLD-distilled weights: its head convolutions have no biases."""
    return _create_hrnet("hrnet_w48_ssld", pretrained, progress,
                         dict(_hrnet_cfg(48, 4, 64, (1, 4, 3), 4), head_conv_bias=False), kwargs)
