"""aten's ``grid_sampler_2d`` and ``grid_sampler_3d``: ``grid_sample`` on 4-d or 5-d inputs, with the modes as
aten's integer codes (interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border,
2 reflection). They check the rank; the 2-d one calls ``grid_sampler`` (``nn.functional.grid_sample``), the
3-d one ``grid_sample_3d``."""
from .functional_aliases import GRID_PADDINGS, _enum, grid_sampler
from .grid_sample_3d import MODES, grid_sample_3d


def _check_rank(input, grid, ndim):
    if input.dim() != ndim or grid.dim() != ndim:
        raise RuntimeError(f"grid_sampler(): expected {ndim}D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """Sample the (N, C, H, W) ``input`` at the (N, H_out, W_out, 2) ``grid``'s points."""
    _check_rank(input, grid, 4)
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """Sample the (N, C, D, H, W) ``input`` at the (N, D_out, H_out, W_out, 3) ``grid``'s points (bicubic
    refused, as torch's)."""
    _check_rank(input, grid, 5)
    if interpolation_mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return grid_sample_3d(input, grid, _enum(MODES, interpolation_mode, "interpolation_mode"),
                          _enum(GRID_PADDINGS, padding_mode, "padding_mode"), align_corners)


__all__ = ["grid_sampler_2d", "grid_sampler_3d"]
