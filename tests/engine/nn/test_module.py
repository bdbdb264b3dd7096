"""Module API parity with PyTorch: registration, traversal, repr, state dicts, hooks, moves, copies."""
import copy
import pickle
import re
from collections import OrderedDict

import numpy as np
import pytest
import torch

import engine
import engine.nn as enn
from op_check import assert_close


def build(lib):
    """The same small network in torch (lib=torch) or engine (lib=engine)."""
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 4, 3, padding=1, bias=False),
                nn.BatchNorm2d(4),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2),
            )
            self.blocks = nn.ModuleList([
                nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.BatchNorm2d(4)),
                nn.Identity(),
            ])
            self.act = nn.ReLU()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.heads = nn.ModuleDict({"cls": nn.Linear(4, 5), "aux": nn.Linear(4, 5, bias=False)})
            self.register_buffer("scale", lib.ones(1) * 2)
            self.register_buffer("cache", lib.zeros(3), persistent=False)
            self.gamma = nn.Parameter(lib.ones(1))

        def forward(self, x):
            x = self.features(x)
            for block in self.blocks:
                x = self.act(block(x) + x)
            x = self.pool(x).flatten(1)
            return self.heads["cls"](x) * self.scale + self.heads["aux"](x) * self.gamma

    return Net()


def numpy_state(model):
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}


def pair(seed=0):
    torch.manual_seed(seed)
    tm = build(torch)
    em = build(engine)
    em.load_state_dict(numpy_state(tm))
    return tm, em


def torch_style(text):
    return text.replace("torch.", "engine.")


def test_state_dict_keys_order_and_shapes():
    tm, em = build(torch), build(engine)
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(esd) == list(tsd)
    assert "cache" not in esd and "features.1.num_batches_tracked" in esd
    for k in tsd:
        assert tuple(esd[k].shape) == tuple(tsd[k].shape), k
        assert str(esd[k].dtype).split(".")[-1] == str(tsd[k].dtype).split(".")[-1], k
        assert not esd[k].requires_grad
    assert esd._metadata == tsd._metadata
    kept = em.state_dict(keep_vars=True)
    assert kept["gamma"] is em.gamma and isinstance(kept["gamma"], enn.Parameter)


def test_names_and_traversal_match_torch():
    tm, em = build(torch), build(engine)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in em.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert [n for n, _ in em.named_modules()] == [n for n, _ in tm.named_modules()]
    assert [n for n, _ in em.named_children()] == [n for n, _ in tm.named_children()]
    assert [n for n, _ in em.named_parameters(prefix="m", recurse=False)] == ["m.gamma"]
    assert [n for n, _ in em.features.named_modules(prefix="f")] == ["f", "f.0", "f.1", "f.2", "f.3"]
    assert len(list(em.parameters())) == len(list(tm.parameters()))
    assert em.get_submodule("blocks.0.1") is em.blocks[0][1]
    assert em.get_parameter("heads.cls.bias") is em.heads["cls"].bias
    assert em.get_buffer("features.1.running_mean") is em.features[1].running_mean
    with pytest.raises(AttributeError, match="Sequential has no attribute `9`"):
        em.get_submodule("features.9")
    with pytest.raises(AttributeError, match="`running_mean` is not an nn.Parameter"):
        em.get_parameter("features.1.running_mean")


def test_repr_matches_torch():
    tm, em = build(torch), build(engine)
    assert repr(em) == torch_style(repr(tm))
    p = enn.Parameter(engine.ones(2))
    assert repr(p) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    plist = [torch.nn.Parameter(torch.ones(2, 3)), torch.ones(3)]
    elist = [enn.Parameter(engine.ones(2, 3)), engine.ones(3)]
    assert repr(enn.ParameterList(elist)) == torch_style(repr(torch.nn.ParameterList(plist)))
    assert repr(enn.ParameterDict({"a": engine.ones(2)})) == \
        torch_style(repr(torch.nn.ParameterDict({"a": torch.ones(2)})))
    tl = torch.nn.ModuleList([torch.nn.ReLU()] * 3 + [torch.nn.Linear(1, 1), torch.nn.ReLU()])
    el = enn.ModuleList([enn.ReLU()] * 3 + [enn.Linear(1, 1), enn.ReLU()])
    assert repr(el) == repr(tl)
    assert repr(enn.Sequential()) == "Sequential()" and repr(enn.ModuleList()) == "ModuleList()"


