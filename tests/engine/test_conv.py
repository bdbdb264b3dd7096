"""conv1d / conv2d / conv3d / conv_transpose1d/2d/3d through nn.functional (and Conv3d, ConvTranspose3d) against
PyTorch."""
import re
import tracemalloc

import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as F
from op_check import check_op

rng = np.random.default_rng(3)


def rand(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("n,c,h,w,o,k,stride,padding,dilation,groups,bias", [
    (2, 3, 9, 11, 4, 3, 1, 1, 1, 1, True),
    (1, 4, 8, 7, 6, 3, 2, 0, 1, 2, False),
    (3, 4, 10, 9, 4, (3, 2), (2, 1), (1, 0), (2, 1), 4, True),
    (2, 6, 7, 7, 6, 1, 1, 0, 1, 1, True),
    (2, 5, 12, 13, 3, 5, 3, 2, 1, 1, True),
    (2, 6, 11, 10, 4, 3, 2, 1, 1, 1, True),  # strided input gradient by phases (the one above: col2im)
    (2, 3, 8, 9, 4, 2, 1, "same", 1, 1, True),
    (2, 3, 8, 9, 4, 3, 1, "same", 2, 1, False),
    (2, 3, 8, 9, 4, 3, 1, "valid", 1, 1, True),
    # depthwise: the tap-by-tap kernel (3x3, stride 1 and 2 phases), the einsum one (5x5), and
    # a channel multiplier of 2 (general grouped path)
    (2, 6, 11, 9, 6, 3, 1, 1, 1, 6, True),
    (3, 5, 12, 11, 5, 3, 2, 1, 1, 5, False),
    (2, 4, 13, 10, 4, 5, 1, 4, 2, 4, True),
    (2, 3, 10, 11, 3, 3, 3, 1, 2, 3, True),
    (2, 4, 9, 8, 4, 2, 1, "same", 1, 4, True),  # uneven padding (bottom/right only)
    (2, 3, 9, 8, 6, 3, 1, 1, 1, 3, True),
    # windows hanging far over the padding (ASPP's large rates, 3x3 layers on planes of 1 or 2 pixels):
    # computed tap by tap, over the whole batch for small blocks of outputs, image by image from whole input
    # rows or copied windows for large blocks or one image; strided and grouped, and windows that see only padding.
    # Their gradients too are summed tap by tap, over the whole batch
    (2, 4, 9, 10, 5, 3, 1, 6, 6, 1, True),
    (2, 2, 45, 45, 3, 3, 1, 10, 10, 1, False),
    (3, 4, 7, 6, 4, 3, 2, 3, 2, 2, True),
    (2, 3, 6, 6, 2, 3, 1, 8, 1, 1, True),
    (3, 6, 1, 1, 5, 3, 1, 1, 1, 1, True),
    (3, 4, 2, 3, 6, 3, 1, 1, 1, 2, False),
    (1, 3, 5, 4, 4, 3, 1, 4, 2, 1, True),
])
def test_conv2d(n, c, h, w, o, k, stride, padding, dilation, groups, bias):
    kh, kw = (k, k) if isinstance(k, int) else k
    inputs = [rand(n, c, h, w), rand(o, c // groups, kh, kw)] + ([rand(o)] if bias else [])

    def call(lib_f):
        return lambda x, wt, *b: lib_f.conv2d(x, wt, b[0] if b else None, stride, padding, dilation, groups)
    check_op(call(F), call(torch.nn.functional), inputs, rtol=1e-4)


@pytest.mark.parametrize("grad_of", ["input", "weight"])
def test_conv2d_gradient_of_one_side_where_taps_read_padding(grad_of):
    """A frozen layer (weight gradient not needed) or a frozen input, on the tap-by-tap backward."""
    x, w = rand(2, 6, 5, 7), rand(4, 3, 3, 3)
    ours = [engine.tensor(x, requires_grad=grad_of == "input"), engine.tensor(w, requires_grad=grad_of == "weight")]
    ref = [torch.tensor(x, requires_grad=grad_of == "input"), torch.tensor(w, requires_grad=grad_of == "weight")]
    F.conv2d(*ours, None, 2, 4, 3, 2).square().sum().backward()
    torch.nn.functional.conv2d(*ref, None, 2, 4, 3, 2).square().sum().backward()
    side = 0 if grad_of == "input" else 1
    assert ours[1 - side].grad is None
    np.testing.assert_allclose(ours[side].grad.numpy(), ref[side].grad.numpy(), rtol=1e-4, atol=1e-4)


def test_conv2d_backward_memory_does_not_grow_with_the_dilation():
    """ASPP's rate-36 layer on an 8x10 map reads only through its centre tap. Its backward once padded the
    column matrix by the other taps' reach: 2048 channels at batch 2 took 1 GB (tracemalloc sees numpy's
    allocations: 136 MB here before, now under 2)."""
    x_np, w_np = rand(2, 256, 8, 10), rand(32, 256, 3, 3)
    x, w = engine.tensor(x_np, requires_grad=True), engine.tensor(w_np, requires_grad=True)
    y = F.conv2d(x, w, None, 1, 36, 36)
    tracemalloc.start()
    try:
        y.sum().backward()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * (x_np.nbytes + w_np.nbytes), peak
    ref_x, ref_w = torch.tensor(x_np, requires_grad=True), torch.tensor(w_np, requires_grad=True)
    torch.nn.functional.conv2d(ref_x, ref_w, None, 1, 36, 36).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), ref_x.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), ref_w.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_conv2d_float64_noncontiguous_and_unbatched():
    x = np.ascontiguousarray(rand(2, 3, 9, 8, dtype=np.float64).transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    check_op(lambda a, b: F.conv2d(a, b, padding=1), lambda a, b: torch.nn.functional.conv2d(a, b, padding=1),
             [x, rand(4, 3, 3, 3, dtype=np.float64)], rtol=1e-10)
    check_op(lambda a, b: F.conv2d(a, b), lambda a, b: torch.nn.functional.conv2d(a, b),
             [rand(3, 6, 5), rand(2, 3, 3, 3)], rtol=1e-4)


@pytest.mark.parametrize("n,c,h,w,o,k,groups,transposed", [
    (2, 4, 23, 21, 6, 3, 1, False),  # per-image GEMMs (more than 400 output pixels), computed transposed
    (2, 4, 23, 21, 6, 1, 1, False),  # per-image 1x1
    (3, 4, 9, 8, 6, 3, 1, False),  # one folded GEMM over the batch
    (3, 4, 9, 8, 6, 3, 2, False),
    (2, 4, 23, 21, 6, 3, 2, True),
])
def test_weight_gradient_is_contiguous_like_torch(n, c, h, w, o, k, groups, transposed):
    """Optimizers stream over gradients: a transposed one made SGD's resnet50 step 4x slower."""
    x = engine.tensor(rand(n, c, h, w))
    shape = (c, o // groups, k, k) if transposed else (o, c // groups, k, k)
    wt = engine.tensor(rand(*shape), requires_grad=True)
    conv = F.conv_transpose2d if transposed else F.conv2d
    conv(x, wt, None, 1, k // 2, groups=groups).square().sum().backward()
    ref_w = torch.tensor(wt.detach().numpy(), requires_grad=True)
    (torch.nn.functional.conv_transpose2d if transposed else torch.nn.functional.conv2d)(
        torch.tensor(x.numpy()), ref_w, None, 1, k // 2, groups=groups).square().sum().backward()
    assert wt.grad.numpy().flags.c_contiguous
    np.testing.assert_allclose(wt.grad.numpy(), ref_w.grad.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2), (1, "same", 2, 1)])
def test_conv1d(stride, padding, dilation, groups):
    check_op(lambda x, w, b: F.conv1d(x, w, b, stride, padding, dilation, groups),
             lambda x, w, b: torch.nn.functional.conv1d(x, w, b, stride, padding, dilation, groups),
             [rand(2, 4, 13), rand(6, 4 // groups, 3), rand(6)], rtol=1e-4)


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups", [
    (1, 0, 0, 1, 1), (2, 1, 1, 1, 1), (3, 2, 1, 2, 2), ((2, 1), (0, 1), (1, 0), 1, 1),
    (4, 0, 2, 1, 1),  # stride beyond the kernel: output rows no tap reaches, and output padding past them
    (2, 3, 1, 1, 1),  # padding beyond the kernel's reach crops into the taps
    (2, 1, 1, 3, 2)])
def test_conv_transpose2d(stride, padding, output_padding, dilation, groups):
    check_op(lambda x, w, b: F.conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation),
             lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, stride, padding, output_padding,
                                                                  groups, dilation),
             [rand(2, 4, 5, 6), rand(4, 6 // groups, 3, 3), rand(6)], rtol=1e-4)


@pytest.mark.parametrize("x_shape,w_shape,stride,padding", [
    ((3, 10, 1, 1), (10, 16, 4, 4), 1, 0),  # DCGAN's first layer: a latent vector to a 4x4 map
    ((3, 16, 4, 5), (16, 8, 4, 4), 2, 1),  # its upsampling layers
    ((5, 8, 7, 7), (8, 8, 2, 2), 2, 0)])  # Mask R-CNN's mask head
def test_conv_transpose2d_generator_layers(x_shape, w_shape, stride, padding):
    check_op(lambda x, w: F.conv_transpose2d(x, w, None, stride, padding),
             lambda x, w: torch.nn.functional.conv_transpose2d(x, w, None, stride, padding),
             [rand(*x_shape), rand(*w_shape)], rtol=1e-4)


def test_conv_transpose1d():
    check_op(lambda x, w: F.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1),
             lambda x, w: torch.nn.functional.conv_transpose1d(x, w, stride=2, padding=1, output_padding=1),
             [rand(2, 3, 7), rand(3, 5, 4)], rtol=1e-4)


def test_conv_errors_name_shapes():
    x, w = engine.zeros(2, 4, 8, 8), engine.zeros(16, 3, 3, 3)
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[16, 3, 3, 3\], expected "
                                           r"input\[2, 4, 8, 8\] to have 3 channels, but got 4 channels instead"):
        F.conv2d(x, w)
    with pytest.raises(RuntimeError, match=r"Calculated padded input size per channel: \(2 x 2\). Kernel size: "
                                           r"\(3 x 3\). Kernel size can't be greater than actual input size"):
        F.conv2d(engine.zeros(1, 3, 2, 2), w)
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(engine.zeros(1, 3, 8, 8), w, stride=2, padding="same")
    with pytest.raises(RuntimeError, match=r"Input type \(Double\) and weight type \(Float\) should be the same"):
        F.conv2d(engine.zeros(1, 3, 8, 8, dtype=engine.float64), w)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d"):
        F.conv2d(engine.zeros(3, 8), w)


CONV3D_CASES = [dict(), dict(stride=(2, 1, 2), padding=(1, 0, 2), dilation=(2, 1, 1)), dict(padding="same"),
                dict(groups=2, padding=1), dict(padding="valid", stride=2), dict(padding="same", dilation=(2, 1, 2))]


@pytest.mark.parametrize("args", CONV3D_CASES)
def test_conv3d_matches_torch(args):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 6, 5)).astype(np.float32)
    w = rng.standard_normal((6, 4 // args.get("groups", 1), 3, 2, 3)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    check_op(lambda *a: engine.nn.functional.conv3d(*a, **args), lambda *a: torch.nn.functional.conv3d(*a, **args),
             [x, w, b], rtol=1e-5)
    check_op(lambda a, k: engine.nn.functional.conv3d(a, k, **args),
             lambda a, k: torch.nn.functional.conv3d(a, k, **args), [x[0], w], rtol=1e-5)  # unbatched, no bias


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module_matches_torch(padding_mode):
    torch.manual_seed(0)
    theirs = torch.nn.Conv3d(3, 4, (3, 2, 3), stride=(1, 2, 1), padding=(1, 1, 2), padding_mode=padding_mode)
    engine.manual_seed(0)
    ours = engine.nn.Conv3d(3, 4, (3, 2, 3), stride=(1, 2, 1), padding=(1, 1, 2), padding_mode=padding_mode)
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())  # torch's init
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 6, 7)).astype(np.float32)
    check_op(lambda a: ours(a), lambda a: theirs(a), [x], rtol=1e-5)


