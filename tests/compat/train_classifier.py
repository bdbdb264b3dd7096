"""A small image classifier trained the ordinary PyTorch way (after PyTorch's MNIST example).

tests/compat/test_training_script.py runs this file as it is, on PyTorch, and again with only its
imports rewritten to ``engine`` and ``flowvision``: nothing below may know which one it runs on.
The data are synthetic 12x12 digits-like patterns made with numpy, so the script needs no download.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset
from torchvision import transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def make_dataset(count, seed):
    """``count`` noisy 1x12x12 images of 10 fixed random patterns, normalised, with their labels."""
    rng = np.random.default_rng(seed)
    patterns = np.random.default_rng(0).random((10, 1, 12, 12), dtype=np.float32)
    labels = rng.integers(0, 10, count)
    images = patterns[labels] + 0.3 * rng.standard_normal((count, 1, 12, 12), dtype=np.float32)
    normalize = transforms.Normalize((0.5,), (0.3,))
    return TensorDataset(normalize(torch.from_numpy(images)), torch.from_numpy(labels))


def train(args, model, device, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"train epoch {epoch} batch {batch_idx} loss {loss.item():.8f}")


def test(model, device, loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(loader.dataset)
    print(f"test loss {test_loss:.6f} accuracy {correct}/{len(loader.dataset)}")


def main():
    parser = argparse.ArgumentParser(description="small classifier example")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--no-accel", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--checkpoint", default="checkpoint.pth.tar")
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    use_accel = not args.no_accel and torch.accelerator.is_available()
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
    print(f"device {device}")

    loader_kwargs = {"batch_size": args.batch_size, "num_workers": args.workers, "pin_memory": use_accel}
    train_loader = DataLoader(make_dataset(96, seed=1), shuffle=True, **loader_kwargs)
    test_loader = DataLoader(make_dataset(48, seed=2), **loader_kwargs)

    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    start_epoch = 1
    if args.resume and os.path.exists(args.checkpoint):
        checkpoint = torch.load(args.checkpoint, map_location=device, weights_only=True)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        start_epoch = checkpoint["epoch"] + 1
        print(f"resumed after epoch {checkpoint['epoch']}, lr {scheduler.get_last_lr()[0]:.6f}")

    for epoch in range(start_epoch, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)
        scheduler.step()
        torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict()}, args.checkpoint)


if __name__ == "__main__":
    main()
