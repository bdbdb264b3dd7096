"""Gradient accumulation under CPU bfloat16 autocast with a (disabled) GradScaler, unscale_, clipping and
autocast-disabled regions, as the AMP recipe shows."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.fc1 = nn.Linear(6 * 4 * 4, 16)
        self.ln = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 5)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = torch.flatten(x, 1)
        x = self.ln(F.gelu(self.fc1(x)))
        return self.fc2(x)

rng = np.random.default_rng(9)
xs = torch.tensor(rng.standard_normal((4, 6, 3, 8, 8)), dtype=torch.float32)
ys = torch.tensor(rng.integers(0, 5, (4, 6)))
torch.manual_seed(0)
model = Net()
sync(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.amp.GradScaler("cpu", enabled=False)
accum = 2
opt.zero_grad()
for i in range(4):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        out = model(xs[i])
        record("dtypes", repr([out.dtype]))
        loss = F.cross_entropy(out, ys[i])
    record("dtype_loss", repr(loss.dtype))
    record("loss", loss.item())
    scaler.scale(loss / accum).backward()
    if (i + 1) % accum == 0:
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
with torch.amp.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
    model.eval()
    logits = model(xs[0])
    record("eval_dtype", repr(logits.dtype))
    record("eval", logits.float())
    with torch.autocast("cpu", enabled=False):
        record("fp32", repr(model.fc2(torch.ones(1, 16)).dtype))
FINAL = {"net": model}
