"""The MPI transport of host arrays, on mpi4py: each operation starts as one non-blocking MPI call
(``Iallreduce``, ``Ibcast``...) and returns a ``Work`` whose wait polls it under the group's timeout.

Arrays come in C-contiguous (``collectives.py`` stages others); results are written in place. MPI has
no average and no boolean sum: AVG is a sum divided after the transfer, and bool arrays travel as
bytes reduced by MAX (SUM, MAX, BOR: any true) or MIN (PRODUCT, MIN, BAND: all true).
"""
import numpy as np

from .mpi_bytes import ByteMessages
from .reduce_op import ReduceOp
from .work import Work

_BOOL_OPS = {ReduceOp.SUM: "MAX", ReduceOp.MAX: "MAX", ReduceOp.BOR: "MAX", ReduceOp.PRODUCT: "MIN",
             ReduceOp.MIN: "MIN", ReduceOp.BAND: "MIN", ReduceOp.BXOR: "BXOR"}
_OPS = {ReduceOp.SUM: "SUM", ReduceOp.AVG: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
        ReduceOp.MAX: "MAX", ReduceOp.BAND: "BAND", ReduceOp.BOR: "BOR", ReduceOp.BXOR: "BXOR"}
_BITWISE = (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)


def check_reducible(op, dtype):
    """One line when ``op`` cannot reduce arrays of ``dtype`` (bitwise ops on floats, AVG of bools)."""
    if op in _BITWISE and dtype.kind == "f":
        raise RuntimeError(f"ReduceOp.{op.name} needs an integer or bool tensor, got {dtype.name}")
    if op is ReduceOp.AVG and dtype.kind == "b":
        raise RuntimeError("ReduceOp.AVG needs a numeric tensor, got bool")


def divide_into_average(array, count):
    """``array`` (a sum over ``count`` ranks) divided in place: true division for floats, division
    truncated toward zero for integers (as NCCL's average)."""
    if array.dtype.kind == "f":
        array /= count
        return
    quotient = np.abs(array) // count
    np.copyto(array, np.sign(array) * quotient, casting="unsafe")


def _wire(array):
    """The buffer MPI sends: the array itself, or bool bytes as uint8."""
    return array.view(np.uint8) if array.dtype == np.bool_ else array


class MPITransport(ByteMessages):
    """Collectives and point-to-point messages of one communicator over host arrays; pickled objects
    (``mpi_bytes.py``) and ``monitored_barrier`` also use ``control``, a duplicate of the communicator."""

    def __init__(self, comm, group):
        from mpi4py import MPI
        self.MPI = MPI
        self.comm = comm
        self.group = group
        self.control = comm.Dup()
        self.monitored_barriers = 0  # how many this group has started: each one's messages have its own tag

    def free(self):
        self.control.Free()

    def _work(self, request, what, finish=None, buffers=()):
        """A Work waiting on ``request``; ``buffers`` stay referenced until it completes."""
        work = Work(request.Test, what, self.group, finish)
        work.buffers = buffers
        return work

    def _op(self, op, dtype):
        check_reducible(op, dtype)
        names = _BOOL_OPS if dtype == np.bool_ else _OPS
        return getattr(self.MPI, names[op])

    def _average(self, op, array):
        """The finishing step of an AVG reduction into ``array`` (None for other ops)."""
        if op is not ReduceOp.AVG:
            return None
        return lambda: divide_into_average(array, self.comm.Get_size())

    def all_reduce(self, array, op):
        request = self.comm.Iallreduce(self.MPI.IN_PLACE, _wire(array), op=self._op(op, array.dtype))
        return self._work(request, "all_reduce", self._average(op, array), (array,))

    def broadcast(self, array, src):
        request = self.comm.Ibcast(_wire(array), root=src)
        return self._work(request, "broadcast", None, (array,))

    def reduce(self, array, dst, op):
        mpi_op = self._op(op, array.dtype)
        if self.comm.Get_rank() == dst:
            request = self.comm.Ireduce(self.MPI.IN_PLACE, _wire(array), op=mpi_op, root=dst)
            return self._work(request, "reduce", self._average(op, array), (array,))
        request = self.comm.Ireduce(_wire(array), None, op=mpi_op, root=dst)
        return self._work(request, "reduce", None, (array,))

    def all_gather(self, output, array):
        """``output`` (world_size times ``array``'s size, contiguous) gets every rank's array in rank order."""
        request = self.comm.Iallgather(_wire(array), _wire(output))
        return self._work(request, "all_gather", None, (output, array))

    def reduce_scatter(self, output, array, op):
        """Rank r's ``output`` gets the reduction of block r of every rank's ``array``."""
        request = self.comm.Ireduce_scatter_block(_wire(array), _wire(output), op=self._op(op, array.dtype))
        return self._work(request, "reduce_scatter", self._average(op, output), (output, array))

    def gather(self, output, array, dst):
        """``output`` (on ``dst`` only; None elsewhere) gets every rank's array in rank order."""
        request = self.comm.Igather(_wire(array), None if output is None else _wire(output), root=dst)
        return self._work(request, "gather", None, (output, array))

    def scatter(self, output, source, src):
        """Block r of ``source`` (on ``src`` only; None elsewhere) lands in rank r's ``output``."""
        request = self.comm.Iscatter(None if source is None else _wire(source), _wire(output), root=src)
        return self._work(request, "scatter", None, (output, source))

    def all_to_all(self, output, output_counts, array, input_counts):
        """Rank r's ``output`` gets, in rank order, the block each rank's ``array`` holds for r: blocks
        follow each other, ``input_counts[q]`` elements for rank q, ``output_counts[q]`` from rank q."""
        request = self.comm.Ialltoallv([_wire(array), input_counts], [_wire(output), output_counts])
        return self._work(request, "all_to_all", None, (output, array))

    def send(self, array, dst, tag):
        request = self.comm.Isend(_wire(array), dest=dst, tag=tag)
        return self._work(request, f"send to rank {dst}", None, (array,))

    def recv(self, array, src, tag):
        """Receive into ``array`` from ``src`` (None: any rank); the Work's ``source()`` is the sender."""
        status = self.MPI.Status()
        source = self.MPI.ANY_SOURCE if src is None else src
        request = self.comm.Irecv(_wire(array), source=source, tag=tag)
        what = "recv from any rank" if src is None else f"recv from rank {src}"
        work = Work(lambda: request.Test(status), what, self.group)
        work.buffers = (array,)
        work.source = status.Get_source
        return work

    def barrier(self):
        return self._work(self.comm.Ibarrier(), "barrier")
