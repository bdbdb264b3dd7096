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


def manual_seed(seed):
    """Seed the default generator: initialisation, dropout and random creation become reproducible."""
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


def uniform_array(generator, low, high, shape, dtype):
    """Uniform samples in [low, high) drawn directly in ``dtype``'s precision when it is float32 or lower."""
    g = rng(generator)
    if np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize <= 4:
        out = g.random(shape, dtype=np.float32)
        out *= high - low
        out += low
        return out
    return g.uniform(low, high, shape)


def normal_array(generator, mean, std, shape, dtype):
    """Normal samples drawn directly in ``dtype``'s precision when it is float32 or lower."""
    g = rng(generator)
    if np.dtype(dtype).kind == "f" and np.dtype(dtype).itemsize <= 4:
        out = g.standard_normal(shape, dtype=np.float32)
        out *= std
        out += mean
        return out
    return g.normal(mean, std, shape)
