"""Transforms, constraints and biject_to/transform_to against torch: forward, inverse and log|det J| with
gradients, shapes, domains and codomains, caching, equality and TransformedDistribution's scoring."""
import numpy as np
import pytest
import torch

import engine
from op_check import check_op

RNG = np.random.default_rng(4)


def tr(module, name, *args, **kwargs):
    return getattr(module.distributions.transforms, name)(*args, **kwargs)


# name, constructor arguments (numpy arrays become tensors), input x (in the domain)
CASES = [
    ("ExpTransform", [], RNG.standard_normal((3, 4))),
    ("SigmoidTransform", [], RNG.standard_normal((3, 4))),
    ("TanhTransform", [], RNG.standard_normal((3, 4))),
    ("SoftplusTransform", [], RNG.standard_normal((3, 4))),
    ("AffineTransform", [RNG.standard_normal(4), RNG.uniform(-2, 2, (3, 4))], RNG.standard_normal((3, 4))),
    ("AffineTransform", [0.5, -3.0], RNG.standard_normal((3, 4))),
    ("PowerTransform", [RNG.uniform(0.5, 2, 4)], RNG.uniform(0.5, 2, (3, 4))),
    ("StickBreakingTransform", [], RNG.standard_normal((3, 4))),
    ("CorrCholeskyTransform", [], RNG.standard_normal((2, 6))),
]


