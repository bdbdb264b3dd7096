"""Video classification models (clips in, Kinetics-400 actions out): the video ResNets, S3D, MViT and Video Swin.

Inputs are float clips (N, 3, T, H, W), as ``VideoClassification`` (the weights' ``transforms()``) makes them
from frames; names, arguments and state_dict keys follow ``torchvision.models.video``.
"""
from .video_resnet import *  # noqa: F401,F403
from .s3d import *  # noqa: F401,F403
from .mvit import *  # noqa: F401,F403
from .swin3d import *  # noqa: F401,F403
from . import resnet, swin_transformer  # noqa: F401,E402  (torchvision's module paths)
from ..weights import (MC3_18_Weights, MViT_V1_B_Weights, MViT_V2_S_Weights, R2Plus1D_18_Weights,  # noqa: F401
                       R3D_18_Weights, S3D_Weights, Swin3D_B_Weights, Swin3D_S_Weights, Swin3D_T_Weights)
