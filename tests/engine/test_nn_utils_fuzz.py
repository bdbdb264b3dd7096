"""engine.nn.init and engine.nn.utils against torch on what a differential fuzz of them (every initializer over odd
shapes, dtypes and generators; gradient clipping, parameter/vector conversion, the weight/spectral norms old and
new, parametrize, orthogonal, fusion, functional_call, the padding utilities) found different: trunc_normal_ with a
negative std, an unordered or infinite bound or a non-float dtype; orthogonal_ on dtypes its QR refuses and on
tensors it cannot view as a matrix; dirac_ with an empty kernel; clip_grad_norm_ of half gradients with an infinite
norm and a max_norm past the half range (nan gradients); the empty-tensor norms without an identity (dense and
sparse); the total norm of nothing in the default dtype; clip_grad_value_ past the dtype's range;
vector_to_parameters's dtype and aliasing; weight_norm's dim range; pad_sequence's dtype and broadcasting;
unpad_sequence's mask semantics and strict zip. Each case compares with torch itself, and a representative seeded
sample of the initializers is checked to be bit-for-bit torch's."""
import math
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.nn.init as EI
import engine.nn.utils.parametrizations
import engine.nn.utils.rnn as ER

pytestmark = pytest.mark.filterwarnings("ignore:mean is more than 2 std")

RNG = np.random.default_rng(26)


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value).replace("torch.", "engine.")


def _same_error(run):
    """``run(L)`` raises the same error type and message with engine as with torch."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _error(lambda: run(engine)), _error(lambda: run(torch))
    assert ours == theirs


def _init(L):
    return engine.nn.init if L is engine else torch.nn.init


def _array(t):
    t = t.detach()
    return (t.float() if t.dtype in (torch.bfloat16, engine.bfloat16) else t).numpy()


# ---- nn.init -------------------------------------------------------------------------------------------------

SAMPLE = [  # (initializer, args, shape, dtype, with a generator)
    ("uniform_", (-0.5, 2.0), (7, 3), "float32", False),
    ("normal_", (0.3, 1.7), (4, 5, 3), "float64", True),
    ("trunc_normal_", (0.0, 1.0, -2.0, 2.0), (9, 9), "bfloat16", True),
    ("trunc_normal_", (0.5, 0.3, -1.5, -0.5), (5, 4), "float16", False),
    ("trunc_normal_", (0.0, -1.0, -2.0, 2.0), (6, 5), "float32", False),
    ("xavier_uniform_", (0.5,), (6, 2, 3, 3), "float16", True),
    ("xavier_normal_", (2.0,), (3, 7), "float32", False),
    ("kaiming_uniform_", (math.sqrt(5), "fan_in", "leaky_relu"), (4, 4, 1, 3, 2), "float64", False),
    ("kaiming_normal_", (0, "FAN_OUT", "relu"), (7, 3), "bfloat16", True),
    ("sparse_", (0.3, 0.05), (9, 4), "float32", True),
]


@pytest.mark.parametrize("name, args, shape, dtype, with_generator", SAMPLE)
def test_initializer_is_torchs_bit_for_bit(name, args, shape, dtype, with_generator):
    tensors, after = [], []
    for L in (torch, engine):
        t = L.empty(shape, dtype=getattr(L, dtype))
        L.manual_seed(11)
        kwargs = {"generator": L.Generator().manual_seed(12)} if with_generator else {}
        getattr(_init(L), name)(t, *args, **kwargs)
        tensors.append(_array(t))
        after.append(L.rand(3).numpy())  # the global stream advanced as torch's
    np.testing.assert_array_equal(tensors[1], tensors[0])
    np.testing.assert_array_equal(after[1], after[0])


@pytest.mark.parametrize("std", [-1.0, -0.25])
def test_trunc_normal_negative_std_samples_as_torch(std):
    """torch's proposal sampler takes a negative std (its mass comes out negative): we raised."""
    values = []
    for L in (torch, engine):
        L.manual_seed(3)
        values.append(_init(L).trunc_normal_(L.empty(5, 3), 0.2, std, -1.0, 1.5).numpy())
    np.testing.assert_array_equal(values[1], values[0])


