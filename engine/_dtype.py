"""Tensor element types with PyTorch's names and type-promotion rules.

``bfloat16`` is backed by ``ml_dtypes.bfloat16``, the numpy extension type CuPy 14 also takes. ml_dtypes is
optional (installed with the ``gpu`` extras; ``pip install ml_dtypes`` on its own): without it
``engine.bfloat16`` still exists, and making a tensor of it raises one line saying what to install. It is
imported when bfloat16 is first used, not with engine: ml_dtypes 0.7 took 0.6-0.8 s to import (0.5.1: 9 ms),
half of ``import engine``'s 1.3 s and a cost every CLI run and worker process paid.
"""
import numpy as np

_BFLOAT16_MISSING = "engine.bfloat16 tensors need the ml_dtypes package: pip install ml_dtypes"


class dtype:
    """A tensor element type (``engine.float32`` ...), backed by a numpy dtype."""

    __slots__ = ("name", "np", "is_floating_point", "is_signed", "itemsize", "_rank", "title")

    def __init__(self, name, np_dtype, rank, title, itemsize=None, floating=None):
        self.name = name
        self.title = title  # PyTorch's ScalarType name, used in error messages
        self.np = None if np_dtype is None else np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f" if floating is None else floating
        self.is_signed = self.is_floating_point or self.np.kind in "ic"
        self.itemsize = self.np.itemsize if itemsize is None else itemsize
        self._rank = rank

    @property
    def is_complex(self):
        return self.np is not None and self.np.kind == "c"

    def __repr__(self):
        return "engine." + self.name

    def __reduce__(self):
        return self.name

    def to_real(self):
        """The real type of a complex one (complex64 -> float32); other types give themselves."""
        return _REAL_OF.get(self, self)

    def to_complex(self):
        """The complex type holding this floating type's values (float64 -> complex128, float16 and bfloat16 ->
        complex64: numpy has no complex32); complex types give themselves."""
        if self.is_complex:
            return self
        if not self.is_floating_point:
            raise RuntimeError(f"Unknown Complex ScalarType for {self.title}")
        return complex128 if self is float64 else complex64


_NP_SLOT = dtype.__dict__["np"]


class _OptionalDtype(dtype):
    """A dtype whose numpy type an optional package gives: ``load()`` imports it (None where it is missing)
    the first time ``np`` is read. Setting ``np`` (as a test does, to act as if the package were missing)
    takes the place of loading."""

    __slots__ = ("_load", "_loaded")

    def __init__(self, name, load, rank, title, itemsize):
        super().__init__(name, None, rank, title, itemsize, True)
        self._load = load
        self._loaded = False

    @property
    def np(self):
        if not self._loaded:
            self.np = self._load()
            if self.np is not None:
                _register(self)
        return _NP_SLOT.__get__(self)

    @np.setter
    def np(self, value):
        _NP_SLOT.__set__(self, None if value is None else np.dtype(value))
        self._loaded = True


def _ml_dtypes_bfloat16():
    try:
        import ml_dtypes
    except ImportError:  # optional: only bfloat16 tensors need it
        return None
    return ml_dtypes.bfloat16


bool_ = dtype("bool", np.bool_, 0, "Bool")
uint8 = dtype("uint8", np.uint8, 1, "Byte")
int8 = dtype("int8", np.int8, 1, "Char")
int16 = dtype("int16", np.int16, 2, "Short")
int32 = dtype("int32", np.int32, 3, "Int")
int64 = dtype("int64", np.int64, 4, "Long")
float16 = dtype("float16", np.float16, 5, "Half")
float32 = dtype("float32", np.float32, 6, "Float")
float64 = dtype("float64", np.float64, 7, "Double")
# float32's range with 8 significant bits; between float16 and float32 in promotion, and with float16 -> float32
bfloat16 = _OptionalDtype("bfloat16", _ml_dtypes_bfloat16, 5, "BFloat16", 2)
# The wide unsigned types of PyTorch 2.3+: they hold data (16-bit images, ids) and convert, but promote
# with no other integer type and have few kernels in torch
# complex types: a pair of floats; ranked above every real type in promotion. numpy has no complex32 (chalf)
complex64 = dtype("complex64", np.complex64, 8, "ComplexFloat")
complex128 = dtype("complex128", np.complex128, 9, "ComplexDouble")
uint16 = dtype("uint16", np.uint16, 2, "UInt16")
uint32 = dtype("uint32", np.uint32, 3, "UInt32")
uint64 = dtype("uint64", np.uint64, 4, "UInt64")
_NO_PROMOTION = (uint16, uint32, uint64)
# PyTorch's quantized types: 8/32-bit integers read through a scale and zero point (engine.QuantizedTensor). They
# are not in ALL: no plain tensor has them, and they take part in no promotion
quint8 = dtype("quint8", np.uint8, 1, "QUInt8")
qint8 = dtype("qint8", np.int8, 1, "QInt8")
qint32 = dtype("qint32", np.int32, 3, "QInt32")
QUANTIZED = (quint8, qint8, qint32)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, uint16, uint32, uint64, bfloat16,
       complex64, complex128)
