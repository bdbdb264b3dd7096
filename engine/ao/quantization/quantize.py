"""``torch.ao.quantization.quantize``: eager-mode static quantization: ``prepare`` (or ``prepare_qat``) then
``convert``.

``prepare`` propagates each module's ``qconfig`` to its children and attaches an observer to every leaf layer
that has a quantized counterpart (an ``activation_post_process`` child called by a forward hook), to a fused
layer as a whole, and to each ``FloatFunctional`` (whose own ``activation_post_process`` it replaces). Running
calibration data through the prepared model records the ranges of those outputs. ``convert`` then swaps each
observed module for its quantized class (``from_float``, which reads the observer's scale and zero point and
quantizes the weight with the qconfig's weight observer) and removes the observers, hooks and qconfigs. Modules
without a quantized class (ReLU, pooling, flatten, dropout, identities) stay as they are: they run on quantized
tensors directly.

Quantization-aware training: ``prepare_qat`` swaps the float layers for their QAT versions (``engine.ao.nn.qat``,
``engine.ao.nn.intrinsic.qat``: weights fake-quantized) and attaches the qconfig's fake quantize modules where
``prepare`` attaches observers (a fixed-qparams one after sigmoid-like activations in training). After training,
``convert`` folds the batch norms and quantizes each weight with its fake quantize's qparams.
"""
import copy
import inspect
import warnings

from ...nn.modules.activation import Hardsigmoid, Hardswish, Sigmoid, Softmax, Tanh
from ...nn.modules.attention import NonDynamicallyQuantizableLinear
from ...nn.modules.container import Sequential
from ...nn.modules.conv import Conv2d
from ...nn.modules.dropout import Dropout
from ...nn.modules.linear import Linear
from ..nn import intrinsic as nni
from ..nn import qat as nnqat
from ..nn import quantized as nnq
from ..nn.intrinsic import qat as nniqat
from ..nn.intrinsic import quantized as nniq
from .fake_quantize import (FakeQuantizeBase, default_fixed_qparams_range_0to1_fake_quant,
                            default_fixed_qparams_range_neg1to1_fake_quant)
from .observer import _is_activation_post_process
from .stubs import DeQuantStub, QuantStub, QuantWrapper

__all__ = ["get_default_static_quant_module_mappings", "get_static_quant_module_class",
           "get_default_qat_module_mappings", "get_default_qconfig_propagation_list", "get_default_custom_config_dict",
           "no_observer_set", "propagate_qconfig_", "add_quant_dequant", "prepare", "prepare_qat", "convert",
           "quantize", "swap_module"]

DEFAULT_STATIC_QUANT_MODULE_MAPPINGS = {
    QuantStub: nnq.Quantize,
    DeQuantStub: nnq.DeQuantize,
    Conv2d: nnq.Conv2d,
    Linear: nnq.Linear,
    NonDynamicallyQuantizableLinear: nnq.Linear,
    Hardswish: nnq.Hardswish,
    nnq.FloatFunctional: nnq.QFunctional,
    nni.ConvReLU2d: nniq.ConvReLU2d,
    nni.LinearReLU: nniq.LinearReLU,
    nniqat.ConvBn2d: nnq.Conv2d,
    nniqat.ConvBnReLU2d: nniq.ConvReLU2d,
    nniqat.ConvReLU2d: nniq.ConvReLU2d,
    nniqat.LinearReLU: nniq.LinearReLU,
    nnqat.Linear: nnq.Linear,
    nnqat.Conv2d: nnq.Conv2d,
}
"""Float (or QAT) module type -> quantized class, for the layers engine has quantized kernels for."""

DEFAULT_QAT_MODULE_MAPPINGS = {
    Conv2d: nnqat.Conv2d,
    Linear: nnqat.Linear,
    nni.ConvBn2d: nniqat.ConvBn2d,
    nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
    nni.ConvReLU2d: nniqat.ConvReLU2d,
    nni.LinearReLU: nniqat.LinearReLU,
}
"""Float module type -> QAT class (``prepare_qat``), for the layers engine has QAT versions of."""

DEFAULT_MODULE_TO_ACT_POST_PROCESS = {
    Hardsigmoid: default_fixed_qparams_range_0to1_fake_quant,
    Sigmoid: default_fixed_qparams_range_0to1_fake_quant,
    Softmax: default_fixed_qparams_range_0to1_fake_quant,
    Tanh: default_fixed_qparams_range_neg1to1_fake_quant,
}
"""The fake quantize a training module's output gets whatever the qconfig: its range is known."""

