"""timm parity of timm's tiny test networks with published ``r160_in1k`` weights (test_byobnet, test_convnext,
test_convnext2, test_convnext3, test_efficientnet, test_efficientnet_evos / _gn / _ln, test_nfnet, test_resnet,
test_vit, test_vit2, test_vit3), each in its family module: seeded initialisation and timm's layout, float32 eval
logits at 160 pixels and at an odd size with timm's random weights (norm statistics too) loaded through numpy, a
float64 train step with every gradient for one model of each family, the options these models brought to their
classes (EfficientNet's norm layer, per-stage ResNet blocks, the ViT's dynamic image size and pooling over the
prefix tokens), and the registry."""
import numpy as np
import pytest
import timm
import torch

import engine
import flowvision.models as models
from flowvision.models.timm_families import byobnet, convnext, efficientnet, nfnet, resnet, vision_transformer
from model_parity import (both_outputs, check_intermediates, check_layout, check_seeded_init, check_train_step,
                          conv_and_linear_weights, image_batch, linear_weights, numpy_state,
                          randomize_parameters)
from op_check import assert_close

# whole-model runs: outside the quick subset (-m "not slow"); one BLAS thread each, as two spin on a shared machine
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_thread")]

FAMILIES = {
    "test_byobnet": byobnet,
    "test_convnext": convnext,
    "test_convnext2": convnext,
    "test_convnext3": convnext,
    "test_efficientnet": efficientnet,
    "test_efficientnet_evos": efficientnet,
    "test_efficientnet_gn": efficientnet,
    "test_efficientnet_ln": efficientnet,
    "test_nfnet": nfnet,
    "test_resnet": resnet,
    "test_vit": vision_transformer,
    "test_vit2": vision_transformer,
    "test_vit3": vision_transformer,
}
NAMES = sorted(FAMILIES)
TOL = 1e-4
# timm's no-op identities that ours leaves out, by family: SE's norm slot (ByobNet, NFNet, ResNet), ConvNeXt's
# shortcut, MLP norm and head flatten, ResNet's DropBlock and anti-aliasing slots
PLACEHOLDERS = {
    byobnet: ("attn.bn", "attn_last.bn"),
    convnext: ("shortcut", "mlp.norm", "head.flatten"),
    efficientnet: (),
    nfnet: (".bn",),
    resnet: ("drop_block", "aa", "se.bn"),
    vision_transformer: (),
}
# layers whose printout shows every hyper-parameter (kernel, stride, padding, groups, eps, inplace...), the norms with
# their activation too; our EfficientNet's activations and BatchNorms print without timm's ``inplace=True``
PRINTED = ("Conv2d", "Conv1d", "Linear", "GroupNormAct", "LayerNormAct2d", "LayerNorm", "LayerNorm2d", "AvgPool2d",
           "MaxPool2d", "Dropout", "Flatten", "ScaledStdConv2d")
ACTIVATIONS = ("BatchNorm2d", "BatchNormAct2d", "ReLU", "SiLU", "GELU", "GELUTanh", "Sigmoid", "GammaAct")


def printed_layers(name):
    """The layer classes whose printouts ``name`` shares with timm's model."""
    return PRINTED if FAMILIES[name] is efficientnet else PRINTED + ACTIVATIONS


# an odd image size for the convolutional nets; multiples of 16 other than 160 for the ViTs that take any size
# (more rows and fewer columns of patches: the position embeddings stretched one way, antialiased the other)
ODD = (67, 53)
ODD_VIT = (176, 112)


def truncated_normals(reference):
    """The state_dict keys that timm draws from its truncated normal: the ConvNeXts' convolution and linear weights,
    the ViTs' linear weights, position embeddings and attention pool's latent."""
    if isinstance(reference, timm.models.convnext.ConvNeXt):
        return conv_and_linear_weights(reference)
    if isinstance(reference, timm.models.vision_transformer.VisionTransformer):
        return {"pos_embed", "attn_pool.latent"} | linear_weights(reference)
    return set()


def randomize(model, seed):
    """Random values for every parameter and norm statistic of timm's ``model`` (unit norms, zero biases, small
    layer scales and the zeroed last gains would hide bugs)."""
    return randomize_parameters(model, seed, scales=("gamma",), tokens=("cls_token", "reg_token", "pos_embed"),
                                norms=True)