_BY_NP = {d.np: d for d in ALL if not isinstance(d, _OptionalDtype)}
_REAL_OF = {complex64: float32, complex128: float64}
#: the numpy dtypes whose tensors carry gradients: the floating types and the complex ones
_FLOATING_NP = frozenset(d.np for d in _BY_NP.values() if d.is_floating_point or d.is_complex)
_REAL_FLOATING_NP = frozenset(d.np for d in _BY_NP.values() if d.is_floating_point)
#: the numpy dtypes of float16 and bfloat16 (once bfloat16 is loaded), which kernels compute in float32
HALF_NP = (float16.np,)
#: bfloat16's numpy dtype once it is loaded (no array holds bfloat16 before), else None: for checks that must
#: not load it
BFLOAT16_NP = None


def _register(d):
    """Make the loaded optional dtype ``d`` known to the numpy dtype tables (bfloat16 is the only one)."""
    global _FLOATING_NP, _REAL_FLOATING_NP, HALF_NP, BFLOAT16_NP
    _BY_NP[d.np] = d
    _FLOATING_NP = _FLOATING_NP | {d.np}
    _REAL_FLOATING_NP = _REAL_FLOATING_NP | {d.np}
    HALF_NP = (float16.np, d.np)
    BFLOAT16_NP = d.np


ALIASES = {
    "bool": bool_, "uint8": uint8, "int8": int8, "int16": int16, "short": int16,
    "int32": int32, "int": int32, "int64": int64, "long": int64,
    "float16": float16, "half": float16, "float32": float32, "float": float32,
    "float64": float64, "double": float64, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "bfloat16": bfloat16, "complex64": complex64, "cfloat": complex64, "complex128": complex128,
    "cdouble": complex128,
}
_PYTHON_TYPES = {float: float64, int: int64, bool: bool_, complex: complex128}
NO_COMPLEX32 = "engine has no complex32 (chalf): numpy has no complex type of two float16s; use complex64"

_default_float = float32


def get_default_dtype():
    return _default_float


def set_default_dtype(d):
    """torch.set_default_dtype: floating dtype ``d`` becomes the type of Python floats in new tensors (only a
    dtype: not a name, nor Python's ``float``)."""
    if not isinstance(d, dtype):
        raise TypeError("invalid dtype object: only floating-point types are supported as the default type")
    global _default_float
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _default_float = d


def is_floating(np_dtype):
    """Whether arrays of this numpy dtype carry gradients: a floating engine type (float16/32/64 or bfloat16,
    whose ml_dtypes numpy kind is "V", not "f") or a complex one, as torch lets both require grad."""
    return np_dtype in _FLOATING_NP


def is_real_floating(np_dtype):
    """Whether arrays of this numpy dtype hold a real floating engine type (``Tensor.is_floating_point``)."""
    return np_dtype in _REAL_FLOATING_NP


def default_complex():
    """The complex type of Python complex scalars and data: complex128 under a float64 default, else
    complex64 (torch's complex32 for a float16 default does not exist here)."""
    return complex128 if _default_float is float64 else complex64


def numpy_dtype(d):
    """The numpy dtype of engine dtype ``d``; one line saying what to install where it has none."""
    if d.np is None:
        raise RuntimeError(_BFLOAT16_MISSING)
    return d.np


def from_numpy_dtype(np_dtype):
    """The engine dtype of a numpy dtype; raises TypeError for types the engine lacks, and torch's
    ValueError for a foreign byte order (a big-endian 16-bit image: Pillow's mode I;16B)."""
    if not np.dtype(np_dtype).isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion "
                         "between byte orders is currently not supported.")
    try:
        return _BY_NP[np.dtype(np_dtype)]
    except KeyError:
        if np.dtype(np_dtype).name == bfloat16.name and bfloat16.np == np_dtype:  # ml_dtypes' before engine used it
            return bfloat16
        raise TypeError(f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).type.__name__}. The only "
                        "supported types are: float64, float32, float16, complex64, complex128, int64, int32, int16, "
                        "int8, uint64, uint32, uint16, uint8, and bool.") from None


