"""blas.gemm: products and accumulating products on matrices read in place (row windows, transposed
views), through OpenBLAS's cblas where it is loaded and numpy otherwise, against float64 numpy."""
import numpy as np
import pytest

from engine.backends.cpu import blas


def _operand(rng, shape, dtype, layout):
    """A matrix of ``shape``: contiguous, a window of longer rows, or a transposed view."""
    if layout == "window":
        return rng.standard_normal((shape[0], shape[1] + 7)).astype(dtype)[:, 3:3 + shape[1]]
    if layout == "transposed":
        return rng.standard_normal(shape[::-1]).astype(dtype).T
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("a_layout, b_layout", [("contiguous", "contiguous"), ("window", "transposed"),
                                                ("transposed", "window")])
@pytest.mark.parametrize("accumulate", [False, True])
def test_gemm_matches_numpy(dtype, a_layout, b_layout, accumulate):
    rng = np.random.default_rng([3, accumulate, len(a_layout), len(b_layout)])
    a, b = _operand(rng, (13, 29), dtype, a_layout), _operand(rng, (29, 11), dtype, b_layout)
    out = rng.standard_normal((13, 11)).astype(dtype)
    expected = a.astype(np.float64) @ b.astype(np.float64) + (out if accumulate else 0)
    assert blas.gemm(a, b, out, accumulate=accumulate) is out
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    assert np.abs(out - expected).max() <= rtol * np.abs(expected).max()


@pytest.mark.parametrize("every_other", [False, True])
def test_gemm_into_a_window_of_longer_rows(every_other):
    """An output window of longer rows gets the product and keeps the rest of its rows alone, with
    operands cblas reads in place and with every-other-element ones (numpy's)."""
    rng = np.random.default_rng([4, every_other])
    a = rng.standard_normal((12, 18)).astype(np.float32)
    a = a[::2, ::2] if every_other else a[:6, :9]
    b = rng.standard_normal((9, 5)).astype(np.float32)
    rows = np.zeros((6, 9), np.float32)
    blas.gemm(a, b, rows[:, 2:7], accumulate=True)
    assert np.allclose(rows[:, 2:7], a @ b, rtol=1e-5, atol=1e-5)
    assert not rows[:, :2].any() and not rows[:, 7:].any()


def test_gemm_of_float16_matrices():
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal(shape).astype(np.float16) for shape in ((6, 9), (9, 5)))
    out = np.empty((6, 5), np.float16)
    blas.gemm(a, b, out)
    assert np.allclose(out, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_gemm_into_an_operand():
    """An output that is also an operand gets the product of the operands as they were."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((700, 700)).astype(np.float32)  # bigger than BLAS's packed blocks
    b = rng.standard_normal((700, 700)).astype(np.float32)
    expected = a.astype(np.float64) @ b + a
    blas.gemm(a, b, a, accumulate=True)
    assert np.abs(a - expected).max() <= 1e-5 * np.abs(expected).max()


def test_gemm_with_an_empty_inner_dimension():
    out = np.ones((3, 2), np.float32)
    blas.gemm(np.empty((3, 0), np.float32), np.empty((0, 2), np.float32), out, accumulate=True)
    assert np.array_equal(out, np.ones((3, 2)))
    blas.gemm(np.empty((3, 0), np.float32), np.empty((0, 2), np.float32), out)
    assert not out.any()


def test_gemm_names_mismatched_shapes():
    with pytest.raises(ValueError, match=r"\(3, 4\) @ \(5, 2\) do not give \(3, 2\)"):
        blas.gemm(np.ones((3, 4), np.float32), np.ones((5, 2), np.float32), np.empty((3, 2), np.float32))


@pytest.mark.skipif(blas.threads() is None, reason="numpy is not linked to OpenBLAS here")
def test_cblas_is_found_for_both_float_types():
    assert set(blas._find_gemm()) == {np.dtype(np.float32), np.dtype(np.float64)}
