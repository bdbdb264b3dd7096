"""Saving a checkpoint dict (model, optimizer, scheduler) mid-training and resuming from it with
torch.load(map_location=..., weights_only=True): the resumed run equals the uninterrupted one."""
import io
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync


def make_model():
    return nn.Sequential(nn.Linear(5, 9), nn.BatchNorm1d(9), nn.ReLU(), nn.Linear(9, 2))

rng = np.random.default_rng(11)
X = torch.tensor(rng.standard_normal((8, 16, 5)), dtype=torch.float32)
Y = torch.tensor(rng.standard_normal((8, 16, 2)), dtype=torch.float32)

def train_steps(model, opt, sched, steps, tag):
    for s in steps:
        model.train()
        loss = F.mse_loss(model(X[s]), Y[s])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        record(tag, loss.item())

torch.manual_seed(0)
model = make_model()
sync(model)
opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-3)
sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
train_steps(model, opt, sched, range(4), "phase1")
tmp = tempfile.mkdtemp()
path = os.path.join(tmp, "ckpt.pt")
torch.save({"epoch": 4, "model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
            "scheduler": sched.state_dict(), "loss": 0.5, "note": "mid", "shape": [3, 4],
            "classes": {0, 1}, "run": b"run-1", "phase": 1 + 0.5j}, path)
# an uninterrupted reference run continues from here
train_steps(model, opt, sched, range(4, 8), "continued")

# resume in a fresh model and optimizer
torch.manual_seed(123)
model2 = make_model()
opt2 = torch.optim.Adam(model2.parameters(), lr=1e-2, weight_decay=1e-3)
sched2 = torch.optim.lr_scheduler.ExponentialLR(opt2, gamma=0.9)
ckpt = torch.load(path, map_location="cpu", weights_only=True)
record("meta", [ckpt["epoch"], ckpt["loss"]] + ckpt["shape"] + sorted(ckpt["classes"]) + [ckpt["phase"].imag])
record("run", ckpt["run"].decode())
result = model2.load_state_dict(ckpt["model_state_dict"])
record("missing", repr((list(result.missing_keys), list(result.unexpected_keys))))
opt2.load_state_dict(ckpt["optimizer_state_dict"])
sched2.load_state_dict(ckpt["scheduler"])
record("lr_resumed", sched2.get_last_lr())
train_steps(model2, opt2, sched2, range(4, 8), "resumed")
record("same_as_uninterrupted", [float((a - b).abs().max()) for a, b in zip(model.parameters(), model2.parameters())])

# in-memory buffer, a map_location function, a strict=False partial load
buf = io.BytesIO()
torch.save(model2.state_dict(), buf)
buf.seek(0)
sd = torch.load(buf, map_location=lambda storage, loc: storage, weights_only=True)
record("bn_count", sd["1.num_batches_tracked"].item())
buf.seek(0)
locations = []
sd = torch.load(buf, map_location=lambda storage, loc: locations.append(loc), weights_only=True)
record("locations", repr(sorted(set(locations))))
buf.seek(0)
sd = torch.load(buf, map_location={"cuda:0": "cpu"}, weights_only=True)
record("dict_mapped", sd["3.weight"])
partial = make_model()
res = partial.load_state_dict({k: v for k, v in sd.items() if k.startswith("0.")}, strict=False)
record("partial", repr(sorted(res.missing_keys)))
os.remove(path)
os.rmdir(tmp)
FINAL = {"model": model, "resumed": model2}
