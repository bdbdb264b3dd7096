"""``spawn`` / ``start_processes``: run ``fn(rank, *args)`` in ``nprocs`` processes, as
``torch.multiprocessing.spawn`` does.

Each child writes the traceback of an exception that escapes ``fn`` to its own error file and exits
with code 1. ``ProcessContext.join`` waits for the children; at the first one that failed it stops
the others (SIGTERM, then SIGKILL after a grace period) and raises ``ProcessRaisedException`` with the
child's traceback, or ``ProcessExitedException`` with its exit code or signal.
"""
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import traceback
import warnings


class ProcessException(Exception):
    """A child process of ``spawn`` failed: ``error_index`` is its rank, ``error_pid`` its process id."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A child's ``fn`` raised; the message holds the child's traceback."""


class ProcessExitedException(ProcessException):
    """A child exited with a non-zero ``exit_code`` (negative: killed by ``signal_name``) without raising."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _run(fn, rank, args, error_file):
    """The child's entry point: ``fn(rank, *args)``, its traceback to ``error_file`` if it raises."""
    try:
        fn(rank, *args)
    except KeyboardInterrupt:
        pass  # the parent interrupted this child while stopping the others
    except Exception:
        with open(error_file, "w") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes(..., join=False)`` started, to ``join`` later."""

    def __init__(self, processes, error_files):
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {process.sentinel: rank for rank, process in enumerate(processes)}

    def pids(self):
        return [process.pid for process in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Wait up to ``timeout`` seconds for children to end; True once all ended well, False while some
        run. The first child that failed raises (see the module's docstring), after the others are
        stopped: SIGTERM, and SIGKILL for those still alive ``grace_period`` seconds later (default 30)."""
        if not self.sentinels:
            return True
        failed = None
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            rank = self.sentinels.pop(sentinel)
            self.processes[rank].join()
            if self.processes[rank].exitcode != 0:
                failed = rank
                break
        if failed is None:
            return not self.sentinels
        self._stop_all(30 if grace_period is None else grace_period)
        raise self._failure(failed)

    def _stop_all(self, grace_period):
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(grace_period)
            if process.is_alive():
                process.kill()
                process.join()

    def _failure(self, rank):
        """The exception that tells how child ``rank`` failed."""
        process = self.processes[rank]
        if os.path.exists(self.error_files[rank]):
            with open(self.error_files[rank]) as f:
                child_traceback = f.read()
            os.unlink(self.error_files[rank])
            message = f"\n\n-- Process {rank} terminated with the following error:\n{child_traceback}"
            return ProcessRaisedException(message, rank, process.pid)
        code = process.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            return ProcessExitedException(f"process {rank} terminated with signal {name}", rank, process.pid,
                                          code, name)
        return ProcessExitedException(f"process {rank} terminated with exit code {code}", rank, process.pid, code)


def _error_file():
    """A path no file has yet, for a child's traceback (its existence means the child raised)."""
    handle, path = tempfile.mkstemp(prefix="engine-spawn-error-", suffix=".txt")
    os.close(handle)
    os.unlink(path)
    return path


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes (``start_method``: spawn, fork or forkserver) running
    ``fn(rank, *args)``; with ``join`` wait for all (None), else return their ``ProcessContext``."""
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for rank in range(nprocs):
        error_files.append(_error_file())
        process = context.Process(target=_run, args=(fn, rank, args, error_files[-1]), daemon=daemon)
        process.start()
        processes.append(process)
    processes = ProcessContext(processes, error_files)
    if not join:
        return processes
    while not processes.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``start_processes`` with the spawn start method (another one warns and is not used, as in torch)."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t engine.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
