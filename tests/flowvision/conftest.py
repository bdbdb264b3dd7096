"""Fixtures shared by the flowvision tests."""
import pytest


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """No network and an empty cache: anything that tries to download fails."""
    monkeypatch.setenv("FLOWVISION_OFFLINE", "1")
    monkeypatch.setenv("FLOWVISION_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
