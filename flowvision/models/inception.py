"""Inception v3 (Szegedy et al. 2015, "Rethinking the Inception Architecture for Computer Vision").

Inception modules with factorized convolutions (5x5 as two 3x3, nxn as 1xn then nx1), grid
reductions by parallel strided branches, and one auxiliary classifier used in training. Made for
299x299 inputs (at least 75x75). Module names, state_dict keys, initialisation, training outputs
(``InceptionOutputs``) and ``transform_input`` follow torchvision, so its checkpoints load directly;
the model API (``forward_features``, ``forward_head``, ``reset_classifier``, ``in_chans``) follows timm.
"""
from collections import namedtuple

import engine as torch
import engine.nn.functional as F
from engine import nn

from ._features import intermediate_stages, take_indices
from ._helpers import build_model
from .googlenet import BasicConv2d, transform_imagenet_input
from .registry import register_model

__all__ = ["Inception3", "InceptionOutputs"]

# Training-mode output with the auxiliary head: the final logits and the auxiliary ones.
InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])
_InceptionOutputs = InceptionOutputs


class InceptionA(nn.Module):
    """35x35 module: 1x1; 1x1 then 5x5; 1x1 then two 3x3; 3x3 average pool then 1x1 (``pool_features``)."""

    def __init__(self, in_channels, pool_features, conv_block=None):
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch1x1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch5x5_1 = conv_block(in_channels, 48, kernel_size=1)
        self.branch5x5_2 = conv_block(48, 64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(96, 96, kernel_size=3, padding=1)
        self.branch_pool = conv_block(in_channels, pool_features, kernel_size=1)

    def _forward(self, x):
        """The branch outputs, in concatenation order (a quantizable subclass concatenates them its way)."""
        branch1x1 = self.branch1x1(x)
        branch5x5 = self.branch5x5_1(x)
        branch5x5 = self.branch5x5_2(branch5x5)
        branch3x3dbl = self.branch3x3dbl_1(x)
        branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
        branch3x3dbl = self.branch3x3dbl_3(branch3x3dbl)
        branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        branch_pool = self.branch_pool(branch_pool)
        return [branch1x1, branch5x5, branch3x3dbl, branch_pool]

    def forward(self, x):
        return torch.cat(self._forward(x), 1)


class InceptionB(nn.Module):
    """Grid reduction 35 -> 17: a strided 3x3; 1x1, 3x3, strided 3x3; a strided 3x3 max pool."""

    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch3x3 = conv_block(in_channels, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(96, 96, kernel_size=3, stride=2)

    def _forward(self, x):
        """The branch outputs, in concatenation order (a quantizable subclass concatenates them its way)."""
        branch3x3 = self.branch3x3(x)
        branch3x3dbl = self.branch3x3dbl_1(x)
        branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
        branch3x3dbl = self.branch3x3dbl_3(branch3x3dbl)
        branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)
        return [branch3x3, branch3x3dbl, branch_pool]

    def forward(self, x):
        return torch.cat(self._forward(x), 1)


class InceptionC(nn.Module):
    """17x17 module with 7x7 factorized as 1x7 and 7x1 (``channels_7x7`` inside the factorized branches)."""

    def __init__(self, in_channels, channels_7x7, conv_block=None):
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        c7 = channels_7x7
        self.branch1x1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch7x7_1 = conv_block(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = conv_block(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7_3 = conv_block(c7, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = conv_block(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = conv_block(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = conv_block(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = conv_block(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = conv_block(c7, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch_pool = conv_block(in_channels, 192, kernel_size=1)

    def _forward(self, x):
        """The branch outputs, in concatenation order (a quantizable subclass concatenates them its way)."""
        branch1x1 = self.branch1x1(x)
        branch7x7 = self.branch7x7_1(x)
        branch7x7 = self.branch7x7_2(branch7x7)
        branch7x7 = self.branch7x7_3(branch7x7)
        branch7x7dbl = self.branch7x7dbl_1(x)
        branch7x7dbl = self.branch7x7dbl_2(branch7x7dbl)
        branch7x7dbl = self.branch7x7dbl_3(branch7x7dbl)
        branch7x7dbl = self.branch7x7dbl_4(branch7x7dbl)
        branch7x7dbl = self.branch7x7dbl_5(branch7x7dbl)
        branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        branch_pool = self.branch_pool(branch_pool)
        return [branch1x1, branch7x7, branch7x7dbl, branch_pool]

    def forward(self, x):
        return torch.cat(self._forward(x), 1)


class InceptionD(nn.Module):
    """Grid reduction 17 -> 8: 1x1 then strided 3x3; 1x1, 1x7, 7x1, strided 3x3; a strided 3x3 max pool."""

    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch3x3_1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch3x3_2 = conv_block(192, 320, kernel_size=3, stride=2)
        self.branch7x7x3_1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch7x7x3_2 = conv_block(192, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = conv_block(192, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = conv_block(192, 192, kernel_size=3, stride=2)

    def _forward(self, x):
        """The branch outputs, in concatenation order (a quantizable subclass concatenates them its way)."""
        branch3x3 = self.branch3x3_1(x)
        branch3x3 = self.branch3x3_2(branch3x3)
        branch7x7x3 = self.branch7x7x3_1(x)
        branch7x7x3 = self.branch7x7x3_2(branch7x7x3)
        branch7x7x3 = self.branch7x7x3_3(branch7x7x3)
        branch7x7x3 = self.branch7x7x3_4(branch7x7x3)
        branch_pool = F.max_pool2d(x, kernel_size=3, stride=2)
        return [branch3x3, branch7x7x3, branch_pool]

    def forward(self, x):
        return torch.cat(self._forward(x), 1)


class InceptionE(nn.Module):
    """8x8 module with expanded filter banks: the 3x3 branches end in parallel 1x3 and 3x1 convs, concatenated."""

    def __init__(self, in_channels, conv_block=None):
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch1x1 = conv_block(in_channels, 320, kernel_size=1)
        self.branch3x3_1 = conv_block(in_channels, 384, kernel_size=1)
        self.branch3x3_2a = conv_block(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = conv_block(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = conv_block(in_channels, 448, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = conv_block(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = conv_block(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = conv_block(in_channels, 192, kernel_size=1)

    def _join(self, pair, split):
        """Concatenate the 1x3 and 3x1 outputs of split branch ``split`` (0: 3x3, 1: double 3x3) along channels
        (a quantizable subclass observes each join on its own)."""
        return torch.cat(pair, 1)

    def _forward(self, x):
        """The branch outputs, in concatenation order (a quantizable subclass concatenates them its way)."""
        branch1x1 = self.branch1x1(x)
        branch3x3 = self.branch3x3_1(x)
        branch3x3 = self._join([self.branch3x3_2a(branch3x3), self.branch3x3_2b(branch3x3)], 0)
        branch3x3dbl = self.branch3x3dbl_1(x)
        branch3x3dbl = self.branch3x3dbl_2(branch3x3dbl)
        branch3x3dbl = self._join([self.branch3x3dbl_3a(branch3x3dbl), self.branch3x3dbl_3b(branch3x3dbl)], 1)
        branch_pool = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        branch_pool = self.branch_pool(branch_pool)
        return [branch1x1, branch3x3, branch3x3dbl, branch_pool]

    def forward(self, x):
        return torch.cat(self._forward(x), 1)


class InceptionAux(nn.Module):
    """Auxiliary classifier on the 17x17 map: 5x5 average pool (stride 3), 1x1 and 5x5 convs, pooling, linear."""

    def __init__(self, in_channels, num_classes, conv_block=None):
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.conv0 = conv_block(in_channels, 128, kernel_size=1)
        self.conv1 = conv_block(128, 768, kernel_size=5)
        self.fc = _linear(768, num_classes)

    def forward(self, x):
        x = F.avg_pool2d(x, kernel_size=5, stride=3)
        x = self.conv0(x)
        x = self.conv1(x)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return x


def _linear(in_features, num_classes):
    """A class layer, or an identity when ``num_classes`` is 0."""
    return nn.Linear(in_features, num_classes) if num_classes > 0 else nn.Identity()


def _init_weights(module, std=0.1, aux_fc=None):
    """Convolutions and linear layers from N(0, ``std``) truncated at +-2 (``aux_fc``, the auxiliary
    head's class layer, from N(0, 0.001), in its place in module order); unit/zero batch norms."""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.trunc_normal_(m.weight, mean=0.0, std=0.001 if m is aux_fc else std, a=-2, b=2)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)


class Inception3(nn.Module):
    """A conv stem, three 35x35, a reduction, four 17x17, a reduction and two 8x8 modules, pooling, dropout, linear.

    In training mode with ``aux_logits`` the forward returns ``InceptionOutputs(logits, aux_logits)``,
    otherwise the logits. ``transform_input`` maps ImageNet-normalized inputs to the ported weights'
    [-1, 1] range. ``init_weights=None`` means True (truncated normal init: std 0.1, 0.001 for the
    auxiliary linear layer), as in torchvision. ``num_classes=0`` replaces the class layers with identities.
    """

    # the trunk's modules in forward order (the auxiliary head aside), and timm's InceptionV3 intermediates: the
    # module ending each (at strides 2, 4, 8, 16 and 32) and its channels
    _TRUNK = ("Conv2d_1a_3x3", "Conv2d_2a_3x3", "Conv2d_2b_3x3", "maxpool1", "Conv2d_3b_1x1", "Conv2d_4a_3x3",
              "maxpool2", "Mixed_5b", "Mixed_5c", "Mixed_5d", "Mixed_6a", "Mixed_6b", "Mixed_6c", "Mixed_6d",
              "Mixed_6e", "Mixed_7a", "Mixed_7b", "Mixed_7c")
    _INTERMEDIATES = (("Conv2d_2b_3x3", 64), ("Conv2d_4a_3x3", 192), ("Mixed_5d", 288), ("Mixed_6e", 768),
                      ("Mixed_7c", 2048))

    def __init__(self, num_classes=1000, aux_logits=True, transform_input=False, inception_blocks=None,
                 init_weights=None, dropout=0.5, in_chans=3):
        super().__init__()
        if inception_blocks is None:
            inception_blocks = [BasicConv2d, InceptionA, InceptionB, InceptionC, InceptionD, InceptionE, InceptionAux]
        if init_weights is None:
            init_weights = True
        if len(inception_blocks) != 7:
            raise ValueError(f"length of inception_blocks should be 7 instead of {len(inception_blocks)}")
        if transform_input and in_chans != 3:
            raise ValueError(f"transform_input re-normalizes RGB inputs; it needs in_chans=3, not {in_chans}")
        conv_block, inception_a, inception_b, inception_c, inception_d, inception_e, inception_aux = inception_blocks
        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.num_classes = num_classes
        self.num_features = 2048
        self.head_hidden_size = self.num_features

        self.Conv2d_1a_3x3 = conv_block(in_chans, 32, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = conv_block(32, 32, kernel_size=3)
        self.Conv2d_2b_3x3 = conv_block(32, 64, kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = conv_block(64, 80, kernel_size=1)
        self.Conv2d_4a_3x3 = conv_block(80, 192, kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = inception_a(192, pool_features=32)
        self.Mixed_5c = inception_a(256, pool_features=64)
        self.Mixed_5d = inception_a(288, pool_features=64)
        self.Mixed_6a = inception_b(288)
        self.Mixed_6b = inception_c(768, channels_7x7=128)
        self.Mixed_6c = inception_c(768, channels_7x7=160)
        self.Mixed_6d = inception_c(768, channels_7x7=160)
        self.Mixed_6e = inception_c(768, channels_7x7=192)
        self.AuxLogits = inception_aux(768, num_classes) if aux_logits else None
        self.Mixed_7a = inception_d(768)
        self.Mixed_7b = inception_e(1280)
        self.Mixed_7c = inception_e(2048)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = _linear(2048, num_classes)

        if init_weights:
            _init_weights(self, aux_fc=None if self.AuxLogits is None else self.AuxLogits.fc)

    @property
    def default_cfg(self):
        """The first conv, and the class layers a checkpoint for another class count cannot fill."""
        classifier = "fc" if self.AuxLogits is None else ("fc", "AuxLogits.fc")
        return {"first_conv": "Conv2d_1a_3x3.conv", "classifier": classifier}

    def get_classifier(self):
        """The final linear layer (an identity once ``prune_intermediate_layers`` took the head away, as timm's)."""
        return nn.Identity() if self.fc is None else self.fc

    def reset_classifier(self, num_classes):
        """Fresh class layers for ``num_classes``: the final one and the auxiliary head's (0: identities)."""
        self.num_classes = num_classes
        self.fc = _linear(self.num_features, num_classes)
        _init_weights(self.fc)
        if self.AuxLogits is not None:
            self.AuxLogits.fc = _linear(768, num_classes)
            _init_weights(self.AuxLogits.fc, std=0.001)

    def _transform_input(self, x):
        return transform_imagenet_input(x) if self.transform_input else x

    def _forward_features(self, x):
        """The last module's output and, in training with the auxiliary head, its logits (else None)."""
        x = self._transform_input(x)
        x = self.Conv2d_1a_3x3(x)
        x = self.Conv2d_2a_3x3(x)
        x = self.Conv2d_2b_3x3(x)
        x = self.maxpool1(x)
        x = self.Conv2d_3b_1x1(x)
        x = self.Conv2d_4a_3x3(x)
        x = self.maxpool2(x)
        x = self.Mixed_5b(x)
        x = self.Mixed_5c(x)
        x = self.Mixed_5d(x)
        x = self.Mixed_6a(x)
        x = self.Mixed_6b(x)
        x = self.Mixed_6c(x)
        x = self.Mixed_6d(x)
        x = self.Mixed_6e(x)
        aux = self.AuxLogits(x) if self.AuxLogits is not None and self.training else None
        x = self.Mixed_7a(x)
        x = self.Mixed_7b(x)
        x = self.Mixed_7c(x)
        return x, aux

    def forward_features(self, x):
        """The input transform (if enabled) and the trunk: (N, 2048, 8, 8) at 299x299."""
        return self._forward_features(x)[0]

    def _intermediate_ends(self):
        """The position in ``_TRUNK`` of the module ending each of timm's intermediates."""
        return [self._TRUNK.index(module) for module, _ in self._INTERMEDIATES]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """timm's InceptionV3 intermediates on torchvision's modules (timm's ``Pool1`` / ``Pool2`` are ``maxpool1`` /
        ``maxpool2`` here): index 0-1 the stem's ``Conv2d_2b_3x3`` and ``Conv2d_4a_3x3`` outputs (before their max
        pools), 2-4 the outputs of ``Mixed_5d``, ``Mixed_6e`` and ``Mixed_7c``, the last module at each stride. The
        input transform runs first when ``transform_input`` is set, as in ``forward_features``; the auxiliary head
        does not run.

        ``indices``: None (all), n (the last n) or a list (negative from the end). Returns the picked maps and,
        unless ``intermediates_only``, the last map computed. ``stop_early`` stops at the last one picked. ``norm``
        changes nothing: there is no final norm. Only ``output_fmt='NCHW'``.
        """
        ends = self._intermediate_ends()
        take, _ = intermediate_stages(ends, indices, stop_early, output_fmt)
        take_ends = [ends[i] for i in take]
        trunk = self._TRUNK[:ends[max(take)] + 1] if stop_early else self._TRUNK
        x = self._transform_input(x)
        intermediates = []
        for i, name in enumerate(trunk):
            x = getattr(self, name)(x)
            if i in take_ends:
                intermediates.append(x)
        return intermediates if intermediates_only else (x, intermediates)

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Keep what ``forward_intermediates(indices=indices)`` needs, as timm's InceptionV3 does: the trunk's modules
        after the last intermediate picked become identities, and then ``num_features`` / ``head_hidden_size`` are
        its channels. With ``prune_head``, or when modules go, the head goes too, the auxiliary head with it:
        ``forward_head`` then returns the map as it is (timm's classifier and pooling reset to none) until
        ``reset_classifier`` builds a new one. ``prune_norm`` changes nothing (no final norm). Returns the absolute
        indices kept."""
        ends = self._intermediate_ends()
        take = take_indices(len(ends), indices)
        last = max(take)
        for name in self._TRUNK[ends[last] + 1:]:
            setattr(self, name, nn.Identity())
        prune_end = last < len(ends) - 1
        if prune_end:
            self.num_features = self.head_hidden_size = self._INTERMEDIATES[last][1]
        if prune_head or prune_end:
            self.AuxLogits = None
            self.aux_logits = False
            self.num_classes = 0
            self.fc = None
        return take

    def forward_head(self, x, pre_logits=False):
        """Global average pool and flatten; then dropout and the final linear layer unless ``pre_logits``; the map as
        it is when ``prune_intermediate_layers`` took the head away."""
        if self.fc is None:
            return x
        x = self.avgpool(x)
        if pre_logits:
            return torch.flatten(x, 1)
        x = self.dropout(x)
        x = torch.flatten(x, 1)
        return self.fc(x)

    def forward(self, x):
        x, aux = self._forward_features(x)
        x = self.forward_head(x)
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        return x


@register_model
def inception_v3(pretrained=False, progress=True, **kwargs):
    """Inception v3 for 299x299 inputs; auxiliary classifier on by default (``aux_logits``).

    Pretrained weights bring ``transform_input=True`` unless given; their auxiliary head is kept
    unless ``aux_logits=False`` is asked (then it is removed after loading).
    """
    if kwargs.get("features_only"):
        raise ValueError("inception_v3 has no features_only mode; use flowvision.models.create_feature_extractor")
    if not (pretrained or kwargs.get("weights") is not None):
        return build_model(Inception3, "inception_v3", pretrained, progress=progress, **kwargs)
    keep_aux = kwargs.pop("aux_logits", True)
    kwargs.setdefault("transform_input", True)
    kwargs.setdefault("init_weights", False)
    model = build_model(Inception3, "inception_v3", pretrained, progress=progress, aux_logits=True, **kwargs)
    if not keep_aux:
        model.aux_logits = False
        model.AuxLogits = None
    return model
