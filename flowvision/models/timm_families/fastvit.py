"""FastViT (Vasu, Gabriel, Zhu, Tuzel and Ranjan 2023, "FastViT: A Fast Hybrid Vision Transformer using Structural
Reparameterization"): fastvit_t8, fastvit_t12, fastvit_s12, fastvit_sa12, fastvit_sa24, fastvit_sa36 and
fastvit_ma36; and the MobileCLIP image towers built on it (Vasu, Pouransari, Faghri, Vemulapalli and Tuzel 2024,
"MobileCLIP: Fast Image-Text Models through Multi-Modal Reinforced Training"; Faghri et al. 2025, "MobileCLIP2:
Improving Multi-Modal Reinforced Training"): fastvit_mci0, fastvit_mci1, fastvit_mci2, fastvit_mci3 and
fastvit_mci4.

A hybrid of convolutions and attention built to be re-parameterised for inference. The stem is three MobileOne
blocks (4x smaller map); four stages follow, each but the first opening with a patch embedding (a stride-2 7x7
depthwise-grouped convolution with a parallel 3x3 branch, then a 1x1 MobileOne block). Early stages mix tokens with
RepMixer (x + scale * (depthwise conv(x) - BatchNorm(x))), the last stage of the ``sa``/``ma`` variants with
multi-head self-attention after a conditional position encoding (x + depthwise 7x7 conv(x)); every block ends in a
convolutional feed-forward network (a 7x7 depthwise ConvNorm, then a 1x1 MLP) as a layer-scaled residual. A
MobileOne block with squeeze-and-excitation doubles the width before the classifier head. The MCi towers activate
the patch embeddings' large-kernel convolutions (MCi0-2: squeeze-and-excitation in the last two; MCi3/4: a fifth,
attention stage, LayerNorm before attention and a stem without 1x1 branches); their head projects to the CLIP
embedding.

Every multi-branch layer (MobileOne blocks, the large-kernel patch convolution, RepMixer, the position encoding)
folds into one biased convolution for inference: ``reparameterize()`` on the layer, or ``reparameterize_model`` on
the whole model, gives the same eval-mode outputs, as timm's. ``inference_mode=True`` builds that form directly.
Model names, module names, ``state_dict`` keys and initialisation follow timm's ``fastvit`` module, so its
checkpoints (training and inference forms) load directly.
"""
import copy
from functools import partial

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, intermediate_stages, run_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._attention import SEModule
from ._conv import create_conv2d, num_groups
from ._layers import ClassifierHead, ClassifierHeadApi, ConvNormAct, drop_path_module, init_linear_layers, trunc_normal_
from ._norm import LayerNorm2d
from ._reparam import biased_conv_like, fold_batchnorm, identity_kernel, pad_kernel, sum_branches

__all__ = []


def _biased_conv(in_chs, out_chs, kernel_size, stride, groups, kernel, bias):
    """The fused convolution of an inference form (padded by half the kernel), holding ``kernel`` and ``bias``."""
    conv = create_conv2d(in_chs, out_chs, kernel_size, stride=stride, groups=groups, bias=True).to(kernel.dtype)
    with torch.no_grad():
        conv.weight.copy_(kernel)
        conv.bias.copy_(bias)
    return conv


def _freeze_all_but_fused(module):
    """Stop the gradients of every parameter of ``module`` left beside its fused ``reparam_conv`` (as timm detaches
    them): the inference form trains nothing else."""
    for name, parameter in module.named_parameters():
        if "reparam_conv" not in name:
            parameter.requires_grad_(False)


