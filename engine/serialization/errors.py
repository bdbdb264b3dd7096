"""The one error a checkpoint that cannot be loaded raises."""
import pickle

__all__ = ["CheckpointError"]


class CheckpointError(pickle.UnpicklingError):
    """A checkpoint file that is malformed, truncated, or asks for something we never load.

    A subclass of ``pickle.UnpicklingError`` (what ``torch.load`` raises for a refused pickle), so
    code written for torch keeps catching it. Raised by ``engine.load`` with a one-line message that
    names the file and what is wrong with it.
    """
