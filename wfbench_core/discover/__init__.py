"""What is installed: the plugin manager and the registry of cases and transports."""

__all__ = []  # internal, not the plugin API
