"""The v2 functionals: each takes an image (tensor, ``Image`` or PIL), video, mask, boxes or key points and runs
the kernel registered for that type (``register_kernel`` adds kernels for custom TVTensors)."""
from ...functional import InterpolationMode  # noqa: F401
from ._augment import *  # noqa: F401,F403
from ._color import *  # noqa: F401,F403
from ._deprecated import *  # noqa: F401,F403
from ._geometry import *  # noqa: F401,F403
from ._geometry_warp import *  # noqa: F401,F403
from ._meta import (clamp_bounding_boxes, clamp_keypoints, convert_bounding_box_format, get_dimensions,  # noqa: F401
                    get_dimensions_image, get_dimensions_video, get_image_num_channels, get_num_channels,
                    get_num_channels_image, get_num_channels_video, get_num_frames, get_num_frames_video, get_size,
                    get_size_bounding_boxes, get_size_image, get_size_keypoints, get_size_mask, get_size_video)
from ._misc import *  # noqa: F401,F403
from ._temporal import *  # noqa: F401,F403
from ._type_conversion import *  # noqa: F401,F403
from ._utils import is_pure_tensor, register_kernel  # noqa: F401
