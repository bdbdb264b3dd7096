"""``engine.onnx.export``: trace a model with ``nn.Graph``'s tracer and write the ops as an ONNX model.

As ``torch.onnx.export`` (the TorchScript exporter's signature): ``model`` is an ``nn.Module`` (run as
``model(*args)``) or an ``nn.Graph`` (its ``build``), traced without gradients in eval mode (or as
``training`` says); ``args`` is a tensor or a tuple of arguments (tensors may sit in lists, tuples and
dicts); ``f`` a path or a binary file object. The model is traced twice: once on ``args`` and once on a
probe with other values and, along every axis named in ``dynamic_axes``, another size (see ``variation``),
so that sizes and parameters that follow the input are written as runtime values and input-dependent
control flow is refused instead of being frozen into the file.
"""
import contextlib
import os

import numpy as np

from ..nn.graph.graph import _flatten, _unflatten
from ..tensor import Tensor, _new
from .capture import modules_of, run_traced
from .conversion import Conversion
from .errors import ExportError, missing_onnx
from .modes import TrainingMode
from .onnx_graph import OnnxGraph
from .variation import Variation

MIN_OPSET = 13
MAX_OPSET = 21


def export(model, args, f, input_names=None, output_names=None, dynamic_axes=None, opset_version=17,
           do_constant_folding=True, verbose=False, *, training=TrainingMode.EVAL, export_params=True,
           keep_initializers_as_inputs=False, dynamo=False):
    """Write ``model`` run on ``args`` to ``f`` as an ONNX model; see the module docstring.

    ``dynamic_axes`` maps input and output names to the axes whose size may change, as a list of axes or
    a dict {axis: name}. ``do_constant_folding`` computes ops on constants at export time and folds eval
    BatchNorms into the preceding convolutions. ``training`` (a ``TrainingMode``) traces the modules in eval
    mode (EVAL), in training mode (TRAINING: batch statistics, random dropout in the file) or as they are
    (PRESERVE); the model's buffers and modes are restored afterwards. With ``export_params=False`` the
    parameters and buffers are graph inputs named by their state_dict keys instead of stored weights (nothing
    computed from them is folded); ``keep_initializers_as_inputs`` also lists the stored weights as graph
    inputs (which a runtime may then override). ``dynamo`` is accepted for torch's signature: the export is
    always this tracer's.
    """
    onnx = _import_onnx()
    opset = _check_opset(opset_version)
    mode = _check_training(training)
    args = args if isinstance(args, tuple) else (args,)
    call = _callable(model)
    with _trace_mode(model, mode):
        capture = run_traced(model, call, args)
        input_names = _names(input_names, len(capture.inputs), "input")
        output_names = _names(output_names, len(capture.output_leaves), "output")
        axes_in, axes_out = _dynamic_axes(dynamic_axes, input_names, output_names, capture)
        probe, what = _run_probe(model, call, args, axes_in, input_names, capture)
    variation = Variation(capture, probe, what)
    _check_untraced_outputs(capture, probe, output_names, what)
    graph = OnnxGraph(onnx, opset, _tensor_names(model))
    for name in input_names + output_names:
        graph.reserve(name)
    conversion = Conversion(graph, capture, variation, do_constant_folding and export_params, export_params)
    conversion.run(input_names)
    proto = _model(onnx, graph, conversion, input_names, output_names, axes_in, axes_out)
    _place_weights(onnx, proto.graph, graph.tensor_names, export_params, keep_initializers_as_inputs)
    _write(proto.SerializeToString(), f)
    if verbose:
        print(onnx.printer.to_text(proto.graph))


def _import_onnx():
    try:
        import onnx
        import onnx.numpy_helper  # noqa: F401  (submodules: numpy_helper for OnnxGraph, printer for verbose)
        import onnx.printer  # noqa: F401
    except ImportError:
        raise missing_onnx() from None
    return onnx


def _check_opset(opset):
    if isinstance(opset, bool) or not isinstance(opset, int) or not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"engine.onnx.export: opset_version must be an integer from {MIN_OPSET} to {MAX_OPSET}, "
                         f"got {opset!r}")
    return opset


def _callable(model):
    from ..nn.graph import Graph
    from ..nn.modules.module import Module
    if isinstance(model, Graph):
        return model.build
    if isinstance(model, Module):
        return model
    raise TypeError(f"engine.onnx.export: model must be an nn.Module or an nn.Graph, got {type(model).__name__}")


def _check_training(training):
    try:
        return TrainingMode(training)
    except ValueError:
        raise ValueError(f"engine.onnx.export: training must be a TrainingMode (EVAL, PRESERVE or TRAINING), got "
                         f"{training!r}") from None


