"""engine.nn.attention.flex_attention against PyTorch's: forward values against torch's flex_attention (run
eagerly on the CPU, which refuses inputs that need gradients), gradients of query, key, value and of a tensor
captured by score_mod against torch's eager reference (``torch._higher_order_ops.flex_attention.
math_attention``, the same vmapped math, through which torch's autograd runs); BlockMask, create_mask,
create_block_mask and the mask combinators against torch's; errors in torch's words."""
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention.flex_attention as TFA
from torch._higher_order_ops.flex_attention import math_attention

import engine
import engine.nn.attention.flex_attention as FA
from op_check import assert_close, check_op

pytestmark = pytest.mark.slow  # torch's flex_attention compiles each call on the CPU (~0.3 s)

DTYPES = [np.float32, np.float64]


@pytest.fixture(autouse=True)
def _quiet():
    """torch warns (once) that flex_attention runs without torch.compile."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        yield


def _rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _tol(dtype):
    return 2e-5 if dtype == np.float32 else 1e-10


def _lib(x):
    return torch if isinstance(x, torch.Tensor) else engine


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _sliding(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() <= 2


def _late_rows(b, h, q_idx, kv_idx):
    """Rows 0 and 1 see nothing; batch 1 also drops even keys (a per-batch mask)."""
    return (q_idx >= kv_idx + 2) & ((b == 0) | (kv_idx % 2 == 1))


def _relative(score, b, h, q_idx, kv_idx):
    return score + 0.1 * (q_idx - kv_idx) - 0.05 * h


def _softcap(score, b, h, q_idx, kv_idx):
    return 2.0 * _lib(score).tanh(score / 2.0)


def _score_masking(score, b, h, q_idx, kv_idx):
    return _lib(score).where(kv_idx <= q_idx + 1, score, float("-inf"))


def _block_masks(mask_mod, B, H, L, S, block):
    return (FA.create_block_mask(mask_mod, B, H, L, S, device="cpu", BLOCK_SIZE=block),
            TFA.create_block_mask(mask_mod, B, H, L, S, device="cpu", BLOCK_SIZE=block))


# name: (q, k, v shapes, score_mod, (mask_mod, B, H, BLOCK_SIZE) or None, keywords)
CASES = {
    "plain": ([(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)], None, None, {}),
    "relative_scale": ([(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)], _relative, None, {"scale": 0.3}),
    "softcap_causal": ([(2, 2, 9, 4), (2, 2, 7, 4), (2, 2, 7, 3)], _softcap, (_causal, None, None, 4), {}),
    "sliding_tiles": ([(2, 2, 9, 4), (2, 2, 11, 4), (2, 2, 11, 3)], None, (_sliding, None, 2, (2, 3)), {}),
    "dead_rows_per_batch": ([(2, 2, 5, 3), (2, 2, 7, 3), (2, 2, 7, 3)], None, (_late_rows, 2, None, 2), {}),
    "score_masking": ([(2, 2, 5, 3), (2, 2, 4, 3), (2, 2, 4, 3)], _score_masking, None, {}),
    "gqa": ([(2, 4, 5, 4), (2, 2, 6, 4), (2, 2, 6, 5)], _relative, (_causal, None, None, 2), {"enable_gqa": True}),
    "kv_batch_broadcast": ([(3, 2, 5, 4), (1, 2, 6, 4), (1, 2, 6, 5)], None, (_causal, 3, 2, 3), {}),
}


def _case_inputs(name, dtype):
    shapes, score_mod, mask, kwargs = CASES[name]
    arrays = [_rand(*s, seed=i, dtype=dtype) for i, s in enumerate(shapes)]
    masks = (None, None) if mask is None else _block_masks(mask[0], mask[1], mask[2], shapes[0][2], shapes[1][2],
                                                           mask[3])
    return arrays, score_mod, masks, kwargs


@pytest.mark.parametrize("name,dtype", [("plain", np.float32), ("sliding_tiles", np.float32),
                                        ("dead_rows_per_batch", np.float32), ("gqa", np.float64),
                                        ("score_masking", np.float64)])
def test_values_and_lse_match_torch_flex_attention(name, dtype):
    """torch's flex_attention itself (each call ~0.3 s: the other cases compare with its eager math below)."""
    arrays, score_mod, (ours_mask, their_mask), kwargs = _case_inputs(name, dtype)
    ours = FA.flex_attention(*[engine.from_numpy(a) for a in arrays], score_mod=score_mod, block_mask=ours_mask,
                             return_aux=FA.AuxRequest(lse=True), **kwargs)
    theirs = TFA.flex_attention(*[torch.from_numpy(a) for a in arrays], score_mod=score_mod, block_mask=their_mask,
                                return_aux=TFA.AuxRequest(lse=True), **kwargs)
    assert ours[0].dtype == getattr(engine, str(theirs[0].dtype).split(".")[-1])
    assert ours[1].lse.dtype == getattr(engine, str(theirs[1].lse.dtype).split(".")[-1])
    assert ours[1].max_scores is None
    assert_close(ours[0].numpy(), theirs[0].numpy(), _tol(dtype))
    assert_close(ours[1].lse.numpy(), theirs[1].lse.numpy(), _tol(dtype), "lse")


