"""Vision Transformer (Dosovitskiy et al. 2020, "An Image is Worth 16x16 Words: Transformers for Image
Recognition at Scale"; Steiner et al. 2021, "How to train your ViT? Data, Augmentation, and Regularization in
Vision Transformers"): timm's ``vision_transformer`` models with ImageNet-1k weights, its pretrained ViT
encoders (DINOv2, SigLIP, CLIP, I-JEPA, TIPSv2, InternViT, C-RADIO, AIMv2) and its variants without published
weights (all listed below).

An image is cut into non-overlapping patches by a strided convolution; the patch tokens, a learnt class
token and learnt absolute position embeddings go through pre-norm transformer blocks (multi-head
self-attention and a GELU MLP, each on a residual branch with optional layer scale and stochastic depth),
and the class token's final state (or the patch tokens' average) is classified. This is timm's
``VisionTransformer``: model names, module names, ``state_dict`` keys, defaults and initialisation follow
timm, so timm's checkpoints load with ``strict=True`` and give timm's outputs. torchvision's ViTs, with
torchvision's keys, are ``flowvision.models.vision_transformer``.

Besides the original ViT-Ti/S/B/L, the module has timm's variants of the same model:

- CLIP image towers fine-tuned on ImageNet (Radford et al. 2021, "Learning Transferable Visual Models From
  Natural Language Supervision"): a norm before the blocks, no patch-projection bias, LayerNorm eps 1e-5;
- FlexiViT (Beyer et al. 2023, "FlexiViT: One Model for All Patch Sizes") and EVA-L (Fang et al. 2023, "EVA:
  Exploring the Limits of Masked Visual Representation Learning at Scale"); BEiT-3's image branch (Wang et al.
  2022, "Image as a Foreign Language") with norms inside its attention and MLP;
- register tokens (Darcet et al. 2024, "Vision Transformers Need Registers"): learnt tokens beside the patch
  tokens that no head reads, with average pooling, in timm's shapes ``wee`` to ``so150m``; parallel blocks
  (Dehghani et al. 2023, "Scaling Vision Transformers to 22 Billion Parameters"), differential attention
  (Ye et al. 2024, "Differential Transformer"), residual post-norm blocks;
- SigLIP's shape-optimised So400m (Zhai et al. 2023, "Sigmoid Loss for Language Image Pre-Training"; Alabdulmohsin
  et al. 2023, "Getting ViT in Shape") with its attention-pooling head ('map': a learnt query attends to the
  patch tokens) or average pooling;
- timm's tiny test ViTs at 160 (test_vit, test_vit2 with a register token: any image size; test_vit3 pooling the
  register token with the patch tokens by attention; test_vit4 with RMS norms).

and timm's pretrained image encoders, most without an ImageNet-1k head (their weights' records give the classes:
none, a CLIP / SigLIP embedding width, or ImageNet-21k / 12k):

- DINOv2 (Oquab et al. 2023, "DINOv2: Learning Robust Visual Features without Supervision"), with 4 register
  tokens (Darcet et al. 2024): vit_{small,base,large,giant}_patch14[_reg4]_dinov2, layer scale, ViT-g with a
  packed SwiGLU MLP;
- SigLIP and SigLIP 2 image towers (Zhai et al. 2023; Tschannen et al. 2025, "SigLIP 2: Multilingual
  Vision-Language Encoders with Improved Semantic Understanding, Localization, and Dense Features"), PaliGemma's
  So400m (Beyer et al. 2024, "PaliGemma: A versatile 3B VLM for transfer"): vit_{base,large,so400m,giantopt}_
  patch{14,16,32}_siglip[_gap]_<size>, attention ('map') or average pooling, some with the tanh GELU;
- CLIP image towers of OpenAI, OpenCLIP (Cherti et al. 2023, "Reproducible scaling laws for contrastive
  language-image learning"), MetaCLIP (Xu et al. 2023, "Demystifying CLIP Data"), DFN (Fang et al. 2023, "Data
  Filtering Networks") and TinyCLIP (Wu et al. 2023, "TinyCLIP: CLIP Distillation via Affinity Mimicking and Weight
  Inheritance"): vit_{xsmall,medium,betwixt,base,large,huge,giant,gigantic}_patch*_clip[_quickgelu]_<size>, some
  with QuickGELU (x sigmoid(1.702 x));
- the original ImageNet-21k ViTs and DINO's ViT-S/8 (Caron et al. 2021, "Emerging Properties in Self-Supervised
  Vision Transformers"), I-JEPA's average-pooled ViT-H and ViT-g (Assran et al. 2023, "Self-Supervised Learning
  from Images with a Joint-Embedding Predictive Architecture"), timm's ImageNet-12k ViT-M at 240;
- TIPSv2 ("TIPSv2: Advancing Vision-Language Pretraining with Enhanced Patch-Text Alignment", 2026) with one
  register token and layer scale starting at 1; InternViT-300M (Chen et al. 2024, "Expanding Performance
  Boundaries of Open-Source Multimodal Models with Model, Data, and Test-Time Scaling") at any image size without
  a final norm; NVIDIA's C-RADIO v3 / v4 (Ranzinger et al. 2024, "AM-RADIO: Agglomerative Vision Foundation
  Model -- Reduce All Domains Into One") with 7 or 9 register tokens and no final norm;
- AIMv2 (Fini et al. 2024, "Multimodal Autoregressive Pre-training of Large Vision Encoders"):
  aimv2_{large,huge,1b,3b}_patch14_{224,336,448}, RMS norms (the patch tokens' too), SwiGLU MLPs, no biases in the
  blocks, average pooling.

Last, timm's variants without published weights, for training from scratch or for one's own checkpoints:
vit_base_patch16_gap_224, vit_base_patch16_plus_240 and vit_base_patch32_plus_256 (ViT-B+),
vit_base_patch16_reg4_gap_256, vit_betwixt_patch16_gap_256, vit_so150m_patch16_reg4_map_256, vit_large_patch14_224,
vit_giant_patch14_224 and vit_gigantic_patch14_224 (Zhai et al. 2022, "Scaling Vision Transformers"),
vit_small_patch16_36x1_224 and the '18x2' models with two parallel attention and MLP branches a block (Touvron et
al. 2022, "Three things everyone should know about Vision Transformers": vit_small/base_patch16_18x2_224), the 'xp'
parallel-block models with RMS and query-key norms (vit_base_patch16_xp_224, vit_large/huge_patch14_xp_224), BEiT-3
giant (beit3_giant_patch14_224/336) and test_vit4.

A model runs at the image size it was built for (``img_size``, square or (height, width)), or with
``dynamic_img_size`` at any multiple of the patch size; position embeddings made for another patch grid are
resampled with ``resample_abs_pos_embed``. ``features_only=True`` returns
the outputs of the last blocks (timm's default: three) as (N, C, H/p, W/p) maps.
"""
import math
from collections import OrderedDict
from functools import partial

import numpy as np

import engine as torch
from engine import nn
from engine.nn import functional as F

from .._features import FeatureGetterNet, intermediate_stages, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._layers import (Mlp, PatchEmbed, drop_path_module, get_act_layer, init_linear_layers, pair, trunc_normal_,
                      trunc_normal_tf_)

__all__ = []

_layer_norm = partial(nn.LayerNorm, eps=1e-6)
_clip_layer_norm = partial(nn.LayerNorm, eps=1e-5)


class RmsNorm(nn.RMSNorm):
    """Root-mean-square normalisation over the last axis with a learnt scale (timm's ``RmsNorm``, eps 1e-6 by
    default, printed as timm prints it): the norm inside differential attention, and AIMv2's norm."""

    def __init__(self, channels, eps=1e-6):
        super().__init__(channels, eps=eps)

    def extra_repr(self):
        return ""


class QuickGELU(nn.Module):
    """x * sigmoid(1.702 x), the sigmoid approximation of GELU that OpenAI's CLIP towers were trained with (timm's
    ``QuickGELU``, 'quick_gelu'); takes (and ignores) ``inplace`` as timm's activations do."""

    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


_NORM_LAYERS = {"layernorm": _layer_norm, "rmsnorm": RmsNorm}


def _norm_layer(norm_layer):
    """A norm class from timm's name for it ('layernorm': LayerNorm with eps 1e-6, 'rmsnorm': ``RmsNorm``), the
    class itself, or None."""
    return _NORM_LAYERS[norm_layer.replace("_", "").lower()] if isinstance(norm_layer, str) else norm_layer


def _act_layer(act_layer):
    """An activation class from timm's name for it ('quick_gelu', or one ``get_act_layer`` knows: 'gelu_tanh',
    'silu', ...) or the class itself."""
    if act_layer == "quick_gelu":
        return QuickGELU
    return get_act_layer(act_layer)


class GluMlp(nn.Module):
    """A gated MLP with one packed input layer (timm's ``GluMlp``): ``fc1`` gives ``hidden_features`` units, one half
    gates the other through ``act`` (the second half gates with ``gate_last``, the first otherwise), then dropout,
    ``norm`` (an identity unless ``norm_layer``) and ``fc2`` back to ``out_features`` (by default ``in_features``).
    ``bias`` and ``drop`` are one value for both layers or a pair; ``fc1``'s second half starts near zero with unit
    biases (``init_weights``). ``SwiGLUPacked`` is the SiLU-gated form with the gate first (DINOv2-g's MLP)."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.Sigmoid, norm_layer=None,
                 bias=True, drop=0.0, gate_last=True):
        super().__init__()
        hidden_features = hidden_features or in_features
        out_features = out_features or in_features
        if hidden_features % 2:
            raise ValueError(f"GluMlp needs an even hidden width, got {hidden_features}")
        bias1, bias2 = pair(bias)
        drop1, drop2 = pair(drop)
        self.gate_last = gate_last
        self.fc1 = nn.Linear(in_features, hidden_features, bias=bias1)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop1)
        self.norm = norm_layer(hidden_features // 2) if norm_layer is not None else nn.Identity()
        self.fc2 = nn.Linear(hidden_features // 2, out_features, bias=bias2)
        self.drop2 = nn.Dropout(drop2)

    def init_weights(self):
        """timm's override of ``fc1``'s second half (whichever half gates): unit biases, weights N(0, 1e-12);
        run by the model's init after the Linear layers'."""
        half = self.fc1.weight.shape[0] // 2
        with torch.no_grad():
            if self.fc1.bias is not None:
                nn.init.ones_(self.fc1.bias[half:])
            nn.init.normal_(self.fc1.weight[half:], std=1e-6)

    def forward(self, x):
        x = self.fc1(x)
        first, second = x.chunk(2, dim=-1)
        x = first * self.act(second) if self.gate_last else self.act(first) * second
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


SwiGLUPacked = partial(GluMlp, act_layer=nn.SiLU, gate_last=False)


class SwiGLU(nn.Module):
    """SwiGLU with separate input layers (timm's ``SwiGLU``, AIMv2's MLP): act(``fc1_g``(x)) * ``fc1_x``(x), dropout,
    ``norm`` (an identity unless ``norm_layer``), ``fc2`` back to ``out_features`` (by default ``in_features``).
    ``bias`` and ``drop`` are one value for both stages or a pair; ``align_to`` rounds the hidden width up to a
    multiple of it (DINOv3's). The gate starts near zero with unit biases (``init_weights``, which EVA's and BEiT's
    inits do not run). EVA-02's and BEiT's MLP too, with the sub-layer LayerNorm as ``norm_layer``."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.SiLU, norm_layer=None,
                 bias=True, drop=0.0, align_to=0):
        super().__init__()
        hidden_features = hidden_features or in_features
        if align_to:
            hidden_features += -hidden_features % align_to
        out_features = out_features or in_features
        bias1, bias2 = pair(bias)
        drop1, drop2 = pair(drop)
        self.fc1_g = nn.Linear(in_features, hidden_features, bias=bias1)
        self.fc1_x = nn.Linear(in_features, hidden_features, bias=bias1)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop1)
        self.norm = norm_layer(hidden_features) if norm_layer is not None else nn.Identity()
        self.fc2 = nn.Linear(hidden_features, out_features, bias=bias2)
        self.drop2 = nn.Dropout(drop2)

    def init_weights(self):
        """timm's override of the gate layer: unit biases, weights N(0, 1e-12); run by the model's init after the
        Linear layers'."""
        if self.fc1_g.bias is not None:
            nn.init.ones_(self.fc1_g.bias)
        nn.init.normal_(self.fc1_g.weight, std=1e-6)

    def forward(self, x):
        gate = self.fc1_g(x)
        x = self.fc1_x(x)
        x = self.act(gate) * x
        x = self.drop1(x)
        x = self.norm(x)
        x = self.fc2(x)
        x = self.drop2(x)
        return x


class Attention(nn.Module):
    """Multi-head self-attention: one ``qkv`` projection, scaled dot-product attention per head, ``proj``.

    ``qk_norm`` normalises queries and keys per head (``q_norm``, ``k_norm``), ``scale_norm`` the
    concatenated heads before ``proj`` (``norm``); both are identities by default. ``proj_bias=False`` drops the
    output projection's bias (AIMv2). ``attn_drop`` drops attention weights and ``proj_drop`` the output, in
    training.
    """

    def __init__(self, dim, num_heads=8, qkv_bias=False, qk_norm=False, scale_norm=False, proj_bias=True,
                 attn_drop=0.0, proj_drop=0.0, norm_layer=None):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        if (qk_norm or scale_norm) and norm_layer is None:
            raise ValueError("qk_norm and scale_norm need a norm_layer")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.attn_drop = nn.Dropout(attn_drop)
        self.norm = norm_layer(dim) if scale_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, tokens, dim = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = self.q_norm(q)
        k = self.k_norm(k)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, tokens, dim)
        x = self.norm(x)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class DifferentialLambda:
    """The learnt weight of differential attention's second attention map (Ye et al. 2024), for the modules that
    mix it in: lambda = exp(lambda_q1 . lambda_k1) - exp(lambda_q2 . lambda_k2) + lambda_init, where lambda_init
    = 0.8 - 0.6 exp(-0.3 depth) grows with the block's ``depth``. timm computes it in float32 whatever the model's
    dtype, and so does this."""

    def _add_lambdas(self, head_dim, depth):
        """The four ``head_dim`` vectors (drawn by ``_reset_lambdas``) and the constant lambda_init."""
        self.lambda_q1 = nn.Parameter(torch.empty(head_dim))
        self.lambda_k1 = nn.Parameter(torch.empty(head_dim))
        self.lambda_q2 = nn.Parameter(torch.empty(head_dim))
        self.lambda_k2 = nn.Parameter(torch.empty(head_dim))
        self.lambda_init = 0.8 - 0.6 * math.exp(-0.3 * depth)

    def _reset_lambdas(self):
        """timm's draw: N(0, 0.1^2) for each vector, in order."""
        nn.init.normal_(self.lambda_q1, std=0.1)
        nn.init.normal_(self.lambda_k1, std=0.1)
        nn.init.normal_(self.lambda_q2, std=0.1)
        nn.init.normal_(self.lambda_k2, std=0.1)

    def _lambda_full(self, dtype):
        """lambda as a 0-d tensor of ``dtype`` (computed in float32)."""
        lambda_1 = torch.exp((self.lambda_q1 * self.lambda_k1).sum(dim=-1).float())
        lambda_2 = torch.exp((self.lambda_q2 * self.lambda_k2).sum(dim=-1).float())
        return (lambda_1 - lambda_2 + self.lambda_init).to(dtype)

    def _differential_attention(self, q, k, v, dropout_p):
        """softmax(q1 k1^T) v - lambda softmax(q2 k2^T) v per head, scaled by 1/sqrt(head_dim): q and k hold two
        half-width heads per head, (N, 2 * heads, L, head_dim), v full-width heads (N, heads, L, 2 * head_dim)."""
        batch, heads, tokens, head_dim = v.shape[0], v.shape[1], v.shape[2], q.shape[-1]
        lambda_full = self._lambda_full(q.dtype)
        q1, q2 = q.reshape(batch, heads, 2, tokens, head_dim).unbind(2)
        k1, k2 = k.reshape(batch, heads, 2, tokens, head_dim).unbind(2)
        attn1 = F.scaled_dot_product_attention(q1, k1, v, dropout_p=dropout_p)
        attn2 = F.scaled_dot_product_attention(q2, k2, v, dropout_p=dropout_p)
        return attn1 - lambda_full * attn2


