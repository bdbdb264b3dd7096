"""torch's ``out=`` against torch, for the functions ``engine.ops.out_arguments`` gives it to and for those with an
``out`` of their own (factories, gathers, norms, unary ops): the values and dtype written into an empty ``out``
(resized), into an ``out`` of a wider or another dtype (computed in it, cast to it, or refused, as torch), the
``out`` tensors handed back; and torch's refusal of ``out=`` where autograd records.
"""
import warnings

import numpy as np
import pytest
import torch
from op_check import assert_same_error

import engine

pytestmark = pytest.mark.slow  # 180 cases, a few seconds

_R = np.random.default_rng(3)
A = _R.standard_normal((3, 4)).astype(np.float32)
P = _R.uniform(0.1, 0.9, (3, 4)).astype(np.float32)
V = _R.standard_normal(4).astype(np.float32)
I = _R.integers(0, 5, (3, 4))
SORTED = np.sort(_R.standard_normal(6).astype(np.float32))


def T(m, a):
    return m.tensor(a)


CALLS = {
    "addcdiv": lambda m, o: m.addcdiv(T(m, A), T(m, A), T(m, P), value=0.5, out=o),
    "addcmul": lambda m, o: m.addcmul(T(m, A), T(m, A), T(m, P), out=o),
    "all": lambda m, o: m.all(T(m, A) > 0, 1, out=o),
    "amax": lambda m, o: m.amax(T(m, A), 1, out=o),
    "amin": lambda m, o: m.amin(T(m, A), 0, out=o),
    "aminmax": lambda m, o: m.aminmax(T(m, A), dim=1, out=o),
    "angle": lambda m, o: m.angle(T(m, A), out=o),
    "any": lambda m, o: m.any(T(m, A) > 0, 0, out=o),
    "argmax": lambda m, o: m.argmax(T(m, A), 1, out=o),
    "argmin": lambda m, o: m.argmin(T(m, A), 0, out=o),
    "bitwise_left_shift": lambda m, o: m.bitwise_left_shift(T(m, I), 1, out=o),
    "bitwise_not": lambda m, o: m.bitwise_not(T(m, I), out=o),
    "bitwise_right_shift": lambda m, o: m.bitwise_right_shift(T(m, I), 1, out=o),
    "bucketize": lambda m, o: m.bucketize(T(m, A), T(m, SORTED), out=o),
    "chain_matmul": lambda m, o: m.chain_matmul(T(m, A), T(m, A.T), T(m, A), out=o),
    "column_stack": lambda m, o: m.column_stack([T(m, A), T(m, A)], out=o),
    "conj_physical": lambda m, o: m.conj_physical(T(m, A), out=o),
    "copysign": lambda m, o: m.copysign(T(m, A), T(m, V), out=o),
    "cross": lambda m, o: m.cross(T(m, A[:, :3]), T(m, P[:, :3]), dim=1, out=o),
    "cummax": lambda m, o: m.cummax(T(m, A), 1, out=o),
    "cummin": lambda m, o: m.cummin(T(m, A), 0, out=o),
    "cumprod": lambda m, o: m.cumprod(T(m, A), 1, out=o),
    "cumsum": lambda m, o: m.cumsum(T(m, A), 0, out=o),
    "diag": lambda m, o: m.diag(T(m, A), 1, out=o),
    "diff": lambda m, o: m.diff(T(m, A), dim=1, out=o),
    "dstack": lambda m, o: m.dstack([T(m, A), T(m, A)], out=o),
    "float_power": lambda m, o: m.float_power(T(m, P), 2, out=o),
    "fmax": lambda m, o: m.fmax(T(m, A), T(m, V), out=o),
    "fmin": lambda m, o: m.fmin(T(m, A), T(m, V), out=o),
    "frexp": lambda m, o: m.frexp(T(m, A), out=o),
    "gcd": lambda m, o: m.gcd(T(m, I), T(m, I + 2), out=o),
    "heaviside": lambda m, o: m.heaviside(T(m, A), T(m, V), out=o),
    "histc": lambda m, o: m.histc(T(m, A), 5, out=o),
    "hstack": lambda m, o: m.hstack([T(m, A), T(m, A)], out=o),
    "hypot": lambda m, o: m.hypot(T(m, A), T(m, V), out=o),
    "igamma": lambda m, o: m.igamma(T(m, P), T(m, P), out=o),
    "igammac": lambda m, o: m.igammac(T(m, P), T(m, P), out=o),
    "isneginf": lambda m, o: m.isneginf(T(m, A), out=o),
    "isposinf": lambda m, o: m.isposinf(T(m, A), out=o),
    "kthvalue": lambda m, o: m.kthvalue(T(m, A), 2, 1, out=o),
    "lcm": lambda m, o: m.lcm(T(m, I), T(m, I + 2), out=o),
    "ldexp": lambda m, o: m.ldexp(T(m, A), T(m, I), out=o),
    "lerp": lambda m, o: m.lerp(T(m, A), T(m, P), 0.3, out=o),
    "logaddexp": lambda m, o: m.logaddexp(T(m, A), T(m, P), out=o),
    "logaddexp2": lambda m, o: m.logaddexp2(T(m, A), T(m, P), out=o),
    "logcumsumexp": lambda m, o: m.logcumsumexp(T(m, A), 1, out=o),
    "logical_not": lambda m, o: m.logical_not(T(m, A), out=o),
    "logit": lambda m, o: m.logit(T(m, P), out=o),
    "logspace": lambda m, o: m.logspace(0, 2, 5, out=o),
    "logsumexp": lambda m, o: m.logsumexp(T(m, A), 1, out=o),
    "masked_select": lambda m, o: m.masked_select(T(m, A), T(m, A) > 0, out=o),
    "max": lambda m, o: m.max(T(m, A), 1, out=o),
    "mean": lambda m, o: m.mean(T(m, A), 1, out=o),
    "median": lambda m, o: m.median(T(m, A), 1, out=o),
    "min": lambda m, o: m.min(T(m, A), 0, out=o),
    "mode": lambda m, o: m.mode(T(m, I.astype(np.float32)), 1, out=o),
    "msort": lambda m, o: m.msort(T(m, A), out=o),
    "mvlgamma": lambda m, o: m.mvlgamma(T(m, P + 2), 2, out=o),
    "nan_to_num": lambda m, o: m.nan_to_num(T(m, A), out=o),
    "nanmean": lambda m, o: m.nanmean(T(m, A), 1, out=o),
    "nanmedian": lambda m, o: m.nanmedian(T(m, A), 1, out=o),
    "nanquantile": lambda m, o: m.nanquantile(T(m, A), 0.3, 1, out=o),
    "nansum": lambda m, o: m.nansum(T(m, A), 1, out=o),
    "narrow_copy": lambda m, o: m.narrow_copy(T(m, A), 1, 1, 2, out=o),
    "nextafter": lambda m, o: m.nextafter(T(m, A), T(m, P), out=o),
    "nonzero": lambda m, o: m.nonzero(T(m, A) > 0, out=o),
    "polygamma": lambda m, o: m.polygamma(1, T(m, P), out=o),
    "prod": lambda m, o: m.prod(T(m, A), 1, out=o),
    "quantile": lambda m, o: m.quantile(T(m, A), 0.3, 0, out=o),
    "renorm": lambda m, o: m.renorm(T(m, A), 2, 0, 1.0, out=o),
    "round": lambda m, o: m.round(T(m, A), decimals=1, out=o),
    "row_stack": lambda m, o: m.row_stack([T(m, A), T(m, A)], out=o),
    "searchsorted": lambda m, o: m.searchsorted(T(m, SORTED), T(m, A), out=o),
    "sgn": lambda m, o: m.sgn(T(m, A), out=o),
    "signbit": lambda m, o: m.signbit(T(m, A), out=o),
    "sort": lambda m, o: m.sort(T(m, A), 1, out=o),
    "std": lambda m, o: m.std(T(m, A), 1, out=o),
    "sum": lambda m, o: m.sum(T(m, A), 1, out=o),
    "take_along_dim": lambda m, o: m.take_along_dim(T(m, A), m.tensor(I[:, :1] % 4), 1, out=o),
    "topk": lambda m, o: m.topk(T(m, A), 2, 1, out=o),
    "tril": lambda m, o: m.tril(T(m, A), out=o),
    "triu": lambda m, o: m.triu(T(m, A), 1, out=o),
    "var": lambda m, o: m.var(T(m, A), 1, out=o),
    "vstack": lambda m, o: m.vstack([T(m, A), T(m, A)], out=o),
    "where": lambda m, o: m.where(T(m, A) > 0, T(m, A), T(m, P), out=o),
    "xlogy": lambda m, o: m.xlogy(T(m, P), T(m, P), out=o),
    # functions with an out= of their own: factories (which compute in out's dtype), gathers, norms, the unary ops
    # torch wants an out of the result's dtype for, sums in out's dtype
    "zeros": lambda m, o: m.zeros(2, 3, out=o),
    "ones": lambda m, o: m.ones(4, out=o),
    "full": lambda m, o: m.full((2, 2), 1.5, out=o),
    "eye": lambda m, o: m.eye(3, out=o),
    "arange": lambda m, o: m.arange(0, 2, 0.3, out=o),
    "linspace": lambda m, o: m.linspace(-1, 1, 7, out=o),
    "randn": lambda m, o: (m.manual_seed(0), m.randn(5, out=o))[1],
    "gather": lambda m, o: m.gather(T(m, A), 1, m.tensor(I[:, :2] % 4), out=o),
    "index_select": lambda m, o: m.index_select(T(m, A), 1, m.tensor([3, 0]), out=o),
    "norm": lambda m, o: m.norm(T(m, A), dim=1, out=o),
    "abs": lambda m, o: m.abs(T(m, A), out=o),
    "neg": lambda m, o: m.neg(T(m, A), out=o),
    "floor": lambda m, o: m.floor(T(m, A), out=o),
    "clamp": lambda m, o: m.clamp(T(m, A), -0.5, 0.5, out=o),
    "exp": lambda m, o: m.exp(T(m, A), out=o),
}

