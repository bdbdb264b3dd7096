"""``nn.DataParallel``, ``nn.parallel.data_parallel`` and ``nn.SyncBatchNorm`` against torch: on a
machine without a GPU DataParallel only calls its module (same outputs, gradients and ``module.``-prefixed keys as torch's); on one GPU (marked ``cuda``,
and on the CUDA emulation) it moves the module and the call's tensors there; SyncBatchNorm outside a
process group is BatchNorm over any rank >= 2, forward and backward, as torch's."""
import collections
import inspect

import numpy as np
import pytest
import torch
from op_check import assert_close

import engine
import engine.nn as nn
from conftest import REAL_GPU

RNG = np.random.default_rng(7)


def _pair(make_torch, make_engine):
    """The same model in both libraries (torch's initial weights copied into ours)."""
    torch.manual_seed(0)
    theirs = make_torch()
    ours = make_engine()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return theirs, ours


class _Net:
    """A small conv net with a BatchNorm, its forward taking a keyword argument too."""

    @staticmethod
    def build(lib):
        class Net(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.features = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3, padding=1), lib.nn.BatchNorm2d(4),
                                                  lib.nn.ReLU())
                self.head = lib.nn.Linear(4, 5)

            def forward(self, x, scale=None):
                y = self.head(self.features(x).mean((2, 3)))
                return y if scale is None else y * scale
        return Net()


@pytest.mark.skipif(REAL_GPU, reason="torch's DataParallel moves to the GPU where there is one (test_on_one_gpu)")
def test_without_a_gpu_data_parallel_calls_the_module_as_torch():
    theirs, ours = _pair(lambda: torch.nn.DataParallel(_Net.build(torch)), lambda: nn.DataParallel(_Net.build(engine)))
    assert ours.device_ids == theirs.device_ids == []
    assert list(ours.state_dict()) == list(theirs.state_dict()) and list(ours.state_dict())[0] == "module.features.0.weight"
    assert isinstance(ours.module, nn.Module) and repr(ours).startswith("DataParallel(\n  (module): Net(")
    x = RNG.standard_normal((3, 3, 7, 5)).astype(np.float32)
    scale = RNG.standard_normal((1, 5)).astype(np.float32)
    tx, ex = torch.tensor(x, requires_grad=True), engine.tensor(x, requires_grad=True)
    t_out = theirs(tx, scale=torch.tensor(scale))
    e_out = ours(ex, scale=engine.tensor(scale))
    assert_close(e_out.detach().numpy(), t_out.detach().numpy())
    t_out.square().sum().backward()
    e_out.square().sum().backward()
    assert_close(ex.grad.numpy(), tx.grad.numpy(), 1e-4, "input grad")
    for (name, t), (_, e) in zip(theirs.named_parameters(), ours.named_parameters()):
        # atol: the bias of a convolution that a BatchNorm follows has a gradient of 0 up to rounding
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    assert_close(ours.module.features[1].running_var.numpy(), theirs.module.features[1].running_var.numpy())
    for lib, model in ((torch, theirs), (engine, ours)):
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            lib.nn.parallel.data_parallel(model.module, lib.tensor(x))


def test_checkpoints_move_between_wrapped_and_plain_models():
    plain = _Net.build(engine)
    wrapped = nn.DataParallel(_Net.build(engine))
    wrapped.load_state_dict(torch.nn.DataParallel(_Net.build(torch)).state_dict())
    plain.load_state_dict({k[len("module."):]: v for k, v in wrapped.state_dict().items()})
    for (k, a), (_, b) in zip(plain.state_dict().items(), wrapped.module.state_dict().items()):
        assert np.array_equal(a.cpu().numpy(), b.cpu().numpy()), k


Pair = collections.namedtuple("Pair", "left right")


class _Containers(nn.Module):
    """Returns what it was given, to see where the tensors inside the containers ended up."""

    def forward(self, pair, items, mapping, flag, text):
        return pair, items, mapping, flag, text


def test_on_one_gpu(cuda):
    torch.manual_seed(0)
    reference = _Net.build(torch)
    module = _Net.build(engine)
    module.load_state_dict({k: v.numpy() for k, v in reference.state_dict().items()})
    model = nn.DataParallel(module)
    assert model.device_ids == [0] and model.output_device == 0 and model.dim == 0
    assert model.src_device_obj == engine.device("cuda", 0)
    assert all(p.device.type == "cuda" for p in module.parameters())  # moved at construction, as torch
    assert list(model.state_dict()) == ["module." + k for k in reference.state_dict()]
    x = RNG.standard_normal((2, 3, 6, 5)).astype(np.float32)
    ex = engine.tensor(x, requires_grad=True)  # on the CPU: moved to the GPU by the call
    tx = torch.tensor(x, requires_grad=True)
    e_out, t_out = model(ex, scale=engine.tensor(2.0)), reference(tx, scale=torch.tensor(2.0))
    assert e_out.device == engine.device("cuda", 0)
    assert_close(e_out.detach().cpu().numpy(), t_out.detach().numpy(), 1e-4)
    e_out.sum().backward()
    t_out.sum().backward()
    assert ex.grad.device.type == "cpu"
    assert_close(ex.grad.numpy(), tx.grad.numpy(), 1e-4, "input grad")
    assert_close(module.head.weight.grad.cpu().numpy(), reference.head.weight.grad.numpy(), 1e-4, "weight grad")

    pair, items, mapping, flag, text = nn.DataParallel(_Containers())(
        Pair(engine.ones(1), engine.ones(2)), [engine.ones(3)], collections.OrderedDict(a=engine.ones(4)),
        flag=True, text="x")
    assert type(pair) is Pair and type(items) is list and type(mapping) is collections.OrderedDict
    assert {t.device.type for t in (*pair, *items, *mapping.values())} == {"cuda"}
    assert (flag, text) == (True, "x")

    module.cpu()
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on device cuda:0 "
                                           r"\(device_ids\[0\]\) but found one of them on device: cpu"):
        model(ex)
    assert nn.DataParallel(nn.Linear(2, 2), device_ids=["cuda:0"], output_device=engine.device("cuda:0")).output_device == 0
    with pytest.raises(NotImplementedError, match=r"DataParallel over several GPUs \(device_ids=\[0, 1\]\)"):
        nn.DataParallel(nn.Linear(2, 2), device_ids=[0, 1])
    out = nn.parallel.data_parallel(nn.Linear(2, 3).cuda(), engine.ones(4, 2))
    assert out.device.type == "cuda" and out.shape == (4, 3)


