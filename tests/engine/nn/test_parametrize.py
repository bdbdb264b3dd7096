"""``engine.nn.utils.parametrize`` against ``torch.nn.utils.parametrize``: the generated class and its property,
state-dict keys, forward values and gradients on the originals, stacking, ``right_inverse`` (one tensor or
several), removal, caching, transfer, and torch's error messages."""
import copy
import pickle

import numpy as np
import pytest
import torch

import engine
import engine.nn.utils.parametrize as P
import torch.nn.utils.parametrize as TP

RTOL = 1e-12


def _pair(out_features=5, in_features=3, bias=True):
    """A float64 torch Linear and an engine Linear holding the same values."""
    theirs = torch.nn.Linear(in_features, out_features, bias=bias).double()
    ours = engine.nn.Linear(in_features, out_features, bias=bias).double()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _same(ours, theirs, rtol=RTOL):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=rtol)


def _check_forward_and_grads(ours, theirs, in_features=3, batch=4):
    """Forward on the same input, backward of a seeded weighted sum, then every parameter's gradient by name."""
    x = np.random.default_rng(0).standard_normal((batch, in_features))
    w = np.random.default_rng(1).standard_normal((batch, ours.out_features))
    out_o = ours(engine.tensor(x))
    out_t = theirs(torch.tensor(x))
    _same(out_o, out_t)
    (out_o * engine.tensor(w)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    names_o = [n for n, _ in ours.named_parameters()]
    names_t = [n for n, _ in theirs.named_parameters()]
    assert names_o == names_t
    for (name, p_o), (_, p_t) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert p_o.grad is not None, name
        _same(p_o.grad, p_t.grad)


class Symmetric:
    """Builds the same parametrization for both libraries: ``X.triu() + X.triu(1).mT``."""

    @staticmethod
    def make(lib):
        class _Symmetric(lib.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).mT

            def right_inverse(self, A):
                return A.triu()
        return _Symmetric()


def _scale(lib, factor):
    class _Scale(lib.nn.Module):
        def forward(self, X):
            return X * factor

        def right_inverse(self, A):
            return A / factor
    return _Scale()


def _split(lib):
    """A parametrization of two tensors: ``right_inverse`` returns (A / 2, A / 2), forward adds them."""
    class _Split(lib.nn.Module):
        def forward(self, X, Y):
            return X + Y

        def right_inverse(self, A):
            return A / 2, A / 2
    return _Split()


def _no_inverse(lib):
    class _Double(lib.nn.Module):
        def forward(self, X):
            return 2 * X
    return _Double()


def test_register_changes_the_class_and_the_state_dict_keys_as_torch():
    ours, theirs = _pair(4, 4)
    weight = ours.weight
    P.register_parametrization(ours, "weight", Symmetric.make(engine))
    TP.register_parametrization(theirs, "weight", Symmetric.make(torch))
    assert type(ours).__name__ == type(theirs).__name__ == "ParametrizedLinear"
    assert isinstance(ours, engine.nn.Linear)
    assert P.type_before_parametrizations(ours) is engine.nn.Linear
    assert P.type_before_parametrizations(engine.nn.ReLU()) is engine.nn.ReLU
    assert P.is_parametrized(ours) and P.is_parametrized(ours, "weight") and not P.is_parametrized(ours, "bias")
    assert not P.is_parametrized(engine.nn.Linear(2, 2))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert ours.parametrizations.weight.original is weight  # the same Parameter, so optimizers keep working
    assert isinstance(ours.parametrizations.weight, P.ParametrizationList)
    for key, value in theirs.state_dict().items():
        _same(ours.state_dict()[key], value)
    _same(ours.weight, theirs.weight)
    _check_forward_and_grads(ours, theirs, in_features=4)
    assert "weight" not in ours._parameters
    assert repr(ours) == repr(theirs)


def test_stacked_parametrizations_and_assignment_run_as_torch():
    ours, theirs = _pair(4, 4)
    for module, lib, reg in ((ours, engine, P), (theirs, torch, TP)):
        reg.register_parametrization(module, "weight", Symmetric.make(lib))
        reg.register_parametrization(module, "weight", _scale(lib, 3.0))
    assert len(ours.parametrizations.weight) == 2
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _same(ours.weight, theirs.weight)
    _check_forward_and_grads(ours, theirs, in_features=4)
    value = np.random.default_rng(2).standard_normal((4, 4))
    value = value + value.T
    ours.weight = engine.tensor(value)
    theirs.weight = torch.tensor(value)
    _same(ours.parametrizations.weight.original, theirs.parametrizations.weight.original)
    _same(ours.weight, theirs.weight)
    np.testing.assert_allclose(ours.weight.detach().numpy(), value, rtol=1e-12)


def test_a_right_inverse_of_several_tensors_registers_original0_and_original1():
    ours, theirs = _pair(5, 3)
    original = ours.weight
    P.register_parametrization(ours, "weight", _split(engine))
    TP.register_parametrization(theirs, "weight", _split(torch))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert ours.parametrizations.weight.ntensors == 2 and not ours.parametrizations.weight.is_tensor
    assert ours.parametrizations.weight.original0.requires_grad
    assert isinstance(ours.parametrizations.weight.original1, engine.nn.Parameter)
    _same(ours.weight, original)
    _check_forward_and_grads(ours, theirs)
    ours.weight = engine.ones(5, 3, dtype=engine.float64)
    np.testing.assert_array_equal(ours.parametrizations.weight.original0.detach().numpy(), 0.5)


def test_a_buffer_is_parametrized_into_a_buffer():
    ours = engine.nn.BatchNorm1d(3)
    P.register_parametrization(ours, "running_var", _scale(engine, 2.0))
    assert "parametrizations.running_var.original" in dict(ours.named_buffers())
    assert not any("running_var" in n for n, _ in ours.named_parameters())
    np.testing.assert_array_equal(ours.running_var.numpy(), 1.0)  # 0.5 stored, times 2


def test_unsafe_allows_a_change_of_shape():
    class Row(engine.nn.Module):
        def forward(self, X):
            return X[:1]
    ours, _ = _pair(3, 4)
    with pytest.raises(ValueError, match="may not change the shape of the tensor, unless `unsafe` flag"):
        P.register_parametrization(ours, "weight", Row())
    assert not P.is_parametrized(ours) and type(ours) is engine.nn.Linear
    P.register_parametrization(ours, "weight", Row(), unsafe=True)
    assert tuple(ours.weight.shape) == (1, 4)
    assert ours.parametrizations.weight.unsafe


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations_restores_the_class_and_a_plain_parameter(leave):
    ours, theirs = _pair(4, 4)
    original = ours.weight
    for module, lib, reg in ((ours, engine, P), (theirs, torch, TP)):
        reg.register_parametrization(module, "weight", _scale(lib, 2.0))
        reg.register_parametrization(module, "bias", _scale(lib, 2.0))
    P.remove_parametrizations(ours, "weight", leave_parametrized=leave)
    TP.remove_parametrizations(theirs, "weight", leave_parametrized=leave)
    assert type(ours).__name__ == "ParametrizedLinear" and ours.weight is original
    assert list(ours.state_dict()) == list(theirs.state_dict())
    _same(ours.weight, theirs.weight)
    P.remove_parametrizations(ours, "bias", leave_parametrized=leave)
    TP.remove_parametrizations(theirs, "bias", leave_parametrized=leave)
    assert type(ours) is engine.nn.Linear and not hasattr(ours, "parametrizations")
    assert not hasattr(engine.nn.Linear, "weight")
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight", "bias"]
    _same(ours.bias, theirs.bias)


def test_removing_a_parametrization_of_several_tensors():
    ours, theirs = _pair(4, 4)
    P.register_parametrization(ours, "weight", _split(engine))
    TP.register_parametrization(theirs, "weight", _split(torch))
    with pytest.raises(ValueError, match=r"Cannot leave unparametrized \(`leave_parametrized=False`\)"):
        P.remove_parametrizations(ours, "weight", leave_parametrized=False)
    P.remove_parametrizations(ours, "weight")
    TP.remove_parametrizations(theirs, "weight")
    assert isinstance(ours.weight, engine.nn.Parameter) and ours.weight.requires_grad
    _same(ours.weight, theirs.weight)


def test_cached_computes_each_parametrized_tensor_once():
    calls = []

    class Counted(engine.nn.Module):
        def forward(self, X):
            calls.append(1)
            return X + 1
    ours, _ = _pair()
    P.register_parametrization(ours, "weight", Counted())
    calls.clear()
    with P.cached():
        first = ours.weight
        with P.cached():
            assert ours.weight is first
        assert ours.weight is first
    assert len(calls) == 1
    assert ours.weight is not first and len(calls) == 2


def test_transfer_parametrizations_and_params_shares_the_originals():
    source, theirs_source = _pair(4, 4)
    target, theirs_target = engine.nn.Linear(4, 4).double(), torch.nn.Linear(4, 4).double()
    P.register_parametrization(source, "weight", Symmetric.make(engine))
    TP.register_parametrization(theirs_source, "weight", Symmetric.make(torch))
    assert P.transfer_parametrizations_and_params(source, target) is target
    TP.transfer_parametrizations_and_params(theirs_source, theirs_target)
    assert target.parametrizations.weight.original is source.parametrizations.weight.original
    assert list(target.state_dict()) == list(theirs_target.state_dict())
    _same(target.weight, theirs_target.weight)
    # a tensor the target lacks is created; the several-originals case shares each one
    bare = engine.nn.Module()
    split_source, _ = _pair(3, 3)
    P.register_parametrization(split_source, "weight", _split(engine))
    P.transfer_parametrizations_and_params(split_source, bare, "weight")
    assert bare.parametrizations.weight.original1 is split_source.parametrizations.weight.original1
    _same(bare.weight, split_source.weight)


def test_deepcopy_works_and_pickle_is_refused():
    ours, _ = _pair()
    P.register_parametrization(ours, "weight", _scale(engine, 2.0))
    replica = copy.deepcopy(ours)
    assert type(replica) is type(ours)
    assert replica.parametrizations.weight.original is not ours.parametrizations.weight.original
    _same(replica.weight, ours.weight)
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only supported through"):
        pickle.dumps(ours)


def test_to_moves_the_originals_and_train_reaches_the_parametrizations():
    ours, _ = _pair()
    P.register_parametrization(ours, "weight", _scale(engine, 2.0))
    ours.float().eval()
    assert ours.weight.dtype == engine.float32 and not ours.parametrizations.weight[0].training


def test_a_parametrization_without_right_inverse():
    ours, theirs = _pair()
    P.register_parametrization(ours, "weight", _no_inverse(engine))
    TP.register_parametrization(theirs, "weight", _no_inverse(torch))
    _same(ours.weight, theirs.weight)
    with pytest.raises(RuntimeError, match="parametrization _Double does not implement right_inverse."):
        ours.weight = engine.zeros(5, 3, dtype=engine.float64)


def test_errors():
    ours, _ = _pair()
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with "
                                         "name 'nope'"):
        P.register_parametrization(ours, "nope", _scale(engine, 2.0))
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(ours, "weight")
    with pytest.raises(ValueError, match="ParametrizationList requires one or more modules."):
        P.ParametrizationList([], ours.weight)

    class ToFloat(engine.nn.Module):
        def forward(self, X):
            return X.float()
    with pytest.raises(ValueError, match="may not change the dtype of the tensor, unless `unsafe` flag"):
        P.register_parametrization(ours, "weight", ToFloat())

    class BadInverse(engine.nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, A):
            return 3
    with pytest.raises(ValueError, match=r"'right_inverse' must return a Tensor or a Sequence of tensors \(list, "
                                         r"tuple...\). Got int"):
        P.register_parametrization(ours, "weight", BadInverse())
    with pytest.raises(ValueError, match="Got element 0 of the sequence with type int"):
        P.register_parametrization(ours, "weight", _returning(lambda A: [1, A]))
    P.register_parametrization(ours, "weight", _scale(engine, 2.0))
    with pytest.raises(ValueError, match=r"A parametrization must return a tensor. Got int."):
        P.register_parametrization(ours, "weight", _forwarding(lambda X: 1))
    with pytest.raises(ValueError, match=r"module.weight.shape: engine.Size\(\[5, 3\]\)\n"
                                         r"parametrization\(module.weight\).shape"):
        P.register_parametrization(ours, "weight", _forwarding(lambda X: X[:1]))
    with pytest.raises(ValueError, match="parametrization.right_inverse must return a tensor. Got: int"):
        P.register_parametrization(ours, "weight", _returning(lambda A: 1))
    with pytest.raises(ValueError, match="The tensor returned by parametrization.right_inverse must have the same "
                                         "shape as module.weight"):
        P.register_parametrization(ours, "weight", _returning(lambda A: A[:1]))
    with pytest.raises(ValueError, match="The tensor returned by parametrization.right_inverse must have the same "
                                         "dtype as module.weight"):
        P.register_parametrization(ours, "weight", _returning(lambda A: A.float()))
    with pytest.raises(KeyError, match="attribute 'weight' already exists"):
        ours.weight = engine.nn.Parameter(engine.zeros(5, 3))


