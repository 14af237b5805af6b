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


@app.command("plugins")
def plugins_command() -> None:
    """List the installed trajudge plugins (entry points trajudge.judges, trajudge.importers, trajudge.providers)
    and every judge kind, provider and input format they and trajudge provide.

    Exits 1 when a plugin could not be loaded (its error is shown); TRAJUDGE_LOAD_PLUGINS=dist1,dist2 loads only
    the named distributions (empty: none).
    """
    from judge.cli.app import ExitCode
    from judge.importers import formats
    from judge.judges import judge_kinds
    from judge.plugins import GROUPS, all_plugins
    from judge.providers import provider_names

    found = all_plugins()
    if not found:
        typer.echo(f"no plugins installed (entry-point groups: {', '.join(GROUPS)})")
    for plugin in found:
        status = "loaded" if plugin.error is None else f"NOT LOADED: {plugin.error}"
        typer.echo(f"{plugin.describe()}: {status}")
    typer.echo(f"judge kinds: {', '.join(judge_kinds())}")
    typer.echo(f"LLM providers (judge specs PROVIDER:MODEL): {', '.join(provider_names())}")
    typer.echo(f"input formats: {', '.join(formats())}")
    if any(plugin.error for plugin in found):
        raise typer.Exit(ExitCode.ERROR)
