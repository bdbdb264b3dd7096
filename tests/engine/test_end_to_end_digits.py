"""End to end: a small CNN written only against ``import engine as torch`` trains on real digits.

The same model source runs under PyTorch; from identical weights and batches the first 20
losses agree, and our run reaches >= 95% held-out accuracy.
"""
import gzip
import os

import numpy as np
import torch as real_torch

import engine

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "digits.csv.gz")


def load_digits():
    with gzip.open(DATA, "rt") as f:
        rows = np.loadtxt(f, delimiter=",", dtype=np.float32)
    images = (rows[:, :64] / 16.0).reshape(-1, 1, 8, 8).astype(np.float32)
    labels = rows[:, 64].astype(np.int64)
    order = np.random.default_rng(0).permutation(len(labels))
    split = int(0.8 * len(labels))
    return (images[order[:split]], labels[order[:split]]), (images[order[split:]], labels[order[split:]])


def build(torch):
    """Plain PyTorch model code; ``torch`` is either real PyTorch or ``engine``."""
    nn = torch.nn

    class DigitNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(16)
            self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.fc1 = nn.Linear(32 * 2 * 2, 64)
            self.fc2 = nn.Linear(64, 10)

        def forward(self, x):
            x = self.pool(torch.relu(self.bn1(self.conv1(x))))
            x = self.pool(nn.functional.relu(self.conv2(x)))
            x = torch.flatten(x, 1)
            x = nn.functional.relu(self.fc1(x))
            return self.fc2(x)

    return DigitNet()


def batches(n, batch_size, epoch):
    order = np.random.default_rng(100 + epoch).permutation(n)
    for i in range(0, n, batch_size):
        yield order[i:i + batch_size]


def train_steps(torch, model, images, labels, epochs, batch_size=32):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    model.train()
    for epoch in range(epochs):
        for idx in batches(len(labels), batch_size, epoch):
            x, y = torch.from_numpy(images[idx]), torch.from_numpy(labels[idx])
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def test_digit_cnn_matches_pytorch_and_learns():
    (train_x, train_y), (test_x, test_y) = load_digits()
    real_torch.manual_seed(0)
    reference = build(real_torch)
    ours = build(engine)
    ours.load_state_dict({k: v.detach().numpy() for k, v in reference.state_dict().items()})

    n20 = 20 * 32
    ref_losses = train_steps(real_torch, reference, train_x[:n20], train_y[:n20], epochs=1)
    our_losses = train_steps(engine, ours, train_x[:n20], train_y[:n20], epochs=1)
    assert len(our_losses) == 20
    np.testing.assert_allclose(our_losses, ref_losses, rtol=1e-4)

    train_steps(engine, ours, train_x, train_y, epochs=6)
    ours.eval()
    with engine.no_grad():
        predictions = ours(engine.from_numpy(test_x)).argmax(1).numpy()
    accuracy = float((predictions == test_y).mean())
    assert accuracy >= 0.95, f"held-out accuracy {accuracy:.3f}"
