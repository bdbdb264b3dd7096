"""Operator schemas: inferred from a function's type annotations (``infer_schema``), or parsed from torch's
schema strings (``Library.define("foo(Tensor x, int n=1) -> Tensor")``), and used to bind and check a call's
arguments as torch's dispatcher does.

A schema is kept as a ``Schema`` of ``Argument`` records; ``str(schema)`` writes torch's text
(``mylib::foo(Tensor(a0!) x, SymInt n=1) -> Tensor``).
"""
import collections.abc
import inspect
import types
import typing

import numpy as np

from .._device import device as _device_cls
from .._dtype import dtype as _dtype_cls
from ..tensor import Tensor

#: ``torch.types.Number``
Number = typing.Union[int, float, bool]


def _sequences(item):
    """The spellings of "a sequence of ``item``" that torch takes."""
    return (typing.Sequence[item], typing.List[item], collections.abc.Sequence[item], list[item])


def _param_types():
    """annotation -> schema type, for parameters (torch's table, in its order)."""
    table = {Tensor: "Tensor", typing.Optional[Tensor]: "Tensor?"}
    for seq in _sequences(Tensor):
        table[seq] = "Tensor[]"
    for seq in _sequences(typing.Optional[Tensor]):
        table[seq] = "Tensor?[]"
    for py, name in ((int, "SymInt"), (float, "float"), (bool, "bool")):
        table[py], table[typing.Optional[py]] = name, name + "?"
        for seq in _sequences(py):
            table[seq] = name + "[]"
        for seq in _sequences(py):
            table[typing.Optional[seq]] = name + "[]?"
    table[str], table[typing.Optional[str]] = "str", "str?"
    table[Number], table[typing.Optional[Number]] = "Scalar", "Scalar?"
    for seq in _sequences(Number):
        table[seq] = "Scalar[]"
    table[_dtype_cls], table[typing.Optional[_dtype_cls]] = "ScalarType", "ScalarType?"
    table[_device_cls], table[typing.Optional[_device_cls]] = "Device", "Device?"
    return table


PARAM_TYPES = _param_types()
RETURN_TYPES = {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]", list[Tensor]: "Tensor[]", int: "SymInt",
                float: "float", bool: "bool", Number: "Scalar"}
_DEFAULT_TYPES = (int, float, bool, str, _dtype_cls, _device_cls)


class Argument:
    """One parameter of a schema: its name, type text (``Tensor?``, ``SymInt[]``), default, whether it is
    keyword-only and whether the op writes into it (``Tensor(a!)``)."""

    NO_DEFAULT = inspect.Parameter.empty

    def __init__(self, name, type, default=NO_DEFAULT, kwarg_only=False, alias=None):
        self.name, self.type, self.default, self.kwarg_only, self.alias = name, type, default, kwarg_only, alias

    @property
    def is_mutable(self):
        return self.alias is not None and self.alias.endswith("!")

    @property
    def is_tensor_like(self):
        return self.type.startswith("Tensor")

    def __str__(self):
        text = self.type
        if self.alias is not None:  # Tensor(a0!)? x, Tensor(a1!)[] y
            text = f"Tensor({self.alias}){self.type[len('Tensor'):]}"
        text = f"{text} {self.name}"
        if self.default is not self.NO_DEFAULT:
            text += "=" + _default_text(self.default)
        return text


class Schema:
    """A whole schema: ``name(args) -> returns``; ``returns`` is a list of type texts."""

    def __init__(self, name, arguments, returns, overload=""):
        self.name, self.arguments, self.returns, self.overload = name, arguments, returns, overload

    def args_text(self):
        parts, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        if len(self.returns) == 1:
            rets = f"(({self.returns[0]}))" if self.returns_tuple else self.returns[0]
        else:
            rets = "(" + ", ".join(self.returns) + ")"
        return f"({', '.join(parts)}) -> {rets}"

    returns_tuple = False  # an annotated ``tuple[Tensor]``: torch writes it ``-> ((Tensor))``

    namespace = ""  # set once the schema belongs to a registered operator: ``mylib::foo(...)``

    def __str__(self):
        name = self.name + (f".{self.overload}" if self.overload else "")
        if self.namespace:
            name = f"{self.namespace}::{name}"
        return name + self.args_text()


def _default_text(value):
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value) if not isinstance(value, float) else str(value)
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, _dtype_cls):
        return value.name
    return f'"{value}"'  # a device


def _normalize(annotation):
    """``int | None`` as ``typing.Optional[int]``, so that both spellings find the table's key."""
    if isinstance(annotation, types.UnionType):
        return typing.Union[annotation.__args__]
    return annotation


def _signature(func):
    try:
        return inspect.signature(func, eval_str=True)
    except (NameError, TypeError):
        return inspect.signature(func)


def _is_tuple(annotation):
    return annotation is tuple or typing.get_origin(annotation) is tuple


