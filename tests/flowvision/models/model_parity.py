"""Helpers for model parity tests: seeded torchvision models, their weights through numpy, ours.

``FLOWVISION_PARITY_DEVICE=cuda`` runs our side of the output and training-step helpers (``both_outputs``,
``eval_outputs``, ``backward_both``, ``check_train_step`` and those built on them) on the CUDA backend, against the
references on the CPU: the family tests then check every layer's device code on the GPU, or, where there is none,
on the CPU emulation of CuPy that conftest installs for the session."""
import contextlib
import dataclasses
import functools
import importlib
import os
import pkgutil
import warnings

import numpy as np
import pytest
import torch
from timm.models import vitamin as timm_vitamin

import engine
from engine.nn import init
import flowvision.models as models
from flowvision.models.convnext import CNBlockConfig, ConvNeXt
from flowvision.models.timm_families import focalnet, mvitv2
from flowvision.models.timm_families._efficientnet_blocks import decode_arch_def
from flowvision.models.video import MSBlockConfig, MViT
from flowvision.models.vision_transformer import VisionTransformer
from op_check import assert_close, torch_on_one_thread

PARITY_DEVICE = os.environ.get("FLOWVISION_PARITY_DEVICE", "cpu")


@contextlib.contextmanager
def on_parity_device(model):
    """``model`` on ``PARITY_DEVICE`` inside the block (parameters, gradients and buffers moved in place), back on
    the CPU after it; yields the device for the inputs. A block that drew random numbers on the device (dropout or
    drop-path masks in training) skips its test: the device's generator is not the CPU's, as torch's CUDA generator
    is not its CPU's, so its masks cannot match the reference's (a mismatch the block asserted is then no finding; an error is)."""
    if PARITY_DEVICE == "cpu":
        yield "cpu"
        return
    generator = engine.random.cuda_rng(0)
    drawn = int(generator.state.get()[1])
    model.to(PARITY_DEVICE)
    try:
        yield PARITY_DEVICE
    except AssertionError:
        _skip_if_drawn(generator, drawn)
        raise
    finally:
        model.to("cpu")
    _skip_if_drawn(generator, drawn)


def cpu_only_from_here(what):
    """Under ``FLOWVISION_PARITY_DEVICE``, skip the rest of a test that checks ``what``: a state of our CPU model
    that its moves to the device and back reset (caches kept per device)."""
    if PARITY_DEVICE != "cpu":
        pytest.skip(f"{what} is checked on the CPU run")


def _skip_if_drawn(generator, drawn):
    if int(generator.state.get()[1]) != drawn:
        pytest.skip("our model drew random masks on the device, from the device's own generator")


class InferenceGraph(engine.nn.Graph):
    """``model``'s forward as an nn.Graph (on the GPU: its plan captured into a CUDA graph and replayed)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def randomize_norms(model, seed):
    """Give every 2-d and 3-d BatchNorm random running stats and affine parameters (default ones hide bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.BatchNorm3d)):
                c = m.num_features
                m.running_mean.copy_(torch.randn(c, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(c, generator=g) * 1.5 + 0.5)
                m.weight.copy_(torch.rand(c, generator=g) + 0.5)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
    return model


def randomize_engine_norms(model, seed=0):
    """``randomize_norms`` for one of our models (numpy's stream): random running statistics and affine parameters
    of every BatchNorm, as the defaults would hide a wrong fold or a wrong device transfer."""
    rng = np.random.default_rng(seed)
    for m in model.modules():
        if isinstance(m, (engine.nn.BatchNorm2d, engine.nn.BatchNorm3d)):
            c = m.num_features
            m.running_mean.copy_(engine.from_numpy(rng.standard_normal(c).astype(np.float32) * 0.1))
            m.running_var.copy_(engine.from_numpy(rng.uniform(0.5, 2.0, c).astype(np.float32)))
            with engine.no_grad():
                m.weight.copy_(engine.from_numpy(rng.uniform(0.5, 1.5, c).astype(np.float32)))
                m.bias.copy_(engine.from_numpy(rng.standard_normal(c).astype(np.float32) * 0.1))
    return model


def randomize_parameters(model, seed, scales=(), tokens=(), norms=False):
    """Random values for every parameter of a timm model (its initial unit norms, zero biases and tokens, small layer
    scales would hide bugs), drawn in parameter order after ``seed``: U(0.5, 1.5) for 1-d weights and the
    parameters with a name part in ``scales`` (layer scales, temperatures), N(0, 0.1^2) for biases, N(0, 1) for
    those with a name part in ``tokens`` (class tokens, position embeddings and tables), N(0, 1 / fan-in) for the
    rest; with ``norms``, ``randomize_norms`` after."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            parts = set(name.split("."))
            if not parts.isdisjoint(scales) or (p.ndim == 1 and name.endswith("weight")):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            elif not parts.isdisjoint(tokens):
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p[0].numel()))
    return randomize_norms(model, seed) if norms else model


def randomize_byobnet(model, seed):
    """Random values for every parameter and BatchNorm statistic of a timm ByobNet (unit norms, zeroed last norms,
    zero biases and the additive GC's zero layer would hide bugs), drawn in order after ``seed``: U(0.5, 1.5) for
    1-d weights and EvoNorm's ``v``, N(0, 0.1^2) for other 1-d parameters, N(0, 1 / fan-in) for the rest; running
    means N(0, 0.1^2), running variances U(0.5, 1.5)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1 and name.endswith(("weight", ".v")):
                p.copy_(torch.rand(p.shape, generator=g) + 0.5)
            elif p.ndim == 1:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p[0].numel()))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
            elif name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)
    return model


