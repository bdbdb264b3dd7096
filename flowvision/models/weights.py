"""Pretrained weights: torchvision-style enums (``ResNet101_Weights.IMAGENET1K_V2``) built from the manifest.

The manifest (``flowvision/weights/manifest.json``, shipped in the wheel) holds one record per
(model, tag): URL, sha256, parameter count, published metrics, preprocessing, categories, license.
Two settings redirect it, for mirrors and tests:

- ``FLOWVISION_WEIGHTS_URL_BASE``: replaces ``https://download.pytorch.org/models/``,
  ``https://huggingface.co/`` and ``https://github.com/`` (timm's oldest weights, in its release assets) in every
  URL (e.g. ``http://127.0.0.1:8000/``), so the same file paths are fetched from one mirror.
- ``HF_ENDPOINT`` (the Hugging Face hub's own setting): replaces ``https://huggingface.co`` alone, for a
  mirror of the hub.
- ``FLOWVISION_WEIGHTS_MANIFEST``: a JSON file ``{model: {tag: {field: value}}}`` merged over the
  shipped records, e.g. to give the full ``sha256`` of a mirror's own files.

The records come from two manifests: torchvision's weights (``manifest.json``) and timm's weights on the
Hugging Face hub or in timm's GitHub releases (``timm_manifest.json``, written by ``scripts/timm_manifest.py``),
which also adds timm's tags to some of torchvision's models (``resnet50.a1_in1k``: ``ResNet50_Weights.A1_IN1K``).

Both are read once per process, when ``flowvision.models`` registers the models' weight enums (their names
and docstrings come from the records); ``$FLOWVISION_WEIGHTS_MANIFEST`` is read each time a record is asked for,
so a mirror's hashes can be set after import.
"""
import enum
import gzip
import json
import os
import warnings
from functools import lru_cache

import numpy as np
from PIL import Image

import engine

__all__ = ["Weights", "WeightsEnum", "ImageClassification", "SemanticSegmentation", "ObjectDetection",
           "VideoClassification", "OpticalFlow", "get_model_weights",
           "get_weight", "list_pretrained", "pretrained_tag", "resolve_weights", "load_pretrained", "URL_BASE",
           "HF_URL_BASE", "GITHUB_URL_BASE", "ENV_URL_BASE", "ENV_HF_ENDPOINT", "ENV_MANIFEST"]

URL_BASE = "https://download.pytorch.org/models/"
HF_URL_BASE = "https://huggingface.co/"
GITHUB_URL_BASE = "https://github.com/"
ENV_URL_BASE = "FLOWVISION_WEIGHTS_URL_BASE"
ENV_HF_ENDPOINT = "HF_ENDPOINT"
ENV_MANIFEST = "FLOWVISION_WEIGHTS_MANIFEST"
_WEIGHTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "weights")
_MANIFESTS = ("manifest.json", "timm_manifest.json")


@lru_cache(maxsize=None)
def _shipped_manifest():
    """The manifests shipped with the package, their models in one ``{"models": {...}}``.

    A model in both (torchvision's ``resnet50`` and timm's weights for it) has the tags of both in one record: the
    later manifest adds its tags; the enum name, default and ``pretrained_tag`` stay the first's."""
    merged = {}
    for file_name in _MANIFESTS:
        with open(os.path.join(_WEIGHTS_DIR, file_name), encoding="utf-8") as f:
            for model, entry in json.load(f)["models"].items():
                if model in merged:
                    merged[model] = {**merged[model], "weights": {**merged[model]["weights"], **entry["weights"]}}
                else:
                    merged[model] = entry
    return {"models": merged}


