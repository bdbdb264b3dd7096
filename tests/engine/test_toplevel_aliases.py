"""torch's top-level twins of nn.functional (``torch.conv2d``, ``torch.batch_norm``, ``torch.dropout`` ...) against
torch, called the native way (positional arguments in torch's order, reductions and modes as integers): forward
values and every input gradient, the dropouts under the same seed, embedding_bag's four outputs, and the errors."""
import numpy as np
import pytest
import torch

import engine
from op_check import check_op

rng = np.random.default_rng(11)


def rand(*shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def both(name, *extra):
    """(ours, theirs): the op of that name called on the inputs, then ``extra`` positional arguments."""
    return (lambda *a: getattr(engine, name)(*a, *extra)), (lambda *a: getattr(torch, name)(*a, *extra))


CASES = [  # (name, inputs, trailing positional arguments or how to call the op on the inputs)
    ("conv1d", [rand(2, 4, 11), rand(6, 2, 3), rand(6)], (2, 1, 1, 2)),
    ("conv1d", [rand(2, 3, 9), rand(4, 3, 3)], (None, 1, "same")),
    ("conv2d", [rand(2, 3, 7, 8), rand(4, 3, 3, 2), rand(4)], ((2, 1), 1, (1, 2))),
    ("conv3d", [rand(2, 2, 5, 6, 5), rand(3, 2, 2, 3, 2)], (None, 1, (1, 0, 1))),
    ("conv_transpose1d", [rand(2, 4, 7), rand(4, 3, 3), rand(3)], (2, 1, 1)),
    ("conv_transpose2d", [rand(2, 4, 5, 6), rand(4, 1, 3, 3), rand(2)], (2, 1, 1, 2)),
    ("conv_transpose3d", [rand(1, 2, 3, 4, 3), rand(2, 3, 2, 2, 2)], (None, 2)),
    ("avg_pool1d", [rand(2, 3, 11)], (3, 2, 1, True, False)),
    ("adaptive_avg_pool1d", [rand(2, 3, 11)], (4,)),
    ("adaptive_max_pool1d", [rand(2, 3, 11)], (4,)),
    ("max_pool1d", [rand(2, 3, 13)], (3, 2, 1, 2, True)),
    ("max_pool1d", [rand(2, 3, 13)], (3,)),
    ("max_pool1d_with_indices", [rand(2, 3, 13)], (3, 2, 1)),
    ("max_pool2d", [rand(2, 3, 9, 8)], (3, 2, 1)),
    ("max_pool2d", [rand(2, 3, 9, 8)], (2,)),
    ("max_pool3d", [rand(2, 2, 5, 6, 7)], (2, 2, 0, 1, True)),
    ("pixel_shuffle", [rand(2, 8, 3, 5)], (2,)),
    ("pixel_unshuffle", [rand(2, 2, 6, 4)], (2,)),
    ("cosine_similarity", [rand(3, 5, 4), rand(3, 5, 4)], (2,)),
    ("pairwise_distance", [rand(4, 6), rand(4, 6)], (3.0, 1e-6, True)),
    ("pdist", [rand(5, 3)], (1.5,)),
    ("bilinear", [rand(3, 4), rand(3, 5), rand(2, 4, 5), rand(2)], ()),
    ("layer_norm", [rand(2, 3, 5), rand(5), rand(5)], lambda f, x, w, b: f(x, (5,), w, b)),
    ("layer_norm", [rand(2, 3, 5)], ([3, 5], None, None, 1e-3, False)),
    ("group_norm", [rand(2, 6, 4, 3), rand(6), rand(6)], lambda f, x, w, b: f(x, 3, w, b)),
    ("group_norm", [rand(3, 4, 5)], (2, None, None, 1e-2, False)),
    ("rms_norm", [rand(2, 3, 5), rand(5)], lambda f, x, w: f(x, (5,), w)),
    ("rms_norm", [rand(2, 3, 5)], ((3, 5), None, 1e-3)),
    ("constant_pad_nd", [rand(2, 3, 4)], ([1, 2, 0, 1], 1.5)),
    ("constant_pad_nd", [rand(2, 3, 4)], ([-1, 2],)),
    ("affine_grid_generator", [rand(2, 2, 3)], ([2, 3, 5, 4], False)),
    ("affine_grid_generator", [rand(2, 2, 3)], ([2, 2, 4, 6], True)),
]


@pytest.mark.parametrize("name,inputs,extra", CASES, ids=[c[0] for c in CASES])
def test_alias_matches_torch(name, inputs, extra):
    if callable(extra):
        check_op(lambda *a: extra(getattr(engine, name), *a), lambda *a: extra(getattr(torch, name), *a), inputs,
                 rtol=1e-9)
    else:
        check_op(*both(name, *extra), inputs, rtol=1e-9)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_native_order(training):
    """(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled); the running
    statistics updated as torch updates them."""
    x, w, b, mean, var = rand(4, 3, 5), rand(3), rand(3), rand(3), np.abs(rand(3)) + 0.5
    ours_stats, torch_stats = (engine.tensor(mean), engine.tensor(var)), (torch.tensor(mean), torch.tensor(var))
    check_op(lambda x, w, b: engine.batch_norm(x, w, b, *ours_stats, training, 0.2, 1e-4, True),
             lambda x, w, b: torch.batch_norm(x, w, b, *torch_stats, training, 0.2, 1e-4, True), [x, w, b], rtol=1e-9)
    for ours, theirs in zip(ours_stats, torch_stats):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_instance_norm_native_order():
    x, w, b = rand(3, 4, 6), rand(4), rand(4)
    check_op(lambda x, w, b: engine.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
             lambda x, w, b: torch.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False), [x, w, b], rtol=1e-9)


