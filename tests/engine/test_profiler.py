"""engine.profiler and engine.autograd.profiler against torch.profiler: table layout, call counts,
nesting, Chrome traces, schedules, and that an inactive profiler leaves the engine untouched."""
import json
import os
import threading
import warnings

import numpy as np
import pytest
import torch.autograd.profiler_util as tpu
import torch.profiler as tp

import engine
import engine.autograd.profiler as eap
import engine.profiler as ep
from engine.autograd import graph
from engine.autograd.function import Function
from engine.nn.modules.module import Module

_LONG = "a_user_range_whose_name_is_longer_than_the_name_column_is_wide"


def _program(profiler=ep):
    """A small program: 3 adds, a matmul, a relu and a sum inside a user range, then a backward."""
    rng = np.random.default_rng(0)
    x = engine.tensor(rng.standard_normal((3, 5)).astype(np.float32), requires_grad=True)
    w = engine.tensor(rng.standard_normal((5, 7)).astype(np.float32))
    with profiler.record_function(_LONG):
        y = x
        for _ in range(3):
            y = y + 1.0
        z = (y @ w).relu().sum()
    z.backward()
    return x


def _engine_profile(**kwargs):
    with ep.profile(activities=[ep.ProfilerActivity.CPU], **kwargs) as prof:
        _program()
    return prof


def _lines(table):
    return table.rstrip("\n").split("\n")


def _as_torch_events(events, **kwargs):
    """Our events as torch's FunctionEvents (same names, times, shapes, stacks, memory, FLOPs and nesting):
    torch's own table code then renders what ours must render. (No torch profiler is started: the first
    one takes seconds to initialise.)"""
    theirs = {}
    for e in events:
        theirs[id(e)] = tpu.FunctionEvent(
            id=e.id, name=e.name, thread=e.thread, start_us=e.time_range.start, end_us=e.time_range.end,
            input_shapes=e.input_shapes, stack=e.stack, cpu_memory_usage=e.cpu_memory_usage, flops=e.flops,
            is_user_annotation=e.is_user_annotation)
    for e in events:
        for child in e.cpu_children:
            theirs[id(e)].append_cpu_child(theirs[id(child)])
            theirs[id(child)].set_cpu_parent(theirs[id(e)])
    out = tpu.EventList([theirs[id(e)] for e in events], **kwargs)
    out._tree_built = True
    return out


_TABLE_OPTIONS = [dict(), dict(sort_by="self_cpu_time_total", row_limit=4),
                  dict(sort_by="cpu_memory_usage", top_level_events_only=True, header="HEAD", time_unit="ms",
                       max_name_column_width=20), dict(sort_by="count", max_shapes_column_width=10)]


@pytest.mark.parametrize("options", [dict(), dict(record_shapes=True, profile_memory=True, with_flops=True),
                                     dict(with_stack=True)])
def test_tables_equal_torchs_on_the_same_events(options):
    prof = _engine_profile(**options)
    theirs = _as_torch_events(prof.events(), profile_memory=options.get("profile_memory", False),
                              with_flops=options.get("with_flops", False))
    assert prof.events().table() == theirs.table()
    for table_options in _TABLE_OPTIONS:
        for by_shape in (False, True):
            for stack_n in (0, 2):
                ours = prof.key_averages(group_by_input_shape=by_shape, group_by_stack_n=stack_n)
                expected = theirs.key_averages(group_by_input_shapes=by_shape, group_by_stack_n=stack_n)
                assert ours.table(**table_options) == expected.table(**table_options)


def test_table_layout():
    prof = _engine_profile(record_shapes=True, profile_memory=True, with_flops=True)
    lines = _lines(prof.key_averages(group_by_input_shape=True).table(row_limit=2))
    titles = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "CPU Mem",
              "Self CPU Mem", "# of Calls", "Input Shapes", "Total FLOPs"]
    assert lines[1].split() == " ".join(titles).split()
    assert lines[0] == lines[2] == lines[-2] and set(lines[0]) == {"-", " "}
    assert len(lines) == 3 + 2 + 2 and lines[-1].startswith("Self CPU time total: ")
    assert lines[1].index("Name") == 55 - 4  # the long user range makes the name column its widest, 55


def test_sorted_table_is_in_descending_order():
    prof = _engine_profile()
    avgs = prof.key_averages()
    rows = _lines(avgs.table(sort_by="count"))[3:-2]
    counts = [int(r.split()[-1]) for r in rows]
    assert counts == sorted(counts, reverse=True) and len(rows) == len(avgs)


