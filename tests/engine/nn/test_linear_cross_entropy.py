"""``F.linear_cross_entropy``, ``nn.LinearCrossEntropyLoss`` and ``nn.LinearCrossEntropyOptions`` against torch:
the reference and chunked paths' values and input gradients, the module's parameters, errors and warnings."""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as F
from op_check import check_op

pytestmark = pytest.mark.slow  # torch's chunked op sets itself up on first use (0.8 s); about 2.5 s in all

RNG = np.random.default_rng(7)
N, D, C = 11, 5, 7


def _opts(lib, **kw):
    return lib.nn.LinearCrossEntropyOptions(**kw)


def _case(dtype="float32", n=N, prob=False, ignore=False):
    x = RNG.standard_normal((n, D)).astype(dtype)
    W = RNG.standard_normal((C, D)).astype(dtype)
    b = RNG.standard_normal(C).astype(dtype)
    if prob:
        t = RNG.random((n, C)).astype(dtype)
        t /= t.sum(axis=1, keepdims=True)
    else:
        t = RNG.integers(0, C, n)
        if ignore:
            t[::3] = 2
    return x, W, b, t


def _run(x, W, b, t, w, lib, **kw):
    mod = F if lib is engine else torch.nn.functional
    opts = kw.pop("options", None)
    options = None if opts is None else _opts(lib, **opts)
    return mod.linear_cross_entropy(x, W, t, linear_bias=b, weight=w, options=options, **kw)


CHUNKED = [None, {}, {"batch_chunk_size": 4, "chunking_method": None}, {"batch_chunk_size": 3}]


@pytest.mark.parametrize("options", CHUNKED)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_index_targets_with_bias_weight_and_ignore_index(options, reduction, dtype):
    x, W, b, t = _case(dtype, ignore=True)
    w = RNG.random(C).astype(dtype)
    rtol = 1e-4 if dtype == "float32" else 1e-10
    check_op(lambda *a: _run(*a, engine.tensor(w), engine, reduction=reduction, ignore_index=2, options=options),
             lambda *a: _run(*a, torch.tensor(w), torch, reduction=reduction, ignore_index=2, options=options),
             [x, W, b, t], rtol=rtol)


@pytest.mark.parametrize("options", CHUNKED)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_probability_targets(options, reduction):
    x, W, b, t = _case("float64", prob=True)
    w = RNG.random(C)
    check_op(lambda x, W, b: _run(x, W, b, engine.tensor(t), engine.tensor(w), engine, reduction=reduction,
                                  options=options),
             lambda x, W, b: _run(x, W, b, torch.tensor(t), torch.tensor(w), torch, reduction=reduction,
                                  options=options),
             [x, W, b], rtol=1e-10)


@pytest.mark.parametrize("options", [None, {"batch_chunk_size": 1}])
def test_unbatched_input_without_bias(options):
    x, W, _, _ = _case()
    check_op(lambda x, W: _run(x, W, None, engine.tensor(3), None, engine, options=options),
             lambda x, W: _run(x, W, None, torch.tensor(3), None, torch, options=options), [x[0], W], rtol=1e-5)


@pytest.mark.parametrize("prob", [False, True])
def test_k_dimensional_loss_and_label_smoothing_on_the_reference_path(prob):
    x = RNG.standard_normal((3, D))
    W = RNG.standard_normal((C, 2, 3, D))
    b = RNG.standard_normal((C, 2, 3))
    t = RNG.random((3, C, 2, 3)) if prob else RNG.integers(0, C, (3, 2, 3))
    args = (lambda t: {}) if prob else (lambda t: {"ignore_index": 1})
    check_op(lambda x, W, b, t: _run(x, W, b, t, None, engine, label_smoothing=0.2, **args(t)),
             lambda x, W, b, t: _run(x, W, b, t, None, torch, label_smoothing=0.2, **args(t)),
             [x, W, b, t], rtol=1e-10)


def test_chunked_falls_back_with_torch_warning():
    x, W, b, t = _case("float64")
    for lib in (torch, engine):
        with pytest.warns(UserWarning, match="``options`` ignored") as record:
            _run(lib.tensor(x), lib.tensor(W), lib.tensor(b), lib.tensor(t), None, lib, label_smoothing=0.1,
                 options={})
        messages = [str(r.message).replace("engine.", "torch.") for r in record]
        if lib is torch:
            expected = messages
    assert messages == expected


