"""A CPU stand-in for CuPy, so that the CUDA backend's code runs in the tests of machines without a GPU.

What it keeps from CuPy, so that mistakes fail here as they would on a GPU:

- Arrays are ``DeviceArray`` objects, numpy arrays behind a wrapper that refuses implicit conversion
  (``np.asarray(device_array)`` raises TypeError, as CuPy's ``__array__`` does) and refuses numpy
  arrays as operands of arithmetic, ufuncs and functions (CuPy's ``Unsupported type``). A host array
  mixed into device code is therefore an error, not a silent success.
- ``RawModule`` compiles the kernel source with g++ under a small header in which every thread and
  block index is 0 and every dimension 1, so a grid-stride loop visits every index on one CPU thread
  (``atomicAdd`` is then a plain add). Each launch checks its arguments against the kernel's declared
  parameters: an array must be C-contiguous with the pointer's element type, a scalar of the exact C
  type (a numpy scalar, as CuPy needs for anything but ``long long`` and ``double``).

- Where CuPy is installed (it imports without a GPU), every function, array method and keyword the code
  uses is looked up in the real CuPy first: a numpy name CuPy lacks fails here too.

- Stream capture (``Stream.begin_capture``/``end_capture``, ``Graph.launch``): while a stream is being
  captured, every array operation and kernel launch runs and is also recorded; a launch runs the recorded
  operations again in order, writing each result into the array the capture gave out, so a graph reads
  its inputs' current values and writes its outputs' memory as a CUDA graph does. What CUDA or CuPy refuse
  during a capture is refused here: reading device data on the host (``get``, ``bool()``, ``float()``,
  ``item()``), copying host data to the device, synchronising, data-dependent sizes (``nonzero``, boolean
  indexing) and CuPy's cuBLAS calls (``matmul``, ``dot``, ``@``, ...). As a capture computes nothing on a
  GPU, the memory from before it that it touched is restored when it ends, and the arrays it made are
  filled with NaN.
- Memory: arrays made under ``cupy.cuda.using_allocator`` are placed in the memory the allocator gives
  (``MemoryPool.malloc`` blocks, ``UnownedMemory`` inside them: host bytes at real addresses), and they
  hold the allocator's pointer as CuPy arrays do, so an allocator learns when a buffer is freed. What a
  capture records holds memory, not those pointers, as a CUDA graph holds addresses: a memory plan that
  gives one place to two buffers alive together makes replays wrong here as on a GPU.
- ``emulated_cublas()``: the few cuBLAS entry points ``engine/backends/cuda/cublas.py`` calls through
  ctypes (``cublasGemmEx``, ``cublasGemmStridedBatchedEx``...), written here in C after cuBLAS's documented
  column-major semantics and run on the arrays' memory, for float32, float64 and bfloat16 operands.

What it cannot check: timing, how much memory CuPy's pools hold, races between threads, CuPy's own bugs.
The ``cuda`` tests run the same checks on a real GPU.
"""
import weakref
import contextlib
import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types

import inspect

import numpy as np

try:  # the installed CuPy, to check names and keywords against (it imports without a GPU)
    import cupy as _real_cupy
    import cupyx.scipy.special as _real_special
except Exception:  # pragma: no cover - depends on the machine
    _real_cupy = _real_special = None