@lru_cache(maxsize=None)
def _categories(file_name):
    """The class names listed one per line in ``flowvision/weights/<file_name>`` (gzip-compressed when it ends in
    ``.gz``: ImageNet-21k's 21843 names)."""
    opener = gzip.open if file_name.endswith(".gz") else open
    with opener(os.path.join(_WEIGHTS_DIR, file_name), "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def _record(model, tag):
    """The manifest record of (model, tag), with ``$FLOWVISION_WEIGHTS_MANIFEST``'s fields merged over it.

    The overlay is a JSON file ``{model: {tag: {field: value}}}`` (e.g. another ``url``, or the full
    ``sha256`` of a mirrored file). A full 64-digit sha256 in it is checked whole, without also having
    to set ``sha256_is_prefix``."""
    record = dict(_shipped_manifest()["models"][model]["weights"][tag])
    overlay_path = os.getenv(ENV_MANIFEST)
    if overlay_path:
        with open(overlay_path, encoding="utf-8") as f:
            fields = json.load(f).get(model, {}).get(tag, {})
        if len(fields.get("sha256", "")) == 64:
            fields = {"sha256_is_prefix": False, **fields}
        record.update(fields)
    return record


def _as_rgb_image(image):
    """A PIL image or HxWxC uint8 array as an RGB PIL image."""
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image)
    if not isinstance(image, Image.Image):
        raise TypeError(f"expected a PIL image or an HxWxC uint8 array, got {type(image).__name__}")
    return image.convert("RGB")


# The largest image the short-side resize may make (64 Mpx, 8192 x 8192): a thin strip such as a 20000x1
# image would otherwise grow to 5,120,000 x 256 (27 s and 5.3 GB for one classification).
MAX_RESIZED_PIXELS = 1 << 26


def _check_resized_size(width, height, size):
    """A ValueError when resizing a ``width`` x ``height`` image to a short side of ``size`` would make more than
    MAX_RESIZED_PIXELS pixels."""
    short, long = (width, height) if width <= height else (height, width)
    new_short, new_long = size, int(size * long / short) if short else 0
    if new_short * new_long > MAX_RESIZED_PIXELS:
        new_size = (new_short, new_long) if width <= height else (new_long, new_short)
        raise ValueError(f"a {width}x{height} image resized to a short side of {size} would be "
                         f"{new_size[0]}x{new_size[1]}, over {MAX_RESIZED_PIXELS:,} pixels: crop it first")


def _interpolation_repr(interpolation):
    """How torchvision's presets print their interpolation (``InterpolationMode.BILINEAR``), given as a name or a
    mode."""
    return f"InterpolationMode.{str(getattr(interpolation, 'value', interpolation)).upper()}"


class _Preprocessing:
    """Shared part of the presets, in torchvision's steps (``transforms.functional``'s resize of the short side with
    antialiasing, the preset's crop, conversion to float32 in [0, 1], normalization): a PIL image (converted to RGB)
    or HxWxC uint8 array, a (C, H, W) image or (B, C, H, W) batch tensor, or a list of images, stacked."""

    def __init__(self, resize_size, mean, std, interpolation):
        self.resize_size = None if resize_size is None else int(resize_size)
        self._mean, self._std = [float(v) for v in mean], [float(v) for v in std]
        self.mean = np.asarray(mean, dtype=np.float32).reshape(3, 1, 1)
        self.std = np.asarray(std, dtype=np.float32).reshape(3, 1, 1)
        self.interpolation = interpolation

    def _crop(self, image):
        return image

    def _tensor(self, image):
        """One image (or a batch tensor) as a normalized float32 tensor."""
        from ..transforms import functional as F

        if not isinstance(image, engine.Tensor):
            image = _as_rgb_image(image)
        if self.resize_size is not None:
            height, width = F.get_dimensions(image)[1:]
            _check_resized_size(width, height, self.resize_size)
            image = F.resize(image, [self.resize_size], interpolation=F.InterpolationMode(self.interpolation),
                             antialias=True)
        image = self._crop(image)
        if not isinstance(image, engine.Tensor):
            image = F.pil_to_tensor(image)
        return F.normalize(F.convert_image_dtype(image, engine.float32), mean=self._mean, std=self._std)

    def __call__(self, image):
        if isinstance(image, (list, tuple)):
            return engine.stack([self._tensor(i) for i in image])
        return self._tensor(image)

    def _repr_lines(self):
        return [f"resize_size={None if self.resize_size is None else [self.resize_size]}", f"mean={self._mean}",
                f"std={self._std}", f"interpolation={_interpolation_repr(self.interpolation)}"]

    def __repr__(self):
        return f"{type(self).__name__}(\n" + "".join(f"    {line}\n" for line in self._repr_lines()) + ")"