def backward_both(reference, ours, x):
    """``x`` (float64) through both models in their current modes: outputs equal within 1e-10 and the input
    gradients of the summed squared outputs within 1e-9. Returns both models' named parameters (reference's,
    ours), their gradients filled."""
    xt = torch.from_numpy(x).requires_grad_()
    with torch_on_one_thread():
        ref = reference(xt)
        (ref ** 2).sum().backward()
    with on_parity_device(ours) as device:
        xo = engine.from_numpy(x).to(device).requires_grad_()
        out = ours(xo)
        assert_close(to_numpy(out), ref.detach().numpy(), 1e-10)
        (out ** 2).sum().backward()
    assert_close(to_numpy(xo.grad), xt.grad.numpy(), 1e-9, what="input grad")
    return dict(reference.named_parameters()), dict(ours.named_parameters())


def check_train_step(reference, ours, x, rtol=1e-8, floor=1e-3):
    """``backward_both`` on ``x``, then every parameter's gradient equal to the reference's within ``rtol`` of the
    larger of its own largest value and ``floor`` times the model's largest gradient (a gradient that is zero in
    exact arithmetic, such as that of a bias a following norm removes, is rounding noise on both sides), and every
    buffer (BatchNorm's running statistics after the step) within 1e-10."""
    ref_params, ours_params = backward_both(reference, ours, x)
    assert list(ours_params) == list(ref_params)
    largest = floor * max(np.abs(p.grad.numpy()).max() for p in ref_params.values())
    for name, p in ref_params.items():
        expected, grad = p.grad.numpy(), ours_params[name].grad.numpy()
        error = np.abs(grad - expected).max() / max(np.abs(expected).max(), largest)
        assert error <= rtol, f"{name}: gradient relative error {error:.3g}"
    buffers = dict(ours.named_buffers())
    for name, buffer in reference.named_buffers():
        assert_close(buffers[name].numpy(), buffer.numpy(), 1e-10, what=name)


def torch_model(name, seed=0, **kwargs):
    """A torchvision model with seeded default init and randomised norms, in eval mode."""
    import torchvision.models as tv

    torch.manual_seed(seed)
    builder = getattr(tv, name) if hasattr(tv, name) else getattr(tv.video, name)
    with torch_on_one_thread():
        return randomize_norms(builder(**kwargs), seed).eval()


def numpy_state(model):
    """The migration path: a torch state_dict as numpy arrays."""
    return {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}


def assert_same_init(ours, theirs):
    """Same printout and the same state_dict, key for key and bit for bit, dtypes included (a model built from the
    same seed as torchvision's)."""
    assert repr(ours) == repr(theirs)
    expected = numpy_state(theirs)
    state = {k: v.numpy() for k, v in ours.state_dict().items()}
    assert list(state) == list(expected)
    for key, value in expected.items():
        assert state[key].dtype == value.dtype and np.array_equal(state[key], value), key


def build_without_draws(build):
    """``build()`` with our random initialisation skipped (``skip_random_init``), for a model whose every weight is
    loaded next with a strict ``load_state_dict``: drawing them first would be wasted. (Construction-time arithmetic
    on the undrawn values, a layer scale's product say, may overflow: those warnings are silenced.)"""
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        skip_random_init(patch)
        warnings.simplefilter("ignore", RuntimeWarning)
        return build()


def ours_like(name, tmodel, **kwargs):
    """Our model of the same name with the torch model's weights loaded through numpy, in eval mode."""
    model = build_without_draws(lambda: models.create_model(name, **kwargs))
    model.load_state_dict(numpy_state(tmodel))
    return model.eval()


def to_numpy(t):
    """A torch or engine tensor, on any device, as a numpy array."""
    return t.detach().cpu().numpy()


def image_batch(n, h, w, seed=0, c=3):
    """A seeded float32 input batch."""
    return np.random.default_rng(seed).standard_normal((n, c, h, w)).astype(np.float32)


def eval_outputs(tmodel, ours, x):
    """Eval-mode outputs of both models on the same numpy input."""
    with torch.no_grad(), torch_on_one_thread():
        ref = tmodel(torch.from_numpy(x)).numpy()
    with engine.no_grad(), on_parity_device(ours) as device:
        out = to_numpy(ours(engine.from_numpy(x).to(device)))
    return out, ref


def is_timm_family(name):
    """Whether ``name`` is one of the families from timm (``flowvision.models.timm_families``)."""
    return ".timm_families." in models.model_entrypoint(name).__module__


