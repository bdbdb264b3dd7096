"""``TrainingMode``: the modes ``engine.onnx.export`` traces a model's modules in (as ``torch.onnx.TrainingMode``)."""
import enum


class TrainingMode(enum.IntEnum):
    """EVAL: every module in eval mode (the default); PRESERVE: each module's own mode; TRAINING: every module
    in training mode (BatchNorm normalizes with the batch's statistics, dropout draws at run time)."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2
