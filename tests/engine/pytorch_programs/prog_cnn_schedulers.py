"""A CNN classifier (Conv2d, BatchNorm2d, pooling) over a TensorDataset: kaiming init, a frozen first conv
(requires_grad_(False)), SGD with weight decay under SequentialLR(LinearLR warm-up, CosineAnnealingLR), a second
optimizer under ReduceLROnPlateau, inference_mode validation, BatchNorm running statistics."""
import numpy as np
import torch
from torch.utils.data import TensorDataset, DataLoader
import torch.nn as nn

from program_hooks import record, sync


class SmallCNN(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
            nn.Conv2d(8, 12, 3, stride=1, padding=1, bias=False), nn.BatchNorm2d(12), nn.LeakyReLU(0.1),
            nn.AdaptiveAvgPool2d((1, 1)))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(12, num_classes))
    def forward(self, x):
        return self.classifier(self.features(x))

def init(m):
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.constant_(m.weight, 1)
        nn.init.constant_(m.bias, 0)

rng = np.random.default_rng(3)
x = torch.tensor(rng.standard_normal((37, 3, 9, 9)), dtype=torch.float32)
y = torch.tensor(rng.integers(0, 4, 37))
train_set = TensorDataset(x[:30], y[:30])
val_x, val_y = x[30:], y[30:]
loader = DataLoader(train_set, batch_size=7, shuffle=True, generator=torch.Generator().manual_seed(5))

torch.manual_seed(0)
model = SmallCNN()
model.apply(init)
sync(model)
# freeze the first conv: its parameters get no gradient and are not optimized
for p in model.features[0].parameters():
    p.requires_grad_(False)
params = [p for p in model.parameters() if p.requires_grad]
opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=5e-4)
warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=2)
cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
sched = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[2])
plateau_opt = torch.optim.Adam(model.classifier.parameters(), lr=1e-3)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(plateau_opt, mode="min", factor=0.5, patience=0)
criterion = nn.CrossEntropyLoss()
for epoch in range(5):
    model.train()
    running = 0.0
    for xb, yb in loader:
        opt.zero_grad(set_to_none=True)
        plateau_opt.zero_grad()
        out = model(xb)
        loss = criterion(out, yb)
        loss.backward()
        nn.utils.clip_grad_norm_(params, 2.0, norm_type=2.0)
        opt.step()
        plateau_opt.step()
        running += loss.item() * xb.size(0)
        record("loss", loss.item())
    sched.step()
    model.eval()
    with torch.inference_mode():
        val_out = model(val_x)
        val_loss = criterion(val_out, val_y).item()
        correct = (val_out.argmax(1) == val_y).sum().item()
    plateau.step(val_loss)
    record("val", [val_loss, correct, running / len(train_set)])
    record("lr", sched.get_last_lr() + [plateau_opt.param_groups[0]["lr"]])
    record("bn", model.features[1].running_mean.tolist() + [model.features[1].num_batches_tracked.item()])
record("frozen_grad", [model.features[0].weight.grad is None])
FINAL = {"cnn": model}
