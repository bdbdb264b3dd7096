"""RAFT (Teed & Deng, "RAFT: Recurrent All-Pairs Field Transforms for Optical Flow", 2020).

Optical flow from a pair of images (N, 3, H, W), H and W multiples of 8: a feature encoder maps both images
to 1/8 resolution, the dot products of all pairs of feature vectors form a 4-d correlation volume, pooled into
a pyramid; a context encoder reads the first image alone. From a zero flow, a recurrent update operator then
looks up the correlations around where each pixel is currently sent, encodes them with the flow, updates a
convolutional GRU's hidden state and predicts a flow increment; each of the ``num_flow_updates`` flows is
upsampled to full resolution (a learned convex combination of 3x3 neighbours, or bilinearly for RAFT-small).
Module names, state_dict keys, initialisation and arithmetic follow torchvision, so its checkpoints load
directly and a seeded model equals torchvision's.
"""
import math

import numpy as np

import engine as torch
from engine import nn
from engine.nn import functional as F

from ...ops.misc import Conv2dNormActivation
from .._helpers import load_checkpoint
from ..registry import register_model
from ..weights import load_pretrained, resolve_weights

__all__ = ["RAFT", "ResidualBlock", "BottleneckBlock", "FeatureEncoder", "MotionEncoder", "ConvGRU",
           "RecurrentBlock", "FlowHead", "UpdateBlock", "MaskPredictor", "CorrBlock"]


class ResidualBlock(nn.Module):
    """Two 3x3 convolution-norm-ReLU layers around a shortcut (a strided 1x1 projection when the block
    downsamples or ``always_project``), then a ReLU. The convolutions keep their biases even before a norm:
    the reference training freezes BatchNorm after the first dataset, and the published weights have them."""

    def __init__(self, in_channels, out_channels, *, norm_layer, stride=1, always_project=False):
        super().__init__()
        self.convnormrelu1 = Conv2dNormActivation(in_channels, out_channels, norm_layer=norm_layer, kernel_size=3,
                                                  stride=stride, bias=True)
        self.convnormrelu2 = Conv2dNormActivation(out_channels, out_channels, norm_layer=norm_layer, kernel_size=3,
                                                  bias=True)
        if stride == 1 and not always_project:
            self.downsample = nn.Identity()
        else:
            self.downsample = Conv2dNormActivation(in_channels, out_channels, norm_layer=norm_layer, kernel_size=1,
                                                   stride=stride, bias=True, activation_layer=None)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        y = self.convnormrelu1(x)
        y = self.convnormrelu2(y)
        x = self.downsample(x)
        return self.relu(x + y)


class BottleneckBlock(nn.Module):
    """RAFT-small's residual block: 1x1 reduction to a quarter of the channels, a 3x3 convolution, 1x1
    expansion (each with its norm and ReLU, biases kept), a shortcut projected when strided, then a ReLU."""

    def __init__(self, in_channels, out_channels, *, norm_layer, stride=1):
        super().__init__()
        self.convnormrelu1 = Conv2dNormActivation(in_channels, out_channels // 4, norm_layer=norm_layer,
                                                  kernel_size=1, bias=True)
        self.convnormrelu2 = Conv2dNormActivation(out_channels // 4, out_channels // 4, norm_layer=norm_layer,
                                                  kernel_size=3, stride=stride, bias=True)
        self.convnormrelu3 = Conv2dNormActivation(out_channels // 4, out_channels, norm_layer=norm_layer,
                                                  kernel_size=1, bias=True)
        self.relu = nn.ReLU(inplace=True)
        if stride == 1:
            self.downsample = nn.Identity()
        else:
            self.downsample = Conv2dNormActivation(in_channels, out_channels, norm_layer=norm_layer, kernel_size=1,
                                                   stride=stride, bias=True, activation_layer=None)

    def forward(self, x):
        y = self.convnormrelu1(x)
        y = self.convnormrelu2(y)
        y = self.convnormrelu3(y)
        x = self.downsample(x)
        return self.relu(x + y)


