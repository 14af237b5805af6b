"""``judge report RUN``: write summary.json, report.md and report.html from a stored run (no judge call)."""

from __future__ import annotations

from pathlib import Path

import typer

from judge.cli.app import ExitCode, app


@app.command("report")
def report(
    run: Path = typer.Argument(..., help="The run directory written by `judge score ... --out RUN`.", file_okay=False),
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
    for name, path in paths.items():
        if name != "report_html":
            typer.echo(str(path))
    typer.echo(str(paths["report_html"]))
