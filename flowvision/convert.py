"""``flowvision-convert``: turn a PyTorch (or safetensors) checkpoint into a validated safetensors file.

    flowvision-convert INPUT --model NAME [-o OUT.safetensors] [--verify]

Reads anything ``engine.load`` reads, strips wrappers (``{"state_dict": ...}``, ``{"model": ...}``,
``module.`` from DataParallel, ``_orig_mod.`` from torch.compile), checks every key and shape
against ``flowvision.models.create_model(NAME)`` and writes safetensors only when all match.
``--verify`` (with torch and torchvision installed) runs both models on one input and prints the
largest absolute difference. Every failure is one ``error:`` line; exit codes as the ``flowvision``
command's: 0 ok, 1 outputs differ from torchvision (--verify), 2 usage, 3 input file or output folder
not found, 5 unknown model, 6 unreadable checkpoint or one that does not fit the model, 9 --verify
without torch and torchvision installed.
"""
import argparse
import importlib.util
import inspect
import os
import sys

import numpy as np
from tqdm import tqdm

import engine
from engine.serialization import UnpicklingError, load, save_safetensors

from .models._helpers import extract_state_dict

__all__ = ["main", "extract_state_dict", "compare_state_dict", "describe_mismatch"]


def compare_state_dict(model, state_dict):
    """(missing keys, unexpected keys, shape mismatches as 'key: checkpoint vs model') against ``model``."""
    own = model.state_dict()
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    shapes = [f"{k}: checkpoint {list(state_dict[k].shape)} vs model {list(own[k].shape)}"
              for k in own if k in state_dict and tuple(state_dict[k].shape) != tuple(own[k].shape)]
    return missing, unexpected, shapes


def _listed(keys, limit=3):
    """Up to ``limit`` keys, comma-separated, with the count of the rest."""
    more = f" and {len(keys) - limit} more" if len(keys) > limit else ""
    return ", ".join(keys[:limit]) + more


def describe_mismatch(missing, unexpected, shapes):
    """``compare_state_dict``'s result as one phrase ("2 missing keys (a, b); ..."), '' when all match."""
    return "; ".join(f"{len(keys)} {what} ({_listed(keys)})" for what, keys in
                     (("missing keys", missing), ("unexpected keys", unexpected), ("shape mismatches", shapes))
                     if keys)


def _verify(name, model, state_dict):
    """Max |ours - torchvision| on one seeded input, both models holding ``state_dict`` (classification
    logits, or segmentation's ``out``); None for a model whose output is not a tensor or ``out`` map."""
    import torch
    import torchvision

    reference = torchvision.models.get_model(name, weights=None, **_fresh_kwargs(
        torchvision.models.get_model_builder(name), state_dict)).eval()
    reference.load_state_dict({k: torch.from_numpy(np.array(v.numpy())) for k, v in state_dict.items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 128, 128), dtype=np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x))
    with engine.no_grad():
        actual = model.eval()(engine.from_numpy(x))
    if isinstance(expected, dict):
        expected, actual = expected.get("out"), actual.get("out")
    if not isinstance(expected, torch.Tensor):
        return None
    expected, actual = expected.numpy(), actual.numpy()
    return float(np.abs(actual - expected).max()), float(np.abs(expected).max())


def _fail(message, code):
    """Print ``message`` as one error line; return ``code``."""
    print(f"error: {message}", file=sys.stderr)
    return code


def _fresh_kwargs(entrypoint, state_dict):
    """Builder arguments for random weights that never download a backbone (detection and segmentation
    builders default to ImageNet backbone weights), with an auxiliary head when the checkpoint has one."""
    parameters = inspect.signature(entrypoint).parameters
    kwargs = {"weights_backbone": None} if "weights_backbone" in parameters else {}
    if "aux_loss" in parameters:
        kwargs["aux_loss"] = any(key.startswith("aux_classifier.") for key in state_dict)
    return kwargs


def main(argv=None, prog="flowvision-convert"):
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("input", help="checkpoint to convert (.pth/.pt/.bin/.safetensors)")
    parser.add_argument("--model", required=True, help="flowvision model name, e.g. resnet50")
    parser.add_argument("-o", "--output", help="output .safetensors file (default: INPUT with .safetensors)")
    parser.add_argument("--verify", action="store_true", help="compare outputs with torchvision (needs torch)")
    args = parser.parse_args(argv)
    from flowvision.models import model_entrypoint

    try:
        model_entrypoint(args.model)
    except RuntimeError as e:
        return _fail(str(e), 5)
    if args.verify and (importlib.util.find_spec("torch") is None or importlib.util.find_spec("torchvision") is None):
        return _fail("--verify compares with torchvision, which is not installed: pip install torch torchvision", 9)
    if not os.path.isfile(args.input):
        return _fail(f"checkpoint file not found: '{args.input}'", 3)
    output = args.output or os.path.splitext(args.input)[0] + ".safetensors"
    folder = os.path.dirname(os.path.abspath(output))
    if not os.path.isdir(folder):
        return _fail(f"-o {output}: the folder '{folder}' does not exist", 3)
    try:
        state_dict = extract_state_dict(load(args.input))
    except (UnpicklingError, ValueError, OSError) as e:
        return _fail(f"cannot read '{args.input}' as a checkpoint: {e}", 6)
    from flowvision.models import create_model

    model = create_model(args.model, **_fresh_kwargs(model_entrypoint(args.model), state_dict))
    mismatch = describe_mismatch(*compare_state_dict(model, state_dict))
    if mismatch:
        return _fail(f"'{args.input}' does not fit {args.model}: {mismatch}; nothing written", 6)
    arrays = {k: np.array(v.numpy(), order="C") for k, v in
              tqdm(state_dict.items(), desc="converting", unit="tensor", disable=len(state_dict) < 50)}
    save_safetensors(arrays, output, metadata={"format": "pt", "model": args.model,
                                               "source": os.path.basename(args.input)})
    model.load_state_dict(load(output))
    print(f"wrote {output}: {len(arrays)} tensors, {sum(a.size for a in arrays.values()):,} values")
    if args.verify:
        compared = _verify(args.model, model, state_dict)
        if compared is None:
            return _fail(f"--verify compares classification and segmentation outputs; {args.model} is neither", 9)
        diff, scale = compared
        print(f"max abs difference vs torchvision: {diff:.3g} (max |output| {scale:.3g})")
        if diff > 1e-4 * max(scale, 1.0):
            return _fail("outputs differ from torchvision", 1)
    return 0
