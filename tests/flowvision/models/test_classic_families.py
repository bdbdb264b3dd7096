"""AlexNet, SqueezeNet, GoogLeNet, Inception v3 and DenseNet against torchvision: structure of every
variant, eval numerics, training outputs and gradients (auxiliary heads included), features_only and nn.Graph."""
import numpy as np
import pytest
import torch

import engine
import flowvision.models as models
from classic_parity import (CLASSIC, FAMILIES, TOL, check_structure, he_weights, meta_model, pair, reference,
                            shared_pair)
from model_parity import backward_both, eval_outputs, image_batch, skip_random_init, torchvision_names
from op_check import assert_close

pytestmark = pytest.mark.slow  # whole-model runs: outside the quick subset (-m "not slow")


@pytest.fixture
def no_init(monkeypatch):
    """No random initialisation: for tests of structure, or whose weights are all loaded."""
    skip_random_init(monkeypatch)


def test_registered_families():
    """torchvision's models of each family module (timm's densenetblur121d and untrained densenet264d sit in
    ``densenet`` beside them)."""
    for module, names in FAMILIES.items():
        assert torchvision_names(models.list_models(module=module)) == names
    assert models.list_models("densenet*", exclude_filters=["densenetblur*", "*d"]) == FAMILIES["densenet"]
    assert models.list_models("squeezenet*") == FAMILIES["squeezenet"]
    assert all(models.is_model_pretrained(n) for n in CLASSIC)


@pytest.mark.parametrize("name, kwargs", [(name, {}) for name in CLASSIC] + [
    ("googlenet", dict(aux_logits=False, num_classes=10)),
    ("inception_v3", dict(aux_logits=False, num_classes=10)),
    ("densenet121", dict(num_classes=10, drop_rate=0.1, memory_efficient=True)),
    ("squeezenet1_1", dict(num_classes=10)),
])
def test_state_dict_matches_torchvision(name, kwargs, no_init):
    """Built without weights or a forward pass: keys, order, shapes, dtypes and module tree equal torchvision's."""
    check_structure(models.create_model(name, **kwargs), meta_model(name, **kwargs))


# (name, options, [(batch, height, width)]): 224 and an odd size (Inception v3 needs at least 75x75)
EVAL_CASES = [
    ("alexnet", {}, [(1, 224, 224), (2, 67, 83)]),
    ("squeezenet1_0", {}, [(1, 61, 75)]),
    ("squeezenet1_1", {}, [(2, 224, 224), (2, 67, 83)]),
    ("googlenet", {}, [(1, 224, 224), (2, 67, 83)]),
    ("googlenet", dict(transform_input=True, aux_logits=False, num_classes=10, dropout=0.3), [(2, 53, 61)]),
    ("inception_v3", dict(transform_input=True), [(1, 224, 224), (1, 91, 103)]),
    ("densenet121", {}, [(1, 224, 224), (2, 67, 83)]),
]


@pytest.mark.parametrize("name, kwargs, sizes", EVAL_CASES)
def test_eval_parity(name, kwargs, sizes):
    """Eval mode ignores the auxiliary heads (at 91x103 Inception's would fail: its map is too small)."""
    ref, ours = shared_pair(name, **kwargs)
    for n, h, w in sizes:
        out, expected = eval_outputs(ref, ours, image_batch(n, h, w, seed=h))
        assert out.shape == expected.shape == (n, kwargs.get("num_classes", 1000))
        assert_close(out, expected, TOL, what=f"{name} {kwargs} {n}x{h}x{w}")


def _float64_pair(name, seed, **kwargs):
    ref, ours = pair(name, seed=seed, **kwargs)
    return ref.double().train(), ours.double().train()


def _check_grads(ours, ref, keys, rtol=1e-9):
    ref_params, our_params = dict(ref.named_parameters()), dict(ours.named_parameters())
    assert sorted(k for k, p in our_params.items() if p.grad is not None) == \
        sorted(k for k, p in ref_params.items() if p.grad is not None)
    for k in keys:
        assert_close(our_params[k].grad.numpy(), ref_params[k].grad.numpy(), rtol, what=k)


