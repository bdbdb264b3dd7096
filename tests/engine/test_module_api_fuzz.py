"""Differential fuzz of nn.Module's bookkeeping against torch.nn.Module: random module trees (traversal, state
dicts, loading), random sequences of attribute assignments and registrations, random forward/backward hook
registrations; plus the cases the sweep found wrong (a Buffer assigned over a plain attribute, register_buffer's
``persistent`` against a Buffer's flag, ``Module.type`` to an integer dtype with parameters requiring grad)."""
import random
from collections import OrderedDict
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.nn as enn

LIBS = (torch, engine)


def _norm(value, lib):
    """A comparable form of ``value``: tensors as (type, shape, dtype, requires_grad, values), names un-torched."""
    if isinstance(value, lib.Tensor):
        return (type(value).__name__.replace("Buffer", "Tensor"), tuple(value.shape), str(value.dtype).split(".")[-1],
                value.requires_grad, np.round(value.detach().double().numpy(), 5).tolist())
    if isinstance(value, (list, tuple)):
        return tuple(_norm(v, lib) for v in value)
    if isinstance(value, str):
        return value.replace("torch", "engine")
    return value


def _outcome(fn, lib):
    """``fn()``'s normalized result, or its exception's type and message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _norm(fn(), lib)
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return type(e).__name__, str(e).replace("torch", "engine")


# ---- random module trees -------------------------------------------------------------------------------------
def _param(lib, shape):
    return lib.nn.Parameter(lib.tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) * 0.5))


def _tree(lib, rng, depth=0):
    nn = lib.nn
    kind = rng.choice(["mod", "seq", "ml", "md", "pl", "pd"] if depth < 3 else ["mod", "pl", "pd"])
    if kind == "mod":
        m = nn.Module()
        for i in range(rng.randint(0, 3)):
            r = rng.random()
            if r < 0.4:
                m.register_parameter(f"w{i}", _param(lib, (rng.randint(1, 3), 2)))
            elif r < 0.5:
                m.register_parameter(f"w{i}", None)
            elif r < 0.75:
                dtype = rng.choice([np.float32, np.int64, np.float64, np.bool_])
                m.register_buffer(f"w{i}", lib.tensor(np.arange(2).astype(dtype)), persistent=rng.random() < 0.6)
            elif r < 0.85:
                m.register_buffer(f"w{i}", None)
            else:
                m.add_module(f"w{i}", None if depth >= 3 or rng.random() < 0.5 else _tree(lib, rng, depth + 1))
        return m
    if kind == "seq":
        return nn.Sequential(*[_tree(lib, rng, depth + 1) for _ in range(rng.randint(0, 3))])
    if kind == "ml":
        return nn.ModuleList([_tree(lib, rng, depth + 1) for _ in range(rng.randint(0, 3))])
    if kind == "md":
        return nn.ModuleDict({f"k{i}": _tree(lib, rng, depth + 1) for i in range(rng.randint(0, 3))})
    if kind == "pl":
        return nn.ParameterList([_param(lib, (i + 1,)) for i in range(rng.randint(0, 3))])
    return nn.ParameterDict({f"p{i}": _param(lib, (2, i + 1)) for i in range(rng.randint(0, 3))})


def _make(lib, seed):
    """A random tree with a shared child and, sometimes, a parameter registered twice."""
    rng = random.Random(seed)
    root = lib.nn.Module()
    kids = [_tree(lib, rng) for _ in range(rng.randint(1, 4))]
    for i, kid in enumerate(kids):
        root.add_module(f"c{i}", kid)
    if rng.random() < 0.5:
        root.add_module("shared", kids[0])
    params = list(root.parameters())
    if params and rng.random() < 0.5:
        root.register_parameter("sp", params[-1])
    return root, rng


def _tree_trace(lib, seed):
    root, rng = _make(lib, seed)
    steps = [("repr", lambda: repr(root))]
    for rd in (True, False):
        steps.append(("modules", lambda rd=rd: [n for n, _ in root.named_modules(prefix="p", remove_duplicate=rd)]))
        for rc in (True, False):
            steps.append(("params", lambda rd=rd, rc=rc: [n for n, _ in root.named_parameters(
                recurse=rc, remove_duplicate=rd)]))
            steps.append(("buffers", lambda rd=rd, rc=rc: [n for n, _ in root.named_buffers(
                prefix="q", recurse=rc, remove_duplicate=rd)]))
    steps += [("children", lambda: [n for n, _ in root.named_children()]),
              ("state_dict", lambda: list(root.state_dict(prefix="x.").items())),
              ("metadata", lambda: list(root.state_dict()._metadata.items())),
              ("keep_vars", lambda: list(root.state_dict(keep_vars=True).values()))]
    for conv in ("double", "half"):
        steps.append((conv, lambda conv=conv: list(getattr(_make(lib, seed)[0], conv)().state_dict().items())))
    for _ in range(3):
        sd = root.state_dict()
        keys = list(sd)
        mode = rng.choice(["drop", "extra", "shape", "dtype"])
        if keys and mode == "drop":
            del sd[rng.choice(keys)]
        elif mode == "extra":
            sd[rng.choice(["zz", "c0.zz", "c0.q.r", "c9.a"])] = lib.ones(2)
        elif keys and mode == "shape":
            sd[rng.choice(keys)] = lib.ones(7, 3)
        elif keys:
            key = rng.choice(keys)
            sd[key] = (sd[key] + 1).to(lib.float64)
        for strict in (True, False):
            for assign in (False, True):
                def load(sd=sd, strict=strict, assign=assign):
                    target = _make(lib, seed)[0]
                    res = target.load_state_dict({k: v.clone() for k, v in sd.items()}, strict=strict, assign=assign)
                    return repr(res), list(target.state_dict(keep_vars=True).items())
                steps.append((f"load {mode} {strict} {assign}", load))
    return [(label, _outcome(fn, lib)) for label, fn in steps]


@pytest.mark.parametrize("seed", [0, 3, 7, 11, 23])
def test_random_trees_match_torch(seed):
    ours, theirs = _tree_trace(engine, seed), _tree_trace(torch, seed)
    for (label, a), (_, b) in zip(ours, theirs):
        assert a == b, label


# ---- random attribute operations -----------------------------------------------------------------------------
_NAMES = ["a", "b", "training", "forward", "_x"]
_OPS = ["set", "del", "buffer", "buffer_np", "param", "module"]


def _value(lib, kind):
    return {"None": lambda: None, "T": lambda: lib.ones(1), "P": lambda: lib.nn.Parameter(lib.ones(1)),
            "M": lambda: lib.nn.ReLU(), "B": lambda: lib.nn.Buffer(lib.ones(1)),
            "Bnp": lambda: lib.nn.Buffer(lib.ones(1), persistent=False), "int": lambda: 3}[kind]()


def _attr_trace(lib, seed):
    rng = random.Random(seed)
    m = lib.nn.Module()
    out = []
    for _ in range(8):
        op, name, kind = rng.choice(_OPS), rng.choice(_NAMES), rng.choice(["None", "T", "P", "M", "B", "Bnp", "int"])
        call = {"set": lambda: setattr(m, name, _value(lib, kind)), "del": lambda: delattr(m, name),
                "buffer": lambda: m.register_buffer(name, _value(lib, kind)),
                "buffer_np": lambda: m.register_buffer(name, _value(lib, kind), persistent=False),
                "param": lambda: m.register_parameter(name, _value(lib, kind)),
                "module": lambda: m.add_module(name, _value(lib, kind))}[op]
        d = m.__dict__
        out.append(((op, name, kind), _outcome(call, lib), list(d["_parameters"]), list(d["_buffers"]),
                    list(d["_modules"]), sorted(d["_non_persistent_buffers_set"]),
                    sorted(k for k in d if k in _NAMES), _outcome(lambda: list(m.state_dict()), lib)))
    return out


def test_random_attribute_operations_match_torch():
    for seed in range(60):
        assert _attr_trace(engine, seed) == _attr_trace(torch, seed), seed


# ---- random hook registrations -------------------------------------------------------------------------------
def _hook_trace(lib, seed):
    rng = random.Random(seed)
    log = []
    glob = lib.nn.modules.module

    class M(lib.nn.Module):
        def forward(self, x, k=1.0):
            log.append(("fwd", round(float(x.sum()), 4), k))
            if k == -1:
                raise ValueError("boom")
            return x * 2

    m = M()
    handles, global_handles = [], []
    for i in range(rng.randint(1, 8)):
        kind = rng.choice(["pre", "prek", "post", "postk", "gpre", "gpost", "bpre", "bfull", "gbfull", "remove"])
        prepend, always, ret = rng.random() < 0.4, rng.random() < 0.3, rng.random() < 0.4
        if kind == "remove":
            if handles:
                rng.choice(handles).remove()
            continue
        if kind == "pre":
            h = m.register_forward_pre_hook(
                lambda mod, a, i=i, ret=ret: (log.append(("pre", i)), (a[0] + i,) if ret else None)[1], prepend=prepend)
        elif kind == "prek":
            h = m.register_forward_pre_hook(
                lambda mod, a, k, i=i, ret=ret: (log.append(("prek", i, sorted(k))),
                                                 ((a[0] * 2,), {"k": float(i)}) if ret else None)[1],
                prepend=prepend, with_kwargs=True)
        elif kind == "post":
            h = m.register_forward_hook(
                lambda mod, a, o, i=i, ret=ret: (log.append(("post", i)), o + i if ret and o is not None else None)[1],
                prepend=prepend, always_call=always)
        elif kind == "postk":
            h = m.register_forward_hook(
                lambda mod, a, k, o, i=i: log.append(("postk", i, sorted(k))), prepend=prepend, with_kwargs=True,
                always_call=always)
        elif kind == "gpre":
            h = glob.register_module_forward_pre_hook(lambda mod, a, i=i: log.append(("gpre", i)))
            global_handles.append(h)
        elif kind == "gpost":
            h = glob.register_module_forward_hook(
                lambda mod, a, o, i=i, ret=ret: (log.append(("gpost", i)), o * 3 if ret and o is not None else None)[1],
                always_call=always)
            global_handles.append(h)
        elif kind == "bpre":
            h = m.register_full_backward_pre_hook(
                lambda mod, go, i=i, ret=ret: (log.append(("bpre", i)), (go[0] * 2,) if ret else None)[1],
                prepend=prepend)
        elif kind == "bfull":
            h = m.register_full_backward_hook(
                lambda mod, gi, go, i=i, ret=ret: (log.append(("bfull", i)), (gi[0] + 1,) if ret else None)[1],
                prepend=prepend)
        else:
            h = glob.register_module_full_backward_hook(lambda mod, gi, go, i=i: log.append(("gbfull", i)))
            global_handles.append(h)
        handles.append(h)
    try:
        for _ in range(2):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            k = rng.choice([1.0, -1, None])

            def call():
                y = m(x) if k is None else m(x, k=k)
                y.sum().backward()
                return y.tolist(), x.grad.tolist()
            log.append(_outcome(call, lib))
    finally:
        for h in global_handles:
            h.remove()
    return log


def test_random_hook_registrations_match_torch():
    for seed in range(40):
        assert _hook_trace(engine, seed) == _hook_trace(torch, seed), seed


# ---- the cases the sweep found -------------------------------------------------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["torch", "engine"])
def test_buffer_assigned_over_plain_attribute_raises(lib):
    m = lib.nn.Module()
    m.x = 3
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.x = lib.nn.Buffer(lib.ones(1))
    assert m.x == 3 and "x" not in m._buffers


@pytest.mark.parametrize("lib", LIBS, ids=["torch", "engine"])
@pytest.mark.parametrize("flag", [True, False])
def test_register_buffer_persistent_argument_wins_over_buffer_flag(lib, flag):
    m = lib.nn.Module()
    m.register_buffer("a", lib.nn.Buffer(lib.ones(1), persistent=flag))
    m.register_buffer("b", lib.nn.Buffer(lib.ones(1), persistent=flag), persistent=False)
    m.c = lib.nn.Buffer(lib.ones(1), persistent=flag)
    assert list(m.state_dict()) == ["a"] + (["c"] if flag else [])
    assert [n for n, _ in m.named_buffers()] == ["a", "b", "c"]


@pytest.mark.parametrize("lib", LIBS, ids=["torch", "engine"])
def test_type_to_integer_with_grad_requiring_parameters_raises(lib):
    m = lib.nn.Sequential(lib.nn.Linear(2, 2))
    m.register_buffer("i", lib.arange(3))
    with pytest.raises(RuntimeError, match="data set to a tensor that requires gradients must be floating point or "
                                           "complex dtype"):
        m.type(lib.int32)
    m.requires_grad_(False).type(lib.int32)
    assert [str(v.dtype).split(".")[-1] for v in m.state_dict().values()] == ["int32"] * 3
    assert type(m[0].weight).__name__ == "Parameter"


def test_module_moves_and_casts_on_cuda(cuda):
    m = enn.Sequential(enn.Linear(2, 3), enn.BatchNorm1d(3))
    m(engine.ones(4, 2)).sum().backward()
    m.cuda()
    assert {str(v.device) for v in m.state_dict().values()} == {"cuda:0"}
    assert {str(p.grad.device) for p in m.parameters()} == {"cuda:0"}
    m.half()
    assert [str(v.dtype) for v in m.state_dict().values()] == ["engine.float16"] * 6 + ["engine.int64"]
    fresh = enn.Sequential(enn.Linear(2, 3), enn.BatchNorm1d(3))
    fresh.load_state_dict(m.state_dict())
    assert {(str(v.device), str(v.dtype)) for v in fresh.state_dict().values()} == {
        ("cpu", "engine.float32"), ("cpu", "engine.int64")}


@pytest.mark.parametrize("lib", LIBS, ids=["torch", "engine"])
def test_sequential_insert_keeps_other_keys(lib):
    named = lib.nn.Sequential(OrderedDict(a=lib.nn.ReLU(), b=lib.nn.Tanh()))
    named.insert(2, lib.nn.Identity())
    assert list(named._modules) == ["a", "b", "2"]
    with pytest.raises(KeyError, match="'1'"):
        named.insert(1, lib.nn.Sigmoid())  # torch's KeyError for a named module in the way of the shift
    numbered = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh())
    numbered.insert(-1, lib.nn.Identity())
    assert [(k, type(m).__name__) for k, m in numbered._modules.items()] == [
        ("0", "ReLU"), ("1", "Identity"), ("2", "Tanh")]
