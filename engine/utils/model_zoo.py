"""``torch.utils.model_zoo``: the older name of the hub's checkpoint download (``load_url``)."""
from tqdm import tqdm

from ..hub import load_state_dict_from_url as load_url

__all__ = ["load_url", "tqdm"]  # tqdm: torch's module re-exports it
