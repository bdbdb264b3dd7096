"""``torch.ao.quantization.qconfig``: which observers quantize a layer's activations and weights.

A ``QConfig`` is a pair of observer *factories* (``activation``, ``weight``), not observers: ``prepare`` calls
``activation()`` once per layer it observes and ``convert`` calls ``weight()`` once per weight it quantizes.
Assign one to a model (``model.qconfig = ...``) and ``prepare`` propagates it to every submodule. A QAT qconfig
(``get_default_qat_qconfig``) holds fake quantize factories instead, which ``prepare_qat`` uses the same way.
"""
from collections import namedtuple
from typing import Optional

from ... import _dtype
from ...nn.modules.module import Module
from .fake_quantize import (FakeQuantize, FusedMovingAvgObsFakeQuantize, default_fused_per_channel_wt_fake_quant,
                            default_fused_wt_fake_quant, default_per_channel_weight_fake_quant,
                            default_weight_fake_quant)
from .observer import (HistogramObserver, MinMaxObserver, MovingAverageMinMaxObserver, _PartialWrapper,
                       _partial_wrapper_equals, default_observer, default_per_channel_weight_observer,
                       default_weight_observer, per_channel_weight_observer_range_neg_127_to_127,
                       weight_observer_range_neg_127_to_127)

__all__ = ["QConfig", "QConfigAny", "default_qconfig", "default_per_channel_qconfig", "default_quint8_weight_qconfig",
           "default_symmetric_qnnpack_qconfig", "default_per_channel_symmetric_qnnpack_qconfig",
           "get_default_qconfig", "get_default_qat_qconfig", "qconfig_equals"]


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """How to quantize a layer: ``activation`` and ``weight`` are observer classes or factories
    (``MinMaxObserver.with_args(...)``), each called to make a fresh observer wherever one is needed."""

    __slots__ = ()

    def __new__(cls, activation, weight):
        if isinstance(activation, Module) or isinstance(weight, Module):
            raise ValueError("QConfig received observer instance, please pass observer class instead. Use "
                             "MyObserver.with_args(x=1) to override arguments to constructor if needed")
        return super().__new__(cls, activation, weight)


QConfigAny = Optional[QConfig]

default_qconfig = QConfig(activation=default_observer, weight=default_weight_observer)
"""Activations by ``default_observer`` (0..127), weights symmetric qint8 per tensor."""
default_per_channel_qconfig = QConfig(activation=default_observer, weight=default_per_channel_weight_observer)
"""Activations by ``default_observer`` (0..127), weights symmetric qint8 per output channel."""
default_quint8_weight_qconfig = QConfig(activation=HistogramObserver, weight=MinMaxObserver)
default_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=_dtype.qint8, reduce_range=False, eps=2 ** -12),
    weight=weight_observer_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qconfig = QConfig(
    activation=HistogramObserver.with_args(dtype=_dtype.qint8, reduce_range=False, eps=2 ** -12),
    weight=per_channel_weight_observer_range_neg_127_to_127)

_SUPPORTED_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]


def get_default_qconfig(backend="x86", version=0):
    """PyTorch's default post-training qconfig for ``backend``: activations by a ``HistogramObserver``
    (``reduce_range`` on fbgemm and x86, whose int8 kernels need the spare bit), weights symmetric qint8 per
    output channel (per tensor on qnnpack)."""
    if backend not in _SUPPORTED_BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of {_SUPPORTED_BACKENDS}")
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not supported. Version number "
                             f"must be 0")
    reduce_range = backend in ("fbgemm", "x86")
    weight = default_weight_observer if backend == "qnnpack" else default_per_channel_weight_observer
    return QConfig(activation=HistogramObserver.with_args(reduce_range=reduce_range), weight=weight)


def get_default_qat_qconfig(backend="x86", version=1):
    """PyTorch's default quantization-aware-training qconfig for ``backend``: activations fake-quantized to quint8
    with moving-average extrema (7 bits on fbgemm and x86), weights symmetric qint8 per output channel (per tensor
    on qnnpack). ``version=1``: torch's fused observer + fake quantize modules; ``version=0``: separate ones."""
    if backend not in _SUPPORTED_BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of {_SUPPORTED_BACKENDS}")
    if version not in (0, 1):
        raise AssertionError(f"Version number: {version}in get_default_qat_qconfig is not supported. Version "
                             f"number must be 0 or 1")
    fake_quant = FusedMovingAvgObsFakeQuantize if version == 1 else FakeQuantize
    activation_kwargs = {"observer": MovingAverageMinMaxObserver, "quant_min": 0, "quant_max": 255}
    if backend != "onednn":  # torch leaves onednn's observer at its default (no reduce_range argument)
        activation_kwargs["reduce_range"] = backend != "qnnpack"
    activation = fake_quant.with_args(**activation_kwargs)
    if backend == "qnnpack":
        weight = default_fused_wt_fake_quant if version == 1 else default_weight_fake_quant
    else:
        weight = default_fused_per_channel_wt_fake_quant if version == 1 else default_per_channel_weight_fake_quant
    return QConfig(activation=activation, weight=weight)


def _obs_ctr_equals(obs1, obs2):
    """Whether two observer constructors are the same (factories compared by class and arguments)."""
    if isinstance(obs1, _PartialWrapper) and isinstance(obs2, _PartialWrapper):
        return _partial_wrapper_equals(obs1, obs2)
    return obs1 == obs2


def qconfig_equals(q1, q2):
    """Whether two qconfigs (or ``None``) would make the same observers."""
    if q1 is None or q2 is None:
        return q1 == q2
    try:
        return _obs_ctr_equals(q1.activation, q2.activation) and _obs_ctr_equals(q1.weight, q2.weight)
    except AttributeError:
        return q1 == q2
