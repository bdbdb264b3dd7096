"""F.pad against PyTorch: every mode on 2-D to 5-D inputs, asymmetric and negative pads, grads, errors."""
import numpy as np
import pytest
import torch.nn.functional as TF

import engine
import engine.nn.functional as F
from op_check import check_op, noncontiguous

RNG = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


CASES = [  # (input shape, pad): 1-, 2- and 3-dim pads, batched and unbatched
    ((2, 3, 7), (2, 3)),
    ((3, 6), (0, 4)),
    ((2, 3, 5, 6), (1, 2, 3, 0)),
    ((3, 5, 6), (4, 1, 2, 2)),
    ((1, 2, 4, 5, 6), (1, 0, 2, 3, 3, 1)),
    ((2, 4, 5, 3), (2, 2, 1, 3, 0, 1)),
]


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", CASES)
def test_pad_modes(mode, shape, pad):
    check_op(lambda x: F.pad(x, pad, mode), lambda x: TF.pad(x, pad, mode), [randn(*shape)], rtol=1e-6)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_full_width_and_noncontiguous_float64(mode):
    """Pads as wide as torch allows (n - 1 for reflect, n otherwise), on a transposed float64 input."""
    x = noncontiguous(randn(2, 3, 4, 5, dtype=np.float64))
    w, h = (4, 3) if mode == "reflect" else (5, 4)
    pad = (w, w - 1, h, 1)
    check_op(lambda x: F.pad(x, pad, mode), lambda x: TF.pad(x, pad, mode), [x], rtol=1e-12)


@pytest.mark.parametrize("mode,pad", [("constant", (-1, 2, 3, -2)), ("constant", (3, -6, -1, -1)),
                                      ("constant", (-2, -1, 0, 0, -1, 2)), ("reflect", (-1, 2, 2, -3)),
                                      ("replicate", (-2, 3, 1, -1)), ("circular", (-1, 2, 3, -2))])
def test_pad_negative_crops(mode, pad):
    check_op(lambda x: F.pad(x, pad, mode), lambda x: TF.pad(x, pad, mode), [randn(2, 3, 5, 6)])


def test_pad_constant_value_and_dtypes():
    check_op(lambda x: F.pad(x, (1, 2, 0, 1), value=-3.5), lambda x: TF.pad(x, (1, 2, 0, 1), value=-3.5),
             [randn(2, 3, 4)])
    ints = RNG.integers(-5, 5, (2, 3, 4))
    check_op(lambda x: F.pad(x, [2, 1], value=1.7), lambda x: TF.pad(x, [2, 1], value=1.7), [ints])
    check_op(lambda x: F.pad(x, (1, 1, 1, 1, 1, 1, 1, 1)), lambda x: TF.pad(x, (1, 1, 1, 1, 1, 1, 1, 1)),
             [randn(1, 2, 2, 3)])


def test_pad_reflect_backward_accumulates_into_mirrored_positions():
    x = engine.arange(4.0).reshape(1, 1, 4).requires_grad_()
    F.pad(x, (3, 2), mode="reflect").sum().backward()
    np.testing.assert_array_equal(x.grad.numpy().ravel(), [1, 3, 3, 2])
    x.grad = None
    F.pad(x, (3, 2), mode="replicate").sum().backward()
    np.testing.assert_array_equal(x.grad.numpy().ravel(), [4, 1, 1, 3])


def test_pad_errors():
    x4 = engine.randn(1, 1, 4, 4)
    with pytest.raises(RuntimeError, match=r"Argument #4: Padding size should be less than the corresponding "
                                           r"input dimension, but got: padding \(5, 5\) at dimension 3 of input "
                                           r"\[1, 1, 4, 4\]"):
        F.pad(x4, (5, 5, 1, 1), mode="reflect")
    with pytest.raises(RuntimeError, match=r"Argument #6: .* padding \(4, 1\) at dimension 2 of input "
                                           r"\[1, 1, 4, 4\]"):
        F.pad(x4, (1, 1, 4, 1), mode="reflect")
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 4D input tensor."):
        F.pad(x4, (1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x4, (1, 1, 1))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times the input "
                                           "dimension but got padding length 10 and input of dimension 4"):
        F.pad(x4, (1,) * 10)
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value argument'):
        F.pad(x4, (1, 1, 1, 1), mode="reflect", value=1)
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once."):
        F.pad(x4, (5, 1, 0, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(x4, (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match="resulted in a negative output size"):
        F.pad(x4, (-4, -1))
    with pytest.raises(RuntimeError, match=r"Expected 2D or 3D \(batch mode\) tensor with possibly 0 batch size "
                                           r"and other non-zero dimensions for input, but got: \[2, 0, 4\]"):
        F.pad(engine.randn(2, 0, 4), (1, 1), mode="reflect")
    with pytest.raises(TypeError, match="must be tuple of ints"):
        F.pad(x4, (1.0, 2))
