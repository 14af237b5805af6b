"""``judge validate --kind mast``: the MAST category mapping, majority votes, and the command end to end on a
rules run of the MAST excerpt fixture (tests/fixtures/importers/mast, CC-BY-4.0) and of the shared file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.importers.labels import load_labels
from judge.schema import ScoredIssue
from judge.validate import (
    MAST_GROUPS,
    RULES_TAG_TO_MAST,
    issue_mast_group,
    mast_group,
)

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "importers" / "mast" / "MAD_excerpt.json"
SHARED = REPO.parent / "shared" / "datasets" / "mast_mad_human" / "MAD_human_labelled_dataset.json"


@pytest.mark.parametrize(
    ("mode", "group"),
    [
        ("step repetition", "repetition"),
        ("unbatched repetitive execution", "repetition"),
        ("lack of result verification", "verification"),
        ("no or incomplete verification", "verification"),
        ("incorrect verification", "verification"),
        ("unaware of stopping conditions", "termination"),
        ("unaware of termination conditions", "termination"),
        ("premature termination", "termination"),
        ("fail to elicit clarification", "clarification"),
        ("undetected conversation ambiguities and contradictions", "clarification"),
        ("disobey task specification", "task-compliance"),
        ("poor task constraint compliance", "task-compliance"),
        ("derailment from task", "task-compliance"),
        ("disobey role specification", "role"),
        ("inconsistency between reasoning and action", "reasoning-action"),
        ("reasoning-action mismatch", "reasoning-action"),
        ("conversation reset", "history"),
        ("loss of conversation history", "history"),
        ("ignored other agents' input", "inter-agent"),
        ("information witholding", "inter-agent"),  # (sic) in the Generalizability round
        ("waiting for known information", "inter-agent"),
        ("backtracking interruption", None),  # no counterpart in the final taxonomy
    ],
)
def test_label_modes_fall_in_their_group(mode, group):
    assert mast_group(mode) == group


def scored(tag: str | None, description: str, category: str = "semantic") -> ScoredIssue:
    return ScoredIssue(cluster="c", turn=1, category=category, severity="severe", tag=tag,  # type: ignore[arg-type]
                       description=description, votes=1)


@pytest.mark.parametrize(
    ("tag", "description", "group"),
    [
        ("repeated-failure", "Ran the same failing command again", "repetition"),
        ("unverified-completion", "Said done", "verification"),
        ("premature-claim", "Stated a result before it existed", "verification"),
        ("budget-exhausted", "Ran out of budget", "termination"),
        ("phantom-failure-reference", "Retried a failure that never happened", "reasoning-action"),
        # a rules tag without MAST counterpart stays out of every group even when its text has a keyword
        ("failed-call", "The call failed; verification of the output was impossible", None),
        # an LLM judge's free tag is grouped by keywords of tag and description
        ("skipped-check", "Never verified the final answer", "verification"),
        (None, "Asked nothing although the request was ambiguous", "clarification"),
        ("style", "Long answer", None),
    ],
)
def test_our_issues_map_to_mast_groups(tag, description, group):
    assert issue_mast_group(scored(tag, description)) == group


def test_every_mapped_rules_tag_names_a_known_group():
    assert {g for g in RULES_TAG_TO_MAST.values() if g is not None} <= set(MAST_GROUPS)


def test_missing_votes_written_as_nan_are_not_votes(tmp_path: Path):
    path = tmp_path / "MAD.json"
    annotations = [{"failure mode": "1.3 Step Repetition\n\nd", "annotator_1": True, "annotator_2": float("nan"),
                    "annotator_3": False},
                   {"failure mode": "3.2 No or Incomplete Verification\n\nd", "annotator_1": True, "annotator_2": True,
                    "annotator_3": float("nan")}]
    path.write_text(json.dumps([{"mas_name": "AG2", "round": "Round 3", "trace_id": 0, "trace": "x",
                                 "annotations": annotations}]))  # json writes NaN, as the MAD file does
    (label,), errors = load_labels(path, "mast")
    assert errors == []
    assert label.modes == {"step repetition": False, "no or incomplete verification": True}


def majority_positive_traces(records: list[dict]) -> int:
    return sum(any(sum(a.get(f"annotator_{i}") is True for i in (1, 2, 3)) >= 2 for a in r["annotations"])
               for r in records)


def rules_run(source: Path, run: Path) -> None:
    from judge.panel import PanelConfig, run_panel
    from judge.pipeline import import_to_run, score_run
    from judge.rundir import RunDir

    import_to_run([source], run, None)
    asyncio.run(run_panel(list(RunDir(run).trajectories()), PanelConfig(judges=["rules"]), run, progress=False))
    score_run(run, None, {"embedder": "lexical"})


def validate_cli(run: Path, labels: Path, out: Path) -> tuple[str, dict]:
    from judge.cli import app

    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        app, ["validate", str(run), "--labels", str(labels), "--kind", "mast", "--json-out", str(out)])
    assert result.exit_code == 0, result.output
    return result.output, json.loads(out.read_text())


def test_validate_mast_end_to_end_on_the_fixture(tmp_path: Path):
    rules_run(FIXTURE, tmp_path / "run")
    output, data = validate_cli(tmp_path / "run", FIXTURE, tmp_path / "v.json")
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert f"{len(records)} of {len(records)} labelled trajectories found in the run" in output
    assert "kappa 0.77, MAST LLM annotator vs experts" in output
    assert "every trace failing (majority class)" in output and "random (expected value)" in output
    mast = data["mast"]
    labelled = majority_positive_traces(records)
    assert mast["any"]["traces"] == len(records) and mast["any"]["labelled"] == labelled
    # the baseline calls every trace failing: precision = share of failing traces, recall 1
    assert mast["baseline_any"]["predicted"] == len(records)
    assert mast["baseline_any"]["precision"] == pytest.approx(labelled / len(records))
    assert mast["baseline_any"]["recall"] == 1.0
    assert set(MAST_GROUPS) <= set(mast)


@pytest.mark.shared
def test_validate_mast_on_a_rules_run_of_the_shared_file(tmp_path: Path):
    if not SHARED.exists():
        pytest.skip(f"shared MAST dataset not found at {SHARED}")
    rules_run(SHARED.parent, tmp_path / "run")
    output, data = validate_cli(tmp_path / "run", SHARED, tmp_path / "v.json")
    assert "19 of 19 labelled trajectories found in the run (0 unscored" in output
    assert data["unmatched_labels"] == []
    assert data["mast"]["any"]["labelled"] == 18  # SOURCE.md: 56 majority-positive rows over 18 of the 19 traces
    assert data["mast"]["unmapped_positive"] == ["backtracking interruption"]
