"""The input side against hostile and unlucky files (issue 12, items 1-4): every case of the generated corpus
imports what it should, rejects what it should with file and line, and lists what it skips; nothing crashes,
nothing is lost silently."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adversarial.inputs import CASES, Case, build, line
from judge.cli import app
from judge.importers import iter_records, reader
from judge.importers.writer import write_import
from judge.model import Trajectory
from judge.pipeline import import_to_run
from judge.schema import Reject

runner = CliRunner()


def split(items: list[Trajectory | Reject], root: Path) -> tuple[list[str], list[Reject], list[Reject]]:
    """(ids imported, rejects, skipped) with paths made relative to ``root``."""
    ids = [i.id for i in items if isinstance(i, Trajectory)]
    rejects = [i for i in items if isinstance(i, Reject) and not i.reason.startswith("skipped:")]
    skipped = [i for i in items if isinstance(i, Reject) and i.reason.startswith("skipped:")]
    for row in (*rejects, *skipped):
        row.source_file = os.path.relpath(row.source_file, root)
    return ids, rejects, skipped


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_imports_what_it_should(case: Case, tmp_path: Path) -> None:
    folder = build(tmp_path, [case])[case.name]
    items = list(iter_records([folder]))
    ids, rejects, skipped = split(items, folder)
    if case.partial:
        assert ids and ids == case.imported[: len(ids)] and len(ids) < len(case.imported), ids
    else:
        assert ids == case.imported
    assert [(r.source_file, r.line if line is not None else None) for r, (_, line, _) in zip(rejects, case.rejects)] == [
        (file, line) for file, line, _ in case.rejects
    ] and len(rejects) == len(case.rejects), [r.model_dump() for r in rejects]
    for row, (_, _, piece) in zip(rejects, case.rejects):
        assert piece in row.reason, row.reason
        assert "\n" not in row.reason
    assert [(s.source_file, piece in s.reason) for s, (_, piece) in zip(skipped, case.skipped)] == [
        (path, True) for path, _ in case.skipped
    ] and len(skipped) == len(case.skipped), [s.model_dump() for s in skipped]
    for trajectory in items:  # everything imported can be written: no record stops the batch later
        if isinstance(trajectory, Trajectory):
            trajectory.to_json_line()


def test_every_record_reject_names_its_line(tmp_path: Path) -> None:
    """A reject about a record (not a whole file) carries the line where the record starts."""
    root = tmp_path / "corpus"
    build(root)
    record_rejects = [r for r in iter_records([root]) if isinstance(r, Reject) and (r.format or r.record_index is not None)]
    assert record_rejects
    assert all(r.line is not None for r in record_rejects), [r.model_dump() for r in record_rejects if r.line is None]


# --- 1. depth -----------------------------------------------------------------------------------------------


def test_deep_record_through_the_writer_keeps_its_neighbours(tmp_path: Path) -> None:
    folder = build(tmp_path, [c for c in CASES if c.name in ("deep-value", "deep-parse", "deep-document")])
    out = tmp_path / "out.jsonl"
    stats = write_import(folder.values(), out, tmp_path / "rejects.jsonl")
    assert (stats.imported, stats.rejected) == (6, 4)  # deep-document also holds a record of unknown format
    assert [json.loads(row)["id"] for row in out.read_text().splitlines()] == ["a", "c", "a~2", "c~2", "a~3", "c~3"]


def test_deep_argument_string_is_kept_as_a_call_defect(tmp_path: Path) -> None:
    folder = build(tmp_path, [c for c in CASES if c.name == "deep-arguments"])["deep-arguments"]
    (trajectory,) = [t for t in iter_records([folder]) if isinstance(t, Trajectory)]
    (call,) = trajectory.messages[1].tool_calls
    assert call.arguments is None and call.arguments_error == "arguments nested deeper than 100 levels"
    assert call.raw_arguments and call.raw_arguments.startswith("[[[")


def test_writer_turns_a_trajectory_it_cannot_write_into_a_reject(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The last guard: whatever slips past the reader, one record that cannot be serialised is not a crash."""
    source = tmp_path / "in.jsonl"
    source.write_text(line("a") + "\n" + line("b") + "\n", encoding="utf-8")
    real_parse = reader.parse_record

    def parse(record, src, fmt=None):
        item = real_parse(record, src, fmt)
        if isinstance(item, Trajectory) and item.id == "a":
            item.metadata.extra["unwritable"] = object()
        return item

    monkeypatch.setattr(reader, "parse_record", parse)
    stats = write_import([source], tmp_path / "out.jsonl", tmp_path / "rejects.jsonl")
    assert (stats.imported, stats.rejected) == (1, 1)
    (row,) = [json.loads(r) for r in (tmp_path / "rejects.jsonl").read_text().splitlines()]
    assert row["line"] == 1 and row["reason"].startswith("cannot be written as JSON")


