"""Sequencer (Tatsunami and Taki 2022, "Sequencer: Deep LSTM for Image Classification"): sequencer2d_s,
sequencer2d_m and sequencer2d_l.

A hierarchical vision model that mixes its tokens with recurrent networks instead of attention: the image is cut
into 7x7 patches, embedded as a channels-last map, and each block reads the map's columns top to bottom and its
rows left to right with two bidirectional LSTMs (the BiLSTM2D layer), concatenates both readings and mixes them
back to the width with a linear layer, then applies a channel MLP; both branches are pre-norm residuals. Four
stages, each after the first opening with a patch-merging convolution (stride 2 into the second, 1x1 into the
third and fourth), end in a LayerNorm, average pooling and a linear classifier; the model takes any image size.
Model names, module names, ``state_dict`` keys and (seeded) initialisation follow timm's ``sequencer`` module, so
its checkpoints load directly.
"""
import math
from functools import partial
from itertools import accumulate

import engine as torch
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, prune_stages
from .._helpers import build_model
from ..registry import register_model
from ._layers import ClassifierHeadApi, Mlp, drop_path_module
from .mlp_mixer import _init_jax_layer, _modules_children_first
from .swin_transformer import ClassifierHead

__all__ = []

_UNIONS = ("cat", "add", "vertical", "horizontal")


class RNNIdentity(nn.Module):
    """The slot of a direction that is not read (timm's ``RNNIdentity``): returns its input, and no state, as a
    recurrent layer returns (output, state)."""

    def forward(self, x):
        return x, None


class RNN2dBase(nn.Module):
    """A 2-D recurrent token mixer on (N, H, W, C) maps: ``rnn_v`` runs down every column, ``rnn_h`` along every
    row (both of the subclass's ``rnn_layer``, batch first), and their outputs are joined by ``union``: 'cat'
    (concatenated), 'add' (summed), 'vertical' or 'horizontal' (that reading alone; the other slot stays an
    ``RNNIdentity``). With ``with_fc`` a linear layer ``fc`` maps the joined width back to ``input_size``; without,
    the joined width must already be ``input_size``. Subclasses name their recurrent layer class in ``rnn_layer``.
    """

    rnn_layer = None

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, bidirectional=True, union="cat",
                 with_fc=True):
        super().__init__()
        if union not in _UNIONS:
            raise ValueError(f"Unrecognized union: {union}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = 2 * hidden_size if bidirectional else hidden_size
        self.union = union
        self.with_vertical = union != "horizontal"
        self.with_horizontal = union != "vertical"
        self.with_fc = with_fc
        joined = 2 * self.output_size if union == "cat" else self.output_size
        if with_fc:
            self.fc = nn.Linear(joined, input_size)
        elif joined != input_size:
            raise ValueError(f"The output channel {joined} is different from the input channel {input_size}.")
        else:
            self.fc = None
        rnn = partial(self.rnn_layer, input_size, hidden_size, num_layers, batch_first=True, bias=bias,
                      bidirectional=bidirectional)
        self.rnn_v = rnn() if self.with_vertical else RNNIdentity()
        self.rnn_h = rnn() if self.with_horizontal else RNNIdentity()

    def forward(self, x):
        batch, height, width, channels = x.shape
        readings = []
        if self.with_vertical:
            columns = x.permute(0, 2, 1, 3).reshape(-1, height, channels)
            columns, _ = self.rnn_v(columns)
            readings.append(columns.reshape(batch, width, height, -1).permute(0, 2, 1, 3))
        if self.with_horizontal:
            rows = x.reshape(-1, width, channels)
            rows, _ = self.rnn_h(rows)
            readings.append(rows.reshape(batch, height, width, -1))
        if len(readings) == 1:
            x = readings[0]
        elif self.union == "cat":
            x = torch.cat(readings, -1)
        else:
            x = readings[0] + readings[1]
        if self.fc is not None:
            x = self.fc(x)
        return x


class LSTM2d(RNN2dBase):
    """BiLSTM2D, the paper's token mixer: ``RNN2dBase`` with LSTMs reading the columns and the rows."""

    rnn_layer = nn.LSTM


class Sequencer2dBlock(nn.Module):
    """Sequencer's block on (N, H, W, C) maps: x + the 2-D recurrent mixer (``rnn_tokens``) of norm1(x), then
    x + the channel MLP (``mlp_channels``, ``mlp_ratio`` times the width) of norm2(x); ``drop_path``, the
    probability of dropping a residual branch for a sample, is one module serving both branches, as in timm."""

    def __init__(self, dim, hidden_size, mlp_ratio=3.0, rnn_layer=LSTM2d, mlp_layer=Mlp,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6), act_layer=nn.GELU, num_layers=1, bidirectional=True,
                 union="cat", with_fc=True, drop=0.0, drop_path=0.0):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.rnn_tokens = rnn_layer(dim, hidden_size, num_layers=num_layers, bidirectional=bidirectional,
                                    union=union, with_fc=with_fc)
        self.drop_path = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp_channels = mlp_layer(dim, int(mlp_ratio * dim), act_layer=act_layer, drop=drop)

    def forward(self, x):
        x = x + self.drop_path(self.rnn_tokens(self.norm1(x)))
        x = x + self.drop_path(self.mlp_channels(self.norm2(x)))
        return x


