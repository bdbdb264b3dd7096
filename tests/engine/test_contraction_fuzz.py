"""Contractions and products against torch where a differential fuzz found them apart: einsum's parsing (its
errors, spaces, the sublist form) and result dtype (integer sums widen to int64, bool through bmm, mixed dtypes,
empty products), tensordot's and the matrix products' checks and messages, addmm/addmv/addbmm/baddbmm/addr's
integer scalars, ignored operands and their zero gradients, cdist's and cross's dtype rules, and the complex
double backward of einsum, addmm and outer.

Each case is a seeded sample of the sweep (/tmp fuzzers, not kept); most failed before their fix, the rest (dtypes
that must not widen, equations the new parser must still read) guard what the fixes had to keep.
"""
import warnings

import numpy as np
import pytest
import torch

import engine
from op_check import assert_same_error, check_op

pytestmark = pytest.mark.slow  # about 1.5 s in all, over 2 s with torch cold or the machine loaded

_RNG = np.random.default_rng(27)


def _rand(*shape, dtype=np.float64):
    x = _RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _RNG.standard_normal(shape)
    if np.dtype(dtype).kind in "iu":
        x = _RNG.integers(0 if np.dtype(dtype).kind == "u" else -4, 5, shape)
    if np.dtype(dtype).kind == "b":
        x = _RNG.random(shape) < 0.5
    return np.asarray(x).astype(dtype)


def _tensors(module, arrays):
    return [module.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in arrays]


def _same_error(fn, *arrays):
    """fn(module, *tensors) raises torch's error type and message for both."""
    def call(module):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(module, *_tensors(module, arrays))
    assert_same_error(lambda: call(engine), lambda: call(torch))


def _same_result(fn, *arrays):
    """fn(module, *tensors): equal dtype, shape and values (no gradients: integer and bool results)."""
    ours, theirs = fn(engine, *_tensors(engine, arrays)), fn(torch, *_tensors(torch, arrays))
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy().astype(complex), theirs.numpy().astype(complex), rtol=1e-6)


def _both(fn):
    return (lambda *a: fn(engine, *a)), (lambda *a: fn(torch, *a))


# ---- einsum: result dtype ----------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    ("ij->i", [(2, 3)], "int32"),          # a label summed alone: sum widens to int64
    ("ii", [(3, 3)], "uint8"),              # the trace, too
    ("ij->ij", [(2, 3)], "int32"),          # nothing summed: stays
    ("ij,jk->ik", [(2, 3), (3, 4)], "int32"),  # through bmm: stays
    ("i,j->", [(2,), (3,)], "int32"),
    ("ij,j->i", [(2, 3), (1,)], "int32"),   # j of size 1 in one operand is summed in the other first
    ("i,j->ij", [(2,), (3,)], "bool"),      # a product only: stays bool
    ("ij->", [(2, 3)], "bool"),
    ("BgA,,,A->BA", [(1, 3, 4), (), (), (4,)], "bool"),
], ids=lambda c: c[0] if isinstance(c, tuple) else None)
def test_einsum_integer_dtypes(case):
    eq, shapes, dtype = case
    _same_result(lambda m, *t: m.einsum(eq, *t), *[_rand(*s, dtype=dtype) for s in shapes])


@pytest.mark.parametrize("case", [
    (",bc,", [(), (3, 1), ()], ["float64", "float32", "float32"]),  # products promote
    ("cA...f,cf", [(4, 0, 2), (4, 2)], ["bool", "float64"]),       # an empty bmm takes its second operand's dtype
    ("cA...B,BB...", [(0, 4, 2), (2, 2)], ["float64", "complex128"]),
], ids=["promote", "empty-bool", "empty-complex"])
def test_einsum_mixed_dtypes(case):
    eq, shapes, dtypes = case
    arrays = [_rand(*s, dtype=d) for s, d in zip(shapes, dtypes)]
    _same_result(lambda m, *t: m.einsum(eq, *t), *arrays)


