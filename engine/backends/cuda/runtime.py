"""The CUDA runtime: what autograd and ``nn.Graph`` ask of the device (see ``backends/cpu/runtime.py``).

CuPy's memory pool already keeps freed blocks for the next step, the kernels keep no scratch of their
own, and the GPU runs a whole batch at once: those hooks are no-ops or say no. ``capture`` turns an inference
plan's run into a CUDA graph (``graphs.py``); ``autocast`` gives bfloat16 GEMMs (``autocast.py``), and
``gemm_settings`` what a captured graph's GEMMs were made with; ``generator`` draws random numbers on the
device, captures included (``philox.py``).
"""


def prepare_backward():
    """Nothing to prepare: CuPy's pool keeps freed device memory. Returns False (no setting changed)."""
    return False


def release_scratch():
    pass


def stream_count(batch):
    """One stream: the GPU computes the whole batch in each kernel."""
    return 1


def run_streams(fns):
    """Batch streams are a CPU strategy; a GPU plan runs whole (the caller then does)."""
    return None


def capturing():
    """Whether a CUDA graph is being captured, or warmed up by the same code just before (ops then skip
    checks that read values on the host)."""
    from .graphs import in_graph
    return in_graph()


def captures_graphs():
    """Whether ``capture`` makes replayable graphs here: yes, CUDA graphs."""
    return True


def capture(fn, arrays, on_warm_up=None):
    """``fn(arrays)`` captured into a CUDA graph: a callable that replays it on new arrays (``graphs.py``).
    ``fn`` runs once before the capture; ``on_warm_up`` receives that run's outputs. Raises what the capture
    met where ``fn`` cannot be captured."""
    from .graphs import CapturedGraph
    return CapturedGraph(fn, arrays, on_warm_up)


def autocast():
    """A context in which convolutions, linear layers and matmuls multiply float32 operands rounded to bfloat16,
    with float32 accumulation (``autocast.py``; ``nn.Graph``'s ``config.enable_amp``)."""
    from .autocast import bfloat16
    return bfloat16()


def gemm_settings():
    """What the GEMMs issued now compute in: (matmul.allow_tf32, cudnn.allow_tf32, bfloat16 autocast). A captured
    graph holds the GEMMs of the settings it was captured under."""
    from . import autocast, tf32
    return tf32.matmul.allow_tf32, tf32.convolution.allow_tf32, autocast.enabled()


def generator(seed):
    """The random numbers of the current GPU, from ``seed``: uniform and normal draws that CUDA graphs capture
    (``philox.DeviceGenerator``)."""
    from .philox import DeviceGenerator
    return DeviceGenerator(seed)
