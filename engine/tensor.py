"""``engine.Tensor``: an n-d array (numpy or cupy) with PyTorch's API and autograd bookkeeping.

The class holds the state and the methods that are not ops; the ops in ``engine.ops`` attach
themselves as methods (``x.exp()``, ``x + y``) through ``register_method``.
"""
import numbers
import warnings
import weakref

import numpy as np

from . import _dtype, _layout
from ._device import array_module, cuda_available, device as _device, device_of, is_cuda_array, move, xp_for
from .autograd import grad_mode, tracing
from .autograd.double_backward import check_root_shape
from .autograd.graph import run_backward


class Size(tuple):
    """A tensor shape (``torch.Size``): a tuple with ``numel()``."""

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"engine.Size([{', '.join(map(str, self))}])"

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    # concatenated or repeated, a Size stays one (torch's)
    def __add__(self, other):
        return Size(tuple.__add__(self, other)) if isinstance(other, tuple) else NotImplemented

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, times):
        return Size(tuple.__mul__(self, times))

    __rmul__ = __mul__


def _new(array, requires_grad=False):
    """Wrap an array as a tensor without copying (internal fast path)."""
    if isinstance(array, np.generic):  # numpy reductions of 0-d arrays give scalars
        array = np.asarray(array)
    t = Tensor.__new__(Tensor)
    t._data = array
    t.requires_grad = requires_grad
    t._grad = None
    t.grad_fn = None
    t._output_index = 0
    t._version_counter = [0]
    t._base = None
    t._accumulator = None
    t._hooks = None
    t._post_accumulate_grad_hooks = None
    return t


def register_method(fn, *names):
    """Attach ``fn`` to Tensor under ``names`` (default: its own name)."""
    for name in names or (fn.__name__,):
        setattr(Tensor, name, fn)
    return fn


def to_array(data, dtype=None, device=None):
    """Turn Python data, numpy/cupy arrays or tensors into an array with PyTorch's dtype inference."""
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, np.ndarray) or is_cuda_array(data):
        arr = data
    else:
        values = _unwrap_sequence(data)
        arr = _sequence_array(values, dtype)
        numpy_typed = None if dtype is not None or arr.dtype.kind not in "biufc" else _numpy_typed_dtype(values)
        if numpy_typed is not None:
            arr = arr.astype(numpy_typed.np, copy=False)
        elif dtype is None:
            if arr.dtype.kind == "f":
                arr = arr.astype(_dtype.get_default_dtype().np)
            elif arr.dtype.kind == "c":  # Python complex data: the default complex type, as torch's
                arr = arr.astype(_dtype.default_complex().np)
            elif arr.dtype.kind in "iu" and arr.dtype != np.uint8:
                arr = arr.astype(np.int64)
            elif arr.dtype.kind == "O":
                raise TypeError(f"can't convert {type(data).__name__} of mixed objects to a tensor")
        elif arr.dtype.kind == "c" and not _dtype.to_dtype(dtype).is_complex:  # Python's complex() refuses too
            raise TypeError("must be real number, not complex")
    if dtype is not None:
        arr = arr.astype(_dtype.to_dtype(dtype).np, copy=False)
    else:
        _dtype.from_numpy_dtype(arr.dtype)  # rejects types the engine lacks
    if device is not None:
        arr = move(arr, device)
    return arr


def _sequence_array(values, dtype):
    """Python data as an array: integers go straight into an integer ``dtype`` where they fit (uint64s past
    int64's range would pass through float64); the others go through the cast that follows."""
    if dtype is not None and _dtype.to_dtype(dtype).np.kind in "iu":
        try:
            return np.asarray(values, dtype=_dtype.to_dtype(dtype).np)
        except (OverflowError, TypeError, ValueError):
            pass
    return np.asarray(values)


