"""The GPUs' random number generators as ``torch.cuda``'s RNG calls (``engine.random.cuda_rng``).

A GPU's state is our own format, not torch's: 16 bytes, the Philox key (the seed) and offset of
``backends/cuda/philox.py`` as two little-endian uint64, in a uint8 CPU tensor. It covers the uniform and normal
draws (dropout, ``rand``, ``randn``, ``bernoulli``, ...); the rarer samplers that draw from CuPy's own generator
(``randint``, ``randperm``, ...) are not in it, as CuPy cannot read that generator's state back.
Without a GPU, setting or seeding is a no-op and reading raises, as torch's calls do there.
"""
import os

import numpy as np

from .. import _device, random as _random

_STATE_BYTES = 16


def _gpu_index(device):
    reason = _device.cuda_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"CUDA is not available: {reason}")
    if device == "cuda" or device is None:
        return _device.cupy().cuda.Device().id
    if isinstance(device, int):
        return device
    device = _device.device(device)
    return device.index if device.index is not None else _device.cupy().cuda.Device().id


def get_rng_state(device="cuda"):
    """GPU ``device``'s generator state (see the module docstring)."""
    from ..ops.creation import from_numpy
    generator = _random.cuda_rng(_gpu_index(device))
    words = generator.state.get().astype("<u8")
    return from_numpy(np.frombuffer(words.tobytes(), np.uint8).copy())


def set_rng_state(new_state, device="cuda"):
    """Restore a state from ``get_rng_state`` (a uint8 tensor, array or bytes): the uniform and normal draws that
    followed it come again."""
    if not _device.cuda_available():
        return
    data = new_state.numpy() if hasattr(new_state, "numpy") else new_state
    data = data if isinstance(data, bytes) else np.ascontiguousarray(data, dtype=np.uint8).tobytes()
    if len(data) != _STATE_BYTES:
        raise RuntimeError(f"Expected a CUDA generator state of {_STATE_BYTES} bytes, but got {len(data)}")
    generator = _random.cuda_rng(_gpu_index(device))
    generator.state[...] = _device.cupy().asarray(np.frombuffer(data, "<u8").astype(np.uint64))


def get_rng_state_all():
    """Every GPU's state, in device order."""
    from . import device_count
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states):
    """Restore every GPU's state from ``get_rng_state_all``."""
    for index, state in enumerate(new_states):
        set_rng_state(state, index)


def _fresh_seed():
    return int.from_bytes(os.urandom(8), "little") >> 1


def seed():
    """Seed the current GPU's generator from the operating system's entropy."""
    if _device.cuda_available():
        _random.cuda_rng(_gpu_index(None)).manual_seed(_fresh_seed())


def seed_all():
    """Seed every GPU's generator from the operating system's entropy."""
    if _device.cuda_available():
        _random.seed_cuda(_fresh_seed())


def initial_seed():
    """The seed of the current GPU's generator."""
    return int(_random.cuda_rng(_gpu_index(None)).state[0].get())


def default_generators():
    """The GPUs' generators, in device order (empty without a GPU)."""
    from . import device_count
    return tuple(_random.cuda_rng(i) for i in range(device_count()))
