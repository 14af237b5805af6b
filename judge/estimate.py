"""``judge score --dry-run``: what judging a batch would cost, before anything is spent or written.

:func:`estimate_run` plans the panel exactly as :func:`judge.panel.run_panel` would (the same judges, passes,
cache keys and prompts, windows included) and counts, per judge, the passes already answered - in the run's own
store (read-only) or in the shared cache - and the calls the others need, with their input tokens (counted on
the rendered prompts: :func:`judge.prompting.token_count_method`) and output tokens: expected (the mean per
call of that model's answers in the shared cache, else :data:`ASSUMED_OUTPUT_TOKENS`, said so) and at most
(``max_tokens`` per call). Costs come from the price table, at the batch price for judges that ``--batch`` sends
in batches. Not counted, and said so: the preflight request, and corrective retries (at most one per call, only
for an answer that does not parse). Local judges (rules, replay) make no call.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from judge.batch import batchable
from judge.judges import Judge, make_judge
from judge.judges.llm import call_fingerprint
from judge.model import Trajectory, Usage
from judge.panel import PanelConfig, PassPlan, key_parts, pass_cache_key, plan_passes
from judge.pricing import PriceTable, load_price_table, price
from judge.providers import redact
from judge.providers.errors import AuthError
from judge.sharedcache import SharedCache, cache_path, shared_key
from judge.store import RunStore

ASSUMED_OUTPUT_TOKENS = 600  # a judge-v2.1 verdict with a few issues, when no answer of the model is known


@dataclass
class JudgeEstimate:
    """One judge's share of the run: passes, where their answers would come from, calls, tokens, cost."""

    judge: str
    local: bool  # makes no call (rules, replay)
    passes: int = 0  # planned passes over trajectories with an assistant turn
    in_run_store: int = 0
    in_shared_cache: int = 0
    identical: int = 0  # passes over the same content as an earlier trajectory of the batch: judged once
    calls: int = 0
    windowed: int = 0  # passes judged in several windows (one call each)
    overflow: int = 0  # passes that do not fit even in windows: unscored context_overflow, no call
    untold: int = 0  # calls of a judge that does not say what it sends: their tokens are not counted
    input_tokens: int = 0
    output_expected: int = 0
    output_max: int = 0
    output_basis: str = ""
    price_key: str | None = None
    batch: bool = False  # sent in batches, at the batch price
    cost_expected: float | None = None
    cost_max: float | None = None
    note: str | None = None  # e.g. a missing API key the real run will need

    @property
    def to_judge(self) -> int:
        return self.passes - self.in_run_store - self.in_shared_cache - self.identical


@dataclass
class RunEstimate:
    trajectories: int = 0
    without_turns: int = 0
    plans: list[PassPlan] = field(default_factory=list)
    judges: list[JudgeEstimate] = field(default_factory=list)
    run_store: bool = False  # the --out folder has a store that was consulted
    shared_cache: str = ""  # how the shared cache was consulted, in words

    @property
    def calls(self) -> int:
        return sum(j.calls for j in self.judges)


async def estimate_run(trajectories: Iterable[Trajectory], config: PanelConfig, run_dir: Path) -> RunEstimate:
    """Count the calls, tokens and cost of judging ``trajectories`` into ``run_dir``; nothing is sent or written."""
    options = config.judge_options(None)
    judges: dict[str, Judge] = {}
    notes: dict[str, str] = {}
    for spec in dict.fromkeys(config.judges or ["rules"]):
        try:
            judges[spec] = make_judge(spec, options)
        except AuthError as error:  # the estimate needs no key; the run will
            judges[spec] = make_judge(spec, {**options, "key_optional": True})
            notes[spec] = f"{error} (the run needs it)"
    store = RunStore.read_only(run_dir)
    shared = None if config.no_shared_cache else SharedCache.open(config.cache_dir, readonly=True)
    table = load_price_table(config.prices)
    try:
        plans = plan_passes(config, judges)
        consulted = (f"the shared cache {shared.path}" if shared is not None
                     else "no shared cache (turned off)" if config.no_shared_cache
                     else f"no shared cache yet ({cache_path(config.cache_dir)} does not exist)")
        estimate = RunEstimate(plans=plans, run_store=store is not None, shared_cache=consulted)
        rows = {spec: JudgeEstimate(redact(spec), local=judge.provider is None, note=notes.get(spec))
                for spec, judge in judges.items()}
        seen: set[str] = set()  # the run judges identical content once per pass (judge.panel)
        parts = {spec: key_parts(judge) for spec, judge in judges.items() if judge.cacheable}
        for trajectory in trajectories:
            estimate.trajectories += 1
            if not trajectory.has_assistant_turn:
                estimate.without_turns += 1  # decided without a call (no_assistant_turn)
                continue
            content_hash = trajectory.content_hash()
            for plan in plans:
                judge, row = judges[plan.judge], rows[plan.judge]
                row.passes += 1
                if row.local or not judge.cacheable:
                    continue
                key = pass_cache_key(judge, content_hash, plan.pass_index, parts[plan.judge])
                if key in seen:
                    row.identical += 1
                    continue
                seen.add(key)
                if store is not None and store.get_verdict(key) is not None:
                    row.in_run_store += 1
                elif shared is not None and shared.get(shared_key(key, judge)) is not None:
                    row.in_shared_cache += 1
                else:
                    _count(row, judge, trajectory, store, key)
        for spec, row in rows.items():
            _price(row, judges[spec], config, table, shared)
        estimate.judges = list(rows.values())
        return estimate
    finally:
        if store is not None:
            store.close()
        if shared is not None:
            shared.close()
        for judge in judges.values():
            await judge.aclose()


