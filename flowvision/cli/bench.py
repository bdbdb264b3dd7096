"""Benchmark ours against PyTorch (scripts/bench.py; needs a source checkout and torch).

    flowvision bench [--suite ops] [--threads 2] [--repeat 5] [--batch 8]

All arguments go to scripts/bench.py (`flowvision bench --help` shows them). The script is not
part of an installed wheel: run from a clone of the repository with `pip install -e ".[test]"`.
"""
import importlib.util
import os
import sys

from . import EXIT_UNAVAILABLE, CLIError

RAW_ARGS = True
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      "scripts", "bench.py")


def _load_script(path):
    """The bench script at ``path`` as a module, or a clear error when this is not a source checkout or torch is missing."""
    if not os.path.isfile(path):
        raise CLIError(f"flowvision bench needs a source checkout with scripts/bench.py (not found at {path}) and "
                       "torch: clone the repository and run `pip install -e \".[test]\"` there", EXIT_UNAVAILABLE)
    if importlib.util.find_spec("torch") is None:
        raise CLIError("flowvision bench compares against PyTorch, which is not installed: "
                       "run `pip install -e \".[test]\"` in the source checkout", EXIT_UNAVAILABLE)
    spec = importlib.util.spec_from_file_location("flowvision_bench_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(args):
    """Run the bench script's ``main`` with the arguments after ``bench``."""
    module = _load_script(SCRIPT)
    saved = sys.argv
    sys.argv = ["flowvision bench", *args.argv]
    try:
        module.main()
    finally:
        sys.argv = saved
    return 0
