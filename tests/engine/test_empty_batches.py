"""Empty batches (N = 0) through every op a model runs, against PyTorch: output shape and dtype, the
input's gradient, the weights' (zero) gradients, and what training-mode normalisation does to its
running statistics (PyTorch leaves them as they were). Detection heads meet empty batches whenever an
image has no detections, so each op must accept one in both directions, and quietly: no numpy warning."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
import torchvision.ops as tvops

import engine
import engine.nn.functional as F
import flowvision.ops as ops
from op_check import check_op

RNG = np.random.default_rng(9)


def randn(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.fixture(autouse=True)
def no_numpy_warnings():
    """An empty batch must not make numpy warn (mean of an empty slice, 0/0, ...)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def both(name, *args, **kwargs):
    """The same functional call on our side and on PyTorch's: ``F.<name>`` and ``TF.<name>``."""
    return (lambda *xs: getattr(F, name)(*xs, *args, **kwargs),
            lambda *xs: getattr(TF, name)(*xs, *args, **kwargs))


def norm(name, shape_arg):
    """A norm whose second argument (normalized shape, groups) comes before its weights."""
    return (lambda x, *w: getattr(F, name)(x, shape_arg, *w),
            lambda x, *w: getattr(TF, name)(x, shape_arg, *w))


# (case id, (ours, torch), inputs): inputs with a zero batch dimension, weights with real sizes.
FUNCTIONAL_CASES = [
    ("conv1d", both("conv1d", padding=1), [randn(0, 3, 7), randn(4, 3, 3), randn(4)]),
    ("conv2d", both("conv2d", stride=2, padding=1), [randn(0, 3, 9, 8), randn(4, 3, 3, 3), randn(4)]),
    ("conv2d_1x1", both("conv2d"), [randn(0, 3, 5, 6), randn(4, 3, 1, 1)]),
    ("conv2d_grouped", both("conv2d", padding=1, groups=2), [randn(0, 4, 7, 7), randn(6, 2, 3, 3), randn(6)]),
    ("conv2d_depthwise", both("conv2d", padding=1, groups=4), [randn(0, 4, 7, 7), randn(4, 1, 3, 3)]),
    ("conv2d_dilated", both("conv2d", padding=2, dilation=2), [randn(0, 3, 9, 9), randn(2, 3, 3, 3)]),
    ("conv_transpose2d", both("conv_transpose2d", stride=2), [randn(0, 3, 5, 4), randn(3, 4, 3, 3), randn(4)]),
    ("conv_transpose1d", both("conv_transpose1d", stride=2), [randn(0, 3, 5), randn(3, 2, 3)]),
    ("linear", both("linear"), [randn(0, 7), randn(5, 7), randn(5)]),
    ("linear_3d", both("linear"), [randn(0, 4, 7), randn(5, 7)]),
    ("linear_no_features", both("linear"), [randn(2, 4, 0), randn(5, 0), randn(5)]),  # a size 0 besides the batch
    ("linear_no_outputs", both("linear"), [randn(2, 4, 3), randn(0, 3)]),
    ("bilinear", both("bilinear"), [randn(0, 3), randn(0, 4), randn(2, 3, 4), randn(2)]),
    ("max_pool2d", both("max_pool2d", 3, 2, 1), [randn(0, 3, 9, 8)]),
    ("max_pool2d_ceil", both("max_pool2d", 2, 2, ceil_mode=True), [randn(0, 3, 7, 7)]),
    ("max_pool1d", both("max_pool1d", 2), [randn(0, 3, 9)]),
    ("avg_pool2d", both("avg_pool2d", 3, 2, 1), [randn(0, 3, 9, 8)]),
    ("avg_pool2d_no_pad_count", both("avg_pool2d", 3, 2, 1, count_include_pad=False), [randn(0, 3, 9, 8)]),
    ("adaptive_avg_pool2d_1", both("adaptive_avg_pool2d", 1), [randn(0, 3, 5, 6)]),
    ("adaptive_avg_pool2d_uneven", both("adaptive_avg_pool2d", (3, 4)), [randn(0, 3, 7, 6)]),
    ("adaptive_max_pool2d", both("adaptive_max_pool2d", (2, 3)), [randn(0, 3, 7, 6)]),
    ("adaptive_avg_pool1d", both("adaptive_avg_pool1d", 3), [randn(0, 3, 7)]),
    ("interpolate_nearest", both("interpolate", scale_factor=2), [randn(0, 3, 5, 4)]),
    ("interpolate_bilinear", both("interpolate", size=(7, 9), mode="bilinear", align_corners=False),
     [randn(0, 3, 5, 4)]),
    ("interpolate_bilinear_aligned", both("interpolate", size=(7, 9), mode="bilinear", align_corners=True),
     [randn(0, 3, 5, 4)]),
    ("interpolate_area", both("interpolate", size=(3, 2), mode="area"), [randn(0, 3, 9, 8)]),
    ("interpolate_bicubic", both("interpolate", size=(7, 9), mode="bicubic"), [randn(0, 3, 5, 4)]),
    ("interpolate_linear", both("interpolate", size=9, mode="linear"), [randn(0, 3, 5)]),
    ("layer_norm", norm("layer_norm", (6,)), [randn(0, 4, 6), randn(6), randn(6)]),
    ("layer_norm_2d", norm("layer_norm", (4, 6)), [randn(0, 4, 6), randn(4, 6), randn(4, 6)]),
    ("group_norm", norm("group_norm", 2), [randn(0, 4, 5, 5), randn(4), randn(4)]),
    ("group_norm_no_affine", norm("group_norm", 4), [randn(0, 4, 5)]),
    ("instance_norm", both("instance_norm"), [randn(0, 3, 5, 5)]),
    ("rms_norm", norm("rms_norm", (6,)), [randn(0, 4, 6), randn(6)]),
    ("local_response_norm", both("local_response_norm", 3), [randn(0, 5, 4, 4)]),
    ("relu", both("relu"), [randn(0, 3, 4)]),
    ("hardswish", both("hardswish"), [randn(0, 3, 4)]),
    ("gelu", both("gelu"), [randn(0, 3, 4)]),
    ("silu", both("silu"), [randn(0, 3, 4)]),
    ("softmax", both("softmax", dim=1), [randn(0, 5)]),
    ("log_softmax", both("log_softmax", dim=-1), [randn(0, 5)]),
    ("dropout_eval", both("dropout", 0.5, False), [randn(0, 5)]),
    ("pad", both("pad", (1, 2, 0, 1)), [randn(0, 3, 4, 4)]),
    ("pad_reflect", both("pad", (1, 2, 1, 1), mode="reflect"), [randn(0, 3, 4, 4)]),
    ("cross_entropy", both("cross_entropy"), [randn(0, 5), np.zeros(0, np.int64)]),
    ("cross_entropy_sum", both("cross_entropy", reduction="sum"), [randn(0, 5), np.zeros(0, np.int64)]),
    ("smooth_l1_loss", both("smooth_l1_loss", reduction="sum", beta=1 / 9), [randn(0, 4), randn(0, 4)]),
    ("binary_cross_entropy_with_logits", both("binary_cross_entropy_with_logits"), [randn(0, 14, 14),
                                                                                  randn(0, 14, 14)]),
    ("scaled_dot_product_attention", both("scaled_dot_product_attention"),
     [randn(0, 2, 5, 4), randn(0, 2, 6, 4), randn(0, 2, 6, 4)]),
]