@pytest.mark.parametrize("name,args,x", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_forward_inverse_and_log_det_match_torch(name, args, x):
    def run(module):
        def fn(*inputs):
            made = [module.from_numpy(a) if isinstance(a, np.ndarray) else a for a in args]
            t = tr(module, name, *made)
            y = t(inputs[0])
            return y, t.inv(y), t.log_abs_det_jacobian(inputs[0], y)
        return fn
    check_op(run(engine), run(torch), [x], rtol=1e-9)


def test_structural_transforms_match_torch():
    x = RNG.standard_normal((2, 3, 4))

    def run(module):
        def fn(x):
            T = module.distributions.transforms
            parts = [T.ExpTransform(), T.AffineTransform(1.0, 2.0)]
            compose = T.ComposeTransform(parts)
            independent = T.IndependentTransform(T.SigmoidTransform(), 2)
            reshape = T.ReshapeTransform((3, 4), (12,))
            cat = T.CatTransform([T.ExpTransform(), T.TanhTransform()], dim=-1, lengths=[1, 3])
            stack = T.StackTransform([T.ExpTransform(), T.SigmoidTransform(), T.AffineTransform(0.0, 3.0)], dim=1)
            lower = T.LowerCholeskyTransform()
            outs = []
            for t in (compose, independent, reshape, cat, stack):
                y = t(x)
                outs += [y, t.inv(y), t.log_abs_det_jacobian(x, y)]
            outs += [lower(x[..., :3, :3]), T.AbsTransform()(x), T.SoftmaxTransform()(x),
                     T.PositiveDefiniteTransform()(x[..., :3, :3])]
            return outs
        return fn
    check_op(run(engine), run(torch), [x], rtol=1e-9)


def test_shapes_domains_and_equality():
    for module in (engine, torch):
        T, C = module.distributions.transforms, module.distributions.constraints
        assert tuple(T.StickBreakingTransform().forward_shape((2, 3))) == (2, 4)
        assert tuple(T.CorrCholeskyTransform().forward_shape((6,))) == (4, 4)
        assert tuple(T.ReshapeTransform((3, 4), (12,)).inverse_shape((5, 12))) == (5, 3, 4)
        compose = T.ComposeTransform([T.StickBreakingTransform(), T.AffineTransform(0.0, 2.0)])
        assert compose.domain.event_dim == 1 and compose.codomain.event_dim == 1
        assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform().inv.inv == T.ExpTransform()
        assert T.AffineTransform(0.0, 2.0).sign == 1 and T.AffineTransform(0.0, -2.0).sign == -1
        assert isinstance(T.TanhTransform().codomain, type(C.interval(-1.0, 1.0)))
        with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
            T.ExpTransform(cache_size=2)
    ours = [repr(c) for c in _constraints(engine)]
    assert ours == [repr(c) for c in _constraints(torch)]


def _constraints(module):
    C = module.distributions.constraints
    return [C.real, C.positive, C.interval(0.0, 2.0), C.simplex, C.integer_interval(0, 3), C.boolean,
            C.lower_cholesky, C.positive_definite, C.independent(C.real, 1), C.greater_than_eq(1.0), C.unit_interval,
            C.nonnegative_integer, C.one_hot, C.corr_cholesky, C.half_open_interval(0.0, 1.0)]


def test_cache_returns_the_same_tensor():
    t = engine.distributions.transforms.ExpTransform(cache_size=1)
    x = engine.randn(3)
    y = t(x)
    assert t(x) is y and t.inv(y) is x


def test_constraint_checks_match_torch():
    values = [RNG.standard_normal((2, 3, 3)), np.abs(RNG.standard_normal((2, 3, 3))),
              np.tril(np.abs(RNG.standard_normal((2, 3, 3))) + 0.1), np.eye(3)[None].repeat(2, 0),
              RNG.dirichlet(np.ones(3), (2, 3)), RNG.integers(0, 4, (2, 3, 3)).astype(float)]
    for value in values:
        for ours, ref in zip(_constraints(engine), _constraints(torch)):
            if ref.event_dim > value.ndim:
                continue
            a = ours.check(engine.from_numpy(value)).numpy()
            b = ref.check(torch.from_numpy(value)).numpy()
            np.testing.assert_array_equal(a, b, err_msg=repr(ref))


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry_matches_torch(registry):
    x = RNG.standard_normal((2, 3, 3))

    def run(module):
        def fn(x):
            D = module.distributions
            chosen = getattr(D, registry)
            C = D.constraints
            outs = []
            for c, arg in ((C.real, x), (C.positive, x), (C.greater_than(1.5), x), (C.less_than(-1.0), x),
                           (C.interval(-1.0, 3.0), x), (C.unit_interval, x), (C.simplex, x),
                           (C.independent(C.positive, 1), x), (C.corr_cholesky, x[..., 0, :]),
                           (C.cat([C.positive, C.real], dim=-1, lengths=[1, 2]), x),
                           (C.stack([C.positive, C.real, C.unit_interval], dim=-1), x)):
                t = chosen(c)
                y = t(arg)
                assert bool(c.check(y).all())
                outs.append(y)
            if registry == "transform_to":
                outs += [chosen(C.lower_cholesky)(x), chosen(C.positive_definite)(x)]
            return outs
        return fn
    check_op(run(engine), run(torch), [x], rtol=1e-9)
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        getattr(engine.distributions, registry)(engine.distributions.constraints.boolean)


def test_transformed_distribution_matches_torch():
    loc, scale = RNG.standard_normal((2, 3)), RNG.uniform(0.5, 2, (2, 3))
    value = RNG.dirichlet(np.ones(4), (5, 2))

    def run(module):
        def fn(loc, scale, value):
            D = module.distributions
            d = D.TransformedDistribution(D.Normal(loc, scale), [D.StickBreakingTransform()])
            assert tuple(d.batch_shape) == (2,) and tuple(d.event_shape) == (4,)
            e = D.TransformedDistribution(D.Normal(loc, scale), [D.ExpTransform(), D.AffineTransform(1.0, -2.0)])
            return d.log_prob(value), e.log_prob(-value[..., :3]), e.cdf(-value[..., :3]), e.icdf(value[..., :3])
        return fn
    check_op(run(engine), run(torch), [loc, scale, value], rtol=1e-9)


@pytest.mark.parametrize("diag", [-1, 0, 1])
def test_triangle_vector_helpers_match_torch(diag):
    from torch.distributions import utils as torch_utils

    from engine.distributions import utils
    mat = RNG.standard_normal((2, 4, 4))
    vec = torch_utils.tril_matrix_to_vec(torch.from_numpy(mat), diag)
    np.testing.assert_array_equal(utils.tril_matrix_to_vec(engine.from_numpy(mat), diag).numpy(), vec.numpy())
    np.testing.assert_array_equal(utils.vec_to_tril_matrix(engine.from_numpy(vec.numpy()), diag).numpy(),
                                  torch_utils.vec_to_tril_matrix(vec, diag).numpy())