class ImageClassification(_Preprocessing):
    """ImageNet preprocessing: resize the short side, center crop, scale to [0, 1], normalize.

    Returns a float32 ``(3, crop, crop)`` tensor; a batch tensor or a list of images gives a batch.
    """

    def __init__(self, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation="bilinear"):
        super().__init__(resize_size, mean, std, interpolation)
        self.crop_size = int(crop_size)

    def _crop(self, image):
        from ..transforms import functional as F

        return F.center_crop(image, [self.crop_size])

    def _repr_lines(self):
        return [f"crop_size=[{self.crop_size}]"] + super()._repr_lines()


class SemanticSegmentation(_Preprocessing):
    """Segmentation preprocessing: resize the short side (unless ``resize_size`` is None), scale to [0, 1],
    normalize (no crop).

    Returns a float32 ``(3, H, W)`` tensor; a batch tensor or a list of images of one resized size gives a batch.
    """

    def __init__(self, resize_size, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225), interpolation="bilinear"):
        super().__init__(resize_size, mean, std, interpolation)


class ObjectDetection:
    """Detection preprocessing: an image as a float32 tensor in [0, 1], its size kept.

    The detectors normalise and resize inside the model, so nothing else happens here. Takes a PIL image (its own
    bands, as torchvision reads them), an HxWxC uint8 array (as RGB), or a (C, H, W) image or (B, C, H, W) batch
    tensor; a list of images gives a list of tensors (their sizes may differ).
    """

    def _tensor(self, image):
        from ..transforms import functional as F

        if isinstance(image, np.ndarray):
            image = _as_rgb_image(image)
        if not isinstance(image, engine.Tensor):
            image = F.pil_to_tensor(image)
        return F.convert_image_dtype(image, engine.float32)

    def __call__(self, image):
        if isinstance(image, (list, tuple)):
            return [self._tensor(i) for i in image]
        return self._tensor(image)

    def __repr__(self):
        return "ObjectDetection()"


class VideoClassification:
    """Kinetics preprocessing for clips, as torchvision's preset: every frame resized (no antialiasing) to
    ``resize_size`` (a (height, width) pair, or one number for the short side), center-cropped to ``crop_size``
    (zero-padded where larger), scaled to [0, 1], normalized, and the time axis moved behind the channels. The
    steps are ``flowvision.transforms.functional``'s, so uint8 frames round after the resize as torchvision's.

    Takes a (T, C, H, W) clip or a (B, T, C, H, W) batch of clips, as an engine tensor or a numpy array: uint8
    in [0, 255] or floating in [0, 1]. Returns float32 (C, T, crop_h, crop_w) or (B, C, T, crop_h, crop_w), the
    layout the video models take.
    """

    def __init__(self, crop_size, resize_size, mean=(0.43216, 0.394666, 0.37645), std=(0.22803, 0.22145, 0.216989),
                 interpolation="bilinear"):
        self.crop_size = [int(v) for v in crop_size]
        sizes = resize_size if isinstance(resize_size, (list, tuple)) else [resize_size]
        self.resize_size = [int(v) for v in sizes]
        self.mean = [float(v) for v in mean]
        self.std = [float(v) for v in std]
        self.interpolation = interpolation

    def __call__(self, video):
        from ..transforms import functional as F

        clips = video if isinstance(video, engine.Tensor) else engine.from_numpy(np.ascontiguousarray(video))
        if clips.dim() not in (4, 5):
            raise ValueError(f"expected a (T, C, H, W) clip or a (B, T, C, H, W) batch, got shape {tuple(clips.shape)}")
        batch = clips if clips.dim() == 5 else clips.unsqueeze(0)
        n, t, c, h, w = batch.shape
        frames = batch.reshape(n * t, c, h, w)
        frames = F.resize(frames, self.resize_size, interpolation=F.InterpolationMode(self.interpolation),
                          antialias=False)
        frames = F.center_crop(frames, self.crop_size)
        frames = F.convert_image_dtype(frames, engine.float32)
        frames = F.normalize(frames, mean=self.mean, std=self.std)
        out = frames.reshape(n, t, c, *self.crop_size).permute(0, 2, 1, 3, 4).contiguous()
        return out if clips.dim() == 5 else out.squeeze(0)

    def __repr__(self):
        lines = [f"crop_size={self.crop_size}", f"resize_size={self.resize_size}", f"mean={self.mean}",
                 f"std={self.std}", f"interpolation={_interpolation_repr(self.interpolation)}"]
        return "VideoClassification(\n" + "".join(f"    {line}\n" for line in lines) + ")"


