"""Module full backward hooks and backward pre-hooks (and the deprecated non-full hook) against torch on the same
models: what the hooks see, what their returns change, how often and in which order they run."""
import warnings

import numpy as np
import pytest
import torch

import engine
import engine.nn as nn


def _np(t):
    return None if t is None else t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def _same_weights(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours


def _recorder(log, tag):
    def hook(module, grad_input, grad_output):
        log.append((tag, [_np(g) for g in grad_input], [_np(g) for g in grad_output]))
    return hook


def _assert_logs(ours, theirs):
    assert [e[0] for e in ours] == [e[0] for e in theirs]
    for (_, oi, oo), (_, ti, to) in zip(ours, theirs):
        for a, b in zip(oi + oo, ti + to):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
        assert len(oi) == len(ti) and len(oo) == len(to)


def _block(lib):
    class Block(lib.nn.Module):
        """A resnet basic block with a projection shortcut."""

        def __init__(self):
            super().__init__()
            self.conv1 = lib.nn.Conv2d(3, 5, 3, padding=1, bias=False)
            self.bn1 = lib.nn.BatchNorm2d(5)
            self.conv2 = lib.nn.Conv2d(5, 5, 3, padding=1, bias=False)
            self.bn2 = lib.nn.BatchNorm2d(5)
            self.down = lib.nn.Conv2d(3, 5, 1, bias=False)

        def forward(self, x):
            out = lib.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return lib.relu(out + self.down(x))
    return Block()


def test_resnet_block_hooks_match_torch():
    torch.manual_seed(0)
    theirs = _block(torch)
    ours = _same_weights(_block(engine), theirs)
    x = np.random.RandomState(0).randn(2, 3, 7, 6).astype(np.float32)
    logs = {}
    for lib, model in ((engine, ours), (torch, theirs)):
        log = logs[lib] = []
        for name in ("conv1", "bn2", ""):
            m = model.get_submodule(name)
            m.register_full_backward_hook(_recorder(log, name or "block"))
            m.register_full_backward_pre_hook(
                lambda mod, go, name=name: log.append(("pre " + name, [], [_np(g) for g in go])))
        t = lib.tensor(x, requires_grad=True)
        model(t).pow(2).sum().backward()
        log.append(("x", [_np(t.grad)], []))
    _assert_logs(logs[engine], logs[torch])


class _Multi:
    @staticmethod
    def make(lib):
        class Multi(lib.nn.Module):
            def forward(self, a, scale, b, c, n):
                return a * scale + c * b, b.sum() * 2, n + 1
        return Multi()


def test_multi_input_module_with_non_tensors_and_inputs_without_grad():
    rs = np.random.RandomState(1)
    a, b, c = (rs.randn(3, 4).astype(np.float32) for _ in range(3))
    logs = {}
    for lib in (engine, torch):
        log = logs[lib] = []
        m = _Multi.make(lib)
        m.register_full_backward_hook(_recorder(log, "full"))
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", [], [_np(g) for g in go])))
        ta, tb = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        out = m(ta, 1.5, tb, lib.tensor(c), lib.arange(3))
        assert [o.requires_grad for o in out] == [True, True, False]
        out[0].sum().backward()  # the second output gets no gradient: None in grad_output
        log.append(("grads", [_np(ta.grad), _np(tb.grad)], []))
    _assert_logs(logs[engine], logs[torch])


def test_output_used_twice_fires_once_and_unused_input_gets_zeros():
    class Twice(nn.Module):
        def forward(self, a, b):
            return a * 3

    for lib in (engine, torch):
        m = Twice() if lib is engine else type("T", (torch.nn.Module,), {"forward": lambda s, a, b: a * 3})()
        calls = []
        m.register_full_backward_hook(lambda mod, gi, go: calls.append([_np(g) for g in gi + go]))
        a, b = lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)
        y = m(a, b)
        (y * y + y).sum().backward()
        assert len(calls) == 1
        np.testing.assert_allclose(calls[0][0], [21.0, 21.0])
        np.testing.assert_array_equal(calls[0][1], np.zeros(3))
        np.testing.assert_allclose(calls[0][2], [7.0, 7.0])


