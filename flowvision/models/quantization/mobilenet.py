"""``torchvision.models.quantization.mobilenet``'s path: the quantizable MobileNet V2 and V3 (defined in
``mobilenetv2`` and ``mobilenetv3``), with torchvision's builder names."""
from .mobilenetv2 import *  # noqa: F401,F403
from .mobilenetv2 import quantized_mobilenet_v2 as mobilenet_v2  # noqa: F401
from .mobilenetv3 import *  # noqa: F401,F403
from .mobilenetv3 import quantized_mobilenet_v3_large as mobilenet_v3_large  # noqa: F401
from ..weights import MobileNet_V2_QuantizedWeights, MobileNet_V3_Large_QuantizedWeights  # noqa: F401