_PRELUDE = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>
static inline unsigned int __float_as_uint(float v) { unsigned int u; memcpy(&u, &v, sizeof u); return u; }
static inline unsigned int __umulhi(unsigned int a, unsigned int b) { return (unsigned int)(((unsigned long long)a * b) >> 32); }
struct emu_dim3 { unsigned int x, y, z; };
static const emu_dim3 threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0};
static const emu_dim3 blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__
#define __syncthreads() ((void)0)
template <typename V> static inline V atomicAdd(V* address, V value) { V old = *address; *address = old + value; return old; }
"""

_C_TYPES = {"float": np.float32, "double": np.float64, "int": np.int32, "long long": np.int64,
            "unsigned long long": np.uint64, "bool": np.bool_, "unsigned char": np.uint8, "char": np.int8,
            "signed char": np.int8, "short": np.int16, "unsigned short": np.uint16, "unsigned int": np.uint32}
_CTYPES = {np.float32: ctypes.c_float, np.float64: ctypes.c_double, np.int32: ctypes.c_int32,
           np.int64: ctypes.c_int64, np.uint64: ctypes.c_uint64, np.bool_: ctypes.c_bool,
           np.uint8: ctypes.c_uint8, np.int8: ctypes.c_int8, np.int16: ctypes.c_int16, np.uint16: ctypes.c_uint16,
           np.uint32: ctypes.c_uint32}


def available():
    """Whether kernels can be emulated here (a C++ compiler is on the PATH)."""
    return shutil.which("g++") is not None


# ---- arrays ----------------------------------------------------------------------------------------
class _Pointer:
    """CuPy's MemoryPointer: ``ptr`` the address it points at, ``mem`` the allocation it lies in (``mem.ptr``
    where that starts: ``Tensor.storage_offset`` is their difference)."""

    def __init__(self, ptr, start=None):
        self.ptr = ptr
        self.mem = self if start is None else _Pointer(start)


class _Device:
    id = 0
    compute_capability = "90"

    def __init__(self, index=0):
        self.id = index or 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def use(self):
        pass

    def synchronize(self):
        _refuse_in_capture("synchronising the device")

    def __eq__(self, other):
        return isinstance(other, _Device) and other.id == self.id

    def __hash__(self):
        return hash(self.id)


_MISSING = object()


# ---- stream capture ------------------------------------------------------------------------------------
class CaptureError(RuntimeError):
    """What CUDA raises for an operation a stream capture does not permit."""


class _Capture:
    """The operations recorded while a stream is being captured, the memory they made, and a copy of the
    memory from before the capture that they touched (restored when the capture ends: a capture runs
    nothing on a GPU, so what it would have changed in place stays as it was)."""

    def __init__(self):
        self.records = []
        self.made = {}  # id -> numpy root allocated during the capture
        self.saved = {}  # id -> (numpy root from before the capture, its values when first touched)

    def touch(self, values):
        for value in values:
            roots = [_root(value._a)] if type(value) is DeviceArray else _roots_at(value)
            for root in roots:
                if id(root) in _roots_before and id(root) not in self.saved:
                    self.saved[id(root)] = (root, root.copy())

    def restore(self):
        for root, values in self.saved.values():
            if root.flags.writeable:
                root[...] = values


_capture = None
_roots_before = weakref.WeakValueDictionary()  # id -> numpy root of every device array made outside captures
_device_roots = weakref.WeakValueDictionary()  # id -> numpy root of every device array


def _root(a):
    """The array that owns ``a``'s memory: through views, and through the DummyArray numpy's ``as_strided`` wraps
    its input in (CuPy's ``as_strided`` makes a view of the same memory, so the emulator must see one)."""
    while True:
        base = a.base
        if not isinstance(base, np.ndarray):
            base = getattr(base, "base", None)
        if not isinstance(base, np.ndarray):
            return a
        a = base


def _roots_at(value):
    """The device memory from before the capture that an address (a Python int, as ctypes calls take) points
    into."""
    if type(value) is not int or value < 4096:
        return []
    return [root for key, root in list(_roots_before.items()) if _spans[key][0] <= value < _spans[key][1]]


_spans = {}  # id of a root in _roots_before -> its addresses [first, end)


def _note_array(a):
    root = _root(a)
    _device_roots[id(root)] = root
    if _capture is None:
        if _roots_before.get(id(root)) is not root:
            _roots_before[id(root)] = root
            start = root.ctypes.data
            _spans[id(root)] = (start, start + max(root.nbytes, 1))
            if len(_spans) > 2 * len(_roots_before) + 10000:  # forget the spans of dead roots now and then
                for key in _spans.keys() - _roots_before.keys():
                    del _spans[key]
    elif id(root) not in _roots_before:
        _capture.made[id(root)] = root


def _refuse_in_capture(what):
    if _capture is not None:
        raise CaptureError(f"cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing "
                           f"({what})")


def _refuse_cublas_in_capture():
    if _capture is not None:
        raise NotImplementedError("calling cuBLAS API during stream capture is currently unsupported")


def _recorded(thunk, touched=()):
    """``thunk()`` (an array operation on the device values ``touched``: arrays, or addresses); inside a
    capture also kept, for ``Graph.launch`` to run again."""
    if _capture is not None:
        _capture.touch(touched)
    result = thunk()
    if _capture is not None:
        _capture.records.append((_detached(thunk), _detached(result)))
    return result


def _detached(value):
    """``value`` with each device array in it (through containers and the emulator's closures) replaced by its
    detached twin, so that a record keeps memory, not allocations, alive (see ``_Raw``)."""
    if type(value) is DeviceArray:
        return value._detached()
    if type(value) in (tuple, list):
        return type(value)(_detached(v) for v in value)
    if type(value) is dict:
        return {k: _detached(v) for k, v in value.items()}
    if type(value) is types.FunctionType and value.__module__ == __name__ and value.__closure__:
        cells = tuple(types.CellType(_detached(cell.cell_contents)) if _filled(cell) else cell
                      for cell in value.__closure__)
        return types.FunctionType(value.__code__, value.__globals__, value.__name__, value.__defaults__, cells)
    return value


def _filled(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _device_arrays(value):
    if type(value) is DeviceArray:
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _device_arrays(v)]
    return []


def _replay(records):
    """Run recorded operations again, each result written into the array the capture gave out."""
    for thunk, result in records:
        fresh = thunk()
        for old, new in zip(_device_arrays(result), _device_arrays(fresh)):
            if not np.may_share_memory(old._a, new._a):
                old._a[...] = new._a


class _Graph:
    """A captured graph: its launch replays the recorded operations. It keeps the memory the capture
    allocated (as the memory pool a capture allocates from keeps its blocks for the graph)."""

    def __init__(self, records, memory):
        self._records = records
        self._memory = memory

    def launch(self, stream=None):
        _refuse_in_capture("launching a graph")
        _replay(self._records)


def _check_real(owner, label, name, kwargs=None):
    """Raise where the real CuPy has no ``label.name`` or its signature lacks a keyword given."""
    if owner is None:
        return
    real = getattr(owner, name, _MISSING)
    if real is _MISSING:
        raise AttributeError(f"CuPy has no {label}.{name}")
    if not kwargs:
        return
    try:
        params = inspect.signature(real).parameters.values()
    except (TypeError, ValueError):  # a compiled function without a signature
        return
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    unknown = set(kwargs) - {p.name for p in params}
    if unknown:
        raise TypeError(f"CuPy's {label}.{name} takes no keyword {sorted(unknown)}")


def _unwrap(x, allow_host=False):
    """The numpy value behind device arrays, recursively through lists and tuples; a numpy array
    operand is CuPy's TypeError unless ``allow_host``."""
    if type(x) is DeviceArray:
        return x._a
    if isinstance(x, np.ndarray) and not allow_host:
        raise TypeError(f"Unsupported type {type(x)}")
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(v, allow_host) for v in x)
    return x


def _unwrap_kwargs(kwargs, allow_host=False):
    return {k: _unwrap(v, allow_host) for k, v in kwargs.items()}


def _wrap(r):
    """numpy results as device arrays (a numpy scalar as a 0-d array, as CuPy's reductions give)."""
    if isinstance(r, np.ndarray):
        return DeviceArray(r)
    if isinstance(r, np.generic):
        return DeviceArray(np.asarray(r))
    if isinstance(r, tuple):
        return tuple(_wrap(v) for v in r)
    if isinstance(r, list):
        return [_wrap(v) for v in r]
    return r


