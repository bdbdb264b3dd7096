"""``engine.cuda`` and the device side of tensors: device queries, streams and events, memory statistics,
random numbers drawn on the GPU, pinned memory and non-blocking copies, checkpoints mapped to the GPU,
optimizer state on the GPU, and float16 on the GPU; on a GPU (marked ``cuda``) and on the emulation."""
import numpy as np
import pytest
from op_check import assert_close

import engine
import engine.nn.functional as F
from engine.utils.data import DataLoader, TensorDataset


def test_device_queries(cuda):
    assert engine.cuda.is_available() and engine.cuda.device_count() >= 1
    assert engine.cuda.current_device() == 0
    engine.cuda.set_device(0)
    engine.cuda.set_device("cuda:0")
    assert isinstance(engine.cuda.get_device_name(), str) and engine.cuda.get_device_name()
    assert len(engine.cuda.get_device_capability()) == 2
    x = engine.ones(3, device="cuda")
    assert x.is_cuda and x.device == engine.device("cuda", 0) and x.get_device() == 0
    with engine.device("cuda:0"):
        assert engine.zeros(2, device="cuda").device.index == 0
    engine.cuda.synchronize()


def test_streams_and_events(cuda):
    x = engine.arange(10, dtype=engine.float32, device="cuda")
    s = engine.cuda.Stream()
    start, end = engine.cuda.Event(enable_timing=True), engine.cuda.Event(enable_timing=True)
    start.record()
    with engine.cuda.stream(s):
        y = x * 2
    s.synchronize()
    end.record()
    end.synchronize()
    assert y.cpu().tolist() == [2.0 * i for i in range(10)]
    assert start.elapsed_time(end) >= 0
    assert engine.cuda.current_stream() == engine.cuda.current_stream()
    s.wait_stream(engine.cuda.current_stream())
    assert s.query() in (True, False)


def test_memory_statistics(cuda):
    engine.cuda.empty_cache()
    engine.cuda.reset_peak_memory_stats()
    before = engine.cuda.memory_allocated()
    x = engine.zeros(1 << 20, device="cuda")
    if cuda == "gpu":  # the emulation keeps numpy's memory out of the pool
        assert engine.cuda.memory_allocated() >= before + 4 * (1 << 20)
        assert engine.cuda.max_memory_allocated() >= engine.cuda.memory_allocated()
        assert engine.cuda.memory_reserved() >= engine.cuda.memory_allocated()
        free, total = engine.cuda.mem_get_info()
        assert 0 < free <= total
    del x
    assert engine.cuda.max_memory_allocated() >= engine.cuda.memory_allocated()


def test_random_numbers_are_drawn_on_the_gpu_and_seeded(cuda):
    engine.manual_seed(3)
    a = engine.randn(4, 5, device="cuda")
    b = engine.rand(100, device="cuda", dtype=engine.float64)
    assert a.device.type == "cuda" and a.dtype == engine.float32 and b.dtype == engine.float64
    assert 0 <= float(b.min()) and float(b.max()) < 1
    engine.manual_seed(3)
    assert np.array_equal(engine.randn(4, 5, device="cuda").cpu().numpy(), a.cpu().numpy())
    engine.cuda.manual_seed(4)
    assert not np.array_equal(engine.randn(4, 5, device="cuda").cpu().numpy(), a.cpu().numpy())
    ints = engine.randint(2, 9, (50,), device="cuda")
    assert ints.dtype == engine.int64 and ints.device.type == "cuda" and 2 <= int(ints.min()) and int(ints.max()) < 9
    perm = engine.randperm(20, device="cuda")
    assert sorted(perm.cpu().tolist()) == list(range(20))
    assert engine.bernoulli(engine.full((1000,), 0.25, device="cuda")).device.type == "cuda"


def test_dropout_masks_on_the_gpu(cuda):
    engine.manual_seed(0)
    x = engine.ones(200, 50, device="cuda", requires_grad=True)
    y = F.dropout(x, 0.3, training=True)
    kept = (y != 0).float().mean().item()
    assert y.device.type == "cuda" and abs(kept - 0.7) < 0.03
    assert_close(y[y != 0].detach().cpu().numpy(), np.full(int((y != 0).sum()), 1 / 0.7, np.float32), 1e-6)
    y.sum().backward()
    assert np.array_equal(x.grad.cpu().numpy(), y.detach().cpu().numpy())


def test_pinned_memory_and_non_blocking_copies(cuda):
    x = engine.randn(3, 4)
    pinned = x.pin_memory()
    assert pinned.is_pinned() and not x.is_pinned() and np.array_equal(pinned.numpy(), x.numpy())
    y = pinned.cuda(non_blocking=True)
    back = y.to("cpu", non_blocking=True)
    engine.cuda.synchronize()
    assert np.array_equal(back.numpy(), x.numpy())
    batches = list(DataLoader(TensorDataset(engine.randn(6, 2), engine.arange(6)), batch_size=4, pin_memory=True))
    assert all(t.is_pinned() for batch in batches for t in batch)
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        y.pin_memory()