#: an ``out`` of another dtype than the natural result's: (the dtype, what the call computes into it)
OTHER_DTYPES = {
    "sum": "int64", "prod": "int64", "cumsum": "float64", "arange": "int64", "zeros": "bool", "linspace": "float64",
    "full": "int32", "exp": "float64", "abs": "float64", "mean": "int64", "gather": "float64",
}


_WIDER = {"float32": "float64", "complex64": "complex128"}


def _outs(m, result, wider):
    """Empty ``out`` tensors for ``result`` (a tensor or a tuple): of its dtypes, or of the wider ones."""
    if isinstance(result, tuple):
        return tuple(_outs(m, r, wider) for r in result)
    name = str(result.dtype).split(".")[-1]
    return m.empty(0, dtype=getattr(m, _WIDER.get(name, name) if wider else name))


def _arrays(result):
    return [r.numpy() for r in result] if isinstance(result, tuple) else [result.numpy()]


@pytest.mark.parametrize("wider", [False, True], ids=["same_dtype", "wider_dtype"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_out_written_as_torchs(name, wider):
    call = CALLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = call(torch, None)
        try:
            theirs = call(torch, _outs(torch, reference, wider))
        except RuntimeError:
            with pytest.raises(RuntimeError):
                call(engine, _outs(engine, reference, wider))
            return
        out = _outs(engine, reference, wider)
        ours = call(engine, out)
    for got, given in zip(ours if isinstance(ours, tuple) else (ours,), out if isinstance(out, tuple) else (out,)):
        assert got is given
    for a, b in zip(_arrays(ours), _arrays(theirs), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call", [
    lambda m, x: m.sum(x, 0, out=m.empty(0)),
    lambda m, x: m.sort(x, out=(m.empty(0), m.empty(0, dtype=m.long))),
    lambda m, x: m.where(x > 0, x, -x, out=m.empty(0)),
    lambda m, x: m.exp(x, out=m.empty(0)),
    lambda m, x: m.mm(x, x, out=m.empty(0)),
    lambda m, x: m.add(x, 1, out=m.empty(0)),
    lambda m, x: m.tril(x, out=m.empty(0)),
])
def test_out_refused_where_autograd_records(call):
    values = np.arange(4.0, dtype=np.float32).reshape(2, 2)
    assert_same_error(lambda: call(engine, engine.tensor(values, requires_grad=True)),
                      lambda: call(torch, torch.tensor(values, requires_grad=True)))
    with engine.no_grad():
        call(engine, engine.tensor(values, requires_grad=True))


@pytest.mark.parametrize("name", sorted(OTHER_DTYPES))
def test_out_of_another_dtype(name):
    """torch computes factories, sums and products in ``out``'s dtype, casts pointwise results safely and refuses
    the rest; the engine does the same."""
    call, dtype = CALLS[name], OTHER_DTYPES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            theirs = call(torch, torch.empty(0, dtype=getattr(torch, dtype)))
        except RuntimeError:
            with pytest.raises(RuntimeError):
                call(engine, engine.empty(0, dtype=getattr(engine, dtype)))
            return
        ours = call(engine, engine.empty(0, dtype=getattr(engine, dtype)))
    assert str(ours.dtype).split(".")[-1] == dtype
    np.testing.assert_allclose(ours.numpy().astype(np.float64), theirs.numpy().astype(np.float64), rtol=1e-6)


def test_factory_computes_in_outs_dtype():
    out = engine.empty(0, dtype=engine.float64)
    assert engine.logspace(0, 2, 5, out=out) is out and out.dtype == engine.float64
    np.testing.assert_array_equal(out.numpy(), torch.logspace(0, 2, 5, dtype=torch.float64).numpy())


def test_histogram_writes_both_outs():
    values = np.random.default_rng(3).random(37).astype(np.float32)
    hist, edges = engine.empty(2), engine.empty(0)
    result = engine.histogram(engine.from_numpy(values), 5, out=(hist, edges))
    expected = torch.histogram(torch.from_numpy(values), 5)
    assert result.hist is hist and result.bin_edges is edges
    np.testing.assert_array_equal(hist.numpy(), expected.hist.numpy())
    np.testing.assert_array_equal(edges.numpy(), expected.bin_edges.numpy())
    assert_same_error(lambda: engine.histogram(engine.from_numpy(values), 5, out=(engine.empty(5, dtype=engine.float64),
                                                                                   engine.empty(6))),
                      lambda: torch.histogram(torch.from_numpy(values), 5, out=(torch.empty(5, dtype=torch.float64),
                                                                                 torch.empty(6))))


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("how", ["dtype", "out"])
def test_running_sums_refuse_bool(name, how):
    def call(lib):
        kwargs = {"dtype": lib.bool} if how == "dtype" else {"out": lib.empty(3, dtype=lib.bool)}
        return getattr(lib, name)(lib.ones(3), 0, **kwargs)
    assert_same_error(lambda: call(engine), lambda: call(torch))