def _count(row: JudgeEstimate, judge: Judge, trajectory: Trajectory, store: RunStore | None, key: str) -> None:
    planned = getattr(judge, "batch_calls", None)  # the LLM judge's requests of one pass (windows included)
    if planned is None:  # a plugin's paid judge that does not tell its requests: one call, tokens unknown
        row.calls += 1
        row.untold += 1
        return
    calls = planned(trajectory, 1)
    if not calls:
        row.overflow += 1
        return
    row.windowed += len(calls) > 1
    if len(calls) > 1 and store is not None:  # windows an interrupted invocation got answers for are not asked again
        calls = [call for part, call in enumerate(calls, start=1)
                 if store.get_part(key, part, call_fingerprint(call["messages"])) is None]
    row.calls += len(calls)
    row.input_tokens += sum(call["estimated_input_tokens"] for call in calls)


def _price(row: JudgeEstimate, judge: Judge, config: PanelConfig, table: PriceTable, shared: SharedCache | None) -> None:
    if row.local:
        return
    max_tokens = int(getattr(judge, "max_tokens", 0) or 0)
    identity = judge.cache_identity()
    known = shared.output_tokens_per_call(identity["provider"], identity["model"]) if shared is not None else None
    per_call = known if known is not None else ASSUMED_OUTPUT_TOKENS
    if max_tokens:
        per_call = min(per_call, max_tokens)
    row.output_basis = (f"the mean of {identity['model']}'s answers in the shared cache" if known is not None
                        else f"assumed: {ASSUMED_OUTPUT_TOKENS} per call, no answer of {identity['model']} known yet")
    row.output_expected = round(per_call * row.calls)
    row.output_max = max_tokens * row.calls
    row.price_key = judge.price_key
    row.batch = config.batch and batchable(judge)
    if row.price_key is None:
        return
    for name, output in (("cost_expected", row.output_expected), ("cost_max", row.output_max)):
        setattr(row, name, price(row.price_key, Usage(input_tokens=row.input_tokens, output_tokens=output),
                                 table, batch=row.batch))


def describe(estimate: RunEstimate, run_dir: Path, token_method: str) -> list[str]:
    """The lines ``judge score --dry-run`` prints."""
    lines = [f"dry run: nothing was sent and nothing written ({run_dir} "
             + ("was read, not changed)" if estimate.run_store else "has no run store: nothing judged there yet)"),
             f"trajectories: {estimate.trajectories}"
             + (f" ({estimate.without_turns} without an assistant turn: no call)" if estimate.without_turns else ""),
             f"panel: {len(estimate.plans)} pass(es): {', '.join(p.pass_key for p in estimate.plans)}"]
    total_in = total_expected = total_max = 0
    cost_expected: float | None = 0.0
    cost_max: float | None = 0.0
    unpriced = []
    for row in estimate.judges:
        if row.local:
            lines.append(f"{row.judge}: {row.passes} pass(es), local: no call, no cost")
            continue
        lines.append(f"{row.judge}: {row.passes} pass(es): {row.in_run_store} in the run store, {row.in_shared_cache} in "
                     f"the shared cache, " + (f"{row.identical} over content judged for another id, " if row.identical
                                               else "") + f"{row.to_judge} to judge in {row.calls} call(s)"
                     + (f" ({row.windowed} pass(es) in windows)" if row.windowed else "")
                     + (f"; {row.overflow} too long even for windows (unscored context_overflow, no call)"
                        if row.overflow else "")
                     + (", sent in batches" if row.batch else ""))
        lines.append(f"  tokens: {row.input_tokens:,} input; output {row.output_expected:,} expected ({row.output_basis}), "
                     f"{row.output_max:,} at most (max_tokens per call)")
        if row.cost_expected is None or row.cost_max is None:
            unpriced.append(row.judge)
            lines.append(f"  cost: unknown: {row.price_key} has no entry in the price table")
        else:
            lines.append(f"  cost: ${row.cost_expected:.4f} expected, ${row.cost_max:.4f} at most ({row.price_key}"
                         + (", batch price" if row.batch else "") + ")")
        if row.untold:
            lines.append(f"  note: {row.untold} call(s) of a judge that does not say what it sends: their tokens are "
                         "not counted")
        if row.note:
            lines.append(f"  note: {row.note.removeprefix('auth: ')}")
        total_in, total_expected, total_max = total_in + row.input_tokens, total_expected + row.output_expected, total_max + row.output_max
        cost_expected = None if cost_expected is None or row.cost_expected is None else cost_expected + row.cost_expected
        cost_max = None if cost_max is None or row.cost_max is None else cost_max + row.cost_max
    cost_text = (f"${cost_expected:.4f} expected, ${cost_max:.4f} at most" if cost_expected is not None and cost_max is not None
                 else f"unknown ({', '.join(unpriced)} unpriced)")
    lines.append(f"total: {estimate.calls} call(s), {total_in:,} input tokens, {total_expected:,} output tokens expected "
                 f"({total_max:,} at most); cost {cost_text}")
    lines.append(f"not counted: the preflight request per LLM judge and corrective retries (at most one per call, only "
                 f"for an answer that does not parse); tokens counted with {token_method}; consulted: "
                 f"{estimate.shared_cache}")
    return lines
