"""Step schedules of a profile: which steps are skipped, warmed up, recorded, and where a trace ends."""
import enum
import warnings


class ProfilerAction(enum.Enum):
    """What the profiler does during one step."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """A step -> ProfilerAction function, as torch's: skip ``skip_first`` steps, then cycles of ``wait``
    idle steps, ``warmup`` steps and ``active`` recorded steps (the last one RECORD_AND_SAVE, which hands
    the trace to ``on_trace_ready``), ``repeat`` times (0: until the profile ends). With
    ``skip_first_wait`` the first cycle starts without its wait."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(
            f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} (need >= 0), "
            f"active={active} (need > 0), repeat={repeat} (need >= 0), skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active

    def action(step):
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step >= repeat * cycle:
            return ProfilerAction.NONE
        phase = step % cycle
        if phase < wait:
            return ProfilerAction.NONE
        if phase < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if phase < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return action


def default_schedule(step):
    """Without a schedule a profile records every step."""
    return ProfilerAction.RECORD