class FeatureEncoder(nn.Module):
    """The feature encoder g (and, with its own weights, the context encoder h) of section 3.1: a 7x7
    convolution, three stages of two residual blocks and a 1x1 convolution to ``layers[-1]`` channels, at 1/8
    of the input's resolution (``strides``: the stem's and each stage's first stride)."""

    def __init__(self, *, block=ResidualBlock, layers=(64, 64, 96, 128, 256), strides=(2, 1, 2, 2),
                 norm_layer=nn.BatchNorm2d):
        super().__init__()
        if len(layers) != 5:
            raise ValueError(f"The expected number of layers is 5, instead got {len(layers)}")
        self.convnormrelu = Conv2dNormActivation(3, layers[0], norm_layer=norm_layer, kernel_size=7,
                                                 stride=strides[0], bias=True)
        self.layer1 = self._make_2_blocks(block, layers[0], layers[1], norm_layer, strides[1])
        self.layer2 = self._make_2_blocks(block, layers[1], layers[2], norm_layer, strides[2])
        self.layer3 = self._make_2_blocks(block, layers[2], layers[3], norm_layer, strides[3])
        self.conv = nn.Conv2d(layers[3], layers[4], kernel_size=1)
        self._init_weights()
        self.output_dim = layers[-1]
        self.downsample_factor = 2 ** sum(1 for s in strides if s == 2)

    def _init_weights(self):
        """He-normal convolution weights (fan out; the biases keep their default draw), unit norm scales."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.InstanceNorm2d)):
                if m.weight is not None:
                    nn.init.constant_(m.weight, 1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    @staticmethod
    def _make_2_blocks(block, in_channels, out_channels, norm_layer, first_stride):
        return nn.Sequential(block(in_channels, out_channels, norm_layer=norm_layer, stride=first_stride),
                             block(out_channels, out_channels, norm_layer=norm_layer, stride=1))

    def forward(self, x):
        x = self.convnormrelu(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.conv(x)
        return x


class MotionEncoder(nn.Module):
    """The update operator's motion features: the looked-up correlations and the current flow, each through
    convolutions, fused by a 3x3 convolution to ``out_channels - 2`` channels, with the flow appended."""

    def __init__(self, *, in_channels_corr, corr_layers=(256, 192), flow_layers=(128, 64), out_channels=128):
        super().__init__()
        if len(flow_layers) != 2:
            raise ValueError(f"The expected number of flow_layers is 2, instead got {len(flow_layers)}")
        if len(corr_layers) not in (1, 2):
            raise ValueError(f"The number of corr_layers should be 1 or 2, instead got {len(corr_layers)}")
        self.convcorr1 = Conv2dNormActivation(in_channels_corr, corr_layers[0], norm_layer=None, kernel_size=1)
        if len(corr_layers) == 2:
            self.convcorr2 = Conv2dNormActivation(corr_layers[0], corr_layers[1], norm_layer=None, kernel_size=3)
        else:
            self.convcorr2 = nn.Identity()
        self.convflow1 = Conv2dNormActivation(2, flow_layers[0], norm_layer=None, kernel_size=7)
        self.convflow2 = Conv2dNormActivation(flow_layers[0], flow_layers[1], norm_layer=None, kernel_size=3)
        self.conv = Conv2dNormActivation(corr_layers[-1] + flow_layers[-1], out_channels - 2, norm_layer=None,
                                         kernel_size=3)
        self.out_channels = out_channels

    def forward(self, flow, corr_features):
        corr = self.convcorr1(corr_features)
        corr = self.convcorr2(corr)
        flow_features = self.convflow1(flow)
        flow_features = self.convflow2(flow_features)
        motion = self.conv(torch.cat([corr, flow_features], dim=1))
        return torch.cat([motion, flow], dim=1)


class ConvGRU(nn.Module):
    """A GRU whose gates are convolutions (section 3.3): update gate z, reset gate r, candidate q."""

    def __init__(self, *, input_size, hidden_size, kernel_size, padding):
        super().__init__()
        self.convz = nn.Conv2d(hidden_size + input_size, hidden_size, kernel_size=kernel_size, padding=padding)
        self.convr = nn.Conv2d(hidden_size + input_size, hidden_size, kernel_size=kernel_size, padding=padding)
        self.convq = nn.Conv2d(hidden_size + input_size, hidden_size, kernel_size=kernel_size, padding=padding)

    def forward(self, h, x):
        hx = torch.cat([h, x], dim=1)
        z = torch.sigmoid(self.convz(hx))
        r = torch.sigmoid(self.convr(hx))
        q = torch.tanh(self.convq(torch.cat([r * h, x], dim=1)))
        h = (1 - z) * h + z * q
        return h


class RecurrentBlock(nn.Module):
    """One ConvGRU per kernel: RAFT's separable pair (1x5 then 5x1) or RAFT-small's single 3x3 one."""

    def __init__(self, *, input_size, hidden_size, kernel_size=((1, 5), (5, 1)), padding=((0, 2), (2, 0))):
        super().__init__()
        if len(kernel_size) != len(padding):
            raise ValueError(f"kernel_size should have the same length as padding, instead got len(kernel_size) = "
                             f"{len(kernel_size)} and len(padding) = {len(padding)}")
        if len(kernel_size) not in (1, 2):
            raise ValueError(f"kernel_size should either 1 or 2, instead got {len(kernel_size)}")
        self.convgru1 = ConvGRU(input_size=input_size, hidden_size=hidden_size, kernel_size=kernel_size[0],
                                padding=padding[0])
        self.convgru2 = ConvGRU(input_size=input_size, hidden_size=hidden_size, kernel_size=kernel_size[1],
                                padding=padding[1]) if len(kernel_size) == 2 else None
        self.hidden_size = hidden_size

    def forward(self, h, x):
        h = self.convgru1(h, x)
        if self.convgru2 is not None:
            h = self.convgru2(h, x)
        return h


class FlowHead(nn.Module):
    """Two 3x3 convolutions from the hidden state to the flow increment (2 channels)."""

    def __init__(self, *, in_channels, hidden_size):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, hidden_size, 3, padding=1)
        self.conv2 = nn.Conv2d(hidden_size, 2, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.conv2(self.relu(self.conv1(x)))


class UpdateBlock(nn.Module):
    """The update operator of section 3.3: motion features and context into the recurrent unit, whose new
    hidden state gives the flow increment. ``hidden_state_size`` is the recurrent unit's width."""

    def __init__(self, *, motion_encoder, recurrent_block, flow_head):
        super().__init__()
        self.motion_encoder = motion_encoder
        self.recurrent_block = recurrent_block
        self.flow_head = flow_head
        self.hidden_state_size = recurrent_block.hidden_size

    def forward(self, hidden_state, context, corr_features, flow):
        motion_features = self.motion_encoder(flow, corr_features)
        x = torch.cat([context, motion_features], dim=1)
        hidden_state = self.recurrent_block(hidden_state, x)
        delta_flow = self.flow_head(hidden_state)
        return hidden_state, delta_flow


