"""timm parity of SwiftFormer (swiftformer_xs/s/l1/l3): every variant's configuration and layout, seeded
initialisation (the attention's normal ``w_g`` draw included), eval outputs (float32) of small models (convolutional
encoders and the additive-attention encoder; another MLP ratio, activation and no layer scales, a stage that keeps
the map) at an odd size, float64 train-mode outputs, gradients and BatchNorm statistics, all with timm's weights
loaded; stochastic depth and dropout masks, distilled training, the head API (pre-logits, num_classes=0,
reset_classifier, unpooled maps), in_chans, refused arguments, features_only, forward_intermediates,
prune_intermediate_layers and list_models."""
import numpy as np
import pytest
import timm
import torch
from timm.models import swiftformer as timm_swiftformer

import engine
import flowvision.models as models
from flowvision.models._features import FlatFeatureListNet
from flowvision.models.timm_families import swiftformer
from model_parity import (both_outputs, capture_builder, check_distilled_training, check_drop_rates,
                          check_dropout_only_in_training, check_feature_maps, check_intermediates, check_layout,
                          check_seeded_init, check_structure, check_train_step, conv_and_linear_weights,
                          features_only_pair, image_batch, numpy_state, pre_logits, randomize_parameters,
                          skip_random_init)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

NAMES = ["swiftformer_xs", "swiftformer_s", "swiftformer_l1", "swiftformer_l3"]
TOL = 1e-4
PRINTED = ("Conv2d", "BatchNorm2d", "ReLU", "GELU", "Linear", "Dropout")
SCALES = ("gamma",)
# Small models, 8 to 24 channels: the first with 1, 2, 1 and 1 blocks (a convolutional encoder before an attention
# encoder in the second stage); the second with another MLP ratio and activation, no layer scales, and a third
# stage that keeps the map and the width.
SMALL = {
    "plain": dict(layers=[1, 2, 1, 1], embed_dims=[8, 12, 16, 24]),
    "ratio3_relu_no_scale": dict(layers=[2, 1, 1, 1], embed_dims=[8, 16, 16, 24], mlp_ratios=3,
                                 downsamples=[False, True, False, True], use_layer_scale=False,
                                 act_layer=torch.nn.ReLU),
}
SIZE = (35, 33)


def randomize(model, seed):
    """timm's ``model`` with random parameters (layer scales around 1) and BatchNorm statistics."""
    return randomize_parameters(model, seed, scales=SCALES, norms=True)


def small_pair(kind="plain", seed=0, **kwargs):
    """(timm's, ours) small ``kind`` models, timm's weights and BatchNorm statistics randomised and loaded in ours
    through numpy, in eval mode."""
    config = dict(SMALL[kind], **kwargs)
    torch.manual_seed(seed)
    reference = randomize(timm_swiftformer.SwiftFormer(**config), seed).eval()
    ours = swiftformer.SwiftFormer(**dict(config, act_layer=engine.nn.ReLU) if "act_layer" in config else config)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def test_every_variant_has_timm_layout_and_configuration(monkeypatch):
    """Each entrypoint hands its class timm's configuration and builds timm's layout: state_dict keys, order,
    shapes, dtypes, module tree and classes, layer printouts, feature_info, num_features, head_hidden_size and
    default_cfg."""
    ours_calls = capture_builder(monkeypatch, swiftformer, "build_model")
    timm_calls = capture_builder(monkeypatch, timm_swiftformer, "build_model_with_cfg")
    for name in NAMES:
        getattr(swiftformer, name)()
        getattr(timm_swiftformer, name)()
    for name, (ours_cls, ours_kwargs), (_, timm_kwargs) in zip(NAMES, ours_calls, timm_calls):
        assert ours_cls is swiftformer.SwiftFormer
        assert ours_kwargs == {k: v for k, v in timm_kwargs.items()
                               if k not in ("feature_cfg", "pretrained_filter_fn")} | {"progress": True}, name
    monkeypatch.undo()
    skip_random_init(monkeypatch)
    monkeypatch.setattr(timm_swiftformer, "trunc_normal_", lambda tensor, **kwargs: tensor)
    for name in NAMES:
        with torch.device("meta"):
            reference = timm.create_model(name)
        check_layout(models.create_model(name), reference, (), PRINTED, types=True)


def test_seeded_init_equals_timm():
    """The same seed gives timm's initial weights (truncated normals within 2 float32 ulps; zero biases, unit
    layer scales of the convolutional encoders and the rest bit for bit) and leaves both random streams in step."""
    config = dict(SMALL["plain"], num_classes=10)
    reference, ours = check_seeded_init(lambda: timm_swiftformer.SwiftFormer(**config),
                                        lambda: swiftformer.SwiftFormer(**config), 3, conv_and_linear_weights)
    check_structure(ours, reference)
    assert ours.feature_info == reference.feature_info


@pytest.mark.parametrize("kind", list(SMALL))
def test_eval_outputs_match_timm(kind):
    """float32 logits of a batch of 2 at an odd size, timm's weights loaded through numpy."""
    reference, ours = small_pair(kind, seed=1)
    out, ref = both_outputs(reference, ours, image_batch(2, *SIZE, seed=2))
    assert out.shape == (2, 1000) and np.abs(ref).max() > 1e-1
    assert_close(out, ref, TOL)


