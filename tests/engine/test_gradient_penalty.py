"""End-to-end higher-order gradients against torch, in float64: WGAN-GP gradient penalties on a small MLP and a
small CNN (the discriminator's parameter gradients), the Hessian of an MLP's MSE loss with respect to its first
layer's weight (grad looped over the gradient's entries)."""
import numpy as np

import torch
import torch.nn.functional as TF

import engine
import engine.autograd
import engine.nn.functional as EF

_R = np.random.default_rng(11)


def _params(shapes):
    return [_R.standard_normal(s) * 0.5 for s in shapes]


MLP = _params([(8, 5), (8,), (1, 8), (1,)])
CNN = _params([(4, 2, 3, 3), (4,), (1, 36), (1,)])
REAL, FAKE, ALPHA = _R.standard_normal((4, 5)), _R.standard_normal((4, 5)), _R.random((4, 1))
REAL_IMG, FAKE_IMG = _R.standard_normal((3, 2, 6, 6)), _R.standard_normal((3, 2, 6, 6))
ALPHA_IMG = _R.random((3, 1, 1, 1))


def _mlp(F, x, w1, b1, w2, b2):
    return F.linear(F.leaky_relu(F.linear(x, w1, b1), 0.2), w2, b2)


def _cnn(F, x, wc, bc, w, b):
    h = F.leaky_relu(F.conv2d(x, wc, bc, stride=2, padding=1), 0.2)
    return F.linear(h.flatten(1), w, b)


def _wgan_gp(lib, F, critic, params, real, fake, alpha):
    """The critic's loss with a gradient penalty of weight 10; returns the parameters' gradients."""
    ps = [lib.tensor(p, requires_grad=True) for p in params]
    real, fake, alpha = lib.tensor(real), lib.tensor(fake), lib.tensor(alpha)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = critic(F, mixed, *ps)
    g, = lib.autograd.grad(out, mixed, lib.ones_like(out), create_graph=True)
    penalty = ((g.flatten(1).norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(F, fake, *ps).mean() - critic(F, real, *ps).mean() + 10 * penalty
    loss.backward()
    return [p.grad.detach().numpy() for p in ps]


def _assert_close(ours, ref):
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


def test_wgan_gp_mlp():
    _assert_close(_wgan_gp(engine, EF, _mlp, MLP, REAL, FAKE, ALPHA), _wgan_gp(torch, TF, _mlp, MLP, REAL, FAKE, ALPHA))


def test_wgan_gp_cnn():
    args = (_cnn, CNN, REAL_IMG, FAKE_IMG, ALPHA_IMG)
    _assert_close(_wgan_gp(engine, EF, *args), _wgan_gp(torch, TF, *args))


def _hessian(lib, F):
    w1, b1, w2, b2 = [lib.tensor(p, requires_grad=True) for p in _params_hessian]
    x, target = lib.tensor(_X), lib.tensor(_T)
    loss = F.mse_loss(F.linear(F.linear(x, w1, b1).tanh(), w2, b2), target)
    g, = lib.autograd.grad(loss, w1, create_graph=True)
    rows = [lib.autograd.grad(g[i, j], w1, retain_graph=True)[0].detach().numpy().ravel()
            for i in range(g.shape[0]) for j in range(g.shape[1])]
    return np.stack(rows)


_params_hessian = _params([(3, 4), (3,), (2, 3), (2,)])
_X, _T = _R.standard_normal((5, 4)), _R.standard_normal((5, 2))


def test_hessian_of_mlp_loss_wrt_first_weight():
    ours = _hessian(engine, EF)
    np.testing.assert_allclose(ours, _hessian(torch, TF), rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(ours, ours.T, atol=1e-12)