def test_second_backward_raises_unless_retain_graph_is_allowed():
    x, W, b, t = _case("float64")
    xs = engine.tensor(x, requires_grad=True)
    loss = _run(xs, engine.tensor(W), engine.tensor(b), engine.tensor(t), None, engine, options={})
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="linear_cross_entropy chunked backward called twice; retain_graph=True "
                                           "/ double backward are not supported."):
        loss.backward()
    xs.grad = None
    loss = _run(xs, engine.tensor(W), engine.tensor(b), engine.tensor(t), None, engine,
                options={"allow_retain_graph": True})
    loss.backward(retain_graph=True)
    first = xs.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(xs.grad.numpy(), 2 * first)


def test_create_graph_gives_a_detached_gradient_as_torch():
    x, W, b, t = _case("float64")
    for lib in (engine, torch):
        xs = lib.tensor(x, requires_grad=True)
        loss = _run(xs, lib.tensor(W), lib.tensor(b), lib.tensor(t), None, lib, options={})
        g, = lib.autograd.grad(loss, xs, create_graph=True)
        assert not g.requires_grad
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
            g.sum().backward()
        if lib is engine:
            ours = g.numpy()
    np.testing.assert_allclose(ours, g.numpy(), rtol=1e-10)


def test_reduction_none_backward_recomputes_and_repeats():
    x, W, b, t = _case("float64")
    xs = engine.tensor(x, requires_grad=True)
    loss = _run(xs, engine.tensor(W), engine.tensor(b), engine.tensor(t), None, engine, reduction="none",
                options={"batch_chunk_size": 2})
    loss.sum().backward(retain_graph=True)
    first = xs.grad.numpy().copy()
    loss.sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), 2 * first)


def test_chunked_on_cuda(cuda):
    x, W, b, t = _case(n=9)
    check_op(lambda *a: _run(*a, None, engine, options={"batch_chunk_size": 4}),
             lambda *a: _run(*a, None, torch, options={"batch_chunk_size": 4}), [x, W, b, t], rtol=1e-4, device="cuda")


def test_float16_accumulates_in_float32():
    x, W, b, t = _case()
    check_op(lambda *a: _run(*a, None, engine, options={}), lambda *a: _run(*a, None, torch, options={}), [x, W, b, t],
             rtol=2e-2, dtype="float16")


@pytest.mark.parametrize("bias", [False, True])
def test_module_parameters_and_values_match_torch(bias):
    w = RNG.random(C).astype("float32")
    kw = dict(out_features=(2,), bias=bias, reduction="sum", label_smoothing=0.1)
    torch.manual_seed(3)
    theirs = torch.nn.LinearCrossEntropyLoss(D, C, weight=torch.tensor(w), **kw)
    engine.manual_seed(3)
    ours = engine.nn.LinearCrossEntropyLoss(D, C, weight=engine.tensor(w), **kw)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[k].numpy(), v.numpy(), rtol=1e-6)
    assert repr(ours) == repr(theirs)
    x, t = RNG.standard_normal((4, D)).astype("float32"), RNG.integers(0, C, (4, 2))
    check_op(ours, theirs, [x, t], rtol=1e-5)


