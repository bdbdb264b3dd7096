"""EfficientViM (Lee, Choi and Kim 2025, "EfficientViM: Efficient Vision Mamba with Hidden State Mixer based State
Space Duality"): efficientvim_m1, efficientvim_m2, efficientvim_m3 and efficientvim_m4, and their distilled forms
efficientvim_m1_dist to efficientvim_m4_dist.

A light vision Mamba. A stem of four stride-2 3x3 convolutions makes the image a 16x smaller map; three stages
follow, the first two ending in an inverted-residual downsampling with squeeze-and-excitation. Each block is a
depthwise convolution, the HSM-SSD mixer, a second depthwise convolution and a 1x1-convolution MLP, every branch a
gated residual (a learnt sigmoid gate per branch and channel). The mixer is state space duality computed on a small
hidden state instead of on the tokens: input-dependent weights, softmax-normalised over the pixels, pool the map
into a few "state" tokens; the channel mixing (a gated linear unit and a projection) runs on those, and the tokens
are spread back over the pixels. The classifier fuses four linear heads under learnt softmax weights: one on each
stage's pooled (normalised) last hidden state and one on the pooled final map; the distilled models add a second,
distillation-trained set. Model names, module names, ``state_dict`` keys, defaults and (seeded) initialisation
follow timm's ``efficientvim`` module, so its checkpoints load directly; ``fuse()`` folds the BatchNorms and the
gated depthwise residuals into plain convolutions for inference, as timm's does.
"""
import engine as torch
from engine import nn

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._attention import SEModule
from ._layers import distilled_output, drop_path_module, init_linear_layers
from ._norm import LayerNorm, LayerNorm2d
from ._reparam import biased_conv_like, fold_batchnorm, identity_kernel

__all__ = []

_GLOBAL_POOLS = ("avg", "")


class ConvLayer1d(nn.Module):
    """A bias-free 1x1 convolution over a token sequence (``conv``): the mixer's projections. timm's class of this
    name has norm and activation slots that EfficientViM never fills, so there is nothing to fold."""

    def __init__(self, in_dim, out_dim):
        super().__init__()
        self.conv = nn.Conv1d(in_dim, out_dim, 1, bias=False)

    def forward(self, x):
        return self.conv(x)


class ConvLayer2d(nn.Module):
    """A bias-free convolution (``conv``), then BatchNorm (``norm``) unless ``with_norm`` is False, then
    ``act_layer`` (``act``) unless it is None; ``fuse()`` folds the BatchNorm into a biased convolution for
    inference. Every BatchNorm starts as the identity: timm's layer zeroes some scales, but its model's init resets
    every norm afterwards."""

    def __init__(self, in_dim, out_dim, kernel_size=3, stride=1, padding=0, groups=1, with_norm=True,
                 act_layer=nn.ReLU):
        super().__init__()
        self.conv = nn.Conv2d(in_dim, out_dim, kernel_size, stride=stride, padding=padding, groups=groups,
                              bias=False)
        self.norm = nn.BatchNorm2d(out_dim) if with_norm else None
        self.act = act_layer() if act_layer else None

    def fuse(self):
        """Fold the (eval-mode) BatchNorm into the convolution, which takes a bias; returns this layer."""
        if self.norm is not None:
            with torch.no_grad():
                kernel, bias = fold_batchnorm(self.conv.weight, self.norm)
            self.conv = biased_conv_like(self.conv, kernel, bias)
            self.norm = None
        return self

    def forward(self, x):
        x = self.conv(x)
        if self.norm is not None:
            x = self.norm(x)
        if self.act is not None:
            x = self.act(x)
        return x


