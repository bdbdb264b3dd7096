"""Ops on the CUDA backend where a sweep of the check_op corpus with ``device="cuda"`` (on the CPU emulation of
CuPy) found them wrong: quantile's choice among equal values (so its gradient goes where torch's does, as topk's
and kthvalue's already did), and ops that read a second tensor beside their input directly (running stats, class
weights, repeat counts, q, bag offsets, bincount's weights), which met a host array with a device one and failed
with CuPy's TypeError instead of torch's device error."""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as F
from op_check import check_op

pytestmark = pytest.mark.slow

_DEVICE_ERROR = "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


def _ties(shape, seed, nans=0):
    """Seeded small integers as float64 (many equal values), ``nans`` of them NaN."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(np.float64)
    x.reshape(-1)[rng.permutation(x.size)[:nans]] = np.nan
    return x


@pytest.mark.parametrize("name, dim, q, nans, interpolation", [
    ("quantile", None, 0.41, 0, "linear"), ("quantile", 1, 0.8, 0, "lower"), ("quantile", 1, 0.3, 1, "nearest"),
    ("nanquantile", None, 0.22, 2, "midpoint"), ("nanquantile", 0, 0.55, 3, "higher")])
def test_quantile_gradient_reaches_the_equal_value_torch_picks_on_cuda(cuda, name, dim, q, nans, interpolation):
    """Among equal values the one torch's CPU selection reads gets the gradient, on the GPU too."""
    x = _ties((5, 6), seed=int(q * 100), nans=nans)
    check_op(lambda t: getattr(engine, name)(t, q, dim, interpolation=interpolation),
             lambda t: getattr(torch, name)(t, q, dim, interpolation=interpolation), [x], device="cuda")


def test_quantile_q_on_another_device(cuda):
    x = engine.randn(3, 4, dtype=engine.float64).cuda()
    with pytest.raises(RuntimeError, match=r"^quantile\(\) q tensor must be on the same device as the input tensor$"):
        engine.quantile(x, engine.tensor([0.2, 0.5], dtype=engine.float64), dim=1)


def _cpu_and_cuda(shape):
    x = engine.randn(*shape)
    return x, x.cuda()


@pytest.mark.parametrize("case", ["repeat_interleave", "repeat_interleave_cuda_counts", "batch_norm_eval",
                                  "batch_norm_train", "instance_norm", "multi_margin_loss", "embedding_bag_offsets",
                                  "bincount_weights"])
def test_a_second_tensor_on_the_cpu_gives_torchs_device_error(cuda, case):
    """A tensor the op reads beside its input, left on the CPU while the input is on the GPU (or the reverse)."""
    cpu, gpu = _cpu_and_cuda((4, 3, 5))
    stats = engine.zeros(3), engine.ones(3)
    calls = {
        "repeat_interleave": lambda: engine.repeat_interleave(gpu, engine.tensor([1, 0, 2]), dim=1),
        "repeat_interleave_cuda_counts": lambda: engine.repeat_interleave(cpu, engine.tensor([1, 0, 2]).cuda(), dim=1),
        "batch_norm_eval": lambda: F.batch_norm(gpu, *stats),
        "batch_norm_train": lambda: F.batch_norm(gpu, *stats, training=True),
        "instance_norm": lambda: F.instance_norm(gpu, *stats),
        "multi_margin_loss": lambda: F.multi_margin_loss(gpu[:, :, 0], engine.tensor([0, 2, 1, 1]).cuda(),
                                                         weight=engine.rand(3)),
        "embedding_bag_offsets": lambda: F.embedding_bag(engine.tensor([0, 2, 1]).cuda(), gpu[0],
                                                         engine.tensor([0, 1])),
        "bincount_weights": lambda: engine.bincount(engine.tensor([0, 1, 1]).cuda(), weights=engine.rand(3)),
    }
    with pytest.raises(RuntimeError, match=f"^{_DEVICE_ERROR}$"):
        calls[case]()
    assert stats[0].abs().sum().item() == 0  # the running stats were left alone


def test_ops_with_their_second_tensor_on_the_gpu_too(cuda):
    """The same calls with every tensor on the GPU: values and gradients as torch's."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5))
    mean, var = rng.standard_normal(3), rng.random(3) + 0.5
    check_op(lambda a: F.batch_norm(a, engine.from_numpy(mean).cuda(), engine.from_numpy(var).cuda()),
             lambda a: torch.nn.functional.batch_norm(a, torch.from_numpy(mean), torch.from_numpy(var)), [x],
             device="cuda")
    weight, target = rng.random(3), np.array([0, 2, 1, 1])
    check_op(lambda a: F.multi_margin_loss(a, engine.from_numpy(target).cuda(),
                                           weight=engine.from_numpy(weight).cuda()),
             lambda a: torch.nn.functional.multi_margin_loss(a, torch.from_numpy(target),
                                                             weight=torch.from_numpy(weight)), [x[:, :, 0]],
             device="cuda")
    counts = np.array([1, 0, 2])
    check_op(lambda a: engine.repeat_interleave(a, engine.from_numpy(counts).cuda(), dim=1),
             lambda a: torch.repeat_interleave(a, torch.from_numpy(counts), dim=1), [x], device="cuda")


class _Median(engine.nn.Module):
    def forward(self, x):
        return engine.quantile(x, 0.5, dim=1)


class _Captured(engine.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def test_quantile_is_still_captured_into_a_cuda_graph(cuda):
    """A median in an nn.Graph on the GPU is captured (no fallback warning: the host replay of equal values is
    not run while capturing) and replays the medians of new values, ordered otherwise."""
    x = engine.tensor([[1.0, 5.0, 2.0, 3.0, 0.0], [3.0, -1.0, 3.0, 0.5, 3.0]]).cuda()
    graph = _Captured(_Median())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph(x)
        out = graph(x.flip(1) * 2 - x)
    assert graph._last_plan.captured is not None
    np.testing.assert_array_equal(out.cpu().numpy(), engine.quantile(x.flip(1) * 2 - x, 0.5, dim=1).cpu().numpy())
