"""``torch.backends.quantized``: which quantized engine's arithmetic the quantized kernels reproduce.

PyTorch's quantized CPU kernels come from two libraries whose rounding differs: fbgemm (x86 servers; per-channel
int8 weights) and qnnpack (mobile; per-tensor weights). A quantized model gives its reference results only under
the engine it was calibrated for, which is why torchvision's quantized builders set this switch (``fbgemm`` for
ResNet, GoogLeNet, Inception and ShuffleNet, ``qnnpack`` for the MobileNets). ``engine.backends.cpu.quantized``
implements both, each equal to torch's results bit for bit.
"""
import sys
import types

supported_engines = ["fbgemm", "qnnpack"]


class _QuantizedModule(types.ModuleType):
    """The module's class: ``engine`` takes only a supported engine's name (torch's error otherwise)."""

    _engine = "fbgemm"

    @property
    def engine(self):
        return self._engine

    @engine.setter
    def engine(self, name):
        if name not in supported_engines:
            raise RuntimeError(f"quantized engine {name} is not supported (supported: {', '.join(supported_engines)})")
        type(self)._engine = name


sys.modules[__name__].__class__ = _QuantizedModule