def _call(fn, args, kwargs, allow_host=False, owner=None):
    out = kwargs.get("out")

    def run():
        result = fn(*_unwrap(args, allow_host), **_unwrap_kwargs(kwargs, allow_host))
        return out if type(out) is DeviceArray else _wrap(result)
    touched = _device_arrays(list(args) + list(kwargs.values())) + ([owner] if owner is not None else [])
    return _recorded(run, touched)


class DeviceArray:
    """A numpy array standing for a CuPy array (see the module docstring)."""

    __array_priority__ = 10000

    def __init__(self, array):
        array, pointer = _placed(array)
        object.__setattr__(self, "_a", array)
        object.__setattr__(self, "_pointer", pointer)
        _note_array(array)

    def _detached(self):
        """The same array holding no allocator pointer (what a captured graph keeps of it)."""
        twin = object.__new__(DeviceArray)
        object.__setattr__(twin, "_a", self._a)
        object.__setattr__(twin, "_pointer", None)
        return twin

    def __getattr__(self, name):
        _check_real(getattr(_real_cupy, "ndarray", None), "ndarray", name)
        attr = getattr(self._a, name)
        if callable(attr):
            def method(*args, **kwargs):
                _check_real(getattr(_real_cupy, "ndarray", None), "ndarray", name, kwargs)
                if name in _HOST_READS:
                    _refuse_in_capture(f"ndarray.{name}()")
                if name in _CUBLAS:
                    _refuse_cublas_in_capture()
                return _call(attr, args, kwargs, owner=self)
            return method
        return _wrap(attr)

    def __setattr__(self, name, value):
        setattr(self._a, name, _unwrap(value))

    @property
    def data(self):
        root = self._a
        while True:  # numpy's as_strided puts a DummyArray (holding the real base) in the chain
            base = root.base if isinstance(root.base, np.ndarray) else getattr(root.base, "base", None)
            if not isinstance(base, np.ndarray):
                break
            root = base
        return _Pointer(self._a.ctypes.data, root.ctypes.data)

    @property
    def device(self):
        return _Device(0)

    @property
    def flags(self):
        return self._a.flags

    @property
    def base(self):
        return None if self._a.base is None else DeviceArray(self._a.base)

    def get(self, stream=None, out=None):
        _refuse_in_capture("a device-to-host copy")
        return self._a.copy()

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to "
                        "construct a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _call(getattr(ufunc, method), inputs, kwargs)

    def __array_function__(self, func, types_, args, kwargs):
        return _call(func, args, kwargs)

    def __getitem__(self, key):
        if _capture is not None and any(type(k) is DeviceArray and k._a.dtype == np.bool_
                                        for k in (key if isinstance(key, tuple) else (key,))):
            _refuse_in_capture("boolean indexing, whose size depends on values")
        return _recorded(lambda: _wrap(_item_view(self._a, _unwrap(key, allow_host=True))), [self])

    def __setitem__(self, key, value):
        def run():
            self._a[_unwrap(key, allow_host=True)] = _unwrap(value)
        _recorded(run, [self] + _device_arrays([value]))

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (DeviceArray(np.asarray(v)) for v in self._a)

    def __bool__(self):
        _refuse_in_capture("bool() of a device array")
        return bool(self._a)

    def __float__(self):
        _refuse_in_capture("float() of a device array")
        return float(self._a)

    def __int__(self):
        _refuse_in_capture("int() of a device array")
        return int(self._a)

    def __index__(self):
        _refuse_in_capture("a device array as an index")
        return self._a.__index__()

    def __complex__(self):
        _refuse_in_capture("complex() of a device array")
        return complex(self._a)

    def __repr__(self):
        return "emulated_cupy." + repr(self._a)

    def __format__(self, spec):
        return format(self._a, spec)

    def __copy__(self):
        return _recorded(lambda: DeviceArray(self._a.copy()))

    def __deepcopy__(self, memo):
        return DeviceArray(self._a.copy())

    def __reduce__(self):
        raise TypeError("a device array cannot be pickled here; copy it to the host first")

    __hash__ = None


def _item_view(a, key):
    """``a[key]``, where it picks one element a 0-d view as CuPy gives (numpy gives a copied scalar)."""
    result = a[key]
    if isinstance(result, np.generic):
        return a[(key if isinstance(key, tuple) else (key,)) + (Ellipsis,)]
    return result


def _binary(name):
    op = getattr(np.ndarray, name)

    def method(self, other):
        if "matmul" in name:
            _refuse_cublas_in_capture()

        def run():
            result = op(self._a, _unwrap(other))
            if result is NotImplemented:
                return NotImplemented
            return self if name.startswith("__i") else _wrap(result)
        return _recorded(run, [self] + _device_arrays([other]))
    method.__name__ = name
    return method


def _unary(name):
    op = getattr(np.ndarray, name)

    def method(self):
        return _recorded(lambda: _wrap(op(self._a)), [self])
    method.__name__ = name
    return method


for _op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
            "lshift", "rshift"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        _name = _form.format(_op)
        if hasattr(np.ndarray, _name):
            setattr(DeviceArray, _name, _binary(_name))
for _name in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(DeviceArray, _name, _binary(_name))
for _name in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(DeviceArray, _name, _unary(_name))