def _reference(q, k, v, score_mod, block_mask, scale, dtype):
    """torch's eager flex math (differentiable): output and the natural-log lse."""
    out, lse, _ = math_attention(q, k, v, score_mod or (lambda s, b, h, m, n: s), block_mask.as_tuple(), scale, {})
    return out, lse * math.log(2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["relative_scale", "softcap_causal", "sliding_tiles", "dead_rows_per_batch",
                                  "score_masking", "gqa", "kv_batch_broadcast"])
def test_gradients_match_torch_reference(name, dtype):
    """Values and the gradients of query, key and value (fully masked rows included: zeros)."""
    arrays, score_mod, (ours_mask, their_mask), kwargs = _case_inputs(name, dtype)
    if their_mask is None:
        L, S = arrays[0].shape[2], arrays[1].shape[2]
        their_mask = TFA.create_block_mask(TFA.noop_mask, None, None, L, S, device="cpu")
        ours_mask = FA.create_block_mask(FA.noop_mask, None, None, L, S, device="cpu")
    scale = kwargs.get("scale", 1 / math.sqrt(arrays[0].shape[-1]))
    check_op(lambda q, k, v: FA.flex_attention(q, k, v, score_mod, ours_mask, **kwargs),
             lambda q, k, v: _reference(q, k, v, score_mod, their_mask, scale, dtype)[0], arrays, rtol=_tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradients_reach_a_captured_bias_and_through_lse(dtype):
    """A learned (H, L, S) bias indexed by (h, q_idx, kv_idx) gets its gradient, as do q, k and v through both
    the output and the log-sum-exp."""
    q, k, v, bias = _rand(2, 3, 5, 4, dtype=dtype), _rand(2, 3, 6, 4, seed=1, dtype=dtype), \
        _rand(2, 3, 6, 7, seed=2, dtype=dtype), _rand(3, 5, 6, seed=3, dtype=dtype)
    ours_mask, their_mask = _block_masks(_sliding, None, None, 5, 6, 2)

    def ours(q, k, v, bias):
        out, aux = FA.flex_attention(q, k, v, lambda s, b, h, m, n: s + bias[h, m, n], ours_mask,
                                     return_aux=FA.AuxRequest(lse=True))
        return out, aux.lse

    def theirs(q, k, v, bias):
        return _reference(q, k, v, lambda s, b, h, m, n: s + bias[h, m, n], their_mask, 0.5, dtype)

    check_op(ours, theirs, [q, k, v, bias], rtol=_tol(dtype))


def test_fully_masked_rows_give_zero_output_lse_minus_inf_and_finite_gradients():
    q, k, v = (engine.from_numpy(_rand(1, 2, 4, 3, seed=s)).requires_grad_() for s in range(3))
    mask = FA.create_block_mask(lambda b, h, m, n: m >= 2, 1, 2, 4, 4, device="cpu", BLOCK_SIZE=2)
    out, aux = FA.flex_attention(q, k, v, block_mask=mask, return_aux=FA.AuxRequest(lse=True))
    lse = aux.lse
    assert not out.detach().numpy()[:, :, :2].any()
    assert np.all(np.isneginf(lse.detach().numpy()[:, :, :2]))
    (out.sum() + lse[:, :, 2:].sum()).backward()
    assert np.isfinite(q.grad.numpy()).all() and not q.grad.numpy()[:, :, :2].any()


def test_max_scores_and_deprecated_return_lse():
    arrays, score_mod, (ours_mask, their_mask), _ = _case_inputs("softcap_causal", np.float64)
    e_in, t_in = [engine.from_numpy(a) for a in arrays], [torch.from_numpy(a) for a in arrays]
    out, aux = FA.flex_attention(*e_in, score_mod, ours_mask, return_aux=FA.AuxRequest(lse=False, max_scores=True))
    assert aux.lse is None
    _, _, their_max = math_attention(*t_in, score_mod, their_mask.as_tuple(), 0.5, {})
    assert_close(aux.max_scores.numpy(), (their_max * math.log(2)).numpy(), 1e-12)
    FA._WARNINGS_SHOWN.discard("deprecated_return_lse")
    with pytest.warns(FutureWarning, match="return_lse is deprecated"):
        out2, lse = FA.flex_attention(*e_in, score_mod, ours_mask, return_lse=True)
    with pytest.warns(FutureWarning):
        TFA._WARNINGS_SHOWN.discard("deprecated_return_lse")
        _, their_lse = TFA.flex_attention(*t_in, score_mod, their_mask, return_lse=True)
    assert_close(lse.numpy(), their_lse.numpy(), 1e-12)
    np.testing.assert_array_equal(out.numpy(), out2.numpy())


def test_from_kv_blocks_skips_missing_tiles_and_keeps_full_tiles_unmasked():
    """A hand-made BlockMask: partial tiles apply mask_mod, full tiles do not, missing tiles are skipped (the
    compiled kernels' semantics), checked against torch's math on the equivalent element mask."""
    num = np.array([[[1, 2, 1]]], np.int32)
    idx = np.array([[[[0, 0, 0], [0, 2, 0], [1, 0, 0]]]], np.int32)
    full_num = np.array([[[1, 0, 1]]], np.int32)
    full_idx = np.array([[[[2, 0, 0], [0, 0, 0], [2, 0, 0]]]], np.int32)
    ours_mask = FA.BlockMask.from_kv_blocks(*[engine.from_numpy(a) for a in (num, idx, full_num, full_idx)],
                                            BLOCK_SIZE=(2, 3), mask_mod=_causal, seq_lengths=(6, 8))
    their_mask = TFA.BlockMask.from_kv_blocks(*[torch.from_numpy(a) for a in (num, idx, full_num, full_idx)],
                                              BLOCK_SIZE=(2, 3), mask_mod=_causal, seq_lengths=(6, 8))
    for name in ("q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        np.testing.assert_array_equal(getattr(ours_mask, name).numpy(), getattr(their_mask, name).numpy())
    tiles = np.zeros((3, 3), bool)
    tiles[[0, 1, 1, 2], [0, 0, 2, 1]] = True
    full = np.zeros((3, 3), bool)
    full[[0, 2], [2, 2]] = True
    rows, cols = np.arange(6)[:, None] // 2, np.arange(8)[None, :] // 3
    element = (tiles[rows, cols] & (np.arange(6)[:, None] >= np.arange(8)[None, :])) | full[rows, cols]
    dense = torch.from_numpy(element)
    reference = TFA.create_block_mask(lambda b, h, m, n: dense[m, n], None, None, 6, 8, device="cpu")
    arrays = [_rand(2, 1, n, 4, seed=s) for s, n in enumerate((6, 8, 8))]
    check_op(lambda q, k, v: FA.flex_attention(q, k, v, block_mask=ours_mask),
             lambda q, k, v: _reference(q, k, v, None, reference, 0.5, np.float64)[0], arrays, rtol=1e-10)


@pytest.mark.parametrize("block,sizes,separate", [(128, (1, 1, 5, 7), True), (2, (2, 3, 9, 7), True),
                                                  ((3, 2), (1, 2, 10, 9), False), (4, (None, 2, 16, 16), True)])
def test_create_block_mask_matches_torch(block, sizes, separate):
    def mask_mod(lib):
        return lib.and_masks(_causal, lambda b, h, m, n: (m - n) <= 4 + h)
    ours = FA.create_block_mask(mask_mod(FA), *sizes, device="cpu", BLOCK_SIZE=block, separate_full_blocks=separate)
    theirs = TFA.create_block_mask(mask_mod(TFA), *sizes, device="cpu", BLOCK_SIZE=block,
                                   separate_full_blocks=separate)
    for name in FA.BlockMask._TENSOR_ATTRS:
        ours_t, theirs_t = getattr(ours, name), getattr(theirs, name)
        assert (ours_t is None) == (theirs_t is None), name
        if theirs_t is not None:
            assert ours_t.dtype == engine.int32, name
            np.testing.assert_array_equal(ours_t.numpy(), theirs_t.numpy(), err_msg=name)
    assert ours.shape == theirs.shape and ours.BLOCK_SIZE == theirs.BLOCK_SIZE
    assert ours.seq_lengths == theirs.seq_lengths and ours.numel() == theirs.numel()
    assert ours.sparsity() == pytest.approx(theirs.sparsity())
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())
    assert str(ours) == str(theirs)
    assert repr(ours).replace("engine.Size", "torch.Size") == repr(theirs)
    assert ours.to_string(grid_size=2, limit=2) == theirs.to_string(grid_size=2, limit=2)
    assert ours.to_string(grid_size=-1) == theirs.to_string(grid_size=-1)
    ours_tuple, theirs_tuple = ours.as_tuple(), theirs.as_tuple()
    assert len(ours_tuple) == len(theirs_tuple) and ours_tuple[-3:-1] == theirs_tuple[-3:-1]
    assert ours.as_tuple(flatten=False)[0] == theirs.as_tuple(flatten=False)[0]


@pytest.mark.parametrize("index", [0, -1, (0, 1), (slice(None), slice(None), 1), (slice(None), 1, -1),
                                   (slice(None), slice(None), slice(1, None)),
                                   (slice(None), slice(None), slice(0, None, 2))])
def test_block_mask_indexing_matches_torch(index):
    ours, theirs = _block_masks(_causal, 2, 2, 9, 7, 2)
    ours_part, theirs_part = ours[index], theirs[index]
    assert ours_part.shape == theirs_part.shape
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks",
                 "q_indices"):
        np.testing.assert_array_equal(getattr(ours_part, name).numpy(), getattr(theirs_part, name).numpy())
    with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
        FA.flex_attention(*[engine.zeros(2, 2, ours_part.shape[-2], 3)] * 3, block_mask=ours_part)
    with pytest.raises(IndexError, match="BlockMask indexing supports batch, head, and Q-block dimensions"):
        ours[0, 0, 0, 0]