class MaskPredictor(nn.Module):
    """The convex upsampling weights (section 3.3, appendix B): for each of the 8x8 full-resolution pixels
    under a coarse one, logits over its 9 coarse neighbours. ``multiplier`` (0.25) scales the logits down, as
    the reference implementation does to damp this branch's gradients."""

    def __init__(self, *, in_channels, hidden_size, multiplier=0.25):
        super().__init__()
        self.convrelu = Conv2dNormActivation(in_channels, hidden_size, norm_layer=None, kernel_size=3)
        self.conv = nn.Conv2d(hidden_size, 8 * 8 * 9, 1, padding=0)
        self.multiplier = multiplier

    def forward(self, x):
        x = self.convrelu(x)
        x = self.conv(x)
        return self.multiplier * x


def _grid_sample_at_pixels(image, pixel_coords):
    """``F.grid_sample`` (bilinear, corners aligned) of ``image`` at absolute (x, y) pixel coordinates."""
    h, w = image.shape[-2:]
    x, y = pixel_coords.split([1, 1], dim=-1)
    x = 2 * x / (w - 1) - 1
    y = 2 * y / (h - 1) - 1
    return F.grid_sample(image, torch.cat([x, y], dim=-1), mode="bilinear", align_corners=True)


class CorrBlock(nn.Module):
    """The correlation pyramid and its lookup (section 3.2).

    ``build_pyramid`` forms the all-pairs correlation volume of two feature maps (dot products scaled by
    1/sqrt(channels)) and average-pools its last two dimensions ``num_levels - 1`` times by 2. ``index_pyramid``
    samples every level bilinearly on a (2 r + 1) x (2 r + 1) grid around each pixel's current correspondence
    (the max-norm neighbourhood of radius r; the paper's 1-norm is a typo), the coordinates halved per level,
    giving ``out_channels`` correlation features per pixel.
    """

    def __init__(self, *, num_levels=4, radius=4):
        super().__init__()
        self.num_levels = num_levels
        self.radius = radius
        self.corr_pyramid = []
        self.out_channels = num_levels * (2 * radius + 1) ** 2

    def build_pyramid(self, fmap1, fmap2):
        """Build the pyramid of ``fmap1`` against ``fmap2`` (both (N, C, h, w)), kept for ``index_pyramid``."""
        if fmap1.shape != fmap2.shape:
            raise ValueError(f"Input feature maps should have the same shape, instead got {fmap1.shape} "
                             f"(fmap1.shape) != {fmap2.shape} (fmap2.shape)")
        # the coarsest level needs 2 values per side, or bilinear sampling with aligned corners divides by 0
        min_fmap_size = 2 * 2 ** (self.num_levels - 1)
        if any(size < min_fmap_size for size in fmap1.shape[-2:]):
            raise ValueError("Feature maps are too small to be down-sampled by the correlation pyramid. "
                             f"H and W of feature maps should be at least {min_fmap_size}; got: "
                             f"{fmap1.shape[-2:]}. Remember that input images to the model are downsampled by 8, "
                             f"so that means their dimensions should be at least 8 * {min_fmap_size} = "
                             f"{8 * min_fmap_size}.")
        batch_size, _, h, w = fmap1.shape
        corr_volume = self._compute_corr_volume(fmap1, fmap2)
        corr_volume = corr_volume.reshape(batch_size * h * w, 1, h, w)
        self.corr_pyramid = [corr_volume]
        for _ in range(self.num_levels - 1):
            corr_volume = F.avg_pool2d(corr_volume, kernel_size=2, stride=2)
            self.corr_pyramid.append(corr_volume)

    @staticmethod
    def _compute_corr_volume(fmap1, fmap2):
        """(N, h * w, h * w): every feature vector of ``fmap1`` dotted with every one of ``fmap2``, over
        sqrt(channels) (the square root rounded to float32, as torchvision computes it)."""
        batch_size, num_channels, h, w = fmap1.shape
        fmap1 = fmap1.reshape(batch_size, num_channels, h * w)
        fmap2 = fmap2.reshape(batch_size, num_channels, h * w)
        corr = torch.matmul(fmap1.transpose(1, 2), fmap2)
        return corr / float(np.float32(math.sqrt(num_channels)))

    def index_pyramid(self, centroids_coords):
        """The correlation features (N, out_channels, h, w) around ``centroids_coords`` (N, 2, h, w), the
        (x, y) pixel each pixel of the first image is currently matched to."""
        side = 2 * self.radius + 1
        offsets = torch.linspace(-self.radius, self.radius, side, dtype=centroids_coords.dtype,
                                 device=centroids_coords.device)
        # delta[i, j] = (offsets[i], offsets[j]): the x offset runs along the sampled grid's first axis
        delta = torch.stack(torch.meshgrid(offsets, offsets, indexing="ij"), dim=-1).reshape(1, side, side, 2)
        batch_size, _, h, w = centroids_coords.shape
        centroids = centroids_coords.permute(0, 2, 3, 1).reshape(batch_size * h * w, 1, 1, 2)
        indexed_pyramid = []
        for corr_volume in self.corr_pyramid:
            sampled = _grid_sample_at_pixels(corr_volume, centroids + delta)
            indexed_pyramid.append(sampled.reshape(batch_size, h, w, -1))
            centroids = centroids / 2
        return torch.cat(indexed_pyramid, dim=-1).permute(0, 3, 1, 2).contiguous()


