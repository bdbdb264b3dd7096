"""Quantized tensors against torch's: construction, accessors, views, printing, and checkpoints both ways."""
import io
import warnings

import numpy as np
import pytest

import engine

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # torch deprecates its quantized tensor creation


def _both(seed, shape=(2, 5, 3, 7)):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3
    return engine.from_numpy(x), torch.from_numpy(x.copy())


def _same(ours, theirs):
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.int_repr().numpy(), theirs.int_repr().numpy())
    np.testing.assert_array_equal(ours.dequantize().numpy(), theirs.dequantize().numpy())


@pytest.mark.parametrize("dtype", ["quint8", "qint8", "qint32"])
def test_quantize_per_tensor_is_torchs(dtype):
    x, tx = _both(0)
    q = engine.quantize_per_tensor(x, 0.0371, 11, getattr(engine, dtype))
    tq = torch.quantize_per_tensor(tx, 0.0371, 11, getattr(torch, dtype))
    _same(q, tq)
    assert (q.q_scale(), q.q_zero_point(), q.qscheme()) == (tq.q_scale(), tq.q_zero_point(), engine.per_tensor_affine)
    assert q.dtype is getattr(engine, dtype) and q.is_quantized and not engine.ones(1).is_quantized


def test_quantize_per_channel_is_torchs():
    x, tx = _both(1, (6, 4, 3, 3))
    scales = np.linspace(0.01, 0.05, 6)
    zero_points = np.array([0, 1, -2, 3, 0, 5])
    q = engine.quantize_per_channel(x, engine.from_numpy(scales), engine.from_numpy(zero_points), 0, engine.qint8)
    tq = torch.quantize_per_channel(tx, torch.from_numpy(scales), torch.from_numpy(zero_points), 0, torch.qint8)
    _same(q, tq)
    np.testing.assert_array_equal(q.q_per_channel_scales().numpy(), tq.q_per_channel_scales().numpy())
    np.testing.assert_array_equal(q.q_per_channel_zero_points().numpy(), tq.q_per_channel_zero_points().numpy())
    assert q.q_per_channel_axis() == 0 and q.qscheme() is engine.per_channel_affine
    with pytest.raises(RuntimeError, match="per-channel"):
        q.q_scale()
    with pytest.raises(RuntimeError, match="expected 6 scales"):
        engine.quantize_per_channel(x, engine.ones(5, dtype=engine.float64), engine.zeros(5, dtype=engine.int64), 0,
                                    engine.qint8)


def test_views_and_relu_keep_the_quantization():
    x, tx = _both(2)
    q = engine.quantize_per_tensor(x, 0.05, 128, engine.quint8)
    tq = torch.quantize_per_tensor(tx, 0.05, 128, torch.quint8)
    _same(q.view(2, 5, 21), tq.view(2, 5, 21))
    _same(engine.flatten(q, 1), torch.flatten(tq, 1))
    _same(engine.transpose(q, 1, 2).contiguous(), torch.transpose(tq, 1, 2).contiguous())
    for ours, theirs in zip(q.chunk(2, dim=1), tq.chunk(2, dim=1)):
        _same(ours, theirs)
    _same(engine.relu(q), torch.relu(tq))
    _same(engine.nn.functional.relu(q.clone(), inplace=True), torch.nn.functional.relu(tq.clone(), inplace=True))


def test_quantized_tensors_refuse_other_uses():
    q = engine.quantize_per_tensor(engine.ones(3), 0.1, 0, engine.quint8)
    with pytest.raises(TypeError, match="dequantize"):
        np.asarray(q)
    with pytest.raises(RuntimeError, match="CPU only"):
        q.cuda()
    with pytest.raises(RuntimeError, match="floating point"):
        engine.quantize_per_tensor(engine.ones(3, dtype=engine.int64), 0.1, 0, engine.quint8)
    with pytest.raises(RuntimeError, match="quantized dtype"):
        engine.quantize_per_tensor(engine.ones(3), 0.1, 0, engine.uint8)


def test_repr_names_the_quantization():
    q = engine.quantize_per_tensor(engine.tensor([0.5, -1.0]), 0.5, 2, engine.quint8)
    text = repr(q)
    assert text.startswith("tensor([ 0.5000, -1.0000]") and "dtype=engine.quint8" in text
    assert "quantization_scheme=engine.per_tensor_affine, scale=0.5, zero_point=2)" in text


def _torch_checkpoint(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def test_torch_quantized_checkpoints_load():
    x, tx = _both(3, (4, 3, 2, 2))
    per_tensor = torch.quantize_per_tensor(tx, 0.02, 7, torch.quint8)
    per_channel = torch.quantize_per_channel(tx, torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64),
                                             torch.tensor([0, 1, 2, 3]), 0, torch.qint8)
    loaded = engine.load(_torch_checkpoint({"a": per_tensor, "b": per_channel, "t": torch.qint8}))
    _same(loaded["a"], per_tensor)
    _same(loaded["b"], per_channel)
    assert loaded["t"] is engine.qint8 and loaded["b"].q_per_channel_axis() == 0


