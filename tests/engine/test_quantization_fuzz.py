"""Cases a differential fuzz of quantization against torch.ao found (quantized tensors, fake quantization, the
quantized spatial mean): each compares with torch 2.14's CPU results bit for bit, or checks torch's error."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import engine  # noqa: E402
import engine.ao.quantization as eq  # noqa: E402
from engine.utils.threads import get_num_threads, set_num_threads  # noqa: E402

pytestmark = pytest.mark.slow  # torch and the CUDA emulation warm up in the first calls (about 6 s)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warnings for quantized tensors
        yield


def _same_bits(ours, theirs):
    a, b = np.asarray(ours), np.asarray(theirs)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes(), (a[a != b][:4], b[a != b][:4])


# ---- dequantize -------------------------------------------------------------------------------------------
def test_per_channel_qint32_dequantize_subtracts_in_float32():
    """torch's per-channel dequantize takes ``float(q) - float(zero_point)`` (inexact above 2**24) times the
    double scale; computed exactly, the last bit differed."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((3, 7)) * 1e5).astype(np.float32)
    scales, zero_points = np.array([1e-3, 3.7e-4, 0.0123]), rng.integers(-1000, 1000, 3)
    ours = engine.quantize_per_channel(engine.tensor(x), engine.tensor(scales), engine.tensor(zero_points), 0,
                                       engine.qint32)
    theirs = torch.quantize_per_channel(torch.from_numpy(x), torch.tensor(scales), torch.tensor(zero_points), 0,
                                        torch.qint32)
    _same_bits(ours.int_repr().numpy(), theirs.int_repr().numpy())
    _same_bits(ours.dequantize().numpy(), theirs.dequantize().numpy())


def test_per_tensor_qint32_dequantize_wraps_as_torch():
    """torch subtracts the zero point in int32: far from an extreme zero point the difference wraps."""
    x = np.array([5e5, -3.0, 0.0, 2e4], np.float32)
    ours = engine.quantize_per_tensor(engine.tensor(x), 1e-5, -2 ** 31, engine.qint32)
    theirs = torch.quantize_per_tensor(torch.from_numpy(x), 1e-5, -2 ** 31, torch.qint32)
    _same_bits(ours.int_repr().numpy(), theirs.int_repr().numpy())
    _same_bits(ours.dequantize().numpy(), theirs.dequantize().numpy())


# ---- quantize argument checks ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_quantize_takes_float32_only(dtype):
    x = engine.ones(2, 3).to(getattr(engine, dtype))
    with pytest.raises(RuntimeError, match="Quantize only works on Float Tensor, got"):
        engine.quantize_per_tensor(x, 0.1, 0, engine.quint8)
    with pytest.raises(RuntimeError, match="quantize_tensor_per_channel_affine expects a Float Tensor, got"):
        engine.quantize_per_channel(x, engine.ones(2), engine.zeros(2, dtype=engine.int64), 0, engine.quint8)


@pytest.mark.parametrize("axis", [-1, 2])
def test_quantize_per_channel_axis_out_of_range(axis):
    with pytest.raises(RuntimeError, match="Channel axis out of range in per channel affine quantization"):
        engine.quantize_per_channel(engine.ones(2, 3), engine.ones(3), engine.zeros(3, dtype=engine.int64), axis,
                                    engine.quint8)


@pytest.mark.parametrize("dtype, zero_point, side", [("quint8", 300, "above upper"), ("quint8", -1, "below lower"),
                                                     ("qint8", 128, "above upper"), ("qint32", 2 ** 31, "above upper")])
def test_zero_point_outside_the_dtype_is_refused(dtype, zero_point, side):
    """It was accepted, and the integers clamped to the dtype read back as other values."""
    with pytest.raises(RuntimeError, match=f"quantize_tensor_per_tensor_affine zero_point {zero_point} is {side}"):
        engine.quantize_per_tensor(engine.ones(3), 0.1, zero_point, getattr(engine, dtype))
    with pytest.raises(RuntimeError, match=f"quantize_tensor_per_channel_affine zero_point {zero_point} is {side}"):
        engine.quantize_per_channel(engine.ones(2), engine.ones(2), engine.tensor([0, zero_point]), 0,
                                    getattr(engine, dtype))


def test_per_channel_scales_and_zero_points_types():
    with pytest.raises(RuntimeError, match="scale tensor must be floating point"):
        engine.quantize_per_channel(engine.ones(3), engine.ones(3, dtype=engine.int64),
                                    engine.zeros(3, dtype=engine.int64), 0, engine.quint8)
    # torch's per_channel_affine_float_qparams scheme: not truncated to integer zero points any more
    with pytest.raises(NotImplementedError, match="floating point zero points"):
        engine.quantize_per_channel(engine.ones(3), engine.ones(3), engine.tensor([0.5, 1.0, 2.0]), 0,
                                    engine.quint8)


