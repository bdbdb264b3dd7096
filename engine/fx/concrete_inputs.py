"""``PH`` and structured ``concrete_args``: a concrete argument may be a list / tuple / dict whose leaves are
``PH`` (an input) or fixed values; every leaf becomes a placeholder ``<name>_1``, ``<name>_2``... and the
generated ``forward`` keeps the original signature, flattening the structured arguments into those placeholders
first, and returns a flat list of outputs rebuilt into the traced structure (torch.fx does this with its pytree
code generator)."""
from .codegen import CodeGen


class PHBase:
    """Marks an input leaf inside a structured ``concrete_args`` value; subclass to carry attributes onto the
    placeholder's proxy."""

    def __repr__(self):
        return "PH"


PH = PHBase()


def is_container(value):
    """Whether ``value`` is a structure flattened leaf by leaf (lists, tuples, named tuples, dicts)."""
    return isinstance(value, (list, tuple, dict))


def tree_map(fn, value):
    """``value`` with ``fn`` applied to each leaf, in flattening order (containers rebuilt)."""
    if isinstance(value, dict):
        return type(value)((k, tree_map(fn, v)) for k, v in value.items())
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(tree_map(fn, v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(tree_map(fn, v) for v in value)
    return fn(value)


def spec_of(value):
    """The structure of ``value`` with leaves replaced by None: what ``flatten_spec`` checks inputs against."""
    return tree_map(lambda leaf: None, value)


def flatten_spec(values, spec):
    """The leaves of ``values`` laid out as ``spec`` says (a leaf of ``spec`` takes a whole value)."""
    if spec is None:
        return [values]
    if isinstance(spec, dict):
        return [leaf for k, s in spec.items() for leaf in flatten_spec(values[k], s)]
    if len(values) != len(spec):
        raise RuntimeError(f"input has {len(values)} items where the traced structure had {len(spec)}")
    return [leaf for v, s in zip(values, spec) for leaf in flatten_spec(v, s)]


def unflatten_spec(leaves, spec):
    """Inverse of ``flatten_spec``: the structure ``spec`` with its leaves taken from ``leaves`` in order."""
    it = iter(leaves)
    return tree_map(lambda leaf: next(it), spec) if spec is not None else next(it)


class FlattenInputsCodeGen(CodeGen):
    """``def forward(self, <original parameters>):`` followed by the flattening of the inputs into the graph's
    placeholders, and a return that rebuilds the output structure from the graph's flat output list;
    ``process_inputs`` / ``process_outputs`` do the same for an ``Interpreter``."""

    def __init__(self, orig_args, in_spec):
        self.orig_args = list(orig_args)
        self.in_spec = in_spec
        self.out_spec = None

    def process_inputs(self, *args):
        return tuple(flatten_spec(list(args), self.in_spec))

    def process_outputs(self, outputs):
        return unflatten_spec(outputs, self.out_spec)

    def additional_globals(self):
        return [("_fx_flatten_spec", flatten_spec), ("_fx_in_spec", self.in_spec),
                ("_fx_unflatten_spec", unflatten_spec), ("_fx_out_spec", self.out_spec)]

    def generate_output(self, output_args):
        return f"return _fx_unflatten_spec({self._emit.arg(output_args)}, _fx_out_spec)"

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        names = [p.split(" = ")[0] for p in free_vars]
        head = super().gen_fn_def(self.orig_args, maybe_return_annotation)
        return (f"{head}\n    {', '.join(names)}, = _fx_flatten_spec([{', '.join(self.orig_args)}], "
                "_fx_in_spec)")