def test_counts_of_calls_and_names():
    counts = {a.key: a.count for a in _engine_profile().key_averages()}
    assert counts["aten::add"] == 3
    assert counts["aten::matmul"] == counts["aten::relu"] == counts["aten::sum"] == 1
    assert counts[_LONG] == 1
    assert counts["autograd::engine::evaluate_function: MatMulBackward"] == 1
    assert counts["autograd::engine::evaluate_function: AddBackward"] == 3
    assert counts["autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"] == 1


def test_self_times_add_up_and_percentages():
    avgs = _engine_profile().key_averages()
    total = sum(a.self_cpu_time_total for a in avgs)
    outer = next(a for a in avgs if a.key == _LONG)
    assert outer.cpu_time_total >= outer.self_cpu_time_total > 0
    assert abs(avgs.self_cpu_time_total - total) < 1e-6
    assert "Self CPU time total" in str(avgs)


def test_record_function_ranges_nest_around_ops():
    x = engine.ones(4)

    @ep.record_function("decorated")
    def inner():
        return x * 2

    with ep.profile() as prof:
        with ep.record_function("outer"):
            inner()
            x + 1
    events = {e.name: e for e in prof.events()}
    outer, decorated = events["outer"], events["decorated"]
    assert decorated.cpu_parent is outer and events["aten::mul"].cpu_parent is decorated
    assert events["aten::add"].cpu_parent is outer and outer.cpu_parent is None
    for child in (decorated, events["aten::add"]):
        assert outer.time_range.start <= child.time_range.start <= child.time_range.end <= outer.time_range.end
    assert outer.self_cpu_time_total == pytest.approx(
        outer.cpu_time_total - decorated.cpu_time_total - events["aten::add"].cpu_time_total)
    assert inner.__name__ == "inner"


def test_record_function_outside_a_profile_does_nothing():
    with ep.record_function("nothing") as r:
        engine.ones(2) + 1
    assert r.name == "nothing"


def test_chrome_trace_is_valid_and_nested(tmp_path):
    prof = _engine_profile(record_shapes=True)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == len(prof.events())
    outer = next(e for e in spans if e["name"] == _LONG)
    assert outer["cat"] == "user_annotation"
    add = next(e for e in spans if e["name"] == "aten::add")
    assert add["cat"] == "cpu_op" and add["args"]["Input Dims"] == [[3, 5], []]
    assert outer["tid"] == add["tid"]
    assert outer["ts"] <= add["ts"] and add["ts"] + add["dur"] <= outer["ts"] + outer["dur"] + 1e-3
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in trace["traceEvents"])


def test_old_api_profile_and_chrome_trace_gz(tmp_path):
    with eap.profile(record_shapes=True) as prof:
        with pytest.raises(RuntimeError, match="^Profiler didn't finish running$"):
            prof.key_averages()
        _program(eap)
    assert {a.key: a.count for a in prof.key_averages()}["aten::add"] == 3
    assert prof.table(row_limit=3).count("\n") == 3 + 3 + 2
    assert prof.total_average().count == len(prof.function_events)
    assert prof.self_cpu_time_total > 0
    import gzip
    prof.export_chrome_trace(str(tmp_path / "t.json.gz"))
    assert json.loads(gzip.open(tmp_path / "t.json.gz", "rt").read())["traceEvents"]


def test_old_api_use_cuda_warns_and_disabled_profile_records_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # no GPU here: CUDA profiling is disabled
        with pytest.warns(FutureWarning, match="^The attribute `use_cuda` will be deprecated soon"):
            prof = eap.profile(use_cuda=True)
    assert prof.use_device in (None, "cuda")
    with eap.profile(enabled=False):
        assert Function.__call__ is _ORIGINAL_CALL


_ORIGINAL_CALL = Function.__call__
_ORIGINAL_NODE = graph._backward_node
_ORIGINAL_MODULE_CALL = Module.__call__


def test_engine_entry_points_are_original_outside_a_profile():
    with ep.profile(with_modules=True):
        assert Function.__call__ is not _ORIGINAL_CALL and Module.__call__ is not _ORIGINAL_MODULE_CALL
        with pytest.raises(RuntimeError, match="^Profiler is already enabled on this thread$"):
            with ep.profile():
                pass
    assert Function.__call__ is _ORIGINAL_CALL and graph._backward_node is _ORIGINAL_NODE
    assert Module.__call__ is _ORIGINAL_MODULE_CALL
    with pytest.raises(ValueError):
        with ep.profile():
            raise ValueError("inside")
    assert Function.__call__ is _ORIGINAL_CALL