# Families (family_sweep's keys) that the sweeps over families (ONNX export, empty batches, CUDA) leave out, as other
# families' runs cover their layers: timm's DeiT is its ViT with a second head, timm's Inceptions' layers are
# inception_v3's, timm's Swin has torchvision's Swin's window attention and CaiT the ViT's attention (the transformers
# run at 224 pixels), and DLA's are ResNet's and DenseNet's (it takes only sizes of 32k or 32k - 1 pixels, as timm's).
# BEiT is the ViT's attention with Swin's relative-position table; Swin V2's cosine attention and position-bias MLP
# are Swin V2 CR's, its windows Swin's; MaxxViT's blocks and partition attention are torchvision's MaxViT's and
# ConvNeXt's, its position-bias MLP the relative-position ViTs' (these three cost 4-24 s a sweep at 224-256 pixels).
def _small_mvit(**kwargs):
    """MViTv2-S's blocks (relative positions resized to the clip, residual pooling, pooled keys and values, a stage
    opening with pooled queries and wider channels) in two stages of one block, 32 and 64 channels wide."""
    setting = [MSBlockConfig(1, 32, 32, [3, 3, 3], [3, 3, 3], [1, 1, 1], [1, 8, 8]),
               MSBlockConfig(2, 32, 64, [3, 3, 3], [3, 3, 3], [1, 2, 2], [1, 4, 4])]
    return MViT((224, 224), 16, setting, residual_pool=True, residual_with_cls_embed=False, rel_pos_embed=True,
                proj_after_attn=True, **kwargs)


def _small_convnext(**kwargs):
    """convnext_tiny's class: the stem, a block, a downsampling and a last stage of one block, 32 and 64 wide."""
    return ConvNeXt([CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)], **kwargs)


def _small_vit_b_32(**kwargs):
    """vit_b_32's class (class token, encoder blocks) with 2 layers of width 64 on 64x64 images."""
    return VisionTransformer(64, 32, num_layers=2, num_heads=4, hidden_dim=64, mlp_dim=128, **kwargs)


