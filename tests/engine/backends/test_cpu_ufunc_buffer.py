"""numpy's ufunc buffer size around broadcast arithmetic: when it is set, and that it is put back."""
import threading

import numpy as np
import pytest
import torch

import engine
from engine.backends.cpu import threads, ufunc_buffer


@pytest.mark.parametrize("row_length,expected", [(511, 8192), (512, 512), (8191, 512), (8192, 8192)])
def test_row_buffer_only_for_runs_numpy_would_buffer(row_length, expected):
    seen = []
    ufunc_buffer.with_row_buffer(lambda lo, hi: seen.append(np.getbufsize()), row_length)(0, 1)
    assert seen == [expected]
    assert np.getbufsize() == 8192


def test_row_buffer_set_in_every_thread_and_restored_after_errors():
    seen = {}

    def block(lo, hi):
        seen[threading.get_ident()] = np.getbufsize()
    threads.parallel_blocks(ufunc_buffer.with_row_buffer(block, 1024), 64, 1 << 20)
    assert set(seen.values()) == {512} and len(seen) == min(2, threads.blas.num_threads())

    def failing(lo, hi):
        raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        ufunc_buffer.with_row_buffer(failing, 1024)(0, 1)
    assert np.getbufsize() == 8192


@pytest.mark.parametrize("shapes,run", [
    (((1, 960, 33, 33), (1, 960, 1, 1)), 1089),  # per-channel scale: H*W
    (((2, 3, 4, 5), (5,)), 5),  # a row vector: one row
    (((2, 3, 1, 5), (2, 1, 7, 1)), 5),
    (((4, 6), ()), 24),
    (((3, 4), (3, 4)), 0),  # same shapes: one unbuffered run
])
def test_broadcast_run(shapes, run):
    assert ufunc_buffer.broadcast_run(*(np.zeros(s) for s in shapes)) == run


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_per_channel_arithmetic_matches_torch_and_restores_the_buffer(op):
    rng = np.random.default_rng(0)
    x, s = rng.standard_normal((2, 5, 30, 31)), rng.uniform(0.5, 2, (2, 5, 1, 1))
    ours = [engine.tensor(a, requires_grad=True) for a in (x, s)]
    ref = [torch.tensor(a, requires_grad=True) for a in (x, s)]
    out, expected = (getattr(engine, op)(*ours), getattr(torch, op)(*ref))
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10)
    assert np.getbufsize() == 8192