@pytest.mark.parametrize("name,p,shape", [
    ("dropout", 0.3, (4, 5, 6)), ("alpha_dropout", 0.4, (3, 7)), ("feature_dropout", 0.5, (3, 4, 5)),
    ("feature_dropout", 0.5, (3, 4, 2, 3, 2)), ("feature_alpha_dropout", 0.25, (4, 6, 5)),
])
def test_dropouts_draw_torchs_masks(name, p, shape):
    x = rand(*shape)

    def seeded(lib):
        def run(t):
            lib.manual_seed(5)
            return getattr(lib, name)(t, p, True)
        return run
    check_op(seeded(engine), seeded(torch), [x], rtol=1e-12)
    ours = getattr(engine, name)(engine.tensor(x), p, False)
    np.testing.assert_array_equal(ours.numpy(), x)  # not training: the input as it is


@pytest.mark.parametrize("name", ["dropout_", "alpha_dropout_", "feature_dropout_", "feature_alpha_dropout_"])
def test_inplace_dropouts_write_into_the_input(name):
    x = rand(3, 4, 5)
    ours, theirs = engine.tensor(x), torch.tensor(x)
    engine.manual_seed(9)
    torch.manual_seed(9)
    assert getattr(engine, name)(ours, 0.4, True) is ours
    getattr(torch, name)(theirs, 0.4, True)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_feature_dropout_needs_channels():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        engine.feature_dropout(engine.ones(5), 0.5, True)


