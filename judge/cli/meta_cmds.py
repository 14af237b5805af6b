"""Commands about trajudge itself."""

from __future__ import annotations

import typer

from judge.cli.app import app


@app.command("version")
def version() -> None:
    """Print the trajudge version and the data-schema versions it writes."""
    from judge import __version__
    from judge.model import SCHEMA_VERSION
    from judge.store import MIGRATIONS

    typer.echo(f"trajudge {__version__} (trajectory schema {SCHEMA_VERSION}, run-store schema {len(MIGRATIONS)})")
