"""Recurrent layers with torch's names, arguments and parameters: ``RNN``, ``LSTM``, ``GRU`` and their cells.

Each layer projects the whole input sequence through ``weight_ih`` in one product, then steps through time
with the hidden-state product and the gates (torch's gate order: LSTM i, f, g, o; GRU r, z, n). Layers stack
(``num_layers``, ``dropout`` between them in training), run both ways (``bidirectional``), take batch-first
or unbatched inputs, and LSTM projects its hidden state (``proj_size``). Parameters are registered and
initialised in torch's order, uniform in +-1/sqrt(hidden_size), so the same seed gives torch's weights.
``RNN`` and ``GRU`` take ``proj_size`` only to refuse it, as torch's.

Every input runs in packed form, as torch runs a ``PackedSequence``: rows sorted by decreasing length, step
after step, and at each step only the sequences still running (a padded batch keeps them all). The batch
shrinks forward and grows in reverse, so each sequence's last state is taken at its own last step and the
reverse direction starts there; the steps only slice rows, no masks and no wasted work.
"""
import itertools
import math
import numbers
import warnings

from ... import ops
from ...amp.autocast_mode import is_autocast_enabled
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from ._utils import new_param_data
from .module import Module

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _rnn_step(mode, x_proj, h, w_hh, b_hh):
    """One step of a plain RNN: x_proj is x W_ih^T + b_ih."""
    pre = x_proj + F.linear(h, w_hh, b_hh)
    return F.relu(pre) if mode == "RNN_RELU" else pre.tanh()


