"""Placeholder: filled in by the engine-core work."""
__all__ = []
