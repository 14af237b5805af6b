"""End to end on the bundled examples: import, the rules judge, clustering and scores, then ``judge repair``;
the edited trajectory is scored again and must come back without the removed defects."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge import rundir
from judge.model import Trajectory
from judge.schema import Issue, ScoreRow

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "batch"


def scored_run(run: Path, inputs: list[Path], extra: dict[str, list[Issue]] | None = None) -> list[ScoreRow]:
    """A scored run directory from the rules judge (a panel of one), through the pipeline's own functions;
    ``extra`` adds issues to a trajectory's verdict (what another judge of the panel would have named)."""
    from judge.judges import make_judge
    from judge.pipeline import import_to_run, score_run
    from judge.rundir import PanelSection, RunDir, RunManifest

    import_to_run(inputs, run)
    judge = make_judge("rules")

    async def judge_all():
        verdicts = [await judge(t, 0) for t in RunDir(run).trajectories()]
        return [v.model_copy(update={"issues": [*v.issues, *(extra or {}).get(v.trajectory_id, [])]}) for v in verdicts]

    rundir.write_jsonl(run / rundir.VERDICTS, asyncio.run(judge_all()))
    RunDir(run).write_manifest(RunManifest(panel=PanelSection(size=1)))
    return score_run(run)


@pytest.fixture(scope="module")
def repaired(tmp_path_factory):
    if not (EXAMPLES / "openai_runs.jsonl").exists():
        pytest.skip("examples/batch is not in this checkout")
    pytest.importorskip("judge.rules")
    from judge.repair import repair_run

    run = tmp_path_factory.mktemp("examples") / "run"
    scored_run(run, [EXAMPLES / "openai_runs.jsonl", EXAMPLES / "anthropic_runs.jsonl"], recovered_failures())
    return run, repair_run(run)


def recovered_failures() -> dict[str, list[Issue]]:
    """The failures of the batch the agent recovered from (expected.yaml ``recovered``): no rules finding
    (docs/finding-tags.md), but the design's repair targets, as an LLM judge of the panel names them."""
    import yaml  # type: ignore[import-untyped]

    expected = yaml.safe_load((EXAMPLES / "expected.yaml").read_text(encoding="utf-8"))
    return {entry["id"]: [Issue(turn=d["turn"], category=d["category"], severity=d["severity"], tag=d["tag"],
                                description=d["what"]) for d in entry["defects"] if d.get("recovered")]
            for entry in expected["trajectories"] if any(d.get("recovered") for d in entry["defects"])}


def test_every_trajectory_with_majority_issues_gets_a_route(repaired):
    run, outputs = repaired
    with_issues = {s.trajectory_id for s in rundir.read_jsonl(run / rundir.SCORES, ScoreRow) if s.issues or s.environment}
    assert {r.trajectory_id for r in outputs.rows} == with_issues
    routes = {r.trajectory_id: r.route for r in outputs.rows}
    assert routes["env-expired-token"] == "environment" and routes["env-dns-failure"] == "environment"
    assert routes["budget-exhausted-migration"] == "rewrite-restart"
    # a create call with an unknown outcome cannot be deleted offline
    assert routes["zh-false-completion"] == "online-guided"


def test_inventory_build_is_edited_offline_and_rescores_without_its_failed_calls(repaired, tmp_path):
    run, outputs = repaired
    row = next(r for r in outputs.rows if r.trajectory_id == "inv-base-build")
    assert row.route == "offline-edit", row.reason
    edited = list(rundir.read_jsonl(run / "edited.jsonl", Trajectory))
    assert [t.id for t in edited] == ["inv-base-build+edit"]
    log = [json.loads(line) for line in (run / "edits.jsonl").read_text().splitlines()]
    inv = [e for e in log if e["trajectory_id"] == "inv-base-build"]
    assert all(v["passed"] for e in inv for v in e["validators"])
    assert any("The API wants type names" in s["text"] for e in inv for s in e["sentences"])

    before = next(s for s in rundir.read_jsonl(run / rundir.SCORES, ScoreRow) if s.trajectory_id == "inv-base-build")
    assert {i.tag for i in before.issues} == {"failed-call"}
    again = scored_run(tmp_path / "rescore", [run / "edited.jsonl"])
    assert [(s.trajectory_id, s.issues, s.environment) for s in again] == [("inv-base-build+edit", [], [])]
    assert again[0].score is not None and again[0].score > before.score
