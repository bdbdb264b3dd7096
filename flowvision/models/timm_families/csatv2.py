"""CSATv2 (MLPA Lab, 2025; the release names no paper yet, timm's module says "Paper: TBD"): a frequency-domain
backbone for high-resolution images, ``csatv2`` (11M parameters, 512-pixel weights) and ``csatv2_21m``.

The image is not seen as pixels: it is brought back to [0, 255], turned into YCbCr and cut into 8x8 blocks, each
block's 2-d type-II DCT coefficients are put in JPEG's zigzag order and normalised by fixed dataset statistics,
and one 1x1 convolution per colour channel (6:1:1 of the width for Y, Cb and Cr) projects the 64 coefficients of
each block: the stem (``stem_dct``) has stride 8. Four stages follow, each but the first opening with a 2x2 stride-2
convolution: ConvNeXt-V2 blocks (7x7 depthwise convolution, LayerNorm, an MLP with GRN) whose output is weighted by
a spatial attention map (channel mean and max pooled to 7x7, a 7x7 convolution and a one-channel transformer,
resized back), then, in the last two stages, transformer blocks (a convolutional position encoding and multi-head
attention with 8 heads of 32 channels); a LayerNorm ends every stage but the last, and the head pools, normalises
and classifies. Model names, module names, ``state_dict`` keys and (seeded) initialisation follow timm's
``csatv2`` module, so its checkpoints load directly.
"""
import math
import warnings

import numpy as np

import engine as torch
import engine.nn.functional as F
from engine import nn

from .._features import FlatFeatureListNet, take_indices
from .._helpers import build_model
from ..registry import register_model
from ._efficientnet_blocks import LayerScale2d
from ._layers import ClassifierHeadApi, Mlp, drop_path_module, trunc_normal_
from ._norm import LayerNorm2d
from .convnext import GlobalResponseNorm, NormMlpClassifierHead
from .vision_transformer import LayerScale

__all__ = []