#: Small configurations of large or fixed-size models' classes (the same layers, fewer and narrower, on smaller
#: images) for sweeps whose point is the layers, not the size: name: a builder taking the model's other keyword
#: arguments. Swin's stages keep two blocks, so that a shifted window runs (Swin3D's smaller windows shift, unlike
#: its full-size ones on a short clip); the RoPE ViT's layer scales start at 1, not 1e-5 (its logits then differ
#: by 17%, not 1e-5, between images); MaxViT keeps its 64-channel stem and 32-channel heads.
SMALL_MODELS = {
    "vit_b_32": _small_vit_b_32,
    "vit_small_patch32_224": functools.partial(models.create_model, "vit_small_patch32_224", img_size=64, depth=2,
                                               embed_dim=64, num_heads=2),
    "vit_small_patch16_rope_224": functools.partial(models.create_model, "vit_small_patch16_rope_224", img_size=64,
                                                    depth=2, embed_dim=64, num_heads=2, init_values=1.0),
    "vit_srelpos_small_patch16_224": functools.partial(models.create_model, "vit_srelpos_small_patch16_224",
                                                       img_size=64, depth=2, embed_dim=64, num_heads=2,
                                                       rel_pos_dim=64),
    "maxvit_t": functools.partial(models.create_model, "maxvit_t", input_size=(64, 64), block_channels=[64, 128],
                                  block_layers=[1, 1], partition_size=4),
    "swin_t": functools.partial(models.create_model, "swin_t", embed_dim=32, depths=[2, 2], num_heads=[2, 4]),
    "swinv2_cr_tiny_ns_224": functools.partial(models.create_model, "swinv2_cr_tiny_ns_224", img_size=(64, 64),
                                               embed_dim=32, depths=(2, 2), num_heads=(2, 4), window_size=4),
    "convnext_tiny": _small_convnext,
    "mvit_v2_s": _small_mvit,
    "swin3d_t": functools.partial(models.create_model, "swin3d_t", embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                                  window_size=[2, 4, 4]),
    "hiera_tiny_224": functools.partial(models.create_model, "hiera_tiny_224", img_size=(64, 64), embed_dim=32,
                                        num_heads=1, stages=(1, 1, 1, 1)),
    "twins_svt_small": functools.partial(models.create_model, "twins_svt_small", embed_dims=(16, 32, 64, 128),
                                         num_heads=(1, 2, 4, 8), depths=(1, 1, 1, 1)),
    "focalnet_tiny_srf": functools.partial(focalnet.FocalNet, embed_dim=16, depths=(1, 1, 1, 1)),
    "coat_lite_tiny": functools.partial(models.create_model, "coat_lite_tiny", img_size=64,
                                        embed_dims=(32, 32, 64, 64), serial_depths=(1, 1, 1, 1), num_heads=8),
    "nest_tiny_jx": functools.partial(models.create_model, "nest_tiny_jx", img_size=64, embed_dims=(16, 32, 64),
                                      num_heads=(1, 2, 4), depths=(1, 1, 1)),
    "tnt_s_legacy_patch16_224": functools.partial(models.create_model, "tnt_s_legacy_patch16_224", img_size=64,
                                                  embed_dim=64, inner_dim=16, depth=2, num_heads_outer=2,
                                                  num_heads_inner=2),
    "nasnetalarge": functools.partial(models.create_model, "nasnetalarge", stem_size=16, num_features=96),
    "davit_tiny": functools.partial(models.create_model, "davit_tiny", embed_dims=(16, 32, 64, 128),
                                    depths=(1, 1, 1, 1), num_heads=(1, 2, 4, 8)),
    "mvitv2_tiny": functools.partial(mvitv2.MultiScaleVit, mvitv2.MultiScaleVitCfg(depths=(1, 1, 1, 1), embed_dim=16),
                                     img_size=(64, 64)),
    "naflexvit_base_patch16_parfac_gap": functools.partial(models.create_model, "naflexvit_base_patch16_parfac_gap",
                                                           embed_dim=32, depth=2, num_heads=2),
    "sequencer2d_s": functools.partial(models.create_model, "sequencer2d_s", layers=(1, 1, 1, 1),
                                       embed_dims=(16, 32, 32, 32), hidden_sizes=(8, 16, 16, 16)),
    "deepseek_vit_412m": functools.partial(models.create_model, "deepseek_vit_412m", img_size=84, embed_dim=64,
                                           depth=2, num_heads=2),
    "gemma4_vit_167m": functools.partial(models.create_model, "gemma4_vit_167m", embed_dim=64, depth=2, num_heads=2,
                                         head_dim=32, intermediate_size=128),
    "mobilenetv5_300m": functools.partial(models.create_model, "mobilenetv5_300m", block_args=decode_arch_def(
        [["er_r1_k3_s2_e4_c8"], ["uir_r1_a3_k5_s2_e4_c16"], ["uir_r1_a5_k5_s2_e4_c24", "mqa_r1_k3_h2_v2_s1_d8_c24"],
         ["uir_r1_a5_k5_s2_e4_c32", "mqa_r1_k3_h2_s1_d8_c32"]]), stem_size=8, num_features=24,
        msfa_output_resolution=2),
    "qwen3_vit_88m": functools.partial(models.create_model, "qwen3_vit_88m", embed_dim=64, depth=2, num_heads=2),
    # timm's VitCfg: the sweeps hand these keywords to timm's entrypoint too, and ours reads the same three fields
    "vitamin_base_224": functools.partial(models.create_model, "vitamin_base_224", img_size=64, embed_dim=64, depth=2,
                                          num_heads=2, embed_cfg=timm_vitamin.VitCfg(embed_dim=(16, 32, 64),
                                                                                     depths=(1, 1, 1), stem_width=16)),
    "samvit_base_patch16": functools.partial(models.create_model, "samvit_base_patch16", img_size=64, embed_dim=64,
                                             depth=2, num_heads=2, global_attn_indexes=[1], window_size=2),
}


#: Families left out of the whole-zoo sweeps (ONNX, empty batch, CUDA) because other families' runs cover their
#: layers: PNASNet's cells are built from NASNet's (separable convolutions, TensorFlow-padded pools, factorised
#: reductions), which nasnetalarge's runs cover.
COVERED_FAMILIES = {"deit (timm)", "inception_v4 (timm)", "inception_resnet_v2 (timm)", "swin_transformer (timm)",
                    "cait (timm)", "dla (timm)", "beit (timm)", "swin_transformer_v2 (timm)", "maxxvit (timm)",
                    "pnasnet (timm)"}


def torchvision_names(names):
    """The names, of those given, that are torchvision's models (not timm's in the same family module)."""
    return [name for name in names if not is_timm_family(name)]


def family_sweep(excluded=()):
    """The zoo's families for the sweeps that run one model of each: ``{family: model names}``, aliases left out,
    the family modules in ``excluded`` too. timm's models are keyed ``'<module> (timm)'``, so that a family module
    holding torchvision's models and timm's (``resnet``, ``vision_transformer``) gives two families, as their
    layers differ. timm's ``test_*`` models are left out: tiny networks of their family's classes
    (tests/flowvision/models/test_timm_test_models.py), they would stand in for the family's real models."""
    families = {}
    for module in models.list_modules():
        if module in excluded:
            continue
        for name in models.list_models(module=module, exclude_filters="test_*"):
            if not models.model_alias_of(name):
                families.setdefault(module + (" (timm)" if is_timm_family(name) else ""), []).append(name)
    return families


def reference_classifier(name, **kwargs):
    """The model ``name`` as torchvision (or, for a timm family, timm) builds it."""
    if is_timm_family(name):
        import timm

        return timm.create_model(name, pretrained=False, **kwargs)
    import torchvision.models as tv

    return (getattr(tv, name) if hasattr(tv, name) else getattr(tv.video, name))(**kwargs)


