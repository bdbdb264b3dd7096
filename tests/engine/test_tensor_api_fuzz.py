"""The Tensor object's Python protocol and bookkeeping against torch's: ``in``, ``reversed``, ``hash``, numpy
ufuncs and ``np.asarray``, ``type()`` names, the ``.grad`` and ``.data`` setters' checks, the non-leaf ``.grad``
warning, ``retain_grad``, ``detach_`` on views, ``new_tensor``, deepcopy and pickle of views. Each case runs the
same code on both libraries and compares the result, or the error's type and message, or the warnings."""
import copy
import importlib
import pickle
import warnings

import numpy as np
import pytest
import torch

import engine


def _plain(value):
    """A library-neutral form of a result: tensors as (dtype name, shape, values, requires_grad)."""
    if isinstance(value, (torch.Tensor, engine.Tensor)):
        return (str(value.dtype).split(".")[-1], tuple(value.shape), value.detach().tolist(), value.requires_grad)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, torch.dtype, engine.dtype)):
        return str(value).replace("torch.", "engine.")
    return value


def _outcome(case, lib):
    """What ``case(lib)`` gives: ("ok", result, warning texts) or ("error", type name, message)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = case(lib)
        except Exception as e:  # the error itself is what is compared
            return ("error", type(e).__name__, str(e).split(" (Triggered internally")[0])
    texts = sorted(str(w.message).split(" (Triggered internally")[0] for w in caught
                   if issubclass(w.category, UserWarning))
    return ("ok", _plain(result), texts)


def _leaf(lib, requires_grad=True, dtype=None):
    values = np.random.default_rng(3).standard_normal((3, 5)).tolist()
    return lib.tensor(values, dtype=dtype or lib.float32, requires_grad=requires_grad)


def _set_grad(t, grad):
    t.grad = grad
    return t.grad


def _write_through_data(t):
    t.data.add_(1)
    return t._version if isinstance(t._version, int) else t._version


def _set_data(t, value):
    t.data = value
    return t


def _retained(lib):
    a = _leaf(lib)
    b = a * 2
    b.retain_grad()
    b.sum().backward()
    return b.grad, b.retains_grad, b.is_leaf


def _deepcopied_views(lib):
    base = lib.arange(24.).reshape(4, 6)
    whole, row, col = copy.deepcopy([base, base[2], base[:, 1]])
    whole.add_(100)
    return row, col, row.storage_offset(), col.storage_offset(), col.stride()


def _deepcopied_grad_shared(lib):
    t = _leaf(lib)
    t.sum().backward()
    a, g = copy.deepcopy([t, t.grad])
    return a.grad is g, a.grad


def _pickled_view(lib):
    row = lib.arange(24.).reshape(4, 6)[1:, 2:].t()
    back = pickle.loads(pickle.dumps(row))
    return back, back.storage_offset(), back.stride(), back.untyped_storage().nbytes()


def _pickled_attribute(lib):
    t = lib.ones(2)
    t.label = {"name": [1, 2]}
    return pickle.loads(pickle.dumps(t)).label, copy.deepcopy(t).label


def _new_tensor_from_tensor(lib):
    return _leaf(lib).new_tensor(lib.ones(2))


CASES = {
    # ``in``: numbers and tensors compared elementwise (broadcast), anything else refused
    "contains number": lambda L: (1.0 in L.tensor([[0., 1.], [2., 3.]]), 5 in L.tensor([[0., 1.]])),
    "contains 0-dim": lambda L: (2 in L.tensor(2.), 3 in L.tensor(2)),
    "contains row": lambda L: (L.tensor([2., 3.]) in L.arange(6.).view(3, 2), L.tensor([2., 4.]) in L.arange(6.)
                               .view(3, 2)),
    "contains bool": lambda L: True in L.tensor([False, True]),
    "contains numpy scalar": lambda L: np.float32(2) in L.arange(3.),
    "contains empty": lambda L: 1 in L.zeros(0),
    "contains str": lambda L: "a" in L.arange(3.),
    "contains None": lambda L: None in L.arange(3.),
    "contains list": lambda L: [1.] in L.arange(3.),
    # reversed: dim 0 flipped, a 0-dim tensor as it is, keeping the graph
    "reversed 2-d": lambda L: reversed(L.arange(6.).view(2, 3)),
    "reversed 0-dim": lambda L: reversed(L.tensor(4.)),
    "reversed graph": lambda L: reversed(_leaf(L)).grad_fn is not None,
    "hash is id": lambda L: (lambda t: hash(t) == id(t))(L.ones(2)),
    # numpy: ufuncs give tensors (bools as uint8), a tensor that requires grad is refused
    "ufunc add": lambda L: np.add(L.tensor([1, 2, 3]), 1),
    "ufunc sin": lambda L: np.sin(L.tensor([0.5, 1.5], dtype=L.float64)),
    "ufunc 0-dim": lambda L: np.exp(L.tensor(1.)),
    "ufunc two tensors": lambda L: np.multiply(L.arange(3.), L.arange(3.)),
    "ufunc comparison": lambda L: np.equal(L.tensor([1, 2]), L.tensor([1, 3])),
    "ufunc requires grad": lambda L: np.add(_leaf(L), 1),
    "asarray requires grad": lambda L: np.asarray(_leaf(L)),
    "__array__ requires grad": lambda L: _leaf(L).__array__(),
    "asarray dtype": lambda L: np.asarray(L.tensor([1.5, 2.5]), dtype=np.int32).tolist(),
    "__array_wrap__ bool": lambda L: L.ones(2).__array_wrap__(np.array([True, False])),
    # legacy type names
    "type names": lambda L: [L.zeros(1, dtype=d).type() for d in (L.complex64, L.complex128, L.float16, L.bool)],
    # the .grad setter's checks
    "grad shape": lambda L: _set_grad(_leaf(L), L.zeros(5, 3)),
    "grad float64": lambda L: _set_grad(_leaf(L), L.zeros(3, 5, dtype=L.float64)),
    "grad int64": lambda L: _set_grad(_leaf(L), L.zeros(3, 5, dtype=L.int64)),
    "grad float16": lambda L: _set_grad(_leaf(L), L.zeros(3, 5, dtype=L.float16)),
    "grad complex64": lambda L: _set_grad(_leaf(L), L.zeros(3, 5, dtype=L.complex64)),
    "grad uint8 into float64": lambda L: _set_grad(_leaf(L, dtype=L.float64), L.zeros(3, 5, dtype=L.uint8)),
    "grad number": lambda L: _set_grad(_leaf(L), 3),
    "grad itself": lambda L: (lambda t: _set_grad(t, t))(_leaf(L)),
    "grad fits": lambda L: _set_grad(_leaf(L), L.ones(3, 5)),
    "grad None": lambda L: _set_grad(_leaf(L), None),
    "grad on non-leaf": lambda L: _set_grad(_leaf(L) * 2, L.ones(3, 5)),
    # reading a non-leaf's .grad warns (not once retained, nor on leaves)
    "non-leaf grad": lambda L: (_leaf(L) * 2).grad,
    "leaf grad": lambda L: _leaf(L).grad,
    "retained grad": _retained,
    "retain_grad without grad": lambda L: _leaf(L, False).retain_grad(),
    "int requires grad": lambda L: int(_leaf(L)[1, 2]),
    # .data: its own version counter; the setter takes tensors only, floating ones under requires_grad
    "write through data": lambda L: _write_through_data(_leaf(L, False)),
    "data set list": lambda L: _set_data(_leaf(L), [1., 2.]),
    "data set int": lambda L: _set_data(_leaf(L), L.zeros(2, dtype=L.int64)),
    "data set int no grad": lambda L: _set_data(_leaf(L, False), L.zeros(2, dtype=L.int64)).dtype,
    "data set": lambda L: _set_data(_leaf(L), L.zeros(4, dtype=L.float64)),
    "detach_ view": lambda L: _leaf(L)[0].detach_(),
    "detach_ view of non-leaf": lambda L: (_leaf(L) * 2)[:, 1].detach_(),
    "detach_ non-leaf": lambda L: (lambda t: (t.detach_(), t.is_leaf, t.requires_grad))(_leaf(L) * 2),
    # new_tensor
    "new_tensor from tensor": _new_tensor_from_tensor,
    "new_tensor int requires grad": lambda L: _leaf(L).new_tensor([1, 2], dtype=L.int64, requires_grad=True),
    "new_tensor requires grad": lambda L: _leaf(L, False).new_tensor([1, 2], requires_grad=True),
    # deepcopy and pickle
    "deepcopy non-leaf": lambda L: copy.deepcopy(_leaf(L) * 2),
    "deepcopy views": _deepcopied_views,
    "deepcopy grad memo": _deepcopied_grad_shared,
    "pickle view": _pickled_view,
    "pickle attribute": _pickled_attribute,
}


@pytest.mark.parametrize("name", list(CASES))
def test_tensor_protocol_matches_torch(name):
    ours, theirs = _outcome(CASES[name], engine), _outcome(CASES[name], torch)
    assert ours == theirs


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "uint8", "bool", "complex64"])
@pytest.mark.parametrize("shape", [(), (1,), (4,), (2, 3), (0,)])
def test_contains_and_reversed_sweep(dtype, shape):
    """``v in t`` for a few values and ``reversed(t)`` over dtypes and shapes, as torch."""
    values = np.random.default_rng(len(shape)).integers(-2, 3, shape).astype(np.float64)
    values = np.abs(values) if dtype == "uint8" else values
    made = {lib: lib.tensor(values.tolist(), dtype=getattr(lib, dtype)) for lib in (torch, engine)}
    for probe in (0, 1, -2, 2.5, True):
        assert (probe in made[engine]) == (probe in made[torch]), probe
    ours, theirs = reversed(made[engine]), reversed(made[torch])
    assert ours.tolist() == theirs.tolist() and str(ours.dtype)[7:] == str(theirs.dtype)[6:]


def test_deepcopy_views_of_one_numpy_array_share():
    """Two tensors over one numpy array, deep-copied together, still share memory (not the array's)."""
    array = np.arange(6.)
    a, b = copy.deepcopy([engine.from_numpy(array), engine.from_numpy(array)[2:]])
    a[3] = -1.0
    assert b.tolist() == [2.0, -1.0, 4.0, 5.0] and array[3] == 3.0


def test_on_cuda(cuda):
    """The same protocol on the CUDA backend: ``in``, ``reversed``, deep-copied views, the .grad device check."""
    t = engine.arange(6., device="cuda").view(2, 3)
    assert 4 in t and engine.tensor([3., 4., 5.], device="cuda") in t and 7 not in t
    assert reversed(t).tolist() == [[3., 4., 5.], [0., 1., 2.]]
    whole, row = copy.deepcopy([t, t[1]])
    whole.add_(10)
    assert row.device.type == "cuda" and row.tolist() == [13., 14., 15.]
    leaf = engine.ones(2, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="^attempting to assign a gradient with device type 'cpu' to a tensor "
                                           "with device type 'cuda'"):
        leaf.grad = engine.ones(2)


def test_float_of_a_tensor_that_requires_grad_warns_once_per_process(monkeypatch):
    """As torch's TORCH_WARN_ONCE (whose own once may be spent by an earlier test, so it is not compared)."""
    monkeypatch.setattr(importlib.import_module("engine.tensor"), "_SCALAR_OF_GRAPH_WARNED", False)
    t = _leaf(engine)[1, 2]
    with pytest.warns(UserWarning, match="Converting a tensor with requires_grad=True to a scalar") as caught:
        assert float(t) == float(t.detach())
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        float(t)
