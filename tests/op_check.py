"""One helper that checks any op against PyTorch: forward values and the gradient of every input.

    check_op(lambda x, y: engine.add(x, y), lambda x, y: torch.add(x, y), [a, b])

``inputs`` are numpy arrays (float and complex arrays get ``requires_grad``) or plain Python values passed
through unchanged. Both sides get the same values; the backward pass uses the same seeded
upstream gradient for every floating or complex output (complex values and gradients are compared as their
real and imaginary parts). With ``device="cuda"`` our side runs on the GPU (its
inputs and upstream gradients moved there, its outputs and gradients checked to be there) against
PyTorch on the CPU. With ``dtype="bfloat16"`` (or any floating type's name) both sides cast their floating
inputs to that type, as leaves, so values, dtypes and gradients are checked in it.
"""
import contextlib

import numpy as np
import pytest
import torch

import engine
import op_device_sweep

RNG_SEED = 1234


@contextlib.contextmanager
def torch_on_one_thread():
    """torch on one thread inside the block: its second OpenMP thread spin-waits on a core that our BLAS threads or
    another process hold, which made the references several times slower (torch's float64 depthwise convolutions
    of test_mobilenet_vgg 100 times: 26.4 s of CPU time for the test, 0.7 s so; test_resnet under load 103.3 s,
    53.3 s so); results do not depend on it."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def rel_err(ours, ref):
    """max |ours - ref| / max |ref| (absolute when ref is all zeros)."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    if ours.shape != ref.shape:
        raise AssertionError(f"shape mismatch: ours {ours.shape} vs torch {ref.shape}")
    if ours.size == 0:
        return 0.0
    # where every difference is finite (no NaN or infinity on either side at it), five passes over the values
    # instead of a dozen (test_mvit and test_vit: 1717 calls, 1.23 s to 0.32 s; 64x256x28x28 float32: 7x faster)
    with np.errstate(invalid="ignore"):  # inf - inf: the full comparison below sorts it out
        diff = np.subtract(np.atleast_1d(ours), np.atleast_1d(ref), dtype=np.float64)
    np.abs(diff, out=diff)
    largest = diff.max()
    if np.isfinite(largest):
        scale = max(float(ref.max()), -float(ref.min()))
        return float(largest / scale) if scale > 0 else float(largest)
    ours, ref = ours.astype(np.float64), ref.astype(np.float64)
    both_nan = np.isnan(ours) & np.isnan(ref)
    both_inf = np.isinf(ours) & np.isinf(ref) & (np.sign(ours) == np.sign(ref))
    same = both_nan | both_inf
    with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity, masked by ``same``
        diff = np.where(same, 0.0, np.abs(ours - ref))
    if np.isnan(diff).any():
        return float("inf")
    scale = np.abs(np.where(same, 0.0, ref)).max()
    return float(diff.max() / scale) if scale > 0 else float(diff.max())


def _parts(arr):
    """A complex array as its (real, imag) pairs on a last axis of 2: complex values compare part by part."""
    arr = np.asarray(arr)
    return np.stack([arr.real, arr.imag], -1)


def assert_close(ours, ref, rtol=1e-5, what="output"):
    if np.iscomplexobj(ours) or np.iscomplexobj(ref):
        ours, ref = _parts(ours), _parts(ref)
    err = rel_err(ours, ref)
    assert err <= rtol, f"{what}: relative error {err:.3g} > {rtol:g}"


def assert_same_error(ours, theirs, first_line=False):
    """``theirs()`` (torch) raises; ``ours()`` raises the same exception type whose message is torch's first line
    (with ``first_line``: whose first line is, for errors raised in a backward pass, which name the node on a
    second line)."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    message = str(got.value).split("\n")[0] if first_line else str(got.value)
    assert message == str(expected.value).split("\n")[0]


def assert_nested_close(ours, theirs, rtol=1e-6):
    """Nested tuples/lists of an engine and a torch result equal in structure, shape, dtype and values (an absolute
    1e-12 for values that are 0)."""
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert_nested_close(o, t, rtol)
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-12)


def noncontiguous(arr):
    """The same values as ``arr`` in a non-contiguous (transposed-storage) layout."""
    if arr.ndim < 2:
        return np.repeat(arr, 2)[::2] if arr.ndim == 1 else arr
    return np.ascontiguousarray(arr.swapaxes(-1, -2)).swapaxes(-1, -2)


def _outputs(result):
    if isinstance(result, (tuple, list)):
        return list(result)
    if hasattr(result, "values") and hasattr(result, "indices") and not callable(result.values):
        return [result.values, result.indices]
    return [result]


def _to_numpy(t):
    """A numpy array of t's values; bfloat16 widened to float32 (numpy has no bfloat16 of its own)."""
    if isinstance(t, torch.Tensor):
        if t.is_complex():  # torch's lazy conjugates must be resolved before numpy()
            return t.detach().resolve_conj().numpy()
        return t.detach().float().numpy() if t.dtype is torch.bfloat16 else t.detach().numpy()
    if isinstance(t, engine.Tensor):
        return t.detach().cpu().float().numpy() if t.dtype is engine.bfloat16 else t.detach().cpu().numpy()
    return np.asarray(t)


