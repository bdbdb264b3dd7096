"""Random numbers drawn on the GPU by counter (Philox4x32-10, ``kernels/random.cu``), the generator's state (seed
and offset) kept in device memory.

CuPy's generator keeps its position on the host: a CUDA graph that captured one of its draws would repeat the
same numbers in every replay. Here each draw reads the seed and offset from the device, and a one-thread kernel
advances the offset after it, so a captured draw is new in each replay and a training step with dropout or
stochastic depth is captured whole. ``DeviceGenerator`` is what ``engine.random`` gives the samplers for a GPU:
uniform and normal draws (dropout, ``bernoulli``, ``rand``, ``randn``, ``uniform_``, ``normal_``, and
``multinomial``'s uniforms) are Philox's;
the rarer samplers (``randint``, ``randperm``, ``exponential_``, ...) are CuPy's generator's, seeded alike, and
raise during a capture (the graph then runs op by op, with a warning naming the op).
"""
import cupy
import numpy as np

from . import graphs
from .source import launch


def _blocks(n, dtype):
    """Philox blocks (4 words) a draw of ``n`` values takes: 4 float32 values a block, 2 float64 ones."""
    return -(-n // (4 if dtype.itemsize <= 4 else 2))


class DeviceGenerator:
    """The random numbers of one GPU, seeded by ``manual_seed`` (see the module docstring)."""

    def __init__(self, seed):
        self.state = cupy.zeros(2, np.uint64)  # the Philox key (the seed) and the offset, in blocks
        self._cupy = cupy.random.RandomState(seed)
        self.manual_seed(seed)

    def manual_seed(self, seed):
        """Restart from ``seed`` in place: graphs captured before draw from the new seed too."""
        self.state[...] = cupy.asarray(np.array([int(seed) % 2 ** 64, 0], np.uint64))
        self._cupy.seed(seed)

    def _draw(self, kernel, size, dtype):
        dtype = np.dtype(dtype)
        out = cupy.empty(() if size is None else size, dtype)
        if out.size:
            blocks = _blocks(out.size, dtype)
            launch("random", kernel, dtype, blocks, self.state, out, out.size)
            launch("random", "philox_advance", dtype, 1, self.state, blocks)
        return out

    def random_sample(self, size=None, dtype=np.float64):
        """Uniform in [0, 1)."""
        return self._draw("philox_uniform", size, dtype)

    def standard_normal(self, size=None, dtype=np.float64):
        return self._draw("philox_normal", size, dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=np.float64):
        dtype = np.dtype(dtype)
        return self.random_sample(size, dtype) * dtype.type(high - low) + dtype.type(low)

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=np.float64):
        dtype = np.dtype(dtype)
        return self.standard_normal(size, dtype) * dtype.type(scale) + dtype.type(loc)

    def __getattr__(self, name):
        """The other samplers: CuPy's generator, whose position a capture cannot advance."""
        if name.startswith("_"):
            raise AttributeError(name)
        if graphs.capturing():
            raise RuntimeError(f"the {name} sampler draws from CuPy's generator, whose position is kept on the "
                               "host: every replay would repeat its numbers")
        return getattr(self._cupy, name)