def test_with_modules_flops_and_memory():
    rng = np.random.default_rng(1)
    x = engine.tensor(rng.standard_normal((2, 3, 7, 6)).astype(np.float32))
    conv_w = engine.tensor(rng.standard_normal((4, 3, 3, 2)).astype(np.float32))
    a, b = engine.randn(2, 5, 3), engine.randn(3, 4)
    model = engine.nn.Sequential(engine.nn.Linear(6, 5), engine.nn.ReLU())
    with ep.profile(with_flops=True, profile_memory=True, with_modules=True) as prof:
        engine.nn.functional.conv2d(x, conv_w, stride=(2, 1), padding=1)
        a @ b
        model(x)
    ours = {e.name: e for e in prof.events()}
    # torch's counts: 2 * output elements * (in channels / groups) * kernel taps; 2 * m * n * k
    assert ours["aten::conv2d"].flops == 2 * (2 * 4 * 4 * 7) * 3 * 3 * 2
    assert ours["aten::matmul"].flops == 2 * 2 * 5 * 4 * 3
    assert ours["aten::linear"].flops == 2 * 2 * 3 * 7 * 5 * 6
    assert ours["aten::conv2d"].self_cpu_memory_usage == 2 * 4 * 4 * 7 * 4
    seq, linear = ours["nn.Module: Sequential_0"], ours["nn.Module: Linear_0"]
    assert linear.cpu_parent is seq and ours["aten::linear"].cpu_parent is linear
    assert seq.cpu_memory_usage == 2 * (2 * 3 * 7 * 5 * 4)  # the linear's and the relu's outputs
    assert seq.self_cpu_memory_usage == 0


def test_input_shapes_grouping_and_stack():
    with ep.profile(record_shapes=True, with_stack=True) as prof:
        engine.ones(2, 3) + engine.ones(2, 3)
        engine.ones(4) + engine.ones(4)
    by_shape = prof.key_averages(group_by_input_shape=True)
    adds = [a for a in by_shape if a.key == "aten::add"]
    assert sorted(a.input_shapes for a in adds) == [[[2, 3], [2, 3]], [[4], [4]]]
    assert len([a for a in prof.key_averages() if a.key == "aten::add"]) == 1
    add = next(e for e in prof.events() if e.name == "aten::add")
    assert any(os.path.basename(__file__) in frame for frame in add.stack)
    assert "Source Location" not in prof.key_averages().table()  # as torch's: averages drop stacks
    assert "Source Location" in prof.key_averages(group_by_stack_n=1).table()


def test_ops_of_another_thread_have_their_own_nesting():
    def work():
        engine.ones(3) * 3

    with ep.profile() as prof:
        with ep.record_function("main"):
            t = threading.Thread(target=work)
            t.start()
            t.join()
    mul = next(e for e in prof.events() if e.name == "aten::mul")
    main = next(e for e in prof.events() if e.name == "main")
    assert mul.cpu_parent is None and mul.thread != main.thread


@pytest.mark.parametrize("args", [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=2),
                                  dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3),
                                  dict(wait=3, warmup=1, active=1, skip_first=2, skip_first_wait=1),
                                  dict(wait=1, warmup=0, active=2, repeat=3)])
