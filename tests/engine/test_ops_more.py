"""The smaller top-level ops against torch: the ``*_copy`` views and the ``*_scatter`` ops, ``as_strided``, ``fill``,
``scalar_tensor``, ``range``, ``vander``, the trapezoidal rules, ``index_reduce``, the top-level in-place names,
``mvlgamma``, ``angle``, ``slogdet``/``logdet``, ``Tensor.new``/``resize``/``multinomial``: forward values and every
input gradient; ``poisson`` and ``binomial`` by their statistics (their draws are not torch's)."""
import warnings

import numpy as np
import pytest
import torch

import engine
from op_check import check_op

rng = np.random.default_rng(21)


def rand(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def both(name, *extra, **kwargs):
    return (lambda *a: getattr(engine, name)(*a, *extra, **kwargs)), (lambda *a: getattr(torch, name)(*a, *extra,
                                                                                                       **kwargs))


COPIES = [
    ("expand_copy", [rand(3, 1, 4)], ([2, 3, 5, 4],)),
    ("permute_copy", [rand(2, 3, 4)], ([2, 0, 1],)),
    ("view_copy", [rand(2, 3, 4)], ([4, 6],)),
    ("transpose_copy", [rand(2, 3, 4)], (0, 2)),
    ("t_copy", [rand(3, 5)], ()),
    ("squeeze_copy", [rand(2, 1, 4, 1)], ()),
    ("squeeze_copy", [rand(2, 1, 4, 1)], (3,)),
    ("unsqueeze_copy", [rand(2, 3)], (-1,)),
    ("select_copy", [rand(2, 3, 4)], (1, -1)),
    ("slice_copy", [rand(5, 7)], (1, 1, 6, 2)),
    ("slice_copy", [rand(5, 7)], ()),
    ("diagonal_copy", [rand(3, 4, 5)], (1, 2, 0)),
    ("detach_copy", [rand(3, 4)], ()),
    ("alias_copy", [rand(3, 4)], ()),
    ("unbind_copy", [rand(3, 4)], (1,)),
    ("split_copy", [rand(7, 3)], (3,)),
    ("split_with_sizes_copy", [rand(3, 7)], ([2, 4, 1], 1)),
    ("unfold_copy", [rand(3, 9)], (1, 3, 2)),
    ("as_strided_copy", [rand(4, 5)], ([3, 3], [4, 1], 2)),
]


@pytest.mark.parametrize("name,inputs,extra", COPIES, ids=[c[0] for c in COPIES])
def test_copies_match_torch_and_own_their_memory(name, inputs, extra):
    outs = check_op(*both(name, *extra), inputs, rtol=1e-12, grad=name != "detach_copy")
    source = engine.tensor(inputs[0])
    result = getattr(engine, name)(source, *extra)
    for out in result if isinstance(result, (list, tuple)) else [result]:
        assert out.is_contiguous()
        out.fill_(7.0)
    np.testing.assert_array_equal(source.numpy(), inputs[0])
    assert outs


SCATTERS = [
    ("slice_scatter", [rand(5, 7), rand(5, 3)], (1, 1, 6, 2)),
    ("slice_scatter", [rand(5, 7), rand(2, 7)], (0, -2)),
    ("slice_scatter", [rand(4, 3), rand(4, 3)], ()),
    ("select_scatter", [rand(3, 4, 5), rand(3, 5)], (1, -2)),
    ("diagonal_scatter", [rand(4, 5), rand(4)], ()),
    ("diagonal_scatter", [rand(3, 4, 5), rand(4, 3)], (-1, 2, 0)),
]


@pytest.mark.parametrize("name,inputs,extra", SCATTERS, ids=[c[0] for c in SCATTERS])
def test_scatters_match_torch(name, inputs, extra):
    check_op(*both(name, *extra), inputs, rtol=1e-12)
    method = getattr(engine.Tensor, name)
    ours = method(engine.tensor(inputs[0]), engine.tensor(inputs[1]), *extra)
    np.testing.assert_array_equal(ours.numpy(), getattr(torch, name)(*map(torch.tensor, inputs), *extra).numpy())


def _as_strided_scatter_by_views(x, src, size, stride, offset):
    """torch's as_strided_scatter written as a clone and a view's copy_: torch 2.14's own backward gives ``input``
    the gradient at the scattered places instead of around them, so its values are checked against torch's op and
    its gradients against this."""
    out = x.clone()
    out.as_strided(size, stride, offset).copy_(src)
    return out


@pytest.mark.parametrize("size,stride,offset", [([3, 2], [5, 2], 1), ([2, 2, 2], [6, 2, 1], None)])
def test_as_strided_scatter(size, stride, offset):
    x, src = rand(4, 5), rand(*size)
    check_op(lambda x, s: engine.as_strided_scatter(x, s, size, stride, offset),
             lambda x, s: torch.as_strided_scatter(x, s, size, stride, offset), [x, src], rtol=1e-12, grad=False)
    check_op(lambda x, s: x.as_strided_scatter(s, size, stride, offset),
             lambda x, s: _as_strided_scatter_by_views(x, s, size, stride, offset), [x, src], rtol=1e-12)


def test_scatter_shape_error_names_both_shapes():
    with pytest.raises(RuntimeError, match=r"src size = \[2, 3\], slice size = \[5, 3\]"):
        engine.slice_scatter(engine.zeros(5, 7), engine.zeros(2, 3), 1, 1, 6, 2)


@pytest.mark.parametrize("size,stride,offset", [
    ([3, 3], [4, 1], 2), ([2, 4], [1, 2], None), ([4, 3], [2, 1], 1),  # the last two views overlap: gradients add
])
def test_as_strided_views_the_memory(size, stride, offset):
    check_op(lambda x: engine.as_strided(x, size, stride, offset), lambda x: torch.as_strided(x, size, stride, offset),
             [rand(4, 5)], rtol=1e-12)


def test_as_strided_writes_reach_the_base():
    size, stride, offset = [3, 3], [4, 1], 2
    base = engine.arange(20.0).reshape(4, 5)
    view = base.as_strided(size, stride, offset)
    view.add_(100)
    expected = torch.arange(20.0).reshape(4, 5)
    expected.as_strided(size, stride, offset).add_(100)
    np.testing.assert_array_equal(base.numpy(), expected.numpy())


def test_as_strided_of_a_view_starts_at_its_offset():
    """A view's storage offset is where as_strided starts by default; an explicit one counts from the storage, and
    only the elements the input itself holds get gradients (torch's as_strided of a leaf's view trips over its own
    version counter, so both sides view a product of the leaf)."""
    check_op(lambda x: (x * 1)[1:].as_strided([2, 2], [1, 3]), lambda x: (x * 1)[1:].as_strided([2, 2], [1, 3]),
             [rand(4, 5)], rtol=1e-12)
    check_op(lambda x: (x * 1)[1:, 2:].as_strided([2, 3], [5, 1], 3),
             lambda x: (x * 1)[1:, 2:].as_strided([2, 3], [5, 1], 3), [rand(4, 5)], rtol=1e-12)


def test_as_strided_inplace_and_bounds():
    ours, theirs = engine.arange(12.0), torch.arange(12.0)
    assert ours.as_strided_([3, 2], [2, 3], 1) is ours
    theirs.as_strided_([3, 2], [2, 3], 1)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.stride() == theirs.stride()
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 48"):
        engine.arange(12.0).as_strided([4, 4], [3, 1])


def test_fill():
    check_op(lambda x: engine.fill(x, 2.5), lambda x: torch.fill(x, 2.5), [rand(3, 4)])
    check_op(*both("fill"), [rand(3, 4), rand()], rtol=1e-12)
    check_op(lambda x: engine.fill(x, 2.5), lambda x: torch.fill(x, 2.5), [np.arange(6).reshape(2, 3)])
    with pytest.raises(RuntimeError, match="0-dimension value tensor but got tensor with 1 dimensions"):
        engine.fill(engine.zeros(3), engine.zeros(1))
    x = engine.ones(2, 3)
    assert engine.fill_(x, 4) is x and engine.zero_(x) is x
    assert not x.numpy().any()


@pytest.mark.parametrize("name,value", [
    ("arccos_", 0.4), ("arccosh_", 1.7), ("arcsin_", -0.3), ("arcsinh_", 2.0), ("arctan_", 3.0), ("arctanh_", 0.6),
    ("negative_", 1.5), ("fix_", -2.7),
])
def test_toplevel_inplace_unary(name, value):
    values = np.array([value, value / 2, -value / 3])
    ours, theirs = engine.tensor(values), torch.tensor(values)
    assert getattr(engine, name)(ours) is ours
    getattr(torch, name)(theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_toplevel_inplace_with_arguments():
    a, b = np.array([12, 18, -7, 0]), np.array([8, 27, 14, 5])
    for name in ("gcd_", "lcm_"):
        ours, theirs = engine.tensor(a), torch.tensor(a)
        getattr(engine, name)(ours, engine.tensor(b))
        getattr(torch, name)(theirs, torch.tensor(b))
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -3.0])
    for name, args in (("nan_to_num_", (0.5, 9.0, -9.0)), ("clamp_min_", (0.0,)), ("clamp_max_", (1.0,)),
                       ("xlogy_", (2.0,)), ("ldexp_", (torch.tensor([1, 2, 3, 4, 5]),))):
        ours, theirs = engine.tensor(x), torch.tensor(x)
        getattr(engine, name)(ours, *(engine.tensor(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args))
        getattr(torch, name)(theirs, *args)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x = engine.tensor(rand(3), requires_grad=True) * 2
    assert engine.detach(x).grad_fn is None and engine.detach_(x) is x and x.grad_fn is None
    assert engine.get_device(x) == -1
    ours, theirs = engine.zeros(2, 3), torch.zeros(2, 3)
    engine.put(ours, engine.tensor([4, 0]), engine.tensor([1.0, 2.0])).add_(1)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(engine.put(ours, engine.tensor([4, 0]), engine.tensor([1.0, 2.0])).numpy(),
                                  torch.put(theirs, torch.tensor([4, 0]), torch.tensor([1.0, 2.0])).numpy())
    m, v, out = rand(3, 4), rand(4), rand(3)
    ours, theirs = engine.tensor(out), torch.tensor(out)
    engine.addmv_(ours, engine.tensor(m), engine.tensor(v), beta=0.5, alpha=2)
    torch.addmv_(theirs, torch.tensor(m), torch.tensor(v), beta=0.5, alpha=2)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize("value,dtype", [(3, None), (True, None), (2.5, "float64"), (7, "int32")])
def test_scalar_tensor(value, dtype):
    ours = engine.scalar_tensor(value, dtype=None if dtype is None else getattr(engine, dtype))
    theirs = torch.scalar_tensor(value, dtype=None if dtype is None else getattr(torch, dtype))
    assert ours.shape == () and str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.item() == theirs.item()


@pytest.mark.parametrize("args,dtype", [((1, 4), None), ((0, 0.1, 0.03), None), ((2, -3, -1.5), "float64"),
                                        ((0, 5, 2), "int32"), ((-2, 3.5), None)])
def test_range_includes_its_end_and_warns(args, dtype):
    kwargs = {} if dtype is None else {"dtype": getattr(engine, dtype)}
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        ours = engine.range(*args, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.range(*args, **({} if dtype is None else {"dtype": getattr(torch, dtype)}))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_range_errors():
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="inconsistent with step sign"):
        engine.range(1, 0)
    with pytest.raises(TypeError):
        engine.range(3)  # no end: torch's range needs both bounds


@pytest.mark.parametrize("values,N,increasing", [
    (rand(4), None, False), (rand(5), 3, True), (np.array([0.0, 1.5, -2.0]), 4, False),
    (np.array([1, 2, 3]), None, False), (np.array([2, -1]), 3, True), (rand(3), 0, False),
])
def test_vander(values, N, increasing):
    """Values against torch.vander; gradients against the powers stacked (torch's own vander backward fails on
    the in-place product it builds the powers with)."""
    check_op(lambda x: engine.vander(x, N, increasing), lambda x: torch.vander(x, N, increasing), [values],
             rtol=1e-12, grad=False)
    n = len(values) if N is None else N
    exponents = range(n) if increasing else range(n - 1, -1, -1)
    check_op(lambda x: engine.vander(x, N, increasing),
             lambda x: torch.stack([x ** k for k in exponents], 1) if n else x.new_zeros((len(x), 0)),
             [values], rtol=1e-12, check_dtype=False)


def test_vander_needs_a_vector():
    with pytest.raises(RuntimeError, match="one-dimensional"):
        engine.vander(engine.zeros(2, 2))


@pytest.mark.parametrize("name", ["trapezoid", "cumulative_trapezoid", "trapz"])
def test_trapezoidal_rules(name):
    y = rand(3, 6)
    check_op(*both(name), [y], rtol=1e-12)
    check_op(*both(name, dx=0.5, dim=0), [y], rtol=1e-12)
    check_op(*both(name), [y, np.sort(rand(6))], rtol=1e-12)
    check_op(*both(name, dim=0), [y, rand(3, 6)], rtol=1e-12)
    check_op(*both(name), [y, rand(1, 6)], rtol=1e-12)
    check_op(*both(name, dim=1), [rand(2, 1, 4)], rtol=1e-12)
    check_op(*both(name), [np.array([1, 4, 2, 7])], rtol=1e-12)


def test_trapezoid_empty_and_mismatched():
    check_op(*both("trapezoid"), [rand(3, 0)], rtol=1e-12)
    check_op(*both("cumulative_trapezoid"), [rand(3, 0)], rtol=1e-12)
    with pytest.raises(RuntimeError, match="one `x` value for each sample point"):
        engine.trapezoid(engine.zeros(3, 5), engine.zeros(4))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_reduce(reduce, include_self, dim):
    x = rand(4, 5)
    index = np.array([0, 2, 0, 3, 2, 2])[:5 if dim == 1 else 6]
    source = rand(*((6, 5) if dim == 0 else (4, 5)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "index_reduce() is in beta"
        check_op(lambda x, s: engine.index_reduce(x, dim, engine.tensor(index), s, reduce, include_self=include_self),
                 lambda x, s: torch.index_reduce(x, dim, torch.tensor(index), s, reduce, include_self=include_self),
                 [x, source], rtol=1e-12)
        ours, theirs = engine.tensor(x), torch.tensor(x)
        ours.index_reduce_(dim, engine.tensor(index), engine.tensor(source), reduce, include_self=include_self)
        theirs.index_reduce_(dim, torch.tensor(index), torch.tensor(source), reduce, include_self=include_self)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_index_reduce_integer_mean_and_errors():
    x, source, index = np.arange(12).reshape(3, 4), np.arange(8).reshape(2, 4) * 3, np.array([2, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(lambda x, s: x.index_reduce(0, engine.tensor(index), s, "mean"),
                 lambda x, s: x.index_reduce(0, torch.tensor(index), s, "mean"), [x, source])
    with pytest.raises(IndexError, match=r"Number of indices \(3\) should be equal to source.size\(dim\) \(2\)"):
        engine.index_reduce(engine.zeros(3, 4), 0, engine.tensor([0, 1, 2]), engine.zeros(2, 4), "amax")
    with pytest.raises(RuntimeError, match="one of prod, mean, amax or amin but got sum"):
        engine.index_reduce(engine.zeros(3, 4), 0, engine.tensor([0, 1]), engine.zeros(2, 4), "sum")


@pytest.mark.parametrize("p", [1, 2, 5])
def test_mvlgamma(p):
    x = np.abs(rand(3, 4)) + p
    check_op(lambda x: engine.mvlgamma(x, p), lambda x: torch.mvlgamma(x, p), [x], rtol=1e-12)
    check_op(lambda x: x.mvlgamma(p), lambda x: x.mvlgamma(p), [x.astype(np.float32)], rtol=1e-5)
    ours, theirs = engine.tensor(x), torch.tensor(x)
    ours.mvlgamma_(p)
    theirs.mvlgamma_(p)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    check_op(lambda x: engine.mvlgamma(x, p), lambda x: torch.mvlgamma(x, p), [np.arange(p, p + 4)], rtol=1e-6)


def test_angle_of_real_tensors():
    check_op(*both("angle"), [np.array([-1.5, 0.0, -0.0, 2.0, np.nan, np.inf, -np.inf])], rtol=1e-12)
    check_op(lambda x: x.angle(), lambda x: x.angle(), [np.array([-3, 0, 4])])


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_slogdet_logdet(shape):
    a = rand(*shape)
    check_op(*both("slogdet"), [a], rtol=1e-10)
    spd = a @ np.swapaxes(a, -1, -2) + 3 * np.eye(shape[-1])
    check_op(*both("logdet"), [spd], rtol=1e-10)
    check_op(lambda x: x.logdet(), lambda x: x.logdet(), [-spd[..., :1, :1]], grad=False)  # negative: NaN
    check_op(lambda x: x.slogdet(), lambda x: x.slogdet(), [np.zeros((3, 3))], grad=False)  # singular
    assert engine.slogdet(engine.tensor(a)).logabsdet.shape == shape[:-2]


def test_new_resize_multinomial():
    x = engine.zeros(2, 3, dtype=engine.float64)
    assert x.new(4, 2).shape == (4, 2) and x.new(4, 2).dtype is engine.float64
    assert x.new().shape == (0,) and x.new(engine.Size([2, 5])).shape == (2, 5)
    assert x.new([1, 2]).tolist() == [1.0, 2.0] and x.new([1, 2]).dtype is engine.float64
    with pytest.raises(TypeError, match="data must be a sequence"):
        x.new(1.5)
    with pytest.warns(UserWarning, match="non-inplace resize(_as)? is deprecated"):
        check_op(lambda x: x.resize(3, 2), lambda x: x.resize(3, 2), [rand(2, 3)])
        check_op(lambda x: x.t().resize(6), lambda x: x.t().resize(6), [rand(2, 3)])
        check_op(lambda x: x.resize_as(engine.zeros(1, 6)), lambda x: x.resize_as(torch.zeros(1, 6)), [rand(2, 3)])
    with pytest.raises(RuntimeError, match=r"requested resize to 4 \(4 elements in total\), but the given tensor has "
                                           r"a size of 2x3 \(6 elements\)"):
        with pytest.warns(UserWarning):
            engine.zeros(2, 3).resize(4)
    weights = np.abs(rand(3, 6))
    engine.manual_seed(3)
    torch.manual_seed(3)
    np.testing.assert_array_equal(engine.tensor(weights).multinomial(4).numpy(),
                                  torch.tensor(weights).multinomial(4).numpy())


def test_poisson_statistics():
    """Means and variances of 20000 draws at each rate within 5 standard errors; zero rate gives zero; seeded."""
    rates = np.repeat(np.array([[0.0, 0.5, 3.0, 40.0]]), 20000, 0)
    engine.manual_seed(1)
    draws = engine.poisson(engine.tensor(rates, dtype=engine.float32))
    assert draws.dtype is engine.float32
    counts = draws.numpy()
    assert (counts == np.round(counts)).all() and (counts[:, 0] == 0).all()
    means, variances = counts.mean(0), counts.var(0)
    assert np.all(np.abs(means - rates[0]) <= 5 * np.sqrt(rates[0] / 20000) + 1e-9)
    assert np.all(np.abs(variances - rates[0]) <= 5 * np.sqrt(2 * rates[0] ** 2 / 20000 + rates[0] / 20000) + 1e-9)
    engine.manual_seed(1)
    np.testing.assert_array_equal(engine.poisson(engine.tensor(rates, dtype=engine.float32)).numpy(), counts)
    with pytest.raises(RuntimeError, match="non-negative"):
        engine.poisson(engine.tensor([-1.0]))


def test_binomial_statistics():
    count = np.repeat(np.array([[0.0, 5.0, 20.0, 100.0]]), 20000, 0)
    prob = np.repeat(np.array([[0.3, 0.0, 0.5, 0.9]]), 20000, 0)
    draws = engine.binomial(engine.tensor(count), engine.tensor(prob)).numpy()
    assert ((draws >= 0) & (draws <= count)).all()
    expected_mean, expected_var = count[0] * prob[0], count[0] * prob[0] * (1 - prob[0])
    assert np.all(np.abs(draws.mean(0) - expected_mean) <= 5 * np.sqrt(expected_var / 20000) + 1e-9)
    c = engine.tensor([3.0, 4.0], requires_grad=True)
    engine.poisson(c).sum().backward()
    assert c.grad.tolist() == [0.0, 0.0]  # as torch's: no gradient through a draw


@pytest.mark.parametrize("name,inputs,extra", [
    ("slice_scatter", [rand(5, 7), rand(5, 3)], (1, 1, 6, 2)),
    ("diagonal_scatter", [rand(4, 5), rand(4)], ()),
    ("select_copy", [rand(2, 3, 4)], (1, -1)),
    ("as_strided", [rand(4, 5)], ([4, 3], [2, 1], 1)),
    ("slogdet", [rand(2, 3, 3)], ()),
    ("angle", [rand(3, 4)], ()),
    ("vander", [rand(4)], ()),
    ("trapezoid", [rand(3, 5), rand(5)], ()),
])
def test_on_cuda(cuda, name, inputs, extra):
    check_op(*both(name, *extra), inputs, rtol=1e-10, device="cuda", grad=name != "vander")  # see test_vander


def test_index_reduce_fill_and_counts_on_cuda(cuda):
    index = np.array([0, 2, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_op(lambda x, s: x.index_reduce(0, engine.tensor(index).to("cuda"), s, "amax"),
                 lambda x, s: x.index_reduce(0, torch.tensor(index), s, "amax"), [rand(4, 5), rand(3, 5)],
                 device="cuda")
    check_op(*both("fill"), [rand(3, 4), rand()], device="cuda")
    rates = engine.full((1000,), 4.0, device="cuda")
    draws = engine.poisson(rates)
    assert draws.device.type == "cuda" and abs(float(draws.mean()) - 4.0) < 5 * (4.0 / 1000) ** 0.5


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma(name):
    """Values at ordinary points and at torch's edge cases; the gradient with respect to x (torch has none for a)."""
    a, x = np.abs(rand(3, 4)) * 3 + 0.1, np.abs(rand(3, 4)) * 2
    check_op(lambda x: getattr(engine, name)(engine.tensor(a), x), lambda x: getattr(torch, name)(torch.tensor(a), x),
             [x], rtol=1e-10)
    check_op(lambda x: getattr(engine.tensor(a[0]), name)(x), lambda x: getattr(torch.tensor(a[0]), name)(x),
             [x.astype(np.float32)], rtol=1e-5)  # broadcast, and a float32 x with a float64 a
    edges_a, edges_x = np.array([0.0, -1.0, 2.0, np.inf, 0.0, 2.0]), np.array([1.0, 1.0, -1.0, 1.0, 0.0, np.inf])
    check_op(*both(name), [edges_a, edges_x], grad=False)
    ours, theirs = engine.tensor(a), torch.tensor(a)
    getattr(ours, name + "_")(engine.tensor(x))
    getattr(theirs, name + "_")(torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)
    with pytest.raises(RuntimeError, match=f"the derivative for '{name}: input' is not implemented"):
        getattr(engine, name)(engine.tensor(a, requires_grad=True), engine.tensor(x)).sum().backward()
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        getattr(engine, name)(engine.tensor([1, 2]), engine.tensor([1, 2]))


def test_as_strided_of_a_transposed_view():
    """A transposed view's strides count in its storage: as_strided reads that memory, as torch's does."""
    check_op(lambda x: (x * 1).t().as_strided([3, 2], [1, 4], 1), lambda x: (x * 1).t().as_strided([3, 2], [1, 4], 1),
             [rand(3, 4)], rtol=1e-12)
    check_op(lambda x: (x * 1).t()[1:].as_strided([2, 2], [4, 1]), lambda x: (x * 1).t()[1:].as_strided([2, 2], [4, 1]),
             [rand(3, 4)], rtol=1e-12)


def _spd(*shape):
    a = rand(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_triangular_solve(upper, transpose, unitriangular):
    """Solution and cloned coefficient, with batches that broadcast; gradients reach only the triangle read."""
    a = rand(4, 3, 3) + 3 * np.eye(3)

    def call(lib):
        def run(b, a):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return lib.triangular_solve(b, a, upper, transpose, unitriangular)
        return run
    check_op(call(engine), call(torch), [rand(2, 1, 3, 2), a], rtol=1e-10)
    with pytest.warns(UserWarning, match="triangular_solve is deprecated"):
        engine.tensor(rand(3, 2)).triangular_solve(engine.tensor(a[0]))


@pytest.mark.parametrize("upper", [True, False])
def test_cholesky_solve_and_inverse(upper):
    factor = np.linalg.cholesky(_spd(2, 4, 4))
    factor = np.swapaxes(factor, -1, -2).copy() if upper else factor
    check_op(*both("cholesky_solve", upper), [rand(2, 4, 3), factor], rtol=1e-9)
    check_op(*both("cholesky_solve", upper), [rand(4, 3), factor], rtol=1e-9)
    check_op(*both("cholesky_inverse", upper), [factor[0]], rtol=1e-9)
    check_op(lambda x: x.cholesky_inverse(upper), lambda x: x.cholesky_inverse(upper), [factor], rtol=1e-9)
    other_triangle = np.tril(rand(4, 4), -1) if upper else np.triu(rand(4, 4), 1)  # read by neither
    check_op(*both("cholesky_solve", upper), [rand(4, 2), factor[1] + other_triangle], rtol=1e-9)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (1, 1)])
def test_matrix_exp(shape):
    check_op(*both("matrix_exp"), [rand(*shape)], rtol=1e-9)
    check_op(lambda x: x.matrix_exp(), lambda x: x.matrix_exp(), [rand(*shape).astype(np.float32)], rtol=1e-4)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 4, 4)])
def test_pinverse(shape):
    check_op(*both("pinverse"), [rand(*shape)], rtol=1e-9)
    check_op(lambda x: x.pinverse(1e-3), lambda x: x.pinverse(1e-3), [rand(*shape)], rtol=1e-9)


@pytest.mark.parametrize("name,args", [("cholesky", 1), ("qr", 1), ("solve", 2), ("eig", 1), ("lstsq", 2),
                                       ("symeig", 1), ("matrix_rank", 1)])
def test_removed_linalg_names_raise_torchs_error(name, args):
    a = engine.eye(3)
    with pytest.raises(RuntimeError, match=f"deprecated since version 1.9 and is now removed. `torch.{name}`"):
        getattr(engine, name)(*[a] * args)
    with pytest.raises(RuntimeError, match="torch.linalg"):
        getattr(torch, name)(*[torch.eye(3)] * args)
    if name != "matrix_rank":
        with pytest.raises(RuntimeError, match="now removed"):
            getattr(a, name)(*[a] * (args - 1))


def _sign_fixed_svd(lib, some=True):
    """svd with each singular pair's sign fixed (the largest entry of each column of V positive), so that both
    libraries' factors can be compared: LAPACK builds may pick either sign."""
    def run(a):
        u, s, v = lib.svd(a, some)
        k = s.shape[-1]
        columns = v[..., :k]
        sign = columns.gather(-2, columns.abs().argmax(-2, keepdim=True)).sign()
        return u[..., :k] * sign, s, columns * sign
    return run


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
@pytest.mark.parametrize("some", [True, False])
def test_svd(shape, some):
    check_op(_sign_fixed_svd(engine, some), _sign_fixed_svd(torch, some), [rand(*shape)], rtol=1e-9)
    u, s, v = engine.svd(engine.tensor(rand(*shape)), some)
    theirs = torch.svd(torch.tensor(rand(*shape)), some)
    assert u.shape == theirs.U.shape and s.shape == theirs.S.shape and v.shape == theirs.V.shape


def test_svd_values_only():
    a = rand(4, 3)
    check_op(lambda x: engine.svd(x, compute_uv=False).S, lambda x: torch.svd(x, compute_uv=False).S, [a], rtol=1e-9)
    u, s, v = engine.svd(engine.tensor(a), compute_uv=False)
    assert u.shape == (4, 4) and v.shape == (3, 3) and not u.numpy().any() and not v.numpy().any()
