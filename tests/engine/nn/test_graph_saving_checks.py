"""Saved nn.Graph files: a loaded graph checks its inputs against the saved signature, and loading refuses
files that name functions, classes, dtypes or slots the engine's own saves never hold."""
import json

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

import engine
import engine.nn as nn
from engine.nn.graph.saving import ALLOWED_UFUNCS
from op_check import assert_close


class Classifier(nn.Graph):
    """conv, flatten, linear: the flatten bakes the batch size into the plan."""

    def __init__(self):
        super().__init__()
        engine.manual_seed(0)
        self.model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(4 * 5 * 3, 5)).eval()

    def build(self, x, scale=1.0):
        return self.model(x) * scale


class EveryUfunc(nn.Graph):
    """Every comparison, bitwise, logical and predicate op: every function the ufunc table allows."""

    def build(self, x, y, i, j, b, c):
        compare = (x == y, x != y, x < y, x <= y, x > y, x >= y)
        bitwise = (i & j, i | j, i ^ j, ~i, ~b, b & c)
        logical = (engine.logical_not(b), engine.logical_and(b, c), engine.logical_or(x, y),
                   engine.logical_xor(b, c))
        finite = (engine.isnan(x / y), engine.isinf(x / y), engine.isfinite(x / y))
        return compare + bitwise + logical + finite


def every_ufunc_inputs():
    rng = np.random.default_rng(3)
    x = engine.tensor(rng.integers(-2, 3, (3, 5)).astype(np.float32))
    y = engine.tensor(rng.integers(-2, 3, (3, 5)).astype(np.float32))
    i = engine.tensor(rng.integers(-9, 9, (3, 5)))
    j = engine.tensor(rng.integers(-9, 9, (3, 5)))
    return x, y, i, j, x > 0, y < 1


def saved_classifier(tmp_path, x, **kwargs):
    graph = Classifier()
    expected = graph(x, **kwargs).numpy()
    path = str(tmp_path / "classifier.safetensors")
    graph.save(path)
    return path, expected


def rewrite(path, edit):
    """Apply ``edit`` to the JSON body of a saved graph, as a hand-crafted malicious file would."""
    with safe_open(path, framework="numpy") as f:
        body = json.loads(f.metadata()["graph"])
        arrays = {k: f.get_tensor(k) for k in f.keys()}
    edit(body, arrays)
    save_file(arrays, path, metadata={"graph": json.dumps(body)})
    return path


def find_op(body, suffix):
    return next(rec for rec in body["ops"] if rec["op"].endswith(suffix))


# ---- inputs against the saved signature -------------------------------------------------------------
@pytest.mark.parametrize("given,shown", [
    (lambda x: (engine.randn(3, 3, 7, 5),), r"\(float32\[3, 3, 7, 5\] on cpu\)"),
    (lambda x: (x.double(),), r"\(float64\[2, 3, 7, 5\] on cpu\)"),
    (lambda x: (x.long(),), r"\(int64\[2, 3, 7, 5\] on cpu\)"),
    (lambda x: (x, x), r"\(float32\[2, 3, 7, 5\] on cpu, float32\[2, 3, 7, 5\] on cpu\)"),
    (lambda x: (), r"\(\)"),
    (lambda x: (x.numpy(),), r"\(array\(\[\[\[\[.*\.\.\.\)"),
])
def test_loaded_graph_refuses_other_inputs_with_one_line(tmp_path, given, shown):
    x = engine.randn(2, 3, 7, 5)
    path, _ = saved_classifier(tmp_path, x)
    loaded = nn.Graph.load(path)
    with pytest.raises(ValueError, match=r"^LoadedGraph: saved for inputs \(float32\[2, 3, 7, 5\] on cpu\), "
                                         rf"called with {shown}; a loaded graph cannot trace again") as info:
        loaded(*given(x))
    assert "\n" not in str(info.value)


def test_loaded_graph_checks_keyword_and_constant_arguments(tmp_path):
    x = engine.randn(2, 3, 7, 5)
    path, expected = saved_classifier(tmp_path, x, scale=0.5)
    loaded = nn.Graph.load(path)
    assert_close(loaded(x, scale=0.5).numpy(), expected, 1e-6, "loaded graph with a keyword")
    with pytest.raises(ValueError, match=r"saved for inputs \(float32\[2, 3, 7, 5\] on cpu, scale=0.5\), "
                                         r"called with \(float32\[2, 3, 7, 5\] on cpu, scale=2.0\)"):
        loaded(x, scale=2.0)
    with pytest.raises(ValueError, match=r"called with \(float32\[2, 3, 7, 5\] on cpu\);"):
        loaded(x)


def test_a_refused_call_leaves_the_input_as_it_was(tmp_path):
    x = engine.randn(2, 3, 7, 5)
    path, expected = saved_classifier(tmp_path, x)
    loaded = nn.Graph.load(path)
    other = engine.randn(4, 3, 7, 5)
    before = other.numpy().copy()
    with pytest.raises(ValueError):
        loaded(other)
    np.testing.assert_array_equal(other.numpy(), before)
    assert_close(loaded(x).numpy(), expected, 1e-6, "the saved signature still runs")


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_every_allowed_ufunc_saves_loads_and_is_used(tmp_path):
    inputs = every_ufunc_inputs()
    graph = EveryUfunc()
    expected = [t.numpy() for t in graph(*inputs)]
    path = str(tmp_path / "ufuncs.safetensors")
    graph.save(path)
    loaded = nn.Graph.load(path)
    for i, (out, ref) in enumerate(zip(loaded(*inputs), expected)):
        assert out.dtype.name == str(ref.dtype) or (out.dtype.name == "bool" and ref.dtype == np.bool_)
        np.testing.assert_array_equal(out.numpy(), ref, err_msg=f"output {i}")
    used = {}
    with safe_open(path, framework="numpy") as f:
        body = json.loads(f.metadata()["graph"])
    for rec in body["ops"]:
        if "ufunc" in rec["state"]["__dict__"]:
            used.setdefault(rec["op"], set()).add(rec["state"]["__dict__"]["ufunc"])
    assert used == {name: set(names) for name, names in ALLOWED_UFUNCS.items()}