def test_adjust_crops_to_the_upper_left():
    ours, theirs = _block_masks(_causal, None, None, 12, 12, 4)
    ours, theirs = ours._adjust(8, 6), theirs._adjust(8, 6)
    assert ours.shape == theirs.shape
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "q_num_blocks", "q_indices"):
        np.testing.assert_array_equal(getattr(ours, name).numpy(), getattr(theirs, name).numpy())


@pytest.mark.parametrize("B,H", [(None, None), (2, 3)])
def test_create_mask_and_combinators_match_torch(B, H):
    def mods(lib):
        return {"noop": lib.noop_mask, "and": lib.and_masks(_causal, _sliding),
                "or": lib.or_masks(_late_rows, _sliding), "empty_and": lib.and_masks(), "empty_or": lib.or_masks(),
                "score_mod": _score_masking}
    for (name, mod), their_mod in zip(mods(FA).items(), mods(TFA).values()):
        ours = FA.create_mask(mod, B, H, 5, 6, device="cpu")
        theirs = TFA.create_mask(their_mod, B, H, 5, 6, device="cpu")
        assert ours.dtype == engine.bool, name
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=name)


def _qkv(q=(1, 2, 4, 3), k=(1, 2, 5, 3), v=(1, 2, 5, 3)):
    return engine.zeros(*q), engine.zeros(*k), engine.zeros(*v)


