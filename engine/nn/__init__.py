"""``engine.nn``: modules, parameters, initialisation and the functional API."""
from . import functional  # noqa: F401
from . import grad, init, utils  # noqa: F401
from .parameter import Buffer, Parameter  # noqa: F401
from .parameter import UninitializedBuffer, UninitializedParameter  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import Module  # noqa: F401
from .graph import Graph, GraphConfig  # noqa: F401
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401
