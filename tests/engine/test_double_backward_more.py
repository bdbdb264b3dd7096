"""More higher-order gradients (``create_graph=True``) against torch: padding, copies, strided views, scatters,
checkpoints, norms and distances, grid sampling, fold/unfold, indexing, scans, linear algebra, special
functions and losses (each case: first gradients and the gradients of sum(g * w) w.r.t. inputs and v, in
float64, to 1e-6; the helper is ``test_double_backward.check_double``)."""
import numpy as np
import pytest
import torch

import engine
import engine.nn.functional as EF
from test_double_backward import check_double

pytestmark = pytest.mark.slow  # torch imports sympy on its first create_graph call (about 3 s)

_R = np.random.default_rng(11)
A = _R.standard_normal((3, 5))
B = _R.standard_normal((5,))
X4 = _R.standard_normal((2, 3, 5, 4))
GRID = _R.uniform(-1.2, 1.2, (2, 3, 4, 2))
P = np.abs(_R.standard_normal((3, 5))) + 0.1  # positive
W3 = _R.standard_normal((4, 5, 5))
Z = A.copy()
Z[0, 1] = Z[2, 3] = Z[2, 0] = 0.0  # zeros for the products
SQ = _R.standard_normal((2, 4, 4)) + 3 * np.eye(4)  # well-conditioned
TRIL = np.tril(_R.standard_normal((4, 4))) + 3 * np.eye(4)
RHS = _R.standard_normal((2, 4, 3))
IDX = np.array([[0, 2, 2, 1, 0], [1, 1, 0, 2, 2]])
COLS = np.array([4, 0, 4, 2])
MASK = _R.standard_normal((3, 5)) > 0


def _pads(F, L, x):
    return (F.pad(x, (1, 2, 0, 1), value=0.5) ** 2).sum((2, 3)) + (F.pad(x, (-1, 2, 1, -2)) ** 3).sum((2, 3)) \
        + (F.pad(x, (2, 3, 1, 4), mode="reflect") ** 2).sum((2, 3)) \
        + (F.pad(x, (2, 1, 3, 1), mode="replicate") ** 2).sum((2, 3)) \
        + (F.pad(x, (2, 1, 3, -1), mode="circular") ** 2).sum((2, 3))


def _copies(F, L, x, y):
    out = (x * 2).clone()
    out.copy_(y.sin() * x)
    z = (x * y).clone()
    z[1:, ::2] = y[:3] ** 2
    return out ** 2 + z ** 2 + L.as_strided(x * y, (2, 3), (1, 2), 1).sum() \
        + L.slice_scatter(x * x, (y ** 2)[None].expand(2, 5), 0, 1) ** 2 \
        + L.as_strided((x.t() * y[:3]).contiguous().t(), (4, 2), (2, 3), 2).sum() * x


def _gathers(F, L, x, y):
    i, c = L.tensor(IDX), L.tensor(COLS)
    z = x * y
    return (z.gather(0, i) ** 2).sum(0) + L.take_along_dim(z[:2], i[:, :3], 1).sum() * y \
        + (z.index_select(1, c) ** 2).sum() * y + (L.take(z, L.tensor([[1, -2], [14, 1]])) ** 2).sum() \
        + (z.masked_select(L.tensor(MASK)) ** 2).sum() + (x[:, 1:] * y[1:]).sum(0).index_select(0, c[1:2]).sum()


def _scatters(F, L, x, y):
    i, c = L.tensor(IDX), L.tensor(COLS)
    z = x * y
    src = (z.t() * 2)[:, :3].t().sin()
    return (z.scatter(0, i[:, :3] % 3, src[:2, :3]) ** 2).sum(0) + (z.scatter_add(0, i, z[:2] ** 2) ** 2).sum(0) \
        + (z.scatter(1, i % 3, 1.5) ** 2).sum(0) + (z.index_add(1, c, z[:, :4].exp(), alpha=0.5) ** 2).sum(0) \
        + (z.index_copy(1, L.tensor([3, 0, 1]), z[:, 2:].cos()) ** 2).sum(0) \
        + (z.index_fill(1, c, y[0] * 2) ** 2).sum(0) \
        + (z.masked_scatter(L.tensor(MASK), (z * 3).exp()) ** 2).sum(0) \
        + (L.index_put(z, (L.tensor([0, 2, 0]), L.tensor([1, 1, 4])), y[:3] ** 2, accumulate=True) ** 2).sum(0)


