"""engine.save/engine.load against torch.save/torch.load, both ways, over seeded random checkpoints and the
cases a differential fuzzer found: storage offsets counted from each storage (zip, legacy, safetensors),
requires_grad of plain tensors, torch's lazy conjugate/negative bits, uint16/32/64 tensors and dtypes,
pickle protocols, the legacy format written, Counter/bytearray, tensors and parameters with Python attributes,
clear refusals of what engine cannot hold, and BUILD opcodes that would change objects beyond the checkpoint."""
import collections
import io
import pickle
import zipfile

import numpy as np
import pytest
import torch
from safetensors.torch import load as safetensors_load, save as safetensors_save, save_file as safetensors_save_file

import engine
from engine import nn
from engine.serialization import CheckpointError, load, save, save_safetensors

TORCH_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                torch.float32, torch.float64, torch.bfloat16, torch.complex64, torch.complex128, torch.uint16,
                torch.uint32, torch.uint64]
FORMATS = {"zip": True, "legacy": False}


def _name(dtype):
    return str(dtype).split(".")[1]


def _random(rng, dtype, shape):
    """A torch tensor of ``dtype`` and ``shape`` with seeded values spanning the type."""
    n = int(np.prod(shape))
    if dtype == torch.bool:
        return torch.from_numpy(rng.integers(0, 2, n).astype(bool)).reshape(shape)
    if dtype.is_floating_point or dtype.is_complex:
        values = torch.from_numpy(rng.standard_normal(2 * n))
        values = torch.complex(values[:n], values[n:]) if dtype.is_complex else values[:n]
        return values.to(dtype).reshape(shape)
    info = torch.iinfo(dtype)
    return torch.from_numpy(rng.integers(max(info.min, -2 ** 62), min(info.max, 2 ** 62), n)).to(dtype).reshape(shape)


def _bits(tensor):
    """The elements of an engine or torch tensor as bytes in logical order, and its dtype's name."""
    if isinstance(tensor, torch.Tensor):
        tensor = tensor.detach().resolve_conj().resolve_neg()
        array = tensor.view(torch.int16).numpy() if tensor.dtype == torch.bfloat16 else tensor.numpy()
        return np.ascontiguousarray(array).tobytes(), _name(tensor.dtype)
    array = np.asarray(tensor.detach()._data)
    return np.ascontiguousarray(array).tobytes(), tensor.dtype.name


def _same_tensor(ours, theirs):
    """Same dtype, shape, bits, strides, storage offset, requires_grad and parameter-ness."""
    assert _bits(ours) == _bits(theirs)
    assert tuple(ours.shape) == tuple(theirs.shape)
    if theirs.numel() > 1:
        assert tuple(ours.stride()) == tuple(theirs.stride())
    assert ours.storage_offset() == theirs.storage_offset()
    assert ours.requires_grad == theirs.requires_grad
    assert isinstance(ours, nn.Parameter) == isinstance(theirs, torch.nn.Parameter)


def _torch_checkpoint(rng, legacy, protocol):
    """The bytes torch.save writes for a checkpoint of every dtype (but the unsigned ones torch cannot read back
    from a legacy file), views with offsets, parameters and tensors that require grad."""
    tensors = {_name(dtype): _random(rng, dtype, (3, 4)) for dtype in (TORCH_DTYPES[:-3] if legacy else TORCH_DTYPES)}
    base = tensors["float32"].requires_grad_(True)
    obj = {"tensors": tensors, "t": base.t(), "tail": base[1:, 2:], "row": tensors["int16" if legacy else "uint16"][2],
           "strided": tensors["int64"].reshape(-1).as_strided((2, 2), (3, 1), 5), "empty": base[3:],
           "p": torch.nn.Parameter(torch.ones(2), requires_grad=bool(rng.integers(2))),
           "meta": collections.OrderedDict(epoch=int(rng.integers(100)), dtype=torch.uint32, bf=torch.bfloat16)}
    buffer = io.BytesIO()
    torch.save(obj, buffer, pickle_protocol=protocol, _use_new_zipfile_serialization=not legacy)
    return buffer.getvalue()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("fmt", FORMATS)
