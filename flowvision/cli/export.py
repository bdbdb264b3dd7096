"""Export a model to ONNX (engine.onnx.export), optionally checking the file in ONNX Runtime.

    flowvision export MODEL -o model.onnx [--weights PATH|TAG|none] [--input-size 1x3x224x224]
                      [--dynamic-batch] [--opset 17] [--check]

MODEL is any registered image model (`flowvision models`; video and optical-flow models are exported
from Python, engine.onnx.export). --weights is a tag of its weights (default
DEFAULT, downloaded once into $FLOWVISION_HOME/checkpoints), a local checkpoint, or none (random
weights, no download). --input-size is NxCxHxW: a classifier or segmentation model takes one
N-image batch; a detector takes a list of N CxHxW images (one ONNX input per image, each named
image_K). --dynamic-batch lets the file take any batch size (not for detectors, whose list of
images is unrolled). The ONNX outputs are named after the model's output dicts (out, aux; boxes,
labels, scores...), else output. --check runs the file in ONNX Runtime on a random input (seeded)
and prints, per output, the largest difference from the engine's own output (position by position:
detectors with random weights give tied scores, which may come in another order).

Needs the onnx extra (pip install flowvision[onnx]; --check also onnxruntime): without it the
command fails with exit 9. A model the exporter cannot write fails with exit 1 and one line
naming the op, the module it runs in and the opset; other exit codes as for `classify`.
"""
import argparse
import importlib
import os
import time

import numpy as np

from . import EXIT_BAD_WEIGHTS, EXIT_FAILURE, EXIT_FILE_NOT_FOUND, EXIT_UNAVAILABLE, EXIT_USAGE, CLIError
from .classify import _check_model, _classifier_fitting, _looks_like_path, load_checkpoint, load_pretrained
from .options import check_output


def _input_size(text):
    """argparse type: NxCxHxW as four positive integers."""
    parts = text.lower().split("x")
    if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"expected NxCxHxW with positive integers (e.g. 1x3x224x224), got {text!r}")
    return tuple(int(p) for p in parts)


def configure(parser):
    """Add the export arguments."""
    parser.add_argument("model", metavar="MODEL", help="registered model name")
    parser.add_argument("-o", "--output", required=True, help="the ONNX file to write")
    parser.add_argument("--weights", default="DEFAULT", metavar="PATH|TAG",
                        help="weights tag (default: DEFAULT), a local checkpoint, or none for random weights")
    parser.add_argument("--input-size", type=_input_size, default=(1, 3, 224, 224), metavar="NxCxHxW",
                        help="the input the model is traced on (default: 1x3x224x224)")
    parser.add_argument("--dynamic-batch", action="store_true", help="let the file take any batch size")
    parser.add_argument("--opset", type=int, default=17, help="ONNX opset version (default: 17, range 13-21)")
    parser.add_argument("--check", action="store_true",
                        help="run the file in ONNX Runtime and print its largest difference from the engine")


def model_kind(model):
    """'classification', 'segmentation', 'detection', 'video' or 'optical_flow', from the module that registers
    ``model``."""
    from flowvision.models import model_entrypoint

    module = model_entrypoint(model).__module__
    for kind in ("segmentation", "detection", "video", "optical_flow"):
        if f".{kind}." in module:
            return kind
    return "classification"


def _fresh_model(model, kind, state_dict=None):
    """``model`` with random weights and no backbone download (a segmenter with the checkpoint's aux head)."""
    from flowvision.models import create_model

    if kind == "classification":
        return _classifier_fitting(model, state_dict) if state_dict is not None else create_model(model)
    options = {}
    if kind == "segmentation" and state_dict is not None:
        options["aux_loss"] = any(key.startswith("aux_classifier.") for key in state_dict)
    return create_model(model, weights=None, weights_backbone=None, **options)


def build_model(model, kind, value):
    """The model to export for a --weights value: random (none), a local checkpoint, or published weights."""
    from flowvision.models import list_pretrained, resolve_weights

    if value.lower() == "none":
        return _fresh_model(model, kind)
    if _looks_like_path(value):
        if not os.path.isfile(value):
            raise CLIError(f"checkpoint file not found: '{value}'", EXIT_FILE_NOT_FOUND)
        return load_checkpoint(model, value, lambda name, state_dict: _fresh_model(name, kind, state_dict))
    if model not in list_pretrained():
        raise CLIError(f"{model} has no published weights: pass --weights PATH with a local checkpoint, or --weights "
                       "none for random weights", EXIT_BAD_WEIGHTS)
    try:
        weights = resolve_weights(model, weights=value)
    except ValueError as e:
        raise CLIError(f"bad --weights: {e}", EXIT_BAD_WEIGHTS) from None
    return load_pretrained(model, weights)


def example_inputs(kind, size, seed=0):
    """The traced arguments: a batch (N, C, H, W), or for a detector a list of N (C, H, W) images in [0, 1]."""
    import engine

    rng = np.random.default_rng(seed)
    if kind == "detection":
        return ([engine.from_numpy(rng.random(size[1:], dtype=np.float32)) for _ in range(size[0])],)
    return (engine.from_numpy(rng.standard_normal(size).astype(np.float32)),)


def output_names(outputs):
    """ONNX output names from the model's output structure: dict keys (suffixed per list entry), else 'output'."""
    names = []

    def walk(value, prefix, suffix):
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, str(key), suffix)
        elif isinstance(value, (list, tuple)):
            for k, item in enumerate(value):
                walk(item, prefix, f"{suffix}_{k}" if len(value) > 1 else suffix)
        else:
            names.append(prefix + suffix)

    walk(outputs, "output", "")
    return names


