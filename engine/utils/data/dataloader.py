"""DataLoader: batches from a dataset, in the main process or in worker processes, in sampler order."""
import collections.abc
import itertools
import multiprocessing
import os
import queue
import warnings
import weakref
from typing import Generic

from ... import random as _random
from ..._device import cuda_available
from ...tensor import Tensor
from . import _worker
from .collate import _rebuild_mapping, _rebuild_sequence, default_collate, default_convert
from .dataset import IterableDataset, _T_co
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler):
    """Yields None forever: the 'indices' of an iterable dataset (only their count matters)."""

    def __iter__(self):
        while True:
            yield None


def _check_arguments(dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, num_workers, timeout,
                     prefetch_factor, persistent_workers):
    """Raise ValueError, as torch does, for option combinations that contradict each other."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if isinstance(dataset, IterableDataset):
        for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
            if value not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                 f"but got {name}={value}")
    if sampler is not None and shuffle:
        raise ValueError("sampler option is mutually exclusive with shuffle")
    if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
        raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
    if batch_size is None and drop_last:
        raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")


class DataLoader(Generic[_T_co]):
    """Iterates over ``dataset`` in (shuffled) batches, optionally with ``num_workers`` worker processes.

    ``in_order=False`` lets torch's workers hand batches back out of order; here they always come in order,
    which that setting allows."""

    _frozen = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None,
                 persistent_workers=False, pin_memory_device="", in_order=True):
        _check_arguments(dataset, batch_size, shuffle, sampler, batch_sampler, drop_last, num_workers, timeout,
                         prefetch_factor, persistent_workers)
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = 2 if (prefetch_factor is None and num_workers > 0) else prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            sampler = _InfiniteConstantSampler()
        elif sampler is None:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        elif batch_sampler is not None:
            batch_size, drop_last = None, False
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._IterableDataset_len_called = None  # what len(self) reported for an iterable dataset
        self._initialized = True

    @property
    def multiprocessing_context(self):
        """The worker start method's context (None: the default); torch's checks run when it is set."""
        return self._multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers <= 0:
                raise ValueError("multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(context, str):
                methods = multiprocessing.get_all_start_methods()
                if context not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={context}")
        self._multiprocessing_context = context

    def __setattr__(self, name, value):
        if getattr(self, "_initialized", False) and name in self._frozen:
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    @property
    def _dataset_kind(self):
        return _worker.IterFetcher if self._is_iterable else _worker.MapFetcher

    def _mp_context(self):
        """The multiprocessing context for workers: the one given, else fork where the platform has it."""
        if self.multiprocessing_context is not None:
            return self.multiprocessing_context
        return multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if not self.persistent_workers:
            return _MultiProcessIter(self)
        if self._iterator is None:
            self._iterator = _MultiProcessIter(self)
        else:
            self._iterator._reset(self)
        return self._iterator

    def __len__(self):
        if self._is_iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


def pin_memory(data):
    """``data`` with every tensor in it copied to page-locked memory: tensors and objects with a
    ``pin_memory`` method (a custom batch type), inside mappings, named tuples and sequences (rebuilt as
    ``default_collate`` rebuilds them)."""
    if isinstance(data, Tensor) or hasattr(data, "pin_memory"):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: pin_memory(value) for key, value in data.items()})
    if isinstance(data, tuple):
        if hasattr(data, "_fields"):  # a named tuple
            return type(data)(*(pin_memory(d) for d in data))
        return type(data)(pin_memory(d) for d in data)
    if isinstance(data, collections.abc.Sequence):
        return _rebuild_sequence(data, [pin_memory(d) for d in data])
    return data


def _stop_workers(workers, index_queues, result_queue, done_event, owner_pid):
    """Tell every worker to exit, wait briefly, and terminate any that linger. Only in the process that
    started them: a worker forked later for another loader inherits this iterator, and its garbage
    collection must not stop the parent's workers (nor join processes that are not its children)."""
    if os.getpid() != owner_pid:
        return
    done_event.set()
    for index_queue in index_queues:
        index_queue.put(None)
    for worker in workers:
        worker.join(timeout=_worker.STATUS_CHECK_INTERVAL)
        if worker.is_alive():
            worker.terminate()
    result_queue.cancel_join_thread()
    result_queue.close()


