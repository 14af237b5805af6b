"""``judge import`` and ``judge show`` through the CLI runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.importers import load_trajectories

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "batch"
runner = CliRunner()


def _good_line(rid: str) -> str:
    return json.dumps({"id": rid, "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})


def test_import_writes_canonical_jsonl_and_prints_counts(tmp_path):
    out = tmp_path / "batch.jsonl"
    result = runner.invoke(app, ["import", str(EXAMPLES), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "read 14, imported 14, rejected 0" in result.output
    assert "anthropic 5" in result.output and "openai 9" in result.output
    assert load_trajectories(out) == load_trajectories(EXAMPLES)
    skipped = [json.loads(row) for row in (tmp_path / "batch.rejects.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(Path(r["source_file"]).name, r["reason"].split(" (")[0]) for r in skipped] == [  # listed, not rejects
        ("EXPECTED.md", "skipped: not a data file"), ("expected.yaml", "skipped: not a data file")]


@pytest.mark.parametrize(
    ("lines", "extra_args", "exit_code", "imported", "rejected"),
    [
        ([_good_line("a"), "{broken", _good_line("b")], [], 0, 2, 1),  # rejects alone are not fatal
        ([_good_line("a"), "{broken"], ["--strict"], 1, 1, 1),  # ... unless --strict
        (["{broken", '{"unknown": true}'], [], 1, 0, 2),  # nothing imported is fatal
        ([_good_line("a")], ["--strict"], 0, 1, 0),
    ],
)
def test_import_exit_codes(tmp_path, lines, extra_args, exit_code, imported, rejected):
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    rejects = tmp_path / "bad" / "rejects.jsonl"
    result = runner.invoke(app, ["import", str(source), "--out", str(out), "--rejects", str(rejects), *extra_args])
    assert result.exit_code == exit_code, result.output
    assert f"imported {imported}, rejected {rejected}" in result.output
    rows = [json.loads(line) for line in rejects.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == rejected
    assert all(row["source_file"] == str(source) and row["line"] for row in rows)


def test_import_rejects_an_unknown_format_option(tmp_path):
    result = runner.invoke(app, ["import", str(EXAMPLES), "--out", str(tmp_path / "x.jsonl"), "--format", "yaml"])
    assert result.exit_code != 0
    assert not (tmp_path / "x.jsonl").exists()


def test_show_renders_turns_calls_and_errors():
    result = runner.invoke(app, ["show", str(EXAMPLES / "openai_runs.jsonl"), "--id", "inv-base-build", "--max-chars", "120"])
    assert result.exit_code == 0, result.output
    output = result.output
    assert "inv-base-build" in output and "T1" in output and "T14" in output
    assert "-> Bash" in output and "[ERROR, exit 1]" in output and "[ERROR, exit 2]" in output
    assert "more chars]" in output  # long receipts are truncated
    assert "clean-csv-summary" not in output


def test_show_list_and_missing_id():
    listed = runner.invoke(app, ["show", str(EXAMPLES), "--list"])
    assert listed.exit_code == 0 and "name-cleaner-evidence" in listed.output
    missing = runner.invoke(app, ["show", str(EXAMPLES), "--id", "no-such-id"])
    assert missing.exit_code == 1 and "no-such-id" in missing.output


def test_help_has_examples():
    for command in ("import", "show"):
        result = runner.invoke(app, [command, "--help"])
        assert result.exit_code == 0 and "Examples" in result.output