def test_right_inverse_errors_on_assignment():
    ours, _ = _pair()
    P.register_parametrization(ours, "weight", _returning(lambda A: A), unsafe=True)
    ours.parametrizations.weight[0].inverse = lambda A: A.float()
    with pytest.raises(ValueError, match="The tensor returned by `right_inverse` has dtype engine.float32 while "
                                         "`original` has dtype engine.float64"):
        ours.weight = engine.zeros(5, 3, dtype=engine.float64)
    ours.parametrizations.weight[0].inverse = lambda A: 2
    with pytest.raises(ValueError, match="`right_inverse` should return a tensor. Got int"):
        ours.weight = engine.zeros(5, 3, dtype=engine.float64)
    split, _ = _pair()
    P.register_parametrization(split, "weight", _split(engine))
    split.parametrizations.weight[0].right_inverse = lambda A: A
    with pytest.raises(ValueError, match="'right_inverse' must return a sequence of tensors. Got Tensor."):
        split.weight = engine.zeros(5, 3, dtype=engine.float64)
    split.parametrizations.weight[0].right_inverse = lambda A: (A,)
    with pytest.raises(ValueError, match="must return a sequence of tensors of length 2. Got a sequence of length 1."):
        split.weight = engine.zeros(5, 3, dtype=engine.float64)
    split.parametrizations.weight[0].right_inverse = lambda A: (A, A.float())
    with pytest.raises(ValueError, match="Tensor 1 returned by `right_inverse` has dtype engine.float32 while "
                                         "`original1` has dtype engine.float64"):
        split.weight = engine.zeros(5, 3, dtype=engine.float64)


def _returning(inverse):
    """An identity parametrization whose ``right_inverse`` is ``inverse`` (changeable through ``.inverse``)."""
    class _Custom(engine.nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, A):
            return self.inverse(A)
    module = _Custom()
    module.inverse = inverse
    return module


def _forwarding(forward):
    class _Custom(engine.nn.Module):
        def forward(self, X):
            return forward(X)
    return _Custom()


def test_on_the_cuda_backend(cuda):
    ours, theirs = _pair(4, 4)
    ours.to("cuda")
    P.register_parametrization(ours, "weight", Symmetric.make(engine))
    TP.register_parametrization(theirs, "weight", Symmetric.make(torch))
    assert ours.weight.device.type == "cuda"
    np.testing.assert_allclose(ours.weight.detach().cpu().numpy(), theirs.weight.detach().numpy(), rtol=RTOL)
    ours.weight.sum().backward()
    theirs.weight.sum().backward()
    np.testing.assert_allclose(ours.parametrizations.weight.original.grad.cpu().numpy(),
                               theirs.parametrizations.weight.original.grad.numpy(), rtol=RTOL)
