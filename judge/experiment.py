"""``judge experiment``: fresh rollouts of the same queries under several arms, judged and compared (issue 25, item 5).

An *arm* is data (:class:`ArmSpec`, read from an arms file by :func:`load_arms`): what is added to the agent's input
(the query's spec in the user message, the spec as a non-binding reminder message, or nothing), which tools are
offered (with or without TodoWrite), runtime correction on or off, and post-hoc judge + repair + continuation rounds.
Every query runs once per arm, each arm fresh in its own working copy, through the harness of ``judge continue``
(:func:`judge.continuation.continue_tickets`) with a *fresh-rollout ticket* (:func:`rollout_ticket`: no prefix, the
query as the user message), so the call ledger, budgets, sandbox, runtime correction and cost accounting all apply,
and a rerun after a kill pays nothing twice.

Every arm is judged against the ORIGINAL query only (:func:`judged_view`: the spec, in the user message or as a
reminder, never enters the judge's input). Per-query acceptance checks (:func:`run_checks`: commands run in the
arm's final copy, in the sandbox) measure retained functionality. Arms that failed or a budget stopped stay in every
denominator. The figures (:func:`experiment_report`) reuse ``judge compare`` (pairing by query, its paired bootstrap
and sign test, its full cost) rather than a second statistics module.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge import rundir
from judge.model import Message, Trajectory, TrajectoryMetadata
from judge.repair.tickets import TargetIssue, Ticket
from judge.schema import Reject

if TYPE_CHECKING:
    from judge.compare import ArmRecord, CompareResult
    from judge.continuation.confine import Confinement
    from judge.continuation.sandbox import Limits

SpecPlacement = Literal["user", "reminder", "none"]
SPEC_PLACEMENTS: tuple[SpecPlacement, ...] = ("user", "reminder", "none")
MAX_POSTHOC_ROUNDS = 3
# How the spec is shown. In the user message it is part of the task; as a reminder it is a separate message that
# says it binds nothing: the query is what is asked (and what the judge reads).
SPEC_IN_QUERY = "\n\nSpecification:\n{spec}"
SPEC_REMINDER = ("Reminder (not a requirement; the request above is what is asked): a specification that may help "
                 "plan the work:\n{spec}")
CHECKS_FILE = "checks.jsonl"
REJECTED_QUERIES = "rejected_queries.jsonl"  # the queries file's unusable rows (schema.Reject), one a line
JUDGED_FILE = "judged.jsonl"
EXPERIMENT_JSON = "experiment.json"
EXPERIMENT_MD = "experiment.md"
EXPERIMENT_HTML = "experiment.html"
# Dependency and ordering errors, read from the judge's majority issues: tags of the rules judge whose finding is a
# step taken before what it depends on (a claim before its job ended, a todo ticked before a passing check, a check
# cited after the artifact changed), and issue texts that say so in words (an LLM judge's descriptions).
ORDER_TAGS = frozenset({"premature-claim", "unchecked-tick", "stale-evidence"})
ORDER_WORDS = re.compile(r"\b(depend(s|ed|ency|encies|ent)?|prerequisite|out of order|wrong order|ordering|before (it|they) "
                         r"(was|were|existed)|not (yet )?(been )?created|did not exist yet|does not exist yet)\b", re.IGNORECASE)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


# --- input files ---------------------------------------------------------------------------------


class ArmSpec(BaseModel):
    """One arm of an experiment. ``posthoc_rounds``: after the rollout, judge it, route its issues and continue
    the flagged ones (``judge score`` + ``judge repair`` + ``judge continue``), at most this many times."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    description: str = ""
    spec: SpecPlacement = "none"
    todo: bool = False
    correct: bool = False
    posthoc_rounds: int = Field(default=0, ge=0, le=MAX_POSTHOC_ROUNDS)


class _ArmsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = ""
    baseline: str | None = None
    arms: dict[str, ArmSpec]


@dataclass(frozen=True)
class ArmsFile:
    """The arms of an experiment, in file order, and the baseline arm the others are compared with."""

    path: Path
    arms: list[ArmSpec]
    baseline: str
    description: str = ""


