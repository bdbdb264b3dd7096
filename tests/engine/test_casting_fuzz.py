"""Dtype conversions, type queries, storages and tensor construction against torch, from a differential fuzz of
them: each case runs on both libraries and must give the same values, dtype and shape, or the same error type
and message.

The cases are the ones the fuzz found wrong: Python's ``float`` and ``complex`` as dtypes (float64 and
complex128 whatever the default dtype); promotions of uint16/32/64 with complex types, and of a dimensioned
integer tensor with a complex zero-dim one; ``finfo``/``iinfo`` equality and refusals; ``set_default_dtype``'s
refusals; ``Tensor.type`` by the names of types torch has no class for (``'torch.ComplexFloatTensor'``,
``'torch.Tensor'``); uint16/uint32/uint64 data past their range; bytearray and memoryview data; ``asarray``'s
default ``requires_grad``; legacy constructors of storages; ``new_zeros`` without a size; ``set_``'s geometry
errors; storage conversions, ``from_buffer`` in both byte orders, the byte-list ``UntypedStorage`` and the type
names of storages torch has no legacy class for. The
exploratory sweeps themselves (thousands of configurations, every dtype pair of every cast) are not kept.
"""
import warnings

import numpy as np
import pytest
import torch

import engine

pytestmark = pytest.mark.slow  # about 250 cases, each run on both libraries


def _plain(result):
    """A result as comparable Python data: tensors and storages as (values, dtype name, shape), dtypes by name."""
    if isinstance(result, (engine.Tensor, torch.Tensor)):
        values = result.detach()
        if "bfloat16" in str(result.dtype) or "uint" in str(result.dtype) and "uint8" not in str(result.dtype):
            values = values.to(torch.float64 if isinstance(values, torch.Tensor) else engine.float64)
        return values.numpy().tolist(), str(result.dtype).split(".")[-1], tuple(result.shape)
    if isinstance(result, (engine.dtype, torch.dtype)):
        return str(result).split(".")[-1]
    if isinstance(result, (engine.UntypedStorage, engine.TypedStorage, torch.UntypedStorage, torch.TypedStorage)):
        return result.tolist(), _plain(getattr(result, "dtype", None))
    if isinstance(result, (tuple, list)):
        return type(result)(_plain(r) for r in result)
    return result