def test_engine_saves_quantized_tensors_torch_loads():
    x, tx = _both(4, (4, 3, 2, 2))
    per_tensor = engine.quantize_per_tensor(x, 0.02, 7, engine.quint8)
    per_channel = engine.quantize_per_channel(x, engine.tensor([0.1, 0.2, 0.3, 0.4], dtype=engine.float64),
                                              engine.tensor([0, 1, 2, 3]), 0, engine.qint8)
    buffer = io.BytesIO()
    engine.save({"a": per_tensor, "b": (per_channel, x), "t": engine.qint8}, buffer)
    buffer.seek(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = torch.load(buffer, weights_only=True)
    _same(per_tensor, loaded["a"])
    _same(per_channel, loaded["b"][0])
    assert loaded["b"][0].q_per_channel_axis() == 0 and loaded["t"] is torch.qint8
    np.testing.assert_array_equal(loaded["b"][1].numpy(), x.numpy())
    buffer.seek(0)
    _same(engine.load(buffer)["b"][0], loaded["b"][0])


@pytest.mark.parametrize("channels_last", [False, True])
def test_ops_round_in_the_layout_torch_would_hold(channels_last):
    """ATen's quantized add and hardswish round a few integers differently in channels-last tensors (which
    quantized convolutions give) than in contiguous ones: integers on those ties, in either layout, give torch's."""
    from test_quantized_kernels import _aten_tie_params

    from engine.quantized_tensor import QuantizedTensor

    torch.set_num_threads(engine.get_num_threads())
    torch.backends.quantized.engine = engine.backends.quantized.engine = "fbgemm"
    rng = np.random.default_rng(5)

    def both(q, scale, zero_point):
        ours = QuantizedTensor(q, engine.quint8, scale, zero_point)
        theirs = torch._make_per_tensor_quantized_tensor(torch.from_numpy(q), scale, zero_point)
        if channels_last:
            return ours.contiguous(memory_format=engine.channels_last), theirs.contiguous(
                memory_format=torch.channels_last)
        return ours, theirs

    hardswish = lambda x, r, so: np.rint(x * np.clip(x + np.float32(3), 0, 6) / np.float32(6) * r)  # noqa: E731
    s, z, so, zo, ties = _aten_tie_params(rng, hardswish)
    ours, theirs = both(rng.choice(ties, (2, 17, 7, 9)).astype(np.uint8), s, z)
    _same(engine.ao.nn.quantized.functional.hardswish(ours, so, zo),
          torch.ao.nn.quantized.functional.hardswish(theirs, so, zo))
    add_quarter = lambda x, r, so: np.rint((x + np.float32(0.25)) * (np.float32(1) / np.float32(so)))  # noqa: E731
    s, z, so, zo, ties = _aten_tie_params(rng, add_quarter)
    (a, ta), (b, tb) = both(rng.choice(ties, (2, 17, 7, 9)).astype(np.uint8), s, z), both(
        np.full((2, 17, 7, 9), 50, np.uint8), 0.125, 48)
    adders = [engine.ao.nn.quantized.QFunctional(), torch.ao.nn.quantized.QFunctional()]
    for adder in adders:
        adder.scale, adder.zero_point = so, zo
    out, ref = adders[0].add(a, b), adders[1].add(ta, tb)
    _same(out, ref)
    assert out.is_contiguous(memory_format=engine.channels_last) == channels_last


def test_malformed_quantizer_parameters_are_one_checkpoint_error():
    from engine.serialization.errors import CheckpointError
    from engine.serialization.unpickler import Storage, _rebuild_qtensor

    storage = Storage(np.zeros(6, np.int8), engine.qint8)
    for params in ((engine.per_tensor_affine, "0.1", 0), (engine.per_channel_affine, 0.1, 0, 0),
                   (engine.per_channel_affine, engine.ones(2), engine.zeros(3), 0),
                   (engine.per_channel_affine, engine.ones(2), engine.zeros(2), 5), ("per_channel_affine",)):
        with pytest.raises(CheckpointError):
            _rebuild_qtensor(storage, 0, (2, 3), (3, 1), params, False, None)


def test_loading_names_what_does_not_fit():
    layer = engine.ao.nn.quantized.Conv2d(3, 4, 3)
    state = layer.state_dict()
    bad = dict(state, weight=engine.zeros(4, 3, 3, 3), bias=np.zeros(5, np.float32))
    with pytest.raises(RuntimeError) as caught:
        layer.load_state_dict(bad)
    assert 'While copying the parameter named "weight", expected an engine qint8 quantized tensor' in str(caught.value)
    assert "size mismatch for bias: copying a param with shape engine.Size([5])" in str(caught.value)
    layer.load_state_dict(dict(state, bias=np.arange(4, dtype=np.float64)))  # anything engine.tensor takes
    assert layer.bias().dtype == engine.float32 and layer.bias().tolist() == [0, 1, 2, 3]


def test_older_names_are_the_ao_modules():
    import engine.nn.quantized
    import engine.quantization

    assert engine.quantization is engine.ao.quantization and engine.nn.quantized is engine.ao.nn.quantized
    assert engine.quantization.QuantStub is engine.ao.quantization.QuantStub


def test_derived_values_are_kept_until_an_in_place_op():
    """A conv weight's exactness bound is computed once per weight; in-place ops forget it."""
    from engine.ao.nn.quantized import functional as qF

    q = engine.quantize_per_tensor(engine.tensor([[-1.0, 2.0], [0.5, -3.0]]), 0.5, 10, engine.quint8)
    calls = []
    assert q._memo("k", lambda: calls.append(1) or 7) == 7 and q._memo("k", lambda: calls.append(1) or 8) == 7
    q.relu_()
    assert q._memo("k", lambda: calls.append(1) or 9) == 9 and len(calls) == 2
    qF.hardsigmoid(q, inplace=True)
    assert q._memo("k", lambda: 10) == 10 and q.q_scale() == 1 / 256
