"""torch's call signatures: keyword names, defaults and argument forms (numpy integers, 0-dim integer tensors,
one-element lists) that the differential signature fuzzer found refused or answered differently, each run on
both sides and compared with torch's result: values, dtypes and shapes.

Each case is ``f(lib, T)``: ``lib`` is ``torch`` or ``engine`` (``F`` is ``lib.nn.functional``), ``T`` makes
that library's tensor from a numpy array, so one lambda states the call for both.
"""
import numpy as np
import pytest
import torch

import engine
import engine.nn.functional  # noqa: F401  (lib.nn.functional below)

RNG = np.random.default_rng(7)
X = RNG.uniform(0.1, 0.9, (3, 5))
Y = RNG.uniform(0.1, 0.9, (3, 5))
V = RNG.uniform(0.1, 0.9, (5,))
SIGN = np.array([1.0, -1.0, 1.0])
IDX = np.array([[0, 2, 1, 0, 2], [1, 0, 2, 2, 1], [2, 2, 0, 1, 0]])
IMG = RNG.standard_normal((2, 3, 7, 6)).astype(np.float32)
W2 = RNG.standard_normal((4, 3, 3, 2)).astype(np.float32)
W1 = RNG.standard_normal((3, 2, 3))


def _f(lib):
    return lib.nn.functional


