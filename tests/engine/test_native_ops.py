"""aten's native norms, dropout, SyncBatchNorm kernels, ``convolution``, ``conv_tbc``, ``grid_sampler_2d/3d``
and the legacy norms, against torch (the SyncBatchNorm kernels, CUDA-only in torch, against torch's
batch norm and its gradient)."""
import warnings

import numpy as np
import pytest
import torch

import engine
from engine.ops import (aten_convolution, aten_sampling, legacy_norms, native_norms,
                        sync_batch_norm_kernels as K)
from op_check import check_op

RNG = np.random.default_rng(0)


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _t(a):
    return torch.from_numpy(a.copy())


def _e(a):
    return engine.from_numpy(a.copy())


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_outputs_stats_and_running(training):
    x, w, b = _r(3, 4, 5), _r(4), _r(4)
    rm, rv = _r(4), np.abs(_r(4)) + 0.5
    ours_rm, ours_rv, theirs_rm, theirs_rv = _e(rm), _e(rv), _t(rm), _t(rv)
    check_op(lambda x, w, b: native_norms.native_batch_norm(x, w, b, ours_rm, ours_rv, training, 0.1, 1e-5)[0],
             lambda x, w, b: torch.native_batch_norm(x, w, b, theirs_rm, theirs_rv, training, 0.1, 1e-5)[0],
             [x, w, b], rtol=1e-5)
    ours = native_norms.native_batch_norm(_e(x), _e(w), _e(b), None if training else _e(rm),
                                          None if training else _e(rv), training, 0.1, 1e-5)
    theirs = torch.native_batch_norm(_t(x), _t(w), _t(b), None if training else _t(rm),
                                     None if training else _t(rv), training, 0.1, 1e-5)
    for o, t in zip(ours[1:], theirs[1:]):
        assert tuple(o.shape) == tuple(t.shape) and not o.requires_grad
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5)
    np.testing.assert_allclose(ours_rm.numpy(), theirs_rm.numpy(), rtol=1e-5)
    np.testing.assert_allclose(ours_rv.numpy(), theirs_rv.numpy(), rtol=1e-5)


def test_native_layer_norm():
    x, w, b = _r(2, 3, 4, 5), _r(4, 5), _r(4, 5)
    check_op(lambda x, w, b: native_norms.native_layer_norm(x, [4, 5], w, b, 1e-5)[0],
             lambda x, w, b: torch.native_layer_norm(x, [4, 5], w, b, 1e-5)[0], [x, w, b])
    ours = native_norms.native_layer_norm(_e(x), [4, 5], None, None, 1e-5)
    theirs = torch.native_layer_norm(_t(x), [4, 5], None, None, 1e-5)
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-4, atol=1e-6)


def test_native_norms_in_bfloat16():
    x = _r(2, 3, 4)
    check_op(lambda x: native_norms.native_layer_norm(x, [4], None, None, 1e-5),
             lambda x: torch.native_layer_norm(x, [4], None, None, 1e-5), [x], rtol=2e-2, grad=False,
             dtype="bfloat16")
    check_op(lambda x: native_norms.native_group_norm(x, None, None, 2, 3, 4, 3, 1e-5),
             lambda x: torch.native_group_norm(x, None, None, 2, 3, 4, 3, 1e-5), [x], rtol=2e-2, grad=False,
             dtype="bfloat16")


def test_native_group_norm_with_differentiable_stats():
    x, w, b = _r(3, 6, 7), _r(6), _r(6)
    check_op(lambda x, w, b: native_norms.native_group_norm(x, w, b, 3, 6, 7, 2, 1e-5),
             lambda x, w, b: torch.native_group_norm(x, w, b, 3, 6, 7, 2, 1e-5), [x, w, b], rtol=1e-4)


def test_native_group_norm_bad_size():
    with pytest.raises(RuntimeError, match="Expected input to have"):
        native_norms.native_group_norm(_e(_r(3, 6, 7)), None, None, 3, 6, 8, 2, 1e-5)


