"""Feature extraction: timm's ``features_only`` wrappers and ``create_feature_extractor``.

``FeatureListNet`` rebuilds a model's top-level children up to its last requested stage and returns
the stage outputs as a list (``FlatFeatureListNet``: with the children of top-level Sequentials lifted up, as
timm's Swin features are); ``FeatureHookNet`` does the same for stages that end inside blocks, with
forward hooks; ``FeatureGetterNet`` asks a transformer's ``forward_intermediates`` for its blocks'
outputs as maps (``FeatureBodyNet``: for its stages', the model kept whole). A model names the wrapper it
needs in ``feature_wrapper`` (``FeatureListNet`` when it does not). ``create_feature_extractor`` works on any
model: forward hooks collect the outputs of named submodules, as torchvision's FX-based helper does for
module outputs. ``intermediate_stages``, ``run_stages`` and ``prune_stages`` are the shared steps of the models'
``forward_intermediates`` and ``prune_intermediate_layers``.
"""
from collections import OrderedDict

from engine import nn

__all__ = ["FeatureInfo", "FeatureListNet", "FlatFeatureListNet", "FeatureHookNet", "FeatureGetterNet",
           "FeatureBodyNet", "create_feature_extractor", "get_module_names", "sequential_feature_info", "take_indices",
           "intermediate_stages", "run_stages", "prune_stages"]


class FeatureInfo:
    """The stages a feature model returns: channels, reduction (stride) and module name of each."""

    def __init__(self, feature_info, out_indices):
        # timm's spelling: n picks the last n stages, a negative index counts from the end
        count = len(feature_info)
        if isinstance(out_indices, int):
            out_indices = range(count - out_indices, count)
        self.out_indices = tuple(count + i if i < 0 else i for i in out_indices)
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


def _block_stride(block):
    """How much ``block`` (one link of a plain conv chain) shrinks the feature map: its convs' and pools' strides."""
    stride = 1
    for module in block.modules():
        if isinstance(module, (nn.Conv2d, nn.MaxPool2d, nn.AvgPool2d)):
            s = module.stride
            stride *= s[0] if isinstance(s, tuple) else s
    return stride


def _block_channels(block, channels):
    """The channels ``block`` outputs, given the ``channels`` it receives (its last conv's, else unchanged)."""
    convs = [m for m in block.modules() if isinstance(m, nn.Conv2d)]
    return convs[-1].out_channels if convs else channels


def sequential_feature_info(features, prefix="features", in_chans=3):
    """``feature_info`` of a model whose trunk is the plain chain ``features`` (MobileNet, VGG).

    A stage ends at the last block before the map shrinks again, and at the end of the chain.
    """
    info = []
    reduction, channels = 1, in_chans
    blocks = list(features.named_children())
    for i, (name, block) in enumerate(blocks):
        reduction *= _block_stride(block)
        channels = _block_channels(block, channels)
        is_last = i == len(blocks) - 1
        if is_last or _block_stride(blocks[i + 1][1]) > 1:
            info.append(dict(num_chs=channels, reduction=reduction, module=f"{prefix}.{name}"))
    return info


def take_indices(num_blocks, indices):
    """Absolute block indices from timm's ``indices``: None (all), n (the last n) or a list (negative from
    the end)."""
    if indices is None:
        indices = num_blocks
    if isinstance(indices, int):
        if not 0 < indices <= num_blocks:
            raise IndexError(f"last-n ({indices}) is out of range (1 to {num_blocks})")
        return list(range(num_blocks - indices, num_blocks))
    taken = [num_blocks + i if i < 0 else i for i in indices]
    for i in taken:
        if not 0 <= i < num_blocks:
            raise IndexError(f"block index {i} is out of range (0 to {num_blocks - 1})")
    return taken


def intermediate_stages(stages, indices, stop_early, output_fmt, formats=("NCHW",)):
    """timm's ``forward_intermediates`` set-up: refuse an ``output_fmt`` outside ``formats``; the absolute indices
    that ``indices`` picks among ``stages`` (see ``take_indices``) and the stages to run, as a list (up to the last
    one picked with ``stop_early``, else all)."""
    if output_fmt not in formats:
        raise ValueError(f"output_fmt must be {' or '.join(repr(f) for f in formats)}, got {output_fmt!r}")
    take = take_indices(len(stages), indices)
    return take, list(stages)[:max(take) + 1] if stop_early else list(stages)


def run_stages(x, stages, take):
    """``x`` through ``stages`` in turn: the last output and the outputs of the stages whose positions are in
    ``take`` (the loop of a ``forward_intermediates`` whose picked outputs need no further step)."""
    intermediates = []
    for i, stage in enumerate(stages):
        x = stage(x)
        if i in take:
            intermediates.append(x)
    return x, intermediates


