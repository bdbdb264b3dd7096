"""Switches for gradient recording: no_grad, enable_grad, set_grad_enabled, inference_mode.

``inference_mode`` turns recording off as ``no_grad`` does, and also marks what is made inside as inference
tensors (``Tensor.is_inference()``): the results of ops and factories, not views of ordinary tensors. As torch,
an op outside the mode that records a graph and saves an inference tensor for its backward, or that writes into
one in place, raises. ``inference_made`` keeps those checks off until a first inference tensor exists.
"""
import functools


class _State:
    enabled = True
    inference = False
    inference_made = False


def is_grad_enabled():
    return _State.enabled


def is_inference_mode_enabled():
    return _State.inference


def mark_inference(tensor):
    """``tensor``, marked as an inference tensor when inference mode is on."""
    if _State.inference:
        tensor._inference = True
        _State.inference_made = True
    return tensor


def check_saved(inputs):
    """torch's error when an op that records a graph would save an inference tensor for its backward."""
    if any(getattr(t, "_inference", False) for t in inputs):
        raise RuntimeError("Inference tensors cannot be saved for backward. Please do not use Tensors created in "
                           "inference mode in computation tracked by autograd. To work around this, you can make "
                           "a clone to get a normal tensor and use it in autograd, or use `torch.no_grad()` "
                           "instead of `torch.inference_mode()`.")


def check_inplace(target):
    """torch's error when an inference tensor is written in place outside inference mode."""
    if not _State.inference and getattr(target, "_inference", False):
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed. You can make a "
                           "clone to get a normal tensor before doing inplace update.")


class _GradMode:
    """Base for context managers that also work as decorators."""

    mode = True

    def __enter__(self):
        self.prev = _State.enabled
        _State.enabled = self.mode

    def __exit__(self, *exc):
        _State.enabled = self.prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapper

    def _args(self):
        return ()


class no_grad(_GradMode):
    """Operations inside record no graph (as ``torch.no_grad``)."""

    mode = False


class enable_grad(_GradMode):
    mode = True


class inference_mode(_GradMode):
    """Recording off and inference mode on (``mode=False``: recording on and inference mode off, as torch's)."""

    def __init__(self, mode=True):
        self.inference = bool(mode)
        self.mode = not mode

    def __enter__(self):
        self.prev_inference = _State.inference
        _State.inference = self.inference
        super().__enter__()

    def __exit__(self, *exc):
        _State.inference = self.prev_inference
        return super().__exit__(*exc)

    def _args(self):
        return (self.inference,)


class set_grad_enabled(_GradMode):
    """Sets gradient recording on or off; takes effect immediately, and undoes it as a context."""

    def __init__(self, mode):
        self.prev = _State.enabled
        self.mode = bool(mode)
        _State.enabled = self.mode

    def __enter__(self):
        pass

    def _args(self):
        return (self.mode,)
