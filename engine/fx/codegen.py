"""Python source for a ``Graph``: one statement per node, operators written as Python operators, engine functions
by their public path (``engine.flatten``), other callables and constants as globals of the generated module; a
value is dropped (``x = None``) right after its last use, so intermediate tensors are freed as in eager mode."""
import builtins
import math
import operator
import re
import sys
from dataclasses import dataclass

from .naming import Namespace
from .node import Node

_BINARY = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.floordiv: "//",
           operator.truediv: "/", operator.mod: "%", operator.pow: "**", operator.lshift: "<<",
           operator.rshift: ">>", operator.and_: "&", operator.or_: "|", operator.xor: "^",
           operator.matmul: "@", operator.eq: "==", operator.ne: "!=", operator.lt: "<", operator.gt: ">",
           operator.le: "<=", operator.ge: ">="}
_UNARY = {operator.pos: "+", operator.neg: "-", operator.invert: "~"}

#: public dotted paths (``engine.nn.functional.relu``) of the engine functions a trace records, by ``id``;
#: filled by ``patching.py`` when it wraps them
PUBLIC_PATHS = {}


@dataclass
class PythonCode:
    """Generated source of ``forward`` and the globals it runs with."""
    src: str
    globals: dict


class _Emitter:
    def __init__(self, graph):
        import engine
        self.namespace = Namespace()
        for node in graph.nodes:
            self.namespace.create_name(node.name, node)
        self.globals = {"engine": engine, "inf": math.inf, "nan": math.nan}
        self._global_names = {}

    def global_name(self, obj, hint):
        """The name generated code uses for ``obj``: a builtin's own name, else a fresh global."""
        name = getattr(obj, "__name__", None)
        if isinstance(name, str) and getattr(builtins, name, None) is obj:
            return name
        if id(obj) in PUBLIC_PATHS:
            return PUBLIC_PATHS[id(obj)]
        if getattr(obj, "__module__", None) == "_operator" and id(obj) not in self._global_names:
            gname = self.namespace.create_name(f"_operator_{name}", None)  # torch's global for ``operator.abs``
            self.globals[gname] = obj
            self._global_names[id(obj)] = gname
        if id(obj) in self._global_names:
            return self._global_names[id(obj)]
        path = _importable_path(obj)
        if path is not None:  # ``math.sqrt``: a new trace of the code finds what wrap/autowrap patched there
            module_name, qualname = path
            if module_name not in self._global_names:
                alias = self.namespace.create_name(module_name.replace(".", "_"), None)
                self.globals[alias] = sys.modules[module_name]
                self._global_names[module_name] = alias
            return f"{self._global_names[module_name]}.{qualname}"
        if id(obj) not in self._global_names:
            gname = self.namespace.create_name(f"_{hint}", None)
            self.globals[gname] = obj
            self._global_names[id(obj)] = gname
        return self._global_names[id(obj)]

    def arg(self, a):
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            items = [self.arg(x) for x in a]
            if hasattr(a, "_fields"):
                return f"{self.global_name(type(a), type(a).__name__)}({', '.join(items)})"
            return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        if isinstance(a, list):
            return f"[{', '.join(self.arg(x) for x in a)}]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{self.arg(k)}: {self.arg(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.arg(a.start)}, {self.arg(a.stop)}, {self.arg(a.step)})"
        if a is None or a is Ellipsis or type(a) in (bool, int, str):
            return repr(a)
        if type(a) in (float, complex) and not (math.isinf(abs(a)) or a != a):
            return repr(a)
        if type(a) is float:
            return "nan" if a != a else ("inf" if a > 0 else "-inf")
        return self._engine_constant(a) or self.global_name(a, type(a).__name__.lower())

    def _engine_constant(self, a):
        """``engine.float32``, ``engine.channels_last``, ``device(type='cpu')``: how torch writes its dtypes,
        layouts and devices in generated code (None for other values)."""
        import engine
        if isinstance(a, engine.device):
            self.globals["device"] = engine.device
            return repr(a)
        text = repr(a) if isinstance(a, (engine.dtype, engine.memory_format, engine.layout)) else ""
        if text.startswith("engine.") and getattr(engine, text[len("engine."):], None) is a:
            return text
        return None

    def call_args(self, args, kwargs):
        parts = [self.arg(a) for a in args] + [f"{k} = {self.arg(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)

    def expression(self, node, root):
        op, target, args, kwargs = node.op, node.target, node.args, node.kwargs
        if op == "get_attr":
            return attribute_path(root, target)
        if op == "call_module":
            return f"{attribute_path(root, target)}({self.call_args(args, kwargs)})"
        if op == "call_method":
            return f"{self.arg(args[0])}.{target}({self.call_args(args[1:], kwargs)})"
        if not kwargs:
            if target in _BINARY and len(args) == 2:
                return f"{self.arg(args[0])} {_BINARY[target]} {self.arg(args[1])}"
            if target in _UNARY and len(args) == 1:
                return f"{_UNARY[target]}{self.arg(args[0])}"
            if target is operator.getitem and len(args) == 2:
                return f"{self.arg(args[0])}[{self.arg(args[1])}]"
            if (target is getattr and len(args) == 2 and isinstance(args[1], str) and args[1].isidentifier()
                    and not args[1].startswith("__")):
                return f"{self.arg(args[0])}.{args[1]}"
        hint = getattr(target, "__name__", type(target).__name__)
        return f"{self.global_name(target, hint)}({self.call_args(args, kwargs)})"


def _importable_path(obj):
    """(module name, qualified name) by which ``obj`` is reachable from its module, or None."""
    module_name, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str) or module_name not in sys.modules:
        return None
    found = sys.modules[module_name]
    for atom in qualname.split("."):
        if not atom.isidentifier():
            return None
        found = getattr(found, atom, None)
    return (module_name, qualname) if found is obj else None


