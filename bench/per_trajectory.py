"""What one trajectory costs in each step after parsing, beside the json floor: CPU microseconds per trajectory.

    python bench/per_trajectory.py RUN_DIR [--count 2000] [--repeat 3] [--input SOURCE.jsonl]

RUN_DIR is a scored run (``judge score ... --judge rules``): its first ``--count`` trajectories are read once
(not timed) with their verdicts, clusters and scores, then each step is timed over all of them, as ``judge
score`` takes one trajectory object through it:

- ``json floor``: ``json.loads`` of the trajectory's line of trajectories.jsonl, or with ``--input FILE`` of the
  source file's line (the floor issue #14 measures against); each step is also given as a multiple of it;
- ``rules judge``: one pass of the ``rules`` judge (analysis, every detector, the efficiency vote);
- ``gate (after judge)``: :func:`judge.gate.release_checks` right after the judge, on the object it read (its
  analysis and findings are reused), as the one-pass ``judge score`` runs it; ``gate (alone)``: the same on a
  fresh copy of the trajectory (analysed again);
- ``cluster + score``: clustering the stored verdicts and the score row (release gate given);
- ``route``: :func:`judge.repair.routing.plan_repair` and the offline tickets (no teacher);
- ``rows``: the JSON lines the run writes for those (repairs, tickets, edits, edited; not the file writes).

CPU time (``time.process_time``) is our own share of a shared machine; ``--repeat N`` keeps each step's best
run. The rules judge's and the gate's analyses are computed afresh in every run (new trajectory copies, the
judge's memos of repeated texts emptied). The loaded trajectories are frozen out of the garbage collector (a
streaming run holds a window of them, not ``--count``), so its passes do not grow with ``--count``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path

from judge.cluster import ClusterConfig, cluster_verdicts
from judge.embed import make_embedder
from judge.gate import release_checks
from judge.judges import make_judge
from judge.model import Trajectory
from judge.repair.routing import TrajectoryRepair, plan_repair
from judge.repair.run import _finish_online
from judge.repair.run import _run_without_io as run_now  # the rules judge never waits either
from judge.repair.tickets import Ticket
from judge.review import score_reviewed
from judge.rules import default_config
from judge.rundir import RunDir, row_json_bytes
from judge.schema import Cluster, ScoreRow, Verdict
from judge.scoring import load_rubric


def best_cpu(step: Callable[[], object], repeat: int, prepare: Callable[[], object] | None = None) -> float:
    """The least CPU seconds of ``repeat`` runs of ``step`` (``prepare`` runs untimed before each)."""
    best = float("inf")
    for _ in range(repeat):
        if prepare is not None:
            prepare()
        started = time.process_time()
        step()
        best = min(best, time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--input", type=Path, help="the floor is json.loads of this file's first lines (the source "
                        "the run imported) instead of trajectories.jsonl's")
    args = parser.parse_args()

    run = RunDir(args.run_dir)
    with run.file("trajectories.jsonl").open("rb") as handle:
        lines = list(islice(handle, args.count))
    count = len(lines)
    originals = [Trajectory.model_validate_json(line) for line in lines]
    ids = {t.id for t in originals}
    verdicts: dict[str, list[Verdict]] = {}
    clusters: dict[str, list[Cluster]] = {}
    scores: dict[str, ScoreRow] = {}
    for verdict in run.verdicts():
        if verdict.trajectory_id in ids:
            verdicts.setdefault(verdict.trajectory_id, []).append(verdict)
    for cluster in run.clusters():
        if cluster.trajectory_id in ids:
            clusters.setdefault(cluster.trajectory_id, []).append(cluster)
    for score in run.scores():
        if score.trajectory_id in ids:
            scores[score.trajectory_id] = score

    # A streaming run holds a window of trajectories, not all: the loaded ones are kept out of the collector's
    # passes, which would otherwise grow with --count.
    gc.collect()
    gc.freeze()
    manifest = run.manifest()
    rubric = load_rubric(None)
    config = ClusterConfig.from_options(manifest.cluster_options())
    embedder = make_embedder(config.embedder, run_dir=run.path)
    judge = make_judge("rules", {})
    trajectories: list[Trajectory] = []
    checks: list[list[str]] = []

    patterns = default_config().patterns

    def fresh() -> None:
        # New objects each run (no analysis from the run before), and the judge's memos of repeated texts start
        # empty, as in a run that reads each trajectory once.
        trajectories[:] = [t.model_copy() for t in originals]
        for name, memo in vars(patterns).items():
            if name.startswith("memo_"):
                memo.clear()

    floor_lines = lines
    if args.input is not None:
        with args.input.open("rb") as handle:
            floor_lines = list(islice(handle, count))

    def floor() -> None:
        for line in floor_lines:
            json.loads(line)

    def judge_all() -> None:
        for trajectory in trajectories:
            run_now(judge(trajectory, 1))

    def gate_all() -> None:
        checks[:] = [release_checks(t) for t in trajectories]

    def judge_then_gate() -> float:
        # As one pass takes each trajectory through: judged, then gated; only the gate is timed.
        fresh()
        checks.clear()
        spent = 0.0
        for trajectory in trajectories:
            run_now(judge(trajectory, 1))
            started = time.process_time()
            checks.append(release_checks(trajectory))
            spent += time.process_time() - started
        return spent

    def cluster_score() -> None:
        for trajectory, failed in zip(trajectories, checks):
            passes = verdicts.get(trajectory.id, [])
            size = manifest.panel_size(len({v.pass_key for v in passes}))
            found = cluster_verdicts(trajectory.id, passes, panel_size=size, config=config, embedder=embedder)
            score_reviewed(trajectory, passes, found, rubric, panel_size=size, failed_checks=failed)

    plans: list[tuple[TrajectoryRepair, list[Ticket]]] = []

    def route() -> None:
        plans.clear()
        for trajectory in trajectories:
            score = scores.get(trajectory.id)
            plan = plan_repair(trajectory, score, clusters.get(trajectory.id, [])) if score is not None else None
            if plan is not None:
                plans.append((plan, run_now(_finish_online(plan, None, None, True))))

    def rows() -> None:  # each row's line as the run's writer makes it (judge.rundir.JsonlWriter)
        for plan, tickets in plans:
            row_json_bytes(plan.row)
            for edit in plan.edits:
                row_json_bytes(edit.log_row())
            if plan.edited is not None and plan.row.route == "offline-edit":
                row_json_bytes(plan.edited)
            for ticket in tickets:
                row_json_bytes(ticket)

    asyncio.set_event_loop(None)  # nothing here needs a loop
    figures = {
        "json floor": best_cpu(floor, args.repeat),
        "rules judge": best_cpu(judge_all, args.repeat, fresh),
        "gate (after judge)": min(judge_then_gate() for _ in range(args.repeat)),
        "gate (alone)": best_cpu(gate_all, args.repeat, fresh),
        "cluster + score": best_cpu(cluster_score, args.repeat),
        "route": best_cpu(route, args.repeat),
        "rows": best_cpu(rows, args.repeat),
    }
    base = figures["json floor"]
    print(f"{count} trajectories of {args.run_dir} (floor: {args.input or 'trajectories.jsonl'}, "
          f"{sum(map(len, floor_lines)) / count / 1000:.1f} kB a line), "
          f"{len(plans)} repairs, best of {args.repeat}; CPU per trajectory:")
    for name, seconds in figures.items():
        print(f"  {name:<20} {seconds / count * 1e6:8.1f} us   {seconds / base:5.2f}x the json floor")
    after = sum(figures[k] for k in ("rules judge", "gate (after judge)", "cluster + score", "route", "rows"))
    print(f"  {'judge..rows':<20} {after / count * 1e6:8.1f} us   {after / base:5.2f}x the json floor")


if __name__ == "__main__":
    main()
