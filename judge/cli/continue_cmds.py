"""``judge continue``: run continuation tickets, each arm in its own sandbox (a thin layer over judge.continuation)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import typer

from judge.cli.app import ExitCode, app, examples
from judge.cli.output import Output, json_option


@app.command(
    "continue",
    epilog=examples(
        "judge continue runs/demo --agent scripted:script.yaml --workdir repo --out runs/demo/continuations.jsonl",
        ("judge continue runs/demo --agent scripted:script.yaml --out cont.jsonl --ticket inv-base-build --budget-turns 8",
         "one trajectory's tickets, at most 8 new turns"),
        ("judge continue runs/demo --agent scripted:script.yaml --out cont.jsonl --json", "counts as one JSON document"),
    ),
)
def continue_cmd(
    run: Path = typer.Argument(..., help="A run directory (its tickets.jsonl) or a tickets file."),
    agent_spec: str = typer.Option(..., "--agent", help="The agent: scripted:FILE (fixed turns per ticket, trajectory:arm or arm)."),
    out: Path = typer.Option(..., "--out", help="Continuations (canonical JSONL) for judge repair ingest; the arm log is written beside it."),
    tickets: Path | None = typer.Option(None, "--tickets", help="Tickets file (default: RUN/tickets.jsonl)."),
    only: list[str] = typer.Option([], "--ticket", help="Run only this ticket id or trajectory id (repeatable)."),
    budget_tokens: int | None = typer.Option(None, "--budget-tokens", min=1, help="Input + output tokens an arm may spend."),
    budget_turns: int | None = typer.Option(None, "--budget-turns", min=1, help="New assistant turns an arm may take."),
    workdir: Path | None = typer.Option(None, "--workdir", help="The environment before the prefix, copied for each arm (default: empty)."),
    mapping: Path | None = typer.Option(None, "--mapping", help="YAML mapping for tools the sandbox cannot run (docs/continuation-harness.md; `judge docs continuation-harness`)."),
    timeout: float = typer.Option(120.0, "--timeout", min=0.1, help="Default seconds per tool call."),
    keep_workdirs: bool = typer.Option(False, "--keep-workdirs", help="Leave each arm's working copy in place (paths in the arm log)."),
    as_json: bool = json_option(),
) -> None:
    """Restore each ticket's checkpoint in a fresh working copy and let the agent continue it.

    Not a security boundary: run it inside a container for agents you do not trust.
    """
    from judge.continuation import (
        Budget,
        CommandMapping,
        ContinueOptions,
        Environments,
        EnvironmentSource,
        Limits,
        load_tickets,
        run_tickets,
        write_results,
    )
    from judge.continuation.agent import make_agent

    try:
        agent = make_agent(agent_spec)
        chosen = load_tickets(tickets or run)
        commands = CommandMapping.load(mapping) if mapping else CommandMapping()
    except (ValueError, OSError) as error:  # a bad row or entry names its file and line
        raise typer.BadParameter(str(error)) from error
    if only:
        chosen = [t for t in chosen if t.ticket_id in only or t.trajectory_id in only]
    if not chosen:
        raise typer.BadParameter("no ticket to run")
    if workdir is not None and not workdir.is_dir():
        raise typer.BadParameter(f"{workdir} is not a directory", param_hint="--workdir")
    options = ContinueOptions(budget=Budget(tokens=budget_tokens, turns=budget_turns), limits=Limits(timeout_s=timeout),
                              mapping=commands, environments=Environments(default=EnvironmentSource(workdir=workdir)),
                              keep_workdirs=keep_workdirs)
    results = asyncio.run(run_tickets(chosen, agent, options))
    written, log = write_results(results, out)
    counts = Counter(r.stop.reason for r in results)
    output = Output(as_json)
    output.line(f"{len(results)} tickets: " + ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items())))
    for result in results:
        if not result.finished:
            output.line(f"  {result.ticket.ticket_id}: {result.stop.reason}: {result.stop.detail[:200]}")
    output.line(f"wrote {written} continuations to {out} (next: judge repair ingest {out} --tickets ...); arm log: {log}")
    output.document({"tickets": len(results), "stops": dict(sorted(counts.items())), "continuations": written,
                     "out": out, "arm_log": log,
                     "unfinished": [{"ticket_id": r.ticket.ticket_id, "reason": r.stop.reason, "detail": r.stop.detail}
                                    for r in results if not r.finished]})
    if written == 0:
        raise typer.Exit(ExitCode.ERROR)
