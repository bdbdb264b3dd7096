"""Vision Transformer (Dosovitskiy et al. 2020, "An Image is Worth 16x16 Words: Transformers for Image
Recognition at Scale"): ViT-B/16, B/32, L/16, L/32 and H/14.

An image is cut into patches by a strided convolution; the patch tokens, a learnt class token and
learnt position embeddings go through pre-norm transformer blocks, and the class token's final
state is classified. Module names, state_dict keys and initialisation follow torchvision, so its
checkpoints load directly, including its older ones (MLP keys ``linear_1``/``linear_2``).

Position embeddings are made for the patch grid of ``image_size``. A checkpoint made at another image
size loads with them resized (bicubic over the grid, corners aligned, as torchvision's
``interpolate_embeddings``), and where torchvision accepts only images of ``image_size``, other sizes
(at least one patch, any aspect ratio) run here with the embeddings resized the same way on the fly;
at ``image_size`` the results are torchvision's.

``conv_stem_configs`` replaces the patch convolution by a convolutional stem (Xiao et al. 2021, "Early
Convolutions Help Transformers See Better"). The model API (``forward_features`` returning the
normalised token sequence, ``forward_head`` pooling the class token, ``reset_classifier``,
``in_chans``) follows timm.
"""
import math
from collections import OrderedDict
from functools import partial
from typing import Callable, NamedTuple

import numpy as np

import engine as torch
from engine import fx, nn
from engine.nn import functional as F

from ..ops.misc import MLP, Conv2dNormActivation
from ._helpers import build_model
from .registry import register_model
from .weights import get_model_weights, resolve_weights

__all__ = ["VisionTransformer", "ConvStemConfig", "interpolate_embeddings"]


class ConvStemConfig(NamedTuple):
    """One conv-norm-activation layer of a convolutional stem."""

    out_channels: int
    kernel_size: int
    stride: int
    norm_layer: Callable[..., nn.Module] = nn.BatchNorm2d
    activation_layer: Callable[..., nn.Module] = nn.ReLU


class MLPBlock(MLP):
    """The transformer's feed-forward block: Linear, GELU, dropout, Linear, dropout (Xavier-initialised)."""

    _version = 2

    def __init__(self, in_dim, mlp_dim, dropout):
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None, dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Rename the keys of version-1 checkpoints: ``linear_1`` -> ``0``, ``linear_2`` -> ``3``."""
        if version is not None and version >= 2:
            return
        for i in range(2):
            for kind in ("weight", "bias"):
                old_key = f"{prefix}linear_{i + 1}.{kind}"
                if old_key in state_dict:
                    state_dict[f"{prefix}{3 * i}.{kind}"] = state_dict.pop(old_key)


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: x + attention(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input):
        _check_tokens(input)
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x)
        x = x + input
        y = self.ln_2(x)
        y = self.mlp(y)
        return x + y


class Encoder(nn.Module):
    """Position embeddings, dropout, ``num_layers`` encoder blocks named ``encoder_layer_<i>``, a final norm."""

    def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq_length, hidden_dim).normal_(std=0.02))
        self.dropout = nn.Dropout(dropout)
        layers = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                                                        norm_layer)
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    @property
    def grid_size(self):
        """The (rows, cols) patch grid the position embeddings were made for."""
        side = math.isqrt(self.pos_embedding.shape[1] - 1)
        return side, side

    def _upgrade_state_dict(self, state_dict, prefix, version):
        """Resize a checkpoint's position embeddings made for another patch grid to this encoder's grid."""
        key = f"{prefix}pos_embedding"
        if key not in state_dict or tuple(np.shape(state_dict[key])) == tuple(self.pos_embedding.shape):
            return
        with torch.no_grad():
            state_dict[key] = _resize_pos_embedding(state_dict[key], self.grid_size)

    def forward(self, input, grid_size=None):
        """``input`` (N, 1 + rows * cols, hidden_dim); ``grid_size`` (rows, cols) of its patches when they
        are not the grid the position embeddings were made for (they are resized to it then)."""
        _check_tokens(input)
        input = input + _position_embedding_for(self.pos_embedding, grid_size)
        return self.ln(self.layers(self.dropout(input)))


def _check_tokens(x):
    """Encoder inputs are token sequences (N, S, hidden_dim); an ``_assert`` node when traced, as torchvision's."""
    torch._assert(x.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {x.shape}")


def _position_embedding_for(pos_embedding, grid_size):
    """``pos_embedding`` resized to a (rows, cols) patch grid, or as it is where ``grid_size`` is None or the grid
    it was made for."""
    side = math.isqrt(pos_embedding.shape[1] - 1)
    if grid_size is None or tuple(grid_size) == (side, side):
        return pos_embedding
    return _resize_pos_embedding(pos_embedding, grid_size)


fx.wrap("_position_embedding_for")  # branches on the input's size: one node when traced


def _head_linear(in_features, num_classes):
    """The zero-initialised classifier, or an identity when ``num_classes`` is 0."""
    if num_classes <= 0:
        return nn.Identity()
    head = nn.Linear(in_features, num_classes)
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)
    return head


