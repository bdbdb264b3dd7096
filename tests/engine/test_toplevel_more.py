"""Top-level functions against torch: empty_strided/empty_permuted/new_empty_strided, frombuffer, nonzero_static,
histogram/histogramdd, gradient, set_printoptions, DLPack exchange, svd_lowrank/pca_lowrank, geqrf/orgqr/ormqr and
segment_reduce and set_warn_always (forward, and backward where torch differentiates)."""
import re

import numpy as np
import pytest
import torch
from op_check import assert_close

import engine
import engine.utils.dlpack


def _raises_like(ours, theirs, error=Exception):
    """Both calls fail with the same error type and message."""
    with pytest.raises(error) as expected:
        theirs()
    with pytest.raises(type(expected.value), match="^" + re.escape(str(expected.value).split("\n")[0])):
        ours()


# ---- memory geometry at creation ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size,stride", [((2, 3), (1, 2)), ((4, 1, 5), (5, 100, 1)), ((3, 0, 2), (2, 1, 7)),
                                         ((2, 3), (0, 1)), ((), ())])
def test_empty_strided(size, stride):
    ours = engine.empty_strided(size, stride, dtype=engine.float64, requires_grad=True)
    theirs = torch.empty_strided(size, stride, dtype=torch.float64, requires_grad=True)
    assert (tuple(ours.shape), ours.stride(), ours.requires_grad, ours.is_leaf) == \
        (tuple(theirs.shape), theirs.stride(), True, True)
    assert ours.dtype is engine.float64
    like = engine.zeros(1, dtype=engine.int32).new_empty_strided(size, stride)
    assert (like.dtype, like.stride()) == (engine.int32, torch.zeros(1).new_empty_strided(size, stride).stride())


def test_empty_strided_errors():
    _raises_like(lambda: engine.empty_strided((2, 3), (1,)), lambda: torch.empty_strided((2, 3), (1,)))
    _raises_like(lambda: engine.empty_strided((2, 3), (1, -1)), lambda: torch.empty_strided((2, 3), (1, -1)))


@pytest.mark.parametrize("size,layout", [((2, 3, 4, 5), (0, 2, 3, 1)), ((2, 3, 4), (2, 0, 1)), ((3, 5), (1, 0)),
                                         ((2, 0, 3), (1, 2, 0)), ((4,), (0,))])
def test_empty_permuted(size, layout):
    ours, theirs = engine.empty_permuted(size, layout), torch.empty_permuted(size, layout)
    assert (tuple(ours.shape), ours.stride(), ours.dtype) == (tuple(theirs.shape), theirs.stride(), engine.float32)


def test_empty_permuted_errors():
    _raises_like(lambda: engine.empty_permuted((2, 3), (0,)), lambda: torch.empty_permuted((2, 3), (0,)))
    _raises_like(lambda: engine.empty_permuted((2, 3), (0, 0)), lambda: torch.empty_permuted((2, 3), (0, 0)))


def test_empty_strided_on_cuda(cuda):
    ours = engine.empty_strided((3, 4), (1, 3), device="cuda")
    assert ours.device.type == "cuda" and ours.stride() == (1, 3)


# ---- frombuffer ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,count,offset", [("float32", -1, 0), ("int16", 5, 2), ("float64", 2, 8),
                                                ("uint8", -1, 3), ("int64", -1, 8)])
def test_frombuffer_values_and_shared_memory(dtype, count, offset):
    raw = bytearray(np.random.default_rng(0).integers(0, 255, 40, dtype=np.uint8).tobytes())
    ours = engine.frombuffer(raw, dtype=getattr(engine, dtype), count=count, offset=offset)
    theirs = torch.frombuffer(bytearray(raw), dtype=getattr(torch, dtype), count=count, offset=offset)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ours[0] = 7
    assert np.frombuffer(raw, dtype=dtype, count=1, offset=offset)[0] == 7


@pytest.mark.parametrize("kwargs,length", [(dict(), 0), (dict(), 10), (dict(offset=12), 12), (dict(count=4), 12),
                                           (dict(offset=-1), 12)])
def test_frombuffer_errors(kwargs, length):
    _raises_like(lambda: engine.frombuffer(bytearray(length), dtype=engine.float32, **kwargs),
                 lambda: torch.frombuffer(bytearray(length), dtype=torch.float32, **kwargs))