@pytest.mark.parametrize("case", [
    ("ij,j->", [(2, 3), (3,)], ["int32", "int32"]),         # Long (summed) meets Int in bmm
    ("ij,jk", [(2, 3), (3, 4)], ["float64", "float32"]),
    ("ij,jk->ki", [(2, 3), (3, 4)], ["float64", "float32"]),  # computed as b^T a^T: named the other way round
    ("ebh,bb", [(2, 4, 2), (4, 4)], ["float64", "uint8"]),
    ("BC,h,,CA->hAB", [(3, 2), (1,), (), (2, 4)], ["float64", "int32", "float32", "float32"]),
    ("ij,jk", [(2, 3), (3, 4)], ["bool", "bool"]),
    ("Be,egb -> bB", [(4, 2), (2, 4, 1)], ["bool", "bool"]),
], ids=lambda c: c[0] if isinstance(c, tuple) else None)
def test_einsum_bmm_refusals(case):
    eq, shapes, dtypes = case
    _same_error(lambda m, *t: m.einsum(eq, *t), *[_rand(*s, dtype=d) for s, d in zip(shapes, dtypes)])


# ---- einsum: parsing -----------------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    ("ij->ii", [(2, 2)]), ("ij->k", [(2, 2)]), ("i->I", [(2,)]), ("i1->i", [(2, 2)]), ("ij->i1", [(2, 2)]),
    ("i.j->i", [(2, 2)]), ("...i...->i", [(2, 2)]), ("...i->......", [(2, 2)]), ("...i->..", [(2, 2)]),
    ("...ijk", [(2, 3)]), ("ii", [(2, 3)]), ("...,...", [(2, 3), (4, 3)]), ("i...,i...", [(2, 3), (2, 4)]),
    ("ij - > ji", [(2, 3)]), ("ij,jk", [(2, 3)]), ("i->", []),
], ids=lambda c: repr(c[0]))
def test_einsum_equation_errors(case):
    eq, shapes = case
    _same_error(lambda m, *t: m.einsum(eq, *t), *[_rand(*s) for s in shapes])


@pytest.mark.parametrize("case", [
    (" i j -> j i ", [(2, 3)]),
    ("i..., ...j->ij", [(2, 3, 4), (3, 4, 5)]),
    ("Ab,bA->", [(2, 3), (3, 2)]),
], ids=lambda c: repr(c[0]))
def test_einsum_spaces_and_letters(case):
    eq, shapes = case
    check_op(*_both(lambda m, *t: m.einsum(eq, *t)), [_rand(*s) for s in shapes])


@pytest.mark.parametrize("case", [
    (lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [0, 2]), [(2, 3), (3, 4)]),
    (lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2]), [(2, 3), (3, 4)]),
    (lambda m, a, b: m.einsum(a, [Ellipsis, 0], b, [Ellipsis, 0], [Ellipsis]), [(5, 2, 3), (2, 3)]),
    (lambda m, a: m.einsum(a, [0, 0]), [(3, 3)]),
    (lambda m, a: m.einsum(a, [51, 26]), [(3, 2)]),
], ids=["explicit", "implicit", "ellipsis", "trace", "letters"])
def test_einsum_sublist_form(case):
    fn, shapes = case
    check_op(*_both(fn), [_rand(*s) for s in shapes])


@pytest.mark.parametrize("bad", [52, -1])
def test_einsum_sublist_range(bad):
    _same_error(lambda m, a: m.einsum(a, [bad, 26]), _rand(3, 2))


# ---- complex double backward ---------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    (lambda m, a, b: m.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    (lambda m, a, b, c: m.einsum("a,ab,bc->c", a, b, c), [(2,), (2, 3), (3, 2)]),
    (lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2), [(3,), (2, 4), (4, 3)]),
    (lambda m, c, a, b: m.baddbmm(c, a, b), [(2, 1, 3), (2, 2, 4), (2, 4, 3)]),
    (lambda m, a, b: m.outer(a, b), [(2,), (3,)]),
], ids=["einsum", "einsum3", "addmm", "baddbmm", "outer"])
def test_complex_double_backward(case):
    """First-order gradients with create_graph, and the gradients of their weighted sum (upstream included)."""
    fn, shapes = case
    arrays = [_rand(*s, dtype=np.complex128) for s in shapes]
    results = []
    for m in (engine, torch):
        ts = [m.from_numpy(a.copy()).requires_grad_() for a in arrays]
        y = fn(m, *ts)
        g = m.from_numpy(np.random.default_rng(1).standard_normal(tuple(y.shape)) + 0j).requires_grad_()
        grads = m.autograd.grad(y, ts, g, create_graph=True)
        weights = np.random.default_rng(2)
        s = sum((gr * m.from_numpy(weights.standard_normal(tuple(gr.shape)) + 0j)).sum() for gr in grads).real
        second = m.autograd.grad(s, ts + [g], allow_unused=True)  # (addmm's input: its gradient is constant)
        results.append([None if x is None else x.detach().resolve_conj().numpy() if m is torch else
                        x.detach().numpy() for x in list(grads) + list(second)])
    for ours, theirs in zip(*results):
        assert (ours is None) == (theirs is None)
        if theirs is not None:
            np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


