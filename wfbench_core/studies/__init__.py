"""Studies that run the benchmark several times and review what came back: bisect, crosscheck."""

__all__: list[str] = []  # internal, not the plugin API