# ---- kernels -----------------------------------------------------------------------------------------
def _compile(code, optimisation="-O1"):
    """The shared library of ``code`` compiled by g++ under the emulation prelude (cached by hash)."""
    digest = hashlib.sha256((optimisation + _PRELUDE + code).encode()).hexdigest()[:24]
    folder = os.path.join(tempfile.gettempdir(), "engine-cuda-emulator")
    os.makedirs(folder, exist_ok=True)
    lib_path = os.path.join(folder, digest + ".so")
    if not os.path.exists(lib_path):
        src = os.path.join(folder, digest + ".cpp")
        with open(src, "w") as f:
            f.write(_PRELUDE + code)
        partial = f"{lib_path}.{os.getpid()}"
        subprocess.run(["g++", optimisation, "-shared", "-fPIC", "-o", partial, src], check=True,
                       capture_output=True, text=True)
        os.replace(partial, lib_path)
    return ctypes.CDLL(lib_path)


def _typedefs(code):
    """{alias: C type} from ``typedef X Y;`` lines, resolved transitively."""
    table = {}
    for base, alias in re.findall(r"typedef\s+([A-Za-z_][A-Za-z_ ]*?)\s+([A-Za-z_]\w*)\s*;", code):
        table[alias] = table.get(base, base)
    return table


def _parameters(code, name, typedefs):
    """[(is_pointer, numpy type)] of kernel ``name``'s parameters."""
    match = re.search(r"__global__\s+void\s+" + re.escape(name) + r"\s*\(([^)]*)\)", code)
    if match is None:
        raise AttributeError(f"no kernel named {name} in the module")
    params = []
    for raw in match.group(1).split(","):
        text = raw.replace("__restrict__", " ").replace("const ", " ").strip()
        pointer = "*" in text
        words = text.replace("*", " ").split()[:-1]
        ctype = " ".join(typedefs.get(w, w) for w in words)
        ctype = typedefs.get(ctype, ctype)
        params.append((pointer, _C_TYPES[ctype]))
    return params


class _Kernel:
    def __init__(self, fn, name, params):
        self.fn, self.name, self.params = fn, name, params

    def __call__(self, grid, block, args, **kwargs):
        if len(args) != len(self.params):
            raise TypeError(f"{self.name}: {len(args)} arguments for {len(self.params)} parameters")
        c_args, c_types = [], []
        for i, (arg, (pointer, np_type)) in enumerate(zip(args, self.params)):
            if pointer:
                if type(arg) is not DeviceArray:
                    raise TypeError(f"{self.name}: argument {i} must be a device array, got {type(arg).__name__}")
                if not arg._a.flags.c_contiguous:
                    raise ValueError(f"{self.name}: argument {i} is not C-contiguous")
                if arg._a.dtype != np.dtype(np_type):
                    raise TypeError(f"{self.name}: argument {i} is {arg._a.dtype}, the kernel reads "
                                    f"{np.dtype(np_type)}")
                c_args.append(ctypes.c_void_p(arg._a.ctypes.data))
                c_types.append(ctypes.c_void_p)
            else:
                if type(arg) is not np_type:
                    raise TypeError(f"{self.name}: argument {i} must be a {np_type.__name__} scalar, "
                                    f"got {type(arg).__name__}")
                c_args.append(_CTYPES[np_type](arg))
                c_types.append(_CTYPES[np_type])
        self.fn.argtypes = c_types
        self.fn.restype = None

        def run():
            self.fn(*c_args)
            return args  # a capture keeps the arrays whose memory the launch reads and writes
        _recorded(run, _device_arrays(list(args)))


class RawModule:
    """CuPy's RawModule, compiled for the CPU (see the module docstring)."""

    def __init__(self, code=None, *, options=(), **kwargs):
        self.code = code
        self._lib = None

    def get_function(self, name):
        if self._lib is None:
            self._lib = _compile(self.code)
        return _Kernel(getattr(self._lib, name), name, _parameters(self.code, name, _typedefs(self.code)))


# ---- the module --------------------------------------------------------------------------------------
def _function(fn, allow_host=False, real=None, label="cupy"):
    def call(*args, **kwargs):
        _check_real(real, label, fn.__name__, kwargs)
        return _call(fn, args, kwargs, allow_host)
    call.__name__ = getattr(fn, "__name__", "function")
    return call


class _Namespace(types.ModuleType):
    """A module whose unknown attributes are numpy's, their results wrapped as device arrays."""

    def __init__(self, name, source, real=None):
        super().__init__(name)
        self._source, self._real = source, real

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        _check_real(self._real, self.__name__, name)
        if name in _CUBLAS:
            _refuse_cublas_in_capture()
        if name in _DATA_DEPENDENT:
            _refuse_in_capture(f"cupy.{name}, whose size depends on values")
        attr = getattr(self._source, name)
        if isinstance(attr, np.ufunc):
            return _Ufunc(attr)
        if isinstance(attr, (type, types.ModuleType)) or not callable(attr):
            return attr
        return _function(attr, real=self._real, label=self.__name__)


def _asarray(a, dtype=None, order=None, copy=None, blocking=False):
    """Host data or a device array as a device array (host data is always copied)."""
    if type(a) is DeviceArray:
        def run():
            out = a._a.astype(dtype, copy=False) if dtype is not None else a._a
            return DeviceArray(out.copy() if copy else out)
        return _recorded(run, [a])
    _refuse_in_capture("a host-to-device copy")
    return DeviceArray(np.array(_unwrap(a, allow_host=True), dtype=dtype, copy=True))


def _array(a, dtype=None, copy=True, order="K", subok=False, ndmin=0, blocking=False):
    """cupy.array: a copy unless ``copy=False`` allows a view."""
    out = _asarray(a, dtype, copy=copy)
    return DeviceArray(np.array(out._a, ndmin=ndmin, copy=False)) if ndmin else out


class _Ufunc:
    """A numpy ufunc over device arrays, with its methods (``add.at``, ``maximum.reduce``...)."""

    def __init__(self, ufunc):
        self._ufunc = ufunc

    def __call__(self, *args, **kwargs):
        return _call(self._ufunc, args, kwargs)

    def __getattr__(self, name):
        attr = getattr(self._ufunc, name)
        return _function(attr) if callable(attr) else attr