def to_dtype(d):
    """Accept an engine dtype, a numpy dtype/type, a Python type or a name. Every dtype a caller asks for
    passes here, so bfloat16 without ml_dtypes fails here with its one line. Python's types are C's widest, as
    in torch, whatever the default dtype: ``float`` is float64 and ``complex`` complex128."""
    if isinstance(d, dtype):
        numpy_dtype(d)
        return d
    python_type = _PYTHON_TYPES.get(d) if isinstance(d, type) else None
    if python_type is not None:
        return python_type
    if isinstance(d, str) and d in ("complex32", "chalf"):
        raise TypeError(NO_COMPLEX32)
    if isinstance(d, str) and d in ALIASES:
        return to_dtype(ALIASES[d])
    return from_numpy_dtype(d)


def promote_types(type1, type2):
    """torch.promote_types: floats win over ints, ints over bool; float16+bfloat16 -> float32; uint8+int8 ->
    int16; uint16, uint32 and uint64 promote only to real floats. Python's types stand for their dtypes."""
    a = type1 if isinstance(type1, dtype) else to_dtype(type1)
    b = type2 if isinstance(type2, dtype) else to_dtype(type2)
    if a is b:
        return a
    if (a in _NO_PROMOTION or b in _NO_PROMOTION) and (a.is_complex or b.is_complex):
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{a.title} and {b.title}")
    if a.is_complex or b.is_complex:
        wide = a._rank == 9 or b._rank == 9 or float64 in (a, b)
        return complex128 if wide else complex64
    if a.is_floating_point or b.is_floating_point:
        if a.is_floating_point and b.is_floating_point:
            if a._rank == b._rank:  # float16 with bfloat16: neither holds the other
                return float32
            return a if a._rank > b._rank else b
        return a if a.is_floating_point else b
    if a in _NO_PROMOTION or b in _NO_PROMOTION:
        raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                           f"{a.title} and {b.title}")
    return from_numpy_dtype(np.promote_types(a.np, b.np))


def category(d):
    """0 for bool, 1 for the integer types, 2 for the floating types, 3 for the complex ones: torch's order for
    promotion and casts."""
    if d is bool_:
        return 0
    if d.is_complex:
        return 3
    return 2 if d.is_floating_point else 1


def can_cast(source, target):
    """torch.can_cast: a value may narrow within its category (float32 into float16 or bfloat16, int64 into
    uint8), never fall to a lower one (a float into an integer, anything but bool into bool). In-place ops
    and ``out=`` write their result into a tensor under this rule."""
    return category(source) <= category(target)


def _combine(higher, lower):
    """Combine results of a higher-priority and a lower-priority operand class (PyTorch rule)."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if lower.is_complex and higher.is_floating_point:
        return higher.to_complex()  # higher's precision: float32 with a complex128 0-dim gives complex64
    if category(lower) > category(higher):
        # a floating or complex type over integers is taken as it is (uint16 tensors with a complex 0-dim tensor:
        # complex, though uint16 and complex types do not promote); an integer type over bool is promoted
        return lower if category(lower) >= 2 else promote_types(higher, lower)
    return higher


def scalar_dtype(value):
    """The dtype a Python scalar takes when it stands alone."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return _default_float
    if isinstance(value, (complex, np.complexfloating)):
        return default_complex()
    raise TypeError(f"unsupported scalar type {type(value).__name__}")


def result_type(*operands):
    """PyTorch's result type of an operation over tensors and Python scalars.

    Dimensioned tensors decide within their category; zero-dim tensors and then Python
    scalars only matter when they belong to a higher category (bool < int < float < complex).
    """
    dim_result = zero_result = scalar_result = None
    for op in operands:
        shape = getattr(op, "shape", None)
        if shape is None or isinstance(op, np.generic):  # numpy scalars count as Python scalars, as in torch
            d = scalar_dtype(op)
            scalar_result = d if scalar_result is None else promote_types(scalar_result, d)
            continue
        d = op.dtype
        if len(shape) > 0:
            dim_result = d if dim_result is None else promote_types(dim_result, d)
        else:
            zero_result = d if zero_result is None else promote_types(zero_result, d)
    return _combine(dim_result, _combine(zero_result, scalar_result))


#: the C++ type names torch's dtype messages print ("expected dtype float", "out of bounds for signed char")
CPP_NAMES = {"bool": "bool", "uint8": "unsigned char", "int8": "signed char", "int16": "short int", "int32": "int",
             "int64": "long int", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float",
             "float64": "double", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def cpp_name(d):
    """The C++ name torch's messages give dtype ``d`` (its own name where torch has none)."""
    return CPP_NAMES.get(d.name, d.name)
