"""Switches for gradient recording: no_grad, enable_grad, set_grad_enabled, inference_mode.

``inference_mode`` turns recording off as ``no_grad`` does, and also marks what is made inside as inference
tensors (``Tensor.is_inference()``): the results of ops and factories, not views of ordinary tensors. As torch,
an op outside the mode that records a graph and saves an inference tensor for its backward, or that writes into
one in place, raises. ``inference_made`` keeps those checks off until a first inference tensor exists.
"""
import functools
import inspect


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
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
                           "clone to get a normal tensor before doing inplace update.See "
                           "https://github.com/pytorch/rfcs/pull/17 for more details.")


class _GradMode:
    """Base for context managers that also work as decorators: on a generator function, each step of the
    generator runs under the mode (and the caller's mode comes back between steps), as torch's do."""

    mode = True

    def __enter__(self):
        self.prev = _State.enabled
        _State.enabled = self.mode

    def __exit__(self, *exc):
        _State.enabled = self.prev
        return False

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return _generator_under(self.clone, fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        """A fresh manager of the same mode (torch's ``_DecoratorContextManager.clone``)."""
        return self.__class__(*self._args())

    def _args(self):
        return ()


class _BareDecorator(_GradMode):
    """A manager that may also decorate without parentheses (``@no_grad``, as torch allows)."""

    def __new__(cls, fn=None):
        if fn is None:
            return super().__new__(cls)
        return cls()(fn)


def _generator_under(make_mode, fn):
    """Generator function ``fn`` wrapped so that its body runs under a fresh ``make_mode()`` each time it is
    resumed (values sent in and exceptions thrown in reach it), the caller's mode in between."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        gen = fn(*args, **kwargs)
        step, value = gen.send, None
        while True:
            try:
                with make_mode():
                    out = step(value)
            except StopIteration as stop:
                return stop.value
            try:
                value, step = (yield out), gen.send
            except GeneratorExit:
                with make_mode():
                    gen.close()
                raise
            except BaseException as error:  # thrown into the wrapper: pass it on to the generator
                value, step = error, gen.throw
    return wrapper


class no_grad(_BareDecorator):
    """Operations inside record no graph (as ``torch.no_grad``)."""

    mode = False


class enable_grad(_BareDecorator):
    mode = True


class inference_mode(_GradMode):
    """Recording off and inference mode on (``mode=False``: recording on and inference mode off, as torch's)."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)  # ``@inference_mode`` without parentheses

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

    def __call__(self, fn):
        _State.enabled = self.prev  # as a decorator it changes nothing until the function runs
        return super().__call__(fn)

    def clone(self):
        """A fresh manager of the same mode; making one sets the mode at once, as the constructor does."""
        new = object.__new__(set_grad_enabled)
        new.prev, new.mode = _State.enabled, self.mode
        _State.enabled = self.mode
        return new
