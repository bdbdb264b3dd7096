"""How torch.fx records calls of the torch functions written in Python: such a function hands itself to tracing
with some parameters positional and the rest as keywords, defaults filled in (``F.relu(x)`` is recorded as
``relu(x, inplace=False)``, ``F.softmax(x, 1)`` as ``softmax(x, dim=1, _stacklevel=3, dtype=None)``). Tracing the
engine twin of such a function records the same ``args``/``kwargs``, so graphs, passes keyed on ``node.kwargs``
and generated code read as torch's. Functions torch implements natively are recorded as called; ``F.sigmoid`` and
``F.tanh`` are recorded as the methods torch's Python versions call. The table is facts about torch's functions:
for each signature, ``positional | keywords`` (parameters left of the bar are recorded positionally, the others
by name), and the names of the functions having it."""
import ast
import inspect

_SIGNATURES = {
    'engine': (
        ("*tensors |",
         "atleast_1d atleast_2d atleast_3d block_diag broadcast_tensors cartesian_prod"),
        ("x1, x2 | p=2.0, compute_mode='use_mm_for_euclid_dist_if_necessary'",
         "cdist"),
        ("A | k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None, "
         "tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None",
         "lobpcg"),
        ("input | p='fro', dim=None, keepdim=False, out=None, dtype=None",
         "norm"),
        ("A | q=None, center=True, niter=2",
         "pca_lowrank"),
        ("tensor, split_size_or_sections | dim=0",
         "split"),
        ("input, n_fft | hop_length=None, win_length=None, window=None, center=True, pad_mode='reflect', "
         "normalized=False, onesided=None, return_complex=None, align_to_window=None",
         "stft"),
        ("A | q=6, niter=2, M=None",
         "svd_lowrank"),
        ("a, b | dims=2, out=None",
         "tensordot"),
        ("indices | shape",
         "unravel_index"),
    ),
    'engine.nn.functional': (
        ("input, threshold, value | inplace=False",
         "threshold"),
        ("input, output_size |",
         "adaptive_avg_pool2d adaptive_avg_pool3d"),
        ("input, output_size | return_indices=False",
         "adaptive_max_pool1d adaptive_max_pool1d_with_indices adaptive_max_pool2d "
         "adaptive_max_pool2d_with_indices adaptive_max_pool3d adaptive_max_pool3d_with_indices"),
        ("theta, size | align_corners=None",
         "affine_grid"),
        ("input | p=0.5, training=False, inplace=False",
         "alpha_dropout feature_alpha_dropout"),
        ("input, running_mean, running_var | weight=None, bias=None, training=False, momentum=0.1, eps=1e-05",
         "batch_norm"),
        ("input, target | weight=None, size_average=None, reduce=None, reduction='mean'",
         "binary_cross_entropy multilabel_soft_margin_loss"),
        ("input, target | weight=None, size_average=None, reduce=None, reduction='mean', pos_weight=None",
         "binary_cross_entropy_with_logits"),
        ("input | alpha=1.0, inplace=False",
         "celu elu"),
        ("input1, input2, target | margin=0, size_average=None, reduce=None, reduction='mean'",
         "cosine_embedding_loss margin_ranking_loss"),
        ("input, target | weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', "
         "label_smoothing=0.0",
         "cross_entropy"),
        ("log_probs, targets, input_lengths, target_lengths | blank=0, reduction='mean', zero_infinity=False",
         "ctc_loss"),
        ("input | p=0.5, training=True, inplace=False",
         "dropout dropout1d dropout2d dropout3d"),
        ("input, weight | padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False",
         "embedding"),
        ("input, weight | offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode='mean', "
         "sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None",
         "embedding_bag"),
        ("input, output_size, kernel_size | dilation=1, padding=0, stride=1",
         "fold"),
        ("input, kernel_size | output_size=None, output_ratio=None, return_indices=False, _random_samples=None",
         "fractional_max_pool2d fractional_max_pool2d_with_indices fractional_max_pool3d "
         "fractional_max_pool3d_with_indices"),
        ("input, target, var | full=False, eps=1e-06, reduction='mean'",
         "gaussian_nll_loss"),
        ("input | dim=-1",
         "glu"),
        ("input, grid | mode='bilinear', padding_mode='zeros', align_corners=None",
         "grid_sample"),
        ("input, num_groups | weight=None, bias=None, eps=1e-05",
         "group_norm"),
        ("logits | tau=1, hard=False, eps=1e-10, dim=-1",
         "gumbel_softmax"),
        ("input | inplace=False",
         "hardsigmoid hardswish mish relu relu6 selu silu"),
        ("input | min_val=-1.0, max_val=1.0, inplace=False",
         "hardtanh"),
        ("input, target | margin=1.0, size_average=None, reduce=None, reduction='mean'",
         "hinge_embedding_loss"),
        ("input, target | reduction='mean', delta=1.0, weight=None",
         "huber_loss"),
        ("input | running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, "
         "momentum=0.1, eps=1e-05",
         "instance_norm"),
        ("input | size=None, scale_factor=None, mode='nearest', align_corners=None, recompute_scale_factor=None, "
         "antialias=False",
         "interpolate"),
        ("input, target | size_average=None, reduce=None, reduction='mean', log_target=False",
         "kl_div"),
        ("input, normalized_shape | weight=None, bias=None, eps=1e-05",
         "layer_norm"),
        ("input | negative_slope=0.01, inplace=False",
         "leaky_relu"),
        ("input, linear_weight, target | linear_bias=None, weight=None, reduction='mean', ignore_index=None, "
         "label_smoothing=0.0, options=None",
         "linear_cross_entropy"),
        ("input, size | alpha=0.0001, beta=0.75, k=1.0",
         "local_response_norm"),
        ("input | dim=None, _stacklevel=3, dtype=None",
         "log_softmax softmax softmin"),
        ("input, norm_type, kernel_size | stride=None, ceil_mode=False",
         "lp_pool1d lp_pool2d lp_pool3d"),
        ("input, kernel_size | stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False",
         "max_pool1d max_pool1d_with_indices max_pool2d max_pool2d_with_indices max_pool3d "
         "max_pool3d_with_indices"),
        ("input, indices, kernel_size | stride=None, padding=0, output_size=None",
         "max_unpool1d max_unpool2d max_unpool3d"),
        ("input, target | size_average=None, reduce=None, reduction='mean', weight=None",
         "mse_loss"),
        ("input, target | p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction='mean'",
         "multi_margin_loss"),
        ("input, target | size_average=None, reduce=None, reduction='mean'",
         "multilabel_margin_loss soft_margin_loss"),
        ("input, target | weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean'",
         "nll_loss"),
        ("input | p=2.0, dim=1, eps=1e-12, out=None",
         "normalize"),
        ("input, pad | mode='constant', value=None",
         "pad"),
        ("input, target | log_input=True, full=False, size_average=None, eps=1e-08, reduce=None, reduction='mean'",
         "poisson_nll_loss"),
        ("input, normalized_shape | weight=None, eps=None",
         "rms_norm"),
        ("input | lower=0.125, upper=0.3333333333333333, training=False, inplace=False",
         "rrelu"),
        ("input, target | size_average=None, reduce=None, reduction='mean', beta=1.0",
         "smooth_l1_loss"),
        ("input |",
         "softsign tanhshrink"),
        ("anchor, positive, negative | margin=1.0, p=2, eps=1e-06, swap=False, size_average=None, reduce=None, "
         "reduction='mean'",
         "triplet_margin_loss"),
        ("anchor, positive, negative | distance_function=None, margin=1.0, swap=False, reduction='mean'",
         "triplet_margin_with_distance_loss"),
        ("input, kernel_size | dilation=1, padding=0, stride=1",
         "unfold"),
    ),
}

