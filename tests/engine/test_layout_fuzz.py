"""Differential fuzz of result layouts against torch: the strides (and so ``is_contiguous``, channels-last-ness and
whether ``.view(-1)`` works) of what reductions, scans, sorts, copies, conversions, indexing and binary ops give
for inputs that are transposed, permuted, sliced with steps, expanded or channels-last.

Each case builds the same seeded input in both libraries by the same view ops, runs the op, and asserts equal
values and equal strides (those of size-1 dims ignored, as torch ignores them). The sample is the cases a sweep
over many ops and layouts found apart before their fixes: torch allocates reductions, scans, ``roll``,
``gather``, ``tril`` and ``masked_fill`` row-major (numpy followed the input's order, so a user's ``.view(-1)``
raised); ``sort``, ``flip``, ``index_put``, ``clone`` and ``.to(dtype)`` keep the input's layout, with an
expanded dim not innermost; a binary op (and ``where``) follows its first operand's order.
"""
import numpy as np
import pytest
import torch

import engine

_SEED = 20261207

#: name -> (base shape, the view ops that make the input from a contiguous base)
LAYOUTS = {
    "transposed": ((4, 6), lambda m, t: t.t()),
    "permuted": ((3, 4, 5), lambda m, t: t.permute(2, 0, 1)),
    "permuted2": ((3, 4, 5), lambda m, t: t.permute(1, 2, 0)),
    "stepped": ((4, 10), lambda m, t: t[:, ::2]),
    "stepped_permuted": ((6, 10, 3), lambda m, t: t[::2].permute(2, 1, 0)),
    "expanded": ((1, 4, 1), lambda m, t: t.expand(3, 4, 5)),
    "channels_last": ((2, 3, 4, 5), lambda m, t: t.contiguous(memory_format=m.channels_last)),
    "channels_last_3d": ((2, 3, 2, 4, 5), lambda m, t: t.contiguous(memory_format=m.channels_last_3d)),
}


def _input(m, layout, seed):
    shape, view = LAYOUTS[layout]
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return view(m, m.tensor(data))


def _strides(t):
    return tuple(s if n != 1 else None for s, n in zip(t.stride(), t.shape))


def _check(op, *layouts, values=True):
    """``op(module, *inputs)`` in both libraries: same shape, dtype, strides and (where ``values``) values."""
    seeds = [_SEED + i for i in range(len(layouts))]
    theirs = op(torch, *[_input(torch, lay, s) for lay, s in zip(layouts, seeds)])
    ours = op(engine, *[_input(engine, lay, s) for lay, s in zip(layouts, seeds)])
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert _strides(ours) == _strides(theirs), (ours.stride(), theirs.stride())
    assert ours.is_contiguous() == theirs.is_contiguous()
    if values:
        np.testing.assert_allclose(_values(ours), _values(theirs), rtol=1e-5, atol=1e-6)


def _values(t):
    """A result's values as a numpy array (complex ones as pairs of floats)."""
    t = t.detach()
    return t.resolve_conj().numpy() if t.is_complex() else t.float().numpy()


# ---- torch gives these row-major whatever the input's layout ---------------------------------------------------
ROW_MAJOR = {
    "sum-1": lambda m, x: x.sum(-1),
    "mean0": lambda m, x: x.mean(0),
    "amax0_keepdim": lambda m, x: x.amax(0, keepdim=True),
    "std-1": lambda m, x: x.std(-1),
    "logsumexp0": lambda m, x: m.logsumexp(x, 0),
    "norm-1": lambda m, x: m.norm(x, dim=-1),
    "prod0": lambda m, x: x.prod(0),
    "max_values": lambda m, x: x.max(-1).values,
    "min_indices": lambda m, x: x.min(0).indices,
    "argmax0": lambda m, x: x.argmax(0),
    "median_values": lambda m, x: m.median(x, -1).values,
    "nanmedian_values": lambda m, x: m.nanmedian(x, 0).values,
    "any0": lambda m, x: (x > 0).any(0),
    "count_nonzero-1": lambda m, x: m.count_nonzero(x, -1),
    "var_mean": lambda m, x: m.var_mean(x, 0)[0],
    "cumsum0": lambda m, x: x.cumsum(0),
    "cumprod-1": lambda m, x: x.cumprod(-1),
    "logcumsumexp0": lambda m, x: m.logcumsumexp(x, 0),
    "cummax_values": lambda m, x: m.cummax(x, -1).values,
    "cummin_indices": lambda m, x: m.cummin(x, 0).indices,
    "roll0": lambda m, x: m.roll(x, 1, 0),
    "gather-1": lambda m, x: m.gather(x, -1, m.zeros(x.shape, dtype=m.long)),
    "tril": lambda m, x: m.tril(x),
    "masked_fill": lambda m, x: x.masked_fill(x > 0, 1.0),
    "ravel": lambda m, x: m.ravel(x),
    "narrow_copy": lambda m, x: x.narrow_copy(1, 1, 2),
}