def test_module_with_options_uses_the_chunked_path():
    kw = dict(options=None)
    ours = engine.nn.LinearCrossEntropyLoss(D, C, bias=True, **kw)
    ours.options = engine.nn.LinearCrossEntropyOptions(batch_chunk_size=2)
    x, t = engine.randn(5, D), engine.tensor(RNG.integers(0, C, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = ours(x, t)
    assert loss.grad_fn.name() == "_ChunkedLinearCrossEntropyBackward"
    ours.options = None
    np.testing.assert_allclose(loss.item(), ours(x, t).item(), rtol=1e-5)


@pytest.mark.parametrize("n,d,c,kw,size", [
    (4096, 64, 8192, {}, 32), (100, 64, 10, {}, 2), (100, 64, 10, {"chunking_method": "aspect_ratio:4"}, 32),
    (50, 8, 100, {"batch_chunk_size": 7}, 7), (50, 8, 100, {"chunking_method": None}, 50),
    (300, 8, 100, {"chunking_method": "aspect_ratio:2"}, 16)])
def test_options_resolve_chunk_sizes_as_torch(n, d, c, kw, size):
    ours = engine.nn.LinearCrossEntropyOptions(**kw)._adjust(n, d, c, engine.float32, engine.device("cpu"))
    theirs = torch.nn.LinearCrossEntropyOptions(**kw)._adjust(n, d, c, torch.float32, torch.device("cpu"))
    assert ours.batch_chunk_size == theirs.batch_chunk_size == size
    assert (ours.acc_policy, ours.chunking_method) == (theirs.acc_policy, theirs.chunking_method)


def _message(fn, lib):
    with pytest.raises(Exception) as info:
        fn(lib)
    return type(info.value).__name__, str(info.value)


ERRORS = {
    "input dim": lambda l: _run(l.zeros(2, 2, D), l.zeros(C, D), l.zeros(2, dtype=l.long), None, None, l),
    "weight dim": lambda l: _run(l.zeros(2, D), l.zeros(D), l.zeros(2, dtype=l.long), None, None, l),
    "in_features": lambda l: _run(l.zeros(2, D), l.zeros(C, D + 1), l.zeros(2, dtype=l.long), None, None, l),
    "bias shape": lambda l: _run(l.zeros(2, D), l.zeros(C, D), l.zeros(2, dtype=l.long), l.zeros(C + 1), None, l),
    "K-dim unbatched": lambda l: _run(l.zeros(D), l.zeros(C, 2, D), l.zeros(2, dtype=l.long), None, None, l),
    "prob ignore_index": lambda l: _run(l.zeros(2, D), l.zeros(C, D), l.zeros(2, C), None, None, l, ignore_index=1),
    "target range": lambda l: _run(l.zeros(2, D), l.zeros(C, D), l.full((2,), C, dtype=l.long), None, None, l,
                                   options={}),
    "acc_dtype": lambda l: _run(l.zeros(2, D), l.zeros(C, D), l.zeros(2, dtype=l.long), None, None, l,
                                options={"acc_dtype": l.float64}),
    "chunk conflict": lambda l: _run(l.zeros(64, D), l.zeros(C, D), l.zeros(64, dtype=l.long), None, None, l,
                                     options={"batch_chunk_size": 5, "chunking_method": "aspect_ratio"}),
    "acc_policy": lambda l: _opts(l, acc_policy="fast"),
    "chunking_method": lambda l: _opts(l, chunking_method="aspect_ratio:0"),
    "batch_chunk_size": lambda l: _opts(l, batch_chunk_size=0),
    "acc_dtype choice": lambda l: _opts(l, acc_dtype=l.int32),
    "module weight": lambda l: l.nn.LinearCrossEntropyLoss(D, C, weight=l.ones(C + 1)),
    "module smoothing": lambda l: l.nn.LinearCrossEntropyLoss(D, C, label_smoothing=1.5),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    ours, theirs = _message(ERRORS[name], engine), _message(ERRORS[name], torch)
    assert ours == (theirs if name != "acc_dtype choice" else (theirs[0], ours[1]))


def test_probability_target_requiring_grad_falls_back_and_gets_its_gradient():
    x, W, b, t = _case("float64", prob=True)
    with pytest.warns(UserWarning, match="target.requires_grad=True"):
        check_op(lambda x, W, t: _run(x, W, None, t, None, engine, options={}),
                 lambda x, W, t: _run(x, W, None, t, None, torch), [x, W, t], rtol=1e-10)


def test_chunked_under_no_grad_records_nothing():
    x, W, b, t = _case("float64")
    xs = engine.tensor(x, requires_grad=True)
    with engine.no_grad():
        loss = _run(xs, engine.tensor(W), engine.tensor(b), engine.tensor(t), None, engine, options={})
    expected = torch.nn.functional.linear_cross_entropy(torch.tensor(x), torch.tensor(W), torch.tensor(t),
                                                        linear_bias=torch.tensor(b))
    assert loss.grad_fn is None
    np.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-12)
