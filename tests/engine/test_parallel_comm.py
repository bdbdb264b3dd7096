"""``nn.parallel``'s building blocks: ``comm`` (broadcast, reduce_add, scatter, gather and their coalesced
forms), ``scatter``/``scatter_kwargs``/``gather`` over nested arguments, ``replicate`` and ``parallel_apply``,
on the CPU (device "cpu" or -1) and on the CUDA emulation. torch's need CUDA devices, so values are checked
against torch's tensor ops (chunk, cat, sum) and gradients against the same model run without replicas."""
import collections

import numpy as np
import pytest
import torch

import engine
import engine.nn as nn
from engine.nn.parallel import comm, gather, parallel_apply, replicate, scatter, scatter_kwargs

RNG = np.random.default_rng(5)
Pair = collections.namedtuple("Pair", "a b")


def _r(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_broadcast_and_coalesced():
    x = engine.from_numpy(_r(3, 4))
    copies = comm.broadcast(x, ["cpu", -1])
    assert len(copies) == 2 and all(np.array_equal(c.numpy(), x.numpy()) for c in copies)
    out = [engine.zeros(3, 4), engine.zeros(3, 4)]
    assert comm.broadcast(x, out=out) == tuple(out) and np.array_equal(out[1].numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="Exactly one of 'devices' and 'out' must be specified"):
        comm.broadcast(x)
    groups = comm.broadcast_coalesced([x, x[0]], ["cpu", "cpu", "cpu"])
    assert len(groups) == 3 and all(len(g) == 2 and g[1].shape == (4,) for g in groups)


def test_reduce_add_and_coalesced():
    a, b = _r(2, 3), _r(2, 3)
    total = comm.reduce_add([engine.from_numpy(a), engine.from_numpy(b)], -1)
    np.testing.assert_allclose(total.numpy(), (torch.from_numpy(a) + torch.from_numpy(b)).numpy())
    sums = comm.reduce_add_coalesced([[engine.from_numpy(a), engine.ones(2)], [engine.from_numpy(b), engine.ones(2)]])
    assert len(sums) == 2 and sums[1].tolist() == [2.0, 2.0]
    with pytest.raises(ValueError, match=r"input 1 has invalid size: got engine.Size\(\[3\]\), but expected"):
        comm.reduce_add([engine.ones(2), engine.ones(3)])


def test_scatter_and_gather_match_chunk_and_cat():
    x = _r(7, 3)
    pieces = comm.scatter(engine.from_numpy(x), ["cpu"] * 3)
    for ours, theirs in zip(pieces, torch.from_numpy(x).chunk(3)):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    sized = comm.scatter(engine.from_numpy(x), ["cpu", "cpu"], chunk_sizes=[2, 5])
    assert [p.shape[0] for p in sized] == [2, 5]
    out = [engine.zeros(4, 3), engine.zeros(3, 3)]
    comm.scatter(engine.from_numpy(x), out=out)
    np.testing.assert_array_equal(out[1].numpy(), x[4:])
    joined = comm.gather(list(pieces), 0, -1)
    np.testing.assert_array_equal(joined.numpy(), x)
    np.testing.assert_array_equal(comm.gather(list(sized), dim=0, out=engine.zeros(7, 3)).numpy(), x)
    with pytest.raises(RuntimeError, match="'devices' must not be specified when 'out' is specified"):
        comm.scatter(engine.from_numpy(x), ["cpu"], out=out)
    with pytest.raises(RuntimeError, match="'destination' must not be specified when 'out' is specified"):
        comm.gather(list(pieces), 0, -1, out=engine.zeros(7, 3))


def test_scatter_gather_are_differentiable():
    x = engine.from_numpy(_r(6, 2)).requires_grad_()
    pieces = scatter(x, ["cpu", "cpu"])
    (gather([p * 2 for p in pieces], "cpu") * engine.arange(6.0)[:, None]).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.repeat(2 * np.arange(6.0)[:, None], 2, 1))