def test_train_eval_propagation():
    em = build(engine)
    assert em.training and em.blocks[0][1].training
    em.eval()
    assert all(not m.training for m in em.modules())
    em.blocks.train()
    assert em.blocks[0][1].training and not em.features[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        em.train("yes")


def test_loaded_model_matches_torch_eval_and_train():
    tm, em = pair(1)
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    tm.eval(), em.eval()
    assert_close(em(engine.from_numpy(x)).detach().numpy(), tm(torch.from_numpy(x)).detach().numpy(), 1e-5)
    tm.train(), em.train()
    tout, eout = tm(torch.from_numpy(x)), em(engine.from_numpy(x))
    assert_close(eout.detach().numpy(), tout.detach().numpy(), 1e-5)
    upstream = np.random.default_rng(1).standard_normal(tuple(tout.shape)).astype(np.float32)
    tout.backward(torch.from_numpy(upstream))
    eout.backward(engine.from_numpy(upstream))
    tparams = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        ref = tparams[name].grad.numpy()
        if np.abs(ref).max() < 1e-6:  # a conv bias before BatchNorm: mathematically zero
            assert np.abs(p.grad.numpy()).max() < 1e-5, name
        else:
            assert_close(p.grad.numpy(), ref, 1e-4, name)
    tsd = tm.state_dict()
    for name, value in em.state_dict().items():
        assert_close(value.numpy(), tsd[name].numpy(), 1e-5, name)
    assert int(em.features[1].num_batches_tracked) == 1


def test_load_state_dict_accepts_tensors_numpy_and_lists():
    src, dst = enn.Linear(3, 2), enn.Linear(3, 2)
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    np.testing.assert_array_equal(dst.weight.detach().numpy(), src.weight.detach().numpy())
    weight = dst.weight
    dst.load_state_dict({"weight": np.zeros((2, 3), np.float64), "bias": [1, 2]})
    assert dst.weight is weight and dst.weight.dtype == engine.float32 and dst.weight.requires_grad
    np.testing.assert_array_equal(dst.bias.detach().numpy(), [1.0, 2.0])
    assert dst.bias.dtype == engine.float32


def test_load_state_dict_strict_and_non_strict_keys_like_torch():
    tm, em = build(torch), build(engine)
    sd = numpy_state(tm)
    del sd["heads.cls.bias"]
    sd["extra"] = np.ones(1, np.float32)
    sd["features.1.foo.bar"] = np.ones(1, np.float32)
    tsd = {k: torch.from_numpy(v) for k, v in sd.items()}
    tres = tm.load_state_dict(tsd, strict=False)
    eres = em.load_state_dict(sd, strict=False)
    assert eres.missing_keys == tres.missing_keys == ["heads.cls.bias"]
    assert eres.unexpected_keys == tres.unexpected_keys
    assert isinstance(eres, tuple) and eres == (eres.missing_keys, eres.unexpected_keys)
    with pytest.raises(RuntimeError) as terr:
        tm.load_state_dict(tsd)
    with pytest.raises(RuntimeError) as eerr:
        em.load_state_dict(sd)
    assert str(eerr.value) == str(terr.value)


def test_load_state_dict_pinned_messages():
    model = enn.Sequential(OrderedDict([("fc", enn.Linear(512, 1000))]))
    model.__class__.__name__  # the message names the class of the model
    sd = {k: v.numpy() for k, v in model.state_dict().items()}
    missing = dict(sd)
    del missing["fc.bias"]
    with pytest.raises(RuntimeError, match=re.escape(
            'Error(s) in loading state_dict for Sequential:\n\tMissing key(s) in state_dict: "fc.bias". ')):
        model.load_state_dict(missing)
    with pytest.raises(RuntimeError, match=re.escape('Unexpected key(s) in state_dict: "fc.extra". ')):
        model.load_state_dict({**sd, "fc.extra": np.ones(1)})
    wrong = {**sd, "fc.weight": np.zeros((10, 512), np.float32)}
    with pytest.raises(RuntimeError, match=re.escape(
            "size mismatch for fc.weight: copying a param with shape engine.Size([10, 512]) from checkpoint, "
            "the shape in current model is engine.Size([1000, 512]).")):
        model.load_state_dict(wrong, strict=False)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        model.load_state_dict([1, 2])
    with pytest.raises(RuntimeError, match='While copying the parameter named "fc.bias"'):
        model.load_state_dict({**sd, "fc.bias": "abc"})


def test_nothing_half_loaded_after_error():
    model = enn.Sequential(enn.Linear(3, 4), enn.BatchNorm1d(4))
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    bad = {k: np.full(v.shape, 7, v.dtype) for k, v in before.items()}
    bad["1.running_var"] = np.ones(5, np.float32)  # the last entry is wrong: nothing may change
    with pytest.raises(RuntimeError, match="size mismatch for 1.running_var"):
        model.load_state_dict(bad)
    missing = {k: v for k, v in bad.items() if k != "1.bias"}
    missing["1.running_var"] = np.ones(4, np.float32)
    with pytest.raises(RuntimeError, match="Missing key"):
        model.load_state_dict(missing)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)