def test_googlenet_training_outputs_and_gradients():
    """Training mode returns GoogLeNetOutputs(logits, aux_logits2, aux_logits1); float64 (batch statistics
    of 2x2 maps), dropout off on both sides."""
    ref, ours = _float64_pair("googlenet", 5, num_classes=7, dropout=0.0, dropout_aux=0.0, transform_input=True)
    x = image_batch(2, 56, 64, seed=6).astype(np.float64)
    xt, xo = torch.from_numpy(x).requires_grad_(), engine.from_numpy(x).requires_grad_()
    expected, out = ref(xt), ours(xo)
    assert type(out).__name__ == "GoogLeNetOutputs" and out._fields == ("logits", "aux_logits2", "aux_logits1")
    assert isinstance(out, models.GoogLeNetOutputs)
    for o, e in zip(out, expected):
        assert_close(o.detach().numpy(), e.detach().numpy(), 1e-10)
    weights = [1.0, 0.3, 0.2]
    sum(w * (e ** 2).sum() for w, e in zip(weights, expected)).backward()
    sum(w * (o ** 2).sum() for w, o in zip(weights, out)).backward()
    assert_close(xo.grad.numpy(), xt.grad.numpy(), 1e-9, what="input grad")
    _check_grads(ours, ref, ["conv1.conv.weight", "inception3a.branch3.1.bn.weight", "aux1.conv.conv.weight",
                             "aux1.fc2.weight", "aux2.fc1.bias", "inception5b.branch4.1.conv.weight", "fc.weight"])
    assert_close(ours.inception4a.branch2[1].bn.running_var.numpy(),
                 ref.inception4a.branch2[1].bn.running_var.detach().numpy(), 1e-10)
    ours.aux_logits = False
    assert isinstance(ours(xo), engine.Tensor)


def test_inception_aux_head_training():
    """Inception v3's auxiliary head in training mode on a 17x17 map (the size a 299x299 input gives):
    outputs and gradients equal torchvision's in float64."""
    from torchvision.models.inception import InceptionAux as TorchAux

    from flowvision.models.inception import InceptionAux

    torch.manual_seed(0)
    ref = he_weights(TorchAux(768, 10), seed=2).double().train()
    ours = InceptionAux(768, 10).double().train()
    ours.load_state_dict({k: v.numpy() for k, v in ref.state_dict().items()})
    backward_both(ref, ours, np.random.default_rng(3).standard_normal((2, 768, 17, 17)))
    _check_grads(ours, ref, ["conv0.conv.weight", "conv1.bn.bias", "fc.weight"])


def test_inception_training_returns_aux_logits():
    """Training mode returns InceptionOutputs(logits, aux_logits), the head fed the Mixed_6e map. (The real head
    needs a 299x299 input, too slow here: a stand-in records its input at 75x75; the head is tested above.)"""
    ref, ours = _float64_pair("inception_v3", 4, num_classes=5, dropout=0.0)
    seen = {}

    class Recorder(engine.nn.Module):
        def forward(self, x):
            seen["aux_input"] = x
            return x.mean((2, 3))[:, :5]

    ours.AuxLogits = Recorder()
    ref.AuxLogits = None  # torchvision then returns InceptionOutputs(logits, None)
    mixed_6e = {}
    ref.Mixed_6e.register_forward_hook(lambda m, i, o: mixed_6e.setdefault("out", o))
    x = image_batch(2, 75, 75, seed=1).astype(np.float64)
    with engine.no_grad():
        out = ours(engine.from_numpy(x))
    with torch.no_grad():
        expected = ref(torch.from_numpy(x))
    assert type(out).__name__ == "InceptionOutputs" and out._fields == ("logits", "aux_logits")
    assert tuple(out.logits.shape) == (2, 5) and tuple(seen["aux_input"].shape) == (2, 768, 3, 3)
    assert_close(out.logits.numpy(), expected.logits.numpy(), 1e-8, what="logits")
    assert_close(seen["aux_input"].numpy(), mixed_6e["out"].numpy(), 1e-8, what="aux input")
    np.testing.assert_array_equal(out.aux_logits.numpy(), seen["aux_input"].numpy().mean((2, 3))[:, :5])
    ours.aux_logits = False
    with engine.no_grad():
        assert isinstance(ours(engine.from_numpy(x)), engine.Tensor)


def test_densenet_training_and_memory_efficient():
    """Training-mode outputs and gradients in float64 (drop_rate 0); memory_efficient computes the same."""
    ref, ours = _float64_pair("densenet121", 7, num_classes=6, memory_efficient=True)
    backward_both(ref, ours, image_batch(2, 64, 64, seed=8).astype(np.float64))
    _check_grads(ours, ref, ["features.conv0.weight", "features.denseblock2.denselayer7.conv2.weight",
                             "features.transition3.norm.weight", "features.norm5.bias", "classifier.weight"])


