"""An IterableDataset through a DataLoader with a lambda collate over default_collate, lazy layers
materialised by a first call, forward / forward-pre / full-backward hooks for feature capture and their
removal, load_state_dict with strict=False and assign=True, get_submodule, a float64 copy."""
import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info, default_collate
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n
    def __iter__(self):
        assert get_worker_info() is None
        rng = np.random.default_rng(0)
        for i in range(self.n):
            yield {"x": rng.standard_normal(5).astype(np.float32), "y": np.float32(i % 3), "id": i}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.LazyLinear(7), nn.SiLU(), nn.LazyLinear(4))
        self.head = nn.Linear(4, 1)
    def forward(self, x):
        return self.head(self.body(x)).squeeze(-1)

torch.manual_seed(0)
model = Net()
model(torch.zeros(1, 5))  # materialise the lazy layers
record("lazy_types", repr([type(m).__name__ for m in model.body]))
sync(model)
features, grads = {}, {}
def save_output(name):
    def hook(module, inp, out):
        features[name] = out.detach()
    return hook
h1 = model.body[1].register_forward_hook(save_output("act"))
h2 = model.head.register_full_backward_hook(lambda m, gin, gout: grads.__setitem__("head", gout[0].detach()))
h3 = model.body.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
loader = DataLoader(Stream(13), batch_size=4, collate_fn=lambda b: default_collate(b))
for batch in loader:
    pred = model(batch["x"])
    loss = F.huber_loss(pred, batch["y"], delta=0.7)
    opt.zero_grad()
    loss.backward()
    opt.step()
    record("loss", [loss.item()] + batch["id"].tolist())
    record("act", features["act"])
    record("gout", grads["head"])
for h in (h1, h2, h3):
    h.remove()
record("after_remove", model(torch.ones(2, 5)))
sd = model.state_dict()
fresh = Net()
fresh(torch.zeros(1, 5))
missing = fresh.load_state_dict({k: v for k, v in sd.items() if not k.startswith("head")}, strict=False)
record("missing", repr(missing.missing_keys))
fresh.load_state_dict(sd, assign=True)
record("assign_is_param", [isinstance(fresh.head.weight, nn.Parameter), fresh.head.weight.requires_grad])
record("submodule", repr(type(model.get_submodule("body.2")).__name__))
record("buffers", repr([n for n, _ in model.named_buffers()]))
half = Net().to(torch.float64)
half(torch.zeros(1, 5, dtype=torch.float64))
record("dtype", repr(half.head.weight.dtype))
FINAL = {"model": model}
