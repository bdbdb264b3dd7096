"""A DCGAN step pair: ConvTranspose2d generator, Conv2d discriminator, BatchNorm2d, class-name based init,
two Adam optimizers, the generator's output detached for the discriminator's step."""
import numpy as np
import torch
import torch.nn as nn

from program_hooks import record, sync

nz, ngf, ndf, nc = 5, 4, 4, 2

class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())
    def forward(self, z):
        return self.main(z)

class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)

def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)

torch.manual_seed(0)
netG, netD = Generator(), Discriminator()
netG.apply(weights_init)
netD.apply(weights_init)
sync(netG, netD)
criterion = nn.BCELoss()
optD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
optG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
rng = np.random.default_rng(1)
real_all = torch.tensor(np.tanh(rng.standard_normal((12, nc, 16, 16))), dtype=torch.float32)
z_all = torch.tensor(rng.standard_normal((4, 6, nz, 1, 1)), dtype=torch.float32)
fixed_noise = z_all[0, :2]
real_label, fake_label = 1.0, 0.0
for i in range(4):
    real = real_all[(i % 2) * 6:(i % 2 + 1) * 6]
    b = real.size(0)
    netD.zero_grad()
    label = torch.full((b,), real_label, dtype=torch.float)
    out = netD(real)
    errD_real = criterion(out, label)
    errD_real.backward()
    D_x = out.mean().item()
    fake = netG(z_all[i])
    label.fill_(fake_label)
    out = netD(fake.detach())
    errD_fake = criterion(out, label)
    errD_fake.backward()
    errD = errD_real + errD_fake
    optD.step()
    netG.zero_grad()
    label.fill_(real_label)
    out = netD(fake)
    errG = criterion(out, label)
    errG.backward()
    optG.step()
    record("gan", [errD.item(), errG.item(), D_x, out.mean().item()])
netG.eval()
with torch.no_grad():
    record("fixed", netG(fixed_noise))
FINAL = {"G": netG, "D": netD}