def test_squeezenet_training_gradients():
    """Dropout off: training mode is eval with gradients (no batch norm in SqueezeNet or AlexNet)."""
    ref, ours = _float64_pair("squeezenet1_1", 9, num_classes=4, dropout=0.0)
    x = image_batch(2, 67, 71, seed=9).astype(np.float64)
    expected, out = ref(torch.from_numpy(x)), ours(engine.from_numpy(x))
    assert_close(out.detach().numpy(), expected.detach().numpy(), 1e-10)
    expected.square().sum().backward()
    out.square().sum().backward()
    _check_grads(ours, ref, [k for k, _ in ref.named_parameters()])


# timm's DenseNet feature_info channels (its norm0 / norm5 stages include the ReLU; ours end at the
# torchvision modules relu0 / norm5, the last before the head's ReLU)
DENSENET_CHANNELS = {"densenet121": [64, 256, 512, 1024, 1024], "densenet161": [96, 384, 768, 2112, 2208]}
DENSENET_NODES = ["features.relu0", "features.denseblock1", "features.denseblock2", "features.denseblock3",
                  "features.norm5"]


def test_densenet_features_only():
    ref = reference("densenet121", seed=10)
    model = models.create_model("densenet121", features_only=True)
    model.load_state_dict({k: v for k, v in ref.state_dict().items() if k in model.state_dict()})
    model.eval()
    info = model.feature_info
    assert info.module_name() == DENSENET_NODES
    assert info.channels() == DENSENET_CHANNELS["densenet121"] and info.reduction() == [2, 4, 8, 16, 32]
    assert list(model.state_dict()) == [k for k in ref.state_dict() if k.startswith("features.")]
    x = image_batch(2, 65, 97, seed=3)
    with engine.no_grad():
        outs = model(engine.from_numpy(x))
    expected, y = [], torch.from_numpy(x)
    with torch.no_grad():
        for name, module in ref.features.named_children():
            y = module(y)
            if f"features.{name}" in DENSENET_NODES:
                expected.append(y.clone())
    for out, ref_out, node in zip(outs, expected, DENSENET_NODES):
        assert_close(out.numpy(), ref_out.numpy(), TOL, what=node)


def test_densenet_feature_info_variants_and_out_indices(no_init):
    stages = zip(DENSENET_CHANNELS["densenet161"], [2, 4, 8, 16, 32], DENSENET_NODES)
    assert models.densenet161().feature_info == [dict(num_chs=c, reduction=r, module=m) for c, r, m in stages]
    model = models.create_model("densenet169", features_only=True, out_indices=(1, 3))
    assert model.feature_info.channels() == [256, 1280] and model.feature_info.module_name() == DENSENET_NODES[1:4:2]
    assert "transition3" not in dict(model.features.named_children())
    assert "denseblock3" in dict(model.features.named_children())


@pytest.mark.parametrize("name, channels, reductions", [
    ("alexnet", [64, 192, 256, 256], [4, 8, 16, 32]),
    ("squeezenet1_0", [96, 256, 512, 512], [2, 4, 8, 16]),
    ("squeezenet1_1", [64, 128, 256, 512], [2, 4, 8, 16]),
])
def test_plain_chain_features_only(name, channels, reductions):
    model = models.create_model(name, features_only=True).eval()
    assert model.feature_info.channels() == channels and model.feature_info.reduction() == reductions
    with engine.no_grad():
        outs = model(engine.randn(1, 3, 127, 127))
    assert [o.shape[1] for o in outs] == channels


@pytest.mark.parametrize("name", ["googlenet", "inception_v3"])
def test_features_only_refused_where_the_trunk_is_not_a_chain(name):
    with pytest.raises(ValueError, match="no features_only mode"):
        models.create_model(name, features_only=True)


class _Inference(engine.nn.Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


@pytest.mark.parametrize("name, kwargs, size", [(name, kwargs, sizes[-1][1:]) for name, kwargs, sizes in EVAL_CASES
                                                if name in ("alexnet", "squeezenet1_1", "densenet121")
                                                or kwargs.get("transform_input")])
def test_graph_equals_eager(name, kwargs, size):
    """Replays on new inputs equal eager (the smallest variant of each family)."""
    _, ours = shared_pair(name, **kwargs)
    graph = _Inference(ours)
    for seed in (12, 13):
        x = engine.from_numpy(image_batch(2, *size, seed=seed))
        with engine.no_grad():
            eager = ours(x)
        assert_close(graph(x).numpy(), eager.numpy(), 1e-5, what=f"graph {name}")