def capture_builder(patch, module, builder_name):
    """Replace ``module``'s builder function by one that records (class, kwargs) and builds nothing: what an
    entrypoint hands its builder, ours (``build_model``) or timm's (``build_model_with_cfg``)."""
    calls = []
    patch.setattr(module, builder_name, lambda cls, *args, **kwargs: calls.append((cls, kwargs)))
    return calls


def without_default_head(name, kwargs):
    """Our builder keyword arguments ``kwargs`` of the entrypoint ``name`` less the ``num_classes`` that an
    entrypoint without served weights passes where its class default is not timm's (timm's builder takes it from
    the pretrained config, which is checked here)."""
    import timm

    kwargs = dict(kwargs)
    if "num_classes" in kwargs:
        assert kwargs.pop("num_classes") == timm.models.get_pretrained_cfg(name).num_classes, name
    return kwargs


def check_fixed_size_config(name, ours_call, timm_call, same=None):
    """The builder calls (``capture_builder``'s (class, kwargs)) of our and timm's entrypoint ``name``, a fixed-size
    model with ImageNet-1k weights: ours passes ``progress=True`` and timm's keyword arguments (but its
    ``pretrained_filter_fn`` and ``feature_cfg``) with the image size of timm's weights as ``img_size``, each value
    timm's (or as ``same(key, ours, timm's)`` says, where given); our class has timm's first_conv and classifier as
    default_cfg. Returns timm's keyword arguments, with that image size."""
    import timm
    from flowvision.models.timm_families._layers import pair

    (ours_cls, ours_kwargs), (_, timm_kwargs) = ours_call, timm_call
    timm_cfg = timm.models.get_pretrained_cfg(name)
    assert timm_cfg.fixed_input_size and timm_cfg.num_classes == 1000, name
    timm_kwargs = {k: v for k, v in timm_kwargs.items() if k not in ("pretrained_filter_fn", "feature_cfg")}
    timm_kwargs["img_size"] = timm_cfg.input_size[-2:]
    ours_kwargs = dict(ours_kwargs)
    assert ours_kwargs.pop("progress") is True, name
    assert set(ours_kwargs) == set(timm_kwargs), name
    for key, value in ours_kwargs.items():
        value = pair(value) if key == "img_size" else value
        assert same(key, value, timm_kwargs[key]) if same else value == timm_kwargs[key], (name, key)
    assert ours_cls.default_cfg == {"first_conv": timm_cfg.first_conv, "classifier": timm_cfg.classifier}, name
    return timm_kwargs


def comparable_config(value):
    """A config value (timm's or ours) in a form both compare in: dataclasses as dicts, sequences as tuples, callables
    (RepVGG's group-size rule) as their values, partials (norms) as (function name, arguments)."""
    if dataclasses.is_dataclass(value):
        return {f.name: comparable_config(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return tuple(comparable_config(v) for v in value)
    if isinstance(value, dict):
        return {k: comparable_config(v) for k, v in value.items()}
    if isinstance(value, functools.partial):
        return value.func.__name__, value.args, value.keywords
    if callable(value):
        return tuple(value(chs, idx) for chs in (64, 256) for idx in range(4))
    return value


def check_byob_config(ours_cfg, timm_cfg, what=""):
    """Our ByoModelCfg has timm's values (``comparable_config``); timm's fields that ours leaves out keep their
    defaults there (zero-initialised last norms, no anti-aliasing, a plain classifier head)."""
    expected = comparable_config(timm_cfg)
    assert {k: expected.pop(k) for k in ("zero_init_last", "aa_layer", "head_hidden_size", "head_type")} == \
        dict(zero_init_last=True, aa_layer="", head_hidden_size=None, head_type="classifier"), what
    assert comparable_config(ours_cfg) == expected, what


def check_seeded_init(build_reference, build_ours, seed, truncated, what=""):
    """The reference and our model, each built right after ``seed`` is set: both random streams end in step, and
    every state_dict value is the reference's, dtype and bits, but those under the keys ``truncated(reference)``
    names, drawn by timm's truncated normal: within 2 float32 ulps (the engine's float32 erfinv rounds ~0.03% of
    values differently from torch's MKL one). Returns (reference, ours)."""
    torch.manual_seed(seed)
    reference = build_reference()
    after_reference = torch.rand(4).numpy()
    engine.manual_seed(seed)
    ours = build_ours()
    assert np.array_equal(engine.rand(4).numpy(), after_reference), what
    drawn = truncated(reference)
    state = {k: v.numpy() for k, v in ours.state_dict().items()}
    for key, value in numpy_state(reference).items():
        assert state[key].dtype == value.dtype, (what, key)
        if key in drawn:
            np.testing.assert_allclose(state[key], value, rtol=0, atol=2 * np.spacing(np.float32(0.1)),
                                       err_msg=f"{what} {key}")
        else:
            assert np.array_equal(state[key], value), (what, key)
    return reference, ours


def linear_weights(model):
    """The state_dict keys of a torch model's linear weights."""
    return {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}


def seeded_pair(reference_class, ours_class, config, seed):
    """(timm's, ours) built from ``config`` (torch seeded with ``seed`` first), timm's parameters randomised with
    ``seed`` and loaded in ours, both in eval mode."""
    torch.manual_seed(seed)
    reference = randomize_parameters(reference_class(**config), seed).eval()
    ours = build_without_draws(lambda: ours_class(**config))
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def conv_and_linear_weights(model):
    """The state_dict keys of a torch model's convolution and linear weights."""
    return {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))}


