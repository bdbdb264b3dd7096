"""The model registry: ``@register_model``, ``list_models``, ``create_model`` and ``ModelCreator``.

Model entrypoints register themselves by name (timm's contract); users find them with wildcard
filters and build them by name. Unknown names get the closest registered names as suggestions.
"""
import difflib
import fnmatch
import importlib
import inspect
import re
import sys
import types

__all__ = ["register_model", "list_models", "list_modules", "is_model", "model_entrypoint",
           "is_model_pretrained", "create_model", "get_model", "get_model_builder", "ModelCreator", "model_alias_of",
           "document_entrypoints", "split_model_name_tag", "register_lazy"]

_model_entrypoints = {}
_lazy_models = {}  # name -> the dotted module that registers it when imported (see register_lazy)
_model_to_module = {}
_module_to_models = {}
_model_has_pretrained = set()
_model_aliases = {}


def register_model(fn=None, *, has_pretrained=False, alias_of=None):
    """Register a model entrypoint under its function name; usable bare or with ``has_pretrained=``, or
    ``alias_of=`` for an older name of another model (listed as such)."""
    def register(entrypoint):
        name = entrypoint.__name__
        module_name = _family_module(entrypoint.__module__)
        _model_entrypoints[name] = entrypoint
        _lazy_models.pop(name, None)
        if alias_of is not None:
            _model_aliases[name] = alias_of
        _model_to_module[name] = module_name
        _module_to_models.setdefault(module_name, set()).add(name)
        if has_pretrained:
            _model_has_pretrained.add(name)
        else:
            _model_has_pretrained.discard(name)
        if _weights_enum_of is not None:
            _document(name, entrypoint)
        module = sys.modules[entrypoint.__module__]
        if hasattr(module, "__all__") and name not in module.__all__:
            module.__all__.append(name)
        return entrypoint

    return register if fn is None else register(fn)


def register_lazy(package, index):
    """List models before their modules are imported: ``index`` maps each module of ``package`` to the names it
    registers. They are listed and matched at once; their module is imported the first time one of them is built
    or its entrypoint asked for. Importing all 75 timm family modules took 0.4 s, paid by every process that
    imported ``flowvision.models``."""
    for module_name, names in index.items():
        for name in names:
            if name in _model_entrypoints:
                continue
            _lazy_models[name] = f"{package}.{module_name}"
            _model_to_module[name] = module_name
            _module_to_models.setdefault(module_name, set()).add(name)


def _load(model_name):
    """Import the module that registers the listed model ``model_name``."""
    module = _lazy_models[model_name]
    importlib.import_module(module)
    if model_name not in _model_entrypoints:
        raise RuntimeError(f"{module} did not register '{model_name}' as its index says: regenerate the index with "
                           "python scripts/timm_index.py")


def _family_module(module):
    """The family a model module registers under: its own name (``resnet``), except that the quantizable
    models of ``models.quantization`` are one family, ``quantization``, apart from the float ones they extend."""
    parts = module.split(".")
    return "quantization" if "quantization" in parts[:-1] else parts[-1]


def model_alias_of(model_name):
    """The model ``model_name`` is an older name of, or None."""
    return _model_aliases.get(model_name)


# Model packages whose legacy ``pretrained=True`` loads their first weights tag, as torchvision's builders do
# (the quantized builders with ``quantize=True``; without it, the float family's IMAGENET1K_V1).
_FIRST_TAG_LEGACY = ("segmentation", "detection", "video", "quantization")


def _weights_paragraph(name, weights_enum):
    """The docstring paragraph on ``name``'s published weights (``weights_enum``: its enum, or None)."""
    if weights_enum is None:
        return ("Weights: none published; ``checkpoint_path=`` (or ``load_checkpoint``) loads a local "
                "checkpoint.")
    tags = [tag for tag in weights_enum.__members__ if tag != "DEFAULT"]
    described = []
    for tag in tags:
        member = weights_enum[tag]
        metrics = {k: v for dataset in member.meta["_metrics"].values() for k, v in dataset.items()}
        headline = next((f"{k} {metrics[k]:g}" for k in ("acc@1", "box_map", "miou", "epe") if k in metrics), "")
        default = "the DEFAULT" if weights_enum.DEFAULT.name == tag else ""
        notes = ", ".join(note for note in (headline, default) if note)
        described.append(f"{tag} ({notes})" if notes else tag)
    from .weights import pretrained_tag

    package = sys.modules[_model_entrypoints[name].__module__].__name__.split(".")[-2]
    legacy = pretrained_tag(name) or (tags[0] if package in _FIRST_TAG_LEGACY else None)
    if package == "optical_flow":  # torchvision's RAFT builders load their DEFAULT for pretrained=True
        legacy = weights_enum.DEFAULT.name
    source = "timm's" if package == "timm_families" else "torchvision's legacy flag"
    pretrained = (f"``pretrained=True`` loads {legacy}, as {source} does." if legacy else
                  "``pretrained=True`` has no legacy weights to load here: pass ``weights=``.")
    return (f"Weights: ``weights=`` takes a tag or a member of ``{weights_enum.__name__}``: "
            f"{', '.join(described)}. {pretrained}")


