"""engine.testing (torch.testing): assert_close's decisions and messages against torch's on the same inputs,
assert_allclose's deprecation, and make_tensor's ranges, layouts and errors."""

import numpy as np
import pytest
import torch

import engine
import engine.testing

_RNG = np.random.default_rng(7)
A = _RNG.standard_normal((3, 5)).astype(np.float32)
B = A.copy()
B[1, 2] += 1e-3
B[2, 4] = np.nan

# each case builds its inputs with the module it is given (torch or engine) and calls its testing.assert_close
CASES = {
    "float32 mismatch and nan": lambda m: m.testing.assert_close(m.tensor(A), m.tensor(B)),
    "equal_nan": lambda m: m.testing.assert_close(m.tensor(B), m.tensor(B.copy()), equal_nan=True),
    "nan not equal": lambda m: m.testing.assert_close(m.tensor(B), m.tensor(B.copy())),
    "within float32 tolerance": lambda m: m.testing.assert_close(m.tensor(A), m.tensor(A * (1 + 1e-6))),
    "int64": lambda m: m.testing.assert_close(m.tensor([1, 2, 3]), m.tensor([1, 5, 0])),
    "uint8": lambda m: m.testing.assert_close(m.tensor([3, 7], dtype=m.uint8), m.tensor([1, 9], dtype=m.uint8)),
    "bool tensors": lambda m: m.testing.assert_close(m.tensor([True, False]), m.tensor([True, True])),
    "float16": lambda m: m.testing.assert_close(m.tensor(A).half(), m.tensor(B).half()),
    "float16 close": lambda m: m.testing.assert_close(m.tensor(A).half(), m.tensor(A * (1 + 4e-4)).half()),
    "bfloat16": lambda m: m.testing.assert_close(m.tensor(A).bfloat16(), (m.tensor(A) * 1.05).bfloat16()),
    "bfloat16 close": lambda m: m.testing.assert_close(m.tensor(A).bfloat16(), (m.tensor(A) * 1.001).bfloat16()),
    "float64 batch": lambda m: m.testing.assert_close(m.tensor(A[None].repeat(2, 0).astype(np.float64)),
                                                      m.tensor(A[None].repeat(2, 0).astype(np.float64) + 1e-6)),
    "dtype checked": lambda m: m.testing.assert_close(m.tensor(A), m.tensor(A).double()),
    "dtype promoted": lambda m: m.testing.assert_close(m.tensor(A), m.tensor(A).double(), check_dtype=False),
    "int vs int32 promoted": lambda m: m.testing.assert_close(m.tensor([3, 7, 0]), m.tensor([1, 3, 0]).int(),
                                                              check_dtype=False),
    "shape": lambda m: m.testing.assert_close(m.tensor(A), m.tensor(A[0])),
    "0-d tensors": lambda m: m.testing.assert_close(m.tensor(1.5), m.tensor(1.0)),
    "infinities": lambda m: m.testing.assert_close(m.tensor([np.inf, 1.0]), m.tensor([np.inf, 0.0])),
    "expected zero": lambda m: m.testing.assert_close(m.tensor([0.0, 1.0]), m.tensor([1e-3, 0.0])),
    "given tolerances": lambda m: m.testing.assert_close(m.tensor(A), m.tensor(B), rtol=0.1, atol=0.1),
    "zero tolerances say equal": lambda m: m.testing.assert_close(m.tensor(A), m.tensor(A + 1e-7), rtol=0, atol=0),
    "stride checked": lambda m: m.testing.assert_close(m.tensor(A).t(), m.tensor(A).t().contiguous(),
                                                       check_stride=True),
    "stride not checked": lambda m: m.testing.assert_close(m.tensor(A).t(), m.tensor(A).t().contiguous()),
    "nested": lambda m: m.testing.assert_close([m.tensor(A), {"x": 1.0, "y": m.tensor(A)}],
                                               [m.tensor(A), {"x": 1.0, "y": m.tensor(B)}]),
    "tuple and list": lambda m: m.testing.assert_close((1, 2.5), [1, 2.5]),
    "mapping keys": lambda m: m.testing.assert_close({"a": 1, "b": 2}, {"a": 1, "c": 2}),
    "sequence length": lambda m: m.testing.assert_close([1, 2], [1]),
    "floats": lambda m: m.testing.assert_close(1.0, 1.1),
    "floats close": lambda m: m.testing.assert_close(1.0, 1.0 + 1e-8),
    "int vs float": lambda m: m.testing.assert_close(1, 1.0),
    "int vs float unchecked": lambda m: m.testing.assert_close(1, 1.0, check_dtype=False),
    "numpy numbers": lambda m: m.testing.assert_close(np.float32(1.0), np.float32(1.5)),
    "numpy arrays": lambda m: m.testing.assert_close(A, B),
    "one tolerance": lambda m: m.testing.assert_close(m.tensor(A), m.tensor(A), rtol=1e-3),
    "one tolerance atol": lambda m: m.testing.assert_close(1.0, 1.0, atol=1e-3),
    "msg string": lambda m: m.testing.assert_close(m.tensor(A), m.tensor(B), msg="boom"),
    "msg callable": lambda m: m.testing.assert_close([m.tensor(A)], [m.tensor(B)], msg=lambda s: "H\n" + s),
    "None": lambda m: m.testing.assert_close(None, 1),
    "None both": lambda m: m.testing.assert_close(None, None),
    "booleans": lambda m: m.testing.assert_close(True, False),
    "numpy bool": lambda m: m.testing.assert_close(np.bool_(True), True),
    "strings": lambda m: m.testing.assert_close("a", "a"),
    "requires grad": lambda m: m.testing.assert_close(m.tensor(A, requires_grad=True), m.tensor(B)),
}