def skip_random_init(patch):
    """Our random initialisation skipped (every draw goes through these, Xavier's and He's included, and the timm
    families' truncated normal wherever a family module binds it): big models build in a fraction of a second on
    untouched storage, for tests that only look at the layout or load every weight from timm."""
    from flowvision.models import timm_families
    from flowvision.models.timm_families import _layers

    for name in ("uniform_", "normal_", "trunc_normal_"):
        patch.setattr(init, name, lambda tensor, *args, **kwargs: tensor)
    drawn = _layers.trunc_normal_
    # every module imported first (the families load on first use): one imported under the patch would keep the
    # no-op for good
    families = [importlib.import_module(f"{timm_families.__name__}.{info.name}")
                for info in pkgutil.iter_modules(timm_families.__path__)]
    for module in families:
        if getattr(module, "trunc_normal_", None) is drawn:
            patch.setattr(module, "trunc_normal_", lambda tensor, std=0.02: tensor)


def check_structure(ours, reference, types=True):
    """Same state_dict keys in order, shapes and dtypes, the same module tree (and module class names)."""
    ref_sd, our_sd = reference.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for k in ref_sd:
        assert tuple(our_sd[k].shape) == tuple(ref_sd[k].shape), k
        assert str(our_sd[k].dtype).split(".")[-1] == str(ref_sd[k].dtype).split(".")[-1], k
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in reference.named_modules()]
    if types:
        assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in reference.modules()]


def check_layout(ours, reference, placeholders, printed, types=False):
    """``ours`` has the layout of timm's ``reference`` (which may live on the meta device): state_dict keys in order
    with their shapes and dtypes, module names but for timm's no-op ``placeholders`` (name endings of Identity
    modules that hold no weights), the printout of every layer whose class is in ``printed`` (with ``types``, every
    module's class name too), and feature_info, num_features, head_hidden_size and default_cfg."""
    theirs = {k: (tuple(v.shape), torch.empty((), dtype=v.dtype).numpy().dtype)
              for k, v in reference.state_dict().items()}
    state = {k: (tuple(v.shape), v.numpy().dtype) for k, v in ours.state_dict().items()}
    assert list(state) == list(theirs)
    assert state == theirs
    expected = [(name, m) for name, m in reference.named_modules()
                if not (name.endswith(placeholders) and isinstance(m, torch.nn.Identity))]
    modules = list(ours.named_modules())
    assert [n for n, _ in modules] == [n for n, _ in expected]
    for (n, m), (_, t) in zip(modules, expected):
        if type(t).__name__ in printed:
            assert type(m).__name__ == type(t).__name__ and repr(m) == repr(t), n
        elif types:
            assert type(m).__name__ == type(t).__name__, n
    assert ours.feature_info == reference.feature_info
    assert ours.num_features == reference.num_features
    assert ours.head_hidden_size == reference.head_hidden_size
    assert ours.default_cfg == {k: reference.pretrained_cfg[k] for k in ("first_conv", "classifier")}


def as_numpy(value):
    """Tensors as numpy arrays, inside lists and tuples too."""
    if isinstance(value, (list, tuple)):
        return type(value)(as_numpy(v) for v in value)
    return to_numpy(value)


def both_outputs(reference, ours, x, fn=None):
    """Both models' outputs (or ``fn(model, input)``) on the same numpy input, in their current modes and without
    gradients, as numpy, inside lists and tuples too (feature models, intermediates): (ours, reference's)."""
    fn = fn or (lambda model, t: model(t))
    with torch.no_grad(), torch_on_one_thread():
        ref = fn(reference, torch.from_numpy(x))
    with engine.no_grad(), on_parity_device(ours) as device:
        out = as_numpy(fn(ours, engine.from_numpy(x).to(device)))
    return out, as_numpy(ref)


def pre_logits(model, x):
    """``model``'s pooled features before the classifier (timm's ``forward_head(..., pre_logits=True)``)."""
    return model.forward_head(model.forward_features(x), pre_logits=True)


def _shapes(value):
    """The shapes of arrays, inside lists and tuples too (both as lists)."""
    return [_shapes(v) for v in value] if isinstance(value, (list, tuple)) else value.shape


def _leaves(value):
    """The arrays inside nested lists and tuples, in order."""
    return [leaf for v in value for leaf in _leaves(v)] if isinstance(value, (list, tuple)) else [value]


def check_intermediates(reference, ours, x, rtol, **kwargs):
    """``forward_intermediates(x, **kwargs)`` of timm's ``reference`` and ``ours``: the final output and every
    intermediate (with its prefix tokens where asked) in timm's nesting and shapes, within ``rtol``. Returns ours
    (final, intermediates) as numpy."""
    out, expected = both_outputs(reference, ours, x, lambda m, t: m.forward_intermediates(t, **kwargs))
    assert _shapes(out) == _shapes(expected)
    for o, e in zip(_leaves(out), _leaves(expected)):
        assert_close(o, e, rtol)
    return out