# Mean and variance of each zigzag-ordered 8x8 DCT coefficient of the Y, Cb and Cr channels over the training
# images (in [0, 255]), with which the stem normalises its coefficients (the released model's statistics).
_DCT_MEAN = (
    (932.42657, -0.00260, 0.33415, -0.02840, 0.00003, -0.02792, -0.00183, 0.00006,
     0.00032, 0.03402, -0.00571, 0.00020, 0.00006, -0.00038, -0.00558, -0.00116,
     -0.00000, -0.00047, -0.00008, -0.00030, 0.00942, 0.00161, -0.00009, -0.00006,
     -0.00014, -0.00035, 0.00001, -0.00220, 0.00033, -0.00002, -0.00003, -0.00020,
     0.00007, -0.00000, 0.00005, 0.00293, -0.00004, 0.00006, 0.00019, 0.00004,
     0.00006, -0.00015, -0.00002, 0.00007, 0.00010, -0.00004, 0.00008, 0.00000,
     0.00008, -0.00001, 0.00015, 0.00002, 0.00007, 0.00003, 0.00004, -0.00001,
     0.00004, -0.00000, 0.00002, -0.00000, -0.00008, -0.00000, -0.00003, 0.00003),
    (962.34735, -0.00428, 0.09835, 0.00152, -0.00009, 0.00312, -0.00141, -0.00001,
     -0.00013, 0.01050, 0.00065, 0.00006, -0.00000, 0.00003, 0.00264, 0.00000,
     0.00001, 0.00007, -0.00006, 0.00003, 0.00341, 0.00163, 0.00004, 0.00003,
     -0.00001, 0.00008, -0.00000, 0.00090, 0.00018, -0.00006, -0.00001, 0.00007,
     -0.00003, -0.00001, 0.00006, 0.00084, -0.00000, -0.00001, 0.00000, 0.00004,
     -0.00001, -0.00002, 0.00000, 0.00001, 0.00002, 0.00001, 0.00004, 0.00011,
     0.00000, -0.00003, 0.00011, -0.00002, 0.00001, 0.00001, 0.00001, 0.00001,
     -0.00007, -0.00003, 0.00001, 0.00000, 0.00001, 0.00002, 0.00001, 0.00000),
    (1053.16101, -0.00213, -0.09207, 0.00186, 0.00013, 0.00034, -0.00119, 0.00002,
     0.00011, -0.00984, 0.00046, -0.00007, -0.00001, -0.00005, 0.00180, 0.00042,
     0.00002, -0.00010, 0.00004, 0.00003, -0.00301, 0.00125, -0.00002, -0.00003,
     -0.00001, -0.00001, -0.00001, 0.00056, 0.00021, 0.00001, -0.00001, 0.00002,
     -0.00001, -0.00001, 0.00005, -0.00070, -0.00002, -0.00002, 0.00005, -0.00004,
     -0.00000, 0.00002, -0.00002, 0.00001, 0.00000, -0.00003, 0.00004, 0.00007,
     0.00001, 0.00000, 0.00013, -0.00000, 0.00000, 0.00002, -0.00000, -0.00001,
     -0.00004, -0.00003, 0.00000, 0.00001, -0.00001, 0.00001, -0.00000, 0.00000),
)
_DCT_VAR = (
    (270372.37500, 6287.10645, 5974.94043, 1653.10889, 1463.91748, 1832.58997, 755.92468, 692.41528,
     648.57184, 641.46881, 285.79288, 301.62100, 380.43405, 349.84027, 374.15891, 190.30960,
     190.76746, 221.64578, 200.82646, 145.87979, 126.92046, 62.14622, 67.75562, 102.42001,
     129.74922, 130.04631, 103.12189, 97.76417, 53.17402, 54.81048, 73.48712, 81.04342,
     69.35100, 49.06024, 33.96053, 37.03279, 20.48858, 24.94830, 33.90822, 44.54912,
     47.56363, 40.03160, 30.43313, 22.63899, 26.53739, 26.57114, 21.84404, 17.41557,
     15.18253, 10.69678, 11.24111, 12.97229, 15.08971, 15.31646, 8.90409, 7.44213,
     6.66096, 6.97719, 4.17834, 3.83882, 4.51073, 2.36646, 2.41363, 1.48266),
    (18839.21094, 321.70932, 300.15259, 77.47830, 76.02293, 89.04748, 33.99642, 34.74807,
     32.12333, 28.19588, 12.04675, 14.26871, 18.45779, 16.59588, 15.67892, 7.37718,
     8.56312, 10.28946, 9.41013, 6.69090, 5.16453, 2.55186, 3.03073, 4.66765,
     5.85418, 5.74644, 4.33702, 3.66948, 1.95107, 2.26034, 3.06380, 3.50705,
     3.06359, 2.19284, 1.54454, 1.57860, 0.97078, 1.13941, 1.48653, 1.89996,
     1.95544, 1.64950, 1.24754, 0.93677, 1.09267, 1.09516, 0.94163, 0.78966,
     0.72489, 0.50841, 0.50909, 0.55664, 0.63111, 0.64125, 0.38847, 0.33378,
     0.30918, 0.33463, 0.20875, 0.19298, 0.21903, 0.13380, 0.13444, 0.09554),
    (17127.39844, 292.81421, 271.45209, 66.64056, 63.60253, 76.35437, 28.06587, 27.84831,
     25.96656, 23.60370, 9.99173, 11.34992, 14.46955, 12.92553, 12.69353, 5.91537,
     6.60187, 7.90891, 7.32825, 5.32785, 4.29660, 2.13459, 2.44135, 3.66021,
     4.50335, 4.38959, 3.34888, 2.97181, 1.60633, 1.77010, 2.35118, 2.69018,
     2.38189, 1.74596, 1.26014, 1.31684, 0.79327, 0.92046, 1.17670, 1.47609,
     1.50914, 1.28725, 0.99898, 0.74832, 0.85736, 0.85800, 0.74663, 0.63508,
     0.58748, 0.41098, 0.41121, 0.44663, 0.50277, 0.51519, 0.31729, 0.27336,
     0.25399, 0.27241, 0.17353, 0.16255, 0.18440, 0.11602, 0.11511, 0.08450),
)
# The ImageNet normalisation the inputs come with, which the stem undoes.
_IMAGENET_MEAN = (0.485, 0.456, 0.406)
_IMAGENET_STD = (0.229, 0.224, 0.225)


