"""``replay:PATH``: re-use the verdicts of a previous run instead of calling a model (re-scoring for free).

PATH is a run directory or its ``verdicts.jsonl``. For a trajectory and pass index the judge returns the
recorded verdict of the same trajectory id - checked against the content hash when the previous run's
``trajectories.jsonl`` is there, so an edited trajectory is not given a stale verdict. Passes are matched
by position: pass 1 replays the first recorded pass of that trajectory (in the recorded panel's order),
pass 2 the second, and so on. Nothing recorded -> unscored ``provider_error`` "no recorded verdict".
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from judge import rundir
from judge.judges import AttemptHook, BaseJudge, JudgeIdentity, register_judge
from judge.model import Trajectory
from judge.rundir import RunDir
from judge.schema import Verdict


class ReplayJudge(BaseJudge):
    """Serves recorded verdicts. ``default_passes`` is the recorded panel size (used when --passes is not given).

    Not deterministic (it reproduces a multi-pass panel, pass by pass) and not cached (it pays nothing)."""

    def __init__(self, spec: str, options: dict[str, Any]):
        self.spec = spec
        target = Path(spec.split(":", 1)[1]) if ":" in spec else Path("")
        if not str(target) or str(target) == ".":
            raise ValueError("replay needs a path: replay:RUN_DIR or replay:path/to/verdicts.jsonl")
        run = RunDir(target if target.is_dir() else target.parent)
        verdicts_path = target / rundir.VERDICTS if target.is_dir() else target
        if not verdicts_path.exists():
            raise FileNotFoundError(f"replay: no verdicts at {verdicts_path}")
        order = run.manifest().member_order()
        grouped: dict[str, list[Verdict]] = defaultdict(list)
        for verdict in rundir.read_jsonl(verdicts_path, Verdict):  # a run's verdicts.jsonl, or a copy by any name
            grouped[verdict.trajectory_id].append(verdict)
        for passes in grouped.values():
            passes.sort(key=lambda v: (order.get(v.pass_key, len(order)), v.judge, v.pass_index))
        self._recorded = dict(grouped)
        self._hashes = _content_hashes(run)
        self.default_passes = max((len(p) for p in self._recorded.values()), default=1)
        self.prompt_version = "replay"
        self.source = str(verdicts_path)

    def cache_identity(self) -> JudgeIdentity:
        return {"provider": "replay", "model": self.source, "prompt": "replay", "params": {}}

    async def __call__(self, trajectory: Trajectory, pass_index: int, *, on_attempt: AttemptHook | None = None,
                       on_send: AttemptHook | None = None) -> Verdict:
        """The recorded verdict of this pass (the attempt hooks are ignored: no provider is called)."""
        base = Verdict(trajectory_id=trajectory.id, judge=self.spec, pass_index=pass_index,
                       pass_key=f"{self.spec}#{pass_index}", status="unscored", prompt_version="replay", attempts=0)
        recorded = self._recorded.get(trajectory.id, [])
        recorded_hash = self._hashes.get(trajectory.id)
        if recorded_hash is not None and recorded_hash != trajectory.content_hash():
            return base.model_copy(update={"reason": "provider_error",
                                           "detail": "no recorded verdict: the recorded trajectory has different content"})
        if not 1 <= pass_index <= len(recorded):
            return base.model_copy(update={"reason": "provider_error", "detail": "no recorded verdict"})
        found = recorded[pass_index - 1]
        return found.model_copy(update={
            "judge": self.spec, "pass_index": pass_index, "pass_key": base.pass_key, "attempts": 0, "cached": True,
            "cost_usd": 0.0, "detail": f"replayed {found.pass_key}" + (f"; {found.detail}" if found.detail else ""),
        })


def _content_hashes(run: RunDir) -> dict[str, str]:
    try:
        return {t.id: t.content_hash() for t in run.trajectories(missing_ok=True)}
    except ValueError:
        return {}  # an unreadable previous run: fall back to ids only


@register_judge("replay", local=True)
def _factory(spec: str, options: dict[str, Any]) -> ReplayJudge:
    return ReplayJudge(spec, options)
