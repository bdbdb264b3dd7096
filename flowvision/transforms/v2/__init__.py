"""torchvision's ``transforms.v2``: transforms of whole samples (images with their boxes, masks, key points and
labels), dispatched by ``flowvision.tv_tensors`` type."""
from . import functional  # noqa: F401
from ..functional import InterpolationMode  # noqa: F401
from ._augment import *  # noqa: F401,F403
from ._auto_augment import *  # noqa: F401,F403
from ._color import *  # noqa: F401,F403
from ._container import *  # noqa: F401,F403
from ._geometry import *  # noqa: F401,F403
from ._geometry_warp import *  # noqa: F401,F403
from ._meta import *  # noqa: F401,F403
from ._misc import *  # noqa: F401,F403
from ._transform import Transform  # noqa: F401
from ._type_conversion import *  # noqa: F401,F403
from ._utils import check_type, get_bounding_boxes, get_keypoints, has_all, has_any, query_chw, query_size  # noqa: F401