@pytest.mark.parametrize("ours,theirs,inputs", [case[1] + (case[2],) for case in FUNCTIONAL_CASES],
                         ids=[case[0] for case in FUNCTIONAL_CASES])
def test_functional_on_an_empty_batch(ours, theirs, inputs):
    check_op(ours, theirs, inputs)


@pytest.mark.parametrize("shape", [(0, 3), (0, 3, 7), (0, 3, 5, 4), (2, 3, 0)])
def test_batch_norm_training_on_no_values_keeps_running_stats(shape):
    """PyTorch normalises nothing: the output is empty, the weights' gradients are zero and the
    running statistics stay as they were (an update with the mean of nothing would make them NaN)."""
    mean, var = randn(3), randn(3) ** 2 + 0.5
    ours_stats = [engine.tensor(mean), engine.tensor(var)]
    torch_stats = [torch.tensor(mean), torch.tensor(var)]
    check_op(lambda x, w, b: F.batch_norm(x, *ours_stats, w, b, training=True),
             lambda x, w, b: TF.batch_norm(x, *torch_stats, w, b, training=True),
             [randn(*shape), randn(3), randn(3)])
    for ours, theirs in zip(ours_stats, torch_stats):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_on_an_empty_batch_without_weights(training):
    stats = (engine.zeros(3), engine.ones(3)) if not training else (None, None)
    torch_stats = (torch.zeros(3), torch.ones(3)) if not training else (None, None)
    check_op(lambda x: F.batch_norm(x, *stats, training=training),
             lambda x: TF.batch_norm(x, *torch_stats, training=training), [randn(0, 3, 4, 4)])


def test_batch_norm_training_still_refuses_one_value_per_channel():
    with pytest.raises(ValueError, match=r"^Expected more than 1 value per channel when training, got input "
                                         r"size .*\[1, 3\]"):
        F.batch_norm(engine.zeros(1, 3), None, None, training=True)


