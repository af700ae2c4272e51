"""``python -m wfbench_core`` is the ``wfbench`` command (used on GPU hosts without the script on PATH)."""

from wfbench_core.cli import main

__all__ = []  # internal, not the plugin API

if __name__ == "__main__":
    main()
