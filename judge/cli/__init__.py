"""Command-line interface: a thin layer over library functions. Each command lives in its own module."""

from __future__ import annotations

from judge.cli.app import app

# Importing a command module attaches its commands to ``app``.
from judge.cli import (  # noqa: E402,F401
    analyse_cmds,
    cluster_cmds,
    ingest_cmds,
    repair_cmds,
    report_cmds,
    score_cmds,
)


def main() -> None:
    """Console-script entry point (``judge``)."""
    app()


__all__ = ["app", "main"]
