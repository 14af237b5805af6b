"""``judge report RUN``: write summary.json, report.md and report.html from a stored run (no judge call)."""

from __future__ import annotations

from pathlib import Path

import typer

from judge.cli.app import ExitCode, app, examples
from judge.cli.output import Output, json_option


@app.command(
    "report",
    epilog=examples(
        ("judge report runs/example", "prints the paths, report.html last"),
        ("judge report runs/example --json", "the paths as one JSON document"),
    ),
)
def report(
    run: Path = typer.Argument(..., help="The run directory written by `judge score ... --out RUN`.", file_okay=False),
    as_json: bool = json_option(),
) -> None:
    """Write summary.json, report.md and report.html (with the trajectory viewer) for RUN.

    Reads the run directory only: no judge is called and nothing is fetched. Prints the paths it wrote,
    report.html last.
    """
    from judge.report import build_report
    from judge.runlock import RunLocked, run_lock

    if not run.is_dir():
        typer.echo(f"error: run directory not found: {run}", err=True)
        raise typer.Exit(ExitCode.ERROR)
    try:
        with run_lock(run, "judge report"):
            paths = build_report(run)
    except RunLocked:
        raise
    except (OSError, ValueError, RuntimeError) as error:
        typer.echo(f"error: cannot report on {run}: {error}", err=True)
        raise typer.Exit(ExitCode.ERROR) from error
    output = Output(as_json)
    for name, path in paths.items():
        if name != "report_html":
            output.line(str(path))
    output.line(str(paths["report_html"]))
    output.document({"run": run, "files": paths})
