"""engine.save writes PyTorch's zip checkpoint format: torch.load(weights_only=True) reads it, engine.load
reads it and what torch.save writes, for nested training checkpoints (epoch, model, optimizer, scheduler)."""
import io
import os
import struct
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import engine
import engine.optim
from engine import nn
from engine.serialization import CheckpointError, load, save, save_safetensors

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _same(ours, theirs, where="checkpoint"):
    """An object loaded by engine equals one loaded by torch: containers, plain values, tensors (values,
    dtype, shape), parameters and requires_grad."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, engine.Tensor), where
        assert isinstance(ours, nn.Parameter) == isinstance(theirs, torch.nn.Parameter), where
        assert ours.requires_grad == theirs.requires_grad, where
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1], where
        assert tuple(ours.shape) == tuple(theirs.shape), where
        assert np.array_equal(ours.detach().numpy(), theirs.detach().numpy()), where
    elif isinstance(theirs, torch.dtype):
        assert ours is getattr(engine, str(theirs).split(".")[1]), where
    elif isinstance(theirs, torch.device):
        assert str(ours) == str(theirs), where
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs), where
        for key in theirs:
            _same(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert type(ours).__name__ == type(theirs).__name__ or isinstance(theirs, torch.Size), where
        assert len(ours) == len(theirs), where
        for index, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"{where}[{index}]")
    else:
        assert type(ours) is type(theirs) and ours == theirs, where


def _engine_model():
    return nn.Sequential(nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                         nn.Linear(4 * 3 * 3, 5))


def _torch_model():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, bias=False), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                               torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, 5))


def _batch(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 3, 5, 5), dtype=np.float32), rng.integers(0, 5, 3)


def _engine_step(model, optimizer, seed):
    x, y = _batch(seed)
    optimizer.zero_grad()
    nn.functional.cross_entropy(model(engine.from_numpy(x)), engine.from_numpy(y)).backward()
    optimizer.step()


def _torch_step(model, optimizer, seed):
    x, y = _batch(seed)
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    optimizer.step()


OPTIMIZERS = {
    "sgd_momentum": (lambda p: engine.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-4),
                     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-4)),
    "adam": (lambda p: engine.optim.Adam(p, lr=0.01, betas=(0.8, 0.99)),
             lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99))),
}


def _engine_training(kind, steps=2):
    """A trained engine model, its optimizer and a StepLR scheduler after ``steps`` steps."""
    engine.manual_seed(0)
    model = _engine_model()
    optimizer = OPTIMIZERS[kind][0](model.parameters())
    scheduler = engine.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for step in range(steps):
        _engine_step(model, optimizer, step)
        scheduler.step()
    return model, optimizer, scheduler


@pytest.mark.parametrize("kind", OPTIMIZERS)
def test_engine_checkpoint_resumes_in_engine_and_in_torch(tmp_path, kind):
    model, optimizer, scheduler = _engine_training(kind)
    checkpoint = {"epoch": 3, "state_dict": model.state_dict(), "optimizer": optimizer.state_dict(),
                  "scheduler": scheduler.state_dict(), "best_acc1": 0.625, "arch": "tiny"}
    path = tmp_path / "checkpoint.pth.tar"
    save(checkpoint, path)
    theirs = torch.load(path, weights_only=True)
    ours = load(path)
    _same(ours, theirs)
    assert theirs["state_dict"]._metadata == model.state_dict()._metadata  # module versions for torch
    # resume in engine: the same next step as the model that kept training
    resumed = _engine_model()
    resumed.load_state_dict(ours["state_dict"])
    resumed_optimizer = OPTIMIZERS[kind][0](resumed.parameters())
    resumed_optimizer.load_state_dict(ours["optimizer"])
    _engine_step(model, optimizer, 7)
    _engine_step(resumed, resumed_optimizer, 7)
    for a, b in zip(model.state_dict().values(), resumed.state_dict().values()):
        assert np.array_equal(a.numpy(), b.numpy())
    # resume in torch from engine's file: the same next step up to float rounding
    reference = _torch_model()
    reference.load_state_dict(theirs["state_dict"])
    reference_optimizer = OPTIMIZERS[kind][1](reference.parameters())
    reference_optimizer.load_state_dict(theirs["optimizer"])
    _torch_step(reference, reference_optimizer, 7)
    for key, value in reference.state_dict().items():
        np.testing.assert_allclose(resumed.state_dict()[key].numpy(), value.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=key)


@pytest.mark.parametrize("kind", OPTIMIZERS)
def test_torch_checkpoint_resumes_in_engine(tmp_path, kind):
    torch.manual_seed(0)
    reference = _torch_model()
    reference_optimizer = OPTIMIZERS[kind][1](reference.parameters())
    scheduler = torch.optim.lr_scheduler.StepLR(reference_optimizer, step_size=1, gamma=0.5)
    for step in range(2):
        _torch_step(reference, reference_optimizer, step)
        scheduler.step()
    path = tmp_path / "checkpoint.pth"
    torch.save({"epoch": 2, "model": reference.state_dict(), "optimizer": reference_optimizer.state_dict(),
                "scheduler": scheduler.state_dict()}, path)
    loaded = load(path)
    _same(loaded, torch.load(path, weights_only=True))
    model = _engine_model()
    model.load_state_dict(loaded["model"])
    optimizer = OPTIMIZERS[kind][0](model.parameters())
    optimizer.load_state_dict(loaded["optimizer"])
    engine_scheduler = engine.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    engine_scheduler.load_state_dict(loaded["scheduler"])
    assert engine_scheduler.get_last_lr() == scheduler.get_last_lr()
    _torch_step(reference, reference_optimizer, 5)
    _engine_step(model, optimizer, 5)
    for key, value in reference.state_dict().items():
        np.testing.assert_allclose(model.state_dict()[key].numpy(), value.numpy(), rtol=1e-5, atol=1e-6, err_msg=key)


def _tensors_of_every_kind():
    """Engine tensors: every dtype, 0-d, empty, transposed, strided, broadcast views, parameters."""
    rng = np.random.default_rng(1)
    base = engine.from_numpy(rng.standard_normal((5, 7)))
    out = OrderedDict()
    for name in DTYPES:
        values = rng.integers(-50, 50, (3, 4)) if name != "bool" else rng.integers(0, 2, (3, 4))
        out[name] = engine.from_numpy(values.astype(getattr(engine, name if name != "bool" else "bool").np))
    out.update(base=base, transposed=base.t(), strided=base[1:4, 2::2], row=base[3], scalar=base[2, 5],
               zero_d=engine.tensor(2.5), empty=engine.zeros(0, 3), broadcast=engine.randn(3, 1).expand(3, 4),
               parameter=nn.Parameter(engine.randn(2, 3)), frozen=nn.Parameter(engine.ones(2), requires_grad=False),
               needs_grad=engine.randn(2, requires_grad=True))
    return out


def test_values_dtypes_views_and_shared_storage_round_trip(tmp_path):
    tensors = _tensors_of_every_kind()
    path = tmp_path / "tensors.pt"
    save(tensors, path)
    theirs = torch.load(path, weights_only=True)
    ours = load(path)
    for key, value in tensors.items():
        expected = value.detach().numpy()
        for loaded in (theirs[key].detach().numpy(), ours[key].detach().numpy()):
            assert loaded.dtype == expected.dtype and loaded.shape == expected.shape, key
            assert np.array_equal(loaded, expected), key
        assert theirs[key].stride() == value.stride() or value.numel() == 0, key
        assert theirs[key].requires_grad == value.requires_grad, key
        assert isinstance(ours[key], nn.Parameter) == isinstance(value, nn.Parameter), key
    storage = theirs["base"].untyped_storage().data_ptr()
    for view in ("transposed", "strided", "row", "scalar"):
        assert theirs[view].untyped_storage().data_ptr() == storage, view
        assert np.shares_memory(ours[view].numpy(), ours["base"].numpy()), view
    assert not np.shares_memory(ours["base"].numpy(), ours["float64"].numpy())


def test_plain_values_containers_and_identity(tmp_path):
    weight = engine.randn(2, 2)
    checkpoint = {"ints": [0, 255, 256, 65536, -1, 2 ** 31, -2 ** 40, 2 ** 100], "float": -1.25e-30,
                  "text": "épsilon ∑ \ud800", "flags": (True, False, None), "empty": ((), [], {}),
                  "dtype": engine.float16, "size": engine.Size([2, 3]), "device": engine.device("cpu"),
                  "numpy": {"scalar": np.float32(0.5), "int": np.int64(7), "array": np.arange(3, dtype=np.int32)},
                  "int_keys": {0: "a", 1: "b"}, "twice": [weight, weight]}
    path = tmp_path / "plain.pth"
    save(checkpoint, path)
    theirs = torch.load(path, weights_only=True)
    ours = load(path)
    _same(ours["ints"], theirs["ints"])
    assert theirs["ints"] == checkpoint["ints"] and theirs["text"] == checkpoint["text"]
    for key in ("float", "text", "flags", "empty", "int_keys"):
        _same(ours[key], theirs[key])
        assert theirs[key] == checkpoint[key]
    assert theirs["dtype"] is torch.float16 and ours["dtype"] is engine.float16
    assert theirs["size"] == torch.Size([2, 3]) and isinstance(ours["size"], engine.Size) and ours["size"] == (2, 3)
    assert theirs["device"] == torch.device("cpu") and ours["device"] == engine.device("cpu")
    assert theirs["numpy"]["scalar"] == 0.5 and type(ours["numpy"]["int"]) is int
    assert ours["numpy"]["array"].dtype == engine.int32 and theirs["numpy"]["array"].tolist() == [0, 1, 2]
    assert ours["twice"][0] is ours["twice"][1] and theirs["twice"][0] is theirs["twice"][1]


def test_self_containing_list_round_trips(tmp_path):
    loop = [1]
    loop.append(loop)
    save({"loop": loop}, tmp_path / "loop.pth")
    for loaded in (load(tmp_path / "loop.pth"), torch.load(tmp_path / "loop.pth", weights_only=True)):
        assert loaded["loop"][0] == 1 and loaded["loop"][1] is loaded["loop"]


def test_file_objects_permissions_and_record_alignment(tmp_path):
    tensors = {"w": engine.randn(3, 5), "b": engine.arange(7, dtype=engine.int16), "f": engine.ones(1, dtype=engine.float64)}
    buffer = io.BytesIO()
    save(tensors, buffer)
    for loaded in (load(io.BytesIO(buffer.getvalue())), torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)):
        assert all(np.array_equal(np.asarray(loaded[k]), tensors[k].numpy()) for k in tensors)
    for umask in (0o022, 0o007):
        previous = os.umask(umask)
        try:
            save(tensors, tmp_path / f"umask{umask:o}.pth")
            save(tensors, tmp_path / f"umask{umask:o}.safetensors")
        finally:
            os.umask(previous)
        for suffix in (".pth", ".safetensors"):
            assert (tmp_path / f"umask{umask:o}{suffix}").stat().st_mode & 0o777 == 0o666 & ~umask
    assert sorted(os.listdir(tmp_path)) == sorted(f"umask{u:o}{s}" for u in (0o022, 0o007) for s in (".pth", ".safetensors"))
    data = buffer.getvalue()
    with zipfile.ZipFile(buffer) as archive:
        names = archive.namelist()
        for info in archive.infolist():
            name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
            assert (info.header_offset + 30 + name_length + extra_length) % 64 == 0, info.filename
            assert info.compress_type == zipfile.ZIP_STORED
    assert names[0] == "archive/data.pkl" and "archive/version" in names and "archive/byteorder" in names


def test_safetensors_by_name_or_explicitly(tmp_path):
    from safetensors.numpy import load_file

    tensors = {"w": engine.randn(3, 5), "i": engine.arange(4)}
    save(tensors, tmp_path / "m.SafeTensors", metadata={"arch": "tiny"})
    buffer = io.BytesIO()
    save_safetensors(tensors, buffer, metadata={"arch": "tiny"})
    (tmp_path / "from_buffer.safetensors").write_bytes(buffer.getvalue())
    for name in ("m.SafeTensors", "from_buffer.safetensors"):
        assert (tmp_path / name).read_bytes()[8:9] == b"{"
        arrays = load_file(str(tmp_path / name))
        assert all(np.array_equal(arrays[k], tensors[k].numpy()) for k in tensors)
    with pytest.raises(ValueError, match=r"metadata= into safetensors files only"):
        save(tensors, tmp_path / "m.pth", metadata={"arch": "tiny"})
    with pytest.raises(TypeError, match="value for 'nested' is a dict"):
        save({"nested": tensors}, tmp_path / "nested.safetensors")


def test_unwritable_values_are_named_and_nothing_is_left(tmp_path):
    with pytest.raises(TypeError, match=r"the checkpoint\['optimizer'\]\['state'\]\[0\], a frozenset"):
        save({"optimizer": {"state": [frozenset({1, 2})]}}, tmp_path / "bad.pth")
    with pytest.raises(TypeError, match="dtype <U1"):
        save({"w": np.zeros(2, dtype="<U1")}, tmp_path / "bad.pth")
    with pytest.raises(TypeError, match="path or a binary file object"):
        save({"w": engine.ones(1)}, 42)
    assert os.listdir(tmp_path) == []


def test_interrupted_write_leaves_no_file(tmp_path, monkeypatch):
    import engine.serialization.torch_save as torch_save

    def fail(*args):
        raise OSError("disk full")

    (tmp_path / "old.pth").write_bytes(b"previous checkpoint")
    monkeypatch.setattr(torch_save, "_little_endian_bytes", fail)
    with pytest.raises(OSError, match="disk full"):
        save({"w": engine.ones(3)}, tmp_path / "old.pth")
    assert os.listdir(tmp_path) == ["old.pth"] and (tmp_path / "old.pth").read_bytes() == b"previous checkpoint"


def test_load_of_our_file_checks_what_it_reads(tmp_path):
    save({"w": engine.ones(3)}, tmp_path / "c.pth")
    data = bytearray((tmp_path / "c.pth").read_bytes())
    data[100] ^= 0xFF  # inside data.pkl: the zip's CRC no longer matches
    (tmp_path / "bad.pth").write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match=r"cannot load '.*bad\.pth': corrupt or truncated checkpoint"):
        load(tmp_path / "bad.pth")


def test_gpu_tensors_are_saved_with_their_device(cuda, tmp_path):
    tensors = {"w": engine.randn(3, 4).cuda(), "cpu": engine.arange(3)}
    save(tensors, tmp_path / "gpu.pth")
    theirs = torch.load(tmp_path / "gpu.pth", weights_only=True, map_location="cpu")
    with zipfile.ZipFile(tmp_path / "gpu.pth") as archive:
        assert b"cuda:0" in archive.read("archive/data.pkl")
    assert np.array_equal(theirs["w"].numpy(), tensors["w"].cpu().numpy())
    loaded = load(tmp_path / "gpu.pth", map_location="cuda")
    assert loaded["w"].device.type == "cuda" and np.array_equal(loaded["w"].cpu().numpy(), tensors["w"].cpu().numpy())
