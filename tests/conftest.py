"""Test configuration: make the shared test helpers importable and pin torch to 2 threads."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

try:
    import torch

    torch.set_num_threads(2)
except ImportError:  # the parity tests import torch themselves and fail loudly without it
    pass


def pytest_configure(config):
    config.addinivalue_line("markers", "heavy: large parity runs (few, but part of the suite)")