def _asnumpy(a, stream=None, out=None, blocking=True):
    _refuse_in_capture("a device-to-host copy")
    return a._a.copy() if type(a) is DeviceArray else np.asarray(a)


def _get_array_module(*args):
    return module() if any(type(a) is DeviceArray for a in args) else np


_HOST_READS = frozenset({"item", "tolist", "tobytes"})
_CUBLAS = frozenset({"matmul", "dot", "vdot", "inner", "tensordot", "einsum", "kron"})
_DATA_DEPENDENT = frozenset({"nonzero", "argwhere", "flatnonzero", "unique", "extract", "compress"})


class _Memory:
    """A block of emulated device memory: host bytes at a real address, so that kernels, cuBLAS calls and
    arrays placed in it (see ``_placed``) read and write the same bytes."""

    def __init__(self, size):
        self.size = size
        self.buffer = np.zeros(max(size, 1), np.uint8)
        self.ptr = self.buffer.ctypes.data
        _memories[id(self)] = self


_memories = weakref.WeakValueDictionary()  # id -> every live emulated block
_pointers = weakref.WeakValueDictionary()  # id of a placed array -> the allocator's pointer it lies at


class _UnownedMemory:
    """``cupy.cuda.UnownedMemory``: ``size`` bytes at ``ptr`` inside memory that ``owner`` keeps alive."""

    def __init__(self, ptr, size, owner, device_id=-1):
        self.ptr, self.size, self.owner = ptr, size, owner


class _MemoryPointer:
    """``cupy.cuda.MemoryPointer``: a place in a memory block (which it keeps alive)."""

    def __init__(self, mem, offset):
        self.mem = mem
        self.ptr = mem.ptr + offset

    def __add__(self, offset):
        return _MemoryPointer(self.mem, self.ptr - self.mem.ptr + offset)

    def __int__(self):
        return self.ptr


class _MemoryPool:
    """CuPy's memory pool without its cache: each ``malloc`` is a fresh block, counted in ``used_bytes`` and
    ``total_bytes`` until every pointer to it is gone. The default pools hold nothing: arrays made outside
    ``using_allocator`` are plain numpy memory."""

    def __init__(self):
        self._used = 0
        self._limit = 0

    def malloc(self, size):
        if self._limit and self._used + size > self._limit:
            raise _OutOfMemoryError(size, self._used, self._limit)
        memory = _Memory(size)
        self._used += size
        weakref.finalize(memory, self._release, size)
        return _MemoryPointer(memory, 0)

    def _release(self, size):
        self._used -= size

    def used_bytes(self):
        return self._used

    def total_bytes(self):
        return self._used

    def free_bytes(self):
        return 0

    def free_all_blocks(self, stream=None):
        pass

    def n_free_blocks(self):
        return 0

    def set_limit(self, size=None, fraction=None):
        """CuPy's cap on the bytes the pool may hold: ``size`` bytes or ``fraction`` of the device's memory
        (0 or neither: no cap)."""
        if size is not None and fraction is not None:
            raise ValueError("size and fraction cannot be specified at the same time")
        if fraction is not None:
            if not 0 <= fraction <= 1:
                raise ValueError(f"memory limit fraction out of range: {fraction}")
            size = int(_TOTAL_MEMORY * fraction)
        self._limit = int(size or 0)

    def get_limit(self):
        return self._limit


_TOTAL_MEMORY = 1 << 34  # the emulated GPU's memory, in bytes


class _OutOfMemoryError(MemoryError):
    """``cupy.cuda.memory.OutOfMemoryError``, with CuPy's message."""

    def __init__(self, size, total, limit=0):
        limit_text = f", limit set to: {limit} bytes" if limit else ""
        super().__init__(f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes{limit_text}).")


_allocators = [None]


@contextlib.contextmanager
def _using_allocator(allocator=None):
    """Inside, every new device array is placed in memory from ``allocator(nbytes)`` (as CuPy allocates)."""
    _allocators.append(allocator)
    try:
        yield
    finally:
        _allocators.pop()


class _Raw:
    """Emulated device memory seen as an array (through ``__array_interface__``). It keeps the block's bytes
    alive but not the pointer an allocator gave out: as on a GPU, a captured graph holds memory by address,
    and the allocator learns a buffer is free when the arrays on it (which hold the pointer) are gone."""

    def __init__(self, memory, ptr, shape, dtype):
        self.memory = memory
        self.__array_interface__ = {"data": (ptr, False), "shape": shape, "typestr": dtype.str, "version": 3}


def _memory_at(ptr):
    """The emulated block that holds the address ``ptr``."""
    for memory in list(_memories.values()):
        if memory.ptr <= ptr < memory.ptr + max(memory.size, 1):
            return memory
    raise ValueError(f"no emulated device memory at address {ptr:#x}")


def _placed(array):
    """(array, pointer): ``array`` copied into memory from the current allocator and the pointer it gave,
    where an allocator is set and the array is new (not a view of a device array's memory); else
    (``array``, the pointer of the placed array it is a view of, or None)."""
    allocator = _allocators[-1]
    root = _root(array)
    if _device_roots.get(id(root)) is root:
        return array, _pointers.get(id(root))
    if allocator is None or array.nbytes == 0 or array.dtype.hasobject:
        return array, None
    pointer = allocator(array.nbytes)
    stored = array.dtype if array.dtype.kind != "V" else np.dtype(f"u{array.dtype.itemsize}")
    placed = np.asarray(_Raw(_memory_at(pointer.ptr), pointer.ptr, array.shape, stored))
    if stored != array.dtype:  # ml_dtypes' bfloat16: an array interface cannot name it, a view can
        placed = placed.view(array.dtype)
    placed[...] = array
    _pointers[id(_root(placed))] = pointer
    return placed, pointer


