"""CoaT (Xu, Xu, Chang and Tu 2021, "Co-Scale Conv-Attentional Image Transformers"): coat_tiny, coat_mini,
coat_small, coat_lite_tiny, coat_lite_mini, coat_lite_small, coat_lite_medium and coat_lite_medium_384.

Four scales (strides 4 to 32) of non-overlapping patch embeddings, each with its own class token and a chain of
serial blocks. A serial block adds a convolutional position encoding (a 3x3 depthwise convolution of the token map,
shared by the scale's blocks), then runs conv-attention: factorized attention (the softmax over the keys, so the
cost is linear in the tokens) plus a convolutional relative position encoding (depthwise convolutions of the values,
with per-head-group windows, times the queries). CoaT-Lite classifies the last scale's class token. CoaT adds
parallel blocks that run conv-attention on scales 2 to 4 at once and mix them by bilinear up- and down-sampling,
and classifies the three class tokens aggregated by a 1x1 convolution. Model names, module names, ``state_dict``
keys and initialisation follow timm's ``coat`` module, so its checkpoints load directly.
"""
import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FeatureGetterNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from . import _layers
from ._layers import LinearHeadApi, Mlp, drop_path_module, init_linear_layers, trunc_normal_
from ._norm import LayerNorm

__all__ = []


class PatchEmbed(_layers.PatchEmbed):
    """The shared patch embedding (one strided convolution ``proj``, images of exactly ``img_size``) with its
    tokens normalised by a LayerNorm (``norm``, PyTorch's epsilon), as CoaT's scales embed their inputs."""

    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__(img_size, patch_size, in_chans, embed_dim)
        self.norm = nn.LayerNorm(embed_dim)


def _with_cls_token(x, cls_token):
    """The (N, 1, C) class token put before the (N, L, C) tokens."""
    return torch.cat((cls_token.expand(x.shape[0], -1, -1), x), dim=1)


def _tokens_to_map(x, size):
    """The image tokens of (N, 1 + H * W, C) tokens (the class token dropped) as an (N, C, H, W) map."""
    return x[:, 1:].reshape(x.shape[0], size[0], size[1], -1).permute(0, 3, 1, 2).contiguous()


