"""An MLP classifier over a map-style Dataset: DataLoader (seeded shuffle, custom collate), model.apply init,
parameter groups by name (no decay on biases), SGD nesterov / Adam / AdamW amsgrad / RMSprop centered with
StepLR, OneCycleLR, CosineAnnealingWarmRestarts (fractional epochs) and LambdaLR, gradient clipping by norm and
value, no_grad evaluation with argmax accuracy and .tolist()."""
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync


class Blobs(Dataset):
    def __init__(self, n, rng):
        self.x = rng.standard_normal((n, 13)).astype(np.float32)
        self.y = (self.x[:, :3].sum(1) > 0).astype(np.int64) + (self.x[:, 3] > 1).astype(np.int64)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return {"features": torch.from_numpy(self.x[i]), "label": int(self.y[i])}

def collate(batch):
    xs = torch.stack([b["features"] for b in batch])
    ys = torch.tensor([b["label"] for b in batch])
    return xs, ys

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(13, 32), nn.ReLU(), nn.Dropout(0.0), nn.Linear(32, 16), nn.Tanh())
        self.head = nn.Linear(16, 3)
    def forward(self, x):
        return self.head(self.net(x))

def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)

torch.manual_seed(0)
data = Blobs(75, np.random.default_rng(0))
g = torch.Generator().manual_seed(1)
loader = DataLoader(data, batch_size=8, shuffle=True, generator=g, num_workers=0, collate_fn=collate, drop_last=False)

results = {}
for opt_name in ["sgd", "adam", "adamw", "rmsprop"]:
    model = MLP()
    model.apply(init_weights)
    sync(model)
    decay = [p for n, p in model.named_parameters() if not n.endswith("bias")]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias")]
    groups = [{"params": decay, "weight_decay": 1e-2}, {"params": no_decay, "weight_decay": 0.0, "lr": 5e-3}]
    if opt_name == "sgd":
        opt = torch.optim.SGD(groups, lr=0.05, momentum=0.9, nesterov=True)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    elif opt_name == "adam":
        opt = torch.optim.Adam(groups, lr=1e-2, betas=(0.8, 0.99))
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=[2e-2, 1e-2], total_steps=30)
    elif opt_name == "adamw":
        opt = torch.optim.AdamW(groups, lr=1e-2, amsgrad=True)
        sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4, T_mult=2, eta_min=1e-4)
    else:
        opt = torch.optim.RMSprop(groups, lr=1e-2, alpha=0.9, momentum=0.5, centered=True)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda=[lambda e: 0.9 ** e, lambda e: 1.0 / (1 + e)])
    step = 0
    for epoch in range(3):
        model.train()
        for i, (xb, yb) in enumerate(loader):
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb, label_smoothing=0.1)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            nn.utils.clip_grad_value_(model.parameters(), 0.5)
            opt.step()
            if opt_name == "adamw":
                sched.step(epoch + i / len(loader))
            elif opt_name == "adam":
                sched.step()
            record(opt_name + "/loss", loss.item())
            record(opt_name + "/norm", float(norm))
            record(opt_name + "/lr", sched.get_last_lr())
            step += 1
        if opt_name in ("sgd", "rmsprop"):
            sched.step()
        model.eval()
        with torch.no_grad():
            xs, ys = collate([data[i] for i in range(len(data))])
            logits = model(xs)
            acc = (logits.argmax(dim=1) == ys).float().mean().item()
            record(opt_name + "/acc", acc)
            record(opt_name + "/preds", logits.argmax(-1).tolist())
    results[opt_name] = model
FINAL = results
