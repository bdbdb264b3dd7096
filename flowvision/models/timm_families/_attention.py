"""Channel attention as timm's layers build it, for the families that end their blocks with it: squeeze-and-excitation
(``SEModule``), efficient channel attention (``EcaModule``) and global context attention (``GlobalContext``).

Also the learnt per-offset attention biases of LeViT's descendants: the offset index of every (query, key) pair of a
grid (``attention_bias_indices``) and the base class that holds the biases and caches their gathered form in eval
mode (``CachedBiasAttention``), so that every family keeps timm's caching rules in one place.
"""
import math

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._utils import _make_divisible
from ._layers import ConvMlp, create_act_layer
from ._norm import LayerNorm2d

__all__ = ["SEModule", "EcaModule", "GlobalContext", "EffectiveSEModule", "attention_bias_indices",
           "CachedBiasAttention"]


class SEModule(nn.Module):
    """Squeeze-and-excitation (Hu et al. 2018, "Squeeze-and-Excitation Networks"), timm's ``SEModule``: the channels'
    means through a biased 1x1 reduction (``fc1``) to ``rd_channels``, or where that is not given ``channels *
    rd_ratio`` to the nearest multiple of ``rd_divisor`` (at least ``rd_divisor``), a norm (``bn``, only with
    ``norm_layer``: ReXNet's BatchNorm; timm's identity placeholder is left out), the activation (in place where
    it can be) and a biased 1x1 expansion (``fc2``) give a sigmoid gate (``gate``) that scales each channel."""

    def __init__(self, channels, rd_ratio=1 / 16, rd_channels=None, rd_divisor=8, act_layer=nn.ReLU,
                 norm_layer=None):
        super().__init__()
        if not rd_channels:
            rd_channels = _make_divisible(channels * rd_ratio, rd_divisor, round_limit=0.0)
        self.fc1 = nn.Conv2d(channels, rd_channels, kernel_size=1)
        self.bn = norm_layer(rd_channels) if norm_layer else None
        self.act = create_act_layer(act_layer, inplace=True)
        self.fc2 = nn.Conv2d(rd_channels, channels, kernel_size=1)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        scale = x.mean((2, 3), keepdim=True)
        scale = self.fc1(scale)
        if self.bn is not None:
            scale = self.bn(scale)
        scale = self.act(scale)
        scale = self.fc2(scale)
        return x * self.gate(scale)


def _eca_kernel_size(channels, gamma, beta):
    """ECA's adaptive kernel size: ``|log2(channels) + beta| / gamma`` truncated, made odd upwards, at least 3."""
    size = int(abs(math.log(channels, 2) + beta) / gamma)
    return max(size if size % 2 else size + 1, 3)


