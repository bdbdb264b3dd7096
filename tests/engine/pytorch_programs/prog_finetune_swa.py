"""The fine-tuning tutorial's loop: random_split, a train/val phase loop under set_grad_enabled, a frozen
backbone with a replaced head, class-weighted CrossEntropyLoss with ignore_index, StepLR then SWALR, the best
weights kept with copy.deepcopy, EMA and SWA AveragedModel with update_bn, device selection."""
import copy

import numpy as np
import torch
from torch.optim.swa_utils import AveragedModel, SWALR, update_bn, get_ema_multi_avg_fn
from torch.utils.data import DataLoader, TensorDataset, random_split
import torch.nn as nn
import torch.nn.functional as F

from program_hooks import record, sync

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.backends.cudnn.benchmark = True
rng = np.random.default_rng(8)
X = torch.tensor(rng.standard_normal((40, 3, 6, 6)), dtype=torch.float32)
Y = torch.tensor(rng.integers(0, 3, 40))
full = TensorDataset(X, Y)
train_set, val_set = random_split(full, [30, 10], generator=torch.Generator().manual_seed(42))
loaders = {"train": DataLoader(train_set, batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(0)),
           "val": DataLoader(val_set, batch_size=8)}
sizes = {"train": len(train_set), "val": len(val_set)}

class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(6)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(6, 10)
    def forward(self, x):
        return self.fc(torch.flatten(self.pool(F.relu(self.bn1(self.conv1(x)))), 1))

torch.manual_seed(0)
model = Backbone()
sync(model)
for param in model.parameters():
    param.requires_grad = False
model.fc = nn.Linear(model.fc.in_features, 3)
sync(model.fc)
model.bn1.requires_grad_(True)
model = model.to(device)
criterion = nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 0.5]), ignore_index=2, reduction="mean")
optimizer = torch.optim.SGD(filter(lambda p: p.requires_grad, model.parameters()), lr=0.05, momentum=0.9)
exp_lr = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
swa = AveragedModel(model)
swa_sched = SWALR(optimizer, swa_lr=0.01, anneal_epochs=1)
best_wts = copy.deepcopy(model.state_dict())
best_acc = 0.0
for epoch in range(3):
    for phase in ["train", "val"]:
        model.train() if phase == "train" else model.eval()
        running_loss, running_corrects = 0.0, 0
        for inputs, labels in loaders[phase]:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            with torch.set_grad_enabled(phase == "train"):
                outputs = model(inputs)
                _, preds = torch.max(outputs, 1)
                loss = criterion(outputs, labels)
                if phase == "train":
                    loss.backward()
                    optimizer.step()
                    ema.update_parameters(model)
            running_loss += loss.item() * inputs.size(0)
            running_corrects += torch.sum(preds == labels.data)
        if phase == "train":
            (exp_lr if epoch < 2 else swa_sched).step()
            if epoch >= 1:
                swa.update_parameters(model)
        epoch_loss = running_loss / sizes[phase]
        epoch_acc = running_corrects.double() / sizes[phase]
        record(phase, [epoch_loss, epoch_acc.item()])
        if phase == "val" and epoch_acc > best_acc:
            best_acc = epoch_acc
            best_wts = copy.deepcopy(model.state_dict())
model.load_state_dict(best_wts)
update_bn(loaders["train"], swa)
record("best", float(best_acc))
record("ema_fc", ema.module.fc.weight)
record("n_averaged", [ema.n_averaged.item(), swa.n_averaged.item()])
record("swa_bn", swa.module.bn1.running_var)
record("lr", [g["lr"] for g in optimizer.param_groups])
FINAL = {"model": model, "swa": swa.module}
