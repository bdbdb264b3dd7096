"""What a differential fuzz of linalg, fft and special functions against PyTorch found, kept as cheap checks.

Each case compares with torch on the CPU: ``out=`` written (and resized) by the linear algebra and transform
functions, empty matrices, torch's size-1 broadcast of tensordot's contracted dims, fft's dtypes and error
order, and the edge values (infinities, NaN, zero) where torch's polygamma and incomplete gamma kernels decide
before the formula does.
"""
import math

import numpy as np
import pytest
import torch

import engine
import engine.fft
import engine.linalg
import engine.special

RNG = np.random.default_rng(20261207)
X33 = RNG.normal(size=(2, 3, 3))


def _pair(x, dtype="float64"):
    return engine.tensor(x, dtype=getattr(engine, dtype)), torch.tensor(x, dtype=getattr(torch, dtype))


def _same(ours, theirs, rtol=1e-7):
    theirs = theirs.detach().resolve_conj()
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.numpy(), rtol=rtol, atol=rtol, equal_nan=True)


def _raises_alike(ours, theirs):
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    assert str(got.value).splitlines()[0] == str(expected.value).splitlines()[0]


# ---- out= of the linear algebra functions ------------------------------------------------------------------
SPD = "A @ A.mT + 3 * eye"
OUT_CASES = {
    "linalg.det": lambda m, A, o: m.linalg.det(A, out=o),
    "linalg.inv": lambda m, A, o: m.linalg.inv(A, out=o),
    "linalg.matrix_norm": lambda m, A, o: m.linalg.matrix_norm(A, "nuc", out=o),
    "linalg.norm": lambda m, A, o: m.linalg.norm(A, out=o),
    "linalg.vector_norm": lambda m, A, o: m.linalg.vector_norm(A, 3, dim=-1, out=o),
    "linalg.matrix_power": lambda m, A, o: m.linalg.matrix_power(A, -2, out=o),
    "linalg.svdvals": lambda m, A, o: m.linalg.svdvals(A, out=o),
    "linalg.cholesky": lambda m, A, o: m.linalg.cholesky(A @ A.mT + 3 * m.eye(3, dtype=A.dtype), out=o),
    "linalg.pinv": lambda m, A, o: m.linalg.pinv(A, out=o),
    "linalg.cond": lambda m, A, o: m.linalg.cond(A, 1, out=o),
    "linalg.solve": lambda m, A, o: m.linalg.solve(A, A.flip(-1), out=o),
    "linalg.solve_triangular": lambda m, A, o: m.linalg.solve_triangular(A.triu() + 3 * m.eye(3, dtype=A.dtype), A,
                                                                         upper=True, out=o),
    "linalg.cross": lambda m, A, o: m.linalg.cross(A, A.flip(0), out=o),
    "linalg.vecdot": lambda m, A, o: m.linalg.vecdot(A, A.flip(-1), out=o),
    "linalg.multi_dot": lambda m, A, o: m.linalg.multi_dot([A[0], A[1], A[0]], out=o),
    "linalg.householder_product": lambda m, A, o: m.linalg.householder_product(A, A[..., 0, :2], out=o),
    "linalg.matmul": lambda m, A, o: m.linalg.matmul(A, A, out=o),
    "inverse": lambda m, A, o: m.inverse(A, out=o),
    "mm": lambda m, A, o: m.mm(A[0], A[1], out=o),
    "addmm": lambda m, A, o: m.addmm(A[0], A[1], A[0], beta=0.5, alpha=2, out=o),
    "outer": lambda m, A, o: m.outer(A[0, 0], A[1, 1], out=o),
    "kron": lambda m, A, o: m.kron(A[0], A[1], out=o),
    "tensordot": lambda m, A, o: m.tensordot(A, A, dims=([1, 2], [2, 1]), out=o),
    "matrix_power": lambda m, A, o: m.matrix_power(A, 3, out=o),
    "cholesky_inverse": lambda m, A, o: m.cholesky_inverse(A.tril() + 3 * m.eye(3, dtype=A.dtype), out=o),
    "cholesky_solve": lambda m, A, o: m.cholesky_solve(A, A.tril() + 3 * m.eye(3, dtype=A.dtype), out=o),
}


@pytest.mark.parametrize("name", sorted(OUT_CASES))
def test_out_is_written_and_resized(name):
    results = []
    for m in (engine, torch):
        A = m.tensor(X33)
        out = m.empty(0, dtype=A.dtype)
        returned = OUT_CASES[name](m, A, out)
        assert returned is out
        results.append(out)
    _same(*results)


