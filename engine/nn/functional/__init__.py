"""``engine.nn.functional``: PyTorch's functional API, one module per family of ops."""
from .activation import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .ctc import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .fractional_pooling import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .lp_pooling import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .pooling3d import *  # noqa: F401,F403
from .sampling import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .unpooling import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .. import grad  # noqa: E402,F401  (torch.nn.functional.grad is the torch.nn.grad module)
from ...ops.aten_convolution import conv_tbc  # noqa: E402,F401  (torch.nn.functional.conv_tbc is aten's)
from .linear_cross_entropy import *  # noqa: E402,F401,F403
