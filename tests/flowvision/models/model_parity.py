"""Helpers for model parity tests: seeded torchvision models, their weights through numpy, ours."""
import numpy as np
import pytest
import torch

import engine
from engine.nn import init
import flowvision.models as models
from op_check import assert_close


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


def backward_both(reference, ours, x):
    """``x`` (float64) through both models in their current modes: outputs equal within 1e-10 and the input
    gradients of the summed squared outputs within 1e-9. Returns both models' named parameters (reference's,
    ours), their gradients filled."""
    xt, xo = torch.from_numpy(x).requires_grad_(), engine.from_numpy(x).requires_grad_()
    ref, out = reference(xt), ours(xo)
    assert_close(out.detach().numpy(), ref.detach().numpy(), 1e-10)
    (ref ** 2).sum().backward()
    (out ** 2).sum().backward()
    assert_close(xo.grad.numpy(), xt.grad.numpy(), 1e-9, what="input grad")
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


def ours_like(name, tmodel, **kwargs):
    """Our model of the same name with the torch model's weights loaded through numpy, in eval mode."""
    model = models.create_model(name, **kwargs)
    model.load_state_dict(numpy_state(tmodel))
    return model.eval()


def to_numpy(t):
    """A torch or engine tensor as a numpy array."""
    return t.detach().numpy()


def image_batch(n, h, w, seed=0, c=3):
    """A seeded float32 input batch."""
    return np.random.default_rng(seed).standard_normal((n, c, h, w)).astype(np.float32)


def eval_outputs(tmodel, ours, x):
    """Eval-mode outputs of both models on the same numpy input."""
    with torch.no_grad():
        ref = tmodel(torch.from_numpy(x)).numpy()
    with engine.no_grad():
        out = ours(engine.from_numpy(x)).numpy()
    return out, ref


def is_timm_family(name):
    """Whether ``name`` is one of the families from timm (``flowvision.models.timm_families``)."""
    return ".timm_families." in models.model_entrypoint(name).__module__


# Families (family_sweep's keys) that the sweeps over families (ONNX export, empty batches, CUDA) leave out, as other
# families' runs cover their layers: timm's DeiT is its ViT with a second head, timm's Inceptions' layers are
# inception_v3's, timm's Swin has torchvision's Swin's window attention and CaiT the ViT's attention (the transformers
# run at 224 pixels), and DLA's are ResNet's and DenseNet's (it takes only sizes of 32k or 32k - 1 pixels, as timm's).
COVERED_FAMILIES = {"deit (timm)", "inception_v4 (timm)", "inception_resnet_v2 (timm)", "swin_transformer (timm)",
                    "cait (timm)", "dla (timm)"}


def torchvision_names(names):
    """The names, of those given, that are torchvision's models (not timm's in the same family module)."""
    return [name for name in names if not is_timm_family(name)]


def family_sweep(excluded=()):
    """The zoo's families for the sweeps that run one model of each: ``{family: model names}``, aliases left out,
    the family modules in ``excluded`` too. timm's models are keyed ``'<module> (timm)'``, so that a family module
    holding torchvision's models and timm's (``resnet``, ``vision_transformer``) gives two families, as their
    layers differ."""
    families = {}
    for module in models.list_modules():
        if module in excluded:
            continue
        for name in models.list_models(module=module):
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


def check_seeded_init(build_reference, build_ours, seed, truncated, what=""):
    """The reference and our model, each built right after ``seed`` is set: both random streams end in step, and
    every state_dict value is the reference's, dtype and bits, but those under the keys ``truncated(reference)``
    names, drawn by timm's truncated normal: within 2 float32 ulps (the engine's float32 erfinv rounds ~0.03% of
    values differently from torch's MKL one)."""
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


def conv_and_linear_weights(model):
    """The state_dict keys of a torch model's convolution and linear weights."""
    return {f"{n}.weight" for n, m in model.named_modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))}


def skip_random_init(patch):
    """Our random initialisation skipped (every draw goes through these, and the timm families' truncated normal
    as ``_layers.init_linear_layers`` calls it): big models build in a fraction of a second on untouched storage, for
    tests that only look at the layout or load every weight from timm."""
    from flowvision.models.timm_families import _layers

    for name in ("uniform_", "normal_", "trunc_normal_"):
        patch.setattr(init, name, lambda tensor, *args, **kwargs: tensor)
    patch.setattr(_layers, "trunc_normal_", lambda tensor, std=0.02: tensor)


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


def check_layout(ours, reference, placeholders, printed):
    """``ours`` has the layout of timm's ``reference`` (which may live on the meta device): state_dict keys in order
    with their shapes and dtypes, module names but for timm's no-op ``placeholders`` (name endings of Identity
    modules that hold no weights), the printout of every layer whose class is in ``printed``, and feature_info,
    num_features and default_cfg."""
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
    assert ours.feature_info == reference.feature_info
    assert ours.num_features == reference.num_features
    assert ours.default_cfg == {k: reference.pretrained_cfg[k] for k in ("first_conv", "classifier")}


def both_outputs(reference, ours, x):
    """Both models' outputs on the same numpy input, in their current modes, as numpy (lists for feature models)."""
    with torch.no_grad():
        ref = reference(torch.from_numpy(x))
    with engine.no_grad():
        out = ours(engine.from_numpy(x))
    if isinstance(ref, (list, tuple)):
        return [o.numpy() for o in out], [r.numpy() for r in ref]
    return out.numpy(), ref.numpy()


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
