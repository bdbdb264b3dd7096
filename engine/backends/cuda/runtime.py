"""The CUDA runtime: what autograd and ``nn.Graph`` ask of the device (see ``backends/cpu/runtime.py``).

CuPy's memory pool already keeps freed blocks for the next step, the kernels keep no scratch of their
own, and the GPU runs a whole batch at once: those hooks are no-ops or say no. ``capture`` turns an inference
plan's run into a CUDA graph (``graphs.py``).
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
    """Whether a CUDA graph capture is under way (ops then skip checks that read values on the host)."""
    from .graphs import capturing
    return capturing()


def captures_graphs():
    """Whether ``capture`` makes replayable graphs here: yes, CUDA graphs."""
    return True


def capture(fn, arrays, warm_up=True):
    """``fn(arrays)`` captured into a CUDA graph: a callable that replays it on new arrays (``graphs.py``;
    ``warm_up``: run ``fn`` once before). Raises what the capture met where ``fn`` cannot be captured."""
    from .graphs import CapturedGraph
    return CapturedGraph(fn, arrays, warm_up)