# ---- addmm and kin: scalars, ignored operands ----------------------------------------------------
_ADD_PRODUCTS = {
    "addmm": (lambda m, c, a, b, **k: m.addmm(c, a, b, **k), [(2, 3), (2, 4), (4, 3)]),
    "baddbmm": (lambda m, c, a, b, **k: m.baddbmm(c, a, b, **k), [(2, 2, 3), (2, 2, 4), (2, 4, 3)]),
    "addbmm": (lambda m, c, a, b, **k: m.addbmm(c, a, b, **k), [(2, 3), (2, 2, 4), (2, 4, 3)]),
    "addmv": (lambda m, c, a, b, **k: m.addmv(c, a, b, **k), [(2,), (2, 4), (4,)]),
}


@pytest.mark.parametrize("name", sorted(_ADD_PRODUCTS))
@pytest.mark.parametrize("scalars,dtype", [((0.5, 1), "int32"), ((1.9, -1.5), "int64"), ((-1, 3), "uint8"),
                                           ((1, 0.0), "int32")], ids=["beta-half", "truncated", "wrapped", "alpha0"])
def test_integer_scalars_truncate(name, scalars, dtype):
    """Integer tensors take float beta/alpha truncated (and wrapped into uint8), keeping their dtype."""
    fn, shapes = _ADD_PRODUCTS[name]
    beta, alpha = scalars
    _same_result(lambda m, *t: fn(m, *t, beta=beta, alpha=alpha), *[_rand(*s, dtype=dtype) for s in shapes])


@pytest.mark.filterwarnings("ignore:invalid value encountered")
@pytest.mark.parametrize("name", sorted(_ADD_PRODUCTS))
def test_alpha_zero_ignores_the_product(name):
    """alpha=0: BLAS reads no operand (addmm, addmv, addbmm) so an infinity gives no NaN; baddbmm's does."""
    fn, shapes = _ADD_PRODUCTS[name]
    arrays = [_rand(*s) for s in shapes]
    arrays[2].flat[0] = np.inf
    check_op(*_both(lambda m, *t: fn(m, *t, alpha=0)), arrays, grad=False)


@pytest.mark.parametrize("name", ["addmv", "addbmm", "addr"])
def test_beta_zero_gives_input_a_zero_gradient(name):
    """beta=0 ignores input (NaN included) but still gives it a gradient, of zeros (None before)."""
    fn, shapes = dict(_ADD_PRODUCTS, addr=(lambda m, c, a, b, **k: m.addr(c, a, b, **k), [(2, 3), (2,), (3,)]))[name]
    arrays = [_rand(*s) for s in shapes]
    arrays[0].flat[0] = np.nan
    check_op(*_both(lambda m, *t: fn(m, *t, beta=0, alpha=2)), arrays)


def test_addr_bool():
    """For bool, addr is (beta and input) or (alpha and outer) (int64 before)."""
    arrays = [_rand(3, 4, dtype=bool), _rand(3, dtype=bool), _rand(4, dtype=bool)]
    for beta, alpha in ((2, 2), (0, 3), (2, 0), (True, 1)):
        _same_result(lambda m, *t: m.addr(*t, beta=beta, alpha=alpha), *arrays)


@pytest.mark.parametrize("case", [((0.5, 1), "int64"), ((1, 1.5), "bool"), ((True, 1), "int64"), ((1, True), "int32")],
                         ids=["float-beta", "float-alpha-bool", "bool-beta", "bool-alpha"])
