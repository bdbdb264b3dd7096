"""Byte payloads (pickled objects) over a group's MPI communicators: the transfers behind the object
collectives and ``send_object_list``/``recv_object_list``.

Collectives of bytes send each rank's length first, then the bytes (``Iallgatherv``, ``Igatherv``,
``Iscatterv``); a point-to-point payload is one message on the group's control communicator (a
duplicate, so that it never matches a tensor ``recv`` of the same tag), whose length the receiver learns
by probing for it. Every wait is a ``Work``'s, under the group's timeout.
"""
import numpy as np

from .work import Work

#: the tag of pickled objects on the control communicator
OBJECT_TAG = 1


def _bounds(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def _split(buffer, sizes):
    bounds = _bounds(sizes)
    return [buffer[lo:hi].tobytes() for lo, hi in zip(bounds[:-1], bounds[1:])]


class ByteMessages:
    """Mixed into MPITransport: needs ``comm``, ``control``, ``group``, ``MPI`` and ``_work``."""

    def all_gather_bytes(self, payload):
        """Every rank's ``payload`` (bytes), in rank order."""
        sizes = np.zeros(self.comm.Get_size(), np.int64)
        self._work(self.comm.Iallgather(np.array([len(payload)], np.int64), sizes), "all_gather_object").wait()
        gathered = np.empty(int(sizes.sum()), np.uint8)
        local = np.frombuffer(payload, np.uint8)
        request = self.comm.Iallgatherv(local, [gathered, sizes])
        self._work(request, "all_gather_object", None, (gathered, local)).wait()
        return _split(gathered, sizes)

    def broadcast_bytes(self, payload, src):
        """``src``'s ``payload`` (bytes) on every rank."""
        size = np.array([len(payload) if payload is not None else 0], np.int64)
        self._work(self.comm.Ibcast(size, root=src), "broadcast_object_list").wait()
        data = np.frombuffer(payload, np.uint8).copy() if payload is not None else np.empty(int(size[0]), np.uint8)
        self._work(self.comm.Ibcast(data, root=src), "broadcast_object_list", None, (data,)).wait()
        return data.tobytes()

    def gather_bytes(self, payload, dst):
        """Every rank's ``payload`` in rank order on ``dst``; None on the other ranks."""
        root = self.comm.Get_rank() == dst
        sizes = np.zeros(self.comm.Get_size(), np.int64) if root else None
        self._work(self.comm.Igather(np.array([len(payload)], np.int64), sizes, root=dst), "gather_object").wait()
        local = np.frombuffer(payload, np.uint8)
        gathered = np.empty(int(sizes.sum()), np.uint8) if root else None
        request = self.comm.Igatherv(local, [gathered, sizes] if root else None, root=dst)
        self._work(request, "gather_object", None, (gathered, local)).wait()
        return _split(gathered, sizes) if root else None

    def scatter_bytes(self, payloads, src):
        """Payload r of ``payloads`` (given on ``src`` only) on rank r."""
        root = self.comm.Get_rank() == src
        sizes = np.array([len(p) for p in payloads], np.int64) if root else None
        size = np.zeros(1, np.int64)
        self._work(self.comm.Iscatter(sizes, size, root=src), "scatter_object_list").wait()
        source = np.frombuffer(b"".join(payloads), np.uint8) if root else None
        mine = np.empty(int(size[0]), np.uint8)
        request = self.comm.Iscatterv([source, sizes] if root else None, mine, root=src)
        self._work(request, "scatter_object_list", None, (source, mine)).wait()
        return mine.tobytes()

    def send_bytes(self, payload, dst):
        """Send ``payload`` to rank ``dst`` on the control communicator and wait until it has left."""
        data = np.frombuffer(payload, np.uint8)
        request = self.control.Isend(data, dest=dst, tag=OBJECT_TAG)
        self._work(request, f"send_object_list to rank {dst}", None, (data,)).wait()

    def recv_bytes(self, src):
        """The next payload from rank ``src`` (None: any rank) and its sender's rank."""
        status = self.MPI.Status()
        source = self.MPI.ANY_SOURCE if src is None else src
        found = []

        def probe():
            if not found:
                message = self.control.Improbe(source=source, tag=OBJECT_TAG, status=status)
                if message is not None:
                    found.append(message)
            return bool(found)
        what = "recv_object_list from any rank" if src is None else f"recv_object_list from rank {src}"
        Work(probe, what, self.group).wait()
        data = np.empty(status.Get_count(self.MPI.BYTE), np.uint8)
        request = found[0].Irecv(data)
        self._work(request, what, None, (data,)).wait()
        return data.tobytes(), status.Get_source()
