"""A small WGAN-GP trained the ordinary PyTorch way, reaching for the APIs beyond a classifier's loop.

tests/compat/test_gan_script.py runs this file as it is, on PyTorch, and again with only its imports rewritten
to ``engine``: nothing below may know which one it runs on. It uses a gradient penalty (a gradient of a
gradient: ``create_graph=True``), spectral normalisation as a parametrization, a spectral (FFT) loss term,
``torch.func.functional_call`` for an EMA copy of the generator, a full backward hook, profiler ranges and a
TensorBoard log. The data are 8x8 synthetic stripes made with numpy, so the script needs no download.
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call
from torch.nn.utils import parametrizations
from torch.profiler import record_function
from torch.utils.tensorboard import SummaryWriter


class Generator(nn.Module):
    def __init__(self, latent=8):
        super().__init__()
        self.fc = nn.Linear(latent, 16 * 2 * 2)
        self.up1 = nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
        self.up2 = nn.ConvTranspose2d(8, 1, 4, stride=2, padding=1)

    def forward(self, z):
        x = F.relu(self.fc(z)).view(-1, 16, 2, 2)
        x = F.relu(self.up1(x))
        return torch.tanh(self.up2(x))


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = parametrizations.spectral_norm(nn.Conv2d(1, 8, 3, stride=2, padding=1))
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.fc = nn.Linear(16 * 2 * 2, 1)

    def forward(self, x):
        x = F.leaky_relu(self.conv1(x), 0.2)
        x = F.leaky_relu(self.conv2(x), 0.2)
        return self.fc(torch.flatten(x, 1))


def stripes(count, seed):
    """``count`` 1x8x8 images of noisy stripes at random phases, in [-1, 1]."""
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0, 2 * np.pi, (count, 1, 1, 1))
    columns = np.arange(8).reshape(1, 1, 1, 8)
    images = np.sin(columns * 1.2 + phase) + 0.1 * rng.standard_normal((count, 1, 8, 8))
    return torch.from_numpy(np.clip(images, -1, 1).astype(np.float32))


def gradient_penalty(critic, real, fake):
    alpha = torch.rand(real.size(0), 1, 1, 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    scores = critic(mixed)
    grads, = torch.autograd.grad(scores.sum(), mixed, create_graph=True)
    return ((grads.flatten(1).norm(dim=1) - 1) ** 2).mean()


def spectral_loss(fake, real):
    """The distance between the mean amplitude spectra of the two batches."""
    fake_amplitude = torch.fft.rfft2(fake).abs().mean(0)
    real_amplitude = torch.fft.rfft2(real).abs().mean(0)
    return F.l1_loss(fake_amplitude, real_amplitude)


def main():
    parser = argparse.ArgumentParser(description="small WGAN-GP example")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--logdir", default="runs")
    args = parser.parse_args()

    torch.manual_seed(3)
    data = stripes(64, seed=4)
    generator, critic = Generator(), Critic()
    ema = {name: p.detach().clone() for name, p in generator.named_parameters()}
    g_opt = torch.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.5, 0.9))
    c_opt = torch.optim.Adam(critic.parameters(), lr=2e-3, betas=(0.5, 0.9))
    seen = []
    critic.fc.register_full_backward_hook(lambda module, grad_in, grad_out: seen.append(grad_out[0].abs().sum()))
    writer = SummaryWriter(args.logdir)
    for step in range(args.steps):
        real = data[torch.randint(0, data.size(0), (args.batch_size,))]
        with record_function("critic_step"):
            fake = generator(torch.randn(args.batch_size, 8)).detach()
            c_loss = critic(fake).mean() - critic(real).mean() + 10 * gradient_penalty(critic, real, fake)
            c_opt.zero_grad()
            c_loss.backward()
            c_opt.step()
        with record_function("generator_step"):
            fake = generator(torch.randn(args.batch_size, 8))
            g_loss = -critic(fake).mean() + spectral_loss(fake, real)
            g_opt.zero_grad()
            g_loss.backward()
            g_opt.step()
        with torch.no_grad():
            for name, p in generator.named_parameters():
                ema[name].mul_(0.9).add_(p, alpha=0.1)
            ema_images = functional_call(generator, ema, (torch.randn(4, 8),))
        writer.add_scalar("loss/critic", c_loss.item(), step)
        writer.add_scalar("loss/generator", g_loss.item(), step)
        print(f"step {step} critic {c_loss.item():.8f} generator {g_loss.item():.8f} "
              f"ema {ema_images.abs().mean().item():.8f}")
    writer.close()
    print(f"hooked {len(seen)} logs {len(os.listdir(args.logdir))}")


if __name__ == "__main__":
    main()