_weights_enum_of = None  # document_entrypoints' argument, kept to document the models registered after it ran


def document_entrypoints(weights_enum_of):
    """Give every registered entrypoint ``weights=`` in its signature (it is accepted through ``**kwargs``)
    and a docstring naming its paper (its family module's first paragraph) and its published weights;
    ``weights_enum_of(name)`` gives a model's weights enum or None. Run once the families imported at start-up
    are registered; models registered later (the modules ``register_lazy`` imports) are documented as they
    register."""
    global _weights_enum_of
    _weights_enum_of = weights_enum_of
    for name, entrypoint in _model_entrypoints.items():
        _document(name, entrypoint)


def _document(name, entrypoint):
    """``document_entrypoints``' work on one entrypoint, done once."""
    if getattr(entrypoint, "_documented", False):
        return
    signature = inspect.signature(entrypoint)
    params = list(signature.parameters.values())
    if "weights" not in signature.parameters:
        at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        params.insert(at, inspect.Parameter("weights", inspect.Parameter.KEYWORD_ONLY, default=None))
        entrypoint.__signature__ = signature.replace(parameters=params)
    module_doc = inspect.getdoc(sys.modules[entrypoint.__module__]) or ""
    paper = " ".join(module_doc.split("\n\n")[0].split())
    parts = [inspect.getdoc(entrypoint) or name]
    if model_alias_of(name) is None:
        parts += [f"Family: {paper}" if paper else "", _weights_paragraph(name, _weights_enum_of(name))]
    entrypoint.__doc__ = "\n\n".join(p for p in parts if p)
    entrypoint._documented = True


