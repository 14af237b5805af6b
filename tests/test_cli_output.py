"""Output off a terminal and ``--json``: plain progress lines (no bar cut to `200/… 0:00:…`), `judge show --list`
with whole ids, no colour when piped or with NO_COLOR / TERM=dumb, and one JSON document on stdout per command."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge import terminal
from judge.cli import app
from judge.model import Trajectory
from judge.terminal import Progress

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "batch"
ROWS = ROOT / "tests" / "fixtures" / "cluster" / "multilingual_defects.jsonl"
LINE = re.compile(r"^judging: (\d+)/(\d+) \((\d+)%\) \d+:\d\d:\d\d( · .*)?$")
COUNT_LINE = re.compile(r"^judging: (\d+) \d+:\d\d:\d\d( · .*)?$")


# --- progress --------------------------------------------------------------------------------------


def test_plain_progress_prints_a_line_per_tenth_and_the_end():
    stream = io.StringIO()
    with Progress("judging", total=200, done=0, stream=stream, live=False, stats="cached 0", gap_s=0) as progress:
        for _ in range(200):
            progress.advance(stats="0.0 calls/s · retries 0 · unscored 0 · cost $0.0000")
    lines = stream.getvalue().splitlines()
    assert all(LINE.match(line) for line in lines), lines
    assert "…" not in stream.getvalue()
    assert lines[0].startswith("judging: 0/200 (0%)") and lines[0].endswith("· cached 0")
    assert [int(LINE.match(line).group(3)) for line in lines] == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]


def test_a_fast_batch_prints_its_start_and_end_only():
    stream = io.StringIO()
    with Progress("judging", total=14, stream=stream, live=False) as progress:  # done well within gap_s
        for _ in range(14):
            progress.advance()
    assert [line.split(" (")[0] for line in stream.getvalue().splitlines()] == ["judging: 0/14", "judging: 14/14"]


def test_plain_progress_reports_where_an_interruption_left_it_and_counts_cached_work():
    stream = io.StringIO()
    with pytest.raises(KeyboardInterrupt), Progress("judging", total=40, done=10, stream=stream, live=False) as progress:
        progress.advance()
        progress.advance()
        raise KeyboardInterrupt
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("judging: 10/40 (25%)") and lines[-1].startswith("judging: 12/40 (30%)")


def test_disabled_or_empty_progress_prints_nothing():
    stream = io.StringIO()
    for total, enabled in ((0, True), (5, False)):
        with Progress("judging", total=total, stream=stream, live=False, enabled=enabled) as progress:
            progress.advance()
    assert stream.getvalue() == ""


def test_live_bar_keeps_the_counts_whole_and_cuts_only_the_free_text():
    stream = io.StringIO()  # not a terminal: rich draws the bar once, at the end, in 80 columns
    with Progress("judging", total=200, stream=stream, live=True) as progress:
        progress.advance(200, stats="12.5 calls/s · retries 3 · unscored 1 · cost $0.1234 " + "x" * 80)
    text = stream.getvalue()
    assert "200/200" in text and "0:00:0" in text and "…" in text  # the stats column gave way, not the counts


@pytest.mark.parametrize(("tty", "term", "no_color", "interactive", "colour"), [
    (True, "xterm-256color", None, True, True),
    (True, "xterm-256color", "1", True, False),
    (True, "dumb", None, False, False),
    (False, "xterm-256color", None, False, False),
])
def test_interactive_and_colour(monkeypatch: pytest.MonkeyPatch, tty: bool, term: str, no_color: str | None,
                                interactive: bool, colour: bool):
    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    monkeypatch.setenv("TERM", term)
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert terminal.interactive(Stream()) is interactive and terminal.colour(Stream()) is colour


def test_score_off_a_terminal_prints_progress_lines_on_stderr(tmp_path: Path):
    # The rules judge judges while the import streams past: the count has no total until the end.
    result = runner.invoke(app, ["score", str(EXAMPLES), "--out", str(tmp_path / "run"), "--embedder", "lexical"])
    assert result.exit_code == 0, result.output
    progress = [line for line in result.stderr.splitlines() if line.startswith("judging")]
    assert progress and all(COUNT_LINE.match(line) for line in progress) and progress[-1].startswith("judging: 14 ")
    assert "…" not in result.stderr and "\x1b[" not in result.output


def test_progress_without_a_total_counts_at_the_start_and_the_end():
    stream = io.StringIO()
    with Progress("judging", total=None, stream=stream, live=False) as progress:
        for _ in range(25):
            progress.advance(stats="0 unscored")
    lines = stream.getvalue().splitlines()
    assert [line.split(" ")[1] for line in lines] == ["0", "25"]  # no tenths to report without a total
    assert all(COUNT_LINE.match(line) for line in lines) and lines[-1].endswith("· 0 unscored")


# --- judge show ----------------------------------------------------------------------------------


LONG_ID = "a-trajectory-whose-identifier-is-much-longer-than-any-terminal-table-column-would-allow-" + "x" * 40


@pytest.fixture
def long_ids(tmp_path: Path) -> Path:
    path = tmp_path / "long.jsonl"
    rows = [{"id": LONG_ID, "messages": [{"role": "user", "content": "Fix\tthe\nbuild " + "and more " * 30},
                                         {"role": "assistant", "content": "done"}]},
            {"id": "short", "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "ok"}]}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + "not json\n", encoding="utf-8")
    return path


def test_show_list_off_a_terminal_is_tab_separated_and_cuts_nothing(long_ids: Path):
    result = runner.invoke(app, ["show", str(long_ids), "--list"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split("\t") == ["id", "format", "turns", "calls", "errors", "query"]
    first = lines[1].split("\t")
    assert len(first) == 6 and first[0] == LONG_ID and first[5].startswith("Fix the build and more")
    assert first[5].endswith("and more") and "…" not in result.stdout  # the whole query, whitespace collapsed
    assert lines[2].split("\t")[:3] == ["short", "openai", "1"] and len(lines) == 3  # the reject is not a row
    assert "rejected:" in result.stderr and "\x1b[" not in result.output


@pytest.mark.parametrize("width", [60, 100, 300])
def test_show_list_table_on_a_terminal_keeps_ids_whole(long_ids: Path, width: int):
    from judge.cli.ingest_cmds import _list_table, list_row
    from judge.importers import iter_records

    rows = [list_row(item) for item in iter_records([long_ids]) if isinstance(item, Trajectory)]
    table = _list_table(rows, width)
    if width < len(LONG_ID):
        assert table is None  # the caller prints the tab-separated lines instead
        return
    from rich.console import Console

    buffer = io.StringIO()
    Console(file=buffer, width=width).print(table)
    assert LONG_ID in buffer.getvalue()


def test_show_honours_no_color_on_a_terminal(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setattr(terminal, "interactive", lambda stream=None: True)
    result = runner.invoke(app, ["show", str(EXAMPLES / "openai_runs.jsonl"), "--id", "env-expired-token"])
    assert result.exit_code == 0 and "ERROR" in result.stdout
    assert not re.search(r"\x1b\[[0-9;]*3\dm", result.stdout)  # no foreground colour (bold may stay)


# --- --json --------------------------------------------------------------------------------------


def only_json(result: Any) -> Any:
    """stdout holds exactly one JSON document (json.loads of the whole of it)."""
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_show_json_lists_and_dumps_trajectories(long_ids: Path):
    listed = only_json(runner.invoke(app, ["show", str(long_ids), "--list", "--json"]))
    assert [row["id"] for row in listed["trajectories"]] == [LONG_ID, "short"]
    assert listed["trajectories"][0]["turns"] == 1 and listed["rejects"][0]["line"] == 3
    shown = only_json(runner.invoke(app, ["show", str(long_ids), "--id", "short", "--json"]))
    assert Trajectory.model_validate(shown["trajectories"][0]).id == "short"
    missing = runner.invoke(app, ["show", str(long_ids), "--id", "nope", "--json"])
    assert missing.exit_code == 1 and missing.stdout == ""  # an input error: no document, the reason on stderr


def test_import_json(tmp_path: Path, long_ids: Path):
    doc = only_json(runner.invoke(app, ["import", str(long_ids), "--out", str(tmp_path / "t.jsonl"), "--json"]))
    assert (doc["read"], doc["imported"], doc["rejected"]) == (3, 2, 1)
    assert doc["rejects"][0]["line"] == 3 and doc["rejects"][0]["skipped"] is False


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    run = tmp_path_factory.mktemp("json") / "run"
    result = runner.invoke(app, ["score", str(EXAMPLES), "--out", str(run), "--embedder", "lexical", "--json"])
    return run, result


def test_score_json_is_the_final_summary(scored: tuple[Path, Any]):
    run, result = scored
    doc = only_json(result)
    assert doc["exit_code"] == 0 and doc["import"]["imported"] == 14 and doc["panel"]["passes"] == ["rules#1"]
    assert doc["scores"]["trajectories"] == 14 and sum(doc["scores"]["by_score"].values()) + doc["scores"]["no_score"] == 14
    assert Path(doc["report"]).name == "report.html" and "scores (14 trajectories)" in result.stderr


def test_rescore_report_and_repair_json(scored: tuple[Path, Any], tmp_path: Path):
    run, first = scored
    rescored = only_json(runner.invoke(app, ["rescore", str(run), "--json"]))
    assert rescored["scores"] == json.loads(first.stdout)["scores"]  # same verdicts, same rubric: same scores
    report = only_json(runner.invoke(app, ["report", str(run), "--json"]))
    assert Path(report["files"]["report_html"]).is_file()
    repaired = only_json(runner.invoke(app, ["repair", str(run), "--out", str(tmp_path / "r"), "--json"]))
    assert sum(repaired["routes"].values()) == repaired["trajectories_with_majority_issues"] > 0
    assert Path(repaired["files"]["tickets.jsonl"]).is_file()


def test_export_json(scored: tuple[Path, Any], tmp_path: Path):
    run, _ = scored
    doc = only_json(runner.invoke(app, ["export", str(run), "--out", str(tmp_path / "x"), "--json"]))
    assert doc["train"]["trajectories"] + doc["test"]["trajectories"] > 0 and doc["disjoint_by_query"] is True


def test_cluster_and_calibrate_json(tmp_path: Path):
    clustered = only_json(runner.invoke(app, ["cluster", str(ROWS), "--out", str(tmp_path / "c.jsonl"),
                                              "--embedder", "lexical", "--json"]))
    assert clustered["rows"] == len(ROWS.read_text(encoding="utf-8").splitlines()) and clustered["skipped_rows"] == []
    fit = only_json(runner.invoke(app, ["calibrate", str(ROWS), "--embedder", "lexical", "--json"]))
    assert fit["pairs"] > fit["positives"] > 0 and 0 <= fit["fitted"]["f1"] <= 1 and fit["config"]["embedder"] == "lexical"


def test_meta_commands_json():
    assert only_json(runner.invoke(app, ["version", "--json"]))["trajudge"]
    plugins = only_json(runner.invoke(app, ["plugins", "--json"]))
    assert "rules" in plugins["judge_kinds"] and "canonical" in plugins["formats"]
    docs = only_json(runner.invoke(app, ["docs", "--json"]))
    assert "cluster-rows" in {d["name"] for d in docs["docs"]}


def test_compare_json_keeps_the_judging_output_off_stdout(tmp_path: Path):
    result = runner.invoke(app, ["compare", str(ROOT / "examples" / "continuations"), "--out", str(tmp_path / "cmp"),
                                 "--judge", "rules", "--embedder", "lexical", "--resamples", "200", "--json"])
    doc = only_json(result)
    assert doc == json.loads((tmp_path / "cmp" / "compare.json").read_text(encoding="utf-8"))
    assert "judging" in result.stderr and "panel: 1 pass(es)" in result.stderr


def test_a_live_bar_without_a_total_shows_the_count():
    stream = io.StringIO()
    with Progress("judging", total=None, stream=stream, live=True) as progress:
        for _ in range(5):
            progress.advance()
    assert "5/?" in stream.getvalue()
