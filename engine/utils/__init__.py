"""Utilities: data loading and thread control."""
