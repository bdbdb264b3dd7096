"""The ``flowvision`` command: ``flowvision COMMAND [ARGS...]`` (also ``python -m flowvision``).

Each subcommand is a module of this package, listed in ``COMMANDS``. Adding one takes a module
and one line here::

    # flowvision/cli/segment.py
    \"\"\"Segment images with a pretrained model.\"\"\"    # first line: the command's help
    def configure(parser): parser.add_argument("image")   # add the arguments (argparse)
    def run(args): ...; return 0                          # do the work, return the exit code

    # COMMANDS below
    "segment": "flowvision.cli.segment",

Keep heavy imports (engine, models) inside ``run`` so that ``flowvision --help`` stays fast.
A module that sets ``RAW_ARGS = True`` gets the untouched rest of the command line as the list
``args.argv`` (for commands that delegate to another parser, like ``convert``). Failures the
user can fix are raised as ``CLIError(message, code)``: ``main`` prints ``error: message`` as one
line on stderr, without a traceback, and returns ``code``. Exit codes scripts can test are below.
"""
import argparse
import importlib
import sys

__all__ = ["main", "CLIError", "COMMANDS", "EXIT_OK", "EXIT_FAILURE", "EXIT_USAGE", "EXIT_FILE_NOT_FOUND",
           "EXIT_UNREADABLE_IMAGE", "EXIT_UNKNOWN_MODEL", "EXIT_BAD_WEIGHTS", "EXIT_WEIGHTS_UNAVAILABLE",
           "EXIT_DOWNLOAD_FAILED", "EXIT_UNAVAILABLE", "EXIT_INTERRUPTED"]

EXIT_OK = 0
EXIT_FAILURE = 1               # a command failed for another reason (e.g. a checkpoint that does not fit)
EXIT_USAGE = 2                 # bad command-line syntax (argparse)
EXIT_FILE_NOT_FOUND = 3        # an image or checkpoint file that does not exist
EXIT_UNREADABLE_IMAGE = 4      # a file that is not an image Pillow can read
EXIT_UNKNOWN_MODEL = 5         # a model name (or pattern) that matches no registered model
EXIT_BAD_WEIGHTS = 6           # a --weights tag the model does not have, or an unusable checkpoint
EXIT_WEIGHTS_UNAVAILABLE = 7   # weights not in the cache that cannot be downloaded (offline, HTTP error)
EXIT_DOWNLOAD_FAILED = 8       # a download that arrived corrupt (hash mismatch)
EXIT_UNAVAILABLE = 9           # a feature this installation lacks (nn.Graph, a source checkout, torch)
EXIT_INTERRUPTED = 130

COMMANDS = {
    "classify": "flowvision.cli.classify",
    "models": "flowvision.cli.models",
    "convert": "flowvision.cli.convert",
    "bench": "flowvision.cli.bench",
    "segment": "flowvision.cli.segment",
    "detect": "flowvision.cli.detect",
    "export": "flowvision.cli.export",
}


class CLIError(Exception):
    """A failure to report as one ``error:`` line and exit ``code``."""

    def __init__(self, message, code=EXIT_FAILURE):
        super().__init__(message)
        self.code = code


def _help_line(module):
    """The first line of a command module's docstring."""
    return (module.__doc__ or "").strip().splitlines()[0]


def build_parser():
    """The top-level parser with one subparser per entry of ``COMMANDS``."""
    from flowvision import __version__

    parser = argparse.ArgumentParser(prog="flowvision", description="flowvision: a vision model zoo on its own engine.")
    parser.add_argument("--version", action="version", version=f"flowvision {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        if getattr(module, "RAW_ARGS", False):
            sub = subparsers.add_parser(name, help=_help_line(module), add_help=False, prefix_chars="\0")
            sub.add_argument("argv", nargs=argparse.REMAINDER)
        else:
            sub = subparsers.add_parser(name, help=_help_line(module), description=module.__doc__,
                                        formatter_class=argparse.RawDescriptionHelpFormatter)
            module.configure(sub)
        sub.set_defaults(run=module.run, parser=sub)
    return parser


def main(argv=None):
    """Run ``flowvision`` with ``argv`` (default: the process's arguments) and return the exit code."""
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:  # argparse would blame the top-level command: say it with the subcommand's usage
            args.parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return args.run(args)
    except SystemExit as e:  # argparse (--help, usage errors) and delegated parsers
        return e.code if isinstance(e.code, int) else (EXIT_OK if e.code is None else EXIT_FAILURE)
    except CLIError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