class MobileOneBlock(nn.Module):
    """MobileOne's block (Vasu et al. 2023, "MobileOne: An Improved One millisecond Mobile Backbone") in its
    training form: ``num_conv_branches`` parallel kxk convolutions (``conv_kxk``), a 1x1 "scale" convolution
    (``conv_scale``, for k > 1 with ``use_scale_branch``) and, where the shape is kept, a BatchNorm of the input
    (``identity``), each convolution with its own BatchNorm; their sum goes through squeeze-and-excitation (``se``,
    with ``use_se``) and the activation (``act``, with ``use_act``). Convolutions are grouped by ``group_size``
    channels of the input (1: depthwise) and carry the stride.

    ``reparameterize`` folds the branches into one biased convolution (``reparam_conv``), the inference form, with
    the same outputs in eval mode; ``inference_mode=True`` builds that form directly.
    """

    def __init__(self, in_chs, out_chs, kernel_size, stride=1, group_size=0, inference_mode=False, use_se=False,
                 use_act=True, use_scale_branch=True, num_conv_branches=1, act_layer=nn.GELU):
        super().__init__()
        self.groups = num_groups(group_size, in_chs)
        self.stride = stride
        self.kernel_size = kernel_size
        self.in_chs = in_chs
        self.out_chs = out_chs
        self.num_conv_branches = num_conv_branches
        self.se = SEModule(out_chs, rd_divisor=1) if use_se else nn.Identity()
        if inference_mode:
            self.reparam_conv = create_conv2d(in_chs, out_chs, kernel_size, stride=stride, groups=self.groups,
                                              bias=True)
        else:
            self.reparam_conv = None
            self.identity = nn.BatchNorm2d(in_chs) if out_chs == in_chs and stride == 1 else None
            if num_conv_branches > 0:
                self.conv_kxk = nn.ModuleList([
                    ConvNormAct(in_chs, out_chs, kernel_size, stride=stride, groups=self.groups, apply_act=False)
                    for _ in range(num_conv_branches)
                ])
            else:
                self.conv_kxk = None
            if kernel_size > 1 and use_scale_branch:
                self.conv_scale = ConvNormAct(in_chs, out_chs, 1, stride=stride, groups=self.groups, apply_act=False)
            else:
                self.conv_scale = None
        self.act = act_layer() if use_act else nn.Identity()

    def forward(self, x):
        if self.reparam_conv is not None:
            return self.act(self.se(self.reparam_conv(x)))
        out = 0
        if self.conv_scale is not None:
            out = out + self.conv_scale(x)
        if self.identity is not None:
            out = out + self.identity(x)
        if self.conv_kxk is not None:
            for branch in self.conv_kxk:
                out = out + branch(x)
        return self.act(self.se(out))

    def _fused_kernel_bias(self):
        """The (kernel, bias) of the branches summed, each with its BatchNorm folded in."""
        branches = []
        if self.conv_kxk is not None:
            branches.extend(fold_batchnorm(branch.conv.weight, branch.bn) for branch in self.conv_kxk)
        if self.conv_scale is not None:
            kernel, bias = fold_batchnorm(self.conv_scale.conv.weight, self.conv_scale.bn)
            branches.append((pad_kernel(kernel, self.kernel_size), bias))
        if self.identity is not None:
            kernel = identity_kernel(self.in_chs, self.in_chs // self.groups, self.kernel_size,
                                     self.identity.weight.dtype)
            branches.append(fold_batchnorm(kernel, self.identity))
        return sum_branches(branches)

    def reparameterize(self):
        """Switch to the inference form: the branches folded (with their BatchNorms' running statistics) into one
        biased convolution ``reparam_conv`` and removed; the parameters left (squeeze-and-excitation's) stop
        taking gradients, as timm's. Does nothing in the inference form."""
        if self.reparam_conv is not None:
            return
        with torch.no_grad():
            kernel, bias = self._fused_kernel_bias()
        self.reparam_conv = _biased_conv(self.in_chs, self.out_chs, self.kernel_size, self.stride, self.groups,
                                         kernel, bias)
        _freeze_all_but_fused(self)
        del self.conv_kxk
        del self.conv_scale
        del self.identity


class ReparamLargeKernelConv(nn.Module):
    """RepLKNet's large-kernel convolution (Ding et al. 2022, "Scaling Up Your Kernels to 31x31") in its training
    form: a ``kernel_size`` convolution (``large_conv``) and, where ``small_kernel`` is given, a parallel
    ``small_kernel`` one (``small_conv``), each with its own BatchNorm, summed; then squeeze-and-excitation to a
    quarter of the channels (``se``, with ``use_se``) and ``act_layer`` (``act``; an identity without one, as in
    the released FastViT weights).

    ``reparameterize`` folds the two into one biased convolution (``reparam_conv``, the small kernel padded to the
    large one); ``inference_mode=True`` builds that form directly.
    """

    def __init__(self, in_chs, out_chs, kernel_size, stride, group_size, small_kernel=None, use_se=False,
                 act_layer=None, inference_mode=False):
        super().__init__()
        self.stride = stride
        self.groups = num_groups(group_size, in_chs)
        self.in_chs = in_chs
        self.out_chs = out_chs
        self.kernel_size = kernel_size
        self.small_kernel = small_kernel
        if small_kernel is not None and small_kernel > kernel_size:
            raise ValueError(f"small_kernel ({small_kernel}) cannot be larger than kernel_size ({kernel_size})")
        if inference_mode:
            self.reparam_conv = create_conv2d(in_chs, out_chs, kernel_size, stride=stride, groups=self.groups,
                                              bias=True)
        else:
            self.reparam_conv = None
            self.large_conv = ConvNormAct(in_chs, out_chs, kernel_size, stride=stride, groups=self.groups,
                                          apply_act=False)
            if small_kernel is not None:
                self.small_conv = ConvNormAct(in_chs, out_chs, small_kernel, stride=stride, groups=self.groups,
                                              apply_act=False)
            else:
                self.small_conv = None
        self.se = SEModule(out_chs, rd_ratio=0.25) if use_se else nn.Identity()
        self.act = act_layer() if act_layer is not None else nn.Identity()

    def forward(self, x):
        if self.reparam_conv is not None:
            out = self.reparam_conv(x)
        else:
            out = self.large_conv(x)
            if self.small_conv is not None:
                out = out + self.small_conv(x)
        out = self.se(out)
        out = self.act(out)
        return out

    def get_kernel_bias(self):
        """The (kernel, bias) of the two convolutions summed, BatchNorms folded in."""
        kernel, bias = fold_batchnorm(self.large_conv.conv.weight, self.large_conv.bn)
        if self.small_conv is not None:
            small_kernel, small_bias = fold_batchnorm(self.small_conv.conv.weight, self.small_conv.bn)
            bias = bias + small_bias
            kernel = kernel + pad_kernel(small_kernel, self.kernel_size)
        return kernel, bias

    def reparameterize(self):
        """Switch to the inference form: the convolutions folded into ``reparam_conv`` and removed. Does nothing
        in the inference form."""
        if self.reparam_conv is not None:
            return
        with torch.no_grad():
            kernel, bias = self.get_kernel_bias()
        self.reparam_conv = _biased_conv(self.in_chs, self.out_chs, self.kernel_size, self.stride, self.groups,
                                         kernel, bias)
        del self.large_conv
        del self.small_conv


