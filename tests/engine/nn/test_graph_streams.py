"""Batch streams of inference graphs: which plans split their batch, and split runs equal eager ones."""
import numpy as np
import pytest

import engine
import engine.nn as nn
import engine.nn.functional as F
import flowvision.models as models
from engine.backends.cpu import blas
from engine.backends.cpu.threads import parallel_chunks, run_concurrently
from engine.nn.graph import streams
from op_check import assert_close
from test_graph import InferenceGraph, SmallResNet, small_resnet_case

pytestmark = pytest.mark.slow  # whole-model runs: outside the quick subset (-m "not slow")

needs_openblas = pytest.mark.skipif(blas.threads() is None, reason="numpy is not linked to OpenBLAS here")


class Lambda(nn.Module):
    """A conv layer followed by ``fn``: a model whose last step is the op under test."""

    def __init__(self, fn):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fn = fn

    def forward(self, x):
        return self.fn(F.relu(self.conv(x)))


OUTSIDE = engine.randn(5, 4, 1, 1)
SAMPLE_WISE = {
    "flatten and linear": lambda y: F.linear(engine.flatten(y, 1), engine.ones(3, 4 * 6 * 7)),
    "softmax over channels": lambda y: F.softmax(y, dim=1),
    "concatenation along channels": lambda y: engine.cat([y, y * 2], 1),
    "slices of channels": lambda y: y[:, 1:3, 2:] - y[..., 0:2, 2:, :],
    "resize and pool": lambda y: F.max_pool2d(F.interpolate(y, scale_factor=2, mode="bilinear"), 2),
    "broadcast parameter": lambda y: y * engine.ones(4, 1, 1) + 1,
    "squeeze and excitation": lambda y: y * y.mean((2, 3), keepdim=True).sigmoid(),
    "sums and maxima along other axes": lambda y: y + y.amax(-1).sum(-1)[..., None, None],
}
BATCH_MIXING = {
    "mean over the batch": lambda y: y - y.mean(0, keepdim=True),
    "sum over every axis": lambda y: y - y.sum(),
    "maximum over batch and channels": lambda y: y - y.amax((0, 1), keepdim=True),
    "softmax over the batch": lambda y: F.softmax(y, dim=0),
    "flip of the batch": lambda y: y.flip(0),
    "reversed batch slice": lambda y: y[::-1],
    "outside tensor varying along the batch": lambda y: y * OUTSIDE,
    "batch folded into rows": lambda y: y.reshape(-1, 6 * 7),
}


@pytest.mark.parametrize("name", list(SAMPLE_WISE) + list(BATCH_MIXING))
def test_only_plans_keeping_samples_apart_split_their_batch(name, two_blas_threads):
    batch = 5 if name in SAMPLE_WISE else None
    engine.manual_seed(0)
    model = Lambda(SAMPLE_WISE.get(name) or BATCH_MIXING[name]).eval()
    graph = InferenceGraph(model)
    x = engine.randn(5, 3, 6, 7)
    with engine.no_grad():
        ref = model(x).numpy()
    graph(x)
    assert graph._last_plan.stream_batch == batch
    assert_close(graph(x).numpy(), ref, 1e-5, name)
    if batch is None:
        assert graph._last_plan.parts == {}


def test_single_samples_and_training_batchnorm_run_whole(two_blas_threads):
    engine.manual_seed(0)
    model = SmallResNet().eval()
    graph = InferenceGraph(model)
    graph(engine.randn(1, 3, 9, 9))
    assert graph._last_plan.stream_batch is None
    model.train()
    graph(engine.randn(4, 3, 9, 9))
    assert graph._last_plan.stream_batch is None


@needs_openblas
def test_uneven_streams_equal_eager_and_restore_blas_threads(two_blas_threads):
    graph, x, ref = small_resnet_case()
    graph(x)
    assert streams.stream_bounds(3) == [(0, 1), (1, 3)]
    assert sorted(graph._last_plan.parts) == [1, 2] and graph.num_compiled == 1
    out = graph(x)
    assert_close(out.numpy(), ref, 1e-5, "two streams")
    assert blas.threads() == 2


def test_run_concurrently_keeps_order_keeps_kernels_whole_and_raises():
    seen = []

    def work(i):
        def run():
            a = np.arange(1 << 19, dtype=np.float64) + i  # big enough that a free caller would fan out
            parallel_chunks(lambda lo, hi: seen.append((lo, hi)), len(a), a.nbytes)
            return a[:2].tolist()
        return run
    assert run_concurrently([work(0), work(1), work(2)]) == [[0, 1], [1, 2], [2, 3]]
    assert seen == [(0, 1 << 19)] * 3

    def fail():
        raise ValueError("stream failed")
    with pytest.raises(ValueError, match="stream failed"):
        run_concurrently([work(0), fail])


# every block type: the deeper and wider variants of ResNet, ResNeXt, Wide ResNet and VGG add no new one (each VGG
# took 2.6 s, mostly building its 130M weights; VGG-BN's convolution, BatchNorm and ReLU chain is ResNet's stem);
# of timm's ResNets, the deep-tiered stem with average-pool shortcuts and the SE-ResNeXt block
CLASSIFIERS = ["resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "mobilenet_v2", "mobilenet_v3_large",
               "mobilenet_v3_small", "vgg11", "resnet10t", "seresnext26d_32x4d"]


@pytest.mark.parametrize("name", CLASSIFIERS)
def test_classification_graphs_equal_eager(name, two_blas_threads, fast_random):
    """A classification model of each block type through its compiled plan and its batch streams, against eager."""
    engine.manual_seed(0)
    model = models.create_model(name).eval()
    graph = InferenceGraph(model)
    x = engine.randn(3, 3, 32, 35)
    with engine.no_grad():
        ref = model(x).numpy()
    graph(x)
    assert graph._last_plan.stream_batch == 3
    assert_close(graph(x).numpy(), ref, 1e-4, name)
