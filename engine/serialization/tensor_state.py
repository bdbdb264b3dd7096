"""The globals of torch's weights-only allowlist beyond plain tensors: tensors and parameters that carry Python
attributes (``_rebuild_from_type_v2``, ``_rebuild_parameter_with_state``), ``collections.Counter`` and
``bytearray``; and one clear refusal for the tensors torch can save that engine cannot represent.

Each stands in for torch's function with the same arguments, checked, so that a checkpoint can build only
what torch's own weights-only loader would, and nothing here can run code or allocate what the file does not hold.
"""
import collections

from .errors import CheckpointError

__all__ = ["TensorType", "TENSOR", "PARAMETER", "UnsupportedDtype", "UNSUPPORTED_DTYPES", "rebuild_from_type_v2",
           "rebuild_parameter_with_state", "make_counter", "make_bytearray", "refuse"]

# torch dtypes engine has no counterpart for: loaded as markers, refused when a tensor is of one
UNSUPPORTED_DTYPES = ("complex32", "bcomplex32", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                      "float8_e8m0fnu", "float4_e2m1fn_x2", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
                      "quint4x2", "quint2x4", *(f"int{n}" for n in range(1, 8)), *(f"uint{n}" for n in range(1, 8)))


class TensorType:
    """What a pickled ``torch.Tensor`` or ``torch.nn.Parameter`` class stands for (``_rebuild_from_type_v2``'s
    ``new_type``)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


TENSOR = TensorType("torch.Tensor")
PARAMETER = TensorType("torch.nn.Parameter")


class UnsupportedDtype:
    """A torch dtype engine lacks, named in a checkpoint: a value of its own, refused as a tensor's dtype."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


def _set_state(tensor, state):
    """``tensor`` with the attributes ``state`` names (a dict, or torch's (dict, slots dict) pair) set on it.

    Only new attributes may be set: one the tensor already has (``grad``, ``shape``, engine's own fields) is
    refused, so a checkpoint cannot replace what makes the tensor work."""
    parts = state if isinstance(state, tuple) else (state, None)
    if len(parts) != 2 or not all(part is None or isinstance(part, dict) for part in parts):
        raise CheckpointError(f"invalid serialized tensor state {state!r:.80}")
    for part in parts:
        for name, value in (part or {}).items():
            if not isinstance(name, str) or not name.isidentifier() or hasattr(tensor, name):
                raise CheckpointError(f"refusing to set the attribute {name!r:.40} of a loaded tensor: only new "
                                      "attributes may be set")
            setattr(tensor, name, value)
    return tensor


def rebuild_from_type_v2(func, new_type, args, state):
    """``torch._tensor._rebuild_from_type_v2``: the tensor ``func(*args)`` (a rebuild function of the allowlist),
    as a ``new_type`` (a tensor or a parameter), with the Python attributes in ``state``."""
    from ..nn.parameter import Parameter
    from ..tensor import Tensor

    if not isinstance(new_type, TensorType) or not callable(func) or not isinstance(args, tuple):
        raise CheckpointError(f"unsupported tensor type {new_type!r:.60}: only torch.Tensor and "
                              "torch.nn.Parameter are loaded")
    tensor = func(*args)
    if tensor is None:  # scan pass of the legacy reader
        return None
    if not isinstance(tensor, Tensor):
        raise CheckpointError(f"_rebuild_from_type_v2 built a {type(tensor).__name__}, not a tensor")
    if new_type is PARAMETER and not isinstance(tensor, Parameter):
        tensor = Parameter(tensor, requires_grad=tensor.requires_grad)
    return _set_state(tensor, state)


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    """``torch._utils._rebuild_parameter_with_state``: a parameter with the Python attributes in ``state``."""
    from ..nn.parameter import Parameter
    from ..tensor import Tensor

    if data is None:
        return None
    if not isinstance(data, Tensor):
        raise CheckpointError(f"a parameter's data is a {type(data).__name__}, not a tensor")
    return _set_state(Parameter(data, requires_grad=bool(requires_grad)), state)


def make_counter(counts=None):
    """``collections.Counter``, as pickled: built from a dict of counts."""
    if not isinstance(counts, (dict, type(None))):
        raise CheckpointError(f"a Counter is pickled from a dict, got {type(counts).__name__}")
    return collections.Counter(counts or {})


def make_bytearray(content=b""):
    """``bytearray``, as pickled: from bytes (never from a length, which would allocate what the file names)."""
    if not isinstance(content, bytes):
        raise CheckpointError(f"a bytearray is pickled from bytes, got {type(content).__name__}")
    return bytearray(content)


def refuse(what):
    """A stand-in for a torch global that builds something engine has no counterpart for: it raises one clear
    error when the checkpoint uses it."""
    def refused(*args, **kwargs):
        raise CheckpointError(f"the checkpoint holds {what}, which engine does not support")
    return refused
