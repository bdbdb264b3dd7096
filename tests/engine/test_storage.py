"""Storages (``engine.storage``): untyped and typed storages of tensors and on their own, ``set_``,
``is_set_to``, ``is_storage`` and ``from_file``, against torch."""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.storage as S


def _pair():
    values = np.arange(12, dtype=np.float32).reshape(3, 4)
    return engine.from_numpy(values.copy()), torch.from_numpy(values.copy())


def _typed(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.storage()


def test_untyped_storage_is_the_whole_allocation_shared_by_views():
    ours, theirs = _pair()
    for view in (lambda t: t, lambda t: t[1], lambda t: t[1:, ::2], lambda t: t.t(), lambda t: t.reshape(-1)[3:]):
        o, t = view(ours).untyped_storage(), view(theirs).untyped_storage()
        assert o.data_ptr() == ours.untyped_storage().data_ptr() == ours.data_ptr()
        assert (o.nbytes(), o.size(), len(o), o.element_size()) == (t.nbytes(), t.size(), len(t), t.element_size())
    s, t = ours.untyped_storage(), theirs.untyped_storage()
    assert s.tolist() == t.tolist() and s[5] == t[5] and s[-1] == t[-1] and s.device == engine.device("cpu")
    assert s[4:12].nbytes() == 8 and s[4:12].data_ptr() == s.data_ptr() + 4
    assert ours.as_strided((3,), (2,), 1).untyped_storage().nbytes() == 48


def test_untyped_storage_writes_clone_fill_copy():
    ours, _ = _pair()
    s = ours.untyped_storage()
    clone = s.clone()
    assert clone.data_ptr() != s.data_ptr() and clone.tolist() == s.tolist() and s.cpu() is s
    s[0:4] = np.frombuffer(np.float32(-1).tobytes(), np.uint8)
    assert ours[0, 0].item() == -1
    s.copy_(clone)
    assert ours[0, 0].item() == 0
    fresh = S.UntypedStorage(4).fill_(7)
    assert fresh.tolist() == [7] * 4 and S.UntypedStorage([1, 2, 3]).tolist() == [1, 2, 3]
    assert repr(S.UntypedStorage([1, 2])).endswith("[engine.storage.UntypedStorage(device=cpu) of size 2]")
    assert s.type() == "engine.storage.UntypedStorage" and s.untyped() is s


def test_untyped_storage_errors():
    s = S.UntypedStorage(4)
    with pytest.raises(IndexError, match="index 4 out of range for storage of size 4"):
        s[4]
    with pytest.raises(RuntimeError, match="size does not match, self was 4 bytes but src was 3 bytes"):
        s.copy_(S.UntypedStorage(3))


def test_typed_storage_warns_and_matches_torch():
    ours, theirs = _pair()
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        o = ours[1].storage()
    t = _typed(theirs[1])
    assert (o.size(), len(o), o.nbytes(), o.element_size()) == (t.size(), len(t), t.nbytes(), t.element_size())
    assert o.tolist() == t.tolist() and o[5] == t[5] and o.data_ptr() == ours.data_ptr()
    assert o.dtype is engine.float32 and ours.storage_type() is S.FloatStorage and isinstance(o, S.FloatStorage)
    assert not isinstance(o, S.DoubleStorage) and o.type() == "engine.FloatStorage"
    assert engine.arange(3).storage_type() is S.LongStorage
    o[0] = 9
    assert ours[0, 0].item() == 9
    assert o.fill_(3) is o and ours.sum().item() == 36
    clone = o.clone()
    assert clone.data_ptr() != o.data_ptr() and clone.tolist() == o.tolist() and o.untyped().nbytes() == 48
    with pytest.raises(RuntimeError, match="slices are only supported in UntypedStorage.__getitem__"):
        o[1:3]
    with pytest.raises(IndexError, match="index 12 out of range for storage of size 12"):
        o[12]


def test_typed_storage_constructors():
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        s = S.TypedStorage(3)
    assert s.dtype is engine.float32 and s.size() == 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert S.TypedStorage([1.0, 2.0]).tolist() == [1.0, 2.0]
        assert S.TypedStorage(2, dtype=engine.int64).dtype is engine.int64
        legacy = S.FloatStorage([1, 2])
    assert legacy.dtype is engine.float32 and legacy.tolist() == [1.0, 2.0]


def test_is_storage():
    ours, _ = _pair()
    assert S.is_storage(ours.untyped_storage()) and S.is_storage(_typed(ours)) and not S.is_storage(ours)


def test_set_to_storage_tensor_and_nothing():
    ours, theirs = _pair()
    o, t = engine.empty(0), torch.empty(0)
    o.set_(ours.untyped_storage(), 2, (2, 3), (3, 1))
    t.set_(theirs.untyped_storage(), 2, (2, 3), (3, 1))
    np.testing.assert_array_equal(o.numpy(), t.numpy())
    assert o.storage_offset() == 2 and o.stride() == (3, 1) and not o.is_set_to(ours)
    assert o.untyped_storage().data_ptr() == ours.data_ptr()
    o[0, 0] = 100
    assert ours[0, 2].item() == 100
    assert engine.empty(0).set_(ours).is_set_to(ours) and not ours.is_set_to(ours[1:])
    assert tuple(engine.empty(0).set_(_typed(ours)).shape) == (12,)
    assert tuple(engine.empty(0).set_(ours.untyped_storage()).shape) == (12,)
    assert tuple(ours.clone().set_().shape) == (0,)


def test_set_errors():
    ours, _ = _pair()
    with pytest.raises(RuntimeError, match="setStorage: sizes \\[2, 3\\], strides \\[3, 1\\], storage offset 10"):
        engine.empty(0).set_(ours.untyped_storage(), 10, (2, 3), (3, 1))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        engine.zeros(3, requires_grad=True).set_(ours)
    with pytest.raises(RuntimeError, match="Expected a Storage of type engine.int64"):
        engine.empty(0, dtype=engine.int64).set_(_typed(ours))


@pytest.mark.parametrize("shared", [False, True])
def test_from_file(tmp_path, shared):
    path = tmp_path / "values.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    ours = S.from_file(str(path), shared, 6)
    theirs = torch.from_file(str(path), shared, 6)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    ours[1] = 50
    assert (np.fromfile(path, np.float32)[1] == 50) == shared
    assert S.from_file(str(path), None, 2, dtype=engine.int32).tolist() == torch.from_file(
        str(path), None, 2, dtype=torch.int32).tolist()


def test_from_file_sizes(tmp_path):
    path = tmp_path / "values.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    with pytest.raises(RuntimeError, match="size <24> is smaller than the required mapping size <40>"):
        S.from_file(str(path), False, 10)
    assert S.from_file(str(path), True, 10).tolist()[6:] == [0.0] * 4 and path.stat().st_size == 40
    with pytest.raises(RuntimeError, match="unable to open file"):
        S.from_file(str(tmp_path / "missing.bin"), False, 3)
    assert S.from_file(str(tmp_path / "new.bin"), True, 3).tolist() == [0.0] * 3
    assert S.UntypedStorage.from_file(str(path), False, 8).nbytes() == 8


def test_storage_on_cuda(cuda):
    x = engine.arange(12.0, device="cuda").reshape(3, 4)
    s = x[1].untyped_storage()
    assert s.device.type == "cuda" and s.nbytes() == 48 and s.data_ptr() == x.data_ptr()
    y = engine.empty(0, device="cuda").set_(s, 4, (2, 2), (1, 4))
    np.testing.assert_array_equal(y.cpu().numpy(), [[4, 8], [5, 9]])
    assert s.cpu().tolist() == x.cpu().untyped_storage().tolist()


def test_storage_offset_sees_through_as_strided():
    """numpy's as_strided hides the base behind a DummyArray: the offset is still counted from the allocation."""
    for make in (lambda lib: lib.arange(10.0).as_strided((3,), (2,), 1),
                 lambda lib: lib.arange(10.0)[2:].as_strided((2, 2), (1, 3), 1)):
        assert make(engine).storage_offset() == make(torch).storage_offset()
