"""How tensors travel through ``engine.multiprocessing`` queues, pipes and process arguments.

Registered with ``multiprocessing``'s ``ForkingPickler`` (which every queue, pipe and spawned process
uses): a CPU tensor in shared memory (``share_memory_()``) is sent as its segment's file descriptor
and its place in it, so the receiver maps the same memory and in-place updates on either side are seen
by the other, as with PyTorch's shared tensors. Another CPU tensor is sent as a copy of its elements
(PyTorch would first move it into shared memory; call ``share_memory_()`` to share it). A
``Parameter`` arrives as a ``Parameter``; a tensor that requires grad but is not a leaf, or a CUDA
tensor, is refused in one line.
"""
from multiprocessing import reduction

from ..nn.parameter import Parameter
from ..tensor import Tensor, _new
from .shared_memory import SharedSegment, array_in, segment_of


def reduce_tensor(tensor):
    """What the pickler stores for ``tensor`` (see the module's docstring)."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError("cannot send a non-leaf tensor that requires grad to another process (autograd "
                           "does not cross processes): send tensor.detach()")
    if tensor.device.type != "cpu":
        raise RuntimeError(f"cannot send a {tensor.device} tensor to another process: GPU memory is not "
                           "shared between processes here; send tensor.cpu()")
    array = tensor._data
    segment = segment_of(array)
    if segment is None:
        return rebuild_copy, (type(tensor), array, tensor.requires_grad)
    offset = array.__array_interface__["data"][0] - segment.address
    place = (array.dtype.str, array.shape, array.strides, offset)
    return rebuild_shared, (type(tensor), reduction.DupFd(segment.fd), len(segment), place, tensor.requires_grad)


def _as(kind, array, requires_grad):
    """A tensor of class ``kind`` (Tensor or Parameter) over ``array``."""
    if kind is Parameter:
        return Parameter(_new(array), requires_grad)
    return _new(array, requires_grad)


def rebuild_copy(kind, array, requires_grad):
    return _as(kind, array, requires_grad)


def rebuild_shared(kind, duplicated_fd, size, place, requires_grad):
    """Map the sender's segment here and view the tensor's elements in it."""
    segment = SharedSegment.attach(duplicated_fd.detach(), size)
    return _as(kind, array_in(segment, *place), requires_grad)


def register():
    """Make ``multiprocessing``'s pickler send tensors this way."""
    for kind in (Tensor, Parameter):
        reduction.ForkingPickler.register(kind, reduce_tensor)