def convolutional_stem(in_chs, out_chs, act_layer=nn.GELU, inference_mode=False, use_scale_branch=True):
    """FastViT's stem: a stride-2 3x3 MobileOne block to ``out_chs``, a stride-2 3x3 depthwise one and a 1x1 one
    (a 4x smaller map)."""
    return nn.Sequential(
        MobileOneBlock(in_chs, out_chs, 3, stride=2, act_layer=act_layer, inference_mode=inference_mode,
                       use_scale_branch=use_scale_branch),
        MobileOneBlock(out_chs, out_chs, 3, stride=2, group_size=1, act_layer=act_layer,
                       inference_mode=inference_mode, use_scale_branch=use_scale_branch),
        MobileOneBlock(out_chs, out_chs, 1, stride=1, act_layer=act_layer, inference_mode=inference_mode,
                       use_scale_branch=use_scale_branch),
    )


class Attention(nn.Module):
    """Multi-head self-attention over the pixels of an (N, C, H, W) map: heads of ``head_dim`` channels
    (``dim // head_dim`` of them), a fused query/key/value projection (``qkv``, biased with ``qkv_bias``), scaled
    dot-product attention (``attn_drop`` drops its weights in training) and a biased output projection (``proj``,
    then ``proj_drop``); the map keeps its shape."""

    def __init__(self, dim, head_dim=32, qkv_bias=False, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        if dim % head_dim:
            raise ValueError(f"dim ({dim}) should be divisible by head_dim ({head_dim})")
        self.head_dim = head_dim
        self.num_heads = dim // head_dim
        self.scale = head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, channels, height, width = x.shape
        tokens = height * width
        x = x.flatten(2).transpose(-2, -1)
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, tokens, channels)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x.transpose(-2, -1).reshape(batch, channels, height, width)


class PatchEmbed(nn.Module):
    """The downsampling that opens a stage (``proj``): a ``patch_size`` convolution with ``stride`` and a
    parallel 3x3 branch (``ReparamLargeKernelConv``, depthwise-grouped by one input channel; squeeze-and-excitation
    with ``use_se``, the activation only with ``lkc_use_act``) to ``embed_dim`` channels, then a 1x1 MobileOne
    block."""

    def __init__(self, patch_size, stride, in_chs, embed_dim, act_layer=nn.GELU, lkc_use_act=False, use_se=False,
                 inference_mode=False):
        super().__init__()
        self.proj = nn.Sequential(
            ReparamLargeKernelConv(in_chs, embed_dim, patch_size, stride, group_size=1, small_kernel=3,
                                   use_se=use_se, act_layer=act_layer if lkc_use_act else None,
                                   inference_mode=inference_mode),
            MobileOneBlock(embed_dim, embed_dim, 1, stride=1, use_se=False, act_layer=act_layer,
                           inference_mode=inference_mode),
        )

    def forward(self, x):
        return self.proj(x)