def test_returns_replace_grad_output_and_grad_input():
    grads = {}
    for lib in (engine, torch):
        m = lib.nn.Linear(4, 3)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10))
        m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0] + 1,))
        x = lib.ones(2, 4, requires_grad=True)
        m(x).sum().backward()
        grads[lib] = (_np(x.grad), _np(m.weight.grad))
    for ours, theirs in zip(grads[engine], grads[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_hook_order_prepend_global_and_removal():
    for lib in (engine, torch):
        order = []
        m = lib.nn.ReLU()
        h1 = m.register_full_backward_hook(lambda *a: order.append("h1"))
        m.register_full_backward_hook(lambda *a: order.append("h2"), prepend=True)
        m.register_full_backward_pre_hook(lambda *a: order.append("p1"))
        p2 = m.register_full_backward_pre_hook(lambda *a: order.append("p2"), prepend=True)
        g = lib.nn.modules.module.register_module_full_backward_hook(lambda *a: order.append("global"))
        gp = lib.nn.modules.module.register_module_full_backward_pre_hook(lambda *a: order.append("global pre"))
        try:
            m(lib.ones(2, requires_grad=True)).sum().backward()
            h1.remove()
            p2.remove()
            with g:
                pass
            m(lib.ones(2, requires_grad=True)).sum().backward()
        finally:
            g.remove()
            gp.remove()
        assert order == ["global pre", "p2", "p1", "global", "h2", "h1", "global pre", "p1", "h2"]


def test_no_input_requires_grad_fires_on_outputs_with_a_warning():
    for lib in (engine, torch):
        m = lib.nn.Linear(3, 2)
        seen = []
        m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go[0].shape)))
        with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with respect "
                                              "to module outputs since no inputs require gradients"):
            m(lib.ones(4, 3)).sum().backward()
        assert seen == [((None,), (4, 2))]
        m.register_full_backward_hook(lambda mod, gi, go: (lib.ones(4, 3),))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="^Backward hook for Modules where no input requires gradient "
                                                   "should always return None or None for all gradients."):
                m(lib.ones(4, 3)).sum().backward()


def test_no_output_requires_grad_never_fires_and_no_grad_mode_records_nothing():
    m = nn.Linear(3, 2)
    seen = []
    m.register_full_backward_hook(lambda *a: seen.append(1))
    m.requires_grad_(False)
    x = engine.ones(4, 3, requires_grad=True)
    out = m(x.detach())
    assert not out.requires_grad
    m.requires_grad_(True)
    with engine.no_grad():
        assert m(x).grad_fn is None
    assert seen == []


@pytest.mark.parametrize("which", ["pre", "full"])
def test_wrong_number_of_returned_gradients(which):
    m = nn.Linear(3, 2)
    if which == "pre":
        m.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
        message = "^Backward pre hook returned an invalid number of grad_output, got 2, but expected 1"
    else:
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        message = "^Backward hook returned an invalid number of grad_input, got 2, but expected 1"
    with pytest.raises(RuntimeError, match=message):
        m(engine.ones(4, 3, requires_grad=True)).sum().backward()


def test_inplace_on_a_hooked_output_is_refused():
    m = nn.Linear(3, 2)
    m.register_full_backward_hook(lambda *a: None)
    out = m(engine.ones(4, 3, requires_grad=True))
    out.add_(1)
    with pytest.raises(RuntimeError, match="^Output 0 of BackwardHookFunctionBackward is a view and is being "
                                           "modified inplace. This view was created inside a custom Function"):
        out.sum().backward()


def test_full_and_regular_hooks_do_not_mix():
    message = ("^Cannot use both regular backward hooks and full backward hooks on a single Module. "
               "Please use only one of them.$")
    m = nn.ReLU()
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match=message):
        m.register_backward_hook(lambda *a: None)
    m = nn.ReLU()
    m.register_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match=message):
        m.register_full_backward_hook(lambda *a: None)


def test_non_full_hook_sees_the_last_node_like_torch():
    x = np.random.RandomState(2).randn(3, 4).astype(np.float32)
    logs, grads = {}, {}
    for lib in (engine, torch):
        log = logs[lib] = []
        m = lib.nn.Sigmoid()
        m.register_backward_hook(_recorder(log, "sigmoid"))
        m.register_backward_hook(lambda mod, gi, go: (gi[0] * 2,))
        t = lib.tensor(x, requires_grad=True)
        with pytest.warns(FutureWarning, match="Using a non-full backward hook when the forward contains multiple "
                                               "autograd Nodes"):
            out = m(t)
        out.sum().backward()
        grads[lib] = _np(t.grad)
    _assert_logs(logs[engine], logs[torch])
    np.testing.assert_allclose(grads[engine], grads[torch], rtol=1e-6)