def _element_types(values, found):
    """Add to ``found`` the type of every scalar in nested lists and tuples, and the dtype of every array."""
    if isinstance(values, np.ndarray):
        found.add(values.dtype)
    elif isinstance(values, (list, tuple)):
        if any(isinstance(v, (list, tuple, np.ndarray)) for v in values):
            for v in values:
                _element_types(v, found)
        else:
            found.update(map(type, values))
    else:
        found.add(type(values))
    return found


def _numpy_typed_dtype(values):
    """torch's dtype for data holding numpy scalars or arrays (``np.float64(1.5)``, ``[np.int16(7), True]``): each
    element keeps its own type, a Python float counting as the default float type, an int as int64 and a bool as
    bool, and the types are promoted together; None for plain Python data (numpy's inference and the defaults
    apply then). A walk over the elements: ~35 ms for a million floats, against ~40 ms for the conversion."""
    found = _element_types(values, set())
    if not any(isinstance(t, np.dtype) or issubclass(t, np.generic) for t in found):
        return None
    python = {bool: _dtype.bool_, int: _dtype.int64, float: _dtype.get_default_dtype(),
              complex: _dtype.default_complex()}
    result = None
    for kind in found:
        if isinstance(kind, np.dtype):
            d = _dtype.from_numpy_dtype(kind)
        elif issubclass(kind, np.generic):
            d = _dtype.from_numpy_dtype(np.dtype(kind))
        elif kind in python:
            d = python[kind]
        else:
            return None
        result = d if result is None else _dtype.promote_types(result, d)
    return result


def _unwrap_sequence(data):
    """Tensors nested in lists become arrays (``engine.tensor([t1, t2])``)."""
    if isinstance(data, Tensor):
        return data.detach().cpu()._data
    if isinstance(data, (list, tuple)):
        return [_unwrap_sequence(d) for d in data]
    return data


