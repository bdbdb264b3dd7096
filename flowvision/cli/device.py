"""The ``--device`` option of the commands that run a model: ``auto`` (the default) takes the GPU when
CuPy finds one, else the CPU; the choice is printed once, on stderr."""
import sys

from . import EXIT_UNAVAILABLE, EXIT_USAGE, CLIError


def add_argument(parser):
    parser.add_argument("--device", default="auto", metavar="DEVICE",
                        help="cpu, cuda or cuda:N; auto (default): cuda when a GPU is available, else cpu")


def choose(value, cpu_only=None):
    """The engine device ``value`` names (auto resolved), or a one-line error when it is unusable.

    ``cpu_only`` names why the model runs on the CPU alone (int8 models): auto then means cpu, and cuda is refused.
    """
    import engine
    from engine import _device

    if value == "auto":
        value = "cuda" if engine.cuda.is_available() and not cpu_only else "cpu"
    if cpu_only and value.startswith("cuda"):
        raise CLIError(f"--device {value}: {cpu_only} run on the CPU only; use --device cpu", EXIT_UNAVAILABLE)
    try:
        device = engine.device(value)
    except RuntimeError:
        raise CLIError(f"bad --device {value!r}: use cpu, cuda, cuda:N or auto", EXIT_USAGE) from None
    if device.type == "cuda":
        reason = _device.cuda_unavailable_reason()
        if reason is not None:
            raise CLIError(f"--device {value}: CUDA is not available: {reason}", EXIT_UNAVAILABLE)
        device = engine.device("cuda", device.index or 0)
        if device.index >= engine.cuda.device_count():
            raise CLIError(f"--device {value}: there are {engine.cuda.device_count()} GPUs", EXIT_UNAVAILABLE)
        print(f"device: {device} ({engine.cuda.get_device_name(device.index)})", file=sys.stderr)
    else:
        print("device: cpu", file=sys.stderr)
    return device