@pytest.mark.parametrize("name", ["linalg.slogdet", "slogdet", "linalg.qr", "linalg.eigh", "linalg.lu_factor", "svd"])
def test_out_tuples(name):
    fn = {"linalg.slogdet": lambda m, A, o: m.linalg.slogdet(A, out=o), "slogdet": lambda m, A, o: m.slogdet(A, out=o),
          "linalg.qr": lambda m, A, o: m.linalg.qr(A, out=o), "linalg.eigh": lambda m, A, o: m.linalg.eigh(A, out=o),
          "linalg.lu_factor": lambda m, A, o: m.linalg.lu_factor(A, out=o),
          "svd": lambda m, A, o: m.svd(A, out=o)}[name]
    outs = []
    for m in (engine, torch):
        A = m.tensor(X33 + X33.swapaxes(-1, -2) if "eigh" in name else X33)
        count = 3 if name == "svd" else 2
        out = tuple(m.empty(0, dtype=m.int32 if name.endswith("lu_factor") and i else A.dtype) for i in range(count))
        returned = fn(m, A, out)
        assert all(r is o for r, o in zip(returned, out))
        outs.append(out)
    for ours, theirs in zip(*outs):  # singular and eigen vectors up to sign
        if name in ("svd", "linalg.eigh"):
            ours, theirs = ours.abs(), theirs.abs()
        _same(ours, theirs)


OUT_DTYPE_CASES = {
    "linalg.inv": lambda m, A, o: m.linalg.inv(A, out=o),
    "linalg.svdvals": lambda m, A, o: m.linalg.svdvals(A, out=o),
    "mm": lambda m, A, o: m.mm(A, A, out=o),
    "linalg.matmul": lambda m, A, o: m.linalg.matmul(A, A, out=o),
    "linalg.qr": lambda m, A, o: m.linalg.qr(A, out=(o, o.clone())),
    "linalg.pinv": lambda m, A, o: m.linalg.pinv(A, out=o),
    "kron": lambda m, A, o: m.kron(A, A, out=o),
    "cholesky_solve": lambda m, A, o: m.cholesky_solve(A, A, out=o),
}


@pytest.mark.parametrize("dtype", ["float32", "complex128", "int64"])
@pytest.mark.parametrize("name", sorted(OUT_DTYPE_CASES))
def test_out_dtype_refused_or_cast_as_torch(name, dtype):
    """Most kernels demand ``out`` of the result's dtype; some cast into any dtype the result casts to safely."""
    def call(m):
        out = m.empty(0, dtype=getattr(m, dtype))
        OUT_DTYPE_CASES[name](m, m.eye(3, dtype=m.float64), out)
        return out
    try:
        theirs = call(torch)
    except RuntimeError:
        if name in ("linalg.pinv", "kron", "cholesky_solve"):  # each kernel words its cast refusal its own way
            with pytest.raises(RuntimeError):
                call(engine)
        else:
            _raises_alike(lambda: call(engine), lambda: call(torch))
    else:
        _same(call(engine), theirs)


# ---- empty matrices ----------------------------------------------------------------------------------------
EMPTY_CASES = {
    "lu_factor": lambda m, A: m.linalg.lu_factor(A),
    "lu_factor_ex": lambda m, A: m.linalg.lu_factor_ex(A),
    "lu": lambda m, A: m.linalg.lu(A),
    "lu_unpack": lambda m, A: m.lu_unpack(*m.linalg.lu_factor(A)),
    "lu_solve": lambda m, A: m.linalg.lu_solve(*m.linalg.lu_factor(A), A),
    "ldl_factor": lambda m, A: m.linalg.ldl_factor(A),
    "cond": lambda m, A: m.linalg.cond(A),
    "cond_1": lambda m, A: m.linalg.cond(A, 1),
    "cond_-inf": lambda m, A: m.linalg.cond(A, -math.inf),
    "matrix_norm_1": lambda m, A: m.linalg.matrix_norm(A, 1),
    "matrix_norm_inf_keepdim": lambda m, A: m.linalg.matrix_norm(A, math.inf, keepdim=True),
    "matrix_norm_2": lambda m, A: m.linalg.matrix_norm(A, 2),
}


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
@pytest.mark.parametrize("name", sorted(EMPTY_CASES))
def test_empty_matrices(name, shape):
    ours, theirs = (EMPTY_CASES[name](m, A) for m, A in zip((engine, torch), _pair(np.zeros(shape))))
    for o, t in zip(ours if isinstance(ours, tuple) else [ours], theirs if isinstance(theirs, tuple) else [theirs]):
        _same(o, t)


