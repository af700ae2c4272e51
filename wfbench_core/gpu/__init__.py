"""On the GPU host: the worker process, the timer, sampling, device checks and measurements."""

__all__ = []  # internal, not the plugin API
