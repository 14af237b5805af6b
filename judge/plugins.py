"""Third-party judges, importers and providers, found through Python entry points (as simonw/llm loads its
plugins: ``importlib.metadata`` entry points, each group loaded once, on first use).

A plugin is an installed distribution that declares one or more of these entry-point groups::

    [project.entry-points."trajudge.judges"]
    example = "trajudge_example_plugin.judges"       # a module that calls @register_judge(...)
    [project.entry-points."trajudge.importers"]
    example = "trajudge_example_plugin.importer"     # ... register_format(FormatSpec(...))
    [project.entry-points."trajudge.providers"]
    example-llm = "trajudge_example_plugin.provider" # ... @register_provider(...)

Loading an entry point imports its module, whose decorators register what it defines; nothing else is called.
A group is loaded the first time its registry is consulted (a judge spec is resolved, a format detected, a
provider built), so ``judge report`` never imports a judge plugin.

A plugin that fails to load (an import error, a bug at import time, a name another provider already has) is
reported once on stderr with its distribution, entry point and error, and remembered: the unknown-name error
of the registry it meant to extend repeats the reason, and ``judge plugins`` lists it. It never stops a
command that does not need it.

``TRAJUDGE_LOAD_PLUGINS`` limits loading to the named distributions (comma-separated; empty: load none),
like llm's ``LLM_LOAD_PLUGINS``: the way to run with a broken plugin installed, or to test one alone.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, TypeVar

JUDGES = "trajudge.judges"
IMPORTERS = "trajudge.importers"
PROVIDERS = "trajudge.providers"
GROUPS = (JUDGES, IMPORTERS, PROVIDERS)
ONLY_ENV = "TRAJUDGE_LOAD_PLUGINS"
NAME = re.compile(r"^[a-z][a-z0-9._-]*$")  # a registered judge kind, provider or format name
T = TypeVar("T")


@dataclass(frozen=True)
class Plugin:
    """One entry point of one group: loaded (``error`` None) or not (``error`` says why)."""

    group: str
    name: str
    value: str
    distribution: str | None
    version: str | None
    error: str | None = None

    def describe(self) -> str:
        where = f"{self.distribution} {self.version}" if self.distribution else "unknown distribution"
        return f"{self.group} entry point {self.name!r} = {self.value} (from {where})"


_loaded: dict[str, list[Plugin]] = {}


def load_plugins(group: str) -> list[Plugin]:
    """Import every entry point of ``group`` once; return what was found (loaded and failed)."""
    if group in _loaded:
        return _loaded[group]
    found: list[Plugin] = []
    _loaded[group] = found  # before importing: a plugin that consults its registry while loading must not recurse
    only = _only()
    for entry in metadata.entry_points(group=group):
        dist = getattr(entry, "dist", None)
        dist_name = dist.metadata["Name"] if dist is not None else None
        if only is not None and _normalise(dist_name or "") not in only:
            continue
        plugin = Plugin(group, entry.name, entry.value, dist_name, dist.version if dist is not None else None)
        try:
            entry.load()
        except Exception as error:  # noqa: BLE001 - a broken plugin must not stop a command that does not need it
            plugin = Plugin(plugin.group, plugin.name, plugin.value, plugin.distribution, plugin.version,
                            error=f"{type(error).__name__}: {error}")
            print(f"warning: trajudge plugin not loaded: {plugin.describe()}: {plugin.error}", file=sys.stderr)
        found.append(plugin)
    return found


def broken(group: str) -> list[Plugin]:
    """The plugins of ``group`` that failed to load (after loading it)."""
    return [plugin for plugin in load_plugins(group) if plugin.error]


def problems_note(group: str) -> str:
    """A clause for an unknown-name error: the plugins of ``group`` that failed to load, or ``""``."""
    failed = broken(group)
    if not failed:
        return ""
    return "; not loaded: " + "; ".join(f"{p.describe()}: {p.error}" for p in failed)


def all_plugins() -> list[Plugin]:
    """Every entry point of every group (loading the groups not loaded yet), for ``judge plugins``."""
    return [plugin for group in GROUPS for plugin in load_plugins(group)]


def reset() -> None:
    """Forget what was loaded, so the next use loads again (tests that install a plugin)."""
    _loaded.clear()


def claim_name(registry: MutableMapping[str, T], name: str, item: T, what: str,
               owner: Callable[[T], Any] = lambda item: item) -> None:
    """Register ``item`` as ``registry[name]``. The name must be lower case (letters, digits, ``.``, ``_``,
    ``-``; no ``:``, which separates a spec's kind from its argument). A name whose ``owner(...)`` is another
    object is an error (a plugin cannot silently replace ``openai``); the same owner again (a module imported
    twice) is allowed."""
    if not NAME.match(name):
        raise ValueError(f"{what} name {name!r} must be lower case letters, digits, '.', '_' or '-' (no ':')")
    taken = registry.get(name)
    if taken is not None and not _same(owner(taken), owner(item)):
        raise ValueError(f"{what} {name!r} is already registered by {_qualname(owner(taken))}; "
                         f"{_qualname(owner(item))} cannot take its name")
    registry[name] = item


def _same(a: Any, b: Any) -> bool:
    """One object, or one class or function defined again by a module imported twice (same qualified name)."""
    return a is b or (hasattr(a, "__qualname__") and _qualname(a) == _qualname(b))


def _qualname(thing: Any) -> str:
    name = getattr(thing, "__qualname__", None) or f"{type(thing).__qualname__} object"
    return f"{getattr(thing, '__module__', None) or type(thing).__module__}.{name}"


def _only() -> set[str] | None:
    value = os.environ.get(ONLY_ENV)
    if value is None:
        return None
    return {_normalise(name) for name in value.split(",") if name.strip()}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip()).lower()  # PEP 503 distribution names
