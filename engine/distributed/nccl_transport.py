"""The NCCL transport of CUDA arrays, on CuPy's bindings (``cupy.cuda.nccl``).

Rank 0 makes NCCL's unique id and broadcasts it over the group's MPI communicator; each process then
joins one NCCL communicator on its GPU (``init_process_group``'s ``device_id``, or else ``LOCAL_RANK``
modulo the GPUs it sees). Operations run on a communication stream of their own that first waits for the work
already queued on the current stream, so gradients reduce while the backward goes on; a ``Work`` is
done when an event recorded after the operation has passed, and its wait then also orders the current
stream after it. A wait that times out aborts the NCCL communicator (NCCL's kernels could otherwise
spin forever) and raises.

NCCL has no bitwise reductions and no int16; AVG uses NCCL's own average. Gather and scatter are
grouped sends and receives; a receive must name its source; barriers go over MPI.
"""
import importlib
import pickle

import numpy as np

from .._device import cupy
from .environment import launcher_placement
from .mpi_transport import check_reducible
from .reduce_op import ReduceOp
from .work import Work

_DTYPES = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
           "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "bool": "NCCL_UINT8", "int32": "NCCL_INT32",
           "int64": "NCCL_INT64"}
_OPS = {ReduceOp.SUM: "NCCL_SUM", ReduceOp.AVG: "NCCL_AVG", ReduceOp.PRODUCT: "NCCL_PROD",
        ReduceOp.MIN: "NCCL_MIN", ReduceOp.MAX: "NCCL_MAX"}
#: bool arrays travel as bytes: any-true for SUM and MAX, all-true for PRODUCT and MIN
_BOOL_OPS = {ReduceOp.SUM: "NCCL_MAX", ReduceOp.MAX: "NCCL_MAX", ReduceOp.PRODUCT: "NCCL_MIN",
             ReduceOp.MIN: "NCCL_MIN"}


def local_device_index(device_count):
    """The GPU of this process: its rank on its host (``LOCAL_RANK`` or the MPI launcher's own variable)
    modulo the GPUs it sees."""
    placement = launcher_placement()
    local_rank = placement[2] if placement is not None and placement[2] is not None else 0
    return local_rank % max(device_count, 1)


