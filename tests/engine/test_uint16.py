"""engine.uint16, uint32 and uint64 against torch 2.14's: the dtypes themselves, creation, numpy in and out,
conversions both ways, printing, promotion (only to floats; torch refuses the rest with one line) and the
ops torch has kernels for. 16-bit images (Pillow's I;16) arrive as uint16, so these must hold them."""
import re

import numpy as np
import pytest
import torch

import engine
from op_check import check_op

RNG = np.random.default_rng(16)
WIDE = ["uint16", "uint32", "uint64"]
OTHERS = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def both_dtypes(name):
    return getattr(engine, name), getattr(torch, name)


def values(name, shape=(3, 5)):
    """Seeded values spanning the dtype (uint64's top half included)."""
    top = {"uint16": 2 ** 16, "uint32": 2 ** 32, "uint64": 2 ** 64}[name]
    return RNG.integers(0, top, shape, dtype=np.dtype(name), endpoint=False)


@pytest.mark.parametrize("name", WIDE)
def test_the_dtype_and_its_limits(name):
    ours, theirs = both_dtypes(name)
    assert repr(ours) == repr(theirs).replace("torch", "engine")
    assert (ours.is_signed, ours.is_floating_point, ours.itemsize) == \
        (theirs.is_signed, theirs.is_floating_point, theirs.itemsize)
    assert ours.to_real() is ours
    ours_info, theirs_info = engine.iinfo(ours), torch.iinfo(theirs)
    assert (ours_info.min, ours_info.max, ours_info.bits) == (theirs_info.min, theirs_info.max, theirs_info.bits)
    assert engine.zeros(1, dtype=ours).element_size() == torch.zeros(1, dtype=theirs).element_size()


@pytest.mark.parametrize("name", WIDE)
def test_creation_and_numpy_round_trips(name):
    ours, theirs = both_dtypes(name)
    for make in ("zeros", "ones", "empty"):
        made = getattr(engine, make)(2, 3, dtype=ours)
        assert made.dtype is ours and tuple(made.shape) == (2, 3)
    np.testing.assert_array_equal(engine.full((2, 2), 7, dtype=ours).numpy(),
                                  torch.full((2, 2), 7, dtype=theirs).numpy())
    data = values(name)
    shared = engine.from_numpy(data)
    assert shared.dtype is ours and np.shares_memory(shared.numpy(), data)
    np.testing.assert_array_equal(engine.tensor(data.tolist(), dtype=ours).numpy(),
                                  torch.tensor(data.tolist(), dtype=theirs).numpy())
    np.testing.assert_array_equal(engine.as_tensor(data).numpy(), torch.as_tensor(data).numpy())
    assert engine.tensor(data).tolist() == torch.tensor(data).tolist()
    assert engine.tensor(data)[1, 2].item() == torch.tensor(data)[1, 2].item()


@pytest.mark.parametrize("name", WIDE)
@pytest.mark.parametrize("other", OTHERS)
def test_conversions_both_ways(name, other):
    """Every value of ``name`` into ``other`` (wrapping and rounding as torch does) and values of ``other``
    that ``name`` holds back into it."""
    data = values(name)
    ours, theirs = engine.from_numpy(data), torch.from_numpy(data)
    np.testing.assert_array_equal(ours.to(getattr(engine, other)).numpy(), theirs.to(getattr(torch, other)).numpy())
    small = RNG.integers(0, 100, (4, 3)).astype(other)
    target_ours, target_theirs = both_dtypes(name)
    np.testing.assert_array_equal(engine.from_numpy(small).to(target_ours).numpy(),
                                  torch.from_numpy(small).to(target_theirs).numpy())


def test_conversion_shorthands_of_uint16():
    data = values("uint16")
    ours, theirs = engine.from_numpy(data), torch.from_numpy(data)
    for method in ("float", "double", "half", "long", "int", "short", "byte", "bool"):
        converted, expected = getattr(ours, method)(), getattr(theirs, method)()
        assert str(converted.dtype).split(".")[1] == str(expected.dtype).split(".")[1]
        np.testing.assert_array_equal(converted.numpy(), expected.numpy())
    assert ours.type() == theirs.type().replace("torch", "engine")


def same_repr(ours, theirs):
    """Our repr is torch's with engine for torch, but for where the dtype goes: "engine." is one character
    longer, so it may take the next line where torch's still fits, by torch's own rule."""
    def joined(text):
        return re.sub(r",\n *dtype=", ", dtype=", text)
    assert joined(repr(ours)) == joined(repr(theirs).replace("torch.", "engine."))


@pytest.mark.parametrize("name", WIDE)
@pytest.mark.parametrize("shape", [(3, 5), (0, 2), (), (2, 1, 3)])
def test_printing(name, shape):
    data = values(name, shape)
    same_repr(engine.from_numpy(data), torch.from_numpy(data))


def test_uint64_values_past_int64_from_python_data():
    big = [2 ** 64 - 1, 2 ** 63 + 5, 3]
    ours, theirs = engine.tensor(big, dtype=engine.uint64), torch.tensor(big, dtype=torch.uint64)
    assert ours.tolist() == theirs.tolist() == big
    same_repr(ours, theirs)


