"""Compute backends: array kernels the autograd functions call."""
