"""RunDir, the one reader and writer of a run directory, and RunManifest, the typed run.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judge import rundir
from judge.rundir import BadRow, BudgetSection, PanelMember, PanelSection, RunDir, RunManifest
from judge.testing.builders import cluster, issue, say, trajectory, verdict

# What `judge score examples/batch` writes with the rules judge (paths and times shortened): every section.
WRITTEN_BY_A_RUN = {
    "panel": {
        "size": 1,
        "members": [{"pass_key": "rules#1", "judge": "rules", "pass_index": 1, "model": "rules", "deterministic": True,
                     "prompt_version": "rules-v2.1", "endpoint": None, "independence": None}],
        "prompt_version": "rules-v2.1",
        "params": {"passes": None, "concurrency": 8, "timeout_s": 120.0, "max_cost_usd": None, "params": {}},
        "note": "a deterministic judge runs once: a panel of one",
    },
    "budget": {"max_cost_usd": None, "spent_usd": 0.0, "spent_before_this_invocation_usd": 0.0, "in_doubt_attempts": 0,
               "in_doubt_usd": 0.0, "note": "spent_usd counts every provider attempt"},
    "rubric": {"name": "default", "version": 2, "label": "default-v2", "source": "rubrics/default-v2.yaml"},
    "cluster": {"embedder": "use-m3", "weights": {"text": 7.0, "lexical": 5.0}, "bias": -4.0, "threshold": 0.0,
                "turn_window": 2},
    "embedder": {"name": "use-m3", "model": "universal-sentence-encoder-multilingual-3", "version": "x==0.2.1", "dim": 512},
    "started_at": "2026-12-01T03:33:34.844+00:00",
    "finished_at": "2026-12-01T03:33:35.305+00:00",
    "elapsed_s": 0.461,
}


def write_manifest_text(run: Path, text: str) -> RunDir:
    run.mkdir(parents=True, exist_ok=True)
    (run / rundir.MANIFEST).write_text(text, encoding="utf-8")
    return RunDir(run)


def test_a_manifest_written_by_a_run_round_trips_byte_for_byte(tmp_path: Path) -> None:
    text = json.dumps(WRITTEN_BY_A_RUN, ensure_ascii=False, indent=2) + "\n"
    run = write_manifest_text(tmp_path, text)
    manifest = run.manifest()
    assert manifest.panel is not None and manifest.panel.size == 1
    assert isinstance(manifest.panel.members[0], PanelMember) and manifest.panel.members[0].pass_key == "rules#1"
    assert manifest.budget == BudgetSection.model_validate(WRITTEN_BY_A_RUN["budget"])
    assert manifest.cluster_options()["turn_window"] == 2 and manifest.elapsed_s == 0.461
    run.write_manifest(manifest)
    assert (tmp_path / rundir.MANIFEST).read_text(encoding="utf-8") == text


def test_unknown_keys_are_kept_at_every_level(tmp_path: Path) -> None:
    newer = {"panel": {"size": 3, "members": [{"pass_key": "a#1", "weight": 0.5}], "sampler": "beam"},
             "trajudge_version": "9.0", "rubric": {"label": "x-v1", "hash": "abc"}}
    run = write_manifest_text(tmp_path, json.dumps(newer))
    with run.update_manifest() as manifest:
        manifest.elapsed_s = 1.5
    written = json.loads((tmp_path / rundir.MANIFEST).read_text(encoding="utf-8"))
    assert written == {**newer, "elapsed_s": 1.5}


@pytest.mark.parametrize(
    ("recorded", "observed", "panel_size", "planned"),
    [
        ({}, 0, 1, None),  # no panel recorded, no verdicts: a panel of one
        ({}, 3, 3, None),  # no panel recorded: the distinct passes the verdicts show
        ({"panel": {"size": 3}}, 1, 3, 3),  # planned passes count, unscored or missing ones included
        ({"panel": {"size": 1, "members": ["rules"]}}, 2, 1, 1),  # an old run: members as plain specs
        ({"cluster": {"embedder": "lexical"}}, 2, 2, None),  # a partial section
    ],
)
def test_old_manifests_load_and_give_the_panel_size(tmp_path: Path, recorded: dict, observed: int, panel_size: int,
                                                    planned: int | None) -> None:
    manifest = write_manifest_text(tmp_path, json.dumps(recorded)).manifest()
    assert manifest.to_json() == recorded
    assert manifest.planned_passes() == planned
    assert manifest.panel_size(observed) == panel_size


@pytest.mark.parametrize("text", ["[]", '{"panel": {"size": "three"}}', '{"panel": ', '{"budget": []}'])
def test_a_malformed_manifest_is_an_error_naming_the_file(tmp_path: Path, text: str) -> None:
    run = write_manifest_text(tmp_path, text)
    with pytest.raises(ValueError, match=r"run\.json: not a valid run manifest"):
        run.manifest()


def test_an_absent_manifest_is_empty_and_a_failed_update_writes_nothing(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    assert run.manifest() == RunManifest() and run.manifest().to_json() == {}
    with pytest.raises(RuntimeError), run.update_manifest() as manifest:
        manifest.panel = PanelSection(size=2)
        raise RuntimeError("stopped half way")
    assert not run.has(rundir.MANIFEST)
    assert run.manifest().member_order() == {}


def test_member_order_follows_the_planned_panel(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_manifest(RunManifest(panel=PanelSection(size=2, members=[PanelMember(pass_key="b#1"), "rules",
                                                                        PanelMember(pass_key="a#1")])))
    assert run.manifest().member_order() == {"b#1": 0, "a#1": 2}


def test_rows_are_typed_and_grouped_by_trajectory(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    first = issue(1, "The call failed.")
    verdicts = [verdict(1, [first], trajectory_id="t1"), verdict(2, trajectory_id="t2"), verdict(2, [first], trajectory_id="t1")]
    run.write_rows(rundir.TRAJECTORIES, [trajectory("t1", [say("Done.")]), trajectory("t2", [say("Done.")])])
    run.write_rows(rundir.VERDICTS, verdicts)
    run.write_rows(rundir.CLUSTERS, [cluster(first, trajectory_id="t1")])
    assert [t.id for t in run.trajectories()] == ["t1", "t2"]
    assert {tid: [v.pass_index for v in rows] for tid, rows in run.verdicts_by_trajectory().items()} == {"t1": [1, 2], "t2": [2]}
    assert [c.cluster for c in run.clusters_by_trajectory()["t1"]] == ["c1"]
    assert run.clusters_by_trajectory().get("t2") is None


def test_a_missing_file_is_an_error_unless_the_caller_allows_it(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    with pytest.raises(FileNotFoundError, match="scores.jsonl"):
        run.scores()
    assert list(run.scores(missing_ok=True)) == []
    assert run.verdicts_by_trajectory() == {} and run.clusters_by_trajectory() == {}
    assert not run.is_scored() and run.attempts() is None


def test_a_bad_row_names_file_and_line_or_is_collected(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    good = verdict(1, trajectory_id="t1").model_dump_json()
    (tmp_path / rundir.VERDICTS).write_text(f"{good}\n\n{{\"trajectory_id\": 3}}\n{good}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"verdicts\.jsonl:3: not a valid Verdict row"):
        list(run.verdicts())
    bad: list[BadRow] = []
    assert len(list(run.verdicts(bad_rows=bad))) == 2
    assert [(b.file, b.line) for b in bad] == [(rundir.VERDICTS, 3)]


def test_no_name_writes_outside_the_run(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outside the run directory"):
        RunDir(tmp_path / "run").write_rows("../escaped.jsonl", [])
    assert not (tmp_path / "escaped.jsonl").exists()


CANONICAL = trajectory("t-1", [say("Done.")]).to_json_bytes()


@pytest.mark.parametrize(("line", "found"), [
    (CANONICAL, "t-1"),  # written by the import: read from the line's start
    (CANONICAL + b"\n", "t-1"),
    (trajectory('t "quoted" \\ id', [say("Done.")]).to_json_bytes(), 't "quoted" \\ id'),  # escapes: parsed
    (trajectory("t-ü", [say("Done.")]).to_json_bytes(), "t-ü"),
    (b'{"id": "t-2", "schema_version": "trajudge.trajectory/1"}', "t-2"),  # another key order: parsed
    (b'{"schema_version":"trajudge.trajectory/9","id":"t-3"}', "t-3"),  # another schema: parsed
    (CANONICAL[: CANONICAL.index(b'"messages"')], "t-1"),  # cut after the id: listed (the stream skips it)
    (b'{"schema_version":"trajudge.trajectory/1","id":"t-\xff"}', "t-\ufffd"),  # as the tolerant reader decodes it
    (b'{"schema_version":"trajudge.trajectory/9","id":"t-\xfe"}', "t-\ufffd"),
    (b"[1, 2]", None),  # not an object
    (b'{"id": 7}', None),
    (b'{"query": "no id"}', None),
    (b"{not json", None),
    (b'{"id":' + b"[" * 5000 + b"]" * 5000 + b"}", None),  # nested too deep: a bad row, not a RecursionError
])
def test_a_trajectory_line_id(line: bytes, found: str | None) -> None:
    """trajectory_ids reads each id from the line's start; it must give what parsing the line gives."""
    if found is None:
        with pytest.raises(ValueError):
            rundir.trajectory_line_id(line)
    else:
        assert rundir.trajectory_line_id(line) == found
        if line.rstrip().endswith(b"}"):  # a whole line: what the JSON parser reads
            assert json.loads(line.decode("utf-8", "replace"))["id"] == found


def test_a_side_row_that_is_not_an_object_is_a_bad_row(tmp_path: Path) -> None:
    """The grouping reader reads trajectory ids from line starts too: a JSON array is a bad row, not a crash."""
    run = RunDir(tmp_path)
    good = verdict(1, trajectory_id="t1").model_dump_json()
    (tmp_path / rundir.VERDICTS).write_text(f"{good}\n[1, 2]\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"verdicts\.jsonl:2: not a valid Verdict row: no trajectory_id"):
        run.verdicts_by_trajectory()
    bad: list[BadRow] = []
    with run.verdicts_by_trajectory(bad_rows=bad) as grouped:
        assert list(grouped) == ["t1"]
    assert [(b.file, b.line) for b in bad] == [(rundir.VERDICTS, 2)]
