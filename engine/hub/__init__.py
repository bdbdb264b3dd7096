"""``torch.hub``: checkpoints downloaded once into a cache, and models published by a repository's hubconf.py.

- ``get_dir`` / ``set_dir`` (``home.py``): ``$ENGINE_HOME/hub``, ``$ENGINE_HOME`` defaulting to
  ``$XDG_CACHE_HOME/engine`` (torch's rule with the engine's name).
- ``download_url_to_file`` (``download.py``): the one downloader of the project (flowvision's hub uses it too):
  resumed, retried, deadline-bound, sha256-checked, renamed into place under a file lock.
- ``load_state_dict_from_url`` (``checkpoints.py``): read with ``engine.load``, never with torch.
- ``list`` / ``help`` / ``load`` (``repos.py``): GitHub repositories (``"owner/repo[:ref]"``) or local directories.
"""
from .checkpoints import load_state_dict_from_url
from .download import CorruptDownloadError, DownloadError, HashMismatchError, download_url_to_file
from .home import get_dir, set_dir
from .repos import help, list, load

__all__ = ["get_dir", "set_dir", "download_url_to_file", "load_state_dict_from_url", "list", "help", "load",
           "DownloadError", "CorruptDownloadError", "HashMismatchError"]
