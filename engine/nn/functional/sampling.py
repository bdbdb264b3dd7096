"""``grid_sample`` and ``affine_grid``: an image read at arbitrary points (spatial transformers, warps).

``grid_sample`` reads ``input`` (N, C, H, W) at the points of ``grid`` (N, Ho, Wo, 2), x then y in [-1, 1],
with bilinear, nearest or bicubic weights and "zeros", "border" or "reflection" padding, as torch's: the same
mapping of [-1, 1] onto pixels (``align_corners``), the same reflection and clipping, and gradients for the
input (each tap's weight times the output gradient, summed into its pixel by one bincount) and for the grid.
Written against the array module, so the same code runs on numpy and CuPy. 4-D inputs only (no volumes).
"""
import warnings

import numpy as np

from ...amp import autocast_mode
from ...autograd.double_backward import constant, recomputed_backward
from ...autograd.function import Function
from ...ops._common import xp_of

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75  # torch's bicubic kernel parameter (as in interpolate)
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _unnormalize(coord, size, align_corners):
    """Pixel coordinates of ``coord`` in [-1, 1] along an axis of ``size``, and d(pixel)/d(coord)."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1), (size - 1) / 2
    return ((coord + 1) * size - 1) / 2, size / 2


def _clip(xp, x, size):
    """x clipped to [0, size - 1], and its derivative (0 at and past the ends, as torch's)."""
    return xp.clip(x, 0, size - 1), ((x > 0) & (x < size - 1)).astype(x.dtype)


def _reflect(xp, x, twice_low, twice_high):
    """x reflected into [low, high] (given doubled, as torch), and its derivative (+-1)."""
    if twice_low == twice_high:
        return xp.zeros_like(x), xp.zeros_like(x)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = x - low
    sign = xp.where(x < 0, -1.0, 1.0).astype(x.dtype)
    x = xp.abs(x)
    extra = xp.fmod(x, span)
    even = xp.floor(x / span) % 2 == 0
    return xp.where(even, extra + low, span - extra + low), xp.where(even, sign, -sign)


def _padded(xp, x, size, padding, align_corners):
    """Coordinates x under ``padding`` ("zeros" leaves them), and the derivative of that mapping."""
    if padding == "border":
        return _clip(xp, x, size)
    if padding == "reflection":
        twice = (0, 2 * (size - 1)) if align_corners else (-1, 2 * size - 1)
        x, d_reflect = _reflect(xp, x, *twice)
        x, d_clip = _clip(xp, x, size)
        return x, d_reflect * d_clip
    return x, xp.ones_like(x)


def _cubic_weights(t):
    """The four bicubic tap weights at fractions t (torch's cubic convolution, A = -0.75), and their
    derivatives with respect to t."""
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def near_d(x):
        return (3 * (a + 2) * x - 2 * (a + 3)) * x

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    def far_d(x):
        return (3 * a * x - 10 * a) * x + 8 * a
    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    derivatives = (far_d(t + 1), near_d(t), -near_d(1 - t), -far_d(2 - t))
    return weights, derivatives


class GridSample(Function):
    """``grid_sample`` on arrays; see the module docstring. Each tap is (pixel index, weight, dweight/dx,
    dweight/dy) over the output points; out-of-image taps have weight 0."""

    def __init__(self, mode, padding, align_corners):
        self.mode, self.padding, self.align_corners = mode, padding, align_corners

    def forward(self, x, grid):
        xp = xp_of(x, grid)
        n, c, h, w = x.shape
        self.shape, self.grid = x.shape, grid
        points = grid.shape[1] * grid.shape[2]
        gx, dx = _unnormalize(grid[..., 0].reshape(n, 1, points), w, self.align_corners)
        gy, dy = _unnormalize(grid[..., 1].reshape(n, 1, points), h, self.align_corners)
        self.taps = list(self._taps(xp, gx, gy, dx, dy, h, w))
        self.x = x.reshape(n, c, h * w)
        out = None
        for index, weight, _, _ in self.taps:
            term = weight * xp.take_along_axis(self.x, xp.broadcast_to(index, (n, c, index.shape[-1])), axis=2)
            out = term if out is None else out + term
        return xp.ascontiguousarray(out.reshape((n, c) + grid.shape[1:3]), dtype=x.dtype)

    def _taps(self, xp, gx, gy, dx, dy, h, w):
        """(flat pixel index, weight, d weight / d grid x, d weight / d grid y) per tap."""
        zero = xp.zeros_like(gx)
        if self.mode == "bicubic":  # padding applies to each tap, not to the point
            x0, y0 = xp.floor(gx), xp.floor(gy)
            (wx, dwx), (wy, dwy) = _cubic_weights(gx - x0), _cubic_weights(gy - y0)
            for j in range(4):
                for i in range(4):
                    tx, _ = _padded(xp, x0 - 1 + i, w, self.padding, self.align_corners)
                    ty, _ = _padded(xp, y0 - 1 + j, h, self.padding, self.align_corners)
                    yield self._tap(xp, tx, ty, h, w, wx[i] * wy[j], dwx[i] * wy[j] * dx, wx[i] * dwy[j] * dy)
            return
        px, dpx = _padded(xp, gx, w, self.padding, self.align_corners)
        py, dpy = _padded(xp, gy, h, self.padding, self.align_corners)
        if self.mode == "nearest":
            yield self._tap(xp, xp.rint(px), xp.rint(py), h, w, xp.ones_like(px), zero, zero)
            return
        x0, y0 = xp.floor(px), xp.floor(py)
        fx, fy = px - x0, py - y0
        sx, sy = dpx * dx, dpy * dy  # d pixel / d grid, through the padding
        for ty, wy, dwy in ((y0, 1 - fy, -sy), (y0 + 1, fy, sy)):
            for tx, wx, dwx in ((x0, 1 - fx, -sx), (x0 + 1, fx, sx)):
                yield self._tap(xp, tx, ty, h, w, wx * wy, dwx * wy, wx * dwy)

    @staticmethod
    def _tap(xp, tx, ty, h, w, weight, d_weight_x, d_weight_y):
        inside = ((tx >= 0) & (tx <= w - 1) & (ty >= 0) & (ty <= h - 1)).astype(weight.dtype)
        index = (xp.clip(ty, 0, h - 1) * w + xp.clip(tx, 0, w - 1)).astype(np.int64)
        return index, weight * inside, d_weight_x * inside, d_weight_y * inside

    def backward(self, gy):
        xp = xp_of(gy)
        n, c, h, w = self.shape
        g = gy.reshape(n, c, gy.shape[2] * gy.shape[3])
        g_input = g_grid = None
        if self.needs_input_grad[0]:
            rows = (xp.arange(n * c, dtype=np.int64) * (h * w)).reshape(n, c, 1)
            index = xp.concatenate([(rows + i).ravel() for i, _, _, _ in self.taps])
            weights = xp.concatenate([(g * wt).ravel() for _, wt, _, _ in self.taps])
            g_input = xp.bincount(index, weights, minlength=n * c * h * w).reshape(self.shape).astype(gy.dtype)
        if self.needs_input_grad[1]:
            d_x = d_y = 0
            for index, _, wx, wy in self.taps:
                values = (g * xp.take_along_axis(self.x, xp.broadcast_to(index, g.shape), axis=2)).sum(1)
                d_x = d_x + values * wx[:, 0]
                d_y = d_y + values * wy[:, 0]
            g_grid = xp.stack([d_x, d_y], -1).reshape(gy.shape[:1] + gy.shape[2:] + (2,)).astype(gy.dtype)
        return g_input, g_grid

    def backward_tensors(self, gy):
        return recomputed_backward(self, self._sample, [self.x.reshape(self.shape), self.grid], gy)

    def _sample(self, x, grid):
        """The sampling as engine ops, for the differentiable backward: each tap reads ``x`` at a constant pixel
        index (``gather``), weighted by a polynomial of the grid coordinates. The padding maps are piecewise
        linear, so each padded coordinate is its value plus its constant slope times the change of the grid
        coordinate (exact to every order); the tap positions and the in-image masks are constants."""
        xp = xp_of(self.grid)
        n, c, h, w = self.shape
        points = self.grid.shape[1] * self.grid.shape[2]
        coords = []
        for k, size in ((0, w), (1, h)):
            value, _ = _unnormalize(self.grid[..., k].reshape(n, 1, points), size, self.align_corners)
            scaled, _ = _unnormalize(grid[..., k].reshape(n, 1, points), size, self.align_corners)
            coords.append((value, scaled))
        flat = x.reshape(n, c, h * w)
        out = 0
        for index, weight, inside in self._tensor_taps(xp, coords, h, w):
            index = xp.ascontiguousarray(xp.broadcast_to(index, (n, c, points)))
            out = out + flat.gather(2, constant(index)) * (weight * constant(inside))
        return out.reshape((n, c) + tuple(self.grid.shape[1:3]))

    def _tensor_taps(self, xp, coords, h, w):
        """(pixel index, weight tensor, in-image mask) per tap, the weights functions of the grid tensor."""
        (gx, tgx), (gy, tgy) = coords
        if self.mode == "bicubic":
            x0, y0 = xp.floor(gx), xp.floor(gy)
            wx, _ = _cubic_weights(tgx - constant(x0))
            wy, _ = _cubic_weights(tgy - constant(y0))
            for j in range(4):
                for i in range(4):
                    tx, _ = _padded(xp, x0 - 1 + i, w, self.padding, self.align_corners)
                    ty, _ = _padded(xp, y0 - 1 + j, h, self.padding, self.align_corners)
                    index, inside = _position(xp, tx, ty, h, w)
                    yield index, wx[i] * wy[j], inside
            return
        px, dpx = _padded(xp, gx, w, self.padding, self.align_corners)
        py, dpy = _padded(xp, gy, h, self.padding, self.align_corners)
        if self.mode == "nearest":
            index, inside = _position(xp, xp.rint(px), xp.rint(py), h, w)
            yield index, 1.0, inside
            return
        x0, y0 = xp.floor(px), xp.floor(py)
        fx = constant(px - x0) + constant(dpx) * (tgx - constant(gx))
        fy = constant(py - y0) + constant(dpy) * (tgy - constant(gy))
        for ty, wy in ((y0, 1 - fy), (y0 + 1, fy)):
            for tx, wx in ((x0, 1 - fx), (x0 + 1, fx)):
                index, inside = _position(xp, tx, ty, h, w)
                yield index, wx * wy, inside


def _position(xp, tx, ty, h, w):
    """The flat pixel index of taps at (tx, ty) (clipped into the image) and where they lie inside it."""
    inside = ((tx >= 0) & (tx <= w - 1) & (ty >= 0) & (ty <= h - 1)).astype(tx.dtype)
    return (xp.clip(ty, 0, h - 1) * w + xp.clip(tx, 0, w - 1)).astype(np.int64), inside


@autocast_mode.policy(cpu=autocast_mode.FLOAT32, cuda=autocast_mode.PROMOTE)
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``input`` (N, C, H, W) read at ``grid`` (N, Ho, Wo, 2): (N, C, Ho, Wo), as torch's ``grid_sample``; a 5-D
    input (N, C, D, H, W) with a grid (N, Do, Ho, Wo, 3) goes to the trilinear/nearest 3-D sampler."""
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING)
        align_corners = False
    if input.dim() == 5:
        if mode == "bicubic":
            raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
        from ...ops.grid_sample_3d import grid_sample_3d
        return grid_sample_3d(input, grid, mode, padding_mode, align_corners)
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    check_grid(input, grid, 2)
    return GridSample(mode, padding_mode, bool(align_corners))(input, grid)


def check_grid(input, grid, coordinates):
    """torch's checks of a sampling grid against its input: ``coordinates`` (2 or 3) values per point, the same
    batch size and dtype."""
    if grid.dim() != coordinates + 2 or grid.shape[-1] != coordinates:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {coordinates} in last dimension, but got grid "
                           f"with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.title} but found {grid.dtype.title}")


def affine_grid(theta, size, align_corners=None):
    """The grid that ``grid_sample`` needs to apply the affine maps ``theta`` to an image of ``size``: (N, H, W, 2)
    for 2x3 maps (N, 2, 3) and a size (N, C, H, W), (N, D, H, W, 3) for 3x4 maps (N, 3, 4) and a size
    (N, C, D, H, W); differentiable in theta (a product with the base grid, which autocast casts as it casts
    torch's)."""
    from ...ops.creation import ones, zeros
    from ...ops.ranges import linspace
    from ...ops.shape import stack
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING)
        align_corners = False
    size = tuple(size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    spatial = size[2:]
    k = len(spatial)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (k, k + 1):
        raise ValueError(f"Expected a batch of {k}D affine matrices of shape Nx{k}x{k + 1} for size {size}. Got "
                         f"{theta.shape}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.")

    def axis(i):  # the coordinates along spatial axis i, broadcast over the grid; a single step sits at 0
        steps = spatial[i]
        points = linspace(-1, 1, steps, dtype=theta.dtype, device=theta.device) if steps > 1 else \
            zeros(1, dtype=theta.dtype, device=theta.device)
        points = points if align_corners else points * ((steps - 1) / steps)
        return points.reshape(tuple(steps if j == i else 1 for j in range(k))).expand(spatial)
    # x runs along the last axis (W), then y (H), then z (D); the constant 1 carries the translation
    base = stack([axis(i) for i in reversed(range(k))] + [ones(spatial, dtype=theta.dtype, device=theta.device)],
                 -1)
    points = 1
    for n in spatial:
        points *= n
    return (base.reshape(1, points, k + 1) @ theta.transpose(1, 2)).reshape((size[0],) + spatial + (k,))


__all__ = ["grid_sample", "affine_grid"]