@pytest.mark.parametrize("layout", ["transposed", "permuted", "channels_last"])
@pytest.mark.parametrize("op", sorted(ROW_MAJOR))
def test_results_torch_lays_out_row_major(op, layout):
    _check(ROW_MAJOR[op], layout)


@pytest.mark.parametrize("op", ["sum-1", "cumsum0", "max_values"])
@pytest.mark.parametrize("layout", ["permuted2", "stepped_permuted", "channels_last_3d", "expanded"])
def test_reductions_of_other_layouts_are_row_major(op, layout):
    _check(ROW_MAJOR[op], layout)


def test_a_reduction_of_a_permuted_tensor_can_be_viewed():
    """The brief's example: ``y.sum(-1).view(-1)`` of a permuted ``y`` works, as in torch."""
    y = engine.arange(60.0).reshape(3, 4, 5).permute(2, 0, 1)
    assert y.sum(-1).stride() == (3, 1)
    np.testing.assert_array_equal(y.sum(-1).view(-1).numpy(), y.numpy().sum(-1).reshape(-1))


def test_ravel_of_a_uniformly_strided_tensor_is_a_contiguous_copy():
    x = engine.arange(40.0).reshape(4, 10)[:, ::2]
    flat = engine.ravel(x)
    assert flat.is_contiguous() and flat.stride() == (1,)
    np.testing.assert_array_equal(flat.numpy(), x.numpy().ravel())


def test_roll_keeps_channels_last():
    _check(lambda m, x: m.roll(x, 1, 0), "channels_last")
    _check(lambda m, x: m.roll(x, (1, 2), (1, 3)), "channels_last")


@pytest.mark.parametrize("shifts,dims", [(0, 1), (3, 1), ((2, 0), (1, 2))])
def test_roll_by_whole_turns_is_row_major(shifts, dims):
    """torch rolls a dim by a multiple of its size as a cat with an empty piece: a row-major result."""
    _check(lambda m, x: m.roll(x, shifts, dims), "channels_last")


CHANNELS_LAST_KEPT = {
    "pad_constant": lambda m, x: m.nn.functional.pad(x, (1, 2, 0, 3), value=0.5),
    "pad_reflect": lambda m, x: m.nn.functional.pad(x, (1, 2, 0, 3), mode="reflect"),
    "pad_replicate": lambda m, x: m.nn.functional.pad(x, (1, 2, 3, 1), mode="replicate"),
    "pad_circular_row_major": lambda m, x: m.nn.functional.pad(x, (1, 2, 0, 3), mode="circular"),
    "pixel_shuffle": lambda m, x: m.nn.functional.pixel_shuffle(m.cat([x] * 4, 1), 2),
    "pixel_unshuffle": lambda m, x: m.nn.functional.pixel_unshuffle(x[:, :, :4, :4], 2),
    "local_response_norm": lambda m, x: m.nn.functional.local_response_norm(x, 2),
}


@pytest.mark.parametrize("op", sorted(CHANNELS_LAST_KEPT))
def test_padding_shuffles_and_lrn_keep_channels_last(op):
    _check(CHANNELS_LAST_KEPT[op], "channels_last")


def test_padding_and_lrn_of_other_layouts():
    _check(lambda m, x: m.nn.functional.pad(x, (2, 1, 1, 1, 1, 0), mode="replicate"), "channels_last_3d")
    _check(lambda m, x: m.nn.functional.local_response_norm(x, 3), "permuted")


