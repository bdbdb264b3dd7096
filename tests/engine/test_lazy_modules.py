"""Lazy modules against PyTorch's: shapes inferred at the first call, the module becoming its regular class, the
same initial weights under the same seed, the same outputs and gradients; uninitialized parameters and
buffers; state dicts of uninitialized modules and loading into lazy ones; PyTorch's errors."""
import copy
import pickle

import numpy as np
import pytest
import torch

import engine
from engine.nn import UninitializedBuffer, UninitializedParameter
from op_check import check_op

rng = np.random.default_rng(0)

CASES = [  # (class, args, kwargs, input shape)
    ("LazyLinear", (4,), {}, (3, 2, 7)),
    ("LazyLinear", (5,), {"bias": False}, (6,)),
    ("LazyConv1d", (4, 3), {"stride": 2, "padding": 1}, (2, 3, 9)),
    ("LazyConv1d", (2, 3), {"bias": False}, (3, 8)),
    ("LazyConv2d", (4, 3), {"groups": 2, "padding_mode": "reflect", "padding": 1}, (2, 6, 7, 5)),
    ("LazyConv3d", (2, (1, 2, 3)), {"dilation": 1}, (1, 3, 4, 5, 6)),
    ("LazyConvTranspose1d", (3, 2), {"stride": 2, "output_padding": 1}, (2, 4, 5)),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2, "dilation": 2}, (2, 6, 4, 5)),
    ("LazyConvTranspose3d", (2, 2), {"bias": False}, (1, 3, 3, 4, 2)),
    ("LazyBatchNorm1d", (), {}, (5, 3, 4)),
    ("LazyBatchNorm2d", (), {"momentum": None}, (3, 4, 2, 5)),
    ("LazyBatchNorm3d", (), {"affine": False}, (2, 3, 2, 3, 2)),
    ("LazyInstanceNorm1d", (), {}, (3, 4, 6)),
    ("LazyInstanceNorm2d", (), {"track_running_stats": False, "bias": False}, (2, 3, 4, 5)),
    ("LazyInstanceNorm3d", (), {"affine": False}, (2, 3, 2, 3, 4)),
]


def pair(name, *args, seed=0, **kwargs):
    """Our and PyTorch's lazy module, each built right after the same manual_seed."""
    engine.manual_seed(seed)
    ours = getattr(engine.nn, name)(*args, **kwargs)
    torch.manual_seed(seed)
    return ours, getattr(torch.nn, name)(*args, **kwargs)


def assert_same_state(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (key, a), b in zip(ours.state_dict().items(), theirs.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7, err_msg=key)


@pytest.mark.parametrize("name, args, kwargs, shape", CASES, ids=[c[0] + str(i) for i, c in enumerate(CASES)])
def test_first_call_infers_shapes_and_initialises_as_torch(name, args, kwargs, shape):
    ours, theirs = pair(name, *args, seed=len(shape), **kwargs)
    assert repr(ours) == repr(theirs)
    assert ours.has_uninitialized_params() == theirs.has_uninitialized_params()
    x = rng.standard_normal(shape).astype(np.float32)
    engine.manual_seed(1)  # the first draws after construction: the weights are drawn at the first call
    torch.manual_seed(1)
    check_op(ours, theirs, [x], rtol=1e-4)
    regular = name[len("Lazy"):]
    assert type(ours) is getattr(engine.nn, regular) and type(theirs) is getattr(torch.nn, regular)
    assert not any(isinstance(t, (UninitializedParameter, UninitializedBuffer))
                   for t in (*ours.parameters(), *ours.buffers()))
    assert repr(ours) == repr(theirs)
    assert_same_state(ours, theirs)
    check_op(ours, theirs, [x], rtol=1e-4, grad=False)  # a second call: the regular module, without the hook
    assert_same_state(ours, theirs)


def test_weight_gradients_and_eval_after_lazy_init():
    ours, theirs = pair("LazyConv2d", 3, 2, seed=5)
    x = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    ours(engine.tensor(x)).square().sum().backward()
    theirs(torch.tensor(x)).square().sum().backward()
    for a, b in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4)
    bn_ours, bn_theirs = pair("LazyBatchNorm1d")
    check_op(bn_ours.eval(), bn_theirs.eval(), [rng.standard_normal((4, 3)).astype(np.float32)])
    assert type(bn_ours) is engine.nn.BatchNorm1d and not bn_ours.training


def test_unbatched_inputs_infer_the_channel_dim():
    ours, theirs = pair("LazyConv1d", 4, 3)
    check_op(ours, theirs, [rng.standard_normal((5, 9)).astype(np.float32)])
    assert ours.in_channels == 5 and ours.weight.shape == (4, 5, 3)
    norm = engine.nn.LazyInstanceNorm1d()  # PyTorch reads dim 1 of an unbatched input (its length) instead
    check_op(norm, torch.nn.InstanceNorm1d(5, affine=True, track_running_stats=True),
             [rng.standard_normal((5, 8)).astype(np.float32)])
    assert norm.num_features == 5


