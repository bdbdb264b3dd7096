"""engine.nn.attention against torch.nn.attention: SDPBackend, sdpa_kernel (which backend lists run and which
raise torch's errors on the CPU, restoring, priority, decorator use) and the causal biases of
engine.nn.attention.bias as SDPA masks (values and every gradient for L < S, L == S, L > S, GQA)."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention as TA
import torch.nn.attention.bias as TB
import torch.nn.functional as TF

import engine
import engine.nn.attention as A
import engine.nn.attention.bias as B
import engine.nn.functional as F
from op_check import assert_close, check_op

DTYPES = [np.float32, np.float64]


def _rand(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _tol(dtype):
    return 2e-5 if dtype == np.float32 else 1e-10


def test_sdpbackend_members_and_values_are_torchs():
    assert {name: int(member) for name, member in A.SDPBackend.__members__.items()} == \
        {name: int(member) for name, member in TA.SDPBackend.__members__.items()}
    assert str(A.SDPBackend.FLASH_ATTENTION) == str(TA.SDPBackend.FLASH_ATTENTION)
    assert A.WARN_FOR_UNFUSED_KERNELS is False
    assert set(A.__all__) <= set(TA.__all__)


def _names(backends):
    return [b.name for b in backends]


@pytest.mark.parametrize("set_priority", [False, True])
def test_sdpa_kernel_records_restores_and_orders_like_torch(set_priority):
    lists = [[A.SDPBackend.MATH], [A.SDPBackend.EFFICIENT_ATTENTION, A.SDPBackend.FLASH_ATTENTION],
             A.SDPBackend.CUDNN_ATTENTION, [], [A.SDPBackend.OVERRIDEABLE, A.SDPBackend.MATH]]
    before = _names(A._cur_sdpa_kernel_backends(with_priority=True))
    assert before == _names(TA._cur_sdpa_kernel_backends(with_priority=True))
    for backends in lists:
        theirs = [getattr(TA.SDPBackend, b.name) for b in backends] if isinstance(backends, list) else \
            getattr(TA.SDPBackend, backends.name)
        with A.sdpa_kernel(backends, set_priority=set_priority) as ours_state, \
                TA.sdpa_kernel(theirs, set_priority=set_priority):
            assert ours_state == {}
            for priority in (False, True):
                assert _names(A._cur_sdpa_kernel_backends(priority)) == \
                    _names(TA._cur_sdpa_kernel_backends(priority))
        assert _names(A._cur_sdpa_kernel_backends(with_priority=True)) == before


def test_sdpa_kernel_as_a_decorator_and_its_argument_check():
    @A.sdpa_kernel(A.SDPBackend.EFFICIENT_ATTENTION)
    def restricted():
        return _names(A._cur_sdpa_kernel_backends())

    assert restricted() == ["EFFICIENT_ATTENTION"] == restricted()
    assert "MATH" in _names(A._cur_sdpa_kernel_backends())
    with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a list of SDPBackend "
                                             "instances, got tuple"):
        with A.sdpa_kernel((A.SDPBackend.MATH,)):
            pass


def _t(*shape, seed=0):
    return _rand(*shape, seed=seed, dtype=np.float32)


# inputs on which torch's CPU flash kernel runs or refuses: (q, k, v shapes, keywords)
CPU_CASES = {
    "4d": ([(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4)], {}),
    "3d": ([(3, 5, 4), (3, 7, 4), (3, 7, 4)], {}),
    "gqa": ([(2, 4, 5, 4), (2, 2, 7, 4), (2, 2, 7, 4)], {"enable_gqa": True}),
    "causal_mask": ([(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4)], {"is_causal": True}),
    "2d": ([(5, 4), (7, 4), (7, 4)], {}),
    "5d": ([(1, 2, 3, 5, 4), (1, 2, 3, 7, 4), (1, 2, 3, 7, 4)], {}),
    "value_dim": ([(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6)], {}),
    "batch_broadcast": ([(2, 3, 5, 4), (1, 3, 7, 4), (1, 3, 7, 4)], {}),
    "dropout": ([(2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 4)], {"dropout_p": 0.5}),
}
BACKEND_LISTS = [["MATH"], ["FLASH_ATTENTION"], ["EFFICIENT_ATTENTION"], ["CUDNN_ATTENTION"], ["OVERRIDEABLE"],
                 ["ERROR"], [], ["FLASH_ATTENTION", "EFFICIENT_ATTENTION"], ["MATH", "CUDNN_ATTENTION"]]


def _outcome(lib, attention, functional, names, shapes, kwargs):
    """("ok", output) or (error type, message, warning texts) of SDPA under sdpa_kernel(names)."""
    inputs = [lib.from_numpy(_t(*s, seed=i)) for i, s in enumerate(shapes)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with attention.sdpa_kernel([getattr(attention.SDPBackend, n) for n in names]):
                kwargs = dict(kwargs, dropout_p=0.0) if names == ["MATH"] else kwargs
                return "ok", functional.scaled_dot_product_attention(*inputs, **kwargs)
        except RuntimeError as error:
            return type(error), str(error), [str(w.message).split(" (Triggered internally")[0] for w in caught]


@pytest.mark.parametrize("case", list(CPU_CASES))
def test_backend_lists_on_the_cpu_run_or_raise_as_torch(case):
    shapes, kwargs = CPU_CASES[case]
    for names in BACKEND_LISTS:
        ours = _outcome(engine, A, F, names, shapes, kwargs)
        theirs = _outcome(torch, TA, TF, names, shapes, kwargs)
        assert ours[0] == theirs[0], (case, names, ours[1:], theirs[1:])
        if ours[0] == "ok":
            if not kwargs.get("dropout_p"):
                assert_close(ours[1].numpy(), theirs[1].numpy(), 2e-5, f"{case} {names}")
        else:
            assert ours[1:] == theirs[1:], (case, names)


def test_fused_backends_stand_in_on_cuda(cuda):
    """On CUDA a fused backend list runs the math implementation; a list of nothing runnable raises."""
    q, k, v = (engine.from_numpy(_t(2, 3, 5, 4, seed=s)).to("cuda") for s in range(3))
    expected = F.scaled_dot_product_attention(q, k, v).cpu().numpy()
    for backend in (A.SDPBackend.FLASH_ATTENTION, A.SDPBackend.EFFICIENT_ATTENTION, A.SDPBackend.CUDNN_ATTENTION):
        with A.sdpa_kernel(backend):
            np.testing.assert_array_equal(F.scaled_dot_product_attention(q, k, v).cpu().numpy(), expected)
    with A.sdpa_kernel(A.SDPBackend.OVERRIDEABLE), pytest.raises(RuntimeError, match="No viable backend"):
        F.scaled_dot_product_attention(q, k, v)


# (L, S) for the biases, with the heads of q and of k/v
BIAS_CASES = {"wide": (5, 8, 3, 3), "square": (6, 6, 2, 2), "tall": (7, 4, 2, 2), "gqa_wide": (3, 6, 4, 2)}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", ["causal_upper_left", "causal_lower_right"])
@pytest.mark.parametrize("case", list(BIAS_CASES))
def test_causal_bias_as_sdpa_mask_matches_torch(case, variant, dtype):
    L, S, hq, hkv = BIAS_CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lower right with L > S: both warn of NaNs (the rows come out zero)
        ours, theirs = getattr(B, variant)(L, S), getattr(TB, variant)(L, S)
    gqa = hq != hkv
    inputs = [_rand(2, hq, L, 5, dtype=dtype), _rand(2, hkv, S, 5, seed=1, dtype=dtype),
              _rand(2, hkv, S, 3, seed=2, dtype=dtype)]
    check_op(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, ours, scale=0.4, enable_gqa=gqa),
             lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, theirs, scale=0.4, enable_gqa=gqa),
             inputs, rtol=_tol(dtype))
    np.testing.assert_array_equal(ours._materialize().numpy(), theirs._materialize().numpy())
    assert ours.variant.name == theirs.variant.name and int(ours.variant) == int(theirs.variant)
    assert (ours.seq_len_q, ours.seq_len_kv) == (theirs.seq_len_q, theirs.seq_len_kv)


def test_causal_bias_repr_warnings_and_errors_in_torchs_words():
    assert repr(B.causal_lower_right(3, 4)) == repr(engine.ones(3, 4, dtype=engine.bool).tril(1))
    with pytest.warns(UserWarning, match="Lower right causal bias will produce NaNs in the output when "
                                         "seq_len_q > seq_len_kv!"):
        B.causal_lower_right(4, 3)
    q = engine.zeros(1, 1, 3, 2)
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        F.scaled_dot_product_attention(q, q, q, B.causal_upper_left(3, 3), is_causal=True)
    with pytest.raises(AssertionError, match="variant must be a CausalVariant, got int"):
        B.CausalBias(1, 2, 3)
    with pytest.raises(AssertionError, match="causal_upper_left only supports 2D tensors"):
        B.causal_upper_left(2)
    with pytest.raises(AssertionError, match="causal_lower_right only supports 2D tensors"):
        B.causal_lower_right(2, 3, 4)


def test_unfused_kernel_warnings_and_the_backend_switch_apply_to_biases():
    q, k = engine.zeros(1, 1, 3, 2), engine.zeros(1, 1, 5, 2)
    A.WARN_FOR_UNFUSED_KERNELS = True
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            F.scaled_dot_product_attention(q, k, k, B.causal_lower_right(3, 5))
    finally:
        A.WARN_FOR_UNFUSED_KERNELS = False
    assert [str(w.message).split(":")[0] for w in caught] == ["Efficient attention can't be used because",
                                                               "Flash attention can't be used because"]
    with A.sdpa_kernel(A.SDPBackend.EFFICIENT_ATTENTION), pytest.raises(RuntimeError, match="No viable backend"):
        F.scaled_dot_product_attention(q, k, k, B.causal_lower_right(3, 5))


def test_causal_bias_on_cuda(cuda):
    inputs = [_t(2, 2, 4, 3), _t(2, 2, 6, 3, seed=1), _t(2, 2, 6, 5, seed=2)]
    ours, theirs = B.causal_lower_right(4, 6), TB.causal_lower_right(4, 6)
    check_op(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, ours),
             lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, theirs), inputs, rtol=2e-5, device="cuda")