# ---- fake quantization -----------------------------------------------------------------------------------
@pytest.mark.parametrize("x_dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("zp_dtype", ["float32", "float16"])
def test_fake_quantize_per_channel_with_float_zero_points(x_dtype, zp_dtype):
    """Floating point zero points are not rounded: q = rint(zero_point + x / scale); they used to raise."""
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 5, 2)) * 2).astype(np.float32)
    scales = np.array([0.1, 0.037, 0.25], np.float32)
    zero_points = np.array([3.4, 100.6, 0.25], np.float32)
    grad = rng.standard_normal(x.shape).astype(np.float32)
    results = []
    for lib in (engine, torch):
        xt = lib.tensor(x).to(getattr(lib, x_dtype)).requires_grad_()
        y = lib.fake_quantize_per_channel_affine(xt, lib.tensor(scales), lib.tensor(zero_points).to(
            getattr(lib, zp_dtype)), 0, 0, 127)
        y.backward(lib.tensor(grad).to(y.dtype))
        results.append((y.detach().float().numpy(), str(y.dtype).split(".")[-1], xt.grad.float().numpy()))
    (y1, d1, g1), (y2, d2, g2) = results
    assert d1 == d2
    _same_bits(y1, y2)
    _same_bits(g1, g2)


def test_fake_quantize_per_channel_qparam_types():
    x = engine.ones(2, 3)
    with pytest.raises(RuntimeError, match="Zero-point must be Int32, Float or Half, found Long"):
        engine.fake_quantize_per_channel_affine(x, engine.ones(2), engine.zeros(2, dtype=engine.int64), 0, 0, 255)
    with pytest.raises(RuntimeError, match="Scale must be Float or BFloat16, found Double"):
        engine.fake_quantize_per_channel_affine(x, engine.ones(2, dtype=engine.float64),
                                                engine.zeros(2, dtype=engine.int32), 0, 0, 255)


def test_fused_fake_quantize_per_channel_only_on_axis_0():
    fake_quant = eq.FusedMovingAvgObsFakeQuantize(observer=eq.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                                                  quant_max=127, dtype=engine.qint8,
                                                  qscheme=engine.per_channel_symmetric, ch_axis=1)
    with pytest.raises(RuntimeError, match="only supported on axis == 0"):
        fake_quant(engine.ones(3, 4, 2))


