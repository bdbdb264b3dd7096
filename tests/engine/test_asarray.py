"""``engine.asarray`` against ``torch.asarray`` (what shares memory, dtypes, autograd history, the errors), and
``engine.tensor``'s dtype for data holding numpy scalars."""
import array

import numpy as np
import pytest
import torch

import engine


def _pair(values, **kwargs):
    return engine.asarray(values, **kwargs), torch.asarray(values, **kwargs)


def _same(ours, ref):
    assert str(ours.dtype).split(".")[1] == str(ref.dtype).split(".")[1]
    assert tuple(ours.shape) == tuple(ref.shape)
    np.testing.assert_array_equal(ours.detach().numpy(), ref.detach().numpy())


@pytest.mark.parametrize("values", [[1, 2, 3], [[1.5, 2], [3, 4]], 3, 2.5, True, [True, False], [], np.float32(2.5),
                                    np.int16(7)])
def test_scalars_sequences_and_numpy_scalars_are_copied_with_torch_dtypes(values):
    ours, ref = _pair(values)
    _same(ours, ref)


def test_a_numpy_array_is_shared_unless_the_dtype_changes():
    a = np.arange(6.0).reshape(2, 3)
    shared = engine.asarray(a)
    converted = engine.asarray(a, dtype=engine.float32)
    a[0, 0] = 9
    assert shared[0, 0].item() == 9 and shared.dtype == engine.float64
    assert converted[0, 0].item() == 0 and converted.dtype == engine.float32
    assert engine.asarray(a, copy=True)[0, 0].item() == 9
    with pytest.raises(ValueError) as ref:
        torch.asarray(a, dtype=torch.float32, copy=False)
    with pytest.raises(ValueError) as ours:
        engine.asarray(a, dtype=engine.float32, copy=False)
    assert str(ours.value) == str(ref.value) == "can't alias tensor with dtype 'Double' into dtype 'Float'."


@pytest.mark.parametrize("values", [np.float64(1.5), np.float16(2), [np.float64(1.5), 2.0], [np.int16(7), 3],
                                    [np.int16(7), np.int32(3)], [np.float16(1), 2.5], [np.int8(1), 2.5],
                                    [[np.int16(1)], [np.int16(2)]], [np.int16(7), True], [np.uint8(3), 4],
                                    [np.array([1, 2], dtype=np.int16)], [np.array([1, 2], dtype=np.int16), [3, 4]],
                                    [1.5, 2], [True, 2], [[1, 2], [3, 4]]])
def test_tensor_infers_numpy_scalars_dtypes_as_torch(values):
    """Each element keeps its own type (a numpy scalar's dtype; float32, int64, bool for Python's), promoted."""
    _same(engine.tensor(values), torch.tensor(values))


def test_buffers_are_read_as_raw_bytes_of_the_dtype():
    buffer = bytearray(np.arange(4, dtype=np.int32).tobytes())
    ours, ref = engine.asarray(buffer, dtype=engine.int32), torch.asarray(bytearray(buffer), dtype=torch.int32)
    _same(ours, ref)
    buffer[0] = 7
    assert ours[0].item() == 7  # shares the buffer's memory
    _same(*_pair(array.array("f", [1.0, 2.5])))
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        engine.asarray(bytearray(3), dtype=engine.float32)


def test_a_tensor_keeps_its_history_or_is_copied_as_torch():
    x, xt = engine.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    assert engine.asarray(x) is x
    copied = engine.asarray(x, copy=True)
    assert copied is not x and copied.grad_fn is not None
    widened, widened_t = engine.asarray(x, dtype=engine.float64), torch.asarray(xt, dtype=torch.float64)
    (widened * 2).sum().backward()
    (widened_t * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xt.grad.numpy())
    detached = engine.asarray(x * 2, requires_grad=False)
    assert not detached.requires_grad and detached.grad_fn is None
    with pytest.raises(ValueError, match=r"can't alias tensor with dtype 'Float' into dtype 'Long'\."):
        engine.asarray(x, dtype=engine.int64, copy=False)


def test_requires_grad_is_set_on_leaves_and_refused_for_integers():
    leaf = engine.asarray(np.arange(3.0), requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        engine.asarray([1, 2], requires_grad=True)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence into a tensor."):
        engine.asarray([1, 2], copy=False)
