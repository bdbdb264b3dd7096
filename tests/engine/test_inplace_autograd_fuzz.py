"""In-place writes into views and their bases while autograd records, against torch: what a differential fuzz of
random programs (views, in-place ops, grad modes, backward) found different (``engine/autograd/views.py``).

A view taken before its base (or another view of it) was written in place reads its gradient through the new
history; a base that did not require grad until a write makes its views require grad; views made in no_grad or
inference mode, and outputs of ops that return several views, are refused in place (and in use after a write
through their base) with torch's messages; a no_grad view of a tensor that requires grad requires grad itself,
as a leaf no gradient reaches; the refusals come in torch's order, and an indexing write into a leaf says "a view
of a leaf" where torch's goes through a view (an int, None or a slice other than a whole dim's in the key).
"""
import numpy as np
import pytest
import torch

import engine
import engine.ops  # noqa: F401  (registers the in-place methods)

pytestmark = pytest.mark.slow  # torch's first backward with a gradient, and the CUDA emulation: 3 s together

RNG = np.random.default_rng(28)
X = RNG.standard_normal((3, 5))
W = RNG.standard_normal((3, 5))
G = RNG.standard_normal((3, 5))


def _leaves(L, dtype):
    return [L.tensor(a, dtype=getattr(L, dtype), requires_grad=True) for a in (X, W)]


# name: f(L, x, w) -> the tensor to backpropagate ``G``-weighted sums of (a list: each one)
GRADIENT_CASES = {
    # a view taken before its base is written in place reads the new history
    "view_then_base_mul_": lambda L, x, w: _then(b := x * 1, v := b[0], b.mul_(w), [v]),
    "view_then_base_exp_": lambda L, x, w: _then(b := x * 1, v := b[1:, ::2], b.exp_(), [v]),
    "view_then_sibling_write": lambda L, x, w: _then(b := x * 1, v := b[:, 1], b[1].mul_(3.0), [v * w[0, 0]]),
    "view_of_view_then_base_write": lambda L, x, w: _then(b := x * 1, v := b[1:], vv := v.t(), b.add_(w), [vv]),
    "expanded_view_then_base_write": lambda L, x, w: _then(b := x * 1, e := b[0:1].expand(2, 5), b.mul_(w), [e]),
    "diagonal_then_fill_through_reshape": lambda L, x, w: _then(
        b := x.clone(), d := b.diagonal(-1), r := b.reshape(-1), d.masked_fill_(L.tensor([True, False]), .6),
        r.zero_(), [b, d, r, d.reshape(-1)]),
    # a base that did not require grad takes a grad-requiring value: its earlier views require grad too
    "no_grad_base_copy_through_view": lambda L, x, w: _then(
        a := L.zeros(3, 5, dtype=x.dtype), v := a.t(), a[0].copy_(w[0]), [v * x.t()]),
    "no_grad_base_setitem": lambda L, x, w: _then(a := L.zeros(3, 5, dtype=x.dtype), v := a[:, ::2],
                                                  a.__setitem__(slice(1, 3), w[1:] * x[1:]), [v]),
    "as_strided_view_then_base_write": lambda L, x, w: _then(
        b := x * 1, s := b.as_strided((4,), (2,), 1), b.sigmoid_(), [s * w.reshape(-1)[:4]]),
}


def _then(*steps):
    """The last of ``steps`` (the earlier ones ran for their effects, in order)."""
    return steps[-1]


def _run(L, name, dtype):
    x, w = _leaves(L, dtype)
    outs = GRADIENT_CASES[name](L, x, w)
    total = sum((o * L.tensor(G.reshape(-1)[:o.numel()].reshape(tuple(o.shape)), dtype=o.dtype)).sum() for o in outs)
    total.backward()
    return [o.detach() for o in outs], [x.grad, w.grad]


def _close(ours, theirs, tol):
    if theirs is None:
        assert ours is None
        return
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradients_through_views_written_in_place(name, dtype):
    values, grads = _run(engine, name, dtype)
    expected_values, expected_grads = _run(torch, name, dtype)
    tol = 1e-5 if dtype == "float32" else 1e-10
    for ours, theirs in zip(values + grads, expected_values + expected_grads):
        _close(ours, theirs, tol)