def _outcome(fn, lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", _plain(fn(lib))
        except Exception as error:  # the error itself is what is compared
            return type(error).__name__, str(error).split("\n")[0].replace("torch", "engine")


def same(fn):
    """``fn(engine)`` and ``fn(torch)`` give equal results (NaN equal to NaN) or the same error."""
    ours, theirs = _outcome(fn, engine), _outcome(fn, torch)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        np.testing.assert_equal(ours[1], theirs[1])
    else:
        assert ours[1] == theirs[1]


def _with_default(lib, name, fn):
    previous = lib.get_default_dtype()
    lib.set_default_dtype(getattr(lib, name))
    try:
        return fn(lib)
    finally:
        lib.set_default_dtype(previous)


# ---- Python's types as dtypes: C's widest, whatever the default dtype --------------------------------------
PYTHON_TYPES = [
    lambda lib: lib.ones(2).to(float), lambda lib: lib.ones(2).to(complex), lambda lib: lib.ones(2).to(int),
    lambda lib: lib.zeros(2, dtype=float), lambda lib: lib.zeros(2, dtype=complex),
    lambda lib: lib.tensor([1, 2], dtype=float), lambda lib: lib.ones(2, dtype=lib.int32).type_as(lib.ones(1)),
    lambda lib: lib.finfo(float).bits, lambda lib: lib.iinfo(int).bits, lambda lib: lib.promote_types(float, lib.int32),
    lambda lib: lib.promote_types(lib.float16, complex), lambda lib: lib.can_cast(float, int),
]


@pytest.mark.parametrize("default", ["float32", "float16"])
@pytest.mark.parametrize("case", range(len(PYTHON_TYPES)))
def test_python_types_are_the_widest_dtypes(case, default):
    same(lambda lib: _with_default(lib, default, PYTHON_TYPES[case]))


def test_to_python_float_is_a_new_tensor():
    x = engine.ones(2)
    assert x.to(float) is not x and x.to(float).dtype is engine.float64


# ---- promotion ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("wide", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("other", ["complex64", "complex128", "bool", "float16", "int8"])
def test_promotion_of_the_wide_unsigned_types(wide, other):
    same(lambda lib: lib.promote_types(getattr(lib, wide), getattr(lib, other)))
    same(lambda lib: lib.promote_types(getattr(lib, other), getattr(lib, wide)))
    for dims in [((2,), ()), ((), (2,)), ((), ())]:
        same(lambda lib: lib.result_type(lib.zeros(dims[0], dtype=getattr(lib, wide)),
                                         lib.zeros(dims[1], dtype=getattr(lib, other))))
    same(lambda lib: lib.result_type(lib.zeros(2, dtype=getattr(lib, wide)), 1j))


# ---- finfo, iinfo, default dtype, dtype methods ------------------------------------------------------------
TYPE_QUERIES = [
    lambda lib: lib.finfo(lib.float32) == lib.finfo(lib.float32),
    lambda lib: lib.finfo(lib.float32) == lib.finfo(lib.float16),
    lambda lib: lib.finfo(lib.float32) != lib.finfo(lib.float32),
    lambda lib: lib.iinfo(lib.int32) == lib.iinfo(lib.int32),
    lambda lib: lib.iinfo(lib.int32) == lib.iinfo(lib.int64),
    lambda lib: (lib.finfo(lib.float32).__hash__, lib.iinfo(lib.int8).__hash__),
    lambda lib: lib.finfo(None),
    lambda lib: lib.finfo().bits,
    lambda lib: lib.iinfo(lib.complex64),
    lambda lib: lib.iinfo(lib.complex128),
    lambda lib: lib.bool.to_complex(),
    lambda lib: lib.int32.to_complex(),
    lambda lib: lib.set_default_dtype(lib.int32),
    lambda lib: lib.set_default_dtype(lib.complex64),
    lambda lib: lib.set_default_dtype("float32"),
]


@pytest.mark.parametrize("case", range(len(TYPE_QUERIES)))
def test_type_queries(case):
    same(TYPE_QUERIES[case])


def test_set_default_dtype_takes_only_a_dtype():
    same(lambda lib: _with_default(lib, "float32", lambda lib: lib.set_default_dtype(float)))


# ---- Tensor.type by name ------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", [
    "torch.ComplexFloatTensor", "torch.ComplexDoubleTensor", "torch.UInt16Tensor", "torch.UInt32Tensor",
    "torch.UInt64Tensor", "torch.Tensor", "FloatTensor", "cuda.FloatTensor", "torch.float32", "torch.Foo", 1, None,
    "Tensor-class", "float"])
@pytest.mark.parametrize("source", ["int32", "float64"])
def test_type_by_name(target, source):
    def convert(lib):
        t = lib.Tensor if target == "Tensor-class" else target
        t = t.replace("torch.", f"{lib.__name__}.") if isinstance(t, str) else t
        result = lib.arange(3, dtype=getattr(lib, source)).type(t)
        return result.replace(lib.__name__, "torch") if isinstance(result, str) else result
    same(convert)
    same(lambda lib: _with_default(lib, "float64", convert))


@pytest.mark.parametrize("name", ["complex64", "complex128", "uint16", "uint32", "uint64"])
def test_type_string_round_trips(name):
    same(lambda lib: lib.zeros(2).type(lib.zeros(2, dtype=getattr(lib, name)).type().replace("engine", lib.__name__)))


# ---- Python data into the integer types ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("value", [-1, -65536, 65536, 2 ** 32 + 5, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, -2 ** 63,
                                   -1.5, 70000.0, 1e20, float("nan"), True, 5])