class Downsample2d(nn.Module):
    """Patch merging of a channels-last map: a ``patch_size`` convolution of the same stride (``down``) from
    ``input_dim`` to ``output_dim`` channels."""

    def __init__(self, input_dim, output_dim, patch_size):
        super().__init__()
        self.down = nn.Conv2d(input_dim, output_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = x.permute(0, 3, 1, 2)
        x = self.down(x)
        x = x.permute(0, 2, 3, 1)
        return x


class Sequencer2dStage(nn.Module):
    """A stage: ``downsample`` (a ``Downsample2d`` from ``dim`` to ``dim_out`` when asked, else an identity and the
    width unchanged), then ``depth`` blocks of ``block_layer``. ``drop_path``: one rate for every block or one per
    block."""

    def __init__(self, dim, dim_out, depth, patch_size, hidden_size, mlp_ratio, downsample=False,
                 block_layer=Sequencer2dBlock, rnn_layer=LSTM2d, mlp_layer=Mlp,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6), act_layer=nn.GELU, num_layers=1, bidirectional=True,
                 union="cat", with_fc=True, drop=0.0, drop_path=0.0):
        super().__init__()
        if downsample:
            self.downsample = Downsample2d(dim, dim_out, patch_size)
        elif dim == dim_out:
            self.downsample = nn.Identity()
        else:
            raise ValueError(f"a stage without downsampling keeps its width: {dim} in, {dim_out} out")
        rates = drop_path if isinstance(drop_path, (list, tuple)) else [drop_path] * depth
        self.blocks = nn.Sequential(*[
            block_layer(dim_out, hidden_size, mlp_ratio=mlp_ratio, rnn_layer=rnn_layer, mlp_layer=mlp_layer,
                        norm_layer=norm_layer, act_layer=act_layer, num_layers=num_layers,
                        bidirectional=bidirectional, union=union, with_fc=with_fc, drop=drop, drop_path=rates[i])
            for i in range(depth)
        ])

    def forward(self, x):
        x = self.downsample(x)
        x = self.blocks(x)
        return x


