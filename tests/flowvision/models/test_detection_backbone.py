"""Detection backbones (ResNet/MobileNet + FPN) against torchvision: keys, frozen layers, features."""
import warnings

import numpy as np
import pytest
import torch
from torchvision.models.detection import backbone_utils as tv_bu
from torchvision.ops import misc as tv_misc
from torchvision.ops.feature_pyramid_network import LastLevelP6P7 as TvP6P7

import engine
from flowvision.models.detection import backbone_utils as bu
from flowvision.ops.feature_pyramid_network import LastLevelP6P7
from model_parity import build_without_draws, numpy_state, randomize_norms, skip_random_init
from op_check import assert_close



def randomize_frozen(model, seed):
    """Random statistics and affine buffers for torchvision FrozenBatchNorm2d layers too."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, tv_misc.FrozenBatchNorm2d):
            c = m.weight.shape[0]
            m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=g) * 1.5 + 0.5)
            m.weight.copy_(torch.rand(c, generator=g) + 0.5)
            m.bias.copy_(torch.randn(c, generator=g) * 0.1)
    return randomize_norms(model, seed)


class _P6P7:
    """Marks an extra_blocks argument to be built in each library."""

    def __init__(self, *args):
        self.args = args


def build_pair(tv_fn, our_fn, seed=0, **kwargs):
    """Like ``pair``, turning a ``_P6P7`` marker into each library's LastLevelP6P7."""
    tv_kwargs = {k: (TvP6P7(*v.args) if isinstance(v, _P6P7) else v) for k, v in kwargs.items()}
    torch.manual_seed(seed)
    ref = randomize_frozen(tv_fn(**tv_kwargs), seed).eval()
    ours = build_without_draws(
        lambda: our_fn(**{k: (LastLevelP6P7(*v.args) if isinstance(v, _P6P7) else v) for k, v in kwargs.items()}))
    ours.load_state_dict(numpy_state(ref))
    return ours.eval(), ref


def grad_pattern(model):
    """Names of the parameters that require grad, in order."""
    return [name for name, p in model.named_parameters() if p.requires_grad]


def compare_features(ours, ref, shape=(2, 3, 72, 100), seed=0):
    """Same feature-dict keys, shapes and values (1e-4 relative) on a seeded input."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    with torch.no_grad():
        exp = ref(torch.from_numpy(x))
    with engine.no_grad():
        out = ours(engine.from_numpy(x))
    if isinstance(exp, torch.Tensor):
        exp, out = {"out": exp}, {"out": out}
    assert list(out) == list(exp)
    for k in exp:
        assert_close(out[k].numpy(), exp[k].numpy(), 1e-4, f"feature {k}")


@pytest.mark.parametrize("kwargs,shape", [
    (dict(backbone_name="resnet18", trainable_layers=3), (2, 3, 72, 100)),
    (dict(backbone_name="resnet50", trainable_layers=5, returned_layers=[2, 3, 4], extra_blocks=_P6P7(256, 256)),
     (1, 3, 64, 70)),
])
def test_resnet_fpn_backbone_matches_torchvision(kwargs, shape):
    ours, ref = build_pair(tv_bu.resnet_fpn_backbone, bu.resnet_fpn_backbone, weights=None, **kwargs)
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert grad_pattern(ours) == grad_pattern(ref)
    assert ours.out_channels == ref.out_channels == 256
    compare_features(ours, ref, shape)


@pytest.mark.parametrize("trainable", [0, 1, 2, 3, 4, 5])
def test_resnet_trainable_layers_pattern(trainable, monkeypatch):
    skip_random_init(monkeypatch)  # which parameters train: our weights' values play no part
    torch.manual_seed(0)
    ref = tv_bu.resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=trainable,
                                    norm_layer=torch.nn.BatchNorm2d)
    ours = bu.resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=trainable,
                                  norm_layer=engine.nn.BatchNorm2d)
    assert grad_pattern(ours) == grad_pattern(ref)


def test_resnet_extractor_errors(monkeypatch):
    from flowvision.models import resnet18

    skip_random_init(monkeypatch)  # the arguments are refused before any weight is read

    with pytest.raises(ValueError, match=r"Trainable layers should be in the range \[0,5\], got 6"):
        bu._resnet_fpn_extractor(resnet18(), 6)
    with pytest.raises(ValueError, match=r"Each returned layer should be in the range \[1,4\]. Got \[0, 2\]"):
        bu._resnet_fpn_extractor(resnet18(), 3, returned_layers=[0, 2])


@pytest.mark.parametrize("kwargs", [
    dict(backbone_name="mobilenet_v3_large", fpn=True, trainable_layers=3),
    dict(backbone_name="mobilenet_v3_large", fpn=True, trainable_layers=6, returned_layers=[3, 4, 5]),
    dict(backbone_name="mobilenet_v2", fpn=False, trainable_layers=2),
])
def test_mobilenet_backbone_matches_torchvision(kwargs):
    ours, ref = build_pair(tv_bu.mobilenet_backbone, bu.mobilenet_backbone, weights=None, **kwargs)
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert grad_pattern(ours) == grad_pattern(ref)
    assert ours.out_channels == ref.out_channels
    compare_features(ours, ref, shape=(1, 3, 96, 128))


@pytest.mark.parametrize("trainable", [0, 2, 6])
def test_mobilenet_extractor_grad_pattern(trainable, monkeypatch):
    import torchvision.models as tv

    from flowvision.models import mobilenet_v3_large

    skip_random_init(monkeypatch)  # which parameters train: our weights' values play no part
    ref = tv_bu._mobilenet_extractor(tv.mobilenet_v3_large(), True, trainable)
    ours = bu._mobilenet_extractor(mobilenet_v3_large(), True, trainable)
    assert grad_pattern(ours) == grad_pattern(ref)
    assert list(ours.state_dict()) == list(ref.state_dict())


def test_mobilenet_extractor_errors(monkeypatch):
    from flowvision.models import mobilenet_v3_large

    skip_random_init(monkeypatch)  # the arguments are refused before any weight is read
    with pytest.raises(ValueError, match=r"Trainable layers should be in the range \[0,6\], got 7"):
        bu._mobilenet_extractor(mobilenet_v3_large(), True, 7)
    with pytest.raises(ValueError, match=r"Each returned layer should be in the range \[0,5\], got \[2, 6\]"):
        bu._mobilenet_extractor(mobilenet_v3_large(), True, 3, returned_layers=[2, 6])
    with pytest.raises(ValueError, match="Unknown mobilenet backbone_name 'mobilenet_v9'"):
        bu.mobilenet_backbone(backbone_name="mobilenet_v9", weights=None, fpn=True)


def test_validate_trainable_layers():
    assert bu._validate_trainable_layers(True, None, 5, 3) == 3
    assert bu._validate_trainable_layers(True, 1, 5, 3) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bu._validate_trainable_layers(False, None, 5, 3) == 5
    with pytest.warns(UserWarning, match="falling back to trainable_backbone_layers=6"):
        assert bu._validate_trainable_layers(False, 2, 6, 3) == 6
    with pytest.raises(ValueError, match=r"Trainable backbone layers should be in the range \[0,5\], got 7"):
        bu._validate_trainable_layers(True, 7, 5, 3)
