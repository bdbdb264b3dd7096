"""flowvision.hub against a real local HTTP server: cache, resume, hashes, faults, offline mode, file lock."""
import hashlib
import io
import multiprocessing
import os
import time

import numpy as np
import pytest
import torch

import engine
from engine.serialization import read_metadata
from flowvision import hub
from http_server import FileServer, file_download_worker, hub_download_worker


def _checkpoint(fmt="zip", seed=0, channels=8):
    """Bytes of a small state_dict saved by torch in ``fmt``, and the state_dict."""
    g = torch.Generator().manual_seed(seed)
    state = {"conv.weight": torch.randn(channels, 3, 3, 3, generator=g), "fc.bias": torch.randn(10, generator=g),
             "bn.num_batches_tracked": torch.tensor(7)}
    buffer = io.BytesIO()
    torch.save(state, buffer, _use_new_zipfile_serialization=(fmt == "zip"))
    return buffer.getvalue(), state


def _named(data, stem="weights"):
    """A torch.hub-style file name carrying the first 8 hex digits of ``data``'s sha256."""
    return f"{stem}-{hashlib.sha256(data).hexdigest()[:8]}.pth"


def _assert_state(loaded, state):
    assert sorted(loaded) == sorted(state)
    for key, value in state.items():
        assert np.array_equal(loaded[key].numpy(), value.numpy())


@pytest.fixture
def server():
    with FileServer() as s:
        yield s


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWVISION_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FLOWVISION_OFFLINE", raising=False)
    hub.set_dir(None)
    return tmp_path / "home" / "checkpoints"


def _gets(server, name):
    return [r for r in server.requests if r[0] == "/" + name]


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_first_download_then_cache_hit(server, cache, fmt, capsys):
    data, state = _checkpoint(fmt)
    name = _named(data)
    server.files[name] = data
    _assert_state(hub.load_state_dict_from_url(server.url(name), progress=True), state)
    assert len(_gets(server, name)) == 1
    assert sorted(os.listdir(cache)) == [".locks", name[:-4] + ".safetensors"]  # the download was converted
    assert os.listdir(cache / ".locks") == [name + ".lock"]
    meta = read_metadata(cache / (name[:-4] + ".safetensors"))
    assert meta["source_sha256"] == hashlib.sha256(data).hexdigest() and meta["source_url"] == server.url(name)
    _assert_state(hub.load_state_dict_from_url(server.url(name), progress=False), state)
    assert len(_gets(server, name)) == 1


def test_progress_bar_shows_bytes(server, capsys):
    data, _ = _checkpoint()
    name = _named(data)
    server.files[name] = data
    hub.load_state_dict_from_url(server.url(name), progress=True)
    err = capsys.readouterr().err
    assert name in err and "B" in err and "/s" in err
    hub.download_url_to_file(server.url(name), str(hub.get_dir()) + "/copy.pth", progress=False)
    assert capsys.readouterr().err == ""


def test_get_dir_set_dir_and_model_dir(server, tmp_path, monkeypatch):
    assert hub.get_dir() == str(tmp_path / "home")
    hub.set_dir(tmp_path / "other")
    try:
        assert hub.get_dir() == str(tmp_path / "other")
        data, state = _checkpoint()
        server.files["plain.pth"] = data
        _assert_state(hub.load_state_dict_from_url(server.url("plain.pth"), model_dir=str(tmp_path / "md")), state)
        assert (tmp_path / "md" / "plain.safetensors").exists()
    finally:
        hub.set_dir(None)


def test_resume_after_cut_transfer(server, cache):
    data, state = _checkpoint(channels=4096)  # 442 KB
    name = _named(data)
    server.files[name] = data
    server.fault = ("cut", 300_000)
    _assert_state(hub.load_state_dict_from_url(server.url(name), progress=False), state)
    ranges = [r[1] for r in _gets(server, name)]
    assert ranges[0] is None and len(ranges) == 2
    assert 200_000 < int(ranges[1][len("bytes="):-1]) <= 300_000
    assert not (cache / (name + ".partial")).exists()