@pytest.mark.parametrize("zp_dtype", ["int32", "float32"])
def test_fake_quantize_with_tensor_qparams_on_cuda(cuda, zp_dtype):
    """Scales and zero points given as tensors on the GPU (they were read as host arrays, which CuPy refuses)."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 4)) * 3).astype(np.float32)
    scales, zero_points = np.array([0.1, 0.2, 0.05], np.float32), np.array([3, 0, 120])
    theirs = torch.fake_quantize_per_channel_affine(torch.from_numpy(x), torch.from_numpy(scales),
                                                    torch.from_numpy(zero_points).to(getattr(torch, zp_dtype)), 0,
                                                    0, 127)
    xe = engine.tensor(x, device="cuda", requires_grad=True)
    ours = engine.fake_quantize_per_channel_affine(
        xe, engine.tensor(scales, device="cuda"),
        engine.tensor(zero_points, device="cuda").to(getattr(engine, zp_dtype)), 0, 0, 127)
    ours.sum().backward()
    _same_bits(ours.detach().cpu().numpy(), theirs.numpy())
    per_tensor = engine.fake_quantize_per_tensor_affine(xe, engine.tensor(0.1, device="cuda"),
                                                        engine.tensor(3, device="cuda"), 0, 255)
    _same_bits(per_tensor.detach().cpu().numpy(),
               torch.fake_quantize_per_tensor_affine(torch.from_numpy(x), 0.1, 3, 0, 255).numpy())


# ---- the quantized spatial mean ---------------------------------------------------------------------------
@pytest.fixture
def one_thread():
    previous, torch_previous = get_num_threads(), torch.get_num_threads()
    set_num_threads(1)
    torch.set_num_threads(1)
    yield
    set_num_threads(previous)
    torch.set_num_threads(torch_previous)


_sizes = np.random.default_rng(4)
MEAN_SHAPES = [(int(_sizes.integers(1, 3)), int(channels), int(_sizes.integers(2, 8)), int(_sizes.integers(2, 8)))
               for channels in _sizes.choice([1, 4, 5, 6, 7], 24)] + [(2, 6, 1, 1), (1, 9, 5, 3), (1, 36, 2, 3)]


@pytest.mark.parametrize("backend", ["fbgemm", "qnnpack"])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", ["quint8", "qint8"])
def test_spatial_mean_matches_torch(one_thread, backend, channels_last, dtype):
    """NCHW inputs (they raised: torch averages their integers) and channels-last inputs of 4 to 7 channels (a
    different float summation order) or of one channel (torch's NCHW kernel), under both engines."""
    rng = np.random.default_rng(3)
    previous, e_previous = torch.backends.quantized.engine, engine.backends.quantized.engine
    torch.backends.quantized.engine = engine.backends.quantized.engine = backend
    try:
        for shape in MEAN_SHAPES:
            x = (rng.standard_normal(shape) * 2).astype(np.float32)
            zero_point = int(rng.integers(0, 256)) if dtype == "quint8" else int(rng.integers(-128, 128))
            ours = engine.quantize_per_tensor(engine.tensor(x), 0.0371, zero_point, getattr(engine, dtype))
            theirs = torch.quantize_per_tensor(torch.from_numpy(x), 0.0371, zero_point, getattr(torch, dtype))
            if channels_last:
                ours = ours.contiguous(memory_format=engine.channels_last)
                theirs = theirs.contiguous(memory_format=torch.channels_last)
            for keepdim in (False, True):
                _same_bits(ours.mean((2, 3), keepdim=keepdim).int_repr().numpy(),
                           theirs.mean((2, 3), keepdim=keepdim).int_repr().numpy())
    finally:
        torch.backends.quantized.engine, engine.backends.quantized.engine = previous, e_previous


def test_mean_over_other_dims_is_not_implemented():
    q = engine.quantize_per_tensor(engine.ones(2, 3, 4, 4), 0.1, 0, engine.quint8)
    with pytest.raises(NotImplementedError, match=r"dims \(2, 3\) of a 4-d tensor only"):
        q.mean(1)


@pytest.mark.parametrize("channels", [1, 4, 5, 6, 7])
def test_channels_last_mean_of_few_channels(one_thread, channels):
    """torch sums the first 4 of 4 to 7 channels in its cascade order (it was taken for the interleaved one), and
    averages the integers of one channel (NCHW-contiguous too): scales whose steps make halfway means show the
    last bit of the float sum."""
    x = np.random.default_rng(0).standard_normal((2, channels, 4, 4)).astype(np.float32)
    for scale in (0.05, 0.1, 0.3, 0.01):
        for zero_point in range(0, 256, 5):
            ours = engine.quantize_per_tensor(engine.tensor(x), scale, zero_point, engine.quint8)
            theirs = torch.quantize_per_tensor(torch.from_numpy(x), scale, zero_point, torch.quint8)
            ours = ours.contiguous(memory_format=engine.channels_last)
            theirs = theirs.contiguous(memory_format=torch.channels_last)
            _same_bits(ours.mean((2, 3)).int_repr().numpy(), theirs.mean((2, 3)).int_repr().numpy())


@pytest.mark.parametrize("shape", [(2, 1, 3, 4), (2, 5, 1, 1), (1, 3, 2, 2)])
def test_layout_of_one_channel_or_one_pixel_tensors(shape):
    """A tensor of one channel or a 1x1 plane is contiguous in both layouts (torch ignores size-1 strides)."""
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    ours = engine.quantize_per_tensor(engine.tensor(x), 0.1, 3, engine.quint8)
    theirs = torch.quantize_per_tensor(torch.from_numpy(x), 0.1, 3, torch.quint8)
    for layout in (None, "channels_last"):
        e, t = ours, theirs
        if layout:
            e = ours.contiguous(memory_format=engine.channels_last)
            t = theirs.contiguous(memory_format=torch.channels_last)
        assert e.is_contiguous() == t.is_contiguous()
        assert e.is_contiguous(memory_format=engine.channels_last) == t.is_contiguous(
            memory_format=torch.channels_last)


@pytest.mark.parametrize("name", ["PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver"])
def test_per_channel_observers_refuse_1d_inputs(name):
    """torch flattens the dims after the channel's: a 1-d input has none (it was taken as one value per
    channel)."""
    with pytest.raises(IndexError, match="Dimension out of range"):
        getattr(eq, name)()(engine.ones(3))
    getattr(eq, name)()(engine.ones(0))  # nothing to observe: returned as it is, as torch's


@pytest.mark.parametrize("dim", [1, -3])
def test_channels_last_cat_takes_the_fast_path_for_dim_1_only(one_thread, dim):
    """torch's channels-last cat kernel (which rounds runs of 8 channels differently) is taken for ``dim=1``
    only: ``dim=-3`` requantizes every element the generic way (it was given the fast path's rounding)."""
    rng = np.random.default_rng(8)
    for _ in range(12):
        parts = []
        for channels in (9, 16):
            x = (rng.standard_normal((2, channels, 2, 5)) * 3).astype(np.float32)
            scale, zero_point = float(rng.choice([0.01, 0.05, 0.1])), int(rng.integers(0, 256))
            parts.append((engine.quantize_per_tensor(engine.tensor(x), scale, zero_point, engine.quint8).contiguous(
                memory_format=engine.channels_last), torch.quantize_per_tensor(
                    torch.from_numpy(x), scale, zero_point, torch.quint8).contiguous(memory_format=torch.channels_last)))
        ours, theirs = engine.ao.nn.quantized.QFunctional(), torch.ao.nn.quantized.QFunctional()
        ours.scale = theirs.scale = float(rng.choice([0.05, 0.2, 0.0123]))
        ours.zero_point = theirs.zero_point = int(rng.integers(0, 256))
        _same_bits(ours.cat([e for e, _ in parts], dim).int_repr().numpy(),
                   theirs.cat([t for _, t in parts], dim).int_repr().numpy())
