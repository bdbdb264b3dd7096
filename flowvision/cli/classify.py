"""Classify images with a pretrained model: the top-k classes and their probabilities, per image.

    flowvision classify IMAGE... [--model resnet101] [--weights TAG|PATH] [--topk 5] [--graph] [--device auto]

IMAGE is any file Pillow reads; a bare name that is not a file but names a photo shipped with
flowvision (chelsea.png) uses that photo. For a video classifier (``--model r2plus1d_18``) each IMAGE is a
clip: the frames of an animated GIF, WebP or PNG. --weights is a tag of the model's weights (DEFAULT,
IMAGENET1K_V1, ...) or a local checkpoint (.pth, .safetensors, .npz, .npy); a checkpoint is
preprocessed and labelled like the model's DEFAULT weights (a classifier of another size gets
numbered classes). Weights are downloaded once into $FLOWVISION_HOME/checkpoints (default
~/.cache/flowvision); FLOWVISION_OFFLINE=1 forbids downloads.
"""
import argparse
import os
import sys

import numpy as np

from . import device as device_option
from . import (EXIT_BAD_WEIGHTS, EXIT_DOWNLOAD_FAILED, EXIT_FILE_NOT_FOUND, EXIT_UNAVAILABLE, EXIT_UNKNOWN_MODEL,
               EXIT_UNREADABLE_IMAGE, EXIT_WEIGHTS_UNAVAILABLE, CLIError)

ASSETS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets")
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm")
CHECKPOINT_EXTENSIONS = (".pth", ".pt", ".bin", ".ckpt", ".safetensors", ".npz", ".npy")


def _positive_int(text):
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def configure(parser):
    """Add the classify arguments."""
    parser.add_argument("images", nargs="+", metavar="IMAGE", help="image files (or a shipped sample: chelsea.png)")
    parser.add_argument("--model", default="resnet101", help="registered model name (default: resnet101)")
    parser.add_argument("--weights", default="DEFAULT", metavar="TAG|PATH",
                        help="weights tag (default: DEFAULT) or a local checkpoint file")
    parser.add_argument("--topk", type=_positive_int, default=5, help="classes to print per image (default: 5)")
    parser.add_argument("--batch-size", type=_positive_int, default=8, help="images per forward pass (default: 8)")
    parser.add_argument("--graph", action="store_true", help="run the model as a static engine.nn.Graph")
    device_option.add_argument(parser)


def shipped_samples():
    """The sample photos shipped in ``flowvision/assets``, by file name."""
    return {f: os.path.join(ASSETS_DIR, f) for f in sorted(os.listdir(ASSETS_DIR)) if f.lower().endswith(IMAGE_EXTENSIONS)}


def resolve_image(name):
    """The file to read for the IMAGE argument ``name``: the file itself, else a shipped sample of that name."""
    if os.path.isfile(name):
        return name
    if os.path.isdir(name):
        raise CLIError(f"'{name}' is a directory, not an image file", EXIT_FILE_NOT_FOUND)
    samples = shipped_samples()
    if not os.path.dirname(name):
        for file_name, path in samples.items():
            if name in (file_name, os.path.splitext(file_name)[0]):
                return path
    raise CLIError(f"image file not found: '{name}' (shipped samples: {', '.join(samples)})", EXIT_FILE_NOT_FOUND)


def _check_model(name):
    """Fail with suggestions unless ``name`` is a registered model."""
    from flowvision.models import model_entrypoint

    try:
        model_entrypoint(name)
    except RuntimeError as e:
        raise CLIError(str(e), EXIT_UNKNOWN_MODEL) from None