def test_conv3d_errors_as_torch():
    x, w = np.zeros((1, 2, 3, 3, 3), np.float32), np.zeros((4, 2, 5, 1, 1), np.float32)
    for call in (lambda lib: lib.nn.functional.conv3d(lib.from_numpy(x), lib.from_numpy(w)),
                 lambda lib: lib.nn.functional.conv3d(lib.from_numpy(x), lib.from_numpy(w[:, :1]))):
        with pytest.raises(RuntimeError) as theirs:
            call(torch)
        with pytest.raises(RuntimeError, match=re.escape(str(theirs.value))):
            call(engine)


def test_conv3d_on_the_gpu(cuda):
    rng = np.random.default_rng(0)
    check_op(lambda *a: engine.nn.functional.conv3d(*a, stride=2, padding=1),
             lambda *a: torch.nn.functional.conv3d(*a, stride=2, padding=1),
             [rng.standard_normal((2, 3, 5, 6, 7)).astype(np.float32),
              rng.standard_normal((4, 3, 3, 3, 3)).astype(np.float32), rng.standard_normal(4).astype(np.float32)],
             rtol=1e-5, device="cuda")


CONV_TRANSPOSE3D_CASES = [dict(), dict(stride=2, padding=1, output_padding=1),
                          dict(stride=(2, 1, 3), padding=(1, 0, 2), output_padding=(1, 0, 1)),
                          dict(groups=2, padding=1, dilation=(2, 1, 1)),
                          dict(stride=(3, 2, 2), dilation=2, output_padding=(2, 1, 0))]


