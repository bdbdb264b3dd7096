"""engine.utils.benchmark against torch.utils.benchmark: Measurement statistics and repr, Compare's
tables, and Timer's block sizes and replicates on a controlled fake clock."""
import random

import pytest
import torch
import torch.utils.benchmark as tb

import engine
import engine.utils.benchmark as eb


def _specs(lib):
    specs = []
    for threads in (1, 4):
        for sub in ("float", "int"):
            for desc in ("n=1", "n=16", "n=1024"):
                specs.append(lib.TaskSpec(stmt="x + y", setup="pass", label="add", sub_label=sub, description=desc,
                                          num_threads=threads))
    specs.append(lib.TaskSpec(stmt="x * y", setup="x = 1\ny = 2", label="mul", description="d", env="A"))
    specs.append(lib.TaskSpec(stmt="x * y", setup="x = 1\ny = 2", label="mul", description="d", env="B"))
    specs.append(lib.TaskSpec(stmt="a = 1\nb = a", setup="pass", description="e", sub_label="two"))
    return specs


def _measurements(lib, seed=0):
    """The same replicate times for both libraries: noisy (n=16) and quiet columns, 1 to 9 replicates."""
    rng = random.Random(seed)
    out = []
    for i, spec in enumerate(_specs(lib)):
        base = {"n=1": 3e-6, "n=16": 4.5e-5, "n=1024": 2.1e-3}.get(spec.description, 7e-4)
        base *= (1.7 if spec.sub_label == "int" else 1.0) / spec.num_threads
        spread = 0.3 if spec.description == "n=16" else 0.03
        n = (9, 4, 2, 1)[i % 4]
        out.append(lib.Measurement(100, [base * 100 * (1 + rng.gauss(0, spread)) for _ in range(n)], spec))
    return out


def test_measurement_statistics_and_repr_equal_torchs():
    for ours, theirs in zip(_measurements(eb), _measurements(tb)):
        assert ours.times == theirs.times
        for attr in ("median", "mean", "iqr"):
            assert getattr(ours, attr) == pytest.approx(getattr(theirs, attr), rel=1e-12)
        assert ours.significant_figures == theirs.significant_figures
        assert ours.has_warnings == theirs.has_warnings and ours.meets_confidence() == theirs.meets_confidence()
        assert ours.title == theirs.title and ours.as_row_name == theirs.as_row_name
        assert repr(ours).split("\n")[1:] == repr(theirs).split("\n")[1:]
        assert repr(ours).startswith("<engine.utils.benchmark.common.Measurement object at ")


def test_compare_tables_equal_torchs():
    ours, theirs = eb.Compare(_measurements(eb)), tb.Compare(_measurements(tb))
    assert str(ours) == str(theirs)
    for c in (ours, theirs):
        c.trim_significant_figures()
        c.highlight_warnings()
    assert str(ours) == str(theirs)
    for c in (ours, theirs):
        c.colorize()
    assert str(ours) == str(theirs) and "\033[92m" in str(ours)
    for c in (ours, theirs):
        c.colorize(rowwise=True)
    assert str(ours) == str(theirs)


def test_compare_print_and_extend(capsys):
    c = eb.Compare(_measurements(eb)[:3])
    c.extend_results(_measurements(eb)[3:6])
    c.print()
    out = capsys.readouterr().out
    assert out.startswith("[") and "Times are in" in out and out.count("\n      float  |") == 1
    with pytest.raises(ValueError, match="^Expected an instance of `Measurement`, got <class 'int'> instead.$"):
        c.extend_results([1])


def test_merge_select_unit_and_trim_sigfig():
    spec = eb.TaskSpec(stmt="pass", setup="pass")
    merged = eb.Measurement.merge([eb.Measurement(2, [4.0, 6.0], spec), eb.Measurement(1, [5.0], spec)])
    assert len(merged) == 1 and merged[0].number_per_run == 1 and merged[0].times == [2.0, 3.0, 5.0]
    for t in (3.2e-9, 4.5e-6, 0.012, 7.0, 999e-6):
        assert eb.select_unit(t) == tb.select_unit(t)
    for x, n in ((3.14159, 2), (123456.0, 3), (0.000123456, 1), (98.76, 4)):
        assert eb.trim_sigfig(x, n) == pytest.approx(tb.trim_sigfig(x, n), rel=1e-6)
    with pytest.raises(AssertionError, match="^Number of significant figures must be an integer$"):
        eb.trim_sigfig(1.0, 1.5)


