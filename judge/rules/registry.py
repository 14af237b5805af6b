"""The detector registry: each detector declares once, at its definition, its category and the roles it plays
elsewhere in trajudge; every set of detector names another module uses is a view of this registry.

A new detector is one function with its decorator (plus, if it needs settings, its entry under ``detectors:`` in
the rules YAML)::

    @detector("stale-evidence", "semantic", roles=("authenticity", "plan"), mast="verification")
    def stale_evidence(an: Analysis) -> list[Issue]: ...

Roles (:data:`ROLES`), and the view each one feeds:

================ ========================================================================== ============================
role             meaning                                                                    view
================ ========================================================================== ============================
``authenticity`` the release gate fails ``authenticity:<name>`` when the detector fires       ``gate.AUTHENTICITY_DETECTORS``
``plan``         a continuation ticket for its issue also asks the agent to revise the plan ``repair.tickets.PLAN_TAGS``
``wording``      the offline editor fixes its issue by cutting the sentence (no action)     ``repair.editor.WORDING_TAGS``
``edit-check``   an offline edit must not make it fire where it did not before              ``repair.validators.RULE_DETECTORS``
================ ========================================================================== ============================

``mast`` is the MAST failure-mode group of the detector's issues (``validate.RULES_TAG_TO_MAST``); None (the
default) means no MAST counterpart: its issues count for MAST's "any failure" only. A detector of the
``environment`` category has no MAST entry at all (environment issues are never a MAST failure), so it cannot
declare one.

The views (:class:`DetectorNames`, :class:`MastGroups`) are read at each use, in registration order (the order
the detectors run in, hence the order of same-turn issues): a detector registered after a view was made, by a
plugin or a test, is in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_args, overload

from judge.schema import Category, Issue

Role = Literal["authenticity", "plan", "wording", "edit-check"]
ROLES: tuple[Role, ...] = get_args(Role)

# A detector reads a judge.facts.analysis.Analysis. The type is not named here: the config validates detector
# names against this registry, and the analysis reads the config, so naming it would make an import circle.
# The decorator keeps each detector's own signature (F).
DetectorFn = Callable[[Any], list[Issue]]
F = TypeVar("F", bound=DetectorFn)


@dataclass(frozen=True)
class DetectorSpec:
    """One registered detector: its name (every issue it finds carries it as ``tag``), the category of those
    issues, the function that finds them, and what it declared."""

    name: str
    category: Category
    find: DetectorFn
    roles: frozenset[Role]
    mast: str | None


_REGISTRY: dict[str, DetectorSpec] = {}
# detector_names() by role, as of the registry now: read for every trajectory, emptied when the registry changes.
_NAMES: dict[Role | None, tuple[str, ...]] = {}


def detector(name: str, category: Category, *, roles: Iterable[Role] = (), mast: str | None = None) -> Callable[[F], F]:
    """Register the decorated function as the detector ``name`` (see the module docstring); returns it unchanged.

    Raises ``ValueError`` for a name already registered, an unknown role or category, or a MAST group declared by
    an ``environment`` detector.
    """
    declared = frozenset(roles)
    unknown = sorted(declared - set(ROLES))
    if unknown:
        raise ValueError(f"detector {name!r}: unknown role(s) {unknown}; known: {list(ROLES)}")
    if category not in get_args(Category):
        raise ValueError(f"detector {name!r}: unknown category {category!r}; known: {list(get_args(Category))}")
    if category == "environment" and mast is not None:
        raise ValueError(f"detector {name!r}: an environment detector has no MAST group (environment issues are never a MAST failure)")

    def register(find: F) -> F:
        if name in _REGISTRY:
            raise ValueError(f"detector {name!r} is already registered (by {_REGISTRY[name].find.__qualname__})")
        _REGISTRY[name] = DetectorSpec(name, category, find, declared, mast)
        _NAMES.clear()
        return find

    return register


def unregister(name: str) -> DetectorSpec:
    """Remove a registered detector and return its spec (a test that registers one removes it after)."""
    spec = _REGISTRY.pop(name)
    _NAMES.clear()
    return spec


def detector_spec(name: str) -> DetectorSpec:
    """The registered detector ``name``; ``KeyError`` when there is none."""
    return _REGISTRY[name]


def detector_names(role: Role | None = None) -> tuple[str, ...]:
    """Names of the registered detectors (those with ``role`` when given), in registration order."""
    names = _NAMES.get(role)
    if names is None:
        names = _NAMES[role] = tuple(name for name, spec in _REGISTRY.items() if role is None or role in spec.roles)
    return names


class DetectorNames(Sequence[str]):
    """The names of the registered detectors with ``role`` (all when None), in registration order, then ``also``
    (tags of other judges that belong with them). A live view: read at each use.

    Compares equal to the tuple of the same names (and to another view listing them).
    """

    def __init__(self, role: Role | None = None, also: Iterable[str] = ()) -> None:
        if role is not None and role not in ROLES:
            raise ValueError(f"unknown role {role!r}; known: {list(ROLES)}")
        self.role = role
        self.also = tuple(also)

    def _names(self) -> tuple[str, ...]:
        return detector_names(self.role) + self.also

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        if name in self.also:
            return True
        spec = _REGISTRY.get(name) if isinstance(name, str) else None
        return spec is not None and (self.role is None or self.role in spec.roles)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DetectorNames | tuple):
            return self._names() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a live view: its value changes with the registry

    def __repr__(self) -> str:
        return f"DetectorNames({self.role!r}: {self._names()!r})"


class MastGroups(Mapping[str, str | None]):
    """Detector name -> its MAST group (None: no MAST counterpart) for every registered detector outside the
    ``environment`` category. A live view: read at each use."""

    def _table(self) -> dict[str, str | None]:
        return {name: spec.mast for name, spec in _REGISTRY.items() if spec.category != "environment"}

    def __getitem__(self, name: str) -> str | None:
        return self._table()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __contains__(self, name: object) -> bool:
        spec = _REGISTRY.get(name) if isinstance(name, str) else None
        return spec is not None and spec.category != "environment"

    def __repr__(self) -> str:
        return f"MastGroups({self._table()!r})"