_POOL = _MemoryPool()
_PINNED_POOL = _MemoryPool()


class _Stream:
    null = None

    def __init__(self, null=False, non_blocking=False, ptr=0):
        self.ptr = 0 if null else id(self)

    def __enter__(self):
        _stream_stack.append(self)
        return self

    def __exit__(self, *exc):
        _stream_stack.pop()
        return False

    def synchronize(self):
        _refuse_in_capture("synchronising a stream")

    def use(self):
        _stream_stack[0] = self
        return self

    def is_capturing(self):
        return _capture is not None

    def begin_capture(self, mode=None):
        global _capture
        if _capture is not None:
            raise CaptureError("cudaErrorIllegalState: a stream is already being captured")
        _capture = _Capture()

    def end_capture(self):
        """The graph of what ran since ``begin_capture``; the arrays it made are filled with NaN (a graph
        computes nothing until it is launched)."""
        global _capture
        if _capture is None:
            raise CaptureError("cudaErrorIllegalState: the stream is not being captured")
        done, _capture = _capture, None
        done.restore()
        for root in done.made.values():
            if root.dtype.kind in "fc" and root.flags.writeable:
                root.fill(np.nan)
        return _Graph(done.records, list(done.made.values()))

    def wait_event(self, event):
        pass

    def record(self, event=None):
        event = event or _Event()
        event.record(self)
        return event

    @property
    def done(self):
        return True


class _ExternalStream(_Stream):
    """``cupy.cuda.ExternalStream``: a stream made elsewhere, known by its address."""

    def __init__(self, ptr, device_id=-1):
        super().__init__()
        self.ptr, self.device_id = ptr, device_id


_Stream.null = _Stream(null=True)
_stream_stack = [_Stream.null]


class _Event:
    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.time = None

    def record(self, stream=None):
        self.time = time.perf_counter()

    def synchronize(self):
        _refuse_in_capture("synchronising an event")

    @property
    def done(self):
        return True


def _elapsed(start, end):
    return (end.time - start.time) * 1000.0


class _PinnedMemory(bytearray):
    """Host memory as cupy.cuda.alloc_pinned_memory gives it (a buffer numpy can wrap)."""

    def __init__(self, nbytes):
        super().__init__(max(int(nbytes), 1))


class _RandomState:
    """cupy.random.RandomState on numpy's, with CuPy's ``dtype`` keywords."""

    def __init__(self, seed=None):
        self._rs = np.random.RandomState(None if seed is None else int(seed) % (2 ** 32))

    def seed(self, seed=None):
        self._rs.seed(None if seed is None else int(seed) % (2 ** 32))

    def __getattr__(self, name):
        fn = getattr(self._rs, name)

        def call(*args, dtype=None, **kwargs):
            out = fn(*_unwrap(args), **_unwrap_kwargs(kwargs))
            out = np.asarray(out)
            return DeviceArray(out.astype(dtype) if dtype is not None else out)
        return call


def _device_properties(device):
    """``cupy.cuda.runtime.getDeviceProperties``'s dict for the emulated GPU (CUDA 13's: no clock rates)."""
    if device != 0:
        raise RuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
    return {"name": b"CUDA emulated on the CPU", "totalGlobalMem": _TOTAL_MEMORY, "major": 9, "minor": 0,
            "multiProcessorCount": 1, "integrated": 0, "isMultiGpuBoard": 0, "maxThreadsPerMultiProcessor": 2048,
            "warpSize": 32, "uuid": bytes(range(16)), "l2CacheSize": 50 << 20, "memoryBusWidth": 5120,
            "sharedMemPerBlock": 48 << 10, "sharedMemPerMultiprocessor": 228 << 10, "pciBusID": 1,
            "pciDeviceID": 0, "pciDomainID": 0}


_ATTRIBUTES = {13: 1_980_000, 36: 2_619_000}  # cudaDevAttrClockRate, cudaDevAttrMemoryClockRate (kHz)


def _device_attribute(attrib, device):
    if device != 0:
        raise RuntimeError("cudaErrorInvalidDevice: invalid device ordinal")
    return _ATTRIBUTES[attrib]


_default_allocator = [None]


def _set_allocator(allocator=None):
    """``cupy.cuda.set_allocator``: kept for ``get_allocator`` (arrays made outside ``using_allocator`` stay plain
    numpy memory here, see ``_MemoryPool``)."""
    _default_allocator[0] = allocator


def _nvtx():
    """``cupy.cuda.nvtx``: each call is recorded in ``calls`` (there is no profiler to see it)."""
    nvtx = types.ModuleType("cupy.cuda.nvtx")
    nvtx.available = True
    nvtx.calls = []
    ids = iter(range(1, 1 << 62))
    nvtx.RangePush = lambda message, id_color=-1: nvtx.calls.append(("push", message))
    nvtx.RangePop = lambda: nvtx.calls.append(("pop",))
    nvtx.Mark = lambda message, id_color=-1: nvtx.calls.append(("mark", message))

    def range_start(message, color):  # CuPy's takes an ARGB colour, required
        if not 0 <= color < 1 << 32:
            raise OverflowError("can't convert negative value to uint32_t")
        range_id = next(ids)
        nvtx.calls.append(("start", message, range_id))
        return range_id
    nvtx.RangeStart = range_start
    nvtx.RangeEnd = lambda range_id: nvtx.calls.append(("end", range_id))
    return nvtx


_module = None


