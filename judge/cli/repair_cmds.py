"""``judge repair RUN`` and ``judge repair ingest``: a thin layer over :mod:`judge.repair`."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.core import TyperGroup

from judge.cli.app import ExitCode, app


class _DefaultRunGroup(TyperGroup):
    """``judge repair RUN ...`` means ``judge repair run RUN ...``; named subcommands still work."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


repair_app = typer.Typer(
    cls=_DefaultRunGroup,
    help="Route a scored run's issues to repairs; write continuation tickets and offline edits.\n\n"
    "Examples:\n\n"
    "  judge repair runs/demo                                  (offline: template guidance, no model call)\n\n"
    "  judge repair runs/demo --teacher openai:gpt-4o          (teacher guidance and capability rewrites)\n\n"
    "  judge repair ingest continuations.jsonl --tickets runs/demo/tickets.jsonl --out cont.jsonl",
    no_args_is_help=True,
)
app.add_typer(repair_app, name="repair")


@repair_app.command("run")
def repair_run_command(
    run: Path = typer.Argument(..., help="A scored run directory (judge score ... --out RUN)."),
    out: Path | None = typer.Option(None, "--out", help="Where to write the four files (default: RUN)."),
    teacher: str | None = typer.Option(None, "--teacher", help="Teacher/rewrite model: openai:MODEL, anthropic:MODEL, openai-compatible:MODEL@URL."),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server URL for the teacher."),
    no_control: bool = typer.Option(False, "--no-control", help="Do not add an unguided ticket beside each guided one."),
) -> None:
    """Write repairs.jsonl (routes), tickets.jsonl, edited.jsonl and edits.jsonl; print counts per route."""
    from judge import rundir
    from judge.repair import repair_run
    from judge.rundir import RunDir

    for name in (rundir.TRAJECTORIES, rundir.SCORES):
        if not RunDir(run).has(name):
            raise typer.BadParameter(f"{run / name} does not exist: is {run} a scored run directory?", param_hint="RUN")
    from judge.providers import ProviderError
    from judge.runlock import run_lock

    try:
        with run_lock(out or run, "judge repair"):
            outputs = repair_run(run, out, teacher=teacher, base_url=base_url, control_arm=not no_control)
    except (ValueError, ProviderError) as error:  # a bad row names its file and line; a bad --teacher says why
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(ExitCode.ERROR) from error
    counts = outputs.counts()
    typer.echo(f"{len(outputs.rows)} trajectories with majority issues")
    for route in ("online-guided", "online-regenerate", "rewrite-restart", "environment", "offline-edit", "pending"):
        typer.echo(f"  {route:<18} {counts.get(route, 0)}")
    typer.echo(f"{len(outputs.tickets)} tickets, {len(outputs.edited)} edited trajectories")
    if outputs.usage.total:
        typer.echo(f"teacher tokens: {outputs.usage.input_tokens or 0} in, {outputs.usage.output_tokens or 0} out")
    for path in outputs.paths.values():
        typer.echo(f"wrote {path}")


@repair_app.command("ingest")
def repair_ingest_command(
    files: list[Path] = typer.Argument(..., help="Continuation files in any importable format."),
    out: Path = typer.Option(..., "--out", help="Canonical JSONL to write (ready for judge compare)."),
    tickets: Path | None = typer.Option(None, "--tickets", help="tickets.jsonl, to link records that only carry ticket_id."),
) -> None:
    """Bring continuations back as trajectories linked to their source and branch turn."""
    from judge import rundir
    from judge.repair import ingest_continuations
    from judge.schema import Reject

    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise typer.BadParameter(f"not found: {', '.join(missing)}", param_hint="FILES")
    rejects: list[Reject] = []
    count = rundir.write_jsonl(out, ingest_continuations(files, tickets=tickets, rejects=rejects))
    typer.echo(f"{count} continuations linked, {len(rejects)} rejected; wrote {out}")
    for reject in rejects:
        typer.echo(f"  rejected {reject.location()}: {reject.reason}", err=True)
    if count == 0:
        raise typer.Exit(ExitCode.ERROR)
