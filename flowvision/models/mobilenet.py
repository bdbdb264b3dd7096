"""``torchvision.models.mobilenet``'s path: MobileNet V2 and V3 (defined in ``mobilenetv2`` and ``mobilenetv3``)."""
from .mobilenetv2 import *  # noqa: F401,F403
from .mobilenetv3 import *  # noqa: F401,F403
from .weights import MobileNet_V2_Weights, MobileNet_V3_Large_Weights, MobileNet_V3_Small_Weights  # noqa: F401
