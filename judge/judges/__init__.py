"""Judges: registered factories that return async callables (inspect_ai ``@scorer`` style).

A judge takes a trajectory and a pass index and returns a :class:`~judge.schema.Verdict`. It never raises
for a bad model output: that is an ``unscored`` verdict with a reason. Factories are looked up by the
prefix of a judge spec (``rules``, ``openai:MODEL``, ``anthropic:MODEL``, ``replay:PATH``, ...).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from judge.model import Trajectory
from judge.schema import Verdict


class JudgeFn(Protocol):
    """One judge, ready to run passes."""

    spec: str
    deterministic: bool  # a deterministic judge runs once and forms a panel of one

    def __call__(self, trajectory: Trajectory, pass_index: int) -> Awaitable[Verdict]: ...


JudgeFactory = Callable[[str, dict[str, Any]], JudgeFn]

_REGISTRY: dict[str, JudgeFactory] = {}


def register_judge(prefix: str) -> Callable[[JudgeFactory], JudgeFactory]:
    """Register ``factory(spec, options) -> JudgeFn`` for specs starting with ``prefix``."""

    def decorate(factory: JudgeFactory) -> JudgeFactory:
        _REGISTRY[prefix] = factory
        return factory

    return decorate


def make_judge(spec: str, options: dict[str, Any] | None = None) -> JudgeFn:
    """Build the judge for ``spec`` ("rules", "openai:gpt-4o", ...)."""
    _load_builtin_judges()
    prefix = spec.split(":", 1)[0]
    factory = _REGISTRY.get(prefix)
    if factory is None:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise ValueError(f"unknown judge {spec!r}; known judge kinds: {known}")
    return factory(spec, options or {})


def _load_builtin_judges() -> None:
    # Importing the modules registers their factories; SDKs inside them are imported lazily.
    import importlib

    for module in ("judge.judges.rules", "judge.judges.llm", "judge.judges.replay"):
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name != module:
                raise