def _natural_key(name):
    """Sort key that orders embedded numbers numerically (resnet18 < resnet50 < resnet101)."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


def _as_patterns(patterns):
    """A filter argument (``''``, a pattern, or a list of patterns) as a list of patterns."""
    if not patterns:
        return []
    return [patterns] if isinstance(patterns, str) else list(patterns)


def list_models(filter="", module="", pretrained=False, exclude_filters="", name_matches_cfg=False, *, include=None,
                exclude=None):
    """Registered model names matching ``filter`` (fnmatch wildcards, one pattern or a list).

    ``module`` keeps the models of one family module (e.g. ``'resnet'``), ``pretrained=True``
    keeps those with published weights, ``exclude_filters`` drops names matching any of its
    patterns. ``name_matches_cfg`` is accepted for timm compatibility: every name here is its own cfg.

    torchvision's spelling works too: ``module`` (also first, in place of ``filter``) may be a package such as
    ``flowvision.models.detection`` (the models whose builders it holds directly), with ``include`` and
    ``exclude`` patterns; such a call lists the names in torchvision's plain sorted order, the timm spelling in
    natural order (resnet18 before resnet101).
    """
    if isinstance(filter, types.ModuleType):
        filter, module = "", filter
    torchvision_call = isinstance(module, types.ModuleType) or include is not None or exclude is not None
    if isinstance(module, types.ModuleType):
        names = {n for n in _model_to_module if _package_of(n) == module.__name__}
    else:
        names = set(_module_to_models.get(module, ())) if module else set(_model_to_module)
    include = _as_patterns(filter) + _as_patterns(include)
    if include:
        names = {n for n in names if any(fnmatch.fnmatch(n, p) for p in include)}
    for pattern in _as_patterns(exclude_filters) + _as_patterns(exclude):
        names -= set(fnmatch.filter(names, pattern))
    if pretrained:
        names = {n for n in names if is_model_pretrained(n)}
    return sorted(names) if torchvision_call else sorted(names, key=_natural_key)


def _package_of(model_name):
    """The package whose module registers ``model_name`` (``flowvision.models`` for resnet50, whose builder is in
    ``flowvision.models.resnet``), without importing a lazily listed module."""
    module = _lazy_models.get(model_name) or _model_entrypoints[model_name].__module__
    return module.rsplit(".", 1)[0]


def list_modules():
    """Names of the family modules that registered models."""
    return sorted(_module_to_models)


def is_model(model_name):
    """Whether ``model_name`` (with or without a weights tag) is a registered model."""
    return split_model_name_tag(model_name)[0] in _model_to_module


def is_model_pretrained(model_name):
    """Whether published weights exist for ``model_name`` (flagged at registration or in the weight manifest)."""
    from .weights import list_pretrained

    return model_name in _model_has_pretrained or model_name in list_pretrained()


def _unknown_model(model_name):
    """The error for an unregistered name, suggesting names it begins, then the most similar ones."""
    names = sorted(_model_to_module, key=_natural_key)
    extended = [n for n in names if n.startswith(model_name)]
    similar = difflib.get_close_matches(model_name, names, n=3, cutoff=0.6)
    close = list(dict.fromkeys(extended + similar))[:3]
    hint = f" Did you mean: {', '.join(close)}?" if close else " See flowvision.models.list_models()."
    return RuntimeError(f"Unknown model '{model_name}'.{hint}")


def model_entrypoint(model_name):
    """The constructor function registered as ``model_name``."""
    if model_name in _lazy_models:
        _load(model_name)
    if model_name not in _model_entrypoints:
        raise _unknown_model(model_name)
    return _model_entrypoints[model_name]


_NONE_MEANS_NO_WEIGHTS = ("weights", "weights_backbone")


def split_model_name_tag(model_name):
    """``'resnet50d.a1_in1k'`` as ``('resnet50d', 'a1_in1k')``: timm's spelling of a model and its weights'
    tag; a name without a tag gives ``(model_name, '')``."""
    name, _, tag = model_name.partition(".")
    return name, tag


def create_model(model_name, pretrained=False, checkpoint_path=None, **kwargs):
    """Build the registered model ``model_name``; keyword arguments go to its entrypoint.

    Common ones: ``num_classes`` (0 gives pooled features), ``in_chans``, ``features_only``,
    ``out_indices``, ``checkpoint_path`` (a local state_dict file). Arguments set to None are
    dropped so the entrypoint's defaults apply (as in timm), except ``weights`` and
    ``weights_backbone``, where None means "no weights" (as in torchvision). As in timm, a name may carry
    its weights' tag (``'deit_small_patch16_224.fb_in1k'``): ``pretrained=True`` then loads those weights.
    """
    model_name, tag = split_model_name_tag(model_name)
    entrypoint = model_entrypoint(model_name)
    if tag and pretrained and kwargs.get("weights") is None:
        kwargs["weights"] = tag
    kwargs = {k: v for k, v in kwargs.items() if v is not None or k in _NONE_MEANS_NO_WEIGHTS}
    if checkpoint_path:
        kwargs["checkpoint_path"] = checkpoint_path
    return entrypoint(pretrained=pretrained, **kwargs)



def _torchvision_name(name):
    """``name`` as torchvision's ``get_model`` reads it: case does not matter (``'ResNet50'`` is resnet50)."""
    return name if is_model(name) or not is_model(name.lower()) else name.lower()


def get_model(name, **config):
    """torchvision's ``get_model``: ``create_model`` of ``name`` in any case (``get_model('ResNet18',
    num_classes=10)``)."""
    return create_model(_torchvision_name(name), **config)


def get_model_builder(name):
    """torchvision's name for ``model_entrypoint``: the builder registered as ``name`` (in any case); ValueError
    (torchvision's type) for an unknown name, with the closest registered names."""
    try:
        return model_entrypoint(_torchvision_name(name))
    except RuntimeError as e:
        raise ValueError(str(e)) from None


def _table(rows, header):
    """A plain-text table with a ruled header, columns padded to their widest cell."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([rule, line(header), rule, *(line(r) for r in rows), rule])


class ModelCreator:
    """flowvision's model API: build models by name and list what exists."""

    @staticmethod
    def create_model(model_arch, pretrained=False, checkpoint=None, **kwargs):
        """Build ``model_arch``; ``checkpoint`` is a local state_dict file to load."""
        return create_model(model_arch, pretrained=pretrained, checkpoint_path=checkpoint, **kwargs)

    @staticmethod
    def model_list(filter="", pretrained=False, **kwargs):
        """Registered model names matching ``filter`` (see ``list_models``)."""
        return list_models(filter, pretrained=pretrained, **kwargs)

    @staticmethod
    def model_table(filter="", pretrained=False, **kwargs):
        """A readable table of the matching models and whether pretrained weights exist."""
        names = list_models(filter, pretrained=pretrained, **kwargs)
        rows = [(name, "true" if is_model_pretrained(name) else "false") for name in names]
        return _table(rows, ("Supported Models", "Pretrained"))