def _tuple_as_list(annotation):
    """The list type torch suggests for a tuple annotation: ``list[int]`` for ``tuple[int, int]`` or
    ``tuple[int, ...]``, a list of the union of mixed item types."""
    items = typing.get_args(annotation)
    if not items:
        return list
    if len(set(items) - {Ellipsis}) == 1:
        return list[items[0]]
    return list[typing.Union[items]]


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """``torch.library.infer_schema``: the schema text of a type-annotated function, with the arguments named
    in ``mutates_args`` (or every tensor argument for ``"unknown"``) marked as written in place."""
    return str(_infer(prototype_function, mutates_args, op_name)) if op_name else \
        _infer(prototype_function, mutates_args, None).args_text()


def _infer(func, mutates_args, op_name):
    sig = _signature(func)

    def fail(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    if mutates_args != "unknown" and isinstance(mutates_args, str):
        raise ValueError("mutates_args must either be a sequence of the names of the arguments that are mutated "
                         "or the string 'unknown'. ")
    arguments, seen = [], set()
    for index, (name, p) in enumerate(sig.parameters.items()):
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            fail("We do not support positional-only args, varargs, or varkwargs.")
        if p.annotation is p.empty:
            fail(f"Parameter {name} must have a type annotation.")
        ann = _normalize(p.annotation)
        if ann not in PARAM_TYPES:
            hint = " "
            if _is_tuple(ann):
                hint = " We do not support Tuple inputs in schema. As a workaround, please try to use List instead. "
                as_list = _tuple_as_list(ann)
                hint += f"For example, {as_list}.\n\n" if as_list in PARAM_TYPES else "\n\n"
            fail(f"Parameter {name} has unsupported type {p.annotation}.{hint}The valid types are: "
                 f"{PARAM_TYPES.keys()}.")
        type_text = PARAM_TYPES[ann]
        alias = None
        if mutates_args == "unknown":
            alias = f"a{index}!" if type_text.startswith("Tensor") else None
        elif name in mutates_args:
            seen.add(name)
            if not type_text.startswith("Tensor"):
                fail(f"Parameter {name} is in mutable_args but only Tensors or collections of Tensors can be "
                     f"mutated")
            alias = f"a{index}!"
        if p.default is not p.empty and p.default is not None and not isinstance(p.default, _DEFAULT_TYPES):
            fail(f"Parameter {name} has an unsupported default value type {type(p.default)}. Please file an "
                 f"issue on GitHub so we can prioritize this.")
        arguments.append(Argument(name, type_text, p.default, p.kind == p.KEYWORD_ONLY, alias))
    if mutates_args != "unknown":
        missing = set(mutates_args) - seen
        if missing:
            fail(f"{missing} in mutates_args were not found in the custom op's signature. mutates_args should "
                 f"contain the names of all args that the custom op mutates, or just the string 'unknown' if you "
                 f"don't know.")
    returns, as_tuple = _returns(sig, fail)
    schema = Schema(op_name or "", arguments, returns)
    schema.returns_tuple = as_tuple
    return schema


def _returns(sig, fail):
    ann = sig.return_annotation
    if ann is sig.empty:
        fail("No return type annotation was provided. Please add one.")
    if ann is None or ann is type(None):
        return [], False
    ann = _normalize(ann)

    def one(a):
        if a not in RETURN_TYPES:
            fail(f"Return has unsupported type {sig.return_annotation}. The valid types are: {RETURN_TYPES}.")
        return RETURN_TYPES[a]

    if typing.get_origin(ann) is tuple:
        items = typing.get_args(ann)
        return [one(a) for a in items], len(items) == 1
    return [one(ann)], False


# --- parsing torch's schema text -------------------------------------------------------------------------------

def parse_schema(text):
    """A ``Schema`` from torch's text: ``name.overload(Type name=default, *, ...) -> Ret | (Ret, ...)``."""
    text = text.strip()
    try:
        head, rest = text.split("(", 1)
        params, rets = rest.rsplit("->", 1)
        params = params.strip()
        if not params.endswith(")"):
            raise ValueError
        params = params[:-1]
    except ValueError:
        raise RuntimeError(f"Schema parsing failed: expected 'name(args) -> returns' but got: {text}") from None
    name, _, overload = head.strip().partition(".")
    arguments, kwarg_only = [], False
    for part in _split_top(params):
        if part == "*":
            kwarg_only = True
            continue
        arguments.append(_parse_argument(part, kwarg_only, text))
    rets = rets.strip()
    as_tuple = rets.startswith("(")
    if as_tuple:
        rets = rets[1:-1]
    returns = [_strip_alias(r.split()[0]) for r in _split_top(rets)]
    return Schema(name, arguments, returns, overload)


def _split_top(text):
    """Comma-separated parts outside parentheses and brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    if last:
        parts.append(last)
    return parts


def _strip_alias(type_text):
    """``Tensor(a!)[]`` -> ``Tensor[]``; ``int`` -> ``SymInt`` (torch's custom ops spell ints so)."""
    if "(" in type_text:
        type_text = type_text[:type_text.index("(")] + type_text[type_text.index(")") + 1:]
    return type_text


def _alias_of(type_text):
    if "(" in type_text:
        return type_text[type_text.index("(") + 1:type_text.index(")")]
    return None


def _parse_argument(part, kwarg_only, text):
    decl, eq, default_text = part.partition("=")
    pieces = decl.split()
    if len(pieces) != 2:
        raise RuntimeError(f"Schema parsing failed: cannot read argument {part!r} in: {text}")
    type_text, name = pieces
    default = _parse_default(default_text.strip()) if eq else Argument.NO_DEFAULT
    return Argument(name, _strip_alias(type_text), default, kwarg_only, _alias_of(type_text))


def _parse_default(text):
    if text == "None":
        return None
    if text in ("True", "False"):
        return text == "True"
    if text.startswith('"') or text.startswith("'"):
        return text[1:-1]
    if text.startswith("["):
        return [_parse_default(t) for t in _split_top(text[1:-1])]
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text  # a dtype or layout name, kept as written


# --- binding a call ---------------------------------------------------------------------------------------------

def _type_name(value):
    return type(value).__name__


class _Mismatch(Exception):
    """A value that does not fit its schema type."""


_SCALAR_LEAVES = (int, float, bool, np.integer, np.floating, np.bool_)


def _number(value, kinds):
    """``value`` as a Python number when it is one of ``kinds`` (Python or numpy numbers, one-element
    tensors as ``.item()``), else _Mismatch."""
    if isinstance(value, Tensor) and value.numel() == 1 and not value.is_complex():
        value = value.item()
    if not isinstance(value, kinds):
        raise _Mismatch
    return value


def _convert(type_text, value):
    """``value`` as the kernel receives it for the schema type, as the dispatcher converts it: an ``int``
    takes booleans, numpy integers and integral one-element tensors; a ``float`` any real number (Python's,
    numpy's, a tensor's item); a ``bool`` any real number, as its truth; a list type any sequence (tuple, range,
    ``Size``; a 1-d tensor for ``int[]``) of such items, as a list. _Mismatch when it does not fit."""
    if type_text.endswith("?"):
        return None if value is None else _convert(type_text[:-1], value)
    if type_text.endswith("[]"):
        item = type_text[:-2]
        if item in ("SymInt", "int") and isinstance(value, int) and not isinstance(value, bool):
            return value
        if item in ("SymInt", "int") and isinstance(value, Tensor) and value.dim() == 1:
            value = value.tolist()
        if not isinstance(value, (list, tuple, range)):
            raise _Mismatch
        return [_convert(item, v) for v in value]
    if type_text == "Tensor":
        if not isinstance(value, Tensor):
            raise _Mismatch
        return value
    if type_text in ("SymInt", "int"):
        if isinstance(value, Tensor) and value.is_floating_point():
            raise _Mismatch
        return int(_number(value, (int, np.integer, np.bool_)))
    if type_text == "float":
        return float(_number(value, _SCALAR_LEAVES))
    if type_text == "bool":
        return bool(_number(value, _SCALAR_LEAVES))
    if type_text == "str":
        if not isinstance(value, str):
            raise _Mismatch
        return value
    if type_text == "Scalar":
        if not isinstance(value, (int, float, bool, complex)):
            raise _Mismatch
        return value
    if type_text == "ScalarType":
        if not isinstance(value, _dtype_cls):
            raise _Mismatch
        return value
    if type_text == "Device":
        if not isinstance(value, (_device_cls, str, int)):
            raise _Mismatch
        return value
    return value  # types the engine does not check (Layout, MemoryFormat, ...)


def bind(schema, qualname, args, kwargs):
    """The call's values in schema order, defaults filled in; torch's errors for too many, missing, unknown or
    mistyped arguments (one line: the declaration follows the message)."""
    decl = f"Declaration: {qualname}{schema.args_text()}"
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) > len(positional):
        raise RuntimeError(f"{qualname}() expected at most {len(positional)} argument(s) but received {len(args)} "
                           f"argument(s). {decl}")
    names = {a.name for a in schema.arguments}
    for key in kwargs:
        if key not in names:
            raise RuntimeError(f"{qualname}() got an unexpected keyword argument '{key}'. {decl}")
    values = []
    for i, a in enumerate(schema.arguments):
        if i < len(args) and not a.kwarg_only:
            if a.name in kwargs:
                raise RuntimeError(f"{qualname}() got multiple values for argument '{a.name}'. {decl}")
            value = args[i]
        elif a.name in kwargs:
            value = kwargs[a.name]
        elif a.default is not Argument.NO_DEFAULT:
            value = a.default
        else:
            raise RuntimeError(f"{qualname}() is missing value for argument '{a.name}'. {decl}")
        try:
            values.append(_convert(a.type, value))
        except _Mismatch:
            expected = a.type.replace("SymInt", "int")
            raise RuntimeError(f"{qualname}() Expected a value of type '{expected}' for argument '{a.name}' but "
                               f"instead found type '{_type_name(value)}'. Position: {i} Value: {value!r} "
                               f"{decl}") from None
    return values


def split_call(schema, values):
    """Values in schema order back into (args, kwargs): the positional ones positionally, keyword-only ones by
    name (how kernels, fake functions and setup_context receive them)."""
    args = [v for a, v in zip(schema.arguments, values) if not a.kwarg_only]
    kwargs = {a.name: v for a, v in zip(schema.arguments, values) if a.kwarg_only}
    return args, kwargs
