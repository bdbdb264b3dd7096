"""nn modules against PyTorch's, from a differential fuzz: a seeded sample of layers built from random valid
arguments (repr, parameter/buffer names, shapes, dtypes and bit-equal initial values under the same seed, forward
in train and eval mode with the same weights), and the container, dtype-move and constructor-error cases where the
fuzz found us different from PyTorch (Sequential repetition and negative insert, ParameterDict's sorted order for a
plain dict and its ``|`` operators, ``Module.to`` a complex dtype, ``half()`` leaving complex tensors alone,
constructor messages)."""
import random
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import engine
import engine.nn as enn
import torch.nn as tnn
from op_check import assert_same_error

pytestmark = pytest.mark.slow


def as_engine(x):
    return engine.tensor(x.detach().numpy())


def close(ours, ref, tol=1e-5):
    assert str(ours.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)


def described(module):
    """Names, shapes, dtypes and requires_grad of parameters then buffers, and the state_dict keys."""
    def row(n, t):
        return n, tuple(t.shape), str(t.dtype).split(".")[-1], t.requires_grad
    return ([row(n, p) for n, p in module.named_parameters()], [row(n, b) for n, b in module.named_buffers()],
            list(module.state_dict()))


def _conv(r, d, transposed):
    groups = r.choice([1, 2])
    kw = {"stride": r.randint(1, 2), "groups": groups, "bias": r.choice([True, False])}
    if not transposed:
        kw["padding_mode"] = r.choice(["zeros", "reflect", "replicate", "circular"])
        kw["padding"] = r.randint(0, 1)
    return (f"{'ConvTranspose' if transposed else 'Conv'}{d}d", (2 * groups, 3 * groups, r.randint(1, 3)), kw,
            [(r.randint(1, 3), 2 * groups) + (5,) * d])


def _sample(seed):
    """One random (class name, args, kwargs, input shapes) from the families the fuzz swept."""
    r = random.Random(seed)
    d = r.randint(1, 3)
    return r.choice([
        lambda: _conv(r, d, False),
        lambda: _conv(r, d, True),
        lambda: (f"BatchNorm{d}d", (3,), {"momentum": r.choice([0.1, None]), "affine": r.choice([True, False])},
                 [(2, 3) + (3,) * d]),
        lambda: (f"InstanceNorm{d}d", (3,), {"affine": True, "track_running_stats": r.choice([True, False])},
                 [(2, 3) + (4,) * d]),
        lambda: ("Linear", (r.randint(1, 5), 3), {}, None),
        lambda: ("LSTM", (3, 4), {"num_layers": 2, "bidirectional": r.choice([True, False]), "proj_size": 2},
                 [(r.randint(1, 4), 2, 3)]),
        lambda: ("GRU", (3, 4), {"batch_first": True}, [(2, 3, 3)]),
        lambda: ("MultiheadAttention", (6, 2), {"add_bias_kv": r.choice([True, False]), "batch_first": True},
                 [(2, 3, 6), (2, 4, 6), (2, 4, 6)]),
        lambda: ("TransformerEncoderLayer", (4, 2), {"dim_feedforward": 5, "dropout": 0.0,
                                                     "norm_first": r.choice([True, False])}, [(3, 2, 4)]),
        lambda: ("GroupNorm", (2, 4), {"affine": r.choice([True, False])}, [(2, 4, 3)]),
        lambda: ("Bilinear", (2, 3, 4), {}, [(3, 2), (3, 3)]),
    ])()


@pytest.mark.parametrize("seed", range(12))
def test_random_layers_match_torch(seed):
    name, args, kwargs, shapes = _sample(seed)
    if shapes is None:
        shapes = [(2, args[0])]
    torch.manual_seed(seed)
    theirs = getattr(tnn, name)(*args, **kwargs)
    engine.manual_seed(seed)
    ours = getattr(enn, name)(*args, **kwargs)
    assert repr(ours).replace("engine", "torch") == repr(theirs)
    assert described(ours) == described(theirs)
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    g = np.random.default_rng(seed)
    inputs = [torch.from_numpy(g.standard_normal(s).astype(np.float32)) for s in shapes]
    for training in (True, False):
        ours.train(training), theirs.train(training)
        out, ref = ours(*[as_engine(x) for x in inputs]), theirs(*inputs)
        out, ref = (out[0], ref[0]) if isinstance(ref, tuple) else (out, ref)
        close(out, ref, 1e-4)
    for (_, b), (_, c) in zip(ours.named_buffers(), theirs.named_buffers()):
        close(b, c, 1e-5)


