"""``engine.nn.utils.parametrizations`` (orthogonal, weight_norm, spectral_norm) against torch's on the same weights
and seeds: state-dict keys and values, forward values, the gradients of every parameter, power-iteration buffers in
training and eval mode, old weight_norm checkpoints, and torch's error messages."""
import numpy as np
import pytest
import torch
from torch.nn.utils import parametrizations as TPs

import engine
from engine.nn.utils import parametrizations as EPs
from engine.nn.utils import parametrize as P

RTOL = 1e-10


def _copy_into(ours, theirs):
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours


def _linear_pair(out_features, in_features):
    theirs = torch.nn.Linear(in_features, out_features).double()
    return _copy_into(engine.nn.Linear(in_features, out_features).double(), theirs), theirs


def _same(ours, theirs, rtol=RTOL):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=rtol, atol=rtol)


def _check_state(ours, theirs, rtol=RTOL):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        _same(ours.state_dict()[key], value, rtol)


def _check_gradients(ours, theirs, x, rtol=RTOL):
    """Forward ``x`` through both, backward of a seeded weighted sum; compare outputs and every parameter's grad."""
    out_o, out_t = ours(engine.tensor(x)), theirs(torch.tensor(x))
    _same(out_o, out_t, rtol)
    w = np.random.default_rng(7).standard_normal(tuple(out_t.shape))
    (out_o * engine.tensor(w)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    params_t = dict(theirs.named_parameters())
    assert list(dict(ours.named_parameters())) == list(params_t)
    for name, p in ours.named_parameters():
        _same(p.grad, params_t[name].grad, rtol)


CASES = [("matrix_exp", (4, 4), True), ("matrix_exp", (5, 3), True), ("cayley", (4, 4), True),
         ("cayley", (3, 5), True), ("householder", (5, 3), True), ("householder", (5, 3), False),
         ("householder", (3, 5), False), ("householder", (4, 4), False), (None, (3, 5), True)]


@pytest.mark.parametrize("orthogonal_map,shape,trivialization", CASES)
def test_orthogonal_as_torch(orthogonal_map, shape, trivialization):
    ours, theirs = _linear_pair(*shape)
    torch.manual_seed(3)
    engine.manual_seed(3)
    EPs.orthogonal(ours, orthogonal_map=orthogonal_map, use_trivialization=trivialization)
    TPs.orthogonal(theirs, orthogonal_map=orthogonal_map, use_trivialization=trivialization)
    _check_state(ours, theirs)
    weight = ours.weight.detach().numpy()
    small = min(shape)
    gram = weight.T @ weight if shape[0] >= shape[1] else weight @ weight.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-12)
    _check_gradients(ours, theirs, np.random.default_rng(0).standard_normal((2, shape[1])))
    # assigning an orthogonal matrix is exact (and what torch stores)
    q = np.linalg.qr(np.random.default_rng(4).standard_normal((max(shape), small)))[0]
    q = q if shape[0] >= shape[1] else q.T
    if trivialization or orthogonal_map == "householder":
        ours.weight = engine.tensor(q)
        theirs.weight = torch.tensor(q)
        _check_state(ours, theirs)
        np.testing.assert_allclose(ours.weight.detach().numpy(), q, atol=1e-12)


def test_orthogonal_on_a_batch_of_float32_matrices():
    weight = np.random.default_rng(1).standard_normal((2, 4, 3)).astype(np.float32)
    ours, theirs = engine.nn.Module(), torch.nn.Module()
    ours.weight = engine.nn.Parameter(engine.tensor(weight))
    theirs.weight = torch.nn.Parameter(torch.tensor(weight))
    EPs.orthogonal(ours)
    TPs.orthogonal(theirs)
    _check_state(ours, theirs, rtol=1e-5)
    assert ours.weight.dtype == engine.float32
    _same(ours.weight, theirs.weight, rtol=1e-5)