def test_addr_scalar_refusals(case):
    (beta, alpha), dtype = case
    _same_error(lambda m, *t: m.addr(*t, beta=beta, alpha=alpha),
                _rand(2, 3, dtype=dtype), _rand(2, dtype=dtype), _rand(3, dtype=dtype))


# ---- matrix products: checks and messages --------------------------------------------------------
_RANKS = {1: (3,), 2: (3, 3), 3: (2, 3, 3), 4: (2, 2, 3, 3)}


@pytest.mark.parametrize("ranks", [(1, 1), (2, 1), (3, 1), (1, 2), (3, 2), (2, 3), (3, 3), (2, 4)],
                         ids=lambda r: f"{r[0]}@{r[1]}")
@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("bool", "bool")], ids=["mixed", "bool"])
def test_matmul_kernel_messages(ranks, dtypes):
    """Each rank combination names the kernel PyTorch sends it to (dot, addmv, addmm, bmm)."""
    _same_error(lambda m, a, b: m.matmul(a, b), _rand(*_RANKS[ranks[0]], dtype=dtypes[0]),
                _rand(*_RANKS[ranks[1]], dtype=dtypes[1]))


@pytest.mark.parametrize("case", [
    (lambda m, a, b: m.mm(a, b), [(3, 3), (2, 5)], ["bool", "bool"]),       # the shape error comes first
    (lambda m, a, b: m.mm(a, b), [(5, 2), (4, 3)], ["bool", "float64"]),
    (lambda m, a, b: m.mv(a, b), [(3, 3), (1,)], ["float32", "float64"]),
    (lambda m, a, b: m.bmm(a, b), [(3, 3, 3), (5, 3, 4)], ["float32", "int64"]),
    (lambda m, a, b: m.bmm(a, b), [(2, 1, 4), (2, 4, 1)], ["bool", "complex64"]),
    (lambda m, a, b: m.dot(a, b), [(3,), (3,)], ["bool", "bool"]),
    (lambda m, a, b: m.vdot(a, b), [(3,), (3,)], ["bool", "bool"]),
    (lambda m, a, b: m.inner(a, b), [(5,), (5,)], ["bool", "bool"]),
    (lambda m, a, b: m.inner(a, b), [(2, 5), (5,)], ["bool", "bool"]),
    (lambda m, a, b: m.inner(a, b), [(4,), (4,)], ["float32", "float64"]),
], ids=["mm-shape", "mm-shape-dtype", "mv-shape", "bmm-shape", "bmm-bool", "dot-bool", "vdot-bool",
        "inner-bool", "inner-bool-2d", "inner-mixed"])
def test_product_refusal_order(case):
    fn, shapes, dtypes = case
    _same_error(fn, *[_rand(*s, dtype=d) for s, d in zip(shapes, dtypes)])


@pytest.mark.parametrize("case", [
    (lambda m, a, b: m.mm(a, b), [(2, 0), (0, 3)], ["bool", "bool"]),
    (lambda m, a, b: m.bmm(a, b), [(2, 1, 0), (2, 0, 3)], ["bool", "bool"]),
    (lambda m, a, b: m.matmul(a, b), [(2, 2, 0), (0, 3)], ["bool", "bool"]),
    (lambda m, a, b: m.bmm(a, b), [(2, 3, 0), (2, 0, 3)], ["float64", "float32"]),  # empty bmm: b's dtype
    (lambda m, a, b: m.matmul(a, b), [(1, 0, 5, 3), (1, 1, 3, 2)], ["float32", "float64"]),
    (lambda m, c, a, b: m.addmm(c, a, b), [(0, 1), (0, 4), (4, 2)], ["bool"] * 3),
    (lambda m, c, a, b: m.baddbmm(c, a, b, beta=2, alpha=0), [(5,), (2, 0, 5), (2, 5, 5)], ["bool"] * 3),
], ids=["mm-bool", "bmm-bool", "matmul-bool", "bmm-mixed", "matmul-mixed", "addmm-bool", "baddbmm-bool"])
def test_empty_products_run_no_kernel(case):
    fn, shapes, dtypes = case
    _same_result(fn, *[_rand(*s, dtype=d) for s, d in zip(shapes, dtypes)])


