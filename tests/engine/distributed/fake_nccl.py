"""A stand-in for ``cupy.cuda.nccl`` over MPI, for the tests of the NCCL transport on machines without a
GPU: with the CUDA emulation (``cuda_emulator``), device pointers are host addresses, so each NCCL call
reads and writes them as numpy arrays and does the same operation with mpi4py. It keeps NCCL's calling
conventions (pointers, element counts, NCCL's type and op enums, grouped sends and receives), so a
wrong count, type or peer fails here as on a GPU; what it cannot show is NCCL's own behaviour (streams,
timing, real device memory)."""
import ctypes
import types

import numpy as np

#: NCCL's ncclDataType_t and ncclRedOp_t values
_TYPES = {0: np.int8, 1: np.uint8, 2: np.int32, 3: np.uint32, 4: np.int64, 5: np.uint64, 6: np.float16,
          7: np.float32, 8: np.float64}
_OP_NAMES = {0: "SUM", 1: "PROD", 2: "MAX", 3: "MIN"}
AVG = 4


def _array(pointer, count, nccl_type):
    dtype = np.dtype(_TYPES[nccl_type])
    if count == 0:
        return np.empty(0, dtype)
    buffer = (ctypes.c_byte * (count * dtype.itemsize)).from_address(pointer)
    return np.frombuffer(buffer, dtype)


class NcclCommunicator:
    """One rank's communicator: a duplicate of MPI's COMM_WORLD in the rank NCCL was given."""

    _pending = None  # the sends and receives queued between groupStart and groupEnd

    def __init__(self, ndev, comm_id, rank):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD.Dup()
        assert (ndev, rank) == (self.comm.Get_size(), self.comm.Get_rank()), "NCCL rank/size differ from MPI's"
        assert isinstance(comm_id, bytes) and len(comm_id) == 128, "not an NCCL unique id"
        self.destroyed = False

    def _reduce(self, op):
        return self.MPI.SUM if op == AVG else getattr(self.MPI, _OP_NAMES[op])

    def _finish_average(self, op, array):
        """NCCL's average: the sum divided by the ranks (integers truncated toward zero, as C divides)."""
        size = self.comm.Get_size()
        if op != AVG:
            return
        if array.dtype.kind == "f":
            array /= size
        else:
            array[...] = np.sign(array) * (np.abs(array) // size)

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        send, recv = _array(sendbuf, count, datatype), _array(recvbuf, count, datatype)
        self.comm.Allreduce(self.MPI.IN_PLACE if sendbuf == recvbuf else send, recv, op=self._reduce(op))
        self._finish_average(op, recv)

    def broadcast(self, sendbuf, recvbuf, count, datatype, root, stream):
        recv = _array(recvbuf, count, datatype)
        if self.comm.Get_rank() == root and sendbuf != recvbuf:
            recv[...] = _array(sendbuf, count, datatype)
        self.comm.Bcast(recv, root=root)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        send, recv = _array(sendbuf, count, datatype), _array(recvbuf, count, datatype)
        if self.comm.Get_rank() == root:
            self.comm.Reduce(self.MPI.IN_PLACE if sendbuf == recvbuf else send, recv, op=self._reduce(op), root=root)
            self._finish_average(op, recv)
        else:
            self.comm.Reduce(send, None, op=self._reduce(op), root=root)

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        self.comm.Allgather(_array(sendbuf, count, datatype).copy(),
                            _array(recvbuf, count * self.comm.Get_size(), datatype))

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        send = _array(sendbuf, recvcount * self.comm.Get_size(), datatype).copy()
        recv = _array(recvbuf, recvcount, datatype)
        self.comm.Reduce_scatter_block(send, recv, op=self._reduce(op))
        self._finish_average(op, recv)

    def send(self, sendbuf, count, datatype, peer, stream):
        self._point_to_point("send", _array(sendbuf, count, datatype), peer)

    def recv(self, recvbuf, count, datatype, peer, stream):
        self._point_to_point("recv", _array(recvbuf, count, datatype), peer)

    def _point_to_point(self, kind, array, peer):
        NcclCommunicator._pending.append((self, kind, array, peer))
        if _group_depth[0] == 0:
            group_end_pending()

    def abort(self):
        self.destroyed = True

    def destroy(self):
        self.destroyed = True
        self.comm.Free()


_group_depth = [0]
NcclCommunicator._pending = []


def groupStart():
    _group_depth[0] += 1


def groupEnd():
    _group_depth[0] -= 1
    if _group_depth[0] == 0:
        group_end_pending()


def group_end_pending():
    """Start every queued send and receive at once and wait for them all (NCCL's grouped semantics)."""
    requests = []
    for communicator, kind, array, peer in NcclCommunicator._pending:
        if kind == "send":
            requests.append(communicator.comm.Isend(array.copy(), dest=peer))
        else:
            requests.append(communicator.comm.Irecv(array, source=peer))
    NcclCommunicator._pending = []
    if requests:
        requests[0].Waitall(requests)


def get_unique_id():
    return bytes(np.random.default_rng().integers(0, 256, 128, dtype=np.uint8))


def module():
    """This stand-in as a module object to put at ``cupy.cuda.nccl``."""
    fake = types.ModuleType("cupy.cuda.nccl")
    for name in ("NcclCommunicator", "groupStart", "groupEnd", "get_unique_id"):
        setattr(fake, name, globals()[name])
    names = {"INT8": 0, "UINT8": 1, "INT32": 2, "UINT32": 3, "INT64": 4, "UINT64": 5, "FLOAT16": 6,
             "FLOAT32": 7, "FLOAT64": 8}
    for name, value in names.items():
        setattr(fake, f"NCCL_{name}", value)
    for value, name in _OP_NAMES.items():
        setattr(fake, f"NCCL_{name}", value)
    fake.NCCL_AVG = AVG
    fake.available = True
    return fake
