"""Where ``engine.hub`` keeps what it downloads (``torch.hub.get_dir`` / ``set_dir``).

torch's rule is ``$TORCH_HOME/hub`` with ``$TORCH_HOME`` defaulting to ``$XDG_CACHE_HOME/torch`` (and
``$XDG_CACHE_HOME`` to ``~/.cache``). The engine keeps the same rule under its own name: ``$ENGINE_HOME/hub``,
``$ENGINE_HOME`` defaulting to ``$XDG_CACHE_HOME/engine``. It does not read ``$TORCH_HOME``: torch's cache holds
repositories whose code imports torch, which the engine cannot run.
"""
import os

__all__ = ["ENV_ENGINE_HOME", "ENV_XDG_CACHE_HOME", "get_dir", "set_dir"]

ENV_ENGINE_HOME = "ENGINE_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
_DEFAULT_CACHE_DIR = "~/.cache"
_hub_dir = None


def _engine_home():
    """``$ENGINE_HOME``, else ``$XDG_CACHE_HOME/engine``, with ``~`` expanded."""
    cache = os.getenv(ENV_XDG_CACHE_HOME, _DEFAULT_CACHE_DIR)
    return os.path.expanduser(os.getenv(ENV_ENGINE_HOME, os.path.join(cache, "engine")))


def get_dir():
    """The hub directory: ``set_dir``'s value, else ``$ENGINE_HOME/hub`` (see the module's docstring)."""
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_engine_home(), "hub")


def set_dir(d):
    """Use ``d`` (a path; ``~`` is expanded) as the hub directory for this process."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))
