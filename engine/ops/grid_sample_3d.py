"""``grid_sample`` of volumes: ``input`` (N, C, D, H, W) read at the points of ``grid`` (N, Do, Ho, Wo, 3),
x, y, z in [-1, 1], with trilinear or nearest weights and "zeros", "border" or "reflection" padding, as
torch's (bicubic is 2-d only, there too).

The 2-d sampler's coordinate mapping and padding (``nn/functional/sampling.py``) are reused axis by axis; the
gradients are the 2-d ones with a third axis: each tap's weight times the output gradient summed into its
voxel by one bincount for the input, and the weights' derivatives for the grid.
"""
import numpy as np

from ..autograd.function import Function
from ..nn.functional.sampling import _padded, _unnormalize, check_grid
from ._common import xp_of

MODES = {0: "bilinear", 1: "nearest"}  # aten's codes; "bilinear" of a volume is trilinear


class GridSample3d(Function):
    """Each tap is (flat voxel index, weight, d weight / d grid x, y, z) over the output points; taps outside
    the volume have weight 0."""

    def __init__(self, mode, padding, align_corners):
        self.mode, self.padding, self.align_corners = mode, padding, align_corners

    def forward(self, x, grid):
        xp = xp_of(x, grid)
        n, c = x.shape[:2]
        self.shape = x.shape
        sizes = x.shape[:1:-1]  # W, H, D: the sizes of the axes of grid's x, y, z
        points = int(np.prod(grid.shape[1:4]))
        axes = []
        for k, size in enumerate(sizes):
            coord, scale = _unnormalize(grid[..., k].reshape(n, 1, points), size, self.align_corners)
            padded, d_padded = _padded(xp, coord, size, self.padding, self.align_corners)
            axes.append((padded, d_padded * scale))
        self.taps = list(self._taps(xp, axes, sizes))
        self.x = x.reshape(n, c, -1)
        out = None
        for index, weight, _ in self.taps:
            term = weight * xp.take_along_axis(self.x, xp.broadcast_to(index, (n, c, points)), axis=2)
            out = term if out is None else out + term
        return xp.ascontiguousarray(out.reshape((n, c) + grid.shape[1:4]), dtype=x.dtype)

    def _taps(self, xp, axes, sizes):
        if self.mode == "nearest":
            zero = xp.zeros_like(axes[0][0])
            yield self._tap(xp, [xp.rint(p) for p, _ in axes], sizes, xp.ones_like(zero), (zero,) * 3)
            return
        corners = [xp.floor(p) for p, _ in axes]
        fractions = [p - c for (p, _), c in zip(axes, corners)]
        for bits in np.ndindex(2, 2, 2):
            weights = [f if b else 1 - f for f, b in zip(fractions, bits)]
            slopes = [s if b else -s for (_, s), b in zip(axes, bits)]
            weight = weights[0] * weights[1] * weights[2]
            derivatives = tuple(slopes[k] * weights[(k + 1) % 3] * weights[(k + 2) % 3] for k in range(3))
            yield self._tap(xp, [c + b for c, b in zip(corners, bits)], sizes, weight, derivatives)

    @staticmethod
    def _tap(xp, positions, sizes, weight, derivatives):
        inside = None
        index = 0
        stride = 1
        for p, size in zip(positions, sizes):  # x (fastest), y, z
            ok = (p >= 0) & (p <= size - 1)
            inside = ok if inside is None else inside & ok
            index = index + xp.clip(p, 0, size - 1).astype(np.int64) * stride
            stride *= size
        inside = inside.astype(weight.dtype)
        return index, weight * inside, tuple(d * inside for d in derivatives)

    def backward(self, gy):
        xp = xp_of(gy)
        n, c = self.shape[:2]
        voxels = int(np.prod(self.shape[2:]))
        g = gy.reshape(n, c, -1)
        g_input = g_grid = None
        if self.needs_input_grad[0]:
            rows = (xp.arange(n * c, dtype=np.int64) * voxels).reshape(n, c, 1)
            index = xp.concatenate([(rows + i).ravel() for i, _, _ in self.taps])
            weights = xp.concatenate([(g * wt).ravel() for _, wt, _ in self.taps])
            g_input = xp.bincount(index, weights, minlength=n * c * voxels).reshape(self.shape).astype(gy.dtype)
        if self.needs_input_grad[1]:
            parts = [0, 0, 0]
            for index, _, derivatives in self.taps:
                values = (g * xp.take_along_axis(self.x, xp.broadcast_to(index, g.shape), axis=2)).sum(1)
                parts = [part + values * d[:, 0] for part, d in zip(parts, derivatives)]
            g_grid = xp.stack(parts, -1).reshape(gy.shape[:1] + gy.shape[2:] + (3,)).astype(gy.dtype)
        return g_input, g_grid


def grid_sample_3d(input, grid, mode, padding_mode, align_corners):
    """The checked call of ``GridSample3d`` (mode and padding by name)."""
    check_grid(input, grid, 3)
    return GridSample3d(mode, padding_mode, bool(align_corners))(input, grid)
