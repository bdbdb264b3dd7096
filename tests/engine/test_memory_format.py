"""Memory formats as torch's: ``contiguous``/``is_contiguous``/``clone``/``to`` with ``memory_format=``,
``Module.to(memory_format=)``, and the channels-last outputs that torch's convolution, norms, pooling and
interpolation give a channels-last input, checked stride for stride against torch; values and gradients through
``check_op``. Dropout draws its mask in memory order, so after a convolution of a permuted NHWC map it drops the
elements torch drops."""
import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as F
from op_check import check_op

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 6, 9, 7)).astype(np.float32)
FORMATS = ["contiguous_format", "channels_last"]


def pair(array):
    return engine.from_numpy(array.copy()), torch.from_numpy(array.copy())


def nhwc_permuted(array):
    """An NCHW view of an NHWC-contiguous copy of ``array``, on both sides."""
    nhwc = np.ascontiguousarray(array.transpose(0, 2, 3, 1))
    return engine.from_numpy(nhwc).permute(0, 3, 1, 2), torch.from_numpy(nhwc.copy()).permute(0, 3, 1, 2)


def strides(t):
    return tuple(t.stride())


@pytest.mark.parametrize("fmt", FORMATS)
def test_contiguous_clone_and_to_lay_out_as_torch(fmt):
    ours, theirs = pair(X)
    for start in ((ours, theirs), nhwc_permuted(X), (ours[:, :, ::2], theirs[:, :, ::2])):
        o = start[0].contiguous(memory_format=getattr(engine, fmt))
        t = start[1].contiguous(memory_format=getattr(torch, fmt))
        assert strides(o) == strides(t)
        np.testing.assert_array_equal(o.numpy(), t.numpy())
        for check in FORMATS:
            assert o.is_contiguous(memory_format=getattr(engine, check)) == t.is_contiguous(
                memory_format=getattr(torch, check))
        assert strides(start[0].clone()) == strides(start[1].clone())
        assert strides(start[0].clone(memory_format=getattr(engine, fmt))) == strides(
            start[1].clone(memory_format=getattr(torch, fmt)))
        assert strides(start[0].to(memory_format=getattr(engine, fmt))) == strides(
            start[1].to(memory_format=getattr(torch, fmt)))
    assert ours.contiguous() is ours


@pytest.mark.parametrize("fmt", FORMATS)
def test_clone_in_the_layout_it_has_is_a_copy(fmt):
    """``clone(memory_format=f)`` of a tensor already laid out in ``f`` once handed back its own memory."""
    x = engine.from_numpy(X.copy())
    for start in (x, x.contiguous(memory_format=engine.channels_last)):
        copy = start.clone(memory_format=getattr(engine, fmt))
        copy.fill_(7.0)
        np.testing.assert_array_equal(start.numpy(), X)


@pytest.mark.parametrize("like", ["empty_like", "zeros_like", "ones_like", "rand_like", "randn_like"])
def test_like_functions_lay_out_as_torch(like):
    """``*_like`` keeps a dense input's layout (or takes the asked one), so ``bernoulli_`` fills the same elements."""
    for ours, theirs in (nhwc_permuted(X), pair(X), (pair(X)[0][:, :, ::2], pair(X)[1][:, :, ::2])):
        assert strides(getattr(engine, like)(ours)) == strides(getattr(torch, like)(theirs))
        if like.endswith("zeros_like"):
            for fmt in FORMATS:
                assert strides(engine.zeros_like(ours, memory_format=getattr(engine, fmt))) == strides(
                    torch.zeros_like(theirs, memory_format=getattr(torch, fmt)))
    ours, theirs = nhwc_permuted(X)
    engine.manual_seed(5)
    torch.manual_seed(5)
    np.testing.assert_array_equal(engine.empty_like(ours).bernoulli_(0.4).numpy(),
                                  torch.empty_like(theirs).bernoulli_(0.4).numpy())
    np.testing.assert_array_equal(engine.full_like(ours, 2.5).numpy(), torch.full_like(theirs, 2.5).numpy())


def test_channels_last_3d_and_refusals():
    volume = RNG.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    ours, theirs = pair(volume)
    assert strides(ours.contiguous(memory_format=engine.channels_last_3d)) == strides(
        theirs.contiguous(memory_format=torch.channels_last_3d))
    with pytest.raises(RuntimeError, match="^required rank 4 tensor to use channels_last format$"):
        ours.contiguous(memory_format=engine.channels_last)
    with pytest.raises(RuntimeError, match="^required rank 5 tensor to use channels_last_3d format$"):
        pair(X)[0].contiguous(memory_format=engine.channels_last_3d)
    with pytest.raises(RuntimeError, match="^preserve memory format is unsupported by the contiguous operator$"):
        nhwc_permuted(X)[0].contiguous(memory_format=engine.preserve_format)
    assert pair(X)[0].is_contiguous(memory_format=engine.preserve_format)


def test_module_to_channels_last_lays_out_4d_parameters():
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.Linear(5, 2))
    ours = engine.nn.Sequential(engine.nn.Conv2d(3, 4, 3), engine.nn.BatchNorm2d(4), engine.nn.Linear(5, 2))
    assert ours.to(memory_format=engine.channels_last) is ours
    theirs.to(memory_format=torch.channels_last)
    for (name, o), t in zip(ours.state_dict().items(), theirs.state_dict().values()):
        assert strides(o) == strides(t), name
    assert isinstance(ours[0].weight, engine.nn.Parameter)


