"""``ctc_loss`` and ``nn.CTCLoss`` against torch: values and gradients for padded and concatenated targets, the three
reductions, ``zero_infinity`` with an impossible sample, repeated labels, blank != 0 (and a target that holds the
blank), unbatched input, float32 and float64, lengths as tensors or tuples, torch's errors, and the GPU."""
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from op_check import check_op

import engine
import engine.nn.functional as F

T, N, C = 9, 3, 7
# sample 0 repeats labels (1, 1 and 4, 4 need blanks between them); sample 2 needs 2 * 2 + 2 = 6 frames, more than
# its 5: an impossible alignment (an infinite loss)
TARGETS = np.array([[1, 1, 3, 4, 4], [2, 5, 6, 0, 0], [3, 3, 2, 2, 0]])
INPUT_LENGTHS, TARGET_LENGTHS = (9, 6, 5), (5, 3, 4)


def _log_probs(*shape, seed=0, dtype=np.float64):
    x = np.random.default_rng(seed).standard_normal(shape) * 2
    return torch.from_numpy(x).log_softmax(-1).numpy().astype(dtype)


def _both(**kwargs):
    """ctc_loss of engine and of torch with the same keyword arguments."""
    return (lambda *a: F.ctc_loss(*a, **kwargs)), (lambda *a: TF.ctc_loss(*a, **kwargs))


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_padded_targets(reduction, zero_infinity):
    ours, theirs = _both(reduction=reduction, zero_infinity=zero_infinity)
    check_op(lambda x, t: ours(x, t, INPUT_LENGTHS, TARGET_LENGTHS), lambda x, t: theirs(x, t, INPUT_LENGTHS,
             TARGET_LENGTHS), [_log_probs(T, N, C), TARGETS])


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_concatenated_targets_and_tensor_lengths(reduction):
    flat = np.concatenate([row[:n] for row, n in zip(TARGETS, TARGET_LENGTHS)])
    ours, theirs = _both(reduction=reduction)
    check_op(ours, theirs, [_log_probs(T, N, C, seed=1), flat, np.array(INPUT_LENGTHS), np.array(TARGET_LENGTHS)])


def test_float32_blank_last_and_a_target_holding_the_blank():
    """blank = C - 1; sample 1's last label is the blank itself, whose gradient at the last frame torch counts
    through the label's position only (a quirk of torch's, matched)."""
    targets = np.array([[0, 2, 2, 5], [1, 6, 3, 6], [4, 4, 4, 4]], np.int32)
    ours, theirs = _both(blank=C - 1, reduction="none")
    lengths = ((T, 7, 8), (4, 2, 3))
    check_op(lambda x, t: ours(x, t, *lengths), lambda x, t: theirs(x, t, *lengths),
             [_log_probs(T, N, C, seed=2, dtype=np.float32), targets], rtol=2e-5)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_unbatched(reduction):
    ours, theirs = _both(reduction=reduction)
    check_op(ours, theirs, [_log_probs(8, 5, seed=3), np.array([1, 2, 2]), np.array(8), np.array(3)])


def test_edges_zero_lengths_unnormalised_inputs_and_minus_infinity():
    """input length 0 (target 0: loss 0; target 1: inf), target length 0, frames past every input length, log_probs
    that are not a log_softmax (torch's gradient is then not the true one, matched anyway) and a -inf entry."""
    x = np.random.default_rng(4).standard_normal((6, 4, 5))
    x[1, 3, 2] = -np.inf
    targets = np.array([[1, 2], [3, 3], [0, 0], [2, 4]])
    lengths = ((0, 0, 5, 5), (0, 1, 0, 2))
    ours, theirs = _both(reduction="none")
    check_op(lambda a, t: ours(a, t, *lengths), lambda a, t: theirs(a, t, *lengths), [x, targets])


def test_gradient_of_an_impossible_sample():
    """NaN up to its input length and 0 after it without zero_infinity, all 0 with it; the others unaffected."""
    x = _log_probs(T, N, C, seed=5)
    for zero_infinity in (False, True):
        a = engine.from_numpy(x.copy()).requires_grad_()
        loss = F.ctc_loss(a, engine.from_numpy(TARGETS), INPUT_LENGTHS, TARGET_LENGTHS, reduction="sum",
                          zero_infinity=zero_infinity)
        loss.backward()
        grad = a.grad.numpy()
        assert np.isinf(loss.item()) != zero_infinity
        assert (np.isnan(grad[:5, 2]).all() if not zero_infinity else not grad[:, 2].any()) and not grad[5:, 2].any()
        assert np.isfinite(grad[:, :2]).all() and not grad[6:, 1].any()


