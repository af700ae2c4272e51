"""What the results say: history, comparison, alerts, export, reports and explanations."""

__all__ = []  # internal, not the plugin API