def test_errors_in_torchs_words():
    # each message checked against torch's text for the same mistake
    cases = [
        (ValueError, "same embedding dimension but got E=3 and E=4", lambda: FA.flex_attention(*_qkv(k=(1, 2, 5, 4)))),
        (NotImplementedError, "NYI: query, key, and value must be 4D tensors",
         lambda: FA.flex_attention(*_qkv((2, 4, 3), (2, 5, 3), (2, 5, 3)))),
        (ValueError, r"same number of heads but got Hq=2 and Hkv=1. Try setting enable_gqa=True",
         lambda: FA.flex_attention(*_qkv(k=(1, 1, 5, 3), v=(1, 1, 5, 3)))),
        (ValueError, "multiple of kv heads for GQA but got Hq=3 and Hkv=2",
         lambda: FA.flex_attention(*_qkv(q=(1, 3, 4, 3)), enable_gqa=True)),
        (ValueError, "or non-none block_mask, but got block_mask=None, Bq=2, and Bkv=1",
         lambda: FA.flex_attention(*_qkv(q=(2, 2, 4, 3)))),
        (RuntimeError, "block_mask was created for a smaller length",
         lambda: FA.flex_attention(*_qkv(), block_mask=FA.create_block_mask(_causal, 1, 1, 4, 4, "cpu"))),
        (RuntimeError, "block_mask was created for a larger length",
         lambda: FA.flex_attention(*_qkv(), block_mask=FA.create_block_mask(_causal, 1, 1, 4, 6, "cpu"))),
        (ValueError, "Cannot specify both return_lse and return_aux",
         lambda: FA.flex_attention(*_qkv(), return_lse=True, return_aux=FA.AuxRequest(lse=True))),
        (ValueError, "Invalid BACKEND value 'CUTLASS'",
         lambda: FA.flex_attention(*_qkv(), kernel_options={"BACKEND": "CUTLASS"})),
        (AssertionError, "Expected 4 or 5 positional args, got 3",
         lambda: FA.create_mask(lambda b, h, m: m, 1, 1, 2, 2, "cpu")),
        (AssertionError, "create-block_mask requires a mask_mod function",
         lambda: FA.create_block_mask(_relative, 1, 1, 2, 2, "cpu")),
        (RuntimeError, "All inputs should be callable mask_mods", lambda: FA.or_masks(_causal, 3)),
        (RuntimeError, "All inputs should be callable mask_mods", lambda: FA.and_masks(1)),
        (RuntimeError, "BlockMask must have at least 2 dimensions",
         lambda: FA.BlockMask.from_kv_blocks(engine.ones(1, dtype=engine.int32), engine.zeros(1, dtype=engine.int32))),
    ]
    for error, message, call in cases:
        with pytest.raises(error, match=message):
            call()


