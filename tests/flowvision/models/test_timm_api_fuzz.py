"""Cases from fuzzing the timm families' model API against timm 1.0.31 (random model names and keyword arguments):
``features_only`` takes timm's spellings of ``out_indices`` (an int n: the last n stages; negative indices counted
from the end) in every family, and timm's MobileNetV3 features take ``output_stride`` (dilated last stages). Each
case builds a tiny model on both sides, loads timm's weights into ours and compares feature_info and the float64
feature maps."""
import numpy as np
import pytest
import timm
import torch

import engine
import flowvision.models as models
from flowvision.models._features import FeatureInfo
from model_parity import build_without_draws, numpy_state, randomize_norms

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]


def features_pair(name, **kwargs):
    """timm's and our ``features_only`` model ``name`` (timm's weights, random BatchNorm statistics, in ours too),
    both in eval mode and float64."""
    torch.manual_seed(0)
    reference = randomize_norms(timm.create_model(name, features_only=True, **kwargs), 0).eval().double()
    ours = build_without_draws(lambda: models.create_model(name, features_only=True, **kwargs))
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval().double()


def check_features(reference, ours, size, in_chans=3):
    """Same feature_info (channels, reductions, module names) and feature maps within 1e-10 on a batch of 2."""
    for what in ("channels", "reduction", "module_name"):
        assert getattr(ours.feature_info, what)() == getattr(reference.feature_info, what)(), what
    x = np.random.default_rng(1).standard_normal((2, in_chans, size, size))
    with torch.no_grad():
        expected = reference(torch.from_numpy(x))
    with engine.no_grad():
        got = ours(engine.from_numpy(x))
    assert len(got) == len(expected)
    for out, ref in zip(got, expected):
        assert tuple(out.shape) == tuple(ref.shape)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-10, atol=1e-10 * np.abs(ref.numpy()).max())


@pytest.mark.parametrize("name, out_indices", [("test_efficientnet", (-2, -1)), ("test_efficientnet", 2),
                                               ("test_resnet", 1), ("test_resnet", (0, -1)),
                                               ("mobilenetv3_small_050", 3)])
def test_out_indices_spellings(name, out_indices):
    """An int picks the last n stages and negative indices count from the end, as in timm (we raised TypeError for
    the int and IndexError for negative indices where the family kept timm's generic feature wrapper)."""
    reference, ours = features_pair(name, out_indices=out_indices)
    check_features(reference, ours, 35)


def test_convnext_last_n_stages():
    """ConvNeXt's builder took only sequences of indices (an int raised TypeError): the last two stages here."""
    ours = build_without_draws(lambda: models.create_model("test_convnext", features_only=True, out_indices=2))
    with torch.device("meta"):
        reference = timm.create_model("test_convnext", features_only=True, out_indices=2)
    assert ours.feature_info.channels() == reference.feature_info.channels()
    assert ours.feature_info.reduction() == reference.feature_info.reduction()


@pytest.mark.parametrize("output_stride, in_chans", [(16, 4), (8, 3)])
def test_mobilenetv3_features_output_stride(output_stride, in_chans):
    """timm's MobileNetV3 features dilate the stages past ``output_stride``; ours refused the argument."""
    reference, ours = features_pair("mobilenetv3_small_050", output_stride=output_stride, in_chans=in_chans)
    check_features(reference, ours, 33, in_chans)


def test_mobilenetv3_output_stride_checked():
    with pytest.raises(ValueError, match="output_stride must be 8, 16 or 32, got 4"):
        models.create_model("mobilenetv3_small_050", features_only=True, output_stride=4)


def test_feature_info_indices():
    """FeatureInfo normalises timm's spellings to absolute indices and refuses those out of range."""
    info = [dict(num_chs=c, reduction=2 ** i, module=f"s{i}") for i, c in enumerate((8, 16, 32, 64))]
    assert FeatureInfo(info, 3).out_indices == (1, 2, 3)
    assert FeatureInfo(info, (0, -1)).channels() == [8, 64]
    with pytest.raises(IndexError, match="out of range for a model with 4 feature stages"):
        FeatureInfo(info, (4,))
