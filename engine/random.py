"""Random number generation: a seedable ``Generator`` and the process-wide default one."""
import numpy as np


class Generator:
    """A seedable source of random numbers (numpy PCG64), like ``torch.Generator``."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721
        self.rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed):
        self._seed = int(seed)
        self.rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        self.manual_seed(np.random.SeedSequence().entropy % (2 ** 63))
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        return self.rng.bit_generator.state

    def set_state(self, state):
        self.rng.bit_generator.state = state
        return self


default_generator = Generator()

# Random numbers drawn on a GPU come from CuPy's generator of that device, seeded like torch's CUDA
# generators: by engine.manual_seed (with the CPU's) or engine.cuda.manual_seed (alone).
_cuda_seed = default_generator.initial_seed()
_cuda_states = {}


def seed_cuda(seed):
    """Seed the random numbers drawn on every GPU."""
    global _cuda_seed
    _cuda_seed = int(seed)
    _cuda_states.clear()


def cuda_rng(index):
    """CuPy's random state of GPU ``index`` (created from the CUDA seed on first use)."""
    state = _cuda_states.get(index)
    if state is None:
        from ._device import cupy
        with cupy().cuda.Device(index):
            state = _cuda_states[index] = cupy().random.RandomState(_cuda_seed + index)
    return state


def device_rng(device, generator=None):
    """The CuPy random state that draws on ``device``, or None where samples are drawn on the host (the
    CPU, or an explicit ``generator``, which is a host generator)."""
    from ._device import device as _device
    if device is None or generator is not None:
        return None
    device = _device(device)
    return cuda_rng(device.index or 0) if device.type == "cuda" else None


def manual_seed(seed):
    """Seed the default generator and the GPUs': initialisation, dropout and random creation become
    reproducible."""
    seed_cuda(seed)
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state):
    default_generator.set_state(state)


def rng(generator=None):
    """The numpy Generator behind ``generator`` (or the default one)."""
    return (generator or default_generator).rng


# float32 arrays of at least this many samples are drawn in _PIECES fixed pieces, each from its own
# generator seeded by the caller's, on the CPU threads (resnet152's init: 0.66 s -> about half that
# on 2 cores). The pieces do not depend on the thread count, so a seed gives the same values anywhere.
_PARALLEL_MIN_SAMPLES = 1 << 20
_PIECES = 8


def _float32_samples(g, shape, draw):
    """A float32 array of ``shape`` filled by ``draw(generator, out)``; large ones piecewise in parallel."""
    out = np.empty(shape, np.float32)
    flat = out.reshape(-1)
    if flat.size < _PARALLEL_MIN_SAMPLES:
        draw(g, flat)
        return out
    from . import backends

    seeds = g.integers(0, 2 ** 63, size=_PIECES)
    bounds = [flat.size * i // _PIECES for i in range(_PIECES + 1)]

    def pieces(lo, hi):
        for i in range(lo, hi):
            draw(np.random.Generator(np.random.PCG64(seeds[i])), flat[bounds[i]:bounds[i + 1]])
    backends.runtime("cpu").parallel_chunks(pieces, _PIECES, out.nbytes)
    return out


def uniform_array(generator, low, high, shape, dtype):
    """Uniform samples in [low, high) drawn directly in ``dtype``'s precision when it is float32 or lower."""
    g = rng(generator)
    if np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize <= 4:
        out = _float32_samples(g, shape, lambda gen, view: gen.random(out=view, dtype=np.float32))
        out *= high - low
        out += low
        return out
    return g.uniform(low, high, shape)


def normal_array(generator, mean, std, shape, dtype):
    """Normal samples drawn directly in ``dtype``'s precision when it is float32 or lower."""
    g = rng(generator)
    if np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize <= 4:
        out = _float32_samples(g, shape, lambda gen, view: gen.standard_normal(out=view, dtype=np.float32))
        out *= std
        out += mean
        return out
    return g.normal(mean, std, shape)