def test_native_dropout_matches_torch_draws_and_gradient():
    x = _r(5, 7)
    engine.manual_seed(3)
    torch.manual_seed(3)
    check_op(lambda x: native_norms.native_dropout(x, 0.4, True),
             lambda x: torch.native_dropout(x, 0.4, True), [x])
    out, mask = native_norms.native_dropout(_e(x), 0.4, False)
    assert mask.dtype is engine.bool and bool(mask.all()) and np.array_equal(out.numpy(), x)
    out, mask = native_norms.native_dropout(_e(x), 1.0, None)
    assert not bool(mask.any()) and not out.numpy().any()
    with pytest.raises(ValueError, match="dropout probability"):
        native_norms.native_dropout(_e(x), 1.5, True)


def test_native_norm():
    x = _r(3, 4, 5)
    check_op(lambda x: native_norms.native_norm(x), lambda x: torch.linalg.vector_norm(x), [x])
    check_op(lambda x: native_norms.native_norm(x, 3, [1], True, None),
             lambda x: torch.linalg.vector_norm(x, 3, [1], True), [x], rtol=1e-5)


# ---- SyncBatchNorm kernels ----------------------------------------------------------------------------------
def _split_stats(parts, eps):
    stats = [K.batch_norm_stats(_e(p), eps) for p in parts]
    return engine.stack([s[0] for s in stats]), engine.stack([s[1] for s in stats])


def test_sync_batch_norm_forward_matches_batch_norm():
    x, w, b = _r(5, 3, 4, 2), _r(3), _r(3)
    rm, rv = np.zeros(3, np.float32), np.ones(3, np.float32)
    parts, counts = [x[:2], x[2:]], [2 * 8, 3 * 8]
    means, invstds = _split_stats(parts, 1e-5)
    ours_rm, ours_rv = _e(rm), _e(rv)
    mean, invstd = K.batch_norm_gather_stats_with_counts(_e(x), means, invstds, ours_rm, ours_rv, 0.1, 1e-5,
                                                         engine.tensor(counts, dtype=engine.float32))
    y = K.batch_norm_elemt(_e(x), _e(w), _e(b), mean, invstd, 1e-5)
    theirs_rm, theirs_rv = _t(rm), _t(rv)
    ref = torch.nn.functional.batch_norm(_t(x), theirs_rm, theirs_rv, _t(w), _t(b), True, 0.1, 1e-5)
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ours_rm.numpy(), theirs_rm.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours_rv.numpy(), theirs_rv.numpy(), rtol=1e-5)
    equal_means, equal_invstds = _split_stats([x[:1], x[1:2]], 1e-5)
    gathered = K.batch_norm_gather_stats(_e(x), equal_means, equal_invstds, None, None, 0.1, 1e-5, 8)
    direct = K.batch_norm_stats(_e(x[:2]), 1e-5)
    for o, t in zip(gathered, direct):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5)


def test_sync_batch_norm_backward_matches_batch_norm_gradient():
    x, w, b, dy = _r(4, 3, 5), _r(3), _r(3), _r(4, 3, 5)
    tx, tw, tb = (_t(a).requires_grad_() for a in (x, w, b))
    torch.nn.functional.batch_norm(tx, None, None, tw, tb, True, 0.1, 1e-5).backward(_t(dy))
    mean, invstd = K.batch_norm_stats(_e(x), 1e-5)
    sum_dy, sum_dy_xmu, gw, gb = K.batch_norm_backward_reduce(_e(dy), _e(x), mean, invstd, _e(w), True, True, True)
    gx = K.batch_norm_backward_elemt(_e(dy), _e(x), mean, invstd, _e(w), sum_dy, sum_dy_xmu,
                                     engine.tensor([20], dtype=engine.int32))
    np.testing.assert_allclose(gx.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gw.numpy(), tw.grad.numpy(), rtol=1e-4)
    np.testing.assert_allclose(gb.numpy(), tb.grad.numpy(), rtol=1e-5)
    assert K.batch_norm_backward_reduce(_e(dy), _e(x), mean, invstd, None, False, False, False) == (None,) * 4