def test_checkpoints_map_to_the_gpu(cuda, tmp_path):
    state = {"w": engine.randn(3, 4), "nested": {"b": engine.arange(3)}}
    path = tmp_path / "state.safetensors"
    engine.save({"w": state["w"], "b": state["nested"]["b"]}, path)
    for where in ("cuda", "cuda:0", engine.device("cuda", 0)):
        loaded = engine.load(path, map_location=where)
        assert all(v.device.type == "cuda" for v in loaded.values())
        assert np.array_equal(loaded["w"].cpu().numpy(), state["w"].numpy())
    assert engine.load(path, map_location="cpu")["w"].device.type == "cpu"
    with pytest.raises(ValueError, match="map_location as a device"):
        engine.load(path, map_location=42)


@pytest.mark.parametrize("make", [lambda p: engine.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True),
                                  lambda p: engine.optim.Adam(p, lr=0.01), lambda p: engine.optim.AdamW(p, lr=0.01)],
                         ids=["sgd", "adam", "adamw"])
def test_optimizer_state_stays_on_the_gpu(cuda, make):
    engine.manual_seed(1)
    cpu_model = engine.nn.Linear(5, 3)
    gpu_model = engine.nn.Linear(5, 3).cuda()
    gpu_model.load_state_dict(cpu_model.state_dict())
    x = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32)
    results = []
    for model, device in ((cpu_model, "cpu"), (gpu_model, "cuda")):
        optimizer = make(model.parameters())
        scheduler = engine.optim.lr_scheduler.CosineAnnealingLR(optimizer, 5)
        for _ in range(3):
            optimizer.zero_grad()
            model(engine.from_numpy(x).to(device)).pow(2).mean().backward()
            optimizer.step()
            scheduler.step()
        for state in optimizer.state.values():
            assert all(v.device.type in (device, "cpu") for v in state.values() if isinstance(v, engine.Tensor))
            assert any(v.device.type == device for v in state.values() if isinstance(v, engine.Tensor) and v.ndim)
        results.append(model.weight.detach().cpu().numpy())
    assert_close(results[1], results[0], 1e-5)


def test_float16_on_the_gpu(cuda):
    """float16 tensors go through the kernels (computed in float32) and keep their dtype."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 9, 8)).astype(np.float16)
    w = (rng.standard_normal((4, 3, 3, 3)) * 0.2).astype(np.float16)
    ops = [lambda a, b: F.conv2d(a, b, None, 1, 1), lambda a, b: F.max_pool2d(a, 2),
           lambda a, b: F.interpolate(a, scale_factor=2, mode="bilinear"), lambda a, b: F.adaptive_avg_pool2d(a, 3),
           lambda a, b: F.relu(a) * 2, lambda a, b: F.batch_norm(a, None, None, training=True)]
    for op in ops:
        out = op(engine.from_numpy(x).cuda(), engine.from_numpy(w).cuda())
        ref = op(engine.from_numpy(x.astype(np.float32)), engine.from_numpy(w.astype(np.float32)))
        assert out.dtype == engine.float16 and out.device.type == "cuda"
        assert_close(out.cpu().numpy().astype(np.float32), ref.numpy(), 2e-3)


def test_host_tensors_assigned_into_device_tensors(cuda):
    """As torch: a slice copies a CPU tensor in, and a 0-dim CPU value goes anywhere, advanced indices too."""
    x = engine.zeros(2, 3, device="cuda")
    x[:, 1:] = engine.tensor([[1.0, 2.0], [3.0, 4.0]])
    x[0, 0] = engine.tensor(5.0)
    x[[1], 0] = engine.tensor(7.0)
    assert x.device.type == "cuda" and x.cpu().tolist() == [[5.0, 1.0, 2.0], [7.0, 3.0, 4.0]]


def test_tf32_switches():
    """Off by default, switchable as in torch, whatever the machine."""
    assert engine.backends.cuda.matmul.allow_tf32 is False and engine.backends.cudnn.allow_tf32 is False
    try:
        engine.backends.cuda.matmul.allow_tf32 = True
        engine.backends.cudnn.allow_tf32 = True
        assert engine.backends.cuda.matmul.allow_tf32 and engine.backends.cudnn.allow_tf32
    finally:
        engine.backends.cuda.matmul.allow_tf32 = False
        engine.backends.cudnn.allow_tf32 = False
    engine.backends.cudnn.benchmark = True  # accepted, as scripts set it
    engine.backends.cudnn.benchmark = False