# ---- containers ---------------------------------------------------------------------------------------------
def layers(nn):
    return nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Sequential(nn.Tanh(), nn.Linear(3, 1)))


@pytest.mark.parametrize("op", [lambda s: s * 2, lambda s: 3 * s, lambda s: s.__imul__(2), lambda s: s * 1])
def test_sequential_repetition(op):
    ours, theirs = op(layers(enn)), op(layers(tnn))
    assert repr(ours).replace("engine", "torch") == repr(theirs)
    assert described(ours) == described(theirs)


@pytest.mark.parametrize("factor, error, message", [
    (0, ValueError, "Non-positive multiplication factor 0 for <class '{}.nn.modules.container.Sequential'>"),
    (-2, ValueError, "Non-positive multiplication factor -2 for <class '{}.nn.modules.container.Sequential'>"),
    (1.5, TypeError, "unsupported operand type(s) for *: <class '{}.nn.modules.container.Sequential'> and "
                     "<class 'float'>"),
])
def test_sequential_repetition_errors(factor, error, message):
    for lib, nn in (("torch", tnn), ("engine", enn)):
        with pytest.raises(error) as info:
            layers(nn) * factor
        assert str(info.value) == message.format(lib)


@pytest.mark.parametrize("index", [-3, -1, 0, 2, 3])
def test_sequential_insert_counts_negative_index_from_the_end(index):
    ours, theirs = layers(enn).insert(index, enn.Sigmoid()), layers(tnn).insert(index, tnn.Sigmoid())
    assert repr(ours).replace("engine", "torch") == repr(theirs)


def test_moduledict_update_from_a_moduledict():
    def run(nn):
        merged = nn.ModuleDict({"b": nn.ReLU()})
        merged.update(nn.ModuleDict({"z": nn.Tanh(), "c": nn.Linear(1, 2)}))
        return repr(merged).replace("engine", "torch"), described(merged)
    assert run(enn) == run(tnn)


@pytest.mark.parametrize("container", ["ModuleDict", "ParameterDict"])
@pytest.mark.parametrize("pairs", [[3], [("a", 1, 2)]])
def test_dict_update_bad_pairs(container, pairs):
    assert_same_error(lambda: getattr(enn, container)().update(pairs),
                      lambda: getattr(tnn, container)().update(pairs))


def test_buffer_assignment_message():
    with pytest.raises(TypeError, match=r"^cannot assign 'int' as buffer 'running_mean' \(engine\.nn\.Buffer, "
                                        r"engine\.Tensor or None expected\)$"):
        enn.BatchNorm1d(2).running_mean = 3


def test_moduledict_update_rejects_a_non_iterable():
    with pytest.raises(TypeError, match="^ModuleDict.update should be called with an iterable of key/value pairs, "
                                        "but got int$"):
        enn.ModuleDict().update(3)


def param_dict(nn, lib, kind):
    values = {"b": nn.Parameter(lib.zeros(2)), "a": lib.ones(3, dtype=lib.float64), "c": lib.ones(1)}
    return nn.ParameterDict(kind(values.items()) if kind is not dict else values)


@pytest.mark.parametrize("kind", [dict, OrderedDict, list])
def test_parameterdict_order(kind):
    """A plain dict is added in sorted key order; an OrderedDict or a list of pairs keeps its own."""
    ours, theirs = param_dict(enn, engine, kind), param_dict(tnn, torch, kind)
    assert list(ours) == list(theirs) == (["a", "b", "c"] if kind is dict else ["b", "a", "c"])
    assert described(ours) == described(theirs)
    assert repr(ours).replace("engine", "torch") == repr(theirs)
    assert ours.popitem()[0] == theirs.popitem()[0]


