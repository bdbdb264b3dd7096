"""``torch.testing``: ``assert_close`` (``comparison.py``), ``make_tensor`` (``creation.py``) and the deprecated
``assert_allclose``."""
from .comparison import assert_allclose, assert_close
from .creation import make_tensor

__all__ = ["assert_close", "assert_allclose", "make_tensor"]