def test_scatter_of_nested_arguments_and_scatter_kwargs():
    args = (Pair(engine.ones(4), engine.zeros(4, 2)), [engine.ones(2)], {"k": engine.ones(6)}, "text", 3)
    parts = scatter(args, ["cpu", "cpu"])
    assert len(parts) == 2
    first = parts[0]
    assert type(first[0]) is Pair and first[0].b.shape == (2, 2) and type(first[1]) is list
    assert first[2]["k"].shape == (3,) and first[3:] == ("text", 3)
    inputs, kwargs = scatter_kwargs((engine.ones(4),), {"scale": engine.ones(4), "flag": True}, ["cpu"] * 2)
    assert len(inputs) == len(kwargs) == 2 and kwargs[1]["flag"] is True and kwargs[1]["scale"].shape == (2,)
    assert scatter_kwargs((), {"a": engine.ones(2)}, ["cpu"] * 2)[0] == ((), ())


def test_gather_of_nested_outputs_and_scalars():
    outs = [{"x": engine.ones(2), "pair": Pair(engine.ones(1), None)}, {"x": engine.zeros(3), "pair": Pair(
        engine.ones(1), None)}]
    joined = gather(outs, -1)
    assert joined["x"].tolist() == [1, 1, 0, 0, 0] and type(joined["pair"]) is Pair and joined["pair"].b is None
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        assert gather([engine.tensor(1.0), engine.tensor(2.0)], "cpu").tolist() == [1.0, 2.0]
    with pytest.raises(ValueError, match="All dicts must have the same number of keys"):
        gather([{"a": engine.ones(1)}, {"a": engine.ones(1), "b": engine.ones(1)}], "cpu")


def _model():
    engine.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))


def test_replicate_shares_gradients_and_buffers():
    model = _model()
    x = engine.from_numpy(_r(8, 3))
    replicas = replicate(model, ["cpu", "cpu"])
    assert len(replicas) == 2 and list(replicas[0].parameters()) == []
    assert replicas[0][0]._former_parameters["weight"] is replicas[0][0].weight
    assert replicas[0][1].running_mean is model[1].running_mean  # buffers on their own device are shared
    inputs = scatter(x, ["cpu", "cpu"])
    outputs = parallel_apply(replicas, inputs)
    gather(outputs, "cpu").sum().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    reference = _model()
    for p in reference.parameters():
        p.grad = None
    for piece in x.chunk(2):
        reference(piece).sum().backward()
    for ours, ref in zip(grads, (p.grad.numpy() for p in reference.parameters())):
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
    detached = replicate(model, ["cpu"], detach=True)[0]
    assert not detached[0].weight.requires_grad


def test_parallel_apply_inputs_kwargs_and_errors():
    lin = nn.Linear(2, 2)
    outs = parallel_apply([lin, lin], [engine.ones(1, 2), (engine.zeros(3, 2),)])
    assert [o.shape for o in outs] == [(1, 2), (3, 2)]

    class Scale(nn.Module):
        def forward(self, x, factor=1):
            return x * factor
    assert parallel_apply([Scale()], [(engine.ones(2),)], [{"factor": 3}])[0].tolist() == [3.0, 3.0]
    with pytest.raises(AssertionError, match="The number of modules 2 is not equal to the number of inputs 1"):
        parallel_apply([lin, lin], [engine.ones(2)])
    with pytest.raises(RuntimeError, match="Caught RuntimeError in replica 0 on device None"):
        parallel_apply([lin], [engine.ones(1, 5)])


def test_comm_on_cuda(cuda):
    x = engine.from_numpy(_r(4, 3)).requires_grad_()
    (on_gpu,) = comm.scatter(x, [0])
    assert on_gpu.device.type == "cuda"
    back = comm.gather([on_gpu * 2], 0, -1)
    assert back.device.type == "cpu"
    back.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.ones((4, 3)))
    assert comm.broadcast(x, [0])[0].device == engine.device("cuda", 0)
    replica = replicate(nn.Linear(3, 2), [0])[0]
    assert replica.weight.device.type == "cuda"
