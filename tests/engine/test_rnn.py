"""RNN, LSTM and GRU (and their cells) against torch: the same initial parameters from the same seed, then
outputs, final states and every gradient on odd sizes, in every layout (layers, directions, batch-first,
unbatched, projections, no bias), with dropout between layers on the same random stream, and on the GPU."""
import numpy as np
import pytest
import torch
from op_check import assert_close

import engine

LAYERS = {
    "lstm": lambda L: L.nn.LSTM(5, 7),
    "lstm 2 layers, both ways, batch first": lambda L: L.nn.LSTM(5, 7, num_layers=2, bidirectional=True,
                                                                 batch_first=True),
    "lstm projected": lambda L: L.nn.LSTM(5, 7, num_layers=2, proj_size=3),
    "gru 2 layers, both ways": lambda L: L.nn.GRU(5, 7, num_layers=2, bidirectional=True),
    "gru without bias": lambda L: L.nn.GRU(5, 7, bias=False),
    "rnn relu 2 layers": lambda L: L.nn.RNN(5, 7, num_layers=2, nonlinearity="relu"),
    "rnn tanh both ways, batch first": lambda L: L.nn.RNN(5, 7, batch_first=True, bidirectional=True),
    "lstm with dropout (training)": lambda L: L.nn.LSTM(5, 7, num_layers=3, dropout=0.4),
}


def _pair(make):
    torch.manual_seed(0)
    theirs = make(torch)
    engine.manual_seed(0)
    ours = make(engine)
    assert repr(ours) == repr(theirs)
    for (name, p), (their_name, q) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert name == their_name and np.array_equal(p.numpy(), q.numpy()), name
    return ours.double(), theirs.double()


def _run(ours, theirs, x, hx=None, seed=1):
    """Both modules on x (and initial states); outputs, states and all gradients compared."""
    rng = np.random.default_rng(seed)
    results = []
    for lib, module in ((torch, theirs), (engine, ours)):
        lib.manual_seed(seed)  # dropout masks from the same stream
        xi = lib.from_numpy(x.copy()).requires_grad_()
        states = None if hx is None else tuple(lib.from_numpy(h.copy()).requires_grad_() for h in hx)
        out, last = module(xi, states if states is None or len(states) > 1 else states[0])
        last = last if isinstance(last, tuple) else (last,)
        if not results:
            weights = [rng.standard_normal(tuple(t.shape)) for t in (out, *last)]
        loss = sum((t * lib.from_numpy(w)).sum() for t, w in zip((out, *last), weights))
        loss.backward()
        grads = [xi.grad.numpy()] + ([] if states is None else [s.grad.numpy() for s in states])
        params = {n: p.grad.numpy() for n, p in module.named_parameters()}
        results.append(([t.detach().numpy() for t in (out, *last)], grads, params))
    (t_out, t_grads, t_params), (o_out, o_grads, o_params) = results
    for i, (o, t) in enumerate(zip(o_out, t_out)):
        assert_close(o, t, 1e-10, f"output {i}")
    for i, (o, t) in enumerate(zip(o_grads, t_grads)):
        assert_close(o, t, 1e-10, f"input gradient {i}")
    for name, t in t_params.items():
        assert_close(o_params[name], t, 1e-10, f"gradient of {name}")


@pytest.mark.parametrize("name", LAYERS)
def test_recurrent_layers_match_torch(name):
    ours, theirs = _pair(LAYERS[name])
    if "dropout" in name:
        ours.train(), theirs.train()
    batch_first = getattr(ours, "batch_first", False)
    x = np.random.default_rng(0).standard_normal((3, 6, 5) if batch_first else (6, 3, 5))
    _run(ours, theirs, x)
    _run(ours, theirs, x[:, 0] if batch_first else x[:, 0], seed=2)  # unbatched: (T, H_in)
    directions = 2 if ours.bidirectional else 1
    count = ours.num_layers * directions
    h0 = np.random.default_rng(3).standard_normal((count, 3, ours.proj_size or 7))
    states = (h0, np.random.default_rng(4).standard_normal((count, 3, 7))) if ours.mode == "LSTM" else (h0,)
    _run(ours, theirs, x, states, seed=5)


@pytest.mark.parametrize("cell", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(cell):
    extra = {"nonlinearity": "relu"} if cell == "RNNCell" else {}
    torch.manual_seed(0)
    theirs = getattr(torch.nn, cell)(5, 4, **extra).double()
    engine.manual_seed(0)
    ours = getattr(engine.nn, cell)(5, 4, **extra).double()
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(0)
    x, h = rng.standard_normal((3, 5)), rng.standard_normal((3, 4))
    for inputs in ((x,), (x, (h, h * 0.5) if cell == "LSTMCell" else h), (x[0],)):
        outs = []
        for lib, module in ((torch, theirs), (engine, ours)):
            args = [lib.from_numpy(inputs[0])]
            if len(inputs) > 1:
                state = inputs[1]
                is_pair = isinstance(state, tuple)
                args.append(tuple(lib.from_numpy(s) for s in state) if is_pair else lib.from_numpy(state))
            out = module(*args)
            outs.append([o.detach().numpy() for o in (out if isinstance(out, tuple) else (out,))])
        for o, t in zip(outs[1], outs[0]):
            assert_close(o, t, 1e-10)


def test_argument_errors_as_torch():
    for call in (lambda L: L.nn.LSTM(4, 3, proj_size=3), lambda L: L.nn.GRU(4, 3, proj_size=1),
                 lambda L: L.nn.RNN(4, 3, nonlinearity="sigmoid")):
        with pytest.raises(ValueError) as theirs:
            call(torch)
        with pytest.raises(ValueError, match=str(theirs.value).split(".")[0]):
            call(engine)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 4, got 5"):
        engine.nn.LSTM(4, 3)(engine.zeros(2, 1, 5))


def test_on_the_gpu(cuda):
    ours = engine.nn.LSTM(5, 7, num_layers=2, bidirectional=True).cuda()
    cpu = engine.nn.LSTM(5, 7, num_layers=2, bidirectional=True)
    cpu.load_state_dict({k: v.cpu().numpy() for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((6, 3, 5)).astype(np.float32)
    out, (h, c) = ours(engine.from_numpy(x).cuda())
    expected, (h_cpu, c_cpu) = cpu(engine.from_numpy(x))
    assert out.device.type == "cuda"
    assert_close(out.detach().cpu().numpy(), expected.detach().numpy(), 1e-5)
    assert_close(c.detach().cpu().numpy(), c_cpu.detach().numpy(), 1e-5)