def test_torch_checkpoints_load_with_torchs_offsets_grads_and_dtypes(seed, fmt):
    rng = np.random.default_rng(seed)
    data = _torch_checkpoint(rng, not FORMATS[fmt], int(rng.choice([2, 3, 4, 5])))
    theirs = torch.load(io.BytesIO(data), weights_only=False)
    ours = load(io.BytesIO(data))
    for key in theirs["tensors"]:
        _same_tensor(ours["tensors"][key], theirs["tensors"][key])
    for key in ("t", "tail", "row", "strided", "empty", "p"):
        _same_tensor(ours[key], theirs[key])
    assert ours["meta"]["dtype"] is engine.uint32 and ours["meta"]["bf"] is engine.bfloat16
    assert np.shares_memory(ours["tail"]._data, ours["tensors"]["float32"]._data)


def test_offsets_count_from_the_storage_not_the_file(tmp_path):
    """as_strided with a storage offset reads the tensor's own storage, as torch's does."""
    base = torch.arange(12.0)
    torch.save({"pad": torch.ones(100), "view": base[4:]}, tmp_path / "c.pth")
    view = load(tmp_path / "c.pth", mmap=True)["view"]
    assert view.storage_offset() == 4
    assert view.as_strided((3,), (1,), 0).tolist() == [0.0, 1.0, 2.0]
    torch.save({"u": torch.arange(6).to(torch.uint16)[2:].reshape(2, 2).t()}, tmp_path / "u.pth")
    untyped = load(tmp_path / "u.pth")["u"]  # a uint16 view of an untyped (byte) storage
    assert untyped.storage_offset() == 2 and untyped.as_strided((2,), (1,), 1).tolist() == [1, 2]
    safetensors_save_file({"a": torch.arange(4.0), "b": torch.ones(3)}, tmp_path / "s.safetensors")
    for tensor in load(tmp_path / "s.safetensors").values():
        assert tensor.storage_offset() == 0 and tensor.as_strided((1,), (1,), 0).dtype == engine.float32


@pytest.mark.parametrize("bit", ["conj", "neg"])
def test_lazy_conjugate_and_negative_bits_are_applied(bit):
    z = torch.tensor([1 + 2j, -3 - 0.5j])
    tensor = z.conj() if bit == "conj" else z.conj().imag  # imag of a conjugate view carries the negative bit
    buffer = io.BytesIO()
    torch.save({"x": tensor}, buffer)
    ours = load(io.BytesIO(buffer.getvalue()))["x"]
    assert _bits(ours) == _bits(tensor)


def test_a_real_tensor_marked_conjugate_is_refused():
    buffer = io.BytesIO()
    torch.save({"x": torch.tensor([1.0])}, buffer)
    data = _rezip(buffer.getvalue(), lambda pk: pk.replace(b")R", b")R}" + _text("conj") + b"\x88s", 1))
    with pytest.raises(CheckpointError, match="marked conjugate"):
        load(io.BytesIO(data))


