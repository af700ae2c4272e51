"""Run a bundle: build and ship it, execute it under a supervisor, cross-check the timer."""

__all__ = []  # internal, not the plugin API
