"""Option values shared by the commands: output paths checked before any work (a missing folder or an image
format Pillow cannot write is one ``error:`` line, not a traceback after the model ran) and thresholds in
[0, 1] (argparse usage errors, exit 2)."""
import argparse
import os

from . import EXIT_FILE_NOT_FOUND, EXIT_USAGE, CLIError

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


def check_output(path, option="-o", extensions=None):
    """``path`` itself when it can be written: its folder exists, and its extension is one of
    ``extensions`` (any when None)."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CLIError(f"{option} {path}: the folder '{folder}' does not exist", EXIT_FILE_NOT_FOUND)
    if os.path.isdir(path):
        raise CLIError(f"{option} {path}: is a directory, not a file", EXIT_USAGE)
    if extensions is not None and not path.lower().endswith(extensions):
        raise CLIError(f"{option} {path}: not an image file name (use one of {', '.join(extensions)})", EXIT_USAGE)
    return path


def unit_interval(text):
    """argparse type: a number in [0, 1] (a score threshold, an opacity)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value
