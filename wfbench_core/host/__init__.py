"""The process side of reaching a GPU host: transport options, the environment of every program wfbench starts."""

__all__: list[str] = []  # internal, not the plugin API