#: ops whose layout a sweep of nn.functional found apart: name -> (op, the layouts it ran on)
FUNCTIONAL_LAYOUTS = {
    "logsigmoid_row_major": (lambda m, x: m.nn.functional.logsigmoid(x), ["channels_last", "permuted"]),
    "rrelu_eval_row_major": (lambda m, x: m.nn.functional.rrelu(x), ["channels_last", "permuted"]),
    "rms_norm_suggested": (lambda m, x: m.nn.functional.rms_norm(x, x.shape[-1:]),
                           ["channels_last", "channels_last_3d", "permuted"]),
    "channel_shuffle_suggested": (lambda m, x: m.nn.functional.channel_shuffle(m.cat([x, x], 1), 2),
                                  ["channels_last", "channels_last_3d", "permuted"]),
    "index_fill_preserved": (lambda m, x: x.index_fill(1, m.tensor([1]), 0.0), ["channels_last", "stepped_permuted"]),
    "complex_first_operand": (lambda m, x: m.complex(x, x.contiguous()), ["channels_last", "permuted"]),
    "polar_first_operand": (lambda m, x: m.polar(x.abs(), x.contiguous()), ["channels_last"]),
    "cosine_similarity_row_major": (lambda m, x: m.nn.functional.cosine_similarity(x, x + 1, 1),
                                    ["channels_last", "permuted"]),
    "pairwise_distance_row_major": (lambda m, x: m.nn.functional.pairwise_distance(x, x + 1), ["channels_last"]),
    "mse_none_first_operand": (lambda m, x: m.nn.functional.mse_loss(x, m.zeros(x.shape), reduction="none"),
                               ["channels_last", "permuted"]),
    "huber_none_first_operand": (lambda m, x: m.nn.functional.huber_loss(x, m.zeros(x.shape), reduction="none"),
                                 ["channels_last"]),
    "clamp_tensor_bound": (lambda m, x: m.clamp(x, min=m.zeros(x.shape)), ["channels_last", "permuted"]),
}


@pytest.mark.parametrize("case", sorted(FUNCTIONAL_LAYOUTS))
def test_functional_ops_lay_out_as_torch(case):
    op, layouts = FUNCTIONAL_LAYOUTS[case]
    for layout in layouts:
        _check(op, layout)


# ---- advanced indexing: torch's index kernel orders the result's dims by the input's and the indices' strides ----
ADVANCED_KEYS = {
    "first": lambda m, x: x[[1, 0]],
    "second": lambda m, x: x[:, [0, 2, 1]],
    "last": lambda m, x: x[..., [1, 0, 2]],
    "adjacent_pair": lambda m, x: x[:, [0, 1], [2, 1]],
    "separated_pair": lambda m, x: x[[0, 1], :, [2, 1]],
    "transposed_2d_index": lambda m, x: x[:, m.tensor([[0, 1, 2], [2, 1, 0]]).t()],
    "broadcast_indices": lambda m, x: x[:, [[0], [1]], [1, 2, 0]],
    "mask": lambda m, x: x[x > 0],
}


@pytest.mark.parametrize("layout", ["permuted", "permuted2", "stepped_permuted", "channels_last"])
@pytest.mark.parametrize("key", sorted(ADVANCED_KEYS))
def test_advanced_indexing_lays_out_as_torch(key, layout):
    _check(ADVANCED_KEYS[key], layout)


# ---- torch keeps these in the input's layout ---------------------------------------------------------------------
PRESERVED = {
    "sort-1": lambda m, x: m.sort(x, -1).values,
    "sort0_descending": lambda m, x: m.sort(x, 0, descending=True).values,
    "sort_indices": lambda m, x: m.sort(x, 0).indices,
    "argsort-1": lambda m, x: m.argsort(x, -1),
    "flip0": lambda m, x: m.flip(x, (0,)),
    "index_put": lambda m, x: x.index_put((m.tensor([0]),), m.tensor(1.0)),
    "clone": lambda m, x: x.clone(),
    "double": lambda m, x: x.double(),
    "half": lambda m, x: x.half(),
    "to_int": lambda m, x: x.to(m.int32),
    "nan_to_num": lambda m, x: m.nan_to_num(x),
}