def zigzag_order(rows, cols):
    """JPEG's zigzag scan of a ``rows`` x ``cols`` block as flat (row-major) indices: the anti-diagonals from the
    top-left corner, walked up and down in turn, so that low frequencies come first."""
    order = []
    for diagonal in range(rows + cols - 1):
        cells = [(i, diagonal - i) for i in range(rows) if 0 <= diagonal - i < cols]
        if diagonal % 2 == 0:
            cells.reverse()
        order.extend(i * cols + j for i, j in cells)
    return order


def dct_matrix(kernel_size, kernel_type=2, orthonormal=True):
    """The (frequency, sample) matrix of the 1-d DCT of ``kernel_size`` samples, as float32: type II,
    2 cos(pi k (2n + 1) / 2N) (times 1 / sqrt(4N) for k = 0 and 1 / sqrt(2N) otherwise when ``orthonormal``), or
    type III, its inverse. timm builds the same matrix through a float32 FFT (engine has none); this closed form,
    computed in float64 and rounded once, is within a float32 rounding of timm's values (which checkpoints carry
    anyway: the matrix is a ``state_dict`` buffer)."""
    if kernel_type not in (2, 3):
        raise ValueError(f"kernel_type must be 2 or 3, got {kernel_type}")
    samples = np.arange(kernel_size)
    # (sample, frequency), as timm lays the type-II kernel out before transposing it
    kernel = 2 * np.cos(np.pi * np.outer(2 * samples + 1, samples) / (2 * kernel_size))
    if orthonormal:
        kernel[:, 0] *= math.sqrt(1 / (4 * kernel_size))
        kernel[:, 1:] *= math.sqrt(1 / (2 * kernel_size))
    if kernel_type == 3:
        kernel = np.linalg.inv(kernel)
    return torch.from_numpy(np.ascontiguousarray(kernel.T, dtype=np.float32))


class Dct1d(nn.Module):
    """The DCT over the last axis: a bias-free linear map by the fixed matrix ``weights`` (``dct_matrix``)."""

    def __init__(self, kernel_size, kernel_type=2, orthonormal=True):
        super().__init__()
        self.register_buffer("weights", dct_matrix(kernel_size, kernel_type, orthonormal))
        self.register_parameter("bias", None)

    def forward(self, x):
        return F.linear(x, self.weights, self.bias)


class Dct2d(nn.Module):
    """The separable 2-d DCT of the last two axes (a block): the 1-d ``transform`` along rows, then columns."""

    def __init__(self, kernel_size, kernel_type=2, orthonormal=True):
        super().__init__()
        self.transform = Dct1d(kernel_size, kernel_type, orthonormal)

    def forward(self, x):
        x = self.transform(x).transpose(-1, -2)
        return self.transform(x).transpose(-1, -2)