class EcaModule(nn.Module):
    """Efficient channel attention (Wang et al. 2020, "ECA-Net"), timm's ``EcaModule``: a sigmoid gate per channel
    from a 1-d convolution across the channel means.

    Neighbouring channels interact through one small bias-free kernel instead of SE's two dense layers;
    its size follows the channel count (``gamma``, ``beta`` from the paper's mapping).
    """

    def __init__(self, channels, gamma=2, beta=1):
        super().__init__()
        kernel_size = _eca_kernel_size(channels, gamma, beta)
        self.conv = nn.Conv1d(1, 1, kernel_size=kernel_size, padding=(kernel_size - 1) // 2, bias=False)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        scale = x.mean((2, 3)).view(x.shape[0], 1, x.shape[1])
        scale = self.conv(scale)
        scale = self.gate(scale).view(x.shape[0], x.shape[1], 1, 1)
        return x * scale


class GlobalContext(nn.Module):
    """Global context attention (Cao et al. 2019, "GCNet: Non-local Networks Meet Squeeze-Excitation Networks and
    Beyond"), timm's ``GlobalContext``: a softmax over the positions of a 1x1 convolution's logits (``conv_attn``)
    pools the map to one context vector per example (the plain mean without ``use_attn``); a bottleneck ``ConvMlp``
    with LayerNorm (to ``rd_ratio`` of the channels, a multiple of ``rd_divisor``) turns it into a per-channel
    sigmoid gate (``mlp_scale``, with ``fuse_scale``) and/or a per-channel shift (``mlp_add``, with ``fuse_add``;
    its last layer starts at zero). ``act_layer`` is the MLPs' activation."""

    def __init__(self, channels, use_attn=True, fuse_add=False, fuse_scale=True, rd_ratio=1 / 8, rd_divisor=1,
                 act_layer=nn.ReLU):
        super().__init__()
        self.conv_attn = nn.Conv2d(channels, 1, kernel_size=1) if use_attn else None
        rd_channels = _make_divisible(channels * rd_ratio, rd_divisor, round_limit=0.0)
        mlp_args = dict(act_layer=act_layer, norm_layer=LayerNorm2d)
        self.mlp_add = ConvMlp(channels, rd_channels, **mlp_args) if fuse_add else None
        self.mlp_scale = ConvMlp(channels, rd_channels, **mlp_args) if fuse_scale else None
        self.gate = nn.Sigmoid()
        self.reset_parameters()

    def reset_parameters(self):
        """He-normal (fan-in) attention logits; the additive MLP's last layer zeroed, so it starts as a no-op."""
        if self.conv_attn is not None:
            nn.init.kaiming_normal_(self.conv_attn.weight, mode="fan_in", nonlinearity="relu")
        if self.mlp_add is not None:
            nn.init.zeros_(self.mlp_add.fc2.weight)

    def forward(self, x):
        batch, channels, height, width = x.shape
        if self.conv_attn is not None:
            attn = self.conv_attn(x).reshape(batch, 1, height * width)
            attn = F.softmax(attn, dim=-1).unsqueeze(3)
            context = x.reshape(batch, channels, height * width).unsqueeze(1) @ attn
            context = context.view(batch, channels, 1, 1)
        else:
            context = x.mean(dim=(2, 3), keepdim=True)
        if self.mlp_scale is not None:
            x = x * self.gate(self.mlp_scale(context))
        if self.mlp_add is not None:
            x = x + self.mlp_add(context)
        return x


def attention_bias_indices(resolution, stride=1):
    """For every (query, key) pair of a ``resolution`` grid whose queries are subsampled by ``stride``, the index of
    its learnt attention bias: |dy| * width + |dx|, the absolute offset between the two positions."""
    rows = torch.arange(resolution[0])
    cols = torch.arange(resolution[1])
    keys = torch.stack(torch.meshgrid(rows, cols, indexing="ij")).flatten(1)
    query_rows = torch.arange(0, resolution[0], stride)
    query_cols = torch.arange(0, resolution[1], stride)
    queries = torch.stack(torch.meshgrid(query_rows, query_cols, indexing="ij")).flatten(1)
    offsets = (queries[:, :, None] - keys[:, None, :]).abs()
    return offsets[0] * resolution[1] + offsets[1]


class EffectiveSEModule(nn.Module):
    """Effective squeeze-and-excitation (Lee and Park 2020, CenterMask's eSE; timm's ``EffectiveSEModule``): the
    channels' means through one biased 1x1 convolution (``fc``, no reduction, so no channel information is lost)
    give a hard-sigmoid gate (``gate``) that scales each channel."""

    def __init__(self, channels):
        super().__init__()
        self.fc = nn.Conv2d(channels, channels, kernel_size=1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x):
        scale = x.mean((2, 3), keepdim=True)
        scale = self.fc(scale)
        return x * self.gate(scale)


class CachedBiasAttention(nn.Module):
    """The base of the attention layers (EfficientFormer's, EfficientFormerV2's, TinyViT's, EfficientViT-MSRA's)
    that add a learnt bias per head for every query-key offset on a grid (``attention_biases``, gathered for each
    (query, key) pair by ``attention_bias_idxs``); a subclass calls ``_add_biases`` where timm registers them.

    In eval mode the gathered biases are computed once and kept per device (``attention_bias_cache``, as timm does):
    ``train()``, ``eval()`` and dtype or device moves empty the cache, so weights loaded after an eval-mode forward
    are seen once the mode is set again (timm's behaviour).
    """

    def _add_biases(self, num_heads, resolution, query_stride=1, persistent=True):
        """The (``num_heads``, grid positions) biases, starting at 0, and the index of each (query, key) pair's
        offset, queries subsampled by ``query_stride``; ``persistent`` puts the indices in the ``state_dict``."""
        self.attention_biases = nn.Parameter(torch.zeros(num_heads, resolution[0] * resolution[1]))
        indices = attention_bias_indices(resolution, query_stride)
        self.register_buffer("attention_bias_idxs", indices, persistent=persistent)
        self.attention_bias_cache = {}

    def train(self, mode=True):
        super().train(mode)
        self.attention_bias_cache = {}
        return self

    def _apply(self, fn, recurse=True):
        self.attention_bias_cache = {}
        return super()._apply(fn, recurse)

    def get_attention_biases(self, device):
        """The (heads, queries, keys) biases: gathered afresh in training and while an nn.Graph build or an ONNX
        export records the forward (its ops must hold the gather, not a constant), from the cache for ``device`` in
        eval mode."""
        if self.training or torch.jit.is_tracing():
            return self.attention_biases[:, self.attention_bias_idxs]
        device_key = str(device)
        if device_key not in self.attention_bias_cache:
            self.attention_bias_cache[device_key] = self.attention_biases[:, self.attention_bias_idxs]
        return self.attention_bias_cache[device_key]
