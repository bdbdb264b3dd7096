"""One traced run of a model for export: the ops ``nn.Graph``'s tracer records, plus the module each op ran in.

The exporter reuses ``nn.Graph``'s ``Tracer`` (engine/nn/graph/plan.py): every Function call is
recorded with its parameter snapshot, argument references and output slots. ``ExportTracer`` adds
what an export needs on top: each slot's dtype, the dotted path of the module whose forward was
running when each op was recorded (forward hooks keep a stack of paths), and an error worded for
export when the model reads a traced value (Python control flow on data cannot be captured).
"""
from ..autograd import grad_mode
from ..nn.graph.graph import _flatten
from ..nn.graph.plan import Tracer, user_line
from .errors import ExportError


class ExportTracer(Tracer):
    """``nn.Graph``'s tracer, also noting slot dtypes and the module of every recorded op (``paths`` for
    messages, ``scopes``: the dotted module path, for node names)."""

    def __init__(self, reference=None):
        super().__init__("engine.onnx.export")
        self.reference = reference
        self.dtypes = []
        self.paths = []
        self.scopes = []
        self.module_stack = []

    def new_slot(self, tensor):
        self.dtypes.append(tensor._data.dtype)
        return super().new_slot(tensor)

    def record(self, cls, state, inputs, results):
        super().record(cls, state, inputs, results)
        self.paths.append(self.where())
        self.scopes.append(self.module_stack[-1][0] if self.module_stack else "")

    def vary_count(self, count):
        """``tracing.vary``: the exported trace notes each op's data-dependent count; the probe (traced with the
        exported trace's counts as ``reference``) changes a count that came out the same."""
        if self.reference is None:
            return super().vary_count(count)
        return self.reference.get(len(self.ops)) == count

    def where(self):
        """'module 'layer1.0.conv1' (Conv2d)': the innermost module whose forward is running."""
        if not self.module_stack:
            return "the traced function"
        path, module = self.module_stack[-1]
        if not path:
            return f"the model's forward ({type(module).__name__})"
        return f"module '{path}' ({type(module).__name__})"

    def refuse_value_read(self, what):
        raise ExportError(f"engine.onnx.export: {self.where()} reads the value of a traced tensor "
                          f"({what}){user_line()}; "
                          "control flow that depends on tensor values cannot be exported (compute it with tensor "
                          "ops such as engine.where)")


class Capture:
    """The ops of one traced call and what the exporter needs to know about its values."""

    def __init__(self, tracer, input_slots, inputs, outputs):
        self.ops = tracer.ops
        self.paths = tracer.paths
        self.scopes = tracer.scopes
        self.shapes = tracer.shapes
        self.dtypes = tracer.dtypes
        self.input_slots = input_slots
        self.inputs = inputs
        self.output_leaves = []
        self.output_spec = _flatten(outputs, self.output_leaves)
        self.output_slots = [tracer.slot_of(t) for t in self.output_leaves]
        self.counts = tracer.counts


def modules_of(model):
    """(path, module) of every module whose forward may run: a Module's own tree, or a Graph's modules."""
    from ..nn.graph import Graph
    if isinstance(model, Graph):
        return [(path, m) for name, top in model._modules.items() for path, m in top.named_modules(prefix=name)]
    return list(model.named_modules())


def _install_path_hooks(tracer, modules):
    """Hooks pushing each module's path on entry and popping it on exit (also when forward raises)."""
    handles = []
    for path, module in modules:
        def enter(mod, args, path=path):
            tracer.module_stack.append((path, mod))

        def leave(mod, args, output):
            tracer.module_stack.pop()

        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave, always_call=True))
    return handles


def run_traced(model, call, args, reference=None):
    """Trace ``call(*args)`` without gradients; returns a ``Capture``. The probe passes the exported
    ``Capture`` as ``reference`` (see ``ExportTracer.vary_count``)."""
    tracer = ExportTracer(reference.counts if reference is not None else None)
    leaves = []
    _flatten(args, leaves)
    input_slots = [tracer.new_slot(t) for t in leaves]
    handles = _install_path_hooks(tracer, modules_of(model))
    try:
        with grad_mode.no_grad(), tracer:
            outputs = call(*args)
    finally:
        for handle in handles:
            handle.remove()
    return Capture(tracer, input_slots, leaves, outputs)