def split_ycbcr_channels(out_chs, ratio=(24, 4, 4)):
    """The stem's widths for Y, Cb and Cr: ``out_chs`` split by ``ratio`` (6:1:1 once reduced), so it must be a
    positive multiple of the reduced ratio's sum (8)."""
    divisor = math.gcd(*ratio)
    parts = [r // divisor for r in ratio]
    if out_chs <= 0 or out_chs % sum(parts) != 0:
        raise ValueError(f"out_chs={out_chs} can't be split into Y/Cb/Cr by {tuple(parts)}: it must be a multiple "
                         f"of {sum(parts)}")
    unit = out_chs // sum(parts)
    return tuple(part * unit for part in parts)


class LearnableDct2d(nn.Module):
    """CSATv2's stem: ImageNet-normalised RGB back to [0, 255], to YCbCr (JPEG's transform), the 2-d DCT of every
    ``kernel_size`` x ``kernel_size`` block (``transform``), its coefficients in zigzag order, each normalised by
    the fixed dataset statistics (``mean``, ``var``), and one 1x1 convolution per colour channel over the
    coefficients (``conv_y``, ``conv_cb``, ``conv_cr``, 6:1:1 of ``out_chs``), concatenated: a stride of
    ``kernel_size``. The statistics are for 8x8 blocks; the image's sides must be multiples of ``kernel_size``."""

    def __init__(self, kernel_size, kernel_type=2, orthonormal=True, out_chs=32):
        super().__init__()
        self.k = kernel_size
        self.transform = Dct2d(kernel_size, kernel_type, orthonormal)
        # the zigzag order as an index tensor on the model's device (a list would be copied to it on every call,
        # which a CUDA graph cannot capture); not saved, as timm's list is not
        self.register_buffer("permutation", torch.tensor(zigzag_order(kernel_size, kernel_size)), persistent=False)
        y_chs, cb_chs, cr_chs = split_ycbcr_channels(out_chs)
        self.conv_y = nn.Conv2d(kernel_size ** 2, y_chs, kernel_size=1)
        self.conv_cb = nn.Conv2d(kernel_size ** 2, cb_chs, kernel_size=1)
        self.conv_cr = nn.Conv2d(kernel_size ** 2, cr_chs, kernel_size=1)
        self.register_buffer("mean", torch.tensor(_DCT_MEAN), persistent=False)
        self.register_buffer("var", torch.tensor(_DCT_VAR), persistent=False)
        self.register_buffer("imagenet_mean", torch.tensor(_IMAGENET_MEAN).view(3, 1, 1), persistent=False)
        self.register_buffer("imagenet_std", torch.tensor(_IMAGENET_STD).view(3, 1, 1), persistent=False)

    def _denormalize(self, x):
        """ImageNet-normalised images back to pixel values in [0, 255]."""
        return (x * self.imagenet_std + self.imagenet_mean) * 255

    @staticmethod
    def _rgb_to_ycbcr(x):
        """RGB to YCbCr (luma, blue and red chroma offset by 128) on (N, 3, H, W) maps."""
        r, g, b = x[:, 0], x[:, 1], x[:, 2]
        y = r * 0.299 + g * 0.587 + b * 0.114
        cb = 0.564 * (b - y) + 128
        cr = 0.713 * (r - y) + 128
        return torch.stack([y, cb, cr], dim=1)

    def _frequency_normalize(self, x):
        """Coefficients (..., 3, 64) to zero mean and unit variance under the dataset statistics."""
        return (x - self.mean) / (self.var ** 0.5 + 1e-8)

    def forward(self, x):
        batch, channels, height, width = x.shape
        if height % self.k or width % self.k:
            raise ValueError(f"CSATv2 needs image sides that are multiples of {self.k}, got {height}x{width}")
        rows, cols = height // self.k, width // self.k
        x = self._rgb_to_ycbcr(self._denormalize(x))
        x = x.reshape(batch, channels, rows, self.k, cols, self.k).permute(0, 2, 4, 1, 3, 5)
        x = self.transform(x)
        x = x.reshape(-1, channels, self.k * self.k)
        x = x[:, :, self.permutation]
        x = self._frequency_normalize(x)
        x = x.reshape(batch, rows, cols, channels, -1).permute(0, 3, 4, 1, 2)
        return torch.cat([self.conv_y(x[:, 0]), self.conv_cb(x[:, 1]), self.conv_cr(x[:, 2])], dim=1)


class PosConv(nn.Module):
    """Convolutional position encoding of a token sequence laid out on an (H, W) grid: the tokens plus a 3x3
    depthwise convolution of their map (``proj``)."""

    def __init__(self, in_chans):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, in_chans, kernel_size=3, stride=1, padding=1, bias=True, groups=in_chans)

    def forward(self, x, size):
        batch, _, channels = x.shape
        height, width = size
        feature_map = x.transpose(1, 2).reshape(batch, channels, height, width)
        x = self.proj(feature_map) + feature_map
        return x.flatten(2).transpose(1, 2)


