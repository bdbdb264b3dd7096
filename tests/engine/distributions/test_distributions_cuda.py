"""The distributions on the CUDA backend (the CPU emulation of CuPy here, a GPU where there is one): scoring,
entropies, KL and transforms against torch on the CPU with gradients; draws and their gradients stay on the
device."""
import numpy as np
import torch

import engine
from op_check import check_op

RNG = np.random.default_rng(8)


def test_scoring_and_kl_on_cuda(cuda):
    loc, scale, value = RNG.standard_normal((2, 3)), RNG.uniform(0.5, 2, (2, 3)), RNG.standard_normal((4, 2, 3))
    a = RNG.standard_normal((3, 3))
    cov = a @ a.T + 3 * np.eye(3)

    def run(module):
        def fn(loc, scale, value, cov):
            D = module.distributions
            normal = D.Normal(loc, scale)
            mvn = D.MultivariateNormal(loc, covariance_matrix=cov)
            gamma = D.Gamma(scale, scale + 1)
            dirichlet = D.Dirichlet(scale)
            return (normal.log_prob(value), normal.entropy(), normal.cdf(value), mvn.log_prob(value),
                    mvn.entropy(), gamma.log_prob(scale), gamma.entropy(),
                    dirichlet.log_prob(scale / scale.sum(-1, keepdim=True)),
                    D.kl_divergence(normal, D.Normal(scale, loc.abs() + 1)),
                    D.kl_divergence(mvn, D.MultivariateNormal(scale, scale_tril=D.transform_to(
                        D.constraints.lower_cholesky)(cov))),
                    D.StickBreakingTransform()(loc), D.Categorical(logits=loc).entropy())
        return fn
    check_op(run(engine), run(torch), [loc, scale, value, cov], rtol=1e-9, device="cuda")


def test_draws_and_their_gradients_stay_on_the_device(cuda):
    D = engine.distributions
    conc = engine.tensor([0.5, 2.0, 4.0], dtype=engine.float64).to("cuda").requires_grad_()
    for dist in (D.Normal(conc, conc), D.Gamma(conc, conc), D.Dirichlet(conc), D.Beta(conc, conc),
                 D.Uniform(conc - 1, conc), D.Laplace(conc, conc), D.Exponential(conc)):
        x = dist.rsample((5,))
        assert x.device.type == "cuda" and x.dtype == engine.float64
        x.sum().backward()
        assert conc.grad.device.type == "cuda" and bool(engine.isfinite(conc.grad).all())
        conc.grad = None
    probs = (conc / conc.sum()).detach()
    for dist in (D.Bernoulli(probs), D.Categorical(probs), D.Poisson(conc.detach()), D.Multinomial(4, probs)):
        assert dist.sample((2,)).device.type == "cuda"
