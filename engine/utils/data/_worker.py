"""What runs inside a DataLoader worker process, and the messages it exchanges with the main process."""
import dataclasses
import os
import queue
import random
import sys
import traceback

import numpy as np

from ... import random as _random
from .dataset import _fetch_items

# How often (seconds) a blocked worker or main process wakes up to check that its peer is alive.
STATUS_CHECK_INTERVAL = 5.0

_worker_info = None


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """Facts about the current worker (read-only, as torch's): ``id``, ``num_workers``, ``seed``, its copy of
    ``dataset``, and torch's ``rng`` (None) and ``worker_method`` fields."""

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


def get_worker_info():
    """The ``WorkerInfo`` of this DataLoader worker process, or None in the main process."""
    return _worker_info


class ResumeIteration:
    """Main -> worker: start a new epoch (persistent workers); echoed back as the acknowledgement."""


class IterableStop:
    """Worker -> main: this worker's iterable dataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _KeyErrorMessage(str):
    """A KeyError's message that prints as itself: KeyError shows its argument's repr, which would turn
    the traceback's newlines into escapes."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its formatted traceback."""

    def __init__(self, where):
        exc_type, exc, _ = sys.exc_info()
        self.exc_type = exc_type
        self.where = where
        self.text = "".join(traceback.format_exception(exc_type, exc, exc.__traceback__))

    def reraise(self):
        """Raise an exception of the original type whose message includes the worker's traceback."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.text}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


class MapFetcher:
    """Fetches a batch (list of indices, then collate) or one sample from a map-style dataset."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        return self.collate_fn(_fetch_items(self.dataset, index))


class IterFetcher:
    """Pulls ``len(index)`` samples (or one) from an iterable dataset's iterator; StopIteration at the end."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in index:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def _seed_worker(base_seed, worker_id):
    """Seed Python's, numpy's and the engine's global generators as torch seeds a worker's: base seed
    plus worker id, and numpy's from a SeedSequence of (worker id, the base seed's two 32-bit halves)."""
    seed = base_seed + worker_id
    random.seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32]).generate_state(4))
    _random.manual_seed(seed)


def worker_loop(fetcher_cls, dataset, index_queue, result_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers, parent_pid):
    """Serve (send_idx, index) requests from ``index_queue`` until None arrives or the parent dies."""
    global _worker_info
    seed = base_seed + worker_id
    _seed_worker(base_seed, worker_id)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    init_error = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = fetcher_cls(dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
    iteration_end = False
    while True:
        try:
            request = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
        except queue.Empty:
            if done_event.is_set() or os.getppid() != parent_pid:
                break
            continue
        if request is None:
            break
        if isinstance(request, ResumeIteration):
            result_queue.put((request, None))
            iteration_end = False
            fetcher = fetcher_cls(dataset, auto_collation, collate_fn, drop_last)
            continue
        if done_event.is_set() or iteration_end:
            continue
        send_idx, index = request
        if init_error is not None:
            data = init_error
        else:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                if fetcher_cls is not IterFetcher:
                    raise
                data = IterableStop(worker_id)
                iteration_end = True
            except Exception:
                data = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
        result_queue.put((send_idx, data))
    if done_event.is_set():
        result_queue.cancel_join_thread()
    result_queue.close()