@pytest.mark.parametrize("module", ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"])
def test_batch_norm_module_on_an_empty_batch_counts_the_batch(module):
    """nn.BatchNorm still counts the (empty) batch in ``num_batches_tracked``, as PyTorch does."""
    shape = {"BatchNorm1d": (0, 3), "BatchNorm2d": (0, 3, 4, 4), "BatchNorm3d": (0, 3, 2, 3, 4)}[module]
    ours, theirs = getattr(engine.nn, module)(3), getattr(torch.nn, module)(3)
    ours.running_mean.fill_(2.0)
    theirs.running_mean.fill_(2.0)
    check_op(ours, theirs, [randn(*shape)])
    np.testing.assert_array_equal(ours.running_mean.numpy(), theirs.running_mean.numpy())
    np.testing.assert_array_equal(ours.running_var.numpy(), theirs.running_var.numpy())
    assert int(ours.num_batches_tracked) == int(theirs.num_batches_tracked) == 1
    ours.eval()
    theirs.eval()
    check_op(ours, theirs, [randn(*shape)])


def test_instance_norm_running_stats_of_an_empty_batch_become_nan_as_in_torch():
    """PyTorch averages the per-sample statistics of no samples into the running ones: NaN."""
    ours_stats = [engine.zeros(3), engine.ones(3)]
    torch_stats = [torch.zeros(3), torch.ones(3)]
    check_op(lambda x: F.instance_norm(x, *ours_stats), lambda x: TF.instance_norm(x, *torch_stats),
             [randn(0, 3, 4, 4)])
    for ours, theirs in zip(ours_stats, torch_stats):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# ---- detection ops: no boxes, or no images ------------------------------------------------------
def test_roi_align_and_roi_pool_with_no_boxes():
    features = randn(2, 3, 10, 12)
    no_boxes = np.zeros((0, 5), np.float32)
    check_op(lambda x, r: ops.roi_align(x, r, (7, 7), 0.5, 2, True),
             lambda x, r: tvops.roi_align(x, r, (7, 7), 0.5, 2, True), [features, no_boxes])
    check_op(lambda x, r: ops.roi_pool(x, r, (3, 4), 0.5), lambda x, r: tvops.roi_pool(x, r, (3, 4), 0.5),
             [features, no_boxes], grad=False)
    check_op(lambda x, r: ops.roi_pool(x, r, (3, 4), 0.5), lambda x, r: tvops.roi_pool(x, r, (3, 4), 0.5),
             [features, no_boxes])


def test_multi_scale_roi_align_with_no_boxes():
    names = ["0", "1"]
    ours = ops.MultiScaleRoIAlign(names, 7, 2)
    theirs = tvops.MultiScaleRoIAlign(names, 7, 2)
    feats = [randn(2, 4, 16, 16), randn(2, 4, 8, 8)]
    sizes = [(64, 64), (60, 62)]

    def ours_call(a, b):
        return ours({"0": a, "1": b}, [engine.zeros(0, 4), engine.zeros(0, 4)], sizes)

    def theirs_call(a, b):
        return theirs({"0": a, "1": b}, [torch.zeros(0, 4), torch.zeros(0, 4)], sizes)
    check_op(ours_call, theirs_call, feats)


def test_box_ops_with_no_boxes():
    none = np.zeros((0, 4), np.float32)
    boxes = np.array([[0, 0, 4, 5], [1, 2, 8, 9]], np.float32)
    check_op(lambda a, b: ops.box_iou(a, b), lambda a, b: tvops.box_iou(a, b), [none, boxes])
    check_op(lambda a: ops.box_area(a), lambda a: tvops.box_area(a), [none])
    check_op(lambda a: ops.clip_boxes_to_image(a, (5, 6)), lambda a: tvops.clip_boxes_to_image(a, (5, 6)), [none])
    check_op(lambda a: ops.box_convert(a, "xyxy", "cxcywh"), lambda a: tvops.box_convert(a, "xyxy", "cxcywh"),
             [none])
    check_op(lambda a, s: ops.nms(a, s, 0.5), lambda a, s: tvops.nms(a, s, 0.5), [none, np.zeros(0, np.float32)],
             grad=False)
    check_op(lambda a, s, i: ops.batched_nms(a, s, i, 0.5), lambda a, s, i: tvops.batched_nms(a, s, i, 0.5),
             [none, np.zeros(0, np.float32), np.zeros(0, np.int64)], grad=False)
    check_op(lambda a: ops.remove_small_boxes(a, 1.0), lambda a: tvops.remove_small_boxes(a, 1.0), [none],
             grad=False)


def test_reductions_and_shape_ops_over_an_empty_batch():
    x = randn(0, 3)
    check_op(lambda t: t.sum(0), lambda t: t.sum(0), [x])
    check_op(lambda t: t.mean(1), lambda t: t.mean(1), [x])
    check_op(lambda t: t.amax(1), lambda t: t.amax(1), [x])
    check_op(lambda t: t.flatten(1), lambda t: t.flatten(1), [randn(0, 3, 4)])
    check_op(lambda t: t.reshape(0, 12), lambda t: t.reshape(0, 12), [randn(0, 3, 4)])
    check_op(lambda t: t.view(-1, 5, 2), lambda t: t.view(-1, 5, 2), [randn(0, 10)])
    check_op(lambda a, b: engine.cat([a, b]), lambda a, b: torch.cat([a, b]), [randn(0, 3), randn(2, 3)])
    check_op(lambda t: t.split([2, 1], 1), lambda t: t.split([2, 1], 1), [randn(0, 3)])
    check_op(lambda t: t.max(1), lambda t: t.max(1), [randn(0, 3)])


def test_mean_of_nothing_is_nan_without_a_warning():
    check_op(lambda t: t.mean(0), lambda t: t.mean(0), [randn(0, 3)])
    check_op(lambda t: t.mean(), lambda t: t.mean(), [randn(0, 3)])


def test_reducing_an_empty_dimension_without_identity_names_the_dimension():
    with pytest.raises(IndexError, match=r"^max\(\): Expected reduction dim 0 to have non-zero size\.$"):
        engine.zeros(0, 3).max(0)


@pytest.mark.parametrize("pool", ["avg_pool2d", "max_pool2d"])
@pytest.mark.parametrize("batch", [0, 1])
def test_pooling_to_nothing_is_refused_as_in_torch(pool, batch):
    """A window larger than the map leaves no output: PyTorch refuses with the sizes (Inception's aux head
    in training at its smallest input), empty batch or not."""
    x = np.zeros((batch, 6, 3, 3), np.float32)
    with pytest.raises(RuntimeError) as theirs:
        getattr(TF, pool)(torch.from_numpy(x), 5, 3)
    with pytest.raises(RuntimeError) as ours:
        getattr(F, pool)(engine.from_numpy(x), 5, 3)
    assert str(ours.value) == str(theirs.value) == ("Given input size: (6x3x3). Calculated output size: (6x0x0). "
                                                    "Output size is too small")


_CUDA_CASES = ["conv2d", "conv2d_depthwise", "conv_transpose2d", "linear", "max_pool2d", "avg_pool2d",
               "adaptive_avg_pool2d_uneven", "adaptive_max_pool2d", "interpolate_bilinear", "interpolate_nearest",
               "interpolate_area",
               "layer_norm", "group_norm", "softmax"]


@pytest.mark.parametrize("ours,theirs,inputs", [case[1] + (case[2],) for case in FUNCTIONAL_CASES
                                                if case[0] in _CUDA_CASES],
                         ids=[case[0] for case in FUNCTIONAL_CASES if case[0] in _CUDA_CASES])
def test_functional_on_an_empty_batch_on_cuda(cuda, ours, theirs, inputs):
    """The GPU kernels are never launched over nothing (a grid of no blocks is a CUDA error)."""
    check_op(ours, theirs, inputs, device="cuda")


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_and_roi_align_on_an_empty_batch_on_cuda(cuda, training):
    stats = [randn(3), randn(3) ** 2 + 0.5]
    ours_stats = [engine.tensor(s).to("cuda") for s in stats]
    check_op(lambda x, w, b: F.batch_norm(x, *ours_stats, w, b, training=training),
             lambda x, w, b: TF.batch_norm(x, *map(torch.tensor, stats), w, b, training=training),
             [randn(0, 3, 5, 4), randn(3), randn(3)], device="cuda")
    np.testing.assert_array_equal(ours_stats[0].cpu().numpy(), stats[0])
    check_op(lambda x, r: ops.roi_align(x, r, (7, 7), 0.5, 2, True),
             lambda x, r: tvops.roi_align(x, r, (7, 7), 0.5, 2, True),
             [randn(2, 3, 10, 12), np.zeros((0, 5), np.float32)], device="cuda")


@pytest.mark.parametrize("name", ["FrozenBatchNorm2d", "Conv2dNormActivation", "SqueezeExcitation"])
def test_zoo_building_blocks_on_an_empty_batch(name):
    args = {"FrozenBatchNorm2d": (4,), "Conv2dNormActivation": (4, 6, 3), "SqueezeExcitation": (4, 2)}[name]
    torch.manual_seed(0)
    theirs = getattr(tvops, name)(*args).eval()
    ours = getattr(ops, name)(*args).eval()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    check_op(ours, theirs, [randn(0, 4, 7, 6)])
