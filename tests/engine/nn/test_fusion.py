"""``engine.nn.utils`` fusion of eval-mode batch norms into convolutions and linear layers, against torch's: the
fused layer's parameters, dtypes and requires_grad, its output against conv-then-bn, and the eval-only checks."""
import numpy as np
import pytest
import torch

import engine
from engine.nn import utils as U

RTOL = 1e-10


def _same(ours, theirs, rtol=RTOL):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=rtol)


def _pair(maker):
    theirs = maker(torch).double()
    ours = maker(engine).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _trained_bn(lib, features, affine=True, dims=2):
    """A batch norm with non-trivial running statistics and affine parameters, in eval mode."""
    cls = {1: lib.nn.BatchNorm1d, 2: lib.nn.BatchNorm2d}[dims]
    bn = cls(features, affine=affine).double()
    rng = np.random.default_rng(features)
    bn.running_mean.copy_(lib.tensor(rng.standard_normal(features)))
    bn.running_var.copy_(lib.tensor(rng.uniform(0.5, 2.0, features)))
    if affine:
        with lib.no_grad():
            bn.weight.copy_(lib.tensor(rng.standard_normal(features)))
            bn.bias.copy_(lib.tensor(rng.standard_normal(features)))
    return bn.eval()


@pytest.mark.parametrize("transpose,bias,affine", [(False, True, True), (False, False, False), (True, True, True)])
def test_fuse_conv_bn_eval_as_torch(transpose, bias, affine):
    conv = (lambda lib: lib.nn.ConvTranspose2d(3, 4, 3, bias=bias)) if transpose else \
        (lambda lib: lib.nn.Conv2d(3, 4, 3, bias=bias))
    conv_o, conv_t = _pair(conv)
    conv_o.eval()
    conv_t.eval()
    bn_o, bn_t = _trained_bn(engine, 4, affine), _trained_bn(torch, 4, affine)
    fused_o = U.fuse_conv_bn_eval(conv_o, bn_o, transpose=transpose)
    fused_t = torch.nn.utils.fuse_conv_bn_eval(conv_t, bn_t, transpose=transpose)
    assert fused_o is not conv_o and type(fused_o) is type(conv_o)
    _same(fused_o.weight, fused_t.weight)
    _same(fused_o.bias, fused_t.bias)
    assert isinstance(fused_o.bias, engine.nn.Parameter) and fused_o.bias.requires_grad == fused_t.bias.requires_grad
    x = engine.tensor(np.random.default_rng(0).standard_normal((2, 3, 6, 5)))
    _same(fused_o(x), bn_o(conv_o(x)))


def test_fuse_conv_bn_weights_keeps_dtypes():
    w = engine.randn(4, 2, 3, dtype=engine.float32, requires_grad=True)
    rm, rv = engine.zeros(4, dtype=engine.float64), engine.ones(4, dtype=engine.float64)
    fused_w, fused_b = U.fuse_conv_bn_weights(w, None, rm, rv, 1e-5, None, None)
    theirs_w, theirs_b = torch.nn.utils.fuse_conv_bn_weights(torch.tensor(w.detach().numpy(), requires_grad=True),
                                                              None, torch.zeros(4, dtype=torch.float64),
                                                              torch.ones(4, dtype=torch.float64), 1e-5, None, None)
    assert fused_w.dtype == engine.float32 and fused_b.dtype == engine.float32
    assert (fused_w.requires_grad, fused_b.requires_grad) == (theirs_w.requires_grad, theirs_b.requires_grad)
    _same(fused_w, theirs_w, rtol=1e-6)


@pytest.mark.parametrize("bias,features", [(True, 5), (False, 5), (True, 1)])
def test_fuse_linear_bn_eval_as_torch(bias, features):
    lin_o, lin_t = _pair(lambda lib: lib.nn.Linear(3, 5, bias=bias))
    lin_o.eval()
    lin_t.eval()
    bn_o, bn_t = _trained_bn(engine, features, dims=1), _trained_bn(torch, features, dims=1)
    fused_o = U.fuse_linear_bn_eval(lin_o, bn_o)
    fused_t = torch.nn.utils.fuse_linear_bn_eval(lin_t, bn_t)
    _same(fused_o.weight, fused_t.weight)
    _same(fused_o.bias, fused_t.bias)
    if features == 5:
        x = engine.tensor(np.random.default_rng(0).standard_normal((4, 3)))
        _same(fused_o(x), bn_o(lin_o(x)))
    w, b = U.fuse_linear_bn_weights(lin_o.weight, lin_o.bias, bn_o.running_mean, bn_o.running_var, bn_o.eps,
                                    bn_o.weight, bn_o.bias)
    _same(w, fused_t.weight)
    _same(b, fused_t.bias)


def test_fusion_errors():
    conv, bn, lin = engine.nn.Conv2d(2, 3, 1), engine.nn.BatchNorm2d(3), engine.nn.Linear(2, 3)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        U.fuse_conv_bn_eval(conv, bn)
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        U.fuse_linear_bn_eval(lin, engine.nn.BatchNorm1d(3))
    with pytest.raises(AssertionError, match="bn.running_mean and bn.running_var must not be None"):
        U.fuse_conv_bn_eval(conv.eval(), engine.nn.BatchNorm2d(3, track_running_stats=False).eval())
    with pytest.raises(AssertionError, match="To fuse, linear.out_features == bn.num_features or bn.num_features == "
                                             "1, got linear.out_features=3 and bn.num_features=4"):
        U.fuse_linear_bn_eval(lin.eval(), engine.nn.BatchNorm1d(4).eval())
    assert U.fusion.fuse_conv_bn_eval is U.fuse_conv_bn_eval
