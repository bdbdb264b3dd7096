"""``engine.optim.swa_utils``: weight averaging of a model during training (stochastic weight
averaging, SWA, and exponential moving averages, EMA), the ``SWALR`` schedule that anneals to a
constant SWA learning rate, and ``update_bn``, which recomputes BatchNorm statistics for averaged
weights with one pass over the data.
"""
import itertools
import math
from copy import deepcopy

from .. import _dtype
from ..autograd.grad_mode import no_grad
from ..nn.modules.module import Module
from ..nn.modules.normalization import _BatchNorm
from ..ops.creation import tensor
from .lr_scheduler import LRScheduler, _per_group
from .optimizer import _bump_version, _lerp_, _to_scalar

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _lerp_all_(averaged, current, weight):
    """``averaged += weight * (current - averaged)`` in place on every pair, with torch's lerp formula."""
    for a, c in zip(averaged, current):
        _lerp_(a._data, c._data, weight)
        _bump_version(a)


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place EMA update of lists of tensors, for ``AveragedModel(multi_avg_fn=...)``."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            if ema_param_list[0].is_floating_point():
                _lerp_all_(ema_param_list, current_param_list, 1 - decay)
                return
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place running mean of lists of tensors, for ``AveragedModel(multi_avg_fn=...)``.

    Integer tensors (BatchNorm's ``num_batches_tracked`` with ``use_buffers=True``) take the mean
    truncated to their dtype, as the per-tensor ``get_swa_avg_fn`` gives; torch raises there."""

    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            if averaged_param_list[0].is_floating_point():
                _lerp_all_(averaged_param_list, current_param_list, _to_scalar(1 / (num_averaged + 1)))
                return
            average = get_swa_avg_fn()
            for p_averaged, p_model in zip(averaged_param_list, current_param_list):
                p_averaged.copy_(average(p_averaged, p_model, num_averaged))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``decay * ema + (1 - decay) * current``, for ``AveragedModel(avg_fn=...)``."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """The running mean ``averaged + (current - averaged) / (n + 1)``, for ``AveragedModel(avg_fn=...)``."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


def _group_by_device_and_dtype(averaged, current):
    """Pairs of lists (averaged, current), one per (device, dtype) of the averaged tensors, in first-seen order."""
    groups = {}
    for a, c in zip(averaged, current):
        pair = groups.setdefault((a.device, a.dtype), ([], []))
        pair[0].append(a)
        pair[1].append(c)
    return groups


class AveragedModel(Module):
    """``torch.optim.swa_utils.AveragedModel``: a copy of ``model`` whose parameters (and, with
    ``use_buffers=True``, buffers) are the running average of ``model``'s at each ``update_parameters``.

    ``avg_fn(averaged, current, n)`` returns one averaged tensor; ``multi_avg_fn(averaged_list,
    current_list, n)`` updates lists in place; without either, an equal-weight average (SWA). The
    first update copies ``model``'s values. Without ``use_buffers`` the buffers are copied, not averaged.
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=_dtype.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold ``model``'s current values into the average."""
        if self.use_buffers:
            averaged = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            current = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            averaged = list(self.parameters())
            current = list(model.parameters())
        averaged = [a.detach() for a in averaged]
        current = [c.detach().to(a.device) for a, c in zip(averaged, current)]
        with no_grad():
            if bool(self.n_averaged == 0):
                for a, c in zip(averaged, current):
                    a.copy_(c)
            elif self.multi_avg_fn is not None or self.avg_fn is None:
                self._average_groups(averaged, current)
            else:
                for a, c in zip(averaged, current):
                    a.copy_(self.avg_fn(a, c, self.n_averaged.to(a.device)))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1

    def _average_groups(self, averaged, current):
        """``multi_avg_fn`` (or the SWA mean) per (device, dtype) group, as torch runs it: the list form
        on CUDA, the per-tensor mean on the CPU."""
        for (device, _), (averaged_group, current_group) in _group_by_device_and_dtype(averaged, current).items():
            n_averaged = self.n_averaged.to(device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged_group, current_group, n_averaged)
            elif device.type == "cuda":
                get_swa_multi_avg_fn()(averaged_group, current_group, n_averaged)
            else:
                average = get_swa_avg_fn()
                for a, c in zip(averaged_group, current_group):
                    a.copy_(average(a, c, n_averaged))


def update_bn(loader, model, device=None):
    """Recompute every BatchNorm's running statistics as the plain mean over one pass of ``loader``
    (each batch a tensor, or a list/tuple whose first item is the input)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """``torch.optim.swa_utils.SWALR``: anneal each group's lr to its ``swa_lr`` over ``anneal_epochs``
    steps (cosine or linear), then hold it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for group_swa_lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = group_swa_lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the annealing started from, recovered from the current one."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self):
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def state_dict(self):
        """Every attribute except the optimizer and the annealing function (restored from its name)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