def test_train_mode_gradients_and_statistics_match_timm():
    """float64, train mode: outputs, input gradient, every parameter's gradient (``w_g`` and layer scales included)
    and the updated BatchNorm running statistics equal timm's."""
    reference, ours = small_pair(seed=4, num_classes=7)
    check_train_step(reference.double().train(), ours.double().train(),
                     image_batch(2, 19, 17, seed=5).astype(np.float64))


def test_drop_path_dropout_and_distilled_training():
    """timm's rates (stochastic depth rising linearly over the blocks, no module where it is 0; the MLPs' and the
    heads' dropout); eval outputs unaffected and drawing nothing; in train mode the same seed draws timm's masks
    (one drop-path module drawing for both attention-encoder branches, one dropout twice in the MLP); distilled
    training returns both heads' logits, as timm's."""
    reference, ours = small_pair(seed=6, drop_rate=0.3, proj_drop_rate=0.2, drop_path_rate=0.4, num_classes=7)
    assert check_drop_rates(reference, ours) == pytest.approx([0.1, 0.2, 0.3, 0.4])
    x = image_batch(2, *SIZE, seed=7)
    check_dropout_only_in_training(reference, ours, x, TOL, TOL)
    check_distilled_training(reference, ours, x, TOL, 7)


def test_head_api_in_chans_and_bad_arguments():
    """On a one-channel model: pre-logits features; ``num_classes=0`` gives them with identity heads;
    reset_classifier two new heads (in the model's mode) as timm's, '' pooling the unpooled map; other poolings
    and output strides are refused."""
    reference, ours = small_pair(seed=9, in_chans=1)
    x = image_batch(2, *SIZE, seed=10, c=1)
    pre, pre_ref = both_outputs(reference, ours, x, pre_logits)
    assert pre.shape == (2, 24)
    assert_close(pre, pre_ref, TOL)
    headless = swiftformer.SwiftFormer(**SMALL["plain"], in_chans=1, num_classes=0)
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head")})
    assert all(isinstance(h, engine.nn.Identity) for h in headless.get_classifier())
    assert_close(both_outputs(reference, headless.eval(), x)[0], pre_ref, TOL)
    reference.reset_classifier(5)
    ours.reset_classifier(5)
    assert ours.num_classes == 5 and not any(h.training for h in ours.get_classifier())
    assert [tuple(h.weight.shape) for h in ours.get_classifier()] == [(5, 24), (5, 24)]
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 5)
    assert_close(out, ref, TOL)
    reference.reset_classifier(0, "")
    ours.reset_classifier(0, "")
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 24, 2, 2)
    assert_close(out, ref, TOL)
    with pytest.raises(ValueError, match="global_pool"):
        ours.reset_classifier(5, "max")
    with pytest.raises(ValueError, match="global_pool"):
        swiftformer.SwiftFormer(**SMALL["plain"], global_pool="max")
    with pytest.raises(ValueError, match="output_stride"):
        swiftformer.SwiftFormer(**SMALL["plain"], output_stride=16)


def test_features_only_intermediates_and_pruning_match_timm():
    """features_only through the registry: timm's four stage taps (or those of out_indices), feature_info,
    flattened module names (``stem_0``... ``stages_3``) and state dict, and feature maps; forward_intermediates with
    the final norm on the last stage and stopping early; prune_intermediate_layers drops the later stages, the norm
    and the heads as timm's does."""
    config = dict(layers=[1, 1, 1, 1], embed_dims=[8, 12, 16, 24])
    x = image_batch(2, *SIZE, seed=15)
    for out_indices, count in ((None, 4), ((1, 3), 2)):
        kwargs = {} if out_indices is None else {"out_indices": out_indices}
        reference, ours = features_only_pair("swiftformer_xs", randomize, 14, **config, **kwargs)
        assert type(ours) is FlatFeatureListNet
        assert [n for n, _ in ours.named_children()][:2] == ["stem_0", "stem_1"]
        check_structure(ours, reference, types=False)
        check_feature_maps(reference, ours, x, count, TOL)
    reference, ours = small_pair(seed=16)
    for kwargs in (dict(indices=2, norm=True), dict(indices=[0, 1], stop_early=True)):
        check_intermediates(reference, ours, x, TOL, **kwargs)
    with pytest.raises(ValueError, match="output_fmt"):
        ours.forward_intermediates(engine.from_numpy(x), output_fmt="NHWC")
    assert ours.prune_intermediate_layers([1]) == reference.prune_intermediate_layers([1]) == [1]
    check_structure(ours, reference)
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == 12
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (2, 12, 5, 5)
    assert_close(out, ref, TOL)


def test_list_models():
    """The registry lists every variant with weights under its timm name and module."""
    names = models.list_models(module="swiftformer")
    assert names == [n for n in timm.list_models(module="swiftformer") if n in NAMES]
    assert set(names) == set(NAMES) == {n.split(".")[0] for n in timm.list_pretrained("swiftformer*")}
