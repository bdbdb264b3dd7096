"""Convolutions and pools against PyTorch over random geometry: a seeded sample of the differential fuzzing
(odd sizes, groups, dilation, output_padding, ceil_mode, unbatched inputs, channels_last), the double backward
of a convolution, and the edge cases the fuzzing found (each test below the samples would have failed before its
fix): empty outputs of max unpooling, avg_pool3d's refusal of an input smaller than its window, max_pool1d's own
messages, torch's messages for empty non-batch dims and a few convolution geometries, pooling of empty batches,
a max_pool1d window wholly in the padding, and the single rounding of a bfloat16 adaptive_avg_pool3d."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import assert_same_error, check_op

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Using padding='same'")]


def _rand(seed, *shape, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


CONVS = [  # (name, input shape, weight shape, keyword arguments)
    ("conv1d", (3, 4, 9), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv2d", (1, 3, 7, 5), (6, 1, 2, 3), dict(stride=(1, 2), padding=(1, 0), groups=3)),
    ("conv2d", (2, 4, 6, 7), (4, 2, 2, 2), dict(padding="same", dilation=(2, 1), groups=2)),
    ("conv2d", (3, 5, 8), (2, 3, 3, 1), dict(padding="valid")),  # unbatched
    ("conv3d", (2, 2, 4, 5, 3), (4, 1, 2, 3, 1), dict(stride=(2, 1, 1), padding=(1, 0, 1), groups=2)),
    ("conv_transpose1d", (2, 4, 5), (4, 3, 3), dict(stride=3, padding=1, output_padding=2, groups=2)),
    ("conv_transpose2d", (3, 2, 4, 3), (2, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0),
                                                          dilation=(1, 2))),
    ("conv_transpose3d", (2, 3, 3, 2, 4), (3, 1, 2, 2, 1), dict(stride=2, output_padding=1, groups=3)),
]


@pytest.mark.parametrize("case", range(len(CONVS)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_convolution_sample(case, dtype):
    name, x_shape, w_shape, kwargs = CONVS[case]
    out_channels = w_shape[1] * kwargs.get("groups", 1) if "transpose" in name else w_shape[0]
    inputs = [_rand(case, *x_shape, dtype=dtype), _rand(case + 50, *w_shape, dtype=dtype),
              _rand(case + 99, out_channels, dtype=dtype)]
    check_op(lambda x, w, b: getattr(F, name)(x, w, b, **kwargs), lambda x, w, b: getattr(TF, name)(x, w, b, **kwargs),
             inputs, rtol=1e-5 if dtype == np.float32 else 1e-10, grad_rtol=1e-4 if dtype == np.float32 else 1e-9)


def test_conv2d_channels_last_output_and_double_backward():
    x, w = _rand(1, 2, 4, 6, 5), _rand(2, 6, 2, 3, 3)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ex, ew = engine.from_numpy(x).requires_grad_(), engine.from_numpy(w).requires_grad_()
    ty = TF.conv2d(tx.contiguous(memory_format=torch.channels_last), tw, stride=(2, 1), padding=1, groups=2)
    ey = F.conv2d(ex.contiguous(memory_format=engine.channels_last), ew, stride=(2, 1), padding=1, groups=2)
    assert ey.is_contiguous(memory_format=engine.channels_last) == ty.is_contiguous(memory_format=torch.channels_last)
    g = _rand(3, *ty.shape)
    tgo, ego = torch.tensor(g, requires_grad=True), engine.from_numpy(g).requires_grad_()
    tgx, tgw = torch.autograd.grad(ty, (tx, tw), tgo, create_graph=True)
    egx, egw = engine.autograd.grad(ey, (ex, ew), ego, create_graph=True)
    theirs = torch.autograd.grad((tgx ** 2).sum() + (tgw * tw).sum(), (tx, tw, tgo))
    ours = engine.autograd.grad((egx ** 2).sum() + (egw * ew).sum(), (ex, ew, ego))
    for e, t in zip(ours, theirs):
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-4, atol=1e-4)


POOLS = [  # (name, input shape, keyword arguments)
    ("max_pool1d", (2, 3, 10), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True,
                                     return_indices=True)),
    ("max_pool2d", (3, 7, 6), dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True)),
    ("max_pool3d", (1, 2, 5, 6, 4), dict(kernel_size=2, stride=(1, 2, 3), dilation=(2, 1, 1), return_indices=True)),
    ("avg_pool1d", (3, 2, 9), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (2, 3, 7, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, divisor_override=4)),
    ("avg_pool3d", (2, 2, 5, 4, 6), dict(kernel_size=(3, 2, 3), stride=2, padding=1, count_include_pad=False)),
    ("adaptive_max_pool2d", (2, 3, 7, 5), dict(output_size=(3, None), return_indices=True)),
    ("adaptive_avg_pool3d", (3, 5, 6, 7), dict(output_size=(2, 4, 3))),
    ("lp_pool2d", (2, 2, 7, 6), dict(norm_type=3, kernel_size=(2, 3), stride=2, ceil_mode=True)),
]


@pytest.mark.parametrize("case", range(len(POOLS)))
def test_pooling_sample(case):
    name, shape, kwargs = POOLS[case]
    x = _rand(case, *shape)
    if name.startswith("lp"):
        x = np.abs(x)
    check_op(lambda t: getattr(F, name)(t, **kwargs), lambda t: getattr(TF, name)(t, **kwargs), [x], grad_rtol=1e-4)


@pytest.mark.parametrize("nd,shape,kwargs", [
    (2, (2, 4, 9, 2), dict(kernel_size=(1, 4), padding=(0, 2))),
    (3, (2, 4, 1, 9, 2), dict(kernel_size=(1, 1, 4), padding=(0, 0, 2))),
    (3, (2, 9, 7, 3), dict(kernel_size=(3, 1, 4), padding=(1, 0, 2))),  # unbatched
])
def test_max_unpool_to_an_empty_output(nd, shape, kwargs):
    """Unpooling to a zero-size axis is torch's empty output, whatever the indices (torch's backward of it fails
    at a gather; ours gives zeros)."""
    pooled, indices = getattr(TF, f"max_pool{nd}d")(torch.tensor(_rand(4, *shape)), return_indices=True, **kwargs)
    check_op(lambda x: getattr(F, f"max_unpool{nd}d")(x, engine.from_numpy(indices.numpy()), **kwargs),
             lambda x: getattr(TF, f"max_unpool{nd}d")(x, indices, **kwargs), [pooled.numpy()], grad=False)


@pytest.mark.parametrize("name,shape,kwargs", [
    ("avg_pool3d", (2, 3, 8, 8, 2), dict(kernel_size=4, stride=2, padding=1)),  # padded, the window would fit
    ("avg_pool3d", (3, 2, 8, 4), dict(kernel_size=3, stride=(3, 1, 2), padding=1, count_include_pad=False)),
    ("avg_pool3d", (1, 2, 5, 5, 3), dict(kernel_size=4, padding=(1, 0, 2), divisor_override=3)),
    ("lp_pool3d", (1, 2, 2, 5, 9), dict(norm_type=2, kernel_size=(3, 4, 3), ceil_mode=True)),
])
def test_avg_pool3d_refuses_an_input_smaller_than_its_window(name, shape, kwargs):
    x = _rand(5, *shape)
    assert_same_error(lambda: getattr(F, name)(engine.from_numpy(x), **kwargs),
                      lambda: getattr(TF, name)(torch.tensor(x), **kwargs))


@pytest.mark.parametrize("kwargs", [
    dict(kernel_size=2, padding=2),
    dict(kernel_size=[3], padding=[2]),
    dict(kernel_size=4, dilation=2),  # output size 0
    dict(kernel_size=3, stride=1, dilation=3),  # output size -1
    dict(kernel_size=2, padding=2, return_indices=True),  # with indices: the 2-D pooling's messages
    dict(kernel_size=4, dilation=2, return_indices=True),
])
def test_max_pool1d_messages(kwargs):
    x = _rand(6, 2, 3, 5)
    assert_same_error(lambda: F.max_pool1d(engine.from_numpy(x), **kwargs),
                      lambda: TF.max_pool1d(torch.tensor(x), **kwargs))


def test_bfloat16_adaptive_avg_pool3d_rounds_once():
    """The two 2-d passes run in float32: each average is the float32 one rounded once to bfloat16 (within half
    a bfloat16 step: 2 ** -8 of its size), not rounded twice."""
    x = engine.from_numpy(_rand(23, 2, 3, 5, 7, 6)).to(engine.bfloat16)
    exact = TF.adaptive_avg_pool3d(torch.tensor(x.float().numpy()), (2, 3, 4)).numpy()
    ours = F.adaptive_avg_pool3d(x, (2, 3, 4))
    assert ours.dtype is engine.bfloat16
    assert np.all(np.abs(ours.float().numpy() - exact) <= 2.0 ** -8 * np.abs(exact))


@pytest.mark.parametrize("run", [
    lambda: check_op(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
                     lambda x, w, b: TF.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
                     [_rand(7, 2, 4, 5, 6), _rand(8, 6, 2, 3, 2), _rand(9, 6)], grad_rtol=1e-4, device="cuda"),
    lambda: check_op(lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1, dilation=2, output_padding=1,
                                                     groups=2),
                     lambda x, w: TF.conv_transpose1d(x, w, stride=2, padding=1, dilation=2, output_padding=1,
                                                      groups=2),
                     [_rand(0, 3, 4, 5), _rand(1, 4, 2, 2)], device="cuda"),
    lambda: check_op(lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
                     lambda x: TF.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
                     [_rand(10, 2, 3, 7, 6)], device="cuda"),
])
def test_on_the_gpu(cuda, run):
    run()


@pytest.mark.parametrize("name,x_shape,w_shape,kwargs", [
    ("conv1d", (2, 3, 5), (0, 3, 3), {}),  # fewer filters than groups
    ("conv2d", (2, 3, 5, 5), (0, 1, 3, 3), dict(groups=3)),
    ("conv_transpose1d", (2, 4, 5), (4, 2, 3), dict(output_padding=2)),  # the 2-D message, over a unit height
    ("conv_transpose2d", (2, 4, 5, 5), (4, 2, 3, 3), dict(output_padding=(1, 2), stride=(2, 1))),
    ("conv_transpose2d", (2, 4, 5, 5), (4, 2, 3, 3), dict(bias=3)),
])
def test_convolution_messages(name, x_shape, w_shape, kwargs):
    x, w = _rand(11, *x_shape), _rand(12, *w_shape)
    bias = kwargs.pop("bias", None)
    b = None if bias is None else _rand(13, bias)
    assert_same_error(
        lambda: getattr(F, name)(engine.from_numpy(x), engine.from_numpy(w),
                                 None if b is None else engine.from_numpy(b), **kwargs),
        lambda: getattr(TF, name)(torch.tensor(x), torch.tensor(w), None if b is None else torch.tensor(b), **kwargs))


@pytest.mark.parametrize("name,shape,kwargs", [
    ("max_pool1d", (2, 0, 4), dict(kernel_size=2)),
    ("max_pool1d", (2, 3, 0), dict(kernel_size=2, return_indices=True)),
    ("avg_pool1d", (3, 0), dict(kernel_size=2)),
    ("max_pool2d", (2, 0, 4, 4), dict(kernel_size=2)),
    ("avg_pool2d", (3, 0, 4), dict(kernel_size=2)),
    ("lp_pool2d", (0, 4, 4), dict(norm_type=2, kernel_size=2)),
    ("adaptive_avg_pool1d", (2, 3, 0), dict(output_size=2)),
    ("adaptive_max_pool1d", (2, 0, 4), dict(output_size=2)),
    ("adaptive_avg_pool2d", (3, 0, 4), dict(output_size=2)),
    ("adaptive_max_pool2d", (2, 0, 4, 4), dict(output_size=2)),
    ("adaptive_max_pool2d", (2, 3, 5, 0), dict(output_size=(2, None))),
    ("max_pool3d", (2, 3, 0, 4, 4), dict(kernel_size=2)),
    ("avg_pool3d", (3, 4, 4, 0), dict(kernel_size=2)),
    ("adaptive_avg_pool3d", (2, 0, 3, 5, 4), dict(output_size=2)),
    ("adaptive_max_pool3d", (3, 4, 0, 4), dict(output_size=2)),
    ("fractional_max_pool2d", (2, 0, 4, 4), dict(kernel_size=2, output_size=2)),
    ("fractional_max_pool3d", (3, 4, 0, 4), dict(kernel_size=2, output_size=2)),
])
def test_pooling_refuses_empty_non_batch_dims(name, shape, kwargs):
    x = np.zeros(shape, np.float32)
    assert_same_error(lambda: getattr(F, name)(engine.from_numpy(x), **kwargs),
                      lambda: getattr(TF, name)(torch.tensor(x), **kwargs))


@pytest.mark.parametrize("name,shape,kwargs", [
    ("fractional_max_pool2d", (0, 3, 5, 5), dict(kernel_size=2, output_size=3)),
    ("fractional_max_pool3d", (0, 2, 5, 5, 4), dict(kernel_size=2, output_size=2)),
    ("adaptive_max_pool3d", (0, 4, 4, 4), dict(output_size=2, return_indices=True)),  # unbatched, no channels
])
def test_pooling_of_empty_inputs(name, shape, kwargs):
    nd = 3 if "3d" in name else 2
    if name.startswith("fractional"):
        samples = np.zeros((0, shape[1], nd), np.float32)
        kwargs = dict(kwargs, _random_samples=samples)
    ours = getattr(F, name)(engine.from_numpy(np.zeros(shape, np.float32)),
                            **{k: engine.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
    theirs = getattr(TF, name)(torch.zeros(shape),
                               **{k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()})
    ours, theirs = (ours[0], theirs[0]) if isinstance(theirs, tuple) else (ours, theirs)
    assert tuple(ours.shape) == tuple(theirs.shape)


@pytest.mark.parametrize("unbatched", [False, True])
@pytest.mark.parametrize("ceil_mode,return_indices", [(False, True), (True, False)])
def test_max_pool1d_window_wholly_in_the_padding(unbatched, ceil_mode, return_indices):
    """A window that sees only padding gives -inf and torch's index, past the plane; its gradient reaches no
    input element (torch writes it into the next plane's memory), and its double backward picks nothing."""
    x = _rand(14, *((2, 1) if unbatched else (3, 2, 1)))
    kwargs = dict(kernel_size=2, stride=3, padding=1, dilation=2, ceil_mode=ceil_mode, return_indices=return_indices)
    ex = engine.from_numpy(x).requires_grad_()
    ours = F.max_pool1d(ex, **kwargs)
    theirs = TF.max_pool1d(torch.tensor(x), **kwargs)
    if return_indices:
        np.testing.assert_array_equal(ours[1].numpy(), theirs[1].numpy())
        ours, theirs = ours[0], theirs[0]
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.numpy())
    go = engine.ones(ours.shape, requires_grad=True)
    (gx,) = engine.autograd.grad(ours, (ex,), go, create_graph=True)
    np.testing.assert_array_equal(gx.detach().numpy(), np.zeros_like(x))
    (ggo,) = engine.autograd.grad((gx * ex).sum(), (go,))  # the double backward gathers nothing there either
    np.testing.assert_array_equal(ggo.numpy(), np.zeros(tuple(ours.shape), np.float32))
