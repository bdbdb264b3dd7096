"""Activations and softmax against PyTorch: values, gradients, in-place variants, errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import check_op, noncontiguous

rng = np.random.default_rng(0)


def rand(*shape, low=-3.0, high=3.0, dtype=np.float32):
    return rng.uniform(low, high, shape).astype(dtype)


# name -> (kwargs); each is called as F.name(x, **kwargs) on both sides
ACTIVATIONS = {
    "relu": {}, "relu6": {}, "leaky_relu": {"negative_slope": 0.2}, "elu": {"alpha": 0.7},
    "selu": {}, "celu": {"alpha": 1.3}, "gelu": {}, "silu": {}, "mish": {}, "hardswish": {},
    "hardsigmoid": {}, "hardtanh": {"min_val": -0.5, "max_val": 1.5}, "softplus": {"beta": 2, "threshold": 3},
    "softsign": {}, "tanhshrink": {}, "logsigmoid": {}, "hardshrink": {"lambd": 0.7},
    "softshrink": {"lambd": 0.4}, "sigmoid": {}, "tanh": {}, "threshold": {"threshold": 0.3, "value": -2.0},
    "rrelu": {"lower": 0.1, "upper": 0.3},
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activation(name, dtype):
    kw = ACTIVATIONS[name]
    x = rand(2, 3, 5, 7, dtype=dtype)
    x.flat[:4] = [0.0, 3.0, -3.0, 25.0]  # kinks and the softplus threshold
    check_op(lambda t: getattr(F, name)(t, **kw), lambda t: getattr(TF, name)(t, **kw), [x],
             rtol=1e-5 if dtype == np.float32 else 1e-7)


def test_hardsigmoid_float64_gradient_is_torchs_bit_for_bit():
    """torch scales the float64 gradient by float32's 1/6 (0.16666667163...), not float64's."""
    x = rand(3, 50, dtype=np.float64)
    ours = engine.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    F.hardsigmoid(ours).sum().backward()
    TF.hardsigmoid(theirs).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_gelu_tanh_and_noncontiguous():
    x = noncontiguous(rand(6, 9))
    check_op(lambda t: F.gelu(t, approximate="tanh"), lambda t: TF.gelu(t, approximate="tanh"), [x])
    check_op(F.gelu, TF.gelu, [x])


INPLACE = ["relu", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "hardswish",
           "hardsigmoid", "hardtanh", "threshold", "rrelu"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_on_non_leaf(name):
    kw = ACTIVATIONS[name]
    x = rand(4, 6)
    x.flat[0] = 0.0

    def run(lib, fn):
        leaf = lib.tensor(x, requires_grad=True)
        h = leaf * 2
        out = fn(h, inplace=True, **kw)
        assert out is h
        (out * out).sum().backward()
        return out.detach().numpy(), leaf.grad.numpy()

    ours, theirs = run(engine, getattr(F, name)), run(torch, getattr(TF, name))
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5, atol=1e-5)


def test_relu_inplace_shares_memory_and_versions():
    a = engine.tensor(rand(3, 4))
    arr = a._data
    out = engine.relu_(a)
    assert out is a and out._data is arr and (arr >= 0).all()
    leaf = engine.tensor(rand(3, 4), requires_grad=True)
    h = leaf + 0
    h.relu_()
    h.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), (leaf.detach().numpy() > 0).astype(np.float32))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.relu_()
    y = (leaf + 0).relu()
    z = y * leaf
    y.relu_()  # mul saved y: its backward must notice, like PyTorch
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_relu_gradient_at_zero_and_int():
    check_op(engine.relu, torch.relu, [np.array([-1.0, 0.0, 2.0], np.float32)])
    check_op(lambda t: t.relu(), lambda t: t.relu(), [np.array([-1, 0, 2], np.int64)])


def test_relu_gradient_split_over_threads():
    """A gradient big enough to be split among the CPU threads, with zeros in the input (gradient 0)."""
    x = rand(2, 8, 130, 129)
    x[0, 1, :5] = 0.0
    assert x.nbytes > 1 << 20
    check_op(engine.relu, torch.relu, [x])


def test_relu_keeps_nan_infinities_and_negative_zero_like_torch():
    special = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, -2.5, 1.5], np.float32)
    for step in (1, 2):  # the contiguous fast path and the general (strided) one
        for inplace in (False, True):
            x = np.repeat(special, step)[::step]
            ours = F.relu(engine.from_numpy(x), inplace=inplace).numpy()
            ref = TF.relu(torch.from_numpy(special.copy()), inplace=inplace).numpy()
            np.testing.assert_array_equal(ours, ref)
            np.testing.assert_array_equal(np.signbit(ours), np.signbit(ref))


@pytest.mark.parametrize("name", ["silu", "mish", "hardswish", "hardsigmoid", "relu6", "hardtanh"])
def test_inplace_then_modified_in_place_again(name):
    """These keep what backward needs, so a later in-place op (MobileNetV3's dropout) is allowed."""
    x = rand(4, 6)

    def run(lib, fn):
        leaf = lib.tensor(x, requires_grad=True)
        out = fn(leaf * 2, inplace=True)
        out.mul_(3)
        out.sum().backward()
        return leaf.grad.numpy()
    np.testing.assert_allclose(run(engine, getattr(F, name)), run(torch, getattr(TF, name)), rtol=1e-5, atol=1e-6)


def test_relu_inplace_saved_output_modified_raises():
    leaf = engine.tensor(rand(3), requires_grad=True)
    y = engine.relu(leaf * 1)
    y.mul_(2)  # relu saved its output
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("shape,wshape", [((2, 3, 4, 5), (3,)), ((5, 3), (1,)), ((7,), (1,)), ((2, 4), ())])
def test_prelu(shape, wshape):
    check_op(F.prelu, TF.prelu, [rand(*shape), rand(*wshape, low=0.0, high=0.5)])


@pytest.mark.parametrize("dim", [-1, 1, 0])
def test_glu(dim):
    check_op(lambda t: F.glu(t, dim), lambda t: TF.glu(t, dim), [rand(4, 6, 3 * 2)])


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 7), 1), ((3, 7), 0), ((2, 5, 4, 3), 1), ((2, 5, 3), -1),
                                       ((), 0)])