class SpatialTransformerBlock(nn.Module):
    """The one-channel transformer of the spatial attention, on its 7x7 map: position encoding (``pos_embed``) of
    the LayerNormed pixels (``norm1``), attention with scalar queries, keys and values (``qkv``, no scaling, no
    output projection), and a 1 -> 4 -> 1 GELU MLP (``mlp``) after ``norm2``, both residual.

    As in timm (and the released model), the attention runs between the images of the batch, not between
    pixels: with (N, 49) queries and keys, softmax(q k^T) is (N, N), so each image's map becomes a mix of the
    batch's value maps (one image: its own)."""

    def __init__(self):
        super().__init__()
        self.pos_embed = PosConv(in_chans=1)
        self.norm1 = nn.LayerNorm(1)
        self.qkv = nn.Linear(1, 3, bias=False)
        self.norm2 = nn.LayerNorm(1)
        self.mlp = Mlp(1, 4, 1, act_layer=nn.GELU)

    def forward(self, x):
        batch, channels, height, width = x.shape
        tokens = self.pos_embed(self.norm1(x.flatten(2).transpose(1, 2)), (height, width))
        q, k, v = self.qkv(tokens).unbind(-1)
        attn = (q @ k.transpose(-1, -2)).softmax(dim=-1)
        tokens = (attn @ v).unsqueeze(-1)
        x = x + tokens.transpose(1, 2).reshape(batch, channels, height, width)
        tokens = self.mlp(self.norm2(x.flatten(2).transpose(1, 2)))
        return x + tokens.transpose(1, 2).reshape(batch, channels, height, width)


class SpatialAttention(nn.Module):
    """A spatial weight map for a block's output: the channel mean and max, pooled to 7x7 (``avgpool``), a 7x7
    convolution to one channel (``conv``) and the one-channel transformer (``attn``); the block resizes it back."""

    def __init__(self):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.conv = nn.Conv2d(2, 1, kernel_size=7, padding=3)
        self.attn = SpatialTransformerBlock()

    def forward(self, x):
        x = torch.cat([x.mean(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)], dim=1)
        x = self.conv(self.avgpool(x))
        return self.attn(x)


class Block(nn.Module):
    """CSATv2's convolutional block: ConvNeXt-V2's (7x7 depthwise ``dwconv``, channels-last LayerNorm ``norm``,
    ``pwconv1`` to 4x the width, GELU, GRN, ``pwconv2`` back), its output weighted by the spatial attention map
    (``attn``, resized bilinearly with aligned corners), then the layer scale ``ls`` (with ``ls_init_value``) and
    stochastic depth, added to the input."""

    def __init__(self, dim, drop_path=0.0, ls_init_value=None):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.grn = GlobalResponseNorm(4 * dim, channels_last=True)
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.ls = LayerScale2d(dim, init_values=ls_init_value) if ls_init_value else nn.Identity()
        self.drop_path = drop_path_module(drop_path)
        self.attn = SpatialAttention()

    def forward(self, x):
        shortcut = x
        x = self.dwconv(x).permute(0, 2, 3, 1)
        x = self.pwconv2(self.grn(self.act(self.pwconv1(self.norm(x)))))
        x = x.permute(0, 3, 1, 2)
        attn = F.interpolate(self.attn(x), size=tuple(x.shape[2:]), mode="bilinear", align_corners=True)
        x = self.ls(x * attn)
        return shortcut + self.drop_path(x)