class VisionTransformer(nn.Module):
    """Patch embedding, class token, transformer encoder, and a head on the class token's output.

    ``representation_size`` adds a Linear + Tanh pre-logits layer to the head; ``num_classes=0``
    replaces the final linear layer with an identity.
    """

    default_cfg = {"first_conv": "conv_proj", "classifier": "heads.head"}

    def __init__(self, image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, dropout=0.0,
                 attention_dropout=0.0, num_classes=1000, representation_size=None,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6), conv_stem_configs=None, in_chans=3):
        super().__init__()
        if image_size % patch_size != 0:
            raise AssertionError("Input shape indivisible by patch size!")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.mlp_dim = mlp_dim
        self.attention_dropout = attention_dropout
        self.dropout = dropout
        self.num_classes = num_classes
        self.representation_size = representation_size
        self.norm_layer = norm_layer
        self.num_features = hidden_dim if representation_size is None else representation_size
        self.head_hidden_size = self.num_features
        if conv_stem_configs is not None:
            self.conv_proj = _conv_stem(conv_stem_configs, in_chans, hidden_dim)
        else:
            self.conv_proj = nn.Conv2d(in_chans, hidden_dim, kernel_size=patch_size, stride=patch_size)
        seq_length = (image_size // patch_size) ** 2 + 1
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        self.encoder = Encoder(seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                               norm_layer)
        self.seq_length = seq_length
        heads_layers = OrderedDict()
        if representation_size is not None:
            heads_layers["pre_logits"] = nn.Linear(hidden_dim, representation_size)
            heads_layers["act"] = nn.Tanh()
        heads_layers["head"] = _head_linear(self.num_features, num_classes)
        self.heads = nn.Sequential(heads_layers)
        self._init_weights()

    def _init_weights(self):
        """Truncated-normal patch and pre-logits projections (std 1/sqrt(fan_in)); a conv stem's last
        1x1 conv N(0, 2/out_channels); zero biases (the head is zero from ``_head_linear``)."""
        if isinstance(self.conv_proj, nn.Conv2d):
            fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
            nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
            nn.init.zeros_(self.conv_proj.bias)
        else:
            conv_last = self.conv_proj.conv_last
            nn.init.normal_(conv_last.weight, mean=0.0, std=math.sqrt(2.0 / conv_last.out_channels))
            nn.init.zeros_(conv_last.bias)
        if self.representation_size is not None:
            pre_logits = self.heads.pre_logits
            nn.init.trunc_normal_(pre_logits.weight, std=math.sqrt(1 / pre_logits.in_features))
            nn.init.zeros_(pre_logits.bias)

    def _process_input(self, x):
        """(N, C, H, W) images -> (N, H/p * W/p, hidden_dim) patch tokens, and the (H/p, W/p) grid."""
        n, _, h, w = x.shape
        p = self.patch_size
        _check_image_size(h, w, p)
        grid_size = (h // p, w // p)
        x = self.conv_proj(x)
        x = x.reshape(n, self.hidden_dim, grid_size[0] * grid_size[1])
        return x.permute(0, 2, 1), grid_size

    def get_classifier(self):
        """The final linear layer."""
        return self.heads.head

    def reset_classifier(self, num_classes):
        """Replace the final linear layer with a zero one for ``num_classes`` (0: return the pre-logits)."""
        self.num_classes = num_classes
        self.heads.head = _head_linear(self.num_features, num_classes)

    def forward_features(self, x):
        """The encoder's normalised token sequence (N, 1 + number of patches, hidden_dim), class token first."""
        x, grid_size = self._process_input(x)
        n = x.shape[0]
        batch_class_token = self.class_token.expand(n, -1, -1)
        x = torch.cat([batch_class_token, x], dim=1)
        return self.encoder(x, grid_size)

    def forward_head(self, x, pre_logits=False):
        """The class token through the pre-logits layer (if any); then the classifier unless ``pre_logits``."""
        x = x[:, 0]
        if self.representation_size is not None:
            x = self.heads.pre_logits(x)
            x = self.heads.act(x)
        if pre_logits:
            return x
        return self.heads.head(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = self.forward_head(x)
        return x


@fx.has_side_effect  # kept by dead-code elimination, as torchvision's ``_assert`` nodes
def _check_image_size(h, w, patch_size):
    """Any h x w image of at least one patch is taken (torchvision asserts ``image_size`` instead)."""
    if h < patch_size or w < patch_size:
        raise ValueError(f"Input size {h}x{w} is smaller than one {patch_size}x{patch_size} patch")


fx.wrap("_check_image_size")  # branches on the input's size: one node when traced


def _conv_stem(conv_stem_configs, in_chans, hidden_dim):
    """conv-norm-activation layers ``conv_bn_relu_<i>`` and a 1x1 ``conv_last`` to ``hidden_dim``."""
    stem = nn.Sequential()
    prev_channels = in_chans
    for i, cfg in enumerate(conv_stem_configs):
        stem.add_module(f"conv_bn_relu_{i}", Conv2dNormActivation(
            prev_channels, cfg.out_channels, kernel_size=cfg.kernel_size, stride=cfg.stride,
            norm_layer=cfg.norm_layer, activation_layer=cfg.activation_layer))
        prev_channels = cfg.out_channels
    stem.add_module("conv_last", nn.Conv2d(prev_channels, hidden_dim, kernel_size=1))
    return stem


def _resize_pos_embedding(pos_embedding, grid_size, interpolation_mode="bicubic"):
    """(1, 1 + g*g, D) position embeddings resized to (1, 1 + rows*cols, D) for a (rows, cols) patch grid: the
    class token's entry is kept, the patch entries are interpolated as a (D, g, g) image with aligned
    corners (differentiable). Takes a Tensor, or a numpy array and returns numpy."""
    is_tensor = isinstance(pos_embedding, torch.Tensor)
    pos = pos_embedding if is_tensor else torch.from_numpy(np.asarray(pos_embedding))
    n, seq_length, hidden_dim = pos.shape
    if n != 1:
        raise ValueError(f"Unexpected position embedding shape: {pos.shape}")
    side = math.isqrt(seq_length - 1)
    if side * side != seq_length - 1:
        raise ValueError(f"seq_length is not a perfect square! Instead got seq_length_1d * seq_length_1d = "
                         f"{side * side} and seq_length = {seq_length - 1}")
    rows, cols = grid_size
    image = pos[:, 1:].permute(0, 2, 1).reshape(1, hidden_dim, side, side)
    image = F.interpolate(image, size=(rows, cols), mode=interpolation_mode, align_corners=True)
    image = image.reshape(1, hidden_dim, rows * cols).permute(0, 2, 1)
    resized = torch.cat([pos[:, :1], image], dim=1)
    return resized if is_tensor else resized.numpy()


def interpolate_embeddings(image_size, patch_size, model_state, interpolation_mode="bicubic", reset_heads=False):
    """A state dict whose ``encoder.pos_embedding`` fits a model for ``image_size`` images and ``patch_size``
    patches (torchvision's helper of the same name); ``reset_heads`` drops the ``heads.*`` entries then.

    Loading a checkpoint into a model of another image size does this by itself; the function is for
    preparing state dicts explicitly.
    """
    pos_embedding = model_state["encoder.pos_embedding"]
    grid = image_size // patch_size
    if np.shape(pos_embedding)[1] == grid * grid + 1:
        return model_state
    model_state["encoder.pos_embedding"] = _resize_pos_embedding(pos_embedding, (grid, grid), interpolation_mode)
    if reset_heads:
        model_state = OrderedDict((k, v) for k, v in model_state.items() if not k.startswith("heads"))
    return model_state


def _create_vit(variant, pretrained, progress, patch_size, num_layers, num_heads, hidden_dim, mlp_dim, **kwargs):
    """Build a ViT variant; with weights, ``image_size`` defaults to the size they were trained at.

    ``pretrained=True`` alone means the IMAGENET1K_V1 weights, which vit_h_14 lacks (an error, as in torchvision).
    """
    legacy = pretrained and kwargs.get("weights") is None
    if legacy and "IMAGENET1K_V1" not in get_model_weights(variant).__members__:
        raise ValueError(f"No weights available for model {variant}")
    weights = resolve_weights(variant, pretrained, kwargs.get("weights"))
    if weights is not None:
        kwargs.setdefault("image_size", weights.meta["min_size"][0])
    kwargs.setdefault("image_size", 224)
    return build_model(VisionTransformer, variant, pretrained, progress=progress, patch_size=patch_size,
                       num_layers=num_layers, num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim, **kwargs)


@register_model
def vit_b_16(pretrained=False, progress=True, **kwargs):
    """ViT-Base, 16x16 patches: 12 layers, 12 heads, width 768, MLP 3072."""
    return _create_vit("vit_b_16", pretrained, progress, 16, 12, 12, 768, 3072, **kwargs)


@register_model
def vit_b_32(pretrained=False, progress=True, **kwargs):
    """ViT-Base, 32x32 patches: 12 layers, 12 heads, width 768, MLP 3072."""
    return _create_vit("vit_b_32", pretrained, progress, 32, 12, 12, 768, 3072, **kwargs)


@register_model
def vit_l_16(pretrained=False, progress=True, **kwargs):
    """ViT-Large, 16x16 patches: 24 layers, 16 heads, width 1024, MLP 4096."""
    return _create_vit("vit_l_16", pretrained, progress, 16, 24, 16, 1024, 4096, **kwargs)


@register_model
def vit_l_32(pretrained=False, progress=True, **kwargs):
    """ViT-Large, 32x32 patches: 24 layers, 16 heads, width 1024, MLP 4096."""
    return _create_vit("vit_l_32", pretrained, progress, 32, 24, 16, 1024, 4096, **kwargs)


@register_model
def vit_h_14(pretrained=False, progress=True, **kwargs):
    """ViT-Huge, 14x14 patches: 32 layers, 16 heads, width 1280, MLP 5120 (SWAG weights only)."""
    return _create_vit("vit_h_14", pretrained, progress, 14, 32, 16, 1280, 5120, **kwargs)