def check_pruned(reference, ours, x, indices, expected, rtol=1e-5, **kwargs):
    """``prune_intermediate_layers(indices, **kwargs)`` on timm's ``reference`` and ``ours`` gives the ``expected``
    indices on both, timm's state_dict keys, ``num_features`` and ``head_hidden_size``, and timm's outputs on ``x``
    within ``rtol``; returns our output."""
    assert ours.prune_intermediate_layers(indices, **kwargs) == expected
    assert reference.prune_intermediate_layers(indices, **kwargs) == expected
    assert list(ours.state_dict()) == list(reference.state_dict())
    assert (ours.num_features, ours.head_hidden_size) == (reference.num_features, reference.head_hidden_size)
    out, ref = both_outputs(reference, ours, x)
    assert_close(out, ref, rtol)
    return out


def check_pruned_to_stem_head(reference, ours, x, width, map_shape):
    """After both models were pruned to the stem alone: ``width`` features (``num_features``, ``head_hidden_size``) on
    both, timm's ``map_shape`` feature map, and, with a new 5-class average-pooled head (timm's weights loaded),
    timm's logits."""
    assert ours.num_features == ours.head_hidden_size == reference.head_hidden_size == reference.num_features == width
    out, ref = both_outputs(reference, ours, x, lambda model, t: model.forward_features(t))
    assert out.shape == map_shape
    assert_close(out, ref, 1e-5)
    reference.reset_classifier(5, "avg")
    ours.reset_classifier(5, "avg")
    ours.load_state_dict(numpy_state(reference))
    out, ref = both_outputs(reference, ours, x)
    assert out.shape == (len(x), 5)
    assert_close(out, ref, 1e-5)


def features_only_pair(name, randomize, seed, **kwargs):
    """timm's ``features_only`` model ``name`` built with ``kwargs`` after ``seed``, its weights randomised by
    ``randomize(model, seed)``, and ours from our entrypoint with the same state_dict keys in order, given those
    weights; both in eval mode."""
    import timm

    torch.manual_seed(seed)
    reference = randomize(timm.create_model(name, features_only=True, **kwargs), seed).eval()
    ours = build_without_draws(lambda: models.create_model(name, features_only=True, **kwargs))
    assert list(ours.state_dict()) == list(reference.state_dict())
    ours.load_state_dict(numpy_state(reference))
    return reference, ours.eval()


def check_feature_maps(reference, ours, x, count, rtol):
    """``features_only`` models: ours has timm's ``feature_info`` (module names, channels, reductions) and, on ``x``
    in eval mode, gives its ``count`` feature maps within ``rtol``; returns our maps."""
    assert ours.feature_info.module_name() == reference.feature_info.module_name()
    assert ours.feature_info.channels() == reference.feature_info.channels()
    assert ours.feature_info.reduction() == reference.feature_info.reduction()
    out, expected = both_outputs(reference, ours.eval(), x)
    assert len(out) == len(expected) == count
    for o, e in zip(out, expected):
        assert_close(o, e, rtol)
    return out


def check_head_api(reference, ours, headless, x, width, unpooled_shape):
    """timm's head API on a convolutional net (``reference`` timm's, ``ours`` with its weights, both in eval mode):
    ``headless``, ours built with ``num_classes=0`` and given the weights but the classifier's, gives timm's pooled
    features (``forward_head(pre_logits=True)``, ``width`` channels); ``reset_classifier(7, "catavgmax")`` gives
    timm's widths, in eval mode; ``reset_classifier(0, "")`` leaves the ``unpooled_shape`` feature map."""
    headless.load_state_dict({k: v for k, v in numpy_state(reference).items() if not k.startswith("head.fc")})
    with torch.no_grad():
        pooled = reference.forward_head(reference.forward_features(torch.from_numpy(x)), pre_logits=True).numpy()
    with engine.no_grad():
        features = headless(engine.from_numpy(x)).numpy()
    assert features.shape == pooled.shape == (len(x), width)
    assert_close(features, pooled, 1e-5)
    assert isinstance(headless.get_classifier(), engine.nn.Identity)
    ours.reset_classifier(7, "catavgmax")
    reference.reset_classifier(7, "catavgmax")
    assert ours.num_classes == 7 and ours.head_hidden_size == reference.head_hidden_size == 2 * width
    assert ours.get_classifier().weight.shape == reference.get_classifier().weight.shape
    assert not ours.get_classifier().training
    ours.reset_classifier(0, "")
    with engine.no_grad():
        unpooled = ours(engine.from_numpy(x)).numpy()
        assert np.array_equal(unpooled, ours.forward_features(engine.from_numpy(x)).numpy())
    assert unpooled.shape == unpooled_shape