def test_softmax_family(fn, shape, dim):
    x = rand(*shape)
    check_op(lambda t: getattr(F, fn)(t, dim=dim), lambda t: getattr(TF, fn)(t, dim=dim), [x])
    check_op(lambda t: getattr(F, fn)(t, dim=dim), lambda t: getattr(TF, fn)(t, dim=dim),
             [x.astype(np.float64)], rtol=1e-10)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_of_a_permuted_input_is_contiguous_as_torch(fn):
    """Attention's pattern: softmax over a permuted map, then dropout, which draws its mask in memory order."""
    x = rand(2, 5, 4, 3)
    ours = getattr(F, fn)(engine.from_numpy(x).permute(0, 3, 1, 2), dim=-1)
    theirs = getattr(TF, fn)(torch.from_numpy(x).permute(0, 3, 1, 2), dim=-1)
    assert ours.stride() == theirs.stride()
    engine.manual_seed(2)
    torch.manual_seed(2)
    np.testing.assert_allclose(F.dropout(ours, 0.5).numpy(), TF.dropout(theirs, 0.5).numpy(), rtol=1e-6)


def test_softmax_stable_methods_dtype_and_implicit_dim():
    x = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]], np.float32)
    check_op(lambda t: t.softmax(1), lambda t: t.softmax(1), [x])
    check_op(lambda t: t.log_softmax(-1), lambda t: t.log_softmax(-1), [x])
    check_op(lambda t: engine.softmax(t, 1, dtype=engine.float64), lambda t: torch.softmax(t, 1, dtype=torch.float64),
             [x])
    for shape in [(3,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
        x = rand(*shape)
        with pytest.warns(UserWarning, match="Implicit dimension"):
            ours = F.softmax(engine.tensor(x)).numpy()
        with pytest.warns(UserWarning):
            ref = TF.softmax(torch.tensor(x)).numpy()
        np.testing.assert_allclose(ours, ref, rtol=1e-6)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        engine.softmax(engine.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        engine.softmax(engine.tensor([1.0, 2.0]), 1)


def test_errors():
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 5"):
        F.glu(engine.randn(3, 5))
    with pytest.raises(RuntimeError, match="Found parameter numbers = 3 and channel size = 5"):
        F.prelu(engine.randn(3, 5), engine.randn(3))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.gelu(engine.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="negative slope"):
        leaf = engine.randn(3, requires_grad=True)
        F.leaky_relu(leaf * 1, -0.1, inplace=True)


def test_rrelu_training_is_random_and_seeded():
    x = engine.tensor(-np.ones((1000,), np.float32), requires_grad=True)
    engine.manual_seed(3)
    a = F.rrelu(x, 0.1, 0.3, training=True)
    engine.manual_seed(3)
    b = F.rrelu(x, 0.1, 0.3, training=True)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    slopes = -a.detach().numpy()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and slopes.std() > 0.03
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), slopes)


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dim", [-1, 0])
def test_gumbel_softmax_draws_torch_s_samples(hard, dim):
    """The same seed gives torch's sample (noise from the exponential stream) and gradients; ``hard`` gives
    one-hot rows with the soft sample's gradient."""
    logits = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)

    def ours(x):
        engine.manual_seed(5)
        return F.gumbel_softmax(x, tau=0.7, hard=hard, dim=dim)

    def theirs(x):
        torch.manual_seed(5)
        return TF.gumbel_softmax(x, tau=0.7, hard=hard, dim=dim)
    out = check_op(ours, theirs, [logits])[0]
    if hard:
        assert sorted(set(out.detach().numpy().ravel().tolist())) == [0.0, 1.0]
        assert (out.detach().numpy().sum(dim) == 1).all()
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(engine.from_numpy(logits), eps=1e-3)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dim", [((2, 0), -1), ((0, 3), 0), ((0, 3), 1), ((2, 0, 4), 1)])
def test_softmax_of_empty_tensors(name, shape, dim):
    """torch returns an empty result (and an empty gradient); numpy's max over no values raised."""
    ours = engine.zeros(shape, requires_grad=True)
    theirs = torch.zeros(shape, requires_grad=True)
    y, ty = getattr(engine, name)(ours, dim), getattr(torch, name)(theirs, dim)
    assert tuple(y.shape) == tuple(ty.shape) and y.dtype == engine.float32
    y.sum().backward()
    ty.sum().backward()
    assert tuple(ours.grad.shape) == tuple(theirs.grad.shape)
