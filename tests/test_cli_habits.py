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
    assert "--engine <local|ray>" in help_text and "--format FORMAT" in help_text
    assert "Input format instead of detection per file: canonical, otel," in help_text
    assert "or a plugin's (judge plugins lists them)" in help_text
    assert "--format <openai|anthropic|hf>" in " ".join(runner.invoke(app, ["export", "--help"]).output.split())


def test_the_help_list_of_formats_is_the_registry_of_built_in_formats() -> None:
    from judge.cli.app import BUILTIN_FORMATS
    from judge.importers import FORMATS

    built_in = [name for name, spec in FORMATS.items() if spec.parse.__module__.startswith("judge.importers.")]
    assert list(BUILTIN_FORMATS) == built_in


# --- --limit N, --sample N --seed S ------------------------------------------------------------------------------


def _items(n: int, rejects_at: tuple[int, ...] = ()) -> list:
    from judge.schema import Reject
    from judge.testing.builders import trajectory

    out: list = []
    for i in range(n):
        if i in rejects_at:
            out.append(Reject(source_file="f", line=i, reason="bad"))
        out.append(trajectory(f"t{i}", []))
    return out


@pytest.mark.parametrize(("limit", "sample", "seed", "expected"), [
    (3, None, 0, ["t0", "t1", "t2"]),
    (20, None, 0, [f"t{i}" for i in range(10)]),
    (None, 20, 0, [f"t{i}" for i in range(10)]),  # a sample larger than the batch: all of it
    (None, 1, 0, None),
    (None, 4, 0, None),
    (None, 4, 7, None),
])
def test_a_selection_keeps_the_first_n_or_a_seeded_sample_in_input_order(limit, sample, seed, expected) -> None:
    from judge.importers.writer import ImportSelection, ImportStats, select_items
    from judge.model import Trajectory

    selection = ImportSelection(limit=limit, sample=sample, seed=seed)
    stats = ImportStats()
    kept = [t.id for t in select_items(_items(10), selection, stats) if isinstance(t, Trajectory)]
    again = [t.id for t in select_items(_items(10), selection, ImportStats()) if isinstance(t, Trajectory)]
    assert kept == again  # the same input and seed: the same selection
    assert kept == sorted(kept, key=lambda tid: int(tid[1:]))  # input order
    if expected is not None:
        assert kept == expected
    else:
        assert len(kept) == sample and stats.selected_from == 10 and stats.read == 10 - sample


def test_a_sample_depends_on_its_seed_and_passes_rejects_through() -> None:
    from judge.importers.writer import ImportSelection, ImportStats, select_items
    from judge.model import Trajectory
    from judge.schema import Reject

    samples = {tuple(t.id for t in select_items(_items(30), ImportSelection(sample=5, seed=seed), ImportStats())
                     if isinstance(t, Trajectory)) for seed in range(5)}
    assert len(samples) > 1
    items = list(select_items(_items(10, rejects_at=(2, 8)), ImportSelection(sample=3), ImportStats()))
    assert sum(isinstance(i, Reject) for i in items) == 2
    items = list(select_items(_items(10, rejects_at=(2, 8)), ImportSelection(limit=3), ImportStats()))
    assert [type(i).__name__ for i in items] == ["Trajectory", "Trajectory", "Reject", "Trajectory"]  # stops at 3


@pytest.mark.parametrize(("limit", "sample"), [(0, None), (None, 0), (2, 3)])
def test_a_selection_refuses_nonsense(limit, sample) -> None:
    from judge.importers.writer import ImportSelection

    with pytest.raises(ValueError, match="--limit|--sample"):
        ImportSelection(limit=limit, sample=sample)


def _ids(run: Path) -> list[str]:
    import json

    return [json.loads(line)["id"] for line in (run / "trajectories.jsonl").read_text().splitlines()]


def test_score_limit_judges_the_first_n_and_records_the_selection(tmp_path: Path) -> None:
    import json

    result = runner.invoke(app, ["score", str(EXAMPLES), "--out", str(tmp_path / "run"), "--limit", "3"])
    assert result.exit_code == 0, result.output
    assert "selected: the first 3 imported trajectories (--limit 3)" in result.output
    assert len(_ids(tmp_path / "run")) == 3
    assert json.loads((tmp_path / "run" / "run.json").read_text())["selection"] == {"limit": 3}
    assert len((tmp_path / "run" / "scores.jsonl").read_text().splitlines()) == 3
    again = runner.invoke(app, ["score", str(EXAMPLES), "--out", str(tmp_path / "run"), "--limit", "3"])
    assert again.exit_code == 0, again.output  # the same selection resumes
    for other in (["--limit", "4"], ["--sample", "3"], []):
        mixed = runner.invoke(app, ["score", str(EXAMPLES), "--out", str(tmp_path / "run"), *other])
        assert mixed.exit_code == 2, mixed.output  # never mixed silently: a usage error naming both selections
        assert "was judged with --limit 3" in mixed.output and "a run keeps one selection" in mixed.output
    assert len(_ids(tmp_path / "run")) == 3