# an ambiguous layout (N111, 1C1W transposed, a single channel) reads as contiguous where torch reads it so
LAYOUTS = {
    "nhwc": lambda a: nhwc_permuted(a),
    "nchw": lambda a: pair(a),
    "channels_last": lambda a: tuple(t.contiguous(memory_format=m.channels_last) for t, m in zip(pair(a),
                                                                                                  (engine, torch))),
    "n111_transposed": lambda a: tuple(t[:, :, :1, :1].contiguous().transpose(2, 3) for t in pair(a)),
    "one_channel_nhwc": lambda a: nhwc_permuted(a[:, :1]),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_convolution_output_layout_is_torchs(layout):
    ours, theirs = LAYOUTS[layout](X)
    weight = RNG.standard_normal((5, ours.shape[1], 3, 3)).astype(np.float32)
    o = F.conv2d(ours, engine.from_numpy(weight), padding=1)
    t = torch.nn.functional.conv2d(theirs, torch.from_numpy(weight), padding=1)
    assert strides(o) == strides(t)
    np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


def test_channels_last_weight_gives_a_channels_last_output():
    weight = RNG.standard_normal((5, 6, 1, 1)).astype(np.float32)
    o = F.conv2d(pair(X)[0], engine.from_numpy(weight).contiguous(memory_format=engine.channels_last))
    t = torch.nn.functional.conv2d(pair(X)[1], torch.from_numpy(weight).contiguous(memory_format=torch.channels_last))
    assert strides(o) == strides(t)


OPS = {
    "conv2d": (lambda f, m, x, w: f.conv2d(x, w, stride=2, padding=1, groups=2), (4, 3, 3, 3)),
    "conv_transpose2d": (lambda f, m, x, w: f.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
                         (6, 4, 3, 3)),
    "batch_norm_train": (lambda f, m, x: f.batch_norm(x, m.zeros(6), m.ones(6), training=True), None),
    "group_norm": (lambda f, m, x: f.group_norm(x, 3), None),
    "max_pool2d": (lambda f, m, x: f.max_pool2d(x, 3, 2, 1), None),
    "avg_pool2d": (lambda f, m, x: f.avg_pool2d(x, 2), None),
    "adaptive_avg_pool2d": (lambda f, m, x: f.adaptive_avg_pool2d(x, (3, 2)), None),
    "adaptive_max_pool2d": (lambda f, m, x: f.adaptive_max_pool2d(x, 2), None),
    "bilinear": (lambda f, m, x: f.interpolate(x, scale_factor=2, mode="bilinear"), None),
    "nearest": (lambda f, m, x: f.interpolate(x, size=(5, 11)), None),
}


@pytest.mark.parametrize("name", list(OPS))
def test_ops_keep_a_channels_last_input_channels_last(name):
    """The output's strides are torch's for a permuted NHWC input; values and input gradients equal torch's."""
    fn, weight_shape = OPS[name]
    ours, theirs = nhwc_permuted(X)
    args = [] if weight_shape is None else [RNG.standard_normal(weight_shape).astype(np.float32)]
    o = fn(F, engine, ours, *(engine.from_numpy(a) for a in args))
    t = fn(torch.nn.functional, torch, theirs, *(torch.from_numpy(a) for a in args))
    assert strides(o) == strides(t)
    permuted = lambda x, *rest: (x.permute(0, 3, 1, 2),) + rest  # noqa: E731
    check_op(lambda x, *w: fn(F, engine, *permuted(x, *w)), lambda x, *w: fn(torch.nn.functional, torch,
                                                                               *permuted(x, *w)),
             [np.ascontiguousarray(X.transpose(0, 2, 3, 1))] + args, rtol=1e-5)


def channels_last(array):
    return tuple(t.contiguous(memory_format=m.channels_last) for t, m in zip(pair(array), (engine, torch)))


BINARY_OPERANDS = {
    "channels_last_view+row_major": lambda: (tuple(t[:, :, :5, :5] for t in channels_last(X)), pair(X[:, :, 1:6, 2:7])),
    "row_major+channels_last_view": lambda: (pair(X[:, :, 1:6, 2:7]), tuple(t[:, :, :5, :5] for t in channels_last(X))),
    "channels_last+row_major": lambda: (channels_last(X), pair(X[::-1].copy())),
    "channels_last+bias": lambda: (channels_last(X), pair(X[:1, :, :1, :1].copy())),
}


@pytest.mark.parametrize("operands", list(BINARY_OPERANDS))
@pytest.mark.parametrize("op", ["add", "mul", "sub", "div"])
def test_binary_ops_lay_out_their_result_as_torch(operands, op):
    """torch's 4-D result follows its first operand's channels-last order where numpy's would go row-major."""
    (a, ta), (b, tb) = BINARY_OPERANDS[operands]()
    ours, theirs = getattr(engine, op)(a, b), getattr(torch, op)(ta, tb)
    assert strides(ours) == strides(theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_dropout_after_a_convolution_of_a_permuted_map_drops_torchs_elements():
    """A block that turns an NHWC map into NCHW (``permute``), convolves, normalises and drops out: the same seed
    drops the same elements as torch, in training."""
    weight = RNG.standard_normal((8, 6, 1, 1)).astype(np.float32)
    ours, theirs = nhwc_permuted(X)
    engine.manual_seed(3)
    torch.manual_seed(3)
    o = F.dropout(F.relu(F.batch_norm(F.conv2d(ours, engine.from_numpy(weight)), None, None, training=True)), 0.3)
    t = torch.nn.functional.dropout(torch.relu(torch.nn.functional.batch_norm(
        torch.nn.functional.conv2d(theirs, torch.from_numpy(weight)), None, None, training=True)), 0.3)
    np.testing.assert_array_equal(o.numpy() == 0, t.numpy() == 0)
    np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)