class DiffAttention(DifferentialLambda, nn.Module):
    """Differential attention (Ye et al. 2024, "Differential Transformer"; timm's ``DiffAttention``): each head
    splits its queries and keys into two half-width halves whose attention maps are subtracted, the second
    weighted by lambda (``DifferentialLambda``), which cancels attention noise; the heads' outputs go through an
    RMS norm (``sub_norm``), a (1 - lambda_init) scale, ``norm`` (with ``scale_norm``) and ``proj``.

    ``qk_norm`` normalises the half-width queries and keys; ``norm_layer`` defaults to ``RmsNorm``; ``depth``
    is the block's index; ``proj_bias`` as in ``Attention``.
    """

    def __init__(self, dim, num_heads=8, qkv_bias=False, qk_norm=False, scale_norm=False, proj_bias=True,
                 attn_drop=0.0, proj_drop=0.0, norm_layer=None, depth=0):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        norm_layer = norm_layer or RmsNorm
        self.num_heads = num_heads
        self.head_dim = dim // num_heads // 2
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.attn_drop = nn.Dropout(attn_drop)
        self.norm = norm_layer(dim) if scale_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.proj_drop = nn.Dropout(proj_drop)
        self._add_lambdas(self.head_dim, depth)
        self.sub_norm = RmsNorm(2 * self.head_dim, eps=1e-5)
        self._reset_lambdas()

    def forward(self, x):
        batch, tokens, dim = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=2)
        q = q.reshape(batch, tokens, 2 * self.num_heads, self.head_dim).transpose(1, 2)
        k = k.reshape(batch, tokens, 2 * self.num_heads, self.head_dim).transpose(1, 2)
        v = v.reshape(batch, tokens, self.num_heads, 2 * self.head_dim).transpose(1, 2)
        q = self.q_norm(q)
        k = self.k_norm(k)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = self._differential_attention(q, k, v, dropout_p)
        x = self.sub_norm(x)
        x = x * (1 - self.lambda_init)
        x = x.transpose(1, 2).reshape(batch, tokens, dim)
        x = self.norm(x)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


_ATTENTION_LAYERS = {"": Attention, "attn": Attention, "diff": DiffAttention}


def _create_attention(attn_layer, dim, num_heads, qkv_bias, qk_norm, scale_norm, proj_bias, attn_drop, proj_drop,
                      norm_layer, depth):
    """The attention of block ``depth``: ``attn_layer`` is a class or timm's name for one ('' or 'attn':
    ``Attention``, 'diff': ``DiffAttention``, which also takes the depth)."""
    attn_cls = _ATTENTION_LAYERS[attn_layer] if isinstance(attn_layer, str) else attn_layer
    extra = {"depth": depth} if issubclass(attn_cls, DiffAttention) else {}
    return attn_cls(dim, num_heads=num_heads, qkv_bias=qkv_bias, qk_norm=qk_norm, scale_norm=scale_norm,
                    proj_bias=proj_bias, attn_drop=attn_drop, proj_drop=proj_drop, norm_layer=norm_layer, **extra)


class LayerScale(nn.Module):
    """A learnt per-channel scale ``gamma`` of a residual branch, starting at ``init_values`` (Touvron et al.
    2021, "Going deeper with Image Transformers"): small values start each block close to the identity."""

    def __init__(self, dim, init_values=1e-5):
        super().__init__()
        self.init_values = init_values
        self.gamma = nn.Parameter(torch.full((dim,), float(init_values)))

    def forward(self, x):
        return x * self.gamma


class Block(nn.Module):
    """Pre-norm transformer block: x + drop_path(ls1(attn(norm1(x)))), then x + drop_path(ls2(mlp(norm2(x)))).

    ``init_values`` enables layer scale (``ls1``, ``ls2``; identities otherwise), ``drop_path`` is the
    probability of dropping each residual branch for a sample in training; ``attn_layer`` picks the
    attention (``_create_attention``) of the block at index ``depth``, ``mlp_layer`` the MLP class (``Mlp``,
    ``SwiGLU``, ``SwiGLUPacked``); ``proj_bias=False`` drops the biases of the attention's output projection and
    of the MLP.
    """

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, qk_norm=False, scale_attn_norm=False,
                 scale_mlp_norm=False, proj_bias=True, proj_drop=0.0, attn_drop=0.0, init_values=None, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=_layer_norm, mlp_layer=Mlp, attn_layer=Attention, depth=0):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = _create_attention(attn_layer, dim, num_heads, qkv_bias, qk_norm, scale_attn_norm, proj_bias,
                                      attn_drop, proj_drop, norm_layer, depth)
        self.ls1 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = norm_layer(dim)
        self.mlp = mlp_layer(dim, int(dim * mlp_ratio), act_layer=act_layer,
                             norm_layer=norm_layer if scale_mlp_norm else None, bias=proj_bias, drop=proj_drop)
        self.ls2 = LayerScale(dim, init_values) if init_values else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        x = x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))
        return x


class ResPostBlock(nn.Module):
    """Residual post-norm block (timm's ``ResPostBlock``, as in Swin V2): x + drop_path(norm1(attn(x))), then
    x + drop_path(norm2(mlp(x))). The norms on the branches replace layer scale: with ``init_values`` their
    weights start at that value, so each block starts close to the identity. Takes ``Block``'s arguments."""

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, qk_norm=False, scale_attn_norm=False,
                 scale_mlp_norm=False, proj_bias=True, proj_drop=0.0, attn_drop=0.0, init_values=None, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=_layer_norm, mlp_layer=Mlp, attn_layer=Attention, depth=0):
        super().__init__()
        self.init_values = init_values
        self.attn = _create_attention(attn_layer, dim, num_heads, qkv_bias, qk_norm, scale_attn_norm, proj_bias,
                                      attn_drop, proj_drop, norm_layer, depth)
        self.norm1 = norm_layer(dim)
        self.drop_path1 = drop_path_module(drop_path)
        self.mlp = mlp_layer(dim, int(dim * mlp_ratio), act_layer=act_layer,
                             norm_layer=norm_layer if scale_mlp_norm else None, bias=proj_bias, drop=proj_drop)
        self.norm2 = norm_layer(dim)
        self.drop_path2 = drop_path_module(drop_path)
        self.init_weights()

    def init_weights(self):
        """The branch norms' weights at ``init_values`` (when given); run again by the model's init."""
        if self.init_values is not None:
            nn.init.constant_(self.norm1.weight, self.init_values)
            nn.init.constant_(self.norm2.weight, self.init_values)

    def forward(self, x):
        x = x + self.drop_path1(self.norm1(self.attn(x)))
        x = x + self.drop_path2(self.norm2(self.mlp(x)))
        return x


class ParallelScalingBlock(nn.Module):
    """Parallel block (Dehghani et al. 2023, "Scaling Vision Transformers to 22 Billion Parameters"; timm's
    ``ParallelScalingBlock``): attention and MLP read the same normalised input, x + drop_path(ls(attn_out_proj(
    attention) + mlp_out_proj(act(mlp hidden)))).

    One projection ``in_proj`` makes the MLP's hidden units and the queries, keys and values at once; its bias
    is ``qkv_bias``, and without it the hidden units get their own bias ``mlp_bias`` (starting at zero). Layer
    scale ``ls`` is on whenever ``init_values`` is given. Takes ``Block``'s arguments; ``attn_layer``,
    ``mlp_layer`` and ``depth`` are not used (the attention is built in), scale norms are refused.
    """

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, qk_norm=False, scale_attn_norm=False,
                 scale_mlp_norm=False, proj_bias=True, proj_drop=0.0, attn_drop=0.0, init_values=None, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=_layer_norm, mlp_layer=Mlp, attn_layer=None, depth=0):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        if scale_attn_norm or scale_mlp_norm:
            raise ValueError("parallel blocks have no scale norms")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        mlp_hidden_dim = int(mlp_ratio * dim)
        self.in_norm = norm_layer(dim)
        self.in_proj = nn.Linear(dim, mlp_hidden_dim + 3 * dim, bias=qkv_bias)
        self.in_split = [mlp_hidden_dim, dim, dim, dim]
        self.mlp_bias = None if qkv_bias else nn.Parameter(torch.zeros(mlp_hidden_dim))
        self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.attn_drop = nn.Dropout(attn_drop)
        self.mlp_drop = nn.Dropout(proj_drop)
        self.mlp_act = act_layer()
        self.attn_out_proj = nn.Linear(dim, dim, bias=proj_bias)
        self.mlp_out_proj = nn.Linear(mlp_hidden_dim, dim, bias=proj_bias)
        self.ls = LayerScale(dim, init_values) if init_values is not None else nn.Identity()
        self.drop_path = drop_path_module(drop_path)

    def forward(self, x):
        batch, tokens, dim = x.shape
        y = self.in_norm(x)
        y = self.in_proj(y)
        x_mlp, q, k, v = torch.split(y, self.in_split, dim=-1)
        if self.mlp_bias is not None:
            x_mlp = x_mlp + self.mlp_bias
        q = self.q_norm(q.reshape(batch, tokens, self.num_heads, self.head_dim)).transpose(1, 2)
        k = self.k_norm(k.reshape(batch, tokens, self.num_heads, self.head_dim)).transpose(1, 2)
        v = v.reshape(batch, tokens, self.num_heads, self.head_dim).transpose(1, 2)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x_attn = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x_attn = x_attn.transpose(1, 2).reshape(batch, tokens, dim)
        x_mlp = self.mlp_act(x_mlp)
        x_mlp = self.mlp_drop(x_mlp)
        y = self.attn_out_proj(x_attn) + self.mlp_out_proj(x_mlp)
        x = x + self.drop_path(self.ls(y))
        return x


class DiffParallelScalingBlock(DifferentialLambda, nn.Module):
    """A parallel block (``ParallelScalingBlock``) whose attention is differential (``DiffAttention``, without
    its ``proj``): the attention output (after ``sub_norm`` and the (1 - lambda_init) scale) and the MLP's
    activated hidden units are concatenated and projected back together by ``out_proj`` (timm's
    ``DiffParallelScalingBlock``). Takes ``Block``'s arguments; ``depth`` sets lambda_init, ``attn_layer`` and
    ``mlp_layer`` are not used, scale norms are refused.
    """

    def __init__(self, dim, num_heads, mlp_ratio=4.0, qkv_bias=False, qk_norm=False, scale_attn_norm=False,
                 scale_mlp_norm=False, proj_bias=True, proj_drop=0.0, attn_drop=0.0, init_values=None, drop_path=0.0,
                 act_layer=nn.GELU, norm_layer=_layer_norm, mlp_layer=Mlp, attn_layer=None, depth=0):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        if scale_attn_norm or scale_mlp_norm:
            raise ValueError("parallel blocks have no scale norms")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads // 2
        mlp_hidden_dim = int(mlp_ratio * dim)
        self.in_norm = norm_layer(dim)
        self.in_proj = nn.Linear(dim, mlp_hidden_dim + 3 * dim, bias=qkv_bias)
        self.in_split = [mlp_hidden_dim, dim, dim, dim]
        self.mlp_bias = None if qkv_bias else nn.Parameter(torch.zeros(mlp_hidden_dim))
        self.q_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm = norm_layer(self.head_dim) if qk_norm else nn.Identity()
        self.attn_drop = nn.Dropout(attn_drop)
        self.sub_norm = RmsNorm(2 * self.head_dim, eps=1e-5)
        self._add_lambdas(self.head_dim, depth)
        self.mlp_drop = nn.Dropout(proj_drop)
        self.mlp_act = act_layer()
        self.out_proj = nn.Linear(dim + mlp_hidden_dim, dim, bias=proj_bias)
        self.ls = LayerScale(dim, init_values) if init_values is not None else nn.Identity()
        self.drop_path = drop_path_module(drop_path)
        self._reset_lambdas()

    def forward(self, x):
        batch, tokens, dim = x.shape
        y = self.in_norm(x)
        y = self.in_proj(y)
        x_mlp, q, k, v = torch.split(y, self.in_split, dim=-1)
        if self.mlp_bias is not None:
            x_mlp = x_mlp + self.mlp_bias
        q = q.reshape(batch, tokens, 2 * self.num_heads, self.head_dim).transpose(1, 2)
        k = k.reshape(batch, tokens, 2 * self.num_heads, self.head_dim).transpose(1, 2)
        v = v.reshape(batch, tokens, self.num_heads, 2 * self.head_dim).transpose(1, 2)
        q = self.q_norm(q)
        k = self.k_norm(k)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x_attn = self._differential_attention(q, k, v, dropout_p)
        x_attn = self.sub_norm(x_attn)
        x_attn = x_attn * (1 - self.lambda_init)
        x_attn = x_attn.transpose(1, 2).reshape(batch, tokens, dim)
        x_mlp = self.mlp_act(x_mlp)
        x_mlp = self.mlp_drop(x_mlp)
        y = self.out_proj(torch.cat((x_attn, x_mlp), dim=-1))
        x = x + self.drop_path(self.ls(y))
        return x


