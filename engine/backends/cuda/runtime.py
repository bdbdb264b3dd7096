"""The CUDA runtime: what autograd and ``nn.Graph`` ask of the device (see ``backends/cpu/runtime.py``).

CuPy's memory pool already keeps freed blocks for the next step, the kernels keep no scratch of their
own, and the GPU runs a whole batch at once: every hook here is a no-op or says no.
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
