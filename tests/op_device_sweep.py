"""``OP_CHECK_DEVICE=cuda``: every ``check_op`` call that names no device runs our side on that device (on the GPU,
or where there is none on the CPU emulation of CuPy, installed for the session by conftest's ``parity_device``),
so the whole check_op corpus checks the CUDA path of each op against PyTorch on the CPU
(``scripts/gpu_check.py --op-sweep``).

A test's ``ours`` callable often holds engine tensors or modules of its own (weights, targets, running stats) or
makes them with a factory, and reads values back with ``.numpy()``: inside the call those follow the inputs to the
device (closure cells and defaults moved, modules moved, factories called from test code and Tensor.numpy called
there redirected), and everything moved goes back to the CPU afterwards, so the test's own checks after check_op
still run. What remains are the op's own device problems (and the draws of random ops, whose device generator is
not torch's CPU one)."""
import contextlib
import os
import sys

import engine

DEVICE = os.environ.get("OP_CHECK_DEVICE") or None
# factories a test calls while building what ``ours`` reads
_FACTORIES = ("tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "arange", "randn", "rand",
              "randint", "eye", "linspace", "randperm")


def _from_test_code(depth=2):
    name = sys._getframe(depth).f_code.co_filename
    return f"{os.sep}tests{os.sep}" in name and not name.endswith(("op_check.py", "op_device_sweep.py"))


class _Mover:
    """Moves what a callable captures to ``device``; ``restore()`` puts it back on the CPU."""

    def __init__(self, device):
        self.device, self.seen, self.undo = device, set(), []

    def function(self, fn):
        if id(fn) in self.seen:
            return
        self.seen.add(id(fn))
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                cell.cell_contents = self.value(cell.cell_contents)
            except ValueError:  # an empty cell (a name not yet bound)
                continue
            self.undo.append(lambda cell=cell: setattr(cell, "cell_contents", _back(cell.cell_contents)))
        if getattr(fn, "__defaults__", None):
            fn.__defaults__ = tuple(self.value(v) for v in fn.__defaults__)
        if getattr(fn, "__kwdefaults__", None):
            fn.__kwdefaults__ = {k: self.value(v) for k, v in fn.__kwdefaults__.items()}
        for owner in (getattr(fn, "__self__", None), fn, getattr(fn, "func", None)):  # bound method, module, partial
            if isinstance(owner, engine.nn.Module) or (owner is not fn and callable(owner)):
                self.value(owner)

    def value(self, v):
        if isinstance(v, engine.Tensor):
            if v.device.type == engine.device(self.device).type:
                return v
            return v.detach().to(self.device).requires_grad_(v.requires_grad) if v.is_leaf else v.to(self.device)
        if isinstance(v, engine.nn.Module):
            if ("module", id(v)) not in self.seen:
                self.seen.add(("module", id(v)))
                v.to(self.device)
                self.undo.append(lambda: _module_back(v))
            return v
        if type(v).__name__ == "BlockMask":
            return v.to(self.device)
        if isinstance(v, list):
            v[:] = [self.value(x) for x in v]
        elif isinstance(v, dict):
            v.update({k: self.value(x) for k, x in v.items()})
        elif isinstance(v, tuple) and not hasattr(v, "_fields"):
            return tuple(self.value(x) for x in v)
        elif callable(v) and hasattr(v, "__code__"):
            self.function(v)
        return v

    def restore(self):
        for undo in reversed(self.undo):
            undo()


def _back(v):
    """A moved leaf tensor (with its gradient) or a list or tuple of them, on the CPU again."""
    if isinstance(v, engine.Tensor) and v.device.type != "cpu" and v.is_leaf:
        host = v.detach().cpu().requires_grad_(v.requires_grad)
        if v.grad is not None:
            host.grad = v.grad.cpu()
        return host
    if isinstance(v, list):
        v[:] = [_back(x) for x in v]
    elif isinstance(v, tuple) and not hasattr(v, "_fields"):
        return tuple(_back(x) for x in v)
    return v


def _module_back(module):
    module.to("cpu")
    for p in module.parameters():
        if p.grad is not None and p.grad.device.type != "cpu":
            p.grad = p.grad.cpu()


@contextlib.contextmanager
def _test_code_on(device):
    """Factories called from test code make their tensors on ``device``; Tensor.numpy called there copies to the
    host first."""
    saved = {name: getattr(engine, name) for name in _FACTORIES if hasattr(engine, name)}

    def on_device(factory):
        def make(*args, **kwargs):
            out = factory(*args, **kwargs)
            if isinstance(out, engine.Tensor) and kwargs.get("device") is None and out.device.type == "cpu" \
                    and _from_test_code():
                out = out.detach().to(device).requires_grad_(out.requires_grad)
            return out
        return make

    numpy = engine.Tensor.numpy

    def host_numpy(self, *args, **kwargs):
        return numpy(self.cpu() if self.device.type != "cpu" and _from_test_code() else self, *args, **kwargs)
    for name, factory in saved.items():
        setattr(engine, name, on_device(factory))
    engine.Tensor.numpy = host_numpy
    try:
        yield
    finally:
        engine.Tensor.numpy = numpy
        for name, factory in saved.items():
            setattr(engine, name, factory)


def run(check, ours, device):
    """``check(device)`` (check_op's body) with what ``ours`` captures moved to ``device`` meanwhile; its engine
    outputs returned on the CPU."""
    mover = _Mover(device)
    mover.function(ours)
    try:
        with _test_code_on(device):
            outputs = check(device)
    finally:
        mover.restore()
    return [o.cpu() if isinstance(o, engine.Tensor) else o for o in outputs]