class Attention(nn.Module):
    """Multi-head self-attention whose heads' width (``attn_head_dim``) and output width (``dim_out``) need not
    follow ``dim`` (timm's ``Attention``): ``qkv`` to ``num_heads`` heads, scaled dot-product attention, ``proj``.
    ``q_norm``, ``k_norm`` and ``norm`` are timm's identity slots (no query, key or output norm here)."""

    def __init__(self, dim, num_heads=8, attn_head_dim=None, dim_out=None, qkv_bias=False, attn_drop=0.0,
                 proj_drop=0.0):
        super().__init__()
        if attn_head_dim is None and dim % num_heads != 0:
            raise ValueError(f"dim ({dim}) should be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.head_dim = attn_head_dim or dim // num_heads
        self.attn_dim = num_heads * self.head_dim
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, self.attn_dim * 3, bias=qkv_bias)
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.attn_drop = nn.Dropout(attn_drop)
        self.norm = nn.Identity()
        self.proj = nn.Linear(self.attn_dim, dim_out or dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        batch, tokens, _ = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q = self.q_norm(q)
        k = self.k_norm(k)
        dropout_p = self.attn_drop.p if self.training else 0.0
        x = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, scale=self.scale)
        x = x.transpose(1, 2).reshape(batch, tokens, self.attn_dim)
        x = self.norm(x)
        x = self.proj(x)
        return self.proj_drop(x)


class TransformerBlock(nn.Module):
    """CSATv2's transformer block on an (N, C, H, W) map: the pixels as tokens, LayerNormed (``norm1``), position
    encoded (``pos_embed``) and attended (``attn``: 8 heads of 32 channels to ``oup``), then a GELU MLP of 4x
    ``inp`` after ``norm2``; each branch with layer scale (``ls1``, ``ls2``) and stochastic depth, residual.
    With ``downsample`` the attention runs on the map max-pooled by 2 (``pool2``) and the shortcut is pooled too
    (``pool1``) and projected to ``oup`` (``proj``); otherwise these are identities."""

    def __init__(self, inp, oup, num_heads=8, attn_head_dim=32, downsample=False, attn_drop=0.0, proj_drop=0.0,
                 drop_path=0.0, ls_init_value=None):
        super().__init__()
        self.downsample = downsample
        if downsample:
            self.pool1 = nn.MaxPool2d(3, 2, 1)
            self.pool2 = nn.MaxPool2d(3, 2, 1)
            self.proj = nn.Conv2d(inp, oup, 1, 1, 0, bias=False)
        else:
            self.pool1 = nn.Identity()
            self.pool2 = nn.Identity()
            self.proj = nn.Identity()
        self.pos_embed = PosConv(in_chans=inp)
        self.norm1 = nn.LayerNorm(inp)
        self.attn = Attention(inp, num_heads=num_heads, attn_head_dim=attn_head_dim, dim_out=oup,
                              attn_drop=attn_drop, proj_drop=proj_drop)
        self.ls1 = LayerScale(oup, init_values=ls_init_value) if ls_init_value else nn.Identity()
        self.drop_path1 = drop_path_module(drop_path)
        self.norm2 = nn.LayerNorm(oup)
        self.mlp = Mlp(oup, 4 * inp, oup, act_layer=nn.GELU, drop=proj_drop)
        self.ls2 = LayerScale(oup, init_values=ls_init_value) if ls_init_value else nn.Identity()
        self.drop_path2 = drop_path_module(drop_path)

    @staticmethod
    def _as_map(tokens, size):
        """(N, H * W, C) tokens back to an (N, C, H, W) map."""
        return tokens.transpose(1, 2).reshape(tokens.shape[0], -1, *size)

    def forward(self, x):
        shortcut = self.proj(self.pool1(x))
        x = self.pool2(x)
        size = tuple(x.shape[2:])
        tokens = self.pos_embed(self.norm1(x.flatten(2).transpose(1, 2)), size)
        tokens = self.ls1(self.attn(tokens))
        x = shortcut + self.drop_path1(self._as_map(tokens, size))
        tokens = self.ls2(self.mlp(self.norm2(x.flatten(2).transpose(1, 2))))
        return x + self.drop_path2(self._as_map(tokens, size))


