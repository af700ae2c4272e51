"""Built-in benchmark cases. Each is a plugin module registered through the ``wfbench`` entry points,
exactly like a third-party case package, with its WarpForth and CUDA sources beside it."""

__all__: list[str] = []  # the cases are its modules