_F, _D = "float32", "float64"


@pytest.mark.parametrize("case", [
    ("addmm", [(2, 2), (2, 3), (3, 2)], [_D, _F, _F]),
    ("addmm", [(2, 2), (2, 3), (3, 2)], [_F, _D, _F]),
    ("addmm", [(2, 2), (2, 3), (4, 2)], [_F, _D, _F]),   # dtypes before shapes
    ("addmm", [(2, 2), (3,), (3, 2)], [_F, _F, _F]),
    ("addmm", [(1, 2, 2), (2, 3), (3, 2)], [_F, _F, _F]),  # input does not expand
    ("addmm", [(2, 2), (2, 3), (3, 2)], ["bool"] * 3),
    ("baddbmm", [(2, 2, 2), (2, 2, 3), (2, 3, 2)], [_D, _F, _F]),
    ("baddbmm", [(2, 2, 2), (2, 2, 3), (2, 3, 2)], [_F, _F, _D]),
    ("baddbmm", [(3, 2, 2), (2, 2, 3), (2, 3, 2)], [_F, _F, _F]),
    ("baddbmm", [(2, 2, 2), (2, 2, 3), (2, 3, 2)], ["bool"] * 3),
    ("addbmm", [(2, 2), (2, 2, 3), (2, 3, 2)], [_D, _F, _F]),
    ("addbmm", [(2, 2), (2, 2, 3), (2, 3, 2)], [_F, _D, _F]),
    ("addbmm", [(2, 2), (2, 2, 3), (3, 3, 2)], [_F, _F, _F]),
    ("addbmm", [(2, 2), (2, 2, 3), (2, 4, 2)], [_F, _F, _F]),
    ("addmv", [(2,), (2, 3), (3,)], [_D, _F, _F]),
    ("addmv", [(3,), (2, 3), (3,)], [_F, _F, _F]),
    ("addmv", [(2,), (3,), (3,)], [_F, _F, _F]),
    ("addr", [(2, 3), (2, 1), (3,)], [_F, _F, _F]),
], ids=lambda c: c[0] if isinstance(c, str) else None)
def test_add_product_refusals(case):
    name, shapes, dtypes = case
    _same_error(lambda m, *t: getattr(m, name)(*t), *[_rand(*s, dtype=d) for s, d in zip(shapes, dtypes)])


@pytest.mark.parametrize("case", [
    ([(2, 3), (4,)], [_F, _F]),                        # names the shapes as given, not the vector as a matrix
    ([(3,), (2, 3), (3, 4)], [_F, _F, _F]),
    ([(2, 4), (3, 3), (2, 2)], [_D, _D, _F]),          # the fit to the previous tensor before a later dtype
    ([(2, 3), (3, 4), (5, 2)], [_F, _D, _F]),
], ids=["last-vector", "first-vector", "shape-first", "dtype-first"])
def test_multi_dot_refusals(case):
    shapes, dtypes = case
    _same_error(lambda m, *t: m.linalg.multi_dot(list(t)), *[_rand(*s, dtype=d) for s, d in zip(shapes, dtypes)])


@pytest.mark.parametrize("case", [
    ([(3, 1), (3, 1)], ["bool", _F]), ([(4,), (4,)], ["int64", "int64"]), ([(4,), (1,)], [_D, _D]),
], ids=["bool-float", "int", "vector-sizes"])
def test_vecdot_refusals(case):
    shapes, dtypes = case
    _same_error(lambda m, a, b: m.linalg.vecdot(a, b), *[_rand(*s, dtype=d) for s, d in zip(shapes, dtypes)])


@pytest.mark.parametrize("dtypes", [("bool", "bool"), ("int64", _F), (_F, _D)], ids=["bool", "mixed", "float"])
def test_matmul_out_dtype_checked_first(dtypes):
    def fn(m, a, b):
        return m.matmul(a, b, out=m.empty(0, dtype=m.float16))
    _same_error(fn, _rand(2, 3, dtype=dtypes[0]), _rand(3, 2, dtype=dtypes[1]))


