"""How the hub's safetensors cache holds a checkpoint that is not only tensors: a quantized state_dict.

torchvision's quantized checkpoints hold quantized tensors (integers with a scale and zero point, or per-channel
ones), ``torch.qint8`` dtypes and ``(weight, bias)`` pairs (a quantized linear layer's ``_packed_params``),
which safetensors cannot store. ``flatten`` splits them into plain tensors (the integers; per-channel scales and
zero points under ``<key>.__scales`` and ``<key>.__zero_points``) and a JSON layout saying how to put them back,
which the cache keeps in its metadata; ``restore`` rebuilds the same state_dict, in the same key order.
"""
import json
from collections import OrderedDict

import numpy as np

import engine
from engine.quantized_tensor import QuantizedTensor

__all__ = ["LAYOUT_KEY", "flatten", "restore"]

LAYOUT_KEY = "flowvision_layout"  # the metadata entry that holds the layout (absent: a plain state_dict)
_DTYPES = {d.name: d for d in (engine.quint8, engine.qint8, engine.qint32)}


def _flatten_value(key, value, tensors):
    """Put ``value``'s tensors into ``tensors``; its layout entry, or None when safetensors cannot hold it."""
    if isinstance(value, engine.Tensor):
        tensors[key] = value
        return {"tensor": key}
    if isinstance(value, QuantizedTensor):
        tensors[key] = value.int_repr()
        entry = {"quantized": value.dtype.name, "key": key}
        if value.qscheme() is engine.per_channel_affine:
            tensors[key + ".__scales"], tensors[key + ".__zero_points"] = value._qparam_tensors()
            entry["axis"] = value.q_per_channel_axis()
        else:
            entry.update(scale=value.q_scale(), zero_point=value.q_zero_point())
        return entry
    if value is None:
        return {"none": True}
    if isinstance(value, engine.dtype) and value.name in _DTYPES:
        return {"dtype": value.name}
    if isinstance(value, tuple):
        items = [_flatten_value(f"{key}.{i}", item, tensors) for i, item in enumerate(value)]
        return None if None in items else {"tuple": items}
    return None


def flatten(state_dict):
    """(tensors, layout JSON) for a state_dict of tensors, quantized tensors, quantized dtypes and tuples of them;
    None when it holds anything else, or is only tensors (then it is stored as it is)."""
    if not isinstance(state_dict, dict) or not all(isinstance(k, str) for k in state_dict):
        return None
    tensors, layout = {}, []
    for key, value in state_dict.items():
        entry = _flatten_value(key, value, tensors)
        if entry is None:
            return None
        layout.append([key, entry])
    if all(entry == {"tensor": key} for key, entry in layout):
        return None
    return tensors, json.dumps(layout)


def _restore_value(entry, tensors):
    if "tensor" in entry:
        return tensors[entry["tensor"]]
    if "none" in entry:
        return None
    if "dtype" in entry:
        return _DTYPES[entry["dtype"]]
    if "tuple" in entry:
        return tuple(_restore_value(item, tensors) for item in entry["tuple"])
    return _restore_quantized(entry, tensors)


def _restore_quantized(entry, tensors):
    """A quantized tensor from its integers (``entry["key"]``) and quantization parameters."""
    key, dtype = entry["key"], _DTYPES[entry["quantized"]]
    data = np.asarray(tensors[key]._data)
    if "axis" in entry:
        return QuantizedTensor(data, dtype, scales=tensors[key + ".__scales"]._data,
                               zero_points=tensors[key + ".__zero_points"]._data, axis=entry["axis"])
    return QuantizedTensor(data, dtype, entry["scale"], entry["zero_point"])


def restore(tensors, layout):
    """The state_dict ``flatten`` split into ``tensors`` and ``layout`` (raises ValueError on a broken layout)."""
    try:
        return OrderedDict((key, _restore_value(entry, tensors)) for key, entry in json.loads(layout))
    except (KeyError, TypeError, json.JSONDecodeError) as e:
        raise ValueError(f"the cache's layout does not fit its tensors: {e}") from None
