"""Flat memory at any batch size: indexed per-trajectory lookups, streaming writers, and a panel that streams its
input and writes verdicts in input order through a bounded window (issue #14; the figures are in bench/scale.py)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

import judge.panel as panel
from judge import rundir
from judge.judges import BaseJudge
from judge.panel import PanelConfig, run_panel
from judge.pipeline import score_run
from judge.rundir import BadRow, RowsByTrajectory, RunDir
from judge.schema import Verdict
from judge.testing.builders import issue, verdict
from judge.testing.synthetic import synthetic_batch

# --- RunDir: lookups by trajectory, writers --------------------------------------------------------------------


@pytest.mark.parametrize("tid", ["plain", 'with "quotes"', "back\\slash", "ünïcödé-任务", "tab\there"])
def test_rows_are_found_by_any_id_in_any_order(tmp_path: Path, tid: str) -> None:
    rows = [verdict(1, trajectory_id="other"), verdict(1, [issue(2)], trajectory_id=tid), verdict(2, trajectory_id="other"),
            verdict(2, trajectory_id=tid)]
    rundir.write_jsonl(tmp_path / rundir.VERDICTS, rows)
    with RunDir(tmp_path).verdicts_by_trajectory() as grouped:
        assert list(grouped) == ["other", tid] and len(grouped) == 2 and tid in grouped
        assert grouped[tid] == [rows[1], rows[3]] and grouped.get("absent", []) == []
        assert grouped == {"other": [rows[0], rows[2]], tid: [rows[1], rows[3]]}


def test_a_row_written_by_another_writer_is_still_found(tmp_path: Path) -> None:
    row = verdict(1, trajectory_id="t1").model_dump()
    (tmp_path / rundir.VERDICTS).write_text(json.dumps({"judge": "x", **row}, indent=None) + "\n", encoding="utf-8")
    assert [v.pass_index for v in RunDir(tmp_path).verdicts_by_trajectory()["t1"]] == [1]


def test_a_bad_row_in_a_lookup_names_file_and_line_or_is_collected(tmp_path: Path) -> None:
    good = verdict(1, trajectory_id="t1").model_dump_json()
    wrong_type = good.replace('"pass_index":1', '"pass_index":"one"')
    (tmp_path / rundir.VERDICTS).write_text(f"{good}\n\nnot json\n{wrong_type}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"verdicts\.jsonl:3: not a valid Verdict row"):
        RunDir(tmp_path).verdicts_by_trajectory()
    bad: list[BadRow] = []
    grouped = RunDir(tmp_path).verdicts_by_trajectory(bad_rows=bad)
    assert [v.pass_index for v in grouped["t1"]] == [1]  # the row with a bad field is skipped when read
    assert [(b.file, b.line) for b in bad] == [("verdicts.jsonl", 3), ("verdicts.jsonl", 4)]
    (tmp_path / rundir.VERDICTS).write_text(f"{good}\n{wrong_type}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"verdicts\.jsonl:2: not a valid Verdict row"):
        RunDir(tmp_path).verdicts_by_trajectory()["t1"]


def test_scores_by_trajectory_gives_one_row_and_needs_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="scores.jsonl"):
        RunDir(tmp_path).scores_by_trajectory()
    assert RowsByTrajectory(tmp_path / "absent.jsonl", Verdict) == {}


def test_a_writer_that_fails_leaves_the_previous_file(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_rows(rundir.VERDICTS, [verdict(1)])
    before = (tmp_path / rundir.VERDICTS).read_bytes()
    with pytest.raises(RuntimeError), run.writer(rundir.VERDICTS) as out:
        out.write(verdict(2))
        raise RuntimeError("stage failed")
    assert (tmp_path / rundir.VERDICTS).read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [rundir.VERDICTS]  # no temporary file left


def test_a_view_streams_the_file_each_time(tmp_path: Path) -> None:
    run = RunDir(tmp_path)
    run.write_rows(rundir.VERDICTS, [verdict(1), verdict(2)])
    view = run.view(rundir.VERDICTS, Verdict, 2)
    assert len(view) == 2 and [v.pass_index for v in view] == [1, 2] == [v.pass_index for v in view]
    assert view[1].pass_index == 2


# --- the panel streams its input and writes verdicts in input order -------------------------------------------


class SlowJudge(BaseJudge):
    """A judge that goes through the call queue (it has a provider) and answers later trajectories first."""

    spec = "slow"
    provider = object()  # never called: the preflight is off

    def __init__(self, count: int):
        self.count = count
        self.delays = {f"t{i}": random.Random(i).random() * 0.004 for i in range(count)}

    async def __call__(self, trajectory, pass_index, on_attempt=None, on_send=None) -> Verdict:
        await asyncio.sleep(self.delays.get(trajectory.id, 0.0))
        return Verdict(trajectory_id=trajectory.id, judge=self.spec, pass_index=pass_index, pass_key="x", status="ok")


@pytest.mark.parametrize(("window", "concurrency", "passes"), [(1, 4, 1), (3, 4, 2), (4096, 8, 3)])
def test_verdicts_are_written_in_input_order_and_the_input_is_streamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        window: int, concurrency: int, passes: int) -> None:
    batch, _ = synthetic_batch(12)
    batch = [t.model_copy(update={"id": f"t{i}"}) for i, t in enumerate(batch)]
    pulled, ahead = [0], []
    real_append = panel._append

    def stream():
        for trajectory in batch:
            pulled[0] += 1
            yield trajectory

    def append(handle, verdict, flush) -> None:
        real_append(handle, verdict, flush)
        ahead.append(pulled[0] - len(ahead) // passes)  # trajectories read beyond those fully written

    monkeypatch.setattr(panel, "WINDOW", window)
    monkeypatch.setattr(panel, "_append", append)
    config = PanelConfig(judges=["slow"], passes=passes, concurrency=concurrency)
    result = asyncio.run(run_panel(stream(), config, tmp_path, progress=False, judges={"slow": SlowJudge(len(batch))}))
    rows = list(RunDir(tmp_path).verdicts())
    assert [(v.trajectory_id, v.pass_index) for v in rows] == [(f"t{i}", p) for i in range(12) for p in range(1, passes + 1)]
    assert len(result.verdicts) == 12 * passes and result.outcomes == {("ok", None): 12 * passes}
    assert max(ahead) <= window // passes + 2  # the window bounds how far the reader runs ahead of the writer


def test_the_rules_panel_computes_no_content_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.model import Trajectory

    def refuse(self) -> str:
        raise AssertionError("a panel without a cached judge needs no content hash")

    monkeypatch.setattr(Trajectory, "content_hash", refuse)
    batch, _ = synthetic_batch(3)
    result = asyncio.run(run_panel(iter(batch), PanelConfig(), tmp_path, progress=False))
    assert result.outcomes[("ok", None)] == 3 and result.cached == 0


# --- scoring reads each trajectory's verdicts through the index, in any order ----------------------------------


def test_scores_do_not_depend_on_the_order_of_verdicts_jsonl(tmp_path: Path) -> None:
    batch, _ = synthetic_batch(10)
    rundir.write_jsonl(tmp_path / rundir.TRAJECTORIES, batch)
    asyncio.run(run_panel(RunDir(tmp_path).trajectories(), PanelConfig(judges=["rules"]), tmp_path, progress=False))
    scores = score_run(tmp_path, None, {"embedder": "lexical"})
    assert len(scores) == 10 and [s.trajectory_id for s in scores] == [t.id for t in batch]
    ordered = {name: (tmp_path / name).read_bytes() for name in (rundir.SCORES, rundir.CLUSTERS)}
    lines = (tmp_path / rundir.VERDICTS).read_text(encoding="utf-8").splitlines(keepends=True)
    random.Random(3).shuffle(lines)
    (tmp_path / rundir.VERDICTS).write_text("".join(lines), encoding="utf-8")
    score_run(tmp_path, None, {"embedder": "lexical"})
    assert {name: (tmp_path / name).read_bytes() for name in ordered} == ordered
