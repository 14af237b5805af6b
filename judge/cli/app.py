"""The typer application object; command modules attach their commands to it."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="judge",
    help="trajudge: judge, score, repair and report on coding-agent trajectories.\n\n"
    "Example: judge score examples/ --out runs/demo   (offline rules judge, no API key)",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


@app.command("version")
def version() -> None:
    """Print the trajudge version and the data-schema versions it writes."""
    from judge import __version__
    from judge.model import SCHEMA_VERSION
    from judge.store import MIGRATIONS

    typer.echo(f"trajudge {__version__} (trajectory schema {SCHEMA_VERSION}, run-store schema {len(MIGRATIONS)})")