class ConvRelPosEnc(nn.Module):
    """Convolutional relative position encoding: the values' image tokens, as (N, heads * head_chs, H, W) maps,
    go through depthwise convolutions (``conv_list``, one per window size, each over a group of heads), and the
    result is multiplied by the queries; the class token's encoding is zero.

    ``window`` is one window size for every head, or a dict {window size: heads in its group} (in order, summing to
    ``num_heads``).
    """

    def __init__(self, head_chs, num_heads, window):
        super().__init__()
        if isinstance(window, int):
            window = {window: num_heads}
        elif not isinstance(window, dict):
            raise ValueError(f"window must be an int or a dict of window size: head count, got {window!r}")
        self.window = window
        self.conv_list = nn.ModuleList()
        self.head_splits = []
        for size, heads in window.items():
            channels = heads * head_chs
            conv = nn.Conv2d(channels, channels, kernel_size=(size, size), padding=(size // 2, size // 2),
                             dilation=(1, 1), groups=channels)
            self.conv_list.append(conv)
            self.head_splits.append(heads)
        self.channel_splits = [heads * head_chs for heads in self.head_splits]

    def forward(self, q, v, size):
        batch, num_heads, _, head_chs = q.shape
        height, width = size
        values = v[:, :, 1:].transpose(-1, -2).reshape(batch, num_heads * head_chs, height, width)
        groups = torch.split(values, self.channel_splits, dim=1)
        encoded = torch.cat([conv(group) for conv, group in zip(self.conv_list, groups)], dim=1)
        encoded = encoded.reshape(batch, num_heads, head_chs, height * width).transpose(-1, -2)
        encoding = q[:, :, 1:] * encoded
        encoding = F.pad(encoding, (0, 0, 1, 0, 0, 0))
        return encoding


class FactorAttnConvRelPosEnc(nn.Module):
    """Conv-attention over (N, 1 + H * W, dim) tokens: factorized attention, queries times (softmax over the tokens
    of the keys)^T times values, scaled by head_dim^-0.5, plus the shared convolutional relative position encoding
    ``crpe``; then the output projection ``proj`` and its dropout.

    ``attn_drop`` is timm's dropout slot for attention weights, which factorized attention has none of: it is kept
    for timm's module tree and never applied.
    """

    def __init__(self, dim, num_heads=8, qkv_bias=False, attn_drop=0.0, proj_drop=0.0, shared_crpe=None):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.crpe = shared_crpe

    def forward(self, x, size):
        batch, tokens, channels = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, channels // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        context = k.softmax(dim=2).transpose(-1, -2) @ v
        attended = q @ context
        x = self.scale * attended + self.crpe(q, v, size=size)
        x = x.transpose(1, 2).reshape(batch, tokens, channels)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class ConvPosEnc(nn.Module):
    """Convolutional position encoding (as CPVT's conditional one): the image tokens as a map plus their ``k`` x
    ``k`` depthwise convolution (``proj``); the class token passes unchanged."""

    def __init__(self, dim, k=3):
        super().__init__()
        self.proj = nn.Conv2d(dim, dim, k, 1, k // 2, groups=dim)

    def forward(self, x, size):
        batch, _, channels = x.shape
        feature_map = x[:, 1:].transpose(1, 2).reshape(batch, channels, size[0], size[1])
        encoded = self.proj(feature_map) + feature_map
        return torch.cat((x[:, :1], encoded.flatten(2).transpose(1, 2)), dim=1)


class SerialBlock(nn.Module):
    """One scale's block: the scale's shared position encoding ``cpe``, then x + drop_path(conv-attention
    (norm1(x))) and x + drop_path(mlp(norm2(x))). ``shared_crpe`` is the scale's relative position encoding;
    ``proj_drop`` the dropout of the attention output and the MLP; ``drop_path`` the stochastic depth of both
    branches (one module, drawn twice)."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=nn.LayerNorm, shared_cpe=None, shared_crpe=None):
        super().__init__()
        self.cpe = shared_cpe
        self.norm1 = norm_layer(dim)
        self.factoratt_crpe = FactorAttnConvRelPosEnc(dim, num_heads, qkv_bias, attn_drop, proj_drop, shared_crpe)
        self.drop_path = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)

    def forward(self, x, size):
        x = self.cpe(x, size)
        x = x + self.drop_path(self.factoratt_crpe(self.norm1(x), size))
        x = x + self.drop_path(self.mlp(self.norm2(x)))
        return x


class ParallelBlock(nn.Module):
    """CoaT's co-scale block over scales 2 to 4 (scale 1 passes through): each scale's conv-attention
    (``factoratt_crpe2``-``4`` after ``norm12``-``14``, with the scales' shared relative position encodings), plus
    the other two scales' attention outputs bilinearly resized to it, is added to its tokens (after ``drop_path``);
    then each scale's MLP branch after ``norm22``-``24``. The three scales share one width and one MLP (``mlp2``,
    ``mlp3`` and ``mlp4`` are the same module)."""

    def __init__(self, dims, num_heads, mlp_ratios=None, qkv_bias=False, proj_drop=0.0, attn_drop=0.0, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=nn.LayerNorm, shared_crpes=None):
        super().__init__()
        if not dims[1] == dims[2] == dims[3]:
            raise ValueError(f"parallel blocks need scales 2 to 4 of one width, got embed_dims {dims}")
        if mlp_ratios is None or not mlp_ratios[1] == mlp_ratios[2] == mlp_ratios[3]:
            raise ValueError(f"parallel blocks need scales 2 to 4 of one MLP ratio, got mlp_ratios {mlp_ratios}")
        self.norm12 = norm_layer(dims[1])
        self.norm13 = norm_layer(dims[2])
        self.norm14 = norm_layer(dims[3])
        self.factoratt_crpe2 = FactorAttnConvRelPosEnc(dims[1], num_heads, qkv_bias, attn_drop, proj_drop,
                                                       shared_crpes[1])
        self.factoratt_crpe3 = FactorAttnConvRelPosEnc(dims[2], num_heads, qkv_bias, attn_drop, proj_drop,
                                                       shared_crpes[2])
        self.factoratt_crpe4 = FactorAttnConvRelPosEnc(dims[3], num_heads, qkv_bias, attn_drop, proj_drop,
                                                       shared_crpes[3])
        self.drop_path = drop_path_module(drop_path)
        self.norm22 = norm_layer(dims[1])
        self.norm23 = norm_layer(dims[2])
        self.norm24 = norm_layer(dims[3])
        self.mlp2 = self.mlp3 = self.mlp4 = Mlp(dims[1], int(dims[1] * mlp_ratios[1]), act_layer=act_layer,
                                                drop=proj_drop)

    @staticmethod
    def _resize(x, scale_factor, size):
        """(N, 1 + H * W, C) tokens with their image tokens bilinearly resized by ``scale_factor`` (the class token
        kept)."""
        image = F.interpolate(_tokens_to_map(x, size), scale_factor=scale_factor, mode="bilinear",
                              align_corners=False, recompute_scale_factor=False)
        return torch.cat((x[:, :1], image.flatten(2).transpose(1, 2)), dim=1)

    def forward(self, x1, x2, x3, x4, sizes):
        _, size2, size3, size4 = sizes
        att2 = self.factoratt_crpe2(self.norm12(x2), size=size2)
        att3 = self.factoratt_crpe3(self.norm13(x3), size=size3)
        att4 = self.factoratt_crpe4(self.norm14(x4), size=size4)
        up3_2 = self._resize(att3, 2.0, size3)
        up4_3 = self._resize(att4, 2.0, size4)
        up4_2 = self._resize(att4, 4.0, size4)
        down2_3 = self._resize(att2, 0.5, size2)
        down3_4 = self._resize(att3, 0.5, size3)
        down2_4 = self._resize(att2, 0.25, size2)
        x2 = x2 + self.drop_path(att2 + up3_2 + up4_2)
        x3 = x3 + self.drop_path(att3 + up4_3 + down2_3)
        x4 = x4 + self.drop_path(att4 + down3_4 + down2_4)
        mlp2 = self.mlp2(self.norm22(x2))
        mlp3 = self.mlp3(self.norm23(x3))
        mlp4 = self.mlp4(self.norm24(x4))
        x2 = x2 + self.drop_path(mlp2)
        x3 = x3 + self.drop_path(mlp3)
        x4 = x4 + self.drop_path(mlp4)
        return x1, x2, x3, x4


def _check_pool(global_pool):
    """Refuse a pooling other than 'token' and 'avg', as timm does."""
    if global_pool not in ("token", "avg"):
        raise ValueError(f"global_pool must be 'token' or 'avg', got {global_pool!r}")


class CoaT(LinearHeadApi, nn.Module):
    """CoaT (timm's ``CoaT``, its arguments and defaults): four scales, each a patch embedding
    (``patch_embed1``-``4``: ``patch_size``, then 2x2 patches), a class token (``cls_token1``-``4``) and
    ``serial_depths`` serial blocks (``serial_blocks1``-``4``, ``embed_dims`` wide, MLPs ``mlp_ratios`` wide),
    sharing the scale's position encodings (``cpe1``-``4``, ``crpe1``-``4``: ``crpe_window`` {window: heads},
    ``num_heads`` heads); then, with ``parallel_depth``, that many parallel blocks (``parallel_blocks``, each after
    the position encodings of scales 2 to 4).

    The head: CoaT-Lite (no parallel blocks) normalises the last scale (``norm4``) and classifies its class token
    (``global_pool='token'``) or its image tokens' mean ('avg'); CoaT normalises scales 2 to 4 (``norm2``-``4``),
    pools each alike and mixes the three by a 1x1 convolution (``aggregate``), then dropout ``drop_rate``
    (``head_drop``) and the classifier (``head``). ``return_interm_layers`` builds no head and makes the model return
    {name: (N, C, H, W) map} for the names ``x1_nocls``-``x4_nocls`` in ``out_features``.

    ``proj_drop_rate`` drops the attention outputs and MLPs, ``drop_path_rate`` is every block's stochastic depth (the
    same at each, as in timm); ``attn_drop_rate`` is kept in timm's unused slots. The model takes images of exactly
    ``img_size`` (the patch grids of all scales follow from it); with parallel blocks each scale's grid must halve
    exactly (sides of 32k to 32k + 7 pixels).
    """

    default_cfg = {"first_conv": "patch_embed1.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet
    _check_pool = staticmethod(_check_pool)

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, embed_dims=(64, 128, 320, 512),
                 serial_depths=(3, 4, 6, 3), parallel_depth=0, num_heads=8, mlp_ratios=(4, 4, 4, 4), qkv_bias=True,
                 drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, norm_layer=LayerNorm,
                 return_interm_layers=False, out_features=None, crpe_window=None, global_pool="token"):
        super().__init__()
        _check_pool(global_pool)
        crpe_window = crpe_window or {3: 2, 5: 3, 7: 3}
        self.return_interm_layers = return_interm_layers
        self.out_features = out_features
        self.embed_dims = embed_dims
        self.num_features = self.head_hidden_size = embed_dims[-1]
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        img_size = _layers.pair(img_size)
        self.patch_embed1 = PatchEmbed(img_size, patch_size, in_chans, embed_dims[0])
        for i in range(1, 4):
            scale_size = [side // 2 ** (i + 1) for side in img_size]
            setattr(self, f"patch_embed{i + 1}", PatchEmbed(scale_size, 2, embed_dims[i - 1], embed_dims[i]))
        for i in range(4):
            setattr(self, f"cls_token{i + 1}", nn.Parameter(torch.zeros(1, 1, embed_dims[i])))
        for i in range(4):
            setattr(self, f"cpe{i + 1}", ConvPosEnc(embed_dims[i], k=3))
        for i in range(4):
            setattr(self, f"crpe{i + 1}", ConvRelPosEnc(embed_dims[i] // num_heads, num_heads, crpe_window))
        block_args = dict(num_heads=num_heads, qkv_bias=qkv_bias, proj_drop=proj_drop_rate, attn_drop=attn_drop_rate,
                          drop_path=drop_path_rate, norm_layer=norm_layer)
        for i in range(4):
            setattr(self, f"serial_blocks{i + 1}", nn.ModuleList([
                SerialBlock(embed_dims[i], mlp_ratio=mlp_ratios[i], shared_cpe=getattr(self, f"cpe{i + 1}"),
                            shared_crpe=getattr(self, f"crpe{i + 1}"), **block_args)
                for _ in range(serial_depths[i])]))
        self.parallel_depth = parallel_depth
        if parallel_depth > 0:
            crpes = (self.crpe1, self.crpe2, self.crpe3, self.crpe4)
            self.parallel_blocks = nn.ModuleList([
                ParallelBlock(embed_dims, mlp_ratios=mlp_ratios, shared_crpes=crpes, **block_args)
                for _ in range(parallel_depth)])
        else:
            self.parallel_blocks = None
        self.feature_info = [
            dict(num_chs=embed_dims[i], reduction=patch_size * 2 ** i,
                 module="parallel_blocks" if i > 0 and parallel_depth > 0 else f"serial_blocks{i + 1}")
            for i in range(4)]
        if return_interm_layers:
            self.norm2 = self.norm3 = self.norm4 = None
            self.aggregate = None
        else:
            self._build_head(norm_layer, drop_rate)
        self._init_weights()

    def _build_head(self, norm_layer, drop_rate):
        """The final norms, the aggregation of scales 2 to 4 (CoaT only), dropout and the classifier."""
        embed_dims = self.embed_dims
        if self.parallel_blocks is not None:
            self.norm2 = norm_layer(embed_dims[1])
            self.norm3 = norm_layer(embed_dims[2])
        else:
            self.norm2 = self.norm3 = None
        self.norm4 = norm_layer(embed_dims[3])
        if self.parallel_blocks is not None:
            self.aggregate = nn.Conv1d(in_channels=3, out_channels=1, kernel_size=1)
        else:
            self.aggregate = None
        self.head_drop = nn.Dropout(drop_rate)
        self.head = nn.Linear(self.num_features, self.num_classes) if self.num_classes > 0 else nn.Identity()

    def _init_weights(self):
        """timm's init: class tokens truncated normal (std 0.02), then linear weights truncated normal and their
        biases zero (LayerNorms keep their ones and zeros, convolutions PyTorch's default)."""
        for i in range(4):
            trunc_normal_(getattr(self, f"cls_token{i + 1}"), std=0.02)
        init_linear_layers(self)

    def _serial_scales(self, x, count=4):
        """The first ``count`` scales (fewer where pruned) on an image: each scale's tokens after its serial blocks
        (class token first) and its grid (H, W)."""
        scales, sizes = [], []
        for i in range(count):
            patch_embed = getattr(self, f"patch_embed{i + 1}")
            if patch_embed is None:
                break
            if i > 0:
                x = _tokens_to_map(x, sizes[-1])
            x = patch_embed(x)
            size = patch_embed.grid_size
            x = _with_cls_token(x, getattr(self, f"cls_token{i + 1}"))
            for block in getattr(self, f"serial_blocks{i + 1}"):
                x = block(x, size)
            scales.append(x)
            sizes.append(size)
        return scales, sizes

    def _parallel_scales(self, scales, sizes):
        """The four scales' tokens after the parallel blocks (each after scales 2 to 4's position encodings)."""
        x1, x2, x3, x4 = scales
        for block in self.parallel_blocks:
            x2 = self.cpe2(x2, sizes[1])
            x3 = self.cpe3(x3, sizes[2])
            x4 = self.cpe4(x4, sizes[3])
            x1, x2, x3, x4 = block(x1, x2, x3, x4, sizes)
        return [x1, x2, x3, x4]

    def _final_norms(self):
        """Each scale's final norm (None where it has none)."""
        return [None, self.norm2, self.norm3, self.norm4]

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The (N, C, H, W) maps (class tokens dropped) of the scales picked by ``indices`` (None: all, n: the last
        n, or a list), taken after the parallel blocks for scales 2 to 4 of CoaT, with the scale's final norm when
        ``norm``; and (unless ``intermediates_only``) what ``forward_features`` gives, or the last scale's tokens
        where fewer than four ran. ``stop_early`` stops after the last scale picked, where the parallel blocks do
        not need the later ones."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = take_indices(4, indices)
        last = max(take)
        count = last + 1 if stop_early and (self.parallel_blocks is None or last == 0) else 4
        scales, sizes = self._serial_scales(x, count)
        run_parallel = self.parallel_blocks is not None and len(scales) == 4
        if run_parallel:
            scales = self._parallel_scales(scales, sizes)
        final_norms = self._final_norms()
        intermediates = []
        for i, (tokens, size) in enumerate(zip(scales, sizes)):
            if i in take:
                if norm and final_norms[i] is not None:
                    tokens = final_norms[i](tokens)
                intermediates.append(_tokens_to_map(tokens, size))
        if intermediates_only:
            return intermediates
        if len(scales) < 4:
            return scales[-1], intermediates
        scales = [tokens if final_norm is None else final_norm(tokens)
                  for final_norm, tokens in zip(final_norms, scales)]
        return (scales[1:] if run_parallel else scales[3]), intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Keep what the scales picked by ``indices`` need, as timm's: without parallel blocks (or when only scale 1
        is picked, which drops them) the later scales go and, if any go, the final norms (replaced by identities)
        and the head, the features then ending at the last scale kept; ``prune_norm`` and ``prune_head`` drop the
        final norms and the head (the aggregation and classifier) anyway. Returns the absolute indices."""
        take = take_indices(4, indices)
        last = max(take)
        if self.parallel_blocks is None or last == 0:
            for i in range(last + 2, 5):
                for name in ("patch_embed", "cls_token", "cpe", "crpe", "serial_blocks"):
                    setattr(self, f"{name}{i}", None)
            self.parallel_blocks = None
            prune_norm = prune_norm or last < 3
        prune_end = self.parallel_blocks is None and last < 3
        if prune_norm:
            for name in ("norm2", "norm3", "norm4"):
                if getattr(self, name) is not None:
                    setattr(self, name, nn.Identity())
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.aggregate = None
            self.reset_classifier(0)
        return take

    def forward_features(self, x):
        """CoaT-Lite: the last scale's normalised tokens (N, 1 + H / 32 * W / 32, C); CoaT: a list of scales 2 to
        4's normalised tokens; with ``return_interm_layers`` the dict of maps ``out_features`` names; where later
        scales were pruned, the last scale's tokens."""
        scales, sizes = self._serial_scales(x)
        if len(scales) < 4:
            return scales[-1]
        if self.parallel_blocks is not None:
            scales = self._parallel_scales(scales, sizes)
        if self.return_interm_layers:
            names = [f"x{i + 1}_nocls" for i in range(4)]
            return {name: _tokens_to_map(tokens, size) for name, tokens, size in zip(names, scales, sizes)
                    if name in self.out_features}
        if self.parallel_blocks is None:
            return self.norm4(scales[3])
        return [self.norm2(scales[1]), self.norm3(scales[2]), self.norm4(scales[3])]

    def forward_head(self, x, pre_logits=False):
        """Each scale's class token ('token') or image tokens' mean ('avg'), the three scales of CoaT mixed by
        ``aggregate``; dropout and, unless ``pre_logits``, the classifier."""
        if isinstance(x, list):
            if self.aggregate is None:
                raise RuntimeError("the aggregation of the scales was removed (return_interm_layers or a pruned "
                                   "head): a list of scales cannot be pooled")
            if self.global_pool == "avg":
                pooled = torch.cat([tokens[:, 1:].mean(dim=1, keepdim=True) for tokens in x], dim=1)
            else:
                pooled = torch.stack([tokens[:, 0] for tokens in x], dim=1)
            x = self.aggregate(pooled).squeeze(dim=1)
        else:
            x = x[:, 1:].mean(dim=1) if self.global_pool == "avg" else x[:, 0]
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        if self.return_interm_layers:
            return self.forward_features(x)
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


def _create_coat(variant, pretrained, progress, kwargs, **model_args):
    """A CoaT entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``;
    ``features_only`` gives the four scales' (N, C, H, W) maps unless ``out_indices`` says otherwise (timm's getter:
    the model kept under ``model.``, pruned after the last scale asked for)."""
    config = {**model_args, **kwargs}
    if config.get("features_only") and config.get("out_indices") is None:
        config["out_indices"] = 4
    return build_model(CoaT, variant, pretrained, progress=progress, **config)


@register_model
def coat_tiny(pretrained=False, progress=True, **kwargs):
    """CoaT-Tiny: width 152 at every scale, 2 serial blocks a scale, 6 parallel blocks."""
    return _create_coat("coat_tiny", pretrained, progress, kwargs, patch_size=4, embed_dims=[152, 152, 152, 152],
                        serial_depths=[2, 2, 2, 2], parallel_depth=6)


@register_model
def coat_mini(pretrained=False, progress=True, **kwargs):
    """CoaT-Mini: widths 152, 216, 216, 216, 2 serial blocks a scale, 6 parallel blocks."""
    return _create_coat("coat_mini", pretrained, progress, kwargs, patch_size=4, embed_dims=[152, 216, 216, 216],
                        serial_depths=[2, 2, 2, 2], parallel_depth=6)


@register_model
def coat_small(pretrained=False, progress=True, **kwargs):
    """CoaT-Small: widths 152, 320, 320, 320, 2 serial blocks a scale, 6 parallel blocks."""
    return _create_coat("coat_small", pretrained, progress, kwargs, patch_size=4, embed_dims=[152, 320, 320, 320],
                        serial_depths=[2, 2, 2, 2], parallel_depth=6)


@register_model
def coat_lite_tiny(pretrained=False, progress=True, **kwargs):
    """CoaT-Lite-Tiny: widths 64, 128, 256, 320, 2 serial blocks a scale, MLP ratios 8, 8, 4, 4."""
    return _create_coat("coat_lite_tiny", pretrained, progress, kwargs, patch_size=4, embed_dims=[64, 128, 256, 320],
                        serial_depths=[2, 2, 2, 2], mlp_ratios=[8, 8, 4, 4])


@register_model
def coat_lite_mini(pretrained=False, progress=True, **kwargs):
    """CoaT-Lite-Mini: widths 64, 128, 320, 512, 2 serial blocks a scale, MLP ratios 8, 8, 4, 4."""
    return _create_coat("coat_lite_mini", pretrained, progress, kwargs, patch_size=4, embed_dims=[64, 128, 320, 512],
                        serial_depths=[2, 2, 2, 2], mlp_ratios=[8, 8, 4, 4])


@register_model
def coat_lite_small(pretrained=False, progress=True, **kwargs):
    """CoaT-Lite-Small: widths 64, 128, 320, 512, serial blocks 3, 4, 6, 3, MLP ratios 8, 8, 4, 4."""
    return _create_coat("coat_lite_small", pretrained, progress, kwargs, patch_size=4,
                        embed_dims=[64, 128, 320, 512], serial_depths=[3, 4, 6, 3], mlp_ratios=[8, 8, 4, 4])


@register_model
def coat_lite_medium(pretrained=False, progress=True, **kwargs):
    """CoaT-Lite-Medium: widths 128, 256, 320, 512, serial blocks 3, 6, 10, 8."""
    return _create_coat("coat_lite_medium", pretrained, progress, kwargs, patch_size=4,
                        embed_dims=[128, 256, 320, 512], serial_depths=[3, 6, 10, 8])


@register_model
def coat_lite_medium_384(pretrained=False, progress=True, **kwargs):
    """CoaT-Lite-Medium at 384 pixels."""
    return _create_coat("coat_lite_medium_384", pretrained, progress, kwargs, img_size=384, patch_size=4,
                        embed_dims=[128, 256, 320, 512], serial_depths=[3, 6, 10, 8])
