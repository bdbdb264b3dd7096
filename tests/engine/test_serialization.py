"""engine.serialization: torch checkpoints (zip and legacy) read without torch, safetensors, malicious pickles."""
import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import engine
from engine import nn
from engine.serialization import UnpicklingError, load, read_metadata, save

FORMATS = {"zip": {}, "legacy": {"_use_new_zipfile_serialization": False}}


def _torch_save(obj, path, fmt):
    torch.save(obj, path, **FORMATS[fmt])
    return path


def _equal(ours, theirs):
    """An engine tensor equals a torch tensor in shape, values and (bfloat16 -> float32) dtype."""
    expected = theirs.float() if theirs.dtype == torch.bfloat16 else theirs
    return tuple(ours.shape) == tuple(expected.shape) and np.array_equal(ours.numpy(), expected.numpy())


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool])
def test_dtypes(tmp_path, fmt, dtype):
    source = torch.arange(-6, 18).reshape(2, 3, 4)
    tensor = (source > 3) if dtype == torch.bool else source.to(dtype)
    loaded = load(_torch_save({"t": tensor}, tmp_path / "c.pth", fmt))
    assert _equal(loaded["t"], tensor)
    name = "float32" if dtype == torch.bfloat16 else str(dtype).split(".")[1]
    expected = getattr(engine, name)
    assert loaded["t"].dtype == expected


@pytest.mark.parametrize("fmt", FORMATS)
def test_views_offsets_strides_and_shared_storage(tmp_path, fmt):
    base = torch.randn(5, 7, generator=torch.Generator().manual_seed(0))
    obj = {"base": base, "t": base.t(), "slice": base[1:4, 2::2], "row": base[3], "scalar": base[2, 5],
           "empty": base[:0], "expanded": torch.randn(3, 1).expand(3, 4)}
    loaded = load(_torch_save(obj, tmp_path / "c.pth", fmt))
    for key, value in obj.items():
        assert _equal(loaded[key], value), key
    assert np.shares_memory(loaded["base"].numpy(), loaded["slice"].numpy())
    assert loaded["t"].shape == (7, 5) and loaded["scalar"].shape == ()


@pytest.mark.parametrize("fmt", FORMATS)
def test_nested_containers_and_parameters(tmp_path, fmt):
    weight = torch.nn.Parameter(torch.ones(2, 2))
    obj = {"model": OrderedDict(w=weight), "epoch": 3, "meta": ("a", [1.5, None], {"k": True}),
           "size": torch.Size([2, 3])}
    loaded = load(_torch_save(obj, tmp_path / "c.pth", fmt))
    assert isinstance(loaded["model"], OrderedDict)
    assert isinstance(loaded["model"]["w"], nn.Parameter) and loaded["model"]["w"].requires_grad
    assert loaded["epoch"] == 3 and loaded["meta"] == ("a", [1.5, None], {"k": True})
    assert tuple(loaded["size"]) == (2, 3)