def _outcome(case, module):
    try:
        case(module)
    except Exception as error:  # the type and the message are what is compared
        return f"{type(error).__name__}: {error}".replace("torch.", "engine.")
    return "passed"


# torch's first assert_close takes ~2 s (it imports its distributed tensor support), hence slow
@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_assert_close_matches_torch(name):
    assert _outcome(CASES[name], engine) == _outcome(CASES[name], torch)


def test_message_layout():
    """torch's layout, as test_assert_close_matches_torch checks against torch itself (in the slow subset)."""
    with pytest.raises(AssertionError) as info:
        engine.testing.assert_close([engine.tensor(A)], [engine.tensor(B)])
    assert str(info.value) == (
        "Tensor-likes are not close!\n\nMismatched elements: 2 / 15 (13.3%)\n"
        "Greatest absolute difference: nan at index (2, 4) (up to 1e-05 allowed)\n"
        "Greatest relative difference: nan at index (2, 4) (up to 1.3e-06 allowed)\n\n"
        "The failure occurred for item [0]")
    with pytest.raises(AssertionError, match=r"^Scalars are not close!\n\nExpected 1.0 but got 1.5.\n"
                                             r"Absolute difference: 0.5 \(up to 1e-07 allowed\)\n"
                                             r"Relative difference: 0.5 \(up to 1e-07 allowed\)$"):
        engine.testing.assert_close(1.5, 1.0)
    engine.testing.assert_close({"a": (1, engine.tensor(A))}, {"a": [1, engine.tensor(A * (1 + 1e-7))]})


def test_mixed_tensor_and_array_is_a_type_error():
    with pytest.raises(TypeError, match="No comparison pair was able to handle inputs of type <class "
                                        "'engine.tensor.Tensor'> and <class 'numpy.ndarray'>"):
        engine.testing.assert_close(engine.tensor(A), A)


def test_subclasses():
    class Sub(engine.Tensor):
        pass

    sub = engine.tensor(A).as_subclass(Sub) if hasattr(engine.Tensor, "as_subclass") else None
    if sub is None:
        pytest.skip("engine.Tensor has no as_subclass")
    engine.testing.assert_close(sub, engine.tensor(A))
    with pytest.raises(TypeError, match="No comparison pair"):
        engine.testing.assert_close(sub, engine.tensor(A), allow_subclasses=False)


def test_device_mismatch_on_the_cuda_emulation(cuda):
    on_gpu = engine.tensor(A, device="cuda")
    engine.testing.assert_close(on_gpu, engine.tensor(A, device="cuda"))
    with pytest.raises(AssertionError, match="The values for attribute 'device' do not match: cuda:0 != cpu."):
        engine.testing.assert_close(on_gpu, engine.tensor(A))
    engine.testing.assert_close(on_gpu, engine.tensor(A), check_device=False)
    with pytest.raises(AssertionError, match="Mismatched elements: 2 / 15"):
        engine.testing.assert_close(on_gpu, engine.tensor(B, device="cuda"))