def _rezip(data, edit):
    """A copy of the zip checkpoint ``data`` with its data.pkl passed through ``edit``."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for info in source.infolist():
            content = source.read(info.filename)
            archive.writestr(info, edit(content) if info.filename.endswith("data.pkl") else content)
    return out.getvalue()


def _engine_checkpoint(rng, dtypes):
    """An engine checkpoint of tensors of ``dtypes``, sharing views, parameters and plain values; and the same
    tensors as torch tensors, to compare with."""
    theirs = {_name(dtype): _random(rng, dtype, (3, 4)) for dtype in dtypes}
    ours = {}
    for key, tensor in theirs.items():
        if tensor.dtype == torch.bfloat16:
            ours[key] = engine.from_numpy(tensor.float().numpy()).to(engine.bfloat16)
        else:
            ours[key] = engine.from_numpy(tensor.numpy().copy())
    ours["float32"].requires_grad_(True)
    obj = {"tensors": ours, "t": ours["int32"].t(), "tail": ours["int64"][1:, 2:], "grad_view": ours["float32"][1:],
           "p": nn.Parameter(engine.ones(2), requires_grad=False), "set": {1, "a"}, "complex": 1 - 2j,
           "counter": collections.Counter("aab"), "bytes": bytearray(b"\x00\xff"), "dtype": engine.uint16}
    return obj, theirs


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("fmt", FORMATS)
def test_engine_checkpoints_load_in_torch_bit_exact(fmt, protocol):
    dtypes = TORCH_DTYPES[:-3] if fmt == "legacy" else TORCH_DTYPES  # torch cannot load legacy uint16..64
    obj, reference = _engine_checkpoint(np.random.default_rng(protocol), dtypes)
    buffer = io.BytesIO()
    save(obj, buffer, pickle_protocol=protocol, _use_new_zipfile_serialization=FORMATS[fmt])
    theirs = torch.load(io.BytesIO(buffer.getvalue()), weights_only=protocol == 2)  # torch warns on others
    for key, tensor in reference.items():
        assert _bits(theirs["tensors"][key]) == _bits(tensor)
    for key in ("t", "tail", "grad_view"):
        _same_tensor(obj[key], theirs[key])
    assert theirs["tail"].untyped_storage().data_ptr() == theirs["tensors"]["int64"].untyped_storage().data_ptr()
    assert theirs["set"] == {1, "a"} and theirs["complex"] == 1 - 2j and theirs["dtype"] is torch.uint16
    assert theirs["counter"] == collections.Counter("aab") and type(theirs["counter"]) is collections.Counter
    assert theirs["bytes"] == bytearray(b"\x00\xff") and type(theirs["bytes"]) is bytearray
    back = load(io.BytesIO(buffer.getvalue()))
    for key in reference:
        _same_tensor(back["tensors"][key], obj["tensors"][key])
    assert back["counter"] == obj["counter"] and back["bytes"] == obj["bytes"] and back["dtype"] is engine.uint16


def test_legacy_unsigned_tensors_round_trip_in_engine():
    """torch writes uint16/32/64 legacy checkpoints that it cannot read back; engine reads its own and torch's."""
    obj, _ = _engine_checkpoint(np.random.default_rng(0), TORCH_DTYPES[-3:] + [torch.int32, torch.int64,
                                                                               torch.float32])
    obj["u"] = obj["tensors"]["uint16"][1:].t()
    buffer = io.BytesIO()
    save(obj, buffer, _use_new_zipfile_serialization=False)
    back = load(io.BytesIO(buffer.getvalue()))
    for key in ("uint16", "uint32", "uint64"):
        _same_tensor(back["tensors"][key], obj["tensors"][key])
    _same_tensor(back["u"], obj["u"])
    theirs = io.BytesIO()
    torch.save({"u": torch.arange(5).to(torch.uint32)[1:]}, theirs, _use_new_zipfile_serialization=False)
    assert load(io.BytesIO(theirs.getvalue()))["u"].tolist() == [1, 2, 3, 4]