class PatchEmbed(nn.Module):
    """Non-overlapping ``patch_size`` patches of an image of any size (pixels past the last whole patch are cut
    off) projected to ``embed_dim`` by a strided convolution ``proj``, as an (N, rows, cols, embed_dim)
    channels-last map, then ``norm`` (an identity unless ``norm_layer``)."""

    def __init__(self, patch_size, in_chans, embed_dim, norm_layer=None):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = norm_layer(embed_dim) if norm_layer else nn.Identity()

    def forward(self, x):
        x = self.proj(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        return x


class Sequencer2d(ClassifierHeadApi, nn.Module):
    """Sequencer2D (timm's ``Sequencer2d``, its arguments and defaults): a patch embedding (``stem``, stride
    ``patch_sizes[0]``), four stages (``stages``; stage i > 0 opens with a ``patch_sizes[i]`` downsampling to
    ``embed_dims[i]``, then ``layers[i]`` blocks with LSTMs of ``hidden_sizes[i]`` units and MLP ratio
    ``mlp_ratios[i]``), a final norm and timm's head on channels-last maps (``head``: pooling, dropout, ``fc``).

    ``union``, ``with_fc``, ``bidirectional`` and ``num_rnn_layers`` shape every block's recurrent mixer (see
    ``RNN2dBase``); ``stem_norm`` normalises the embedded patches. ``proj_drop_rate`` is the MLPs' dropout,
    ``drop_path_rate`` every block's stochastic depth (the same for all, as in timm), ``drop_rate`` the dropout
    before the classifier. ``global_pool``: 'avg', 'max', 'avgmax', 'catavgmax' or '' (the head classifies every
    position of the map). ``nlhb`` starts the classifier's biases at -log(num_classes). ``img_size`` is accepted
    for timm's signature and unused: the model takes any image size.
    """

    default_cfg = {"first_conv": "stem.proj", "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, num_classes=1000, img_size=224, in_chans=3, global_pool="avg", layers=(4, 3, 8, 3),
                 patch_sizes=(7, 2, 2, 1), embed_dims=(192, 384, 384, 384), hidden_sizes=(48, 96, 96, 96),
                 mlp_ratios=(3.0, 3.0, 3.0, 3.0), block_layer=Sequencer2dBlock, rnn_layer=LSTM2d, mlp_layer=Mlp,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6), act_layer=nn.GELU, num_rnn_layers=1,
                 bidirectional=True, union="cat", with_fc=True, drop_rate=0.0, proj_drop_rate=0.0,
                 drop_path_rate=0.0, nlhb=False, stem_norm=False):
        super().__init__()
        if not len(layers) == len(patch_sizes) == len(embed_dims) == len(hidden_sizes) == len(mlp_ratios):
            raise ValueError("layers, patch_sizes, embed_dims, hidden_sizes and mlp_ratios need one value a stage")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = embed_dims[-1]
        self.feature_dim = -1
        self.output_fmt = "NHWC"
        self.feature_info = []
        self.stem = PatchEmbed(patch_sizes[0], in_chans, embed_dims[0], norm_layer if stem_norm else None)
        reductions = list(accumulate(patch_sizes, lambda total, stride: total * stride))
        stages = []
        prev_dim = embed_dims[0]
        for i, dim in enumerate(embed_dims):
            stages.append(Sequencer2dStage(
                prev_dim, dim, depth=layers[i], downsample=i > 0, patch_size=patch_sizes[i],
                hidden_size=hidden_sizes[i], mlp_ratio=mlp_ratios[i], block_layer=block_layer, rnn_layer=rnn_layer,
                mlp_layer=mlp_layer, norm_layer=norm_layer, act_layer=act_layer, num_layers=num_rnn_layers,
                bidirectional=bidirectional, union=union, with_fc=with_fc, drop=proj_drop_rate,
                drop_path=drop_path_rate))
            prev_dim = dim
            self.feature_info.append(dict(num_chs=dim, reduction=reductions[i], module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.norm = norm_layer(self.num_features)
        self.head = ClassifierHead(self.num_features, num_classes, pool_type=global_pool, drop_rate=drop_rate)
        self.head_hidden_size = self.head.num_features
        self._init_weights(nlhb)

    def _init_weights(self, nlhb):
        """timm's (Flax-like) init, children before parents: LeCun-normal convolutions, Xavier-uniform linear layers
        with biases N(0, 1e-6) inside the MLPs and zero elsewhere, a zero classifier (its biases -log(num_classes)
        with ``nlhb``); every LSTM parameter redrawn from U(-1/sqrt(hidden), 1/sqrt(hidden)), torch's own law, in
        parameter order. The norms keep their ones and zeros."""
        for name, module in _modules_children_first(self):
            if isinstance(module, nn.LSTM):
                bound = 1.0 / math.sqrt(module.hidden_size)
                for weight in module.parameters():
                    nn.init.uniform_(weight, -bound, bound)
            else:
                _init_jax_layer(name, module, "head")
        if nlhb and self.num_classes > 0:
            nn.init.constant_(self.head.fc.bias, -math.log(self.num_classes))

    def get_classifier(self):
        """The whole head (pooling, dropout and ``fc``), as timm's Sequencer returns it."""
        return self.head

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the normalised last-stage map (N, H', W', num_features), channels last."""
        x = self.stem(x)
        x = self.stages(x)
        x = self.norm(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) as (N, C, H, W)
        maps (channels-last with ``output_fmt='NHWC'``), and (unless ``intermediates_only``) the final map,
        normalised if the last stage ran. ``norm`` applies the final norm to the last stage's output;
        ``stop_early`` skips the stages after the last one picked."""
        take, stages = intermediate_stages(self.stages, indices, stop_early, output_fmt, ("NCHW", "NHWC"))
        last = len(self.stages) - 1
        x = self.stem(x)
        intermediates = []
        stage_idx = 0
        for stage_idx, stage in enumerate(stages):
            x = stage(x)
            if stage_idx in take:
                feature = self.norm(x) if norm and stage_idx == last else x
                intermediates.append(feature.permute(0, 3, 1, 2).contiguous() if output_fmt == "NCHW" else feature)
        if intermediates_only:
            return intermediates
        if stage_idx == last:
            x = self.norm(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks (and the final norm when asked or when stages go,
        the classifier and pooling when asked or when stages go); returns the absolute indices."""
        take, prune_end = prune_stages(self, "stages", indices)
        if prune_norm or prune_end:
            self.norm = nn.Identity()
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "")
        return take


def _create_sequencer2d(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's first three stage outputs (channels-last maps) unless ``out_indices`` says
    otherwise, under timm's flattened names (``stem``, ``stages_0``...)."""
    if kwargs.get("features_only") and kwargs.get("out_indices") is None:
        kwargs["out_indices"] = (0, 1, 2)
    return build_model(Sequencer2d, variant, pretrained, progress=progress, **{**model_args, **kwargs})


def _sequencer_args(layers):
    """timm's Sequencer2D configuration with ``layers`` blocks a stage: a 7x7 patch embedding, one downsampling
    by 2 (widths 192 then 384), LSTMs of 48 then 96 units read both ways and concatenated, MLP ratio 3."""
    return dict(layers=layers, patch_sizes=[7, 2, 1, 1], embed_dims=[192, 384, 384, 384],
                hidden_sizes=[48, 96, 96, 96], mlp_ratios=[3.0, 3.0, 3.0, 3.0], rnn_layer=LSTM2d,
                bidirectional=True, union="cat", with_fc=True)


@register_model
def sequencer2d_s(pretrained=False, progress=True, **kwargs):
    """Sequencer2D-S: depths (4, 3, 8, 3)."""
    return _create_sequencer2d("sequencer2d_s", pretrained, progress, kwargs, **_sequencer_args([4, 3, 8, 3]))


@register_model
def sequencer2d_m(pretrained=False, progress=True, **kwargs):
    """Sequencer2D-M: depths (4, 3, 14, 3)."""
    return _create_sequencer2d("sequencer2d_m", pretrained, progress, kwargs, **_sequencer_args([4, 3, 14, 3]))


@register_model
def sequencer2d_l(pretrained=False, progress=True, **kwargs):
    """Sequencer2D-L: depths (8, 8, 16, 4)."""
    return _create_sequencer2d("sequencer2d_l", pretrained, progress, kwargs, **_sequencer_args([8, 8, 16, 4]))