class _BaseIter:
    """State shared by both iterators: fetch settings, the sampler iterator and the workers' base seed."""

    def __init__(self, loader):
        self._dataset = loader.dataset
        self._num_workers = loader.num_workers
        self._fetcher_cls = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._collate_fn = loader.collate_fn
        self._drop_last = loader.drop_last
        self._pin_memory = loader.pin_memory and cuda_available()
        if loader.pin_memory and not self._pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
        self._reset(loader)
        # Drawn once per iterator, as torch does (persistent workers keep theirs across epochs).
        self._base_seed = _random.random_seed(loader.generator)

    def _reset(self, loader):
        self._index_sampler = loader._index_sampler
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._is_iterable = loader._is_iterable
        self._reported_len = loader._IterableDataset_len_called

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._index_sampler)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        if self._is_iterable and self._reported_len is not None and self._num_yielded > self._reported_len:
            self._warn_past_reported_len()
        return pin_memory(data) if self._pin_memory else data

    def _warn_past_reported_len(self):
        """torch's warning: an iterable dataset yielded more than len(dataloader) said (often workers that
        each yield the whole dataset instead of their shard)."""
        msg = (f"Length of IterableDataset {self._dataset} was reported to be {self._reported_len}(when accessing "
               f"len(dataloader)), but {self._num_yielded} samples have been fetched. ")
        if self._num_workers > 0:
            msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker. Please see "
                    "https://pytorch.org/docs/stable/data.html#torch.utils.data.IterableDataset for examples.")
        warnings.warn(msg, stacklevel=3)


class _SingleProcessIter(_BaseIter):
    """Fetches each batch in the calling process."""

    def __init__(self, loader):
        if loader.timeout != 0:  # torch's check: a timeout only applies to waiting on workers
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        super().__init__(loader)
        self._fetcher = self._fetcher_cls(self._dataset, self._auto_collation, self._collate_fn, self._drop_last)

    def _next_data(self):
        return self._fetcher.fetch(next(self._sampler_iter))


class _MultiProcessIter(_BaseIter):
    """Round-robins index batches to worker processes and yields their results in sampler order."""

    def __init__(self, loader):
        if loader.prefetch_factor <= 0:  # torch's check: with nothing in flight no batch would ever come
            raise AssertionError("prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        _BaseIter.__init__(self, loader)
        ctx = loader._mp_context()
        self._done_event = ctx.Event()
        self._result_queue = ctx.Queue()
        self._index_queues, self._workers = [], []
        for worker_id in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            worker = ctx.Process(target=_worker.worker_loop, daemon=True, args=(
                self._fetcher_cls, self._dataset, index_queue, self._result_queue, self._done_event,
                self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                loader.worker_init_fn, worker_id, self._num_workers, os.getpid()))
            worker.start()
            self._index_queues.append(index_queue)
            self._workers.append(worker)
        # A finalizer, not __del__: it holds the queues, so they still work when a garbage cycle
        # (e.g. through an exception's traceback) collects this iterator.
        self._finalizer = weakref.finalize(self, _stop_workers, self._workers, self._index_queues,
                                           self._result_queue, self._done_event, os.getpid())
        self._start_epoch()

    def _reset(self, loader):
        """New epoch: new sampler pass; persistent workers drain the old epoch and restart their iterators."""
        _BaseIter._reset(self, loader)
        if getattr(self, "_workers", None):
            for index_queue in self._index_queues:
                index_queue.put(_worker.ResumeIteration())
            acks = 0
            while acks < self._num_workers:
                tag, _ = self._get_data()
                acks += isinstance(tag, _worker.ResumeIteration)
            self._start_epoch()

    def _start_epoch(self):
        self._send_idx = self._rcvd_idx = self._outstanding = 0
        self._task_info = {}
        self._active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch):
            self._try_put_index()

    def _try_put_index(self):
        """Send the next index batch to the next active worker, keeping at most ``prefetch`` in flight."""
        if self._outstanding >= self._prefetch:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_cycle)
            if self._active[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        """One (send_idx, data) from the result queue, honouring ``timeout`` and noticing dead workers."""
        if self._timeout > 0:
            try:
                return self._result_queue.get(timeout=self._timeout)
            except queue.Empty:
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None
        while True:
            try:
                return self._result_queue.get(timeout=_worker.STATUS_CHECK_INTERVAL)
            except queue.Empty:
                dead = [str(w.pid) for w, a in zip(self._workers, self._active) if a and not w.is_alive()]
                if dead:
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(dead)}) exited unexpectedly") from None

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                if info is not None:
                    self._outstanding -= 1  # a task the exhausted worker dropped: no result will come
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            idx, data = self._get_data()
            self._outstanding -= 1
            if isinstance(data, _worker.IterableStop):
                self._active[data.worker_id] = False
                if not self._persistent:
                    self._index_queues[data.worker_id].put(None)
                self._task_info[idx] = None
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown_workers(self):
        """Stop the workers now (also runs, once, when the iterator is garbage-collected or at exit)."""
        self._finalizer()
