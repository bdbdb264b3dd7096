"""FeaturePyramidNetwork, FrozenBatchNorm2d, MLP and Permute against torchvision with weights moved through numpy."""
from collections import OrderedDict

import numpy as np
import pytest
import torch
import torchvision
from op_check import assert_close

import engine
from flowvision import ops
from flowvision.ops.feature_pyramid_network import LastLevelMaxPool, LastLevelP6P7

rng = np.random.default_rng(0)


def _copy_weights(ours, ref):
    """Load ref's state_dict into ours through numpy; keys and order must be identical."""
    state = OrderedDict((k, v.detach().numpy()) for k, v in ref.state_dict().items())
    assert list(ours.state_dict().keys()) == list(state.keys())
    ours.load_state_dict(state)


def _run_both(ours, ref, inputs):
    """Forward both on the same dict of numpy maps, backward a seeded upstream gradient; compare all."""
    e_in = OrderedDict((k, engine.from_numpy(v).requires_grad_()) for k, v in inputs.items())
    t_in = OrderedDict((k, torch.from_numpy(v).requires_grad_()) for k, v in inputs.items())
    e_out, t_out = ours(e_in), ref(t_in)
    assert list(e_out.keys()) == list(t_out.keys())
    e_loss, t_loss = 0, 0
    for k in t_out:
        assert_close(e_out[k].detach().numpy(), t_out[k].detach().numpy(), rtol=1e-5, what=f"output {k}")
        g = rng.standard_normal(tuple(t_out[k].shape)).astype(np.float32)
        e_loss = e_loss + (e_out[k] * engine.from_numpy(g)).sum()
        t_loss = t_loss + (t_out[k] * torch.from_numpy(g)).sum()
    e_loss.backward()
    t_loss.backward()
    for k in inputs:
        assert_close(e_in[k].grad.numpy(), t_in[k].grad.numpy(), rtol=1e-5, what=f"grad of input {k}")
    e_params, t_params = dict(ours.named_parameters()), dict(ref.named_parameters())
    assert e_params.keys() == t_params.keys()
    for k, p in t_params.items():
        assert_close(e_params[k].grad.numpy(), p.grad.numpy(), rtol=1e-5, what=f"grad of {k}")


def _features(channels, sizes=((33, 25), (17, 13), (9, 7), (5, 4)), batch=2):
    return OrderedDict((f"feat{i}", rng.standard_normal((batch, c) + s).astype(np.float32))
                       for i, (c, s) in enumerate(zip(channels, sizes)))


@pytest.mark.parametrize("extra", ["none", "maxpool", "p6p7_c5", "p6p7_p5"])
def test_fpn(extra):
    channels, out = [4, 6, 8, 10], 5
    blocks = {"none": (None, None), "maxpool": (LastLevelMaxPool(), torchvision.ops.feature_pyramid_network.
                                                  LastLevelMaxPool()),
              "p6p7_c5": (LastLevelP6P7(10, out), torchvision.ops.feature_pyramid_network.LastLevelP6P7(10, out)),
              "p6p7_p5": (LastLevelP6P7(out, out), torchvision.ops.feature_pyramid_network.LastLevelP6P7(out, out))}
    ours_extra, ref_extra = blocks[extra]
    ours = ops.FeaturePyramidNetwork(channels, out, extra_blocks=ours_extra)
    ref = torchvision.ops.FeaturePyramidNetwork(channels, out, extra_blocks=ref_extra)
    _copy_weights(ours, ref)
    _run_both(ours, ref, _features(channels))


def test_fpn_with_norm_and_old_keys():
    channels = [3, 5, 7]
    ours = ops.FeaturePyramidNetwork(channels, 4, norm_layer=engine.nn.BatchNorm2d).eval()
    ref = torchvision.ops.FeaturePyramidNetwork(channels, 4, norm_layer=torch.nn.BatchNorm2d).eval()
    _copy_weights(ours, ref)
    _run_both(ours, ref, _features(channels, batch=1))
    plain = torchvision.ops.FeaturePyramidNetwork(channels, 4)
    old = {k.replace(".0.", "."): v.detach().numpy() for k, v in plain.state_dict().items()}   # version-1 names
    assert "inner_blocks.0.weight" in old
    mine = ops.FeaturePyramidNetwork(channels, 4)
    mine.load_state_dict(old)
    assert_close(mine.layer_blocks[2][0].weight.detach().numpy(), plain.layer_blocks[2][0].weight.detach().numpy(), 0)


def test_fpn_errors():
    with pytest.raises(ValueError, match="in_channels=0 is currently not supported"):
        ops.FeaturePyramidNetwork([0, 3], 4)
    with pytest.raises(TypeError, match="extra_blocks should be of type ExtraFPNBlock"):
        ops.FeaturePyramidNetwork([2, 3], 4, extra_blocks=engine.nn.ReLU())


def test_frozen_batchnorm():
    bn = torch.nn.BatchNorm2d(6).train()
    bn(torch.randn(4, 6, 3, 3) * 3 + 1)                              # non-trivial running stats
    with torch.no_grad():
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
    state = {k: v.detach().numpy() for k, v in bn.state_dict().items()}
    assert "num_batches_tracked" in state
    ours = ops.FrozenBatchNorm2d(6)
    ref = torchvision.ops.FrozenBatchNorm2d(6)
    ours.load_state_dict(state)                                      # strict: the counter is dropped cleanly
    ref.load_state_dict(bn.state_dict())
    assert list(ours.state_dict().keys()) == list(ref.state_dict().keys())
    assert repr(ours) == repr(ref) == "FrozenBatchNorm2d(6, eps=1e-05)"
    assert list(ours.parameters()) == []
    x = rng.standard_normal((2, 6, 5, 4)).astype(np.float32)
    ex, tx = engine.from_numpy(x).requires_grad_(), torch.from_numpy(x).requires_grad_()
    ey, ty = ours(ex), ref(tx)
    assert_close(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-6)
    g = rng.standard_normal(x.shape).astype(np.float32)
    ey.backward(engine.from_numpy(g))
    ty.backward(torch.from_numpy(g))
    assert_close(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    assert_close(ours(engine.from_numpy(x)).numpy(), bn.eval()(torch.from_numpy(x)).detach().numpy(), rtol=1e-5)
    assert ops.FrozenBatchNorm2d(3, eps=0.0).eps == 0.0


def test_mlp_and_permute():
    ref = torchvision.ops.MLP(5, [7, 3], norm_layer=torch.nn.LayerNorm, dropout=0.0).eval()
    ours = ops.MLP(5, [7, 3], norm_layer=engine.nn.LayerNorm, dropout=0.0).eval()
    _copy_weights(ours, ref)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    assert_close(ours(engine.from_numpy(x)).detach().numpy(), ref(torch.from_numpy(x)).detach().numpy(), rtol=1e-5)
    y = ops.Permute([0, 2, 3, 1])(engine.from_numpy(rng.standard_normal((2, 3, 4, 5))))
    assert y.shape == (2, 4, 5, 3)