def _coords_grid(batch_size, h, w, like):
    """(N, 2, h, w) pixel coordinates (x, y), in ``like``'s dtype and on its device."""
    ys, xs = torch.meshgrid(torch.arange(h, device=like.device), torch.arange(w, device=like.device),
                            indexing="ij")
    coords = torch.stack([xs, ys], dim=0).to(like.dtype)
    return coords[None].repeat(batch_size, 1, 1, 1)


def upsample_flow(flow, up_mask=None, factor=8):
    """``flow`` (N, 2, h, w) at ``factor`` times its resolution, its values scaled to match: each fine pixel a
    convex combination (softmax of ``up_mask``, (N, 9 * factor**2, h, w)) of its coarse pixel's 3x3
    neighbourhood, or bilinear interpolation without a mask."""
    batch_size, num_channels, h, w = flow.shape
    new_h, new_w = h * factor, w * factor
    if up_mask is None:
        return factor * F.interpolate(flow, size=(new_h, new_w), mode="bilinear", align_corners=True)
    up_mask = up_mask.reshape(batch_size, 1, 9, factor, factor, h, w)
    weights = torch.softmax(up_mask, dim=2)
    neighbours = F.unfold(factor * flow, kernel_size=3, padding=1)
    neighbours = neighbours.reshape(batch_size, num_channels, 9, 1, 1, h, w)
    upsampled = torch.sum(weights * neighbours, dim=2)
    return upsampled.permute(0, 1, 4, 2, 5, 3).reshape(batch_size, num_channels, new_h, new_w)


