"""Temporal subsampling of videos."""
import engine

from .... import tv_tensors
from ._utils import _register_kernel_internal, dispatch


def uniform_temporal_subsample(inpt, num_samples):
    """``num_samples`` frames evenly spaced from the first to the last (dimension -4)."""
    return dispatch(uniform_temporal_subsample, inpt, num_samples=num_samples)


@_register_kernel_internal(uniform_temporal_subsample, engine.Tensor)
@_register_kernel_internal(uniform_temporal_subsample, tv_tensors.Video)
def uniform_temporal_subsample_video(video, num_samples):
    frames = video.shape[-4]
    indices = engine.linspace(0, frames - 1, num_samples, device=video.device).long()
    return engine.index_select(video, -4, indices)


__all__ = ["uniform_temporal_subsample", "uniform_temporal_subsample_video"]