@pytest.mark.parametrize("padding_idx", [-1, 2])
def test_embedding_weight_first(padding_idx):
    idx = np.array([[1, 2, 4], [2, 0, 2]])
    check_op(*both("embedding", padding_idx), [rand(6, 3), idx], rtol=1e-12)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_embedding_bag_four_outputs(mode, include_last_offset):
    """(output, offset2bag, bag_size, max_indices) as torch's CPU kernel, with an empty bag."""
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 7]), np.array([0, 3, 3, 6, 8][:5 if include_last_offset else 4])
    check_op(lambda w, i, o: engine.embedding_bag(w, i, o, False, mode, False, None, include_last_offset),
             lambda w, i, o: torch.embedding_bag(w, i, o, False, mode, False, None, include_last_offset),
             [rand(9, 4), idx, offsets], rtol=1e-12)


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_padding_and_weights(mode):
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 7]), np.array([0, 2, 5])
    psw = [rand(8)] if mode == 0 else [None]
    check_op(lambda w, i, o, s: engine.embedding_bag(w, i, o, False, mode, False, s, False, 4),
             lambda w, i, o, s: torch.embedding_bag(w, i, o, False, mode, False, s, False, 4),
             [rand(9, 4), idx, offsets, *psw], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_embedding_bag_fast_path_and_index_types(dtype, index_dtype):
    """Plain float32 sums leave offset2bag empty; the extra outputs take the indices' integer type."""
    idx, offsets = np.array([1, 2, 6, 0, 0, 5], index_dtype), np.array([0, 2, 2], index_dtype)
    for mode in (0, 1, 2):
        check_op(*both("embedding_bag", False, mode), [rand(7, 3, dtype=dtype), idx, offsets], rtol=1e-6)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_take_integer_reductions(reduction):
    a, b, sign = rand(5, 4), rand(5, 4), np.sign(rand(5))
    check_op(*both("kl_div", reduction), [rand(5, 4), np.abs(rand(5, 4))], rtol=1e-9)
    check_op(lambda x, t: engine.kl_div(x, t, reduction, log_target=True),
             lambda x, t: torch.kl_div(x, t, reduction, log_target=True), [rand(5, 4), rand(5, 4)], rtol=1e-9)
    check_op(*both("margin_ranking_loss", 0.3, reduction), [rand(6), rand(6), np.sign(rand(6))], rtol=1e-9)
    check_op(*both("hinge_embedding_loss", 0.7, reduction), [a, np.sign(b)], rtol=1e-9)
    check_op(*both("cosine_embedding_loss", 0.1, reduction), [a, b, sign], rtol=1e-9)
    check_op(*both("triplet_margin_loss", 0.5, 1.5, 1e-6, True, reduction), [a, b, rand(5, 4)], rtol=1e-9)
    check_op(*both("poisson_nll_loss", True, True, 1e-8, reduction), [a, np.abs(b) * 3], rtol=1e-9)
    check_op(*both("poisson_nll_loss", False, False, 1e-3, reduction), [np.abs(a), np.abs(b)], rtol=1e-9)
    check_op(*both("binary_cross_entropy_with_logits", None, None, reduction), [a, rng.random((5, 4))], rtol=1e-9)
    weight, pos_weight = rand(4), np.abs(rand(4))  # torch has no gradient for them
    check_op(lambda x, t: engine.binary_cross_entropy_with_logits(x, t, engine.tensor(weight),
                                                                  engine.tensor(pos_weight), reduction),
             lambda x, t: torch.binary_cross_entropy_with_logits(x, t, torch.tensor(weight), torch.tensor(pos_weight),
                                                                 reduction),
             [a, rng.random((5, 4))], rtol=1e-9)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_ctc_loss_integer_reduction(reduction):
    log_probs = torch.from_numpy(rand(8, 2, 5)).log_softmax(-1).numpy()
    targets, input_lengths, target_lengths = np.array([[1, 2, 2], [3, 4, 0]]), [8, 7], [3, 2]
    check_op(*both("ctc_loss", input_lengths, target_lengths, 0, reduction), [log_probs, targets], rtol=1e-9)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_grid_sampler_integer_modes(mode, padding):
    grid = rng.uniform(-1.2, 1.2, (2, 3, 4, 2))
    check_op(*both("grid_sampler", mode, padding, mode == 1), [rand(2, 3, 5, 6), grid], rtol=1e-9,
             grad=mode != 1)


def test_bad_enums_name_the_value():
    with pytest.raises(ValueError, match="reduction must be one of \\[0, 1, 2\\], got 3"):
        engine.kl_div(engine.zeros(2), engine.zeros(2), 3)
    with pytest.raises(ValueError, match="padding_mode must be one of \\[0, 1, 2\\], got 5"):
        engine.grid_sampler(engine.zeros(1, 1, 2, 2), engine.zeros(1, 1, 1, 2), 0, 5, False)


@pytest.mark.parametrize("mode", [0, 2])
def test_embedding_bag_on_cuda(cuda, mode):
    idx, offsets = np.array([1, 2, 4, 5, 4, 3, 2, 7]), np.array([0, 3, 3, 6])
    check_op(lambda w, i, o: engine.embedding_bag(w, i, o, False, mode),
             lambda w, i, o: torch.embedding_bag(w, i, o, False, mode), [rand(9, 4), idx, offsets], rtol=1e-12,
             device="cuda")


def test_native_order_ops_on_cuda(cuda):
    check_op(*both("grid_sampler", 0, 1, False), [rand(2, 3, 5, 6), rng.uniform(-1.2, 1.2, (2, 3, 4, 2))],
             rtol=1e-9, device="cuda")
    check_op(lambda x, w, b: engine.layer_norm(x, (5,), w, b), lambda x, w, b: torch.layer_norm(x, (5,), w, b),
             [rand(2, 3, 5), rand(5), rand(5)], rtol=1e-9, device="cuda")
    check_op(*both("kl_div", 2), [rand(5, 4), np.abs(rand(5, 4))], rtol=1e-9, device="cuda")