def test_save_arguments_as_torch():
    buffer = io.BytesIO()
    save({"a": engine.ones(2)}, buffer, pickle, 2, True, True)  # positionally, as torch.save's
    assert "archive/byteorder" not in zipfile.ZipFile(io.BytesIO(buffer.getvalue())).namelist()
    assert torch.load(io.BytesIO(buffer.getvalue()), weights_only=None)["a"].tolist() == [1.0, 1.0]
    assert load(io.BytesIO(buffer.getvalue()), weights_only=None)["a"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("kwargs, message", [
    ({"pickle_protocol": 1}, "pickle protocols 2 to 5, got 1"),
    ({"pickle_protocol": 6}, "pickle protocols 2 to 5, got 6"),
    ({"pickle_module": object()}, "pickle_module must be the standard pickle"),
])
def test_save_arguments_engine_refuses(kwargs, message):
    with pytest.raises(ValueError, match=message):
        save({"a": engine.ones(2)}, io.BytesIO(), **kwargs)


def test_tensors_and_parameters_with_python_attributes_load():
    tensor = torch.ones(2)
    tensor.note = {"source": "ema"}
    parameter = torch.nn.Parameter(torch.zeros(3))
    parameter.tag = "frozen"
    buffer = io.BytesIO()
    torch.save({"t": tensor, "p": parameter}, buffer)
    ours = load(io.BytesIO(buffer.getvalue()))
    assert ours["t"].note == {"source": "ema"} and ours["t"].tolist() == [1.0, 1.0]
    assert isinstance(ours["p"], nn.Parameter) and ours["p"].tag == "frozen" and ours["p"].requires_grad


def test_python_attributes_are_saved_as_torch_saves_them():
    tensor, parameter = engine.ones(2), nn.Parameter(engine.zeros(3))
    tensor.note, tensor._cache, parameter.tag = {"source": "ema"}, object(), "frozen"  # private ones stay
    buffer = io.BytesIO()
    save({"t": tensor, "again": tensor, "p": parameter}, buffer)
    theirs = torch.load(io.BytesIO(buffer.getvalue()), weights_only=True)
    assert theirs["t"].note == {"source": "ema"} and theirs["t"] is theirs["again"] and not hasattr(theirs["t"], "_cache")
    assert isinstance(theirs["p"], torch.nn.Parameter) and theirs["p"].tag == "frozen"
    back = load(io.BytesIO(buffer.getvalue()))
    assert back["t"].note == {"source": "ema"} and back["p"].tag == "frozen" and back["t"] is back["again"]


def test_attributes_that_tensors_have_are_not_overwritten():
    tensor = torch.ones(2)
    tensor.zzzz = 1
    buffer = io.BytesIO()
    torch.save(tensor, buffer)
    data = _rezip(buffer.getvalue(), lambda pk: pk.replace(b"zzzz", b"grad"))
    with pytest.raises(CheckpointError, match="refusing to set the attribute 'grad'"):
        load(io.BytesIO(data))


@pytest.mark.filterwarnings("ignore:.*(nested tensors|ComplexHalf)")
@pytest.mark.parametrize("make, message", [
    (lambda: torch.empty(2, device="meta"), "a meta tensor"),
    (lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]), "a nested tensor"),
    (lambda: torch.zeros(2, dtype=torch.float8_e4m3fn), "a tensor of dtype torch.float8_e4m3fn"),
    (lambda: torch.zeros(2, dtype=torch.complex32), "a tensor of dtype torch.complex32"),
])
def test_tensors_engine_cannot_hold_are_named(make, message):
    buffer = io.BytesIO()
    torch.save({"x": make()}, buffer)
    with pytest.raises(CheckpointError, match=f"holds {message}.*which engine does not support"):
        load(io.BytesIO(buffer.getvalue()))


def test_dtypes_engine_lacks_load_as_names():
    buffer = io.BytesIO()
    torch.save({"dtype": torch.float8_e5m2}, buffer)
    assert repr(load(io.BytesIO(buffer.getvalue()))["dtype"]) == "torch.float8_e5m2"


def _pickle_in_zip(pickled):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)
        archive.writestr("archive/version", "3\n")  # which torch.load requires
    return out.getvalue()


def _text(value):
    encoded = value.encode()
    return b"X" + len(encoded).to_bytes(4, "little") + encoded


