"""``flowvision-convert``: turn a PyTorch (or safetensors) checkpoint into a validated safetensors file.

    flowvision-convert INPUT --model NAME [-o OUT.safetensors] [--verify]

Reads anything ``engine.load`` reads, strips wrappers (``{"state_dict": ...}``, ``{"model": ...}``,
``module.`` from DataParallel, ``_orig_mod.`` from torch.compile), checks every key and shape
against ``flowvision.models.create_model(NAME)`` and writes safetensors only when all match.
``--verify`` (with torch and torchvision installed) runs both models on one input and prints the
largest absolute difference. Exit codes: 0 ok, 1 mismatch, 2 unreadable input.
"""
import argparse
import os
import sys

import numpy as np
from tqdm import tqdm

import engine
from engine.serialization import UnpicklingError, load, save

from .models._helpers import extract_state_dict

__all__ = ["main", "extract_state_dict", "compare_state_dict"]

def compare_state_dict(model, state_dict):
    """(missing keys, unexpected keys, shape mismatches as 'key: checkpoint vs model') against ``model``."""
    own = model.state_dict()
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    shapes = [f"{k}: checkpoint {list(state_dict[k].shape)} vs model {list(own[k].shape)}"
              for k in own if k in state_dict and tuple(state_dict[k].shape) != tuple(own[k].shape)]
    return missing, unexpected, shapes


def _verify(name, model, state_dict):
    """Max |ours - torchvision| on one seeded input, both models holding ``state_dict``."""
    import torch
    import torchvision

    reference = torchvision.models.get_model(name, weights=None).eval()
    reference.load_state_dict({k: torch.from_numpy(np.array(v.numpy())) for k, v in state_dict.items()})
    x = np.random.default_rng(0).standard_normal((2, 3, 128, 128), dtype=np.float32)
    with torch.no_grad():
        expected = reference(torch.from_numpy(x)).numpy()
    with engine.no_grad():
        actual = model.eval()(engine.from_numpy(x)).numpy()
    return float(np.abs(actual - expected).max()), float(np.abs(expected).max())


def _report(title, items):
    """Print a titled list of problems to stderr (nothing when empty)."""
    if items:
        print(f"{title} ({len(items)}):", file=sys.stderr)
        for item in items:
            print(f"  {item}", file=sys.stderr)


def main(argv=None):
    """Command-line entry point; returns the exit code."""
    parser = argparse.ArgumentParser(prog="flowvision-convert", description=__doc__.split("\n\n")[0])
    parser.add_argument("input", help="checkpoint to convert (.pth/.pt/.bin/.safetensors)")
    parser.add_argument("--model", required=True, help="flowvision model name, e.g. resnet50")
    parser.add_argument("-o", "--output", help="output .safetensors file (default: INPUT with .safetensors)")
    parser.add_argument("--verify", action="store_true", help="compare outputs with torchvision (needs torch)")
    args = parser.parse_args(argv)
    from flowvision.models import create_model

    try:
        state_dict = extract_state_dict(load(args.input))
    except (UnpicklingError, ValueError, FileNotFoundError) as e:
        print(f"error: cannot read '{args.input}' as a checkpoint: {e}", file=sys.stderr)
        return 2
    model = create_model(args.model)
    missing, unexpected, shapes = compare_state_dict(model, state_dict)
    _report("missing keys", missing)
    _report("unexpected keys", unexpected)
    _report("shape mismatches", shapes)
    if missing or unexpected or shapes:
        print(f"error: '{args.input}' does not match {args.model}; nothing written", file=sys.stderr)
        return 1
    arrays = {k: np.array(v.numpy(), order="C") for k, v in
              tqdm(state_dict.items(), desc="converting", unit="tensor", disable=len(state_dict) < 50)}
    output = args.output or os.path.splitext(args.input)[0] + ".safetensors"
    save(arrays, output, metadata={"model": args.model, "source": os.path.basename(args.input)})
    model.load_state_dict(load(output))
    print(f"wrote {output}: {len(arrays)} tensors, {sum(a.size for a in arrays.values()):,} values")
    if args.verify:
        diff, scale = _verify(args.model, model, state_dict)
        print(f"max abs difference vs torchvision: {diff:.3g} (max |output| {scale:.3g})")
        if diff > 1e-4 * max(scale, 1.0):
            print("error: outputs differ from torchvision", file=sys.stderr)
            return 1
    return 0