@pytest.mark.parametrize("fmt", FORMATS)
def test_resnet_state_dict_loads_into_engine_model(tmp_path, fmt):
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                    torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 5)).eval()
    reference[1].running_mean.uniform_()
    ours = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5)).eval()
    ours.load_state_dict(load(_torch_save(reference.state_dict(), tmp_path / "m.pth", fmt)))
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8), dtype=np.float32)
    with torch.no_grad(), engine.no_grad():
        np.testing.assert_allclose(ours(engine.from_numpy(x)).numpy(), reference(torch.from_numpy(x)).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_file_objects_and_big_endian_flag(tmp_path):
    buffer = io.BytesIO()
    torch.save({"x": torch.arange(6.0)}, buffer)
    assert _equal(load(io.BytesIO(buffer.getvalue()))["x"], torch.arange(6.0))
    path = _torch_save({"x": torch.arange(6, dtype=torch.int32)}, tmp_path / "c.pth", "zip")
    rewritten = tmp_path / "big.pth"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(rewritten, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename.endswith("/byteorder"):
                data = b"big"
            elif "/data/" in info.filename:
                data = np.frombuffer(data, dtype="<i4").astype(">i4").tobytes()
            dst.writestr(info, data)
    assert load(rewritten)["x"].numpy().tolist() == list(range(6))


def test_safetensors_round_trip_exact(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Linear(4, 2))
    model[1].running_var.uniform_(0.5, 2.0)
    save(model.state_dict(), tmp_path / "m.safetensors", metadata={"arch": "tiny"})
    loaded = load(tmp_path / "m.safetensors")
    assert sorted(loaded) == sorted(model.state_dict())  # safetensors orders keys itself
    for key, value in model.state_dict().items():
        assert loaded[key].dtype == value.dtype and np.array_equal(loaded[key].numpy(), value.numpy())
    assert loaded["1.num_batches_tracked"].shape == ()
    other = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Linear(4, 2))
    other.load_state_dict(loaded)
    assert all(np.array_equal(a.numpy(), b.numpy()) for a, b in zip(other.state_dict().values(),
                                                                     model.state_dict().values()))
    assert read_metadata(tmp_path / "m.safetensors") == {"format": "pt", "arch": "tiny"}


def test_safetensors_bfloat16_from_the_package(tmp_path):
    from safetensors.torch import save_file

    tensor = torch.randn(3, 4).to(torch.bfloat16)
    save_file({"w": tensor, "i": torch.arange(3)}, str(tmp_path / "b.safetensors"))
    loaded = load(tmp_path / "b.safetensors")
    assert _equal(loaded["w"], tensor) and loaded["i"].numpy().tolist() == [0, 1, 2]


def test_save_rejects_non_state_dicts(tmp_path):
    with pytest.raises(TypeError, match="state_dict"):
        save([engine.ones(2)], tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="value for 'a' is a str"):
        save({"a": "text"}, tmp_path / "x.safetensors")
    assert not os.listdir(tmp_path)


def _payload_pickles(marker):
    """Pickles whose loading would create ``marker``: os.system, eval, exec and a foreign class."""
    command = f"touch {marker}"

    class System:
        def __reduce__(self):
            return os.system, (command,)

    class Eval:
        def __reduce__(self):
            return eval, (f"open({str(marker)!r}, 'w').close()",)

    class Exec:
        def __reduce__(self):
            return exec, (f"open({str(marker)!r}, 'w').close()",)

    return {"posix.system": System(), "builtins.eval": Eval(), "builtins.exec": Exec(),
            "collections.Counter": __import__("collections").Counter("ab")}


@pytest.mark.parametrize("fmt", ["raw", "zip", "legacy"])
@pytest.mark.parametrize("name", ["posix.system", "builtins.eval", "builtins.exec", "collections.Counter"])
def test_malicious_pickles_are_refused_and_do_not_run(tmp_path, fmt, name):
    marker = tmp_path / "pwned"
    payload = {"weight": torch.ones(2), "evil": _payload_pickles(marker)[name]}
    path = tmp_path / "evil.pth"
    if fmt == "raw":
        path.write_bytes(pickle.dumps(payload["evil"], protocol=2))
    else:
        _torch_save(payload, path, fmt)
    with pytest.raises(UnpicklingError, match=f"'{name}'"):
        load(path)
    assert not marker.exists()


def test_weights_only_false_is_refused(tmp_path):
    path = _torch_save({"x": torch.ones(1)}, tmp_path / "c.pth", "zip")
    with pytest.raises(ValueError, match="weights_only=False"):
        load(path, weights_only=False)


def test_bad_files_give_clear_errors(tmp_path):
    (tmp_path / "empty.pth").write_bytes(b"")
    with pytest.raises(UnpicklingError, match="is empty"):
        load(tmp_path / "empty.pth")
    (tmp_path / "text.pth").write_text("hello, not a checkpoint")
    with pytest.raises(UnpicklingError, match="is not a checkpoint"):
        load(tmp_path / "text.pth")
    (tmp_path / "plain.pkl").write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(UnpicklingError, match="invalid magic number"):
        load(tmp_path / "plain.pkl")
    with pytest.raises(FileNotFoundError, match="missing.pth"):
        load(tmp_path / "missing.pth")
    data = _torch_save({"x": torch.randn(1000)}, tmp_path / "z.pth", "zip").read_bytes()
    (tmp_path / "trunc.pth").write_bytes(data[: len(data) // 2])
    with pytest.raises(UnpicklingError, match="truncated|bad zip"):
        load(tmp_path / "trunc.pth")
    legacy = _torch_save({"x": torch.randn(1000)}, tmp_path / "l.pth", "legacy").read_bytes()
    (tmp_path / "trunc_legacy.pth").write_bytes(legacy[:-100])
    with pytest.raises(UnpicklingError, match="truncated"):
        load(tmp_path / "trunc_legacy.pth")
    save({"x": engine.ones(100)}, tmp_path / "s.safetensors")
    blob = (tmp_path / "s.safetensors").read_bytes()
    (tmp_path / "trunc.safetensors").write_bytes(blob[:-8])
    with pytest.raises(UnpicklingError, match="truncated"):
        load(tmp_path / "trunc.safetensors")


def test_out_of_bounds_tensor_geometry_is_refused(tmp_path):
    path = _torch_save({"x": torch.arange(4.0)}, tmp_path / "c.pth", "legacy")
    data = path.read_bytes()
    # the pickled size tuple (4,) becomes (400,): a view past the storage must not be built
    patched = data.replace(b"K\x04\x85", b"M\x90\x01\x85", 1)
    assert patched != data
    (tmp_path / "bad.pth").write_bytes(patched)
    with pytest.raises(UnpicklingError, match="does not fit"):
        load(tmp_path / "bad.pth")