class ParallelThingsBlock(nn.Module):
    """``num_parallel`` attention branches side by side, then as many MLP branches side by side (Touvron et al.
    2022, "Three things everyone should know about Vision Transformers"; timm's ``ParallelThingsBlock``):
    x + sum_i attns[i](x), then x + sum_i ffns[i](x). Each branch is a pre-norm residual branch of ``Block``'s
    (``norm``, ``attn`` or ``mlp``, layer scale ``ls`` with ``init_values``, ``drop_path``), so a block of two
    branches is as wide as two blocks at the depth of one. Takes ``Block``'s arguments."""

    def __init__(self, dim, num_heads, num_parallel=2, mlp_ratio=4.0, qkv_bias=False, qk_norm=False,
                 scale_attn_norm=False, scale_mlp_norm=False, proj_bias=True, proj_drop=0.0, attn_drop=0.0,
                 init_values=None, drop_path=0.0, act_layer=nn.GELU, norm_layer=_layer_norm, mlp_layer=Mlp,
                 attn_layer=Attention, depth=0):
        super().__init__()
        self.num_parallel = num_parallel
        self.attns = nn.ModuleList()
        self.ffns = nn.ModuleList()
        for _ in range(num_parallel):
            attn_norm = norm_layer(dim)
            attention = _create_attention(attn_layer, dim, num_heads, qkv_bias, qk_norm, scale_attn_norm, proj_bias,
                                          attn_drop, proj_drop, norm_layer, depth)
            self.attns.append(self._branch(attn_norm, "attn", attention, dim, init_values, drop_path))
            mlp_norm = norm_layer(dim)
            mlp = mlp_layer(dim, int(dim * mlp_ratio), act_layer=act_layer,
                            norm_layer=norm_layer if scale_mlp_norm else None, bias=proj_bias, drop=proj_drop)
            self.ffns.append(self._branch(mlp_norm, "mlp", mlp, dim, init_values, drop_path))

    @staticmethod
    def _branch(norm, name, layer, dim, init_values, drop_path):
        """One residual branch: ``norm``, the ``layer`` under ``name``, layer scale and stochastic depth, in order."""
        return nn.Sequential(OrderedDict([
            ("norm", norm),
            (name, layer),
            ("ls", LayerScale(dim, init_values) if init_values else nn.Identity()),
            ("drop_path", drop_path_module(drop_path)),
        ]))

    def forward(self, x):
        x = x + torch.stack([attn(x) for attn in self.attns]).sum(dim=0)
        x = x + torch.stack([ffn(x) for ffn in self.ffns]).sum(dim=0)
        return x


class AttentionPoolLatent(nn.Module):
    """Multi-head attention pooling (SigLIP's 'map' head; timm's ``AttentionPoolLatent`` with one latent): a learnt
    query ``latent`` (projected by ``q``) attends to the tokens (projected by ``kv``), the result goes through
    ``proj`` and a residual pre-norm MLP (``norm``, ``mlp``), giving one ``dim`` vector per image.
    ``q_norm``, ``k_norm`` (identities) and ``proj_drop`` (no dropout) are timm's slots.
    """

    def __init__(self, dim, num_heads=8, mlp_ratio=4.0, norm_layer=_layer_norm, act_layer=nn.GELU):
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.latent = nn.Parameter(torch.zeros(1, 1, dim))
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, dim * 2)
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)
        self.norm = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), act_layer=act_layer)
        self.init_weights()

    def init_weights(self):
        """The latent query from N(0, 1/dim) truncated at 2 standard deviations (timm's ``trunc_normal_tf_``);
        run again by the model's init."""
        trunc_normal_tf_(self.latent, std=self.latent.shape[-1] ** -0.5)

    def forward(self, x):
        batch, tokens, dim = x.shape
        q = self.q(self.latent.expand(batch, -1, -1))
        q = q.reshape(batch, 1, self.num_heads, self.head_dim).transpose(1, 2)
        kv = self.kv(x).reshape(batch, tokens, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = kv.unbind(0)
        q = self.q_norm(q)
        k = self.k_norm(k)
        x = F.scaled_dot_product_attention(q, k, v)
        x = x.transpose(1, 2).reshape(batch, 1, dim)
        x = self.proj(x)
        x = self.proj_drop(x)
        x = x + self.mlp(self.norm(x))
        return x[:, 0]


def _init_module_tree(module):
    """timm's per-module init under ``module``, children before their parent (the order of timm's draws): Linear
    layers truncated-normal (std 0.02) with zero biases, modules with an ``init_weights`` their own scheme."""
    for child in module.children():
        _init_module_tree(child)
        if isinstance(child, nn.Linear):
            init_linear_layers(child)
        elif hasattr(child, "init_weights"):
            child.init_weights()


class ViTApi:
    """timm's model API of the ViT-like models that classify a token sequence (ViT, EVA, BEiT, relative-position
    ViTs): a mixin before ``nn.Module``. The model has ``patch_embed``, ``cls_token`` (or None), ``num_prefix_tokens``,
    ``blocks``, ``norm``, ``fc_norm``, ``head_drop`` and a linear ``head``; it embeds images with ``_embed`` (the
    token sequence and what every block needs besides it) and runs a block with ``_block``. ``global_pools`` lists
    the poolings it takes; a model with ``dynamic_img_size`` takes images of any size its patches tile."""

    global_pools = ("", "avg", "token")
    pool_include_prefix = False
    dynamic_img_size = False

    def _check_global_pool(self, global_pool, has_class_token):
        """Refuse a pooling outside ``global_pools``, and 'token' without a class token."""
        if global_pool not in self.global_pools:
            raise ValueError(f"global_pool must be one of {self.global_pools}, got {global_pool!r}")
        if global_pool == "token" and not has_class_token:
            raise ValueError("global_pool='token' needs the class token")

    def _set_global_pool(self, global_pool):
        """Pool by ``global_pool`` from now on (checked)."""
        self._check_global_pool(global_pool, self.cls_token is not None)
        self.global_pool = global_pool

    def _new_head(self, num_classes):
        """A linear head for ``num_classes`` (0: an identity)."""
        return nn.Linear(self.embed_dim, num_classes) if num_classes > 0 else nn.Identity()

    def _fix_init_weight(self):
        """Each block's output projections (attention's ``proj``, the MLP's ``fc2``) divided by sqrt(2 (i + 1)) for
        block i, so the residual stream grows slowly with depth (timm's ``fix_init_weight``)."""
        with torch.no_grad():
            for i, block in enumerate(self.blocks):
                scale = math.sqrt(2.0 * (i + 1))
                block.attn.proj.weight.div_(scale)
                block.mlp.fc2.weight.div_(scale)

    def _init_head_scaled(self, head_init_scale):
        """The head's weights drawn again (truncated normal, std 0.02) and, with its bias, scaled by
        ``head_init_scale`` (none for 0, or without a linear head)."""
        if head_init_scale and isinstance(self.head, nn.Linear):
            trunc_normal_(self.head.weight, std=0.02)
            with torch.no_grad():
                self.head.weight.mul_(head_init_scale)
                self.head.bias.mul_(head_init_scale)

    def get_classifier(self):
        """The final linear layer."""
        return self.head

    def reset_classifier(self, num_classes, global_pool=None):
        """A new (default-initialised) head for ``num_classes`` (0: an identity); ``global_pool`` changes the pooling
        too (the norms stay where they were built)."""
        if global_pool is not None:
            self._set_global_pool(global_pool)
        self.num_classes = num_classes
        self.head = self._new_head(num_classes)
        self.head.train(self.training)

    def _run_blocks(self, x, context, blocks, take=(), norm=False):
        """``x`` through ``blocks`` (each with the ``context`` of ``_embed``); returns the output and those of the
        blocks in ``take`` (through the final norm if ``norm``)."""
        intermediates = []
        for i, block in enumerate(blocks):
            x = self._block(block, i, x, context)
            if i in take:
                intermediates.append(self.norm(x) if norm else x)
        return x, intermediates

    def forward_features(self, x):
        """Images (N, in_chans, H, W) -> the token sequence after the final norm (N, prefix + patches, embed_dim)."""
        x, context = self._embed(x)
        x, _ = self._run_blocks(x, context, self.blocks)
        x = self.norm(x)
        return x

    def pool(self, x, pool_type=None):
        """The token sequence pooled by ``pool_type`` (default: ``global_pool``): the class token, or the average
        and / or maximum over the patch tokens (all tokens with ``pool_include_prefix``; '' returns the
        sequence)."""
        pool_type = self.global_pool if pool_type is None else pool_type
        if not pool_type:
            return x
        if pool_type == "token":
            return x[:, 0]
        patches = x if self.pool_include_prefix else x[:, self.num_prefix_tokens:]
        if pool_type == "avg":
            return patches.mean(dim=1)
        if pool_type == "max":
            return patches.amax(dim=1)
        return 0.5 * (patches.amax(dim=1) + patches.mean(dim=1))

    def forward_head(self, x, pre_logits=False):
        """Pooling, ``fc_norm``, head dropout, then the classifier unless ``pre_logits``."""
        x = self.pool(x)
        x = self.fc_norm(x)
        x = self.head_drop(x)
        return x if pre_logits else self.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x

    def forward_intermediates(self, x, indices=None, return_prefix_tokens=False, norm=False, stop_early=False,
                              output_fmt="NCHW", intermediates_only=False):
        """The outputs of the blocks picked by ``indices`` (None: all, n: the last n, or a list), without prefix
        tokens, as (N, C, H/p, W/p) maps ('NCHW') or token sequences ('NLC'), and (unless ``intermediates_only``)
        the final normalised sequence. ``norm`` applies the final norm to each; ``return_prefix_tokens`` pairs each
        with its prefix tokens (when the model has any); ``stop_early`` skips later blocks."""
        take, blocks = intermediate_stages(self.blocks, indices, stop_early, output_fmt, ("NCHW", "NLC"))
        batch = x.shape[0]
        rows, cols = self._patch_grid(x)
        x, context = self._embed(x)
        x, intermediates = self._run_blocks(x, context, blocks, take, norm)
        prefixes = [y[:, :self.num_prefix_tokens] for y in intermediates]
        intermediates = [y[:, self.num_prefix_tokens:] for y in intermediates]
        if output_fmt == "NCHW":
            intermediates = [y.reshape(batch, rows, cols, self.embed_dim).permute(0, 3, 1, 2).contiguous()
                             for y in intermediates]
        if return_prefix_tokens and self.num_prefix_tokens:
            intermediates = list(zip(intermediates, prefixes))
        if intermediates_only:
            return intermediates
        return self.norm(x), intermediates

    def _patch_grid(self, images):
        """The (rows, columns) of patches the images give: the model's grid, or with ``dynamic_img_size`` the
        images' own."""
        if not self.dynamic_img_size:
            return self.patch_embed.grid_size
        height, width = images.shape[-2:]
        patch_rows, patch_cols = self.patch_embed.patch_size
        return height // patch_rows, width // patch_cols

    def _embed_patches(self, x):
        """Images -> patch tokens (N, rows * columns, embed_dim). With ``dynamic_img_size`` any size that the
        patches tile is taken (the patch embedding's own check asks for the built size)."""
        if not self.dynamic_img_size:
            return self.patch_embed(x)
        height, width = x.shape[-2:]
        patch_rows, patch_cols = self.patch_embed.patch_size
        if height % patch_rows or width % patch_cols:
            raise ValueError(f"Input size ({height}x{width}) must be a multiple of the patch size "
                             f"({patch_rows}x{patch_cols})")
        x = self.patch_embed.proj(x)
        x = x.flatten(2).transpose(1, 2)
        x = self.patch_embed.norm(x)
        return x

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the blocks after the last one ``indices`` picks (and the final norm, the head); returns the absolute
        indices."""
        take = take_indices(len(self.blocks), indices)
        self.blocks = self.blocks[:max(take) + 1]
        if prune_norm:
            self.norm = nn.Identity()
        if prune_head:
            self.fc_norm = nn.Identity()
            self.reset_classifier(0, "")
        return take


class VisionTransformer(ViTApi, nn.Module):
    """Patch embedding, class / register tokens and position embeddings, ``depth`` transformer blocks, a norm,
    pooling and a linear head (timm's ``VisionTransformer``, its arguments and defaults).

    ``global_pool``: 'token' classifies the class token, 'avg' / 'max' / 'avgmax' pool the patch tokens,
    'map' pools them by attention (``attn_pool``), '' keeps the whole sequence. ``fc_norm`` moves the final
    norm after the pooling (default: with the patch-token pools). ``class_token=False`` drops the class token;
    ``reg_tokens`` adds learnt register tokens after it; ``no_embed_class`` gives position embeddings to the
    patch tokens only; ``pre_norm`` adds a norm before the blocks (and drops the patch projection's bias);
    ``final_norm=False`` leaves the final norm (or ``fc_norm``) out; ``embed_norm_layer`` normalises the patch tokens
    (``patch_embed.norm``, AIMv2); ``init_values`` enables layer scale. ``pool_include_prefix`` pools the prefix
    tokens with the patch tokens ('avg', 'max', 'avgmax', 'map'). ``dynamic_img_size`` takes images of any size
    (multiples of the patch size): the position embeddings are resampled (bicubic, antialiased) from the built grid
    to the image's. ``block_fn`` is the block class (``Block``, ``ResPostBlock``, ``ParallelScalingBlock``,
    ``DiffParallelScalingBlock``, ``ParallelThingsBlock``), ``attn_layer`` the attention of ``Block``,
    ``ResPostBlock`` and ``ParallelThingsBlock`` (a class, or 'diff' for ``DiffAttention``), ``mlp_layer`` their MLP
    (``Mlp``, ``SwiGLU``, ``SwiGLUPacked``), ``act_layer`` its activation (a class or timm's name: 'gelu_tanh',
    'quick_gelu', 'silu'); ``norm_layer`` and ``embed_norm_layer`` are a class or timm's name ('layernorm',
    'rmsnorm'); ``proj_bias=False`` drops the biases of the blocks' output projections and MLPs.
    Dropout: ``pos_drop_rate`` after the position embeddings, ``attn_drop_rate`` on attention weights,
    ``proj_drop_rate`` in the blocks, ``drop_rate`` before the head; ``drop_path_rate`` is the stochastic depth of
    the last block (rising linearly from 0 at the first). ``weight_init='skip'`` leaves the layers' default
    initialisation. ``num_classes=0`` gives the pooled features. ``patch_drop`` is timm's patch-dropout slot, an
    identity.
    """

    default_cfg = {"first_conv": "patch_embed.proj", "classifier": "head"}
    feature_wrapper = FeatureGetterNet
    global_pools = ("", "token", "avg", "max", "avgmax", "map")

    def __init__(self, img_size=224, patch_size=16, in_chans=3, num_classes=1000, global_pool="token", embed_dim=768,
                 depth=12, num_heads=12, mlp_ratio=4.0, qkv_bias=True, qk_norm=False, scale_attn_norm=False,
                 scale_mlp_norm=False, proj_bias=True, init_values=None, class_token=True, no_embed_class=False,
                 reg_tokens=0, pre_norm=False, final_norm=True, fc_norm=None, pool_include_prefix=False,
                 dynamic_img_size=False, drop_rate=0.0, pos_drop_rate=0.0, proj_drop_rate=0.0, attn_drop_rate=0.0,
                 drop_path_rate=0.0, weight_init="", embed_norm_layer=None, norm_layer=None, act_layer=None,
                 block_fn=Block, mlp_layer=Mlp, attn_layer=Attention):
        super().__init__()
        self._check_global_pool(global_pool, class_token)
        if weight_init not in ("", "skip"):
            raise ValueError(f"weight_init must be '' (timm's) or 'skip', got {weight_init!r}")
        use_fc_norm = global_pool in ("avg", "max", "avgmax") if fc_norm is None else fc_norm
        norm_layer = _norm_layer(norm_layer) or _layer_norm
        embed_norm_layer = _norm_layer(embed_norm_layer)
        act_layer = _act_layer(act_layer) or nn.GELU
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = self.head_hidden_size = self.embed_dim = embed_dim
        self.num_prefix_tokens = (1 if class_token else 0) + reg_tokens
        self.num_reg_tokens = reg_tokens
        self.has_class_token = class_token
        self.no_embed_class = no_embed_class
        self.pool_include_prefix = pool_include_prefix
        self.dynamic_img_size = dynamic_img_size

        self.patch_embed = PatchEmbed(img_size, patch_size, in_chans, embed_dim, bias=not pre_norm)
        if embed_norm_layer is not None:
            self.patch_embed.norm = embed_norm_layer(embed_dim)
        num_patches = self.patch_embed.num_patches
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if class_token else None
        self.reg_token = nn.Parameter(torch.zeros(1, reg_tokens, embed_dim)) if reg_tokens else None
        embed_len = num_patches if no_embed_class else num_patches + self.num_prefix_tokens
        self.pos_embed = nn.Parameter(torch.zeros(1, embed_len, embed_dim))
        self.pos_drop = nn.Dropout(pos_drop_rate)
        self.patch_drop = nn.Identity()
        self.norm_pre = norm_layer(embed_dim) if pre_norm else nn.Identity()
        drop_path_rates = [p.item() for p in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.Sequential(*[
            block_fn(embed_dim, num_heads, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, qk_norm=qk_norm,
                     scale_attn_norm=scale_attn_norm, scale_mlp_norm=scale_mlp_norm, proj_bias=proj_bias,
                     proj_drop=proj_drop_rate, attn_drop=attn_drop_rate, init_values=init_values,
                     drop_path=drop_path_rates[i], act_layer=act_layer, norm_layer=norm_layer, mlp_layer=mlp_layer,
                     attn_layer=attn_layer, depth=i)
            for i in range(depth)])
        reduction = max(self.patch_embed.patch_size)
        self.feature_info = [dict(module=f"blocks.{i}", num_chs=embed_dim, reduction=reduction) for i in range(depth)]
        self.norm = norm_layer(embed_dim) if final_norm and not use_fc_norm else nn.Identity()
        if global_pool == "map":
            self.attn_pool = AttentionPoolLatent(embed_dim, num_heads, mlp_ratio, norm_layer=norm_layer,
                                                 act_layer=act_layer)
        else:
            self.attn_pool = None
        self.fc_norm = norm_layer(embed_dim) if final_norm and use_fc_norm else nn.Identity()
        self.head_drop = nn.Dropout(drop_rate)
        self.head = self._new_head(num_classes)
        if weight_init != "skip":
            self.init_weights()

    def init_weights(self):
        """timm's scheme: truncated-normal position embeddings (std 0.02), class and register tokens of
        N(0, 1e-12), then every submodule's (``_init_module_tree``: truncated-normal Linear weights, zero biases,
        the blocks' and the pooling's own); the patch projection keeps the convolution's default."""
        trunc_normal_(self.pos_embed, std=0.02)
        if self.cls_token is not None:
            nn.init.normal_(self.cls_token, std=1e-6)
        if self.reg_token is not None:
            nn.init.normal_(self.reg_token, std=1e-6)
        _init_module_tree(self)

    def _set_global_pool(self, global_pool):
        """Pool by ``global_pool`` from now on (checked): another pooling than 'map' drops the attention pooling,
        which cannot be added."""
        self._check_global_pool(global_pool, self.has_class_token)
        if global_pool == "map" and self.attn_pool is None:
            raise ValueError("reset_classifier cannot add attention pooling: build the model with 'map'")
        if global_pool != "map":
            self.attn_pool = None
        self.global_pool = global_pool

    def _prefix_tokens(self, batch):
        """The learnt tokens put before the patch tokens (class token, register tokens), expanded to the batch."""
        tokens = []
        if self.cls_token is not None:
            tokens.append(self.cls_token.expand(batch, -1, -1))
        if self.reg_token is not None:
            tokens.append(self.reg_token.expand(batch, -1, -1))
        return tokens

    def _grid_pos_embed(self, grid):
        """The position embeddings for a ``grid`` of patches: the learnt ones on the built grid, otherwise
        resampled to ``grid`` in float32 (bicubic, antialiased, as timm does), in the embeddings' dtype."""
        if tuple(grid) == tuple(self.patch_embed.grid_size):
            return self.pos_embed
        prefix_tokens = 0 if self.no_embed_class else self.num_prefix_tokens
        resampled = resample_abs_pos_embed(self.pos_embed.float(), grid, self.patch_embed.grid_size, prefix_tokens,
                                           antialias=True)
        return resampled.to(self.pos_embed.dtype)

    def _pos_embed(self, x, grid):
        """Patch tokens (of a ``grid`` of patches) with the prefix tokens prepended and position embeddings added
        (to the patches only, before prepending, when ``no_embed_class``), then ``pos_drop``."""
        prefix = self._prefix_tokens(x.shape[0])
        pos_embed = self._grid_pos_embed(grid)
        if self.no_embed_class:
            x = x + pos_embed
            x = torch.cat(prefix + [x], dim=1)
        else:
            x = torch.cat(prefix + [x], dim=1)
            x = x + pos_embed
        return self.pos_drop(x)

    def _embed(self, x):
        """Images -> the token sequence the blocks take (and no block context)."""
        grid = self._patch_grid(x)
        x = self._embed_patches(x)
        x = self._pos_embed(x, grid)
        x = self.patch_drop(x)
        x = self.norm_pre(x)
        return x, None

    @staticmethod
    def _block(block, index, x, context):
        """Block ``index`` on the token sequence ``x``."""
        return block(x)

    def pool(self, x, pool_type=None):
        """The token sequence pooled by ``pool_type`` (default: ``global_pool``); with attention pooling, the
        patch tokens (all tokens with ``pool_include_prefix``) pooled by ``attn_pool`` whatever ``pool_type``."""
        if self.attn_pool is not None:
            return self.attn_pool(x if self.pool_include_prefix else x[:, self.num_prefix_tokens:])
        return super().pool(x, pool_type)


