"""``engine.mps`` against ``torch.mps`` on a machine without Apple's Metal backend: the same answers, and the same
errors with the same one-line messages."""
import warnings

import pytest
import torch

import engine
import engine.mps
import engine.mps.profiler


def _profile(lib):
    with lib.mps.profiler.profile():
        return "entered"


CALLS = [
    ("is_available()", lambda lib: lib.mps.is_available()),
    ("device_count()", lambda lib: lib.mps.device_count()),
    ("synchronize()", lambda lib: lib.mps.synchronize()),
    ("get_rng_state()", lambda lib: lib.mps.get_rng_state()),
    ("set_rng_state(zeros)", lambda lib: lib.mps.set_rng_state(lib.zeros(4, dtype=lib.uint8))),
    ("manual_seed(1)", lambda lib: lib.mps.manual_seed(1)),
    ("seed()", lambda lib: lib.mps.seed()),
    ("empty_cache()", lambda lib: lib.mps.empty_cache()),
    ("set_per_process_memory_fraction(0.5)", lambda lib: lib.mps.set_per_process_memory_fraction(0.5)),
    ("current_allocated_memory()", lambda lib: lib.mps.current_allocated_memory()),
    ("driver_allocated_memory()", lambda lib: lib.mps.driver_allocated_memory()),
    ("recommended_max_memory()", lambda lib: lib.mps.recommended_max_memory()),
    ("compile_shader('')", lambda lib: lib.mps.compile_shader("")),
    ("load_metallib('')", lambda lib: lib.mps.load_metallib("")),
    ("Event()", lambda lib: lib.mps.Event(enable_timing=True)),
    ("profiler.start()", lambda lib: lib.mps.profiler.start()),
    ("profiler.stop()", lambda lib: lib.mps.profiler.stop()),
    ("profiler.profile()", _profile),
    ("backends.mps.is_available()", lambda lib: lib.backends.mps.is_available()),
]


def _outcome(call, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("value", call(lib))
    except Exception as e:
        return ("raised", type(e).__name__, str(e))


@pytest.mark.skipif(torch.backends.mps.is_available(), reason="compares with torch where Metal is missing")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # torch's Event.__del__
@pytest.mark.parametrize("label,call", CALLS, ids=[label for label, _ in CALLS])
def test_answers_as_torch_without_metal(label, call):
    assert _outcome(call, engine) == _outcome(call, torch)


def test_metal_capture_is_never_on():
    assert engine.mps.profiler.is_metal_capture_enabled() is False
    assert engine.mps.profiler.is_capturing_metal() is False


def test_the_exported_names_exist():
    assert all(hasattr(engine.mps, name) for name in engine.mps.__all__)