def seeded_pair(name, seed=0):
    """timm's model ``name`` and ours, each built after ``seed``: the same initial weights, drawn in timm's order
    (truncated normals within 2 float32 ulps), both random streams in step, and timm's layout."""
    reference, ours = check_seeded_init(lambda: timm.create_model(name), lambda: models.create_model(name), seed,
                                        truncated_normals, name)
    check_layout(ours, reference, PLACEHOLDERS[FAMILIES[name]], printed_layers(name))
    return reference, ours


def random_pair(name, seed=0, **kwargs):
    """timm's model ``name`` (``kwargs`` passed to both) with random weights and norm statistics, and ours with
    them, both in eval mode."""
    torch.manual_seed(seed)
    reference = randomize(timm.create_model(name, **kwargs), seed).eval()
    ours = models.create_model(name, **kwargs)
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


@pytest.mark.parametrize("name", NAMES)
def test_seeded_init_layout_and_eval_logits_match_timm(name):
    """From the same seed, timm's initial weights and layout (state_dict keys, shapes and dtypes, module names, the
    printout of every layer, feature_info, num_features, head_hidden_size, default_cfg); with timm's weights
    randomised and loaded, float32 logits of a batch of 2 at 160 pixels (the weights' size) and at an odd size."""
    reference, ours = seeded_pair(name, seed=3)
    assert type(ours).__module__ == FAMILIES[name].__name__
    reference = randomize(reference, 4).eval()
    ours.load_state_dict(numpy_state(reference))
    ours.eval()
    sizes = [(160, 160)]
    if name != "test_vit3":
        sizes.append(ODD_VIT if name.startswith("test_vit") else ODD)
    for size in sizes:
        out, expected = both_outputs(reference, ours, image_batch(2, *size, seed=5))
        assert out.shape == (2, 1000) and np.abs(expected).max() > 1e-2
        assert_close(out, expected, TOL)


@pytest.mark.parametrize("name,size", [("test_byobnet", (45, 39)), ("test_convnext3", (37, 33)),
                                       ("test_efficientnet_gn", (37, 33)), ("test_nfnet", (37, 33)),
                                       ("test_resnet", (37, 33)), ("test_vit2", (48, 32))])
def test_train_step_matches_timm_float64(name, size):
    """float64, train mode, one model of each family (the ViT built for the small size: timm resamples position
    embeddings in float32): outputs, input gradient, every parameter's gradient and the updated BatchNorm statistics
    equal timm's. (timm's EvoNorm also computes its group variance in float32, so GroupNorm's EfficientNet here.)"""
    kwargs = dict(img_size=size) if name.startswith("test_vit") else {}
    reference, ours = random_pair(name, seed=6, num_classes=7, **kwargs)
    reference.double().train()
    ours.double().train()
    check_train_step(reference, ours, image_batch(2, *size, seed=7).astype(np.float64))


def test_vit_options_match_timm():
    """The dynamic-size ViT's intermediates at another size than it was built for (its patch grid, the position
    embeddings resampled) and sizes that the patches do not tile refused; pooling over the prefix tokens with an
    average too, after reset_classifier (test_vit3 pools the register token with the patch tokens)."""
    reference, ours = random_pair("test_vit", seed=8)
    x = image_batch(1, *ODD_VIT, seed=9)
    check_intermediates(reference, ours, x, TOL, indices=2)
    with pytest.raises(ValueError, match="multiple of the patch size"):
        ours(engine.from_numpy(image_batch(1, 168, 160)))
    reference, ours = random_pair("test_vit3", seed=10)
    reference.reset_classifier(5, "avg")
    ours.reset_classifier(5, "avg")
    ours.head.load_state_dict(numpy_state(reference.head))
    out, expected = both_outputs(reference, ours, image_batch(1, 160, 160, seed=11))
    assert out.shape == (1, 5)
    assert_close(out, expected, TOL)


def test_list_models():
    """The registry's test_* models are exactly timm's, each in its family's module: those with pretrained weights
    are this file's; the untrained ones (test_coatnet, test_maxvit, test_mambaout, test_vit4, test_vit_relpos) are
    tested with their families."""
    assert models.list_models("test_*") == timm.list_models("test_*")
    assert NAMES == sorted({n.split(".")[0] for n in timm.list_pretrained("test_*")})
    for name in NAMES:
        assert name in models.list_models(module=FAMILIES[name].__name__.rsplit(".", 1)[-1])