def resample_abs_pos_embed(posemb, new_size, old_size=None, num_prefix_tokens=1, interpolation="bicubic",
                           antialias=False):
    """Position embeddings (1, prefix + rows*cols, D) for an ``old_size`` grid (default: square) resampled
    to a ``new_size`` (rows, cols) grid (timm's function; antialiased when shrinking only with ``antialias``):
    the prefix tokens' entries are kept, the grid is interpolated as a (D, rows, cols) image (corners not
    aligned). Takes a Tensor, or a numpy array and returns numpy."""
    is_tensor = isinstance(posemb, torch.Tensor)
    pos = posemb if is_tensor else torch.from_numpy(np.asarray(posemb))
    new_size = pair(new_size)
    if old_size is None:
        side = math.isqrt(pos.shape[1] - num_prefix_tokens)
        old_size = (side, side)
    old_size = pair(old_size)
    if tuple(old_size) == tuple(new_size):
        return posemb
    dim = pos.shape[-1]
    prefix, grid = pos[:, :num_prefix_tokens], pos[:, num_prefix_tokens:]
    grid = grid.reshape(1, old_size[0], old_size[1], dim).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=new_size, mode=interpolation, align_corners=False, antialias=antialias)
    grid = grid.permute(0, 2, 3, 1).reshape(1, new_size[0] * new_size[1], dim)
    resampled = torch.cat([prefix, grid], dim=1)
    return resampled if is_tensor else resampled.numpy()


def _vit(variant, pretrained, progress, kwargs, **model_args):
    """A ViT entrypoint's body: timm's architecture arguments, overridable by the caller's ``kwargs``."""
    return build_model(VisionTransformer, variant, pretrained, progress=progress, **{**model_args, **kwargs})


_CLIP = dict(pre_norm=True, norm_layer=_clip_layer_norm)
_BEIT3 = dict(scale_attn_norm=True, scale_mlp_norm=True, global_pool="avg", norm_layer=_clip_layer_norm)
# the 'xp' models: parallel blocks with query-key norms, RMS norms, a norm before the blocks
_XP = dict(pre_norm=True, no_embed_class=True, norm_layer=RmsNorm, block_fn=ParallelScalingBlock, qkv_bias=False,
           qk_norm=True)
_SBB = dict(init_values=1e-5, class_token=False, no_embed_class=True, global_pool="avg")
# DINOv2-g's MLP: a SiLU-gated packed SwiGLU of 2 x 4096 units (DINOv2 shrinks 4 x 1536 by 2/3, rounded to 8)
_PACKED_SWIGLU = dict(mlp_ratio=2.66667 * 2, mlp_layer=SwiGLUPacked, act_layer=nn.SiLU)
_aimv2_rms_norm = partial(RmsNorm, eps=1e-5)
_AIMV2 = dict(class_token=False, fc_norm=False, global_pool="avg", qkv_bias=False, proj_bias=False, act_layer="silu",
              norm_layer=_aimv2_rms_norm, embed_norm_layer=_aimv2_rms_norm, mlp_layer=SwiGLU)


@register_model
def vit_tiny_patch16_224(pretrained=False, progress=True, **kwargs):
    """ViT-Ti/16 at 224: width 192, 12 blocks, 3 heads."""
    return _vit("vit_tiny_patch16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=192, depth=12,
                num_heads=3)


@register_model
def vit_tiny_patch16_384(pretrained=False, progress=True, **kwargs):
    """ViT-Ti/16 at 384: width 192, 12 blocks, 3 heads."""
    return _vit("vit_tiny_patch16_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=192,
                depth=12, num_heads=3)


@register_model
def vit_small_patch16_224(pretrained=False, progress=True, **kwargs):
    """ViT-S/16 at 224: width 384, 12 blocks, 6 heads."""
    return _vit("vit_small_patch16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=384, depth=12,
                num_heads=6)


@register_model
def vit_small_patch16_384(pretrained=False, progress=True, **kwargs):
    """ViT-S/16 at 384: width 384, 12 blocks, 6 heads."""
    return _vit("vit_small_patch16_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=384,
                depth=12, num_heads=6)


@register_model
def vit_small_patch32_224(pretrained=False, progress=True, **kwargs):
    """ViT-S/32 at 224: width 384, 12 blocks, 6 heads."""
    return _vit("vit_small_patch32_224", pretrained, progress, kwargs, patch_size=32, embed_dim=384, depth=12,
                num_heads=6)


@register_model
def vit_small_patch32_384(pretrained=False, progress=True, **kwargs):
    """ViT-S/32 at 384: width 384, 12 blocks, 6 heads."""
    return _vit("vit_small_patch32_384", pretrained, progress, kwargs, img_size=384, patch_size=32, embed_dim=384,
                depth=12, num_heads=6)


@register_model
def vit_base_patch8_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/8 at 224: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch8_224", pretrained, progress, kwargs, patch_size=8, embed_dim=768, depth=12,
                num_heads=12)


@register_model
def vit_base_patch16_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=12,
                num_heads=12)


@register_model
def vit_base_patch16_384(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 384: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch16_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=768,
                depth=12, num_heads=12)


@register_model
def vit_base_patch32_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/32 at 224: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch32_224", pretrained, progress, kwargs, patch_size=32, embed_dim=768, depth=12,
                num_heads=12)


@register_model
def vit_base_patch32_384(pretrained=False, progress=True, **kwargs):
    """ViT-B/32 at 384: width 768, 12 blocks, 12 heads."""
    return _vit("vit_base_patch32_384", pretrained, progress, kwargs, img_size=384, patch_size=32, embed_dim=768,
                depth=12, num_heads=12)


@register_model
def vit_large_patch16_224(pretrained=False, progress=True, **kwargs):
    """ViT-L/16 at 224: width 1024, 24 blocks, 16 heads."""
    return _vit("vit_large_patch16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=1024, depth=24,
                num_heads=16)


@register_model
def vit_large_patch16_384(pretrained=False, progress=True, **kwargs):
    """ViT-L/16 at 384: width 1024, 24 blocks, 16 heads."""
    return _vit("vit_large_patch16_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=1024,
                depth=24, num_heads=16)


@register_model
def vit_large_patch32_384(pretrained=False, progress=True, **kwargs):
    """ViT-L/32 at 384: width 1024, 24 blocks, 16 heads."""
    return _vit("vit_large_patch32_384", pretrained, progress, kwargs, img_size=384, patch_size=32, embed_dim=1024,
                depth=24, num_heads=16)