def test_distributed_data_parallel_is_there_for_isinstance_checks():
    assert issubclass(nn.parallel.DistributedDataParallel, nn.Module)
    assert nn.DataParallel is nn.parallel.DataParallel


def test_sync_batch_norm_signature_is_torchs():
    ours = inspect.signature(nn.SyncBatchNorm).parameters
    theirs = inspect.signature(torch.nn.SyncBatchNorm).parameters
    assert [(p.name, p.kind, p.default) for p in ours.values()] == [(p.name, p.kind, p.default) for p in theirs.values()]
    assert repr(nn.SyncBatchNorm(3, momentum=None)) == repr(torch.nn.SyncBatchNorm(3, momentum=None))


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 7), (2, 3, 5, 3), (2, 3, 2, 3, 4)])
@pytest.mark.parametrize("options", [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False},
                                     {"bias": False}])
def test_sync_batch_norm_is_batch_norm_outside_a_process_group(shape, options):
    theirs, ours = _pair(lambda: torch.nn.SyncBatchNorm(3, **options), lambda: nn.SyncBatchNorm(3, **options))
    for step in range(2):
        x = (RNG.standard_normal(shape) * 2 + 1).astype(np.float32)
        tx, ex = torch.tensor(x, requires_grad=True), engine.tensor(x, requires_grad=True)
        t_out, e_out = theirs(tx), ours(ex)
        assert_close(e_out.detach().numpy(), t_out.detach().numpy(), 1e-5, f"train step {step}")
        upstream = RNG.standard_normal(shape).astype(np.float32)
        t_out.backward(torch.tensor(upstream))
        e_out.backward(engine.tensor(upstream))
        assert_close(ex.grad.numpy(), tx.grad.numpy(), 1e-4, "input grad")
    for (key, t), (_, e) in zip(theirs.state_dict().items(), ours.state_dict().items()):
        assert_close(e.numpy(), t.numpy(), 1e-5, key)
    theirs.eval()
    ours.eval()
    x = RNG.standard_normal(shape).astype(np.float32)
    assert_close(ours(engine.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(), 1e-5, "eval")


def test_sync_batch_norm_bad_input_as_torch():
    for lib in (torch, engine):
        with pytest.raises(ValueError, match=r"^expected at least 2D input \(got 1D input\)$"):
            lib.nn.SyncBatchNorm(3)(lib.ones(3))
        with pytest.raises(ValueError, match="^SyncBatchNorm number of input channels should be non-zero$"):
            lib.nn.SyncBatchNorm(0)(lib.ones(2, 0, 3))


def _model(lib):
    return lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.BatchNorm2d(4),
                             lib.nn.Sequential(lib.nn.Flatten(), lib.nn.Linear(4 * 9, 6), lib.nn.BatchNorm1d(6)),
                             lib.nn.BatchNorm1d(6, affine=False, track_running_stats=False, momentum=None))


def test_convert_sync_batchnorm_keeps_keys_tensors_and_mode():
    theirs, ours = _pair(lambda: _model(torch), lambda: _model(engine))
    for model in (theirs, ours):
        model[2].eval()
    x = RNG.standard_normal((3, 3, 5, 5)).astype(np.float32)
    theirs(torch.tensor(x))
    ours(engine.tensor(x))
    before = ours.state_dict()
    weight, running_mean = ours[1].weight, ours[1].running_mean
    t_sync = torch.nn.SyncBatchNorm.convert_sync_batchnorm(theirs)
    e_sync = nn.SyncBatchNorm.convert_sync_batchnorm(ours, process_group="group")
    kinds = [(name, type(m).__name__, m.training) for name, m in e_sync.named_modules()]
    assert kinds == [(name, type(m).__name__, m.training) for name, m in t_sync.named_modules()]
    assert [name for name, kind, _ in kinds if kind == "SyncBatchNorm"] == ["1", "2.2", "3"]
    assert list(e_sync.state_dict()) == list(before) == list(t_sync.state_dict())
    assert e_sync[1].weight is weight and e_sync[1].running_mean is running_mean
    assert e_sync[1].process_group == "group" and e_sync[3].weight is None and e_sync[3].running_mean is None
    assert (e_sync[3].momentum, e_sync[3].affine, e_sync[3].track_running_stats) == (None, False, False)
    assert_close(e_sync(engine.tensor(x)).detach().numpy(), t_sync(torch.tensor(x)).detach().numpy(), 1e-5)
    single = nn.BatchNorm2d(4)
    assert type(nn.SyncBatchNorm.convert_sync_batchnorm(single)) is nn.SyncBatchNorm
    linear = nn.Linear(2, 2)
    assert nn.SyncBatchNorm.convert_sync_batchnorm(linear) is linear
