"""Importers on the full third-party datasets in ../shared/datasets (skipped when that folder is absent)."""

from __future__ import annotations

import functools
import json
from collections import Counter
from pathlib import Path

import pytest

from judge.importers import Skipped, iter_records
from judge.model import Trajectory
from judge.schema import Reject

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"

pytestmark = pytest.mark.shared


def dataset(relative: str) -> Path:
    path = DATASETS / relative
    if not path.exists():
        pytest.skip(f"shared dataset {relative} not found under {DATASETS}")
    return path


def import_all(paths: list[Path]) -> tuple[list[Trajectory], list[Reject]]:
    return _import_cached(tuple(paths))


@functools.cache
def _import_cached(paths: tuple[Path, ...]) -> tuple[list[Trajectory], list[Reject]]:
    """Each dataset is imported once per session (the tests only read the results); skipped paths left out."""
    trajectories: list[Trajectory] = []
    rejects: list[Reject] = []
    for item in iter_records(paths):
        if isinstance(item, Skipped):  # SOURCE.md, README.md: listed by the walk, not bad input
            continue
        (rejects if isinstance(item, Reject) else trajectories).append(item)
    return trajectories, rejects


def unpaired(trajectory: Trajectory) -> list[str]:
    answered = {m.receipt.call_id for m in trajectory.messages if m.receipt and m.receipt.call_id}
    return [c.id for m in trajectory.messages for c in m.tool_calls if c.id not in answered]


@pytest.mark.parametrize(
    ("relative", "pattern", "fmt", "count"),
    [
        ("agentrx/tau_retail/tau_dataset_full.json", None, "tau", 100),
        ("agentrx/tau_retail/tau_dataset_failed.json", None, "tau", 29),
        ("tau_bench_trajectories/gpt-4o-airline.json", None, "tau", 200),
        ("swe_agent_traj", "**/*.traj", "swe-agent", 22),
        ("mini_swe_agent_traj/github_issue.traj.json", None, "mini-swe-agent", 1),
        ("openhands_events/runtime_trajs", "*.json", "openhands", 4),
        ("openhands_events/resolver/output.jsonl", None, "openhands", 2),
        ("inspect_ai_logs", "*.json", "inspect", 8),  # 1 + 3 + 3 + 1 samples
        ("who_and_when/Algorithm-Generated", "*.json", "who-and-when", 126),
        ("who_and_when/Hand-Crafted", "*.json", "who-and-when", 58),
    ],
)
def test_shared_format_imports_without_rejects(relative, pattern, fmt, count):
    root = dataset(relative)
    paths = sorted(root.glob(pattern)) if pattern else [root]
    trajectories, rejects = import_all(paths)
    assert rejects == []
    assert len(trajectories) == count
    assert {t.metadata.source_format for t in trajectories} == {fmt}
    assert len({t.id for t in trajectories}) == count
    for trajectory in trajectories:
        assert trajectory.turn_count >= 1
        assert [m.turn for m in trajectory.messages if m.role == "assistant"] == list(range(1, trajectory.turn_count + 1))


def test_tau_full_every_call_has_its_receipt():
    trajectories, rejects = import_all([dataset("agentrx/tau_retail/tau_dataset_full.json")])
    assert rejects == [] and len(trajectories) == 100
    assert sum(len(unpaired(t)) for t in trajectories) == 0
    calls = sum(len(m.tool_calls) for t in trajectories for m in t.messages)
    receipts = sum(len(turn.receipts) for t in trajectories for turn in t.turns())
    assert calls == receipts == 793  # SOURCE.md: 793 assistant tool-call messages, 793 tool results, one call each
    rewards = Counter(t.metadata.reward for t in trajectories)
    assert rewards == {1.0: 73, 0.0: 27}
    assert sorted(t.metadata.extra["task_id"] for t in trajectories) == list(range(100))


def test_tau_airline_counts_match_source_md():
    trajectories, _ = import_all([dataset("tau_bench_trajectories/gpt-4o-airline.json")])
    roles = Counter(m.role for t in trajectories for m in t.messages)
    assert roles == {"system": 200, "user": 1490, "assistant": 2454, "tool": 1164}
    assert Counter(t.metadata.reward for t in trajectories) == {1.0: 84, 0.0: 116}
    assert len({t.query_id for t in trajectories}) == 50  # 50 tasks x 4 trials
    # The log reuses call ids across turns (kept as written); each call still gets its own receipt.
    assert sum(len(unpaired(t)) for t in trajectories) == 0
    assert sum(len(turn.receipts) for t in trajectories for turn in t.turns()) == 1164


def test_agentrx_ground_truth_steps_map_to_messages():
    gt_path = dataset("agentrx/ground_truth/tau_ground_truth.json")
    trajectories, _ = import_all([dataset("agentrx/tau_retail/tau_dataset_failed.json")])
    by_task = {t.metadata.extra["task_id"]: t for t in trajectories}
    mapped = 0
    for entry in json.loads(gt_path.read_text(encoding="utf-8")):
        trajectory = by_task[int(entry["trajectory_id"])]
        for failure in entry["failures"]:
            # step_number is AgentRx's 1-based message index: our 0-based source_index + 1.
            matches = [m for m in trajectory.messages if m.source_index == int(failure["step_number"]) - 1]
            assert len(matches) == 1
            mapped += 1
    assert mapped == 39


def test_who_and_when_gold_steps_land_on_their_message():
    trajectories, rejects = import_all([dataset("who_and_when/Algorithm-Generated"), dataset("who_and_when/Hand-Crafted")])
    assert rejects == [] and len(trajectories) == 184
    for trajectory in trajectories:
        step = trajectory.metadata.extra["mistake_step"]
        (message,) = [m for m in trajectory.messages if m.source_index == step]
        assert message.role in ("assistant", "tool")  # every gold step is an agent or terminal message
    terminals = [m for t in trajectories for m in t.messages if m.role == "tool"]
    assert len(terminals) == 303 + 10  # Computer_terminal (AG) + ComputerTerminal (HC), per SOURCE.md role counts
    assert all(m.receipt.call_id is None for m in terminals)


def test_whole_shared_folder_imports_with_only_non_trajectory_files_rejected():
    """A directory import reads every data file; the only rejects are files that hold no trajectory."""
    _, rejects = import_all([dataset("swe_agent_traj"), dataset("mini_swe_agent_traj"), dataset("openhands_events"),
                             dataset("inspect_ai_logs"), dataset("who_and_when")])
    assert [(Path(r.source_file).name, r.line) for r in rejects] == [
        ("all_preds.jsonl", 1),  # SWE-bench predictions: {instance_id, model_patch}
        ("results.json", None),  # mini-swe-agent predictions map
    ]
    assert all(r.reason.startswith("unknown format") for r in rejects)
