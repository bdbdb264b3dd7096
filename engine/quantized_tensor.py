"""Quantized tensors, as PyTorch's eager-mode quantization has them: integers read through a scale and zero point.

``QuantizedTensor`` holds an int array (quint8, qint8 or qint32) and its quantization parameters: one scale and
zero point (``per_tensor_affine``) or one per slice along an axis (``per_channel_affine``, as conv and linear
weights are). Its real value is ``(q - zero_point) * scale``. As in PyTorch it is an inference type: it has no
autograd, lives on the CPU, and only the operations quantized models use accept it (the quantized modules in
``engine.ao.nn.quantized``, ``relu``, pooling, the spatial ``mean``, ``hardsigmoid``/``hardswish``, ``flatten``,
views, ``cat``); any other use fails instead of computing on the raw integers. The arithmetic is in
``engine.backends.cpu.quantized`` (the mean's float32 summation order here).
"""
import numpy as np

from . import _dtype
from ._device import device as _device
from .backends import kernels as _backend_kernels, quantized as _engine_switch

__all__ = ["QuantizedTensor", "qscheme", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
           "per_channel_symmetric", "quantize_per_tensor", "quantize_per_channel", "dequantize"]


class qscheme:
    """How a quantized tensor maps integers to reals (``engine.per_tensor_affine`` ...)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "engine." + self.name

    def __reduce__(self):
        return self.name


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
QSCHEMES = {q.name: q for q in (per_tensor_affine, per_channel_affine, per_tensor_symmetric, per_channel_symmetric)}


#: the quantized kernels, a CPU-only family of ``engine.backends`` (an empty host array names the CPU)
_kernels = _backend_kernels(np.empty(0), "quantized")


def _quantized_dtype(dtype):
    if dtype not in _dtype.QUANTIZED:
        raise RuntimeError(f"Expected a quantized dtype (engine.quint8, engine.qint8 or engine.qint32), got {dtype}")
    return dtype


class QuantizedTensor:
    """An int array with ``scale``/``zero_point`` (floats, per tensor) or ``scales``/``zero_points`` (arrays along
    ``axis``, per channel). Construct through ``quantize_per_tensor``/``quantize_per_channel``.

    ``channels_last`` records the memory layout torch would hold the same tensor in, because its quantized pooling,
    ``cat`` and elementwise kernels round a few values differently per layout: quantized convolutions give
    channels-last results, layout-keeping ops (relu, pooling, adds) pass it on, ``contiguous()`` and the reshaping
    views give the contiguous layout. The integers here are always stored C-ordered (N, C, H, W).
    """

    is_quantized = True
    requires_grad = False
    grad = None
    is_cuda = False
    device = _device("cpu")

    def __init__(self, data, dtype, scale=None, zero_point=None, *, scales=None, zero_points=None, axis=None,
                 channels_last=False):
        self._data = data
        self.dtype = _quantized_dtype(dtype)
        self._channels_last = bool(channels_last) and data.ndim == 4
        if axis is None:
            self._scale = float(scale)
            self._zero_point = int(zero_point)
        else:
            self._scales = np.asarray(scales, dtype=np.float64)
            self._zero_points = np.asarray(zero_points, dtype=np.int64)
            self._axis = int(axis)
        self._per_channel = axis is not None

    def _like(self, data, channels_last=None):
        """A tensor of this one's quantization holding ``data`` (a view or copy of the same elements), in this one's
        layout unless ``channels_last`` says."""
        layout = self._channels_last if channels_last is None else channels_last
        if self._per_channel:
            return QuantizedTensor(data, self.dtype, scales=self._scales, zero_points=self._zero_points,
                                   axis=self._axis, channels_last=layout)
        return QuantizedTensor(data, self.dtype, self._scale, self._zero_point, channels_last=layout)

    @property
    def is_channels_last(self):
        """Whether torch would take its channels-last kernels: a channels-last tensor, or a 4-d one whose NCHW
        layout is channels-last too (one channel, or a 1x1 plane)."""
        shape = self._data.shape
        return self._channels_last or (len(shape) == 4 and (shape[1] == 1 or shape[2] * shape[3] == 1))

    # ---- what it is ------------------------------------------------------------------------------
    @property
    def shape(self):
        from .tensor import Size

        return Size(self._data.shape)

    @property
    def ndim(self):
        return self._data.ndim

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return self._data.ndim

    def numel(self):
        return self._data.size

    def element_size(self):
        return self._data.itemsize

    def is_contiguous(self, memory_format=None):
        """Whether the tensor is contiguous in ``memory_format``: a 4-d tensor of one channel or a 1x1 plane is in
        both layouts at once, as torch's strides say."""
        from ._layout import channels_last

        shape = self._data.shape
        both = len(shape) == 4 and (shape[1] == 1 or shape[2] * shape[3] == 1)
        return both or (self._channels_last if memory_format is channels_last else not self._channels_last)

    def qscheme(self):
        return per_channel_affine if self._per_channel else per_tensor_affine

    def q_scale(self):
        self._per_tensor("q_scale")
        return self._scale

    def q_zero_point(self):
        self._per_tensor("q_zero_point")
        return self._zero_point

    def q_per_channel_scales(self):
        from .tensor import _new

        self._per_channel_only("q_per_channel_scales")
        return _new(self._scales.copy())

    def q_per_channel_zero_points(self):
        from .tensor import _new

        self._per_channel_only("q_per_channel_zero_points")
        return _new(self._zero_points.copy())

    def q_per_channel_axis(self):
        self._per_channel_only("q_per_channel_axis")
        return self._axis

    def _memo(self, key, make):
        """``make()``, computed once for this tensor: what is derived from its integers alone (a conv weight's
        exactness bound, its scales as tensors). The in-place ``relu_`` forgets them."""
        memos = self.__dict__.setdefault("_memos", {})
        if key not in memos:
            memos[key] = make()
        return memos[key]

    def _qparam_tensors(self):
        """The per-channel scales and zero points as tensors, made once (a checkpoint writer finds them by
        identity on its two passes)."""
        from .tensor import _new

        return self._memo("qparam_tensors", lambda: (_new(self._scales), _new(self._zero_points)))

    def _per_tensor(self, what):
        if self._per_channel:
            raise RuntimeError(f"Expected quantizer->qscheme() == kPerTensorAffine to be true, but got false. "
                               f"({what} of a per-channel quantized tensor)")

    def _per_channel_only(self, what):
        if not self._per_channel:
            raise RuntimeError(f"Expected quantizer->qscheme() == kPerChannelAffine to be true, but got false. "
                               f"({what} of a per-tensor quantized tensor)")

    # ---- conversions ----------------------------------------------------------------------------
    def int_repr(self):
        """The stored integers as a plain tensor (uint8 for quint8, int8 for qint8, int32 for qint32)."""
        from .tensor import _new

        return _new(np.array(self._data))

    def dequantize(self):
        """The real values as a float32 tensor."""
        from .tensor import _new

        if self._per_channel:
            return _new(_kernels.dequantize_per_channel(self._data, self._scales, self._zero_points, self._axis))
        return _new(_kernels.dequantize(self._data, self._scale, self._zero_point))

    def cpu(self):
        return self

    def to(self, *args, **kwargs):
        """Only to the CPU (where it is): quantized tensors do not move or change dtype."""
        target = args[0] if args else kwargs.get("device", "cpu")
        if isinstance(target, (str, _device)) and _device(target).type == "cpu":
            return self
        raise RuntimeError(f"quantized tensors run on the CPU only and keep their dtype: cannot convert to {target}")

    def cuda(self, *args, **kwargs):
        raise RuntimeError("quantized tensors run on the CPU only: PyTorch's quantized kernels (fbgemm, qnnpack) "
                           "are CPU kernels too")

    def detach(self):
        return self

    def clone(self, memory_format=None):
        return self._like(np.array(self._data))

    def contiguous(self, memory_format=None):
        """The tensor in the contiguous layout (or channels last, when ``memory_format`` says)."""
        from ._layout import channels_last

        return self._like(np.ascontiguousarray(self._data), channels_last=memory_format is channels_last)

    # ---- views (per-tensor quantization: a per-channel tensor's axis would move) ---------------------
    def _view(self, what, array, keeps_layout=False):
        """A view; reshaping ones come out contiguous (torch copies a channels-last tensor to reshape it), slices
        keep the layout (``keeps_layout``)."""
        if self._per_channel:
            raise RuntimeError(f"{what} is not supported on per-channel quantized tensors")
        return self._like(array, channels_last=self._channels_last and keeps_layout and array.ndim == 4)

    def view(self, *shape):
        shape = tuple(shape[0]) if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return self._view("view", self._data.reshape(shape))

    reshape = view

    def flatten(self, start_dim=0, end_dim=-1):
        shape = self._data.shape
        start, end = start_dim % max(len(shape), 1), end_dim % max(len(shape), 1)
        if not shape or start >= end:
            return self
        return self.view(shape[:start] + (-1,) + shape[end + 1:])

    def transpose(self, dim0, dim1):
        return self._view("transpose", np.swapaxes(self._data, dim0, dim1))

    def permute(self, *dims):
        dims = tuple(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else dims
        return self._view("permute", np.transpose(self._data, dims))

    def chunk(self, chunks, dim=0):
        size = self._data.shape[dim]
        step = -(-size // chunks)
        return tuple(self._view("chunk", np.take(self._data, range(i, min(i + step, size)), axis=dim), True)
                     for i in range(0, size, step))

    def __getitem__(self, index):
        return self._view("indexing", self._data[index], True)

    def __len__(self):
        return len(self._data)

    # ---- reductions ------------------------------------------------------------------------------
    def mean(self, dim, keepdim=False):
        """The mean over the spatial dims (2, 3) of a 4-d per-tensor tensor (a quantized conv's output, as in
        ShuffleNetV2's head), in its own quantization and layout (``spatial_mean``)."""
        self._per_tensor("mean")
        dims = sorted(d % max(self.ndim, 1) for d in ([dim] if isinstance(dim, int) else dim))
        if self.ndim != 4 or dims != [2, 3]:
            raise NotImplementedError(f"quantized mean is implemented over dims (2, 3) of a 4-d tensor only, got "
                                      f"dim={dim} for shape {tuple(self.shape)}")
        data = _kernels.spatial_mean(self._data, self._scale, self._zero_point, _engine_switch.engine,
                                     channels_last=self._channels_last)
        return self._like(data if keepdim else data[:, :, 0, 0])

    # ---- pointwise -------------------------------------------------------------------------------
    def relu(self):
        return self._like(_kernels.relu(self._data, self._zero_point if not self._per_channel else 0))

    def relu_(self):
        self._data[...] = self.relu()._data
        self.__dict__.pop("_memos", None)
        return self

    def _adopt(self, result):
        """Become ``result`` (a per-tensor op's output, for its in-place form): its integers and quantization;
        what was derived from the old integers is forgotten."""
        self._data, self._scale, self._zero_point = result._data, result._scale, result._zero_point
        self.__dict__.pop("_memos", None)
        return self

    def __repr__(self):
        values = repr(self.dequantize())[:-1]
        if self._per_channel:
            qparams = (f"quantization_scheme=engine.per_channel_affine,\n       scale={self.q_per_channel_scales()!r},"
                       f"\n       zero_point={self.q_per_channel_zero_points()!r}, axis={self._axis})")
        else:
            qparams = (f"quantization_scheme=engine.per_tensor_affine, scale={self._scale}, "
                       f"zero_point={self._zero_point})")
        return f"{values}, size={tuple(self._data.shape)}, dtype={self.dtype!r},\n       {qparams}"

    def __array__(self, dtype=None, copy=None):
        raise TypeError("a quantized tensor has no plain array: use .dequantize() (reals) or .int_repr() (integers)")


def _float_array(input, what):
    """A float32 CPU tensor's values; torch's quantizers take no other dtype (``what``: its message, with the
    dtype's name to fill in)."""
    from .tensor import Tensor

    if not isinstance(input, Tensor) or input.dtype is not _dtype.float32:
        kind = input.dtype.title if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(what.format(kind) + " (quantize takes float32 floating point tensors)")
    if input.device.type != "cpu":
        raise RuntimeError("quantized tensors run on the CPU only: quantize a CPU tensor")
    return np.asarray(input.detach()._data, dtype=np.float32)


def _check_zero_points(zero_points, dtype, what):
    """Zero points must lie in ``dtype``'s integer range (torch's check and message)."""
    info = np.iinfo(dtype.np)
    for bound, bad, side in ((info.min, np.less, "below lower"), (info.max, np.greater, "above upper")):
        outside = np.asarray(zero_points)[bad(zero_points, bound)]
        if outside.size:
            raise RuntimeError(f"{what} zero_point {int(outside[0])} is {side} bound.")


def quantize_per_tensor(input, scale, zero_point, dtype):
    """``torch.quantize_per_tensor``: ``clamp(round(input / scale) + zero_point)`` in ``dtype``'s range."""
    dtype = _quantized_dtype(dtype)
    if isinstance(input, (list, tuple)):
        return [quantize_per_tensor(x, s, z, dtype) for x, s, z in zip(input, scale, zero_point)]
    array = _float_array(input, "Quantize only works on Float Tensor, got {}")
    scale, zero_point = float(scale), int(zero_point)
    _check_zero_points(np.int64(zero_point), dtype, "quantize_tensor_per_tensor_affine")
    return QuantizedTensor(_kernels.quantize(array, scale, zero_point, dtype.np), dtype, scale, zero_point)


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """``torch.quantize_per_channel``: each slice along ``axis`` with its own scale and zero point."""
    dtype = _quantized_dtype(dtype)
    array = _float_array(input, "quantize_tensor_per_channel_affine expects a Float Tensor, got {}")
    if not 0 <= axis < array.ndim:
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. Got: {axis}"
                           f"Expected: [0, {array.ndim})")
    scales, zero_points = (np.asarray(getattr(v, "_data", v)) for v in (scales, zero_points))
    if scales.dtype.kind != "f":
        raise RuntimeError("scale tensor must be floating point")
    if zero_points.dtype.kind == "f":  # torch's per_channel_affine_float_qparams scheme (embedding tables)
        raise NotImplementedError("quantize_per_channel with floating point zero points "
                                  "(per_channel_affine_float_qparams) is not implemented")
    scales, zero_points = scales.astype(np.float64), zero_points.astype(np.int64)
    if scales.shape != (array.shape[axis],) or zero_points.shape != scales.shape:
        raise RuntimeError(f"quantize_per_channel: expected {array.shape[axis]} scales and zero points (the size of "
                           f"axis {axis} of an input of shape {tuple(array.shape)}), got {scales.size} and "
                           f"{zero_points.size}")
    _check_zero_points(zero_points, dtype, "quantize_tensor_per_channel_affine")
    data = _kernels.quantize_per_channel(array, scales, zero_points, axis, dtype.np)
    return QuantizedTensor(data, dtype, scales=scales, zero_points=zero_points, axis=axis)


def dequantize(input):
    """``torch.dequantize``: a quantized tensor's real values (a list of them for a list)."""
    if isinstance(input, (list, tuple)):
        return [dequantize(x) for x in input]
    if not getattr(input, "is_quantized", False):  # a float tensor comes back as it is, as from torch's
        return input
    return input.dequantize()
