"""``judge repair RUN``: route every scored trajectory of a run, write tickets and offline edits.

Reads ``trajectories.jsonl``, ``scores.jsonl`` and ``clusters.jsonl`` of a run directory; writes
``repairs.jsonl`` (one row per trajectory with majority issues), ``tickets.jsonl`` (continuations to run,
docs/continuation-tickets.md), ``edited.jsonl`` (offline-edited trajectories, re-scorable with
``judge score``) and ``edits.jsonl`` (the edit log: dependency checks, validators, diff). With no teacher it
makes no model call (the embedding model for text references loads once, only if an edit is analysed).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from judge import rundir
from judge.model import Trajectory, Usage
from judge.providers import redact
from judge.repair.prompting import Provider, make_provider_from_spec
from judge.repair.rewrite import rewrite_query
from judge.repair.routing import TrajectoryRepair, plan_repair, unfixable
from judge.repair.tickets import (
    TEACHER_PROMPT,
    Ticket,
    build_tickets,
    evidence_for,
    teacher_guidance,
    template_guidance,
)
from judge.rundir import RunDir
from judge.schema import Cluster, RepairRow, ScoreRow


@dataclass
class RepairOutputs:
    """What one repair run produced, and where it wrote it."""

    rows: list[RepairRow] = field(default_factory=list)
    tickets: list[Ticket] = field(default_factory=list)
    edited: list[Trajectory] = field(default_factory=list)
    edit_log: list[dict] = field(default_factory=list)
    paths: dict[str, Path] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)

    def counts(self) -> dict[str, int]:
        return dict(Counter(r.route for r in self.rows))


async def _finish_online(plan: TrajectoryRepair, provider: Provider | None, teacher: str | None, control_arm: bool) -> list[Ticket]:
    """Guidance (teacher or template) or a checked rewrite for the driver; the row and tickets are updated."""
    row, driver, trajectory = plan.row, plan.driver, plan.trajectory
    if driver is None or row.route not in ("online-guided", "online-regenerate", "rewrite-restart", "environment"):
        return []
    evidence = evidence_for(trajectory, driver.issue, driver.cluster)
    # A capability restart starts fresh from the (checked) rewrite: no advice about the failed run.
    guidance = None if row.route == "rewrite-restart" else template_guidance(trajectory, driver.issue, evidence)
    source = "template" if guidance else None
    usage = Usage()
    agent_query, check = None, None
    if provider is not None and row.route in ("online-guided", "online-regenerate"):
        result = await teacher_guidance(provider, trajectory, driver.issue, evidence, row.checkpoint_turn or 0)
        usage = result.usage
        if result.parsed is not None:
            guidance, source = result.parsed["guidance"].strip(), f"teacher:{teacher} ({TEACHER_PROMPT})"
        else:
            source = f"template (teacher failed: {result.error})"
    if row.route == "rewrite-restart":
        if provider is None:
            row.extra["rewrite"] = "needs-rewrite: no rewrite model configured"
        else:
            outcome = await rewrite_query(provider, trajectory, driver.issue, evidence)
            usage = outcome.usage
            check = outcome.check_summary()
            row.extra["rewrite_check"] = check
            if not outcome.passed:
                # Only a rewrite that keeps every explicit requirement earns a restart.
                row.route, row.reason = "pending", f"capability limit, but no rewrite passed the requirement check: {outcome.reason}"
                row.extra["teacher_usage"] = usage.model_dump()
                return []
            agent_query = outcome.rewrite
    row.guidance, row.extra["guidance_source"] = guidance, source
    row.extra["teacher_usage"] = usage.model_dump()
    return build_tickets(trajectory, row, driver.issue, driver.cluster, guidance=guidance, guidance_source=source,
                         usage=usage, agent_query=agent_query, rewrite_check=check, control_arm=control_arm)


def repair_run(
    run_dir: Path,
    out_dir: Path | None = None,
    *,
    teacher: str | None = None,
    base_url: str | None = None,
    provider: Provider | None = None,
    control_arm: bool = True,
    concurrency: int = 4,
) -> RepairOutputs:
    """Route, ticket and edit every trajectory of a scored run; write the four files to ``out_dir`` (default RUN).

    ``teacher`` is a provider spec (``openai:MODEL``...) for guidance and rewrites; ``provider`` passes a
    ready provider object instead (tests). ``control_arm`` adds an unguided ticket beside each guided one.
    """
    run = RunDir(run_dir)
    out = RunDir(out_dir) if out_dir else run
    if teacher and provider is None:
        provider = make_provider_from_spec(teacher, base_url)  # fail fast (a missing key) before any work
    scores = run.scores_by_trajectory()
    clusters = run.clusters_by_trajectory()
    outputs = RepairOutputs()
    plans: list[TrajectoryRepair] = []
    for trajectory in run.trajectories():
        score = scores.get(trajectory.id)
        if score is None:
            continue
        try:
            plan = plan_repair(trajectory, score, clusters.get(trajectory.id, []))
        except Exception as error:  # noqa: BLE001 - one bad trajectory must not stop the batch; it is reported
            outputs.rows.append(unfixable(trajectory.id, error))
            continue
        if plan is None:
            continue
        plans.append(plan)
        outputs.rows.append(plan.row)
        outputs.edit_log.extend(e.log_row() for e in plan.edits)
        if plan.edited is not None and plan.row.route == "offline-edit":
            outputs.edited.append(plan.edited)
    label = redact(teacher or getattr(provider, "spec", None))  # recorded in tickets: no URL credential
    outputs.tickets = asyncio.run(_all_tickets(plans, provider, label, control_arm, concurrency))
    for row in outputs.rows:
        used = row.extra.get("teacher_usage")
        if used:
            outputs.usage = outputs.usage + Usage(**used)
    out.path.mkdir(parents=True, exist_ok=True)
    for name, rows in ((rundir.REPAIRS, outputs.rows), (rundir.TICKETS, outputs.tickets), (rundir.EDITED, outputs.edited),
                       (rundir.EDITS, outputs.edit_log)):
        outputs.paths[name] = out.write_rows(name, rows)
    return outputs


async def _all_tickets(plans: Sequence[TrajectoryRepair], provider: Provider | None, teacher: str | None,
                       control_arm: bool, concurrency: int) -> list[Ticket]:
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(plan: TrajectoryRepair) -> list[Ticket]:
        async with gate:
            return await _finish_online(plan, provider, teacher, control_arm)

    try:
        batches = await asyncio.gather(*(one(p) for p in plans))
    finally:
        close = getattr(provider, "aclose", None)
        if close is not None:
            await close()
    return [t for batch in batches for t in batch]


def route_run(run_dir: Path, *, teacher: str | None = None) -> list[RepairRow]:
    """Route a scored run and write repairs.jsonl (plus tickets, edited and edits) into it.

    Offline and model-free when ``teacher`` is None (what ``judge score`` calls at its end).
    """
    return repair_run(Path(run_dir), teacher=teacher).rows


def make_tickets(
    trajectory: Trajectory,
    score_row: ScoreRow,
    clusters: list[Cluster] | None = None,
    *,
    provider: Provider | None = None,
    teacher: str | None = None,
    control_arm: bool = True,
) -> list[Ticket]:
    """The continuation tickets of one trajectory (empty when its repair is offline or pending)."""
    plan = plan_repair(trajectory, score_row, clusters)
    if plan is None:
        return []
    return asyncio.run(_finish_online(plan, provider, teacher, control_arm))
