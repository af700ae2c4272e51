"""The result schema and what every stage shares: statistics, the run request, file writing."""

__all__ = []  # internal, not the plugin API