def _on(device, t):
    """An engine tensor on ``device`` (unchanged when None)."""
    return t if device is None else t.to(device)


def _engine_input(x, device):
    """``x`` as an engine tensor on ``device``, laid out like ``noncontiguous(x)`` when x is not contiguous
    (the strided view is taken on the device, which copies contiguous memory only)."""
    if x.flags.c_contiguous:
        return _on(device, engine.from_numpy(x.copy()))
    if x.ndim < 2:
        return _on(device, engine.from_numpy(np.repeat(x, 2)))[::2]
    return _on(device, engine.from_numpy(np.ascontiguousarray(x.swapaxes(-1, -2)))).transpose(-1, -2)


def check_op(ours, theirs, inputs, rtol=1e-5, grad_rtol=None, grad=True, check_dtype=True, device=None,
             dtype=None):
    """Run ``ours`` on engine tensors and ``theirs`` on torch tensors; compare values and grads. Without a
    ``device``, ``OP_CHECK_DEVICE``'s (op_device_sweep) where it is set."""
    if device is None and op_device_sweep.DEVICE:
        return op_device_sweep.run(lambda device: _check_op(ours, theirs, inputs, rtol, grad_rtol, grad, check_dtype,
                                                            device, dtype), ours, op_device_sweep.DEVICE)
    return _check_op(ours, theirs, inputs, rtol, grad_rtol, grad, check_dtype, device, dtype)


def _check_op(ours, theirs, inputs, rtol, grad_rtol, grad, check_dtype, device, dtype):
    grad_rtol = rtol if grad_rtol is None else grad_rtol
    e_in, t_in = [], []
    for x in inputs:
        if isinstance(x, np.ndarray):
            needs = grad and x.dtype.kind in "fc"
            t = torch.from_numpy(x.copy() if x.flags.c_contiguous else noncontiguous(x.copy()))
            e = _engine_input(x, device)
            if dtype is not None and x.dtype.kind == "f":
                t, e = t.to(getattr(torch, dtype)), e.to(getattr(engine, dtype))
            t_in.append(t.requires_grad_(needs))
            e_in.append(e.requires_grad_(needs))
        else:
            t_in.append(x)
            e_in.append(x)
    e_out, t_out = _outputs(ours(*e_in)), _outputs(theirs(*t_in))
    assert len(e_out) == len(t_out), f"{len(e_out)} outputs vs torch {len(t_out)}"
    if device is not None:
        for i, e in enumerate(e_out):
            assert not isinstance(e, engine.Tensor) or e.device.type == engine.device(device).type, \
                f"output {i} is on {e.device}, not {device}"
    for i, (e, t) in enumerate(zip(e_out, t_out)):
        if check_dtype and isinstance(t, torch.Tensor):
            assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], \
                f"output {i} dtype {e.dtype} vs torch {t.dtype}"
        if isinstance(t, torch.Tensor) and not (t.dtype.is_floating_point or t.dtype.is_complex):
            np.testing.assert_array_equal(_to_numpy(e), _to_numpy(t), err_msg=f"output {i}")
        else:
            assert_close(_to_numpy(e), _to_numpy(t), rtol, f"output {i}")
    if not grad:
        return e_out
    rng = np.random.default_rng(RNG_SEED)
    e_roots, t_roots, e_grads, t_grads = [], [], [], []
    for e, t in zip(e_out, t_out):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            g = rng.standard_normal(tuple(t.shape)).astype(_to_numpy(t).dtype)
            if t.is_complex():
                g = np.asarray(g + 1j * rng.standard_normal(tuple(t.shape)).astype(g.dtype))
            e_roots.append(e), t_roots.append(t)
            e_grads.append(_on(device, engine.from_numpy(g)).to(e.dtype))
            t_grads.append(torch.from_numpy(g).to(t.dtype))
    if not t_roots:
        return e_out
    torch.autograd.backward(t_roots, t_grads)
    engine.autograd.backward(e_roots, e_grads)
    for i, (e, t) in enumerate(zip(e_in, t_in)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            if t.grad is None:
                assert e.grad is None or not np.any(_to_numpy(e.grad)), f"input {i}: torch has no grad"
                continue
            assert e.grad is not None, f"input {i}: no gradient computed"
            assert tuple(e.grad.shape) == tuple(t.grad.shape), f"input {i} grad shape"
            assert e.grad.device == e.device, f"input {i}: grad on {e.grad.device}, input on {e.device}"
            assert e.grad.dtype is e.dtype, f"input {i}: grad {e.grad.dtype}, input {e.dtype}"
            assert_close(_to_numpy(e.grad), _to_numpy(t.grad), grad_rtol, f"grad of input {i}")
    return e_out