def stage_intermediates(x, stem, stages, indices, stop_early, output_fmt, intermediates_only):
    """timm's ``forward_intermediates`` for a model made of ``stem`` and the sequence ``stages``, with no final norm
    (NCHW maps only): the outputs of the stages ``indices`` picks and, unless ``intermediates_only``, the last map;
    ``stop_early`` skips the stages after the last one picked."""
    take, run = intermediate_stages(stages, indices, stop_early, output_fmt)
    x, intermediates = run_stages(stem(x), run, take)
    return intermediates if intermediates_only else (x, intermediates)


def normed_stage_intermediates(x, stem, stages, final_norm, indices, norm, stop_early, output_fmt,
                               intermediates_only):
    """timm's ``forward_intermediates`` for a model made of ``stem``, the sequence ``stages`` and ``final_norm``
    (NCHW maps only): the outputs of the stages ``indices`` picks (the last stage's through ``final_norm`` with
    ``norm``) and, unless ``intermediates_only``, the final map, through ``final_norm`` when the last stage ran;
    ``stop_early`` skips the stages after the last one picked."""
    take, run = intermediate_stages(stages, indices, stop_early, output_fmt)
    last = len(stages) - 1
    x = stem(x)
    intermediates = []
    for i, stage in enumerate(run):
        x = stage(x)
        if i in take:
            intermediates.append(final_norm(x) if norm and i == last else x)
    if intermediates_only:
        return intermediates
    if len(run) - 1 == last:
        x = final_norm(x)
    return x, intermediates


def prune_stages(model, name, indices):
    """timm's ``prune_intermediate_layers`` for a model whose stages are its ``nn.Sequential`` ``name``: the stages
    after the last one ``indices`` picks dropped and, when any go, the model's ``num_features`` and
    ``head_hidden_size`` those of the last stage kept (from ``feature_info``). Returns the absolute indices and
    whether stages went (the caller drops its final norm and head accordingly)."""
    stages = getattr(model, name)
    take = take_indices(len(stages), indices)
    last = max(take)
    prune_end = last < len(stages) - 1
    setattr(model, name, nn.Sequential(*list(stages)[:last + 1]))
    if prune_end:
        model.num_features = model.head_hidden_size = model.feature_info[last]["num_chs"]
    return take, prune_end


class FeatureListNet(nn.Module):
    """A model cut after its last requested stage; ``forward`` returns the stage outputs as a list.

    The stages named in ``model.feature_info`` are top-level children, or children of a top-level
    ``nn.Sequential`` (``"features.6"``); children are kept in order under their own names, so
    state_dict keys stay those of the model. ``out_indices=None`` returns every stage.
    """

    def __init__(self, model, out_indices=None):
        super().__init__()
        if out_indices is None:
            out_indices = range(len(model.feature_info))
        self.feature_info = FeatureInfo(model.feature_info, out_indices)
        wanted = {info["module"] for info in self.feature_info.get_dicts()}
        self._return_layers = set(wanted)
        for name, module in model.named_children():
            if not wanted:
                break
            inner = {w for w in wanted if w.startswith(name + ".")}
            if inner:
                module = self._truncated(module, name, inner)
                wanted -= inner
            self.add_module(name, module)
            wanted.discard(name)
        if wanted:
            raise ValueError(f"feature modules {sorted(wanted)} are not top-level children of "
                             f"{type(model).__name__} or children of its top-level Sequential")

    @staticmethod
    def _truncated(sequential, name, inner):
        """``sequential`` (the child ``name``) cut after the last of its children named in ``inner``."""
        if not isinstance(sequential, nn.Sequential):
            raise ValueError(f"feature modules {sorted(inner)} are inside '{name}', which is not an nn.Sequential")
        children = list(sequential.named_children())
        last = max(i for i, (child, _) in enumerate(children) if f"{name}.{child}" in inner)
        return nn.Sequential(OrderedDict(children[:last + 1]))

    def forward(self, x):
        features = []
        for name, module in self.named_children():
            if any(layer.startswith(name + ".") for layer in self._return_layers):
                for child_name, child in module.named_children():
                    x = child(x)
                    if f"{name}.{child_name}" in self._return_layers:
                        features.append(x)
                continue
            x = module(x)
            if name in self._return_layers:
                features.append(x)
        return features


