"""Built-in transports: where bundles run (local GPU, SSH host, Vast.ai rental)."""

__all__ = []  # internal, not the plugin API
