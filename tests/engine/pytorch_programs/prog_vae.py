"""A VAE: reparameterisation with given noise, binary cross-entropy plus the KL term, sampling from the decoder."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync


class VAE(nn.Module):
    def __init__(self, d_in=20, hidden=16, latent=3):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc_mu = nn.Linear(hidden, latent)
        self.fc_logvar = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, d_in)
    def encode(self, x):
        h = F.relu(self.fc1(x))
        return self.fc_mu(h), self.fc_logvar(h)
    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std
    def decode(self, z):
        return torch.sigmoid(self.fc4(F.softplus(self.fc3(z))))
    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, 20))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar

def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 20), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld, bce, kld

rng = np.random.default_rng(7)
x_all = torch.from_numpy((rng.random((24, 4, 5)) > 0.6).astype(np.float32))
noise = torch.from_numpy(rng.standard_normal((6, 8, 3)).astype(np.float32))
torch.manual_seed(0)
model = VAE()
sync(model)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
model.train()
for step in range(6):
    xb = x_all[(step % 3) * 8:(step % 3 + 1) * 8]
    optimizer.zero_grad()
    recon, mu, logvar = model(xb, noise[step])
    loss, bce, kld = loss_function(recon, xb, mu, logvar)
    loss.backward()
    optimizer.step()
    record("loss", [loss.item() / len(xb), bce.item(), kld.item()])
model.eval()
with torch.no_grad():
    sample = model.decode(noise[0])
    record("sample", sample)
    mu, logvar = model.encode(x_all.view(-1, 20))
    record("mu", mu.mean(0).tolist())
FINAL = {"vae": model}
