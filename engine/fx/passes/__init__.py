"""``engine.fx.passes``: analyses and transforms over traced graphs (torch.fx.passes): ``shape_prop`` (tensor
metadata on every node), ``split_module`` (cut a graph into submodules), ``utils.matcher_utils`` (subgraph
matching)."""
from . import shape_prop, split_module, utils  # utils loads matcher_utils, as torch's

__all__ = ["shape_prop", "split_module", "utils"]