class OpticalFlow:
    """Optical flow preprocessing, as torchvision's preset: both images of a pair converted to float32 and mapped
    from [0, 1] to [-1, 1] (normalized by mean 0.5 and std 0.5), their sizes kept (RAFT needs multiples of 8).

    Takes two images, each a PIL image or a (C, H, W) image or (B, C, H, W) batch as an engine tensor or a numpy
    array, uint8 in [0, 255] or floating in [0, 1]; returns the pair ``(img1, img2)`` of contiguous float32
    tensors, the way a RAFT model (``model(img1, img2)``) takes them.
    """

    def _image(self, image):
        from ..transforms import functional as F

        if isinstance(image, Image.Image):
            image = F.pil_to_tensor(image)
        elif not isinstance(image, engine.Tensor):
            image = engine.from_numpy(np.ascontiguousarray(image))
        if image.dim() not in (3, 4):
            raise ValueError(f"expected a (C, H, W) image or a (B, C, H, W) batch, got shape {tuple(image.shape)}")
        image = F.convert_image_dtype(image, engine.float32)
        image = F.normalize(image, mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])
        return image.contiguous()

    def __call__(self, img1, img2):
        return self._image(img1), self._image(img2)

    def __repr__(self):
        return "OpticalFlow()"


_TRANSFORMS = {"ImageClassification": ImageClassification, "SemanticSegmentation": SemanticSegmentation,
               "ObjectDetection": ObjectDetection, "VideoClassification": VideoClassification,
               "OpticalFlow": OpticalFlow}


class Weights:
    """One published checkpoint of a model: where it lives, how to check it and how to feed the model."""

    def __init__(self, model, tag):
        self.model = model
        self.tag = tag

    @property
    def record(self):
        """The manifest record (with the overlay applied)."""
        return _record(self.model, self.tag)

    @property
    def url(self):
        """The download URL, redirected by ``$FLOWVISION_WEIGHTS_URL_BASE`` (any source) or ``$HF_ENDPOINT`` (the
        Hugging Face hub's files) when set."""
        url = self.record["url"]
        for source, env in ((URL_BASE, ENV_URL_BASE), (HF_URL_BASE, ENV_URL_BASE), (GITHUB_URL_BASE, ENV_URL_BASE),
                            (HF_URL_BASE, ENV_HF_ENDPOINT)):
            base = os.getenv(env)
            if base and url.startswith(source):
                return base.rstrip("/") + "/" + url[len(source):]
        return url

    @property
    def sha256(self):
        """The full sha256 when the manifest knows it, else None (the file name's prefix is checked)."""
        record = self.record
        return None if record.get("sha256_is_prefix", True) else record["sha256"]

    @property
    def meta(self):
        """torchvision-style metadata: categories, num_params, metrics, preprocessing, license..."""
        record = self.record
        meta = {k: v for k, v in record.items() if k not in ("url", "categories")}
        categories = _categories(record["categories"]) if record["categories"] else None
        meta.update(categories=categories, _metrics=record["metrics"],
                    _ops=record.get("gflops"), _file_size=record.get("file_size_mb"))
        if "min_size" in meta:  # JSON has no tuples; torchvision's sizes are (height, width) tuples
            meta["min_size"] = tuple(meta["min_size"])
        if isinstance(meta.get("unquantized"), str):  # the float weights a quantized model starts from, as a member
            meta["unquantized"] = get_weight(meta["unquantized"])
        return meta

    def transforms(self):
        """The preprocessing these weights were evaluated with (the preset named by the record's "transforms")."""
        record = self.record
        return _TRANSFORMS[record.get("transforms", "ImageClassification")](**record["preprocessing"])

    def get_state_dict(self, progress=True, check_hash=True):
        """The checkpoint as a dict of engine tensors, downloaded and cached by ``flowvision.hub``."""
        from .. import hub

        return hub.load_state_dict_from_url(self.url, progress=progress, check_hash=check_hash,
                                            file_name=self.record["file_name"], sha256=self.sha256)

    def __eq__(self, other):
        return isinstance(other, Weights) and (self.model, self.tag) == (other.model, other.tag)

    def __hash__(self):
        return hash((self.model, self.tag))