def _check_classifier(model, reference):
    """Fail unless ``reference`` (the weights used for preprocessing) are an image classifier's: they report an
    accuracy, or have the classification preset (weights published without a measured accuracy) and a head that
    gives classes (not an image encoder's pooled features or a CLIP-style embedding)."""
    if reference is None:
        return
    head = reference.value.record.get("head", "classes")
    if head != "classes":
        output = "pooled features" if head == "none" else f"{reference.meta['num_classes']}-wide image embeddings"
        raise CLIError(f"{model} with {reference!r} gives {output}, not classes; pass --weights with a classifier's "
                       f"tag, or pick one from `flowvision models`", EXIT_UNKNOWN_MODEL)
    if reference.value.record.get("transforms", "ImageClassification") == "ImageClassification":
        return
    if not any("acc@1" in m for m in reference.meta["_metrics"].values()):
        raise CLIError(f"{model} is not an image classifier ({reference!r} report "
                       f"{', '.join(reference.meta['_metrics'])} metrics); pick one from `flowvision models`",
                       EXIT_UNKNOWN_MODEL)


def _default_weights(model):
    """The model's DEFAULT weights, or None when it has no published weights."""
    from flowvision.models import get_model_weights, list_pretrained

    return get_model_weights(model).DEFAULT if model in list_pretrained() else None


def _looks_like_path(value):
    """Whether a --weights value names a file rather than a tag."""
    return os.path.exists(value) or os.sep in value or value.lower().endswith(CHECKPOINT_EXTENSIONS)


def choose_weights(model, value):
    """(weights enum member or None, checkpoint path or None) for the --weights value ``value``."""
    from flowvision.models import list_pretrained, resolve_weights

    if _looks_like_path(value):
        if not os.path.isfile(value):
            raise CLIError(f"checkpoint file not found: '{value}'", EXIT_FILE_NOT_FOUND)
        return None, value
    if model not in list_pretrained():
        raise CLIError(f"{model} has no published weights: pass --weights PATH with a local checkpoint "
                       "(`flowvision models --pretrained` lists the models that have some)", EXIT_BAD_WEIGHTS)
    try:
        return resolve_weights(model, weights=value), None
    except ValueError as e:
        raise CLIError(f"bad --weights: {e}", EXIT_BAD_WEIGHTS) from None


def graph_base():
    """``engine.nn.Graph``, or a clear error when this engine has none."""
    import engine.nn

    base = getattr(engine.nn, "Graph", None)
    if base is None:
        raise CLIError("--graph needs engine.nn.Graph, which this version of the engine does not have; "
                       "run without --graph", EXIT_UNAVAILABLE)
    return base


def as_graph(model, base):
    """``model`` wrapped in a minimal ``base`` (engine.nn.Graph) subclass whose build runs its forward."""
    class InferenceGraph(base):
        """The model's forward pass as a static graph."""

        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    return InferenceGraph()


