"""DropBlock (Ghiasi et al. 2018, "DropBlock: A regularization method for convolutional networks"): in
training, drop contiguous square (cubic) blocks of each feature map instead of single elements, and rescale
what is kept so that the mean is preserved (torchvision.ops.drop_block2d / drop_block3d)."""
import engine
import engine.nn.functional as F
from engine import nn


def _drop_block(input, p, block_size, inplace, eps, training, dims):
    """DropBlock over the last ``dims`` axes of an (N, C, *spatial) input.

    Block centres are drawn Bernoulli(gamma) over the positions where a whole block fits, gamma chosen so
    that about a fraction p of the elements is dropped; each centre is grown into a block by a stride-1
    max pool, and the kept elements are scaled by numel / (eps + number kept).
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}.")
    if input.ndim != dims + 2:
        raise ValueError(f"input should be {dims + 2} dimensional. Got {input.ndim} dimensions.")
    if not training or p == 0.0:
        return input
    spatial = tuple(input.shape[2:])
    block_size = min(block_size, *spatial)
    if block_size % 2 == 0:
        raise ValueError(f"block size should be odd. Got {block_size} which is even.")
    volume, valid_volume = 1, 1
    for size in spatial:
        volume, valid_volume = volume * size, valid_volume * (size - block_size + 1)
    gamma = (p * volume) / ((block_size ** dims) * valid_volume)
    centres = [size - block_size + 1 for size in spatial]
    noise = engine.empty((*input.shape[:2], *centres), dtype=input.dtype, device=input.device).bernoulli_(gamma)
    noise = F.pad(noise, [block_size // 2] * (2 * dims), value=0)
    pool = F.max_pool2d if dims == 2 else F.max_pool3d
    noise = pool(noise, kernel_size=block_size, stride=1, padding=block_size // 2)
    noise = 1 - noise
    normalize_scale = noise.numel() / (eps + noise.sum())
    if inplace:
        return input.mul_(noise).mul_(normalize_scale)
    return input * noise * normalize_scale


def drop_block2d(input, p, block_size, inplace=False, eps=1e-06, training=True):
    """DropBlock on (N, C, H, W): blocks of ``block_size`` x ``block_size`` (odd once clipped to the map)
    dropped so that about a fraction ``p`` of the elements is; ``input`` itself in eval mode or with p = 0."""
    return _drop_block(input, p, block_size, inplace, eps, training, 2)


def drop_block3d(input, p, block_size, inplace=False, eps=1e-06, training=True):
    """DropBlock on (N, C, D, H, W) with cubic blocks; see :func:`drop_block2d`."""
    return _drop_block(input, p, block_size, inplace, eps, training, 3)


class DropBlock2d(nn.Module):
    """Module form of :func:`drop_block2d` (active in training mode)."""

    def __init__(self, p, block_size, inplace=False, eps=1e-06):
        super().__init__()
        self.p = p
        self.block_size = block_size
        self.inplace = inplace
        self.eps = eps

    def forward(self, input):
        return drop_block2d(input, self.p, self.block_size, self.inplace, self.eps, self.training)

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p}, block_size={self.block_size}, inplace={self.inplace})"


class DropBlock3d(DropBlock2d):
    """Module form of :func:`drop_block3d` (active in training mode)."""

    def forward(self, input):
        return drop_block3d(input, self.p, self.block_size, self.inplace, self.eps, self.training)


__all__ = ["drop_block2d", "drop_block3d", "DropBlock2d", "DropBlock3d"]
