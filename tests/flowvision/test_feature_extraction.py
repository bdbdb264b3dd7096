"""flowvision.models.feature_extraction against torchvision's on the zoo: ``get_graph_node_names`` of our model
equals torchvision's for the same architecture (train and eval lists), and ``create_feature_extractor`` with
several return nodes gives torchvision's outputs on the same weights.

Known differences: flowvision's ViT takes any input size (it resizes its position embeddings), so its image-size
check and its position embedding are one wrapped node each where torchvision's graph asserts one size; MaxViT checks
each partition layer's map size in one more node. Every other node is torchvision's; the tests at the end pin that."""
import functools
import warnings

import numpy as np
import pytest
import torch
import torchvision
from torchvision.models import feature_extraction as tfe

import engine
import flowvision.models as fm
from flowvision.models import feature_extraction as ffe

pytestmark = pytest.mark.slow

SAME = ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "regnet_y_400mf",
        "densenet121", "squeezenet1_0", "mnasnet0_5", "shufflenet_v2_x0_5", "swin_t"]


@functools.lru_cache(maxsize=None)
def _pair(name):
    """torchvision's model and ours with the same weights, and torchvision's (train, eval) node names."""
    kwargs = {"image_size": 32} if name.startswith("vit") else {}
    torch.manual_seed(0)
    theirs = getattr(torchvision.models, name)(**kwargs)
    ours = getattr(fm, name)(**kwargs)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        names = tfe.get_graph_node_names(theirs)
    return ours, theirs, names


def _node_names(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ffe.get_graph_node_names(model)


@pytest.mark.parametrize("name", SAME)
def test_node_names_equal_torchvisions(name):
    ours, _, (train, eval_) = _pair(name)
    assert _node_names(ours) == (train, eval_)


@pytest.mark.parametrize("name", SAME)
def test_feature_extractor_outputs_equal_torchvisions(name):
    ours, theirs, (_, names) = _pair(name)
    return_nodes = {names[len(names) // 3]: "a", names[2 * len(names) // 3]: "b", names[-1]: "c"}
    if name == "resnet18":  # the brief's example names
        return_nodes.update({"layer2": "feat2", "layer4.1.relu_1": "out"})
    ours_fe = ffe.create_feature_extractor(ours.eval(), return_nodes, suppress_diff_warning=True)
    theirs_fe = tfe.create_feature_extractor(theirs.eval(), return_nodes, suppress_diff_warning=True)
    assert not ours.training and not ours_fe.training
    x = np.random.default_rng(0).standard_normal((2, 3, 64, 64)).astype(np.float32)
    with engine.no_grad():
        got = ours_fe(engine.tensor(x))
    with torch.no_grad():
        expected = theirs_fe(torch.from_numpy(x))
    assert list(got) == list(expected)
    for key, ref in expected.items():
        if not isinstance(ref, torch.Tensor):  # a traced shape value (shufflenet's ``size`` nodes)
            assert got[key] == ref, key
            continue
        ref = ref.detach().numpy()
        value = got[key].detach().numpy()
        assert value.shape == ref.shape, key
        assert np.abs(value - ref).max() <= 1e-5 * max(np.abs(ref).max(), 1e-30), key
    assert set(ours_fe.state_dict()) == set(theirs_fe.state_dict())


def test_inception_names_equal_torchvisions():
    """Names only: inception_v3 needs 75x75 inputs, so its outputs are left to the families above."""
    ours, _, names = _pair("inception_v3")
    assert _node_names(ours) == names


def _vit_pair():
    """A two-layer ViT of torchvision and ours with the same weights (32x32 images, 16x16 patches)."""
    kwargs = dict(image_size=32, patch_size=16, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=24)
    torch.manual_seed(0)
    theirs = torchvision.models.VisionTransformer(**kwargs).eval()
    ours = fm.vision_transformer.VisionTransformer(**kwargs).eval()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _same_extracted(ours, theirs, return_nodes, shape):
    """Our extractor of ``return_nodes``, after checking its outputs equal torchvision's on one seeded input."""
    ours_fe = ffe.create_feature_extractor(ours, return_nodes)
    theirs_fe = tfe.create_feature_extractor(theirs, return_nodes)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    with engine.no_grad():
        got = ours_fe(engine.tensor(x))
    with torch.no_grad():
        expected = theirs_fe(torch.from_numpy(x))
    for key in return_nodes:
        np.testing.assert_allclose(got[key].numpy(), expected[key].numpy(), rtol=1e-5, atol=1e-5, err_msg=key)
    return ours_fe


def test_vit_node_names_are_torchvisions_but_the_size_nodes():
    ours, theirs = _vit_pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = tfe.get_graph_node_names(theirs)
    for got, names in zip(_node_names(ours), expected):
        size_check = names.index("eq")
        names = names[:size_check] + ["_check_image_size"] + names[size_check + 4:]
        add = names.index("encoder.add")
        assert got == names[:add] + ["encoder._position_embedding_for"] + names[add:]


def test_vit_feature_extractor_equals_torchvisions_and_takes_other_sizes():
    ours, theirs = _vit_pair()
    return_nodes = ["conv_proj", "cat", "encoder.layers.encoder_layer_1.add", "encoder.ln", "getitem_5", "heads.head"]
    ours_fe = _same_extracted(ours, theirs, return_nodes, (2, 3, 32, 32))
    wide = np.random.default_rng(2).standard_normal((2, 3, 48, 80)).astype(np.float32)
    with engine.no_grad():
        got = ours_fe(engine.tensor(wide))
        tokens = ours.forward_features(engine.tensor(wide))
    assert tuple(got["cat"].shape) == (2, 1 + 3 * 5, 16)
    np.testing.assert_allclose(got["encoder.ln"].numpy(), tokens.numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="Input size 8x32 is smaller than one 16x16 patch"):
        ours_fe(engine.zeros(1, 3, 8, 32))


def test_maxvit_node_names_are_torchvisions_but_the_size_checks():
    kwargs = dict(input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[8, 16], block_layers=[1, 1],
                  head_dim=4, stochastic_depth_prob=0.0, num_classes=10)
    torch.manual_seed(0)
    theirs = torchvision.models.MaxVit(**kwargs).eval()
    ours = fm.maxvit.MaxVit(**kwargs).eval()
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = tfe.get_graph_node_names(theirs)
    for got, names in zip(_node_names(ours), expected):
        checks = [n for n in got if n.endswith("._check_map_size")]
        assert len(checks) == 4
        assert [n for n in got if n not in checks] == names
    return_nodes = ["blocks.0.layers.0.layers.window_attention.attn_layer.1.einsum_1", "blocks.1", "classifier"]
    ours_fe = _same_extracted(ours, theirs, return_nodes, (2, 3, 32, 32))
    with pytest.raises(ValueError, match=r"this layer partitions a \(8, 8\) map .*, got \(16, 16\)"):
        ours_fe(engine.zeros(1, 3, 64, 64))