def test_hash_mismatch_leaves_nothing(server, cache):
    data, _ = _checkpoint()
    name = _named(data)
    server.files[name] = data
    server.fault = "wrong"
    with pytest.raises(hub.HashMismatchError, match=f'{server.url(name)}: expected sha256 "{name[8:16]}", got "'):
        hub.load_state_dict_from_url(server.url(name), progress=False)
    assert os.listdir(cache) == [".locks"]


def test_full_sha256_is_checked(server):
    data, state = _checkpoint()
    server.files["plain.pth"] = data
    with pytest.raises(hub.HashMismatchError, match="expected sha256"):
        hub.load_state_dict_from_url(server.url("plain.pth"), sha256="0" * 64, progress=False)
    _assert_state(hub.load_state_dict_from_url(server.url("plain.pth"), sha256=hashlib.sha256(data).hexdigest(),
                                               progress=False), state)


def _hub_file(server, data, sha256):
    """Publish ``data`` as the Hugging Face hub does: a ``resolve`` URL redirecting to the stored file with its
    sha256 in ``X-Linked-Etag``. Returns the resolve URL."""
    name = "timm/tiny.in1k/resolve/main/model.safetensors"
    server.files["storage/blob"] = data
    server.redirects[name] = ("storage/blob", {"X-Linked-Etag": f'"{sha256}"', "X-Linked-Size": str(len(data))})
    return server.url(name)


def test_sha256_stated_by_the_hub_is_checked(server, cache, monkeypatch):
    arrays = {"conv.weight": torch.randn(64, 3, 7, 7, generator=torch.Generator().manual_seed(0))}
    from safetensors.torch import save
    data = save(arrays)
    url = _hub_file(server, data, "0" * 64)
    with pytest.raises(hub.HashMismatchError, match=r'expected sha256 "0{64}" \(as the server stated it\)'):
        hub.load_state_dict_from_url(url, file_name="tiny.in1k.safetensors", progress=False)
    assert os.listdir(cache) == [".locks"]

    url = _hub_file(server, data, hashlib.sha256(data).hexdigest())
    server.fault = ("cut", 20_000)
    _assert_state(hub.load_state_dict_from_url(url, file_name="tiny.in1k.safetensors", progress=False), arrays)
    assert [r[1] for r in _gets(server, "storage/blob")][-2:] == [None, "bytes=20000-"]
    assert sorted(os.listdir(cache)) == [".locks", "tiny.in1k.safetensors"]  # kept as downloaded: already safetensors

    def no_hashing(path):
        raise AssertionError("a cached file without a known hash is not hashed again")
    monkeypatch.setattr(hub, "_file_sha256", no_hashing)
    _assert_state(hub.load_state_dict_from_url(url, file_name="tiny.in1k.safetensors", progress=False), arrays)


@pytest.mark.parametrize("fault, code", [("404", 404), ("500", 500)])
def test_http_errors(server, cache, fault, code):
    server.files["x-00000000.pth"] = b"x"
    server.fault = fault
    with pytest.raises(hub.DownloadError, match=f"HTTP Error {code}.*x-00000000.pth"):
        hub.load_state_dict_from_url(server.url("x-00000000.pth"), progress=False)
    assert len(server.requests) == 1
    assert os.listdir(cache) == [".locks"]


def test_connection_refused_is_retried_then_names_the_cache_path(cache, monkeypatch):
    monkeypatch.setattr(hub.time, "sleep", lambda s: None)
    with FileServer() as closed:
        url = closed.url("gone-12345678.pth")
    with pytest.raises(hub.DownloadError, match=f"after 5 attempts.*place it at {cache}/gone-12345678.pth"):
        hub.load_state_dict_from_url(url, progress=False)