def test_on_cuda(cuda):
    """Forward and every gradient on the CUDA backend (block mask and captured bias on the device)."""
    q, k, v, bias = _rand(2, 2, 5, 4, dtype=np.float32), _rand(2, 2, 6, 4, seed=1, dtype=np.float32), \
        _rand(2, 2, 6, 3, seed=2, dtype=np.float32), _rand(2, 5, 6, seed=3, dtype=np.float32)
    ours_mask = FA.create_block_mask(_sliding, None, None, 5, 6, device="cpu", BLOCK_SIZE=2).to("cuda")
    assert ours_mask.kv_indices.device.type == "cuda"
    np.testing.assert_array_equal(
        FA.create_block_mask(_sliding, None, None, 5, 6, device="cuda", BLOCK_SIZE=2).kv_indices.cpu().numpy(),
        ours_mask.kv_indices.cpu().numpy())
    their_mask = TFA.create_block_mask(_sliding, None, None, 5, 6, device="cpu", BLOCK_SIZE=2)
    check_op(lambda q, k, v, bias: FA.flex_attention(q, k, v, lambda s, b, h, m, n: s + bias[h, m, n], ours_mask),
             lambda q, k, v, bias: _reference(q, k, v, lambda s, b, h, m, n: s + bias[h, m, n], their_mask, 0.5,
                                              np.float32)[0], [q, k, v, bias], rtol=2e-5, device="cuda")