def test_schedule_actions_equal_torchs(args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, ours = tp.schedule(**args), ep.schedule(**args)
    assert [ours(s).name for s in range(25)] == [theirs(s).name for s in range(25)]


def test_schedule_errors():
    with pytest.raises(AssertionError, match=r"^Invalid profiler schedule arguments. Got wait=0 \(need >= 0\), "
                                             r"warmup=1 \(need >= 0\), active=0 \(need > 0\)"):
        ep.schedule(wait=0, warmup=1, active=0)
    with pytest.warns(UserWarning, match="^Profiler won't be using warmup"):
        fn = ep.schedule(wait=0, warmup=0, active=1)
    with pytest.raises(AssertionError, match="^Step must be non-negative. Got -1.$"):
        fn(-1)


def _transitions(profiler, steps, schedule):
    """What a profile does over ``steps`` steps: its trace actions, hand-overs and warnings, in order."""
    log = []

    class Logged(profiler.profile):
        def prepare_trace(self):
            log.append("prepare")

        def start_trace(self):
            log.append("start")

        def stop_trace(self):
            log.append("stop")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prof = Logged(activities=[profiler.ProfilerActivity.CPU], schedule=schedule,
                      on_trace_ready=lambda p: log.append(("ready", p.step_num)))
        prof.start()
        for _ in range(steps):
            prof.step()
        prof.stop()
    return log, [str(w.message) for w in caught]


_ODD = ["NONE", "WARMUP", "RECORD", "NONE", "WARMUP", "NONE", "RECORD", "WARMUP", "RECORD_AND_SAVE", "RECORD",
        "RECORD_AND_SAVE", "RECORD_AND_SAVE", "WARMUP"]


def test_profile_state_machine_equals_torchs():
    assert (_transitions(ep, 12, lambda s: ep.ProfilerAction[_ODD[s]])
            == _transitions(tp, 12, lambda s: tp.ProfilerAction[_ODD[s]]))
    for args in (dict(wait=1, warmup=1, active=2, repeat=2), dict(wait=0, warmup=1, active=3, skip_first=2)):
        assert _transitions(ep, 11, ep.schedule(**args)) == _transitions(tp, 11, tp.schedule(**args))


def test_scheduled_profile_records_steps():
    """Torch's own run of this loop hands over two traces, after steps 4 and 8, each with 2 steps and 2 adds."""
    seen = []

    def ready(prof):
        names = [e.name for e in prof.events()]
        seen.append((prof.step_num, names.count("ProfilerStep*"), names.count("aten::add")))

    x = engine.ones(2)
    with ep.profile(on_trace_ready=ready, schedule=ep.schedule(wait=1, warmup=1, active=2, repeat=2,
                                                               skip_first=1)) as prof:
        for _ in range(10):
            x + 1
            prof.step()
    assert seen == [(5, 2, 2), (9, 2, 2)]


def test_tensorboard_trace_handler_writes_torchs_file_name(tmp_path):
    handler = ep.tensorboard_trace_handler(str(tmp_path / "logs"), worker_name="w0")
    with ep.profile(schedule=ep.schedule(wait=0, warmup=1, active=1, repeat=1), on_trace_ready=handler) as prof:
        for _ in range(3):
            engine.ones(2) + 1
            prof.step()
    files = os.listdir(tmp_path / "logs")
    assert len(files) == 1 and files[0].startswith("w0.") and files[0].endswith(".pt.trace.json")
    assert int(files[0].split(".")[1]) > 0
    trace = json.loads((tmp_path / "logs" / files[0]).read_text())
    assert any(e["name"] == "ProfilerStep#1" for e in trace["traceEvents"])


def test_activities_without_a_gpu():
    assert ep.ProfilerActivity.CPU in ep.supported_activities()
    if engine.cuda.is_available():
        pytest.skip("a GPU is present")
    assert ep.ProfilerActivity.CUDA not in ep.supported_activities()
    with pytest.warns(UserWarning, match="^CUDA is not available: the profile times CPU activity only$"):
        ep.profile(activities=[ep.ProfilerActivity.CPU, ep.ProfilerActivity.CUDA])


def test_cuda_times_on_the_cuda_backend(cuda):
    x = engine.ones(64, 64, device="cuda")
    with ep.profile(activities=[ep.ProfilerActivity.CPU, ep.ProfilerActivity.CUDA], profile_memory=True) as prof:
        with ep.record_function("block"):
            x @ x
    events = {e.name: e for e in prof.events()}
    mm = events["aten::matmul"]
    assert mm.device_range is not None and mm.device_time_total >= 0
    assert mm.self_device_memory_usage == 64 * 64 * 4 and mm.self_cpu_memory_usage == 0
    assert events["block"].device_time_total == mm.device_time_total
    lines = _lines(prof.key_averages().table())
    assert "Self CUDA %" in lines[1] and "CUDA time avg" in lines[1] and "Self CUDA Mem" in lines[1]
    assert lines[-1].startswith("Self CUDA time total: ") and lines[-2].startswith("Self CPU time total: ")


def test_emit_nvtx_without_nvtx_is_a_plain_context():
    with eap.emit_nvtx(record_shapes=True) as ctx:
        y = engine.ones(2) + 1
        with pytest.raises(RuntimeError, match="^NVTX annotation context manager is already entered$"):
            ctx.__enter__()
    assert y.tolist() == [2.0, 2.0] and Function.__call__ is _ORIGINAL_CALL
