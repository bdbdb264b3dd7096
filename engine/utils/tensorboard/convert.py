"""Turning what users pass to the writer (engine tensors, numpy arrays, Python numbers) into numpy."""
import numpy as np


def make_np(x):
    """A numpy array of ``x``: an array as is, a Python/numpy scalar as a 1-element array, a tensor
    (engine or torch: anything with ``detach``/``cpu``/``numpy``) detached and copied to the host.
    bfloat16, which numpy lacks, comes back as float32."""
    if isinstance(x, np.ndarray):
        return x
    if np.isscalar(x):
        return np.array([x])
    if all(hasattr(x, name) for name in ("detach", "cpu", "numpy")):
        dtype = str(getattr(x, "dtype", ""))
        if dtype.endswith("bfloat16"):
            x = x.float()
        return np.asarray(x.detach().cpu().numpy())
    raise NotImplementedError(f"Got {type(x)}, but numpy array or engine tensor are expected.")
