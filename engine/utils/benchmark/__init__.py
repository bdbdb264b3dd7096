"""``engine.utils.benchmark``: ``Timer``, ``Measurement`` and ``Compare`` as torch.utils.benchmark.

Not imported by ``import engine`` (torch does not import its benchmark package either):
``import engine.utils.benchmark as benchmark``.
"""
from .common import Measurement, TaskSpec, ordered_unique, select_unit, set_torch_threads, trim_sigfig, unit_to_english
from .compare import Colorize, Compare
from .timer import Language, Timer, timer

__all__ = ["Timer", "timer", "Language", "Measurement", "TaskSpec", "Compare", "Colorize", "select_unit",
           "unit_to_english", "trim_sigfig", "ordered_unique", "set_torch_threads"]