CASES = {
    # keyword names torch gives its parameters
    "arange(end=)": lambda lib, T: lib.arange(end=5),
    "clone(input=)": lambda lib, T: lib.clone(input=T(X)),
    "detach(input=)": lambda lib, T: lib.detach(input=T(X)),
    "inverse(input=)": lambda lib, T: lib.inverse(input=T(X[:, :3])),
    "Tensor.split(split_size=)": lambda lib, T: T(X).split(split_size=2, dim=1),
    "split(tensor=, split_size_or_sections=)": lambda lib, T: lib.split(tensor=T(X), split_size_or_sections=[1, 4],
                                                                      dim=1),
    "tensor_split(sections=)": lambda lib, T: lib.tensor_split(T(X), sections=2, dim=1),
    "Tensor.tensor_split(indices=)": lambda lib, T: T(X).tensor_split(indices=[1, 3], dim=1),
    "tensor_split(tensor_indices_or_sections=)": lambda lib, T: lib.tensor_split(
        T(X), tensor_indices_or_sections=lib.tensor(2)),
    "hsplit(sections=)": lambda lib, T: lib.hsplit(T(X[:, :4]), sections=2),
    "vsplit(indices=)": lambda lib, T: lib.vsplit(T(X), indices=[1]),
    "unsafe_split(input=, split_size=)": lambda lib, T: lib.unsafe_split(input=T(X), split_size=2),
    "concatenate(tensors=, axis=)": lambda lib, T: lib.concatenate(tensors=(T(X), T(Y)), axis=1),
    "concatenate(dim=)": lambda lib, T: lib.concatenate([T(X), T(Y)], dim=0),
    "swapaxes(input=, axis0=, axis1=)": lambda lib, T: lib.swapaxes(input=T(X), axis0=0, axis1=1),
    "Tensor.swapaxes(axis0=, axis1=)": lambda lib, T: T(X).swapaxes(axis0=1, axis1=0),
    "histogram(input) bins=100": lambda lib, T: lib.histogram(T(X)),
    "isin(elements=, test_elements=)": lambda lib, T: lib.isin(elements=T(IDX), test_elements=T(IDX[0, :2])),
    "isin(test_element=)": lambda lib, T: lib.isin(T(IDX), test_element=2),
    "isin(element=)": lambda lib, T: lib.isin(element=2, test_elements=T(IDX)),
    "Tensor.clamp_min_(min=)": lambda lib, T: T(X).clamp_min_(min=0.5),
    "Tensor.clamp_max_(max=)": lambda lib, T: T(X).clamp_max_(max=T(Y)),
    "Tensor.pow_(exponent=)": lambda lib, T: T(X).pow_(exponent=3),
    "clamp_min_(input=, min=)": lambda lib, T: lib.clamp_min_(input=T(X), min=0.5),
    "fill_(input=, value=)": lambda lib, T: lib.fill_(input=T(X), value=2.5),
    "zero_(input=)": lambda lib, T: lib.zero_(input=T(X)),
    "Tensor.random_(to=)": lambda lib, T: T(X).random_(to=1),
    "Tensor.random_(from, to=)": lambda lib, T: T(X).random_(**{"from": 2}, to=3),
    "Tensor.copy_(other=)": lambda lib, T: T(X).copy_(other=T(V)),
    "Tensor.resize_(size=)": lambda lib, T: T(X).resize_(size=(5, 3)),
    "Tensor.resize_as_(the_template=)": lambda lib, T: T(X).resize_as_(the_template=T(X.T)),
    "Tensor.sum_to_size(size=)": lambda lib, T: T(X).sum_to_size(size=(1, 5)),
    "Tensor.expand(size=, implicit=)": lambda lib, T: T(V).expand(size=(2, 5), implicit=True),
    "view_copy(dtype=)": lambda lib, T: lib.view_copy(T(X), dtype=lib.int32),
    "embedding_renorm_(input=)": lambda lib, T: lib.embedding_renorm_(input=T(X), indices=T(IDX[0]), max_norm=0.5,
                                                                      norm_type=2.0),
    # the defaults of torch's Python bindings: these torch.* losses reduce nothing unless told
    "kl_div default reduction": lambda lib, T: lib.kl_div(T(X), T(Y)),
    "hinge_embedding_loss default reduction": lambda lib, T: lib.hinge_embedding_loss(T(X), T(np.sign(Y - 0.5))),
    "cosine_embedding_loss default reduction": lambda lib, T: lib.cosine_embedding_loss(T(X), T(Y), T(SIGN)),
    "margin_ranking_loss default reduction": lambda lib, T: lib.margin_ranking_loss(T(X), T(Y), T(np.sign(X - Y))),
    "triplet_margin_loss default reduction": lambda lib, T: lib.triplet_margin_loss(T(X), T(Y), T(Y[::-1].copy())),
    "binary_cross_entropy_with_logits default reduction": lambda lib, T: lib.binary_cross_entropy_with_logits(
        T(X), T(Y)),
    # numpy integers and 0-dim integer tensors where an int is expected
    "max(dim=0-dim tensor)": lambda lib, T: lib.max(T(X), dim=lib.tensor(1)),
    "Tensor.min(dim=0-dim tensor, keepdim=)": lambda lib, T: T(X).min(dim=lib.tensor(0), keepdim=True),
    "max(x, y) positional": lambda lib, T: lib.max(T(X), T(Y)),
    "all(dim=0-dim tensor)": lambda lib, T: lib.all(T(X > 0.3), dim=lib.tensor(1)),
    "squeeze(dim=0-dim tensor)": lambda lib, T: lib.squeeze(T(X[:1]), dim=lib.tensor(0)),
    "narrow(dim=0-dim tensor)": lambda lib, T: lib.narrow(T(X), dim=lib.tensor(1), start=1, length=2),
    "select(dim=0-dim tensor)": lambda lib, T: lib.select(T(X), dim=lib.tensor(-1), index=1),
    "chunk(chunks=0-dim tensor)": lambda lib, T: lib.chunk(T(X), chunks=lib.tensor(2), dim=1),
    "split(0-dim tensor)": lambda lib, T: lib.split(T(X), lib.tensor(2), dim=1),
    "movedim(source=0-dim tensor)": lambda lib, T: lib.movedim(T(X), source=lib.tensor(0), destination=1),
    "index_fill(dim=np.int64)": lambda lib, T: lib.index_fill(T(X), np.int64(1), T(IDX[0, :2]), 2.0),
    "full(fill_value=0-dim int64)": lambda lib, T: lib.full((2, 3), fill_value=lib.tensor(4)),
    "full(fill_value=0-dim float64)": lambda lib, T: lib.full((2, 3), fill_value=lib.tensor(1.5,
                                                                                         dtype=lib.float64)),
    "full(fill_value=0-dim bool)": lambda lib, T: lib.full((2,), fill_value=lib.tensor(True)),
    "copysign(other=np.int64)": lambda lib, T: lib.copysign(T(X), np.int64(-2)),
    "xlogy(other=np.int64)": lambda lib, T: lib.xlogy(T(X), np.int64(3)),
    "Tensor.copysign_(np.int64)": lambda lib, T: T(X).copysign_(np.int64(-1)),
    "scatter(value=0-dim tensor)": lambda lib, T: lib.scatter(T(X), 1, T(IDX), value=lib.tensor(2)),
    "nonzero_static(size=0-dim tensor)": lambda lib, T: lib.nonzero_static(T(X > 0.5), size=lib.tensor(4)),
    "poisson_nll_loss(reduction=0-dim tensor)": lambda lib, T: lib.poisson_nll_loss(
        T(X), T(Y), True, False, 1e-8, lib.tensor(1)),
    "lp_pool1d(kernel_size=np.int64)": lambda lib, T: _f(lib).lp_pool1d(T(X[None]), 2.0, np.int64(2)),
    "max_pool1d(kernel_size=np.int64)": lambda lib, T: _f(lib).max_pool1d(T(X[None]), np.int64(2)),
    "conv2d(stride=np.int64, padding=0-dim tensor)": lambda lib, T: _f(lib).conv2d(
        T(IMG), T(W2), stride=np.int64(2), padding=lib.tensor(1), dilation=np.int64(1)),
    "conv_transpose1d(stride=np.int64)": lambda lib, T: _f(lib).conv_transpose1d(T(X[None]), T(W1), stride=np.int64(2)),
    "unfold(kernel_size=np.int64)": lambda lib, T: _f(lib).unfold(T(IMG), kernel_size=np.int64(2), stride=(2, 1)),
    "avg_pool2d(stride=np.int64)": lambda lib, T: _f(lib).avg_pool2d(T(IMG), 2, stride=np.int64(1)),
    "max_pool2d(kernel_size=0-dim tensor)": lambda lib, T: _f(lib).max_pool2d(T(IMG), lib.tensor(3), padding=(
        np.int64(1), 0)),
    "avg_pool1d(stride=0-dim tensor)": lambda lib, T: _f(lib).avg_pool1d(T(X[None]), 2, stride=lib.tensor(1)),
    "max_pool3d(stride=np.int64)": lambda lib, T: _f(lib).max_pool3d(T(IMG[None]), 2, stride=np.int64(1)),
    "avg_pool3d(kernel_size=np.int64)": lambda lib, T: _f(lib).avg_pool3d(T(IMG[None]), np.int64(2)),
    "one_hot(input=)": lambda lib, T: _f(lib).one_hot(input=T(IDX[0]), num_classes=4),
    # one-element lists for every spatial dim
    "max_pool2d one-element lists": lambda lib, T: _f(lib).max_pool2d(T(IMG), [3], stride=[2], padding=[1],
                                                                     dilation=[1]),
    "avg_pool2d one-element lists": lambda lib, T: _f(lib).avg_pool2d(T(IMG), kernel_size=[2], stride=[1]),
    "max_pool2d(dilation=[1]) 3-d input": lambda lib, T: lib.max_pool2d(T(IMG[0]), [3, 3], dilation=[1]),
}