_INCLUDE_QCONFIG_PROPAGATE_LIST = {Sequential}


def get_default_static_quant_module_mappings():
    """A copy of the float -> quantized module mapping ``convert`` uses by default."""
    return copy.deepcopy(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_static_quant_module_class(float_module_class, additional_static_quant_mapping=None, is_reference=False):
    """The quantized class of ``float_module_class`` (the additional mapping first)."""
    if is_reference:
        raise NotImplementedError("reference quantized modules (is_reference=True) are not implemented")
    mapping = {**DEFAULT_STATIC_QUANT_MODULE_MAPPINGS, **(additional_static_quant_mapping or {})}
    static_quant_module_class = mapping.get(float_module_class)
    if static_quant_module_class is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not have a corresponding "
                             f"quantized module class")
    return copy.deepcopy(static_quant_module_class)


def get_default_qat_module_mappings():
    """A copy of the float -> QAT module mapping ``prepare_qat`` uses by default."""
    return copy.deepcopy(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_qconfig_propagation_list():
    """The module types ``prepare`` observes when they are leaves: those with a quantized or QAT class."""
    return (set(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS) | set(DEFAULT_QAT_MODULE_MAPPINGS)
            | _INCLUDE_QCONFIG_PROPAGATE_LIST)


def no_observer_set():
    """Module types that never get an observer (torch's quantizable LSTM and attention; none here)."""
    return set()


def get_default_custom_config_dict():
    """The default custom-module configuration: no custom modules (torch lists its quantizable LSTM and
    MultiheadAttention, which engine does not have)."""
    return {"float_to_observed_custom_module_class": {}, "observed_to_quantized_custom_module_class": {}}


# ---- qconfig propagation -----------------------------------------------------------------------------------
def _propagate_qconfig_helper(module, qconfig_dict, qconfig_parent=None, prefix="", prepare_custom_config_dict=None):
    """Give ``module`` its qconfig (its own, else by name, else by type, else the parent's), then its
    children, except those the custom config marks non-traceable."""
    module_qconfig = qconfig_dict.get(type(module), qconfig_parent)
    module_qconfig = qconfig_dict.get(prefix, module_qconfig)
    module_qconfig = getattr(module, "qconfig", module_qconfig)
    module.qconfig = module_qconfig
    config = prepare_custom_config_dict
    for name, child in module.named_children():
        module_prefix = prefix + "." + name if prefix else name
        if config is None or not (name in config.get("non_traceable_module_name", [])
                                  or type(child) in config.get("non_traceable_module_class", [])):
            _propagate_qconfig_helper(child, qconfig_dict, module_qconfig, module_prefix)


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Set ``qconfig`` on ``module`` and every submodule, in place: a module keeps its own, else takes the one
    ``qconfig_dict`` gives its name or type, else its parent's."""
    _propagate_qconfig_helper(module, qconfig_dict or {},
                              prepare_custom_config_dict=prepare_custom_config_dict or {})


# ---- observers -------------------------------------------------------------------------------------------
def _observer_forward_hook(self, input, output):
    """Forward hook that runs the module's observer on its output."""
    return self.activation_post_process(output)


def _observer_forward_pre_hook(self, input):
    """Forward pre-hook that runs the module's observer on its input (memoryless observers)."""
    return self.activation_post_process(input[0])


def _activation_is_memoryless(qconfig):
    """Whether the qconfig's activation observer (a fake quantize's own observer) keeps no history (a moving
    average with constant 1)."""
    activation = qconfig.activation()
    if isinstance(activation, FakeQuantizeBase) and hasattr(activation, "activation_post_process"):
        activation = activation.activation_post_process
    return getattr(activation, "averaging_constant", None) == 1


def _register_activation_post_process_hook(module, pre_hook=False):
    if not hasattr(module, "activation_post_process"):
        raise AssertionError("Expect activation_post_process attribute already attached to the module")
    if pre_hook:
        module.register_forward_pre_hook(_observer_forward_pre_hook, prepend=True)
    else:
        module.register_forward_hook(_observer_forward_hook, prepend=True)


def _needs_observation(module):
    return getattr(module, "qconfig", None) is not None


def _insert_activation_post_process(module, special_act_post_process=None):
    """Attach an observer of ``module``'s output (the qconfig's, or ``special_act_post_process()``; not to a
    DeQuantStub, whose output is float), run by a hook registered first so that the user's hooks see what the
    observer passed on."""
    if _needs_observation(module) and not isinstance(module, DeQuantStub):
        make = module.qconfig.activation if special_act_post_process is None else special_act_post_process
        module.add_module("activation_post_process", make())
        _register_activation_post_process_hook(module, pre_hook=_activation_is_memoryless(module.qconfig))


def _special_act_post_process(module):
    """The fixed fake quantize of a training sigmoid-like module (None for any other module)."""
    return DEFAULT_MODULE_TO_ACT_POST_PROCESS.get(type(module)) if module.training else None


def _observe_child(module, name, child, propagation_list, non_leaf_module_list, custom_module_class_mapping):
    """Attach observers to one child of ``module`` (or recurse into it), as torch's ``_add_observer_``."""
    child_type = type(child)
    special_act_post_process = _special_act_post_process(child)
    if child_type is Dropout:
        return
    if issubclass(child_type, (nnq.FloatFunctional, nnq.QFunctional)):
        if _needs_observation(child):
            if not hasattr(child, "activation_post_process"):
                raise AssertionError(f"functional class {child_type} has no pre-defined `activation_post_process`")
            child.activation_post_process = child.qconfig.activation()
    elif isinstance(child, nni._FusedModule) or (non_leaf_module_list is not None
                                                  and child_type in non_leaf_module_list):
        _insert_activation_post_process(child)
    elif special_act_post_process is not None:
        _insert_activation_post_process(child, special_act_post_process)
    elif _needs_observation(child) and child_type in custom_module_class_mapping:
        observed_child = custom_module_class_mapping[child_type].from_float(child)
        setattr(module, name, observed_child)
        if not issubclass(custom_module_class_mapping[child_type], tuple(no_observer_set())):
            _insert_activation_post_process(observed_child)
    else:
        _add_observer_(child, propagation_list, non_leaf_module_list, custom_module_class_mapping)


def _add_observer_(module, qconfig_propagation_list=None, non_leaf_module_list=None,
                   custom_module_class_mapping=None):
    """Attach observers, in place, to every leaf of ``module`` whose type is in ``qconfig_propagation_list``
    and which has a qconfig, to fused modules, FloatFunctionals and the ``non_leaf_module_list`` types."""
    if qconfig_propagation_list is None:
        qconfig_propagation_list = get_default_qconfig_propagation_list()
    custom_module_class_mapping = custom_module_class_mapping or {}
    for name, child in list(module.named_children()):
        _observe_child(module, name, child, qconfig_propagation_list, non_leaf_module_list,
                       custom_module_class_mapping)
    if (not module._modules and not isinstance(module, Sequential)
            and type(module) in qconfig_propagation_list):
        _insert_activation_post_process(module)


def add_quant_dequant(module):
    """Wrap each leaf with a qconfig in a ``QuantWrapper`` (in place; a leaf ``module`` itself is returned
    wrapped)."""
    if not module._modules and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module


def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """A copy of ``model`` (``model`` itself when ``inplace``) ready for calibration: qconfigs propagated and
    observers attached (see the module docstring). ``allow_list`` replaces the observed leaf types;
    ``observer_non_leaf_module_list`` names types observed as a whole; ``prepare_custom_config_dict``'s
    ``"float_to_observed_custom_module_class"`` maps custom types to observed classes (``from_float``)."""
    if prepare_custom_config_dict is None:
        prepare_custom_config_dict = get_default_custom_config_dict()
    custom_module_class_mapping = prepare_custom_config_dict.get("float_to_observed_custom_module_class", {})
    if not inplace:
        model = copy.deepcopy(model)
    qconfig_propagation_list = get_default_qconfig_propagation_list() if allow_list is None else allow_list
    propagate_qconfig_(model, qconfig_dict=None)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct configuration "
                      "through `qconfig_dict` or by assigning the `.qconfig` attribute directly on submodules",
                      stacklevel=2)
    _add_observer_(model, qconfig_propagation_list, observer_non_leaf_module_list,
                   custom_module_class_mapping=custom_module_class_mapping)
    return model