@pytest.mark.parametrize("dtype, bounds", [
    ("int64", (-2.0, 2.0)), ("int64", (1.0, 1.1)), ("complex64", (-2.0, 2.0)), ("complex64", (1.0, 1.1)),
    ("float32", (2.0, 1.0)), ("float32", (1.0, math.inf)), ("float16", (-1e6, -7e4)),
])
def test_trunc_normal_refusals(dtype, bounds):
    """An integer or complex tensor, bounds out of order or past the dtype's range: torch's errors, where we
    filled something."""
    _same_error(lambda L: _init(L).trunc_normal_(L.zeros(4, dtype=getattr(L, dtype)), 0.0, 1.0, *bounds))


def test_trunc_normal_zero_std_divides_by_zero():
    _same_error(lambda L: _init(L).trunc_normal_(L.zeros(4), 0.0, 0.0))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "int64", "bool", "complex64"])
def test_orthogonal_refuses_dtypes_as_torch(dtype):
    _same_error(lambda L: _init(L).orthogonal_(L.zeros(3, 4, dtype=getattr(L, dtype))))


def test_orthogonal_refuses_a_tensor_it_cannot_view():
    _same_error(lambda L: _init(L).orthogonal_(L.zeros(3, 4, 2).transpose(0, 1)))


@pytest.mark.parametrize("shape", [(3, 5), (5, 3)])
def test_orthogonal_through_a_transposed_view(shape):
    bases = []
    for L in (torch, engine):
        base = L.zeros(shape)
        L.manual_seed(4)
        _init(L).orthogonal_(base.t(), gain=0.5)
        bases.append(base.numpy())
    np.testing.assert_allclose(bases[1], bases[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3, 0, 2), (2, 3, 4, 0)])
def test_dirac_with_an_empty_kernel(shape):
    _same_error(lambda L: _init(L).dirac_(L.zeros(shape)))


# ---- gradient clipping -------------------------------------------------------------------------------------

def _with_grads(L, arrays, dtype):
    params = []
    for a in arrays:
        p = L.nn.Parameter(L.tensor(a, dtype=getattr(L, dtype)))
        p.grad = L.tensor(a * 3.0 - 0.5, dtype=getattr(L, dtype))
        params.append(p)
    return params


@pytest.mark.parametrize("dtype, max_norm, norm_type, infinite", [
    ("float16", 1e6, 2.0, True), ("bfloat16", 1e39, 1.0, True), ("float16", 7e4, math.inf, False),
    ("float16", 0.5, 2.0, True), ("bfloat16", 3.0, 3.0, False), ("float32", 1e39, 2.0, True),
])
def test_clip_grad_norm_of_half_gradients(dtype, max_norm, norm_type, infinite):
    """torch's coefficient is ``max_norm * reciprocal(total + 1e-6)``, each step in float32 for a half dtype: an
    infinite total norm gives 0 (finite gradients become 0). Our ``max_norm / total`` in the half dtype made a
    max_norm past its range inf, and inf / inf = nan: every gradient nan."""
    arrays = [RNG.standard_normal((4, 5)), RNG.standard_normal(3)]
    if infinite:
        arrays[0][1, 2] = np.inf
    results = []
    for L in (torch, engine):
        params = _with_grads(L, arrays, dtype)
        total = L.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
        results.append([_array(total)] + [_array(p.grad) for p in params])
        assert params[0].grad.dtype == getattr(L, dtype)
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("norm_type, foreach", [
    (math.inf, None), (math.inf, True), (math.inf, False), (-math.inf, None), (-1, False), (-0.5, True),
])
def test_total_norm_of_an_empty_tensor_without_identity(norm_type, foreach):
    _same_error(lambda L: L.nn.utils.get_total_norm([L.ones(2), L.zeros(0)], norm_type, foreach=foreach))


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
@pytest.mark.parametrize("foreach", [None, True, False])
@pytest.mark.parametrize("dense_first", [True, False])
def test_total_infinity_norm_of_an_empty_sparse_gradient(foreach, dense_first):
    """A sparse tensor (here with no stored values) is normed one by one even on torch's foreach path."""
    def run(L):
        sparse = L.sparse_coo_tensor(L.zeros(2, 0, dtype=L.int64), L.zeros(0), (3, 4))
        tensors = [L.zeros(0), sparse] if dense_first else [sparse, L.zeros(0)]
        L.nn.utils.get_total_norm(tensors, math.inf, foreach=foreach)
    _same_error(run)