@pytest.mark.slow  # torch's assert_close, as above
@pytest.mark.parametrize("close", [True, False])
def test_assert_allclose_warns_and_decides_as_torch(close):
    other = A * (1 + 5e-5) if close else A * 1.01
    outcomes = []
    for module in (engine, torch):
        with pytest.warns(FutureWarning, match=r"`torch.testing.assert_allclose\(\)` is deprecated since 1.12"):
            outcomes.append(_outcome(lambda m: m.testing.assert_allclose(m.tensor(A), other.tolist()), module))
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0] == "passed") == close


# ---- make_tensor ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype, low, high", [("float32", -9, 9), ("float64", -9, 9), ("float16", -9, 9),
                                              ("bfloat16", -9, 9), ("int64", -9, 9), ("int8", -9, 9),
                                              ("uint8", 0, 9), ("bool", 0, 1)])
def test_make_tensor_default_ranges(dtype, low, high):
    engine.manual_seed(0)
    t = engine.testing.make_tensor(4, 257, dtype=getattr(engine, dtype), device="cpu")
    values = t.float().numpy()
    assert t.dtype == getattr(engine, dtype) and tuple(t.shape) == (4, 257)
    assert values.min() >= low and values.max() <= high
    assert values.min() < low + 1 and values.max() > high - 1  # the whole range is used


def test_make_tensor_bounds_grad_and_layouts():
    engine.manual_seed(1)
    t = engine.testing.make_tensor((3, 5), dtype=engine.float32, device="cpu", low=-1, high=1, requires_grad=True)
    assert t.requires_grad and t.is_leaf and -1 <= t.min().item() and t.max().item() < 1
    big = engine.testing.make_tensor(1000, dtype=engine.float16, device="cpu", low=-1e9, high=1e9)
    assert np.isfinite(big.float().numpy()).all() and abs(big.float()).max().item() > 1000  # clamped, not inf
    ints = engine.testing.make_tensor(200, dtype=engine.int8, device="cpu", low=-1000, high=1000)
    assert ints.min().item() >= -128 and ints.max().item() <= 127
    nc = engine.testing.make_tensor(2, 3, dtype=engine.float32, device="cpu", noncontiguous=True)
    assert tuple(nc.shape) == (2, 3) and not nc.is_contiguous()
    single = engine.testing.make_tensor(1, dtype=engine.float32, device="cpu", noncontiguous=True)
    assert single.is_contiguous()
    cl = engine.testing.make_tensor(2, 3, 4, 5, dtype=engine.float32, device="cpu", memory_format=engine.channels_last)
    assert cl.is_contiguous(memory_format=engine.channels_last)
    nz = engine.testing.make_tensor(500, dtype=engine.int64, device="cpu", low=-1, high=1, exclude_zero=True)
    assert (nz.numpy() != 0).all()
    tiny = engine.testing.make_tensor(500, dtype=engine.float32, device="cpu", low=0, high=1e-40,
                                      exclude_zero=True)
    assert (tiny.numpy() != 0).all()
    with pytest.warns(FutureWarning, match="Passing `low==high` to `torch.testing.make_tensor`"):
        engine.testing.make_tensor(2, dtype=engine.float32, device="cpu", low=1, high=1)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(dtype="int64", requires_grad=True), ValueError,
     "`requires_grad=True` is not supported for boolean and integral dtypes, but got dtype=engine.int64"),
    (dict(low=3, high=2), ValueError, "`low` must be less than `high`, but got 3 >= 2"),
    (dict(low=float("nan")), ValueError, "`low` and `high` cannot be NaN, but got low=nan and high=9"),
    (dict(dtype="uint8", low=-20, high=-10), ValueError,
     r"The value interval specified by `low` and `high` is \[-20, -10\), but engine.uint8 only supports \[0, 256\)"),
    (dict(noncontiguous=True, memory_format="channels_last"), ValueError,
     "The parameters `noncontiguous` and `memory_format` are mutually exclusive"),
])
def test_make_tensor_errors_match_torch(kwargs, error, message):
    def call(module):
        options = dict(kwargs, dtype=getattr(module, kwargs.get("dtype", "float32")))
        if "memory_format" in options:
            options["memory_format"] = getattr(module, options["memory_format"])
        return module.testing.make_tensor(2, 2, device="cpu", **options)

    with pytest.raises(error, match=message):
        call(engine)
    with pytest.raises(error, match=message.replace("engine.", "torch.")):
        call(torch)
