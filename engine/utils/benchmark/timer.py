"""``Timer``: time a statement the way torch.utils.benchmark does (warm-up, block sizes that make the
timer's own cost negligible, replicates), on the engine."""
import enum
import importlib
import textwrap
import timeit as _timeit

from .common import Measurement, TaskSpec, set_torch_threads

__all__ = ["Timer", "timer", "Language"]


def timer():
    """The default clock: waits for queued GPU work first where a GPU is in use."""
    from ... import accelerator
    if accelerator.is_available():
        accelerator.synchronize()
    return _timeit.default_timer()


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


class Timer:
    """Measure ``stmt`` (Python source) after ``setup``, with ``globals`` (``torch`` and ``engine`` name
    the engine unless given) and the engine's CPU thread count set to ``num_threads`` while timing.

    ``label``, ``sub_label``, ``description`` and ``env`` only tag the Measurement (``Compare`` lays tables
    out by them). C++ statements (``language="c++"``) are not supported: the engine has no C++ API.
    """

    _timer_cls = _timeit.Timer

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None, label=None,
                 sub_label=None, description=None, env=None, num_threads=1, language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language in (Language.CPP, "cpp", "c++"):
            raise NotImplementedError("Timer(language='c++') is not supported: the engine has no C++ API")
        if language not in (Language.PYTHON, "py", "python"):
            raise ValueError(f"Invalid language `{language}`.")
        if global_setup:
            raise ValueError(f"global_setup is C++ only, got `{global_setup}`. Most likely this code can "
                             "simply be moved to `setup`.")
        engine = importlib.import_module("...", __package__)
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", engine)
        self._globals.setdefault("engine", engine)
        stmt, setup = _clean(stmt), _clean(setup)
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = TaskSpec(stmt=stmt, setup=setup, global_setup=global_setup, label=label,
                                   sub_label=sub_label, description=description, env=env,
                                   num_threads=num_threads)

    def _timeit(self, number):
        return max(self._timer.timeit(number), 1e-9)

    def _measurement(self, number, times):
        return Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def timeit(self, number=1000000):
        """Run ``stmt`` ``number`` times (after a warm-up of ``number // 100``, at least 2): one replicate."""
        with set_torch_threads(self._task_spec.num_threads):
            self._timeit(max(number // 100, 2))
            return self._measurement(number, [self._timeit(number)])

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def _estimate_block_size(self, min_run_time):
        """The first power of ten of runs whose time dwarfs the timer's overhead (1e4 times over) and is
        at least a thousandth of ``min_run_time``, or exceeds ``min_run_time`` alone."""
        with set_torch_threads(self._task_spec.num_threads):
            overhead = sorted(self._timeit(0) for _ in range(5))[2]
            number = 1
            while True:
                taken = self._timeit(number)
                if (overhead / taken <= 1e-4 and taken >= min_run_time / 1000) or taken > min_run_time:
                    return number
                if number * 10 > 2147483647:
                    return number
                number *= 10

    def _measure(self, number, stop, min_run_time, max_run_time=None, callback=None):
        """Replicates of ``number`` runs until ``min_run_time`` is spent and ``stop(times)`` agrees, or
        ``max_run_time`` is spent."""
        total, times, can_stop = 0.0, [], False
        with set_torch_threads(self._task_spec.num_threads):
            while total < min_run_time or not can_stop:
                spent = self._timeit(number)
                times.append(spent)
                total += spent
                if callback:
                    callback(number, spent)
                can_stop = stop(times)
                if max_run_time and total > max_run_time:
                    break
        return times

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Replicates of one block size (see ``_estimate_block_size``) for ``min_run_time`` seconds."""
        number = self._estimate_block_size(min_run_time)
        return self._measurement(number, self._measure(number, lambda times: True, min_run_time,
                                                       callback=callback))

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        """As ``blocked_autorange``, but go on until more than 3 replicates have an IQR under
        ``threshold`` times their median, or ``max_run_time`` seconds are spent."""
        number = self._estimate_block_size(min_run_time=0.05)

        def stop(times):
            return len(times) > 3 and self._measurement(number, times).meets_confidence(threshold)

        return self._measurement(number, self._measure(number, stop, min_run_time, max_run_time, callback))


def _clean(code):
    """Dedented, without a leading newline or trailing blanks."""
    code = textwrap.dedent(code)
    return (code[1:] if code.startswith("\n") else code).rstrip()