#: torch's Python functions that record a Tensor method call instead of themselves
RECORDED_AS_METHOD = {("engine.nn.functional", "sigmoid"): "sigmoid", ("engine.nn.functional", "tanh"): "tanh"}
#: node names of torch's Python functions whose ``__name__`` is not their public name
RECORDED_NAMES = {("engine.nn.functional", "threshold"): "_threshold"}


def _parse(text):
    """(``inspect.Signature``, names recorded positionally, names recorded by keyword) of ``positional | kw``."""
    params, groups = [], ([], [])
    for side, part in enumerate(text.split("|")):
        for item in filter(None, (p.strip() for p in part.split(", "))):
            name, _, default = item.partition("=")
            if name.startswith("*"):
                params.append(inspect.Parameter(name[1:], inspect.Parameter.VAR_POSITIONAL))
            else:
                value = ast.literal_eval(default) if default else inspect.Parameter.empty
                params.append(inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=value))
            groups[side].append(name)
    return inspect.Signature(params), tuple(groups[0]), tuple(groups[1])


CONVENTIONS = {(namespace, name): _parse(text) for namespace, rows in _SIGNATURES.items()
               for text, names in rows for name in names.split()}


def torch_call_form(convention, args, kwargs):
    """``(args, kwargs)`` as torch records a call of the function with ``convention``; the call as made when it
    does not bind to torch's signature (the function then raises its own error when run)."""
    signature, positional, keywords = convention
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return args, kwargs
    bound.apply_defaults()
    values = bound.arguments
    out_args = []
    for name in positional:
        if name.startswith("*"):
            out_args.extend(values[name[1:]])
        else:
            out_args.append(values[name])
    return tuple(out_args), {name: values[name] for name in keywords}