def test_batchnorm_checkpoint_without_num_batches_tracked_loads():
    tbn, ebn = torch.nn.BatchNorm2d(3), enn.BatchNorm2d(3)
    sd = {k: v.numpy() for k, v in tbn.state_dict().items() if k != "num_batches_tracked"}
    assert ebn.load_state_dict(sd) == tbn.load_state_dict({k: torch.from_numpy(v) for k, v in sd.items()})
    full = {k: v.numpy() for k, v in tbn.state_dict().items()}
    full["num_batches_tracked"] = np.array([5])  # old 1-element checkpoints load into a 0-dim buffer
    ebn.load_state_dict(full)
    assert int(ebn.num_batches_tracked) == 5 and ebn.num_batches_tracked.dim() == 0


def test_load_state_dict_assign():
    model = enn.Linear(2, 2)
    weight = engine.ones(2, 2)
    model.load_state_dict({"weight": weight, "bias": np.zeros(2, np.float32)}, assign=True)
    assert isinstance(model.weight, enn.Parameter) and model.weight.requires_grad
    model.weight._data[0, 0] = 5
    assert weight._data[0, 0] == 5


def test_registration_rules_and_errors():
    m = enn.Module()
    m.w = enn.Parameter(engine.ones(2))
    m.register_buffer("b", engine.zeros(2))
    m.child = enn.Linear(1, 1)
    assert list(m._parameters) == ["w"] and list(m._buffers) == ["b"] and list(m._modules) == ["child"]
    m.b = engine.ones(2)
    assert list(m._buffers) == ["b"] and m.b.numpy()[0] == 1
    with pytest.raises(TypeError, match="cannot assign 'engine.FloatTensor' as parameter 'w'"):
        m.w = engine.ones(2)
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'child'"):
        m.child = 3
    with pytest.raises(KeyError, match="attribute 'child' already exists"):
        m.register_buffer("child", engine.ones(1))
    with pytest.raises(KeyError, match='contain "\\."'):
        m.register_parameter("a.b", None)
    m.w = None
    assert m.w is None and list(m.state_dict()) == ["b", "child.weight", "child.bias"]
    m.child = None
    assert list(m.state_dict()) == ["b"] and repr(m) == "Module(\n  (child): None\n)"
    del m.b
    assert not hasattr(m, "b")
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope
    with pytest.raises(AttributeError, match="cannot assign parameters before Module.__init__"):
        class Bad(enn.Module):
            def __init__(self):
                self.p = enn.Parameter(engine.ones(1))
        Bad()
    assert "child" in dir(m) and "w" in dir(m)
    m.register_buffer("nb", engine.ones(1), persistent=False)
    m.nb2 = enn.Buffer(engine.ones(1), persistent=False)
    assert "nb" not in m.state_dict() and "nb2" not in m.state_dict() and "nb2" in dict(m.named_buffers())


