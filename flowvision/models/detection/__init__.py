"""Object detection models (torchvision.models.detection): Faster/Mask/Keypoint R-CNN, RetinaNet, FCOS, SSD.

Each model takes a list of CHW float images in [0, 1] (any sizes) and returns, in eval mode, one dict per
image (``boxes`` x1y1x2y2 in the image's pixels, ``labels``, ``scores``, plus ``masks`` / ``keypoints``);
in train mode, with ``targets``, the dict of losses. Names, arguments and state_dict keys follow torchvision.
"""
from .faster_rcnn import *  # noqa: F401,F403
from .mask_rcnn import *  # noqa: F401,F403
from .keypoint_rcnn import *  # noqa: F401,F403
from .retinanet import *  # noqa: F401,F403
from .fcos import *  # noqa: F401,F403
from .ssd import *  # noqa: F401,F403
from .ssdlite import *  # noqa: F401,F403
