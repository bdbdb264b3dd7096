"""``torch.ao.quantization.fuse_modules``: merge conv/linear layers with the batch norm and ReLU after them.

Eval-mode fusion, as PyTorch's: a batch norm is folded into the conv (or linear) before it, its statistics
becoming the layer's weight and bias (``fuse_conv_bn_eval``, the float32 arithmetic of
``torch.nn.utils.fusion`` step for step, so the fused weights are PyTorch's bit for bit); a ReLU after the layer
makes a fused ``nni.ConvReLU2d``/``nni.LinearReLU``, which quantizes as one layer. The first name of each group
becomes the fused module and the others ``nn.Identity()``.

QAT fusion (``fuse_modules_qat``) keeps the batch norm: conv + bn (+ ReLU) become ``nni.ConvBn2d``
(``nni.ConvBnReLU2d``), which ``prepare_qat`` turns into QAT layers that train the batch norm.
"""
import copy

import numpy as np

from ...nn.modules.activation import ReLU
from ...nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ...nn.modules.linear import Identity, Linear
from ...nn.modules.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from ...nn.parameter import Parameter
from ...tensor import _new
from ..nn import intrinsic as nni

__all__ = ["fuse_modules", "fuse_modules_qat", "fuse_known_modules", "get_fuser_method", "fuse_conv_bn",
           "fuse_conv_bn_relu", "fuse_linear_bn", "fuse_convtranspose_bn", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


# ---- folding a batch norm into the layer before it (torch.nn.utils.fusion) -------------------------------
def _array(tensor):
    return tensor.detach()._data


def _rsqrt(running_var, eps):
    """``torch.rsqrt(running_var + eps)``: ``1 / sqrt(.)`` in the variance's dtype (what torch's CPU kernel
    computes, each step correctly rounded)."""
    kind = running_var.dtype.type
    return kind(1) / np.sqrt(running_var + kind(eps))


def _bn_affine(bn_rm, bn_w, bn_b):
    """A batch norm's weight and bias arrays (ones and zeros when it has none)."""
    weight = np.ones_like(bn_rm) if bn_w is None else _array(bn_w)
    bias = np.zeros_like(bn_rm) if bn_b is None else _array(bn_b)
    return weight, bias


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The conv weight and bias that compute ``bn(conv(x))`` for an eval-mode batch norm, as Parameters:
    ``w * (gamma / sqrt(var + eps))`` per output channel and ``(b - mean) / sqrt(var + eps) * gamma + beta``."""
    weight_dtype = _array(conv_w).dtype
    bias_dtype = weight_dtype if conv_b is None else _array(conv_b).dtype
    bias_requires_grad = conv_b is not None and conv_b.requires_grad
    rm, rv = _array(bn_rm), _array(bn_rv)
    conv_b = np.zeros_like(rm) if conv_b is None else _array(conv_b)
    bn_w, bn_b = _bn_affine(rm, bn_w, bn_b)
    var_rsqrt = _rsqrt(rv, bn_eps)
    w = _array(conv_w)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (w.ndim - 2)
    fused_w = (w * (bn_w * var_rsqrt).reshape(shape)).astype(weight_dtype, copy=False)
    fused_b = ((conv_b - rm) * var_rsqrt * bn_w + bn_b).astype(bias_dtype, copy=False)
    return (Parameter(_new(fused_w), conv_w.requires_grad), Parameter(_new(fused_b), bias_requires_grad))


def _check_eval(*modules):
    if any(m.training for m in modules):
        raise AssertionError("Fusion only for eval!")


def _check_running_stats(bn):
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` (eval mode) that computes ``bn(conv(x))`` for the eval-mode batch norm ``bn``."""
    _check_eval(conv, bn)
    fused_conv = copy.deepcopy(conv)
    _check_running_stats(bn)
    fused_conv.weight, fused_conv.bias = fuse_conv_bn_weights(fused_conv.weight, fused_conv.bias, bn.running_mean,
                                                              bn.running_var, bn.eps, bn.weight, bn.bias, transpose)
    return fused_conv


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """The linear weight and bias that compute ``bn(linear(x))`` for an eval-mode batch norm, as Parameters."""
    weight_dtype = _array(linear_w).dtype
    bias_dtype = weight_dtype if linear_b is None else _array(linear_b).dtype
    bias_requires_grad = linear_b is not None and linear_b.requires_grad
    rm, rv = _array(bn_rm), _array(bn_rv)
    linear_b = np.zeros_like(rm) if linear_b is None else _array(linear_b)
    bn_w, bn_b = _bn_affine(rm, bn_w, bn_b)
    bn_scale = bn_w * _rsqrt(rv, bn_eps)
    fused_w = _array(linear_w) * bn_scale[:, None].astype(weight_dtype, copy=False)
    fused_b = ((linear_b - rm) * bn_scale + bn_b).astype(bias_dtype, copy=False)
    return Parameter(_new(fused_w), linear_w.requires_grad), Parameter(_new(fused_b), bias_requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` (eval mode) that computes ``bn(linear(x))`` for the eval-mode ``BatchNorm1d``."""
    _check_eval(linear, bn)
    fused_linear = copy.deepcopy(linear)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    _check_running_stats(bn)
    fused_linear.weight, fused_linear.bias = fuse_linear_bn_weights(
        fused_linear.weight, fused_linear.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused_linear


# ---- fuser methods: one per pattern of module types ----------------------------------------------------------
def _check_qat_bn(conv, bn):
    """QAT fusion keeps the batch norm as it is: it must match the conv and be affine with running statistics."""
    if bn.num_features != conv.out_channels:
        raise AssertionError("Output channel of Conv2d must match num_features of BatchNorm2d.")
    if not bn.affine:
        raise AssertionError("Only support fusing BatchNorm2d with affine set to True")
    if not bn.track_running_stats:
        raise AssertionError("Only support fusing BatchNorm2d with tracking_running_stats set to True")


# the fused float classes engine has (torch also has 1d and 3d)
_CONV_BN = {Conv2d: nni.ConvBn2d}
_CONV_BN_RELU = {Conv2d: nni.ConvBnReLU2d}
_CONV_RELU = {Conv2d: nni.ConvReLU2d}


def fuse_conv_bn(is_qat, conv, bn):
    """Conv + batch norm -> for QAT, ``nni.ConvBn2d`` of both; else the conv with the (eval) batch norm folded
    in."""
    if conv.training != bn.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        _check_qat_bn(conv, bn)
        fused_module = _CONV_BN.get(type(conv))
        if fused_module is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn)}")
        return fused_module(conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat, conv, bn, relu):
    """Conv + batch norm + ReLU -> for QAT, ``nni.ConvBnReLU2d`` of the three; else ``nni.ConvReLU2d`` of the
    conv with the (eval) batch norm folded in and the ReLU."""
    if not conv.training == bn.training == relu.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        _check_qat_bn(conv, bn)
        fused_module = _CONV_BN_RELU.get(type(conv))
        if fused_module is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn, relu)}")
        return fused_module(conv, bn, relu)
    fused_module = _CONV_RELU.get(type(conv))
    if fused_module is None:
        raise NotImplementedError(f"Cannot fuse eval modules: {(conv, bn, relu)}")
    return fused_module(fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat, linear, bn):
    """Linear + eval ``BatchNorm1d`` -> the linear with the batch norm folded in."""
    if linear.training != bn.training:
        raise AssertionError("Linear and BN both must be in the same mode (train or eval).")
    if is_qat:  # torch makes an nni.LinearBn1d, which engine does not have
        raise NotImplementedError("quantization-aware training fusion of Linear + BatchNorm1d is not implemented")
    return fuse_linear_bn_eval(linear, bn)


def fuse_convtranspose_bn(is_qat, convt, bn):
    """Transposed conv + eval batch norm -> the transposed conv with the batch norm folded in."""
    if convt.training != bn.training:
        raise AssertionError("ConvTranspose and BN both must be in the same mode (train or eval).")
    if is_qat:
        raise Exception("Fusing ConvTranspose+BatchNorm not yet supported in QAT.")  # noqa: TRY002
    return fuse_conv_bn_eval(convt, bn, transpose=True)


def _sequential_wrapper2(sequential):
    """A fuser method that puts two modules in the fused ``sequential`` class (for layer + ReLU)."""
    def fuser_method(is_qat, m1, m2):
        return sequential(m1, m2)
    return fuser_method


_DEFAULT_OP_LIST_TO_FUSER_METHOD = {
    (Conv1d, BatchNorm1d): fuse_conv_bn,
    (Conv1d, BatchNorm1d, ReLU): fuse_conv_bn_relu,
    (Conv2d, BatchNorm2d): fuse_conv_bn,
    (Conv2d, BatchNorm2d, ReLU): fuse_conv_bn_relu,
    (Conv3d, BatchNorm3d): fuse_conv_bn,
    (Conv3d, BatchNorm3d, ReLU): fuse_conv_bn_relu,
    (Conv2d, ReLU): _sequential_wrapper2(nni.ConvReLU2d),
    (Linear, BatchNorm1d): fuse_linear_bn,
    (Linear, ReLU): _sequential_wrapper2(nni.LinearReLU),
    (ConvTranspose1d, BatchNorm1d): fuse_convtranspose_bn,
    (ConvTranspose2d, BatchNorm2d): fuse_convtranspose_bn,
    (ConvTranspose3d, BatchNorm3d): fuse_convtranspose_bn,
}


def get_fuser_method(op_list, additional_fuser_method_mapping=None):
    """The fuser method for a tuple of module types (``additional_fuser_method_mapping`` first)."""
    mappings = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    fuser_method = mappings.get(op_list)
    if fuser_method is None:
        raise AssertionError(f"did not find fuser method for: {op_list} ")
    return fuser_method


# ---- fusing named modules of a model ----------------------------------------------------------------------
def _move_hooks(source, kind, fused):
    """Re-register ``source``'s forward (pre-)hooks on ``fused`` and clear them from ``source``."""
    hooks = getattr(source, f"_forward_{kind}hooks")
    with_kwargs = getattr(source, f"_forward_{kind}hooks_with_kwargs")
    register = fused.register_forward_pre_hook if kind == "pre_" else fused.register_forward_hook
    for hook_id, hook in hooks.items():
        register(hook, with_kwargs=hook_id in with_kwargs)
    hooks.clear()
    with_kwargs.clear()


def fuse_known_modules(mod_list, is_qat, additional_fuser_method_mapping=None):
    """``mod_list`` fused: the fused module then an ``nn.Identity()`` for each other slot. The first module's
    pre-hooks and the last one's forward hooks move to the fused module (others are lost, as in torch)."""
    types = tuple(type(m) for m in mod_list)
    fuser_method = get_fuser_method(types, additional_fuser_method_mapping)
    fused = fuser_method(is_qat, *mod_list)
    _move_hooks(mod_list[0], "pre_", fused)
    _move_hooks(mod_list[-1], "", fused)
    new_mod = [fused]
    for _ in mod_list[1:]:
        identity = Identity()
        identity.training = mod_list[0].training
        new_mod.append(identity)
    return new_mod


def _get_module(model, submodule_key):
    """The submodule at a dotted path (``"layer1.0.conv1"``)."""
    module = model
    for token in submodule_key.split("."):
        module = getattr(module, token)
    return module


def _set_module(model, submodule_key, module):
    """Put ``module`` at a dotted path."""
    *parents, last = submodule_key.split(".")
    setattr(_get_module(model, ".".join(parents)) if parents else model, last, module)


def _fuse_modules_helper(model, modules_to_fuse, is_qat, fuser_func, fuse_custom_config_dict):
    additional = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    mod_list = [_get_module(model, item) for item in modules_to_fuse]
    new_mod_list = fuser_func(mod_list, is_qat, additional)
    for item, new_mod in zip(modules_to_fuse, new_mod_list):
        _set_module(model, item, new_mod)


def _fuse_modules(model, modules_to_fuse, is_qat, inplace=False, fuser_func=fuse_known_modules,
                  fuse_custom_config_dict=None):
    if not inplace:
        model = copy.deepcopy(model)
    if all(isinstance(element, str) for element in modules_to_fuse):
        groups = [modules_to_fuse]
    else:
        groups = modules_to_fuse
    for group in groups:
        _fuse_modules_helper(model, group, is_qat, fuser_func, fuse_custom_config_dict)
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules, fuse_custom_config_dict=None):
    """Fuse each group of named modules of ``model`` (eval mode): ``[conv, bn]``, ``[conv, bn, relu]``,
    ``[conv, relu]``, ``[linear, relu]``, ``[linear, bn]``, ``[convtranspose, bn]``.

    ``modules_to_fuse`` is one list of (dotted) names or a list of such lists. The first module of a group
    becomes the fused one, the others ``nn.Identity()``. Returns a fused copy, or ``model`` itself when
    ``inplace``. ``fuse_custom_config_dict={"additional_fuser_method_mapping": {(A, B): fn}}`` adds patterns.
    """
    return _fuse_modules(model, modules_to_fuse, is_qat=False, inplace=inplace, fuser_func=fuser_func,
                         fuse_custom_config_dict=fuse_custom_config_dict)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    """``fuse_modules`` for quantization-aware training (any mode): conv + bn (+ ReLU) become ``nni.ConvBn2d``
    (``nni.ConvBnReLU2d``), the batch norm kept trainable; conv + ReLU and linear + ReLU as ``fuse_modules``."""
    return _fuse_modules(model, modules_to_fuse, is_qat=True, inplace=inplace, fuser_func=fuser_func,
                         fuse_custom_config_dict=fuse_custom_config_dict)