def test_offline_uses_cache_or_names_the_path(server, cache, monkeypatch):
    data, state = _checkpoint()
    name = _named(data)
    server.files[name] = data
    monkeypatch.setenv("FLOWVISION_OFFLINE", "1")
    with pytest.raises(RuntimeError, match=f"FLOWVISION_OFFLINE.*Download {server.url(name)} and place it at "
                                           f"{cache}/{name}"):
        hub.load_state_dict_from_url(server.url(name))
    assert server.requests == []
    os.makedirs(cache, exist_ok=True)
    (cache / name).write_bytes(data)  # a manual download
    _assert_state(hub.load_state_dict_from_url(server.url(name)), state)
    assert server.requests == []


def test_corrupt_cached_files_are_detected(server, cache):
    data, state = _checkpoint()
    name = _named(data)
    server.files[name] = data
    hub.load_state_dict_from_url(server.url(name), progress=False)
    converted = cache / (name[:-4] + ".safetensors")
    converted.write_bytes(converted.read_bytes()[:-10])  # truncated conversion: fetched again
    _assert_state(hub.load_state_dict_from_url(server.url(name), progress=False), state)
    assert len(server.requests) == 2
    converted.write_bytes(b"\x00" * 16)  # unreadable header: fetched again
    _assert_state(hub.load_state_dict_from_url(server.url(name), progress=False), state)
    assert len(server.requests) == 3
    converted.unlink()
    (cache / name).write_bytes(data[:-50])  # truncated manual download: fetched again
    with pytest.warns(UserWarning, match="corrupt"):
        _assert_state(hub.load_state_dict_from_url(server.url(name), progress=False), state)
    assert len(server.requests) == 4
    converted.unlink()
    (cache / name).write_bytes(bytes([data[0] ^ 1]) + data[1:])  # same size, wrong bytes
    with pytest.warns(UserWarning, match="corrupt"):
        _assert_state(hub.load_state_dict_from_url(server.url(name), progress=False), state)
    assert len(server.requests) == 5
    assert sorted(os.listdir(cache)) == [".locks", converted.name]


def test_conversion_from_another_source_is_replaced(server, cache):
    old, _ = _checkpoint(seed=1)
    new, state = _checkpoint(seed=2)
    server.files["plain.pth"] = old
    hub.load_state_dict_from_url(server.url("plain.pth"), progress=False)
    server.files["plain.pth"] = new
    _assert_state(hub.load_state_dict_from_url(server.url("plain.pth"), sha256=hashlib.sha256(new).hexdigest(),
                                               progress=False), state)
    assert len(server.requests) == 2


def test_nested_checkpoint_is_kept_as_downloaded(server, cache):
    state = {"model": {"w": torch.arange(6.0)}, "epoch": 3}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    server.files["nested.pth"] = buffer.getvalue()
    loaded = hub.load_state_dict_from_url(server.url("nested.pth"), progress=False)
    assert loaded["epoch"] == 3 and np.array_equal(loaded["model"]["w"].numpy(), np.arange(6.0, dtype=np.float32))
    assert sorted(os.listdir(cache)) == [".locks", "nested.pth"]
    hub.load_state_dict_from_url(server.url("nested.pth"), progress=False)
    assert len(server.requests) == 1


@pytest.mark.slow  # two processes
def test_two_processes_end_with_one_valid_file(server, cache, tmp_path):
    data, state = _checkpoint()
    name = _named(data)
    server.files[name] = data
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        results = pool.map(hub_download_worker, [(str(tmp_path / "home"), server.url(name))] * 2)
    assert results[0] == results[1]
    assert len(_gets(server, name)) == 1
    assert sorted(os.listdir(cache)) == [".locks", name[:-4] + ".safetensors"]
    assert read_metadata(cache / (name[:-4] + ".safetensors"))["source_sha256"] == hashlib.sha256(data).hexdigest()