# ---- tensordot -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dims", [-1, 3, 1.0, (1, 0), ([1], 0), [[0], [0], [1]], ([1], [0, 1]), ([0, 0], [0, 1]),
                                  ([5], [0])],
                         ids=["negative", "too-many", "float", "ints", "int-other", "three", "lengths", "repeated",
                              "out-of-range"])
def test_tensordot_dims_refusals(dims):
    _same_error(lambda m, a, b: m.tensordot(a, b, dims), _rand(2, 5), _rand(5, 5))


@pytest.mark.parametrize("case", [
    ([(2, 3), (4, 5)], 1, [_F, _F]),          # names the dim as given (-1)
    ([(2, 5), (4, 3)], ([-1], [-2]), [_F, _F]),
    ([(2, 5), (5, 3)], 1, [_F, _D]),
    ([(2, 5), (5, 3)], 0, ["bool", "bool"]),
], ids=["size-int", "size-list", "mixed", "bool"])
def test_tensordot_refusals(case):
    shapes, dims, dtypes = case
    _same_error(lambda m, a, b: m.tensordot(a, b, dims), *[_rand(*s, dtype=d) for s, d in zip(shapes, dtypes)])


def test_tensordot_keeps_integers():
    _same_result(lambda m, a, b: m.tensordot(a, b, ([1], [0])), _rand(2, 5, dtype="int32"), _rand(5, 3, dtype="int32"))
    _same_result(lambda m, a, b: m.tensordot(a, b, 1), _rand(2, 0, dtype=bool), _rand(0, 3, dtype=bool))


# ---- cross, cdist --------------------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    (lambda m, a, b: m.cross(a, b, dim=0), ["bool", "bool"]),
    (lambda m, a, b: m.linalg.cross(a, b), [_F, _D]),
    (lambda m, a, b: m.cross(a, b, dim=-1), ["int32", _D]),
    (lambda m, a, b: m.linalg.cross(a, b), ["bool", _D]),
], ids=["bool", "mixed", "int-float", "bool-float"])
def test_cross_dtype_refusals(case):
    fn, dtypes = case
    _same_error(fn, _rand(3, 3, dtype=dtypes[0]), _rand(3, 3, dtype=dtypes[1]))


@pytest.mark.parametrize("p", [2.0, np.inf])
def test_cdist_of_no_columns(p):
    """Rows with no column are at distance 0 (p=inf raised: an empty max)."""
    check_op(*_both(lambda m, a, b: m.cdist(a, b, p=p)), [_rand(3, 0), _rand(2, 0)])


@pytest.mark.parametrize("case", [
    (["float16", "float16"], {}), (["bfloat16", "float32"], {}), ([_F, _D], {}), ([_D, _F], {"p": 1.0}),
    ([_D, _F], {"compute_mode": "use_mm_for_euclid_dist"}), ([_F, _F], {"compute_mode": "foo"}),
    ([_F, _F], {"compute_mode": None}),
    ([_F, "int64"], {}),
], ids=["half", "bfloat16-mixed", "mixed", "mixed-p1", "mixed-mm", "mode", "mode-none", "int-x2"])
def test_cdist_refusals(case):
    dtypes, kwargs = case

    def fn(m, a, b):
        return m.cdist(a.to(getattr(m, dtypes[0])), b.to(getattr(m, dtypes[1])), **kwargs)
    _same_error(fn, _rand(3, 2), _rand(4, 2))


# ---- the CUDA backend ----------------------------------------------------------------------------
@pytest.mark.parametrize("case", [
    (lambda m, c, a, b: m.addmv(c, a, b, beta=0, alpha=2), [(2,), (2, 4), (4,)]),
    (lambda m, c, a, b: m.addmm(c, a, b, alpha=0), [(2, 3), (2, 4), (4, 3)]),
    (lambda m, c, a, b: m.addr(c, a, b, beta=0), [(2, 3), (2,), (3,)]),
    (lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [2, 0]), [(2, 3), (3, 4)]),
    (lambda m, a, b: m.cdist(a, b, p=np.inf), [(3, 0), (2, 0)]),
], ids=["addmv", "addmm", "addr", "einsum", "cdist"])
def test_on_cuda(cuda, case):
    fn, shapes = case
    check_op(*_both(fn), [_rand(*s) for s in shapes], device="cuda")