def _leaves(outputs):
    from engine.nn.graph.graph import _flatten

    leaves = []
    _flatten(outputs, leaves)
    return [t.numpy() for t in leaves]


def _input_names(kind, size):
    if kind != "detection":
        return ["input"]
    return ["image"] if size[0] == 1 else [f"image_{k}" for k in range(size[0])]


def export_model(net, kind, args):
    """Export ``net`` as the arguments ask; returns (input names, output names, seconds)."""
    import engine
    import engine.onnx

    if args.dynamic_batch and kind == "detection":
        raise CLIError("--dynamic-batch: a detector takes a list of images, unrolled in the file (one input per "
                       "image); export with --input-size NxCxHxW for N images", EXIT_USAGE)
    inputs = example_inputs(kind, args.input_size)
    with engine.no_grad():
        names = output_names(net(*inputs))
    input_names = _input_names(kind, args.input_size)
    dynamic = {name: {0: "batch"} for name in input_names} if args.dynamic_batch else None
    start = time.perf_counter()
    try:
        engine.onnx.export(net, inputs, args.output, input_names=input_names, output_names=names,
                           dynamic_axes=dynamic, opset_version=args.opset)
    except (engine.onnx.ExportError, ValueError) as e:
        raise CLIError(str(e), EXIT_FAILURE) from None
    return input_names, names, time.perf_counter() - start


def check_file(net, kind, args, input_names):
    """Per output, the largest absolute difference between ONNX Runtime and the engine on random inputs
    (the traced size, and one more sample with --dynamic-batch), as text ('shapes differ: ...' when they do)."""
    import engine

    import onnxruntime

    session = onnxruntime.InferenceSession(args.output, providers=["CPUExecutionProvider"])
    sizes = [args.input_size] + ([(args.input_size[0] + 1,) + args.input_size[1:]] if args.dynamic_batch else [])
    worst = {}
    shapes = {}
    for seed, size in enumerate(sizes, 1):
        inputs = example_inputs(kind, size, seed)
        with engine.no_grad():
            ours = _leaves(net(*inputs))
        arrays = [t.numpy() for t in (inputs[0] if kind == "detection" else inputs)]
        got = session.run(None, dict(zip(input_names, arrays)))
        for k, (g, o) in enumerate(zip(got, ours)):
            if g.shape != o.shape:
                shapes.setdefault(k, f"shapes differ: {list(g.shape)} vs {list(o.shape)}")
            elif o.size:
                worst[k] = max(worst.get(k, 0.0), float(np.abs(g.astype(np.float64) - o).max()))
    return [shapes.get(k, f"{worst.get(k, 0.0):.3g}") for k in range(len(ours))]


def _check_tools(args):
    """Fail before any work when the onnx package (or onnxruntime for --check) is missing or the opset is out of range."""
    import engine.onnx

    for package, needed in (("onnx", True), ("onnxruntime", args.check)):
        try:
            if needed:
                importlib.import_module(package)
        except ImportError:
            option = " --check" if package == "onnxruntime" else ""
            raise CLIError(f"export{option} needs the '{package}' package, which is not installed: "
                           f"pip install flowvision[onnx] (or pip install {package})", EXIT_UNAVAILABLE) from None
    if not engine.onnx.MIN_OPSET <= args.opset <= engine.onnx.MAX_OPSET:
        raise CLIError(f"--opset {args.opset}: the exporter writes ONNX opsets {engine.onnx.MIN_OPSET} to "
                       f"{engine.onnx.MAX_OPSET}", EXIT_USAGE)


def run(args):
    """Build the model, export it, and with --check compare the file with the engine."""
    _check_model(args.model)
    check_output(args.output)
    _check_tools(args)
    kind = model_kind(args.model)
    if kind in ("video", "optical_flow"):
        takes = "clips (N, C, T, H, W)" if kind == "video" else "pairs of images"
        raise CLIError(f"{args.model} takes {takes}, not the NxCxHxW batch this command traces: export it from "
                       "Python with engine.onnx.export(model, example_inputs, path)", EXIT_UNAVAILABLE)
    net = build_model(args.model, kind, args.weights).eval()
    import engine.ao

    if any(isinstance(m, engine.ao.nn.quantized.Quantize) for m in net.modules()):
        raise CLIError(f"{args.model} with {args.weights} weights is an int8 model, which has no ONNX export here: "
                       "export it with --weights none or the float weights of its family", EXIT_UNAVAILABLE)
    input_names, names, seconds = export_model(net, kind, args)
    size_mb = os.path.getsize(args.output) / 1e6
    batch = "dynamic batch" if args.dynamic_batch else f"batch {args.input_size[0]}"
    shape = "x".join(str(n) for n in args.input_size)
    print(f"{args.model} ({kind}) exported to {args.output}: {size_mb:.1f} MB, ONNX opset {args.opset}, "
          f"input {shape} ({batch}), {seconds:.2f} s")
    print(f"inputs: {', '.join(input_names)}; outputs: {', '.join(names)}")
    if args.check:
        diffs = check_file(net, kind, args, input_names)
        report = ", ".join(f"{name} {diff}" for name, diff in zip(names, diffs))
        print(f"onnxruntime check (random input): largest difference from the engine: {report}")
    return 0
