"""The top-level functional RNNs with aten's flat parameters (``lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``,
padded and packed) and the cells, against torch: outputs, last states and the gradient of every input."""
import numpy as np
import pytest
import torch

import engine
from engine.ops import functional_rnn as R
from op_check import check_op

RNG = np.random.default_rng(0)
GATES = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


def _r(*shape):
    return (RNG.standard_normal(shape) * 0.5).astype(np.float32)


def _params(mode, input_size, hidden, layers, directions, bias, proj=0):
    gates, out = GATES[mode] * hidden, proj or hidden
    params = []
    for layer in range(layers):
        for _ in range(directions):
            params += [_r(gates, input_size if layer == 0 else out * directions), _r(gates, out)]
            params += [_r(gates), _r(gates)] if bias else []
            params += [_r(proj, hidden)] if proj else []
    return params


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("bidirectional, batch_first, bias", [(False, False, True), (True, True, False)])
def test_padded(mode, bidirectional, batch_first, bias):
    layers, directions, hidden = 2, 1 + bidirectional, 5
    x = _r(3, 4, 3) if batch_first else _r(4, 3, 3)
    states = [_r(layers * directions, 3, hidden)] * (2 if mode == "lstm" else 1)
    params = _params(mode, 3, hidden, layers, directions, bias)
    n = len(states)

    def call(module):
        def run(x, *rest):
            hx = list(rest[:n]) if mode == "lstm" else rest[0]
            return getattr(module, mode)(x, hx, list(rest[n:]), bias, layers, 0.0, False, bidirectional,
                                         batch_first)
        return run
    check_op(call(R), call(torch), [x, *states, *params], rtol=1e-5, grad_rtol=1e-4)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_lstm_projected():
    hidden, proj = 5, 3
    params = _params("lstm", 4, hidden, 1, 1, True, proj)
    check_op(lambda x, h, c, *p: R.lstm(x, [h, c], list(p), True, 1, 0.0, False, False, False),
             lambda x, h, c, *p: torch.lstm(x, [h, c], list(p), True, 1, 0.0, False, False, False),
             [_r(6, 2, 4), _r(1, 2, proj), _r(1, 2, hidden), *params], rtol=1e-5, grad_rtol=1e-4)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_packed(mode):
    batch_sizes = np.array([3, 3, 2, 1], np.int64)
    data = _r(int(batch_sizes.sum()), 4)
    states = [_r(2, 3, 5)] * (2 if mode == "lstm" else 1)
    params = _params(mode, 4, 5, 1, 2, True)
    n = len(states)

    def call(module, tensor):
        def run(data, *rest):
            hx = list(rest[:n]) if mode == "lstm" else rest[0]
            return getattr(module, mode)(data, tensor(batch_sizes), hx, list(rest[n:]), True, 1, 0.0, False, True)
        return run
    check_op(call(R, engine.from_numpy), call(torch, torch.from_numpy), [data, *states, *params], rtol=1e-5,
             grad_rtol=1e-4)


def test_wrong_parameter_count():
    with pytest.raises(RuntimeError, match="got an incorrect number of RNN parameters"):
        R.gru(engine.randn(5, 2, 3), engine.randn(1, 2, 4), [engine.randn(12, 3)], False, 1, 0.0, False, False,
              False)


@pytest.mark.parametrize("cell", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells(cell, bias):
    gates = GATES[cell[:-5]] * 5
    weights = [_r(gates, 3), _r(gates, 5)] + ([_r(gates), _r(gates)] if bias else [])
    states = [_r(4, 5)] * (2 if cell == "lstm_cell" else 1)
    n = len(states)

    def call(module):
        def run(x, *rest):
            hx = tuple(rest[:n]) if cell == "lstm_cell" else rest[0]
            return getattr(module, cell)(x, hx, *rest[n:])
        return run
    check_op(call(R), call(torch), [_r(4, 3), *states, *weights], rtol=1e-5, grad_rtol=1e-4)


def test_cell_input_size_error():
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 3 expected 5"):
        R.lstm_cell(engine.randn(2, 3), (engine.randn(2, 4), engine.randn(2, 4)), engine.randn(16, 5),
                    engine.randn(16, 4))