@contextlib.contextmanager
def _trace_mode(model, mode):
    """Trace in eval mode (torch's default ``TrainingMode.EVAL``), training mode or the modules' own modes;
    restore the modes, and the buffers that training-mode tracing updates (BatchNorm's running statistics),
    after."""
    modules = [m for _, m in modules_of(model)]
    modes = [m.training for m in modules]
    buffers = [(m, key, t, t._data.copy()) for m in modules for key, t in m._buffers.items() if isinstance(t, Tensor)]
    if mode is not TrainingMode.PRESERVE:
        for m in modules:
            m.training = mode is TrainingMode.TRAINING
    try:
        yield
    finally:
        for m, training in zip(modules, modes):
            m.training = training
        for m, key, t, data in buffers:
            m._buffers[key] = t
            if t._data.shape == data.shape and t._data.dtype == data.dtype:
                t._data[...] = data
            else:
                t._data = data


def _names(names, count, default):
    """``names`` checked against ``count`` values, padded with 'input_3'-style names (a lone one: 'input')."""
    names = list(names or [])
    if len(names) > count:
        raise ValueError(f"engine.onnx.export: {len(names)} {default}_names given for {count} {default} tensors")
    if len(set(names)) != len(names):
        raise ValueError(f"engine.onnx.export: {default}_names repeat a name: {names}")
    if count == 1 and not names:
        return [default]
    return names + [f"{default}_{k}" for k in range(len(names), count)]


def _dynamic_axes(dynamic_axes, input_names, output_names, capture):
    """({input index: {axis: name}}, {output index: {axis: name}}) from torch's ``dynamic_axes`` forms."""
    axes_in, axes_out = {}, {}
    for name, axes in (dynamic_axes or {}).items():
        if name in input_names:
            index, target, rank = input_names.index(name), axes_in, len(capture.inputs[input_names.index(name)].shape)
        elif name in output_names:
            index, target = output_names.index(name), axes_out
            slot = capture.output_slots[index]
            rank = len(capture.shapes[slot]) if slot is not None else len(capture.output_leaves[index].shape)
        else:
            raise ValueError(f"engine.onnx.export: dynamic_axes names '{name}', which is neither an input nor an "
                             f"output (inputs {input_names}, outputs {output_names})")
        named = dict(axes) if isinstance(axes, dict) else {int(a): f"{name}_dynamic_axes_{int(a) + 1}" for a in axes}
        for axis in named:
            if not -rank <= axis < rank:
                raise ValueError(f"engine.onnx.export: dynamic axis {axis} of '{name}' is out of range for its "
                                 f"{rank} dimensions")
        target[index] = {a % rank: str(n) for a, n in named.items()}
    return axes_in, axes_out


def _probe(args, axes_in, input_names, perturb, odd=1):
    """The arguments of the second trace: new values (seeded: random in each input's range, or with ``perturb``
    the input's own values moved by up to 1%) and, along the dynamic axes, new sizes (+1 for axis 0, more for
    others, equal for axes sharing a name). With ``odd`` every size changes parity, so that a size the model
    derives by a rounded division (chunk's ceil(w / 2)) cannot pass for an exact multiple or divisor."""
    leaves = []
    spec = _flatten(args, leaves)
    rng = np.random.default_rng(0)
    deltas = {}
    changes = []
    probe = []
    for k, t in enumerate(leaves):
        shape = list(t.shape)
        for axis, name in sorted(axes_in.get(k, {}).items()):
            delta = deltas.setdefault(name, 1 if axis == 0 else 16 * (axis + 1) + odd)
            shape[axis] += delta
        if shape != list(t.shape):
            changes.append(f"'{input_names[k]}' of size {shape}")
        probe.append(_new(_new_values(rng, t._data, shape, perturb)))
    what = "other input values" + (f" and sizes ({', '.join(changes)})" if changes else "")
    return _unflatten(spec, probe), what


def _new_values(rng, array, shape, perturb):
    """Values of ``array``'s dtype for the probe with the given shape: floats uniform in the range of the array's
    finite values (or, with ``perturb``, its values (tiled to the shape) times 1 + U(-0.01, 0.01)), integers and
    booleans random."""
    host = np.asarray(array)
    finite = host[np.isfinite(host)] if host.dtype.kind == "f" else host  # NaN and infinities bound no range
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if host.dtype == np.bool_:
        values = rng.random(shape) < 0.5
    elif host.dtype.kind in "iu":
        values = rng.integers(int(lo), int(hi) + 1, size=shape)
    elif perturb:
        tiled = np.resize(host, shape) if host.size else np.zeros(shape, host.dtype)
        values = tiled * (1 + rng.uniform(-0.01, 0.01, size=shape))
    else:
        if lo == hi:
            lo, hi = lo - 1.0, hi + 1.0
        values = rng.uniform(lo, hi, size=shape)
    values = values.astype(host.dtype)
    if not isinstance(array, np.ndarray):
        from .._device import device_of, move
        values = move(values, device_of(array))
    return values


