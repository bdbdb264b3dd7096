"""Which public names of PyTorch the engine lacks, per namespace, and a curated core list.

    python scripts/api_coverage.py             # every namespace: missing names and counts
    python scripts/api_coverage.py --core      # only the core list (no torch needed)
    python scripts/api_coverage.py --json      # the same, as JSON

Namespaces: ``torch``, ``torch.Tensor``, ``torch.nn.functional``, ``torch.nn``, ``torch.optim``,
``torch.utils.data`` and the submodules users import by name (``torch.linalg``, ``torch.special``, ``torch.fft``,
``torch.autograd``, ``torch.func``, ``torch.cuda``, ``torch.hub``, ...: ``NAMESPACES``), each compared with its
engine twin (``engine``, ``engine.Tensor``, ...); a twin the engine lacks counts all of its names as missing.
A module's public names are those ``dir()`` lists without a leading underscore, less what it merely
imports from elsewhere (``np``, ``math``, ``typing.Optional``); ``torch.Tensor``'s are its methods
and attributes without a leading underscore. Listing them needs torch; the core list does not.

The core list (``CORE``) holds the names that real training and inference scripts use: what the
PyTorch examples (ImageNet, MNIST, DCGAN, word language model, transformer), torchvision's reference
training scripts (classification, detection, segmentation), timm's train.py and common
fine-tuning notebooks call, read for the names they touch. It leaves out what such scripts do not
reach for (quantization, sparse layouts, complex numbers, FX, JIT internals, storage classes) and
includes what other workers are adding (optimizers, swa_utils, accelerator, multiprocessing,
DataParallel, SyncBatchNorm, backends.mps), so its missing count tracks real progress. A dotted
name (``utils.clip_grad_norm_``) is looked up attribute by attribute, importing submodules.
"""
import __future__
import argparse
import importlib
import inspect
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the engine's twin of each torch namespace
NAMESPACES = {
    "torch": "engine",
    "torch.Tensor": "engine.Tensor",
    "torch.nn.functional": "engine.nn.functional",
    "torch.nn": "engine.nn",
    "torch.nn.Module": "engine.nn.Module",
    "torch.optim": "engine.optim",
    "torch.utils.data": "engine.utils.data",
    "torch.linalg": "engine.linalg",
    "torch.special": "engine.special",
    "torch.fft": "engine.fft",
    "torch.nn.init": "engine.nn.init",
    "torch.nn.utils": "engine.nn.utils",
    "torch.nn.parallel": "engine.nn.parallel",
    "torch.optim.lr_scheduler": "engine.optim.lr_scheduler",
    "torch.autograd": "engine.autograd",
    "torch.autograd.functional": "engine.autograd.functional",
    "torch.func": "engine.func",
    "torch.amp": "engine.amp",
    "torch.cuda": "engine.cuda",
    "torch.distributed": "engine.distributed",
    "torch.distributions": "engine.distributions",
    "torch.testing": "engine.testing",
    "torch.hub": "engine.hub",
    "torch.profiler": "engine.profiler",
    "torch.utils.benchmark": "engine.utils.benchmark",
    "torch.fx": "engine.fx",
    "torch.library": "engine.library",
}

CORE = {
    "torch": """
        Tensor Size device dtype Generator float32 float64 float16 bfloat16 int64 int32 uint8 bool
        tensor as_tensor from_numpy zeros ones empty full zeros_like ones_like full_like arange
        linspace eye rand randn randint randperm randn_like normal bernoulli multinomial manual_seed
        cat stack split chunk squeeze unsqueeze flatten reshape transpose permute flip roll
        repeat_interleave meshgrid gather where nonzero tril triu matmul mm bmm einsum outer cdist
        sum mean std var max min argmax amax logsumexp cumsum topk sort argsort unique bincount all
        any abs exp log sqrt pow clamp sigmoid tanh softmax erfinv lerp addcmul addcdiv hypot
        copysign xlogy logaddexp maximum isnan isfinite nan_to_num allclose clone is_tensor numel
        no_grad enable_grad inference_mode set_grad_enabled autocast save load set_default_dtype
        set_num_threads use_deterministic_algorithms set_float32_matmul_precision compile
        channels_last strided cuda.is_available cuda.device_count cuda.manual_seed_all
        cuda.synchronize amp.GradScaler amp.autocast autograd.grad autograd.Function
        backends.cudnn.benchmark backends.mps.is_available accelerator.current_accelerator
        distributed.init_process_group distributed.all_reduce multiprocessing.spawn
        utils.checkpoint.checkpoint linalg.norm
        """,
    "torch.Tensor": """
        shape dtype device ndim grad grad_fn requires_grad is_leaf is_cuda data layout is_sparse
        is_quantized is_meta is_mps is_xpu is_nested itemsize nbytes mT backward detach
        requires_grad_ register_hook item tolist numpy to cpu cuda float half bfloat16 long bool
        type_as size dim numel stride storage_offset contiguous is_complex is_inference
        is_floating_point pin_memory share_memory_ view view_as reshape flatten squeeze unsqueeze
        permute transpose expand repeat chunk split unbind unfold clone copy_ fill_ zero_ new_zeros
        new_full new_tensor normal_ uniform_ apply_ add_ mul_ sub_ div_ clamp_ clamp_min addcmul_
        addcdiv_ lerp_ masked_fill sum mean std max argmax norm cumsum softmax matmul topk eq
        nan_to_num_ gather scatter_ scatter_add_ index_add_ round fmod hypot xlogy diff squeeze_
        t_
        """,
    "torch.nn.functional": """
        relu gelu silu leaky_relu hardswish sigmoid softmax log_softmax dropout linear conv2d
        conv3d conv_transpose2d max_pool2d adaptive_avg_pool2d batch_norm layer_norm group_norm
        normalize pad interpolate grid_sample affine_grid embedding one_hot cross_entropy nll_loss
        mse_loss l1_loss smooth_l1_loss binary_cross_entropy_with_logits kl_div cosine_similarity
        scaled_dot_product_attention unfold fold pixel_shuffle gumbel_softmax ctc_loss
        """,
    "torch.nn": """
        Module Sequential ModuleList ModuleDict Parameter Identity Linear Conv2d Conv3d
        ConvTranspose2d BatchNorm1d BatchNorm2d SyncBatchNorm LayerNorm GroupNorm Dropout ReLU
        GELU SiLU Sigmoid Softmax MaxPool2d AvgPool2d AdaptiveAvgPool2d Upsample Flatten Embedding
        LSTM GRU MultiheadAttention TransformerEncoderLayer TransformerDecoderLayer
        CrossEntropyLoss MSELoss BCEWithLogitsLoss CTCLoss DataParallel init.kaiming_normal_
        init.trunc_normal_ utils.clip_grad_norm_ utils.rnn.pad_sequence
        parallel.DistributedDataParallel
        """,
    "torch.optim": """
        Optimizer SGD Adam AdamW RMSprop Adagrad Adadelta Adamax NAdam RAdam ASGD Rprop LBFGS
        SparseAdam lr_scheduler.StepLR lr_scheduler.MultiStepLR lr_scheduler.CosineAnnealingLR
        lr_scheduler.OneCycleLR lr_scheduler.ReduceLROnPlateau lr_scheduler.LambdaLR
        lr_scheduler.LinearLR lr_scheduler.SequentialLR swa_utils.AveragedModel swa_utils.SWALR
        swa_utils.update_bn
        """,
    "torch.utils.data": """
        Dataset IterableDataset DataLoader TensorDataset Subset ConcatDataset random_split Sampler
        RandomSampler SequentialSampler BatchSampler WeightedRandomSampler DistributedSampler
        default_collate get_worker_info
        """,
}


