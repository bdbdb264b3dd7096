"""Helpers of the ONNX export tests: export a model to bytes, check the file with ``onnx.checker``, run it in
ONNX Runtime and compare every output with our eager output on the same inputs.

    check_export(model, lambda batch: (images(0, batch, 3, 9, 11),), batches=(2, 3))
"""
import io

import numpy as np
import pytest
from op_check import assert_close

import engine
import engine.onnx
from engine.nn.graph.graph import _flatten

onnx = pytest.importorskip("onnx", reason="the ONNX export tests need the onnx extra (pip install flowvision[onnx])")
ort = pytest.importorskip("onnxruntime", reason="the ONNX export tests run the files in onnxruntime")


def images(seed, *shape):
    """Seeded standard-normal float32 values."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


class Fn(engine.nn.Module):
    """A module running ``fn(module, *inputs)`` (with optional parameter-holding submodules): one op or a few
    exported at a time."""

    def __init__(self, fn, **modules):
        super().__init__()
        self.fn = fn
        for name, module in modules.items():
            setattr(self, name, module)

    def forward(self, *xs):
        return self.fn(self, *xs)


def one(*shape, seed=0):
    """``make_inputs`` for ``check_export``: one seeded input of ``(batch, *shape)``."""
    return lambda batch: (images(seed, batch, *shape),)


def export_bytes(model, args, **kwargs):
    """The ONNX file ``engine.onnx.export`` writes, checked by ``onnx.checker`` (on the bytes themselves: a parsed
    ModelProto is serialized again for the check, which took 6.3 of test_onnx_models.py's 89 s with the parse)."""
    buffer = io.BytesIO()
    engine.onnx.export(model, args, buffer, **kwargs)
    data = buffer.getvalue()
    onnx.checker.check_model(data)
    return data


def session(data):
    """An ONNX Runtime session on the CPU (2 threads) for the ONNX model ``data``."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def run_onnx(data, feeds):
    """Outputs of the ONNX model ``data`` for ``feeds`` ({input name: array}) in ONNX Runtime."""
    return session(data).run(None, feeds)


def eager_outputs(model, arrays):
    """Our eager outputs (flattened, as numpy) of ``model(*arrays)`` without gradients."""
    with engine.no_grad():
        result = model(*[engine.from_numpy(a) for a in arrays])
    leaves = []
    _flatten(result, leaves)
    return [t.numpy() for t in leaves]


def check_export(model, make_inputs, batches=(2, 3), rtol=1e-5, dynamic=True, what="output", per_sample=False,
                 **kwargs):
    """Export ``model`` on ``make_inputs(batch)`` (a tuple of arrays) with a dynamic axis 0 on every input,
    then compare ONNX Runtime's outputs at every batch size with our eager ones. Returns the file.

    The model is exported at batch 1 (a dynamic export) or ``batches[0]``, and the file run on the first
    ``batch`` samples of the inputs made for the largest batch. With ``per_sample`` (a model computing each
    sample on its own, as zoo models in eval mode do) our eager outputs are computed once, at the largest
    batch, and compared row by row."""
    largest = make_inputs(max(batches))
    names = [f"in{k}" for k in range(len(largest))]
    exported = [a[:1] if dynamic else a[:batches[0]] for a in largest]
    axes = {name: {0: "batch"} for name in names} if dynamic else None
    data = export_bytes(model, tuple(engine.from_numpy(np.ascontiguousarray(a)) for a in exported),
                        input_names=names, dynamic_axes=axes, **kwargs)
    everything = eager_outputs(model, largest) if per_sample else None
    runner = session(data)
    for batch in batches if dynamic else batches[:1]:
        arrays = [np.ascontiguousarray(a[:batch]) for a in largest]
        ours = [r[:batch] for r in everything] if per_sample else eager_outputs(model, arrays)
        got = runner.run(None, dict(zip(names, arrays)))
        assert len(got) == len(ours), f"{what}: {len(got)} ONNX outputs for {len(ours)} eager outputs"
        for k, (o, r) in enumerate(zip(got, ours)):
            assert o.dtype == r.dtype, f"{what} {k}: ONNX dtype {o.dtype}, eager {r.dtype}"
            assert_close(o, r, rtol, f"{what} {k} at batch {batch}")
    return data


def node_types(data):
    """The op types of the nodes of an ONNX file, in order."""
    return [node.op_type for node in onnx.load_from_string(data).graph.node]
