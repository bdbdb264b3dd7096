"""All layer modules, gathered for ``engine.nn``."""
from .module import Module
from .container import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .linear_cross_entropy import *  # noqa: F401,F403
