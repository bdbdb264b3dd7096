"""torch's refusals of complex input: the messages of engine.ops.complex_refusals against torch's own, family by
family (the kernel's "not implemented" line, complex64 and complex128, mixed real and complex operands; the ops'
own lines), and the ops that refuse through elementwise.py already."""
import numpy as np
import pytest
import torch

import engine
from engine.ops.complex_refusals import REFUSALS, _kernel, refuse_complex

F, S = torch.nn.functional, torch.special

#: how torch refuses each entry: a call of torch on a complex tensor ``z`` (and a real one ``x``)
TORCH_CALLS = {
    "deg2rad": lambda z, x: torch.deg2rad(z), "rad2deg": lambda z, x: torch.rad2deg(z),
    "fmax": lambda z, x: torch.fmax(z, z), "fmin": lambda z, x: torch.fmin(z, z),
    "heaviside": lambda z, x: torch.heaviside(z, z), "isposinf": lambda z, x: torch.isposinf(z),
    "isneginf": lambda z, x: torch.isneginf(z), "signbit": lambda z, x: torch.signbit(z),
    "relu": lambda z, x: torch.relu(z), "hardtanh": lambda z, x: F.hardtanh(z), "relu6": lambda z, x: F.relu6(z),
    "sort": lambda z, x: torch.sort(z), "topk": lambda z, x: torch.topk(z, 1),
    "argmin": lambda z, x: torch.argmin(z),
    "logit": lambda z, x: torch.logit(z), "erfc": lambda z, x: torch.erfc(z), "erfinv": lambda z, x: torch.erfinv(z),
    "lgamma": lambda z, x: torch.lgamma(z), "digamma": lambda z, x: torch.digamma(z),
    "trigamma": lambda z, x: torch.polygamma(1, z), "polygamma": lambda z, x: torch.polygamma(2, z),
    "i0": lambda z, x: torch.i0(z), "mvlgamma": lambda z, x: torch.mvlgamma(z, 1), "erfcx": lambda z, x: S.erfcx(z),
    "ndtri": lambda z, x: S.ndtri(z), "log_ndtr": lambda z, x: S.log_ndtr(z), "i0e": lambda z, x: S.i0e(z),
    "i1": lambda z, x: S.i1(z), "i1e": lambda z, x: S.i1e(z), "entr": lambda z, x: S.entr(z),
    "xlogy": lambda z, x: torch.xlogy(x, z), "xlog1py": lambda z, x: S.xlog1py(z, x),
    "zeta": lambda z, x: S.zeta(z, z), "hypot": lambda z, x: torch.hypot(z, z),
    "copysign": lambda z, x: torch.copysign(x, z), "nextafter": lambda z, x: torch.nextafter(z, z),
    "gcd": lambda z, x: torch.gcd(z, z), "lcm": lambda z, x: torch.lcm(z, z), "cummax": lambda z, x: torch.cummax(z, 0),
    "cummin": lambda z, x: torch.cummin(z, 0), "kthvalue": lambda z, x: torch.kthvalue(z, 1),
    "mode": lambda z, x: torch.mode(z), "bucketize": lambda z, x: torch.bucketize(z, z.flatten()),
    "searchsorted": lambda z, x: torch.searchsorted(z.flatten(), z), "unique": lambda z, x: torch.unique(z),
    "bincount": lambda z, x: torch.bincount(z.flatten()), "histc": lambda z, x: torch.histc(z),
    "softplus": lambda z, x: F.softplus(z), "elu": lambda z, x: F.elu(z), "leaky_relu": lambda z, x: F.leaky_relu(z),
    "gelu": lambda z, x: F.gelu(z), "hardsigmoid": lambda z, x: F.hardsigmoid(z),
}
#: the operands ``refuse_complex`` gets for an entry (as the op would pass them), from ``z`` and ``x``
MIXED = {"xlogy": lambda z, x: (x, z), "copysign": lambda z, x: (x, z), "xlog1py": lambda z, x: (z, x)}


def _torch_error(name, dtype):
    z, x = torch.ones(2, 3, dtype=dtype), torch.ones(2, 3)
    with pytest.raises(Exception) as raised:
        TORCH_CALLS[name](z, x)
    return type(raised.value), str(raised.value)


def _our_error(name, dtype):
    z, x = engine.ones(2, 3, dtype=dtype), engine.ones(2, 3)
    with pytest.raises(Exception) as raised:
        refuse_complex(name, *MIXED.get(name, lambda z, x: (z,))(z, x))
    return type(raised.value), str(raised.value)


def test_every_entry_has_a_torch_call():
    assert set(TORCH_CALLS) == set(REFUSALS)


@pytest.mark.parametrize("name", sorted(n for n, e in REFUSALS.items() if isinstance(e, str)))
def test_kernel_not_implemented_family(name):
    for dtype in ("complex64", "complex128"):
        assert _our_error(name, getattr(engine, dtype)) == _torch_error(name, getattr(torch, dtype))


@pytest.mark.parametrize("name", sorted(n for n, e in REFUSALS.items() if isinstance(e, tuple)))
def test_own_line_family(name):
    assert _our_error(name, engine.complex64) == _torch_error(name, torch.complex64)


def test_real_operands_and_unlisted_ops_pass_and_cuda_kernel_names():
    refuse_complex("logit", engine.ones(3), 2.0)
    refuse_complex("exp", engine.ones(3, dtype=engine.complex64))
    assert _kernel("erfc_vml_cpu", "cuda") == "erfc_cuda"
    assert _kernel("logit_cpu", "cuda") == "logit_cuda"
    assert _kernel("digamma", "cuda") == "digamma"


#: ops that refuse through elementwise.py already: the engine call is checked against torch's
REFUSED_NOW = {
    "floor": lambda m, z: m.floor(z), "ceil": lambda m, z: m.ceil(z), "trunc": lambda m, z: m.trunc(z),
    "round": lambda m, z: m.round(z), "frac": lambda m, z: m.frac(z), "sign": lambda m, z: m.sign(z),
    "erf": lambda m, z: m.erf(z), "clamp": lambda m, z: m.clamp(z, 0, 1), "maximum": lambda m, z: m.maximum(z, z),
    "minimum": lambda m, z: m.minimum(z, z), "fmod": lambda m, z: m.fmod(z, z),
    "remainder": lambda m, z: m.remainder(z, z), "atan2": lambda m, z: m.atan2(z, z),
    "argmax": lambda m, z: m.argmax(z), "gt": lambda m, z: m.gt(z, z),
}


@pytest.mark.parametrize("name", sorted(REFUSED_NOW))
def test_refused_through_elementwise(name):
    z = np.ones((2, 3), np.complex128)
    with pytest.raises(Exception) as theirs:
        REFUSED_NOW[name](torch, torch.from_numpy(z))
    with pytest.raises(Exception) as ours:
        REFUSED_NOW[name](engine, engine.tensor(z))
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))