def test_orthogonal_errors():
    ours, _ = _linear_pair(3, 3)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        EPs.orthogonal(ours, "nope")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."):
        EPs.orthogonal(ours, "bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                                         'Got: qr'):
        EPs.orthogonal(ours, orthogonal_map="qr")
    EPs.orthogonal(ours, orthogonal_map="cayley", use_trivialization=False)
    with pytest.raises(NotImplementedError, match="It is not possible to assign to the matrix exponential or the "
                                                  "Cayley parametrizations when use_trivialization=False."):
        ours.weight = engine.eye(3, dtype=engine.float64)
    with pytest.raises(ValueError, match=r"Expected a matrix or batch of matrices of shape engine.Size\(\[3, 3\]\). "
                                         r"Got a tensor of shape engine.Size\(\[2, 2\]\)."):
        ours.parametrizations.weight[0].right_inverse(engine.eye(2, dtype=engine.float64))


@pytest.mark.parametrize("dim", [0, 1, None, -2])
def test_weight_norm_as_torch(dim):
    theirs = torch.nn.Conv2d(3, 4, 3).double()
    ours = _copy_into(engine.nn.Conv2d(3, 4, 3).double(), theirs)
    EPs.weight_norm(ours, dim=dim)
    TPs.weight_norm(theirs, dim=dim)
    _check_state(ours, theirs)
    assert list(ours.state_dict())[1:] == ["parametrizations.weight.original0", "parametrizations.weight.original1"]
    _same(ours.weight, theirs.weight)
    _check_gradients(ours, theirs, np.random.default_rng(0).standard_normal((2, 3, 5, 6)))


def test_weight_norm_loads_a_hook_based_checkpoint():
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 4)).double()
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(theirs[0])
    state = {k: v.numpy() for k, v in theirs.state_dict().items()}
    assert "0.weight_g" in state
    ours = engine.nn.Sequential(EPs.weight_norm(engine.nn.Linear(3, 4).double()))
    ours.load_state_dict(state)
    _same(ours[0].weight, theirs[0].weight)
    _same(ours[0].parametrizations.weight.original0, theirs[0].weight_g)


@pytest.mark.parametrize("module,dim", [("linear", None), ("conv", None), ("conv_transpose", None), ("conv", 2)])
def test_spectral_norm_as_torch(module, dim):
    makers = {"linear": lambda lib: lib.nn.Linear(5, 3), "conv": lambda lib: lib.nn.Conv2d(2, 3, 3),
              "conv_transpose": lambda lib: lib.nn.ConvTranspose2d(2, 3, 3)}
    inputs = {"linear": (4, 5), "conv": (2, 2, 5, 6), "conv_transpose": (2, 2, 4, 5)}
    theirs = makers[module](torch).double()
    ours = _copy_into(makers[module](engine).double(), theirs)
    torch.manual_seed(5)
    engine.manual_seed(5)
    EPs.spectral_norm(ours, n_power_iterations=2, dim=dim)
    TPs.spectral_norm(theirs, n_power_iterations=2, dim=dim)
    assert list(ours.state_dict())[-2:] == ["parametrizations.weight.0._u", "parametrizations.weight.0._v"]
    _check_state(ours, theirs)
    x = np.random.default_rng(0).standard_normal(inputs[module])
    _check_gradients(ours, theirs, x)  # training: the power iteration advances the buffers
    _check_state(ours, theirs)
    u = ours.parametrizations.weight[0]._u
    ours.eval()
    theirs.eval()
    before = u.numpy().copy()
    _same(ours(engine.tensor(x)), theirs(torch.tensor(x)))
    np.testing.assert_array_equal(ours.parametrizations.weight[0]._u.numpy(), before)
    assert ours.parametrizations.weight[0]._u is u


def test_spectral_norm_of_a_vector_normalises_it():
    theirs = torch.nn.Linear(3, 4).double()
    ours = _copy_into(engine.nn.Linear(3, 4).double(), theirs)
    EPs.spectral_norm(ours, "bias")
    TPs.spectral_norm(theirs, "bias")
    _check_state(ours, theirs)
    _same(ours.bias, theirs.bias)


def test_spectral_norm_errors():
    ours, _ = _linear_pair(3, 4)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
        EPs.spectral_norm(ours, "nope")
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\] but got 2\)"):
        EPs.spectral_norm(ours, dim=2)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive, but got n_power_iterations=0"):
        EPs.spectral_norm(ours, n_power_iterations=0)
    assert not P.is_parametrized(ours)


def test_parametrizations_on_the_cuda_backend(cuda):
    """Orthogonal (Householder, registered on the GPU) stacked with spectral_norm (registered on the CPU, whose
    random start vectors are torch's, then moved)."""
    theirs = torch.nn.Linear(3, 5).double()
    ours = _copy_into(engine.nn.Linear(3, 5).double(), theirs).to("cuda")
    EPs.orthogonal(ours, use_trivialization=False)
    TPs.orthogonal(theirs, use_trivialization=False)
    ours.cpu()
    torch.manual_seed(2)
    engine.manual_seed(2)
    EPs.spectral_norm(ours, "weight")
    TPs.spectral_norm(theirs, "weight")
    ours.to("cuda")
    assert ours.weight.device.type == "cuda" and ours.parametrizations.weight[1]._u.device.type == "cuda"
    _same(ours.weight, theirs.weight)
    ours.weight.sum().backward()
    theirs.weight.sum().backward()
    _same(ours.parametrizations.weight.original.grad, theirs.parametrizations.weight.original.grad)