@pytest.mark.parametrize("shape", [(1, 0), (0, 2), (3, 0, 2), (2, 1, 0)])
def test_empty_rectangular_lu_and_norms(shape):
    for fn in (lambda m, A: m.linalg.lu(A), lambda m, A: m.linalg.matrix_norm(A, 1),
               lambda m, A: m.linalg.matrix_norm(A, math.inf), lambda m, A: m.linalg.matrix_norm(A, 2)):
        ours, theirs = (fn(m, A) for m, A in zip((engine, torch), _pair(np.zeros(shape))))
        for o, t in zip(ours if isinstance(ours, tuple) else [ours], theirs if isinstance(theirs, tuple) else [theirs]):
            _same(o, t)


def test_empty_lu_on_cuda(cuda):
    lu, pivots = engine.linalg.lu_factor(engine.zeros(2, 0, 0, device="cuda"))
    assert lu.device.type == "cuda" and tuple(lu.shape) == (2, 0, 0) and tuple(pivots.shape) == (2, 0)


# ---- linalg's refusals, as torch's ---------------------------------------------------------------------------
LINALG_ERRORS = [
    ("matrix_exp", lambda m, A: m.linalg.matrix_exp(A), "int64", (3, 3)),
    ("vecdot", lambda m, A: m.linalg.vecdot(A, A), "int64", (2, 3)),
    ("lu_solve_int", lambda m, A: m.linalg.lu_solve(A, m.ones(3, dtype=m.int32), A), "int64", (3, 3)),
    ("lu_solve_1d", lambda m, A: m.linalg.lu_solve(A, m.ones((), dtype=m.int32), A), "float64", (3,)),
    ("matrix_rank", lambda m, A: m.linalg.matrix_rank(A), "int64", (3, 3)),
    ("matrix_rank_half", lambda m, A: m.linalg.matrix_rank(A), "float16", (3, 3)),
    ("lstsq", lambda m, A: m.linalg.lstsq(A, A), "bool", (3, 3)),
    ("lstsq_half", lambda m, A: m.linalg.lstsq(A, A), "float16", (3, 3)),
    ("pinv_half", lambda m, A: m.linalg.pinv(A), "float16", (3, 3)),
    ("matrix_power_1d", lambda m, A: m.linalg.matrix_power(A, 2), "float64", (3,)),
    ("lu_1d", lambda m, A: m.linalg.lu(A), "float64", (3,)),
    ("cond_1d", lambda m, A: m.linalg.cond(A), "float64", (3,)),
    ("matrix_norm_int", lambda m, A: m.linalg.matrix_norm(A, 1), "int64", (3, 3)),
    ("vander_bool", lambda m, A: m.linalg.vander(A), "bool", (3,)),
    ("vander_half", lambda m, A: m.linalg.vander(A), "float16", (3,)),
    ("householder_int", lambda m, A: m.linalg.householder_product(A, A[0]), "int64", (3, 3)),
    ("householder_half", lambda m, A: m.linalg.householder_product(A, A[0]), "float16", (3, 3)),
]


@pytest.mark.parametrize("name,fn,dtype,shape", LINALG_ERRORS, ids=[case[0] for case in LINALG_ERRORS])
def test_linalg_refusals(name, fn, dtype, shape):
    e, t = _pair(np.arange(np.prod(shape)).reshape(shape) % 3 + 1, dtype)
    _raises_alike(lambda: fn(engine, e), lambda: fn(torch, t))


# ---- tensordot: a contracted dim of size 1 broadcasts ---------------------------------------------------------
@pytest.mark.parametrize("shapes,dims", [(((2, 3), (1, 4)), 1), (((2, 1), (3, 4)), 1), (((2, 1, 0), (4, 0, 3)), 2),
                                         (((1, 5, 2), (2, 5, 3)), ([0, 1], [2, 1]))])
def test_tensordot_broadcasts_size_one(shapes, dims):
    a, b = (RNG.normal(size=s) for s in shapes)
    _same(engine.tensordot(engine.tensor(a), engine.tensor(b), dims=dims),
          torch.tensordot(torch.tensor(a), torch.tensor(b), dims=dims))


def test_tensordot_still_refuses_mismatch():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        engine.tensordot(engine.ones(2, 3), engine.ones(2, 4), dims=([1], [0]))


# ---- fft -----------------------------------------------------------------------------------------------------
FFT_OUT = [("fft", {}), ("ifft", {"n": 7}), ("rfft", {"norm": "ortho"}), ("irfft", {}), ("hfft", {"n": 5}),
           ("ihfft", {}), ("fft2", {"s": (3, 4)}), ("rfftn", {"dim": (0, 2)}), ("irfft2", {"norm": "forward"}),
           ("ihfftn", {})]


