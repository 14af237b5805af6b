"""CLI habits a new user expects (issue 26 item 5): plain help, absolute paths in "wrote:", a progress line without
call and cost figures for a panel that makes no call, and `judge repair` on a run folder named `run`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import app

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "batch"
runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The example batch scored by the rules judge into a folder literally named `run`, with a relative --out."""
    base = tmp_path_factory.mktemp("habits")
    cwd = os.getcwd()
    os.chdir(base)
    try:
        result = runner.invoke(app, ["score", str(EXAMPLES), "--out", "run"])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    return base / "run", result.output


def test_wrote_lists_absolute_paths_even_for_a_relative_out(scored: tuple[Path, str]) -> None:
    run, output = scored
    wrote = next(line for line in output.splitlines() if line.startswith("wrote: "))
    paths = wrote.removeprefix("wrote: ").split(", ")
    assert len(paths) > 5 and all(Path(p).is_absolute() for p in paths), wrote
    assert str(run.resolve() / "scores.jsonl") in paths


def test_a_panel_that_makes_no_call_shows_no_call_rate_or_cost_in_its_progress(scored: tuple[Path, str]) -> None:
    progress = [line for line in scored[1].splitlines() if line.startswith("judging: ")]
    assert progress and progress[-1].endswith("unscored 0"), progress
    assert not any("calls/s" in line or "cost" in line or "retries" in line for line in progress), progress


@pytest.mark.parametrize("args", [["repair", "run"], ["repair", "run", "--json"], ["repair", "run", "run"],
                                  ["repair", "run", "--out", "elsewhere"]])
def test_repair_takes_a_run_folder_named_like_its_run_subcommand(scored: tuple[Path, str], args: list[str]) -> None:
    cwd = os.getcwd()
    os.chdir(scored[0].parent)
    try:
        result = runner.invoke(app, args)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    out = scored[0].parent / "elsewhere" if "--out" in args else scored[0]
    assert (out / "tickets.jsonl").exists()


def test_repair_subcommands_still_win_when_no_folder_has_their_name(tmp_path: Path) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = runner.invoke(app, ["repair", "run"])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 2 and "Missing argument" in result.output  # a usage error (README exit codes)


def test_score_help_shows_no_type_on_plain_flags() -> None:
    result = runner.invoke(app, ["score", "--help"])
    assert result.exit_code == 0
    assert "<bool>" not in result.output and re.search(r"--strict\s+Exit non-zero", result.output), result.output


def test_help_lists_the_choices_of_format_and_engine() -> None:
    help_text = " ".join(runner.invoke(app, ["score", "--help"]).output.split())
    assert "--engine [local|ray]" in help_text and "--format FORMAT" in help_text
    assert "Input format instead of detection per file: canonical, otel," in help_text
    assert "or a plugin's (judge plugins lists them)" in help_text
    assert "--format [openai|anthropic|hf]" in " ".join(runner.invoke(app, ["export", "--help"]).output.split())


def test_the_help_list_of_formats_is_the_registry_of_built_in_formats() -> None:
    from judge.cli.app import BUILTIN_FORMATS
    from judge.importers import FORMATS

    built_in = [name for name, spec in FORMATS.items() if spec.parse.__module__.startswith("judge.importers.")]
    assert list(BUILTIN_FORMATS) == built_in
