"""``torchvision.models.video.resnet``'s path: the video ResNets (defined in ``video_resnet``)."""
from .video_resnet import *  # noqa: F401,F403
from ..weights import MC3_18_Weights, R2Plus1D_18_Weights, R3D_18_Weights  # noqa: F401
