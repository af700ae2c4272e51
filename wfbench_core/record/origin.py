"""Where a registered case or transport came from (a small module: listing plugins must not load the schema)."""

from __future__ import annotations

import attrs

__all__ = ["PluginOrigin"]  # internal, not the plugin API


@attrs.frozen
class PluginOrigin:
    """Where a registered thing came from: the plugin's registered (entry-point) name and the distribution
    that shipped it (``""`` for a plugin registered in-process)."""

    name: str
    distribution: str = ""

    def __str__(self) -> str:
        return f"{self.name} ({self.distribution})" if self.distribution else self.name