def _where(error: ValidationError) -> str:
    """Every problem pydantic found, each as ``key.path: message``."""
    return "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in error.errors())


def load_arms(path: Path) -> ArmsFile:
    """Read an arms file (YAML or JSON); every error names the file and the key at fault."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"{path}: cannot read the arms file: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an arms file is a mapping with the key 'arms' (name -> settings)")
    try:
        parsed = _ArmsFile.model_validate(data)
    except ValidationError as error:
        raise ValueError(f"{path}: {_where(error)}") from None
    arms = []
    for name, arm in parsed.arms.items():
        if not _NAME.match(name):
            raise ValueError(f"{path}: arms.{name}: an arm name is letters, digits, '_', '.' and '-' (it names files)")
        arms.append(arm.model_copy(update={"name": name}))
    if len(arms) < 2:
        raise ValueError(f"{path}: arms: an experiment needs at least two arms (found {len(arms)})")
    baseline = parsed.baseline or arms[0].name
    if baseline not in parsed.arms:
        raise ValueError(f"{path}: baseline: {baseline!r} is not an arm (arms: {', '.join(a.name for a in arms)})")
    return ArmsFile(path=path, arms=arms, baseline=baseline, description=parsed.description)


class Query(BaseModel):
    """One query of an experiment: its id, the text asked, an optional spec and an optional working directory."""

    model_config = ConfigDict(extra="forbid")

    id: str
    query: str = Field(min_length=1)
    spec: str | None = None
    workdir: str | None = None


def load_queries(path: Path, rejects: list[Reject] | None = None) -> list[Query]:
    """Queries from a JSONL file (one object a line) or a YAML/JSON list (or ``{queries: [...]}``); a relative
    ``workdir`` is relative to the file. A bad row is appended to ``rejects`` (the run directory's reject row: file
    and line, or record index) and the rest are read; without ``rejects`` it raises."""
    path = Path(path)
    rows: list[tuple[int | None, int | None, Any]] = []  # (line, record index, row): where a bad row is
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"{path}: cannot read the queries: {error}") from None
    if path.suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    rows.append((number, None, json.loads(line)))
                except ValueError as error:
                    rows.append((number, None, error))
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ValueError(f"{path}: cannot read the queries: {error}") from None
        data = data.get("queries") if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise ValueError(f"{path}: a queries file is JSONL, or a YAML/JSON list of queries (or {{queries: [...]}})")
        rows = [(None, i, row) for i, row in enumerate(data)]
    queries: list[Query] = []
    seen: set[str] = set()
    for line_number, index, row in rows:
        try:
            if isinstance(row, Exception):
                raise ValueError(f"not JSON: {row}")
            query = Query.model_validate(row)
            if not _NAME.match(query.id):
                raise ValueError(f"id {query.id!r}: letters, digits, '_', '.' and '-' only (it names files)")
            if query.id in seen:
                raise ValueError(f"id {query.id!r} is given twice")
        except ValidationError as error:
            reason = _where(error)
        except ValueError as error:
            reason = str(error)
        else:
            if query.workdir is not None and not Path(query.workdir).is_absolute():
                query = query.model_copy(update={"workdir": str((path.parent / query.workdir).resolve())})
            seen.add(query.id)
            queries.append(query)
            continue
        bad = Reject(source_file=str(path), line=line_number, record_index=index, format="queries", reason=reason)
        if rejects is None:
            raise ValueError(f"{bad.location()}: {reason}")
        rejects.append(bad)
    return queries


def choose_queries(queries: Sequence[Query], pairs: int | None, seed: int | None = None) -> list[Query]:
    """The first ``pairs`` queries in file order, or, with ``seed``, a random sample of that many (same seed, same
    sample, kept in file order). None: all of them."""
    if pairs is None or pairs >= len(queries):
        return list(queries)
    if seed is None:
        return list(queries[:pairs])
    chosen = set(random.Random(seed).sample(range(len(queries)), pairs))
    return [q for i, q in enumerate(queries) if i in chosen]


class CheckCommand(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = ""
    run: str = Field(min_length=1)


def load_checks(path: Path) -> dict[str, list[CheckCommand]]:
    """Acceptance checks per query id (``*``: for every query without its own): ``{checks: {ID: [COMMAND, ...]}}``
    or the mapping alone; a command is a string or ``{name, run}``. Errors name the file and the key."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"{path}: cannot read the checks: {error}") from None
    if isinstance(data, dict) and set(data) == {"checks"}:
        data = data["checks"]
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a checks file maps query ids to lists of commands")
    checks: dict[str, list[CheckCommand]] = {}
    for key, commands in data.items():
        if not isinstance(commands, list):
            commands = [commands]
        found = []
        for i, command in enumerate(commands):
            try:
                check = CheckCommand.model_validate({"run": command} if isinstance(command, str) else command)
            except ValidationError as error:
                raise ValueError(f"{path}: checks.{key}[{i}]: {_where(error)}") from None
            found.append(check if check.name else check.model_copy(update={"name": check.run}))
        checks[str(key)] = found
    return checks