def test_shared_parameters_and_modules():
    lin = enn.Linear(2, 2)
    seq = enn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in seq.named_modules()] == ["", "0"]
    assert [n for n, _ in seq.named_modules(remove_duplicate=False)] == ["", "0", "1"]
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_forward_hooks_order_replacement_and_removal():
    calls = []
    lin = enn.Linear(2, 2)
    h1 = lin.register_forward_pre_hook(lambda m, args: calls.append("pre1"))
    lin.register_forward_pre_hook(lambda m, args: (calls.append("pre0"), None)[1], prepend=True)
    h3 = lin.register_forward_pre_hook(lambda m, args, kwargs: (args, kwargs), with_kwargs=True)
    h4 = lin.register_forward_hook(lambda m, args, out: calls.append("post"))
    h5 = lin.register_forward_hook(lambda m, args, out: out * 0)
    x = engine.ones(1, 2)
    out = lin(x)
    assert calls == ["pre0", "pre1", "post"]
    assert np.all(out.detach().numpy() == 0)
    h5.remove()
    h4.remove()
    h1.remove()
    h3.remove()
    calls.clear()
    assert np.any(lin(x).detach().numpy() != 0) and calls == ["pre0"]
    double = lin.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    expected = lin.forward(x * 2).detach().numpy()
    np.testing.assert_allclose(lin(x).detach().numpy(), expected)
    double.remove()
    seen = []
    lin.register_forward_hook(lambda m, args, kwargs, out: seen.append(kwargs), with_kwargs=True)
    lin(input=x)
    assert seen == [{"input": x}]


def test_forward_hook_always_call_runs_on_error():
    class Boom(enn.Module):
        def forward(self, x):
            raise ValueError("boom")
    seen = []
    b = Boom()
    b.register_forward_hook(lambda m, a, o: seen.append("always"), always_call=True)
    b.register_forward_hook(lambda m, a, o: seen.append("normal"))
    with pytest.raises(ValueError, match="boom"):
        b(1)
    assert seen == ["always"]


def test_deepcopy_and_pickle():
    tm, em = pair(2)
    em.eval()
    clone = copy.deepcopy(em)
    assert isinstance(clone.gamma, enn.Parameter) and clone.gamma is not em.gamma
    assert clone.features[0].weight._data is not em.features[0].weight._data
    x = engine.randn(1, 3, 8, 8)
    np.testing.assert_array_equal(clone(x).detach().numpy(), em(x).detach().numpy())
    with engine.no_grad():
        clone.features[0].weight.fill_(0)
    assert np.any(em.features[0].weight.detach().numpy() != 0)
    restored = pickle.loads(pickle.dumps(enn.Sequential(enn.Linear(2, 3), enn.BatchNorm1d(3))))
    assert isinstance(restored[0].weight, enn.Parameter) and restored[0].weight.requires_grad
    assert list(restored.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                           "1.running_var", "1.num_batches_tracked"]


def test_zero_grad_and_requires_grad():
    lin = enn.Linear(3, 2)
    lin(engine.ones(4, 3)).sum().backward()
    assert lin.weight.grad is not None
    lin.zero_grad(set_to_none=False)
    assert lin.weight.grad is not None and not np.any(lin.weight.grad.numpy())
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None
    lin.requires_grad_(False)
    assert not any(p.requires_grad for p in lin.parameters())


def test_to_double_keeps_parameter_identity():
    tm, em = pair(3)
    weight = em.features[0].weight
    em.features[0].weight.grad = engine.ones(*weight.shape)
    assert em.to(engine.float64) is em
    assert em.features[0].weight is weight and weight.dtype == engine.float64
    assert weight.grad.dtype == engine.float64
    assert em.features[1].running_mean.dtype == engine.float64
    assert em.features[1].num_batches_tracked.dtype == engine.int64
    em.eval(), tm.eval(), tm.double()
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8))
    assert_close(em(engine.from_numpy(x)).detach().numpy(), tm(torch.from_numpy(x)).detach().numpy(), 1e-10)
    em.float()
    assert weight.dtype == engine.float32 and em.to("cpu") is em
    with pytest.raises(TypeError, match="only accepts floating point"):
        em.to(engine.int64)


