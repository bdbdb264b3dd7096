"""engine.serialization: torch checkpoints (zip and legacy) read without torch, safetensors and their header
checks, malicious pickles, one error type for bad files, and mmap= (memory-mapped or read into memory)."""
import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
import torch

import engine
from engine import nn
from engine.serialization import CheckpointError, UnpicklingError, load, read_metadata, save

FORMATS = {"zip": {}, "legacy": {"_use_new_zipfile_serialization": False}}


def _torch_save(obj, path, fmt):
    torch.save(obj, path, **FORMATS[fmt])
    return path


def _equal(ours, theirs):
    """An engine tensor equals a torch tensor in shape and values (bfloat16 compared widened to float32)."""
    if theirs.dtype == torch.bfloat16:
        ours, theirs = ours.float(), theirs.float()
    return tuple(ours.shape) == tuple(theirs.shape) and np.array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64, torch.bfloat16, torch.int64,
                                   torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool])
def test_dtypes(tmp_path, fmt, dtype):
    source = torch.arange(-6, 18).reshape(2, 3, 4)
    tensor = (source > 3) if dtype == torch.bool else source.to(dtype)
    loaded = load(_torch_save({"t": tensor}, tmp_path / "c.pth", fmt))
    assert _equal(loaded["t"], tensor)
    assert loaded["t"].dtype == getattr(engine, str(dtype).split(".")[1])


@pytest.mark.parametrize("fmt", FORMATS)
def test_bfloat16_round_trips_with_torch(tmp_path, fmt):
    """engine.save writes BFloat16Storage that torch.load reads bit for bit, views and all, and back."""
    ours = engine.randn(3, 5).bfloat16()
    save({"t": ours, "view": ours[:, 1:4]}, tmp_path / "ours.pth")
    theirs = torch.load(tmp_path / "ours.pth")
    assert theirs["t"].dtype == torch.bfloat16 and _equal(ours, theirs["t"])
    assert _equal(ours[:, 1:4], theirs["view"]) and theirs["view"].storage_offset() == 1
    back = load(_torch_save(theirs, tmp_path / "theirs.pth", fmt))
    assert back["t"].dtype == engine.bfloat16 and _equal(back["t"], theirs["t"])


def test_bfloat16_is_widened_to_float32_without_ml_dtypes(tmp_path, monkeypatch):
    """Where ml_dtypes (engine.bfloat16's backing) is missing, a bfloat16 checkpoint still loads, widened
    exactly to float32, and asking for a bfloat16 tensor says what to install."""
    tensor = torch.randn(4, 3).to(torch.bfloat16)
    path = _torch_save({"t": tensor}, tmp_path / "c.pth", "zip")
    monkeypatch.setattr(engine.bfloat16, "np", None)
    loaded = load(path)["t"]
    assert loaded.dtype == engine.float32 and np.array_equal(loaded.numpy(), tensor.float().numpy())
    with pytest.raises(RuntimeError, match="engine.bfloat16 tensors need the ml_dtypes package: pip install"):
        loaded.to(engine.bfloat16)


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


@pytest.mark.parametrize("fmt", FORMATS)
def test_pickle_protocol_4_checkpoints(tmp_path, fmt):
    obj = {"w": torch.arange(5.0), "names": ["conv", "bn"] * 40, "epoch": 3}
    path = tmp_path / "p4.pth"
    torch.save(obj, path, pickle_protocol=4, **FORMATS[fmt])
    loaded = load(path)
    assert _equal(loaded["w"], obj["w"]) and loaded["names"] == obj["names"] and loaded["epoch"] == 3


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
    assert loaded["w"].dtype == engine.bfloat16 and _equal(loaded["w"], tensor)
    assert loaded["i"].numpy().tolist() == [0, 1, 2]


def test_safetensors_bfloat16_written_for_the_package(tmp_path):
    from safetensors.torch import load_file

    ours = engine.randn(2, 7).bfloat16()
    save({"w": ours}, tmp_path / "b.safetensors")
    theirs = load_file(str(tmp_path / "b.safetensors"))["w"]
    assert theirs.dtype == torch.bfloat16 and _equal(ours, theirs)


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
            "collections.defaultdict": __import__("collections").defaultdict(int, a=1)}


@pytest.mark.parametrize("fmt", ["raw", "zip", "legacy"])
@pytest.mark.parametrize("name", ["posix.system", "builtins.eval", "builtins.exec", "collections.defaultdict"])
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


