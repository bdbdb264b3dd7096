"""Ordinary PyTorch programs run unchanged on engine: each file in ``pytorch_programs/`` is one training program
written for ``import torch``. Its text runs twice, once with ``torch`` resolving to PyTorch and once to engine
(an import hook maps ``torch`` and ``torch.*`` to ``engine`` and ``engine.*``), from the same initial weights
(``sync(model)`` copies PyTorch's state_dict into ours through numpy) and the same data. What each run
``record``s (losses, learning rates, predictions, dtypes as text) must agree step by step, and so must the final
parameters and buffers of the models the program leaves in ``FINAL``. After the programs, direct checks of what
running them led to fix: error messages, torch.load's map_location forms, checkpoint values beyond tensors.
"""
import builtins
import io
import pathlib
import types

import numpy as np
import pytest
import torch as real_torch

import engine

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

PROGRAMS = sorted((pathlib.Path(__file__).parent / "pytorch_programs").glob("prog_*.py"))
RTOL = 1e-4


class _Run:
    """One run of a program on ``module`` (PyTorch or engine); ``weights`` carries the initial weights that the
    PyTorch run stores and the engine run loads, one slot per model in call order."""

    def __init__(self, module, weights):
        self.module, self.weights, self.records, self.synced = module, weights, {}, 0

    def record(self, key, value):
        if isinstance(value, str):
            value = value.replace("engine.", "torch.")  # dtype names print with their module's name
        elif hasattr(value, "detach"):
            value = value.detach().float().numpy().astype(np.float64)
        else:
            value = np.asarray(value, dtype=np.float64)
        self.records.setdefault(key, []).append(value)

    def sync(self, *models):
        for model in models:
            if self.module is real_torch:
                self.weights.append({k: v.detach().numpy().copy() for k, v in model.state_dict().items()})
            else:
                model.load_state_dict(self.weights[self.synced])
            self.synced += 1

    def _import(self, name, globals=None, locals=None, fromlist=(), level=0):
        if name == "program_hooks":
            return types.SimpleNamespace(record=self.record, sync=self.sync)
        if self.module is engine and (name == "torch" or name.startswith("torch.")):
            name = "engine" + name[len("torch"):]
        return builtins.__import__(name, globals, locals, fromlist, level)

    def __call__(self, path):
        hooked = dict(vars(builtins), __import__=self._import)
        namespace = {"__builtins__": hooked, "__name__": "__program__"}
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        return namespace.get("FINAL", {})


def _same(ours, reference, what):
    if isinstance(reference, str):
        assert ours == reference, what
        return
    assert ours.shape == reference.shape, f"{what}: shape {ours.shape} != {reference.shape}"
    np.testing.assert_allclose(ours, reference, rtol=RTOL, atol=1e-6, err_msg=what)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_program_runs_as_under_pytorch(path):
    weights = []
    reference = _Run(real_torch, weights)
    reference_models = reference(path)
    ours = _Run(engine, weights)
    our_models = ours(path)
    assert list(ours.records) == list(reference.records)
    for key, values in reference.records.items():
        assert len(ours.records[key]) == len(values), key
        for step, (mine, theirs) in enumerate(zip(ours.records[key], values)):
            _same(mine, theirs, f"{key}[{step}]")
    assert list(our_models) == list(reference_models)
    for name, model in reference_models.items():
        theirs = model.state_dict()
        mine = our_models[name].state_dict()
        assert list(mine) == list(theirs), name
        for key in theirs:
            np.testing.assert_allclose(mine[key].detach().float().numpy(), theirs[key].detach().float().numpy(),
                                       rtol=10 * RTOL, atol=1e-5, err_msg=f"{name}.{key}")


def test_every_program_is_collected():
    assert len(PROGRAMS) >= 10


def _message(module, call):
    with pytest.raises(Exception) as info:
        call(module)
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("call", [
    lambda m: m.nn.LSTM(3, 4)(m.ones(2, 2, 3), (m.ones(1, 3, 4), m.ones(1, 2, 4))),
    lambda m: m.nn.LSTM(3, 4)(m.ones(2, 3), (m.ones(1, 4), m.ones(1, 5))),
    lambda m: m.nn.GRU(3, 4)(m.ones(2, 2, 3), m.ones(1, 3, 4)),
    lambda m: m.nn.Module().add_module("a.b", m.nn.ReLU()),
    lambda m: m.nn.Linear(1, 1).register_buffer("a.b", None),
    lambda m: m.nn.MultiheadAttention(4, 2)(m.ones(3, 2, 4), m.ones(3, 2, 4), m.ones(3, 2, 4),
                                            key_padding_mask=m.zeros(2, 4, dtype=m.bool)),
    lambda m: m.nn.MultiheadAttention(4, 2)(m.ones(3, 2, 4), m.ones(3, 2, 4), m.ones(3, 2, 4),
                                            key_padding_mask=m.zeros(1, 3, dtype=m.bool)),
], ids=["lstm_h", "lstm_c", "gru_h", "module_name", "buffer_name", "padding_mask_length", "padding_mask_batch"])
def test_errors_read_as_pytorch_s(call):
    assert _message(engine, call) == _message(real_torch, call)


def test_map_location_functions_and_dicts_place_tensors_on_the_gpu(cuda, tmp_path):
    """torch.load's other map_location forms: a function of (storage, saved location) and a dict from saved
    location to device; a function returning None keeps what was read."""
    state = {"w": engine.randn(3, 4), "step": engine.tensor(7)}
    path = tmp_path / "state.pt"
    engine.save({"w": state["w"].cuda(), "step": state["step"]}, path)
    seen = []
    loaded = engine.load(path, map_location=lambda storage, location: seen.append(location))
    assert sorted(seen) == ["cpu", "cuda:0"] and loaded["w"].device.type == "cpu"
    loaded = engine.load(path, map_location=lambda storage, location: storage.cuda())
    assert all(v.device.type == "cuda" for v in loaded.values())
    loaded = engine.load(path, map_location={"cpu": "cuda:0"})
    assert (loaded["w"].device.type, loaded["step"].device.type) == ("cpu", "cuda")
    assert np.array_equal(loaded["w"].numpy(), state["w"].numpy()) and loaded["step"].item() == 7
    with pytest.raises(TypeError, match="map_location should return"):
        engine.load(path, map_location=lambda storage, location: 0)


def test_checkpoints_with_sets_bytes_and_complex_numbers_cross_between_pytorch_and_engine():
    """torch.load(weights_only=True) reads sets, bytes and complex numbers; so do engine.load and engine.save
    (which writes b'' as torch can read it, unlike torch.save)."""
    extras = {"classes": {3, "cat", (1, 2)}, "tag": b"\x00\xffrun", "phase": 0.5 - 2j, "none": set()}
    buffer = io.BytesIO()
    real_torch.save(extras, buffer)
    assert engine.load(io.BytesIO(buffer.getvalue())) == extras
    extras["empty"] = b""
    buffer = io.BytesIO()
    engine.save(extras, buffer)
    assert real_torch.load(io.BytesIO(buffer.getvalue()), weights_only=True) == extras
