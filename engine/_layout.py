"""``engine.layout`` and ``engine.memory_format``: the named constants PyTorch code passes around.

Every engine tensor is dense and strided, so ``x.layout`` is always ``engine.strided``; the memory
formats are accepted where PyTorch takes them (``x.contiguous(memory_format=...)``) so that code
naming them runs, and print as PyTorch's do.
"""


class _Named:
    """A singleton constant that prints as ``engine.<name>`` (PyTorch prints ``torch.<name>``)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"engine.{self.name}"

    def __reduce__(self):
        return self.name


class layout(_Named):
    """How a tensor's elements are stored (``torch.layout``)."""


class memory_format(_Named):
    """An order of a tensor's dimensions in memory (``torch.memory_format``)."""


strided = layout("strided")
sparse_coo = layout("sparse_coo")

contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

__all__ = ["layout", "memory_format", "strided", "sparse_coo", "contiguous_format", "preserve_format",
           "channels_last", "channels_last_3d"]
