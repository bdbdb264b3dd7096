"""GeneralizedRCNNTransform: the in-model normalise / resize / batch / postprocess step of the detectors."""

__all__ = []
