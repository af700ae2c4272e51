"""What the plugins registered: cases and transports, keyed by name, duplicates refused."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from wfbench_core.case import Case
from wfbench_core.discover.plugins import get_plugin_manager, plugin_origin
from wfbench_core.errors import WfbenchError
from wfbench_core.record.origin import PluginOrigin

if TYPE_CHECKING:  # the contracts load the result schema: listing transports needs neither
    from wfbench_core.contracts import Timer, Transport
    from wfbench_core.record.results import TimingProtocol

__all__ = ["DuplicateError", "Registered", "Registry"]  # internal, not the plugin API


class DuplicateError(WfbenchError):
    """Two plugins offered the same name."""


@attrs.frozen
class Registered:
    """A registered thing and the plugin that registered it (entry-point name and distribution)."""

    name: str
    value: Any
    origin: PluginOrigin

    @property
    def plugin(self) -> str:
        """The plugin for messages and results: ``"name (distribution)"``."""
        return str(self.origin)


@attrs.define
class Registry:
    """The cases and transports offered by the loaded plugins."""

    pm: pluggy.PluginManager
    cases: dict[str, Registered] = attrs.field(factory=dict)
    transports: dict[str, Registered] = attrs.field(factory=dict)
    ceilings: dict[str, Registered] = attrs.field(factory=dict)  # case ID -> Ceiling or NoCeiling
    #: how another process loads the same plugins: ``(autoload, module names)``, or None when some plugin
    #: exists only in this process (an object, a conftest namespace) and cannot be loaded elsewhere
    recipe: tuple[bool | None, tuple[str, ...]] | None = None

    @classmethod
    def load(cls, plugins: Iterable[object | str] = (), *, autoload: bool | None = None) -> Registry:
        plugins = list(plugins)
        pm = get_plugin_manager(plugins, autoload=autoload)
        names = tuple(p for p in plugins if isinstance(p, str))
        reg = cls(pm, recipe=(autoload, names) if len(names) == len(plugins) else None)
        reg._collect("wfbench_register_cases", reg.cases, "case", _check_case)
        reg._collect("wfbench_register_transports", reg.transports, "transport", _check_transport)
        reg._collect("wfbench_register_ceilings", reg.ceilings, "ceiling of case", _check_ceiling)
        return reg

    def _collect(self, hook_name: str, into: dict[str, Registered], what: str, check: Any) -> None:
        hook = getattr(self.pm.hook, hook_name)
        for impl in hook.get_hookimpls():  # registration order
            origin = plugin_origin(self.pm, impl.plugin)

            def register(name_or_value: Any, value: Any = None, *, _origin: PluginOrigin = origin) -> None:
                if value is None:
                    value, name = name_or_value, str(getattr(name_or_value, "id", ""))
                else:
                    name = name_or_value
                entry = Registered(name, value, _origin)
                if check is not None:
                    check(value, entry.plugin)
                if name in into:
                    raise DuplicateError(
                        f"{what} {name!r} is offered by two plugins: {into[name].plugin} and {entry.plugin}; "
                        f"uninstall or block one of them"
                    )
                into[name] = entry

            impl.function(register=register)

    # -- lookups ----------------------------------------------------------------------------------

    def case(self, case_id: str) -> Case:
        try:
            case: Case = self.cases[case_id].value
            return case
        except KeyError:
            known = ", ".join(sorted(self.cases)) or "(none: is wfbench installed with its built-in cases?)"
            raise WfbenchError(f"unknown case {case_id!r}; known cases: {known}") from None

    def select(self, case_ids: Iterable[str] = (), *, priorities: Iterable[str] = ()) -> list[Case]:
        """The named cases in the given order, or every case (P0 first, then by ID)."""
        ids = list(case_ids)
        if ids:
            return [self.case(i) for i in dict.fromkeys(ids)]
        wanted = set(priorities)
        cases = [r.value for r in self.cases.values() if not wanted or r.value.priority in wanted]
        return sorted(cases, key=lambda c: (c.priority, c.id))

    def refs(self, cases: Iterable[Case]) -> tuple[Any, ...]:
        """The selected cases with their plugin origin, for a run request."""
        from wfbench_core.record.request import CaseRef

        return tuple(CaseRef(c.id, self.cases[c.id].origin) for c in cases)

    def ceiling(self, case_id: str) -> Any:
        """The case's :class:`~wfbench_core.ceiling.Ceiling`, its :class:`~wfbench_core.ceiling.NoCeiling`, or None
        when no plugin declared either."""
        entry = self.ceilings.get(case_id)
        return None if entry is None else entry.value

    def transport(self, name: str) -> type[Transport]:
        try:
            transport: type[Transport] = self.transports[name].value
            return transport
        except KeyError:
            known = ", ".join(sorted(self.transports)) or "(none)"
            raise WfbenchError(f"unknown transport {name!r}; known transports: {known}") from None

    def make_timer(self, protocol: TimingProtocol) -> Timer:
        timer: Timer | None = self.pm.hook.wfbench_make_timer(protocol=protocol)
        if timer is None:
            raise WfbenchError("no timer plugin is installed; reinstall wfbench (it ships the default timer)")
        return timer


def _check_case(value: Any, origin: str) -> None:
    if not isinstance(value, Case):
        raise WfbenchError(f"plugin {origin} registered {value!r}, which is not a wfbench_core.case.Case")


def _check_ceiling(value: Any, plugin: str) -> None:
    from wfbench_core.ceiling import Ceiling, NoCeiling

    if not isinstance(value, (Ceiling, NoCeiling)):
        raise WfbenchError(f"plugin {plugin} registered a ceiling that is a {type(value).__name__}, not a "
                           f"wfbench_core.ceiling.Ceiling or NoCeiling")


def _check_transport(value: Any, origin: str) -> None:
    options = getattr(value, "OPTIONS", None)
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise WfbenchError(f"plugin {origin} registered transport {value!r} without an OPTIONS mapping "
                           f"(option name -> help); declare OPTIONS = {{}} when it takes no options")
