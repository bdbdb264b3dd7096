"""The op library: every op is a small ``Function``; this package gathers the public functions."""
from .convert import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .elementwise import *  # noqa: F401,F403
from .reduction import *  # noqa: F401,F403
from .shape import *  # noqa: F401,F403
from .indexing import *  # noqa: F401,F403
from .sorting import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403

from . import (activation as _a, convert as _cv, creation as _cr, elementwise as _e, indexing as _i,  # noqa: E402
               linalg as _l, reduction as _r, shape as _sh, sorting as _so)

__all__ = [name for module in (_a, _cv, _cr, _e, _i, _l, _r, _sh, _so) for name in module.__all__]