class RAFT(nn.Module):
    """RAFT from its parts: ``forward(image1, image2, num_flow_updates=12)`` returns the list of the
    ``num_flow_updates`` flow predictions (N, 2, H, W), one per update, the last the most refined.

    ``feature_encoder`` reads both images (stacked along the batch) and ``context_encoder`` the first, each to
    1/8 resolution; the context's first ``update_block.hidden_state_size`` channels (through tanh) start the
    hidden state and the rest (through ReLU) is the context. ``corr_block`` has ``build_pyramid`` and
    ``index_pyramid``; without ``mask_predictor`` flows are upsampled bilinearly. No gradient flows through the
    coordinates from one update to the next (section 3.3).
    """

    def __init__(self, *, feature_encoder, context_encoder, corr_block, update_block, mask_predictor=None):
        super().__init__()
        self.feature_encoder = feature_encoder
        self.context_encoder = context_encoder
        self.corr_block = corr_block
        self.update_block = update_block
        self.mask_predictor = mask_predictor
        if not hasattr(self.update_block, "hidden_state_size"):
            raise ValueError("The update_block parameter should expose a 'hidden_state_size' attribute.")

    def forward(self, image1, image2, num_flow_updates=12):
        batch_size, _, h, w = image1.shape
        if (h, w) != tuple(image2.shape[-2:]):
            raise ValueError(f"input images should have the same shape, instead got ({h}, {w}) != "
                             f"{image2.shape[-2:]}")
        if h % 8 or w % 8:
            raise ValueError(f"input image H and W should be divisible by 8, instead got {h} (h) and {w} (w)")

        fmaps = self.feature_encoder(torch.cat([image1, image2], dim=0))
        fmap1, fmap2 = torch.chunk(fmaps, chunks=2, dim=0)
        if tuple(fmap1.shape[-2:]) != (h // 8, w // 8):
            raise ValueError("The feature encoder should downsample H and W by 8")
        self.corr_block.build_pyramid(fmap1, fmap2)

        context_out = self.context_encoder(image1)
        if tuple(context_out.shape[-2:]) != (h // 8, w // 8):
            raise ValueError("The context encoder should downsample H and W by 8")
        hidden_state_size = self.update_block.hidden_state_size
        out_channels_context = context_out.shape[1] - hidden_state_size
        if out_channels_context <= 0:
            raise ValueError(f"The context encoder outputs {context_out.shape[1]} channels, but it should have at "
                             f"strictly more than hidden_state={hidden_state_size} channels")
        hidden_state, context = torch.split(context_out, [hidden_state_size, out_channels_context], dim=1)
        hidden_state = torch.tanh(hidden_state)
        context = F.relu(context)

        # coordinates in the images' dtype (torchvision's are float32, which its float64 model cannot use)
        coords0 = _coords_grid(batch_size, h // 8, w // 8, image1)
        coords1 = _coords_grid(batch_size, h // 8, w // 8, image1)
        flow_predictions = []
        for _ in range(num_flow_updates):
            coords1 = coords1.detach()
            corr_features = self.corr_block.index_pyramid(coords1)
            flow = coords1 - coords0
            hidden_state, delta_flow = self.update_block(hidden_state, context, corr_features, flow)
            coords1 = coords1 + delta_flow
            up_mask = None if self.mask_predictor is None else self.mask_predictor(hidden_state)
            flow_predictions.append(upsample_flow(coords1 - coords0, up_mask=up_mask))
        return flow_predictions


def _raft(variant, legacy_tag, pretrained, progress, weights, checkpoint_path, *, feature_encoder_layers,
          feature_encoder_block, feature_encoder_norm_layer, context_encoder_layers, context_encoder_block,
          context_encoder_norm_layer, corr_block_num_levels, corr_block_radius, motion_encoder_corr_layers,
          motion_encoder_flow_layers, motion_encoder_out_channels, recurrent_block_hidden_state_size,
          recurrent_block_kernel_size, recurrent_block_padding, flow_head_hidden_size, use_mask_predictor,
          **kwargs):
    """Build a registered RAFT from its configuration; ``feature_encoder``, ``context_encoder``,
    ``corr_block``, ``update_block`` and ``mask_predictor`` in ``kwargs`` replace the configured parts, as in
    torchvision. ``pretrained=True`` loads ``legacy_tag``, as torchvision's legacy flag does."""
    weights = resolve_weights(variant, weights=legacy_tag if pretrained and weights is None else weights)
    feature_encoder = kwargs.pop("feature_encoder", None) or FeatureEncoder(
        block=feature_encoder_block, layers=feature_encoder_layers, norm_layer=feature_encoder_norm_layer)
    context_encoder = kwargs.pop("context_encoder", None) or FeatureEncoder(
        block=context_encoder_block, layers=context_encoder_layers, norm_layer=context_encoder_norm_layer)
    corr_block = kwargs.pop("corr_block", None) or CorrBlock(num_levels=corr_block_num_levels,
                                                             radius=corr_block_radius)
    update_block = kwargs.pop("update_block", None)
    if update_block is None:
        motion_encoder = MotionEncoder(in_channels_corr=corr_block.out_channels,
                                       corr_layers=motion_encoder_corr_layers, flow_layers=motion_encoder_flow_layers,
                                       out_channels=motion_encoder_out_channels)
        out_channels_context = context_encoder_layers[-1] - recurrent_block_hidden_state_size
        recurrent_block = RecurrentBlock(input_size=motion_encoder.out_channels + out_channels_context,
                                         hidden_size=recurrent_block_hidden_state_size,
                                         kernel_size=recurrent_block_kernel_size, padding=recurrent_block_padding)
        flow_head = FlowHead(in_channels=recurrent_block_hidden_state_size, hidden_size=flow_head_hidden_size)
        update_block = UpdateBlock(motion_encoder=motion_encoder, recurrent_block=recurrent_block,
                                   flow_head=flow_head)
    mask_predictor = kwargs.pop("mask_predictor", None)
    if mask_predictor is None and use_mask_predictor:
        mask_predictor = MaskPredictor(in_channels=recurrent_block_hidden_state_size, hidden_size=256,
                                       multiplier=0.25)
    model = RAFT(feature_encoder=feature_encoder, context_encoder=context_encoder, corr_block=corr_block,
                 update_block=update_block, mask_predictor=mask_predictor, **kwargs)
    if weights is not None:
        load_pretrained(model, weights, progress=progress)
    if checkpoint_path:
        load_checkpoint(model, checkpoint_path)
    return model


@register_model
def raft_large(pretrained=False, progress=True, *, weights=None, checkpoint_path=None, **kwargs):
    """RAFT: residual encoders of 256 channels (instance norm for the features, batch norm for the context),
    a 4-level pyramid looked up at radius 4, a separable ConvGRU of 128 channels and convex upsampling."""
    return _raft("raft_large", "C_T_SKHT_V2", pretrained, progress, weights, checkpoint_path,
                 feature_encoder_layers=(64, 64, 96, 128, 256), feature_encoder_block=ResidualBlock,
                 feature_encoder_norm_layer=nn.InstanceNorm2d,
                 context_encoder_layers=(64, 64, 96, 128, 256), context_encoder_block=ResidualBlock,
                 context_encoder_norm_layer=nn.BatchNorm2d,
                 corr_block_num_levels=4, corr_block_radius=4,
                 motion_encoder_corr_layers=(256, 192), motion_encoder_flow_layers=(128, 64),
                 motion_encoder_out_channels=128,
                 recurrent_block_hidden_state_size=128, recurrent_block_kernel_size=((1, 5), (5, 1)),
                 recurrent_block_padding=((0, 2), (2, 0)),
                 flow_head_hidden_size=256, use_mask_predictor=True, **kwargs)


@register_model
def raft_small(pretrained=False, progress=True, *, weights=None, checkpoint_path=None, **kwargs):
    """RAFT-small: bottleneck encoders (instance norm for the features, none for the context), a 4-level
    pyramid looked up at radius 3, one 3x3 ConvGRU of 96 channels and bilinear upsampling."""
    return _raft("raft_small", "C_T_V2", pretrained, progress, weights, checkpoint_path,
                 feature_encoder_layers=(32, 32, 64, 96, 128), feature_encoder_block=BottleneckBlock,
                 feature_encoder_norm_layer=nn.InstanceNorm2d,
                 context_encoder_layers=(32, 32, 64, 96, 160), context_encoder_block=BottleneckBlock,
                 context_encoder_norm_layer=None,
                 corr_block_num_levels=4, corr_block_radius=3,
                 motion_encoder_corr_layers=(96,), motion_encoder_flow_layers=(64, 32),
                 motion_encoder_out_channels=82,
                 recurrent_block_hidden_state_size=96, recurrent_block_kernel_size=(3,),
                 recurrent_block_padding=(1,),
                 flow_head_hidden_size=128, use_mask_predictor=False, **kwargs)
