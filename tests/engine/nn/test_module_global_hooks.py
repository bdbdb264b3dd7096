"""The hooks of every module (``nn.modules.module.register_module_*``) against torch: forward, backward and
registration hooks, their order relative to a module's own hooks, and their removal."""
import numpy as np
import pytest
import torch

import engine
import engine.nn.modules.backward_hooks  # noqa: F401
import engine.nn.modules.module as emod
import torch.nn.modules.module as tmod

_LIBS = ((engine, emod), (torch, tmod))


def test_global_forward_hooks_run_before_module_hooks_and_can_replace():
    logs = {}
    for lib, mod in _LIBS:
        log = logs[lib] = []
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
        m[1].register_forward_pre_hook(lambda m_, args: log.append("own pre"))
        m[1].register_forward_hook(lambda m_, args, out: log.append("own"))
        handles = [
            mod.register_module_forward_pre_hook(lambda m_, args: log.append(("pre", type(m_).__name__))),
            mod.register_module_forward_hook(lambda m_, args, out: log.append(("post", type(m_).__name__))),
            mod.register_module_forward_hook(lambda m_, args, kwargs, out: log.append(("kw", kwargs)),
                                             with_kwargs=True),
            mod.register_module_forward_hook(lambda m_, args, out: out * 0 if isinstance(m_, lib.nn.ReLU) else None),
        ]
        try:
            out = m(lib.ones(1, 2))
        finally:
            for h in handles:
                h.remove()
        m(lib.ones(1, 2))
        log.append(float(out.detach().abs().sum()))
    assert logs[engine] == logs[torch]


def test_global_always_call_hook_runs_when_forward_raises():
    class Boom(engine.nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    seen = []
    with emod.register_module_forward_hook(lambda m, args, out: seen.append(out), always_call=True):
        with pytest.raises(ValueError, match="^boom$"):
            Boom()(engine.ones(1))
    assert seen == [None]
    assert not engine.nn.modules.backward_hooks._global_forward_hooks_always_called


def test_global_backward_hooks_match_torch():
    x = np.random.RandomState(0).randn(3, 2).astype(np.float32)
    logs = {}
    for lib, mod in _LIBS:
        log = logs[lib] = []
        m = lib.nn.Sequential(lib.nn.Sigmoid(), lib.nn.Tanh())
        handles = [
            mod.register_module_full_backward_pre_hook(lambda m_, go: log.append(("pre", type(m_).__name__))),
            mod.register_module_full_backward_hook(
                lambda m_, gi, go: log.append((type(m_).__name__, np.round(gi[0].detach().numpy(), 5).tolist()))),
        ]
        try:
            m(lib.tensor(x, requires_grad=True)).sum().backward()
        finally:
            for h in handles:
                h.remove()
    assert logs[engine] == logs[torch]


def test_global_full_and_regular_backward_hooks_do_not_mix():
    handle = emod.register_module_full_backward_hook(lambda *a: None)
    try:
        with pytest.raises(RuntimeError, match="^Cannot use both regular backward hooks and full backward hooks as a "
                                               "global Module hook. Please use only one of them.$"):
            emod.register_module_backward_hook(lambda *a: None)
    finally:
        handle.remove()


def test_registration_hooks_see_and_replace_registrations():
    logs = {}
    for lib, mod in _LIBS:
        log = logs[lib] = []

        def on_param(m, name, p):
            log.append(("param", type(m).__name__, name, tuple(p.shape)))

        def on_buffer(m, name, b):
            log.append(("buffer", name, None if b is None else tuple(b.shape)))
            return None if b is None else b + 1

        def on_module(m, name, sub):
            log.append(("module", name, type(sub).__name__))
        handles = [mod.register_module_parameter_registration_hook(on_param),
                   mod.register_module_buffer_registration_hook(on_buffer),
                   mod.register_module_module_registration_hook(on_module)]
        try:
            seq = lib.nn.Sequential()
            seq.add_module("bn", lib.nn.BatchNorm1d(2))
            seq.extra = lib.nn.Identity()
            seq.register_buffer("b", lib.zeros(3))
            seq.b = lib.zeros(4)
            log.append(seq.b.numpy().tolist())
        finally:
            for h in handles:
                h.remove()
        lib.nn.Linear(1, 1)
    assert logs[engine] == logs[torch]
