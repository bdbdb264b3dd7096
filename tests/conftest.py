"""Test configuration: make the shared test helpers importable, pin torch to 2 threads, and a fixture
that runs a test with 2 BLAS threads (batch streams need more than one)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

try:
    import torch

    torch.set_num_threads(2)
except ImportError:  # the parity tests import torch themselves and fail loudly without it
    pass


def pytest_configure(config):
    config.addinivalue_line("markers", "heavy: large parity runs (few, but part of the suite)")


@pytest.fixture
def two_blas_threads():
    import engine
    before = engine.get_num_threads()
    engine.set_num_threads(2)
    yield
    engine.set_num_threads(before)