def _cnn(lib):
    torch.manual_seed(3)
    return lib.nn.Sequential(lib.nn.Conv2d(3, 6, 3, padding=1), lib.nn.ReLU(), lib.nn.Conv2d(6, 8, 3, padding=1),
                             lib.nn.ReLU(), lib.nn.AdaptiveAvgPool2d(1), lib.nn.Flatten(), lib.nn.Linear(8, 5))


def _grad_cam(lib, model, x, target_layer, cls):
    """Grad-CAM: the layer's activations weighted by the spatial mean of their gradients, through ReLU."""
    store = {}
    model[target_layer].register_forward_hook(lambda m, i, o: store.update(act=o))
    model[target_layer].register_full_backward_hook(lambda m, gi, go: store.update(grad=go[0]))
    scores = model(x)
    model.zero_grad()
    scores[:, cls].sum().backward()
    weights = store["grad"].mean(dim=(2, 3), keepdim=True)
    return _np(lib.relu((weights * store["act"]).sum(dim=1)).detach())


def test_grad_cam_map_matches_torch():
    theirs = _cnn(torch).eval()
    ours = _same_weights(_cnn(engine).eval(), theirs)
    x = np.random.RandomState(4).randn(2, 3, 9, 11).astype(np.float32)
    cam = _grad_cam(engine, ours, engine.tensor(x), 2, 3)
    expected = _grad_cam(torch, theirs, torch.tensor(x), 2, 3)
    assert cam.shape == (2, 9, 11)
    np.testing.assert_allclose(cam, expected, rtol=1e-4, atol=1e-6)


def test_double_backward_through_a_hooked_module():
    m = nn.Tanh()
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(1))
    x = engine.tensor([0.3, -0.2], requires_grad=True)
    (g,) = engine.autograd.grad(m(x).sum(), x, create_graph=True)
    g.sum().backward()
    tx = torch.tensor([0.3, -0.2], requires_grad=True)
    (tg,) = torch.autograd.grad(torch.tanh(tx).sum(), tx, create_graph=True)
    tg.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    assert seen == [1]


def test_hooks_on_cuda(cuda):
    m = nn.Linear(3, 2).to("cuda")
    seen = []
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 0.5,))
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi[0].device.type))
    x = engine.ones(4, 3, device="cuda", requires_grad=True)
    m(x).sum().backward()
    assert seen == ["cuda"]
    np.testing.assert_allclose(x.grad.cpu().numpy(), 0.5 * m.weight.sum(0).detach().cpu().numpy()[None].repeat(4, 0),
                               rtol=1e-6)


def test_hooks_survive_a_training_graph_and_fire_in_its_replays():
    class TrainGraph(nn.Graph):
        def __init__(self, model, optimizer):
            super().__init__()
            self.model = model
            self.add_optimizer(optimizer)

        def build(self, x, y):
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    x, y = engine.randn(5, 4), engine.tensor([0, 1, 2, 0, 1])
    runs = []
    for graphed in (True, False):
        engine.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        seen = []
        model[2].register_full_backward_hook(lambda m, gi, go: seen.append(float(gi[0].abs().sum())))
        opt = engine.optim.SGD(model.parameters(), lr=0.1)
        graph = TrainGraph(model, opt)
        losses = []
        for _ in range(3):
            if graphed:
                losses.append(float(graph(x, y)))
            else:
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                losses.append(float(loss))
        runs.append((losses, seen))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-6)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-6)
    assert len(runs[0][1]) == 3


def test_an_unused_hooked_graph_is_freed_without_the_cycle_collector():
    import gc
    import weakref
    m = nn.Linear(3, 2)
    m.register_full_backward_hook(lambda *a: None)
    gc.disable()
    try:
        out = m(engine.ones(4, 3, requires_grad=True))
        node = weakref.ref(out.grad_fn)
        del out
        assert node() is None
    finally:
        gc.enable()


def test_a_hook_returning_a_non_tensor_grad_input_raises_as_torch():
    def run(lib):
        m = lib.nn.Linear(3, 2)
        m.register_full_backward_hook(lambda module, grad_input, grad_output: (1,))
        m(lib.ones(4, 3, requires_grad=True)).sum().backward()
    with pytest.raises(TypeError) as theirs:
        run(torch)
    with pytest.raises(TypeError) as ours:
        run(engine)
    assert str(ours.value).split("\n")[0] == str(theirs.value)  # ours names the node on a second line