def test_score_sample_is_seeded_and_a_full_run_cannot_be_resumed_as_a_sample(tmp_path: Path) -> None:
    import json

    def sample(out: str, *seed: str) -> list[str]:
        result = runner.invoke(app, ["score", str(EXAMPLES), "--out", str(tmp_path / out), "--sample", "5", *seed, "--json"])
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert document["selection"] == {"sample": 5, "seed": int(seed[1]) if seed else 0}
        assert document["import"]["selected_from"] == 14 and document["import"]["imported"] == 5
        return _ids(tmp_path / out)

    first, second = sample("a", "--seed", "3"), sample("b", "--seed", "3")
    assert first == second and len(first) == 5
    assert "a random sample of 5 of 14 imported trajectories (--sample 5 --seed 3)" in runner.invoke(
        app, ["score", str(EXAMPLES), "--out", str(tmp_path / "a"), "--sample", "5", "--seed", "3"]).output
    assert runner.invoke(app, ["score", str(EXAMPLES), "--out", str(tmp_path / "full")]).exit_code == 0
    resumed = runner.invoke(app, ["score", str(EXAMPLES), "--out", str(tmp_path / "full"), "--sample", "5"])
    assert resumed.exit_code == 2 and "was judged with every trajectory" in resumed.output
    seedless = runner.invoke(app, ["score", str(EXAMPLES), "--out", str(tmp_path / "c"), "--seed", "1"])
    assert seedless.exit_code == 2 and "give --sample N with it" in seedless.output


def test_the_python_api_takes_limit(tmp_path: Path) -> None:
    import judge

    run = judge.score([EXAMPLES], out=tmp_path / "run", limit=2)
    assert len(run.scores_df()) == 2


def _choices_in_help(command: list[str], option: str) -> set[str]:
    text = runner.invoke(app, [*command, "--help"]).output
    found = re.search(rf"{re.escape(option)} <([a-z|-]+)>", text)  # as typer shows an Enum's choices
    assert found, f"{' '.join(command)} --help does not list the choices of {option}:\n{text}"
    return set(found.group(1).split("|"))


def _reasoning_modes() -> set[str]:
    from judge.export import REASONING_MODES

    return {"auto", *(mode for modes in REASONING_MODES.values() for mode in modes)}


# Each option with a fixed set of values lists it in --help, and the list is the one the code checks against.
@pytest.mark.parametrize(("command", "option", "choices"), [
    (["score"], "--engine", lambda: set(__import__("judge.engine", fromlist=["ENGINES"]).ENGINES)),
    (["export"], "--format", lambda: set(__import__("judge.export", fromlist=["EXPORT_FORMATS"]).EXPORT_FORMATS)),
    (["export"], "--reasoning", _reasoning_modes),
    (["export"], "--exclude-category", lambda: set(__import__("judge.schema", fromlist=["CATEGORIES"]).CATEGORIES)),
    (["validate"], "--kind", lambda: set(__import__("judge.importers.labels", fromlist=["LABEL_KINDS"]).LABEL_KINDS)),
    (["compare"], "--pair-by", lambda: set(__import__("judge.compare", fromlist=["PAIR_BY"]).PAIR_BY)),
    (["review"], "--only", lambda: set(__import__("judge.review_flow", fromlist=["ONLY_CHOICES"]).ONLY_CHOICES)),
    (["report"], "--layout", lambda: {"auto", "single", "paged"}),
], ids=lambda value: value if isinstance(value, str) else None)
def test_help_lists_each_fixed_choice_as_the_code_checks_it(command: list[str], option: str, choices) -> None:
    assert _choices_in_help(command, option) == choices()


def test_no_option_shows_a_python_type_for_a_flag_or_a_repeatable_value() -> None:
    for command in (["score"], ["review"], ["export"], ["continue"]):
        options = [line for line in runner.invoke(app, [*command, "--help"]).output.splitlines() if line.startswith("  -")]
        assert options and not [line for line in options if "<list[" in line or "<bool>" in line], (command, options)
