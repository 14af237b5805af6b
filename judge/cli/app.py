"""The typer application object; command modules attach their commands to it."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="judge",
    help="trajudge: judge, score, repair and report on coding-agent trajectories.\n\n"
    "Start here:  judge score examples/batch --out runs/example   (offline rules judge, no API key)",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

