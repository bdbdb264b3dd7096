"""TensorBoard logging without the tensorboard package (``torch.utils.tensorboard``'s counterpart):
``from engine.utils.tensorboard import SummaryWriter``."""
from .writer import FileWriter, SummaryWriter

__all__ = ["FileWriter", "SummaryWriter"]