@pytest.mark.parametrize("name,kw", FFT_OUT)
def test_fft_out(name, kw):
    x = RNG.normal(size=(3, 4, 5))
    if name in ("ifft", "irfft", "hfft", "irfft2"):
        x = x + 1j * RNG.normal(size=x.shape)
    results = []
    for m, t in zip((engine, torch), _pair(x, "complex128" if np.iscomplexobj(x) else "float64")):
        expected = getattr(m.fft, name)(t, **kw)
        out = m.empty(0, dtype=expected.dtype)
        assert getattr(m.fft, name)(t, **kw, out=out) is out
        results.append(out)
    _same(*results)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_fftn_over_no_dims_is_complex(dtype):
    ours, theirs = (m.fft.fftn(t, dim=()) for m, t in zip((engine, torch), _pair(RNG.normal(size=(2, 3)), dtype)))
    _same(ours, theirs)


FFT_ERRORS = [
    ("rfft2", "complex64", (3, 4), {}), ("rfftn", "complex64", (3, 4), {}), ("ihfft2", "complex64", (3, 4), {}),
    ("ihfftn", "complex128", (3, 4), {}), ("rfft2", "complex64", (3,), {}), ("ihfft2", "complex64", (3,), {}),
    ("rfft2", "float16", (3,), {}), ("hfft2", "float16", (3,), {"dim": (0, 1)}), ("fft2", "float16", (4,), {}),
    ("rfftn", "float32", (3, 3), {"dim": ()}), ("irfft2", "complex64", (3, 3), {"dim": ()}),
    ("ihfft2", "float32", (3, 3), {"dim": ()}),
]


@pytest.mark.parametrize("name,dtype,shape,kw", FFT_ERRORS)
def test_fft_errors_as_torch(name, dtype, shape, kw):
    e, t = _pair(np.ones(shape), dtype)
    _raises_alike(lambda: getattr(engine.fft, name)(e, **kw), lambda: getattr(torch.fft, name)(t, **kw))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_refuse_integer_dtypes(name):
    _raises_alike(lambda: getattr(engine.fft, name)(5, dtype=engine.int64),
                  lambda: getattr(torch.fft, name)(5, dtype=torch.int64))


# ---- special functions at their edges --------------------------------------------------------------------------
EDGES = [math.inf, -math.inf, math.nan, 0.0, -0.0, 1e-300, 0.5, 3.0, 1e5, -1.0]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_edges(name, dtype):
    a, x = np.meshgrid(EDGES, EDGES)
    ours = getattr(engine, name)(*(engine.tensor(v.ravel(), dtype=getattr(engine, dtype)) for v in (a, x)))
    theirs = getattr(torch, name)(*(torch.tensor(v.ravel(), dtype=getattr(torch, dtype)) for v in (a, x)))
    _same(ours, theirs, rtol=1e-5)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_polygamma_at_infinities(n):
    values = [math.inf, -math.inf, math.nan, -2.5, 0.0, 1e300]
    ours, theirs = (m.polygamma(n, t) for m, t in zip((engine, torch), _pair(np.array(values))))
    _same(ours, theirs)


@pytest.mark.parametrize("name", ["chebyshev_polynomial_t", "hermite_polynomial_he", "laguerre_polynomial_l",
                                  "shifted_chebyshev_polynomial_w"])
@pytest.mark.parametrize("complex_side", ["input", "n"])
def test_polynomials_refuse_complex(name, complex_side):
    def call(m):
        x, n = m.tensor([0.3, 0.5]), m.tensor([2.0, 3.0])
        if complex_side == "input":
            x = x + 1j
        else:
            n = n + 1j
        return getattr(m.special, name)(x, n)
    _raises_alike(lambda: call(engine), lambda: call(torch))


def test_incomplete_gamma_and_polygamma_edges_on_cuda(cuda):
    a = engine.tensor([math.nan, math.nan, math.inf, 2.0], device="cuda")
    x = engine.tensor([0.0, math.inf, math.nan, 0.0], device="cuda")
    assert engine.igamma(a, x).cpu().tolist() == [0.0, 1.0, 0.0, 0.0]
    assert engine.igammac(a, x).cpu().tolist() == [1.0, 0.0, 1.0, 1.0]
    values = engine.polygamma(2, engine.tensor([math.inf, 1.0], dtype=engine.float64, device="cuda")).cpu()
    assert math.isnan(values[0].item()) and values[1].item() == pytest.approx(-2.404113806319188)


@pytest.mark.parametrize("call", [
    lambda lib, out: lib.special.erf(lib.tensor([0.5, 1.0]), out=out),
    lambda lib, out: lib.add(lib.ones(2, 2), 1, out=out),
    lambda lib, out: lib.fft.fft(lib.ones(3), out=out.to(lib.complex64)),
])
def test_elementwise_out_is_resized_as_torchs(call):
    """An empty ``out`` takes the result's shape (torch resizes it) rather than failing."""
    theirs = call(torch, torch.empty(0))
    ours = call(engine, engine.empty(0))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
