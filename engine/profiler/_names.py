"""What the profiler calls an op, and the FLOPs it counts for one.

An op event is named as torch names the aten op where the engine's ``Function`` maps to one plainly
(``Add`` -> "aten::add", ``ConvNd`` of a 4-D input -> "aten::conv2d", a max pool -> "aten::max_pool2d");
any other op goes by its class name ("Einsum", "_Bilinear"). Backward nodes are named
"autograd::engine::evaluate_function: " + the node's own name ("ConvNdBackward", "AddBackward"): the
engine names nodes after its op classes, not after aten's derivative formulas ("ConvolutionBackward0"),
and a profile shows what ran.
"""
import math

BACKWARD_PREFIX = "autograd::engine::evaluate_function: "
ACCUMULATE_GRAD = BACKWARD_PREFIX + "torch::autograd::AccumulateGrad"

_PLAIN = (
    "Add Sub Mul Div Remainder Fmod Pow Maximum Minimum Atan2 Neg Abs Sign Exp Exp2 Expm1 Log Log2 Log10 Log1p "
    "Sqrt Rsqrt Reciprocal Square Sin Cos Tan Atan Asin Acos Sinh Cosh Tanh Sigmoid Erf Erfc Erfinv Floor Ceil "
    "Trunc Round Frac Clamp Where MatMul Cat Stack Sum Mean Prod Var Std Permute Reshape Expand Flip Roll "
    "Gather Scatter Softmax LogSoftmax Clone Contiguous Diagonal Outer Einsum Hardtanh Hardswish Hardsigmoid "
    "Softplus Mish Threshold Lgamma Digamma Hypot Logit Sinc Unfold Fold Take Repeat Select Slice"
)
_SNAKE = {
    "ReLU": "relu", "GELU": "gelu", "SiLU": "silu", "ELU": "elu", "PReLU": "prelu", "LeakyReLU": "leaky_relu",
    "LogSigmoid": "log_sigmoid", "GLU": "glu", "Softshrink": "softshrink", "Hardshrink": "hardshrink",
    "FloorDivide": "floor_divide", "CumSum": "cumsum", "CumProd": "cumprod", "LogSumExp": "logsumexp",
    "LogCumSumExp": "logcumsumexp", "LogAddExp": "logaddexp", "LogAddExp2": "logaddexp2",
    "AddMatMul": "addmm", "BatchNorm": "batch_norm", "LayerNorm": "layer_norm", "GroupNorm": "group_norm",
    "RMSNorm": "rms_norm", "_Linear": "linear", "_Embedding": "embedding", "_EmbeddingBag": "embedding_bag",
    "_Dropout": "dropout", "Pad": "pad", "Interpolate": "upsample", "GridSample": "grid_sampler",
    "IndexSelect": "index_select", "IndexAdd": "index_add", "IndexCopy": "index_copy", "IndexFill": "index_fill",
    "IndexPut": "index_put", "MaskedFill": "masked_fill", "MaskedSelect": "masked_select",
    "MaskedScatter": "masked_scatter", "ScatterReduce": "scatter_reduce", "TopK": "topk", "KthValue": "kthvalue",
    "NonZero": "nonzero", "VectorNorm": "linalg_vector_norm", "NanToNum": "nan_to_num", "NanSum": "nansum",
    "NanMean": "nanmean", "ToDtype": "_to_copy", "ToDevice": "_to_copy", "AdvancedIndex": "index",
    "TensorIndex": "index", "Triangle": "tril", "DiagEmbed": "diag_embed", "Inverse": "linalg_inv",
    "Det": "linalg_det", "Slogdet": "linalg_slogdet", "Solve": "linalg_solve", "Svd": "linalg_svd",
    "Pinverse": "pinverse", "MatrixExp": "linalg_matrix_exp", "Deg2Rad": "deg2rad", "Rad2Deg": "rad2deg",
    "Xlogy": "xlogy", "Heaviside": "heaviside", "Copysign": "copysign", "NextAfter": "nextafter",
    "Polygamma": "polygamma", "I0": "i0", "Angle": "angle", "AsStrided": "as_strided", "Alias": "alias",
    "RepeatInterleave": "repeat_interleave", "_MSE": "mse_loss", "_L1": "l1_loss", "_SmoothL1": "smooth_l1_loss",
    "_Huber": "huber_loss", "_BCE": "binary_cross_entropy", "_BCEWithLogits": "binary_cross_entropy_with_logits",
    "_KLDiv": "kl_div", "CTC": "ctc_loss", "_SoftMargin": "soft_margin_loss",
}
_UFUNCS = {"equal": "eq", "not_equal": "ne", "less": "lt", "less_equal": "le", "greater": "gt",
           "greater_equal": "ge"}

_NAMES = {**{n: n.lower() for n in _PLAIN.split()}, **_SNAKE}


def op_name(fn, arrays):
    """The event name of one call of ``fn`` (a Function) on ``arrays`` (its inputs' arrays)."""
    cls = type(fn).__name__
    name = _NAMES.get(cls)
    if name is not None:
        return "aten::" + name
    if cls in ("ConvNd", "ConvTransposeNd", "_Pool"):
        nd = getattr(fn, "nd", None) or (getattr(arrays[0], "ndim", 4) - 2)
        if cls == "_Pool":
            return "aten::" + fn.kind.removesuffix("_values").replace("2d", f"{nd}d")
        return f"aten::conv{'_transpose' if cls == 'ConvTransposeNd' else ''}{nd}d"
    ufunc = getattr(fn, "ufunc", None)
    if cls in ("_Compare", "_Bitwise", "_Predicate") and isinstance(ufunc, str):
        return "aten::" + _UFUNCS.get(ufunc, ufunc)
    return cls


def _shape(a, i):
    return getattr(a[i], "shape", ()) if i < len(a) else ()


def op_flops(fn, arrays, outputs):
    """Multiply-adds times two of a matmul, linear or convolution call; 0 for every other op."""
    cls = type(fn).__name__
    out = getattr(outputs[0], "size", 0) if outputs else 0
    if cls == "MatMul":
        return 2 * out * (_shape(arrays, 0) or (1,))[-1]
    if cls == "AddMatMul":
        return 2 * out * (_shape(arrays, 1) or (1,))[-1]
    if cls == "_Linear":
        return 2 * out * (_shape(arrays, 1) or (1, 1))[-1]
    if cls == "ConvNd":
        return 2 * out * math.prod(_shape(arrays, 1)[1:])
    if cls == "ConvTransposeNd":
        # every input element meets every weight element of its group: 2 * N*Cin*H*W * (Cout/g)*kh*kw
        return 2 * getattr(arrays[0], "size", 0) * math.prod(_shape(arrays, 1)[1:])
    return 0
