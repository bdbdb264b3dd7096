"""Semantic segmentation models: FCN, DeepLabV3 and LR-ASPP on ResNet and MobileNetV3 backbones.

Each returns ``{"out": logits}`` (and ``"aux"`` with ``aux_loss``) at the input's size; names,
arguments and state_dict keys follow ``torchvision.models.segmentation``.
"""
from .deeplabv3 import *  # noqa: F401,F403
from .fcn import *  # noqa: F401,F403
from .lraspp import *  # noqa: F401,F403
from ..weights import (DeepLabV3_MobileNet_V3_Large_Weights, DeepLabV3_ResNet50_Weights,  # noqa: F401
                       DeepLabV3_ResNet101_Weights, FCN_ResNet50_Weights, FCN_ResNet101_Weights,
                       LRASPP_MobileNet_V3_Large_Weights)
