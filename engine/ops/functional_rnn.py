"""The recurrent ops torch exposes at the top level with aten's flat-parameter signatures: ``lstm``, ``gru``,
``rnn_tanh`` and ``rnn_relu`` (a padded input, or a packed one as ``data`` and ``batch_sizes``), and the
single steps ``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell`` and ``rnn_relu_cell``.

They run the math of ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` (``engine/nn/modules/rnn.py``): the layer stack is
``RNNBase``'s, reading its weights from the flat list ``params`` (per layer and direction: w_ih, w_hh, then
b_ih, b_hh with ``has_biases``, then w_hr when an LSTM's hidden state is projected), and the cells are its step
functions.
"""
from ..nn import functional as F
from ..nn.modules.module import Module
from ..nn.modules.rnn import RNNBase, _gru_step, _lstm_step, _rnn_step


class _FlatParamsRNN(RNNBase):
    """``RNNBase``'s layer stack over weights given as one flat list instead of registered parameters."""

    def __init__(self, mode, params, has_biases, num_layers, dropout, train, bidirectional, projected):
        Module.__init__(self)
        self.mode, self.num_layers, self.dropout = mode, num_layers, float(dropout)
        self.bidirectional, self.training = bidirectional, train
        self.flat = list(params)
        self.per_cell = 2 + 2 * bool(has_biases) + bool(projected)
        self.has_biases, self.projected = has_biases, projected
        directions = 2 if bidirectional else 1
        if len(self.flat) != self.per_cell * num_layers * directions:
            raise RuntimeError("got an incorrect number of RNN parameters")

    def _weights(self, layer, direction):
        start = (layer * (2 if self.bidirectional else 1) + direction) * self.per_cell
        cell = self.flat[start:start + self.per_cell]
        w_ih, w_hh = cell[:2]
        b_ih, b_hh = cell[2:4] if self.has_biases else (None, None)
        return w_ih, w_hh, b_ih, b_hh, cell[-1] if self.projected else None

    def run(self, input, batch_sizes, states, batch_first):
        """(output, last states): over a padded (T, N, H) input (``batch_first``: (N, T, H)), or over packed
        rows when ``batch_sizes`` is given."""
        if batch_sizes is not None:
            return self._layers(input, batch_sizes.tolist(), states)
        padded = input.transpose(0, 1) if batch_first else input
        if padded.dim() != 3:
            raise RuntimeError(f"{self.mode.lower()}: expected a 3-d input, got {input.dim()} dims")
        steps, batch = padded.shape[:2]
        x, last = self._layers(padded.reshape(steps * batch, padded.shape[2]), [batch] * steps, states)
        output = x.reshape(steps, batch, x.shape[-1])
        return (output.transpose(0, 1) if batch_first else output), last


def _split_overload(args):
    """(input, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    from either aten overload: (input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) or the packed (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional)."""
    if len(args) == 9 and isinstance(args[3], (list, tuple)):
        return args + (False,)
    if len(args) == 9:
        return (args[0], None) + tuple(args[1:])
    raise TypeError(f"expected 9 arguments (input, hx, params, has_biases, num_layers, dropout, train, "
                    f"bidirectional, batch_first), got {len(args)}")


def _run(mode, args):
    input, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = \
        _split_overload(args)
    states = tuple(hx) if mode == "LSTM" else (hx,)
    projected = mode == "LSTM" and states[0].shape[-1] != states[1].shape[-1]
    rnn = _FlatParamsRNN(mode, params, has_biases, num_layers, dropout, train, bidirectional, projected)
    return rnn.run(input, batch_sizes, states, batch_first)


def lstm(*args):
    """``(output, h_n, c_n)``: a multi-layer LSTM with ``hx = [h_0, c_0]`` and flat ``params``."""
    output, (h, c) = _run("LSTM", args)
    return output, h, c


def gru(*args):
    """``(output, h_n)``: a multi-layer GRU with flat ``params``."""
    output, (h,) = _run("GRU", args)
    return output, h


def rnn_tanh(*args):
    """``(output, h_n)``: a multi-layer Elman RNN with tanh, flat ``params``."""
    output, (h,) = _run("RNN_TANH", args)
    return output, h


def rnn_relu(*args):
    """``(output, h_n)``: a multi-layer Elman RNN with relu, flat ``params``."""
    output, (h,) = _run("RNN_RELU", args)
    return output, h


def _check_cell(input, hx, w_ih):
    if input.shape[-1] != w_ih.shape[1]:
        raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} expected {w_ih.shape[1]}")


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """``(h', c')``: one LSTM step from ``hx = (h, c)``."""
    _check_cell(input, hx, w_ih)
    return _lstm_step(F.linear(input, w_ih, b_ih), tuple(hx), w_hh, b_hh, None)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """h': one GRU step."""
    _check_cell(input, hx, w_ih)
    return _gru_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    _check_cell(input, hx, w_ih)
    return _rnn_step("RNN_TANH", F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    _check_cell(input, hx, w_ih)
    return _rnn_step("RNN_RELU", F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]