@pytest.mark.slow  # two processes
def test_concurrent_file_downloads_take_turns(server, tmp_path):
    data, _ = _checkpoint(channels=2048)  # 221 KB, sent in 16 KB blocks over about 0.4 s
    server.files["big.pth"] = data
    server.block, server.delay = 1 << 14, 0.03
    dst = str(tmp_path / "big.pth")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        digests = pool.map(file_download_worker, [(server.url("big.pth"), dst)] * 2)
    assert digests == [hashlib.sha256(data).hexdigest()] * 2
    assert sorted(os.listdir(tmp_path)) == [".locks", "big.pth"]


def test_resume_checks_content_range(server, cache):
    data, state = _checkpoint(channels=64)
    server.files["plain.pth"] = data
    os.makedirs(cache)
    (cache / "plain.pth.partial").write_bytes(data[:1000])
    server.fault = "from zero"  # answers the Range request with the whole file from byte 0
    _assert_state(hub.load_state_dict_from_url(server.url("plain.pth"), progress=False), state)
    assert [r[1] for r in server.requests] == ["bytes=1000-"]


def test_download_that_does_not_load_is_deleted(server, cache):
    data, state = _checkpoint(channels=64)
    server.files["plain.pth"] = data
    os.makedirs(cache)
    (cache / "plain.pth.partial").write_bytes(b"\0" * 1000)  # not a prefix of the file, and no hash to say so
    with pytest.raises(hub.CorruptDownloadError, match="plain.pth did not give a readable checkpoint"):
        hub.load_state_dict_from_url(server.url("plain.pth"), progress=False)
    assert os.listdir(cache) == [".locks"]
    _assert_state(hub.load_state_dict_from_url(server.url("plain.pth"), progress=False), state)