# ---- files the engine never writes -------------------------------------------------------------------
def copyto_ufunc(body, arrays):
    find_op(body, ":_Compare")["state"]["__dict__"]["ufunc"] = "copyto"


def ufunc_on_other_op(body, arrays):
    find_op(body, ":ConvNd")["state"]["__dict__"]["ufunc"] = "equal"


def foreign_op(body, arrays):
    body["ops"][0]["op"] = "os:system"


def engine_module_non_function(body, arrays):
    body["ops"][0]["op"] = "engine.ops.elementwise:np.copyto"


def missing_op(body, arrays):
    body["ops"][0]["op"] = "engine.ops.elementwise:NoSuchOp"


def object_dtype(body, arrays):
    find_op(body, ":_Compare")["state"]["__dict__"]["dtype"] = {"__np_dtype__": "O"}


def negative_slot(body, arrays):
    body["ops"][0]["args"][0] = ["slot", -1]


def output_slot_out_of_range(body, arrays):
    body["outputs"] = [body["n_slots"]]


def missing_tensor(body, arrays):
    arrays.pop(find_op(body, ":ConvNd")["args"][1][1])


def unknown_argument_kind(body, arrays):
    body["ops"][0]["args"][0] = ["code", "print(1)"]


def old_format(body, arrays):
    body["format"] = "engine.nn.Graph/1"


def unknown_device(body, arrays):
    body["device"] = "tpu"


def state_not_a_record(body, arrays):
    body["ops"][0]["state"] = [1, 2]


def truncated_record(body, arrays):
    del body["ops"][0]["args"]


class Checked(nn.Graph):
    """A conv and a comparison feeding a where: ops with and without a ``ufunc`` field."""

    def __init__(self):
        super().__init__()
        engine.manual_seed(1)
        self.conv = nn.Conv2d(2, 3, 3, padding=1)

    def build(self, x):
        y = self.conv(x)
        return engine.where(y > x.mean(), y, x.sum(1, keepdim=True))


@pytest.mark.parametrize("edit,match", [
    (copyto_ufunc, r"refused: op engine.ops.elementwise:_Compare names the function 'copyto', which is not one "
                   r"the engine's ops use \(allowed: equal, greater, greater_equal, less, less_equal, not_equal\)$"),
    (ufunc_on_other_op, r"refused: op engine.*:ConvNd names the function 'equal'.*\(allowed: none\)$"),
    (foreign_op, r"refused: op 'os:system' is not an engine op$"),
    (engine_module_non_function, r"refused: 'engine.ops.elementwise:np.copyto' is not an engine Function$"),
    (missing_op, r"refused: op 'engine.ops.elementwise:NoSuchOp' does not exist in this engine$"),
    (object_dtype, r"refused: it holds the non-numeric dtype 'object'$"),
    (negative_slot, r"refused: op 0 \(.*\) refers to slot -1, outside the graph's \d+ slots$"),
    (output_slot_out_of_range, r"refused: an output refers to slot \d+, outside the graph's \d+ slots$"),
    (missing_tensor, r"refused: it refers to tensor 't\d+', which the file does not hold$"),
    (unknown_argument_kind, r"refused: op 0 \(.*\) has an argument of unknown kind 'code'$"),
    (old_format, r"refused: it was saved by an older engine without its input signature; save the graph again$"),
    (unknown_device, r"refused: it names the unknown device 'tpu'$"),
    (state_not_a_record, r"refused: op 0 \(.*\) has a state that is not a record$"),
    (truncated_record, r"is malformed \(KeyError: 'args'\)$"),
])
def test_load_refuses_crafted_files_with_one_line_before_running(tmp_path, edit, match):
    x = engine.randn(2, 2, 5, 4)
    graph = Checked()
    expected = graph(x).numpy()
    path = str(tmp_path / "checked.safetensors")
    graph.save(path)
    assert_close(nn.Graph.load(path)(x).numpy(), expected, 1e-6, "the untouched file")
    rewrite(path, edit)
    with pytest.raises(ValueError, match=r"^nn.Graph.load: .*checked.safetensors " + match) as info:
        nn.Graph.load(path)
    assert "\n" not in str(info.value)


def test_save_on_cuda_loads_onto_the_device(tmp_path, cuda):
    x = engine.randn(2, 2, 5, 4)
    graph = Checked()
    graph.conv.to("cuda")
    xc = x.to("cuda")
    expected = graph(xc).cpu().numpy()
    path = str(tmp_path / "cuda.safetensors")
    graph.save(path)
    loaded = nn.Graph.load(path)
    out = loaded(xc)
    assert out.device.type == "cuda"
    assert_close(out.cpu().numpy(), expected, 1e-5, "loaded CUDA graph")
    with pytest.raises(ValueError, match=r"saved for inputs \(float32\[2, 2, 5, 4\] on cuda:0\), called with "
                                         r"\(float32\[2, 2, 5, 4\] on cpu\)"):
        loaded(x)
