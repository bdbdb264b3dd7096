"""``torch.ao.quantization``: observers, qconfigs, stubs, fusion, ``prepare`` and ``convert``.

Eager-mode post-training static quantization, as PyTorch's::

    model.eval()
    model.qconfig = QConfig(activation=default_observer, weight=default_per_channel_weight_observer)
    fuse_modules(model, [["conv", "bn", "relu"]], inplace=True)
    prepare(model, inplace=True)      # observers on every quantizable layer
    model(calibration_batch)          # they record activation ranges
    convert(model, inplace=True)      # int8 layers with PyTorch's scales and zero points

Quantization-aware training, as PyTorch's eager mode::

    model.train()
    fuse_modules_qat(model, [["conv", "bn", "relu"]], inplace=True)   # the batch norm stays trainable
    model.qconfig = get_default_qat_qconfig("qnnpack")
    prepare_qat(model, inplace=True)  # QAT layers (fake-quantized weights), fake quantize modules on activations
    ...                               # train: forward and backward through the fake quantization
    model.eval()
    convert(model, inplace=True)      # batch norms folded, weights quantized with their fake quantize's qparams

Dynamic quantization is not implemented.
"""
from .fuse import (fuse_conv_bn, fuse_conv_bn_relu, fuse_convtranspose_bn, fuse_known_modules,  # noqa: F401
                   fuse_linear_bn, fuse_modules, fuse_modules_qat, get_fuser_method)
from .observer import (FixedQParamsObserver, HistogramObserver, MinMaxObserver,  # noqa: F401
                       MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver, NoopObserver, ObserverBase,
                       PerChannelMinMaxObserver, PlaceholderObserver, UniformQuantizationObserverBase,
                       default_fixed_qparams_range_0to1_observer, default_fixed_qparams_range_neg1to1_observer,
                       default_histogram_observer, default_observer, default_per_channel_weight_observer,
                       default_placeholder_observer, default_weight_observer,
                       per_channel_weight_observer_range_neg_127_to_127, weight_observer_range_neg_127_to_127)
from .fake_quantize import (FakeQuantize, FakeQuantizeBase, FixedQParamsFakeQuantize,  # noqa: F401
                            FusedMovingAvgObsFakeQuantize, default_fake_quant,
                            default_fixed_qparams_range_0to1_fake_quant,
                            default_fixed_qparams_range_neg1to1_fake_quant, default_fused_act_fake_quant,
                            default_fused_per_channel_wt_fake_quant, default_fused_wt_fake_quant,
                            default_per_channel_weight_fake_quant, default_weight_fake_quant, disable_fake_quant,
                            disable_observer, enable_fake_quant, enable_observer)
from .qconfig import (QConfig, QConfigAny, default_per_channel_qconfig,  # noqa: F401
                      default_per_channel_symmetric_qnnpack_qconfig, default_qconfig, default_quint8_weight_qconfig,
                      default_symmetric_qnnpack_qconfig, get_default_qat_qconfig, get_default_qconfig,
                      qconfig_equals)
from .quantize import (add_quant_dequant, convert, get_default_custom_config_dict,  # noqa: F401
                       get_default_qat_module_mappings, get_default_qconfig_propagation_list,
                       get_default_static_quant_module_mappings, get_static_quant_module_class, no_observer_set,
                       prepare, prepare_qat, propagate_qconfig_, quantize, swap_module)
from .stubs import DeQuantStub, QuantStub, QuantWrapper  # noqa: F401

__all__ = ["DeQuantStub", "FakeQuantize", "FakeQuantizeBase", "FixedQParamsFakeQuantize", "FixedQParamsObserver",
           "FusedMovingAvgObsFakeQuantize", "HistogramObserver", "MinMaxObserver", "MovingAverageMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "NoopObserver", "ObserverBase", "PerChannelMinMaxObserver",
           "PlaceholderObserver", "QConfig", "QConfigAny", "QuantStub", "QuantWrapper",
           "UniformQuantizationObserverBase", "add_quant_dequant", "convert", "default_fake_quant",
           "default_fixed_qparams_range_0to1_fake_quant", "default_fixed_qparams_range_0to1_observer",
           "default_fixed_qparams_range_neg1to1_fake_quant", "default_fixed_qparams_range_neg1to1_observer",
           "default_fused_act_fake_quant", "default_fused_per_channel_wt_fake_quant", "default_fused_wt_fake_quant",
           "default_histogram_observer", "default_observer", "default_per_channel_qconfig",
           "default_per_channel_symmetric_qnnpack_qconfig", "default_per_channel_weight_fake_quant",
           "default_per_channel_weight_observer", "default_placeholder_observer", "default_qconfig",
           "default_quint8_weight_qconfig", "default_symmetric_qnnpack_qconfig", "default_weight_fake_quant",
           "default_weight_observer", "disable_fake_quant", "disable_observer", "enable_fake_quant",
           "enable_observer", "fuse_conv_bn", "fuse_conv_bn_relu", "fuse_convtranspose_bn", "fuse_known_modules",
           "fuse_linear_bn", "fuse_modules", "fuse_modules_qat", "get_default_custom_config_dict",
           "get_default_qat_module_mappings", "get_default_qat_qconfig", "get_default_qconfig",
           "get_default_qconfig_propagation_list", "get_default_static_quant_module_mappings", "get_fuser_method",
           "get_static_quant_module_class", "no_observer_set", "per_channel_weight_observer_range_neg_127_to_127",
           "prepare", "prepare_qat", "propagate_qconfig_", "qconfig_equals", "quantize", "swap_module",
           "weight_observer_range_neg_127_to_127"]
