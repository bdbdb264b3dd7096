"""Malformed checkpoints fail with CheckpointError only: every cut point and thousands of seeded byte
corruptions of small files in each format (legacy pickle, zip, safetensors). A corrupted file that still
loads must give tensors that can be read whole (a corruption inside raw tensor bytes may change values)."""
import io
import random
from collections import OrderedDict

import numpy as np
import pytest
import torch

import engine
from engine import nn
from engine.serialization import CheckpointError, load, save

FORMATS = ("legacy", "zip", "safetensors", "engine_zip")


def _small_checkpoint(fmt):
    """The bytes of a small checkpoint in ``fmt`` and the object it holds."""
    if fmt == "safetensors":
        state = {"w": engine.arange(6.0).reshape(2, 3), "b": engine.tensor([1, 2]), "h": engine.ones(2, dtype=engine.float16)}
        buffer = io.BytesIO()
        engine.serialization.save_safetensors(state, buffer)
        return buffer.getvalue(), state
    if fmt == "engine_zip":
        base = engine.arange(12.0).reshape(3, 4)
        state = {"model": OrderedDict(w=nn.Parameter(base), t=base.t()), "epoch": 2, "m": [engine.tensor([True, False])]}
        buffer = io.BytesIO()
        save(state, buffer)
        return buffer.getvalue(), state
    state = {"w": torch.arange(6.0).reshape(2, 3), "b": torch.tensor([1, 2]), "n": 3}
    buffer = io.BytesIO()
    torch.save(state, buffer, _use_new_zipfile_serialization=(fmt == "zip"))
    return buffer.getvalue(), state


def _read_whole(obj):
    """Touch every element of every tensor (a view past its memory would crash or fail here)."""
    if isinstance(obj, engine.Tensor):
        np.asarray(obj.detach().numpy()).tobytes()
    elif isinstance(obj, dict):
        for value in obj.values():
            _read_whole(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _read_whole(value)


def _equal(loaded, original):
    if isinstance(original, (engine.Tensor, torch.Tensor)):
        return np.array_equal(loaded.detach().numpy(), original.detach().numpy())
    if isinstance(original, dict):  # safetensors orders its keys itself
        return isinstance(loaded, dict) and sorted(loaded) == sorted(original) and all(
            _equal(loaded[k], original[k]) for k in original)
    if isinstance(original, list):
        return len(loaded) == len(original) and all(_equal(a, b) for a, b in zip(loaded, original))
    return loaded == original


def _load_or_refuse(data, path=None):
    """The object loaded from ``data`` (memory-mapped from ``path`` when given), or None when it was
    refused with a one-line CheckpointError; any other exception fails the test."""
    try:
        if path is None:
            return load(io.BytesIO(data))
        path.write_bytes(data)
        return load(path, mmap=True)
    except CheckpointError as e:
        message = str(e)
        assert "\n" not in message and ("cannot load '" in message or "' is" in message), message
        return None


def _corruptions(data, count, seed):
    """``count`` copies of ``data`` with 1 to 8 random bytes replaced (seeded)."""
    rng = random.Random(seed)
    for _ in range(count):
        corrupted = bytearray(data)
        for _ in range(rng.choice((1, 2, 3, 8))):
            corrupted[rng.randrange(len(corrupted))] = rng.randrange(256)
        yield bytes(corrupted)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_cut_point_is_refused_or_loads_correctly(fmt):
    data, original = _small_checkpoint(fmt)
    assert _equal(load(io.BytesIO(data)), original)
    for cut in range(len(data)):
        loaded = _load_or_refuse(data[:cut])
        assert loaded is None or _equal(loaded, original), f"cut at {cut} of {len(data)} loaded other data"


@pytest.mark.parametrize("fmt", FORMATS)
def test_byte_corruptions_are_refused_or_load_readable_tensors(fmt):
    data, _ = _small_checkpoint(fmt)
    refused = 0
    for corrupted in _corruptions(data, 1500, seed=FORMATS.index(fmt)):
        loaded = _load_or_refuse(corrupted)
        refused += loaded is None
        if loaded is not None:
            _read_whole(loaded)
    assert refused > 100  # the corruptions do reach the checks


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_many_more_corruptions_through_memory_mapped_files(fmt, tmp_path):
    data, _ = _small_checkpoint(fmt)
    for index, corrupted in enumerate(_corruptions(data, 1000, seed=100 + FORMATS.index(fmt))):
        loaded = _load_or_refuse(corrupted, tmp_path / f"{index}.ckpt")
        if loaded is not None:
            _read_whole(loaded)
    for corrupted in _corruptions(data, 20000, seed=200 + FORMATS.index(fmt)):
        loaded = _load_or_refuse(corrupted)
        if loaded is not None:
            _read_whole(loaded)