@pytest.fixture
def float64_by_default():
    engine.set_default_dtype(engine.float64)
    torch.set_default_dtype(torch.float64)
    yield
    engine.set_default_dtype(engine.float32)
    torch.set_default_dtype(torch.float32)


def test_total_norm_of_nothing_is_in_the_default_dtype(float64_by_default):
    """torch's ``torch.tensor(0.0)``: we always made it float32."""
    for L in (torch, engine):
        assert L.nn.utils.get_total_norm([]).dtype == L.float64
        assert L.nn.utils.clip_grad_norm_([L.nn.Parameter(L.ones(2))], 1.0).dtype == L.float64


@pytest.mark.parametrize("dtype, clip_value", [("float16", 7e4), ("bfloat16", 1e39), ("float32", -1e39)])
def test_clip_grad_value_past_the_dtype_range(dtype, clip_value):
    _same_error(lambda L: L.nn.utils.clip_grad_value_(_with_grads(L, [np.ones(3)], dtype), clip_value))


@pytest.mark.parametrize("clip_value", [math.inf, 65504.0, float("nan"), -1.0])
def test_clip_grad_value_at_the_edges(clip_value):
    grads = []
    for L in (torch, engine):
        params = _with_grads(L, [np.array([70.0, -2.0, 0.25])], "float16")
        L.nn.utils.clip_grad_value_(params, clip_value)
        grads.append(params[0].grad.numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


# ---- parameters and vectors --------------------------------------------------------------------------------

@pytest.mark.parametrize("vec_dtype", ["float64", "float32", "bfloat16"])
def test_vector_to_parameters_takes_the_vectors_dtype_and_memory(vec_dtype):
    """torch sets each parameter's ``.data`` to a view of the vector: its dtype, and later writes to the vector
    show in the parameters. We copied into the parameters' own memory and dtype."""
    results = []
    values = RNG.standard_normal(11)
    for L in (torch, engine):
        params = [L.nn.Parameter(L.zeros(2, 3)), L.nn.Parameter(L.zeros(4, dtype=L.float16))]
        vec = L.tensor(values, dtype=getattr(L, vec_dtype))
        L.nn.utils.vector_to_parameters(vec, params)
        with L.no_grad():
            vec.mul_(2)
        results.append([(str(p.dtype).split(".")[1], _array(p)) for p in params])
        assert all(isinstance(p, L.nn.Parameter) and p.requires_grad for p in params)
    for (ours_dtype, ours), (theirs_dtype, theirs) in zip(results[1], results[0]):
        assert ours_dtype == theirs_dtype
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("length", [5, 12])
def test_vector_to_parameters_with_a_vector_of_another_size(length):
    def run(L):
        params = [L.nn.Parameter(L.zeros(2, 3))]
        L.nn.utils.vector_to_parameters(L.arange(float(length)), params)
        return params[0]
    if length < 6:
        _same_error(run)
    else:
        np.testing.assert_array_equal(run(engine).detach().numpy(), run(torch).detach().numpy())


def test_parameters_to_vector_refuses_a_parameter_it_cannot_view():
    _same_error(lambda L: L.nn.utils.parameters_to_vector([L.nn.Parameter(L.ones(3, 4).t())]))


# ---- weight_norm's dim -------------------------------------------------------------------------------------

@pytest.mark.parametrize("hook_based", [True, False])
@pytest.mark.parametrize("name, dim", [("bias", 1), ("bias", -2), ("weight", 2), ("weight", -3)])
def test_weight_norm_dim_out_of_range(hook_based, name, dim):
    """We wrapped the dim around the tensor's rank; torch refuses it."""
    def run(L):
        utils = L.nn.utils
        (utils.weight_norm if hook_based else utils.parametrizations.weight_norm)(L.nn.Linear(3, 2), name, dim=dim)
    _same_error(run)


# ---- pad_sequence ------------------------------------------------------------------------------------------

PAD_CASES = [  # (trailing shape and dtype of each sequence)
    [((3,), "float32"), ((3,), "float64"), ((3,), "float32")],
    [((2, 3), "float64"), ((1, 3), "float32"), ((2, 1), "float64")],
    [((3,), "float32"), ((1,), "float32")],
    [((), "float16"), ((), "float64")],
]


@pytest.mark.parametrize("case", range(len(PAD_CASES)))
@pytest.mark.parametrize("batch_first, padding_side", [(False, "right"), (True, "left")])
def test_pad_sequence_takes_the_first_dtype_and_broadcasts(case, batch_first, padding_side):
    """torch fills a tensor of the first sequence's dtype and trailing shape and copies each sequence in (cast and
    broadcast): we promoted the dtypes and refused broadcastable trailing shapes."""
    arrays = [(RNG.standard_normal((length,) + trailing), dtype)
              for length, (trailing, dtype) in zip((3, 1, 4), PAD_CASES[case])]
    results = []
    for L in (torch, engine):
        sequences = [L.tensor(a, dtype=getattr(L, d), requires_grad=True) for a, d in arrays]
        out = L.nn.utils.rnn.pad_sequence(sequences, batch_first, -1.5, padding_side)
        weights = L.arange(out.numel(), dtype=out.dtype).reshape(out.shape)
        (out * weights).sum().backward()
        results.append((str(out.dtype).split(".")[1], out.detach().numpy(),
                        [_array(s.grad) for s in sequences]))
    assert results[1][0] == results[0][0]
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-3)
    for ours, theirs in zip(results[1][2], results[0][2]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-3)


