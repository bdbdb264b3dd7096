"""``P2POp`` and ``batch_isend_irecv``: several sends and receives started together.

Over MPI each operation is its own non-blocking call and gets its own Work. Over NCCL the batch is one
NCCL group, so that ranks sending to each other first cannot block one another; as torch's NCCL
backend, the list returned then holds one Work, for the whole batch.
"""
from .collectives import _check_tensor, _transport, _Wire, peer_of, start_recv, start_send
from .collectives import irecv, isend
from .process_group import resolve


class P2POp:
    """One send or receive of ``batch_isend_irecv``: ``op`` is ``isend`` or ``irecv``, ``peer`` the other
    side's global rank (or ``group_peer`` its rank in ``group``)."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        _check_tensor("P2POp", tensor)
        self.op = op
        self.tensor = tensor
        self.group = resolve(group)
        name = "dst" if op is isend else "src"
        self.group_peer = peer_of("P2POp", name, self.group, peer, group_peer)
        self.peer = self.group.ranks[self.group_peer]
        self.tag = tag

    def __repr__(self):
        return (f"P2POp({self.op.__name__}, peer={self.peer}, {list(self.tensor.shape)}, "
                f"{self.tensor.dtype.name})")


def batch_isend_irecv(p2p_op_list):
    """Start every operation of ``p2p_op_list`` (P2POps of one group); returns their Works."""
    if not isinstance(p2p_op_list, (list, tuple)) or not p2p_op_list \
            or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    group = p2p_op_list[0].group
    if any(p.group is not group for p in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    transports = {_transport(group, p.tensor)[0] for p in p2p_op_list}
    if group.nccl is not None and transports == {group.nccl}:
        return [_nccl_batch(group, p2p_op_list)]
    return [start_send("isend", p.tensor, None, group, p.tag, p.group_peer) if p.op is isend
            else start_recv("irecv", p.tensor, None, group, p.tag, p.group_peer) for p in p2p_op_list]


def _nccl_batch(group, operations):
    """One Work for CUDA tensors' sends and receives launched as one NCCL group."""
    wires = [_Wire(p.tensor, False) for p in operations]
    work = group.nccl.batch([("send" if p.op is isend else "recv", w.array, p.group_peer)
                             for p, w in zip(operations, wires)])
    for p, wire in zip(operations, wires):
        if p.op is irecv:
            work.then(wire.land)
    return work