class Tensor:
    """A multi-dimensional array that can record the operations applied to it."""

    __array_priority__ = 1000  # numpy scalars defer to Tensor's reflected operators

    def __init__(self, *args, dtype=None, device=None, requires_grad=False):
        if len(args) == 1 and isinstance(args[0], Tensor) and dtype is None:
            arr = args[0]._data  # torch's legacy constructor: the tensor's own memory and dtype
        elif dtype is None and device is None and not requires_grad:
            from .legacy_tensor_types import legacy_new  # (), sizes, a Size, data, a storage: as torch.Tensor
            arr = legacy_new(_dtype.get_default_dtype(), None, args)._data
        elif len(args) == 1 and not isinstance(args[0], numbers.Integral):
            arr = to_array(args[0], dtype or _dtype.get_default_dtype(), device)
        else:
            shape = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args
            np_dtype = _dtype.to_dtype(dtype or _dtype.get_default_dtype()).np
            arr = move(np.empty(tuple(int(s) for s in shape), np_dtype), device or "cpu")
        self.__dict__.update(_new(arr, requires_grad).__dict__)

    # ---- state -------------------------------------------------------------------------------
    @property
    def data(self):
        """This tensor's values, detached from the graph: sharing the storage but with a version counter of its
        own, so that writes through ``.data`` hide from autograd's checks (torch's)."""
        return _new(self._data)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self.requires_grad and not _dtype.is_floating(value._data.dtype) and value._data.dtype.kind != "c":
            raise RuntimeError("data set to a tensor that requires gradients must be floating point or complex dtype")
        self._data = value._data

    @property
    def grad(self):
        """The gradient accumulated by backward passes (None until one reaches this tensor); torch's warning when
        read, still None, on a non-leaf that does not retain its gradient."""
        if self._grad is None and self.grad_fn is not None and not self.retains_grad:
            warnings.warn(_NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    @property
    def shape(self):
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_shape_dim(dim, self._data.ndim)]

    @property
    def dtype(self):
        return _dtype.from_numpy_dtype(self._data.dtype)

    @property
    def device(self):
        return device_of(self._data)

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    ndimension = dim

    def numel(self):
        return int(self._data.size)

    nelement = numel

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return int(self._data.nbytes)

    def stride(self, dim=None):
        """The steps, in elements, between neighbours along each dim; a new tensor with no elements reports the
        row-major steps torch allocates (numpy allocates such arrays with strides of 0)."""
        array = self._data
        strides = tuple(s // array.itemsize for s in array.strides)
        if array.size == 0 and not any(strides):
            strides = _layout.contiguous_strides(array.shape)
        return strides if dim is None else strides[_wrap_shape_dim(dim, self._data.ndim)]

    def is_contiguous(self, memory_format=None):
        """Whether the elements lie densely in ``memory_format``'s order (row-major by default, or channels-last)."""
        return _layout.is_contiguous_as(self._data, memory_format)

    def is_floating_point(self):
        return _dtype.is_real_floating(self._data.dtype)

    def is_complex(self):
        return self._data.dtype.kind == "c"

    @property
    def is_leaf(self):
        return self.grad_fn is None

    @property
    def _version(self):
        """How many in-place writes this tensor's memory has had (torch's ``_version``, an int): read from the
        counter ``_version_counter`` that it shares with its views and ``detach()``; inference tensors have none."""
        if getattr(self, "_inference", False):
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._version_counter[0]

    @property
    def layout(self):
        """Always ``engine.strided``: engine tensors are dense (``torch.Tensor.layout``)."""
        return _layout.strided

    # ---- what PyTorch code asks of a dense tensor on the CPU or a CUDA device --------------------
    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    #: devices, layouts and kinds the engine does not have: False on every engine tensor, as PyTorch
    #: answers for a dense CPU or CUDA tensor
    is_xpu = is_mps = is_meta = is_ipu = is_xla = is_vulkan = is_maia = is_mtia = property(lambda self: False)
    is_quantized = is_sparse = is_sparse_csr = is_nested = is_mkldnn = property(lambda self: False)

    @property
    def output_nr(self):
        """Which output of its ``grad_fn`` this tensor is (0 for leaves)."""
        return self._output_index

    def is_conj(self):
        return False

    def is_neg(self):
        return False

    def is_inference(self):
        """Whether the tensor was made in ``inference_mode`` (marked by ``autograd.grad_mode``)."""
        return getattr(self, "_inference", False)

    def is_signed(self):
        return self._data.dtype.kind in "ic" or _dtype.is_floating(self._data.dtype)

    def is_shared(self):
        return False

    def is_same_size(self, other):
        return self._data.shape == other._data.shape

    def is_nonzero(self):
        """The truth of a one-element tensor (``torch.is_nonzero``)."""
        if self._data.size == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        return bool(self)

    def storage_offset(self):
        """How many elements into its storage this tensor's first element lies."""
        return storage_offset_of(self._data)

    def dim_order(self):
        """The dims from outermost to innermost in memory (stable for equal strides)."""
        strides = self.stride()
        return tuple(sorted(range(self._data.ndim), key=lambda d: -strides[d]))

    def data_ptr(self):
        xp = array_module(self._data)
        if xp is np:
            return self._data.__array_interface__["data"][0]
        return self._data.data.ptr

    def get_device(self):
        d = self.device
        return -1 if d.type == "cpu" else (d.index or 0)

    # ---- conversions -------------------------------------------------------------------------
    def numpy(self, force=False):
        tracing.check_value_read(self, "numpy()")
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu":
            if not force:
                raise TypeError(f"can't convert {self.device} device type tensor to numpy. "
                                "Use Tensor.cpu() to copy the tensor to host memory first.")
            return move(self._data, "cpu")
        return self._data

    def item(self):
        tracing.check_value_read(self, "item()")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item()

    def tolist(self):
        tracing.check_value_read(self, "tolist()")
        return move(self._data, "cpu").tolist()

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    def __bool__(self):
        tracing.check_value_read(self, "bool()")
        if self._data.size != 1:
            count = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {count} is ambiguous")
        return bool(self._data.reshape(()).item())

    def _python_number(self, c_type):
        """The one element as a Python number for ``float()``/``int()``/``complex()``, with torch's errors: a
        ValueError for another count of elements, and a complex value with an imaginary part into a real type
        refused as an overflow (``c_type``: torch's name for the target, None for complex)."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        value = self.item()
        if c_type is not None and isinstance(value, complex):
            if value.imag != 0:
                raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
            value = value.real
        return value

    def __float__(self):
        if self.requires_grad and not _SCALAR_OF_GRAPH_WARNED:
            _warn_scalar_of_graph()
        return float(self._python_number("double"))

    def __int__(self):
        return int(self._python_number("int64_t"))

    def __index__(self):
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self):
        return complex(self._python_number(None))

    def __array__(self, dtype=None, copy=None):
        """The values as a numpy array (``np.asarray(t)``): ``numpy()``'s, with its errors (a tensor that requires
        grad is refused), the host's copy of a device tensor."""
        arr = self.numpy(force=self.device.type != "cpu" and not self.requires_grad)
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """A numpy ufunc's result over tensors as a tensor sharing it (``np.sin(t)``), bools as uint8 (torch's)."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return _new(array)

    def __hash__(self):
        return id(self)

    def __contains__(self, element):
        """Whether ``element`` (a number or a tensor, broadcast against this one) equals some element."""
        if not isinstance(element, (Tensor, numbers.Number, np.generic)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                               f"{type(element)}.")
        return bool((element == self).any().item())

    def __reversed__(self):
        """The tensor flipped along dim 0 (itself when 0-dim), as torch's ``reversed(t)``."""
        return self if self._data.ndim == 0 else self.flip(0)

    def __reduce_ex__(self, protocol):
        """Pickled as ``(_rebuild, (values, requires_grad), state)``: the state holds the public attributes set on
        it and, for a view, the whole storage under it (its bytes, each tensor's own copy, as torch's) and its
        place there, so that it comes back with its storage offset and strides (subclasses that rebuild
        themselves from the first two keep working)."""
        from .storage import _flat_bytes, storage_layout
        array = move(self._data, "cpu")
        state = {k: v for k, v in self.__dict__.items() if not k.startswith("_") and k not in _INTERNAL}
        layout = storage_layout(array)
        if layout is not None and (layout[0].nbytes != array.nbytes or not array.flags.c_contiguous):
            state["_storage"] = (_flat_bytes(layout[0]), *layout[1:])
        return (_rebuild, (array, self.requires_grad), state or None)

    def __setstate__(self, state):
        """The unpickled tensor's attributes, and its place in its storage where it was a view."""
        state = dict(state)
        if "_storage" in state:
            from .storage import view_of
            flat, offset, stride = state.pop("_storage")
            self._data = view_of(flat, offset, stride, self._data.dtype, self._data.shape)
        self.__dict__.update(state)

    def __deepcopy__(self, memo):
        """A copy of a leaf: its storage copied once per ``deepcopy`` call (views copied together keep sharing),
        its gradient and attributes deep-copied."""
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                               "because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        import copy
        from .storage import deepcopy_array
        new = type(self).__new__(type(self))
        new.__dict__.update(_new(deepcopy_array(self._data, memo), self.requires_grad).__dict__)
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            if k not in new.__dict__:
                new.__dict__[k] = copy.deepcopy(v, memo)
        if self._grad is not None:
            new.grad = copy.deepcopy(self._grad, memo)
        return new

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    def __repr__(self):
        from ._repr import tensor_repr
        return tensor_repr(self)

    # ---- autograd ----------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (see ``torch.Tensor.backward``)."""
        if tracing.active is not None:  # nn.Graph runs the traced backward itself
            tracing.active.record_backward(self, gradient)
            return
        if not self.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if gradient is None:
            if self._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            grad = array_module(self._data).ones(self._data.shape, self._data.dtype)
        else:
            grad = to_array(gradient)
            check_root_shape(0, grad.shape, self)
        if inputs is not None or create_graph:
            root = gradient if create_graph and isinstance(gradient, Tensor) else _new(grad)
        if inputs is not None:
            from .autograd import accumulate_into
            inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            if not inputs:
                raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
            accumulate_into([self], [root], inputs, retain_graph if create_graph else bool(retain_graph), create_graph)
            return
        if create_graph:  # gradients as graph-connected tensors (autograd/double_backward.py)
            from .autograd.double_backward import run_backward_graph
            run_backward_graph([self], [root], retain_graph=retain_graph is None or bool(retain_graph))
            return
        run_backward([self], [grad], retain_graph=bool(retain_graph))

    def detach(self):
        if tracing.active is not None:
            from .ops.convert import Alias
            with grad_mode.no_grad():
                return Alias()(self)
        t = _new(self._data)
        t._version_counter = self._version_counter
        return t

    def as_subclass(self, cls):
        """This tensor as an instance of ``cls`` (a subclass of Tensor), sharing its data, version counter and
        place in the autograd graph (``torch.Tensor.as_subclass``); ``cls.__init__`` is not called."""
        if not (isinstance(cls, type) and issubclass(cls, Tensor)):
            raise TypeError(f"as_subclass expects a subclass of Tensor, got {cls!r}")
        t = object.__new__(cls)  # a subclass's own __new__ takes data: bypass it
        t.__dict__.update({k: getattr(self, k) for k in _new(self._data).__dict__})
        return t

    def detach_(self):
        if self._base is not None:
            raise RuntimeError(_DETACH_VIEW_ERROR)
        self.grad_fn = None
        self.requires_grad = False
        return self

    def requires_grad_(self, requires_grad=True):
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want "
                               "to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if requires_grad and not _dtype.is_floating(self._data.dtype):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and getattr(self, "_inference", False) and not grad_mode.is_inference_mode_enabled():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        self.requires_grad = requires_grad
        return self

    def retain_grad(self):
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return
        node = self.grad_fn
        if getattr(node, "retained", None) is None:
            node.retained = {}
        node.retained[self._output_index] = weakref.ref(self)

    @property
    def retains_grad(self):
        node = self.grad_fn
        return node is not None and self._output_index in (getattr(node, "retained", None) or {})

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; it may return a new grad."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            node = self.grad_fn
            if getattr(node, "hooks", None) is None:
                node.hooks = {}
            hooks = node.hooks.setdefault(self._output_index, [])
        hooks.append(hook)
        return _HookHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` each time a backward pass has accumulated this leaf's gradient into
        ``.grad`` (``torch.Tensor.register_post_accumulate_grad_hook``); DDP starts its all-reduces here."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_accumulate_grad_hooks is None:
            self._post_accumulate_grad_hooks = []
        self._post_accumulate_grad_hooks.append(hook)
        return _HookHandle(self._post_accumulate_grad_hooks, hook)

    # ---- device and dtype moves --------------------------------------------------------------
    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``, each with ``memory_format=``; keeps
        autograd."""
        dtype = kwargs.get("dtype")
        dev = kwargs.get("device")
        copy = kwargs.get("copy", False)
        non_blocking = kwargs.get("non_blocking", False)
        memory_format = kwargs.get("memory_format")
        flags = []  # positional non_blocking, then copy
        for a in args:
            if isinstance(a, Tensor):
                dtype, dev = a.dtype, a.device
            elif isinstance(a, _dtype.dtype) or a in (float, int, bool, complex):
                dtype = a
            elif isinstance(a, bool):
                flags.append(a)
            elif a is not None:
                dev = a
        if flags:
            non_blocking = flags[0]
            copy = copy or len(flags) > 1 and flags[1]
        from .ops.convert import to_device, to_dtype
        out = self
        if dev is not None and _device(dev) != self.device:
            out = to_device(out, _device(dev), non_blocking)
        if dtype is not None and _dtype.to_dtype(dtype) is not self.dtype:
            out = to_dtype(out, _dtype.to_dtype(dtype))
        preserved = memory_format in (None, _layout.preserve_format)
        if not preserved and _layout.suggested_format(out._data) is not memory_format:
            out = out.contiguous(memory_format=memory_format)
        if copy and out is self:
            out = self.clone()
        return out

    def type(self, dtype=None, non_blocking=False):
        """``torch.Tensor.type``: without ``dtype`` the legacy type's name (``'engine.FloatTensor'``,
        ``'engine.cuda.FloatTensor'``); else this tensor as ``dtype``: a dtype, a legacy type
        (``engine.DoubleTensor``) or its name (``'torch.IntTensor'`` or ``'engine.IntTensor'``), itself when it
        already is one (see ``legacy_tensor_types``)."""
        if dtype is None:
            prefix = "engine.cuda." if self.device.type == "cuda" else "engine."
            return prefix + _TYPE_NAMES.get(self.dtype.name, self.dtype.name)
        from .legacy_tensor_types import as_tensor_type
        return as_tensor_type(self, dtype, non_blocking)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        if device is None:
            target = "cuda"
        else:
            target = _device("cuda", device) if isinstance(device, int) else _device(device)
        return self.to(target, non_blocking=non_blocking)

    def pin_memory(self):
        """A copy in page-locked host memory, from which ``.cuda(non_blocking=True)`` copies without
        waiting (``torch.Tensor.pin_memory``)."""
        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.device}' memory: only dense CPU tensors can be pinned")
        cupy = xp_for("cuda")
        memory = cupy.cuda.alloc_pinned_memory(max(self._data.nbytes, 1))
        pinned = np.frombuffer(memory, self._data.dtype, self._data.size).reshape(self._data.shape)
        pinned[...] = self._data
        return _new(pinned, self.requires_grad)

    def is_pinned(self):
        """Whether this tensor's memory is page-locked host memory (see ``pin_memory``)."""
        if self.device.type != "cpu" or not cuda_available():
            return False
        pinned_type = xp_for("cuda").cuda.PinnedMemoryPointer
        base = self._data
        while base is not None and not isinstance(base, pinned_type):
            base = getattr(base, "base", None) if isinstance(base, np.ndarray) else getattr(base, "obj", None)
        return base is not None

    def float(self, memory_format=None):
        return self.to(_dtype.float32, memory_format=memory_format)

    def double(self, memory_format=None):
        return self.to(_dtype.float64, memory_format=memory_format)

    def half(self, memory_format=None):
        return self.to(_dtype.float16, memory_format=memory_format)

    def bfloat16(self, memory_format=None):
        return self.to(_dtype.bfloat16, memory_format=memory_format)

    def long(self, memory_format=None):
        return self.to(_dtype.int64, memory_format=memory_format)

    def int(self, memory_format=None):
        return self.to(_dtype.int32, memory_format=memory_format)

    def short(self, memory_format=None):
        return self.to(_dtype.int16, memory_format=memory_format)

    def char(self, memory_format=None):
        return self.to(_dtype.int8, memory_format=memory_format)

    def byte(self, memory_format=None):
        return self.to(_dtype.uint8, memory_format=memory_format)

    def bool(self, memory_format=None):
        return self.to(_dtype.bool_, memory_format=memory_format)

    def type_as(self, other):
        return self.to(other.dtype)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        if isinstance(data, Tensor):
            warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
                          "or sourceTensor.detach().clone().requires_grad_(True), rather than "
                          "tensor.new_tensor(sourceTensor).", UserWarning, stacklevel=2)
            data = data.detach()
        from .ops.creation import tensor  # torch.tensor's checks of the data (ragged lists, ranges, types)
        return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor",
               "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor", "uint16": "UInt16Tensor",
               "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor",
               "uint32": "UInt32Tensor", "uint64": "UInt64Tensor"}


_NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
    "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
    "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you "
    "access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.")

_DETACH_VIEW_ERROR = (
    "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for "
    "training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() "
    "cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
    "torch/optim/optimizer.py as the solution.")

# c10's names in the .grad setter's dtype error: the gradient's C++ type, the tensor's ScalarType
_GRAD_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
                 "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                 "uint8": "unsigned char", "bool": "bool", "uint16": "short unsigned int", "uint32": "unsigned int",
                 "uint64": "long unsigned int", "complex64": "c10::complex<float>",
                 "complex128": "c10::complex<double>"}
_SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
                      "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                      "bool": "Bool", "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
                      "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _check_grad(tensor, grad):
    """torch's checks on ``tensor.grad = grad``: a tensor, not ``tensor`` itself, of its dtype, device and size."""
    if not isinstance(grad, Tensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(grad).__name__}")
    if grad is tensor:
        raise RuntimeError("can't assign Variable as its own grad")
    if grad.dtype is not tensor.dtype:
        raise RuntimeError(
            f"attempting to assign a gradient with dtype '{_GRAD_C_NAMES.get(grad.dtype.name, grad.dtype.name)}' to "
            f"a tensor with grad_dtype '{_SCALAR_TYPE_NAMES.get(tensor.dtype.name, tensor.dtype.name)}'. The "
            "gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
            "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with caution. "
            "Diverging the dtypes of a tensor and its gradient may break downstream systems that assume they match.")
    if grad.device.type != tensor.device.type:
        raise RuntimeError(f"attempting to assign a gradient with device type '{grad.device.type}' to a tensor with "
                           f"device type '{tensor.device.type}'. Please ensure that the gradient and the tensor are "
                           "on the same device")
    if grad.get_device() != tensor.get_device():
        raise RuntimeError(f"attempting to assign a gradient located on device with index '{grad.get_device()}' to "
                           f"a tensor located on device with index '{tensor.get_device()}'. Please ensure that the "
                           "gradient and the tensor are on the same device")
    if tuple(grad.shape) != tuple(tensor.shape):
        raise RuntimeError(f"attempting to assign a gradient of size '{list(grad.shape)}' to a tensor of size "
                           f"'{list(tensor.shape)}'. Please ensure that the gradient and the tensor are the same size")


class _HookHandle:
    def __init__(self, hooks, hook):
        self.hooks, self.hook = hooks, hook

    def remove(self):
        if self.hook in self.hooks:
            self.hooks.remove(self.hook)


def _rebuild(array, requires_grad):
    return _new(array, requires_grad)


_INTERNAL = frozenset(_new(np.zeros(0)).__dict__) | {"requires_grad", "grad_fn"}


def _wrap_dim(dim, ndim):
    """A possibly negative dim made positive, with PyTorch's IndexError when out of range."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


#: torch warns once per process (TORCH_WARN_ONCE) about ``float()`` of a tensor that requires grad
_SCALAR_OF_GRAPH_WARNED = False


def _warn_scalar_of_graph():
    global _SCALAR_OF_GRAPH_WARNED
    _SCALAR_OF_GRAPH_WARNED = True
    warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                  "Consider using tensor.detach() first.", UserWarning, stacklevel=3)


def _wrap_shape_dim(dim, ndim):
    """``_wrap_dim`` for ``size(dim)``/``stride(dim)``, which have nothing to index on a 0-dim tensor."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, ndim)


def storage_offset_of(array):
    """Elements between the start of the memory ``array`` views and its first element."""
    if isinstance(array, np.ndarray):
        root = array
        while True:  # numpy's as_strided puts a DummyArray (holding the real base) in the chain
            base = root.base if isinstance(root.base, np.ndarray) else getattr(root.base, "base", None)
            if not isinstance(base, np.ndarray):
                break
            root = base
        start = root.__array_interface__["data"][0]
        return (array.__array_interface__["data"][0] - start) // array.itemsize
    return (array.data.ptr - array.data.mem.ptr) // array.itemsize


def is_tensor(obj):
    return isinstance(obj, Tensor)