def module():
    """The emulated ``cupy`` module (one per process)."""
    global _module
    if _module is not None:
        return _module
    cp = _Namespace("cupy", np, _real_cupy)
    cp.ndarray = DeviceArray
    cp.asarray = _asarray
    cp.array = _array
    cp.asnumpy = _asnumpy
    cp.get_array_module = _get_array_module
    cp.argsort = lambda a, axis=-1, kind=None: _recorded(
        lambda: DeviceArray(np.argsort(_unwrap(a), axis=axis, kind="stable")))
    cp.RawModule = RawModule
    cp.get_default_memory_pool = lambda: _POOL
    cp.get_default_pinned_memory_pool = lambda: _PINNED_POOL
    lib = types.ModuleType("cupy.lib")
    stride_tricks = types.ModuleType("cupy.lib.stride_tricks")
    stride_tricks.as_strided = lambda x, shape=None, strides=None: DeviceArray(
        np.lib.stride_tricks.as_strided(x._a, shape, strides))
    lib.stride_tricks = stride_tricks
    cp.lib = lib
    cuda = types.ModuleType("cupy.cuda")
    runtime = types.ModuleType("cupy.cuda.runtime")
    runtime.getDeviceCount = lambda: 1
    runtime.deviceSynchronize = lambda: _refuse_in_capture("synchronising the device")
    runtime.getDeviceProperties = _device_properties
    runtime.deviceGetAttribute = _device_attribute
    runtime.deviceCanAccessPeer = lambda device, peerDevice: 0  # one GPU: no peer
    runtime.memGetInfo = lambda: (_TOTAL_MEMORY - _POOL.used_bytes(), _TOTAL_MEMORY)
    runtime.runtimeGetVersion = lambda: 13000
    runtime.driverGetVersion = lambda: 13000
    cuda.runtime = runtime
    cuda.Device = _Device
    cuda.Stream = _Stream
    cuda.Event = _Event
    cuda.get_current_stream = lambda: _stream_stack[-1]
    cuda.get_elapsed_time = _elapsed
    cuda.set_allocator = _set_allocator
    cuda.get_allocator = lambda: _default_allocator[0]
    cuda.memory = types.ModuleType("cupy.cuda.memory")
    cuda.memory.OutOfMemoryError = _OutOfMemoryError
    cuda.ExternalStream = _ExternalStream
    cuda.nvtx = _nvtx()
    cuda.nvrtc = types.ModuleType("cupy.cuda.nvrtc")
    cuda.nvrtc.getSupportedArchs = lambda: (75, 80, 86, 89, 90, 100, 120)
    cuda.nvrtc.getVersion = lambda: (13, 0)
    cuda.using_allocator = _using_allocator
    cuda.MemoryPool = _MemoryPool
    cuda.MemoryPointer = _MemoryPointer
    cuda.UnownedMemory = _UnownedMemory
    cuda.alloc_pinned_memory = _PinnedMemory
    cuda.PinnedMemoryPointer = _PinnedMemory
    cuda.is_available = lambda: True
    cp.cuda = cuda
    random = types.ModuleType("cupy.random")
    random.RandomState = _RandomState
    cp.random = random
    cp.fuse = lambda *a, **k: (lambda fn: fn)
    _module = cp
    return cp


def _linalg_routines():
    """``cupy._core._routines_linalg``: the GEMM compute type per dtype that the TF32 switches set (kept in
    ``compute_types``; the emulated GEMMs compute in full precision whatever it says)."""
    routines = types.ModuleType("cupy._core._routines_linalg")
    routines.COMPUTE_TYPE_DEFAULT, routines.COMPUTE_TYPE_TF32 = 1, 7  # CuPy 14.2's values
    routines.compute_types = {}
    routines.set_compute_type = lambda dtype, compute_type: routines.compute_types.__setitem__(np.dtype(dtype),
                                                                                               compute_type)
    return routines


def _cupyx():
    """The emulated ``cupyx`` with the SciPy special functions the engine uses."""
    import scipy.special
    cupyx = types.ModuleType("cupyx")
    cupyx.scipy = types.ModuleType("cupyx.scipy")
    cupyx.scipy.special = _Namespace("cupyx.scipy.special", scipy.special, _real_special)
    return cupyx


_KERNEL_MODULES = ("source", "conv", "pool", "interpolate", "roi", "nms", "pointwise", "norm", "gemm", "cublas",
                   "graphs", "arena", "philox")