def checks_for(checks: dict[str, list[CheckCommand]], query_id: str) -> list[CheckCommand]:
    """The query's own checks, else the ``*`` ones."""
    return checks.get(query_id, checks.get("*", []))


# --- the rollouts --------------------------------------------------------------------------------


def rollout_ticket(query: Query, arm: ArmSpec) -> Ticket:
    """The fresh-rollout ticket of one query under one arm: no prefix, the query as the user message (with the spec
    when the arm puts it there), the spec reminder as the next message on a reminder arm, the arm's tools.

    The ticket's ``query`` is the original query: the judged record carries it (:func:`judged_view`).
    """
    from judge.continuation.tools import SCHEMAS

    spec = (query.spec or "").strip()
    agent_query = query.query + SPEC_IN_QUERY.format(spec=spec) if arm.spec == "user" and spec else None
    reminder = SPEC_REMINDER.format(spec=spec) if arm.spec == "reminder" and spec else None
    tools = [SCHEMAS["bash"], SCHEMAS["read"], SCHEMAS["write"], SCHEMAS["edit"]] + ([SCHEMAS["plan"]] if arm.todo else [])
    metadata: dict[str, Any] = {"query_id": query.id, "experiment_arm": arm.name, "spec_added": bool(agent_query or reminder),
                                "spec_placement": arm.spec}
    if query.workdir:
        metadata["workdir"] = query.workdir
    return Ticket(
        ticket_id=f"{query.id}:{arm.name}", trajectory_id=query.id, query_id=query.id, query=query.query,
        agent_query=agent_query, route="rewrite-restart", arm="rewrite", checkpoint_turn=0, branch_turn=0, prefix=[],
        fresh_environment=True, target_issue=TargetIssue(cluster=None, turn=None, category="semantic", severity="minor",
                                                         description="fresh rollout: no target issue"),
        guidance=reminder, guidance_source="spec reminder" if reminder else None, tools=tools, metadata=metadata)


def arm_output(out: Path, arm: ArmSpec) -> Path:
    """Where an arm's rollouts (``judge continue``'s continuations file) go: ``OUT/arms/<arm>.jsonl``."""
    return Path(out) / "arms" / f"{arm.name}.jsonl"


_SPEC_EXTRA = ("agent_query", "guidance_source", "target_category", "target_tag", "target_evidence", "spec_placement")


def judged_view(record: Trajectory, ticket: Ticket, arm: ArmSpec) -> Trajectory:
    """The rollout as the judge reads it: the ORIGINAL query as the user message, no spec (neither in the user
    message nor the reminder), no target; the arm's turns, their usage and its stop and spend as they are.

    Id ``<query id>@<arm>``, ``query_id`` the query's, ``arm`` the experiment arm (``judge compare --pair-by query``).
    """
    from judge.continuation.restore import restored_messages

    restored = len(restored_messages(ticket))
    messages = [Message(role="user", content=ticket.query, turn=0), *record.messages[restored:]]
    meta = record.metadata
    extra = {k: v for k, v in meta.extra.items() if k not in _SPEC_EXTRA}
    extra["rollout_id"] = record.id
    metadata = TrajectoryMetadata(source_format=meta.source_format, model=meta.model, arm=arm.name,
                                  budget_exhausted=meta.budget_exhausted, usage=meta.usage, extra=extra)
    return Trajectory(id=f"{ticket.query_id}@{arm.name}", query=ticket.query, query_id=ticket.query_id,
                      messages=messages, metadata=metadata)


