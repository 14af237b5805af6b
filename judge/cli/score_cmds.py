"""``judge score``: import -> judge panel -> cluster + score -> repair routes and reports (a thin layer).

The work is done by :func:`judge.api.score_async`, the function the Python API's ``judge.score`` runs too
(one code path): this module parses the flags, prints each stage's lines and maps the outcome to an exit code.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from judge import rundir
from judge.cli.app import ExitCode, app, outcome_code

if TYPE_CHECKING:
    from judge.importers.writer import ImportStats
    from judge.panel import PanelResult


@app.command(
    "score",
    epilog="Examples:\n\n"
    "  judge score examples/batch --out runs/example             (offline rules judge)\n\n"
    "  judge score runs.jsonl --out runs/a --judge openai:gpt-4o  (3 passes of one model)\n\n"
    "  judge score runs.jsonl --out runs/b --judge openai:gpt-4o --judge anthropic:claude-sonnet-4-5 --judge rules\n\n"
    "  judge score runs.jsonl --out runs/c --judge openai-compatible:qwen2.5@http://localhost:8000/v1\n\n"
    "  judge score runs.jsonl --out runs/d --judge replay:runs/a  (re-score recorded verdicts, no calls)",
)
def score_command(
    inputs: list[Path] = typer.Argument(..., help="Trajectory files or folders (any supported format)."),
    out: Path = typer.Option(..., "--out", help="Run directory to write (resumes if it exists)."),
    judge: list[str] | None = typer.Option(None, "--judge", help="Judge spec, repeatable: rules, openai:MODEL, anthropic:MODEL, openai-compatible:MODEL@URL, replay:PATH, or a plugin's (judge plugins lists them)."),
    passes: int | None = typer.Option(None, "--passes", min=1, help="Passes per judge (default 3 for one LLM judge; a deterministic judge runs once)."),
    config: Path | None = typer.Option(None, "--config", help="Panel config file (YAML/JSON); flags override it."),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server URL (vLLM, Ollama, llama.cpp) for openai:/openai-compatible: judges; Anthropic reads ANTHROPIC_BASE_URL."),
    concurrency: int | None = typer.Option(None, "--concurrency", min=1, help="Judge calls in flight at once (default 8)."),
    rpm: float | None = typer.Option(None, "--rpm", help="Requests per minute per model."),
    tpm: float | None = typer.Option(None, "--tpm", help="Tokens per minute per model."),
    timeout: float | None = typer.Option(None, "--timeout", help="Per-call timeout in seconds (default 120)."),
    max_cost: float | None = typer.Option(None, "--max-cost", help="Stop calling at this many USD; the rest is unscored budget_exceeded."),
    temperature: str | None = typer.Option(None, "--temperature", help="Judge sampling temperature (default 0.7), or 'none' to leave it out of requests (the default for o1/o3/gpt-5 style reasoning models, which reject it; passes then differ by seed and separate calls)."),
    fmt: str | None = typer.Option(None, "--format", help="Input format (default: detected per file)."),
    rubric: Path | None = typer.Option(None, "--rubric", help="Rubric YAML (default rubrics/ default)."),
    embedder: str | None = typer.Option(None, "--embedder", help="Embedder for clustering issues."),
    strict: bool = typer.Option(False, "--strict", help="Exit non-zero if any input record was rejected."),
    no_preflight: bool = typer.Option(False, "--no-preflight", help="Skip the check that each LLM judge answers one tiny request before the batch."),
) -> None:
    """Judge, score and report on a batch of trajectories; writes the run directory OUT.

    API keys are read from OPENAI_API_KEY / ANTHROPIC_API_KEY only. Without --judge the offline rules judge
    runs (no key, no cost). A killed run resumes from OUT without paying twice; --max-cost holds for the
    whole run (a resumed run keeps the recorded cap). One process at a time per OUT.

    Exit codes: 0 every pass scored; 1 usage, input or machine error; 2 some passes unscored;
    3 no pass scored, a judge failed its preflight check, or the budget cap stopped the run.
    """
    from judge.api import NothingImported, SetupError, score_async
    from judge.cli.ingest_cmds import import_notes
    from judge.panel import PreflightFailed, summary_lines

    def imported(stats: ImportStats) -> None:
        typer.echo(f"read {stats.read} records: imported {stats.imported}, rejected {stats.rejected}"
                   + (f" (see {out / rundir.REJECTS})" if stats.rejected or stats.skipped else ""))
        for line in import_notes(stats):
            typer.echo(line)

    def judged(result: PanelResult) -> None:
        for line in summary_lines(result):
            typer.echo(line)

    try:
        run = asyncio.run(score_async(
            inputs, out, judges=judge, passes=passes, config=config, base_url=base_url, concurrency=concurrency,
            rpm=rpm, tpm=tpm, timeout=timeout, max_cost=max_cost, temperature=temperature, format=fmt,
            rubric=rubric, embedder=embedder, preflight=not no_preflight, progress=True,
            on_imported=imported, on_judged=judged))
    except SetupError as error:
        if error.argument == "out":  # not a usage problem: one plain line (exit 1)
            typer.echo(f"error: --out {error}", err=True)
            raise typer.Exit(ExitCode.ERROR) from None
        raise typer.BadParameter(str(error)) from error
    except NothingImported:
        typer.echo("nothing could be imported; stopping", err=True)
        raise typer.Exit(code=ExitCode.ERROR) from None
    except PreflightFailed as error:
        for problem in error.problems:
            typer.echo(f"preflight: {problem}", err=True)
        typer.echo("the batch was not started: nothing was judged. Fix the judge (or skip this check with "
                   "--no-preflight), then run the same command again.", err=True)
        raise typer.Exit(code=ExitCode.NONE_SCORED) from None
    assert run.invocation is not None and run.invocation.imported is not None and run.invocation.panel is not None
    stats, result, written = run.invocation.imported, run.invocation.panel, run.invocation.written
    typer.echo(score_distribution(run.invocation.scores))
    paths = [out / name for name in (rundir.TRAJECTORIES, rundir.VERDICTS, rundir.CLUSTERS, rundir.SCORES,
                                     rundir.REJECTS, rundir.MANIFEST)]
    paths += [Path(p) for p in written.values()]
    typer.echo("wrote: " + ", ".join(str(p) for p in dict.fromkeys(paths) if p.exists()))
    code = outcome_code((v.status, v.reason) for v in result.verdicts)
    if strict and stats.rejected:
        typer.echo("--strict: some input records were rejected", err=True)
        code = ExitCode.ERROR
    elif code == ExitCode.NONE_SCORED:
        stopped = result.unscored.get("budget_exceeded")
        typer.echo("the budget cap stopped the run (exit 3)" if stopped else "no pass could be scored (exit 3)", err=True)
    elif code == ExitCode.SOME_UNSCORED:
        typer.echo("some passes are unscored (exit 2): their reasons are above and in the report", err=True)
    report = Path(written.get("report_html") or out / rundir.REPORT_HTML).resolve()
    typer.echo(f"report: {report}")  # always the last line: scripts and people look for it there
    if code:
        raise typer.Exit(code=code)


def score_distribution(scores: list[Any]) -> str:
    """One line: how many trajectories got each score, and how many got none."""
    counts = Counter(row.score for row in scores)
    parts = [f"{score}: {counts[score]}" for score in sorted(s for s in counts if s is not None)]
    if counts.get(None):
        parts.append(f"no score: {counts[None]}")
    released = sum(1 for row in scores if row.release)
    return f"scores ({len(scores)} trajectories): {', '.join(parts) or 'none'}; released {released}"
