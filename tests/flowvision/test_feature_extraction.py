"""flowvision.models.feature_extraction against torchvision's on the zoo: ``get_graph_node_names`` of our model
equals torchvision's for the same architecture (train and eval lists), and ``create_feature_extractor`` with
several return nodes gives torchvision's outputs on the same weights.

One known difference: flowvision's ViT takes any input size (it resizes its position embeddings), which needs
Python control flow on the input's shape, so it does not trace; torchvision's asserts one size with
``torch._assert`` instead. The test below pins that."""
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


def test_vit_with_any_input_size_does_not_trace():
    ours = fm.vit_b_16(image_size=32)
    with pytest.raises(engine.fx.TraceError, match="symbolically traced variables cannot be used as inputs to "
                                                   "control flow"):
        _node_names(ours)
