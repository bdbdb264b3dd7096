"""The order in which torch's CPU kernels visit a tensor's elements when they fill it.

A fill (uniform_, normal_ on non-contiguous tensors, bernoulli_ ...) runs through a TensorIterator,
which orders the dimensions by the output's strides: it walks the target in memory order, not in
index order. The n-th number drawn lands on the n-th element of that walk.
"""


def memory_order_axes(array):
    """``array``'s axes from the largest stride to the smallest (ties keep their order)."""
    return sorted(range(array.ndim), key=lambda axis: -abs(array.strides[axis]))


def fill_in_memory_order(out, values):
    """Write the flat ``values`` into ``out`` in the order torch's fill visits it."""
    view = out.transpose(memory_order_axes(out))
    view[...] = values.reshape(view.shape)
