"""Packed sequences against torch: packing and padding back (values, batch sizes, sort indices, gradients of
the padded input), ``pack_sequence``, ``unpad_sequence``, ``unpack_sequence``, the ``PackedSequence`` helpers and
torch's errors; then RNN, LSTM and GRU run on packed batches of unsorted lengths, in float64 with torch's
weights, their outputs, final states and every gradient compared, and the same on the GPU."""
import numpy as np
import pytest
import torch
import torch.nn.utils.rnn as theirs_rnn
from op_check import assert_close

import engine
import engine.nn.utils.rnn as ours_rnn

LIBS = ((torch, theirs_rnn), (engine, ours_rnn))
LENGTHS = [4, 6, 1, 4]  # unsorted, with a tie, on a padded length of 6


def _padded(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_and_pad_back_match_torch(batch_first, enforce_sorted):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    x = _padded((4, 6, 3) if batch_first else (6, 4, 3))
    upstream = _padded((4, 8, 3) if batch_first else (8, 4, 3), seed=1)
    results = []
    for lib, rnn in LIBS:
        xi = lib.from_numpy(x.copy()).requires_grad_()
        packed = rnn.pack_padded_sequence(xi, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
        padded, lengths_back = rnn.pad_packed_sequence(packed, batch_first, padding_value=-1.5, total_length=8)
        (padded * lib.from_numpy(upstream)).sum().backward()
        indices = [None if i is None else i.tolist() for i in (packed.sorted_indices, packed.unsorted_indices)]
        assert packed.batch_sizes.dtype == lib.int64 and packed.batch_sizes.device.type == "cpu"
        assert lengths_back.dtype == lib.int64 and lengths_back.device.type == "cpu"
        results.append((packed.data.detach().numpy(), packed.batch_sizes.tolist(), indices,
                        padded.detach().numpy(), lengths_back.tolist(), xi.grad.numpy()))
    (t_data, t_sizes, t_indices, t_padded, t_lengths, t_grad), ours = results
    assert ours[1:3] == (t_sizes, t_indices) and ours[4] == t_lengths == lengths
    np.testing.assert_array_equal(ours[0], t_data)
    np.testing.assert_array_equal(ours[3], t_padded)
    np.testing.assert_array_equal(ours[5], t_grad)


def test_lengths_in_any_form_and_pack_sequence():
    x = _padded((6, 4, 2))
    expected = theirs_rnn.pack_padded_sequence(torch.from_numpy(x), LENGTHS, enforce_sorted=False)
    for lengths in (LENGTHS, tuple(LENGTHS), np.array(LENGTHS), engine.tensor(LENGTHS, dtype=engine.int32),
                    engine.tensor([4.5, 6.0, 1.2, 4.0])):
        packed = ours_rnn.pack_padded_sequence(engine.from_numpy(x), lengths, enforce_sorted=False)
        np.testing.assert_array_equal(packed.data.numpy(), expected.data.numpy())
        assert packed.batch_sizes.tolist() == expected.batch_sizes.tolist()
    sequences = [_padded((n, 2), seed=n) for n in LENGTHS]
    for enforce_sorted in (False, True):
        order = LENGTHS if not enforce_sorted else sorted(LENGTHS, reverse=True)
        chosen = [_padded((n, 2), seed=n) for n in order]
        theirs = theirs_rnn.pack_sequence([torch.from_numpy(s) for s in chosen], enforce_sorted)
        ours = ours_rnn.pack_sequence([engine.from_numpy(s) for s in chosen], enforce_sorted)
        np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
        assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
    leaves = [engine.from_numpy(s).requires_grad_() for s in sequences]
    unpacked = ours_rnn.unpack_sequence(ours_rnn.pack_sequence(leaves, enforce_sorted=False))
    sum((back * (i + 1)).sum() for i, back in enumerate(unpacked)).backward()
    for i, (leaf, back, original) in enumerate(zip(leaves, unpacked, sequences)):
        np.testing.assert_array_equal(back.detach().numpy(), original)
        np.testing.assert_array_equal(leaf.grad.numpy(), np.full_like(original, i + 1.0))


@pytest.mark.parametrize("batch_first", [False, True])
def test_unpad_sequence_matches_torch(batch_first):
    x = _padded((4, 6, 2) if batch_first else (6, 4, 2))
    theirs = theirs_rnn.unpad_sequence(torch.from_numpy(x), torch.tensor(LENGTHS), batch_first)
    ours = ours_rnn.unpad_sequence(engine.from_numpy(x), engine.tensor(LENGTHS), batch_first)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_packed_sequence_helpers():
    packed = ours_rnn.pack_padded_sequence(engine.from_numpy(_padded((6, 4, 2))), LENGTHS, enforce_sorted=False)
    assert packed._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    data, batch_sizes, sorted_indices, unsorted_indices = packed
    assert sorted_indices.tolist() == [1, 0, 3, 2] and unsorted_indices.tolist() == [1, 0, 3, 2]
    assert repr(packed).startswith("PackedSequence(data=tensor(")
    assert not packed.is_cuda and packed.cpu() is packed and packed.double() is packed
    as_float = packed.float()
    assert isinstance(as_float, ours_rnn.PackedSequence) and as_float.data.dtype == engine.float32
    assert as_float.batch_sizes is batch_sizes and packed.to(engine.int64).data.dtype == engine.int64
    rebuilt = ours_rnn.PackedSequence(data, batch_sizes, engine.tensor([2, 0, 3, 1]))
    assert rebuilt.unsorted_indices.tolist() == [1, 3, 0, 2]
    assert ours_rnn.PackedSequence((data, batch_sizes)).sorted_indices is None
    assert ours_rnn.invert_permutation(None) is None
    assert ours_rnn.__all__ == theirs_rnn.__all__


def _error(call):
    """The type and message of what ``call(torch, torch's rnn)`` raises; ours must raise the same."""
    with pytest.raises(Exception) as theirs:
        call(torch, theirs_rnn)
    with pytest.raises(theirs.type) as ours:
        call(engine, ours_rnn)
    assert str(ours.value) == str(theirs.value)


def test_errors_as_torch():
    x = _padded((6, 4, 2))
    _error(lambda lib, rnn: rnn.pack_padded_sequence(lib.from_numpy(x), LENGTHS))
    _error(lambda lib, rnn: rnn.pack_padded_sequence(lib.from_numpy(x), [4, 3, 0, 2], enforce_sorted=False))
    _error(lambda lib, rnn: rnn.pack_padded_sequence(lib.from_numpy(x), [6, 4, 0]))
    _error(lambda lib, rnn: rnn.pack_padded_sequence(lib.from_numpy(x), [6, 4, 1, 0]))
    _error(lambda lib, rnn: rnn.pack_padded_sequence(lib.from_numpy(x), lib.tensor([[6, 4, 1, 1]])))
    _error(lambda lib, rnn: rnn.pack_padded_sequence(lib.from_numpy(x[:0]), []))
    _error(lambda lib, rnn: rnn.pad_packed_sequence(rnn.pack_sequence([lib.ones(3, 2)]), total_length=2))
    _error(lambda lib, rnn: lib.nn.GRU(2, 3, 2).double()(rnn.pack_padded_sequence(lib.from_numpy(x), [6, 4, 2, 1]),
                                                        lib.zeros(2, 3, 3, dtype=lib.float64)))
    _error(lambda lib, rnn: lib.nn.GRU(2, 3)(rnn.pack_sequence([lib.ones(3, 2, 2)])))
    with pytest.raises(RuntimeError, match="longer than the input's 6 steps"):  # torch reads past the input
        ours_rnn.pack_padded_sequence(engine.from_numpy(x), [7, 4, 2, 1])


LAYERS = {
    "lstm 2 layers, both ways": lambda L: L.nn.LSTM(5, 7, num_layers=2, bidirectional=True),
    "lstm projected, both ways": lambda L: L.nn.LSTM(5, 7, num_layers=2, proj_size=3, bidirectional=True),
    "gru 2 layers, both ways, batch first": lambda L: L.nn.GRU(5, 7, num_layers=2, bidirectional=True,
                                                               batch_first=True),
    "rnn tanh": lambda L: L.nn.RNN(5, 7),
    "rnn relu 2 layers, without bias": lambda L: L.nn.RNN(5, 7, num_layers=2, nonlinearity="relu", bias=False),
    "lstm with dropout (training)": lambda L: L.nn.LSTM(5, 7, num_layers=3, dropout=0.4),
}


def _pair(make):
    """Torch's module and ours with its weights, both in float64."""
    theirs = make(torch).double()
    ours = make(engine).double()
    ours.load_state_dict({k: engine.from_numpy(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _run_packed(ours, theirs, x, lengths, hx=None, enforce_sorted=False, seed=1):
    """Both modules on ``x`` packed by ``lengths`` (and initial states in the batch's order): the output padded
    back, the final states and all gradients compared."""
    rng = np.random.default_rng(seed)
    batch_first = ours.batch_first
    results = []
    for (lib, rnn), module in zip(LIBS, (theirs, ours)):
        lib.manual_seed(seed)  # dropout masks from the same stream
        xi = lib.from_numpy(x.copy()).requires_grad_()
        states = None if hx is None else tuple(lib.from_numpy(h.copy()).requires_grad_() for h in hx)
        packed = rnn.pack_padded_sequence(xi, lengths, batch_first, enforce_sorted)
        out, last = module(packed, states if states is None or len(states) > 1 else states[0])
        assert isinstance(out, rnn.PackedSequence) and out.batch_sizes is packed.batch_sizes
        assert out.sorted_indices is packed.sorted_indices and out.unsorted_indices is packed.unsorted_indices
        padded, _ = rnn.pad_packed_sequence(out, batch_first)
        last = last if isinstance(last, tuple) else (last,)
        if not results:
            weights = [rng.standard_normal(tuple(t.shape)) for t in (padded, *last)]
        loss = sum((t * lib.from_numpy(w)).sum() for t, w in zip((padded, *last), weights))
        loss.backward()
        grads = [xi.grad.numpy()] + ([] if states is None else [s.grad.numpy() for s in states])
        params = {n: p.grad.numpy() for n, p in module.named_parameters()}
        results.append(([t.detach().numpy() for t in (padded, *last)], grads, params))
    (t_out, t_grads, t_params), (o_out, o_grads, o_params) = results
    for i, (o, t) in enumerate(zip(o_out, t_out)):
        assert_close(o, t, 1e-9, f"output {i}")
    for i, (o, t) in enumerate(zip(o_grads, t_grads)):
        assert_close(o, t, 1e-9, f"input gradient {i}")
    assert o_params.keys() == t_params.keys()
    for name, t in t_params.items():
        assert_close(o_params[name], t, 1e-9, f"gradient of {name}")


@pytest.mark.parametrize("name", LAYERS)
def test_recurrent_layers_on_packed_input_match_torch(name):
    ours, theirs = _pair(LAYERS[name])
    ours.train(), theirs.train()  # dropout=0 except in the dropout case
    x = _padded((4, 6, 5) if ours.batch_first else (6, 4, 5))
    _run_packed(ours, theirs, x, LENGTHS)
    count = ours.num_layers * (2 if ours.bidirectional else 1)
    h0 = _padded((count, 4, ours.proj_size or 7), seed=3)
    states = (h0, _padded((count, 4, 7), seed=4)) if ours.mode == "LSTM" else (h0,)
    _run_packed(ours, theirs, x, LENGTHS, states, seed=5)
    _run_packed(ours, theirs, x, sorted(LENGTHS, reverse=True), states, enforce_sorted=True, seed=6)


def test_on_the_gpu(cuda):
    cpu = engine.nn.LSTM(5, 7, num_layers=2, bidirectional=True)
    ours = engine.nn.LSTM(5, 7, num_layers=2, bidirectional=True).cuda()
    ours.load_state_dict(cpu.state_dict())
    x = _padded((6, 4, 5)).astype(np.float32)
    results = []
    for module, device in ((cpu, "cpu"), (ours, "cuda")):
        xi = engine.from_numpy(x).to(device).requires_grad_()
        packed = ours_rnn.pack_padded_sequence(xi, engine.tensor(LENGTHS), enforce_sorted=False)
        assert packed.sorted_indices.device.type == device and packed.batch_sizes.device.type == "cpu"
        out, (h, c) = module(packed)
        padded, lengths = ours_rnn.pad_packed_sequence(out, batch_first=True)
        assert padded.device.type == h.device.type == device and lengths.tolist() == LENGTHS
        (padded.sum() + h.sum() + c.sum()).backward()
        results.append([t.detach().cpu().numpy() for t in (padded, h, c, xi.grad, module.weight_hh_l1_reverse.grad)])
    assert ours_rnn.pack_sequence([engine.ones(2, 3)]).cuda().is_cuda
    for o, t in zip(results[1], results[0]):
        assert_close(o, t, 1e-5)