@pytest.mark.parametrize("layout", ["transposed", "stepped_permuted", "expanded", "channels_last"])
@pytest.mark.parametrize("op", sorted(PRESERVED))
def test_results_torch_lays_out_as_the_input(op, layout):
    if op.startswith(("sort", "argsort")) and layout == "expanded":
        pytest.skip("equal elements: which of them sorts first is not compared")
    _check(PRESERVED[op], layout)


@pytest.mark.parametrize("fmt", ["empty_like", "zeros_like", "full_like"])
def test_like_factories_of_a_gapped_tensor_keep_its_order(fmt):
    make = {"empty_like": lambda m, x: m.empty_like(x), "zeros_like": lambda m, x: m.zeros_like(x),
            "full_like": lambda m, x: m.full_like(x, 2.0)}[fmt]
    _check(make, "stepped_permuted", values=fmt != "empty_like")


def test_sort_of_a_transposed_tensor_back_propagates():
    data = np.random.default_rng(_SEED).standard_normal((4, 6)).astype(np.float32)
    grads = []
    for m in (engine, torch):
        x = m.tensor(data, requires_grad=True)
        values = m.sort(x.t(), 0).values
        (values * m.arange(24.0).reshape(6, 4)).sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(*grads)


# ---- binary ops follow their first operand's order ---------------------------------------------------------------
BINARY = {
    "add": lambda m, a, b: a + b,
    "sub_alpha": lambda m, a, b: m.sub(a, b, alpha=2),
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "maximum": lambda m, a, b: m.maximum(a, b),
    "atan2": lambda m, a, b: m.atan2(a, b),
    "pow": lambda m, a, b: m.pow(a.abs(), b),
    "lt": lambda m, a, b: a < b,
    "lerp": lambda m, a, b: m.lerp(a, b, 0.3),
    "where": lambda m, a, b: m.where(a > 0, a, b),
    "where_scalar": lambda m, a, b: m.where(a > 0, 0.5, b),
}


@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_op_of_a_transposed_and_a_row_major_tensor_stays_transposed(op):
    _check(lambda m, a: BINARY[op](m, a, a.contiguous() + 1), "transposed")


@pytest.mark.parametrize("layout", ["permuted", "stepped_permuted", "channels_last_3d"])
@pytest.mark.parametrize("op", ["add", "mul", "lt", "where"])
def test_binary_op_follows_its_first_operand(op, layout):
    _check(lambda m, a: BINARY[op](m, a, a.contiguous() * 0.5), layout)


def test_binary_op_with_a_half_operand_and_a_scalar_keeps_an_expanded_dim_outside():
    _check(lambda m, a: a.half() * 3, "expanded")


# ---- the CUDA path ------------------------------------------------------------------------------------------------
def test_layouts_on_cuda(cuda):
    data = np.random.default_rng(_SEED).standard_normal((4, 6)).astype(np.float32)
    x = engine.tensor(data, device="cuda").t()
    assert x.sum(0).stride() == (1,) and x.cumsum(0).stride() == (4, 1)
    assert engine.sort(x, 0).values.stride() == (1, 6)
    assert (x + x.contiguous()).stride() == (1, 6) and engine.where(x > 0, x, x.contiguous()).stride() == (1, 6)
    np.testing.assert_allclose(engine.sort(x, 0).values.cpu().numpy(), np.sort(data.T, 0))
    np.testing.assert_allclose((x + x.contiguous()).cpu().numpy(), 2 * data.T)
    assert x.flip(0).stride() == (1, 6) and x.double().stride() == (1, 6) and x.masked_fill(x > 0, 0).stride() == (4, 1)
    np.testing.assert_allclose(x.flip(0).cpu().numpy(), data.T[::-1])
    expanded = engine.tensor(data[:1], device="cuda").expand(3, 4, 6).permute(1, 0, 2)
    assert expanded.double().stride() == (18, 6, 1) and engine.nan_to_num(expanded).stride() == (18, 6, 1)
