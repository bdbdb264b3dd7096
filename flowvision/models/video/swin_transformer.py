"""``torchvision.models.video.swin_transformer``'s path: Video Swin (defined in ``swin3d``)."""
from .swin3d import *  # noqa: F401,F403
from ..weights import Swin3D_B_Weights, Swin3D_S_Weights, Swin3D_T_Weights  # noqa: F401