class Stem(nn.Module):
    """Four stride-2 3x3 convolutions with BatchNorm (``conv``), widening to ``dim / 8``, ``/ 4``, ``/ 2`` and
    ``dim``, ReLU after all but the last: a map 16 times smaller than the image."""

    def __init__(self, in_dim, dim):
        super().__init__()
        widths = (in_dim, dim // 8, dim // 4, dim // 2, dim)
        self.conv = nn.Sequential(*[
            ConvLayer2d(widths[i], widths[i + 1], 3, stride=2, padding=1, act_layer=nn.ReLU if i < 3 else None)
            for i in range(4)])

    def forward(self, x):
        return self.conv(x)


class FFN(nn.Module):
    """The block's MLP as 1x1 convolutions with BatchNorm: to ``dim`` with ReLU (``fc1``) and back (``fc2``)."""

    def __init__(self, in_dim, dim):
        super().__init__()
        self.fc1 = ConvLayer2d(in_dim, dim, 1)
        self.fc2 = ConvLayer2d(dim, in_dim, 1, act_layer=None)

    def forward(self, x):
        return self.fc2(self.fc1(x))


def _fuse_depthwise_residual(conv, gate=None):
    """Fold ``x + conv(x)`` (no ``gate``), or the gated ``x + gate * (conv(x) - x)``, into the depthwise
    convolution ``conv`` itself: its kernel (and bias) scaled by the per-channel ``gate``, plus ``1 - gate`` (or 1)
    at the kernel's centre."""
    identity = identity_kernel(conv.out_channels, 1, conv.kernel_size, conv.weight.dtype)
    with torch.no_grad():
        if gate is None:
            conv.weight.add_(identity)
            return
        gate = gate.reshape(-1)
        conv.weight.mul_(gate.reshape(-1, 1, 1, 1))
        conv.weight.add_(identity * (1 - gate).reshape(-1, 1, 1, 1))
        if conv.bias is not None:
            conv.bias.mul_(gate)


class PatchMerging(nn.Module):
    """The downsampling between stages: an inverted residual (``conv``: 1x1 expansion to ``ratio * out_dim`` with
    ReLU, stride-2 3x3 depthwise convolution with ReLU, squeeze-and-excitation, 1x1 projection, all with BatchNorm)
    between two residual 3x3 depthwise convolutions with BatchNorm (``dwconv1`` at the input width, ``dwconv2`` at
    the output's). ``fuse()`` folds the residuals into those convolutions (eval mode only)."""

    def __init__(self, in_dim, out_dim, ratio=4.0):
        super().__init__()
        self.fused = False
        hidden_dim = int(out_dim * ratio)
        self.conv = nn.Sequential(
            ConvLayer2d(in_dim, hidden_dim, 1),
            ConvLayer2d(hidden_dim, hidden_dim, 3, stride=2, padding=1, groups=hidden_dim),
            SEModule(hidden_dim, 0.25),
            ConvLayer2d(hidden_dim, out_dim, 1, act_layer=None),
        )
        self.dwconv1 = ConvLayer2d(in_dim, in_dim, 3, padding=1, groups=in_dim, act_layer=None)
        self.dwconv2 = ConvLayer2d(out_dim, out_dim, 3, padding=1, groups=out_dim, act_layer=None)

    def fuse(self):
        """Fold the BatchNorms and the residuals into ``dwconv1`` and ``dwconv2`` (once); returns this module."""
        if not self.fused:
            if self.training:
                raise RuntimeError("fusing needs eval mode (the BatchNorms' running statistics)")
            for layer in (self.dwconv1, self.dwconv2):
                layer.fuse()
                _fuse_depthwise_residual(layer.conv)
            self.fused = True
        return self

    def forward(self, x):
        x = self.dwconv1(x) if self.fused else x + self.dwconv1(x)
        x = self.conv(x)
        x = self.dwconv2(x) if self.fused else x + self.dwconv2(x)
        return x


class HSMSSD(nn.Module):
    """The hidden state mixer based state space duality: from the (N, C, H, W) map, a 1x1 projection and a 3x3
    depthwise convolution (``BCdt_proj``, ``dw``) give ``state_dim`` maps each of B, C and dt. ``softmax(dt + A)``
    over the pixels (``A`` a learnt per-state offset) times B weighs the pixels into ``state_dim`` hidden-state
    tokens; these are mixed by a gated linear unit (``hz_proj`` to hidden and gate halves of ``ssd_expand * dim``
    channels, ``hidden * SiLU(gate) + hidden * D``) and projected back (``out_proj``), then C spreads them over the
    pixels again. Returns the output map and the (N, dim, state_dim) hidden state."""

    def __init__(self, dim, ssd_expand=1.0, state_dim=64, a_init_range=(1.0, 16.0)):
        super().__init__()
        self.ssd_expand = ssd_expand
        self.d_inner = int(ssd_expand * dim)
        self.state_dim = state_dim
        self.BCdt_proj = ConvLayer1d(dim, 3 * state_dim)
        self.dw = ConvLayer2d(3 * state_dim, 3 * state_dim, 3, padding=1, groups=3 * state_dim, with_norm=False,
                              act_layer=None)
        self.hz_proj = ConvLayer1d(dim, 2 * self.d_inner)
        self.out_proj = ConvLayer1d(self.d_inner, dim)
        self.a_init_range = a_init_range
        self.A = nn.Parameter(torch.empty(state_dim))
        self.act = nn.SiLU()
        self.D = nn.Parameter(torch.ones(1))
        self.reset_parameters()

    def reset_parameters(self):
        """``A`` uniform in ``a_init_range``, ``D`` one."""
        nn.init.uniform_(self.A, *self.a_init_range)
        nn.init.ones_(self.D)

    def forward(self, x):
        batch, _, height, width = x.shape
        x = x.flatten(2)
        bc_dt = self.BCdt_proj(x).reshape(batch, -1, height, width)
        bc_dt = self.dw(bc_dt).flatten(2)
        b, c, dt = torch.split(bc_dt, [self.state_dim] * 3, dim=1)
        a = (dt + self.A.view(1, -1, 1)).softmax(-1)
        hidden = x @ (a * b).transpose(-2, -1)
        hidden, gate = torch.split(self.hz_proj(hidden), [self.d_inner, self.d_inner], dim=1)
        hidden = self.out_proj(hidden * self.act(gate) + hidden * self.D)
        y = hidden @ c
        y = y.reshape(batch, -1, height, width)
        return y, hidden


class EfficientViMBlock(nn.Module):
    """EfficientViM's block: a 3x3 depthwise convolution with BatchNorm (``dwconv1``), the mixer (``mixer``) after a
    channel LayerNorm (``norm``), a second depthwise convolution (``dwconv2``) and the MLP (``ffn``), each a branch
    ``x + drop_path(gate * (branch(x) - x))`` with its own per-channel gate ``sigmoid(alpha[i])`` (``alpha``
    starting at 1e-4). Returns the map and the mixer's hidden state. ``fuse()`` folds the two depthwise branches
    into their convolutions (eval mode only)."""

    def __init__(self, dim, mlp_ratio=4.0, ssd_expand=1.0, state_dim=64, drop_path=0.0):
        super().__init__()
        self.fused = False
        self.mixer = HSMSSD(dim, ssd_expand=ssd_expand, state_dim=state_dim)
        self.norm = LayerNorm2d(dim, eps=1e-5)
        self.dwconv1 = ConvLayer2d(dim, dim, 3, padding=1, groups=dim, act_layer=None)
        self.dwconv2 = ConvLayer2d(dim, dim, 3, padding=1, groups=dim, act_layer=None)
        self.ffn = FFN(dim, int(dim * mlp_ratio))
        self.alpha = nn.Parameter(1e-4 * torch.ones(4, dim))
        self.drop_path = drop_path_module(drop_path)

    def fuse(self):
        """Fold the BatchNorms and the gated residuals into ``dwconv1`` and ``dwconv2`` (once); returns this
        block."""
        if not self.fused:
            if self.training:
                raise RuntimeError("fusing needs eval mode (the BatchNorms' running statistics)")
            gates = self.alpha.detach().sigmoid()
            for layer, gate in ((self.dwconv1, gates[0]), (self.dwconv2, gates[2])):
                layer.fuse()
                _fuse_depthwise_residual(layer.conv, gate)
            self.fused = True
        return self

    def forward(self, x):
        gates = self.alpha.sigmoid().view(4, -1, 1, 1)
        if self.fused:
            x = self.dwconv1(x)
        else:
            x = x + self.drop_path(gates[0] * (self.dwconv1(x) - x))
        mixed, hidden = self.mixer(self.norm(x))
        x = x + self.drop_path(gates[1] * (mixed - x))
        if self.fused:
            x = self.dwconv2(x)
        else:
            x = x + self.drop_path(gates[2] * (self.dwconv2(x) - x))
        x = x + self.drop_path(gates[3] * (self.ffn(x) - x))
        return x, hidden


class EfficientViMStage(nn.Module):
    """``depth`` blocks at width ``in_dim`` (``blocks``, stochastic depth ``drop_path[i]``), then, with
    ``downsample``, a ``PatchMerging`` to ``out_dim`` at half the resolution (``downsample``). Returns the blocks'
    map (this stage's feature), the next stage's input and the last block's hidden state."""

    def __init__(self, in_dim, out_dim, depth, mlp_ratio=4.0, downsample=False, ssd_expand=1.0, state_dim=64,
                 drop_path=None):
        super().__init__()
        drop_path = drop_path or [0.0] * depth
        self.blocks = nn.ModuleList([
            EfficientViMBlock(in_dim, mlp_ratio=mlp_ratio, ssd_expand=ssd_expand, state_dim=state_dim,
                              drop_path=drop_path[i])
            for i in range(depth)])
        self.downsample = PatchMerging(in_dim, out_dim) if downsample else None

    def forward(self, x):
        hidden = None
        for block in self.blocks:
            x, hidden = block(x)
        stage_map = x
        if self.downsample is not None:
            x = self.downsample(x)
        return stage_map, x, hidden


def _weighted_heads(heads, weights, pooled):
    """The sum of each head's logits on its pooled features, weighted by ``softmax(weights)``."""
    weights = weights.softmax(-1)
    logits = [weights[i] * head(features) for i, (head, features) in enumerate(zip(heads, pooled))]
    return torch.stack(logits).sum(0)


class EfficientViM(nn.Module):
    """EfficientViM: the stem (``patch_embed``), three stages (``stages``; widths ``embed_dim``, ``depths`` blocks,
    mixer states ``state_dim``) at 1/16, 1/32 and 1/64 of the image, the norms (``norm``: a LayerNorm for each
    stage's last hidden state, a channel LayerNorm for the final map), dropout (``head_drop``) and four linear heads
    (``heads``) whose logits are summed under softmax weights (``weights``).

    ``forward_features`` gives the normalised (N, C, tokens) hidden states and final map; ``forward_head`` averages
    each over its tokens, applies dropout and fuses the heads (with ``pre_logits`` or no classes: the pooled
    features concatenated, ``num_features`` wide). ``global_pool``: 'avg', or '' (the features as they are, which
    needs ``num_classes=0``). ``drop_path_rate`` is the last block's stochastic depth, rising linearly from 0 at
    the first; ``drop_rate`` the dropout before the heads.
    """

    default_cfg = {"first_conv": "patch_embed.conv.0.conv", "classifier": ("heads.0", "heads.1", "heads.2", "heads.3")}
    feature_wrapper = FeatureGetterNet

    def __init__(self, in_chans=3, num_classes=1000, embed_dim=(128, 256, 512), depths=(2, 2, 2), mlp_ratio=4.0,
                 ssd_expand=1.0, state_dim=(49, 25, 9), global_pool="avg", drop_rate=0.0, drop_path_rate=0.0):
        super().__init__()
        _check_pool(global_pool, num_classes)
        if not len(depths) == len(embed_dim) == len(state_dim):
            raise ValueError(f"embed_dim, depths and state_dim need one entry per stage, got {len(embed_dim)}, "
                             f"{len(depths)} and {len(state_dim)}")
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_classes = num_classes
        self.num_layers = len(depths)
        self.embed_dim = tuple(embed_dim)
        self.feature_info = []
        self.patch_embed = Stem(in_chans, embed_dim[0])
        rates = torch.linspace(0, drop_path_rate, sum(depths)).tolist()
        stages = []
        first_block = 0
        reduction = 16
        for i, depth in enumerate(depths):
            last = i == self.num_layers - 1
            stages.append(EfficientViMStage(embed_dim[i], 0 if last else embed_dim[i + 1], depth, mlp_ratio=mlp_ratio,
                                            downsample=not last, ssd_expand=ssd_expand, state_dim=state_dim[i],
                                            drop_path=rates[first_block:first_block + depth]))
            first_block += depth
            self.feature_info.append(dict(num_chs=embed_dim[i], reduction=reduction, module=f"stages.{i}"))
            if not last:
                reduction *= 2
        self.stages = nn.ModuleList(stages)
        self.num_features = self.head_hidden_size = sum(embed_dim) + embed_dim[-1]
        self.weights = nn.Parameter(torch.ones(self.num_layers + 1), requires_grad=num_classes > 0)
        self.norm = nn.ModuleList([*[LayerNorm(dim, eps=1e-5) for dim in embed_dim],
                                   LayerNorm2d(embed_dim[-1], eps=1e-5)])
        self.head_drop = nn.Dropout(drop_rate)
        self.heads = self._new_heads(num_classes)
        init_linear_layers(self.heads)

    def _new_heads(self, num_classes):
        """One linear layer per pooled feature (the stages' hidden states and the final map; identities for no
        classes), with PyTorch's default init, in the model's dtype."""
        heads = nn.ModuleList([nn.Linear(dim, num_classes) if num_classes > 0 else nn.Identity()
                               for dim in (*self.embed_dim, self.embed_dim[-1])])
        return heads.to(self.weights.dtype)

    def _head_weights(self):
        """The names of the heads' fusion weights."""
        return ("weights",)

    def get_classifier(self):
        """The four heads."""
        return self.heads

    def reset_classifier(self, num_classes, global_pool=None):
        """Fresh heads for ``num_classes`` (0: identities) in the model's training mode; ``global_pool`` ('avg' or
        '') changes the pooling too. The fusion weights keep their values and learn only with classes."""
        pool = self.global_pool if global_pool is None else global_pool
        _check_pool(pool, num_classes)
        self.global_pool = pool
        self.num_classes = num_classes
        self.heads = self._new_heads(num_classes).train(self.training)
        for name in self._head_weights():
            getattr(self, name).requires_grad_(num_classes > 0)

    def forward_features(self, x):
        """The normalised hidden state of each stage's last block (N, C_i, state_dim_i) and the normalised final map
        (N, C, H / 64 * W / 64), as a list."""
        x = self.patch_embed(x)
        features = []
        for stage, norm in zip(self.stages, self.norm):
            _, x, hidden = stage(x)
            features.append(norm(hidden.transpose(1, 2)).transpose(1, 2))
        features.append(self.norm[-1](x).flatten(2))
        return features

    def forward_head(self, x, pre_logits=False):
        """Each feature averaged over its tokens, through dropout; then the fused heads' logits, unless
        ``pre_logits`` or the model has no classes (the pooled features concatenated). Without pooling, the
        features as they are."""
        if not self.global_pool:
            return x
        pooled = [self.head_drop(features.mean(-1)) for features in x]
        if pre_logits or self.num_classes == 0:
            return torch.cat(pooled, dim=1)
        return self._logits(pooled)

    def _logits(self, pooled):
        return _weighted_heads(self.heads, self.weights, pooled)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The maps of the stages picked by ``indices`` (None: all, n: the last n, or a list), before their
        downsampling (with ``norm``, through the stage's LayerNorm over channels), and (unless
        ``intermediates_only``) ``forward_features``' list: the normalised hidden states, then the final map,
        normalised if the last stage ran (else the last stage run's map). ``stop_early`` skips the stages after
        the last one picked."""
        take, run = intermediate_stages(self.stages, indices, stop_early, output_fmt)
        x = self.patch_embed(x)
        intermediates = []
        features = []
        for i, (stage, stage_norm) in enumerate(zip(run, self.norm)):
            stage_map, x, hidden = stage(x)
            if i in take:
                intermediates.append(stage_norm(stage_map.permute(0, 2, 3, 1)).permute(0, 3, 1, 2) if norm
                                     else stage_map)
            if not intermediates_only:
                features.append(stage_norm(hidden.transpose(1, 2)).transpose(1, 2))
        if intermediates_only:
            return intermediates
        x = self.norm[-1](x) if len(run) == len(self.stages) else stage_map
        features.append(x.flatten(2))
        return features, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Keep what the stages picked by ``indices`` need: the stages after the last one go (which needs
        ``prune_head``, as the heads read every stage), the last kept loses its downsampling, the fusion weights
        their entries, and the final map's norm becomes an identity; the norms become identities (with
        ``prune_norm``: all; with ``prune_head``: those of stages not picked); ``prune_head`` drops the heads.
        Returns the absolute indices."""
        take = take_indices(len(self.stages), indices)
        kept = max(take) + 1
        if kept < self.num_layers:
            if not prune_head:
                raise ValueError("the heads read every stage: pruning stages needs prune_head=True")
            self.stages = nn.ModuleList(list(self.stages)[:kept])
            self.feature_info = self.feature_info[:kept]
            self.stages[-1].downsample = None
            self.norm = nn.ModuleList([*list(self.norm)[:kept], nn.Identity()])
            for name in self._head_weights():
                weights = getattr(self, name)
                setattr(self, name, nn.Parameter(torch.cat([weights[:kept], weights[-1:]]).detach()))
            self.embed_dim = self.embed_dim[:kept]
            self.num_layers = kept
            self.num_features = self.head_hidden_size = sum(self.embed_dim) + self.embed_dim[-1]
        if prune_norm:
            self.norm = nn.ModuleList([nn.Identity() for _ in self.norm])
        elif prune_head:
            self.norm = nn.ModuleList([norm if i in take else nn.Identity() for i, norm in enumerate(self.norm)])
        if prune_head:
            self.reset_classifier(0)
        return take


class EfficientViMDistilled(EfficientViM):
    """EfficientViM with a second set of fused heads (``heads_dist``, ``weights_dist``) trained by distillation
    (timm's ``EfficientViMDistilled``; takes ``EfficientViM``'s arguments). The output is the average of the two
    fused predictions, but in train mode after ``set_distilled_training()``: both, (logits, distillation logits).
    """

    default_cfg = {"first_conv": "patch_embed.conv.0.conv",
                   "classifier": ("heads.0", "heads.1", "heads.2", "heads.3",
                                  "heads_dist.0", "heads_dist.1", "heads_dist.2", "heads_dist.3")}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.weights_dist = nn.Parameter(torch.ones(self.num_layers + 1), requires_grad=self.num_classes > 0)
        self.heads_dist = self._new_heads(self.num_classes)
        init_linear_layers(self.heads_dist)
        self.distilled_training = False

    def _head_weights(self):
        return ("weights", "weights_dist")

    def get_classifier(self):
        """The two sets of heads: (heads, distillation heads)."""
        return self.heads, self.heads_dist

    def reset_classifier(self, num_classes, global_pool=None):
        """Fresh heads of both sets for ``num_classes`` (0: identities); ``global_pool`` ('avg' or '') changes the
        pooling too."""
        super().reset_classifier(num_classes, global_pool)
        self.heads_dist = self._new_heads(num_classes).train(self.training)

    def set_distilled_training(self, enable=True):
        """Whether train mode returns both predictions (for a distillation loss) instead of their average."""
        self.distilled_training = enable

    def _logits(self, pooled):
        logits = _weighted_heads(self.heads, self.weights, pooled)
        logits_dist = _weighted_heads(self.heads_dist, self.weights_dist, pooled)
        return distilled_output(self, logits, logits_dist)


def _check_pool(global_pool, num_classes):
    """Refuse an unknown pooling, and heads on unpooled features."""
    if global_pool not in _GLOBAL_POOLS:
        raise ValueError(f"global_pool must be one of {_GLOBAL_POOLS}, got {global_pool!r}")
    if not global_pool and num_classes > 0:
        raise ValueError("the heads need pooled features: use num_classes=0 with global_pool=''")


_MODEL_CFGS = {
    "m1": dict(embed_dim=(128, 192, 320), depths=(2, 2, 2), state_dim=(49, 25, 9)),
    "m2": dict(embed_dim=(128, 256, 512), depths=(2, 2, 2), state_dim=(49, 25, 9)),
    "m3": dict(embed_dim=(224, 320, 512), depths=(2, 2, 2), state_dim=(49, 25, 9)),
    "m4": dict(embed_dim=(224, 320, 512), depths=(3, 4, 2), state_dim=(64, 32, 16)),
}


def _create_efficientvim(variant, pretrained, progress, kwargs, cfg, distilled=False):
    """Build a registered variant from timm's configuration ``cfg``, which the caller's ``kwargs`` override (the
    distilled class with ``distilled``); ``features_only`` gives the three stages' maps (strides 16 to 64) unless
    ``out_indices`` says otherwise, through ``forward_intermediates`` as timm does."""
    model_cls = EfficientViMDistilled if distilled else EfficientViM
    return build_model(model_cls, variant, pretrained, progress=progress, **{**_MODEL_CFGS[cfg], **kwargs})


@register_model
def efficientvim_m1(pretrained=False, progress=True, **kwargs):
    """EfficientViM-M1: widths 128, 192, 320, 2 blocks a stage, states 49, 25, 9."""
    return _create_efficientvim("efficientvim_m1", pretrained, progress, kwargs, "m1")


@register_model
def efficientvim_m2(pretrained=False, progress=True, **kwargs):
    """EfficientViM-M2: widths 128, 256, 512, 2 blocks a stage, states 49, 25, 9."""
    return _create_efficientvim("efficientvim_m2", pretrained, progress, kwargs, "m2")


@register_model
def efficientvim_m3(pretrained=False, progress=True, **kwargs):
    """EfficientViM-M3: widths 224, 320, 512, 2 blocks a stage, states 49, 25, 9."""
    return _create_efficientvim("efficientvim_m3", pretrained, progress, kwargs, "m3")


@register_model
def efficientvim_m4(pretrained=False, progress=True, **kwargs):
    """EfficientViM-M4: widths 224, 320, 512, blocks 3, 4, 2, states 64, 32, 16 (trained at 256 pixels)."""
    return _create_efficientvim("efficientvim_m4", pretrained, progress, kwargs, "m4")


@register_model
def efficientvim_m1_dist(pretrained=False, progress=True, **kwargs):
    """EfficientViM-M1 with distillation heads."""
    return _create_efficientvim("efficientvim_m1_dist", pretrained, progress, kwargs, "m1", distilled=True)


@register_model
def efficientvim_m2_dist(pretrained=False, progress=True, **kwargs):
    """EfficientViM-M2 with distillation heads."""
    return _create_efficientvim("efficientvim_m2_dist", pretrained, progress, kwargs, "m2", distilled=True)


@register_model
def efficientvim_m3_dist(pretrained=False, progress=True, **kwargs):
    """EfficientViM-M3 with distillation heads."""
    return _create_efficientvim("efficientvim_m3_dist", pretrained, progress, kwargs, "m3", distilled=True)


@register_model
def efficientvim_m4_dist(pretrained=False, progress=True, **kwargs):
    """EfficientViM-M4 with distillation heads (trained at 256 pixels)."""
    return _create_efficientvim("efficientvim_m4_dist", pretrained, progress, kwargs, "m4", distilled=True)
