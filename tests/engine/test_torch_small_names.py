"""Small torch-level names against torch: GradScaler, Stream/Event, the quantized-parameter functions, the build
flags, is_distributed, Tensor.record_stream / const_data_ptr / module_load, and lobpcg."""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.small_names as small
from engine.events import Event, Stream
from engine.lobpcg import lobpcg


def test_grad_scaler_is_amps():
    assert small.GradScaler is engine.amp.GradScaler and torch.GradScaler is torch.amp.GradScaler


def test_build_flags_and_is_distributed():
    assert (small.has_lapack, small.has_mkl, small.has_openmp, small.has_spectral) == (True, False, False, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert isinstance(torch.has_lapack, bool) and isinstance(torch.has_spectral, bool)
    assert small.is_distributed(engine.ones(2)) is torch.is_distributed(torch.ones(2)) is False


def test_cpu_stream_as_torchs():
    ours, ref = Stream("cpu"), torch.Stream("cpu")
    for attr in ("device_type", "device_index", "stream_id"):
        assert getattr(ours, attr) == getattr(ref, attr)
    assert str(ours.device) == str(ref.device) == "cpu"
    assert repr(ours) == repr(ref).replace("torch.", "engine.")
    assert ours.query() is ref.query() is True
    assert ours.synchronize() is ref.synchronize() is None
    assert ours.wait_event(Event("cpu")) is ref.wait_event(torch.Event("cpu")) is None
    assert ours == Stream("cpu") and hash(ours) == hash(Stream("cpu"))
    with ours:
        pass
    for s in (ours, ref):
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            s.record_event()
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            s.wait_stream(s)


def test_cpu_event_as_torchs():
    for mod in (engine.events, torch):
        e = mod.Event("cpu", enable_timing=True)
        assert e.query() is True and e.synchronize() is None
        assert e.device.type == "cpu" and e.event_id == 0
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            e.record()
        assert e.wait() is None
        with pytest.raises(ValueError, match="Both events must be recorded before calculating elapsed time."):
            e.elapsed_time(mod.Event("cpu", enable_timing=True))
        with pytest.raises(ValueError, match="Both events must be created with argument 'enable_timing=True'."):
            mod.Event("cpu").elapsed_time(mod.Event("cpu"))
    assert repr(Event("cpu", enable_timing=True)) == repr(torch.Event("cpu", enable_timing=True)).replace(
        "torch.", "engine.")


def test_stream_and_event_wrap_cuda(cuda):
    s = Stream("cuda")
    assert s.device_type == 1 and s.device_index == 0 and s.device.type == "cuda"
    start, end = Event("cuda", enable_timing=True), Event("cuda", enable_timing=True)
    with s:
        start.record(s)
        x = engine.ones(64, device="cuda") * 2
        end.record(s)
    end.synchronize()
    assert end.query() and s.query() and x.sum().item() == 128
    assert isinstance(start.elapsed_time(end), float)
    assert isinstance(s.record_event(), Event)
    s.wait_stream(Stream("cuda"))
    start.wait(s)


def _quantized_pair():
    a = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    scales, zps = [0.1, 0.2], [1, 2]
    per_tensor = (engine.quantize_per_tensor(engine.tensor(a), 0.1, 2, engine.quint8),
                  torch.quantize_per_tensor(torch.tensor(a), 0.1, 2, torch.quint8))
    per_channel = (engine.quantize_per_channel(engine.tensor(a), engine.tensor(scales, dtype=engine.float64),
                                               engine.tensor(zps), 0, engine.qint8),
                   torch.quantize_per_channel(torch.tensor(a), torch.tensor(scales, dtype=torch.float64),
                                              torch.tensor(zps), 0, torch.qint8))
    return per_tensor, per_channel


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
def test_quantized_parameter_functions_against_torch():
    (q, tq), (qc, tqc) = _quantized_pair()
    assert small.q_scale(q) == pytest.approx(torch.q_scale(tq))
    assert small.q_zero_point(q) == torch.q_zero_point(tq)
    np.testing.assert_array_equal(small.int_repr(q).numpy(), torch.int_repr(tq).numpy())
    np.testing.assert_allclose(small.q_per_channel_scales(qc).numpy(), torch.q_per_channel_scales(tqc).numpy())
    np.testing.assert_array_equal(small.q_per_channel_zero_points(qc).numpy(),
                                  torch.q_per_channel_zero_points(tqc).numpy())
    assert small.q_per_channel_axis(qc) == torch.q_per_channel_axis(tqc) == 0
    np.testing.assert_array_equal(small.int_repr(qc).numpy(), torch.int_repr(tqc).numpy())


def test_quantized_parameter_function_errors():
    (q, _), _ = _quantized_pair()
    with pytest.raises(NotImplementedError, match=r"Could not run 'aten::q_scale' with arguments from the 'CPU' "
                                                  r"backend\."):
        small.q_scale(engine.ones(2))
    with pytest.raises(RuntimeError, match=r"Expected quantizer->qscheme\(\) == kPerChannelAffine"):
        small.q_per_channel_scales(q)


def test_record_stream_const_data_ptr_module_load():
    with pytest.raises(NotImplementedError, match=r"Could not run 'aten::record_stream' with arguments from the "
                                                  r"'CPU' backend\."):
        engine.ones(2).record_stream(Stream("cpu"))
    t = engine.arange(3.0)
    assert t.const_data_ptr() == t.data_ptr() == t[0:].const_data_ptr()
    for T in (engine, torch):
        target, other = T.ones(3), T.arange(3.0)
        loaded = target.module_load(other)
        assert loaded is not target and loaded.tolist() == target.tolist() == [0.0, 1.0, 2.0]
        assigned = T.ones(3).module_load(other, assign=True)
        assert assigned is not other and assigned.data_ptr() == other.data_ptr()


def test_record_stream_on_cuda_is_accepted(cuda):
    x = engine.ones(4, device="cuda")
    assert x.record_stream(Stream("cuda")) is None


def _spd(seed, m, batch=()):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((*batch, m, m))
    return M @ np.swapaxes(M, -1, -2) + m * np.eye(m)


@pytest.mark.parametrize("m, k, largest, method", [(10, 2, True, "ortho"), (12, 2, True, "basic")])
def test_lobpcg_eigenvalues_against_torch(m, k, largest, method):
    engine.manual_seed(m)
    torch.manual_seed(m)
    A = _spd(m, m)
    vals, vecs = lobpcg(engine.tensor(A), k=k, largest=largest, method=method)
    ref = torch.lobpcg(torch.tensor(A), k=k, largest=largest, method=method)[0].numpy()
    np.testing.assert_allclose(vals.numpy(), ref, rtol=1e-8)
    v = vecs.numpy()
    np.testing.assert_allclose(A @ v, v * vals.numpy(), atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("m, k, largest", [(31, 3, False), (23, 4, None), (13, 1, True)])
def test_lobpcg_larger_problems_against_eigh(m, k, largest):
    engine.manual_seed(m)
    A = _spd(m, m)
    vals, _ = lobpcg(engine.tensor(A), k=k, largest=largest)
    ref = np.linalg.eigvalsh(A)
    np.testing.assert_allclose(vals.numpy(), ref[:k] if largest is False else ref[::-1][:k], rtol=1e-8)


def test_lobpcg_batch_generalized_float32_and_initial_block():
    engine.manual_seed(0)
    A = _spd(1, 17, (2,))
    vals, _ = lobpcg(engine.tensor(A), k=2)
    np.testing.assert_allclose(vals.numpy(), np.linalg.eigvalsh(A)[:, ::-1][:, :2], rtol=1e-8)
    B = np.diag(np.linspace(1.0, 2.0, 17))
    vals, _ = lobpcg(engine.tensor(A[0]), k=2, B=engine.tensor(B))
    Binv_half = np.diag(1 / np.sqrt(np.diag(B)))
    np.testing.assert_allclose(vals.numpy(), np.linalg.eigvalsh(Binv_half @ A[0] @ Binv_half)[::-1][:2], rtol=1e-8)
    vals32, _ = lobpcg(engine.tensor(A[0], dtype=engine.float32), k=2)
    assert vals32.dtype == engine.float32
    np.testing.assert_allclose(vals32.numpy(), np.linalg.eigvalsh(A[0])[::-1][:2], rtol=1e-4)
    X = np.random.default_rng(2).standard_normal((17, 3))
    vals, _ = lobpcg(engine.tensor(A[0]), X=engine.tensor(X))
    assert vals.shape == (3,)
    np.testing.assert_allclose(vals.numpy(), np.linalg.eigvalsh(A[0])[::-1][:3], rtol=1e-8)


def test_lobpcg_errors_as_torchs():
    A = _spd(3, 10)
    for fn, T in ((lobpcg, engine), (torch.lobpcg, torch)):
        with pytest.raises(ValueError, match=r"LOBPCG algorithm is not applicable when the number of A rows \(=10\) "
                                             r"is smaller than 3 x the number of requested eigenpairs \(=4\)"):
            fn(T.tensor(A), k=4)
        with pytest.raises(AssertionError, match=r"A must be square, got shape"):
            fn(T.tensor(A[:, :9]), k=2)
