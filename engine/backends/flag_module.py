"""Module attributes that check what they are set to, as the ``torch.backends.*`` switches do.

A flag module swaps its class for a ``FlagModule`` subclass whose class attributes are ``BoolFlag``s
(``cudnn.enabled = 1`` then raises RuntimeError, as in torch), and offers a ``flags(...)`` context
manager built on ``switched``.
"""
import contextlib
import types


class FlagModule(types.ModuleType):
    """Base of a flag module's class: ``sys.modules[__name__].__class__ = TheSubclass``."""


class BoolFlag:
    """A module attribute that takes only a bool; anything else is a RuntimeError naming the flag."""

    def __init__(self, default):
        self.value = default

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, module, owner=None):
        if module is None:
            return self
        return self.value

    def __set__(self, module, value):
        if not isinstance(value, bool):
            raise RuntimeError(f"{module.__name__}.{self.name} expects a bool, but got {type(value).__name__}")
        self.value = value


@contextlib.contextmanager
def switched(module, **values):
    """Set the module's flags given (None leaves one as it is) for a ``with`` block, then restore them."""
    changed = {name: value for name, value in values.items() if value is not None}
    before = {name: getattr(module, name) for name in changed}
    try:
        for name, value in changed.items():
            setattr(module, name, value)
        yield
    finally:
        for name, value in before.items():
            setattr(module, name, value)
