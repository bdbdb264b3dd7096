"""SSD (Liu et al. 2016) and the ssd300_vgg16 builder."""

__all__ = []
