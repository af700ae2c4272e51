"""Compile both sides of each case, write and read the bundle, static diagnostics, tool lookup."""

__all__ = []  # internal, not the plugin API
