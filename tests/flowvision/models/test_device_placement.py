"""Layers that make tensors as they run (rotary tables, coordinate grids, relative-offset indices, attention masks,
identity blocks) make them on their input's device. Each case is a small configuration of a family where one was made
on the CPU, found by running the family tests with our models on the CUDA backend
(``FLOWVISION_PARITY_DEVICE=cuda``, ``scripts/gpu_check.py --parity``): here the model on the CUDA backend (a GPU,
or the CPU emulation of CuPy) against itself on the CPU, its output and its input's gradient.

Constants a forward needs (index lists, position encodings) are made on the device, not copied there on each call:
a CUDA graph cannot capture a host-to-device copy, so nn.Graph would replay such a model op by op. The second test
runs the families where a sweep of every family's smallest classifier in an nn.Graph found one."""
import warnings

import numpy as np
import pytest
import test_timm_byoanet
import test_timm_byobnet
import test_timm_convit
import test_timm_csatv2
import test_timm_deepseek_vit
import test_timm_edgenext
import test_timm_mvitv2
import test_timm_eva_encoders
import test_timm_gemma4_vit
import test_timm_qwen3_vit
import test_timm_vision_transformer_sam
import test_timm_xcit
from model_parity import InferenceGraph, image_batch
from op_check import assert_close

import engine

pytestmark = pytest.mark.slow  # model runs on the emulated GPU: outside the quick subset (-m "not slow")


def _images(size):
    return lambda: image_batch(2, *size, seed=3)


def _gemma4_padded_patches():
    """Pre-cut patches with coordinates, the second image's last 10 padding (the attention mask's path)."""
    return test_timm_gemma4_vit.naflex_patches(image_batch(2, *test_timm_gemma4_vit.SIZE, seed=3), (5, 3), padded=10)


# name: (our small model, its inputs as numpy arrays, the call)
CASES = {
    "byoanet_bottleneck_attention": (lambda: test_timm_byoanet.small_pair("rel")[1], _images((47, 47)), None),
    "byobnet_bilinear_attention": (lambda: test_timm_byobnet.small_pair("attn")[1], _images((48, 48)), None),
    "convit_gpsa": (lambda: test_timm_convit.small_pair()[1], _images(test_timm_convit.SIZE), None),
    "deepseek_rope": (lambda: test_timm_deepseek_vit.small_pair()[1], _images(test_timm_deepseek_vit.ODD), None),
    "qwen3_rope": (lambda: test_timm_qwen3_vit.small_pair()[1], _images(test_timm_qwen3_vit.ODD), None),
    "dinov3_rope": (lambda: test_timm_eva_encoders.small_pair("dinov3")[1],
                    _images(test_timm_eva_encoders.DYNAMIC_SIZE), None),
    "eva02_axial_rope_dynamic": (lambda: test_timm_eva_encoders.small_pair("pe_core", dynamic_img_size=True)[1],
                                 _images(test_timm_eva_encoders.DYNAMIC_SIZE), None),
    "gemma4_images": (lambda: test_timm_gemma4_vit.classifier_pair()[1], _images(test_timm_gemma4_vit.SIZE), None),
    "gemma4_padded_patches": (lambda: test_timm_gemma4_vit.classifier_pair()[1], _gemma4_padded_patches,
                              lambda model, patches, coords: model(patches, patch_coord=coords)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_model_on_the_cuda_backend_equals_the_cpu(cuda, name):
    build, inputs, call = CASES[name]
    call = call or (lambda model, x: model(x))
    model = build()
    arrays = inputs()
    arrays = arrays if isinstance(arrays, tuple) else (arrays,)
    results = {}
    for device in ("cuda", "cpu"):  # the CUDA run first: buffers a forward remakes start on the CPU
        model.to(device)
        tensors = [engine.from_numpy(a).to(device) for a in arrays]
        tensors[0].requires_grad_()
        out = call(model, *tensors)
        (out ** 2).sum().backward()
        assert out.device.type == tensors[0].grad.device.type == device
        results[device] = out.detach().cpu().numpy(), tensors[0].grad.cpu().numpy()
    assert_close(results["cuda"][0], results["cpu"][0], 1e-5, f"{name} output")
    assert_close(results["cuda"][1], results["cpu"][1], 1e-4, f"{name} input gradient")


def test_dinov3_rope_augmentation_draws_on_the_device(cuda):
    """In training, DINOv3's RoPE (here Sapiens2's, which rescales its coordinates) draws on the model's device."""
    model = test_timm_eva_encoders.small_pair("sapiens2")[1].train().cuda()
    generator = engine.random.cuda_rng(0)
    drawn = int(generator.state.get()[1])
    out = model(engine.from_numpy(image_batch(2, *test_timm_eva_encoders.DYNAMIC_SIZE, seed=4)).cuda())
    assert out.device.type == "cuda" and np.isfinite(out.detach().cpu().numpy()).all()
    assert int(generator.state.get()[1]) > drawn


# name: (our small model, its input size)
CAPTURED = {
    "csatv2_zigzag_index": (lambda: test_timm_csatv2.small_pair()[1], test_timm_csatv2.SIZE),
    "edgenext_fourier_encoding": (lambda: test_timm_edgenext.small_pair("patch")[1], test_timm_edgenext.SIZE),
    "mvitv2_relative_positions": (lambda: test_timm_mvitv2.small_pair()[1], test_timm_mvitv2.SIZES["plain"]),
    "samvit_relative_positions": (lambda: test_timm_vision_transformer_sam.small_pair("windowed", 0)[1], (48, 48)),
    "xcit_fourier_encoding": (lambda: test_timm_xcit.small_pair("p16")[1], test_timm_xcit.SIZE),
}


@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_graph_captures_and_replays_on_the_cuda_backend(cuda, name):
    """An eval nn.Graph of the model on the CUDA backend captures its plan into a CUDA graph (no op copies from the
    host) and each replay equals the eager model."""
    build, size = CAPTURED[name]
    model = build().cuda().eval()

    graph = InferenceGraph(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # nn.Graph warns where it cannot capture
        for seed in (5, 6):
            x = engine.from_numpy(image_batch(2, *size, seed=seed)).cuda()
            with engine.no_grad():
                eager = model(x)
            assert_close(graph(x).cpu().numpy(), eager.cpu().numpy(), 1e-5, f"{name} replay {seed}")
    assert graph._last_plan.captured is not None
