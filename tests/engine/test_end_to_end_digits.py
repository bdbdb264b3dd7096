"""End to end: the README's digits CNN, written only against ``import engine as torch``.

The same model source runs under PyTorch; from identical weights and batches the first 20
losses agree, and our run reaches >= 95% held-out accuracy.
"""

import numpy as np
import torch as real_torch

import engine
from flowvision.datasets import load_digits
from script_loader import load_script

train_digits = load_script("train_digits")


def test_digit_cnn_matches_pytorch_and_learns():
    (train_x, train_y), (test_x, test_y) = load_digits()
    real_torch.manual_seed(0)
    reference = train_digits.build(real_torch)
    ours = train_digits.build(engine)
    ours.load_state_dict({k: v.detach().numpy() for k, v in reference.state_dict().items()})

    n20 = 20 * 32
    ref_losses = train_digits.train(real_torch, reference, train_x[:n20], train_y[:n20], epochs=1)
    our_losses = train_digits.train(engine, ours, train_x[:n20], train_y[:n20], epochs=1)
    assert len(our_losses) == 20
    np.testing.assert_allclose(our_losses, ref_losses, rtol=1e-4)

    train_digits.train(engine, ours, train_x, train_y, epochs=6)
    accuracy = train_digits.accuracy(engine, ours, test_x, test_y)
    assert accuracy >= 0.95, f"held-out accuracy {accuracy:.3f}"