def attribute_path(root, target):
    """``self.layer1[0]``-free access to a dotted attribute: ``getattr(self.layer1, "0").conv1``."""
    expr = root
    for atom in target.split("."):
        expr = f"{expr}.{atom}" if atom.isidentifier() else f'getattr({expr}, "{atom}")'
    return expr


class CodeGen:
    """How a ``Graph`` becomes Python (torch.fx's ``CodeGen``): subclass and install with ``Graph.set_codegen``
    to change the signature (``gen_fn_def``), the return statement (``generate_output``), or the values that go
    in and out (``process_inputs`` / ``process_outputs``, applied by whoever runs the code)."""

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        """The ``def forward(self, ...):`` line; ``free_vars`` are the placeholders' parameters."""
        if not free_vars or free_vars[0] != "self":
            free_vars = ["self"] + list(free_vars)
        return f"def forward({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args):
        """The statement returning ``output_args`` (the output node's argument)."""
        return f"return {self._emit.arg(output_args)}"

    def process_inputs(self, *args):
        """The inputs the generated code receives, given the caller's."""
        return args

    def process_outputs(self, outputs):
        """The caller's result, given what the generated code returned."""
        return outputs

    def additional_globals(self):
        """(name, object) pairs the generated code needs besides those of its nodes."""
        return []

    def _gen_python_code(self, graph, root="self", verbose=False, annotate=(False, False)):
        emit = self._emit = _Emitter(graph)
        for name, obj in self.additional_globals():
            emit.globals[name] = obj
        nodes = list(graph.nodes)
        dies_at, seen = {}, set()  # as torch: walk backwards; a value dies at its last user, in its arg order
        for node in reversed(nodes):
            for inp in node.all_input_nodes:
                if id(inp) not in seen:
                    seen.add(id(inp))
                    if node.op != "output":
                        dies_at.setdefault(id(node), []).append(inp.name)
        params, body, summary = [], [], None
        for node in nodes:
            annotation = _meta_annotation(node, *annotate) if verbose else ""
            if verbose and node.op not in ("placeholder", "output") and _stack_summary(node) != summary:
                summary = _stack_summary(node)
                body += ["", f"# {summary}"]
            if node.op == "placeholder":
                name = node.target if node.target.startswith("*") else node.name
                default = f" = {emit.arg(node.args[0])}" if node.args else ""
                params.append(f"{name}{annotation}{default}")
                if name.lstrip("*") != node.name:  # ``*args`` is the value ``_args`` in the body
                    body.append(f"{node.name} = {name.lstrip('*')}")
                continue
            if node.op == "output":
                body.append(self.generate_output(node.args[0]))
                continue
            line = f"{node.name}{annotation} = {emit.expression(node, root)}"
            dead = dies_at.get(id(node), [])
            if not node.users:
                dead = dead + [node.name]
            if dead:
                line += f";  {' = '.join(dead)} = None"
            body.append(line)
        while body and not body[0]:
            body.pop(0)
        if not body:
            body.append("pass")
        prologue = self.gen_fn_def(params, "")
        code = "\n".join(f"    {line}" if line else "" for line in body + [""]) + "    "
        src = f"\n\n\n{prologue}\n{code}"
        del self._emit
        return PythonCode(src, emit.globals)


#: the short dtype names of torch's annotated printouts
_DTYPE_ABBREVIATIONS = {"bfloat16": "bf16", "float64": "f64", "float32": "f32", "float16": "f16",
                        "complex32": "c32", "complex64": "c64", "complex128": "c128", "int8": "i8", "int16": "i16",
                        "int32": "i32", "int64": "i64", "bool": "b8", "uint8": "u8", "uint16": "u16",
                        "uint32": "u32", "uint64": "u64"}


def _meta_annotation(node, include_stride=False, include_device=False):
    """``: "f32[2, 3]"`` for a node whose meta holds a tensor (``val``; with its strides and device if asked)
    or its ``tensor_meta`` (``ShapeProp``), as torch annotates its readable code; "" otherwise."""
    from ..tensor import Tensor
    value = node.meta.get("val", node.meta.get("tensor_meta", node.meta.get("example_value")))
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if not isinstance(value, Tensor) and type(value).__name__ != "TensorMetadata" or dtype is None:
        return ""
    abbreviation = _DTYPE_ABBREVIATIONS.get(str(dtype).rpartition(".")[2], str(dtype))
    extra = ""
    if isinstance(value, Tensor):
        extra += f"[{', '.join(str(s) for s in value.stride())}]" if include_stride else ""
        extra += str(value.device) if include_device else ""
    return f': "{abbreviation}[{", ".join(str(d) for d in shape)}]{extra}"'


def _stack_summary(node):
    """The comment torch's readable code puts above a run of nodes: where the user code made them."""
    lines = (node.stack_trace or "").strip().split("\n")
    for i in range(len(lines) - 2, -1, -1):
        match = re.match(r'^File "(.+)", line (\d+), in (.+)$', lines[i].strip())
        if match:
            return f"File: {match.group(1)}:{match.group(2)} in {match.group(3)}, code: {lines[i + 1].strip()}"
    return "No stacktrace found for following nodes"


def generate(graph, root="self", verbose=False, include_stride=False, include_device=False):
    """``PythonCode`` of ``def forward(self, <placeholders>)`` running ``graph``, by the graph's ``CodeGen``;
    ``verbose`` adds torch's readable-code comments and shape annotations."""
    return graph._codegen._gen_python_code(graph, root, verbose, (include_stride, include_device))
