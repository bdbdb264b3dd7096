"""Random number generation: a seedable ``Generator`` and the process-wide default one.

On the CPU the generator is PyTorch's: an mt19937 seeded as ``torch.Generator`` seeds it, drawn from
by samplers that use its stream as torch's CPU kernels do (``engine._rng``), so a seed gives the
same tensors, initial weights, dropout masks and shuffles as in PyTorch. Its state reads and writes
as torch's bytes: ``engine.set_rng_state(torch.get_rng_state())`` continues torch's stream.
"""
import contextlib
import importlib
import os
import warnings

import numpy as np

from ._rng import state as _state

_DEFAULT_SEED = 67280421310721
_UINT64 = 2 ** 64


def _seed_value(seed):
    """``seed`` as the unsigned 64-bit value torch stores (negative seeds wrap around)."""
    seed = int(seed)
    if not -2 ** 63 <= seed < _UINT64:
        raise RuntimeError(f"Overflow when unpacking long: seed {seed} does not fit in 64 bits")
    return seed % _UINT64


class Generator:
    """A seedable source of random numbers, like ``torch.Generator``: torch's CPU mt19937 stream."""

    def __init__(self, device="cpu"):
        self.device = device
        self._bits = np.random.MT19937()
        self._numpy = np.random.Generator(self._bits)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed):
        """Restart the stream from ``seed``; returns the generator."""
        self._seed = _seed_value(seed)
        self._bits.state = _state.numpy_state(_state.key_for_seed(self._seed), _state.WORDS)
        self._fresh = True
        self.next_double_normal = None
        self.next_float_normal = None
        return self

    def seed(self):
        """Seed from the operating system's entropy; returns the seed."""
        self.manual_seed(int.from_bytes(os.urandom(8), "little"))
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The state as torch's uint8 tensor of 5056 bytes (what ``torch.Generator.get_state`` returns)."""
        from .ops.creation import from_numpy

        bits = self._bits.state["state"]
        data = _state.pack(self._seed, bits["key"], bits["pos"], self._fresh and bits["pos"] == _state.WORDS,
                           self.next_double_normal, self.next_float_normal)
        return from_numpy(np.frombuffer(data, np.uint8).copy())

    def set_state(self, new_state):
        """Restore a state from ``get_state`` (ours or torch's: a tensor, array or bytes); returns self."""
        data = new_state.numpy() if hasattr(new_state, "numpy") else new_state
        data = np.ascontiguousarray(data, dtype=np.uint8).tobytes() if not isinstance(data, bytes) else data
        try:
            seed, key, position, fresh, double_normal, float_normal = _state.unpack(data)
        except ValueError as error:
            raise RuntimeError(str(error)) from None
        self._seed = seed
        self._bits.state = _state.numpy_state(key, position)
        self._fresh = fresh
        self.next_double_normal = double_normal
        self.next_float_normal = float_normal
        return self

    def draw_uint32(self, count):
        """The next ``count`` 32-bit words of the stream (torch's ``random()``), as uint32."""
        self._fresh = self._fresh and not count  # drawing nothing leaves torch's state bytes as seeded
        return self._numpy.integers(0, 2 ** 32, count, dtype=np.uint32)

    def draw_uint64(self, count):
        """The next ``count`` 64-bit values, each two words high then low (torch's ``random64()``)."""
        self._fresh = self._fresh and not count
        return self._numpy.integers(0, _UINT64 - 1, count, dtype=np.uint64, endpoint=True)

    def numpy_generator(self):
        """A numpy ``Generator`` drawing from this generator's stream (for samplers torch does not have)."""
        self._fresh = False
        return self._numpy


default_generator = Generator()

# Random numbers drawn on a GPU come from that device's generator (``backends.runtime("cuda").generator``:
# counter-based, its state on the device, so CUDA graphs capture its draws), seeded like torch's CUDA
# generators: by engine.manual_seed (with the CPU's) or engine.cuda.manual_seed (alone).
_cuda_seed = default_generator.initial_seed()
_cuda_states = {}
_cuda_process = os.getpid()  # the process whose GPUs the generators in _cuda_states draw on


def seed_cuda(seed):
    """Seed the random numbers drawn on every GPU: generators made already restart in place (graphs that
    captured their draws follow), except in a forked process (a DataLoader worker seeding itself), which must
    not touch its parent's GPU: there they are dropped."""
    global _cuda_seed, _cuda_process
    _cuda_seed = int(seed)
    if _cuda_process != os.getpid():
        _cuda_states.clear()
        _cuda_process = os.getpid()
    for index, state in _cuda_states.items():
        state.manual_seed(_cuda_seed + index)


def cuda_rng(index):
    """The random number generator of GPU ``index`` (created from the CUDA seed on first use)."""
    state = _cuda_states.get(index)
    if state is None:
        from . import backends
        from ._device import cupy
        with cupy().cuda.Device(index):
            state = _cuda_states[index] = backends.runtime("cuda").generator(_cuda_seed + index)
    return state


def device_rng(device, generator=None):
    """The generator that draws on ``device`` (CuPy's sampler interface), or None where samples are drawn on
    the host (the CPU, or an explicit ``generator``, which is a host generator)."""
    from ._device import device as _device
    if device is None or generator is not None:
        return None
    device = _device(device)
    return cuda_rng(device.index or 0) if device.type == "cuda" else None


def manual_seed(seed):
    """Seed the default generator and the GPUs': initialisation, dropout and random creation become
    reproducible, and equal to PyTorch's after ``torch.manual_seed`` with the same seed."""
    seed = _seed_value(seed)
    seed_cuda(seed)
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state, as torch's uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default generator's state (also from ``torch.get_rng_state()``)."""
    default_generator.set_state(new_state)


_fork_rng_warned = False


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """``torch.random.fork_rng``: the default generator's state, and that of the GPUs ``devices`` (all of them
    when None), are saved on entry and restored on exit, so the draws inside leave the streams outside as they were.
    ``enabled=False`` makes it a no-op."""
    global _fork_rng_warned
    if not enabled:
        yield
        return
    if device_type == "meta":
        device_type = "cuda"
    device_module = importlib.import_module(f"engine.{device_type}")
    if devices is None:
        count = device_module.device_count()
        if count > 1 and not _fork_rng_warned:
            warnings.warn(f"{_caller} saves and restores the random state of all {count} {device_type} devices, "
                          f"which can be slow: name those in use with its '{_devices_kw}' argument", stacklevel=3)
            _fork_rng_warned = True
        devices = list(range(count))
    else:
        devices = list(devices)
    cpu_state = get_rng_state()
    device_states = [device_module.get_rng_state(device) for device in devices]
    try:
        yield
    finally:
        set_rng_state(cpu_state)
        for device, state in zip(devices, device_states):
            device_module.set_rng_state(state, device)


def generator_or_default(generator=None):
    return generator or default_generator


def rng(generator=None):
    """A numpy Generator drawing from ``generator``'s stream (or the default one's)."""
    return generator_or_default(generator).numpy_generator()


def random_seed(generator=None):
    """A seed drawn as ``torch.empty((), dtype=torch.int64).random_(generator=g).item()`` draws it."""
    return int(generator_or_default(generator).draw_uint64(1)[0] % np.uint64(2 ** 63))
