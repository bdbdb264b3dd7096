"""Model building helpers: first-conv adaptation, local checkpoints and the shared builder.

``build_model`` gives every family timm's common arguments (``in_chans``, ``features_only``,
``out_indices``, ``checkpoint_path``) so entrypoints stay one line each.
"""
import inspect
import math
import os
import pickle
import zipfile
from collections.abc import Mapping

import numpy as np

import engine
from ._features import FeatureListNet

__all__ = ["adapt_input_conv", "extract_state_dict", "load_state_dict", "load_checkpoint", "build_model"]


def adapt_input_conv(in_chans, conv_weight):
    """A first-conv weight (O, 3, *kernel) adapted to ``in_chans`` inputs, as timm does (2-d and 3-d kernels).

    One channel sums the RGB filters; other counts repeat them and rescale by ``3 / in_chans`` so
    the response to a grey image stays the same. Accepts and returns a numpy array or a Tensor.
    """
    is_tensor = isinstance(conv_weight, engine.Tensor)
    weight = conv_weight.detach().numpy() if is_tensor else np.asarray(conv_weight)
    dtype = weight.dtype
    weight = weight.astype(np.float32) if weight.dtype.kind != "f" else weight
    out_chs, old_chans, kernel = weight.shape[0], weight.shape[1], weight.shape[2:]
    if in_chans == 1:
        if old_chans > 3:
            if old_chans % 3:
                raise NotImplementedError(f"cannot fold a weight of shape {weight.shape} into 1 channel")
            weight = weight.reshape((out_chs, old_chans // 3, 3) + kernel).sum(axis=2)
        else:
            weight = weight.sum(axis=1, keepdims=True)
    elif in_chans != old_chans:
        if old_chans != 3:
            raise NotImplementedError(f"cannot adapt a weight of shape {weight.shape} to "
                                      f"{in_chans} input channels: only 3-channel weights convert")
        repeat = math.ceil(in_chans / 3)
        weight = np.tile(weight, (1, repeat) + (1,) * len(kernel))[:, :in_chans] * (3 / in_chans)
    weight = weight.astype(dtype, copy=False)
    return engine.from_numpy(np.ascontiguousarray(weight)) if is_tensor else weight


def adapt_first_convs(model, state_dict):
    """``state_dict`` with the weight of each of the model's first convolutions (``default_cfg["first_conv"]``: a
    name, or a tuple of names where the stem has parallel branches, as RepVGG's) adapted to its input channels."""
    first_convs = getattr(model, "default_cfg", {}).get("first_conv") or ()
    own = model.state_dict()
    for name in (first_convs,) if isinstance(first_convs, str) else first_convs:
        key = f"{name}.weight"
        if key in state_dict and key in own and np.shape(state_dict[key])[1] != own[key].shape[1]:
            state_dict[key] = adapt_input_conv(own[key].shape[1], state_dict[key])
    return state_dict


class _ArrayUnpickler(pickle.Unpickler):
    """An unpickler that only rebuilds numpy arrays, dtypes and plain containers (nothing runs)."""

    _allowed = {
        ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"), ("numpy", "dtype"), ("collections", "OrderedDict"),
    }

    def find_class(self, module, name):
        if (module, name) not in self._allowed:
            raise pickle.UnpicklingError(f"refusing to load '{module}.{name}' from a checkpoint: "
                                         "only numpy arrays and dicts are allowed")
        return super().find_class(module, name)


def _load_npy(path):
    """Arrays from a .npy file: a plain array, or a pickled dict of arrays read safely."""
    with open(path, "rb") as f:
        major, _ = np.lib.format.read_magic(f)
        read_header = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        _, _, dtype = read_header(f)
        if dtype.hasobject:
            obj = _ArrayUnpickler(f).load()
            return obj.item() if isinstance(obj, np.ndarray) and obj.shape == () else obj
    return np.load(path, allow_pickle=False)


_WRAPPER_KEYS = ("state_dict", "model", "model_state_dict", "module", "net")
_PREFIXES = ("module.", "_orig_mod.")


def _is_array(value):
    return isinstance(value, (engine.Tensor, np.ndarray))


def extract_state_dict(obj):
    """The name -> array dict inside a checkpoint: wrapper dicts unwrapped, wrapper prefixes stripped.

    Wrappers: ``{"state_dict": ...}``, ``{"model": ...}`` and similar; prefixes: ``module.`` from
    DataParallel, ``_orig_mod.`` from torch.compile. Non-array entries (epochs, configs) are dropped.
    """
    while isinstance(obj, Mapping) and not any(_is_array(v) for v in obj.values()):
        inner = next((obj[k] for k in _WRAPPER_KEYS if isinstance(obj.get(k), Mapping)), None)
        if inner is None:
            break
        obj = inner
    if not isinstance(obj, Mapping):
        raise ValueError(f"the checkpoint holds a {type(obj).__name__}, not a state_dict")
    state_dict = {}
    for key, value in obj.items():
        if not _is_array(value):
            continue
        stripped = True
        while stripped:
            stripped = False
            for prefix in _PREFIXES:
                if key.startswith(prefix):
                    key, stripped = key[len(prefix):], True
        state_dict[key] = value
    if not state_dict:
        raise ValueError("the checkpoint holds no tensors")
    return state_dict


def load_state_dict(checkpoint_path):
    """A state dict (name -> numpy array) from any file ``engine.load`` reads (PyTorch .pth in both
    formats, safetensors), or from .npz / .npy (dict of arrays) files."""
    if not os.path.isfile(checkpoint_path):
        raise FileNotFoundError(f"no checkpoint found at '{checkpoint_path}'")
    ext = os.path.splitext(checkpoint_path)[1].lower()
    if ext == ".npz":
        try:
            with np.load(checkpoint_path, allow_pickle=False) as archive:
                obj = {k: archive[k] for k in archive.files}
        except (ValueError, zipfile.BadZipFile) as e:
            raise ValueError(f"cannot read '{checkpoint_path}' as an .npz archive of arrays: {e}") from e
    elif ext == ".npy":
        obj = _load_npy(checkpoint_path)
    else:
        obj = engine.load(checkpoint_path)
    if not isinstance(obj, Mapping):
        raise ValueError(f"'{checkpoint_path}' holds a {type(obj).__name__}, not a dict of arrays")
    return {k: v.numpy() if isinstance(v, engine.Tensor) else v for k, v in extract_state_dict(obj).items()}


def load_checkpoint(model, checkpoint_path, strict=True):
    """Load a local state dict file into ``model``; a 3-channel first conv adapts to the model's ``in_chans``."""
    state_dict = adapt_first_convs(model, load_state_dict(checkpoint_path))
    return model.load_state_dict(state_dict, strict=strict)


def _takes(model_cls, name):
    """Whether ``model_cls`` takes the keyword argument ``name`` (or any keyword)."""
    parameters = inspect.signature(model_cls).parameters.values()
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def build_model(model_cls, variant, pretrained=False, *, weights=None, progress=True, in_chans=3,
                features_only=False, out_indices=None, checkpoint_path=None, **kwargs):
    """Construct ``model_cls(**kwargs)``, load pretrained ``weights`` or ``checkpoint_path``, wrap for ``features_only``
    (in the model's ``feature_wrapper``, by default ``FeatureListNet``).

    With no ``num_classes`` given, the model gets the class count of the weights it loads (as in torchvision and
    timm), or without weights that of its default weights (as in timm: an image encoder such as DINOv2's has no head).
    """
    from .weights import default_num_classes, load_pretrained, resolve_weights

    weights = resolve_weights(variant, pretrained, weights)
    num_classes = weights.meta.get("num_classes") if weights is not None else default_num_classes(variant)
    if num_classes is not None and _takes(model_cls, "num_classes"):  # an encoder's class has no head to size
        kwargs.setdefault("num_classes", num_classes)
    model = model_cls(in_chans=in_chans, **kwargs)
    if weights is not None:
        load_pretrained(model, weights, progress=progress)
    if checkpoint_path:
        load_checkpoint(model, checkpoint_path)
    if features_only:
        model = getattr(model, "feature_wrapper", FeatureListNet)(model, out_indices)
    return model