def test_frombuffer_read_only_buffer_warns():
    with pytest.warns(UserWarning, match="The given buffer is not writable"):
        ours = engine.frombuffer(b"\x01\x00\x02\x00", dtype=engine.int16, requires_grad=False)
    np.testing.assert_array_equal(ours.numpy(), [1, 2])


# ---- nonzero_static -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size,fill_value", [(0, -1), (2, -1), (7, -1), (12, 5)])
@pytest.mark.parametrize("shape", [(3, 4), (9,), (2, 3, 2), ()])
def test_nonzero_static(shape, size, fill_value):
    values = (np.random.default_rng(1).random(shape) > 0.5).astype(np.float32) * 3
    ours = engine.nonzero_static(engine.tensor(values), size=size, fill_value=fill_value)
    theirs = torch.nonzero_static(torch.tensor(values), size=size, fill_value=fill_value)
    assert ours.dtype is engine.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(engine.tensor(values).nonzero_static(size=size).numpy(),
                                  torch.tensor(values).nonzero_static(size=size).numpy())


def test_nonzero_static_negative_size():
    _raises_like(lambda: engine.nonzero_static(engine.ones(3), size=-1),
                 lambda: torch.nonzero_static(torch.ones(3), size=-1))


# ---- histogram and histogramdd ------------------------------------------------------------------------------------
HISTOGRAM_CASES = [dict(bins=4), dict(bins=7, range=(-1.0, 0.5)), dict(bins=3, density=True),
                   dict(bins=5, weight=True), dict(bins=6, weight=True, density=True),
                   dict(bins="edges"), dict(bins="edges", density=True, weight=True)]


def _histogram_args(lib, kwargs, values, weight, dtype):
    args = dict(kwargs)
    if args.get("weight"):
        args["weight"] = lib.tensor(weight)
    if args["bins"] == "edges":
        args["bins"] = lib.tensor(np.array([-2.0, -0.3, 0.0, 0.1, 1.5], dtype))
    return lib.tensor(values), args


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", HISTOGRAM_CASES)
def test_histogram(kwargs, dtype):
    rng = np.random.default_rng(2)
    values, weight = rng.standard_normal((9, 7)).astype(dtype), rng.random((9, 7)).astype(dtype)
    ours = engine.histogram(*_histogram_args(engine, kwargs, values, weight, dtype)[:1],
                            **_histogram_args(engine, kwargs, values, weight, dtype)[1])
    theirs = torch.histogram(*_histogram_args(torch, kwargs, values, weight, dtype)[:1],
                             **_histogram_args(torch, kwargs, values, weight, dtype)[1])
    assert_close(ours.hist.numpy(), theirs.hist.numpy(), rtol=1e-6, what="hist")
    np.testing.assert_array_equal(ours.bin_edges.numpy(), theirs.bin_edges.numpy())
    assert ours.hist.numpy().dtype == dtype
    method = engine.tensor(values).histogram(4)
    np.testing.assert_array_equal(method.hist.numpy(), torch.tensor(values).histogram(4).hist.numpy())


def test_histogram_edges_and_extremes():
    """A value on an inner edge counts right of it, the maximum counts in the last bin, equal values widen the range
    by 0.5 each way, no values give the range [0, 1]."""
    for values, bins in [([0.0, 1.0, 2.0, 3.0, 4.0], 4), ([2.0, 2.0, 2.0], 3), ([0.0, 0.25, 1.0], 4), ([], 3)]:
        ours = engine.histogram(engine.tensor(values), bins)
        theirs = torch.histogram(torch.tensor(values), bins)
        np.testing.assert_array_equal(ours.hist.numpy(), theirs.hist.numpy())
        np.testing.assert_array_equal(ours.bin_edges.numpy(), theirs.bin_edges.numpy())


@pytest.mark.parametrize("bins,kwargs", [([2, 3, 4], dict()), (3, dict(density=True)),
                                         ([4, 2, 3], dict(range=[-1.0, 1.0, 0.0, 2.0, -3.0, 0.0], weight=True)),
                                         ("edges", dict(density=True))])