def core_names():
    """The core list: namespace -> names, in the order written above."""
    return {ns: text.split() for ns, text in CORE.items()}


def _import(dotted):
    """The module or class that ``dotted`` names (``engine.Tensor`` is a class in a module)."""
    try:
        return importlib.import_module(dotted)
    except ImportError:
        module, _, attr = dotted.rpartition(".")
        return getattr(importlib.import_module(module), attr)


def resolve(root, dotted):
    """Whether ``dotted`` (``utils.rnn.pad_sequence``) is reachable from the namespace object ``root``,
    importing submodules on the way as ``import torch.utils.rnn`` would."""
    obj = root
    for part in dotted.split("."):
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif _is_engine_tensor(obj):
            return part in obj(0).__dict__
        elif inspect.ismodule(obj):
            try:
                obj = importlib.import_module(f"{obj.__name__}.{part}")
            except ImportError:
                return False
        else:
            return False
    return True


def _is_engine_tensor(obj):
    """``engine.Tensor``, whose instances set some attributes themselves (``grad``, ``requires_grad``)."""
    return inspect.isclass(obj) and obj.__name__ == "Tensor" and obj.__module__.startswith("engine")


def _is_own(module_name, name, value):
    """Whether a module attribute belongs to the library rather than being imported from outside it."""
    top = module_name.split(".")[0]
    if inspect.ismodule(value):  # a submodule, not the package itself (``torch.cuda.torch``)
        return value.__name__.split(".")[0] == top and value.__name__ != top
    if isinstance(value, __future__._Feature) or value is getattr(math, name, None) or name == "TYPE_CHECKING":
        return False  # ``from __future__ import annotations``, ``from math import inf``, typing's flag
    if inspect.isclass(value) or inspect.isroutine(value):
        return str(getattr(value, "__module__", "") or "").split(".")[0] == top
    return not type(value).__module__.startswith("typing")


def public_names(namespace):
    """torch's public names in ``namespace`` (needs torch)."""
    obj = _import(namespace)
    names = (n for n in dir(obj) if not n.startswith("_"))
    if inspect.isclass(obj):
        return sorted(names)
    return sorted(n for n in names if _is_own(namespace, n, getattr(obj, n)))


def missing(namespace, names):
    """The names among ``names`` that the engine's twin of ``namespace`` lacks."""
    sys.path.insert(0, ROOT)
    try:
        twin = _import(NAMESPACES[namespace])
    except (ImportError, AttributeError):  # the engine has no such namespace yet
        return list(names)
    return [n for n in names if not resolve(twin, n)]


def report(names_by_namespace):
    """namespace -> {"total", "missing" (count), "names" (the missing ones)}."""
    out = {}
    for ns, names in names_by_namespace.items():
        lacking = missing(ns, names)
        out[ns] = {"total": len(names), "missing": len(lacking), "names": lacking}
    return out


def format_text(title, result):
    lines = [title]
    for ns, entry in result.items():
        lines.append(f"\n{ns}: {entry['missing']} of {entry['total']} missing")
        lines.extend(f"    {n}" for n in entry["names"])
    total = sum(e["total"] for e in result.values())
    lacking = sum(e["missing"] for e in result.values())
    lines.append(f"\nall namespaces: {lacking} of {total} missing")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--core", action="store_true", help="only the curated core list (no torch needed)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args(argv)
    if args.core:
        title, names = "core list: names real training scripts use", core_names()
    else:
        title, names = "public names of PyTorch", {ns: public_names(ns) for ns in NAMESPACES}
    result = report(names)
    print(json.dumps(result, indent=1) if args.json else format_text(title, result))


if __name__ == "__main__":
    main()