def prepare_qat(model, mapping=None, inplace=False):
    """A copy of the training-mode ``model`` (``model`` itself when ``inplace``) ready for quantization-aware
    training: qconfigs propagated, the layers ``mapping`` names (default ``get_default_qat_module_mappings()``)
    swapped for their QAT versions, and fake quantize modules attached where ``prepare`` attaches observers."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


# ---- removing observers and qconfigs ---------------------------------------------------------------------
def _remove_hooks(module, hook_map, flag_maps, observer_hook):
    for handle_id in [i for i, hook in hook_map.items() if hook is observer_hook]:
        hook_map.pop(handle_id)
        for flags in flag_maps:
            flags.pop(handle_id, None)


def _remove_activation_post_process(module):
    """Drop ``module``'s observer child and the hooks that ran it."""
    if hasattr(module, "activation_post_process") and _is_activation_post_process(module.activation_post_process):
        delattr(module, "activation_post_process")
    _remove_hooks(module, module._forward_pre_hooks, (module._forward_pre_hooks_with_kwargs,),
                  _observer_forward_pre_hook)
    _remove_hooks(module, module._forward_hooks,
                  (module._forward_hooks_with_kwargs, module._forward_hooks_always_called), _observer_forward_hook)


def _remove_qconfig(module):
    """Drop every ``qconfig`` attribute and observer below and at ``module`` (so new qconfigs can propagate)."""
    for child in module.children():
        _remove_qconfig(child)
    if "qconfig" in module.__dict__:
        del module.qconfig
    _remove_activation_post_process(module)


