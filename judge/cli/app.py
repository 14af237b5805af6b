"""The typer application object; command modules attach their commands to it.

Exit codes are the same for every command (README, "Failure modes"):

====  ===================================================================================================
0     done; for ``judge score`` and ``judge rescore``: every planned pass scored
1     nothing (or not everything) done because of the command line, the input or the machine: a bad option
      or spec, a missing file, nothing importable, ``--strict`` with rejects, the run locked by another
      process, a full disk. Fix the cause and run the same command again (a run resumes from its store).
2     the run finished, but some passes are unscored (their reasons are listed); a rerun retries the ones
      that can succeed (provider and connection errors, budget stops) and pays for nothing else
3     no pass could be scored (every pass unscored, or a judge failed its preflight check), or ``--max-cost``
      stopped the run
====  ===================================================================================================

click reports usage errors with 2; :class:`JudgeGroup` maps them to 1 so that 2 keeps one meaning.
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterable
from enum import IntEnum
from typing import Any

import typer
from typer.core import TyperGroup

from judge.rundir import ForeignStore
from judge.runlock import RunLocked

# typer ships its own copy of click: its UsageError (the base of every parse or parameter error) is found
# through typer's public BadParameter rather than imported from the click package.
UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class ExitCode(IntEnum):
    """The exit codes every command shares (see the module docstring)."""

    OK = 0
    ERROR = 1
    SOME_UNSCORED = 2
    NONE_SCORED = 3


def outcome_code(statuses: Iterable[tuple[str, str | None]]) -> ExitCode:
    """The exit code of a judged run from its passes' ``(status, reason)`` (pure)."""
    passes = list(statuses)
    if not passes:
        return ExitCode.OK
    if any(reason == "budget_exceeded" for _, reason in passes) or not any(status == "ok" for status, _ in passes):
        return ExitCode.NONE_SCORED
    if any(status != "ok" for status, _ in passes):
        return ExitCode.SOME_UNSCORED
    return ExitCode.OK


def describe_os_error(error: OSError | sqlite3.Error) -> str:
    """One line for a failure of the machine (disk full, permission, a path that is a file)."""
    if isinstance(error, sqlite3.Error):
        text = f"the run store failed: {error}"
        full = "full" in str(error).lower()
    else:
        where = f": {error.filename}" if error.filename else ""
        text = f"{error.strerror or error}{where}"
        full = error.errno in (errno.ENOSPC, errno.EDQUOT)
    if full:
        text += " - free some space, then run the same command again: a run resumes from its store (answered calls are kept)"
    return "error: " + text


class JudgeGroup(TyperGroup):
    """The ``judge`` command group: one exit-code table, and one clear line instead of a traceback when the
    machine fails (a full disk, an unwritable path)."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except UsageError as error:
            error.exit_code = ExitCode.ERROR  # type: ignore[attr-defined]  # UsageError is found at run time (above)
            raise

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as error:
            error.exit_code = ExitCode.ERROR  # type: ignore[attr-defined]  # UsageError is found at run time (above)
            raise
        except (RunLocked, ForeignStore) as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(ExitCode.ERROR) from None
        except (OSError, sqlite3.OperationalError, sqlite3.DatabaseError) as error:
            if isinstance(error, OSError) and error.errno == errno.EPIPE:
                raise  # a closed pipe (`judge show ... | head`): typer handles it quietly
            typer.echo(describe_os_error(error), err=True)
            raise typer.Exit(ExitCode.ERROR) from None


def examples(*items: str | tuple[str, str]) -> str:
    """A command's "Examples:" help section (its epilog): one paragraph per example, each a command line and an
    optional note shown after it in parentheses. tests/test_cli_help.py parses every example of every command."""
    lines = [f"  {item}" if isinstance(item, str) else f"  {item[0]}   ({item[1]})" for item in items]
    return "Examples:\n\n" + "\n\n".join(lines)


app = typer.Typer(
    name="judge",
    cls=JudgeGroup,
    help="trajudge: judge, score, repair and report on coding-agent trajectories.\n\n"
    "Start here:  judge score examples/batch --out runs/example   (offline rules judge, no API key)\n\n"
    "Exit codes: 0 ok; 1 usage, input or machine error; 2 some passes unscored; 3 no pass scored or budget stop.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