class WeightsEnum(enum.Enum):
    """Base of the per-model enums; members delegate ``url``, ``meta``, ``transforms`` to their ``Weights``."""

    @property
    def url(self):
        return self.value.url

    @property
    def meta(self):
        return self.value.meta

    def transforms(self):
        return self.value.transforms()

    def get_state_dict(self, progress=True, check_hash=True):
        return self.value.get_state_dict(progress=progress, check_hash=check_hash)

    @classmethod
    def verify(cls, obj):
        """torchvision's check of a builder's ``weights``: None, a member, or a member's name (``'IMAGENET1K_V1'`` or
        ``'ResNet50_Weights.IMAGENET1K_V1'``) as the member; a KeyError for an unknown name, a TypeError for another
        enum's member."""
        if obj is None:
            return None
        if type(obj) is str:
            return cls[obj.replace(cls.__name__ + ".", "")]
        if not isinstance(obj, cls):
            raise TypeError(f"Invalid Weight class provided; expected {cls.__name__} but received "
                            f"{obj.__class__.__name__}.")
        return obj

    def __repr__(self):
        return f"{type(self).__name__}.{self.name}"


@lru_cache(maxsize=None)
def _enum_models():
    """{weights enum name: its model}, e.g. ``{"ResNet50_Weights": "resnet50"}``."""
    return {entry["weights_enum"]: model for model, entry in _shipped_manifest()["models"].items()}


@lru_cache(maxsize=None)
def _weights_enum(model):
    """The ``WeightsEnum`` of a model of the manifest, ``DEFAULT`` an alias of the default tag; built on first use
    (all of them took 55 ms, paid by every ``import flowvision.models``)."""
    entry = _shipped_manifest()["models"][model]
    members = [(tag, Weights(model, tag)) for tag in entry["weights"]]
    members.append(("DEFAULT", Weights(model, entry["default"])))
    return WeightsEnum(entry["weights_enum"], members, module=__name__)


__all__ += list(_enum_models())