@pytest.mark.parametrize("op", [lambda p, q: p | q, lambda p, q: q.__ror__(p), lambda p, q: p.__ior__(q)])
def test_parameterdict_union(op):
    def run(nn, lib):
        first = param_dict(nn, lib, OrderedDict)
        second = nn.ParameterDict(OrderedDict([("z", nn.Parameter(lib.zeros(4))), ("a", lib.zeros(5))]))
        return op(first, second)
    ours, theirs = run(enn, engine), run(tnn, torch)
    assert described(ours) == described(theirs)


def test_parameterdict_non_string_key():
    with pytest.raises(TypeError, match=r"^Index given to ParameterDict cannot be used as a key as it is not a "
                                        r"string \(type is 'int'\)\. Open an issue on github if you need non-string "
                                        r"keys\.$"):
        enn.ParameterDict()[1] = engine.zeros(1)


# ---- dtype moves ------------------------------------------------------------------------------------------------
def norm_net(nn):
    return nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))


@pytest.mark.parametrize("moves", [
    ("complex64",), ("complex128", "half"), ("complex64", "double", "float64"), ("float64", "complex64"),
])
def test_module_to_complex_and_float_casts(moves):
    """``to`` a complex dtype converts floating and complex tensors; half()/float()/double() leave complex alone."""
    def run(nn, lib):
        net = norm_net(nn)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for move in moves:
                net = getattr(net, move)() if move in ("half", "double", "float") else net.to(getattr(lib, move))
        return described(net)
    assert run(enn, engine) == run(tnn, torch)


def test_module_to_complex_forward():
    engine.manual_seed(0)
    with pytest.warns(UserWarning, match="Complex modules are a new feature"):
        net = enn.Linear(3, 2).to(engine.complex64)
    x = engine.randn(4, 3, dtype=engine.complex64)
    ref = torch.nn.functional.linear(torch.from_numpy(x.numpy()), torch.from_numpy(net.weight.detach().numpy()),
                                     torch.from_numpy(net.bias.detach().numpy()))
    close(net(x), ref)


def test_module_to_integer_dtype_message():
    with pytest.raises(TypeError, match=r"^nn\.Module\.to only accepts floating point or complex dtypes, but got "
                                        r"desired dtype=engine\.int32$"):
        norm_net(enn).to(engine.int32)


# ---- constructor errors -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, args, kwargs", [
    ("Softmax", (), {"dim": "x"}),
    ("LogSoftmax", (), {"dim": 1.0}),
    ("Unflatten", (1, [2, "a"]), {}),
    ("Unflatten", (1, 6), {}),
    ("AdaptiveLogSoftmaxWithLoss", (8, 10, [5, 3]), {}),
    ("RNN", (3, 0), {}),
    ("GRU", (3, 4), {"num_layers": 0}),
    ("LSTM", (3.0, 4), {}),
    ("GRU", (3, 4.0), {}),
    ("RNN", (0, 4), {}),
    ("LSTM", (3, 4), {"bias": 1}),
    ("GRU", (3, 4), {"batch_first": None}),
    ("Linear", (3.5, 2), {}),
    ("Bilinear", (2, 3, 4.0), {}),
    ("PReLU", (2.0,), {}),
    ("Conv1d", (2, 3.0, 2), {}),
    ("Hardtanh", (2.0, 1.0), {}),
])
def test_constructor_errors_match_torch(name, args, kwargs):
    assert_same_error(lambda: getattr(enn, name)(*args, **kwargs), lambda: getattr(tnn, name)(*args, **kwargs))


def test_integral_sizes_are_accepted():
    assert enn.Linear(np.int64(3), 2).weight.shape == (2, 3)
    assert enn.LSTM(3, 4, bias=False).bias is False
    assert enn.PReLU((2, 3)).weight.shape == tnn.PReLU((2, 3)).weight.shape


