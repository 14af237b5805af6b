"""The ``rules`` judge: the offline, deterministic default judge (no API key needed).

It runs once and forms a panel of one (``deterministic=True``): its verdict says so, and its prompt version is
the rules config version, so verdicts made under different rules never share a cache entry.

Options (from ``make_judge("rules", options)``): ``config`` (a path to a rules YAML file) or ``rules_config``
(a :class:`~judge.rules.RulesConfig`), and ``detectors`` (a list of detector names; default all enabled).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from judge.judges import AttemptHook, BaseJudge, JudgeIdentity, register_judge
from judge.model import Trajectory, Usage
from judge.rules import (
    RulesConfig,
    analysis_of,
    default_config,
    detect,
    vote_from_waste,
    waste_counts,
)
from judge.schema import Verdict

MODEL_NAME = "rules-v1"


class RulesJudge(BaseJudge):
    """Async callable ``(trajectory, pass_index) -> Verdict`` that runs the rule detectors."""

    deterministic = True
    default_passes = 1

    def __init__(self, spec: str = "rules", config: RulesConfig | None = None, detectors: list[str] | None = None) -> None:
        self.spec = spec
        self.config = config or default_config()
        self.detectors = detectors

    def cache_identity(self) -> JudgeIdentity:
        """The rules config version is the prompt version: verdicts under other rules are other verdicts."""
        return {"provider": self.spec.split(":", 1)[0], "model": self.spec, "prompt": self.config.version, "params": {}}

    async def __call__(self, trajectory: Trajectory, pass_index: int, *, on_attempt: AttemptHook | None = None,
                       on_send: AttemptHook | None = None) -> Verdict:
        """One pass (the attempt hooks are ignored: no provider is called)."""
        started = time.perf_counter()
        try:
            # Kept for the release gate, which checks the same trajectory object with the same detectors.
            analysis = analysis_of(trajectory, self.config)
            issues = detect(analysis, self.detectors)
            efficiency = vote_from_waste(waste_counts(analysis), self.config)
        except Exception as error:  # noqa: BLE001 - a detector bug must not drop the trajectory from the denominators
            return self._verdict(trajectory, pass_index, started, status="unscored", reason="parse_error",
                                 detail=f"rules judge failed on this trajectory: {type(error).__name__}: {error}")
        return self._verdict(trajectory, pass_index, started, status="ok", issues=issues, efficiency=efficiency)

    def _verdict(self, trajectory: Trajectory, pass_index: int, started: float, **outcome: Any) -> Verdict:
        return Verdict(
            trajectory_id=trajectory.id,
            judge=self.spec,
            pass_index=pass_index,
            pass_key=f"{self.spec}#{pass_index}",
            model=MODEL_NAME,
            prompt_version=self.config.version,
            deterministic=True,
            usage=Usage(input_tokens=0, output_tokens=0),  # no model call: nothing to pay
            cost_usd=0.0,
            latency_s=time.perf_counter() - started,
            **outcome,
        )


@register_judge("rules", local=True)
def make_rules_judge(spec: str, options: dict[str, Any]) -> RulesJudge:
    """Factory for the ``rules`` spec (``rules`` or ``rules:PATH`` to a rules YAML file)."""
    config = options.get("rules_config")
    path = options.get("config") or (spec.split(":", 1)[1] if ":" in spec else None)
    if config is None and path:
        config = RulesConfig.load(Path(path))
    return RulesJudge(spec=spec, config=config, detectors=options.get("detectors"))