def _run_probe(model, call, args, axes_in, input_names, capture):
    """The probe's capture and a description of what changed: fresh random values first; where the model
    refuses those (inputs with structure, such as box coordinates or indices), its own values perturbed; sizes of
    the other parity first, the same parity where the model refuses those (it needs even heights)."""
    for odd, perturb in ((1, False), (1, True), (0, False), (0, True)):
        probe_args, what = _probe(args, axes_in, input_names, perturb, odd)
        try:
            return run_traced(model, call, probe_args, capture), what
        except ExportError:
            raise
        except Exception as e:
            failure = e
    message = str(failure).splitlines()[0] if str(failure) else type(failure).__name__
    advice = "; drop those dynamic axes" if axes_in else ""
    raise ExportError(f"engine.onnx.export: the model fails on {what} ({type(failure).__name__}: {message}){advice}")


def _check_untraced_outputs(capture, probe, output_names, what):
    """An output no traced op computed is written as a constant: refuse one whose value follows the input
    (computed from raw arrays, outside the ops a trace records)."""
    for k, slot in enumerate(capture.output_slots):
        if slot is not None:
            continue
        a, b = capture.output_leaves[k]._data, probe.output_leaves[k]._data
        if a.shape != b.shape or not np.array_equal(np.asarray(a), np.asarray(b)):
            raise ExportError(f"engine.onnx.export: output '{output_names[k]}' is computed outside the ops a trace "
                              f"records (from raw arrays) and differs for {what}; compute it with engine ops")


def _tensor_names(model):
    """id(array) -> state_dict key of every parameter and buffer (the initializers' names)."""
    names = {}
    for prefix, module in modules_of(model):
        for key, t in list(module._parameters.items()) + list(module._buffers.items()):
            if isinstance(t, Tensor):
                names.setdefault(id(t._data), f"{prefix}.{key}" if prefix else key)
    return names


def _model(onnx, graph, conversion, input_names, output_names, axes_in, axes_out):
    """The ModelProto: inputs and outputs typed with their traced shapes (dynamic dims named)."""
    capture, variation = conversion.capture, conversion.variation
    helper = onnx.helper
    dim_names = {}
    inputs = []
    for k, (name, slot) in enumerate(zip(input_names, capture.input_slots)):
        dims = list(capture.shapes[slot])
        for axis, dim_name in axes_in.get(k, {}).items():
            dim_names[(dims[axis], variation.b.shapes[slot][axis])] = dim_name
            dims[axis] = dim_name
        inputs.append(helper.make_tensor_value_info(name, graph.elem_type(capture.dtypes[slot]), dims))
    outputs = []
    written = set()
    for k, (name, slot) in enumerate(zip(output_names, capture.output_slots)):
        source = conversion.output_name(slot) if slot is not None else graph.constant(
            np.asarray(capture.output_leaves[k]._data), hint="constant_output")
        if slot is not None and source not in written and graph.produced(source) and source not in input_names:
            graph.rename(source, name)
            conversion.names[slot] = name
        else:
            graph.node("Identity", [source], outputs=[name])
        written.add(name)
        shape = capture.shapes[slot] if slot is not None else tuple(capture.output_leaves[k].shape)
        dtype = capture.dtypes[slot] if slot is not None else capture.output_leaves[k]._data.dtype
        dims = _output_dims(name, shape, slot, variation, dim_names, axes_out.get(k, {}))
        outputs.append(helper.make_tensor_value_info(name, graph.elem_type(dtype), dims))
    graph.schedule(output_names)
    body = helper.make_graph(graph.nodes, "engine_export", inputs, outputs, graph.initializers)
    opsets = [helper.make_opsetid("", graph.opset)]
    return helper.make_model(body, opset_imports=opsets, producer_name="flowvision engine.onnx",
                             ir_version=helper.find_min_ir_version_for(opsets))


def _output_dims(name, shape, slot, variation, dim_names, named):
    """An output's dims: those named in ``dynamic_axes``, those that changed in the probe (named after the
    input dim they follow, else '<output>_dim<k>'), and fixed sizes."""
    dims = list(shape)
    changed = variation.dynamic_axes(slot) if slot is not None else set()
    for axis in sorted(changed | set(named)):
        if axis in named:
            dims[axis] = named[axis]
        else:
            pair = (shape[axis], variation.b.shapes[slot][axis])
            dims[axis] = dim_names.get(pair, f"{name}_dim{axis}")
    return dims


def _place_weights(onnx, body, tensor_names, export_params, as_inputs):
    """``export_params=False``: the initializers holding parameters and buffers become graph inputs (no data);
    ``keep_initializers_as_inputs``: every initializer is also declared as a graph input."""
    keys = set(tensor_names.values())
    listed = {value.name for value in body.input}
    kept = []
    for tensor in body.initializer:
        if not export_params and tensor.name in keys:
            info = onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))
        elif as_inputs and tensor.name not in listed:
            info = onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))
            kept.append(tensor)
        else:
            kept.append(tensor)
            continue
        body.input.append(info)
    del body.initializer[:]
    body.initializer.extend(kept)


def _write(data, f):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            out.write(data)
    elif hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"engine.onnx.export: f must be a path or a binary file object, got {type(f).__name__}")
