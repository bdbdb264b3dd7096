"""``monitored_barrier``: a barrier that names the ranks that did not reach it.

Group rank 0 waits for a message from every other rank (over the group's control communicator, with a
tag of this barrier's own, so that a late rank's message never counts for a later barrier), then answers
each. Ranks missing at the timeout make rank 0 raise ``DistBackendError`` naming the first of them (all
of them with ``wait_all_ranks=True``), in torch's words; the other ranks' waits for the answer time out.
"""
import datetime
import time
import warnings

import numpy as np

from .collectives import member_group
from .errors import DistBackendError
from .work import Work, wait_until


def _seconds(timeout, group):
    if timeout is None:
        return group.timeout
    if isinstance(timeout, (int, float)):
        warnings.warn("Please specify timeout arg as a timedelta. Converting current value of "
                      f"{timeout} assuming it represents seconds", stacklevel=3)
        timeout = datetime.timedelta(seconds=timeout)
    return timeout.total_seconds()


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """Wait until every rank of ``group`` has called ``monitored_barrier``; on rank 0, raise naming the
    ranks that did not within ``timeout`` (a ``timedelta``; the group's timeout by default)."""
    pg = member_group("monitored_barrier", group)
    if pg is None:
        return
    seconds = _seconds(timeout, pg)
    mpi = pg.mpi
    mpi.monitored_barriers += 1
    tag = 2 + mpi.monitored_barriers % 30000  # above mpi_bytes' OBJECT_TAG, within MPI's guaranteed tag range
    token = np.zeros(1, np.uint8)
    if pg.rank() != 0:
        mpi.control.Isend(token, dest=0, tag=tag).Wait()
        Work(mpi.control.Irecv(token, source=0, tag=tag).Test, "monitored_barrier", pg).wait(seconds)
        return
    _gather_arrivals(pg, tag, seconds, wait_all_ranks)
    for peer in range(1, pg.size()):
        mpi.control.Isend(token, dest=peer, tag=tag).Wait()


def _gather_arrivals(pg, tag, seconds, wait_all_ranks):
    """On rank 0: wait for every other rank's message, or raise naming those missing at the deadline."""
    tokens = {peer: np.zeros(1, np.uint8) for peer in range(1, pg.size())}
    requests = {peer: pg.mpi.control.Irecv(tokens[peer], source=peer, tag=tag) for peer in tokens}
    arrived = set()

    def all_arrived():
        arrived.update(peer for peer, request in requests.items() if peer not in arrived and request.Test())
        return len(arrived) == len(requests)
    try:
        wait_until(all_arrived, time.monotonic() + seconds, str)
    except RuntimeError:
        missing = [peer for peer in sorted(requests) if peer not in arrived]
        for peer in missing:
            requests[peer].Cancel()
            requests[peer].Wait()
        milliseconds = int(seconds * 1000)
        if wait_all_ranks:
            raise DistBackendError(f"[Rank 0]: Ranks {', '.join(map(str, missing))} failed to pass "
                                   f"monitoredBarrier in {milliseconds} ms") from None
        raise DistBackendError(f"[Rank 0]: Rank {missing[0]} failed to pass monitoredBarrier in "
                               f"{milliseconds} ms") from None