ERRORS = {
    "4-D log_probs": lambda L, x, t: L.nn.functional.ctc_loss(x[None], t, (9, 9, 9), (1, 1, 1)),
    "input length past T": lambda L, x, t: L.nn.functional.ctc_loss(x, t, (10, 9, 9), (1, 1, 1)),
    "negative input length": lambda L, x, t: L.nn.functional.ctc_loss(x, t, (-1, 9, 9), (1, 1, 1)),
    "negative target length": lambda L, x, t: L.nn.functional.ctc_loss(x, t, (9, 9, 9), (1, -1, 1)),
    "target length past S": lambda L, x, t: L.nn.functional.ctc_loss(x, t, (9, 9, 9), (6, 1, 1)),
    "lengths' count": lambda L, x, t: L.nn.functional.ctc_loss(x, t, (9, 9), (1, 1, 1)),
    "targets' batch": lambda L, x, t: L.nn.functional.ctc_loss(x, t[:2], (9, 9, 9), (1, 1, 1)),
    "concatenated size": lambda L, x, t: L.nn.functional.ctc_loss(x, t[0], (9, 9, 9), (1, 1, 1)),
    "3-D targets": lambda L, x, t: L.nn.functional.ctc_loss(x, t[None], (9, 9, 9), (1, 1, 1)),
    "blank": lambda L, x, t: L.nn.functional.ctc_loss(x, t, (9, 9, 9), (1, 1, 1), blank=C),
    "float lengths": lambda L, x, t: L.nn.functional.ctc_loss(x, t, L.tensor([9.0] * 3), L.tensor([1] * 3)),
    "empty": lambda L, x, t: L.nn.functional.ctc_loss(x[:, :0], t[:0], (), ()),
    "half": lambda L, x, t: L.nn.functional.ctc_loss(x.half(), t, (9, 9, 9), (1, 1, 1)),
    "reduction": lambda L, x, t: L.nn.functional.ctc_loss(x, t, (9, 9, 9), (1, 1, 1), reduction="avg"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_match_torch(case):
    x, results = _log_probs(T, N, C, dtype=np.float32), []
    for lib in (torch, engine):
        with pytest.raises(Exception) as caught:
            ERRORS[case](lib, lib.from_numpy(x.copy()), lib.from_numpy(TARGETS))
        results.append(caught.value)
    theirs, ours = results
    assert type(ours).__name__ == type(theirs).__name__
    assert re.fullmatch(re.escape(str(theirs)), str(ours))


def test_ctc_loss_module():
    module = engine.nn.CTCLoss(blank=C - 1, zero_infinity=True)
    assert repr(module) == repr(torch.nn.CTCLoss(blank=C - 1, zero_infinity=True)) == "CTCLoss()"
    assert (module.blank, module.reduction, module.zero_infinity) == (C - 1, "mean", True)
    assert (engine.nn.CTCLoss().blank, engine.nn.CTCLoss(reduction="sum").reduction) == (0, "sum")
    assert not module.state_dict() and "CTCLoss" in engine.nn.modules.loss.__all__
    check_op(lambda x, t: module(x, t, INPUT_LENGTHS, TARGET_LENGTHS),
             lambda x, t: torch.nn.CTCLoss(blank=C - 1, zero_infinity=True)(x, t, INPUT_LENGTHS, TARGET_LENGTHS),
             [_log_probs(T, N, C, seed=6), TARGETS % (C - 1)])


def test_autocast_runs_it_in_float32():
    x = engine.from_numpy(_log_probs(T, N, C, dtype=np.float32)).to(engine.bfloat16)
    with engine.autocast("cpu"):
        loss = F.ctc_loss(x, engine.from_numpy(TARGETS), INPUT_LENGTHS, TARGET_LENGTHS, zero_infinity=True)
    assert loss.dtype is engine.float32


def test_on_the_gpu(cuda):
    ours, theirs = _both(reduction="mean", zero_infinity=True)
    flat = np.concatenate([row[:n] for row, n in zip(TARGETS, TARGET_LENGTHS)])
    check_op(ours, theirs, [_log_probs(T, N, C, dtype=np.float32), flat, np.array(INPUT_LENGTHS),
                            np.array(TARGET_LENGTHS)], rtol=2e-5, device="cuda")
    ours, theirs = _both(reduction="none", blank=2)
    check_op(lambda x, t: ours(x, t, INPUT_LENGTHS, TARGET_LENGTHS), lambda x, t: theirs(x, t, INPUT_LENGTHS,
             TARGET_LENGTHS), [_log_probs(T, N, C), TARGETS], device="cuda")
