"""Train a small CNN on the shipped digits with ``import engine as torch`` — PyTorch code, no PyTorch.

    python scripts/train_digits.py [--epochs 6]

The model and loop are plain PyTorch code taking the framework as an argument, so the tests
run the very same code under PyTorch and compare the losses step by step.
"""
import argparse
import time

import numpy as np


def build(torch):
    """A two-conv digit classifier written against the PyTorch API of ``torch``."""
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
    """Index batches of a seeded shuffle, identical for every framework."""
    order = np.random.default_rng(100 + epoch).permutation(n)
    for i in range(0, n, batch_size):
        yield order[i:i + batch_size]


def train(torch, model, images, labels, epochs, batch_size=32, lr=0.05):
    """SGD with momentum; returns the loss of every step."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
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


def accuracy(torch, model, images, labels):
    model.eval()
    with torch.no_grad():
        predictions = model(torch.from_numpy(images)).argmax(1).numpy()
    return float((predictions == labels).mean())


def main():
    import engine as torch
    from flowvision.datasets import load_digits

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    args = parser.parse_args()
    (train_x, train_y), (test_x, test_y) = load_digits()
    torch.manual_seed(0)
    model = build(torch)
    start = time.perf_counter()
    losses = train(torch, model, train_x, train_y, args.epochs)
    seconds = time.perf_counter() - start
    print(f"trained {len(losses)} steps in {seconds:.1f} s; last loss {losses[-1]:.4f}")
    print(f"held-out accuracy: {accuracy(torch, model, test_x, test_y):.3f} on {len(test_y)} digits")


if __name__ == "__main__":
    main()