def test_wide_unsigned_data_range(dtype, value):
    same(lambda lib: lib.tensor(value, dtype=getattr(lib, dtype)))
    same(lambda lib: lib.tensor([value, 1], dtype=getattr(lib, dtype)))


@pytest.mark.parametrize("value", [np.int64(9), np.uint64(3), np.float64(2.0), np.bool_(True)])
def test_uint64_data_takes_only_python_ints(value):
    same(lambda lib: lib.tensor([value], dtype=lib.uint64))


@pytest.mark.parametrize("make", [
    lambda: bytearray(b"ab"), lambda: memoryview(b"ab"), lambda: memoryview(np.array([1.5, 2.5])),
    lambda: memoryview(np.arange(4, dtype=np.int32).reshape(2, 2)), lambda: b"ab"])
@pytest.mark.parametrize("factory", ["tensor", "as_tensor"])
def test_bytes_like_data_is_a_sequence(make, factory):
    same(lambda lib: getattr(lib, factory)(make()))


# ---- asarray's requires_grad ------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{"dtype": "int64"}, {"dtype": "int64", "requires_grad": True},
                                    {"dtype": "int64", "requires_grad": False}, {"dtype": "float64"}, {},
                                    {"copy": True}])
@pytest.mark.parametrize("computed", [False, True])
def test_asarray_requires_grad_defaults_to_the_source(kwargs, computed):
    def convert(lib):
        x = lib.ones(3, requires_grad=True)
        x = x * 1 if computed else x
        k = {key: getattr(lib, v) if key == "dtype" else v for key, v in kwargs.items()}
        r = lib.asarray(x, **k)
        return r, r.requires_grad, r is x
    same(convert)


def test_asarray_warns_where_it_hands_back_a_leaf_that_requires_grad():
    x = engine.ones(3, requires_grad=True)
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults to obj.requires_grad"):
        assert engine.asarray(x) is x


# ---- legacy constructors and new_* ---------------------------------------------------------------------------
LEGACY = [
    lambda lib: lib.FloatTensor(lib.arange(3, dtype=lib.float32).untyped_storage()),
    lambda lib: lib.FloatTensor(lib.arange(3, dtype=lib.float32).storage()),
    lambda lib: lib.IntTensor(lib.arange(3, dtype=lib.float32).untyped_storage()),
    lambda lib: lib.IntTensor(lib.arange(3, dtype=lib.float32).storage()),
    lambda lib: lib.DoubleTensor("ab"),
    lambda lib: lib.ones(2).new_zeros(),
    lambda lib: lib.ones(2).new_ones(dtype=lib.int32, requires_grad=True),
    lambda lib: lib.ones(2).new_empty(),
    lambda lib: lib.ones(2).new_zeros(2, -3),
    lambda lib: lib.ones(2).new_ones(-1),
    lambda lib: lib.ones(2).new_empty((-2,)),
    lambda lib: lib.ones(2).new_zeros(size=(2, 3)),
]


@pytest.mark.parametrize("case", range(len(LEGACY)))
def test_legacy_constructors(case):
    same(LEGACY[case])


def test_legacy_constructor_of_a_storage_shares_its_memory():
    x = engine.arange(3, dtype=engine.float32)
    y = engine.FloatTensor(x.untyped_storage())
    y[0] = 7.0
    assert x[0].item() == 7.0


# ---- set_ ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("geometry", [(-1, (2,), (1,)), (0, (-2,), (1,)), (0, (2,), (-1,)), (0, (2, 2), (1,)),
                                      (1, (2,), (1,))])
def test_set_geometry_errors(geometry):
    same(lambda lib: lib.zeros(0).set_(lib.arange(4.0).untyped_storage(), *geometry))


def test_set_to_a_tensor_of_another_dtype():
    same(lambda lib: lib.zeros(0).set_(lib.zeros(2, dtype=lib.int32)))