INTEGERS = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("name,other", [(name, other) for name in WIDE for other in INTEGERS if other != name])
def test_promotion_with_other_integers_is_refused_as_in_torch(name, other):
    for first, second in ((name, other), (other, name)):
        with pytest.raises(RuntimeError) as theirs:
            torch.promote_types(getattr(torch, first), getattr(torch, second))
        with pytest.raises(RuntimeError) as ours:
            engine.promote_types(getattr(engine, first), getattr(engine, second))
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("name", WIDE)
@pytest.mark.parametrize("other", ["float16", "float32", "float64", "itself"])
def test_promotion_to_floats_and_itself(name, other):
    other = name if other == "itself" else other
    assert str(engine.promote_types(getattr(engine, name), getattr(engine, other))) == \
        str(torch.promote_types(getattr(torch, name), getattr(torch, other))).replace("torch", "engine")


def test_mixed_integer_tensors_are_refused_but_scalars_and_floats_mix():
    data = values("uint16")
    ours, theirs = engine.from_numpy(data), torch.from_numpy(data)
    with pytest.raises(RuntimeError) as refused:
        theirs * theirs.to(torch.int16)
    with pytest.raises(RuntimeError, match="^" + str(refused.value) + "$"):
        ours * ours.to(engine.int16)
    floats = RNG.random((3, 5)).astype(np.float32)
    check_op(lambda a, f: a * f, lambda a, f: a * f, [data, floats])
    check_op(lambda a: a * 2, lambda a: a * 2, [data])
    check_op(lambda a: a * 2.5, lambda a: a * 2.5, [data])
    check_op(lambda a: a * True, lambda a: a * True, [data])
    check_op(lambda a: a * engine.tensor(3), lambda a: a * torch.tensor(3), [data])


# The ops torch 2.14 has uint16 kernels for (most others raise NotImplementedError there).
TORCH_KERNELS = {
    "mul": lambda t: t * t,
    "true_divide": lambda t: t / 255,
    "true_divide_tensor": lambda t: t / t.flip(1),
    "eq": lambda t: t == t.flip(0),
    "eq_scalar": lambda t: t == 7,
    "sum": lambda t: t.sum(),
    "sum_dim": lambda t: t.sum(1),
    "sum_float": lambda t: t.sum(dtype=t.float().dtype),
    "prod": lambda t: t[:, :2].prod(1),
    "cumsum": lambda t: t.cumsum(0),
    "clone": lambda t: t.clone(),
    "t_contiguous": lambda t: t.t().contiguous(),
    "permute": lambda t: t.permute(1, 0),
    "reshape": lambda t: t.reshape(5, 3),
    "expand": lambda t: t[:1].expand(4, 5),
    "flip": lambda t: t.flip(1),
    "repeat": lambda t: t.repeat(2, 1),
    "index": lambda t: t[:, [0, 2]],
    "bool_mask": lambda t: t[t.bool()],
    "bitwise_and": lambda t: t & t.flip(0),
    "sqrt": lambda t: t.sqrt(),
    "exp": lambda t: t.exp(),
    "round": lambda t: t.round(),
    "any": lambda t: t.any(),
    "all": lambda t: t.all(),
    "sort": lambda t: t.sort(1),
    "unique": lambda t: t.unique(),
}


@pytest.mark.parametrize("op", list(TORCH_KERNELS))
def test_ops_torch_has_kernels_for(op):
    check_op(TORCH_KERNELS[op], TORCH_KERNELS[op], [values("uint16")])


def test_joining_filling_and_writing():
    a, b = values("uint16"), values("uint16")
    check_op(lambda x, y: engine.cat([x, y]), lambda x, y: torch.cat([x, y]), [a, b])
    check_op(lambda x, y: engine.stack([x, y], 1), lambda x, y: torch.stack([x, y], 1), [a, b])
    ours, theirs = engine.from_numpy(a.copy()), torch.from_numpy(a.copy())
    for t, lib in ((ours, engine), (theirs, torch)):
        t[0, 1] = 5
        t[1] = lib.from_numpy(b[1].copy())
        t[2].fill_(9)
        t[:, 4].copy_(lib.from_numpy(b[:, 0].copy()))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_big_endian_arrays_are_refused_as_in_torch():
    """Pillow's I;16B images are big-endian: torch refuses them with one line, and so do we."""
    data = values("uint16").astype(">u2")
    for ours_call, theirs_call in ((engine.from_numpy, torch.from_numpy), (engine.as_tensor, torch.as_tensor),
                                   (engine.tensor, torch.tensor)):
        with pytest.raises(ValueError) as theirs:
            theirs_call(data)
        with pytest.raises(ValueError) as ours:
            ours_call(data)
        assert str(ours.value) == str(theirs.value)


def test_uint16_moves_to_the_gpu_and_back(cuda):
    data = values("uint16")
    on_gpu = engine.from_numpy(data).to("cuda")
    assert on_gpu.dtype is engine.uint16 and on_gpu.device.type == "cuda"
    np.testing.assert_array_equal(on_gpu.float().cpu().numpy(), data.astype(np.float32))
    np.testing.assert_array_equal(on_gpu.cpu().numpy(), data)