def read_image(path):
    """The image at ``path`` as an RGB PIL image, or a clear error."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
        raise CLIError(f"cannot read '{path}' as an image: {e}", EXIT_UNREADABLE_IMAGE) from None


def read_clip(path):
    """Every frame of the animated image at ``path`` as (T, 3, H, W) uint8, or a clear error."""
    from PIL import Image, ImageSequence

    try:
        with Image.open(path) as image:
            frames = [np.asarray(frame.convert("RGB")) for frame in ImageSequence.Iterator(image)]
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as e:
        raise CLIError(f"cannot read '{path}' as a clip: {e}", EXIT_UNREADABLE_IMAGE) from None
    return np.stack(frames).transpose(0, 3, 1, 2)


def _preprocessed(preprocess, path, min_frames=None):
    """The model input of the image at ``path`` (of the clip, when ``min_frames`` is given: a video model's);
    an image the preprocessing refuses, or a clip too short, is one line, exit 4."""
    try:
        if min_frames is None:
            return preprocess(read_image(path)).numpy()
        clip = read_clip(path)
        if len(clip) < min_frames:
            raise ValueError(f"the model needs clips of at least {min_frames} frames, this one has {len(clip)}")
        return preprocess(clip).numpy()
    except ValueError as e:
        raise CLIError(f"cannot classify '{path}': {e}", EXIT_UNREADABLE_IMAGE) from None


def cache_path(weights):
    """Where ``flowvision.hub`` keeps the file of ``weights``."""
    from flowvision import hub

    return os.path.join(hub.get_dir(), "checkpoints", weights.value.record["file_name"])


def _is_cached(weights):
    """Whether the weights' file (or its safetensors conversion) is in the cache."""
    path = cache_path(weights)
    return os.path.exists(path) or os.path.exists(os.path.splitext(path)[0] + ".safetensors")


def _how_to_get(weights):
    """The one-line instruction to put the weights in the cache by hand."""
    from flowvision import hub

    return (f"download {weights.url} and place it at {cache_path(weights)} (or set {hub.ENV_HOME} to a folder "
            "whose checkpoints/ subfolder holds it)")


def is_quantized(weights):
    """Whether ``weights`` are int8 (torchvision's quantized weights, which name their quantized engine)."""
    return weights is not None and "backend" in weights.meta


def load_pretrained(model, weights):
    """``model`` built with ``weights``, downloading them (with a progress bar) unless cached; quantized weights
    build the int8 model (``quantize=True``)."""
    from flowvision import hub
    from flowvision.models import create_model

    label = f"the {model} weights {weights!r}"
    if hub.is_offline() and not _is_cached(weights):
        raise CLIError(f"{hub.ENV_OFFLINE} is set and {label} are not in the cache: {_how_to_get(weights)}",
                       EXIT_WEIGHTS_UNAVAILABLE)
    try:
        return create_model(model, weights=weights, **({"quantize": True} if is_quantized(weights) else {}))
    except hub.CorruptDownloadError as e:
        if hub.is_offline():  # a file placed in the cache by hand, moved aside by the hub
            raise CLIError(f"{label} are corrupt: {e}", EXIT_DOWNLOAD_FAILED) from None
        raise CLIError(f"{label} arrived corrupt ({e}); run again, or {_how_to_get(weights)}",
                       EXIT_DOWNLOAD_FAILED) from None
    except hub.DownloadError as e:
        raise CLIError(f"cannot download {label} ({e.reason}) and they are not in the cache: {_how_to_get(weights)}",
                       EXIT_WEIGHTS_UNAVAILABLE) from None


def read_checkpoint(path):
    """The state_dict in a local checkpoint (PyTorch, safetensors, .npz or .npy), wrappers stripped."""
    from engine.serialization import UnpicklingError

    try:
        if path.lower().endswith((".npz", ".npy")):
            from flowvision.models import load_state_dict

            return load_state_dict(path)
        import engine
        from flowvision.convert import extract_state_dict

        return extract_state_dict(engine.load(path))
    except (UnpicklingError, ValueError, OSError) as e:
        raise CLIError(f"cannot read '{path}' as a checkpoint: {e}", EXIT_BAD_WEIGHTS) from None


def _classifier_fitting(model, state_dict):
    """``model`` built with the checkpoint's classifier size (a fine-tuned classifier of other classes)."""
    from flowvision.models import create_model

    net = create_model(model)
    classifier = net.default_cfg.get("classifier")
    key = f"{classifier[0] if isinstance(classifier, tuple) else classifier}.weight"  # GoogLeNet: fc first
    if key in state_dict and np.shape(state_dict[key])[0] != net.state_dict()[key].shape[0]:
        net = create_model(model, num_classes=np.shape(state_dict[key])[0])
    return net


def load_checkpoint(model, path, build=_classifier_fitting):
    """``build(model, state_dict)`` loaded from the checkpoint at ``path``; a checkpoint that does not fit is
    one line, exit 6."""
    from flowvision.convert import compare_state_dict, describe_mismatch

    state_dict = read_checkpoint(path)
    net = build(model, state_dict)
    mismatch = describe_mismatch(*compare_state_dict(net, state_dict))
    if mismatch:
        raise CLIError(f"'{path}' does not fit {model}: {mismatch}", EXIT_BAD_WEIGHTS)
    net.load_state_dict(state_dict)
    return net


def choose_task_weights(model, value, task_weights):
    """(weights, checkpoint path or None) for a --weights TAG|PATH of segment or detect: a path takes the
    preprocessing and labels of the model's DEFAULT weights; ``task_weights(model, tag)`` checks the model."""
    if _looks_like_path(value):
        default = task_weights(model, "DEFAULT")
        if not os.path.isfile(value):
            raise CLIError(f"checkpoint file not found: '{value}'", EXIT_FILE_NOT_FOUND)
        return default, value
    return task_weights(model, value), None


def probabilities(runner, arrays, batch_size, device="cpu"):
    """Softmax probabilities (float64, one row per image) of ``runner`` on the preprocessed ``arrays``,
    computed on ``device``."""
    import engine
    from tqdm import tqdm

    if len({a.shape for a in arrays}) > 1:  # clips of different lengths
        batch_size = 1
    starts = range(0, len(arrays), batch_size)
    rows = []
    with engine.no_grad():
        for start in tqdm(starts, desc="classifying", unit="batch", disable=len(starts) < 2, file=sys.stderr):
            logits = runner(engine.from_numpy(np.stack(arrays[start:start + batch_size])).to(device))
            if not isinstance(logits, engine.Tensor) or logits.ndim != 2:
                raise CLIError(f"the model is not an image classifier: it returned {type(logits).__name__} "
                               f"{list(getattr(logits, 'shape', []))}, not (batch, classes) logits", EXIT_UNKNOWN_MODEL)
            logits = logits.cpu().numpy().astype(np.float64)
            exp = np.exp(logits - logits.max(axis=1, keepdims=True))
            rows.append(exp / exp.sum(axis=1, keepdims=True))
    return np.concatenate(rows)


def format_topk(path, probs, k, categories):
    """The lines printed for one image: its path, then rank, probability, class index and name."""
    order = np.argsort(-probs, kind="stable")[:k]
    lines = [path, "  rank  probability  class  name"]
    for rank, index in enumerate(order, 1):
        name = categories[index] if categories else f"class {index}"
        lines.append(f"  {rank:4d}  {probs[index]:11.6f}  {index:5d}  {name}")
    return "\n".join(lines)


def run(args):
    """Classify every image (or clip) and print its top-k classes."""
    from flowvision.models import ImageClassification, VideoClassification

    paths = [resolve_image(name) for name in args.images]
    _check_model(args.model)
    weights, checkpoint = choose_weights(args.model, args.weights)
    base = graph_base() if args.graph else None
    reference = weights or _default_weights(args.model)
    _check_classifier(args.model, reference)
    quantized = not checkpoint and is_quantized(reference)
    if quantized and base:
        raise CLIError(f"--graph: nn.Graph does not trace int8 models ({args.model}); run without --graph",
                       EXIT_UNAVAILABLE)
    preprocess = reference.transforms() if reference else ImageClassification(crop_size=224)
    clips = isinstance(preprocess, VideoClassification)
    min_frames = reference.meta.get("min_temporal_size", 1) if clips else None
    arrays = [_preprocessed(preprocess, path, min_frames) for path in paths]
    model = load_checkpoint(args.model, checkpoint) if checkpoint else load_pretrained(args.model, weights)
    device = device_option.choose(args.device, cpu_only="int8 quantized models" if quantized else None)
    model.eval().to(device)
    categories = reference.meta["categories"] if reference else None
    probs = probabilities(as_graph(model, base) if base else model, arrays, args.batch_size, device)
    if categories and len(categories) != probs.shape[1]:
        categories = None
    print(f"{args.model} with {checkpoint or repr(weights)}")
    for path, row in zip(paths, probs):
        print(format_topk(path, row, args.topk, categories))
    return 0
