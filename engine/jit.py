"""``torch.jit`` as model code and its users call it, on an engine without TorchScript.

The engine runs Python as it is, so "compiling" returns the code itself: ``script`` and ``trace`` hand back the
function or module they are given (``trace`` first runs it once on the example inputs, so that inputs it cannot
take fail there, as torch's trace does), and the decorators and annotations model code imports (``ignore``,
``unused``, ``export``, ``Final``, ``annotate``, ``interface``, ``script_if_tracing``) change nothing. The
results are eager execution's, which is what torch's compiled code computes for code it can compile; what torch
refuses to script (arbitrary Python) runs here. ``freeze`` and ``optimize_for_inference`` keep torch's eval-mode
rule. TorchScript archives need the TorchScript compiler: ``save`` and ``load`` raise. ``script``, ``trace``,
``freeze`` and ``optimize_for_inference`` warn that they are deprecated, as torch 2.14 does.

Tracing here is ``nn.Graph``'s build and ``engine.onnx.export``'s capture, which record ops as they run eagerly:
``is_tracing`` reports them.
"""
import typing
import warnings

from .autograd import tracing

__all__ = ["Final", "annotate", "export", "freeze", "ignore", "interface", "is_scripting", "is_tracing", "load",
           "optimize_for_inference", "save", "script", "script_if_tracing", "trace", "unused"]

_SWITCH = "Please switch to `torch.compile` or `torch.export`."
_USE_COMPILE = "Please use `torch.compile` instead."
Final = typing.Final  # torch.jit.Final: a constant attribute of a scripted module


def _deprecated(name, advice):
    warnings.warn(f"`torch.jit.{name}` is deprecated. {advice}", FutureWarning, stacklevel=3)


def is_tracing():
    """Whether an ``nn.Graph`` build or an ONNX export is recording ops, as ``torch.jit.is_tracing()`` is under
    ``torch.onnx.export``. A layer that caches a tensor computed from its parameters (timm's attention biases in
    eval mode) computes it afresh then, so the recording holds that computation rather than a stale constant."""
    return tracing.active is not None


def is_scripting():
    """False: nothing is compiled to TorchScript here."""
    return False


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """``torch.jit.script``: ``obj`` itself (a function, module or class), which runs as Python."""
    _deprecated("script", _SWITCH)
    if isinstance(obj, type) and obj.__module__ == "builtins":
        raise RuntimeError("TorchScript classes must be new-style classes. Please inherit from 'object'.")
    if not callable(obj) and type(obj).__module__ == "builtins":
        raise TypeError(f"{type(obj)} is a built-in class")
    return obj


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """``torch.jit.trace``: ``func`` itself, after one call on ``example_inputs`` (a tensor or a tuple of
    arguments) or ``example_kwarg_inputs`` (a dict), which raises what that call raises."""
    _deprecated("trace", _SWITCH)
    if example_kwarg_inputs is not None and not isinstance(example_kwarg_inputs, dict):
        raise RuntimeError("example_kwarg_inputs should be a dict")
    if not callable(func):
        raise RuntimeError("Could not get name of python class object")
    if example_kwarg_inputs is not None:
        func(**example_kwarg_inputs)
    else:
        args = example_inputs if isinstance(example_inputs, tuple) else \
            tuple(example_inputs) if isinstance(example_inputs, list) else (example_inputs,)
        func(*args)
    return func


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """``torch.jit.freeze``: the module itself, which must be in eval mode (torch's rule)."""
    _deprecated("freeze", _USE_COMPILE)
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() on "
                           "your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    """``torch.jit.optimize_for_inference``: the module itself, put in eval mode (torch freezes it, which needs
    eval mode)."""
    _deprecated("optimize_for_inference", _USE_COMPILE)
    return mod.eval()


def ignore(drop=False, **kwargs):
    """``@torch.jit.ignore`` or ``@torch.jit.ignore(drop=True)``: the function itself (scripting leaves it as
    Python, which is how everything runs here)."""
    if callable(drop):
        return drop
    if drop:
        warnings.warn("ignore(True) has been deprecated. TorchScript will now drop the function call on "
                      f"compilation. Use torch.jit.unused now. {kwargs}", FutureWarning, stacklevel=2)
    return lambda fn: fn


def unused(fn):
    """``@torch.jit.unused``: the function (or property) itself."""
    return fn


def export(fn):
    """``@torch.jit.export``: the method itself."""
    return fn


def interface(obj):
    """``@torch.jit.interface``: the class itself."""
    return obj


def script_if_tracing(fn):
    """``@torch.jit.script_if_tracing``: the function itself."""
    return fn


def annotate(the_type, the_value):
    """``torch.jit.annotate``: ``the_value`` (the type is for the TorchScript compiler)."""
    return the_value


def save(m, f, _extra_files=None):
    """``torch.jit.save`` writes a TorchScript archive, which needs the TorchScript compiler."""
    raise NotImplementedError("engine.jit.save: engine has no TorchScript to serialize a module's code; save its "
                              "weights with engine.save(model.state_dict(), f) and rebuild the module from its class")


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """``torch.jit.load`` reads a TorchScript archive, whose code needs the TorchScript runtime."""
    raise NotImplementedError("engine.jit.load: engine has no TorchScript runtime to run an archive's code; load "
                              "weights with engine.load(f) into a module built from its class")