def test_histogramdd(bins, kwargs):
    rng = np.random.default_rng(3)
    points, weight = rng.standard_normal((4, 6, 3)).astype(np.float32), rng.random((4, 6)).astype(np.float32)
    edges = [np.sort(rng.standard_normal(n)).astype(np.float32) for n in (3, 5, 2)]
    results = []
    for lib in (engine, torch):
        args = dict(kwargs)
        if args.get("weight"):
            args["weight"] = lib.tensor(weight)
        lib_bins = [lib.tensor(e) for e in edges] if bins == "edges" else bins
        results.append(lib.histogramdd(lib.tensor(points), lib_bins, **args))
    ours, theirs = results
    assert_close(ours.hist.numpy(), theirs.hist.numpy(), rtol=1e-6, what="hist")
    assert len(ours.bin_edges) == 3
    for mine, reference in zip(ours.bin_edges, theirs.bin_edges):
        np.testing.assert_array_equal(mine.numpy(), reference.numpy())


@pytest.mark.parametrize("call", [
    lambda lib: lib.histogram(lib.arange(3), 3),
    lambda lib: lib.histogram(lib.rand(3), -1),
    lambda lib: lib.histogram(lib.rand(3), 3, range=(1.0, 0.0)),
    lambda lib: lib.histogram(lib.tensor([0.0, 1.0, float("inf")]), 2),
    lambda lib: lib.histogram(lib.rand(3), lib.tensor([1.0, 2.0], dtype=lib.float64)),
    lambda lib: lib.histogram(lib.rand(3), lib.tensor([[0.0, 1.0]])),
    lambda lib: lib.histogram(lib.rand(3), 2, weight=lib.rand(2)),
    lambda lib: lib.histogramdd(lib.rand(5, 2), [2, 3, 4]),
    lambda lib: lib.histogramdd(lib.rand(5, 2), 3, range=[0.0, 1.0]),
    lambda lib: lib.histogramdd(lib.rand(5), 3),
])
def test_histogram_errors(call):
    _raises_like(lambda: call(engine), lambda: call(torch))


def test_histogram_on_cuda(cuda):
    values = np.random.default_rng(4).standard_normal(50).astype(np.float32)
    ours = engine.histogram(engine.tensor(values, device="cuda"), 6, density=True)
    theirs = torch.histogram(torch.tensor(values), 6, density=True)
    assert ours.hist.device.type == "cuda"
    assert_close(ours.hist.cpu().numpy(), theirs.hist.numpy(), rtol=1e-6, what="hist")


