"""Key-value stores, torch's ``Store`` API: ``HashStore`` (this process's threads), ``FileStore`` (a file
that processes of one host, or hosts sharing a file system, use together) and ``PrefixStore`` (a key
space inside another store). Values are bytes (``set`` takes str or bytes); ``add`` keeps a decimal
counter; ``get`` and ``wait`` wait for missing keys up to the store's timeout (five minutes by default,
as torch's), then raise ``DistStoreError``.

engine.distributed itself does not need a store (MPI starts the processes and gives them their ranks):
these are for user code that coordinates through one. A FileStore holds every key in its file, rewritten
whole under an exclusive ``flock`` at each change; its ``num_keys`` counts the user's keys only (torch's
also counts one of its own). The file is left in place for the user to remove.
"""
import datetime
import fcntl
import os
import struct
import threading
import time

from .errors import DistStoreError

#: torch's Store::kDefaultTimeout
DEFAULT_STORE_TIMEOUT = datetime.timedelta(minutes=5)
_POLL_S = 0.001


def _bytes(value):
    return value.encode() if isinstance(value, str) else bytes(value)


class Store:
    """The operations of every store, on ``_transact(change)``: run ``change(table)`` on the key -> bytes
    table under the store's lock (the changes it makes are kept) and return its result."""

    def __init__(self, timeout=DEFAULT_STORE_TIMEOUT):
        self._timeout = timeout

    @property
    def timeout(self):
        return self._timeout

    def set_timeout(self, timeout):
        self._timeout = timeout

    def set(self, key, value):
        self._transact(lambda table: table.__setitem__(key, _bytes(value)))

    def multi_set(self, keys, values):
        self._transact(lambda table: table.update(zip(keys, map(_bytes, values))))

    def get(self, key):
        """``key``'s value, waiting for it to be set up to the store's timeout."""
        self.wait([key])
        return self._transact(lambda table: table[key])

    def multi_get(self, keys):
        self.wait(keys)
        return self._transact(lambda table: [table[k] for k in keys])

    def add(self, key, amount):
        """Add ``amount`` to ``key``'s counter (0 when unset) and return the sum."""
        def change(table):
            text = table.get(key, b"0").decode()
            try:
                total = int(text) + int(amount)
            except ValueError:
                raise ValueError(f"store key {key!r} holds {text!r}, not an integer counter") from None
            table[key] = str(total).encode()
            return total
        return self._transact(change)

    def append(self, key, value):
        self._transact(lambda table: table.__setitem__(key, table.get(key, b"") + _bytes(value)))

    def compare_set(self, key, expected_value, desired_value):
        """Set ``key`` to ``desired_value`` if it holds ``expected_value`` (or is unset and ``expected_value``
        is empty); returns the value it holds afterwards (``expected_value`` for an unset key left unset)."""
        expected, desired = _bytes(expected_value), _bytes(desired_value)

        def change(table):
            if key not in table:
                if expected:
                    return expected
                table[key] = desired
            elif table[key] == expected:
                table[key] = desired
            return table[key]
        return self._transact(change)

    def check(self, keys):
        """Whether every key of ``keys`` is set (without waiting)."""
        return self._transact(lambda table: all(k in table for k in keys))

    def wait(self, keys, timeout=None):
        """Wait until every key of ``keys`` is set; ``DistStoreError`` after ``timeout`` (the store's by default)."""
        limit = self._timeout if timeout is None else timeout
        seconds = limit.total_seconds() if hasattr(limit, "total_seconds") else float(limit)
        deadline = time.monotonic() + seconds
        while not self.check(keys):
            if time.monotonic() > deadline:
                missing = [k for k in keys if not self.check([k])]
                raise DistStoreError(self._timeout_message(missing, seconds))
            time.sleep(_POLL_S)

    def _timeout_message(self, missing, seconds):
        return f"Timeout waiting for key: {', '.join(missing)} after {int(seconds * 1000)} ms"

    def delete_key(self, key):
        """Remove ``key``; whether it was set."""
        return self._transact(lambda table: table.pop(key, None) is not None)

    def num_keys(self):
        return self._transact(len)

    def list_keys(self):
        return self._transact(list)

    def has_extended_api(self):
        return True


class HashStore(Store):
    """A store in this process's memory, shared by its threads."""

    def __init__(self):
        super().__init__()
        self._table = {}
        self._lock = threading.Lock()

    def _transact(self, change):
        with self._lock:
            return change(self._table)

    def _timeout_message(self, missing, seconds):
        return "Wait timeout"  # torch's HashStore's words


class FileStore(Store):
    """A store in the file ``file_name`` (created if missing), shared by every process that opens it
    (``world_size`` is accepted as torch's; the file stays when the processes are done)."""

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        self.path = os.fspath(file_name)
        self.world_size = world_size
        with open(self.path, "ab"):
            pass

    def _transact(self, change):
        with open(self.path, "r+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                table = _decode(f.read())
                before = dict(table)
                result = change(table)
                if table != before:
                    f.seek(0)
                    f.truncate()
                    f.write(_encode(table))
                    f.flush()
                return result
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


def _encode(table):
    """The table as records: key length, value length (little-endian uint32, uint64), key (UTF-8), value."""
    parts = []
    for key, value in table.items():
        name = key.encode()
        parts += [struct.pack("<IQ", len(name), len(value)), name, value]
    return b"".join(parts)


def _decode(data):
    table = {}
    at = 0
    while at < len(data):
        key_size, value_size = struct.unpack_from("<IQ", data, at)
        at += 12
        key = data[at:at + key_size].decode()
        at += key_size
        table[key] = data[at:at + value_size]
        at += value_size
    return table


class PrefixStore(Store):
    """The keys of ``store`` that start with ``prefix + "/"``, seen without the prefix (``num_keys`` is the
    underlying store's, as torch's)."""

    def __init__(self, prefix, store):
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _key(self, key):
        return f"{self.prefix}/{key}"

    @property
    def timeout(self):
        return self.underlying_store.timeout

    def set_timeout(self, timeout):
        self.underlying_store.set_timeout(timeout)

    def set(self, key, value):
        self.underlying_store.set(self._key(key), value)

    def multi_set(self, keys, values):
        self.underlying_store.multi_set([self._key(k) for k in keys], values)

    def get(self, key):
        return self.underlying_store.get(self._key(key))

    def multi_get(self, keys):
        return self.underlying_store.multi_get([self._key(k) for k in keys])

    def add(self, key, amount):
        return self.underlying_store.add(self._key(key), amount)

    def append(self, key, value):
        self.underlying_store.append(self._key(key), value)

    def compare_set(self, key, expected_value, desired_value):
        return self.underlying_store.compare_set(self._key(key), expected_value, desired_value)

    def check(self, keys):
        return self.underlying_store.check([self._key(k) for k in keys])

    def wait(self, keys, timeout=None):
        self.underlying_store.wait([self._key(k) for k in keys], timeout)

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._key(key))

    def num_keys(self):
        return self.underlying_store.num_keys()

    def list_keys(self):
        start = len(self.prefix) + 1
        return [k[start:] for k in self.underlying_store.list_keys() if k.startswith(self.prefix + "/")]
