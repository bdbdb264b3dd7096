"""``torch.backends.opt_einsum``: how ``einsum`` orders its contractions. The engine's einsum always
lets numpy's built-in path optimiser choose the order (``np.einsum(..., optimize=True)``, no extra
package), so ``is_available()`` is True and the switches have torch's defaults and checks (as torch
with the opt-einsum package installed) but do not change the order, which only changes speed."""
import sys

from .flag_module import FlagModule, switched

STRATEGIES = ("auto", "greedy", "optimal")


def is_available():
    """True: numpy's path optimiser is always there."""
    return True


def flags(enabled=None, strategy=None):
    """Set the switches for a ``with`` block, then restore them."""
    return switched(sys.modules[__name__], enabled=enabled, strategy=strategy)


class _OptEinsumModule(FlagModule):
    enabled = True
    _strategy = "auto"

    @property
    def strategy(self):
        return self._strategy

    @strategy.setter
    def strategy(self, value):
        if not self.enabled:
            raise ValueError(f"opt_einsum is not enabled, so setting a `strategy` to {value} will not be "
                             "meaningful; set `enabled` to True as well or leave `strategy` unset.")
        if value not in STRATEGIES:
            raise ValueError(f"`strategy` must be one of the following: [auto, greedy, optimal] but is {value}")
        type(self)._strategy = value


sys.modules[__name__].__class__ = _OptEinsumModule