# cuBLAS's documented column-major GEMM (C = alpha op(A) op(B) + beta C) for the entry points cublas.py calls,
# on host memory: float32 (cudaDataType 0), float64 (1), and bfloat16 operands (14) with a float32 result;
# other types answer CUBLAS_STATUS_NOT_SUPPORTED.
_CUBLAS_SOURCE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
static inline double emu_load(const float* p) { return *p; }
static inline double emu_load(const double* p) { return *p; }
static inline double emu_load(const uint16_t* p) {  /* bfloat16: the upper half of a float's bits */
    uint32_t bits = (uint32_t)*p << 16;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* Each C[i][j] is the sum over l = 0, 1, ... of op(A)[i][l] op(B)[l][j] in double, in that order; op(A) is first
   read into a dense column-major double matrix so that the sums run over contiguous columns. */
template <typename T, typename R>
static void emu_gemm(int ta, int tb, int m, int n, int k, double alpha, const T* A, int lda,
                     const T* B, int ldb, double beta, R* C, int ldc) {
    double* a = (double*)malloc(sizeof(double) * ((size_t)m * k + m));
    double* sum = a + (size_t)m * k;
    for (int l = 0; l < k; ++l)
        for (int i = 0; i < m; ++i)
            a[i + (size_t)l * m] = emu_load(ta ? A + l + (int64_t)i * lda : A + i + (int64_t)l * lda);
    for (int j = 0; j < n; ++j) {
        for (int i = 0; i < m; ++i) sum[i] = 0;
        for (int l = 0; l < k; ++l) {
            const double b = emu_load(tb ? B + j + (int64_t)l * ldb : B + l + (int64_t)j * ldb);
            const double* column = a + (size_t)l * m;
            for (int i = 0; i < m; ++i) sum[i] += column[i] * b;
        }
        for (int i = 0; i < m; ++i) {
            R* c = C + i + (int64_t)j * ldc;
            *c = (R)(alpha * sum[i] + (beta == 0 ? 0 : beta * *c));
        }
    }
    free(a);
}

static int emu_check(int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc, int atype, int btype,
                     int ctype, int compute) {
    if (ta < 0 || ta > 1 || tb < 0 || tb > 1 || m < 0 || n < 0 || k < 0) return 7;
    if (lda < (ta ? k : m) || lda < 1 || ldb < (tb ? n : k) || ldb < 1 || ldc < m || ldc < 1) return 7;
    if (atype != btype) return 15;
    if (atype == 0 && ctype == 0 && (compute == 68 || compute == 77)) return 0;
    if (atype == 1 && ctype == 1 && compute == 70) return 0;
    if (atype == 14 && ctype == 0 && compute == 68) return 0;
    return 15;
}

extern "C" {
static int emu_handles = 0;
int cublasCreate_v2(void** handle) { *handle = (void*)(intptr_t)(++emu_handles); return 0; }
int cublasSetStream_v2(void* handle, void* stream) { return handle ? 0 : 1; }

int cublasGemmStridedBatchedEx(void* handle, int ta, int tb, int m, int n, int k, const void* alpha,
                               const void* A, int atype, int lda, long long sa, const void* B, int btype,
                               int ldb, long long sb, const void* beta, void* C, int ctype, int ldc,
                               long long sc, int batch, int compute, int algo) {
    int status = emu_check(ta, tb, m, n, k, lda, ldb, ldc, atype, btype, ctype, compute);
    if (status) return status;
    for (int p = 0; p < batch; ++p) {
        if (atype == 0)
            emu_gemm<float, float>(ta, tb, m, n, k, *(const float*)alpha, (const float*)A + p * sa, lda,
                                   (const float*)B + p * sb, ldb, *(const float*)beta, (float*)C + p * sc, ldc);
        else if (atype == 1)
            emu_gemm<double, double>(ta, tb, m, n, k, *(const double*)alpha, (const double*)A + p * sa, lda,
                                     (const double*)B + p * sb, ldb, *(const double*)beta, (double*)C + p * sc,
                                     ldc);
        else
            emu_gemm<uint16_t, float>(ta, tb, m, n, k, *(const float*)alpha, (const uint16_t*)A + p * sa, lda,
                                      (const uint16_t*)B + p * sb, ldb, *(const float*)beta, (float*)C + p * sc,
                                      ldc);
    }
    return 0;
}

int cublasGemmEx(void* handle, int ta, int tb, int m, int n, int k, const void* alpha, const void* A,
                 int atype, int lda, const void* B, int btype, int ldb, const void* beta, void* C, int ctype,
                 int ldc, int compute, int algo) {
    return cublasGemmStridedBatchedEx(handle, ta, tb, m, n, k, alpha, A, atype, lda, 0, B, btype, ldb, 0, beta,
                                      C, ctype, ldc, 0, 1, compute, algo);
}
}
"""


class _CapturedCalls:
    """A ctypes library whose GEMM calls are recorded in a stream capture, as kernel launches are."""

    def __init__(self, lib):
        object.__setattr__(self, "_lib", lib)

    def __getattr__(self, name):
        fn = getattr(self._lib, name)
        if "Gemm" not in name:
            return fn
        return _CapturedCall(fn)


class _CapturedCall:
    def __init__(self, fn):
        object.__setattr__(self, "_fn", fn)

    def __setattr__(self, name, value):  # argtypes, restype
        setattr(self._fn, name, value)

    def __call__(self, *args):
        return _recorded(lambda: self._fn(*args), args)


def emulated_cublas():
    """The emulated cuBLAS entry points (see ``_CUBLAS_SOURCE``) as a ctypes library."""
    return _CapturedCalls(_compile(_CUBLAS_SOURCE, "-O3"))  # vectorised over rows; each sum keeps its order


@contextlib.contextmanager
def installed():
    """Inside, ``import cupy`` gives the emulated module and engine sees one emulated GPU; the CUDA
    backend's modules are imported afresh against it, and dropped again after."""
    import engine._device as device_module
    import engine.random as random_module
    from engine import backends

    fake = module()
    cupyx = _cupyx()
    core = types.ModuleType("cupy._core")
    core._routines_linalg = _linalg_routines()
    names = ("cupy", "cupyx", "cupyx.scipy", "cupyx.scipy.special", "cupy._core", "cupy._core._routines_linalg")
    saved = {n: sys.modules.get(n) for n in names}
    saved_cupy = device_module._cupy
    saved_generators = dict(random_module._cuda_states)  # the GPUs' generators hold their device's arrays
    random_module._cuda_states.clear()

    import engine.backends.cuda as cuda_package

    def drop_backend():
        """Forget the CUDA kernel modules (they hold the ``cupy`` they were imported with)."""
        for name in _KERNEL_MODULES:
            sys.modules.pop(f"engine.backends.cuda.{name}", None)
            if hasattr(cuda_package, name):
                delattr(cuda_package, name)
        backends._sets.clear()
    drop_backend()
    sys.modules["cupy"] = fake
    sys.modules.update({"cupyx": cupyx, "cupyx.scipy": cupyx.scipy, "cupyx.scipy.special": cupyx.scipy.special,
                        "cupy._core": core, "cupy._core._routines_linalg": core._routines_linalg})
    device_module._cupy = fake
    import engine.backends.cuda.cublas as cublas
    cublas._open_library = emulated_cublas
    try:
        yield fake
    finally:
        drop_backend()
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
        device_module._cupy = saved_cupy
        random_module._cuda_states.clear()
        random_module._cuda_states.update(saved_generators)
