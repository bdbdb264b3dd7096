"""``TCPStore``: a store served over TCP by one process (``is_master=True``) to the others, as torch's.

The master runs a server thread that keeps the keys in a ``HashStore`` and answers one request at a
time per connection; every process, the master included, is a client. A request is the operation's
name and its arguments, a response one typed value, each field a length-prefixed byte string: nothing is
unpickled, so a peer can only call the store's own operations. Waits (``get``, ``wait``) poll ``check``
from the client, under the store's timeout. ``num_keys`` counts the user's keys only (torch's also
counts one of its own). Bind it to 127.0.0.1 unless the other hosts are trusted: anyone who reaches the
port can read and change the keys.
"""
import datetime
import socket
import socketserver
import struct
import threading
import time

from .errors import DistNetworkError, DistStoreError
from .store import HashStore, Store, _bytes

_CONNECT_RETRY_S = 0.01
#: the operations a client may ask for, and how their arguments are read from the wire
_OPERATIONS = {
    "set": lambda key, value: (key.decode(), value),
    "add": lambda key, amount: (key.decode(), int(amount)),
    "append": lambda key, value: (key.decode(), value),
    "compare_set": lambda key, expected, desired: (key.decode(), expected, desired),
    "check": lambda *keys: ([k.decode() for k in keys],),
    "get_now": lambda key: (key.decode(),),
    "delete_key": lambda key: (key.decode(),),
    "num_keys": lambda: (),
    "list_keys": lambda: (),
}


def _send(sock, fields):
    sock.sendall(struct.pack("<I", len(fields)) + b"".join(struct.pack("<Q", len(f)) + f for f in fields))


def _receive_exactly(sock, size):
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise DistNetworkError("TCPStore: the connection was closed by the other side")
        data += chunk
    return bytes(data)


def _receive(sock):
    count, = struct.unpack("<I", _receive_exactly(sock, 4))
    return [_receive_exactly(sock, struct.unpack("<Q", _receive_exactly(sock, 8))[0]) for _ in range(count)]


def _encode(value):
    """A result as fields: a type letter, then the value's bytes."""
    if value is None:
        return [b"N"]
    if isinstance(value, bool):
        return [b"T" if value else b"F"]
    if isinstance(value, int):
        return [b"I", str(value).encode()]
    if isinstance(value, bytes):
        return [b"B", value]
    if isinstance(value, list):
        return [b"L"] + [v.encode() for v in value]
    return [b"E", str(value).encode()]  # an error's message


def _decode(fields):
    kind, rest = fields[0], fields[1:]
    if kind == b"E":
        raise ValueError(rest[0].decode())
    return {b"N": lambda: None, b"T": lambda: True, b"F": lambda: False, b"I": lambda: int(rest[0]),
            b"B": lambda: rest[0], b"L": lambda: [v.decode() for v in rest]}[kind]()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address):
        self.table = HashStore()
        self.table.set_timeout(datetime.timedelta(0))  # the clients wait for keys; the server never blocks
        self.connections = 0
        self.lock = threading.Lock()
        super().__init__(address, _Connection)


class _Connection(socketserver.BaseRequestHandler):
    """One client's requests, answered in order until it disconnects."""

    def handle(self):
        table = self.server.table
        with self.server.lock:
            self.server.connections += 1
        while True:
            try:
                fields = _receive(self.request)
            except (DistNetworkError, OSError):
                return
            name = fields[0].decode()
            try:
                arguments = _OPERATIONS[name](*fields[1:])
                method = "get" if name == "get_now" else name
                result = getattr(table, method)(*arguments)
            except Exception as e:  # a bad request: its message goes back to the client that sent it
                result = e
            _send(self.request, _encode(result))


class TCPStore(Store):
    """A store at ``host_name``:``port`` (``port=0`` on the master: any free port, see ``.port``), served by
    the process with ``is_master=True``; with ``wait_for_workers`` the master waits for ``world_size``
    processes to connect."""

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=datetime.timedelta(seconds=300), wait_for_workers=True, multi_tenant=False,
                 master_listen_fd=None, use_libuv=True):
        super().__init__(timeout)
        self.host = host_name
        self.world_size = world_size
        self._server = None
        if is_master:
            self._server = _Server((host_name, port))
            port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.port = port
        self._lock = threading.Lock()
        self._socket = self._connect()
        if is_master and wait_for_workers and world_size:
            self._wait_for_workers(world_size)

    def _seconds(self):
        return self.timeout.total_seconds()

    def _connect(self):
        deadline = time.monotonic() + self._seconds()
        while True:
            try:
                return socket.create_connection((self.host, self.port), timeout=self._seconds())
            except OSError:
                if time.monotonic() > deadline:
                    raise DistNetworkError(f"The client socket has timed out after {int(self._seconds() * 1000)}ms "
                                           f"while trying to connect to ({self.host}, {self.port}).") from None
                time.sleep(_CONNECT_RETRY_S)

    def _wait_for_workers(self, world_size):
        deadline = time.monotonic() + self._seconds()
        while self._server.connections < world_size:
            if time.monotonic() > deadline:
                raise DistStoreError(f"Timed out after {int(self._seconds() * 1000)}ms waiting for "
                                     f"{world_size} workers; {self._server.connections} joined")
            time.sleep(_CONNECT_RETRY_S)

    def _call(self, name, *fields):
        with self._lock:
            _send(self._socket, [name.encode()] + [f if isinstance(f, bytes) else str(f).encode() for f in fields])
            return _decode(_receive(self._socket))

    def set(self, key, value):
        self._call("set", key, _bytes(value))

    def multi_set(self, keys, values):
        for key, value in zip(keys, values):
            self.set(key, value)

    def get(self, key):
        self.wait([key])
        return self._call("get_now", key)

    def multi_get(self, keys):
        self.wait(keys)
        return [self._call("get_now", k) for k in keys]

    def add(self, key, amount):
        return self._call("add", key, int(amount))

    def append(self, key, value):
        self._call("append", key, _bytes(value))

    def compare_set(self, key, expected_value, desired_value):
        return self._call("compare_set", key, _bytes(expected_value), _bytes(desired_value))

    def check(self, keys):
        return self._call("check", *keys)

    def _timeout_message(self, missing, seconds):
        return f"wait timeout after {int(seconds * 1000)}ms, keys: {', '.join(missing)}"

    def delete_key(self, key):
        return self._call("delete_key", key)

    def num_keys(self):
        return self._call("num_keys")

    def list_keys(self):
        return self._call("list_keys")