def test_views_of_a_base_that_starts_requiring_grad():
    """Its earlier views require grad and are no leaves after the write, as in torch."""
    for L in (engine, torch):
        a = L.zeros(3, 4)
        v, d = a[1], a.diagonal()
        a[0].copy_(L.ones(4, requires_grad=True))
        assert (v.requires_grad, v.is_leaf, d.requires_grad, d.is_leaf) == (True, False, True, False)


def test_a_stale_view_as_the_root_of_backward():
    grads = []
    for L in (engine, torch):
        x = L.tensor(X, requires_grad=True)
        b = x * 1
        v = b[1]
        b.mul_(L.tensor(W))
        v.backward(L.tensor(G[0]))
        grads.append(np.asarray(x.grad.tolist()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


# name: f(L) running a program that torch refuses
ERROR_CASES = {
    "unbind_output": lambda L: (L.ones(3, 4, requires_grad=True) * 1).unbind(0)[1].mul_(2),
    "split_output": lambda L: (L.ones(3, 4, requires_grad=True) * 1).split(3, 1)[1].add_(1),
    "split_into_one_piece": lambda L: (L.ones(3, 4, requires_grad=True) * 1).split(3, 0)[0].add_(1),
    "chunk_output": lambda L: (L.ones(3, 4, requires_grad=True) * 1).chunk(2, 1)[0].sigmoid_(),
    "view_of_unbind_output": lambda L: (L.ones(3, 4, requires_grad=True) * 1).unbind(0)[0][1:].mul_(2),
    "unbind_of_plain_tensor_written_with_grad": lambda L: L.zeros(3, 4).unbind(0)[0].copy_(
        L.ones(4, requires_grad=True)),
    "no_grad_view_of_leaf": lambda L: _in_no_grad(L, lambda: L.ones(3, requires_grad=True)[1:])[0].mul_(2),
    "no_grad_view_of_plain_tensor": lambda L: _in_no_grad(L, lambda: L.zeros(3, 4)[0])[0].copy_(
        L.ones(4, requires_grad=True)),
    "view_of_no_grad_view": lambda L: _then(b := L.ones(3, 4, requires_grad=True) * 1,
                                            _in_no_grad(L, lambda: b[0])[0][1:].mul_(2)),
    "no_grad_unbind_output": lambda L: _then(b := L.ones(3, 4, requires_grad=True) * 1,
                                             _in_no_grad(L, lambda: b.unbind(0)[1])[0].mul_(2)),
    "inference_view": lambda L: _then(b := L.ones(3, 4, requires_grad=True) * 1,
                                      _in_inference(L, lambda: b[0])[0].mul_(2)),
    "view_of_inference_view": lambda L: _then(b := L.ones(3, 4, requires_grad=True) * 1,
                                              _in_inference(L, lambda: b[0])[0][1:].mul_(2)),
    "unbind_output_used_after_base_write": lambda L: _then(b := L.ones(3, 4, requires_grad=True) * 1,
                                                           u := b.unbind(0), b.mul_(2), u[1] * 2),
    "unbind_output_used_after_no_grad_write": lambda L: _then(b := L.ones(3, 4, requires_grad=True) * 1,
                                                              u := b.unbind(0), _in_no_grad(L, lambda: u[0].mul_(2)),
                                                              (u[0] * 2).sum().backward()),
    "no_grad_view_used_after_write": lambda L: _then(x := L.ones(3, 4, requires_grad=True),
                                                     v := _in_no_grad(L, lambda: x[0].mul_(2))[0], v * 2),
    "expanded_view_of_leaf": lambda L: L.ones(3, requires_grad=True).expand(2, 3).add_(1),
    "setitem_int_key_on_leaf": lambda L: L.ones(3, 4, requires_grad=True).__setitem__(1, 2.0),
    "setitem_int_and_index_key_on_leaf": lambda L: L.ones(3, 4, requires_grad=True).__setitem__(
        (L.tensor([0, 2]), 1), 2.0),
    "setitem_slice_key_on_leaf": lambda L: L.ones(3, 4, requires_grad=True).__setitem__(slice(1, 3), 2.0),
    "setitem_full_slice_on_leaf": lambda L: L.ones(3, 4, requires_grad=True).__setitem__(
        (Ellipsis, slice(None)), 2.0),
    "setitem_whole_dim_slice_on_leaf": lambda L: L.ones(3, 4, requires_grad=True).__setitem__(
        (slice(0, 3), slice(0, 9, 1)), 2.0),
    "setitem_negative_start_slice_on_leaf": lambda L: L.ones(3, 4, requires_grad=True).__setitem__(
        slice(-3, None), 2.0),
    "setitem_index_key_on_leaf": lambda L: L.ones(3, 4, requires_grad=True).__setitem__(L.tensor([0, 2]), 2.0),
    "inference_tensor_filled_in_no_grad": lambda L: _in_no_grad(L, _in_inference(L, lambda: L.ones(3) * 2)[0]
                                                                .zero_),
}


def _in_no_grad(L, make):
    with L.no_grad():
        return make(), None


def _in_inference(L, make):
    with L.inference_mode():
        return make(), None


def _error(L, name):
    with pytest.raises(RuntimeError) as info:
        ERROR_CASES[name](L)
    return str(info.value)


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_refusals_as_torch(name):
    assert _error(engine, name) == _error(torch, name).replace("torch.", "engine.")


# name: f(L) -> a tensor, for programs torch runs
ALLOWED_CASES = {
    "unbind_output_of_plain_tensor": lambda L: _then(a := L.arange(12.).reshape(3, 4), a.unbind(0)[1].zero_(), a),
    "split_output_in_no_grad": lambda L: _then(b := L.ones(3, 4, requires_grad=True) * 1,
                                               _in_no_grad(L, lambda: b.split(2, 1)[1].mul_(3)), b.detach()),
    "no_grad_view_written_in_no_grad": lambda L: _then(x := L.ones(3, requires_grad=True),
                                                       _in_no_grad(L, lambda: x[1:].mul_(2)), x.detach()),
    "no_grad_view_of_leaf_in_a_graph": lambda L: _then(x := L.ones(3, requires_grad=True),
                                                       v := _in_no_grad(L, lambda: x[1:])[0],
                                                       (v * 2).sum().backward(), L.tensor([x.grad is None])),
}


@pytest.mark.parametrize("name", sorted(ALLOWED_CASES))
def test_programs_torch_allows(name):
    assert ALLOWED_CASES[name](engine).tolist() == ALLOWED_CASES[name](torch).tolist()


def test_a_no_grad_view_requires_grad_as_a_leaf():
    for L in (engine, torch):
        x = L.ones(3, 4, requires_grad=True)
        with L.no_grad():
            v, i = x[0], x.view(L.int32)
        assert (v.requires_grad, v.is_leaf, v.grad_fn, i.requires_grad) == (True, True, None, False)


def test_gradients_through_views_written_in_place_on_cuda(cuda):
    x = engine.tensor(X, requires_grad=True, device="cuda")
    b = x * 1
    v, e = b[0], b[1:2].expand(2, 5)
    b.mul_(engine.tensor(W, device="cuda"))
    ((v * 2).sum() + e.sum()).backward()
    expected = np.zeros_like(X)
    expected[0], expected[1] = 2 * W[0], 2 * W[1]
    np.testing.assert_allclose(np.asarray(x.grad.cpu().tolist()), expected, rtol=1e-12)


def test_a_base_written_through_a_view_shows_copy_slices():
    for lib in (engine, torch):
        base = lib.ones(3, 4, requires_grad=True) * 1
        base[1:3].mul_(2)
        assert type(base.grad_fn).__name__ == "CopySlices" or base.grad_fn.name() == "CopySlices"


def test_version_is_torchs_int():
    for lib in (engine, torch):
        x = lib.zeros(3)
        view = x[1:]
        view.add_(1)
        x.detach().mul_(2)
        assert x._version == view._version == 2 and isinstance(x._version, int)
        with lib.inference_mode():
            inference = lib.zeros(2)
        with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
            inference._version
