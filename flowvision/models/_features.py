"""Feature extraction: ``FeatureListNet`` (timm's ``features_only``) and ``create_feature_extractor``.

``FeatureListNet`` rebuilds a model's top-level children up to its last requested stage and returns
the stage outputs as a list. ``create_feature_extractor`` works on any model: forward hooks collect
the outputs of named submodules, as torchvision's FX-based helper does for module outputs.
"""
from engine import nn

__all__ = ["FeatureInfo", "FeatureListNet", "create_feature_extractor", "get_module_names"]


class FeatureInfo:
    """The stages a feature model returns: channels, reduction (stride) and module name of each."""

    def __init__(self, feature_info, out_indices):
        self.out_indices = tuple(out_indices)
        for i in self.out_indices:
            if not 0 <= i < len(feature_info):
                raise IndexError(f"out_indices {self.out_indices} out of range for a model with "
                                 f"{len(feature_info)} feature stages")
        self.info = [dict(feature_info[i]) for i in self.out_indices]

    def get(self, key, idx=None):
        """The value of ``key`` for all returned stages, or for the stage(s) at position ``idx``."""
        if idx is None:
            return [f[key] for f in self.info]
        if isinstance(idx, (tuple, list)):
            return [self.info[i][key] for i in idx]
        return self.info[idx][key]

    def channels(self, idx=None):
        """Channels of each returned stage."""
        return self.get("num_chs", idx)

    def reduction(self, idx=None):
        """Spatial reduction (total stride) of each returned stage."""
        return self.get("reduction", idx)

    def module_name(self, idx=None):
        """Module path of each returned stage in the original model."""
        return self.get("module", idx)

    def get_dicts(self):
        """The stage descriptions as dicts (copies)."""
        return [dict(f) for f in self.info]

    def __getitem__(self, item):
        return self.info[item]

    def __len__(self):
        return len(self.info)

    def __repr__(self):
        return f"FeatureInfo({self.info})"


class FeatureListNet(nn.Module):
    """A model cut after its last requested stage; ``forward`` returns the stage outputs as a list.

    The stages named in ``model.feature_info`` must be top-level children; children are kept in
    registration order under their own names, so state_dict keys stay those of the model.
    """

    def __init__(self, model, out_indices=(0, 1, 2, 3, 4)):
        super().__init__()
        self.feature_info = FeatureInfo(model.feature_info, out_indices)
        wanted = {info["module"] for info in self.feature_info.get_dicts()}
        self._return_layers = set(wanted)
        for name, module in model.named_children():
            if not wanted:
                break
            self.add_module(name, module)
            wanted.discard(name)
        if wanted:
            raise ValueError(f"feature modules {sorted(wanted)} are not top-level children of "
                             f"{type(model).__name__}")

    def forward(self, x):
        features = []
        for name, module in self.named_children():
            x = module(x)
            if name in self._return_layers:
                features.append(x)
        return features


class _Collected(Exception):
    """Raised by a hook once every requested output is captured, to skip the rest of the forward."""


class FeatureExtractor(nn.Module):
    """Wraps a model; ``forward`` returns a dict of the outputs of named submodules."""

    def __init__(self, model, return_nodes):
        super().__init__()
        self.model = model
        if isinstance(return_nodes, dict):
            self.return_nodes = dict(return_nodes)
        else:
            self.return_nodes = {name: name for name in return_nodes}
        modules = dict(model.named_modules())
        missing = [name for name in self.return_nodes if name not in modules]
        if missing:
            raise ValueError(f"return_nodes {missing} are not modules of {type(model).__name__}; "
                             f"see get_module_names(model)")

    def forward(self, *args, **kwargs):
        modules = dict(self.model.named_modules())
        outputs = {}

        def hook_for(name):
            def hook(module, inputs, output):
                key = self.return_nodes[name]
                if key not in outputs:
                    outputs[key] = output
                if len(outputs) == len(self.return_nodes):
                    raise _Collected

            return hook

        handles = [modules[name].register_forward_hook(hook_for(name)) for name in self.return_nodes]
        try:
            self.model(*args, **kwargs)
        except _Collected:
            pass
        finally:
            for handle in handles:
                handle.remove()
        return {key: outputs[key] for key in self.return_nodes.values() if key in outputs}


def create_feature_extractor(model, return_nodes):
    """A module returning ``{output name: output of module}`` for the named submodules of ``model``.

    ``return_nodes`` is a list of module paths (``'layer1'``, ``'layer4.2.relu'``) or a dict mapping
    paths to output names. A module called more than once reports its first call's output.
    """
    return FeatureExtractor(model, return_nodes)


def get_module_names(model):
    """Paths of all submodules of ``model`` (the names ``create_feature_extractor`` accepts)."""
    return [name for name, _ in model.named_modules() if name]