def test_apply_and_children():
    em = build(engine)
    names = []
    em.apply(lambda m: names.append(type(m).__name__))
    assert names[-1] == "Net" and names[0] == "Conv2d"
    assert [type(c).__name__ for c in em.children()] == ["Sequential", "ModuleList", "ReLU",
                                                        "AdaptiveAvgPool2d", "ModuleDict"]


def test_sequential_api():
    a, b, c = enn.ReLU(), enn.Tanh(), enn.Sigmoid()
    seq = enn.Sequential(a, b, c)
    assert len(seq) == 3 and seq[-1] is c and list(seq) == [a, b, c]
    sub = seq[1:]
    assert isinstance(sub, enn.Sequential) and list(sub._modules) == ["1", "2"]
    seq.append(enn.Identity())
    assert len(seq) == 4
    del seq[1]
    assert list(seq._modules) == ["0", "1", "2"] and seq[1] is c
    seq.insert(1, b)
    assert list(seq) [:3] == [a, b, c]
    assert seq.pop(0) is a and len(seq) == 3
    seq.extend([a])
    assert seq[-1] is a
    seq[0] = a
    assert seq[0] is a
    named = enn.Sequential(OrderedDict([("conv", enn.Conv2d(1, 1, 1)), ("act", enn.ReLU())]))
    assert list(named.state_dict()) == ["conv.weight", "conv.bias"] and named.act is named[1]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        named[5]
    x = engine.randn(2, 3)
    np.testing.assert_allclose(enn.Sequential(enn.ReLU(), enn.Tanh())(x).numpy(), np.tanh(np.maximum(x.numpy(), 0)),
                               rtol=1e-6)


def test_module_list_dict_parameter_containers():
    ml = enn.ModuleList([enn.Linear(1, 1) for _ in range(3)])
    ml.append(enn.ReLU())
    ml.insert(0, enn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Tanh", "Linear", "Linear", "Linear", "ReLU"]
    del ml[0]
    assert list(ml._modules) == ["0", "1", "2", "3"] and isinstance(ml[:2], enn.ModuleList)
    ml += [enn.Identity()]
    assert len(ml) == 5 and ml.pop(-1).__class__ is enn.Identity
    with pytest.raises(TypeError, match="should be called with an iterable"):
        ml.extend(enn.ReLU())
    md = enn.ModuleDict({"a": enn.ReLU(), "b": enn.Linear(2, 2)})
    md["c"] = enn.Tanh()
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert md.pop("a").__class__ is enn.ReLU and list(md) == ["b", "c"]
    pl = enn.ParameterList([engine.ones(2), enn.Parameter(engine.zeros(3))])
    pl.append(engine.ones(1))
    assert len(pl) == 3 and all(isinstance(p, enn.Parameter) for p in pl)
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    pd = enn.ParameterDict({"x": engine.ones(2)})
    pd["y"] = enn.Parameter(engine.zeros(1))
    assert list(pd.keys()) == ["x", "y"] and isinstance(pd["x"], enn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["x", "y"]
    del pd["x"]
    assert list(pd) == ["y"] and list(pd.state_dict()) == ["y"]


def test_parameter_semantics():
    data = engine.ones(2, 3)
    p = enn.Parameter(data)
    assert isinstance(p, engine.Tensor) and isinstance(p, enn.Parameter)
    assert p.requires_grad and p.is_leaf and p._data is data._data
    assert not enn.Parameter(data, requires_grad=False).requires_grad
    assert tuple(enn.Parameter().shape) == (0,)
    q = copy.deepcopy(p)
    assert isinstance(q, enn.Parameter) and q._data is not p._data and q.requires_grad
    assert type(p.detach()) is engine.Tensor


def test_an_integer_parameter_is_refused_with_torchs_message():
    with pytest.raises(RuntimeError, match="^Only Tensors of floating point and complex dtype can require gradients$"):
        enn.Parameter(engine.tensor([1]))
    assert not enn.Parameter(engine.tensor([1]), requires_grad=False).requires_grad