class FlatFeatureListNet(nn.Module):
    """timm's ``features_only`` for Swin (its ``FeatureListNet`` with ``flatten_sequential``): the model's top-level
    children, with each top-level ``nn.Sequential``'s children lifted one level up as ``<name>_<child>`` (so
    ``layers.2`` becomes ``layers_2``, as in timm's state_dict keys), up to the last requested stage; ``forward``
    returns the requested stages' outputs as they are, channels-last (N, H, W, C) maps as timm gives them.

    ``out_indices``: None (every stage), n (the last n) or a list of stage indices (negative from the end).
    """

    def __init__(self, model, out_indices=None):
        super().__init__()
        out_indices = take_indices(len(model.feature_info), out_indices)
        self.feature_info = FeatureInfo(model.feature_info, out_indices)
        remaining = set(self.feature_info.module_name())
        self._return_layers = []
        layers = OrderedDict()
        for name, module in model.named_children():
            if isinstance(module, nn.Sequential):
                children = [(f"{name}_{child}", f"{name}.{child}", m) for child, m in module.named_children()]
            else:
                children = [(name, name, module)]
            for new_name, old_name, child in children:
                if not remaining:
                    break
                layers[new_name] = child
                if old_name in remaining:
                    self._return_layers.append(new_name)
                    remaining.discard(old_name)
        for name, module in layers.items():
            self.add_module(name, module)

    def forward(self, x):
        features = []
        for name, module in self.named_children():
            x = module(x)
            if name in self._return_layers:
                features.append(x)
        return features


class FeatureHookNet(nn.Module):
    """``features_only`` for models whose stages end inside their blocks (timm's hook-based feature models).

    Keeps the model's top-level children up to the one holding the last requested stage (a top-level
    ``nn.Sequential`` cut after its child holding it), under their own names so state_dict keys stay the model's;
    forward hooks on the stage modules named in ``model.feature_info`` collect their outputs, returned as a list.
    ``out_indices=None`` returns every stage.
    """

    def __init__(self, model, out_indices=None):
        super().__init__()
        if out_indices is None:
            out_indices = range(len(model.feature_info))
        self.feature_info = FeatureInfo(model.feature_info, out_indices)
        self._taps = self.feature_info.module_name()
        remaining = set(self._taps)
        for name, module in model.named_children():
            if not remaining:
                break
            inside = {tap for tap in remaining if tap == name or tap.startswith(name + ".")}
            if inside and name not in inside and isinstance(module, nn.Sequential):
                module = self._truncated(module, name, inside)
            self.add_module(name, module)
            remaining -= inside
        if remaining:
            raise ValueError(f"feature modules {sorted(remaining)} are not in {type(model).__name__}")

    @staticmethod
    def _truncated(sequential, name, inside):
        """``sequential`` (the child ``name``) cut after the last of its children holding a module of ``inside``."""
        children = list(sequential.named_children())
        holds = [any(tap == f"{name}.{child}" or tap.startswith(f"{name}.{child}.") for tap in inside)
                 for child, _ in children]
        last = max(i for i, held in enumerate(holds) if held)
        return nn.Sequential(OrderedDict(children[:last + 1]))

    def forward(self, x):
        modules = dict(self.named_modules())
        outputs = {}

        def hook_for(tap):
            def hook(module, inputs, output):
                outputs.setdefault(tap, output)

            return hook

        handles = [modules[tap].register_forward_hook(hook_for(tap)) for tap in self._taps]
        try:
            for module in self.children():
                x = module(x)
        finally:
            for handle in handles:
                handle.remove()
        return [outputs[tap] for tap in self._taps]


class FeatureGetterNet(nn.Module):
    """A model with ``forward_intermediates`` cut after its last requested block; ``forward`` returns the
    requested blocks' outputs as (N, C, H, W) maps (timm's ``features_only`` for transformers).

    ``out_indices``: n (the last n blocks; None: timm's default, the last three) or a list of block indices.
    State-dict keys are the model's behind ``model.``, as in timm.
    """

    def __init__(self, model, out_indices=None):
        super().__init__()
        out_indices = model.prune_intermediate_layers(3 if out_indices is None else out_indices, prune_norm=True)
        self.feature_info = FeatureInfo(model.feature_info, out_indices)
        self.model = model
        self.out_indices = out_indices

    def forward(self, x):
        return self.model.forward_intermediates(x, indices=self.out_indices, intermediates_only=True)


class FeatureBodyNet(nn.Module):
    """A model with ``forward_intermediates`` kept whole, headless, under ``body`` (timm's hook-based feature model
    for PiT, which leaves the network whole, so its ``state_dict`` keys are timm's); ``forward`` returns the (N, C,
    H, W) maps of the stages picked by ``out_indices`` (None: all; n: the last n; or a list) in ``feature_info``."""

    def __init__(self, model, out_indices=None):
        super().__init__()
        out_indices = take_indices(len(model.feature_info), out_indices)
        self.feature_info = FeatureInfo(model.feature_info, out_indices)
        self.out_indices = out_indices
        model.reset_classifier(0)
        self.body = model

    def forward(self, x):
        return self.body.forward_intermediates(x, indices=self.out_indices, intermediates_only=True)


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
