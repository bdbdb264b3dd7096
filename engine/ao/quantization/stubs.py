"""``torch.ao.quantization.stubs``: where a float model's quantized region begins and ends.

Before ``convert`` the stubs are identities (a ``QuantStub`` gets an observer, which records the range of the
model's input); ``convert`` turns a ``QuantStub`` into ``nnq.Quantize`` (float -> quint8) and a ``DeQuantStub``
into ``nnq.DeQuantize`` (quint8 -> float).
"""
from ...nn.modules.module import Module

__all__ = ["QuantStub", "DeQuantStub", "QuantWrapper"]


class _Stub(Module):
    """An identity until ``convert`` replaces it; ``qconfig`` overrides the one propagated to it."""

    def __init__(self, qconfig=None):
        super().__init__()
        if qconfig:
            self.qconfig = qconfig

    def forward(self, x):
        return x


class QuantStub(_Stub):
    """Identity before ``convert``, ``nnq.Quantize`` after."""


class DeQuantStub(_Stub):
    """Identity before ``convert``, ``nnq.DeQuantize`` after."""


class QuantWrapper(Module):
    """``module`` between a ``QuantStub`` and a ``DeQuantStub`` (children ``quant``, ``dequant``, ``module``), so
    that a float module can be quantized as a whole: it takes and returns float tensors."""

    def __init__(self, module):
        super().__init__()
        qconfig = getattr(module, "qconfig", None)
        self.add_module("quant", QuantStub(qconfig))
        self.add_module("dequant", DeQuantStub(qconfig))
        self.add_module("module", module)
        self.train(module.training)

    def forward(self, X):
        X = self.quant(X)
        X = self.module(X)
        return self.dequant(X)