def _grid_samples(F, L, x, g):
    out = 0
    for mode, padding, align in (("bilinear", "zeros", False), ("bilinear", "border", True),
                                 ("bilinear", "reflection", False), ("bilinear", "reflection", True),
                                 ("nearest", "zeros", False), ("nearest", "reflection", True)):
        out = out + F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align) ** 2
    return out


def _scatter_reduces(F, L, x, y):
    i = L.tensor(IDX[:, :4] % 3)
    z, src = x * y, (x[:2, 1:] * y[1:]).exp()
    out = 0
    for reduce in ("sum", "mean", "amax", "amin", "prod"):
        for include_self in (True, False):
            out = out + (z.scatter_reduce(0, i, src, reduce, include_self=include_self) ** 2).sum(0)
    return out


CASES = {
    "pad": (_pads, [X4]),
    "copies": (_copies, [A, B]),
    "rms_norm": (lambda F, L, x, y: F.rms_norm(x, (5,), y, eps=1e-5).tanh() + F.rms_norm(x * y, (3, 5)) ** 2,
                 [A, B]),
    "normalize": (lambda F, L, x, y: F.normalize(x * y, dim=1) ** 2 + F.normalize(x * y, p=1.5, dim=0) ** 2
                  + F.normalize(x, p=1, dim=1) * y, [A, B]),
    "cosine_similarity": (lambda F, L, x, y: F.cosine_similarity(x * y, x.exp(), dim=1) ** 2
                          + F.cosine_similarity(x, y[None], dim=1).sum() + F.cosine_similarity(x, x, dim=0).sum(),
                          [A, B]),
    "pairwise_distance": (lambda F, L, x, y: F.pairwise_distance(x * y, x.exp()) ** 2
                          + F.pairwise_distance(x, y, p=3.0, keepdim=True).sum(0), [A, B]),
    "cosine_embedding": (lambda F, L, x, y: F.cosine_embedding_loss(x * y, x.exp() + y, L.tensor([1, -1, 1]),
                                                                      margin=-0.5, reduction="none"), [A, B]),
    "grid_sample": (_grid_samples, [X4, GRID]),
    "grid_sample_bicubic": (lambda F, L, x, g: F.grid_sample(x, g, mode="bicubic", padding_mode="border",
                                                              align_corners=False) ** 2, [X4, GRID]),
    "fold_unfold": (lambda F, L, x: (F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1)) ** 2).sum(1)
                    + (F.fold(F.unfold(x, 2) ** 2, (5, 4), 2) ** 2).sum((1, 2, 3))[:, None], [X4]),
    "bilinear": (lambda F, L, x, w, y: F.bilinear(x, x.exp(), w, y[:4]) ** 2, [A, W3, B]),
    "mish_tanhshrink": (lambda F, L, x, y: F.mish(x * y) ** 2 + F.tanhshrink(x * y) ** 2, [A, B]),
    "gathers": (_gathers, [A, B]),
    "scatters": (_scatters, [A, B]),
    "scatter_reduce": (_scatter_reduces, [A, B]),
    "rearrange_views": (lambda F, L, x, y: ((x * y).unfold(1, 2, 2) ** 2).sum((0, 2))[:1]
                        + (L.diag_embed(x * y, 1) ** 2).sum((0, 1)) + (x * y).unfold(0, 2, 1).sum(), [A, B]),
    "pool_and_embedding_picks": (lambda F, L, x, w: (F.max_pool2d(x, 2, return_indices=True)[0] ** 3).sum((2, 3))
                                 .sum(1)[:, None] * (F.embedding(L.tensor([[0, 2, 2]]), w[0, 0], padding_idx=2)
                                                     ** 3).sum(), [X4, X4]),
    "cumsum_cumprod": (lambda F, L, x, y: (x * y).cumsum(1) ** 2 + (x * y).cumprod(0) ** 2 + (x * y).cumprod(1),
                       [A, B]),
    "cumprod_zeros": (lambda F, L, x, y: (x * y).cumprod(1) ** 2 + (x * y).cumprod(0) * y
                      + (x.t() * y[:3]).cumprod(0).t() ** 2, [Z, B]),
    "prod": (lambda F, L, x, y: (x * y).prod(1)[:, None] ** 2 + (x * y).prod() + (x * y).prod(0, keepdim=True) ** 2,
             [A, B]),
    "prod_zeros": (lambda F, L, x, y: (x * y).prod(1)[:, None] ** 2 + (x * y).prod(0) * y + (x[:2] * y).prod(),
                   [Z, B]),
    "cummax_logcumsumexp": (lambda F, L, x, y: (x * y).cummax(1)[0] ** 2 + (x * y).cummin(0)[0] ** 2
                            + (x * y).logcumsumexp(1) ** 2 + (x * y).logcumsumexp(0), [A, B]),
    "picked_values": (lambda F, L, x, y: (x * y).max(1)[0] ** 2 + (x * y).median(0)[0].sum()
                      + (x * y).kthvalue(2, 1)[0] ** 2 + ((x * y).amin(0) * y).sum() + (x * y).median(), [A, B]),
    "einsum": (lambda F, L, x, y: L.einsum("ij,j,kj->ik", x, y, x) ** 2 + L.einsum("ii->i", x[:, :3] * y[:3]) ** 2
               + L.einsum("bij,jk->bik", x.expand(2, 3, 5), x.t() * y[:3]).sum(0), [A, B]),
    "inverse_det_solve": (lambda F, L, a, b: L.linalg.inv(a).sum(-1) ** 2 + L.linalg.det(a)[:, None] ** 2
                          + (L.linalg.solve(a, b) ** 2).sum(-1) + L.linalg.solve(a, b[..., 0]) ** 2, [SQ, RHS]),
    "slogdet_cholesky_solve_matrix_exp": (lambda F, L, a, b, t: L.slogdet(a)[1][:, None] ** 2
                                          + (L.cholesky_solve(b, t) ** 2).sum(-1)
                                          + L.linalg.matrix_exp(a * 0.3)[:, :, :3].sum(-1) ** 2, [SQ, RHS, TRIL]),
    "lu_solve": (lambda F, L, a, b: (L.linalg.lu_solve(*L.linalg.lu_factor(a.detach()), b) ** 2).sum(-1)
                 + (L.linalg.lu_solve(a, L.linalg.lu_factor(a.detach())[1], b, adjoint=True) ** 2).sum(-1),
                 [SQ, RHS]),
    "binary_elementwise": (lambda F, L, x, y: L.atan2(x * y, y + 2) ** 2 + L.fmod(x * y, y.abs() + 0.3) ** 2
                           + L.remainder(x * 3, y + 2.5) ** 2 + L.copysign(x * x, y) * y
                           + L.nan_to_num(x.log()) ** 2 + L.sinc(x * y) ** 2 + L.special.xlog1py(x, y.abs()) ** 2,
                           [A, B]),
    "special_functions": (lambda F, L, x, y: L.erfc(x * y) ** 2 + L.erfinv((x * y).tanh() * 0.9) ** 2
                          + L.lgamma(x * y + 3) ** 2 + L.digamma(x * y + 3) ** 2 + L.polygamma(2, x * y + 3) ** 2
                          + L.i0(x * y) ** 2 + L.special.entr(x * y + 3) ** 2 + L.special.erfcx(x * y) ** 2
                          + L.special.log_ndtr(x * y) ** 2 + L.special.ndtri((x * y).sigmoid()) ** 2
                          + L.special.zeta(x.detach() + 3, y.abs() + 1) ** 2, [P, B]),
    "kl_div_soft_margin": (lambda F, L, x, t: F.kl_div(x * t, t, reduction="none") ** 2
                           + F.kl_div(x, t.log(), reduction="none", log_target=True) ** 2
                           + F.soft_margin_loss(x * t, L.tensor(np.sign(A)), reduction="none") ** 2, [A, P]),
    "soft_target_cross_entropy": (lambda F, L, x, t, w: F.cross_entropy(x * t, t.softmax(1), w[0],
                                                                         label_smoothing=0.1) ** 2
                                  + F.cross_entropy(x[0], t[1].softmax(0), reduction="sum")
                                  + F.cross_entropy(x, t, reduction="none").sum(), [A, P, P]),
    "local_response_norm": (lambda F, L, x: F.local_response_norm(x, 3, alpha=0.1, k=1.5) ** 2
                            + F.local_response_norm(x, 2, alpha=0.3) ** 2, [X4]),
}