@register_model
def vit_base_patch16_224_miil(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224 without qkv biases, as trained on ImageNet-21K-P by Alibaba MIIL (Ridnik et al. 2021,
    "ImageNet-21K Pretraining for the Masses"); 11221 classes by default, as timm's first weights."""
    return _vit("vit_base_patch16_224_miil", pretrained, progress, kwargs, num_classes=11221, patch_size=16,
                embed_dim=768, depth=12, num_heads=12, qkv_bias=False)


@register_model
def vit_base_patch16_clip_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 CLIP image tower at 224, fine-tuned on ImageNet: width 768, 12 blocks, 12 heads, a norm before the
    blocks, LayerNorm eps 1e-5."""
    return _vit("vit_base_patch16_clip_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=12,
                num_heads=12, **_CLIP)


@register_model
def vit_base_patch16_clip_384(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 CLIP image tower at 384, fine-tuned on ImageNet: width 768, 12 blocks, 12 heads, a norm before the
    blocks, LayerNorm eps 1e-5."""
    return _vit("vit_base_patch16_clip_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=768,
                depth=12, num_heads=12, **_CLIP)


@register_model
def vit_base_patch32_clip_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/32 CLIP image tower at 224, fine-tuned on ImageNet: width 768, 12 blocks, 12 heads, a norm before the
    blocks, LayerNorm eps 1e-5."""
    return _vit("vit_base_patch32_clip_224", pretrained, progress, kwargs, patch_size=32, embed_dim=768, depth=12,
                num_heads=12, **_CLIP)


@register_model
def vit_base_patch32_clip_384(pretrained=False, progress=True, **kwargs):
    """ViT-B/32 CLIP image tower at 384, fine-tuned on ImageNet: width 768, 12 blocks, 12 heads, a norm before the
    blocks, LayerNorm eps 1e-5."""
    return _vit("vit_base_patch32_clip_384", pretrained, progress, kwargs, img_size=384, patch_size=32, embed_dim=768,
                depth=12, num_heads=12, **_CLIP)


@register_model
def vit_base_patch32_clip_448(pretrained=False, progress=True, **kwargs):
    """ViT-B/32 CLIP image tower at 448, fine-tuned on ImageNet: width 768, 12 blocks, 12 heads, a norm before the
    blocks, LayerNorm eps 1e-5."""
    return _vit("vit_base_patch32_clip_448", pretrained, progress, kwargs, img_size=448, patch_size=32, embed_dim=768,
                depth=12, num_heads=12, **_CLIP)


@register_model
def vit_large_patch14_clip_224(pretrained=False, progress=True, **kwargs):
    """ViT-L/14 CLIP image tower at 224, fine-tuned on ImageNet: width 1024, 24 blocks, 16 heads, a norm before the
    blocks, LayerNorm eps 1e-5."""
    return _vit("vit_large_patch14_clip_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1024, depth=24,
                num_heads=16, **_CLIP)


@register_model
def vit_large_patch14_clip_336(pretrained=False, progress=True, **kwargs):
    """ViT-L/14 CLIP image tower at 336, fine-tuned on ImageNet: width 1024, 24 blocks, 16 heads, a norm before the
    blocks, LayerNorm eps 1e-5."""
    return _vit("vit_large_patch14_clip_336", pretrained, progress, kwargs, img_size=336, patch_size=14, embed_dim=1024,
                depth=24, num_heads=16, **_CLIP)


@register_model
def vit_huge_patch14_clip_224(pretrained=False, progress=True, **kwargs):
    """ViT-H/14 CLIP image tower at 224, fine-tuned on ImageNet: width 1280, 32 blocks, 16 heads, a norm before the
    blocks, LayerNorm eps 1e-5."""
    return _vit("vit_huge_patch14_clip_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1280, depth=32,
                num_heads=16, **_CLIP)


@register_model
def vit_huge_patch14_clip_336(pretrained=False, progress=True, **kwargs):
    """ViT-H/14 CLIP image tower at 336, fine-tuned on ImageNet: width 1280, 32 blocks, 16 heads, a norm before the
    blocks, LayerNorm eps 1e-5."""
    return _vit("vit_huge_patch14_clip_336", pretrained, progress, kwargs, img_size=336, patch_size=14, embed_dim=1280,
                depth=32, num_heads=16, **_CLIP)


@register_model
def flexivit_small(pretrained=False, progress=True, **kwargs):
    """FlexiViT-S at 240 with 16-pixel patches (trained for any patch size): width 384, 12 blocks, 6 heads, no
    position embedding for the class token."""
    return _vit("flexivit_small", pretrained, progress, kwargs, img_size=240, patch_size=16, embed_dim=384, depth=12,
                num_heads=6, no_embed_class=True)


@register_model
def flexivit_base(pretrained=False, progress=True, **kwargs):
    """FlexiViT-B at 240 with 16-pixel patches (trained for any patch size): width 768, 12 blocks, 12 heads, no
    position embedding for the class token."""
    return _vit("flexivit_base", pretrained, progress, kwargs, img_size=240, patch_size=16, embed_dim=768, depth=12,
                num_heads=12, no_embed_class=True)


@register_model
def flexivit_large(pretrained=False, progress=True, **kwargs):
    """FlexiViT-L at 240 with 16-pixel patches (trained for any patch size): width 1024, 24 blocks, 16 heads, no
    position embedding for the class token."""
    return _vit("flexivit_large", pretrained, progress, kwargs, img_size=240, patch_size=16, embed_dim=1024, depth=24,
                num_heads=16, no_embed_class=True)


@register_model
def eva_large_patch14_196(pretrained=False, progress=True, **kwargs):
    """EVA-L/14 at 196 (MIM pre-training towards EVA-CLIP features): width 1024, 24 blocks, 16 heads, average
    pooling."""
    return _vit("eva_large_patch14_196", pretrained, progress, kwargs, img_size=196, patch_size=14, embed_dim=1024,
                depth=24, num_heads=16, global_pool="avg")


@register_model
def eva_large_patch14_336(pretrained=False, progress=True, **kwargs):
    """EVA-L/14 at 336 (MIM pre-training towards EVA-CLIP features): width 1024, 24 blocks, 16 heads, average
    pooling."""
    return _vit("eva_large_patch14_336", pretrained, progress, kwargs, img_size=336, patch_size=14, embed_dim=1024,
                depth=24, num_heads=16, global_pool="avg")


@register_model
def beit3_base_patch16_224(pretrained=False, progress=True, **kwargs):
    """BEiT-3 Base's image branch at 224: width 768, 12 blocks, 12 heads, norms before the attention projection and
    inside the MLP, average pooling, LayerNorm eps 1e-5."""
    return _vit("beit3_base_patch16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=12,
                num_heads=12, **_BEIT3)


@register_model
def beit3_large_patch16_224(pretrained=False, progress=True, **kwargs):
    """BEiT-3 Large's image branch at 224: width 1024, 24 blocks, 16 heads, norms before the attention projection
    and inside the MLP, average pooling, LayerNorm eps 1e-5."""
    return _vit("beit3_large_patch16_224", pretrained, progress, kwargs, patch_size=16, embed_dim=1024, depth=24,
                num_heads=16, **_BEIT3)


@register_model
def vit_base_patch16_rpn_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224 with residual post-norm blocks (``ResPostBlock``), no class token, average pooling, no qkv
    biases."""
    return _vit("vit_base_patch16_rpn_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=12,
                num_heads=12, qkv_bias=False, init_values=1e-5, class_token=False, block_fn=ResPostBlock,
                global_pool="avg")


@register_model
def vit_medium_patch16_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-M/16 at 256: width 512, 12 blocks, 8 heads, no class token, average pooling after the final norm, layer
    scale, no qkv biases."""
    return _vit("vit_medium_patch16_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16, embed_dim=512,
                depth=12, num_heads=8, class_token=False, global_pool="avg", qkv_bias=False, init_values=1e-6,
                fc_norm=False)


@register_model
def vit_medium_patch16_gap_384(pretrained=False, progress=True, **kwargs):
    """ViT-M/16 at 384: width 512, 12 blocks, 8 heads, no class token, average pooling after the final norm, layer
    scale, no qkv biases."""
    return _vit("vit_medium_patch16_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=512,
                depth=12, num_heads=8, class_token=False, global_pool="avg", qkv_bias=False, init_values=1e-6,
                fc_norm=False)


@register_model
def vit_wee_patch16_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-wee/16 at 256 with 1 register token: width 256, 14 blocks, 4 heads, MLP ratio 5, layer scale, average
    pooling."""
    return _vit("vit_wee_patch16_reg1_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=256, depth=14, num_heads=4, mlp_ratio=5, reg_tokens=1, **_SBB)


@register_model
def vit_pwee_patch16_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-pwee/16 at 256 with 1 register token: width 256, 16 blocks, 4 heads, MLP ratio 5, parallel blocks, layer
    scale, average pooling."""
    return _vit("vit_pwee_patch16_reg1_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=256, depth=16, num_heads=4, mlp_ratio=5, reg_tokens=1, block_fn=ParallelScalingBlock, **_SBB)


@register_model
def vit_dwee_patch16_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-dwee/16 at 256 with 1 register token: width 256, 14 blocks, 4 heads, MLP ratio 5, differential attention,
    layer scale, average pooling."""
    return _vit("vit_dwee_patch16_reg1_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=256, depth=14, num_heads=4, mlp_ratio=5, reg_tokens=1, attn_layer="diff", **_SBB)


@register_model
def vit_dpwee_patch16_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-dpwee/16 at 256 with 1 register token: width 256, 16 blocks, 4 heads, MLP ratio 5, parallel blocks with
    differential attention, layer scale, average pooling."""
    return _vit("vit_dpwee_patch16_reg1_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=256, depth=16, num_heads=4, mlp_ratio=5, reg_tokens=1, block_fn=DiffParallelScalingBlock,
                **_SBB)


@register_model
def vit_little_patch16_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-little/16 at 256 with 1 register token: width 320, 14 blocks, 5 heads, MLP ratio 5.6, layer scale,
    average pooling."""
    return _vit("vit_little_patch16_reg1_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=320, depth=14, num_heads=5, mlp_ratio=5.6, reg_tokens=1, **_SBB)


@register_model
def vit_little_patch16_reg4_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-little/16 at 256 with 4 register tokens: width 320, 14 blocks, 5 heads, MLP ratio 5.6, layer scale,
    average pooling."""
    return _vit("vit_little_patch16_reg4_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=320, depth=14, num_heads=5, mlp_ratio=5.6, reg_tokens=4, **_SBB)


@register_model
def vit_dlittle_patch16_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-dlittle/16 at 256 with 1 register token: width 320, 14 blocks, 5 heads, MLP ratio 5.6, differential
    attention, layer scale, average pooling."""
    return _vit("vit_dlittle_patch16_reg1_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=320, depth=14, num_heads=5, mlp_ratio=5.6, reg_tokens=1, attn_layer="diff", **_SBB)


@register_model
def vit_medium_patch16_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-medium/16 at 256 with 1 register token: width 512, 12 blocks, 8 heads, layer scale, average pooling."""
    return _vit("vit_medium_patch16_reg1_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=512, depth=12, num_heads=8, reg_tokens=1, **_SBB)


@register_model
def vit_medium_patch16_reg4_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-medium/16 at 256 with 4 register tokens: width 512, 12 blocks, 8 heads, layer scale, average pooling."""
    return _vit("vit_medium_patch16_reg4_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=512, depth=12, num_heads=8, reg_tokens=4, **_SBB)


@register_model
def vit_mediumd_patch16_reg4_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-mediumd/16 at 256 with 4 register tokens: width 512, 20 blocks, 8 heads, layer scale, average pooling."""
    return _vit("vit_mediumd_patch16_reg4_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=512, depth=20, num_heads=8, reg_tokens=4, **_SBB)


@register_model
def vit_mediumd_patch16_reg4_gap_384(pretrained=False, progress=True, **kwargs):
    """ViT-mediumd/16 at 384 with 4 register tokens: width 512, 20 blocks, 8 heads, layer scale, average pooling."""
    return _vit("vit_mediumd_patch16_reg4_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=512, depth=20, num_heads=8, reg_tokens=4, **_SBB)


@register_model
def vit_betwixt_patch16_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-betwixt/16 at 256 with 1 register token: width 640, 12 blocks, 10 heads, layer scale, average pooling."""
    return _vit("vit_betwixt_patch16_reg1_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=640, depth=12, num_heads=10, reg_tokens=1, **_SBB)


@register_model
def vit_betwixt_patch16_reg4_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-betwixt/16 at 256 with 4 register tokens: width 640, 12 blocks, 10 heads, layer scale, average
    pooling."""
    return _vit("vit_betwixt_patch16_reg4_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=640, depth=12, num_heads=10, reg_tokens=4, **_SBB)


@register_model
def vit_betwixt_patch16_reg4_gap_384(pretrained=False, progress=True, **kwargs):
    """ViT-betwixt/16 at 384 with 4 register tokens: width 640, 12 blocks, 10 heads, layer scale, average
    pooling."""
    return _vit("vit_betwixt_patch16_reg4_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=640, depth=12, num_heads=10, reg_tokens=4, **_SBB)


@register_model
def vit_so150m_patch16_reg4_gap_256(pretrained=False, progress=True, **kwargs):
    """SO150M/16 at 256 (a shape-optimised width and depth) with 4 register tokens: width 896, 18 blocks, 14 heads,
    MLP ratio 2.572, average pooling after the final norm."""
    return _vit("vit_so150m_patch16_reg4_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=896, depth=18, num_heads=14, mlp_ratio=2.572, class_token=False, reg_tokens=4,
                global_pool="avg", fc_norm=False)


@register_model
def vit_so150m_patch16_reg4_gap_384(pretrained=False, progress=True, **kwargs):
    """SO150M/16 at 384 (a shape-optimised width and depth) with 4 register tokens: width 896, 18 blocks, 14 heads,
    MLP ratio 2.572, average pooling after the final norm."""
    return _vit("vit_so150m_patch16_reg4_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=896, depth=18, num_heads=14, mlp_ratio=2.572, class_token=False, reg_tokens=4,
                global_pool="avg", fc_norm=False)


@register_model
def vit_so150m2_patch16_reg1_gap_256(pretrained=False, progress=True, **kwargs):
    """SO150M v2/16 at 256 with 1 register token: width 832, 21 blocks, 13 heads, MLP ratio 34/13, layer scale, no
    qkv biases, average pooling."""
    return _vit("vit_so150m2_patch16_reg1_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=832, depth=21, num_heads=13, mlp_ratio=34 / 13, init_values=1e-5, qkv_bias=False,
                class_token=False, reg_tokens=1, global_pool="avg")


@register_model
def vit_so150m2_patch16_reg1_gap_384(pretrained=False, progress=True, **kwargs):
    """SO150M v2/16 at 384 with 1 register token: width 832, 21 blocks, 13 heads, MLP ratio 34/13, layer scale, no
    qkv biases, average pooling."""
    return _vit("vit_so150m2_patch16_reg1_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=832, depth=21, num_heads=13, mlp_ratio=34 / 13, init_values=1e-5, qkv_bias=False,
                class_token=False, reg_tokens=1, global_pool="avg")


@register_model
def vit_so150m2_patch16_reg1_gap_448(pretrained=False, progress=True, **kwargs):
    """SO150M v2/16 at 448 with 1 register token: width 832, 21 blocks, 13 heads, MLP ratio 34/13, layer scale, no
    qkv biases, average pooling."""
    return _vit("vit_so150m2_patch16_reg1_gap_448", pretrained, progress, kwargs, img_size=448, patch_size=16,
                embed_dim=832, depth=21, num_heads=13, mlp_ratio=34 / 13, init_values=1e-5, qkv_bias=False,
                class_token=False, reg_tokens=1, global_pool="avg")


@register_model
def vit_so400m_patch14_siglip_378(pretrained=False, progress=True, **kwargs):
    """SigLIP So400m/14 image tower at 378, fine-tuned on ImageNet: width 1152, 27 blocks, 16 heads, MLP ratio
    3.7362, no class token, attention pooling ('map'). 1000 classes by default (timm's first weights, the image
    tower, have none)."""
    return _vit("vit_so400m_patch14_siglip_378", pretrained, progress, kwargs, img_size=378, patch_size=14,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="map")


@register_model
def vit_so400m_patch14_siglip_gap_378(pretrained=False, progress=True, **kwargs):
    """SigLIP So400m/14 image tower at 378 with average pooling (after the final norm), fine-tuned on ImageNet:
    width 1152, 27 blocks, 16 heads, MLP ratio 3.7362. 1000 classes by default (timm's first weights, the image
    tower, have none)."""
    return _vit("vit_so400m_patch14_siglip_gap_378", pretrained, progress, kwargs, img_size=378, patch_size=14,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="avg",
                fc_norm=False)


@register_model
def vit_base_patch16_gap_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224 without class token: width 768, 12 blocks, 16 heads, average pooling after the final norm."""
    return _vit("vit_base_patch16_gap_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=12,
                num_heads=16, class_token=False, global_pool="avg", fc_norm=False)


@register_model
def vit_base_patch16_plus_240(pretrained=False, progress=True, **kwargs):
    """ViT-B/16+ at 240: width 896, 12 blocks, 14 heads, layer scale."""
    return _vit("vit_base_patch16_plus_240", pretrained, progress, kwargs, img_size=240, patch_size=16, embed_dim=896,
                depth=12, num_heads=14, init_values=1e-5)


@register_model
def vit_base_patch32_plus_256(pretrained=False, progress=True, **kwargs):
    """ViT-B/32+ at 256: width 896, 12 blocks, 14 heads, layer scale."""
    return _vit("vit_base_patch32_plus_256", pretrained, progress, kwargs, img_size=256, patch_size=32, embed_dim=896,
                depth=12, num_heads=14, init_values=1e-5)


@register_model
def vit_base_patch16_reg4_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 256 with 4 register tokens and no class token: width 768, 12 blocks, 12 heads, average
    pooling."""
    return _vit("vit_base_patch16_reg4_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=768, depth=12, num_heads=12, class_token=False, no_embed_class=True, global_pool="avg",
                reg_tokens=4)


@register_model
def vit_betwixt_patch16_gap_256(pretrained=False, progress=True, **kwargs):
    """ViT-betwixt/16 at 256 without class token: width 640, 12 blocks, 10 heads, no qkv biases, layer scale,
    average pooling after the final norm."""
    return _vit("vit_betwixt_patch16_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=640, depth=12, num_heads=10, class_token=False, global_pool="avg", qkv_bias=False,
                init_values=1e-6, fc_norm=False)


@register_model
def vit_so150m_patch16_reg4_map_256(pretrained=False, progress=True, **kwargs):
    """SO150M/16 at 256 with 4 register tokens: width 896, 18 blocks, 14 heads, MLP ratio 2.572, attention
    pooling."""
    return _vit("vit_so150m_patch16_reg4_map_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=896, depth=18, num_heads=14, mlp_ratio=2.572, class_token=False, reg_tokens=4,
                global_pool="map")


@register_model
def vit_large_patch14_224(pretrained=False, progress=True, **kwargs):
    """ViT-L/14 at 224: width 1024, 24 blocks, 16 heads."""
    return _vit("vit_large_patch14_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1024, depth=24,
                num_heads=16)


@register_model
def vit_giant_patch14_224(pretrained=False, progress=True, **kwargs):
    """ViT-g/14 at 224 (Zhai et al. 2022, "Scaling Vision Transformers"): width 1408, 40 blocks, 16 heads, MLP
    ratio 48/11."""
    return _vit("vit_giant_patch14_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1408, mlp_ratio=48 / 11,
                depth=40, num_heads=16)


@register_model
def vit_gigantic_patch14_224(pretrained=False, progress=True, **kwargs):
    """ViT-G/14 at 224 (Zhai et al. 2022, "Scaling Vision Transformers"): width 1664, 48 blocks, 16 heads, MLP
    ratio 64/13."""
    return _vit("vit_gigantic_patch14_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1664,
                mlp_ratio=64 / 13, depth=48, num_heads=16)


@register_model
def vit_small_patch16_36x1_224(pretrained=False, progress=True, **kwargs):
    """ViT-S/16 at 224, 36 blocks deep (the serial baseline of the 18x2 parallel model): width 384, 6 heads, layer
    scale."""
    return _vit("vit_small_patch16_36x1_224", pretrained, progress, kwargs, patch_size=16, embed_dim=384, depth=36,
                num_heads=6, init_values=1e-5)


@register_model
def vit_small_patch16_18x2_224(pretrained=False, progress=True, **kwargs):
    """ViT-S/16 at 224 with 18 blocks of two parallel attention and two parallel MLP branches
    (``ParallelThingsBlock``): width 384, 6 heads, layer scale."""
    return _vit("vit_small_patch16_18x2_224", pretrained, progress, kwargs, patch_size=16, embed_dim=384, depth=18,
                num_heads=6, init_values=1e-5, block_fn=ParallelThingsBlock)


@register_model
def vit_base_patch16_18x2_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224 with 18 blocks of two parallel attention and two parallel MLP branches
    (``ParallelThingsBlock``): width 768, 12 heads, layer scale."""
    return _vit("vit_base_patch16_18x2_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=18,
                num_heads=12, init_values=1e-5, block_fn=ParallelThingsBlock)


@register_model
def vit_base_patch16_xp_224(pretrained=False, progress=True, **kwargs):
    """ViT-B/16 at 224 with parallel blocks (``ParallelScalingBlock``), query-key norms, RMS norms, a norm before
    the blocks, no qkv biases and no position embedding for the class token."""
    return _vit("vit_base_patch16_xp_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=12,
                num_heads=12, **_XP)


@register_model
def vit_large_patch14_xp_224(pretrained=False, progress=True, **kwargs):
    """ViT-L/14 at 224 with parallel blocks (``ParallelScalingBlock``), query-key norms, RMS norms, a norm before
    the blocks, no qkv biases and no position embedding for the class token."""
    return _vit("vit_large_patch14_xp_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1024, depth=24,
                num_heads=16, **_XP)


@register_model
def vit_huge_patch14_xp_224(pretrained=False, progress=True, **kwargs):
    """ViT-H/14 at 224 with parallel blocks (``ParallelScalingBlock``), query-key norms, RMS norms, a norm before
    the blocks, no qkv biases and no position embedding for the class token."""
    return _vit("vit_huge_patch14_xp_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1280, depth=32,
                num_heads=16, **_XP)


@register_model
def beit3_giant_patch14_224(pretrained=False, progress=True, **kwargs):
    """BEiT-3 Giant's image branch at 224: width 1408, 40 blocks, 16 heads, MLP ratio 4.3637, norms before the
    attention projection and inside the MLP, average pooling, LayerNorm eps 1e-5."""
    return _vit("beit3_giant_patch14_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1408, depth=40,
                num_heads=16, mlp_ratio=4.3637, class_token=True, **_BEIT3)


@register_model
def beit3_giant_patch14_336(pretrained=False, progress=True, **kwargs):
    """BEiT-3 Giant's image branch at 336: width 1408, 40 blocks, 16 heads, MLP ratio 4.3637, norms before the
    attention projection and inside the MLP, average pooling, LayerNorm eps 1e-5."""
    return _vit("beit3_giant_patch14_336", pretrained, progress, kwargs, img_size=336, patch_size=14, embed_dim=1408,
                depth=40, num_heads=16, mlp_ratio=4.3637, class_token=True, **_BEIT3)


@register_model
def test_vit(pretrained=False, progress=True, **kwargs):
    """timm's tiny test ViT/16 at 160 (any size): width 64, 6 blocks, 2 heads, MLP ratio 3."""
    return _vit("test_vit", pretrained, progress, kwargs, img_size=160, patch_size=16, embed_dim=64, depth=6,
                num_heads=2, mlp_ratio=3, dynamic_img_size=True)


@register_model
def test_vit2(pretrained=False, progress=True, **kwargs):
    """timm's tiny test ViT/16 at 160 (any size) with 1 register token and no class token: width 64, 8 blocks,
    2 heads, MLP ratio 3, layer scale, average pooling."""
    return _vit("test_vit2", pretrained, progress, kwargs, img_size=160, patch_size=16, embed_dim=64, depth=8,
                num_heads=2, mlp_ratio=3, class_token=False, reg_tokens=1, global_pool="avg", init_values=1e-5,
                dynamic_img_size=True)


@register_model
def test_vit3(pretrained=False, progress=True, **kwargs):
    """timm's tiny test ViT/16 at 160 with 1 register token and no class token: width 96, 9 blocks, 3 heads, MLP
    ratio 2, layer scale, attention pooling over every token."""
    return _vit("test_vit3", pretrained, progress, kwargs, img_size=160, patch_size=16, embed_dim=96, depth=9,
                num_heads=3, mlp_ratio=2, class_token=False, reg_tokens=1, global_pool="map",
                pool_include_prefix=True, init_values=1e-5)


@register_model
def test_vit4(pretrained=False, progress=True, **kwargs):
    """timm's tiny test ViT/16 at 160 (any size) with 1 register token and no class token: width 96, 9 blocks,
    3 heads, MLP ratio 3, RMS norms, layer scale, average pooling."""
    return _vit("test_vit4", pretrained, progress, kwargs, img_size=160, patch_size=16, embed_dim=96, depth=9,
                num_heads=3, mlp_ratio=3, class_token=False, reg_tokens=1, global_pool="avg", init_values=1e-5,
                dynamic_img_size=True, norm_layer="rmsnorm")


@register_model
def vit_small_patch14_dinov2(pretrained=False, progress=True, **kwargs):
    """DINOv2 ViT-S/14 encoder at 518: width 384, 12 blocks, 6 heads, layer scale."""
    return _vit("vit_small_patch14_dinov2", pretrained, progress, kwargs, img_size=518, patch_size=14, embed_dim=384,
                depth=12, num_heads=6, init_values=1e-5)


@register_model
def vit_base_patch14_dinov2(pretrained=False, progress=True, **kwargs):
    """DINOv2 ViT-B/14 encoder at 518: width 768, 12 blocks, 12 heads, layer scale."""
    return _vit("vit_base_patch14_dinov2", pretrained, progress, kwargs, img_size=518, patch_size=14, embed_dim=768,
                depth=12, num_heads=12, init_values=1e-5)


@register_model
def vit_large_patch14_dinov2(pretrained=False, progress=True, **kwargs):
    """DINOv2 ViT-L/14 encoder at 518: width 1024, 24 blocks, 16 heads, layer scale."""
    return _vit("vit_large_patch14_dinov2", pretrained, progress, kwargs, img_size=518, patch_size=14, embed_dim=1024,
                depth=24, num_heads=16, init_values=1e-5)


@register_model
def vit_giant_patch14_dinov2(pretrained=False, progress=True, **kwargs):
    """DINOv2 ViT-g/14 encoder at 518: width 1536, 40 blocks, 24 heads, packed SwiGLU, layer scale."""
    return _vit("vit_giant_patch14_dinov2", pretrained, progress, kwargs, img_size=518, patch_size=14, embed_dim=1536,
                depth=40, num_heads=24, init_values=1e-5, **_PACKED_SWIGLU)


@register_model
def vit_small_patch14_reg4_dinov2(pretrained=False, progress=True, **kwargs):
    """DINOv2 ViT-S/14, 4 registers, encoder at 518: width 384, 12 blocks, 6 heads, layer scale."""
    return _vit("vit_small_patch14_reg4_dinov2", pretrained, progress, kwargs, img_size=518, patch_size=14,
                embed_dim=384, depth=12, num_heads=6, init_values=1e-5, reg_tokens=4, no_embed_class=True)


@register_model
def vit_base_patch14_reg4_dinov2(pretrained=False, progress=True, **kwargs):
    """DINOv2 ViT-B/14, 4 registers, encoder at 518: width 768, 12 blocks, 12 heads, layer scale."""
    return _vit("vit_base_patch14_reg4_dinov2", pretrained, progress, kwargs, img_size=518, patch_size=14,
                embed_dim=768, depth=12, num_heads=12, init_values=1e-5, reg_tokens=4, no_embed_class=True)


@register_model
def vit_large_patch14_reg4_dinov2(pretrained=False, progress=True, **kwargs):
    """DINOv2 ViT-L/14, 4 registers, encoder at 518: width 1024, 24 blocks, 16 heads, layer scale."""
    return _vit("vit_large_patch14_reg4_dinov2", pretrained, progress, kwargs, img_size=518, patch_size=14,
                embed_dim=1024, depth=24, num_heads=16, init_values=1e-5, reg_tokens=4, no_embed_class=True)


@register_model
def vit_giant_patch14_reg4_dinov2(pretrained=False, progress=True, **kwargs):
    """DINOv2 ViT-g/14, 4 registers, encoder at 518: width 1536, 40 blocks, 24 heads, packed SwiGLU, layer scale."""
    return _vit("vit_giant_patch14_reg4_dinov2", pretrained, progress, kwargs, img_size=518, patch_size=14,
                embed_dim=1536, depth=40, num_heads=24, init_values=1e-5, reg_tokens=4, no_embed_class=True,
                **_PACKED_SWIGLU)


@register_model
def vit_base_patch16_siglip_224(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/16 tower at 224: width 768, 12 blocks, 12 heads, no class token, attention pool."""
    return _vit("vit_base_patch16_siglip_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=12,
                num_heads=12, class_token=False, global_pool="map")


@register_model
def vit_base_patch16_siglip_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/16 tower at 256: width 768, 12 blocks, 12 heads, no class token, attention pool."""
    return _vit("vit_base_patch16_siglip_256", pretrained, progress, kwargs, img_size=256, patch_size=16, embed_dim=768,
                depth=12, num_heads=12, class_token=False, global_pool="map")


@register_model
def vit_base_patch16_siglip_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/16 tower at 384: width 768, 12 blocks, 12 heads, no class token, attention pool."""
    return _vit("vit_base_patch16_siglip_384", pretrained, progress, kwargs, img_size=384, patch_size=16, embed_dim=768,
                depth=12, num_heads=12, class_token=False, global_pool="map")


@register_model
def vit_base_patch16_siglip_512(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/16 tower at 512: width 768, 12 blocks, 12 heads, no class token, attention pool."""
    return _vit("vit_base_patch16_siglip_512", pretrained, progress, kwargs, img_size=512, patch_size=16, embed_dim=768,
                depth=12, num_heads=12, class_token=False, global_pool="map")


@register_model
def vit_base_patch16_siglip_gap_224(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/16 tower at 224: width 768, 12 blocks, 12 heads, no class token, average pool."""
    return _vit("vit_base_patch16_siglip_gap_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768, depth=12,
                num_heads=12, class_token=False, global_pool="avg", fc_norm=False)


@register_model
def vit_base_patch16_siglip_gap_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/16 tower at 256: width 768, 12 blocks, 12 heads, no class token, average pool."""
    return _vit("vit_base_patch16_siglip_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=768, depth=12, num_heads=12, class_token=False, global_pool="avg", fc_norm=False)


@register_model
def vit_base_patch16_siglip_gap_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/16 tower at 384: width 768, 12 blocks, 12 heads, no class token, average pool."""
    return _vit("vit_base_patch16_siglip_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=768, depth=12, num_heads=12, class_token=False, global_pool="avg", fc_norm=False)


@register_model
def vit_base_patch16_siglip_gap_512(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/16 tower at 512: width 768, 12 blocks, 12 heads, no class token, average pool."""
    return _vit("vit_base_patch16_siglip_gap_512", pretrained, progress, kwargs, img_size=512, patch_size=16,
                embed_dim=768, depth=12, num_heads=12, class_token=False, global_pool="avg", fc_norm=False)


@register_model
def vit_base_patch32_siglip_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/32 tower at 256: width 768, 12 blocks, 12 heads, no class token, attention pool, tanh GELU."""
    return _vit("vit_base_patch32_siglip_256", pretrained, progress, kwargs, img_size=256, patch_size=32, embed_dim=768,
                depth=12, num_heads=12, class_token=False, global_pool="map", act_layer="gelu_tanh")


@register_model
def vit_base_patch32_siglip_gap_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-B/32 tower at 256: width 768, 12 blocks, 12 heads, no class token, average pool, tanh GELU."""
    return _vit("vit_base_patch32_siglip_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=32,
                embed_dim=768, depth=12, num_heads=12, class_token=False, global_pool="avg", fc_norm=False,
                act_layer="gelu_tanh")


@register_model
def vit_large_patch16_siglip_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-L/16 tower at 256: width 1024, 24 blocks, 16 heads, no class token, attention pool."""
    return _vit("vit_large_patch16_siglip_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=1024, depth=24, num_heads=16, class_token=False, global_pool="map")


@register_model
def vit_large_patch16_siglip_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-L/16 tower at 384: width 1024, 24 blocks, 16 heads, no class token, attention pool."""
    return _vit("vit_large_patch16_siglip_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=1024, depth=24, num_heads=16, class_token=False, global_pool="map")


@register_model
def vit_large_patch16_siglip_512(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-L/16 tower at 512: width 1024, 24 blocks, 16 heads, no class token, attention pool, tanh GELU."""
    return _vit("vit_large_patch16_siglip_512", pretrained, progress, kwargs, img_size=512, patch_size=16,
                embed_dim=1024, depth=24, num_heads=16, class_token=False, global_pool="map", act_layer="gelu_tanh")


@register_model
def vit_large_patch16_siglip_gap_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-L/16 tower at 256: width 1024, 24 blocks, 16 heads, no class token, average pool."""
    return _vit("vit_large_patch16_siglip_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=1024, depth=24, num_heads=16, class_token=False, global_pool="avg", fc_norm=False)


@register_model
def vit_large_patch16_siglip_gap_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-L/16 tower at 384: width 1024, 24 blocks, 16 heads, no class token, average pool."""
    return _vit("vit_large_patch16_siglip_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=1024, depth=24, num_heads=16, class_token=False, global_pool="avg", fc_norm=False)


@register_model
def vit_large_patch16_siglip_gap_512(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-L/16 tower at 512: width 1024, 24 blocks, 16 heads, no class token, average pool, tanh GELU."""
    return _vit("vit_large_patch16_siglip_gap_512", pretrained, progress, kwargs, img_size=512, patch_size=16,
                embed_dim=1024, depth=24, num_heads=16, class_token=False, global_pool="avg", fc_norm=False,
                act_layer="gelu_tanh")


@register_model
def vit_so400m_patch14_siglip_224(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/14 tower at 224: width 1152, 27 blocks, 16 heads, no class token, attention pool."""
    return _vit("vit_so400m_patch14_siglip_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1152, depth=27,
                num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="map")


@register_model
def vit_so400m_patch14_siglip_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/14 tower at 384: width 1152, 27 blocks, 16 heads, no class token, attention pool."""
    return _vit("vit_so400m_patch14_siglip_384", pretrained, progress, kwargs, img_size=384, patch_size=14,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="map")


@register_model
def vit_so400m_patch14_siglip_gap_224(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/14 tower at 224: width 1152, 27 blocks, 16 heads, no class token, average pool."""
    return _vit("vit_so400m_patch14_siglip_gap_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1152,
                depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="avg", fc_norm=False)


@register_model
def vit_so400m_patch14_siglip_gap_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/14 tower at 384: width 1152, 27 blocks, 16 heads, no class token, average pool."""
    return _vit("vit_so400m_patch14_siglip_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=14,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="avg",
                fc_norm=False)


@register_model
def vit_so400m_patch14_siglip_gap_448(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/14 tower at 448: width 1152, 27 blocks, 16 heads, no class token, average pool."""
    return _vit("vit_so400m_patch14_siglip_gap_448", pretrained, progress, kwargs, img_size=448, patch_size=14,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="avg",
                fc_norm=False)


@register_model
def vit_so400m_patch14_siglip_gap_896(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/14 tower at 896: width 1152, 27 blocks, 16 heads, no class token, average pool."""
    return _vit("vit_so400m_patch14_siglip_gap_896", pretrained, progress, kwargs, img_size=896, patch_size=14,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="avg",
                fc_norm=False)


@register_model
def vit_so400m_patch16_siglip_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/16 tower at 256: width 1152, 27 blocks, 16 heads, no class token, attention pool, tanh GELU."""
    return _vit("vit_so400m_patch16_siglip_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="map",
                act_layer="gelu_tanh")


@register_model
def vit_so400m_patch16_siglip_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/16 tower at 384: width 1152, 27 blocks, 16 heads, no class token, attention pool, tanh GELU."""
    return _vit("vit_so400m_patch16_siglip_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="map",
                act_layer="gelu_tanh")


@register_model
def vit_so400m_patch16_siglip_512(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/16 tower at 512: width 1152, 27 blocks, 16 heads, no class token, attention pool, tanh GELU."""
    return _vit("vit_so400m_patch16_siglip_512", pretrained, progress, kwargs, img_size=512, patch_size=16,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="map",
                act_layer="gelu_tanh")


@register_model
def vit_so400m_patch16_siglip_gap_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/16 tower at 256: width 1152, 27 blocks, 16 heads, no class token, average pool, tanh GELU."""
    return _vit("vit_so400m_patch16_siglip_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="avg",
                fc_norm=False, act_layer="gelu_tanh")


@register_model
def vit_so400m_patch16_siglip_gap_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/16 tower at 384: width 1152, 27 blocks, 16 heads, no class token, average pool, tanh GELU."""
    return _vit("vit_so400m_patch16_siglip_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="avg",
                fc_norm=False, act_layer="gelu_tanh")


@register_model
def vit_so400m_patch16_siglip_gap_512(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-So400m/16 tower at 512: width 1152, 27 blocks, 16 heads, no class token, average pool, tanh GELU."""
    return _vit("vit_so400m_patch16_siglip_gap_512", pretrained, progress, kwargs, img_size=512, patch_size=16,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=3.7362, class_token=False, global_pool="avg",
                fc_norm=False, act_layer="gelu_tanh")


@register_model
def vit_giantopt_patch16_siglip_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-gopt/16 tower at 256: width 1536, 40 blocks, 16 heads, no class token, attention pool, tanh GELU."""
    return _vit("vit_giantopt_patch16_siglip_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=1536, depth=40, num_heads=16, class_token=False, global_pool="map", act_layer="gelu_tanh")


@register_model
def vit_giantopt_patch16_siglip_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-gopt/16 tower at 384: width 1536, 40 blocks, 16 heads, no class token, attention pool, tanh GELU."""
    return _vit("vit_giantopt_patch16_siglip_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=1536, depth=40, num_heads=16, class_token=False, global_pool="map", act_layer="gelu_tanh")


@register_model
def vit_giantopt_patch16_siglip_gap_256(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-gopt/16 tower at 256: width 1536, 40 blocks, 16 heads, no class token, average pool, tanh GELU."""
    return _vit("vit_giantopt_patch16_siglip_gap_256", pretrained, progress, kwargs, img_size=256, patch_size=16,
                embed_dim=1536, depth=40, num_heads=16, class_token=False, global_pool="avg", fc_norm=False,
                act_layer="gelu_tanh")


@register_model
def vit_giantopt_patch16_siglip_gap_384(pretrained=False, progress=True, **kwargs):
    """SigLIP ViT-gopt/16 tower at 384: width 1536, 40 blocks, 16 heads, no class token, average pool, tanh GELU."""
    return _vit("vit_giantopt_patch16_siglip_gap_384", pretrained, progress, kwargs, img_size=384, patch_size=16,
                embed_dim=1536, depth=40, num_heads=16, class_token=False, global_pool="avg", fc_norm=False,
                act_layer="gelu_tanh")


@register_model
def vit_base_patch16_clip_quickgelu_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-B/16 image tower at 224: width 768, 12 blocks, 12 heads, a norm before the blocks, QuickGELU."""
    return _vit("vit_base_patch16_clip_quickgelu_224", pretrained, progress, kwargs, patch_size=16, embed_dim=768,
                depth=12, num_heads=12, act_layer="quick_gelu", **_CLIP)


@register_model
def vit_base_patch16_plus_clip_240(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-B/16 image tower at 240: width 896, 12 blocks, 14 heads, a norm before the blocks."""
    return _vit("vit_base_patch16_plus_clip_240", pretrained, progress, kwargs, img_size=240, patch_size=16,
                embed_dim=896, depth=12, num_heads=14, **_CLIP)


@register_model
def vit_base_patch32_clip_256(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-B/32 image tower at 256: width 768, 12 blocks, 12 heads, a norm before the blocks."""
    return _vit("vit_base_patch32_clip_256", pretrained, progress, kwargs, img_size=256, patch_size=32, embed_dim=768,
                depth=12, num_heads=12, **_CLIP)


@register_model
def vit_base_patch32_clip_quickgelu_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-B/32 image tower at 224: width 768, 12 blocks, 12 heads, a norm before the blocks, QuickGELU."""
    return _vit("vit_base_patch32_clip_quickgelu_224", pretrained, progress, kwargs, patch_size=32, embed_dim=768,
                depth=12, num_heads=12, act_layer="quick_gelu", **_CLIP)


@register_model
def vit_betwixt_patch32_clip_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-betwixt/32 image tower at 224: width 640, 12 blocks, 10 heads, a norm before the blocks."""
    return _vit("vit_betwixt_patch32_clip_224", pretrained, progress, kwargs, patch_size=32, embed_dim=640, depth=12,
                num_heads=10, **_CLIP)


@register_model
def vit_giant_patch14_clip_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-g/14 image tower at 224: width 1408, 40 blocks, 16 heads, a norm before the blocks."""
    return _vit("vit_giant_patch14_clip_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1408,
                mlp_ratio=48 / 11, depth=40, num_heads=16, **_CLIP)


@register_model
def vit_gigantic_patch14_clip_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-bigG/14 image tower at 224: width 1664, 48 blocks, 16 heads, a norm before the blocks."""
    return _vit("vit_gigantic_patch14_clip_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1664,
                mlp_ratio=64 / 13, depth=48, num_heads=16, **_CLIP)


@register_model
def vit_gigantic_patch14_clip_378(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-bigG/14 image tower at 378: width 1664, 48 blocks, 16 heads, a norm before the blocks."""
    return _vit("vit_gigantic_patch14_clip_378", pretrained, progress, kwargs, img_size=378, patch_size=14,
                embed_dim=1664, mlp_ratio=64 / 13, depth=48, num_heads=16, **_CLIP)


@register_model
def vit_gigantic_patch14_clip_quickgelu_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-bigG/14 image tower at 224: width 1664, 48 blocks, 16 heads, a norm before the blocks, QuickGELU."""
    return _vit("vit_gigantic_patch14_clip_quickgelu_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1664,
                mlp_ratio=64 / 13, depth=48, num_heads=16, act_layer="quick_gelu", **_CLIP)


@register_model
def vit_huge_patch14_clip_378(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-H/14 image tower at 378: width 1280, 32 blocks, 16 heads, a norm before the blocks."""
    return _vit("vit_huge_patch14_clip_378", pretrained, progress, kwargs, img_size=378, patch_size=14, embed_dim=1280,
                depth=32, num_heads=16, **_CLIP)


@register_model
def vit_huge_patch14_clip_quickgelu_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-H/14 image tower at 224: width 1280, 32 blocks, 16 heads, a norm before the blocks, QuickGELU."""
    return _vit("vit_huge_patch14_clip_quickgelu_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1280,
                depth=32, num_heads=16, act_layer="quick_gelu", **_CLIP)


@register_model
def vit_huge_patch14_clip_quickgelu_378(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-H/14 image tower at 378: width 1280, 32 blocks, 16 heads, a norm before the blocks, QuickGELU."""
    return _vit("vit_huge_patch14_clip_quickgelu_378", pretrained, progress, kwargs, img_size=378, patch_size=14,
                embed_dim=1280, depth=32, num_heads=16, act_layer="quick_gelu", **_CLIP)


@register_model
def vit_large_patch14_clip_quickgelu_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-L/14 image tower at 224: width 1024, 24 blocks, 16 heads, a norm before the blocks, QuickGELU."""
    return _vit("vit_large_patch14_clip_quickgelu_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1024,
                depth=24, num_heads=16, act_layer="quick_gelu", **_CLIP)


@register_model
def vit_large_patch14_clip_quickgelu_336(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-L/14 image tower at 336: width 1024, 24 blocks, 16 heads, a norm before the blocks, QuickGELU."""
    return _vit("vit_large_patch14_clip_quickgelu_336", pretrained, progress, kwargs, img_size=336, patch_size=14,
                embed_dim=1024, depth=24, num_heads=16, act_layer="quick_gelu", **_CLIP)


@register_model
def vit_medium_patch16_clip_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-M/16 image tower at 224: width 512, 12 blocks, 8 heads, a norm before the blocks."""
    return _vit("vit_medium_patch16_clip_224", pretrained, progress, kwargs, embed_dim=512, depth=12, num_heads=8,
                **_CLIP)


@register_model
def vit_medium_patch32_clip_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-M/32 image tower at 224: width 512, 12 blocks, 8 heads, a norm before the blocks."""
    return _vit("vit_medium_patch32_clip_224", pretrained, progress, kwargs, patch_size=32, embed_dim=512, depth=12,
                num_heads=8, **_CLIP)


@register_model
def vit_xsmall_patch16_clip_224(pretrained=False, progress=True, **kwargs):
    """CLIP ViT-XS/16 image tower at 224: width 256, 10 blocks, 4 heads, a norm before the blocks."""
    return _vit("vit_xsmall_patch16_clip_224", pretrained, progress, kwargs, embed_dim=256, depth=10, num_heads=4,
                **_CLIP)


@register_model
def vit_small_patch8_224(pretrained=False, progress=True, **kwargs):
    """ViT-S/8 at 224: width 384, 12 blocks, 6 heads."""
    return _vit("vit_small_patch8_224", pretrained, progress, kwargs, patch_size=8, embed_dim=384, depth=12,
                num_heads=6)


@register_model
def vit_large_patch32_224(pretrained=False, progress=True, **kwargs):
    """ViT-L/32 at 224: width 1024, 24 blocks, 16 heads."""
    return _vit("vit_large_patch32_224", pretrained, progress, kwargs, patch_size=32, embed_dim=1024, depth=24,
                num_heads=16)


@register_model
def vit_huge_patch14_224(pretrained=False, progress=True, **kwargs):
    """ViT-H/14 at 224: width 1280, 32 blocks, 16 heads."""
    return _vit("vit_huge_patch14_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1280, depth=32,
                num_heads=16)


@register_model
def vit_huge_patch14_gap_224(pretrained=False, progress=True, **kwargs):
    """ViT-H/14 at 224: width 1280, 32 blocks, 16 heads, no class token, average pooling, no head (an encoder)."""
    return _vit("vit_huge_patch14_gap_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1280, depth=32,
                num_heads=16, class_token=False, global_pool="avg", fc_norm=False, num_classes=0)


@register_model
def vit_huge_patch16_gap_448(pretrained=False, progress=True, **kwargs):
    """ViT-H/16 at 448: width 1280, 32 blocks, 16 heads, no class token, average pooling, no head (an encoder)."""
    return _vit("vit_huge_patch16_gap_448", pretrained, progress, kwargs, img_size=448, patch_size=16, embed_dim=1280,
                depth=32, num_heads=16, class_token=False, global_pool="avg", fc_norm=False, num_classes=0)


@register_model
def vit_giant_patch16_gap_224(pretrained=False, progress=True, **kwargs):
    """ViT-g/16 at 224: width 1408, 40 blocks, 16 heads, no class token, average pooling, no head (an encoder)."""
    return _vit("vit_giant_patch16_gap_224", pretrained, progress, kwargs, patch_size=16, embed_dim=1408, depth=40,
                num_heads=16, mlp_ratio=48 / 11, class_token=False, global_pool="avg", fc_norm=False, num_classes=0)


@register_model
def vit_medium_patch16_gap_240(pretrained=False, progress=True, **kwargs):
    """ViT-M/16 at 240: width 512, 12 blocks, 8 heads, no class token, average pooling, no qkv biases, layer scale."""
    return _vit("vit_medium_patch16_gap_240", pretrained, progress, kwargs, img_size=240, patch_size=16, embed_dim=512,
                depth=12, num_heads=8, class_token=False, global_pool="avg", qkv_bias=False, init_values=1e-6,
                fc_norm=False)


@register_model
def vit_base_patch14_reg1_tipsv2(pretrained=False, progress=True, **kwargs):
    """TIPSv2 ViT-B/14 at 448, 1 register token: width 768, 12 blocks, 12 heads, layer scale."""
    return _vit("vit_base_patch14_reg1_tipsv2", pretrained, progress, kwargs, img_size=448, patch_size=14,
                embed_dim=768, depth=12, num_heads=12, init_values=1.0, reg_tokens=1, no_embed_class=True)


@register_model
def vit_large_patch14_reg1_tipsv2(pretrained=False, progress=True, **kwargs):
    """TIPSv2 ViT-L/14 at 448, 1 register token: width 1024, 24 blocks, 16 heads, layer scale."""
    return _vit("vit_large_patch14_reg1_tipsv2", pretrained, progress, kwargs, img_size=448, patch_size=14,
                embed_dim=1024, depth=24, num_heads=16, init_values=1.0, reg_tokens=1, no_embed_class=True)


@register_model
def vit_giant_patch14_reg1_tipsv2(pretrained=False, progress=True, **kwargs):
    """TIPSv2 ViT-g/14 at 448, 1 register token: width 1536, 40 blocks, 24 heads, packed SwiGLU, layer scale."""
    return _vit("vit_giant_patch14_reg1_tipsv2", pretrained, progress, kwargs, img_size=448, patch_size=14,
                embed_dim=1536, depth=40, num_heads=24, init_values=1.0, reg_tokens=1, no_embed_class=True,
                **_PACKED_SWIGLU)


@register_model
def vit_so400m_patch14_reg1_tipsv2(pretrained=False, progress=True, **kwargs):
    """TIPSv2 ViT-So400m/14 at 448, 1 register token: width 1152, 27 blocks, 16 heads, layer scale."""
    return _vit("vit_so400m_patch14_reg1_tipsv2", pretrained, progress, kwargs, img_size=448, patch_size=14,
                embed_dim=1152, depth=27, num_heads=16, init_values=1.0, mlp_ratio=4304 / 1152, reg_tokens=1,
                no_embed_class=True)


@register_model
def vit_intern300m_patch14_448(pretrained=False, progress=True, **kwargs):
    """InternViT-300M/14 at 448 (any size): width 1024, 24 blocks, 16 heads, layer scale, no final norm."""
    return _vit("vit_intern300m_patch14_448", pretrained, progress, kwargs, img_size=448, patch_size=14, embed_dim=1024,
                depth=24, num_heads=16, init_values=0.1, final_norm=False, dynamic_img_size=True)


@register_model
def vit_base_patch16_radio_v3(pretrained=False, progress=True, **kwargs):
    """C-RADIOv3 ViT-B/16 at 512 with 7 register tokens: width 768, 12 blocks, 12 heads, layer scale, no final norm."""
    return _vit("vit_base_patch16_radio_v3", pretrained, progress, kwargs, img_size=512, patch_size=16, embed_dim=768,
                depth=12, num_heads=12, init_values=1e-5, reg_tokens=7, no_embed_class=True, final_norm=False)


@register_model
def vit_large_patch16_radio_v3(pretrained=False, progress=True, **kwargs):
    """C-RADIOv3 ViT-L/16 at 512 with 7 register tokens: width 1024, 24 blocks, 16 heads, layer scale, no final norm."""
    return _vit("vit_large_patch16_radio_v3", pretrained, progress, kwargs, img_size=512, patch_size=16, embed_dim=1024,
                depth=24, num_heads=16, init_values=1e-5, reg_tokens=7, no_embed_class=True, final_norm=False)


@register_model
def vit_huge_patch16_radio_v3(pretrained=False, progress=True, **kwargs):
    """C-RADIOv3 ViT-H/16 at 512 with 7 register tokens: width 1280, 32 blocks, 16 heads, no final norm."""
    return _vit("vit_huge_patch16_radio_v3", pretrained, progress, kwargs, img_size=512, patch_size=16, embed_dim=1280,
                depth=32, num_heads=16, reg_tokens=7, no_embed_class=True, final_norm=False)


@register_model
def vit_giant_patch16_radio_v3(pretrained=False, progress=True, **kwargs):
    """C-RADIOv3 ViT-g/16 at 512 with 7 register tokens: width 1536, 40 blocks, 24 heads, no final norm."""
    return _vit("vit_giant_patch16_radio_v3", pretrained, progress, kwargs, img_size=512, patch_size=16, embed_dim=1536,
                depth=40, num_heads=24, reg_tokens=7, no_embed_class=True, final_norm=False)


@register_model
def vit_huge_patch16_radio_v4(pretrained=False, progress=True, **kwargs):
    """C-RADIOv4 ViT-H/16 at 512 with 9 register tokens: width 1280, 32 blocks, 16 heads, no final norm."""
    return _vit("vit_huge_patch16_radio_v4", pretrained, progress, kwargs, img_size=512, patch_size=16, embed_dim=1280,
                depth=32, num_heads=16, reg_tokens=9, no_embed_class=True, final_norm=False)


@register_model
def vit_so400m_patch16_radio_v4(pretrained=False, progress=True, **kwargs):
    """C-RADIOv4 ViT-So400m/16 at 512 with 9 register tokens: width 1152, 27 blocks, 16 heads, no final norm."""
    return _vit("vit_so400m_patch16_radio_v4", pretrained, progress, kwargs, img_size=512, patch_size=16,
                embed_dim=1152, depth=27, num_heads=16, mlp_ratio=4304 / 1152, reg_tokens=9, no_embed_class=True,
                final_norm=False)


@register_model
def aimv2_large_patch14_224(pretrained=False, progress=True, **kwargs):
    """AIMv2-large/14 at 224: width 1024, 24 blocks, 8 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_large_patch14_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1024, depth=24,
                num_heads=8, mlp_ratio=2.75, **_AIMV2)


@register_model
def aimv2_large_patch14_336(pretrained=False, progress=True, **kwargs):
    """AIMv2-large/14 at 336: width 1024, 24 blocks, 8 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_large_patch14_336", pretrained, progress, kwargs, img_size=336, patch_size=14, embed_dim=1024,
                depth=24, num_heads=8, mlp_ratio=2.75, **_AIMV2)


@register_model
def aimv2_large_patch14_448(pretrained=False, progress=True, **kwargs):
    """AIMv2-large/14 at 448: width 1024, 24 blocks, 8 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_large_patch14_448", pretrained, progress, kwargs, img_size=448, patch_size=14, embed_dim=1024,
                depth=24, num_heads=8, mlp_ratio=2.75, **_AIMV2)


@register_model
def aimv2_huge_patch14_224(pretrained=False, progress=True, **kwargs):
    """AIMv2-huge/14 at 224: width 1536, 24 blocks, 12 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_huge_patch14_224", pretrained, progress, kwargs, patch_size=14, embed_dim=1536, depth=24,
                num_heads=12, mlp_ratio=2.6667, **_AIMV2)


@register_model
def aimv2_huge_patch14_336(pretrained=False, progress=True, **kwargs):
    """AIMv2-huge/14 at 336: width 1536, 24 blocks, 12 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_huge_patch14_336", pretrained, progress, kwargs, img_size=336, patch_size=14, embed_dim=1536,
                depth=24, num_heads=12, mlp_ratio=2.6667, **_AIMV2)


@register_model
def aimv2_huge_patch14_448(pretrained=False, progress=True, **kwargs):
    """AIMv2-huge/14 at 448: width 1536, 24 blocks, 12 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_huge_patch14_448", pretrained, progress, kwargs, img_size=448, patch_size=14, embed_dim=1536,
                depth=24, num_heads=12, mlp_ratio=2.6667, **_AIMV2)


@register_model
def aimv2_1b_patch14_224(pretrained=False, progress=True, **kwargs):
    """AIMv2-1b/14 at 224: width 2048, 24 blocks, 16 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_1b_patch14_224", pretrained, progress, kwargs, patch_size=14, embed_dim=2048, depth=24,
                num_heads=16, mlp_ratio=2.75, **_AIMV2)


@register_model
def aimv2_1b_patch14_336(pretrained=False, progress=True, **kwargs):
    """AIMv2-1b/14 at 336: width 2048, 24 blocks, 16 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_1b_patch14_336", pretrained, progress, kwargs, img_size=336, patch_size=14, embed_dim=2048,
                depth=24, num_heads=16, mlp_ratio=2.75, **_AIMV2)


@register_model
def aimv2_1b_patch14_448(pretrained=False, progress=True, **kwargs):
    """AIMv2-1b/14 at 448: width 2048, 24 blocks, 16 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_1b_patch14_448", pretrained, progress, kwargs, img_size=448, patch_size=14, embed_dim=2048,
                depth=24, num_heads=16, mlp_ratio=2.75, **_AIMV2)


@register_model
def aimv2_3b_patch14_224(pretrained=False, progress=True, **kwargs):
    """AIMv2-3b/14 at 224: width 3072, 24 blocks, 24 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_3b_patch14_224", pretrained, progress, kwargs, patch_size=14, embed_dim=3072, depth=24,
                num_heads=24, mlp_ratio=2.6667, **_AIMV2)


@register_model
def aimv2_3b_patch14_336(pretrained=False, progress=True, **kwargs):
    """AIMv2-3b/14 at 336: width 3072, 24 blocks, 24 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_3b_patch14_336", pretrained, progress, kwargs, img_size=336, patch_size=14, embed_dim=3072,
                depth=24, num_heads=24, mlp_ratio=2.6667, **_AIMV2)


@register_model
def aimv2_3b_patch14_448(pretrained=False, progress=True, **kwargs):
    """AIMv2-3b/14 at 448: width 3072, 24 blocks, 24 heads, RMS norms, SwiGLU MLPs, no biases, average pooling."""
    return _vit("aimv2_3b_patch14_448", pretrained, progress, kwargs, img_size=448, patch_size=14, embed_dim=3072,
                depth=24, num_heads=24, mlp_ratio=2.6667, **_AIMV2)
