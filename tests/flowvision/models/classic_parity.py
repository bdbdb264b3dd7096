"""Shared helpers of the classic-family tests (AlexNet, SqueezeNet, GoogLeNet, Inception v3, DenseNet)."""
import warnings

import torch

from model_parity import ours_like, torch_model

FAMILIES = {
    "alexnet": ["alexnet"],
    "squeezenet": ["squeezenet1_0", "squeezenet1_1"],
    "googlenet": ["googlenet"],
    "inception": ["inception_v3"],
    "densenet": ["densenet121", "densenet161", "densenet169", "densenet201"],
}
CLASSIC = [name for names in FAMILIES.values() for name in names]
# torchvision's GoogLeNet and Inception3 warn without an explicit init_weights, and their truncated-normal
# init is overwritten by he_weights anyway
_QUIET_INIT = {"googlenet": dict(init_weights=False), "inception_v3": dict(init_weights=False)}
TOL = 1e-4


def he_weights(model, seed):
    """Seeded N(0, 2 / fan_in) weights for every conv and linear layer of a torch model.

    The families' own inits (GoogLeNet's std 0.01, Inception's 0.1) make random networks whose
    outputs barely depend on the input (or overflow), which would hide numerical bugs.
    """
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * (2.0 / fan_in) ** 0.5)
    return model


def reference(name, seed=0, **kwargs):
    """A torchvision model with He weights and randomised norms, in eval mode."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return he_weights(torch_model(name, seed=seed, **{**_QUIET_INIT.get(name, {}), **kwargs}), seed)


def pair(name, seed=0, **kwargs):
    """(torchvision model, ours with its weights), both in eval mode."""
    ref = reference(name, seed, **kwargs)
    return ref, ours_like(name, ref, **{**_QUIET_INIT.get(name, {}), **kwargs})


_SHARED = {}


def shared_pair(name, **kwargs):
    """``pair(name, **kwargs)`` built once per session, for tests that only run it in eval mode."""
    key = (name, tuple(sorted(kwargs.items())))
    if key not in _SHARED:
        _SHARED[key] = pair(name, **kwargs)
    return _SHARED[key]


def meta_model(name, **kwargs):
    """A torchvision model on the meta device: its structure without any memory or init work."""
    import torchvision.models as tv

    with warnings.catch_warnings(), torch.device("meta"):
        warnings.simplefilter("ignore", FutureWarning)
        return getattr(tv, name)(**kwargs)


def check_structure(ours, ref):
    """Same state_dict keys in the same order with the same shapes and dtypes, same module names and types."""
    ref_sd, our_sd = ref.state_dict(), ours.state_dict()
    assert list(our_sd) == list(ref_sd)
    for k, v in ref_sd.items():
        assert tuple(our_sd[k].shape) == tuple(v.shape), k
        assert str(our_sd[k].dtype).split(".")[-1] == str(v.dtype).split(".")[-1], k
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in ref.named_modules()]
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in ref.modules()]