def check_train_masks(reference, ours, x, rtol=1e-4):
    """Both models in train mode draw the same dropout and drop-path masks after the same seed (the reference's
    outputs, the same twice) and others after another seed; returns our outputs for seeds 0, 0 and 1."""
    reference.train()
    ours.train()
    outputs = []
    for seed in (0, 0, 1):
        torch.manual_seed(seed)
        engine.manual_seed(seed)
        out, ref = both_outputs(reference, ours, x)
        assert_close(out, ref, rtol)
        outputs.append(out)
    assert np.array_equal(outputs[0], outputs[1]) and not np.allclose(outputs[0], outputs[2])
    return outputs


def check_drop_rates(reference, ours):
    """timm's ``reference`` and ``ours`` have the same dropout rates, module for module, and the same drop-path rates
    (timm's DropPath modules, our StochasticDepth ones). Returns our drop-path rates."""
    import timm

    assert [m.p for m in ours.modules() if isinstance(m, engine.nn.Dropout)] == [
        m.p for m in reference.modules() if isinstance(m, torch.nn.Dropout)]
    rates = [m.p for m in ours.modules() if type(m).__name__ == "StochasticDepth"]
    assert rates == [m.drop_prob for m in reference.modules() if isinstance(m, timm.layers.DropPath)]
    return rates


def check_distilled_training(reference, ours, x, rtol, num_classes):
    """A distilled model (DeiT-style class and distillation heads) after ``set_distilled_training()``: from the same
    seed, train mode gives timm's pair of head outputs; eval mode one (N, ``num_classes``) output."""
    reference.set_distilled_training()
    ours.set_distilled_training()
    torch.manual_seed(8)
    engine.manual_seed(8)
    outs, refs = both_outputs(reference, ours, x)
    assert len(outs) == len(refs) == 2
    for o, r in zip(outs, refs):
        assert_close(o, r, rtol)
    ours.eval()
    assert tuple(ours(engine.from_numpy(x)).shape) == (x.shape[0], num_classes)


def check_dropout_only_in_training(reference, ours, x, rtol=1e-5, train_rtol=1e-4):
    """timm's ``reference`` and ``ours`` built with dropout or drop path, in eval mode: ours gives timm's outputs
    within ``rtol`` without drawing from the random stream (nothing dropped, the same outputs whatever the seed); then
    in train mode ``check_train_masks`` within ``train_rtol`` (timm's masks after the same seed, others after
    another), outputs other than the eval ones. Returns our eval output."""
    before = engine.get_rng_state().numpy()
    out, ref = both_outputs(reference, ours, x)
    assert np.array_equal(engine.get_rng_state().numpy(), before)
    assert_close(out, ref, rtol)
    trained = check_train_masks(reference, ours, x, train_rtol)
    assert not np.allclose(trained[0], out, atol=1e-3)
    return out


def check_empty_batch(model, chw, num_classes):
    """An empty batch of ``chw`` images (which timm's models often refuse: a reshape of no values with -1) through
    ``model``: (0, ``num_classes``) outputs in eval and train mode, an empty input gradient, a zero gradient for
    every parameter, and the buffers as they were (BatchNorm's statistics) but the batch counted, as torch's
    BatchNorm does. Leaves ``model`` in train mode."""
    x = engine.zeros(0, *chw, requires_grad=True)
    with engine.no_grad():
        assert tuple(model.eval()(x).shape) == (0, num_classes)
    before = {name: b.numpy().copy() for name, b in model.named_buffers()}
    out = model.train()(x)
    assert tuple(out.shape) == (0, num_classes)
    out.sum().backward()
    assert tuple(x.grad.shape) == (0, *chw)
    assert all(p.grad is not None and not p.grad.numpy().any() for p in model.parameters())
    for name, b in model.named_buffers():
        expected = before[name] + 1 if name.endswith("num_batches_tracked") else before[name]
        np.testing.assert_array_equal(b.numpy(), expected, err_msg=name)


def check_resnet_drop_path(reference, ours, plain, x):
    """timm's ResNet ``reference`` and ``ours`` built with drop_path_rate=0.5 (and dropout), ``plain`` without: the
    per-block rates are timm's (0 at the first block, 0.5 at the last); in eval mode nothing is dropped; in train mode
    both draw timm's random stream (the same outputs after the same seed, others after another)."""
    blocks = [(s, b) for s in range(1, 5) for b in getattr(ours, f"layer{s}")]
    rates = [b.drop_path.p if b.drop_path is not None else 0.0 for _, b in blocks]
    expected = [b.drop_path.drop_prob if b.drop_path is not None else 0.0
                for s in range(1, 5) for b in getattr(reference, f"layer{s}")]
    assert rates == pytest.approx(expected) and rates[0] == 0.0 and rates[-1] == pytest.approx(0.5)
    with engine.no_grad():
        assert_close(ours(engine.from_numpy(x)).numpy(), plain(engine.from_numpy(x)).numpy(), 1e-6)
    plain.train()
    outputs = check_train_masks(reference, ours, x)
    with engine.no_grad():
        assert not np.allclose(outputs[0], plain(engine.from_numpy(x)).numpy())
