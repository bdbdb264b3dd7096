"""``hash_tensor`` against torch (every dtype it takes, dims, keepdim, empty and 0-dim inputs, non-contiguous ones,
its errors), on the CUDA emulation too; the ``sym_*`` number helpers; and the ``nn.intrinsic``/``nn.qat`` names."""
import numpy as np
import pytest
import torch
from op_check import assert_same_error

import engine
import engine.nn.intrinsic
import engine.nn.qat

RNG = np.random.default_rng(5)

DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int16", "int32", "int64", "bool"]


def _pair(values, dtype):
    theirs = torch.tensor(values).to(getattr(torch, dtype))
    return engine.tensor(theirs.float().numpy() if dtype == "bfloat16" else theirs.numpy()).to(
        getattr(engine, dtype)), theirs


def _same(ours, theirs):
    assert str(ours.dtype) == "engine.uint64" and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (-1, True), ((0, 2), False)])
def test_hash_of_random_values(dtype, dim, keepdim):
    values = RNG.standard_normal((3, 5, 7)) * 50
    ours, theirs = _pair(values, dtype)
    kwargs = {} if dim is None else {"dim": dim}
    _same(engine.hash_tensor(ours, keepdim=keepdim, **kwargs), torch.hash_tensor(theirs, keepdim=keepdim, **kwargs))


@pytest.mark.parametrize("make", [
    lambda m: m.tensor(5),
    lambda m: m.tensor([-1], dtype=m.int8),
    lambda m: m.tensor([-0.0, float("nan"), float("inf")]),
    lambda m: m.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1)[:, ::2],
    lambda m: m.zeros(0, 2),
])
def test_hash_of_edge_inputs(make):
    kwargs = {"dim": 1} if tuple(make(torch).shape) == (0, 2) else {}
    _same(engine.hash_tensor(make(engine), **kwargs), torch.hash_tensor(make(torch), **kwargs))
    _same(make(engine).hash_tensor(**kwargs), make(torch).hash_tensor(**kwargs))


@pytest.mark.parametrize("call", [
    lambda m: m.hash_tensor(m.zeros(2, 0)),
    lambda m: m.hash_tensor(m.zeros(2, 0), 1),
    lambda m: m.hash_tensor(m.zeros(2), mode=1),
    lambda m: m.hash_tensor(m.zeros(2, dtype=m.complex64)),
    lambda m: m.hash_tensor(m.zeros(2, dtype=m.uint16)),
    lambda m: m.hash_tensor(m.zeros(2, 3), (0, 0)),
    lambda m: m.hash_tensor(m.zeros(2, 3), -3),
])
def test_hash_errors(call):
    assert_same_error(lambda: call(engine), lambda: call(torch))


def test_hash_on_cuda(cuda):
    values = RNG.standard_normal((4, 9))
    _same(engine.hash_tensor(engine.tensor(values, device="cuda"), 1).cpu(),
          torch.hash_tensor(torch.tensor(values), 1))


@pytest.mark.parametrize("name,args", [
    ("sym_max", (1, 2.0)), ("sym_max", (3, 2)), ("sym_max", (True, 2)), ("sym_min", (1, 2.0)), ("sym_min", (3, 2)),
    ("sym_int", (2.7,)), ("sym_int", (-2.7,)), ("sym_float", (3,)), ("sym_not", (True,)), ("sym_ite", (False, 1, 2)),
    ("sym_sqrt", (2,)), ("sym_sum", ([1, 2.5],)), ("sym_sum", (1, 2)), ("sym_sum", ((),)), ("sym_fresh_size", (4,)),
    ("sym_constrain_range", (3,)), ("sym_constrain_range_for_size", (3,)),
])
def test_sym_number_helpers(name, args):
    kwargs = {"min": 0, "max": 5} if "constrain" in name else {}
    ours, theirs = getattr(engine, name)(*args, **kwargs), getattr(torch, name)(*args, **kwargs)
    assert ours == theirs and type(ours) is type(theirs)


@pytest.mark.parametrize("args", [(1, 1, 2), (True, 1, 2.0)])
def test_sym_ite_checks(args):
    assert_same_error(lambda: engine.sym_ite(*args), lambda: torch.sym_ite(*args))


def test_nn_intrinsic_and_qat_are_the_ao_modules():
    assert engine.nn.intrinsic.ConvBnReLU2d is engine.ao.nn.intrinsic.ConvBnReLU2d
    assert engine.nn.qat.Linear is engine.ao.nn.qat.Linear
