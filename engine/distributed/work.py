"""``Work``: the handle of a communication in flight, with a deadline on every wait.

A blocking call is an asynchronous one waited on at once, so every call that can wait for another rank
waits through ``wait_until``: it polls the request and raises after the process group's timeout instead
of hanging when a rank failed, exited or never made the matching call.
"""
import os
import time

from .errors import DistBackendError

#: how long a wait polls back to back (yielding the core between polls) before it sleeps between polls:
#: MPI moves a large message in pieces, each only when polled, so a sleeping wait slows it (resnet18's
#: 45 MB of gradients waited 130 ms a step with sleeps from the start); a wait this long is for a rank
#: that is behind, and then sleeping spares the core
_SPIN_S = 1.0
#: the longest sleep between two polls
_MAX_SLEEP_S = 0.001


def wait_until(done, deadline, describe):
    """Poll ``done()`` until it is true; after ``deadline`` (a ``time.monotonic`` value) raise
    DistBackendError (a RuntimeError, as torch's for a timed-out collective) with ``describe()`` saying what was
    waited for."""
    spin_until = time.monotonic() + _SPIN_S
    sleep = 1e-5
    while not done():
        now = time.monotonic()
        if now > deadline:
            raise DistBackendError(describe())
        if now < spin_until:
            os.sched_yield()
        else:
            time.sleep(sleep)
            sleep = min(sleep * 2, _MAX_SLEEP_S)


class Work:
    """One collective or point-to-point operation in flight (torch's ``Work``).

    ``done`` tells whether the transport finished; ``finish`` (and those added by ``then``) then run once
    (dividing a sum into an average, copying a staged result back, splitting a gathered buffer); ``on_timeout``
    runs before the timeout error is raised (NCCL aborts its communicator there)."""

    def __init__(self, done, what, group, finish=None, on_timeout=None):
        self._done = done
        self._what = what
        self._group = group
        self._finishers = [] if finish is None else [finish]
        self._on_timeout = on_timeout
        self._completed = False

    def is_completed(self):
        """Whether the operation has finished, its result in place (without waiting)."""
        if not self._completed and self._done():
            self._complete()
        return self._completed

    def is_success(self):
        return self.is_completed()

    def wait(self, timeout=None):
        """Block until the operation is done and its result in place; RuntimeError after ``timeout``
        (a ``datetime.timedelta`` or seconds; the process group's timeout by default)."""
        if self._completed:
            return True
        seconds = self._group.timeout if timeout is None else _seconds(timeout)
        try:
            wait_until(self._done, time.monotonic() + seconds, lambda: self._timeout_message(seconds))
        except RuntimeError:
            if self._on_timeout is not None:
                self._on_timeout()
            raise
        self._complete()
        return True

    def _complete(self):
        self._completed = True
        for finish in self._finishers:
            finish()

    def then(self, finish):
        """Run ``finish()`` after the ones already set, once the operation is done; returns self."""
        self._finishers.append(finish)
        return self

    def _timeout_message(self, seconds):
        return (f"engine.distributed: {self._what} on rank {self._group.rank()} of {self._group.size()} did not "
                f"complete within {seconds:g} s: another rank failed, exited or did not make the same call "
                "(init_process_group's timeout= sets the limit)")


def _seconds(timeout):
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
