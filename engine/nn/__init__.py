"""``engine.nn``: modules, parameters, initialisation and the functional API."""
import importlib as _importlib

from . import functional  # noqa: F401
from . import grad, init, utils  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from .parameter import UninitializedBuffer, UninitializedParameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
attention = _importlib.import_module(".attention", __name__)  # the package, over the star import's nn.modules.attention
from .graph import Graph, GraphConfig  # noqa: F401
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401