class LayerScale2d(nn.Module):
    """A learned per-channel scale of an (N, C, H, W) map (``gamma``, shaped (C, 1, 1) as in timm's checkpoints),
    starting at ``init_values``."""

    def __init__(self, dim, init_values=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(init_values * torch.ones(dim, 1, 1))

    def forward(self, x):
        return x * self.gamma


class RepMixer(nn.Module):
    """FastViT's re-parameterisable token mixer: x + layer scale * (mixer(x) - norm(x)), where ``mixer`` is a
    depthwise ``kernel_size`` MobileOne block (kxk, 1x1 scale and identity branches) and ``norm`` one with the
    identity branch alone (a BatchNorm), both without activation; ``layer_scale`` is an identity where
    ``layer_scale_init_value`` is None.

    Every term is a depthwise convolution of x, so ``reparameterize`` folds the whole mixer, the skip connection
    included, into one biased depthwise convolution (``reparam_conv``); ``inference_mode=True`` builds that form
    directly.
    """

    def __init__(self, dim, kernel_size=3, layer_scale_init_value=1e-5, inference_mode=False):
        super().__init__()
        self.dim = dim
        self.kernel_size = kernel_size
        if inference_mode:
            self.reparam_conv = nn.Conv2d(dim, dim, kernel_size, stride=1, padding=kernel_size // 2, groups=dim,
                                          bias=True)
        else:
            self.reparam_conv = None
            self.norm = MobileOneBlock(dim, dim, kernel_size, group_size=1, use_act=False, use_scale_branch=False,
                                       num_conv_branches=0)
            self.mixer = MobileOneBlock(dim, dim, kernel_size, group_size=1, use_act=False)
            if layer_scale_init_value is not None:
                self.layer_scale = LayerScale2d(dim, layer_scale_init_value)
            else:
                self.layer_scale = nn.Identity()

    def forward(self, x):
        if self.reparam_conv is not None:
            return self.reparam_conv(x)
        return x + self.layer_scale(self.mixer(x) - self.norm(x))

    def reparameterize(self):
        """Switch to the inference form: mixer, norm, layer scale and skip connection folded into
        ``reparam_conv``, the rest removed. Does nothing in the inference form."""
        if self.reparam_conv is not None:
            return
        self.mixer.reparameterize()
        self.norm.reparameterize()
        mixer, norm = self.mixer.reparam_conv, self.norm.reparam_conv
        with torch.no_grad():
            identity = identity_kernel(self.dim, 1, self.kernel_size, mixer.weight.dtype)
            if isinstance(self.layer_scale, LayerScale2d):
                gamma = self.layer_scale.gamma
                kernel = identity + gamma.unsqueeze(-1) * (mixer.weight - norm.weight)
                bias = gamma.squeeze() * (mixer.bias - norm.bias)
            else:
                kernel = identity + mixer.weight - norm.weight
                bias = mixer.bias - norm.bias
        self.reparam_conv = _biased_conv(self.dim, self.dim, self.kernel_size, 1, self.dim, kernel, bias)
        del self.mixer
        del self.norm
        del self.layer_scale


class ConvMlp(nn.Module):
    """FastViT's convolutional feed-forward network: a 7x7 depthwise convolution with BatchNorm (``conv``), a 1x1
    widening to ``hidden_channels`` (``fc1``), the activation, a 1x1 projection to ``out_chs`` (``fc2``), with
    dropout ``drop`` after the activation and after ``fc2``. Its convolutions start truncated-normal (std 0.02),
    biases at zero."""

    def __init__(self, in_chs, hidden_channels=None, out_chs=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_chs = out_chs or in_chs
        hidden_channels = hidden_channels or in_chs
        self.conv = ConvNormAct(in_chs, out_chs, 7, groups=in_chs, apply_act=False)
        self.fc1 = nn.Conv2d(in_chs, hidden_channels, kernel_size=1)
        self.act = act_layer()
        self.fc2 = nn.Conv2d(hidden_channels, out_chs, kernel_size=1)
        self.drop = nn.Dropout(drop)
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def forward(self, x):
        x = self.conv(x)
        x = self.fc1(x)
        x = self.act(x)
        x = self.drop(x)
        x = self.fc2(x)
        x = self.drop(x)
        return x


class RepConditionalPosEnc(nn.Module):
    """Conditional position encoding (Chu et al. 2021, "Conditional Positional Encodings for Vision
    Transformers"): x + a biased depthwise ``spatial_shape`` convolution of x (``pos_enc``).

    ``reparameterize`` folds the skip connection into the kernel (one biased convolution, ``reparam_conv``);
    ``inference_mode=True`` builds that form directly.
    """

    def __init__(self, dim, dim_out=None, spatial_shape=(7, 7), inference_mode=False):
        super().__init__()
        if isinstance(spatial_shape, int):
            spatial_shape = (spatial_shape, spatial_shape)
        if not isinstance(spatial_shape, tuple) or len(spatial_shape) != 2:
            raise ValueError(f"spatial_shape must be an int or a pair, got {spatial_shape!r}")
        dim_out = dim_out or dim
        if dim_out != dim:
            raise ValueError(f"the position encoding is added to its input: dim_out ({dim_out}) must be dim ({dim})")
        self.spatial_shape = spatial_shape
        self.dim = dim
        self.dim_out = dim_out
        self.groups = dim
        padding = spatial_shape[0] // 2
        if inference_mode:
            self.reparam_conv = nn.Conv2d(dim, dim_out, spatial_shape, stride=1, padding=padding, groups=dim,
                                          bias=True)
        else:
            self.reparam_conv = None
            self.pos_enc = nn.Conv2d(dim, dim_out, spatial_shape, 1, padding, groups=dim, bias=True)

    def forward(self, x):
        if self.reparam_conv is not None:
            return self.reparam_conv(x)
        return self.pos_enc(x) + x

    def reparameterize(self):
        """Switch to the inference form: the skip connection added to the kernel's centre, ``pos_enc`` replaced by
        ``reparam_conv``. Does nothing in the inference form."""
        if self.reparam_conv is not None:
            return
        template = self.pos_enc
        with torch.no_grad():
            kernel = identity_kernel(self.dim, self.dim // self.groups, self.spatial_shape, template.weight.dtype)
            kernel = kernel + template.weight
        self.reparam_conv = biased_conv_like(template, kernel, template.bias)
        del self.pos_enc


class RepMixerBlock(nn.Module):
    """A MetaFormer block with RepMixer as token mixer (``token_mixer``, its own residual), then the convolutional
    feed-forward network (``mlp``, expanding by ``mlp_ratio``) as a layer-scaled (``layer_scale``), stochastic-depth
    (``drop_path``) residual branch."""

    def __init__(self, dim, kernel_size=3, mlp_ratio=4.0, act_layer=nn.GELU, proj_drop=0.0, drop_path=0.0,
                 layer_scale_init_value=1e-5, inference_mode=False):
        super().__init__()
        self.token_mixer = RepMixer(dim, kernel_size=kernel_size, layer_scale_init_value=layer_scale_init_value,
                                    inference_mode=inference_mode)
        self.mlp = ConvMlp(dim, hidden_channels=int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        if layer_scale_init_value is not None:
            self.layer_scale = LayerScale2d(dim, layer_scale_init_value)
        else:
            self.layer_scale = nn.Identity()
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        x = self.token_mixer(x)
        x = x + self.drop_path(self.layer_scale(self.mlp(x)))
        return x


class AttentionBlock(nn.Module):
    """A MetaFormer block with self-attention as token mixer: norm (``norm``, BatchNorm by default) and
    ``Attention`` (``token_mixer``), then the convolutional feed-forward network (``mlp``), each a layer-scaled
    (``layer_scale_1``, ``layer_scale_2``), stochastic-depth (``drop_path1``, ``drop_path2``) residual branch."""

    def __init__(self, dim, mlp_ratio=4.0, act_layer=nn.GELU, norm_layer=nn.BatchNorm2d, proj_drop=0.0,
                 drop_path=0.0, layer_scale_init_value=1e-5):
        super().__init__()
        self.norm = norm_layer(dim)
        self.token_mixer = Attention(dim)
        if layer_scale_init_value is not None:
            self.layer_scale_1 = LayerScale2d(dim, layer_scale_init_value)
        else:
            self.layer_scale_1 = nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.mlp = ConvMlp(dim, hidden_channels=int(dim * mlp_ratio), act_layer=act_layer, drop=proj_drop)
        if layer_scale_init_value is not None:
            self.layer_scale_2 = LayerScale2d(dim, layer_scale_init_value)
        else:
            self.layer_scale_2 = nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        x = x + self.drop_path1(self.layer_scale_1(self.token_mixer(self.norm(x))))
        x = x + self.drop_path2(self.layer_scale_2(self.mlp(x)))
        return x


class FastVitStage(nn.Module):
    """A stage: a ``PatchEmbed`` from ``dim`` to ``dim_out`` channels where ``downsample`` (else an identity, the
    widths equal), a position encoding (``pos_emb``, built by ``pos_emb_layer`` where given) and ``depth`` blocks
    (``blocks``) of ``token_mixer_type`` 'repmixer' or 'attention', with stochastic depth ``drop_path_rate`` (one
    rate per block, or one for all)."""

    def __init__(self, dim, dim_out, depth, token_mixer_type, downsample=True, se_downsample=False,
                 down_patch_size=7, down_stride=2, pos_emb_layer=None, kernel_size=3, mlp_ratio=4.0,
                 act_layer=nn.GELU, norm_layer=nn.BatchNorm2d, proj_drop_rate=0.0, drop_path_rate=0.0,
                 layer_scale_init_value=1e-5, lkc_use_act=False, inference_mode=False):
        super().__init__()
        if token_mixer_type not in ("repmixer", "attention"):
            raise ValueError(f"token mixer type {token_mixer_type!r} not supported: 'repmixer' or 'attention'")
        if downsample:
            self.downsample = PatchEmbed(down_patch_size, down_stride, dim, dim_out, act_layer=act_layer,
                                         lkc_use_act=lkc_use_act, use_se=se_downsample,
                                         inference_mode=inference_mode)
        elif dim != dim_out:
            raise ValueError(f"a stage without downsampling keeps its width: got {dim} to {dim_out} channels")
        else:
            self.downsample = nn.Identity()
        if pos_emb_layer is not None:
            self.pos_emb = pos_emb_layer(dim_out, inference_mode=inference_mode)
        else:
            self.pos_emb = nn.Identity()
        if not isinstance(drop_path_rate, (list, tuple)):
            drop_path_rate = [drop_path_rate] * depth
        blocks = []
        for rate in drop_path_rate[:depth]:
            if token_mixer_type == "repmixer":
                blocks.append(RepMixerBlock(dim_out, kernel_size=kernel_size, mlp_ratio=mlp_ratio,
                                            act_layer=act_layer, proj_drop=proj_drop_rate, drop_path=rate,
                                            layer_scale_init_value=layer_scale_init_value,
                                            inference_mode=inference_mode))
            else:
                blocks.append(AttentionBlock(dim_out, mlp_ratio=mlp_ratio, act_layer=act_layer,
                                             norm_layer=norm_layer, proj_drop=proj_drop_rate, drop_path=rate,
                                             layer_scale_init_value=layer_scale_init_value))
        self.blocks = nn.Sequential(*blocks)

    def forward(self, x):
        x = self.downsample(x)
        x = self.pos_emb(x)
        x = self.blocks(x)
        return x


class FastVit(ClassifierHeadApi, nn.Module):
    """FastViT: the convolutional stem (``stem``), one ``FastVitStage`` per entry of ``layers`` (``stages``; a
    stage opens with a patch embedding where ``downsamples`` says or its width changes), a MobileOne block with
    squeeze-and-excitation widening ``cls_ratio`` times (``final_conv``) and the classifier head (``head``:
    pooling ``global_pool``, dropout ``drop_rate``, linear).

    ``token_mixers``, ``mlp_ratios``, ``pos_embs`` (a position-encoding class, or None) and ``se_downsamples`` are
    per stage; ``repmixer_kernel_size`` is RepMixer's, ``down_patch_size`` and ``down_stride`` the patch
    embeddings'. ``drop_path_rate`` is the stochastic depth of the last block, decreasing linearly to 0 at the
    first; ``proj_drop_rate`` the feed-forward networks' dropout. ``layer_scale_init_value`` None removes the layer
    scales. ``lkc_use_act`` activates the patch embeddings' large-kernel convolutions; ``stem_use_scale_branch``
    False drops the stem's 1x1 branches. ``inference_mode`` builds the re-parameterised form.

    With ``fork_feat`` (dense prediction) there is no final convolution nor head: a norm per stage output
    (``norm0``...) and ``forward`` returns the four normalised maps.
    """

    feature_wrapper = FlatFeatureListNet

    def __init__(self, in_chans=3, layers=(2, 2, 6, 2), token_mixers=("repmixer",) * 4, embed_dims=(64, 128, 256, 512),
                 mlp_ratios=(4,) * 4, downsamples=(False, True, True, True), se_downsamples=(False,) * 4,
                 repmixer_kernel_size=3, num_classes=1000, pos_embs=(None,) * 4, down_patch_size=7, down_stride=2,
                 drop_rate=0.0, proj_drop_rate=0.0, drop_path_rate=0.0, layer_scale_init_value=1e-5,
                 lkc_use_act=False, stem_use_scale_branch=True, fork_feat=False, cls_ratio=2.0, global_pool="avg",
                 norm_layer=nn.BatchNorm2d, act_layer=nn.GELU, inference_mode=False):
        super().__init__()
        self.in_chans = in_chans
        self.num_classes = 0 if fork_feat else num_classes
        self.fork_feat = fork_feat
        self.global_pool = global_pool
        self.feature_info = []
        self.stem = convolutional_stem(in_chans, embed_dims[0], act_layer, inference_mode,
                                       use_scale_branch=stem_use_scale_branch)
        rates = [r.tolist() for r in torch.linspace(0, drop_path_rate, sum(layers)).split(list(layers))]
        prev_dim = embed_dims[0]
        scale = 1
        stages = []
        for i, depth in enumerate(layers):
            downsample = downsamples[i] or prev_dim != embed_dims[i]
            stages.append(FastVitStage(
                prev_dim, embed_dims[i], depth, token_mixers[i], downsample=downsample,
                se_downsample=se_downsamples[i], down_patch_size=down_patch_size, down_stride=down_stride,
                pos_emb_layer=pos_embs[i], kernel_size=repmixer_kernel_size, mlp_ratio=mlp_ratios[i],
                act_layer=act_layer, norm_layer=norm_layer, proj_drop_rate=proj_drop_rate, drop_path_rate=rates[i],
                layer_scale_init_value=layer_scale_init_value, lkc_use_act=lkc_use_act,
                inference_mode=inference_mode))
            prev_dim = embed_dims[i]
            if downsample:
                scale *= 2
            self.feature_info.append(dict(num_chs=prev_dim, reduction=4 * scale, module=f"stages.{i}"))
        self.stages = nn.Sequential(*stages)
        self.num_stages = len(self.stages)
        self.num_features = self.head_hidden_size = prev_dim
        if fork_feat:
            self.out_indices = [0, 1, 2, 3]
            for i in self.out_indices:
                self.add_module(f"norm{i}", norm_layer(embed_dims[i]))
        else:
            self.num_features = int(embed_dims[-1] * cls_ratio)
            self.final_conv = MobileOneBlock(embed_dims[-1], self.num_features, 3, stride=1, group_size=1,
                                             inference_mode=inference_mode, use_se=True, act_layer=act_layer,
                                             num_conv_branches=1)
            self.head = ClassifierHead(self.num_features, num_classes, global_pool, drop_rate)
            self.head_hidden_size = self.head.num_features
        init_linear_layers(self)

    @property
    def default_cfg(self):
        """timm's ``first_conv`` (the stem's first MobileOne block's convolutions: its 3x3 and, where the stem has
        one, its 1x1 branch) and ``classifier``."""
        if getattr(self.stem[0], "conv_scale", None) is None:
            first_conv = "stem.0.conv_kxk.0.conv"
        else:
            first_conv = ("stem.0.conv_kxk.0.conv", "stem.0.conv_scale.conv")
        return {"first_conv": first_conv, "classifier": "head.fc"}

    def reset_classifier(self, num_classes, global_pool=None):
        """A fresh classifier for ``num_classes`` (0: the pooled features) on ``num_features`` channels, after
        another pooling ``global_pool`` if given."""
        self.head.in_features = self.num_features
        super().reset_classifier(num_classes, global_pool)

    def forward_features(self, x):
        """The map after ``final_conv`` (N, num_features, H / 32, W / 32); with ``fork_feat`` the normalised
        outputs of the stages."""
        x = self.stem(x)
        if self.fork_feat:
            outs = []
            for i, stage in enumerate(self.stages):
                x = stage(x)
                if i in self.out_indices:
                    outs.append(getattr(self, f"norm{i}")(x))
            return outs
        x = self.stages(x)
        x = self.final_conv(x)
        return x

    def forward(self, x):
        x = self.forward_features(x)
        if self.fork_feat:
            return x
        return self.forward_head(x)

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The outputs of the stages picked by ``indices`` (None: all, n: the last n, or a list) and, unless
        ``intermediates_only``, the last map (after ``final_conv`` where every stage ran); ``stop_early`` skips
        the stages after the last one picked. ``norm`` changes nothing (timm's argument)."""
        take, stages = intermediate_stages(self.stages, indices, stop_early, output_fmt)
        x = self.stem(x)
        x, intermediates = run_stages(x, stages, take)
        if intermediates_only:
            return intermediates
        if len(stages) == self.num_stages:
            x = self.final_conv(x)
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last one ``indices`` picks and, with ``prune_norm`` or ``prune_head`` or
        when stages go, the final convolution and the classifier (the features then end at the last stage kept);
        returns the absolute indices."""
        take = take_indices(len(self.stages), indices)
        last = max(take)
        if prune_norm or prune_head or last < len(self.stages) - 1:
            self.final_conv = nn.Identity()
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
            self.reset_classifier(0, "")
        self.stages = nn.Sequential(*list(self.stages)[:last + 1])
        return take


def reparameterize_model(model, inplace=False):
    """``model`` (a copy of it unless ``inplace``) switched to its inference form, as timm's function of that name
    walks the module tree: each child with ``fuse`` is replaced by ``child.fuse()``, else ``reparameterize()`` or
    ``switch_to_deploy()`` is called on it, then its own children are walked. Returns the model."""
    if not inplace:
        model = copy.deepcopy(model)
    _reparameterize_children(model)
    return model


def _reparameterize_children(module):
    """``reparameterize_model``'s walk over the children of ``module``."""
    for name, child in list(module.named_children()):
        if hasattr(child, "fuse"):
            child = child.fuse()
            setattr(module, name, child)
        elif hasattr(child, "reparameterize"):
            child.reparameterize()
        elif hasattr(child, "switch_to_deploy"):
            child.switch_to_deploy()
        _reparameterize_children(child)


def _create_fastvit(variant, pretrained, progress, **kwargs):
    """Build a registered variant; ``features_only`` gives timm's outputs of the first four stages (strides 4 to
    32) unless ``out_indices`` says otherwise, under timm's flattened names (``stages_0``...)."""
    if kwargs.get("features_only"):
        kwargs.setdefault("out_indices", (0, 1, 2, 3))
    return build_model(FastVit, variant, pretrained, progress=progress, **kwargs)


# the conditional position encoding of the sa and ma variants' attention stage
_POS_EMBS = (None, None, None, partial(RepConditionalPosEnc, spatial_shape=(7, 7)))


@register_model
def fastvit_t8(pretrained=False, progress=True, **kwargs):
    """FastViT-T8: RepMixer stages of 2, 2, 4, 2 blocks, widths 48 to 384, MLP ratio 3."""
    model_args = dict(layers=(2, 2, 4, 2), embed_dims=(48, 96, 192, 384), mlp_ratios=(3, 3, 3, 3),
                      token_mixers=("repmixer", "repmixer", "repmixer", "repmixer"))
    return _create_fastvit("fastvit_t8", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_t12(pretrained=False, progress=True, **kwargs):
    """FastViT-T12: RepMixer stages of 2, 2, 6, 2 blocks, widths 64 to 512, MLP ratio 3."""
    model_args = dict(layers=(2, 2, 6, 2), embed_dims=(64, 128, 256, 512), mlp_ratios=(3, 3, 3, 3),
                      token_mixers=("repmixer", "repmixer", "repmixer", "repmixer"))
    return _create_fastvit("fastvit_t12", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_s12(pretrained=False, progress=True, **kwargs):
    """FastViT-S12: RepMixer stages of 2, 2, 6, 2 blocks, widths 64 to 512, MLP ratio 4."""
    model_args = dict(layers=(2, 2, 6, 2), embed_dims=(64, 128, 256, 512), mlp_ratios=(4, 4, 4, 4),
                      token_mixers=("repmixer", "repmixer", "repmixer", "repmixer"))
    return _create_fastvit("fastvit_s12", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_sa12(pretrained=False, progress=True, **kwargs):
    """FastViT-SA12: stages of 2, 2, 6, 2 blocks (attention in the last), widths 64 to 512."""
    model_args = dict(layers=(2, 2, 6, 2), embed_dims=(64, 128, 256, 512), mlp_ratios=(4, 4, 4, 4),
                      pos_embs=_POS_EMBS, token_mixers=("repmixer", "repmixer", "repmixer", "attention"))
    return _create_fastvit("fastvit_sa12", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_sa24(pretrained=False, progress=True, **kwargs):
    """FastViT-SA24: stages of 4, 4, 12, 4 blocks (attention in the last), widths 64 to 512."""
    model_args = dict(layers=(4, 4, 12, 4), embed_dims=(64, 128, 256, 512), mlp_ratios=(4, 4, 4, 4),
                      pos_embs=_POS_EMBS, token_mixers=("repmixer", "repmixer", "repmixer", "attention"))
    return _create_fastvit("fastvit_sa24", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_sa36(pretrained=False, progress=True, **kwargs):
    """FastViT-SA36: stages of 6, 6, 18, 6 blocks (attention in the last), widths 64 to 512."""
    model_args = dict(layers=(6, 6, 18, 6), embed_dims=(64, 128, 256, 512), mlp_ratios=(4, 4, 4, 4),
                      pos_embs=_POS_EMBS, token_mixers=("repmixer", "repmixer", "repmixer", "attention"))
    return _create_fastvit("fastvit_sa36", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_ma36(pretrained=False, progress=True, **kwargs):
    """FastViT-MA36: stages of 6, 6, 18, 6 blocks (attention in the last), widths 76 to 608."""
    model_args = dict(layers=(6, 6, 18, 6), embed_dims=(76, 152, 304, 608), mlp_ratios=(4, 4, 4, 4),
                      pos_embs=_POS_EMBS, token_mixers=("repmixer", "repmixer", "repmixer", "attention"))
    return _create_fastvit("fastvit_ma36", pretrained, progress, **dict(model_args, **kwargs))


# the MobileCLIP towers: active large-kernel patch convolutions, attention in the last stage (MCi0-2) or the last
# two (MCi3/4, with LayerNorm before attention and a stem without 1x1 branches)
_MCI = dict(mlp_ratios=(3, 3, 3, 3), se_downsamples=(False, False, True, True), pos_embs=_POS_EMBS,
            token_mixers=("repmixer", "repmixer", "repmixer", "attention"), lkc_use_act=True)
_MCI_LARGE = dict(mlp_ratios=(4, 4, 4, 4, 4), se_downsamples=(False,) * 5, downsamples=(False, True, True, True, True),
                  pos_embs=_POS_EMBS + _POS_EMBS[-1:], token_mixers=("repmixer",) * 3 + ("attention",) * 2,
                  lkc_use_act=True, norm_layer=partial(LayerNorm2d, eps=1e-5), stem_use_scale_branch=False)


@register_model
def fastvit_mci0(pretrained=False, progress=True, **kwargs):
    """MobileCLIP-S0's image tower (MCi0): stages of 2, 6, 10, 2 blocks (attention in the last), widths 64 to 512."""
    model_args = dict(layers=(2, 6, 10, 2), embed_dims=(64, 128, 256, 512), **_MCI)
    return _create_fastvit("fastvit_mci0", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_mci1(pretrained=False, progress=True, **kwargs):
    """MobileCLIP-S1's image tower (MCi1): stages of 4, 12, 20, 4 blocks (attention in the last), widths 64 to
    512."""
    model_args = dict(layers=(4, 12, 20, 4), embed_dims=(64, 128, 256, 512), num_classes=512, **_MCI)
    return _create_fastvit("fastvit_mci1", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_mci2(pretrained=False, progress=True, **kwargs):
    """MobileCLIP-S2's image tower (MCi2): stages of 4, 12, 24, 4 blocks (attention in the last), widths 80 to
    640."""
    model_args = dict(layers=(4, 12, 24, 4), embed_dims=(80, 160, 320, 640), **_MCI)
    return _create_fastvit("fastvit_mci2", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_mci3(pretrained=False, progress=True, **kwargs):
    """MobileCLIP2-L's image tower (MCi3): five stages of 2, 12, 24, 4, 2 blocks (attention in the last two),
    widths 96 to 1536."""
    model_args = dict(layers=(2, 12, 24, 4, 2), embed_dims=(96, 192, 384, 768, 1536), **_MCI_LARGE)
    return _create_fastvit("fastvit_mci3", pretrained, progress, **dict(model_args, **kwargs))


@register_model
def fastvit_mci4(pretrained=False, progress=True, **kwargs):
    """MobileCLIP2-XL's image tower (MCi4): five stages of 2, 12, 24, 4, 4 blocks (attention in the last two),
    widths 128 to 2048."""
    model_args = dict(layers=(2, 12, 24, 4, 4), embed_dims=(128, 256, 512, 1024, 2048), **_MCI_LARGE)
    return _create_fastvit("fastvit_mci4", pretrained, progress, **dict(model_args, **kwargs))