@pytest.mark.parametrize("name", CASES)
def test_second_order_matches_torch(name):
    f, inputs = CASES[name]
    check_double(f, inputs)


def _close(ours, ref, what):
    ref = ref.detach().numpy()
    ours = ours.detach().numpy()
    scale = max(1.0, float(np.abs(ref).max()))
    assert float(np.abs(ours - ref).max()) / scale <= 1e-6, what


def _run_both(fn, arrays):
    """``fn(lib, functional, *leaves)`` on float64 leaves of both libraries; returns the leaves of each."""
    out = []
    for lib, functional in ((engine, EF), (torch, torch.nn.functional)):
        leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
        fn(lib, functional, *leaves)
        out.append(leaves)
    return out


def test_checkpoint_under_create_graph():
    """A checkpointed segment differentiated twice: the recomputation is recorded on the graph (torch's
    non-reentrant checkpoint), so the second gradients reach the input and the segment's weights."""
    def run(lib, F, x, w, b):
        import importlib
        checkpoint = importlib.import_module(lib.__name__ + ".utils.checkpoint").checkpoint
        y = checkpoint(lambda h: F.linear(h, w, b).tanh() * h[:, :4], x * 2, use_reentrant=False)
        g, = lib.autograd.grad((y ** 2).sum(), x, create_graph=True)
        (g ** 2).sum().backward()
    ours, ref = _run_both(run, [A, _R.standard_normal((4, 5)), _R.standard_normal(4)])
    for a, b, what in zip(ours, ref, "xwb"):
        _close(a.grad, b.grad, what)