@pytest.mark.parametrize("name, args, kwargs", [
    ("Conv3d", (4, 2, [2]), {}), ("ConvTranspose2d", (4, 2, [2]), {}), ("Conv2d", (4, 2, 3), {"padding": "same"}),
    ("Conv1d", (4, 2, 3), {"padding": "valid"}), ("ConvTranspose1d", (4, 2, 3), {"output_padding": 0, "dilation": 2}),
])
def test_conv_repr_compares_each_option_with_its_own_length(name, args, kwargs):
    assert repr(getattr(enn, name)(*args, **kwargs)) == repr(getattr(tnn, name)(*args, **kwargs))


@pytest.mark.parametrize("bias", [True, False, 0, 3])
def test_rnn_cell_repr_shows_any_non_true_bias(bias):
    assert repr(enn.GRUCell(3, 4, bias)) == repr(tnn.GRUCell(3, 4, bias))


def test_rnn_dropout_with_one_layer_warns():
    with pytest.warns(UserWarning, match="^dropout option adds dropout after all but last recurrent layer, so non-zero "
                                         "dropout expects num_layers greater than 1, but got dropout=0.5 and "
                                         "num_layers=1$"):
        enn.GRU(3, 4, dropout=0.5)


def test_softmin_accepts_any_dim_like_torch():
    assert repr(enn.Softmin(dim="x")) == repr(tnn.Softmin(dim="x"))


# ---- forward argument checks ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("x_shape, h_shape", [
    ((2, 2), None),            # input_size 2, expected 3
    ((2, 3), (3, 4)),          # batch sizes differ
    ((2, 3), (2, 5)),          # hidden size 5, expected 4
    ((3,), (2, 4)),            # an unbatched input with a batched state
    ((2, 3), (1, 2, 4)),       # a 3-D state
])
def test_rnn_cell_shape_errors_match_torch(cell, x_shape, h_shape):
    """Mismatched states raise PyTorch's error instead of broadcasting into a wrong-sized result."""
    def call(nn, lib):
        module = getattr(nn, cell)(3, 4)
        x = lib.zeros(*x_shape)
        if h_shape is None:
            return module(x)
        h = lib.zeros(*h_shape)
        return module(x, (h, lib.zeros(*h_shape)) if cell == "LSTMCell" else h)
    assert_same_error(lambda: call(enn, engine), lambda: call(tnn, torch))


def test_lstm_cell_second_state_checked():
    with pytest.raises(RuntimeError, match="^hidden1 has inconsistent hidden_size: got 5, expected 4$"):
        enn.LSTMCell(3, 4)(engine.zeros(2, 3), (engine.zeros(2, 4), engine.zeros(2, 5)))


def test_rnn_input_rank_message():
    with pytest.raises(ValueError, match="^GRU: Expected input to be 2D or 3D, got 4D instead$"):
        enn.GRU(3, 4)(engine.zeros(1, 2, 3, 3))


@pytest.mark.parametrize("size", [[12, 12], (2, 4, 12, 12)])
def test_conv_transpose_output_size_error_shows_the_size_as_given(size):
    with pytest.raises(ValueError) as theirs:
        tnn.ConvTranspose2d(3, 4, 3, stride=2)(torch.zeros(2, 3, 4, 4), output_size=size)
    with pytest.raises(ValueError) as ours:
        enn.ConvTranspose2d(3, 4, 3, stride=2)(engine.zeros(2, 3, 4, 4), output_size=size)
    assert str(ours.value).replace("engine", "torch") == str(theirs.value)


def test_complex_moves_and_cell_checks_on_cuda(cuda):
    """The dtype moves and the cell checks are device-independent: the same on the CUDA backend."""
    net = norm_net(enn).to("cuda")
    with pytest.warns(UserWarning, match="Complex modules"):
        net.to(engine.complex64)
    net.half()
    assert {p.dtype for p in net.parameters()} == {engine.complex64} and net[0].weight.device.type == "cuda"
    assert net[1].num_batches_tracked.dtype == engine.int64
    cell = enn.GRUCell(3, 4).to("cuda")
    assert cell(engine.zeros(2, 3, device="cuda")).shape == (2, 4)
    with pytest.raises(RuntimeError, match="^Input batch size 2 doesn't match hidden0 batch size 3$"):
        cell(engine.zeros(2, 3, device="cuda"), engine.zeros(3, 4, device="cuda"))