def _engine_tensor(a):
    return engine.tensor(a)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _compare(ours, ref):
    ours, ref = _flat(ours), _flat(ref)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", CASES)
def test_signature_matches_torch(name):
    _compare(CASES[name](engine, _engine_tensor), CASES[name](torch, torch.tensor))


def test_ctc_loss_default_reduction_is_none():
    """torch.ctc_loss without a reduction returns one loss per batch element."""
    log_probs = np.log(RNG.dirichlet(np.ones(4), size=(6, 2)))
    targets = np.array([[1, 2, 3], [3, 1, 1]])

    def run(lib):
        return lib.ctc_loss(lib.tensor(log_probs), lib.tensor(targets), [6, 6], [3, 2])
    _compare(run(engine), run(torch))


def test_batch_norm_update_stats_returns_biased_variance():
    """(mean, biased var) comes back; the running variance moves towards the unbiased one."""
    x = RNG.uniform(size=(4, 3, 5))
    results = []
    for lib in (engine, torch):
        rm, rv = lib.zeros(3, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
        results.append((*lib.batch_norm_update_stats(lib.tensor(x), rm, rv, 0.2), rm, rv))
    _compare(*results)


def test_randint_high_by_keyword():
    """``randint(high=, size=)`` and ``randint_like(x, high=)`` draw from [0, high), as torch's."""
    for lib in (engine, torch):
        a = lib.randint(high=3, size=(50,))
        b = lib.randint_like(lib.zeros(2, 25), high=3)
        c = lib.randint(low=5, high=7, size=(20,))
        assert str(a.dtype).endswith("int64") and tuple(b.shape) == (2, 25) and str(b.dtype).endswith("float32")
        assert a.min().item() >= 0 and a.max().item() <= 2 and b.max().item() <= 2
        assert c.min().item() >= 5 and c.max().item() <= 6


def test_uniform_from_to_by_keyword():
    """``uniform_(**{'from': a}, to=b)``: torch's names for the bounds (``from`` is a Python keyword)."""
    for lib in (engine, torch):
        x = lib.zeros(200).uniform_(**{"from": 2.0}, to=3.0)
        assert 2.0 <= x.min().item() and x.max().item() < 3.0


def test_arange_needs_an_end():
    with pytest.raises(TypeError, match='missing 1 required positional arguments: "end"'):
        engine.arange()


@pytest.mark.parametrize("call", [lambda: engine.tensor_split(engine.zeros(4), 2, sections=2),
                                  lambda: engine.tensor_split(engine.zeros(4))])
def test_tensor_split_takes_one_of_its_names(call):
    with pytest.raises(TypeError, match="indices_or_sections"):
        call()


def test_keywords_on_cuda(cuda):
    """A sample of the keyword forms on the CUDA backend (emulated here)."""
    x = engine.tensor(X).cuda()
    assert x.swapaxes(axis0=0, axis1=1).device.type == "cuda"
    parts = engine.tensor_split(x, sections=2, dim=1)
    np.testing.assert_allclose(parts[1].cpu().numpy(), np.array_split(X, 2, axis=1)[1])
    values, indices = engine.max(x, dim=engine.tensor(1))
    np.testing.assert_allclose(values.cpu().numpy(), X.max(1))
    np.testing.assert_allclose(x.clamp_min_(min=0.5).cpu().numpy(), np.maximum(X, 0.5))


def test_dtype_and_sparse_helpers_take_torchs_keywords():
    assert engine.promote_types(type1=engine.int8, type2=engine.float16) is engine.float16
    assert engine.result_type(tensor=engine.ones(2), other=2) is engine.float32
    dense = engine.eye(2).to_sparse()
    assert engine.spmm(input=dense, mat2=engine.ones(2, 1)).tolist() == [[1.0], [1.0]]
    plain = engine.ones(2)
    assert engine.dequantize(plain) is plain