def test_checkpoint_error_is_the_one_documented_type(tmp_path):
    assert issubclass(CheckpointError, pickle.UnpicklingError) and UnpicklingError is CheckpointError
    legacy = _torch_save({"x": torch.randn(50)}, tmp_path / "l.pth", "legacy").read_bytes()
    for cut in (3, 40, len(legacy) // 2):
        (tmp_path / "cut.pth").write_bytes(legacy[:cut])
        with pytest.raises(CheckpointError, match=r"^cannot load '.*cut\.pth': ") as caught:
            load(tmp_path / "cut.pth")
        assert "\n" not in str(caught.value)


def _safetensors_file(path, header, data=b""):
    """A safetensors file with the given JSON header (a dict or raw bytes) and data bytes."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw + data)
    return path


GOOD_ENTRY = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("header, data, message", [
    (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, b"", "nested too deeply"),
    ({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, bytes(8), r"shape \[-2\]"),
    ({"w": {"dtype": "F32", "shape": [4.7], "data_offsets": [0, 16]}}, bytes(16), r"shape \[4\.7\]"),
    ({"w": {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, bytes(4), r"shape \[true\]|shape \[True\]"),
    ({"w": GOOD_ENTRY, "v": GOOD_ENTRY}, bytes(8), "'v' at bytes \\[0, 8\\) overlaps|'w' at bytes \\[0, 8\\) overlaps"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12), "leaves a gap"),
    ({"w": GOOD_ENTRY}, bytes(12), "span 8 bytes of data, the file holds 12"),
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8), "needs 12 bytes"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, bytes(8), "needs 8 bytes"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}}, bytes(8), "expected 2 non-negative integers"),
    ({"w": {"dtype": "F8_E5M2", "shape": [1], "data_offsets": [0, 1]}}, bytes(1),
     "dtype 'F8_E5M2', which engine does not read"),
    ({"w": {"dtype": "F32", "shape": [2]}}, bytes(8), "lacks dtype, shape or data_offsets"),
    ({"__metadata__": {"a": 1}, "w": GOOD_ENTRY}, bytes(8), "must map strings to strings"),
    ({"__metadata__": ["a"], "w": GOOD_ENTRY}, bytes(8), "must map strings to strings"),
    (b'{"w":' + json.dumps(GOOD_ENTRY).encode() + b',"w":' + json.dumps(GOOD_ENTRY).encode() + b"}", bytes(8),
     "'w' appears twice"),
    (b'{"w": \xff}', b"", "not UTF-8"),
    (b'{"w": 1,}', b"", "bad JSON"),
])
def test_safetensors_headers_are_checked_as_the_spec_requires(tmp_path, header, data, message):
    path = _safetensors_file(tmp_path / "bad.safetensors", header, data)
    with pytest.raises(CheckpointError, match=message) as caught:
        load(path)
    assert "bad.safetensors" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(CheckpointError, match=message):
        read_metadata(path)


def test_safetensors_header_length_is_bounded(tmp_path):
    path = tmp_path / "huge.safetensors"
    path.write_bytes((100_000_001).to_bytes(8, "little") + b"{" + bytes(64))
    with pytest.raises(CheckpointError, match="over the format's limit of 100000000"):
        load(path)
    path.write_bytes((1000).to_bytes(8, "little") + b"{}")
    with pytest.raises(CheckpointError, match="header of 1000 bytes in a file of 10 bytes"):
        load(path)


def test_valid_safetensors_edge_cases_load(tmp_path):
    header = {"__metadata__": {"k": "v"}, "z": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]},
              "s": {"dtype": "I64", "shape": [], "data_offsets": [0, 8]},
              "b": {"dtype": "BOOL", "shape": [2], "data_offsets": [8, 10]}}
    path = _safetensors_file(tmp_path / "edge.safetensors", header,
                             np.int64(-3).tobytes() + bytes([1, 0]))
    loaded = load(path)
    assert loaded["z"].shape == (0, 3) and loaded["s"].item() == -3 and loaded["b"].tolist() == [True, False]
    assert read_metadata(path) == {"k": "v"}


def _mmap_script(path, body):
    """Run ``body`` in a fresh interpreter (a SIGBUS there fails the test instead of killing pytest)."""
    script = f"import engine, numpy as np\nfrom engine import nn\npath = {str(path)!r}\n{body}\nprint('ok')"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                            cwd=os.path.dirname(os.path.dirname(engine.__file__)))
    assert result.returncode == 0 and result.stdout.strip() == "ok", (result.returncode, result.stderr[-2000:])


def test_loaded_tensors_do_not_follow_later_changes_to_the_file(tmp_path):
    _mmap_script(tmp_path / "weights", """
for suffix in ('.safetensors', '.pth'):
    file = path + suffix
    model = nn.Linear(64, 32)
    engine.save(model.state_dict(), file)
    expected = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    copied = engine.load(file)                      # mmap=None: read into memory
    mapped = engine.load(file, mmap=True)
    fresh = nn.Linear(64, 32)
    fresh.load_state_dict(mapped)                   # copies into the module's own arrays
    del mapped
    engine.save({k: v * 0 + 7 for k, v in model.state_dict().items()}, file + '.new')
    with open(file, 'r+b') as f:                    # rewrite in place, then cut the file short
        f.write(open(file + '.new', 'rb').read())
        f.truncate(10)
    for key, value in expected.items():
        assert np.array_equal(copied[key].numpy(), value), key
        assert np.array_equal(fresh.state_dict()[key].numpy(), value), key
""")


def test_mmap_true_maps_the_file_and_needs_a_path(tmp_path):
    path = tmp_path / "w.pth"
    save({"w": engine.arange(6.0)}, path)
    mapped = load(path, mmap=True)["w"].numpy()
    assert isinstance(mapped.base, np.memmap) or any(isinstance(b, np.memmap) for b in _bases(mapped))
    assert not any(isinstance(b, np.memmap) for b in _bases(load(path)["w"].numpy()))
    with pytest.raises(ValueError, match=r"mmap=True\) maps a file: f must be a path"):
        load(io.BytesIO(path.read_bytes()), mmap=True)
    loaded = load(io.BytesIO(path.read_bytes()))["w"]
    loaded.add_(1)  # tensors read from a file object are writable too
    assert loaded.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def _bases(array):
    """``array``'s chain of bases (through as_strided's wrapper objects)."""
    chain = []
    base = getattr(array, "base", None)
    while base is not None:
        chain.append(base)
        base = getattr(base, "base", getattr(base, "obj", None))  # a memoryview's is .obj
    return chain
