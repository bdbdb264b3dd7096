"""A regression with parametrizations.weight_norm and spectral_norm, parametrize.cached and
remove_parametrizations."""
import numpy as np
import torch
from torch.nn.utils.parametrizations import weight_norm, spectral_norm
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize

from program_hooks import record, sync


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = weight_norm(nn.Linear(6, 10))
        self.fc2 = spectral_norm(nn.Linear(10, 10), n_power_iterations=2)
        self.conv = weight_norm(nn.Conv1d(1, 2, 3, padding=1), dim=0)
        self.out = nn.Linear(20, 1)
    def forward(self, x):
        h = F.elu(self.fc1(x))
        h = F.silu(self.fc2(h))
        h = self.conv(h.unsqueeze(1)).flatten(1)
        return self.out(h).squeeze(-1)

rng = np.random.default_rng(4)
X = torch.tensor(rng.standard_normal((31, 6)), dtype=torch.float32)
w_true = torch.tensor(rng.standard_normal(6), dtype=torch.float32)
Y = X @ w_true + 0.1 * torch.sin(3 * X[:, 0])
torch.manual_seed(0)
model = Regressor()
record("keys", sorted(model.state_dict().keys()).__repr__())
sync(model)
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(6):
    model.train()
    pred = model(X)
    loss = F.mse_loss(pred, Y) + 0.01 * F.smooth_l1_loss(pred, Y, beta=0.5)
    opt.zero_grad()
    loss.backward()
    opt.step()
    record("loss", loss.item())
model.eval()
with torch.no_grad():
    record("eval", model(X[:5]))
    record("sigma_w", model.fc2.weight)
record("is_param", [parametrize.is_parametrized(model.fc1), parametrize.is_parametrized(model.out)])
with parametrize.cached():
    record("cached", model(X[:3]).detach())
parametrize.remove_parametrizations(model.fc1, "weight", leave_parametrized=True)
record("removed", model.fc1.weight)
record("names", repr([n for n, _ in model.named_parameters()]))
FINAL = {"reg": model}
