"""Convert a PyTorch checkpoint into a validated safetensors file (the flowvision-convert tool).

    flowvision convert INPUT --model NAME [-o OUT.safetensors] [--verify]

All arguments go to flowvision.convert (`flowvision convert --help` shows them); its exit codes
are 0 ok, 1 checkpoint does not match the model, 2 unreadable input, and 5 an unknown model.
"""
import argparse

from . import EXIT_UNKNOWN_MODEL, CLIError

RAW_ARGS = True


def _check_model(argv):
    """Fail with suggestions when ``--model`` names no registered model."""
    from flowvision.models import model_entrypoint

    peek = argparse.ArgumentParser(add_help=False)
    peek.add_argument("--model")
    name = peek.parse_known_args(argv)[0].model
    if name is not None:
        try:
            model_entrypoint(name)
        except RuntimeError as e:
            raise CLIError(str(e), EXIT_UNKNOWN_MODEL) from None


def run(args):
    """Run ``flowvision.convert.main`` on the arguments after ``convert``."""
    from flowvision.convert import main

    _check_model(args.argv)
    return main(args.argv)
