"""``torch.nn.utils.rnn.pad_sequence``: variable-length sequences stacked into one padded batch."""
from ...ops.shape import stack
from .. import functional as F


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of shape (L_i, *) into (L_max, B, *) (or (B, L_max, *) with ``batch_first``), each padded
    with ``padding_value`` after its elements (``padding_side="left"``: before). Differentiable: each one is
    padded by ``F.pad``."""
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        missing = longest - s.shape[0]
        first_dim = (missing, 0) if padding_side == "left" else (0, missing)
        padded.append(F.pad(s, (0, 0) * (s.dim() - 1) + first_dim, value=padding_value))
    return stack(padded, 0 if batch_first else 1)


__all__ = ["pad_sequence"]
