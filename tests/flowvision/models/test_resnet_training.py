"""Training agreement: resnet18 on the real digits data, ours vs PyTorch from identical weights and batches."""
import time

import numpy as np
import pytest
import torch
import torchvision.models as models_torch

import engine
import engine.nn.functional as F
import flowvision.models as models_flow
from flowvision.datasets import load_digits as load_shipped_digits
from model_parity import numpy_state

pytestmark = pytest.mark.slow  # whole-model runs: outside the quick subset (-m "not slow")

BATCH = 64
LR, MOMENTUM, EPOCHS = 0.02, 0.9, 3


def load_digits(seed=0):
    """The shipped digits (seeded 80/20 split) upsampled 8x8 -> 16x16 (nearest) and normalised (at 32x32 the
    runs took 1.6 times as long for the same accuracy)."""
    (train_x, train_y), (test_x, test_y) = load_shipped_digits(seed=seed)
    images = np.kron(np.concatenate([train_x, test_x]), np.ones((1, 1, 2, 2), np.float32))
    images = ((images - images.mean()) / images.std()).astype(np.float32)
    return images[:len(train_y)], train_y, images[len(train_y):], test_y


def batches(n, epoch):
    """Index batches of one epoch (seeded shuffle, last partial batch dropped)."""
    order = np.random.default_rng(100 + epoch).permutation(n)
    return [order[i:i + BATCH] for i in range(0, n - BATCH + 1, BATCH)]


def torch_step(model, opt, x, y):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
    loss.backward()
    opt.step()
    return loss.item()


def ours_step(model, opt, x, y):
    opt.zero_grad()
    loss = F.cross_entropy(model(engine.from_numpy(x)), engine.from_numpy(y))
    loss.backward()
    opt.step()
    return loss.item()


def accuracy(model, x, y):
    """Held-out accuracy of our model in eval mode."""
    model.eval()
    correct = 0
    with engine.no_grad():
        for i in range(0, len(y), 180):
            logits = model(engine.from_numpy(x[i:i + 180])).numpy()
            correct += int((logits.argmax(1) == y[i:i + 180]).sum())
    model.train()
    return correct / len(y)


def initial_models():
    """A seeded torchvision resnet18 for 1-channel digits, and ours with the same weights (through numpy)."""
    torch.manual_seed(0)
    tmodel = models_torch.resnet18(num_classes=10)
    tmodel.conv1 = torch.nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    ours = models_flow.resnet18(num_classes=10, in_chans=1)
    ours.load_state_dict(numpy_state(tmodel))
    return tmodel, ours


@pytest.mark.heavy
def test_resnet18_digits_loss_curves_agree():
    """The first 8 losses from identical weights and batches agree, in float64 on both sides (8 steps, not 10:
    the mean of the last 4 is 0.33 times that of the first 4, against 0.29 over 10 steps, the threshold 0.6).

    float64 because this run is chaotic in float32: PyTorch's own float32 losses drift more than
    1e-3 from its float64 ones within a few steps (train-mode BatchNorm, ties in max pooling on the
    flat background), so a float32 comparison would measure rounding, not the implementation.
    """
    x_train, y_train, _, _ = load_digits()
    tmodel, ours = initial_models()
    tmodel, ours = tmodel.double(), ours.double()
    topt = torch.optim.SGD(tmodel.parameters(), lr=LR, momentum=MOMENTUM)
    oopt = engine.optim.SGD(ours.parameters(), lr=LR, momentum=MOMENTUM)
    ref_losses, our_losses = [], []
    for idx in batches(len(y_train), 0)[:8]:
        x = x_train[idx].astype(np.float64)
        ref_losses.append(torch_step(tmodel, topt, x, y_train[idx]))
        our_losses.append(ours_step(ours, oopt, x, y_train[idx]))
    rel = np.abs(np.array(our_losses) - ref_losses) / np.abs(ref_losses)
    assert rel.max() <= 1e-3, f"loss curves diverge: {list(zip(ref_losses, our_losses))}"
    assert rel.max() <= 1e-9  # in fact they agree to rounding
    assert np.mean(our_losses[-4:]) < 0.6 * np.mean(our_losses[:4])  # learning: 1.98 -> 0.52


@pytest.mark.heavy
def test_resnet18_digits_reaches_95_percent():
    """Ours alone, float32, from the same initial weights: >= 95% held-out accuracy in 3 epochs with the
    learning rate decayed linearly to zero (97.5-99.2% as float32 rounding on the CPU decides; at a constant
    rate the last epoch's accuracy swung between 90% and 95% with the order of a sum)."""
    start = time.perf_counter()
    x_train, y_train, x_test, y_test = load_digits()
    _, ours = initial_models()
    opt = engine.optim.SGD(ours.parameters(), lr=LR, momentum=MOMENTUM)
    steps = [b for epoch in range(EPOCHS) for b in batches(len(y_train), epoch)]
    decay = engine.optim.lr_scheduler.LambdaLR(opt, lambda step: 1 - step / len(steps))
    for idx in steps:
        ours_step(ours, opt, x_train[idx], y_train[idx])
        decay.step()
    acc = accuracy(ours, x_test, y_test)
    print(f"digits: {len(steps)} steps, held-out accuracy {acc:.3f}, {time.perf_counter() - start:.1f}s")
    assert acc >= 0.95