def test_gradient_penalty_through_padding_normalize_and_grid_sample():
    """WGAN-GP: a critic reading its input through grid_sample, reflect padding, a convolution and
    F.normalize; the penalty's gradients reach the critic's weights and the sampling grid as torch's."""
    real, fake = _R.standard_normal((2, 2, 6, 5)), _R.standard_normal((2, 2, 6, 5))
    mix = _R.uniform(size=(2, 1, 1, 1))

    def run(lib, F, grid, w, v):
        x = lib.tensor(mix * real + (1 - mix) * fake, dtype=lib.float64, requires_grad=True)
        h = F.grid_sample(x, grid, align_corners=False)
        h = F.conv2d(F.pad(h, (1, 1, 1, 1), mode="reflect"), w)
        score = (F.normalize(h.flatten(1), dim=1) @ v).sum()
        g, = lib.autograd.grad(score, x, create_graph=True)
        ((g.flatten(1).norm(dim=1) - 1) ** 2).mean().backward()
    arrays = [_R.uniform(-1, 1, (2, 4, 3, 2)), _R.standard_normal((3, 2, 3, 3)), _R.standard_normal(36)]
    ours, ref = _run_both(run, arrays)
    for a, b, what in zip(ours, ref, ("grid", "w", "v")):
        _close(a.grad, b.grad, what)


def test_second_order_on_cuda(cuda):
    """Padding, indexing, grid sampling, a norm and a scan on the CUDA backend give torch's second derivatives."""
    def f(F, L, x, g):
        i = L.tensor(np.array([[[[0, 3], [2, 1]]]]), device=x.device).expand(2, 3, 2, 2)
        return (F.pad(x, (1, 2, 2, 1), mode="reflect") ** 2).sum((2, 3))[..., None, None] \
            + F.grid_sample(x, g, align_corners=True)[..., :2, :2] ** 2 + x.gather(3, i) ** 2 \
            + F.normalize(x, dim=1)[..., :2, :2] ** 2 + (x.cumsum(2)[..., :2, :2] * x[..., :2, :2]).cumprod(3)
    check_double(f, [X4, GRID], device="cuda")


def _third_order(lib, F, f, a, w1, w2):
    x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
    g1, = lib.autograd.grad(f(F, lib, x), x, create_graph=True)
    g2, = lib.autograd.grad((g1 * lib.tensor(w1)).sum(), x, create_graph=True)
    g3, = lib.autograd.grad((g2 * lib.tensor(w2)).sum(), x)
    return g3


def test_third_order_through_linear_ops():
    """The gradients of the linear ops' differentiable backwards are differentiable again (their transposes:
    pad, gather/scatter, index_select/index_add, take/index_put, masked select/scatter, as_strided, unfold,
    the pooling and embedding picks, cumsum)."""
    def f(F, L, x):
        i = L.tensor(IDX[:, :4] % 3)
        parts = [F.pad(x, (1, 2), mode="circular"), x.gather(0, i), x.index_select(1, L.tensor(COLS)),
                 L.take(x, L.tensor([3, 3, 7])), x.masked_select(L.tensor(MASK)), L.as_strided(x, (3, 2), (2, 3), 1),
                 x.unfold(1, 2, 1), F.max_pool1d(x[None], 2), F.embedding(L.tensor([1, 1, 0]), x), x.cumsum(1),
                 L.diag_embed(x).sum(0), F.unfold(x[None, None], (2, 2)), x.cummax(1)[0]]
        return sum((p ** 3).sum() for p in parts)
    w1, w2 = _R.standard_normal(A.shape), _R.standard_normal(A.shape)
    _close(_third_order(engine, EF, f, A, w1, w2), _third_order(torch, torch.nn.functional, f, A, w1, w2), "x")