def test_close_delimited_body_cut_short(server, cache, monkeypatch):
    monkeypatch.setattr(hub.time, "sleep", lambda s: None)
    data, state = _checkpoint(channels=64)
    server.files["plain.pth"] = data
    server.no_length = True
    server.fault = ("cut", len(data) // 2)  # ends like a complete body: nothing states the size
    with pytest.raises(hub.CorruptDownloadError, match="did not give a readable checkpoint"):
        hub.load_state_dict_from_url(server.url("plain.pth"), progress=False)
    assert os.listdir(cache) == [".locks"]
    _assert_state(hub.load_state_dict_from_url(server.url("plain.pth"), progress=False), state)


def test_stated_size_is_checked(server, tmp_path, monkeypatch):
    monkeypatch.setattr(hub.time, "sleep", lambda s: None)
    server.files["f.bin"] = b"x" * 5000
    server.fault = ("cut", 3000)
    hub.download_url_to_file(server.url("f.bin"), str(tmp_path / "f.bin"), progress=False)
    assert (tmp_path / "f.bin").read_bytes() == b"x" * 5000
    assert [r[1] for r in server.requests] == [None, "bytes=3000-"]


@pytest.mark.slow  # waits out 1.5 s of deadlines per case
@pytest.mark.parametrize("block, delay", [(1, 0.2), (500, 5.0)], ids=["trickle", "stall"])
def test_deadline(server, tmp_path, monkeypatch, block, delay):
    server.files["f.bin"] = b"x" * 1000
    server.block, server.delay = block, delay
    dst = str(tmp_path / "f.bin")
    start = time.monotonic()
    with pytest.raises(hub.DownloadError, match=r"did not finish within 1 s \(the deadline; set "
                                                r"FLOWVISION_DOWNLOAD_TIMEOUT or timeout= for more\).*place it at"):
        hub.download_url_to_file(server.url("f.bin"), dst, progress=False, timeout=1)
    assert time.monotonic() - start < 3 and not os.path.exists(dst)
    monkeypatch.setenv(hub.ENV_TIMEOUT, "0.5")
    with pytest.raises(hub.DownloadError, match="within 0.5 s") as info:
        hub.load_state_dict_from_url(server.url("f.bin"), model_dir=str(tmp_path / "md"), progress=False)
    assert info.value.reason == "not finished within 0.5 s"


def test_timeout_values(monkeypatch):
    assert hub.download_timeout() == hub.DEFAULT_TIMEOUT
    monkeypatch.setenv(hub.ENV_TIMEOUT, "12.5")
    assert hub.download_timeout() == 12.5 and hub.download_timeout(3) == 3.0
    monkeypatch.setenv(hub.ENV_TIMEOUT, "soon")
    with pytest.raises(ValueError, match="FLOWVISION_DOWNLOAD_TIMEOUT must be a number of seconds, got 'soon'"):
        hub.download_timeout()
    with pytest.raises(ValueError, match="positive number of seconds, got 0"):
        hub.download_timeout(0)


def test_offline_never_deletes_a_corrupt_file(server, cache, monkeypatch):
    data, _ = _checkpoint()
    name = _named(data)
    monkeypatch.setenv("FLOWVISION_OFFLINE", "1")
    os.makedirs(cache)
    placed = bytes([data[0] ^ 1]) + data[1:]
    (cache / name).write_bytes(placed)
    with pytest.raises(hub.HashMismatchError, match=rf"{cache}/{name} is corrupt \(sha256 \w+, expected "
                                                   rf"{name[8:16]}\) and FLOWVISION_OFFLINE is set: it was moved to "
                                                   rf"{cache}/{name}\.corrupt; download .* and place it at"):
        hub.load_state_dict_from_url(server.url(name))
    assert (cache / (name + ".corrupt")).read_bytes() == placed and not (cache / name).exists()
    assert server.requests == []


def _same_entries(ours, expected):
    """Two loaded state_dict values alike: tensors, quantized tensors (integers and parameters), dtypes, tuples."""
    assert type(ours) is type(expected)
    if isinstance(expected, tuple):
        assert len(ours) == len(expected)
        for a, b in zip(ours, expected):
            _same_entries(a, b)
    elif getattr(expected, "is_quantized", False):
        assert (ours.dtype, ours.qscheme(), ours.shape) == (expected.dtype, expected.qscheme(), expected.shape)
        np.testing.assert_array_equal(ours.int_repr().numpy(), expected.int_repr().numpy())
        np.testing.assert_array_equal(ours.dequantize().numpy(), expected.dequantize().numpy())
    elif isinstance(expected, engine.Tensor):
        np.testing.assert_array_equal(ours.numpy(), expected.numpy())
    else:
        assert ours is expected


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_quantized_checkpoints_are_cached_as_safetensors(server, cache):
    """A quantized state_dict (per-tensor and per-channel quantized tensors, a qint8 dtype, a linear layer's
    (weight, bias) pair) is converted like a flat one, and the cached file gives the same state_dict back."""
    torch.backends.quantized.engine = "fbgemm"
    model = torch.nn.Sequential(torch.ao.nn.quantized.Quantize(0.1, 3, torch.quint8),
                                torch.ao.nn.quantized.Conv2d(3, 4, 3), torch.ao.nn.quantized.Linear(5, 2))
    weights = torch.quantize_per_channel(torch.randn(4, 3, 3, 3), torch.rand(4, dtype=torch.float64) + 0.01,
                                         torch.arange(4), 0, torch.qint8)
    model[1].set_weight_bias(weights, torch.randn(4))
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    data = buffer.getvalue()
    name = _named(data, "quantized")
    server.files[name] = data
    expected = engine.load(io.BytesIO(data))
    for _ in range(2):  # the download, converted; then the cache
        loaded = hub.load_state_dict_from_url(server.url(name), progress=False)
        assert list(loaded) == list(expected)
        for key, value in expected.items():
            _same_entries(loaded[key], value)
    assert sorted(os.listdir(cache)) == [".locks", name[:-4] + ".safetensors"] and len(_gets(server, name)) == 1