@pytest.mark.parametrize("args", CONV_TRANSPOSE3D_CASES)
def test_conv_transpose3d_matches_torch(args):
    """Strided, padded, dilated and grouped, in float64: values and the gradients of input, weight and bias."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 3, 5, 4))
    w = rng.standard_normal((4, 6 // args.get("groups", 1), 3, 2, 3))
    check_op(lambda *a: F.conv_transpose3d(*a, **args), lambda *a: torch.nn.functional.conv_transpose3d(*a, **args),
             [x, w, rng.standard_normal(6)], rtol=1e-9)
    check_op(lambda a, k: F.conv_transpose3d(a, k, **args),
             lambda a, k: torch.nn.functional.conv_transpose3d(a, k, **args), [x[0], w], rtol=1e-9)  # unbatched


def test_conv_transpose3d_module_and_errors_as_torch():
    torch.manual_seed(0)
    theirs = torch.nn.ConvTranspose3d(3, 4, (3, 2, 3), stride=2, padding=(1, 0, 1))
    engine.manual_seed(0)
    ours = engine.nn.ConvTranspose3d(3, 4, (3, 2, 3), stride=2, padding=(1, 0, 1))
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())  # torch's init
    assert repr(ours) == repr(theirs)
    x = np.random.default_rng(1).standard_normal((2, 3, 3, 4, 5)).astype(np.float32)
    check_op(lambda a: ours(a, output_size=(6, 8, 10)), lambda a: theirs(a, output_size=(6, 8, 10)), [x], rtol=1e-5)
    w = np.zeros((2, 4, 3, 3, 3), np.float32)
    for call in (lambda lib: lib.nn.functional.conv_transpose3d(lib.from_numpy(x), lib.from_numpy(w)),
                 lambda lib: lib.nn.functional.conv_transpose3d(lib.from_numpy(x[:, :2]), lib.from_numpy(w),
                                                                stride=2, output_padding=2)):
        with pytest.raises(RuntimeError) as error:
            call(torch)
        with pytest.raises(RuntimeError, match=re.escape(str(error.value))):
            call(engine)


def test_conv_transpose3d_on_the_gpu(cuda):
    rng = np.random.default_rng(0)
    args = CONV_TRANSPOSE3D_CASES[2]
    check_op(lambda *a: F.conv_transpose3d(*a, **args), lambda *a: torch.nn.functional.conv_transpose3d(*a, **args),
             [rng.standard_normal((2, 4, 3, 5, 4)).astype(np.float32),
              rng.standard_normal((4, 6, 3, 2, 3)).astype(np.float32), rng.standard_normal(6).astype(np.float32)],
             rtol=1e-5, device="cuda")