class NCCLTransport:
    """Collectives and point-to-point messages of one NCCL communicator over CUDA arrays."""

    def __init__(self, group, device_index=None):
        self.nccl = importlib.import_module("cupy.cuda.nccl")
        self.group = group
        cp = cupy()
        unique_id = pickle.dumps(self.nccl.get_unique_id()) if group.rank() == 0 else None
        unique_id = pickle.loads(group.mpi.broadcast_bytes(unique_id, 0))
        if device_index is None:
            device_index = local_device_index(cp.cuda.runtime.getDeviceCount())
        self.device_index = device_index
        with cp.cuda.Device(self.device_index):
            self.comm = self.nccl.NcclCommunicator(group.size(), unique_id, group.rank())
            self.stream = cp.cuda.Stream(non_blocking=True)

    def destroy(self):
        self.comm.destroy()

    def _dtype(self, array):
        name = _DTYPES.get(array.dtype.name)
        if name is None:
            raise RuntimeError(f"NCCL cannot communicate {array.dtype.name} tensors (float16/32/64, int8, "
                               "uint8, bool, int32 and int64 only)")
        return getattr(self.nccl, name)

    def _op(self, op, dtype):
        check_reducible(op, dtype)
        names = _BOOL_OPS if dtype == np.bool_ else _OPS
        if op not in names:
            raise RuntimeError(f"NCCL has no {op!r} reduction for {dtype.name} tensors")
        return getattr(self.nccl, names[op])

    def _run(self, what, launch, buffers):
        """Queue ``launch(stream_ptr)`` on the communication stream after the current stream's work."""
        cp = cupy()
        current = cp.cuda.get_current_stream()
        self.stream.wait_event(current.record())
        launch(self.stream.ptr)
        finished = self.stream.record()
        work = Work(lambda: finished.done, what, self.group, on_timeout=self.comm.abort)
        work.then(lambda: current.wait_event(finished))
        work.buffers = buffers
        return work

    def all_reduce(self, array, op):
        def launch(stream):
            self.comm.allReduce(array.data.ptr, array.data.ptr, array.size, self._dtype(array),
                                self._op(op, array.dtype), stream)
        return self._run("all_reduce", launch, (array,))

    def broadcast(self, array, src):
        def launch(stream):
            self.comm.broadcast(array.data.ptr, array.data.ptr, array.size, self._dtype(array), src, stream)
        return self._run("broadcast", launch, (array,))

    def reduce(self, array, dst, op):
        def launch(stream):
            self.comm.reduce(array.data.ptr, array.data.ptr, array.size, self._dtype(array),
                             self._op(op, array.dtype), dst, stream)
        return self._run("reduce", launch, (array,))

    def all_gather(self, output, array):
        def launch(stream):
            self.comm.allGather(array.data.ptr, output.data.ptr, array.size, self._dtype(array), stream)
        return self._run("all_gather", launch, (output, array))

    def reduce_scatter(self, output, array, op):
        def launch(stream):
            self.comm.reduceScatter(array.data.ptr, output.data.ptr, output.size, self._dtype(array),
                                    self._op(op, array.dtype), stream)
        return self._run("reduce_scatter", launch, (output, array))

    def gather(self, output, array, dst):
        """Grouped sends to ``dst``, which receives block r from rank r (its own block by a copy)."""
        rank = self.group.rank()
        kind = self._dtype(array)

        def launch(stream):
            self.nccl.groupStart()
            if rank == dst:
                blocks = output.reshape(self.group.size(), -1)
                for peer in range(self.group.size()):
                    if peer != rank:
                        self.comm.recv(blocks[peer].data.ptr, array.size, kind, peer, stream)
            else:
                self.comm.send(array.data.ptr, array.size, kind, dst, stream)
            self.nccl.groupEnd()
            if rank == dst:
                with self.stream:
                    blocks[rank][...] = array.reshape(-1)
        return self._run("gather", launch, (output, array))

    def scatter(self, output, source, src):
        """Grouped sends from ``src`` of block r to rank r (its own block by a copy)."""
        rank = self.group.rank()
        kind = self._dtype(output)

        def launch(stream):
            self.nccl.groupStart()
            if rank == src:
                blocks = source.reshape(self.group.size(), -1)
                for peer in range(self.group.size()):
                    if peer != rank:
                        self.comm.send(blocks[peer].data.ptr, output.size, kind, peer, stream)
            else:
                self.comm.recv(output.data.ptr, output.size, kind, src, stream)
            self.nccl.groupEnd()
            if rank == src:
                with self.stream:
                    output.reshape(-1)[...] = blocks[rank]
        return self._run("scatter", launch, (output, source))

    def all_to_all(self, output, output_counts, array, input_counts):
        """Grouped sends of each rank's block of ``array`` and receives of ``output``'s blocks (counts in
        elements, blocks in rank order; this rank's own block by a copy)."""
        rank = self.group.rank()
        kind = self._dtype(array)
        sent, received = _blocks(array, input_counts), _blocks(output, output_counts)

        def launch(stream):
            self.nccl.groupStart()
            for peer in range(self.group.size()):
                if peer != rank and sent[peer].size:
                    self.comm.send(sent[peer].data.ptr, sent[peer].size, kind, peer, stream)
                if peer != rank and received[peer].size:
                    self.comm.recv(received[peer].data.ptr, received[peer].size, kind, peer, stream)
            self.nccl.groupEnd()
            with self.stream:
                received[rank][...] = sent[rank]
        return self._run("all_to_all", launch, (output, array))

    def batch(self, operations):
        """One Work for ``operations``, (``"send"`` or ``"recv"``, array, peer) each, launched as one NCCL
        group (``batch_isend_irecv``: the sends and receives of both sides then cannot block each other)."""
        def launch(stream):
            self.nccl.groupStart()
            for kind, array, peer in operations:
                call = self.comm.send if kind == "send" else self.comm.recv
                call(array.data.ptr, array.size, self._dtype(array), peer, stream)
            self.nccl.groupEnd()
        return self._run("batch_isend_irecv", launch, tuple(array for _, array, _ in operations))

    def send(self, array, dst, tag):
        def launch(stream):
            self.comm.send(array.data.ptr, array.size, self._dtype(array), dst, stream)
        return self._run(f"send to rank {dst}", launch, (array,))

    def recv(self, array, src, tag):
        if src is None:
            raise RuntimeError("recv over NCCL needs the sender's rank (src=None works with the MPI backend)")

        def launch(stream):
            self.comm.recv(array.data.ptr, array.size, self._dtype(array), src, stream)
        work = self._run(f"recv from rank {src}", launch, (array,))
        work.source = lambda: src
        return work


def _blocks(array, counts):
    """``array``'s elements cut into consecutive blocks of ``counts`` elements."""
    flat = array.reshape(-1)
    starts = np.cumsum([0] + list(counts))
    return [flat[lo:hi] for lo, hi in zip(starts[:-1], starts[1:])]