class CSATv2(ClassifierHeadApi, nn.Module):
    """CSATv2: the DCT stem (``stem_dct``, stride 8, ``dims[0]`` channels) and four stages (``stages``): a 2x2
    stride-2 convolution to ``dims[i]`` (not in the first), ``depths[i] - transformer_depths[i]`` convolutional
    blocks, ``transformer_depths[i]`` transformer blocks and a channel LayerNorm (not in the last); then timm's
    pool-norm-classify head (``head``: pooling ``global_pool``, LayerNorm, dropout ``drop_rate``, ``fc``).

    ``drop_path_rate`` is the last block's stochastic depth, rising linearly from 0 over the convolutional blocks
    (and the transformer blocks, which otherwise have none, with ``transformer_drop_path``); ``ls_init_value``
    enables layer scale. The stem takes 3-channel (RGB) images whose sides are multiples of 8; the features have
    stride 64.
    """

    default_cfg = {"first_conv": [], "classifier": "head.fc"}
    feature_wrapper = FlatFeatureListNet

    def __init__(self, num_classes=1000, in_chans=3, dims=(32, 72, 168, 386), depths=(2, 2, 8, 6),
                 transformer_depths=(0, 0, 2, 2), drop_rate=0.0, drop_path_rate=0.0, transformer_drop_path=False,
                 ls_init_value=None, global_pool="avg"):
        super().__init__()
        if in_chans != 3:
            warnings.warn(f"CSATv2 is designed for 3-channel RGB input. in_chans={in_chans} may not work "
                          "correctly with the DCT stem.")
        self.num_classes = num_classes
        self.in_chans = in_chans
        self.global_pool = global_pool
        self.num_features = dims[-1]
        self.feature_info = [dict(num_chs=dims[0], reduction=8, module="stem_dct")]
        self.feature_info += [dict(num_chs=dim, reduction=8 * 2 ** i, module=f"stages.{i}")
                              for i, dim in enumerate(dims)]
        rates = iter(self._drop_path_rates(drop_path_rate, depths, transformer_depths, transformer_drop_path))
        self.stem_dct = LearnableDct2d(8, out_chs=dims[0])
        stages = []
        for i, (dim, depth, transformer_depth) in enumerate(zip(dims, depths, transformer_depths)):
            layers = [nn.Conv2d(dims[i - 1], dim, kernel_size=2, stride=2)] if i > 0 else []
            layers += [Block(dim, drop_path=next(rates), ls_init_value=ls_init_value)
                       for _ in range(depth - transformer_depth)]
            layers += [TransformerBlock(dim, dim, drop_path=next(rates), ls_init_value=ls_init_value)
                       for _ in range(transformer_depth)]
            if i < len(depths) - 1:
                layers.append(LayerNorm2d(dim, eps=1e-6))
            stages.append(nn.Sequential(*layers))
        self.stages = nn.Sequential(*stages)
        self.head = NormMlpClassifierHead(dims[-1], num_classes, pool_type=global_pool, drop_rate=drop_rate)
        self.head_hidden_size = self.head.num_features
        self.apply(self._init_weights)

    @staticmethod
    def _drop_path_rates(drop_path_rate, depths, transformer_depths, transformer_drop_path):
        """Every block's stochastic depth in order: linear from 0 to ``drop_path_rate`` over the convolutional
        blocks (and transformer blocks with ``transformer_drop_path``; 0 for them otherwise)."""
        scheduled = [depth - t for depth, t in zip(depths, transformer_depths)]
        total = sum(depths) if transformer_drop_path else sum(scheduled)
        linear = iter(torch.linspace(0, drop_path_rate, total).tolist())
        rates = []
        for depth, transformer_depth in zip(depths, transformer_depths):
            rates += [next(linear) for _ in range(depth - transformer_depth)]
            rates += [next(linear) if transformer_drop_path else 0.0 for _ in range(transformer_depth)]
        return rates

    @staticmethod
    def _init_weights(module):
        """timm's scheme: truncated-normal weights (std 0.02) and zero biases for every convolution and linear
        layer (the DCT matrix and the norms keep theirs)."""
        if isinstance(module, (nn.Conv2d, nn.Linear)):
            trunc_normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward_features(self, x):
        """RGB images (N, 3, H, W), sides multiples of 8 -> the last stage's map (N, num_features, H/64, W/64)."""
        x = self.stem_dct(x)
        x = self.stages(x)
        return x

    def forward_intermediates(self, x, indices=None, norm=False, stop_early=False, output_fmt="NCHW",
                              intermediates_only=False):
        """The stem's output (index 0) and the stages' (1 to 4) that ``indices`` picks (None: all, n: the last n,
        or a list) as (N, C, H, W) maps, and (unless ``intermediates_only``) the final map; ``stop_early`` skips
        the stages after the last one picked. ``norm`` is accepted for the API and does nothing (as in timm)."""
        if output_fmt != "NCHW":
            raise ValueError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take = take_indices(len(self.stages) + 1, indices)
        stages = list(self.stages)[:max(take)] if stop_early else list(self.stages)
        x = self.stem_dct(x)
        intermediates = [x] if 0 in take else []
        for i, stage in enumerate(stages, start=1):
            x = stage(x)
            if i in take:
                intermediates.append(x)
        if intermediates_only:
            return intermediates
        return x, intermediates

    def prune_intermediate_layers(self, indices=1, prune_norm=False, prune_head=True):
        """Drop the stages after the last tap ``indices`` picks (0: the stem), the head's norm when asked, and the
        classifier and the head's norm when asked or when stages go (the features then end at the last tap kept);
        returns the absolute indices."""
        take = take_indices(len(self.stages) + 1, indices)
        last = max(take)
        prune_end = last < len(self.stages)
        self.stages = nn.Sequential(*list(self.stages)[:last])
        if prune_norm:
            self.head.norm = nn.Identity()
        if prune_end:
            self.num_features = self.head_hidden_size = self.feature_info[last]["num_chs"]
        if prune_head or prune_end:
            self.head.in_features = self.num_features
            self.reset_classifier(0, "", reset_other=True)
        return take