def test_batch_norm_update_stats():
    x = _r(4, 3, 5)
    rm, rv = engine.zeros(3), engine.ones(3)
    mean, var = K.batch_norm_update_stats(_e(x), rm, rv, 0.2)
    np.testing.assert_allclose(mean.numpy(), x.mean((0, 2)), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(var.numpy(), x.var((0, 2)), rtol=1e-5)  # torch returns the biased variance
    np.testing.assert_allclose(rv.numpy(), 0.8 + 0.2 * x.var((0, 2), ddof=1), rtol=1e-5)
    with pytest.raises(RuntimeError, match="at least 2 dims"):
        K.batch_norm_stats(_e(_r(3)), 1e-5)


def test_sync_batch_norm_kernels_on_cuda(cuda):
    x = _r(4, 3, 5)
    mean, invstd = K.batch_norm_stats(_e(x).cuda(), 1e-5)
    y = K.batch_norm_elemt(_e(x).cuda(), None, None, mean, invstd, 1e-5)
    assert y.device.type == "cuda"
    ref = torch.nn.functional.batch_norm(_t(x), None, None, None, None, True, 0.1, 1e-5)
    np.testing.assert_allclose(y.cpu().numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)


# ---- convolution, conv_tbc, grid samplers ------------------------------------------------------------------
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_convolution(rank, transposed):
    spatial = (5, 4, 3)[:rank]
    x = _r(2, 4, *spatial)
    w = _r(4, 3, *(2,) * rank) if transposed else _r(6, 2, *(2,) * rank)
    b = _r(6 if transposed else 6)
    args = ([2] * rank, [1] * rank, [1] * rank, transposed, [1] * rank if transposed else [0] * rank, 2)
    check_op(lambda x, w, b: aten_convolution.convolution(x, w, b, *args),
             lambda x, w, b: torch.convolution(x, w, b, *args), [x, w, b], rtol=1e-4)


def test_convolution_rank_mismatch():
    with pytest.raises(RuntimeError, match="Expected 4-dimensional input for 4-dimensional weight"):
        aten_convolution.convolution(_e(_r(1, 2, 5)), _e(_r(3, 2, 2, 2)), None, [1], [0], [1], False, [0], 1)


def test_conv_tbc():
    assert engine.nn.functional.conv_tbc is aten_convolution.conv_tbc
    check_op(lambda x, w, b: aten_convolution.conv_tbc(x, w, b, 2), lambda x, w, b: torch.conv_tbc(x, w, b, 2),
             [_r(7, 2, 4), _r(3, 4, 5), _r(5)], rtol=1e-5)


@pytest.mark.parametrize("shapes, message", [
    (((3, 4), (2, 4, 5), (5,)), "Input must have 3 dims"),
    (((3, 2, 4), (2, 4), (5,)), "Weight tensor must have 3 dims"),
    (((3, 2, 4), (2, 4, 5), (5, 1)), "Bias must be 1-D"),
    (((3, 2, 4), (2, 3, 5), (5,)), "is not == dim 1 in the weight"),
    (((3, 2, 4), (2, 4, 5), (6,)), "Bias size must equal dim 2")])
def test_conv_tbc_errors(shapes, message):
    with pytest.raises(RuntimeError, match=message):
        aten_convolution.conv_tbc(*(_e(_r(*s)) for s in shapes))


def test_grid_sampler_2d_and_3d():
    grid2 = np.tanh(_r(2, 3, 4, 2))
    check_op(lambda x, g: aten_sampling.grid_sampler_2d(x, g, 0, 1, False),
             lambda x, g: torch.grid_sampler_2d(x, g, 0, 1, False), [_r(2, 3, 5, 6), grid2], rtol=1e-4)
    grid3 = np.tanh(_r(2, 2, 3, 2, 3))
    grid3[0, 0, 0, 0] = (1.3, -1.2, 0.999)  # outside the volume: padding at work
    for mode in (0, 1):
        for padding in (0, 1, 2):
            for align in (False, True):
                check_op(lambda x, g: aten_sampling.grid_sampler_3d(x, g, mode, padding, align),
                         lambda x, g: torch.grid_sampler_3d(x, g, mode, padding, align), [_r(2, 3, 4, 5, 3), grid3],
                         rtol=1e-4)
    with pytest.raises(RuntimeError, match="expected 4D input and grid"):
        aten_sampling.grid_sampler_2d(_e(_r(1, 2, 3, 3, 3)), _e(grid3), 0, 0, False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        aten_sampling.grid_sampler_3d(_e(_r(2, 3, 4, 5, 3)), _e(grid3), 2, 0, False)
    with pytest.raises(RuntimeError, match="expected grid to have size 3 in last dimension"):
        aten_sampling.grid_sampler_3d(_e(_r(2, 3, 4, 5, 3)), _e(grid3[..., :2]), 0, 0, False)
    with pytest.raises(RuntimeError, match="expected grid and input to have same batch size"):
        aten_sampling.grid_sampler_3d(_e(_r(1, 3, 4, 5, 3)), _e(grid3), 0, 0, False)


def test_grid_sampler_3d_on_cuda(cuda):
    grid = np.tanh(_r(2, 2, 3, 2, 3))
    check_op(lambda x, g: aten_sampling.grid_sampler_3d(x, g, 0, 2, False),
             lambda x, g: torch.grid_sampler_3d(x, g, 0, 2, False), [_r(2, 3, 4, 5, 3), grid], rtol=1e-4,
             device="cuda")


# ---- legacy norms -----------------------------------------------------------------------------------------
def test_frobenius_and_nuclear_norms_warn_and_match():
    x = _r(3, 4, 5)
    with pytest.warns(UserWarning, match="frobenius_norm is deprecated"):
        check_op(lambda x: legacy_norms.frobenius_norm(x, [1, 2], True),
                 lambda x: torch.frobenius_norm(x, [1, 2], True), [x])
    with pytest.warns(UserWarning, match="nuclear_norm is deprecated"):
        check_op(lambda x: legacy_norms.nuclear_norm(x, [0, 2]), lambda x: torch.nuclear_norm(x, [0, 2]), [x],
                 rtol=1e-4)
        check_op(lambda x: legacy_norms.nuclear_norm(x, True), lambda x: torch.nuclear_norm(x, True), [x[0]],
                 rtol=1e-4)
    with pytest.raises(RuntimeError, match="Expected at most 2 dimensions"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        legacy_norms.frobenius_norm(_e(x), [0, 1, 2])


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_norm_except_dim(dim):
    check_op(lambda v: legacy_norms.norm_except_dim(v, 3, dim), lambda v: torch.norm_except_dim(v, 3, dim),
             [_r(3, 4, 5)], rtol=1e-5)


def test_norm_except_dim_out_of_range():
    with pytest.raises(IndexError, match="Dimension out of range"):
        legacy_norms.norm_except_dim(_e(_r(3, 4)), 2, 5)


def test_embedding_renorm_():
    w, idx = _r(6, 3) * 3, np.array([0, 2, 2, 5])
    ours, theirs = _e(w), _t(w)
    assert legacy_norms.embedding_renorm_(ours, engine.from_numpy(idx), 1.5, 2.0) is ours
    torch.embedding_renorm_(theirs, torch.from_numpy(idx), 1.5, 2.0)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_chain_matmul():
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        check_op(lambda a, b, c: legacy_norms.chain_matmul(a, b, c), lambda a, b, c: torch.chain_matmul(a, b, c),
                 [_r(3, 2), _r(2, 4), _r(4, 2)], rtol=1e-5)
    with pytest.raises(RuntimeError, match="Expected one or more matrices"), pytest.warns(UserWarning):
        legacy_norms.chain_matmul()
    with pytest.raises(RuntimeError, match="Tensor dimension is 1, expected 2"), pytest.warns(UserWarning):
        legacy_norms.chain_matmul(_e(_r(3)))


def test_functional_grid_sample_takes_5d_inputs():
    grid = np.tanh(_r(2, 2, 3, 2, 3))
    check_op(lambda x, g: engine.nn.functional.grid_sample(x, g, "bilinear", "border", align_corners=False),
             lambda x, g: torch.nn.functional.grid_sample(x, g, "bilinear", "border", align_corners=False),
             [_r(2, 3, 4, 5, 3), grid], rtol=1e-4)
    with pytest.raises(RuntimeError, match="expected 4D or 5D input and grid with same number of dimensions"):
        engine.nn.functional.grid_sample(_e(_r(2, 3, 4)), _e(grid), align_corners=False)