@pytest.mark.parametrize("shapes", [[(2, 3), (2, 4)], [(), ()]])
def test_pad_sequence_refusals(shapes):
    _same_error(lambda L: L.nn.utils.rnn.pad_sequence([L.ones(s) for s in shapes]))


@pytest.mark.parametrize("lengths", [[4, 1, 3], [5, -1, 2.5], [2, 2], [1, 2, 3, 4]])
@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_as_torchs_mask(lengths, batch_first):
    """torch keeps the steps ``t < length`` and zips strictly: we sliced ``[:length]`` (a negative length dropped
    steps from the end, a fractional one rounded down) and let a length list of another size through."""
    def run(L):
        leaf = L.tensor(np.arange(24.0).reshape(4, 3, 2), requires_grad=True)
        sequences = L.nn.utils.rnn.unpad_sequence(leaf * 1, L.tensor(lengths), batch_first=batch_first)
        sum(((s * (i + 1)).sum() for i, s in enumerate(sequences)), L.zeros(())).backward()
        return [s.detach().numpy() for s in sequences], leaf.grad.numpy()
    if len(lengths) != (4 if batch_first else 3):
        _same_error(run)
        return
    (ours, ours_grad), (theirs, theirs_grad) = run(engine), run(torch)
    assert [s.shape for s in ours] == [s.shape for s in theirs]
    for a, b in zip(ours + [ours_grad], theirs + [theirs_grad]):
        np.testing.assert_array_equal(a, b)


# ---- the CUDA backend --------------------------------------------------------------------------------------

def test_on_the_cuda_backend(cuda):
    """The clipping coefficient, orthogonal_'s write through a view, vector_to_parameters, pad_sequence and
    unpad_sequence (whose lengths we refused on the GPU) on device arrays."""
    param = engine.nn.Parameter(engine.ones(3, dtype=engine.float16, device="cuda"))
    param.grad = engine.full((3,), 100.0, dtype=engine.float16, device="cuda")
    engine.nn.utils.clip_grad_norm_([param], 1e6)
    np.testing.assert_array_equal(param.grad.cpu().numpy(), np.full(3, 100.0, np.float16))
    engine.nn.utils.clip_grad_norm_([param], 1.0)
    np.testing.assert_allclose(param.grad.cpu().numpy().astype(np.float32), np.full(3, 3 ** -0.5), rtol=1e-3)
    base = engine.zeros(3, 5, device="cuda")
    EI.orthogonal_(base.t())
    np.testing.assert_allclose((base @ base.t()).cpu().numpy(), np.eye(3), atol=1e-5)
    vec = engine.arange(3.0, device="cuda")
    engine.nn.utils.vector_to_parameters(vec, [param])
    assert param.dtype == engine.float32 and param.device.type == "cuda"
    out = ER.pad_sequence([engine.ones(2, 3, device="cuda"), engine.ones(1, 1, dtype=engine.float64, device="cuda")],
                          padding_side="left")
    assert out.device.type == "cuda" and out.dtype == engine.float32
    np.testing.assert_array_equal(out.cpu().numpy()[:, 1], [[0, 0, 0], [1, 1, 1]])
    sequences = ER.unpad_sequence(out, engine.tensor([2, 1], device="cuda"))
    assert [tuple(s.shape) for s in sequences] == [(2, 3), (1, 3)]
