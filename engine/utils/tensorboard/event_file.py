"""Event files: TFRecord framing of serialized ``Event`` messages, written by a background thread.

A record is: length (uint64 little-endian), masked CRC-32C of those 8 bytes, the payload, masked
CRC-32C of the payload. As torch's writer (through tensorboard's EventFileWriter), ``add_event`` only
queues the bytes; a daemon thread writes them and flushes the file at most every ``flush_secs``
seconds, and a full queue (``max_queue`` records) blocks the caller until the thread catches up.
``flush()`` waits for the queue to drain and flushes the file; ``close()`` flushes and closes it.
"""
import itertools
import os
import queue
import socket
import struct
import threading
import time

from . import messages
from .crc32c import masked_crc32c

WRITER_NAME = "engine.utils.tensorboard"
_file_counter = itertools.count()  # the <n> of event file names, unique within the process
_counter_lock = threading.Lock()


def frame_record(payload):
    """One TFRecord record around ``payload``."""
    header = struct.pack("<Q", len(payload))
    return (header + struct.pack("<I", masked_crc32c(header)) + payload
            + struct.pack("<I", masked_crc32c(payload)))


def event_file_name(filename_suffix=""):
    """events.out.tfevents.<seconds, 10 digits>.<hostname>.<pid>.<n><suffix>, as TensorBoard names them."""
    with _counter_lock:
        n = next(_file_counter)
    return "events.out.tfevents.%010d.%s.%s.%s%s" % (time.time(), socket.gethostname(), os.getpid(), n,
                                                      filename_suffix)


class EventFileWriter:
    """Creates ``log_dir`` and a new event file in it, starting with the ``brain.Event:2`` version event."""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self._log_dir = str(log_dir)
        os.makedirs(self._log_dir, exist_ok=True)
        self.path = os.path.join(self._log_dir, event_file_name(filename_suffix))
        self._file = open(self.path, "wb")
        self._queue = queue.Queue(max(int(max_queue), 1))
        self._flush_secs = flush_secs
        self._lock = threading.Lock()
        self._closed = False
        self._error = None
        self._stop = object()
        self._thread = threading.Thread(target=self._run, name="tensorboard-event-writer", daemon=True)
        self._thread.start()
        self.add_event(messages.event(time.time(), file_version="brain.Event:2", source_writer=WRITER_NAME))
        self.flush()

    def get_logdir(self):
        """The directory of the event file."""
        return self._log_dir

    def add_event(self, event_bytes):
        """Queue one serialized ``Event``."""
        with self._lock:
            self._check()
            self._queue.put(frame_record(event_bytes))

    def flush(self):
        """Write every queued event and flush the file to the OS."""
        with self._lock:
            self._check()
            self._queue.join()
            self._file.flush()
            self._check()

    def close(self):
        """Write what is queued, stop the thread and close the file; a second call does nothing."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(self._stop)
            self._thread.join()
            self._file.flush()
            self._file.close()

    def _check(self):
        if self._error is not None:
            raise self._error
        if self._closed:
            raise OSError("Writer is closed")

    def _run(self):
        next_flush = time.time() + self._flush_secs
        pending = False
        while True:
            try:
                item = self._queue.get(timeout=max(next_flush - time.time(), 0.001))
            except queue.Empty:
                item = None
            try:
                if item is self._stop:
                    return
                if item is not None and self._error is None:
                    self._file.write(item)
                    pending = True
            except Exception as exc:  # noqa: BLE001  (reported to the caller's next add/flush)
                self._error = exc
            finally:
                if item is not None:
                    self._queue.task_done()
            if time.time() >= next_flush:
                if pending and self._error is None:
                    self._file.flush()
                    pending = False
                next_flush = time.time() + self._flush_secs