# ---- conversion ------------------------------------------------------------------------------------------
def _from_float(qmod, mod, use_precomputed_fake_quant):
    """``qmod.from_float(mod)``, passing ``use_precomputed_fake_quant`` where the signature takes it."""
    if "use_precomputed_fake_quant" in inspect.signature(qmod.from_float).parameters:
        return qmod.from_float(mod, use_precomputed_fake_quant=use_precomputed_fake_quant)
    return qmod.from_float(mod)


def _carry_hooks(mod, new_mod):
    """The swapped module keeps ``mod``'s pre-hooks and its forward hooks other than the observer's."""
    for pre_hook_fn in mod._forward_pre_hooks.values():
        new_mod.register_forward_pre_hook(pre_hook_fn)
    for hook_fn in mod._forward_hooks.values():
        if hook_fn is not _observer_forward_hook:
            new_mod.register_forward_hook(hook_fn)


def swap_module(mod, mapping, custom_module_class_mapping, use_precomputed_fake_quant=False):
    """``mod``'s quantized counterpart when it has a qconfig and its type is mapped; ``mod`` otherwise."""
    if getattr(mod, "qconfig", None) is None:
        return mod
    if type(mod) in custom_module_class_mapping:
        new_mod = custom_module_class_mapping[type(mod)].from_observed(mod)
    elif type(mod) in mapping:
        qmod = mapping[type(mod)]
        if getattr(qmod, "_IS_REFERENCE", False):
            raise NotImplementedError("reference quantized modules are not implemented")
        new_mod = _from_float(qmod, mod, use_precomputed_fake_quant)
    else:
        return mod
    _carry_hooks(mod, new_mod)
    return new_mod


def _convert(module, mapping=None, inplace=False, is_reference=False, convert_custom_config_dict=None,
             use_precomputed_fake_quant=False):
    """Swap, in place, every mapped descendant of ``module`` for its quantized class (fused modules and
    custom modules as one unit; other children converted recursively first)."""
    if is_reference:
        raise NotImplementedError("reference quantized modules (is_reference=True) are not implemented")
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if convert_custom_config_dict is None:
        convert_custom_config_dict = get_default_custom_config_dict()
    custom_module_class_mapping = convert_custom_config_dict.get("observed_to_quantized_custom_module_class", {})
    if not inplace:
        module = copy.deepcopy(module)
    reassign = {}
    for name, mod in module.named_children():
        if not isinstance(mod, nni._FusedModule) and type(mod) not in custom_module_class_mapping:
            _convert(mod, mapping, True, is_reference, convert_custom_config_dict,
                     use_precomputed_fake_quant=use_precomputed_fake_quant)
        reassign[name] = swap_module(mod, mapping, custom_module_class_mapping, use_precomputed_fake_quant)
    for key, value in reassign.items():
        module._modules[key] = value
    return module


def convert(module, mapping=None, inplace=False, remove_qconfig=True, is_reference=False,
            convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """A quantized copy of the calibrated ``module`` (``module`` itself when ``inplace``): each observed module
    whose type ``mapping`` names becomes its quantized class (``from_float``); then, with ``remove_qconfig``,
    observers, their hooks and the ``qconfig`` attributes are removed."""
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping, inplace=True, is_reference=is_reference,
             convert_custom_config_dict=convert_custom_config_dict,
             use_precomputed_fake_quant=use_precomputed_fake_quant)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """Post-training static quantization in one call: ``prepare`` (eval mode), ``run_fn(model, *run_args)`` to
    calibrate, ``convert``. Returns the quantized copy (``model`` itself when ``inplace``)."""
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model
