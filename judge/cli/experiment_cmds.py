"""``judge experiment``: fresh rollouts of the same queries under several arms, judged against the original query and
compared (a thin layer over judge.experiment, judge.continuation and judge.compare)."""


from pathlib import Path
from typing import Any

import typer

from judge.cli.app import ExitCode, app, examples
from judge.cli.output import Output, json_option


@app.command(
    "experiment",
    epilog=examples(
        ("judge experiment queries.jsonl --arms examples/experiments/spec-placement.yaml --agent openai:gpt-4.1 "
         "--judge openai:gpt-4.1 --pairs 10 --checks checks.yaml --budget-turns 30 --max-cost 20 --out runs/exp",
         "spec placement, 10 queries"),
        ("judge experiment examples/experiments/demo/queries.yaml --arms examples/experiments/demo/arms.yaml "
         "--agent openai-compatible:scripted-agent@http://127.0.0.1:8768/v1 --judge rules "
         "--checks examples/experiments/demo/checks.yaml --out runs/exp-demo", "offline: the scripted agent server, the rules judge (README)"),
        ("judge experiment queries.jsonl --arms examples/experiments/corrected-repaired.yaml --agent openai:gpt-4.1 "
         "--teacher openai:gpt-4o --judge openai:gpt-4.1 --pairs 100 --seed 7 --checks checks.yaml --out runs/exp",
         "a seeded sample of 100 queries; runtime correction and post-hoc repair"),
    ),
)
def experiment_cmd(
    queries_path: Path = typer.Argument(..., metavar="QUERIES", help="Queries: JSONL, or a YAML/JSON list; each has id, "
                                        "query, optional spec and workdir (relative to the file)."),
    arms_path: Path = typer.Option(..., "--arms", help="The arms (YAML; examples/experiments/ and docs/experiments.md; `judge docs experiments`)."),
    agent_spec: str = typer.Option(..., "--agent", help="The agent: openai:MODEL, anthropic:MODEL, "
                                   "openai-compatible:MODEL@URL (any registered provider), or scripted:FILE."),
    judges: list[str] = typer.Option(..., "--judge", metavar="SPEC", help="Judge spec(s) of the panel that judges every rollout against "
                                     "its original query (rules, openai:MODEL, ...; repeatable, as judge score's)."),
    passes: int | None = typer.Option(None, "--passes", min=1, help="Passes per LLM judge (as judge score's)."),
    out: Path = typer.Option(..., "--out", help="Directory for the rollouts, the judging run and experiment.{json,md,html}."),
    checks_path: Path | None = typer.Option(None, "--checks", help="Acceptance checks per query id (YAML: ID or '*' -> "
                                            "commands), run in each arm's final copy: retained functionality."),
    pairs: int | None = typer.Option(None, "--pairs", min=1, help="Run the first N queries of the file (all by default)."),
    seed: int | None = typer.Option(None, "--seed", help="With --pairs: a random sample of N queries drawn with this seed "
                                    "instead of the first N (also the paired bootstrap's seed)."),
    teacher: str | None = typer.Option(None, "--teacher", help="The teacher of arms with correct: true and of post-hoc "
                                       "repair: template (no model) or a model spec."),
    workdir: Path | None = typer.Option(None, "--workdir", help="The repository each rollout starts from (a query's own "
                                        "workdir wins; default: empty)."),
    mapping: Path | None = typer.Option(None, "--mapping", help="YAML mapping for tools the sandbox cannot run (as judge continue's)."),
    budget_tokens: int | None = typer.Option(None, "--budget-tokens", min=1, help="Input + output tokens a rollout may spend."),
    budget_turns: int | None = typer.Option(None, "--budget-turns", min=1, help="Assistant turns a rollout may take."),
    max_cost: float | None = typer.Option(None, "--max-cost", min=0.0, help="One spending cap in USD over everything the experiment "
                                          "pays for: agents, correction and repair teachers, the judging and each post-hoc "
                                          "round's, failed attempts included, over every run of the command (recorded in "
                                          "OUT/budget.json: a rerun without it keeps it)."),
    sandbox: str = typer.Option("auto", "--sandbox", help="How tool calls and checks run: bwrap, none or auto (as judge continue's)."),
    concurrency: int = typer.Option(1, "--concurrency", min=1, help="Rollouts run at a time (per arm)."),
    tool_timeout: float = typer.Option(120.0, "--tool-timeout", min=0.1, help="Seconds per tool call and per check."),
    max_corrections: int = typer.Option(2, "--max-corrections", min=0, help="Rewinds a rollout may make (arms with correct: true)."),
    timeout: float | None = typer.Option(None, "--timeout", help="Per model call timeout in seconds (default 120)."),
    as_json: bool = json_option(),
) -> None:
    """Run every query once per arm, each rollout fresh in its own copy, judge each against its ORIGINAL query (a spec
    never enters the judge's input), run the acceptance checks in its final copy, and compare every arm with the
    baseline by query.

    Each rollout is a fresh-rollout ticket run by judge continue's harness (ledger, budgets, sandbox, runtime
    correction, cost). Failed and budget-stopped rollouts stay in every denominator. Run the same command again after
    a kill: finished rollouts are kept, answered calls are not paid again. Writes OUT/experiment.{json,md,html},
    OUT/compare/ (judge compare by query) and OUT/run/ (the judging run). Exit 3 when --max-cost stopped anything (a
    rollout, the judging, a post-hoc round): the message names what.
    """
    import asyncio
    import shutil

    from judge import api, experiment, rundir
    from judge.cli.continue_cmds import _run_scripted, _run_with_model
    from judge.compare import compare_records, load_records, make_scorer, write_outputs
    from judge.continuation import Budget, CommandMapping, ContinueOptions, Environments, EnvironmentSource, Limits
    from judge.continuation.confine import SANDBOX_CHOICES, SandboxUnavailable, choose
    from judge.continuation.ledger import RESUMABLE, append_rows, complete_rows
    from judge.continuation.model_agent import ProviderAgent, make_agent
    from judge.model import Trajectory
    from judge.pricing import fmt_usd
    from judge.providers import ProviderError
    from judge.schema import Reject

    if sandbox not in SANDBOX_CHOICES:
        raise typer.BadParameter(f"{sandbox!r}: one of {', '.join(SANDBOX_CHOICES)}", param_hint="--sandbox")
    if seed is not None and pairs is None:
        raise typer.BadParameter("--seed draws the sample of --pairs N: give --pairs", param_hint="--seed")
    rejects: list[Reject] = []
    try:
        arms = experiment.load_arms(arms_path)
        every_query = experiment.load_queries(queries_path, rejects)
        checks = experiment.load_checks(checks_path) if checks_path else {}
        commands = CommandMapping.load(mapping) if mapping else CommandMapping()
    except (ValueError, OSError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(ExitCode.USAGE) from None
    output = Output(as_json)
    for bad in rejects:
        output.line(f"  rejected {bad.location()}: {bad.reason}", err=True)
    queries = experiment.choose_queries(every_query, pairs, seed)
    if not queries:
        typer.echo(f"error: {queries_path}: no usable query", err=True)
        raise typer.Exit(ExitCode.ERROR)
    needs_teacher = [a.name for a in arms.arms if a.correct or a.posthoc_rounds]
    if needs_teacher and teacher is None:
        raise typer.BadParameter(f"arms {', '.join(needs_teacher)} ({arms.path}) correct or repair: give --teacher "
                                 "(template, or a model spec)", param_hint="--teacher")
    missing = sorted({q.id for q in queries if q.spec is None} if any(a.spec != "none" for a in arms.arms) else set())
    if missing:
        output.line(f"note: {len(missing)} queries have no spec ({', '.join(missing[:5])}{'...' if len(missing) > 5 else ''}): "
                    "their spec arms add nothing", err=True)
    if workdir is not None and not workdir.is_dir():
        raise typer.BadParameter(f"{workdir} is not a directory", param_hint="--workdir")
    try:
        isolation, warning = choose(sandbox)  # one of SANDBOX_CHOICES, checked above
    except SandboxUnavailable as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(ExitCode.ERROR) from None
    if warning:
        output.line(f"warning: {warning}", err=True)
    out.mkdir(parents=True, exist_ok=True)
    # Kept beside the report, not only printed: nothing a user gave is dropped without a trace. Written on every
    # run, so a rerun with the file fixed leaves no stale rows. (OUT/rejects.jsonl is the judging run's own.)
    rundir.write_jsonl(out / experiment.REJECTED_QUERIES, rejects)
    try:
        budget = experiment.ExperimentBudget.open(out, max_cost)
    except ValueError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(ExitCode.ERROR) from None
    capped: list[str] = []  # what the one --max-cost stopped, in words
    limits = Limits(timeout_s=tool_timeout)
    confinement = commands.confinement(isolation)
    checks_file = out / experiment.CHECKS_FILE
    done_checks = {(r["arm"], r["query_id"]): r for r in complete_rows(checks_file)}
    by_arm: dict[str, dict[str, dict[str, Any]]] = {}
    finals: dict[str, dict[str, dict[str, Any]]] = {}  # arm -> query id -> the record the arm ends with
    spent: list[dict[str, Any]] = []

    def run_arm_tickets(arm: Any, tickets: list[Any], arm_out: Path, environments: Any) -> dict[str, dict[str, Any]]:
        """Run tickets through judge continue's harness into ``arm_out``; each ticket id's arm log row."""
        options = ContinueOptions(budget=Budget(tokens=budget_tokens, turns=budget_turns), limits=limits, mapping=commands,
                                  environments=environments, keep_workdirs=True, concurrency=concurrency,
                                  sandbox=isolation)
        correction = (teacher, ("code", "argument"), max_corrections) if arm.correct and teacher else None
        arm_out.parent.mkdir(parents=True, exist_ok=True)
        try:
            agent = make_agent(agent_spec, timeout_s=timeout)
        except (ValueError, OSError, ProviderError) as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(ExitCode.USAGE) from None
        if isinstance(agent, ProviderAgent):
            kept, results, money = _run_with_model(out, agent, tickets, options, arm_out, retry_unknown=False,
                                                   max_cost=budget.cap_for(out), rpm=None, tpm=None, timeout=timeout,
                                                   correction=correction)
            budget.note(out)
            spent.append({"arm": arm.name, "out": str(arm_out), **{k: v for k, v in money.items() if k != "line"}})
        else:
            kept, results = _run_scripted(out, agent, tickets, options, arm_out, False, correction=correction,
                                          max_cost=budget.cap_for(out), timeout=timeout)
        budget.note(out)
        return {row["ticket_id"]: row for row in kept + [r.log_row() for r in results]}

    def judge_run(rows: list[Any], where: Path, what: str) -> Path:
        """Judge ``rows`` (judged views) into ``where/run`` under the experiment's budget; the run directory. ``what``
        names the judging when the cap stops it."""
        judged_file = where / experiment.JUDGED_FILE
        rundir.write_jsonl(judged_file, rows)
        run_dir = where / "run"
        output.line(f"judging {len(rows)} rollouts into {run_dir} (--judge {' '.join(judges)})")
        try:
            scored = api.score([judged_file], run_dir, judges=judges, passes=passes, max_cost=budget.cap_for(run_dir),
                               timeout=timeout)
        except (api.SetupError, api.NothingImported) as error:
            typer.echo(f"error: {error}", err=True)
            raise typer.Exit(ExitCode.ERROR) from None
        finally:
            if (run_dir / rundir.STORE).exists():
                budget.note(run_dir)
        unpaid = sum(1 for v in scored.verdicts() if v.reason == "budget_exceeded")
        if unpaid:
            capped.append(f"{what}: {unpaid} judge passes unscored budget_exceeded ({run_dir})")
        return run_dir

    def copy_of(log: dict[str, Any]) -> Path | None:
        kept_at = (log.get("environment") or {}).get("kept_at")
        return Path(kept_at).parent if kept_at else None

    def drop_copy(log: dict[str, Any]) -> None:
        """Remove a rollout's kept copy once nothing needs it (a rerun resumes only RESUMABLE stops in theirs)."""
        where = copy_of(log)
        if where is not None and log.get("stop_reason") not in RESUMABLE:
            shutil.rmtree(where, ignore_errors=True)

    def posthoc_round(arm: Any, number: int) -> None:
        """Judge the arm's current results, route them (judge repair), continue each flagged one (its guided ticket,
        the conversation the agent had restored) and make the continuation the arm's result, its spend added."""
        from judge.compare import judge_spend
        from judge.continuation import load_tickets
        from judge.repair import repair_run
        from judge.runcalls import CallSettings

        where = out / "posthoc" / arm.name / f"round-{number}"
        where.mkdir(parents=True, exist_ok=True)
        openings = {q.id: experiment.rollout_ticket(q, arm) for q in queries}
        current = {qid: record for qid, record in finals[arm.name].items()
                   if by_arm[arm.name][qid].get("stop_reason") in ("completed", "budget-exhausted")}
        if not current:
            return
        run_dir = judge_run([experiment.judged_view(Trajectory.model_validate(current[qid]), openings[qid], arm)
                             for qid in sorted(current)], where, f"{arm.name}: post-hoc round {number}'s judging")
        try:
            repaired_run = repair_run(run_dir, teacher=None if teacher == "template" else teacher, control_arm=False,
                                      settings=CallSettings(max_cost_usd=budget.cap_for(run_dir),
                                                            timeout_s=timeout or CallSettings.timeout_s))
        finally:
            budget.note(run_dir)
        if repaired_run.budget_exceeded:
            capped.append(f"{arm.name}: post-hoc round {number}'s repair teacher (its repairs fell back to templates)")
        chosen: dict[str, Any] = {}
        for ticket in load_tickets(run_dir):
            qid = ticket.query_id
            if ticket.arm == "guided" and ticket.status == "ready" and qid in current and qid not in chosen:
                chosen[qid] = experiment.repair_ticket(ticket, openings[qid])
        output.line(f"{arm.name}: post-hoc round {number}: {len(current)} judged, {len(chosen)} to repair")
        if not chosen:
            return
        cont_out = where / "continuations.jsonl"
        logs = run_arm_tickets(arm, list(chosen.values()), cont_out, Environments(default=EnvironmentSource(workdir=workdir)))
        records = {row["id"]: row for row in complete_rows(cont_out)}
        spend = {r.trajectory.query_id: judge_spend(r.verdicts).as_dict() for r in load_records(run_dir)}
        for qid, ticket in chosen.items():
            log = logs.get(ticket.ticket_id) or {}
            repaired = records.get(log.get("output_id") or "")
            if repaired is None:
                continue
            drop_copy(by_arm[arm.name][qid])  # the rollout's copy: the repair's is the final one now
            finals[arm.name][qid], by_arm[arm.name][qid] = experiment.merge_repair(
                current[qid], by_arm[arm.name][qid], repaired, log, {"round": number, **spend.get(qid, {})})

    for arm in arms.arms:
        arm_out = experiment.arm_output(out, arm)
        logs = run_arm_tickets(arm, [experiment.rollout_ticket(q, arm) for q in queries], arm_out,
                           Environments(default=EnvironmentSource(workdir=workdir)))
        records = {row["id"]: row for row in complete_rows(arm_out)}
        by_arm[arm.name] = {q.id: logs.get(f"{q.id}:{arm.name}") or {} for q in queries}
        finals[arm.name] = {q.id: records[log["output_id"]] for q in queries
                            if (log := by_arm[arm.name][q.id]).get("output_id") in records}
        for round_number in range(1, arm.posthoc_rounds + 1):
            posthoc_round(arm, round_number)
        for query in queries:
            log = by_arm[arm.name][query.id]
            wanted = experiment.checks_for(checks, query.id)
            previous = done_checks.get((arm.name, query.id))
            arm_dir = copy_of(log)
            copy = arm_dir is not None and arm_dir.is_dir()
            same = previous is not None and (previous.get("output_id"), previous.get("stop_reason")) == (
                log.get("output_id"), log.get("stop_reason"))
            if previous is None or (not same and copy):  # not checked yet in this rollout's final copy
                if copy and arm_dir is not None:
                    found = asyncio.run(experiment.run_checks(arm_dir, wanted, limits, confinement)) if wanted else []
                    row = experiment.checks_row(arm.name, query.id, log, found, len(wanted))
                else:
                    row = experiment.checks_row(arm.name, query.id, log, None, len(wanted),
                                                reason=f"no final copy ({log.get('stop_reason') or 'not run'}): the "
                                                       "rollout stopped before its working copy was made")
                append_rows(checks_file, [row])
                done_checks[(arm.name, query.id)] = row
            drop_copy(log)
        output.line(f"{arm.name}: {len(queries)} rollouts; "
                    + ", ".join(f"{reason} {n}" for reason, n in sorted(_count(by_arm[arm.name].values()).items())))

    # Judge every arm's result against its original query only: the spec is not in what the judge reads.
    judged_rows = [experiment.judged_view(Trajectory.model_validate(finals[arm.name][q.id]),
                                          experiment.rollout_ticket(q, arm), arm)
                   for arm in arms.arms for q in queries if q.id in finals[arm.name]]
    run_dir = judge_run(judged_rows, out, "the judging of the rollouts")
    judged = {r.trajectory.id: r for r in load_records(run_dir)}
    compared = None
    try:
        compared = compare_records(list(judged.values()), make_scorer([run_dir], cache_dir=run_dir),
                                   baseline=arms.baseline, seed=seed or 0, pair_by="query")
        write_outputs(compared, out / "compare")
    except ValueError as error:  # fewer than two arms reached the judging: the report says so, without scores
        output.line(f"no score comparison: {error}", err=True)
    rows = [experiment.ArmRow(arm=arm.name, query_id=q.id, record=judged.get(f"{q.id}@{arm.name}"),
                              checks=done_checks.get((arm.name, q.id)) or experiment.checks_row(arm.name, q.id, None, None, 0),
                              log=by_arm[arm.name][q.id]) for arm in arms.arms for q in queries]
    cut = {name: sorted(qid for qid, log in logs.items() if log.get("stop_reason") == "max-cost") for name, logs in by_arm.items()}
    capped[:0] = [f"{name}: {len(qids)} rollouts' agent calls ({', '.join(qids[:5])}{'...' if len(qids) > 5 else ''})"
                  for name, qids in cut.items() if qids]
    settings = {"agent": agent_spec, "judges": judges, "passes": passes, "teacher": teacher, "pairs": len(queries), "seed": seed,
                "selection": "sample" if seed is not None and pairs is not None else "first", "sandbox": isolation,
                "budget": {"tokens": budget_tokens, "turns": budget_turns}, "max_cost": budget.cap,
                "budget_usd": {**budget.describe(), "stopped": capped},
                "rejected_queries": [f"{b.location()}: {b.reason}" for b in rejects], "agent_calls": spent}
    report = experiment.experiment_report(arms, queries, rows, compared, settings)
    paths = experiment.write_report(report, out)
    for name, arm_figures in report["summary"].items():
        retained = arm_figures["retained"]
        output.line(f"{name}: retained {retained['retained']}/{retained['queries']}, released "
                    f"{arm_figures['released']['released']}/{arm_figures['released']['queries']}, mean score "
                    f"{_num(arm_figures['mean_score'])}, dependency/ordering errors {arm_figures['order_errors']}, "
                    f"generation tokens {arm_figures['generation_tokens']['total']}, cost {fmt_usd(arm_figures['cost']['total_usd'])}")
    for comparison in report["comparisons"]:
        score = comparison["score"] or {}
        retained = comparison["retained"]
        output.line(f"{comparison['treatment']} vs {comparison['baseline']}: score {score.get('wins', 0)} wins / "
                    f"{score.get('ties', 0)} ties / {score.get('losses', 0)} losses; retained functionality "
                    f"{retained['wins']} / {retained['ties']} / {retained['losses']}")
    output.line(f"wrote {', '.join(str(p.resolve()) for p in paths.values())}"
                + (f" and {(out / 'compare').resolve()}" if compared is not None else ""))
    output.document(report)
    if capped:
        money = budget.describe()
        output.line(f"--max-cost ${money['max_cost_usd']:.4f} (one cap over the whole experiment; ${money['spent_usd']:.4f} "
                    f"spent over every store and run) stopped: " + "; ".join(capped) + ". Raise it with --max-cost N "
                    "and run the same command again: answered calls are replayed from the stores, nothing is paid "
                    "twice; the stopped rollouts are in every denominator meanwhile", err=True)
        raise typer.Exit(ExitCode.NONE_SCORED)


def _count(logs: Any) -> dict[str, int]:
    from collections import Counter

    return dict(Counter(str(log.get("stop_reason") or "not run") for log in logs))


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