@pytest.mark.parametrize("target, state", [
    (b"ctorch\nfloat32\n", b"N}" + _text("name") + _text("hacked") + b"s\x86"),  # slot state: setattr
    (b"ctorch\nFloatStorage\n", b"N}" + _text("dtype") + b"ctorch\nint64\ns\x86"),
    (b"ccollections\nOrderedDict\n", b"N}" + _text("__len__") + b"ccollections\nOrderedDict\ns\x86"),
    (b"ctorch._utils\n_rebuild_parameter\n", b"N}" + _text("__defaults__") + b"(K\x01ts\x86"),
    (b"c__builtin__\nset\n)R", b"}" + _text("a") + b"K\x01s"),
])
def test_build_cannot_change_objects_beyond_the_checkpoint(target, state):
    with pytest.raises(CheckpointError, match="refusing to set the state of a"):
        load(io.BytesIO(_pickle_in_zip(b"\x80\x02" + target + state + b"b.")))
    assert engine.float32.name == "float32" and collections.OrderedDict.__len__ is dict.__len__
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(3.0)}, buffer)
    assert load(io.BytesIO(buffer.getvalue()))["w"].dtype == engine.float32


def test_state_dict_metadata_still_builds():
    reference = torch.nn.BatchNorm1d(3).state_dict()
    buffer = io.BytesIO()
    torch.save(reference, buffer)
    assert load(io.BytesIO(buffer.getvalue()))._metadata == reference._metadata


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64, torch.float32, torch.bfloat16])
def test_safetensors_unsigned_types_and_offsets(dtype):
    rng = np.random.default_rng(0)
    tensors = {"a": _random(rng, dtype, (2, 3)), "b": _random(rng, torch.int8, (5,))}
    ours = load(io.BytesIO(safetensors_save(tensors)))
    for key, tensor in tensors.items():
        _same_tensor(ours[key], tensor)
    buffer = io.BytesIO()
    save_safetensors(ours, buffer)
    theirs = safetensors_load(buffer.getvalue())
    for key, tensor in tensors.items():
        assert _bits(theirs[key]) == _bits(tensor) and theirs[key].dtype == tensor.dtype


@pytest.mark.parametrize("fmt", FORMATS)
def test_map_location_cuda_keeps_grads_and_values(cuda, fmt):
    buffer = io.BytesIO()
    reference = {"w": torch.randn(3, 4, requires_grad=True), "u": torch.arange(4).to(torch.uint16)}
    torch.save(reference, buffer, _use_new_zipfile_serialization=FORMATS[fmt])
    ours = load(io.BytesIO(buffer.getvalue()), map_location="cuda")
    assert ours["w"].device.type == "cuda" and ours["w"].requires_grad and ours["w"].is_leaf
    assert np.array_equal(ours["w"].detach().cpu().numpy(), reference["w"].detach().numpy())
    assert ours["u"].dtype == engine.uint16 and ours["u"].cpu().tolist() == [0, 1, 2, 3]
    again = io.BytesIO()
    save(ours, again)
    theirs = torch.load(io.BytesIO(again.getvalue()), map_location="cpu", weights_only=True)
    assert torch.equal(theirs["u"], reference["u"]) and theirs["w"].requires_grad


def _py2_strings(data):
    """The legacy checkpoint ``data`` with its persistent ids' strings as Python 2 wrote them (BINSTRING), which
    Python 3 decodes with load's ``encoding``."""
    return data.replace(b"X\x07\x00\x00\x00storage", b"U\x07storage").replace(b"X\x03\x00\x00\x00cpu", b"U\x03cpu")