# --- 2. ids -------------------------------------------------------------------------------------------------


def test_renamed_ids_keep_the_original(tmp_path: Path) -> None:
    folder = build(tmp_path, [c for c in CASES if c.name == "duplicate-ids"])["duplicate-ids"]
    trajectories = [t for t in iter_records([folder]) if isinstance(t, Trajectory)]
    assert [(t.id, t.metadata.extra.get("original_id")) for t in trajectories] == [
        ("x", None), ("x~2", None), ("x~3", "x"), ("x~3~2", "x~3"), ("x~4", "x")]


def test_ids_stay_unique_across_files_and_through_judge_import(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(line("x") + "\n" + line("x~2") + "\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(line("x") + "\n", encoding="utf-8")
    out = tmp_path / "out" / "all.jsonl"
    result = runner.invoke(app, ["import", str(tmp_path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "renamed 1 repeated id" in result.output
    assert [json.loads(row)["id"] for row in out.read_text().splitlines()] == ["x", "x~2", "x~3"]


# --- 3. reading -----------------------------------------------------------------------------------------------


def test_lone_surrogates_are_replaced_and_counted(tmp_path: Path) -> None:
    folder = build(tmp_path, [c for c in CASES if c.name == "encodings"])["encodings"]
    (trajectory,) = [t for t in iter_records([folder / "surrogates.jsonl"]) if isinstance(t, Trajectory) and t.id == "lone-surrogate"]
    assert trajectory.messages[-1].content == "half a pair: \ufffd end"
    assert trajectory.metadata.extra["note"] == "cut emoji \ufffd"
    assert trajectory.metadata.extra["lone_surrogates_replaced"] == 2


def test_a_paired_surrogate_escape_is_an_ordinary_character(tmp_path: Path) -> None:
    path = tmp_path / "emoji.jsonl"
    path.write_text(json.dumps({**json.loads(line("e")), "query": "party \U0001f389"}) + "\n", encoding="utf-8")  # ensure_ascii: \ud83c\udf89
    (trajectory,) = iter_records([path])
    assert trajectory.query == "party \U0001f389" and "lone_surrogates_replaced" not in trajectory.metadata.extra


def test_lone_surrogates_inside_json_strings_of_a_record_are_parsed_and_replaced(tmp_path: Path) -> None:
    """Arguments and loosely written lists are JSON text inside a string: one holding a lone surrogate is still
    parsed (as json.loads parses it), then the surrogate is replaced like any other."""
    record = json.loads(line("inner"))
    record["messages"][1]["tool_calls"][0]["function"]["arguments"] = json.dumps({"command": "ls \ud800"}, ensure_ascii=False)
    record["messages"][1]["tool_calls"] = json.dumps(record["messages"][1]["tool_calls"])  # a list written as a string
    path = tmp_path / "inner.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    (trajectory,) = iter_records([path])
    (call,) = trajectory.messages[1].tool_calls
    assert call.arguments == {"command": "ls \ufffd"} and call.arguments_error is None
    assert call.raw_arguments == '{"command": "ls \ufffd"}'
    assert trajectory.metadata.extra["lone_surrogates_replaced"] == 2  # the parsed value and the raw text


@pytest.mark.parametrize("block", [1, 2, 3, 5, 7, 64])
def test_line_splitting_is_the_same_whatever_the_block_size(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """\\r\\n split across two reads is one line end; \\r alone and \\n alone are one each (table-driven)."""
    import io

    data = b'{"a":1}\r\n{"b":2}\r{"c":3}\n\n\r\n{"d":4}\r\r{"e":5}'
    monkeypatch.setattr(reader, "BLOCK_BYTES", block)
    lines = list(reader._split_lines(io.BytesIO(data)))
    assert lines == list(enumerate(data.splitlines(), start=1))


def test_a_line_over_the_limit_is_rejected_without_being_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_LINE_BYTES", 2000)
    monkeypatch.setattr(reader, "BLOCK_BYTES", 256)
    path = tmp_path / "long.jsonl"
    long_record = json.loads(line("long"))
    long_record["messages"][2]["content"] = "y" * 5000
    path.write_text("\n".join([line("a"), json.dumps(long_record), line("b")]), encoding="utf-8")
    items = list(iter_records([path]))
    assert [i.id for i in items if isinstance(i, Trajectory)] == ["a", "b"]
    (reject,) = [i for i in items if isinstance(i, Reject)]
    assert reject.line == 2 and reject.reason == "line longer than 2000 bytes: not read"


def test_a_document_over_the_limit_is_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "MAX_DOCUMENT_BYTES", 100)
    path = tmp_path / "big.json"
    path.write_text(json.dumps([json.loads(line("a"))], indent=2), encoding="utf-8")
    (reject,) = iter_records([path])
    assert isinstance(reject, Reject) and "write it as JSON Lines" in reject.reason


def test_truncated_gzip_keeps_the_records_before_the_cut(tmp_path: Path) -> None:
    folder = build(tmp_path, [c for c in CASES if c.name == "truncated-gzip"])["truncated-gzip"]
    items = list(iter_records([folder]))
    ids = [i.id for i in items if isinstance(i, Trajectory)]
    reject = items[-1]
    assert isinstance(reject, Reject) and reject.line == len(ids) + 1
    assert reject.reason.startswith(f"cannot read past line {len(ids)}: EOFError")


# --- 4. run directories ----------------------------------------------------------------------------------------


def test_a_run_directory_inside_its_input_never_imports_itself(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "logs.jsonl").write_text("".join(line(f"r{n}") + "\n" for n in range(3)), encoding="utf-8")
    run = data / "run"
    counts = [import_to_run([data], run).imported for _ in range(3)]
    assert counts == [3, 3, 3]
    rows = [json.loads(r) for r in (run / "rejects.jsonl").read_text().splitlines()]
    assert rows == [{"source_file": str(run), "line": None, "record_index": None, "format": None,
                     "reason": "skipped: it is the output of this command"}]
    # another run directory in the same folder is recognised and skipped too, with its reason listed
    stats = import_to_run([data], tmp_path / "elsewhere")
    assert (stats.imported, stats.rejected, stats.skipped) == (3, 0, 1)
    assert "trajudge run directory" in (tmp_path / "elsewhere" / "rejects.jsonl").read_text()


def test_a_run_directory_named_explicitly_gives_its_trajectories(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "logs.jsonl").write_text(line("a") + "\n", encoding="utf-8")
    import_to_run([data], tmp_path / "run")
    (tmp_path / "run" / "verdicts.jsonl").write_text('{"trajectory_id": "a", "status": "ok"}\n', encoding="utf-8")
    items = list(iter_records([tmp_path / "run"]))  # its trajectories.jsonl only: no verdict row is read as a record
    assert items == list(iter_records([tmp_path / "run" / "trajectories.jsonl"])) and [i.id for i in items] == ["a"]


def test_judge_score_twice_with_out_inside_the_input(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "logs.jsonl").write_text("".join(line(f"r{n}") + "\n" for n in range(3)), encoding="utf-8")
    for _ in range(2):
        result = runner.invoke(app, ["score", str(data), "--out", str(data / "run"), "--embedder", "lexical"])
        assert result.exit_code == 0, result.output
        assert "read 3 records: imported 3, rejected 0" in result.output
        assert "skipped 1 path(s)" in result.output


def test_judge_import_over_the_whole_corpus_twice(tmp_path: Path) -> None:
    """Every case at once, output inside the input: no crash, the same counts on the second run."""
    root = tmp_path / "corpus"
    build(root)
    out = root / "out" / "all.jsonl"
    outputs = []
    for _ in range(2):
        result = runner.invoke(app, ["import", str(root), "--out", str(out)])
        assert result.exit_code == 0, result.output
        outputs.append(result.output.splitlines()[0])
    assert outputs[0] == outputs[1], outputs
    ids = [json.loads(row)["id"] for row in out.read_text().splitlines()]
    assert len(ids) == len(set(ids))
    skipped = [json.loads(r) for r in out.with_name("all.rejects.jsonl").read_text().splitlines() if '"skipped: ' in r]
    assert {Path(r["source_file"]).name for r in skipped} >= {"all.jsonl", "all.rejects.jsonl", "old-run"}