# ---- storages ------------------------------------------------------------------------------------------------
BUFFER = bytes(range(1, 9)) + bytes([0x80, 0x3F, 0, 0, 0, 0, 0x80, 0x3F])


@pytest.mark.parametrize("dtype", ["uint8", "int16", "complex64", "bool"])
@pytest.mark.parametrize("order, count, offset", [
    ("native", -1, 0), ("little", 2, 0), ("big", 1, 4), ("big", -1, 1), ("little", 20, 0), ("big", -1, 16),
    ("little", -1, -1), ("middle", -1, 0), ("middle", 20, 0), (None, -1, 0)])
def test_from_buffer(dtype, order, count, offset):
    same(lambda lib: lib.UntypedStorage.from_buffer(BUFFER, order, count, offset, dtype=getattr(lib, dtype)))
    same(lambda lib: lib.TypedStorage.from_buffer(BUFFER, order, count, offset, dtype=getattr(lib, dtype)))


@pytest.mark.parametrize("call", [
    lambda lib: lib.UntypedStorage.from_buffer(BUFFER),
    lambda lib: lib.UntypedStorage.from_buffer(BUFFER, dtype=lib.uint8),
    lambda lib: lib.UntypedStorage.from_buffer(BUFFER, dtype=lib.int16),
    lambda lib: lib.ByteStorage.from_buffer(BUFFER),
    lambda lib: lib.FloatStorage.from_buffer(BUFFER, "big"),
    lambda lib: lib.ShortStorage.from_buffer(BUFFER, "big", count=2, offset=2),
    lambda lib: lib.UntypedStorage.from_buffer(np.arange(3, dtype=np.int16), "little", dtype=lib.int16)])
def test_from_buffer_forms(call):
    same(call)


@pytest.mark.parametrize("method", ["double", "float", "half", "bfloat16", "long", "int", "short", "char", "byte",
                                    "bool", "complex_float", "complex_double"])
@pytest.mark.parametrize("source", ["float32", "int16"])
def test_storage_conversions(method, source):
    same(lambda lib: getattr(lib.arange(-2, 3).to(getattr(lib, source)).storage(), method)())
    same(lambda lib: getattr(lib.arange(-2, 3).to(getattr(lib, source)).untyped_storage(), method)())


@pytest.mark.parametrize("arg", [b"abc", bytearray(b"abc"), [1, 256, -1], (1, 2), [], 1.5, None])
def test_untyped_storage_constructor(arg):
    same(lambda lib: lib.UntypedStorage(arg))


@pytest.mark.parametrize("dtype", ["uint16", "uint64", "float32", "uint8"])
def test_typed_storage_type_names(dtype):
    same(lambda lib: lib.zeros(2, dtype=getattr(lib, dtype)).storage().type().replace(lib.__name__, "torch"))


@pytest.mark.parametrize("make", [
    lambda lib: lib.TypedStorage([300], dtype=lib.uint8), lambda lib: lib.TypedStorage([1.7, -1.2], dtype=lib.int32),
    lambda lib: lib.HalfStorage([1.5, 70000.0]), lambda lib: lib.BoolStorage([2, 0]),
    lambda lib: lib.arange(3, dtype=lib.int16).untyped_storage()[::2]])
def test_typed_storage_values(make):
    same(make)


def test_storages_are_never_shared_nor_pinned():
    same(lambda lib: [(s.is_shared(), s.is_pinned(), s.is_sparse) for s in
                      (lib.zeros(2).storage(), lib.zeros(2).untyped_storage())])


def test_storage_conversion_on_cuda(cuda):
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = engine.arange(-2, 3, device="cuda").to(engine.int16).storage().double()
    assert s.device.type == "cuda" and s.dtype is engine.float64 and s.cpu().tolist() == [-2.0, -1.0, 0.0, 1.0, 2.0]


def test_a_dtype_view_never_requires_grad():
    for lib in (engine, torch):
        x = lib.ones(4, requires_grad=True)
        assert not x.view(lib.int32).requires_grad and not x.view(lib.float32).requires_grad