def __getattr__(name):
    """A weights enum by its name (``ResNet50_Weights``), built on first use."""
    if name in _enum_models():
        return _weights_enum(_enum_models()[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def list_pretrained():
    """Names of the models with published weights."""
    return list(_shipped_manifest()["models"])


def get_model_weights(name):
    """The weights enum of a model, given its name (``'resnet101'``, in any case) or its builder function."""
    name = getattr(name, "__name__", name)
    if name not in _shipped_manifest()["models"] and name.lower() in _shipped_manifest()["models"]:
        name = name.lower()  # torchvision finds the builder in any case
    if name not in _shipped_manifest()["models"]:
        raise ValueError(f"no pretrained weights for model '{name}'; models with weights: "
                         f"{', '.join(list_pretrained())}")
    return _weights_enum(name)


class UnknownWeightsTag(KeyError, ValueError):
    """A tag its weights enum does not have: a KeyError, as torchvision's enum lookup raises, and a ValueError, as
    flowvision raised before."""

    def __str__(self):
        return str(self.args[0])


def get_weight(name):
    """The weights named ``'<Enum>.<TAG>'``, e.g. ``get_weight('ResNet101_Weights.IMAGENET1K_V2')``; torchvision's
    errors for a name without exactly one dot (ValueError), an unknown enum (ValueError) and an unknown tag
    (KeyError)."""
    parts = name.split(".")
    if len(parts) != 2:
        raise ValueError(f"Invalid weight name provided: '{name}'.")
    enum_name, tag = parts
    if enum_name not in _enum_models():
        raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")
    weights_enum = _weights_enum(_enum_models()[enum_name])
    if tag not in weights_enum.__members__:
        raise UnknownWeightsTag(f"unknown tag '{tag}' for {enum_name}: choose from "
                                f"{', '.join(weights_enum.__members__)}")
    return weights_enum[tag]


def pretrained_tag(model):
    """The tag ``pretrained=True`` alone loads: the manifest's ``pretrained_tag`` (timm's default weights for the
    timm families), else IMAGENET1K_V1 as torchvision's legacy flag does; None when the model has neither."""
    entry = _shipped_manifest()["models"].get(model, {})
    tag = entry.get("pretrained_tag", "IMAGENET1K_V1")
    return tag if tag in entry.get("weights", {}) else None


def default_num_classes(model):
    """The class count of the weights ``pretrained=True`` loads (0 for an image encoder with no head), which is
    also the model's default without weights, as in timm; None for a model without such weights."""
    tag = pretrained_tag(model)
    return None if tag is None else _shipped_manifest()["models"][model]["weights"][tag]["num_classes"]


def resolve_weights(model, pretrained=False, weights=None):
    """The weights a builder should load: ``weights`` (enum member, tag in either case, ``'DEFAULT'`` or full
    name) or, with ``pretrained=True`` alone, ``pretrained_tag(model)``'s; None for none."""
    if weights is None and not pretrained:
        return None
    weights_enum = get_model_weights(model)
    if weights is None:
        tag = pretrained_tag(model)
        if tag is None:
            raise ValueError(f"no legacy weights for {model}: pass weights= (one of "
                             f"{', '.join(weights_enum.__members__)})")
        return weights_enum[tag]
    if isinstance(weights, str):
        if weights.upper() in weights_enum.__members__:
            return weights_enum[weights.upper()]
        elif "." in weights:
            weights = get_weight(weights)
        else:
            raise UnknownWeightsTag(f"unknown weights '{weights}' for {model}: choose from "
                                    f"{', '.join(weights_enum.__members__)}")
    if not isinstance(weights, weights_enum):
        raise ValueError(f"weights {weights!r} do not belong to {model}: expected a {weights_enum.__name__} member")
    return weights


def _classifier_prefixes(model):
    """Key prefixes of the class-dependent layers named by ``default_cfg["classifier"]`` (one name or several)."""
    classifier = getattr(model, "default_cfg", {}).get("classifier") or ()
    names = (classifier,) if isinstance(classifier, str) else tuple(classifier)
    return tuple(name + "." for name in names)


def _classifier_keys(model, state_dict):
    """Checkpoint keys of the classifier that cannot load into ``model`` (other class count, or no head)."""
    prefixes = _classifier_prefixes(model)
    if not prefixes:
        return []
    own = model.state_dict()
    return sorted(k for k in state_dict if k.startswith(prefixes)
                  and (k not in own or tuple(own[k].shape) != tuple(state_dict[k].shape)))


def load_pretrained(model, weights, progress=True):
    """Load ``weights`` into ``model``; a classifier of another size is skipped (with a warning)."""
    from ._helpers import adapt_first_convs

    state_dict = adapt_first_convs(model, dict(weights.get_state_dict(progress=progress)))
    skipped = _classifier_keys(model, state_dict)
    if not skipped:
        return model.load_state_dict(state_dict)
    for k in skipped:
        del state_dict[k]
    result = model.load_state_dict(state_dict, strict=False)
    unexpected = list(result.unexpected_keys)
    missing = [k for k in result.missing_keys if not k.startswith(_classifier_prefixes(model))]
    if missing or unexpected:
        raise RuntimeError(f"Error(s) in loading {weights!r}: missing keys {missing}, unexpected keys {unexpected}")
    model_classes = getattr(model, "num_classes", None)
    theirs = f"the model {model_classes}" if model_classes is not None else "the model's class layers another count"
    warnings.warn(f"loaded {weights!r} except the classifier ({', '.join(skipped)}): the checkpoint has "
                  f"{weights.meta['num_classes']} classes and {theirs}; the classifier keeps its fresh initialisation")
    return result
