"""Quantizable models (torchvision's ``models.quantization``): int8 inference on the CPU.

Each builder (``quantized_resnet18`` ...) makes the float family with quantization stubs; ``quantize=True``
converts it to int8 layers (fbgemm or qnnpack arithmetic, as the weights were calibrated for) and loads the
published quantized weights when asked for. The same names without the prefix (``quantization.resnet18``) are
torchvision's spellings of the builders.
"""
from .googlenet import *  # noqa: F401,F403
from .googlenet import quantized_googlenet as googlenet  # noqa: F401
from .inception import *  # noqa: F401,F403
from .inception import quantized_inception_v3 as inception_v3  # noqa: F401
from .mobilenetv2 import *  # noqa: F401,F403
from .mobilenetv2 import quantized_mobilenet_v2 as mobilenet_v2  # noqa: F401
from .mobilenetv3 import *  # noqa: F401,F403
from .mobilenetv3 import quantized_mobilenet_v3_large as mobilenet_v3_large  # noqa: F401
from . import mobilenet  # noqa: F401  (torchvision's module path)
from .resnet import *  # noqa: F401,F403
from .resnet import (quantized_resnet18 as resnet18, quantized_resnet50 as resnet50,  # noqa: F401
                     quantized_resnext101_32x8d as resnext101_32x8d, quantized_resnext101_64x4d as resnext101_64x4d)
from .shufflenetv2 import *  # noqa: F401,F403
from .shufflenetv2 import (quantized_shufflenet_v2_x0_5 as shufflenet_v2_x0_5,  # noqa: F401
                           quantized_shufflenet_v2_x1_0 as shufflenet_v2_x1_0,
                           quantized_shufflenet_v2_x1_5 as shufflenet_v2_x1_5,
                           quantized_shufflenet_v2_x2_0 as shufflenet_v2_x2_0)
from .utils import quantize_model  # noqa: F401
from ..weights import (GoogLeNet_QuantizedWeights, Inception_V3_QuantizedWeights,  # noqa: F401
                       MobileNet_V2_QuantizedWeights, MobileNet_V3_Large_QuantizedWeights, ResNet18_QuantizedWeights,
                       ResNet50_QuantizedWeights, ResNeXt101_32X8D_QuantizedWeights,
                       ResNeXt101_64X4D_QuantizedWeights, ShuffleNet_V2_X0_5_QuantizedWeights,
                       ShuffleNet_V2_X1_0_QuantizedWeights, ShuffleNet_V2_X1_5_QuantizedWeights,
                       ShuffleNet_V2_X2_0_QuantizedWeights)