def test_uninitialized_state_dict_and_module_moves():
    ours, theirs = pair("LazyBatchNorm2d")
    state, ref = ours.state_dict(), theirs.state_dict()
    assert list(state) == list(ref)
    assert [type(v).__name__ for v in state.values()] == [type(v).__name__ for v in ref.values()]
    assert repr(state["weight"]) == "<UninitializedParameter>"
    assert repr(state["running_mean"]) == "<UninitializedBuffer>"
    lin = engine.nn.LazyLinear(3).double()
    lin(engine.ones(2, 4, dtype=engine.float64))
    assert lin.weight.dtype is engine.float64 and lin.bias.dtype is engine.float64
    clone = copy.deepcopy(engine.nn.LazyLinear(2))
    assert clone.has_uninitialized_params()
    assert clone(engine.ones(1, 3)).shape == (1, 2) and type(clone) is engine.nn.Linear


def test_load_state_dict_into_lazy_modules():
    engine.manual_seed(2)
    source = engine.nn.Linear(4, 3)
    lazy = engine.nn.LazyLinear(3)
    lazy.load_state_dict(source.state_dict())
    assert not lazy.has_uninitialized_params() and type(lazy) is engine.nn.LazyLinear
    np.testing.assert_array_equal(lazy.weight.detach().numpy(), source.weight.detach().numpy())
    x = engine.randn(2, 4)
    np.testing.assert_array_equal(lazy(x).detach().numpy(), source(x).detach().numpy())
    assert type(lazy) is engine.nn.Linear and lazy.in_features == 4
    conv, bn = engine.nn.LazyConv2d(2, 3), engine.nn.LazyBatchNorm2d()
    conv.load_state_dict(engine.nn.Conv2d(5, 2, 3).state_dict())
    bn.load_state_dict(engine.nn.BatchNorm2d(2).state_dict())
    out = bn(conv(engine.randn(1, 5, 6, 6)))
    assert out.shape == (1, 2, 4, 4) and conv.in_channels == 5 and bn.num_features == 2
    fresh = engine.nn.LazyLinear(3)
    fresh.load_state_dict(engine.nn.LazyLinear(3).state_dict())  # uninitialized into uninitialized
    assert fresh.has_uninitialized_params()
    wrong = engine.nn.LazyLinear(3)
    wrong.load_state_dict(source.state_dict())
    with pytest.raises(AssertionError, match="in_features inferred from input: 5 is not equal to in_features "
                                             "from self.weight: 4"):
        wrong(engine.randn(2, 5))


def test_uninitialized_parameter_and_buffer():
    p, b = UninitializedParameter(), UninitializedBuffer(dtype=engine.float64)
    assert isinstance(p, engine.nn.Parameter) and p.requires_grad and not b.requires_grad
    assert repr(p) == repr(torch.nn.UninitializedParameter()) == "<UninitializedParameter>"
    assert repr(b) == repr(torch.nn.UninitializedBuffer()) == "<UninitializedBuffer>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        p.shape
    with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized"):
        b.share_memory_()
    assert repr(pickle.loads(pickle.dumps(p))) == "<UninitializedParameter>"
    p.materialize((2, 3))
    b.materialize((4,))
    assert type(p) is engine.nn.Parameter and p.shape == (2, 3) and p.requires_grad
    assert type(b) is engine.Tensor and b.shape == (4,) and b.dtype is engine.float64


def test_errors():
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d"):
        engine.nn.LazyConv2d(4, 3)(engine.randn(3, 5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        engine.nn.LazyConv2d(4, 3, groups=2)(engine.randn(1, 3, 5, 5))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        engine.nn.LazyBatchNorm2d()(engine.randn(2, 3, 4))
    with pytest.raises(ValueError, match="Only \"zeros\" padding mode is supported"):
        engine.nn.LazyConvTranspose2d(2, 3, padding_mode="reflect")
    with pytest.raises(TypeError):
        engine.nn.LazyLinear(3).initialize_parameters()



@pytest.mark.parametrize("name, args, shape", [("LazyLinear", (3,), (2, 5)), ("LazyConv2d", (2, 3), (2, 3, 5, 5)),
                                               ("LazyConvTranspose1d", (2, 3), (2, 4, 5)),
                                               ("LazyBatchNorm1d", (), (4, 3))])
def test_on_cuda(cuda, name, args, shape):
    """Built for the GPU (device=) or moved there before the first call: materialized on the GPU, and
    computing there what a CPU copy computes."""
    x = engine.tensor(rng.standard_normal(shape).astype(np.float32))
    for lazy in (getattr(engine.nn, name)(*args, device="cuda"), getattr(engine.nn, name)(*args).cuda()):
        assert lazy(x.cuda()).device.type == "cuda"
        assert type(lazy) is getattr(engine.nn, name[len("Lazy"):])
        assert all(t.device.type == "cuda" for t in (*lazy.parameters(), *lazy.buffers()))
        on_cpu = copy.deepcopy(lazy).cpu().eval()
        np.testing.assert_allclose(lazy.eval()(x.cuda()).detach().cpu().numpy(), on_cpu(x).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
