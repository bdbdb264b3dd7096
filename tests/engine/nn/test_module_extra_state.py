"""Module's extra state, ``set_submodule``, ``to_empty``, ``compile``, torch's class flags, and
``engine.utils.hooks`` (handles, the unserializable marker, the warning for hooked tensors), against torch."""
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest
import torch

import engine
import engine.nn as nn
import engine.utils.hooks as ehooks


def _counter(lib):
    class Counter(lib.nn.Module):
        """A layer with state that is not a tensor."""

        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.steps = 0

        def get_extra_state(self):
            return {"steps": self.steps}

        def set_extra_state(self, state):
            self.steps = state["steps"]
    return Counter


def test_extra_state_saved_under_torch_key_and_restored():
    for lib in (engine, torch):
        m = lib.nn.Sequential(_counter(lib)())
        m[0].steps = 7
        sd = m.state_dict()
        assert list(sd) == ["0._extra_state", "0.lin.weight", "0.lin.bias"]  # own state before children
        assert sd["0._extra_state"] == {"steps": 7}
        fresh = lib.nn.Sequential(_counter(lib)())
        fresh.load_state_dict(sd)
        assert fresh[0].steps == 7
        del sd["0._extra_state"]
        with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "0._extra_state"'):
            fresh.load_state_dict(sd)
        plain = lib.nn.Linear(2, 2)
        extra = {**plain.state_dict(), "_extra_state": 1}
        with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "_extra_state"'):
            plain.load_state_dict(extra)
        assert plain.load_state_dict(extra, strict=False).unexpected_keys == ["_extra_state"]


def test_extra_state_is_not_set_when_the_load_fails():
    m = _counter(engine)()
    sd = {"lin.weight": engine.ones(3, 2), "lin.bias": engine.ones(2), "_extra_state": {"steps": 5}}
    with pytest.raises(RuntimeError, match="size mismatch for lin.weight"):
        m.load_state_dict(sd)
    assert m.steps == 0


def test_set_submodule_like_torch():
    for lib in (engine, torch):
        m = lib.nn.Sequential(lib.nn.Sequential(lib.nn.Linear(1, 1)))
        m.set_submodule("0.0", lib.nn.ReLU())
        assert isinstance(m[0][0], lib.nn.ReLU)
        m.set_submodule("0.new", lib.nn.Tanh())
        assert isinstance(m[0].new, lib.nn.Tanh)
        with pytest.raises(ValueError, match="^Cannot set the submodule without a target name!$"):
            m.set_submodule("", lib.nn.ReLU())
        with pytest.raises(ValueError, match="^`module` is not an nn.Module, found <class 'int'>$"):
            m.set_submodule("0.0", 3)
        with pytest.raises(AttributeError, match="^Sequential has no attribute `absent`$"):
            m.set_submodule("0.absent", lib.nn.ReLU(), strict=True)
        m[0].flag = 1
        with pytest.raises(AttributeError, match="^`flag` is not an nn.Module$"):
            m.set_submodule("0.flag", lib.nn.ReLU())


def test_to_empty_keeps_tensors_and_shapes():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    weight = m[0].weight
    assert m.to_empty(device="cpu") is m
    assert m[0].weight is weight and m[0].weight.shape == (2, 3) and m[1].running_var.shape == (2,)
    m.to_empty(device=None, recurse=False)


def test_compile_in_place_keeps_keys_and_results():
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).eval()
    x = engine.randn(2, 3, 8, 8)
    with engine.no_grad():
        expected = m(x).numpy()
        assert m.compile() is None
        for _ in range(2):
            np.testing.assert_allclose(m(x).numpy(), expected, rtol=1e-5, atol=1e-6)
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                                    "1.num_batches_tracked"]
    out = m.train()(x)
    assert out.requires_grad
    assert "_compiled_call_impl" not in pickle.loads(pickle.dumps(m)).__dict__


def test_class_flags_and_call_super_init():
    assert nn.Module.dump_patches is False and nn.Module.call_super_init is False
    assert nn.Module.T_destination.__bound__ == torch.nn.Module.T_destination.__bound__
    with pytest.raises(TypeError, match="^Module.__init__\\(\\) got an unexpected keyword argument 'a'$"):
        nn.Module(a=1)
    with pytest.raises(TypeError, match="^Module.__init__\\(\\) takes 1 positional argument but 2 were given$"):
        nn.Module(1)

    class Mixin:
        def __init__(self, tag):
            self.tag = tag

    class Both(nn.Module, Mixin):
        call_super_init = True

        def __init__(self):
            super().__init__(tag="t")
    assert Both().tag == "t"


def test_removable_handle_like_torch():
    for mod in (ehooks, torch.utils.hooks):
        hooks, extra = OrderedDict(), OrderedDict()
        h = mod.RemovableHandle(hooks, extra_dict=[extra])
        hooks[h.id] = extra[h.id] = "hook"
        h2 = mod.RemovableHandle(hooks)
        assert h2.id == h.id + 1
        state = pickle.loads(pickle.dumps((hooks, extra, h)))
        with h:
            pass
        assert not hooks and not extra
        hooks2, extra2, h3 = state
        h3.remove()
        assert not hooks2 and not extra2


def test_unserializable_hook_and_warn_if_has_hooks():
    for lib, mod in ((engine, ehooks), (torch, torch.utils.hooks)):
        t = lib.ones(2, requires_grad=True)
        y = t * 2

        @mod.unserializable_hook
        def quiet(grad):
            return grad
        assert quiet.__torch_unserializable__ is True
        y.register_hook(quiet)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            mod.warn_if_has_hooks(y)
        t.register_hook(lambda g: g)
        with pytest.warns(UserWarning, match="on tensor will not be serialized.  If this is expected, you can decorate "
                                             "the function with @torch.utils.hooks.unserializable_hook"):
            mod.warn_if_has_hooks(t)


def test_removable_handle_moved_to_utils_hooks():
    assert engine.nn.modules.module.RemovableHandle is ehooks.RemovableHandle
    assert isinstance(nn.ReLU().register_forward_hook(lambda *a: None), ehooks.RemovableHandle)