# --- post-hoc repair rounds -----------------------------------------------------------------------


def repair_ticket(ticket: Ticket, rollout: Ticket) -> Ticket:
    """A post-hoc repair ticket (``judge repair`` on the judged rollout) made for the agent: the prefix's opening user
    message - the original query the judge read - replaced by the rollout's own opening (the query with the spec, the
    reminder, as the arm gave them), so the repair continues the conversation the agent had. The ticket's ``query``
    stays the original; the rollout's workdir and arm go in its metadata."""
    from judge.continuation.restore import restored_messages

    prefix = list(ticket.prefix)
    if prefix and prefix[0].role == "user":
        prefix = [*restored_messages(rollout), *prefix[1:]]
    metadata = {**ticket.metadata, **{k: v for k, v in rollout.metadata.items() if k in ("workdir", "experiment_arm")}}
    return ticket.model_copy(update={"prefix": prefix, "metadata": metadata})


def _both(a: float | None, b: float | None) -> float | None:
    """A sum of dollars where an unknown part makes the total unknown (never a smaller number)."""
    return None if a is None or b is None else a + b


def merge_repair(rollout: dict[str, Any], rollout_log: dict[str, Any], repaired: dict[str, Any],
                 repaired_log: dict[str, Any], judged: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The arm's result after a repair round: the repaired continuation's record and log row, with the spend of
    everything before it added - the rollout's generation (its prefix was generated, not restored for free), its
    teacher, and the post-hoc judging of this round (``judged``: tokens and dollars of the passes that judged it)."""
    from judge.model import Usage

    def usage(row: dict[str, Any]) -> Usage:
        return Usage(**(row or {}))

    record = json.loads(json.dumps(repaired))
    extra, before = record["metadata"].setdefault("extra", {}), rollout["metadata"].get("extra", {})
    record["metadata"]["usage"] = (usage(rollout["metadata"].get("usage")) + usage(repaired["metadata"].get("usage"))).model_dump()
    extra["cost_usd"] = _both(before.get("cost_usd"), extra.get("cost_usd"))
    extra["teacher_usage"] = (usage(before.get("teacher_usage")) + usage(extra.get("teacher_usage"))).model_dump()
    extra["teacher_cost_usd"] = (None if before.get("teacher_cost_usd") is None and extra.get("teacher_cost_usd") is None
                                 else (before.get("teacher_cost_usd") or 0.0) + (extra.get("teacher_cost_usd") or 0.0))
    extra["posthoc_judge"] = [*before.get("posthoc_judge", []), judged]
    extra["repaired_from"] = rollout["id"]
    log = {**repaired_log, "usage": record["metadata"]["usage"], "cost_usd": extra["cost_usd"],
           "corrections": [*(rollout_log.get("corrections") or []), *(repaired_log.get("corrections") or [])],
           "posthoc": [*(rollout_log.get("posthoc") or []), {"ticket_id": repaired_log.get("ticket_id"),
                                                             "stop_reason": repaired_log.get("stop_reason")}]}
    return record, log


# --- the experiment's one budget ------------------------------------------------------------------


BUDGET_FILE = "budget.json"


@dataclass
class ExperimentBudget:
    """One ``--max-cost`` over every store the experiment pays from: the rollouts' agents and correction teachers
    (``OUT``), the judging (``OUT/run``) and each post-hoc round's judging and repair teacher
    (``OUT/posthoc/ARM/round-K/run``). The stores are used one after another, so each invocation on a store is given
    the cap less what every *other* store has spent (:meth:`cap_for`): its own recorded spend and that remainder add
    up to the one cap, failed attempts included (each store counts them).

    ``OUT/budget.json`` remembers the cap and each store's spend after each use, so a rerun without ``--max-cost``
    keeps the cap, and a store that went missing (a deleted post-hoc round) still counts what it spent."""

    out: Path
    cap: float | None
    spent: dict[str, float] = field(default_factory=dict)  # store directory (relative to out) -> its spend

    @classmethod
    def open(cls, out: Path, given: float | None) -> ExperimentBudget:
        """The experiment's budget: the cap given now (recorded from now on) or the recorded one; the spend the
        file remembers. An unreadable file names itself."""
        path = Path(out) / BUDGET_FILE
        recorded: dict[str, Any] = {}
        if path.exists():
            try:
                recorded = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as error:
                raise ValueError(f"{path}: unreadable ({error}): it records the experiment's spend; restore it or "
                                 "remove it only if the stores under it are all there") from None
        cap = given if given is not None else recorded.get("max_cost_usd")
        budget = cls(out=Path(out), cap=None if cap is None else float(cap),
                     spent={str(k): float(v) for k, v in (recorded.get("stores") or {}).items()})
        budget.save()
        return budget

    def _key(self, run_dir: Path) -> str:
        return Path(run_dir).resolve().relative_to(self.out.resolve()).as_posix()

    def stores(self) -> list[str]:
        """Every store of the experiment: those on disk (``OUT``, ``OUT/run``, the post-hoc rounds') and those the
        file remembers."""
        from judge.store import STORE_FILE

        found = [self.out, self.out / "run", *sorted(self.out.glob("posthoc/*/round-*/run"))]
        return sorted({self._key(d) for d in found if (d / STORE_FILE).exists()} | set(self.spent))

    def spent_in(self, key: str) -> float:
        """What one store has spent: its own record, never less than the file remembers."""
        from judge.store import RunStore

        store = RunStore.read_only(self.out / key)
        now = 0.0
        if store is not None:
            try:
                now = store.spent_usd()
            finally:
                store.close()
        return max(now, self.spent.get(key, 0.0))

    def total(self) -> float:
        """What the whole experiment has spent, over every store and invocation."""
        return sum(self.spent_in(key) for key in self.stores())

    def cap_for(self, run_dir: Path) -> float | None:
        """The cap to give an invocation on ``run_dir``'s store: the experiment's less every other store's spend
        (None: no cap)."""
        if self.cap is None:
            return None
        mine = self._key(run_dir)
        return max(0.0, self.cap - sum(self.spent_in(key) for key in self.stores() if key != mine))

    def note(self, run_dir: Path) -> None:
        """Remember what ``run_dir``'s store has spent (after an invocation on it)."""
        key = self._key(run_dir)
        self.spent[key] = self.spent_in(key)
        self.save()

    def save(self) -> None:
        rundir.write_json(self.out / BUDGET_FILE, self.describe())

    def describe(self) -> dict[str, Any]:
        """``budget.json`` and experiment.json's ``settings.budget_usd``: the cap, the total and each store's part."""
        stores = {key: round(self.spent_in(key), 6) for key in self.stores()}
        return {"max_cost_usd": self.cap, "spent_usd": round(sum(stores.values()), 6), "stores": stores,
                "note": "one cap over every store of the experiment (agents, correction and repair teachers, judging, "
                        "post-hoc rounds), every invocation and failed attempt included"}


# --- acceptance checks ----------------------------------------------------------------------------


async def run_checks(arm_dir: Path, commands: Sequence[CheckCommand], limits: Limits,
                     confinement: Confinement | None = None) -> list[dict[str, Any]]:
    """Run each check command in the arm's final copy (``arm_dir/work``), in the sandbox the arm's calls ran in;
    one row per command: its exit code, whether it passed (exit 0) and the tail of its output."""
    from judge.continuation.sandbox import Sandbox

    sandbox = Sandbox(arm_dir, limits, confinement=confinement)
    rows = []
    for command in commands:
        receipt = await sandbox.bash(sandbox.real(command.run), session=False)
        rows.append({"name": command.name, "run": command.run, "exit_code": receipt.exit_code,
                     "passed": receipt.exit_code == 0, "output": receipt.content[-2000:]})
    return rows


def checks_row(arm: str, query_id: str, log_row: dict[str, Any] | None, results: list[dict[str, Any]] | None,
               total: int, reason: str | None = None) -> dict[str, Any]:
    """One (arm, query) row of ``checks.jsonl``: ``passed`` of ``total`` checks (a check not run counts as not
    passed: ``reason`` says why), and the arm's stop, so a rerun knows whether the row is final."""
    passed = sum(1 for r in results or [] if r["passed"])
    return {"arm": arm, "query_id": query_id, "output_id": (log_row or {}).get("output_id"),
            "stop_reason": (log_row or {}).get("stop_reason"), "ran": results is not None, "reason": reason,
            "total": total, "passed": passed, "retained": total > 0 and passed == total, "results": results or []}


# --- the report ----------------------------------------------------------------------------------


def order_errors(record: ArmRecord) -> list[dict[str, Any]]:
    """The arm's majority issues that are dependency or ordering errors (:data:`ORDER_TAGS`, :data:`ORDER_WORDS`)."""
    return [{"cluster": c.cluster, "turn": c.turn, "tag": c.tag, "description": c.description}
            for c in record.majority() if (c.tag in ORDER_TAGS) or ORDER_WORDS.search(c.description or "")]


@dataclass
class ArmRow:
    """What one query's rollout under one arm gave: its record (None: it never reached the judging), its checks and
    its harness row."""

    arm: str
    query_id: str
    record: ArmRecord | None
    checks: dict[str, Any]
    log: dict[str, Any] = field(default_factory=dict)


def _fraction(row: dict[str, Any]) -> float:
    return row["passed"] / row["total"] if row["total"] else 0.0


def arm_summary(rows: Sequence[ArmRow]) -> dict[str, Any]:
    """One arm's figures over every query (stopped rollouts included in each denominator)."""
    from judge.compare import arm_outcome, mean_or_none, side_cost

    outcomes = [arm_outcome(r.record, 0, None, None) for r in rows if r.record is not None]
    with_checks = [r for r in rows if r.checks["total"]]
    usage = {"input_tokens": 0, "output_tokens": 0}
    for r in rows:
        for key in usage:
            usage[key] += int((r.log.get("usage") or {}).get(key) or 0)
    stopped = [{"query_id": r.query_id, "stop_reason": r.log.get("stop_reason"), "detail": str(r.log.get("stop_detail"))[:300]}
               for r in rows if r.log.get("stop_reason") != "completed"]
    released = [o.released for o in outcomes]
    return {
        "queries": len(rows),
        "finished": sum(1 for r in rows if r.log.get("stop_reason") in ("completed", "budget-exhausted")),
        "stopped": stopped,
        "budget_cut": sum(1 for r in rows if r.log.get("budget_exhausted")),
        "retained": {"retained": sum(1 for r in with_checks if r.checks["retained"]), "queries": len(with_checks),
                     "rate": (sum(1 for r in with_checks if r.checks["retained"]) / len(with_checks)) if with_checks else None,
                     "mean_checks_passed": mean_or_none([_fraction(r.checks) for r in with_checks]),
                     "not_run": sum(1 for r in with_checks if not r.checks["ran"])},
        "released": {"released": sum(1 for x in released if x), "queries": len(rows),
                     "rate": sum(1 for x in released if x) / len(rows) if rows else None},
        "mean_score": mean_or_none([float(o.score) for o in outcomes if o.score is not None]),
        "unscored": len(rows) - sum(1 for o in outcomes if o.score is not None),
        "order_errors": sum(len(order_errors(r.record)) for r in rows if r.record is not None),
        "rollouts_with_order_errors": sum(1 for r in rows if r.record is not None and order_errors(r.record)),
        "corrections": sum(1 for r in rows for c in r.log.get("corrections") or [] if c.get("rewound")),
        "generation_tokens": {**usage, "total": usage["input_tokens"] + usage["output_tokens"]},
        "cost": side_cost(outcomes),  # compare's full cost, post-hoc judging included (judge.compare.arm_cost)
    }


def paired_checks(treatment: Sequence[ArmRow], baseline: Sequence[ArmRow], seed: int = 0) -> dict[str, Any]:
    """Retained functionality paired by query: the share of checks passed, treatment minus baseline, with compare's
    paired bootstrap interval and sign test; and the same for dependency/ordering error counts."""
    from judge.compare import mean_or_none, paired_bootstrap_ci, sign_test

    base = {r.query_id: r for r in baseline}
    pairs = [(t, base[t.query_id]) for t in treatment if t.query_id in base and t.checks["total"]]
    diffs = [_fraction(t.checks) - _fraction(b.checks) for t, b in pairs]
    wins, losses = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    ci = paired_bootstrap_ci(diffs, seed=seed)
    both = [(t, base[t.query_id]) for t in treatment
            if t.query_id in base and t.record is not None and base[t.query_id].record is not None]
    order = [float(len(order_errors(t.record)) - len(order_errors(b.record))) for t, b in both
             if t.record is not None and b.record is not None]
    return {"pairs": len(pairs), "wins": wins, "ties": len(diffs) - wins - losses, "losses": losses,
            "mean_difference": mean_or_none(diffs), "difference_ci95": list(ci) if ci else None,
            "sign_test_p": sign_test(wins, losses),
            "order_errors": {"pairs": len(order), "mean_difference": mean_or_none(order)}}


def experiment_report(arms: ArmsFile, queries: Sequence[Query], rows: Sequence[ArmRow], compared: CompareResult | None,
                      settings: dict[str, Any]) -> dict[str, Any]:
    """The ``experiment.json`` document: per arm (:func:`arm_summary`) and per arm vs the baseline (compare's
    score comparison by query, with the paired retained functionality beside it), and every rollout's row."""
    by_arm = {a.name: [r for r in rows if r.arm == a.name] for a in arms.arms}
    comparisons = []
    for arm in arms.arms:
        if arm.name == arms.baseline:
            continue
        score = next((c for c in (compared.comparisons if compared else []) if c["treatment"] == arm.name), None)
        comparisons.append({"treatment": arm.name, "baseline": arms.baseline,
                            "retained": paired_checks(by_arm[arm.name], by_arm[arms.baseline], seed=settings.get("seed", 0)),
                            "score": score})
    return {
        "arms_file": str(arms.path), "description": arms.description, "baseline": arms.baseline,
        "arms": [a.model_dump() for a in arms.arms], "queries": [q.id for q in queries], "settings": settings,
        "summary": {a.name: arm_summary(by_arm[a.name]) for a in arms.arms},
        "comparisons": comparisons,
        "rollouts": [{"arm": r.arm, "query_id": r.query_id, "stop_reason": r.log.get("stop_reason"),
                      "stop_detail": str(r.log.get("stop_detail") or "")[:300] or None,
                      "score": r.record.score.score if r.record is not None and r.record.score else None,
                      "released": (r.record.score.release if r.record is not None and r.record.score else None)
                      if r.log.get("stop_reason") in ("completed", "budget-exhausted") else False,
                      "checks": {k: r.checks[k] for k in ("passed", "total", "retained", "ran", "reason")},
                      "order_errors": order_errors(r.record) if r.record is not None else [],
                      "usage": r.log.get("usage"), "cost_usd": r.log.get("cost_usd")} for r in rows],
    }


def render_report(report: dict[str, Any]) -> tuple[str, str]:
    """(HTML, Markdown) of ``experiment.json``, with the batch report's environments, filters and stylesheet."""
    import datetime

    from markupsafe import Markup

    from judge import __version__
    from judge.report.render import CSS_FILE, csp_hash, html_environment, markdown_environment
    from judge.resources import resource_dir

    css_path = resource_dir("reports") / CSS_FILE
    css = css_path.read_text(encoding="utf-8") if css_path.exists() else ""
    csp = f"default-src 'none'; style-src-elem {csp_hash(css)}; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    context = {"e": report, "generated_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
               "version": __version__}
    html = html_environment().get_template("experiment.html.j2").render(css=Markup(css), csp=csp, **context)
    markdown = markdown_environment().get_template("experiment.md.j2").render(**context)
    return html, markdown


def write_report(report: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write experiment.json, experiment.md and experiment.html into ``out``."""
    out = Path(out)
    paths = {"json": out / EXPERIMENT_JSON, "md": out / EXPERIMENT_MD, "html": out / EXPERIMENT_HTML}
    rundir.write_json(paths["json"], report)
    html, markdown = render_report(report)
    for name, text in (("html", html), ("md", markdown)):
        rundir.write_text(paths[name], text)
    return paths
