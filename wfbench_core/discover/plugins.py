"""The plugin manager: hook specs, entry points of group ``wfbench``, and explicitly named modules.

Set ``WFBENCH_DISABLE_PLUGIN_AUTOLOAD=1`` to skip entry points (tests do); ``WFBENCH_PLUGINS`` names
extra modules to register, comma-separated (``pkg.module,other.module``).
"""

from __future__ import annotations

import importlib
import os
import warnings
import weakref
from collections.abc import Iterable
from types import ModuleType

import pluggy

from wfbench_core import hookspecs
from wfbench_core.discover import entry_points
from wfbench_core.record.origin import PluginOrigin

# internal to wfbench, not the plugin API (README: Layout)
__all__ = ["DISABLE_ENV", "GROUP", "PLUGINS_ENV", "PluginLoadWarning", "get_plugin_manager", "plugin_origin"]

GROUP = "wfbench"
DISABLE_ENV = "WFBENCH_DISABLE_PLUGIN_AUTOLOAD"
PLUGINS_ENV = "WFBENCH_PLUGINS"


class PluginLoadWarning(UserWarning):
    """A plugin could not be imported; the others were loaded."""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no")


def get_plugin_manager(
    plugins: Iterable[ModuleType | object | str] = (), *, autoload: bool | None = None
) -> pluggy.PluginManager:
    """Build a plugin manager with every hook spec, entry-point plugins and ``plugins``.

    :param plugins: modules, objects or dotted module names to register in addition.
    :param autoload: load the ``wfbench`` entry points; default: unless ``WFBENCH_DISABLE_PLUGIN_AUTOLOAD``.
    """
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    if autoload is None:
        autoload = not _truthy(os.environ.get(DISABLE_ENV))
    if autoload:
        _load_entry_points(pm)
    extra = [p.strip() for p in os.environ.get(PLUGINS_ENV, "").split(",") if p.strip()]
    for plugin in [*extra, *plugins]:
        if isinstance(plugin, str):
            name = plugin
            try:
                plugin = importlib.import_module(plugin)
            except Exception as exc:  # a broken plugin must not take the others down
                warnings.warn(
                    f"wfbench plugin {name!r} failed to import and was skipped: {type(exc).__name__}: {exc}",
                    PluginLoadWarning,
                    stacklevel=2,
                )
                continue
        if not pm.is_registered(plugin):
            pm.register(plugin, name=getattr(plugin, "__name__", None))
    pm.check_pending()
    return pm


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    origins = _origins(pm)
    for ep in entry_points.find(GROUP):
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            plugin = ep.load()
        except Exception as exc:  # a broken plugin must not take the others down
            warnings.warn(
                f"wfbench plugin {ep.name!r} (from {ep.distribution}) failed to import and was "
                f"skipped: {type(exc).__name__}: {exc}",
                PluginLoadWarning,
                stacklevel=3,
            )
            continue
        pm.register(plugin, name=ep.name)
        origins[ep.name] = ep.distribution


#: per plugin manager, the distribution of each plugin it loaded from an entry point
_ORIGINS: weakref.WeakKeyDictionary[pluggy.PluginManager, dict[str, str]] = weakref.WeakKeyDictionary()


def _origins(pm: pluggy.PluginManager) -> dict[str, str]:
    return _ORIGINS.setdefault(pm, {})


def plugin_origin(pm: pluggy.PluginManager, plugin: object) -> PluginOrigin:
    """A plugin's registered name and the distribution that shipped it."""
    name = pm.get_name(plugin) or repr(plugin)
    return PluginOrigin(name, _origins(pm).get(name, ""))
