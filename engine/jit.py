"""What model code asks ``torch.jit`` about its run (timm's layers branch on it). engine has no TorchScript; its
tracing is ``nn.Graph``'s build and ``engine.onnx.export``'s capture, which record ops as they run eagerly."""
from .autograd import tracing

__all__ = ["is_tracing", "is_scripting"]


def is_tracing():
    """Whether an ``nn.Graph`` build or an ONNX export is recording ops, as ``torch.jit.is_tracing()`` is under
    ``torch.onnx.export``. A layer that caches a tensor computed from its parameters (timm's attention biases in
    eval mode) computes it afresh then, so the recording holds that computation rather than a stale constant."""
    return tracing.active is not None


def is_scripting():
    """False: nothing is compiled to TorchScript here."""
    return False