class _Clock:
    """A fake clock: ``tick()`` (the timed statement) advances it by the next of a fixed cycle of steps."""

    def __init__(self, steps):
        self.now, self.steps, self.i = 0.0, steps, 0

    def tick(self):
        self.now += self.steps[self.i % len(self.steps)]
        self.i += 1

    def __call__(self):
        return self.now


def _timed(lib, method, steps, **kwargs):
    clock = _Clock(steps)
    timer = lib.Timer("clock.tick()", timer=clock, globals={"clock": clock}, label="tick")
    m = getattr(timer, method)(**kwargs)
    return m.number_per_run, m.raw_times


@pytest.mark.parametrize("method, steps, kwargs", [
    ("blocked_autorange", [1e-5], dict(min_run_time=0.01)),
    ("blocked_autorange", [2e-7, 3e-7], dict(min_run_time=0.01)),
    ("adaptive_autorange", [1e-5, 1.6e-5, 1e-5, 4e-5], dict(min_run_time=0.01, max_run_time=0.05)),
    ("adaptive_autorange", [2e-3], dict(threshold=0.1, min_run_time=0.01)),
    ("timeit", [3e-6, 5e-6], dict(number=50)),
])
def test_timer_block_sizes_and_replicates_equal_torchs(method, steps, kwargs):
    ours, theirs = _timed(eb, method, steps, **kwargs), _timed(tb, method, steps, **kwargs)
    assert ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1], rel=1e-9)


def test_timer_runs_the_engine_with_its_thread_count_and_restores_it():
    before = engine.get_num_threads()
    seen = []
    timer = eb.Timer("seen.append(torch.get_num_threads()); engine.ones(2) + 1", globals={"seen": seen},
                     num_threads=1, description="ones")
    m = timer.blocked_autorange(min_run_time=0.01)
    assert set(seen) == {1} and engine.get_num_threads() == before
    assert m.num_threads == 1 and m.description == "ones" and m.median > 0 and len(m.times) >= 1
    m = timer.timeit(3)
    assert m.number_per_run == 3 and len(m.raw_times) == 1 and engine.get_num_threads() == before


def test_timer_setup_and_dedent():
    timer = eb.Timer("""
        y = x * 2
        """, setup="x = torch.ones(3)", sub_label="s")
    m = timer.timeit(2)
    assert m.stmt == "y = x * 2" and m.setup == "x = torch.ones(3)" and m.title == "y = x * 2: s"


def test_timer_errors():
    with pytest.raises(ValueError, match=r"^Currently only a `str` stmt is supported.$"):
        eb.Timer(lambda: None)
    with pytest.raises(ValueError, match="^global_setup is C\\+\\+ only, got `#include <x>`"):
        eb.Timer("pass", global_setup="#include <x>")
    with pytest.raises(ValueError, match="^Invalid language `fortran`.$"):
        eb.Timer("pass", language="fortran")
    with pytest.raises(NotImplementedError, match="C\\+\\+ API"):
        eb.Timer("pass", language="c++")
    for method in ("repeat", "autorange"):
        with pytest.raises(NotImplementedError, match="^See `Timer.blocked_autorange.`$"):
            getattr(eb.Timer("pass"), method)()


def test_torch_timer_api_names_exist_here():
    for name in ("Timer", "Measurement", "Compare", "TaskSpec", "select_unit", "trim_sigfig", "Language"):
        assert hasattr(eb, name) and hasattr(tb, name)
    assert torch.utils.benchmark.Colorize.ROWWISE.value == eb.Colorize.ROWWISE.value
