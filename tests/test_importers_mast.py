"""MAST/MAD traces (``judge.importers.mast``): speaker splitting per system, on a cut-down fixture
(tests/fixtures/importers/mast, CC-BY-4.0, see SOURCE.md there) and on the full shared file when present."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from judge.importers import detect_format, iter_records
from judge.importers.mast import split_text, system_of
from judge.model import Trajectory
from judge.schema import Reject

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "importers" / "mast" / "MAD_excerpt.json"
SHARED = REPO.parent / "shared" / "datasets" / "mast_mad_human" / "MAD_human_labelled_dataset.json"


@pytest.fixture(scope="module")
def fixture_trajectories() -> list[Trajectory]:
    items = list(iter_records([FIXTURE]))
    assert [i for i in items if isinstance(i, Reject)] == []
    return items  # type: ignore[return-value]


def speakers(trajectory: Trajectory) -> list[tuple[str, str | None]]:
    return [(m.role, m.name) for m in trajectory.messages]


@pytest.mark.parametrize(
    ("index", "trajectory_id", "split", "expected"),
    [
        (0, "mast-ag2-gsm-plus-7", "ag2-json",
         [("user", "mathproxyagent"), ("assistant", "assistant"), ("tool", "mathproxyagent"), ("assistant", "assistant")]),
        (1, "mast-hyperagent-swe-bench-lite-6", "markers",
         [("user", None), ("assistant", "Planner"), ("assistant", "Inner-Navigator-Assistant")]),
        (2, "mast-metagpt-programdev-14", "markers",
         [("user", None), ("assistant", "Alice(SimpleCoder)"), ("assistant", "Bob(SimpleTester)"),
          ("assistant", "Charlie(SimpleReviewer)"), ("assistant", "Bob(SimpleTester)"), ("assistant", "Charlie(SimpleReviewer)")]),
        (3, "mast-metagpt-mmlu-16", "markers",
         [("user", None), ("user", "Human"), ("assistant", "SimpleCoder"), ("assistant", "SimpleTester")]),
        (5, "mast-chatdev-programdev-3", "markers",
         [("user", None), ("assistant", "Chief Product Officer"), ("assistant", "Chief Executive Officer"),
          ("assistant", "Chief Product Officer")]),
        (6, "mast-gaia-magentic-17", "markers",
         [("user", None), ("user", "user"), ("assistant", "MagenticOneOrchestrator"), ("assistant", "WebSurfer")]),
        (7, "mast-gaia-openmanus-18", "markers",
         [("user", None), ("assistant", "Manus"), ("tool", "browser_use"), ("assistant", "Manus"), ("tool", "browser_use")]),
        (8, "mast-unknownmas-test-99", "whole", [("assistant", None)]),
    ],
)
def test_each_system_splits_at_its_speaker_markers(fixture_trajectories, index, trajectory_id, split, expected):
    trajectory = fixture_trajectories[index]
    assert trajectory.id == trajectory_id
    assert trajectory.metadata.extra["split"] == split
    assert speakers(trajectory) == expected
    assert trajectory.metadata.source_format == "mast"
    assert trajectory.metadata.source_line == index  # the record index inside the JSON list
    assert trajectory.query.strip() and trajectory.query_id


def test_appworld_agents_tools_and_messages_to_agents(fixture_trajectories):
    trajectory = fixture_trajectories[4]
    assert Counter(speakers(trajectory)) == {
        ("assistant", "Supervisor Agent"): 3, ("assistant", "SimpleNote Agent"): 1, ("user", None): 5,  # preamble + 4 "Message to"
        ("tool", "Code Execution Output"): 3, ("tool", "send_message API"): 1,
    }
    # the execution output after the first supervisor response is a receipt of turn 1 (no call id to pair)
    outputs = [m for m in trajectory.messages if m.role == "tool"]
    assert outputs[0].turn == 1 and outputs[0].receipt is not None and outputs[0].receipt.call_id is None
    assert trajectory.query.startswith("******************** Task 3/16")


def test_text_between_markers_is_kept_in_order_and_nothing_is_lost():
    """Every character of a split trace is in the preamble, a marker line or a message (only whitespace trimmed)."""
    record = json.loads(FIXTURE.read_text(encoding="utf-8"))[7]  # OpenManus
    messages = split_text(record["trace"], "openmanus")
    joined = "".join(m.content for m in messages)
    for message in messages:
        assert message.content in record["trace"]
    assert "Eliud Kipchoge" in joined and record["trace"].count("Manus's thoughts:") == 2


def test_metadata_keeps_annotations_and_notes(fixture_trajectories):
    records = json.loads(FIXTURE.read_text(encoding="utf-8"))
    for record, trajectory in zip(records, fixture_trajectories):
        extra = trajectory.metadata.extra
        assert len(extra["annotations"]) == len(record["annotations"])
        for kept, raw in zip(extra["annotations"], record["annotations"]):
            assert kept["failure mode"] == raw["failure mode"]
            for vote in ("annotator_1", "annotator_2", "annotator_3"):
                assert kept[vote] is (raw[vote] if isinstance(raw[vote], bool) else None)  # NaN (missing) -> None
        assert (extra["round"], extra["mas_name"], extra["trace_id"]) == (record["round"], record["mas_name"], record["trace_id"])
        assert "trace" not in extra
    assert fixture_trajectories[0].metadata.extra["note"]["text"]  # AG2 annotator note
    # the OpenManus record has missing votes written as NaN
    assert any(a["annotator_3"] is None for a in fixture_trajectories[7].metadata.extra["annotations"])


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"mas_name": "AG2", "benchmark_name": "GSM-Plus"}, "ag2"),
        ({"mas_name": "GAIA", "benchmark_name": "Magentic"}, "magentic"),  # two records swap the fields
        ({"mas_name": "HyperAgent", "benchmark_name": "SWE-Bench-Lite"}, "hyperagent"),
        ({"mas_name": "Other", "benchmark_name": "X"}, None),
    ],
)
def test_system_of(record, expected):
    assert system_of(record) == expected


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"trace": "x", "annotations": [], "mas_name": "AG2"}, "mast"),
        ({"trace": "x", "annotations": []}, None),  # without mas_name it is not a MAST record
    ],
)
def test_detect(obj, expected):
    assert detect_format(obj) == expected


def test_known_system_without_markers_is_imported_whole(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps([{"mas_name": "ChatDev", "benchmark_name": "B", "trace_id": 1, "trace": "no speakers here",
                                 "annotations": []}]))
    (trajectory,) = list(iter_records([path]))
    assert isinstance(trajectory, Trajectory)
    assert trajectory.metadata.extra["split"] == "whole" and trajectory.messages[0].content == "no speakers here"


@pytest.mark.parametrize("trace", ["", "   ", None])
def test_empty_trace_is_rejected_with_its_record_index(tmp_path, trace):
    path = tmp_path / "bad.json"
    good = {"mas_name": "AG2", "benchmark_name": "B", "trace_id": 0, "trace": "hello", "annotations": []}
    path.write_text(json.dumps([good, {**good, "trace": trace}]))
    items = list(iter_records([path], fmt="mast"))
    assert isinstance(items[0], Trajectory)
    assert isinstance(items[1], Reject) and items[1].record_index == 1 and "trace" in items[1].reason


def test_full_shared_file_imports_19_trajectories_without_rejects():
    if not SHARED.exists():
        pytest.skip(f"shared MAST dataset not found at {SHARED}")
    items = list(iter_records([SHARED]))
    rejects = [i for i in items if isinstance(i, Reject)]
    trajectories = [i for i in items if isinstance(i, Trajectory)]
    assert rejects == [] and len(trajectories) == 19
    assert [t.metadata.source_line for t in trajectories] == list(range(19))
    assert len({t.id for t in trajectories}) == 19
    # every system in the file has markers this importer knows
    assert Counter(t.metadata.extra["split"] for t in trajectories) == {"markers": 16, "ag2-json": 3}
    for trajectory in trajectories:
        assert trajectory.turn_count >= 2
        assert all(m.name for m in trajectory.messages if m.role == "assistant")
    # the same ChatDev run annotated in two rounds is one query group
    chatdev = {t.metadata.source_line: t.query_id for t in trajectories if t.metadata.extra["system"] == "chatdev"}
    assert chatdev[3] == chatdev[8]