# ---- gradient -----------------------------------------------------------------------------------------------------
COORDINATES = np.array([0.0, 0.3, 1.1, 1.2, 2.5])
GRADIENT_CASES = [dict(), dict(spacing=2.0), dict(edge_order=2), dict(dim=1, spacing=[0.5]),
                  dict(dim=(0, -1), spacing=[0.5, 3.0], edge_order=2), dict(dim=1, spacing="coordinates"),
                  dict(dim=[1], spacing="coordinates", edge_order=2), dict(dim=-1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kwargs", GRADIENT_CASES)
def test_gradient_forward_and_backward(kwargs, dtype):
    rng = np.random.default_rng(5)
    values = rng.standard_normal((4, 5, 6)).astype(dtype)
    outputs, grads = [], []
    for lib in (engine, torch):
        args = dict(kwargs)
        if args.get("spacing") == "coordinates":
            args["spacing"] = [lib.tensor(COORDINATES.astype(dtype))]
        x = lib.tensor(values, requires_grad=True)
        results = lib.gradient(x, **args)
        weights = [np.random.default_rng(i).standard_normal(tuple(r.shape)).astype(dtype)
                   for i, r in enumerate(results)]
        sum((r * lib.tensor(w)).sum() for r, w in zip(results, weights)).backward()
        outputs.append([r.detach().numpy() for r in results])
        grads.append(x.grad.numpy())
    assert len(outputs[0]) == len(outputs[1])
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    for i, (mine, reference) in enumerate(zip(*outputs)):
        assert mine.dtype == reference.dtype
        assert_close(mine, reference, rtol=rtol, what=f"gradient {i}")
    assert_close(grads[0], grads[1], rtol=rtol, what="backward")


def test_gradient_of_integers_is_float():
    ours, theirs = engine.gradient(engine.tensor([1, 4, 9, 16, 30])), torch.gradient(torch.tensor([1, 4, 9, 16, 30]))
    np.testing.assert_array_equal(ours[0].numpy(), theirs[0].numpy())
    assert ours[0].dtype is engine.float32


@pytest.mark.parametrize("call", [
    lambda lib: lib.gradient(lib.rand(3), edge_order=3),
    lambda lib: lib.gradient(lib.rand(1)),
    lambda lib: lib.gradient(lib.rand(2), edge_order=2),
    lambda lib: lib.gradient(lib.rand(3, 4), spacing=[1.0, 2.0, 3.0]),
    lambda lib: lib.gradient(lib.rand(3, 4), spacing=[1.0, 2.0], dim=1),
])
def test_gradient_errors(call):
    _raises_like(lambda: call(engine), lambda: call(torch))


# ---- set_printoptions ---------------------------------------------------------------------------------------------
def _print_cases():
    rng = np.random.default_rng(6)
    return [rng.standard_normal((3, 4)).astype(np.float32), np.array([1.0, 10000.0], np.float32),
            np.array([np.nan, 1.5, -np.inf], np.float32), np.arange(2000.0, dtype=np.float32).reshape(40, 50),
            rng.standard_normal(30) * 1e-5, np.arange(1200) - 600, np.zeros(2), np.array(2.5),
            rng.standard_normal((2, 3, 700)).astype(np.float32), np.array([-np.inf, 1.0], np.float32),
            np.array([True, False] * 600), rng.standard_normal(20).astype(np.float16) * 100, np.zeros((0, 3))]


@pytest.mark.parametrize("options", [dict(), dict(precision=2), dict(sci_mode=True), dict(sci_mode=False, precision=6),
                                     dict(threshold=5), dict(edgeitems=1, threshold=10), dict(edgeitems=0, threshold=4),
                                     dict(linewidth=40), dict(profile="short"), dict(profile="full", linewidth=200),
                                     dict(profile="short", precision=5)])
def test_set_printoptions_reprs_match_torch(options):
    try:
        engine.set_printoptions(**options)
        torch.set_printoptions(**options)
        for values in _print_cases():
            assert repr(engine.tensor(values)) == repr(torch.tensor(values)).replace("torch.", "engine."), values
        grad = engine.tensor([0.25, 3.0], requires_grad=True) * 2
        assert repr(grad).replace("engine.", "torch.") == \
            repr(torch.tensor([0.25, 3.0], requires_grad=True) * 2).replace("MulBackward0", grad.grad_fn.name())
    finally:
        engine.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


# ---- DLPack -------------------------------------------------------------------------------------------------------
def test_dlpack_with_torch_shares_memory():
    ours = engine.tensor([[1.0, 2.0], [3.0, 4.0]])
    theirs = torch.from_dlpack(ours)
    theirs[0, 0] = 9
    assert ours[0, 0].item() == 9
    source = torch.arange(6, dtype=torch.int32).reshape(2, 3)
    viewed = engine.from_dlpack(source)
    source[1, 2] = 42
    assert viewed.dtype is engine.int32 and viewed[1, 2].item() == 42
    capsule_view = engine.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(source))
    np.testing.assert_array_equal(capsule_view.numpy(), source.numpy())
    back = torch.utils.dlpack.from_dlpack(engine.utils.dlpack.to_dlpack(ours))
    np.testing.assert_array_equal(back.numpy(), ours.numpy())


def test_dlpack_with_numpy_and_options():
    array = np.arange(5.0)
    ours = engine.from_dlpack(array)
    array[0] = -1
    assert ours[0].item() == -1
    copied = engine.from_dlpack(array, copy=True)
    array[1] = -2
    assert copied[1].item() == 1
    np.testing.assert_array_equal(np.from_dlpack(engine.tensor([1, 2, 3])), [1, 2, 3])
    with pytest.raises(RuntimeError, match="Can't export tensors that require gradient"):
        torch.from_dlpack(engine.ones(2, requires_grad=True))


def test_dlpack_on_cuda(cuda):
    """``device=`` moves what it views; an engine tensor passes through. (CuPy's own DLPack export reports the CPU
    under the emulator, so the CUDA capsule path is checked on a GPU only.)"""
    moved = engine.from_dlpack(np.arange(4.0), device="cuda")
    assert moved.device.type == "cuda"
    np.testing.assert_array_equal(moved.cpu().numpy(), [0, 1, 2, 3])
    assert engine.from_dlpack(moved) is moved
    if cuda == "gpu":
        viewed = engine.from_dlpack(moved._data)
        assert viewed.device.type == "cuda" and viewed._data.data.ptr == moved._data.data.ptr


# ---- randomized low-rank factorizations ---------------------------------------------------------------------------
def _aligned(ours, theirs):
    """``ours`` with each column's sign flipped to agree with ``theirs`` (LAPACK drivers may sign singular vectors
    differently)."""
    signs = np.sign((ours * theirs).sum(axis=-2, keepdims=True))
    return ours * signs


@pytest.mark.parametrize("name,kwargs", [("svd_lowrank", dict(q=4)), ("svd_lowrank", dict(q=3, niter=1, M="row")),
                                         ("pca_lowrank", dict(q=3)), ("pca_lowrank", dict(center=False)),
                                         ("svd_lowrank", dict(q=2, niter=0))])
@pytest.mark.parametrize("shape", [(9, 7), (2, 6, 10)])
def test_lowrank_matches_torch(name, kwargs, shape):
    """The engine draws torch's test matrix, so the factors agree (up to column signs); the gradient of a
    sign-invariant loss (the reconstruction and the singular values) agrees too."""
    rng = np.random.default_rng(7)
    values, row, weight = rng.standard_normal(shape), rng.standard_normal(shape[-1]), rng.standard_normal(shape)
    factors, grads = [], []
    for lib in (engine, torch):
        args = dict(kwargs, M=lib.tensor(row)) if kwargs.get("M") else dict(kwargs)
        lib.manual_seed(11)
        x = lib.tensor(values, requires_grad=True)
        u, s, v = getattr(lib, name)(x, **args)
        (((u * s.unsqueeze(-2)) @ v.transpose(-1, -2) * lib.tensor(weight)).sum() + (s * s).sum()).backward()
        factors.append([f.detach().numpy() for f in (u, s, v)])
        grads.append(x.grad.numpy())
    (u, s, v), (tu, ts, tv) = factors
    assert_close(s, ts, rtol=1e-10, what="S")
    assert_close(_aligned(u, tu), tu, rtol=1e-9, what="U")
    assert_close(_aligned(v, tv), tv, rtol=1e-9, what="V")
    assert_close(grads[0], grads[1], rtol=1e-9, what="grad")


def test_lowrank_float32_accuracy():
    """A rank-3 float32 matrix is recovered from q = 5."""
    rng = np.random.default_rng(8)
    low = (rng.standard_normal((20, 3)) @ rng.standard_normal((3, 15))).astype(np.float32)
    u, s, v = engine.svd_lowrank(engine.tensor(low), q=5)
    assert u.dtype is engine.float32
    np.testing.assert_allclose(((u * s) @ v.T).numpy(), low, atol=1e-4)


def test_pca_lowrank_errors():
    _raises_like(lambda: engine.pca_lowrank(engine.rand(4, 3), q=5), lambda: torch.pca_lowrank(torch.rand(4, 3), q=5))
    _raises_like(lambda: engine.pca_lowrank(engine.rand(4, 3), niter=-1),
                 lambda: torch.pca_lowrank(torch.rand(4, 3), niter=-1))


# ---- Householder QR -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 4), (6, 2)])
def test_geqrf_orgqr(shape):
    values = np.random.default_rng(9).standard_normal(shape)
    ours, theirs = engine.geqrf(engine.tensor(values)), torch.geqrf(torch.tensor(values))
    assert_close(ours.a.numpy(), theirs.a.numpy(), rtol=1e-10, what="a")
    assert_close(ours.tau.numpy(), theirs.tau.numpy(), rtol=1e-10, what="tau")
    grads = []
    for lib, (a, tau) in ((engine, ours), (torch, theirs)):
        a, tau = lib.tensor(a.numpy(), requires_grad=True), lib.tensor(tau.numpy(), requires_grad=True)
        q = lib.orgqr(a, tau)
        weight = np.random.default_rng(10).standard_normal(tuple(q.shape))
        (q * lib.tensor(weight)).sum().backward()
        grads.append((q.detach().numpy(), a.grad.numpy(), tau.grad.numpy()))
    for what, mine, reference in zip(("Q", "grad a", "grad tau"), *grads):
        assert_close(mine, reference, rtol=1e-10, what=what)
    np.testing.assert_allclose(grads[0][0], np.linalg.qr(values)[0], atol=1e-12)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 4)])