@pytest.mark.filterwarnings("ignore:pickle_load_args only works")
@pytest.mark.parametrize("encoding", [None, "latin1", "bytes"])
def test_python2_strings_decode_as_torch_decodes_them(encoding):
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(3.0)}, buffer, _use_new_zipfile_serialization=False)
    data = _py2_strings(buffer.getvalue())
    kwargs = {} if encoding is None else {"encoding": encoding}
    assert load(io.BytesIO(data), **kwargs)["w"].tolist() == [0.0, 1.0, 2.0]
    assert torch.load(io.BytesIO(data), weights_only=False, **kwargs)["w"].tolist() == [0.0, 1.0, 2.0]
    text = "é".encode()
    pickled = b"\x80\x02}U" + bytes([len(text)]) + text + b"U\x01as."  # {Python 2 str: str}
    assert load(io.BytesIO(_pickle_in_zip(pickled)), **kwargs) == \
        torch.load(io.BytesIO(_pickle_in_zip(pickled)), weights_only=True, **kwargs)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"pickle_module": pickle}, RuntimeError, "Can not safely load weights when explicit pickle_module"),
    ({"fix_imports": False}, TypeError, "unexpected keyword argument 'fix_imports'"),
])
def test_load_arguments_engine_refuses(kwargs, error, message):
    with pytest.raises(error, match=message):
        load(io.BytesIO(b"unused"), **kwargs)


class TrustedConfig:
    """A user class a checkpoint may hold once the user allows it."""

    def __init__(self, depth, names):
        self.depth, self.names = depth, names


def test_safe_globals_allow_what_the_user_trusts():
    from engine.serialization import add_safe_globals, clear_safe_globals, get_safe_globals, \
        get_unsafe_globals_in_checkpoint, safe_globals

    buffer = io.BytesIO()
    torch.save({"config": TrustedConfig(3, ["a"]), "counts": collections.defaultdict(list), "w": torch.ones(2)},
               buffer)
    data = buffer.getvalue()
    names = {f"{__name__}.TrustedConfig", "collections.defaultdict", "builtins.list"}
    assert set(get_unsafe_globals_in_checkpoint(io.BytesIO(data))) == names
    assert set(torch.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(data))) == names
    with pytest.raises(CheckpointError, match=r"'.*TrustedConfig'.*add_safe_globals\(\[TrustedConfig\]\)"):
        load(io.BytesIO(data))
    with safe_globals([TrustedConfig, collections.defaultdict, list]):
        ours = load(io.BytesIO(data))
        assert get_unsafe_globals_in_checkpoint(io.BytesIO(data)) == []
    assert get_safe_globals() == []
    assert isinstance(ours["config"], TrustedConfig) and (ours["config"].depth, ours["config"].names) == (3, ["a"])
    assert type(ours["counts"]) is collections.defaultdict and ours["w"].tolist() == [1.0, 1.0]
    add_safe_globals([(TrustedConfig, f"{__name__}.TrustedConfig"), collections.defaultdict, list])
    try:
        assert load(io.BytesIO(data))["config"].depth == 3
    finally:
        clear_safe_globals()
    legacy = io.BytesIO()
    torch.save({"a": 1}, legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by torch.save"):
        get_unsafe_globals_in_checkpoint(io.BytesIO(legacy.getvalue()))


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta")
@pytest.mark.parametrize("writer", ["torch", "engine"])
def test_legacy_sparse_checkpoints_load(writer):
    """The legacy reader's first pass (which finds where the pickle ends) meets sparse tensors' parts without
    their storages."""
    buffer = io.BytesIO()
    if writer == "torch":
        torch.save({"coo": torch.eye(3).to_sparse(), "csr": torch.eye(3).to_sparse_csr()}, buffer,
                   _use_new_zipfile_serialization=False)
    else:
        save({"coo": engine.eye(3).to_sparse(), "csr": engine.eye(3).to_sparse_csr()}, buffer,
             _use_new_zipfile_serialization=False)
    ours = load(io.BytesIO(buffer.getvalue()))
    assert ours["coo"].layout is engine.sparse_coo and ours["csr"].layout is engine.sparse_csr
    assert ours["coo"].to_dense().tolist() == ours["csr"].to_dense().tolist() == torch.eye(3).tolist()