def _create_csatv2(variant, pretrained, progress, kwargs, **model_args):
    """Build a registered variant from timm's architecture arguments, which the caller's ``kwargs`` override;
    ``features_only`` gives timm's four stage outputs (strides 8 to 64) unless ``out_indices`` says otherwise
    (index 0 is the stem), under timm's flattened names (``stem_dct``, ``stages_0``...)."""
    if kwargs.get("features_only"):
        kwargs.setdefault("out_indices", (1, 2, 3, 4))
    return build_model(CSATv2, variant, pretrained, progress=progress, **{**model_args, **kwargs})


@register_model
def csatv2(pretrained=False, progress=True, **kwargs):
    """CSATv2 (11M parameters): widths (32, 72, 168, 386), depths (2, 2, 8, 6), the last 2 of stages 3-4 attention."""
    return _create_csatv2("csatv2", pretrained, progress, kwargs)


@register_model
def csatv2_21m(pretrained=False, progress=True, **kwargs):
    """CSATv2-21M: widths (48, 96, 224, 448), depths (3, 3, 10, 8), the last 4 and 3 of stages 3-4 attention."""
    return _create_csatv2("csatv2_21m", pretrained, progress, kwargs, dims=(48, 96, 224, 448), depths=(3, 3, 10, 8),
                          transformer_depths=(0, 0, 4, 3))