def test_ormqr(shape, left, transpose):
    rng = np.random.default_rng(12)
    values = rng.standard_normal(shape)
    a, tau = (t.numpy() for t in torch.geqrf(torch.tensor(values)))
    other = rng.standard_normal(shape[:-2] + ((shape[-2], 2) if left else (3, shape[-2])))
    results = []
    for lib in (engine, torch):
        inputs = [lib.tensor(v, requires_grad=True) for v in (a, tau, other)]
        out = lib.ormqr(*inputs, left=left, transpose=transpose)
        (out * lib.tensor(np.cos(np.arange(out.numel())).reshape(tuple(out.shape)))).sum().backward()
        results.append([out.detach().numpy()] + [t.grad.numpy() for t in inputs])
    for what, mine, reference in zip(("out", "grad input", "grad tau", "grad other"), *results):
        assert_close(mine, reference, rtol=1e-10, what=what)


@pytest.mark.parametrize("call", [
    lambda lib: lib.geqrf(lib.rand(3)),
    lambda lib: lib.geqrf(lib.arange(6).reshape(2, 3)),
    lambda lib: lib.orgqr(lib.rand(3, 5), lib.rand(2)),
    lambda lib: lib.orgqr(lib.rand(5, 3), lib.rand(4)),
    lambda lib: lib.orgqr(lib.rand(5), lib.rand(4)),
    lambda lib: lib.orgqr(lib.rand(5, 3, dtype=lib.float64), lib.rand(3)),
    lambda lib: lib.ormqr(lib.rand(5, 3), lib.rand(3), lib.rand(4, 2)),
    lambda lib: lib.ormqr(lib.rand(5, 3), lib.rand(4), lib.rand(5, 2)),
    lambda lib: lib.ormqr(lib.rand(5, 3), lib.rand(3), lib.rand(2, 4), left=False),
])
def test_householder_errors(call):
    _raises_like(lambda: call(engine), lambda: call(torch))