def _lstm_step(x_proj, state, w_hh, b_hh, w_hr):
    h, c = state
    i, f, g, o = (x_proj + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return (h if w_hr is None else F.linear(h, w_hr)), c


def _gru_step(x_proj, h, w_hh, b_hh):
    xr, xz, xn = x_proj.chunk(3, -1)
    hr, hz, hn = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r = (xr + hr).sigmoid()
    z = (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return (1 - z) * n + z * h


class RNNBase(Module):
    """The shared layer stack of ``RNN``, ``LSTM`` and ``GRU`` (see the module docstring)."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
            if name == "input_size" and input_size <= 0:
                raise ValueError("input_size must be greater than zero")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        directions = 2 if bidirectional else 1
        out_size = proj_size or hidden_size
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                layer_input = input_size if layer == 0 else out_size * directions
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, out_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(new_param_data(shape, device, dtype)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def flatten_parameters(self):
        """Nothing to do: torch packs the weights into one cuDNN buffer here; the layers read them in place."""

    @property
    def _flat_weights(self):
        """The parameters in torch's flat order (per layer and direction: w_ih, w_hh, b_ih, b_hh, w_hr)."""
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters as one list per layer and direction, in torch's order."""
        per_cell = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        flat = self._flat_weights
        return [flat[i:i + per_cell] for i in range(0, len(flat), per_cell)]

    def _weights(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = lambda name: getattr(self, name + suffix, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"), get("weight_hr")

    def forward(self, input, hx=None):
        """``input`` (T, N, H_in), (N, T, H_in) with ``batch_first``, (T, H_in), or a ``PackedSequence``; returns
        the output sequence (packed for packed input) and the last hidden state (h_n, or (h_n, c_n) for LSTM)
        with torch's shapes. A packed batch runs sorted by length: ``hx`` comes in the original order and is
        permuted by ``sorted_indices``, the last states go back by ``unsorted_indices``."""
        packed = isinstance(input, PackedSequence)
        if packed:
            if input.data.dim() != 2:
                raise RuntimeError(f"input must have 2 dimensions, got {input.data.dim()}")
            x, batch_sizes, unbatched = input.data, input.batch_sizes.tolist(), False
        else:
            if input.dim() not in (2, 3):
                name, noun = ("RNN", "tensor ") if self.mode.startswith("RNN") else (self.mode, "")  # torch's two texts
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D {noun}instead")
            unbatched = input.dim() == 2
            self._check_state_ranks(hx, input.dim())
            padded = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first else input)
            steps, batch = padded.shape[:2]
            x, batch_sizes = padded.reshape(steps * batch, padded.shape[2]), [batch] * steps
        weight = self.weight_ih_l0
        if x.dtype != weight.dtype and not (is_autocast_enabled("cpu") or is_autocast_enabled("cuda")):
            raise ValueError(f"RNN input dtype ({x.dtype}) does not match weight dtype ({weight.dtype}). Convert "
                             f"input: input.to({weight.dtype}), or convert model: model.to({x.dtype})")
        if not batch_sizes:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{x.shape[-1]}")
        states = self._initial_states(batch_sizes[0], x, hx, unbatched)
        if packed and input.sorted_indices is not None:
            states = tuple(s.index_select(1, input.sorted_indices) for s in states)
        x, last = self._layers(x, batch_sizes, states)
        if packed:
            output = PackedSequence(x, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
            if input.unsorted_indices is not None:
                last = tuple(s.index_select(1, input.unsorted_indices) for s in last)
        else:
            output = x.reshape(steps, batch, x.shape[-1])
            output = output.squeeze(1) if unbatched else (output.transpose(0, 1) if self.batch_first else output)
            last = tuple(s.squeeze(1) for s in last) if unbatched else last
        return (output, last) if self.mode == "LSTM" else (output, last[0])

    def _check_state_ranks(self, hx, rank):
        """torch's check that the given initial states have the input's rank (3-D batched, 2-D unbatched)."""
        if hx is None:
            return
        kind = "batched 3-D" if rank == 3 else "unbatched 2-D"
        if self.mode == "LSTM":
            if hx[0].dim() != rank or hx[1].dim() != rank:
                raise RuntimeError(f"For {kind} input, hx and cx should also be {rank}-D but got ({hx[0].dim()}-D, "
                                   f"{hx[1].dim()}-D) tensors")
        elif hx.dim() != rank:
            raise RuntimeError(f"For {kind} input, hx should also be {rank}-D but got {hx.dim()}-D tensor")

    def _initial_states(self, batch, like, hx, unbatched):
        """The initial states as a tuple, (h_0, c_0) for LSTM or (h_0,), each (layers * directions, batch, H):
        ``hx`` checked against torch's shapes, or zeros of ``like``'s dtype and device."""
        count = self.num_layers * (2 if self.bidirectional else 1)
        out_size = self.proj_size or self.hidden_size

        def zeros(size):
            return ops.zeros(count, batch, size, dtype=like.dtype, device=like.device)

        def batched(state, size, name):
            state = state.unsqueeze(1) if unbatched else state
            expected = (count, batch, size)
            if tuple(state.shape) != expected:
                raise RuntimeError(f"Expected {name} size {expected}, got {list(state.shape)}")
            return state
        if self.mode == "LSTM":
            if hx is None:
                return zeros(out_size), zeros(self.hidden_size)
            return batched(hx[0], out_size, "hidden[0]"), batched(hx[1], self.hidden_size, "hidden[1]")
        return (zeros(out_size) if hx is None else batched(hx, out_size, "hidden"),)

    def _layers(self, x, batch_sizes, states):
        """The layer stack over packed rows ``x``: the last layer's output rows and the last states, stacked
        like ``states`` (layer-major, then direction)."""
        directions = 2 if self.bidirectional else 1
        last = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                sequence, state = self._run(x, batch_sizes, tuple(s[index] for s in states),
                                            self._weights(layer, direction), reverse=direction == 1)
                outputs.append(sequence)
                last.append(state)
            x = outputs[0] if directions == 1 else ops.cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, tuple(ops.stack(parts, 0) for parts in zip(*last))

    def _step(self, x_proj, state, w_hh, b_hh, w_hr):
        """One time step of this layer's cell on a state tuple."""
        if self.mode == "LSTM":
            return _lstm_step(x_proj, state, w_hh, b_hh, w_hr)
        if self.mode == "GRU":
            return (_gru_step(x_proj, state[0], w_hh, b_hh),)
        return (_rnn_step(self.mode, x_proj, state[0], w_hh, b_hh),)

    def _run(self, x, batch_sizes, state, weights, reverse):
        """One direction of one layer over packed rows ``x`` (sum(batch_sizes), H_in): step t takes the next
        ``batch_sizes[t]`` rows, those of the first sequences of the batch (longest first; a padded batch is
        the case of equal sizes). Going forward, the batch shrinks: a sequence's state is set aside after its
        last step. In reverse it grows: a sequence joins at its own last step with its initial state. Returns
        the output rows, packed like ``x``, and the last state tuple of every sequence."""
        w_ih, w_hh, b_ih, b_hh, w_hr = weights
        projected = F.linear(x, w_ih, b_ih)  # every time step's input product at once
        starts = list(itertools.accumulate(batch_sizes, initial=0))
        initial = state
        if reverse and batch_sizes[-1] < batch_sizes[0]:
            state = tuple(s[:batch_sizes[-1]] for s in initial)
        outputs, finished = [None] * len(batch_sizes), []
        steps = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
        for t in steps:
            size, running = batch_sizes[t], state[0].shape[0]
            if size < running:
                finished.append(tuple(s[size:] for s in state))
                state = tuple(s[:size] for s in state)
            elif size > running:
                state = tuple(ops.cat([s, s0[running:size]], 0) for s, s0 in zip(state, initial))
            state = self._step(projected[starts[t]:starts[t + 1]], state, w_hh, b_hh, w_hr)
            outputs[t] = state[0]
        if finished:  # the sequences ended in decreasing batch position: the last state in batch order
            state = tuple(ops.cat(parts, 0) for parts in zip(state, *reversed(finished)))
        return ops.cat(outputs, 0), state

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first:
            text += f", batch_first={self.batch_first}"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += f", bidirectional={self.bidirectional}"
        return text


class RNN(RNNBase):
    """Elman RNN: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (``nonlinearity="relu"``: relu)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, proj_size=0):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size,
                         num_layers, bias, batch_first, dropout, bidirectional, proj_size, device, dtype)


class LSTM(RNNBase):
    """Long short-term memory (Hochreiter and Schmidhuber 1997), optionally with a projected hidden state."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit (Cho et al. 2014)."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None, proj_size=0):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)


class RNNCellBase(Module):
    """One step: parameters ``weight_ih``, ``weight_hh`` and (with ``bias``) ``bias_ih``, ``bias_hh``."""

    def __init__(self, input_size, hidden_size, bias, gates, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(new_param_data((gates * hidden_size, input_size), device, dtype))
        self.weight_hh = Parameter(new_param_data((gates * hidden_size, hidden_size), device, dtype))
        if bias:
            self.bias_ih = Parameter(new_param_data((gates * hidden_size,), device, dtype))
            self.bias_hh = Parameter(new_param_data((gates * hidden_size,), device, dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _prepare(self, input, hx, cells=1):
        """(input, states, unbatched): an unbatched input gets a batch of one; missing states are zeros."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        if x.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {x.shape[1]} expected {self.input_size}")
        if hx is None:
            zeros = ops.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            return x, (zeros,) * cells, unbatched
        states = hx if isinstance(hx, tuple) else (hx,)
        for i, state in enumerate(states):
            if state.dim() not in (1, 2):
                label = f"hx[{i}]" if cells == 2 else "hidden"
                raise ValueError(f"{type(self).__name__}: Expected {label} to be 1D or 2D, got {state.dim()}D instead")
        states = tuple(s.unsqueeze(0) if unbatched else s for s in states)
        for i, state in enumerate(states):  # PyTorch's checks, in its order, on the (batched) states
            if state.shape[0] != x.shape[0]:
                raise RuntimeError(f"Input batch size {x.shape[0]} doesn't match hidden{i} batch size {state.shape[0]}")
            if state.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {state.shape[1]}, expected "
                                   f"{self.hidden_size}")
        return x, states, unbatched

    def extra_repr(self):
        text = f"{self.input_size}, {self.hidden_size}"
        return text if self.bias is True else text + f", bias={self.bias}"


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), unbatched = self._prepare(input, hx)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h = _rnn_step(mode, F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h.squeeze(0) if unbatched else h

    def extra_repr(self):
        text = super().extra_repr()
        return text if self.nonlinearity == "tanh" else text + f", nonlinearity={self.nonlinearity}"


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, state, unbatched = self._prepare(input, hx, cells=2)
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), state, self.weight_hh, self.bias_hh, None)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), unbatched = self._prepare(input, hx)
        h = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h.squeeze(0) if unbatched else h


__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