# ---- segment_reduce -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod", "amax"])
@pytest.mark.parametrize("initial", [None, 0.5])
@pytest.mark.parametrize("by", ["lengths", "offsets"])
def test_segment_reduce(reduce, initial, by):
    rng = np.random.default_rng(13)
    values = rng.standard_normal((8, 3))
    lengths = np.array([2, 0, 3, 1, 2])
    segments = dict(lengths=lengths) if by == "lengths" else dict(offsets=np.concatenate([[0], np.cumsum(lengths)]))
    results = []
    for lib in (engine, torch):
        x = lib.tensor(values, requires_grad=True)
        out = lib.segment_reduce(x, reduce, initial=initial, **{k: lib.tensor(v) for k, v in segments.items()})
        reduced = out.detach().numpy()
        finite = lib.where(lib.tensor(np.isfinite(reduced)), out, lib.zeros_like(out))  # empty segments: +-inf, NaN
        (finite * lib.tensor(np.cos(np.arange(reduced.size)).reshape(reduced.shape))).sum().backward()
        results.append((reduced, x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12, atol=1e-15)


def test_segment_reduce_ties_share_the_gradient():
    for lib in (engine, torch):
        x = lib.tensor([1.0, 3.0, 3.0, 2.0, 5.0], requires_grad=True)
        lib.segment_reduce(x, "max", lengths=lib.tensor([3, 2])).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [0, 0.5, 0.5, 0, 1])


@pytest.mark.parametrize("call", [
    lambda lib: lib.segment_reduce(lib.rand(5, 2), "sum", lengths=lib.tensor([2, 2])),
    lambda lib: lib.segment_reduce(lib.rand(5, 2), "foo", lengths=lib.tensor([5])),
    lambda lib: lib.segment_reduce(lib.rand(5, 2), "sum"),
    lambda lib: lib.segment_reduce(lib.rand(2, 5), "sum", lengths=lib.tensor([1, 1]), axis=1),
    lambda lib: lib.segment_reduce(lib.rand(5, 2), "sum", lengths=lib.tensor([6, -1])),
    lambda lib: lib.segment_reduce(lib.rand(5, 2), "sum", indices=lib.tensor([0, 0, 1, 1, 1])),
    lambda lib: lib.segment_reduce(lib.tensor([1, 2]), "sum", lengths=lib.tensor([1, 1])),
])
def test_segment_reduce_errors(call):
    _raises_like(lambda: call(engine), lambda: call(torch))


# ---- set_warn_always ----------------------------------------------------------------------------------------------
def test_set_warn_always():
    assert engine.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    try:
        engine.set_warn_always(True)
        assert engine.is_warn_always_enabled() is True
    finally:
        engine.set_warn_always(False)
    _raises_like(lambda: engine.set_warn_always(1), lambda: torch.set_warn_always(1))
