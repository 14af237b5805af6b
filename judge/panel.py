"""The judge panel: plan the passes, run them concurrently and safely, cache every call, resume after a kill.

``plan_passes(config)`` turns the configured judges into passes: ``--judge a --judge b --judge c`` is one
pass each; one judge with ``--passes N`` is N passes; one LLM judge alone defaults to 3 passes; a
deterministic judge (``rules``) runs once - a panel of one, recorded as such in the manifest.

``run_panel(trajectories, config, run_dir)`` runs every (trajectory, pass) that the run store does not
already hold:

- the cache key is (trajectory content hash, prompt version, provider, model, parameters, pass index), so a
  second run makes zero calls and a run killed with SIGKILL makes only the missing calls when restarted;
- identical trajectories (the same content under other ids) are judged once per pass: a pass whose cache key is
  being judged, or was judged since it was planned, waits for that verdict and takes it under its own id, at
  cost 0 (``original_cost_usd``), as it does when the store holds it;
- a pass judged in several calls (windows of a long trajectory) keeps each call's answer in the store as it
  arrives (``RunCalls.parts``), so a resume asks only the windows that had no answer; they are dropped once the
  pass's verdict is stored;
- a pass the run store does not hold is looked up in the cache shared across runs (:mod:`judge.sharedcache`,
  ``no_shared_cache``/``cache_dir``): a hit is recorded in the run store as the run's answer, ``cached_from:
  "shared"``, costing the run nothing (its original cost kept in ``original_cost_usd``); every new ``ok``
  verdict is added to it (failures never are), :data:`judge.sharedcache.PUTS_CHUNK` at a time and the rest when the
  run ends (a kill loses the kept ones from the shared cache only: the run store holds them);
- each verdict is written to the store as soon as it completes, and to ``verdicts.jsonl`` in input order (the
  file is rebuilt from the store at the start of every run, so there are no duplicate rows); trajectories are
  streamed, and a pass completed ahead of a slower earlier one waits (at most :data:`WINDOW` of them) for its
  turn, so memory stays flat at any batch size (except with ``batch``: see below);
- every provider attempt, failed ones included, is recorded with its tokens and cost - and already *before*
  it is sent (``store.record_attempt(..., "sent")``), so one that a kill interrupts is found by the next
  invocation, counted in the spend at its worst case (it may have been billed) and reported;
- at most ``concurrency`` calls are in flight; rpm/tpm token buckets; retries with exponential backoff and
  jitter honouring Retry-After; a per-call timeout; a ``max_cost_usd`` cap after which the remaining
  passes are unscored ``budget_exceeded`` (not cached, so a rerun with a bigger budget completes them). The
  cap and the spend belong to the run, not to one invocation: the cap is recorded in the store (and
  run.json) and a resumed run without ``max_cost_usd`` keeps it; the spend of earlier invocations counts;
- with ``preflight=True`` (the CLI's default) each LLM judge answers one tiny request before its first call
  (for a fresh run, before the batch), so an unreachable server, a bad key or an unknown model stops the run
  (:class:`PreflightFailed`); cached, replay and rules judges make no request and are not checked;
- the run directory is locked (:mod:`judge.runlock`): a second process on it is refused;
- with ``batch`` (``judge score --batch``) the passes of judges whose provider has a batch API go through it
  (:mod:`judge.batch`: submitted, polled, resumed by batch id after a kill, ingested at the batch price), then
  each pass is parsed by its judge exactly as a direct one; other judges are called directly meanwhile. A batch
  needs every request up front, so a ``batch`` run holds its trajectories in memory.

Unscored ``provider_error``, ``connection_error`` and ``budget_exceeded`` verdicts are not cached: a rerun
retries them. Every other verdict (ok, parse_error, refusal, truncated, invalid_turn, context_overflow) was
paid for and is final. A trajectory without an assistant turn has no decision to judge: its passes are
unscored ``no_assistant_turn`` without a call, so it gets no score (never the "no issue" score 4 or 5).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import re
import sqlite3
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from judge import rundir
from judge.batch import BatchJudge, BatchRunner, batchable
from judge.collect import fewer_collections
from judge.config import OptionFile, build_checked, read_option_file
from judge.judges import Judge, check_judge, is_local, keeps_parts, make_judge
from judge.model import Trajectory, Usage
from judge.pricing import add_costs, fmt_usd
from judge.providers import key_variables, redact, register_secrets_in, scrub
from judge.providers.batch import BatchAnswer
from judge.providers.errors import ProviderError
from judge.providers.retry import BREAKER_KINDS, DEFAULT_STOP_AFTER, BudgetExceeded, CallRuntime, complete_with_retries, unanswered_cause
from judge.runcalls import NOT_CACHED_REASONS, CallSettings, RunBudget, RunCalls, open_calls, write_budget
from judge.rundir import BudgetSection, PanelMember, PanelSection, RunDir
from judge.runlock import run_lock
from judge.schema import Verdict
from judge.sharedcache import SHARED, SharedCache, open_shared_cache, shared_key
from judge.store import RunStore, cache_key
from judge.terminal import Progress

NO_ASSISTANT_TURN = "no_assistant_turn"
WINDOW = 4096  # passes taken ahead of the oldest one not yet written to verdicts.jsonl (a slow call holds the rest)
HELD = 256  # with on_trajectory: trajectories taken ahead of the oldest one not yet handed over (each is held)
HITS_CHUNK = 1000  # shared-cache hits counted in the cache at once
PREFLIGHT_KEY = "preflight"  # the call_attempts key of preflight requests
PREFLIGHT_MESSAGES = [{"role": "user", "content": "Reply with the single word OK."}]
PREFLIGHT_MAX_TOKENS = 16
# The preflight retries a 429 or 5xx (a server busy at the start is not a misconfigured judge), at most
# PREFLIGHT_RETRIES times and PREFLIGHT_WAIT_S seconds in all (Retry-After honoured within that); a timeout is not
# retried: a server that cannot answer a 16-token request within --timeout is hung.
PREFLIGHT_RETRIES = 4
PREFLIGHT_WAIT_S = 60.0
# An API key belongs in the environment: a params entry of that name would be silently unused. Other secrets
# (a gateway's headers, tokens) are allowed: they are sent, and redacted wherever the config is recorded.
_API_KEY_NAME = re.compile(r"^([a-z0-9]+[_-])?api[_-]?key$", re.IGNORECASE)  # api_key, openai_api_key, ...


# The keys of a panel config file (``--config``): ``judge score``'s flag names, then the settings that have no
# flag; each maps to its PanelConfig field. Dashes and underscores are the same (judge.config.flag_key).
PANEL_KEYS: dict[str, str] = {
    "judge": "judges", "passes": "passes", "base-url": "base_url", "concurrency": "concurrency", "rpm": "rpm",
    "tpm": "tpm", "timeout": "timeout_s", "max-cost": "max_cost_usd", "temperature": "temperature",
    "max-retries": "max_retries", "retry-base-delay": "retry_base_delay_s", "max-input-tokens": "max_input_tokens",
    "max-tokens": "max_tokens", "max-answer-chars": "max_answer_chars", "prompt": "prompt", "prices": "prices",
    "params": "params",
    "batch": "batch", "batch-poll-interval": "batch_poll_interval", "no-shared-cache": "no_shared_cache",
    "cache-dir": "cache_dir", "stop-after-failures": "stop_after_failures",
}
# Keys of earlier releases (the field names, which run.json's panel.params still records): read, with a note.
PANEL_RENAMED: dict[str, str] = {
    "judges": "judge", "timeout-s": "timeout", "max-cost-usd": "max-cost", "retry-base-delay-s": "retry-base-delay",
}


def read_panel_file(path: Path | str, other_keys: Mapping[str, str] | None = None) -> OptionFile:
    """Read a panel config file (settings at the top or under ``panel:``); ``other_keys`` are the calling
    command's other options that the file may hold (flag spelling -> destination)."""
    return read_option_file(path, {**PANEL_KEYS, **(other_keys or {})}, renamed=PANEL_RENAMED, section="panel")


class PanelConfig(BaseModel):
    """Panel and call parameters. From a config file (:meth:`load`) and/or CLI flags (:meth:`merged`, which wins)."""

    model_config = ConfigDict(extra="forbid")

    judges: list[str] = Field(default_factory=list, description="Judge specs; empty = the offline rules judge.")
    passes: int | None = Field(default=None, ge=1, description="Passes per judge (default: 3 for one LLM judge, else 1).")
    concurrency: int = Field(default=8, ge=1, description="Calls in flight at once.")
    rpm: float | None = Field(default=None, gt=0, description="Requests per minute per provider model.")
    tpm: float | None = Field(default=None, gt=0, description="Tokens per minute per provider model (estimated).")
    timeout_s: float = Field(default=120.0, gt=0, description="Per-call timeout.")
    max_retries: int = Field(default=4, ge=0, description="Retries after the first attempt on 429/5xx/timeouts.")
    retry_base_delay_s: float = Field(default=1.0, ge=0, description="First backoff step (doubles each retry, full jitter).")
    max_cost_usd: float | None = Field(default=None, ge=0, description="Stop calling once this much is spent.")
    temperature: float | Literal["none"] | None = Field(
        default=None, description="Sampling temperature (default 0.7; left out for o1/o3/gpt-5 style reasoning models); "
                                  "'none' leaves it out of every request.")
    max_input_tokens: int | None = Field(default=None, gt=0, description="Prompt budget per call (elision beyond).")
    max_tokens: int | None = Field(default=None, gt=0, description="Output budget per call.")
    max_answer_chars: int | None = Field(default=None, gt=0, description="Longest answer taken, in characters (default "
                                                                         "262,144); a longer one is unscored.")
    base_url: str | None = Field(default=None, description="OpenAI-compatible server URL for openai:/openai-compatible: judges.")
    prompt: str | None = Field(default=None, description="Judge prompt template name in prompts/ or a path.")
    prices: str | None = Field(default=None, description="Price table (default rubrics/prices.yaml).")
    params: dict[str, Any] = Field(default_factory=dict, description="Extra provider options (recorded in the cache key).")
    no_shared_cache: bool = Field(default=False, description="Neither take answers from nor add answers to the cache "
                                                             "shared across runs.")
    cache_dir: str | None = Field(default=None, description="Folder of the shared cache (default $TRAJUDGE_CACHE_DIR, "
                                                            "$XDG_CACHE_HOME/trajudge or ~/.cache/trajudge).")
    batch: bool = Field(default=False, description="Send LLM passes through the providers' batch APIs (half price, "
                                                   "results within 24 h; a killed run resumes its batches).")
    batch_poll_interval: float = Field(default=30.0, gt=0, description="Seconds between two status checks of a batch.")
    stop_after_failures: int = Field(default=DEFAULT_STOP_AFTER, ge=0, description=(
        "Stop calling a server after this many consecutive calls got only 429/5xx or no answer (0: never)."))

    @field_validator("params")
    @classmethod
    def _no_api_key(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if _API_KEY_NAME.match(name):
                raise ValueError(f"params.{name}: API keys come only from the environment "
                                 f"({', '.join(key_variables())}), never from a config file; a gateway's own "
                                 "header goes in params.headers")
        return value

    @model_validator(mode="after")
    def _register_secrets(self) -> PanelConfig:
        # Before anything is built or printed: the judges' URL credentials and query values, the headers and the
        # secret-named params are scrubbed by value from every answer, message and file of the run.
        register_secrets_in({"judges": self.judges, "base_url": self.base_url, "params": self.params})
        return self

    @field_validator("temperature", mode="before")
    @classmethod
    def _temperature(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("none", "null", "omit"):
            return "none"  # YAML "none" and the CLI's --temperature none: leave temperature out of requests
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ValueError(f"temperature must be a number >= 0 or 'none', not {value!r}") from None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
            raise ValueError(f"temperature must be >= 0, not {value}")
        return value

    @field_validator("judges", mode="before")
    @classmethod
    def _one_judge(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value  # `judge: rules` in a file, like one --judge

    @classmethod
    def load(cls, path: Path | str) -> PanelConfig:
        """Read a config file: YAML, JSON or TOML, keyed by the flags' names (:data:`PANEL_KEYS`, see
        :mod:`judge.config`). A key of an earlier release (:data:`PANEL_RENAMED`) is read with a FutureWarning
        that names the current one; any problem is a :class:`~judge.config.ConfigError` (a ValueError) naming
        the file, the line and the key."""
        file = read_panel_file(path)
        for note in file.notes:
            warnings.warn(note, FutureWarning, stacklevel=2)
        return cls.from_file(file)

    @classmethod
    def from_file(cls, file: OptionFile) -> PanelConfig:
        """The panel settings of an option file read by :func:`read_panel_file` (its other keys are not read)."""
        return build_checked(cls.model_validate, file.subset(PANEL_KEYS.values()))

    def merged(self, **overrides: Any) -> PanelConfig:
        """A copy with every override that is not None (CLI flags win over the file)."""
        given = {k: v for k, v in overrides.items() if v is not None and v != []}
        try:
            return self.model_validate({**self.model_dump(), **given})
        except ValidationError as error:  # one line per bad value, named by its flag, not pydantic's report
            flags = {name: key for key, name in PANEL_KEYS.items()}
            raise ValueError("; ".join(f"--{flags.get(str(e['loc'][0]), e['loc'][0]) if e['loc'] else 'value'}: "
                                       + str(e["msg"]).removeprefix("Value error, ") for e in error.errors())) from None

    def call_settings(self) -> CallSettings:
        """How this panel calls providers (:func:`judge.runcalls.open_calls`): retries, timeout, limits, cap, prices."""
        return CallSettings(max_cost_usd=self.max_cost_usd, timeout_s=self.timeout_s, rpm=self.rpm, tpm=self.tpm,
                            max_retries=self.max_retries, retry_base_delay_s=self.retry_base_delay_s, prices=self.prices,
                            stop_after_failures=self.stop_after_failures)

    def judge_options(self, runtime: CallRuntime | None = None) -> dict[str, Any]:
        """Options handed to every judge factory (factories ignore what they do not use)."""
        return {
            "runtime": runtime, "temperature": self.temperature, "max_tokens": self.max_tokens,
            "max_answer_chars": self.max_answer_chars,
            "max_input_tokens": self.max_input_tokens, "base_url": self.base_url, "timeout_s": self.timeout_s,
            "prompt": self.prompt, "params": dict(self.params), "concurrency": self.concurrency,
        }

    def described(self) -> dict[str, Any]:
        """Parameters for the manifest, redacted (:func:`judge.providers.redact`): URL credentials and queries,
        header values and secret-named params never reach a file."""
        described: dict[str, Any] = redact(self.model_dump(exclude={"judges"}))  # a mapping stays a mapping
        return described


@dataclass(frozen=True)
class PassPlan:
    """One planned pass: ``pass_key`` is unique within the panel (``spec#index``)."""

    pass_key: str
    judge: str
    pass_index: int
    deterministic: bool


@dataclass
class PanelResult:
    """What a panel run did. Costs are USD; None = unknown (an unpriced model).

    The verdicts themselves are in ``verdicts.jsonl``: ``verdicts`` is a view of that file (each iteration reads
    it), so a 100k batch is not held in memory; ``outcomes`` counts the passes by (status, reason).
    """

    plans: list[PassPlan]
    verdicts: Sequence[Verdict] = field(repr=False)
    outcomes: Counter[tuple[str, str | None]] = field(default_factory=Counter)
    calls: int = 0  # provider attempts made in this run (0 on a fully cached rerun)
    retries: int = 0
    cached: int = 0
    unscored: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None  # all verdicts of the run, as recorded (cached ones at their original cost)
    cost_this_run_usd: float | None = None  # attempts made by this invocation, failed ones included
    wall_s: float = 0.0
    cpu_s: float = 0.0  # this process's CPU time over the run (the client-ceiling note)
    ceiling: ClientCeiling | None = None  # set when this process, not the servers, limited the call rate
    budget_exceeded: bool = False
    budget: RunBudget | None = None
    preflight_calls: int = 0  # requests of the preflight check (not in ``calls``; their cost is in the spend)
    shared_hits: int = 0  # of ``cached``: answers taken from the cache shared across runs (paid by another run)
    batch_lines: list[str] = field(default_factory=list)  # what --batch did (judge.batch.BatchRunner.lines)
    # Servers no longer called because they answered only 429/5xx or nothing (judge.providers.retry.Breaker): one
    # line each, naming the server and the cause; their remaining passes are unscored provider_error, not cached.
    stopped_by: list[str] = field(default_factory=list)

    @property
    def panel_size(self) -> int:
        return len(self.plans)

    @property
    def cost_by_trajectory(self) -> dict[str, float | None]:
        """Trajectory id -> the recorded cost of its verdicts (reads ``verdicts.jsonl``)."""
        costs: dict[str, float | None] = {}
        for verdict in self.verdicts:
            costs[verdict.trajectory_id] = add_costs(costs.get(verdict.trajectory_id), verdict.cost_usd)
        return costs

    def count(self, verdict: Verdict) -> None:
        """Add one written verdict to the totals (in file order, so float sums match a re-read of the file)."""
        self.outcomes[(verdict.status, verdict.reason)] += 1
        self.cached += verdict.cached
        if verdict.status == "unscored":
            self.unscored[verdict.reason or "unknown"] += 1
        self.usage = self.usage + verdict.usage
        self.cost_usd = add_costs(self.cost_usd, verdict.cost_usd)


def build_judges(config: PanelConfig, runtime: CallRuntime | None = None) -> dict[str, Judge]:
    """One judge object per distinct spec (passes of one spec share it, and its rate limits)."""
    specs = config.judges or ["rules"]
    options = config.judge_options(runtime)
    return {spec: make_judge(spec, options) for spec in dict.fromkeys(specs)}


def calls_providers(config: PanelConfig) -> bool:
    """Whether a judge of the panel may call a provider: any spec whose kind is not registered as local
    (:func:`judge.judges.is_local`; a plugin's kind is local only when it says so)."""
    return not all(is_local(spec) for spec in config.judges or ["rules"])


def plan_passes(config: PanelConfig, judges: Mapping[str, Judge] | None = None) -> list[PassPlan]:
    """The panel's passes, in order. Judges are built from the config when not given."""
    judges = judges if judges is not None else build_judges(config)
    specs = config.judges or ["rules"]
    plans: list[PassPlan] = []
    seen: Counter[str] = Counter()  # by name: two URLs that differ only in their query are passes of one judge
    single = len(specs) == 1
    for spec in specs:
        judge = judges[spec]
        deterministic = judge.deterministic
        if deterministic:
            count = 1  # running a deterministic judge again would only repeat its votes
        elif config.passes is not None:
            count = config.passes
        elif single:
            count = judge.default_passes
        else:
            count = 1
        name = redact(spec)
        for _ in range(count):
            seen[name] += 1
            plans.append(PassPlan(f"{name}#{seen[name]}", spec, seen[name], deterministic))
    return plans


def shares_answers(config: PanelConfig, judges: Mapping[str, Judge]) -> bool:
    """Whether the panel uses the cache shared across runs: only paid judges' answers are shared (a rules-only run
    leaves the user's cache folder alone), unless ``no_shared_cache``."""
    return not config.no_shared_cache and any(judge.cacheable for judge in judges.values())


def key_parts(judge: Judge) -> dict[str, Any]:
    """What a judge puts in the cache key of each of its passes: its prompt, provider, model and redacted params
    (a rotated token is the same judge, and no hash of a secret is stored). A run takes them once per judge: built
    and redacted for every pass, they cost more than the key's hash."""
    identity = judge.cache_identity()
    return {"prompt": identity["prompt"], "provider": identity["provider"], "model": identity["model"],
            "params": redact(identity["params"])}


def pass_cache_key(judge: Judge, trajectory_hash: str, pass_index: int, parts: Mapping[str, Any] | None = None) -> str:
    """The judge-call cache key of one pass (content hash, prompt, provider, model, params, pass: the pass index keeps
    passes independent); ``parts``: the judge's :func:`key_parts`, when the caller keeps them."""
    return cache_key(trajectory=trajectory_hash, pass_index=pass_index, **(parts if parts is not None else key_parts(judge)))


async def run_panel(
    trajectories: Iterable[Trajectory],
    config: PanelConfig,
    run_dir: Path,
    *,
    progress: bool = True,
    judges: Mapping[str, Judge] | None = None,
    preflight: bool = False,
    total: int | None = None,
    calls: RunCalls | None = None,
    shared: SharedCache | None = None,
    on_trajectory: Callable[[Trajectory, list[Verdict]], object] | None = None,
) -> PanelResult:
    """Judge every trajectory with every planned pass; see the module docstring. Returns totals.

    ``trajectories`` is streamed (a generator such as ``RunDir.trajectories()`` keeps memory flat); ``total``
    (how many it yields, when it has no ``len``) sizes the progress display, which counts without a total
    otherwise.
    ``calls`` replaces the run's own store and call runtime (:func:`judge.runcalls.open_calls`): a shard of a run
    judged elsewhere passes the calls of the run it belongs to (judge.engine.ledger), so the cache, the
    budget, the rate limits and the record of every attempt stay the run's; with ``calls``, ``shared`` is the
    cache shared across runs to use (None: none), where without it the panel opens the one ``config`` names.
    ``on_trajectory`` is called with each trajectory and its passes once they are written to verdicts.jsonl, in
    input order, on the event loop (``judge score`` scores and routes each trajectory there, while it is in
    memory: :class:`judge.pipeline.FinishStream`); the panel's run.json section is written before the first call.

    Raises :class:`judge.runlock.RunLocked` when another process uses ``run_dir``, and
    :class:`PreflightFailed` (before any pass is judged) when ``preflight`` is set and a judge cannot be used.
    """
    run_dir = Path(run_dir)
    # The collector policy of every streaming pass (judge.collect), as `judge score` runs the panel: without it the
    # trajectories loaded just before (a library caller's list) were walked by the first collections of the run.
    with run_lock(run_dir, "judge panel"), fewer_collections():
        return await _run_panel(trajectories, config, run_dir, progress=progress, judges=judges, preflight=preflight,
                                total=len(trajectories) if isinstance(trajectories, Sized) else total, calls=calls,
                                shared=shared, on_trajectory=on_trajectory)


async def _run_panel(
    trajectories: Iterable[Trajectory],
    config: PanelConfig,
    run_dir: Path,
    *,
    progress: bool,
    judges: Mapping[str, Judge] | None,
    preflight: bool,
    total: int | None,
    calls: RunCalls | None = None,
    shared: SharedCache | None = None,
    on_trajectory: Callable[[Trajectory, list[Verdict]], object] | None = None,
) -> PanelResult:
    started, cpu_started = time.monotonic(), time.process_time()
    own_store = calls is None
    store = RunStore.for_run(run_dir) if calls is None else calls.store
    if own_store:
        # An attempt's outcome and its pass's verdict wait for the next commit (the next attempt's "sent" row, or the
        # flush before the verdict is written below): one commit per call instead of three (judge.store).
        store.defer_answers = True
    verdicts_file: IO[bytes] | None = None
    own_judges = judges is None
    built: dict[str, Judge] = {}
    try:
        if calls is None:
            calls = open_calls(store, config.call_settings())  # we hold the lock: nothing else is sending
        runtime, table, cap = calls.runtime, calls.table, calls.cap
        built = ({spec: check_judge(spec, judge) for spec, judge in judges.items()} if judges is not None
                 else build_judges(config, runtime))
        for judge in built.values():
            judge.share_runtime(runtime)  # one set of limits and one budget for the whole panel
        plans = plan_passes(config, built)
        _write_panel_manifest(run_dir, config, plans, built, cap, calls.store_id)
        verdicts_path = rundir.safe_child(run_dir, rundir.VERDICTS)
        # Rebuilt from the store + new calls (no duplicates), in input order; one handle for the run. Resume reads
        # the store, never this file: rows are flushed one by one only while calls are paid, so that the file shows
        # the progress of a long run (a panel that makes no call recomputes everything after a kill).
        verdicts_file = verdicts_path.open("wb")
        batch_specs = {spec for spec, judge in built.items() if batchable(judge)}  # a provider batch can carry them
        local_specs = {spec for spec, judge in built.items() if judge.provider is None}  # they make no call
        flush_rows = len(local_specs) < len(built)
        if own_store:
            shared = open_shared_cache(shares_answers(config, built), config.cache_dir, warn=_warn)
        if cap is not None:
            unpriced = sorted({j.price_key for j in built.values() if j.price_key and table.lookup(j.price_key) is None})
            for name in unpriced:
                print(f"warning: {name} has no entry in the price table; --max-cost cannot limit its spending",
                      file=sys.stderr)
        result = PanelResult(plans=plans, verdicts=RunDir(run_dir).view(rundir.VERDICTS, Verdict, 0))
        # On stderr (stdout stays for results): a live bar on a terminal, plain lines per tenth elsewhere.
        tracker = Progress("judging", total=None if total is None else total * len(plans), enabled=progress)
        need_hash = any(judge.cacheable for judge in built.values())
        identities = {spec: key_parts(judge) for spec, judge in built.items() if judge.cacheable}  # once per run
        checked: set[str] = set()  # judges whose preflight ran (or that had no pass to run yet)
        preflight_calls = 0
        shared_now = [shared]  # dropped after a failure of the cache, so one warning is enough
        hits: list[str] = []  # shared-cache keys taken and not yet counted in the cache (counted in chunks)
        loop = asyncio.get_running_loop()
        # The content hash of each pass to run, by its cache key, from _decide to the shared cache's put: hashing a
        # real trajectory (~25 KB of canonical JSON) cost ~0.7 ms, once more per pass. Popped when the pass runs.
        hashes: dict[str, str] = {}

        def count_hits() -> None:
            result.shared_hits += len(hits)
            _record_hits(shared, hits)
            hits.clear()

        async def check(specs: set[str]) -> None:
            """Preflight the judges first needed now (once each); note those --batch must call directly."""
            nonlocal preflight_calls
            unchecked = specs - checked
            if not unchecked:
                return
            direct = sorted(redact(s) for s in unchecked if built[s].provider is not None and not batchable(built[s]))
            if config.batch and direct:
                print(f"note: {', '.join(direct)} cannot take batches: called directly", file=sys.stderr)
            if preflight:
                try:
                    preflight_calls += await _preflight(built, unchecked, calls)
                except PreflightFailed as error:
                    error.calls_before = runtime.calls
                    raise
            checked.update(unchecked)

        # --batch: a batch needs every request up front, so the passes are decided and the judges checked before
        # any pass runs, and the batch is out while the direct passes run: such a run holds its trajectories (and
        # their verdicts until the batch ends) in memory.
        ahead: list[tuple[Trajectory, list[Slot]]] | None = None
        batched: list[tuple[Trajectory, PassPlan, str]] = []
        if config.batch and batch_specs:
            ahead = [(t, _decide(t, plans, built, store, need_hash, shared, hits, hashes, identities)) for t in trajectories]
            await check({plan.judge for _, slots in ahead for plan, _, decided in slots if decided is None})
            batched = [(t, plan, key) for t, slots in ahead for plan, key, decided in slots
                       if decided is None and plan.judge in batch_specs]
        batches = BatchRunner(store, calls, built, poll_s=config.batch_poll_interval) if batched else None
        # Passes in input order, each a verdict or the future of one; the committer writes them in that order as they
        # complete (a pass decided without a call, or by a local judge, is queued as its verdict). At most
        # WINDOW are taken ahead of the oldest unwritten one (with --batch: all of them), and only the trajectories
        # of the passes waiting for a worker are held, so memory stays flat however long the batch.
        window = asyncio.Semaphore(WINDOW if ahead is None else max(WINDOW, len(ahead) * len(plans)))
        # With ``on_trajectory``, each trajectory follows its passes in the queue and the committer hands it over
        # once they are written: at most HELD are held that way (with --batch: all, as the batch holds them anyway).
        order: asyncio.Queue[Verdict | asyncio.Future[Verdict] | Trajectory | None] = asyncio.Queue()
        held = asyncio.Semaphore(HELD if ahead is None else max(HELD, len(ahead)))
        work: asyncio.Queue[tuple[Trajectory, PassPlan, str, list[BatchAnswer] | None, asyncio.Future[Verdict]] | None]
        work = asyncio.Queue(maxsize=config.concurrency)

        # Passes being judged, by cache key: an identical trajectory (same content, another id) waits for the one
        # call instead of paying its own. An entry lives while its call does, so this stays small.
        judging: dict[str, asyncio.Future[Verdict]] = {}

        async def run_one(trajectory: Trajectory, plan: PassPlan, key: str, answers: list[BatchAnswer] | None) -> Verdict:
            content_hash = hashes.pop(key, None)
            if not built[plan.judge].cacheable or answers is not None:
                return await judge_one(trajectory, plan, key, answers, content_hash)
            same = judging.get(key)
            if same is not None:
                return _reused(await asyncio.shield(same), trajectory, plan)
            stored = store.get_verdict(key)  # an identical trajectory's pass that ended after this one was planned
            if stored is not None:
                return _reused(Verdict.model_validate(stored), trajectory, plan)
            judging[key] = mine = loop.create_future()
            try:
                verdict = await judge_one(trajectory, plan, key, answers, content_hash)
                mine.set_result(verdict)
                return verdict
            except BaseException:  # cancelled (judge_one turns every error into a verdict): so are those waiting
                mine.cancel()
                raise
            finally:
                del judging[key]

        async def judge_one(trajectory: Trajectory, plan: PassPlan, key: str, answers: list[BatchAnswer] | None,
                            content_hash: str | None = None) -> Verdict:
            judge = built[plan.judge]
            on_send, on_attempt = calls.hooks(key, trajectory.id, plan.judge, plan.pass_index)
            # A pass of several calls keeps each answer as it comes (a judge that says it can: keeps_parts).
            parts = {"parts": calls.parts(key, trajectory.id)} if keeps_parts(judge) else {}
            try:  # a local judge (rules, replay) calls no provider: it has no attempt to report
                if answers is None:
                    verdict = await judge(trajectory, plan.pass_index, on_attempt=on_attempt, on_send=on_send, **parts)
                else:  # first answers from a batch: parsed as direct ones, a corrective retry sent directly
                    batch_judge = cast(BatchJudge, judge)  # answers come from a batch only for batchable judges
                    verdict = await batch_judge.judge_batched(
                        trajectory, plan.pass_index, answers, on_attempt=on_attempt, on_send=on_send, **parts)
            except Exception as error:  # a judge bug must not stop the batch: this pass is unscored, and not cached
                verdict = Verdict(trajectory_id=trajectory.id, judge=plan.judge, pass_index=plan.pass_index,
                                  pass_key=plan.pass_key, status="unscored", reason="provider_error",
                                  detail=scrub(f"the judge failed: {type(error).__name__}: {error}"), attempts=0)
            judge_name = redact(plan.judge)
            if (verdict.pass_key != plan.pass_key or verdict.pass_index != plan.pass_index or verdict.judge != judge_name
                    or verdict.deterministic != plan.deterministic or verdict.cached):
                # The pass's own identity, unless the judge's verdict already states it (a rules verdict does: a copy
                # of every verdict cost more than this test).
                verdict = verdict.model_copy(update={"pass_key": plan.pass_key, "pass_index": plan.pass_index,
                                                     "judge": judge_name, "deterministic": plan.deterministic,
                                                     "cached": False})
            if judge.cacheable and verdict.reason not in NOT_CACHED_REASONS:
                row = verdict.model_dump(mode="json")  # one dump for both stores (neither changes it)
                store.put_verdict(key, trajectory.id, plan.judge, plan.pass_index, row)
                if verdict.status == "ok" and shared_now[0] is not None and not _share(
                        shared_now[0], key, judge, trajectory, plan, row, content_hash, identities[plan.judge]):
                    shared_now[0] = None
            return verdict  # written to verdicts.jsonl by the committer: after the store, so a kill loses nothing

        async def produce(collecting: asyncio.Task[dict[str, list[BatchAnswer]]] | None) -> None:
            waiting: list[tuple[Trajectory, PassPlan, str, asyncio.Future[Verdict]]] = []  # for the batch's answers
            decided = ahead if ahead is not None else (
                (t, _decide(t, plans, built, store, need_hash, shared, hits, hashes, identities)) for t in trajectories)
            for trajectory, slots in decided:
                if on_trajectory is not None:
                    await held.acquire()
                if len(hits) >= HITS_CHUNK:
                    count_hits()
                await check({plan.judge for plan, _, verdict in slots if verdict is None})
                for plan, key, verdict in slots:
                    await window.acquire()
                    batched_now = collecting is not None and plan.judge in batch_specs
                    if verdict is None and not batched_now and plan.judge in local_specs:
                        # A local judge runs on the event loop wherever it is awaited: here it skips the queue.
                        verdict = await run_one(trajectory, plan, key, None)
                    if verdict is not None:
                        order.put_nowait(verdict)
                        continue
                    future: asyncio.Future[Verdict] = loop.create_future()
                    order.put_nowait(future)
                    if batched_now:
                        waiting.append((trajectory, plan, key, future))
                    else:
                        await work.put((trajectory, plan, key, None, future))
                if on_trajectory is not None:
                    order.put_nowait(trajectory)
            if collecting is not None:
                answers = await collecting
                for trajectory, plan, key, future in waiting:  # parsed as direct answers, by the same workers
                    await work.put((trajectory, plan, key, answers[key], future))
            for _ in range(config.concurrency):
                await work.put(None)
            order.put_nowait(None)

        async def worker() -> None:
            # A fixed pool of workers bounds the calls in flight without creating one task per pass up front.
            while (item := await work.get()) is not None:
                trajectory, plan, key, answers, future = item
                future.set_result(await run_one(trajectory, plan, key, answers))

        async def commit() -> None:
            unscored_now = 0
            passes: list[Verdict] = []  # of the trajectory being committed (with ``on_trajectory``)
            while (item := await order.get()) is not None:
                if isinstance(item, Trajectory):
                    assert on_trajectory is not None
                    on_trajectory(item, passes)
                    passes = []
                    held.release()
                    continue
                verdict = item if isinstance(item, Verdict) else await item
                if on_trajectory is not None:
                    passes.append(verdict)
                if own_store:
                    store.flush()  # the store first, as ever: no row in verdicts.jsonl that the store lacks
                _append(verdicts_file, verdict, flush_rows)
                result.count(verdict)
                unscored_now += verdict.status == "unscored"
                if flush_rows and runtime.calls - ceiling_seen[0] >= CEILING_MIN_CALLS:
                    # Every 50 calls, not every verdict: the figure reads /proc and moves slowly.
                    ceiling_seen[:] = [runtime.calls, client_ceiling(
                        runtime.calls, time.process_time() - calls_began[1], time.monotonic() - calls_began[0],
                        config.concurrency, calls.fastest_s, run_queue_wait_s() - calls_began[2])]
                tracker.advance(stats=_progress_stats(runtime, result.cached, unscored_now, calls.cost_usd,
                                                      time.monotonic() - tracker.started, makes_calls=flush_rows,
                                                      ceiling=ceiling_seen[1]))
                window.release()

        # The client-ceiling note looks at the calls' window only: building the judges imports their SDKs (about a
        # second of CPU in a fresh process), which says nothing of the CPU a call costs.
        calls_began = (time.monotonic(), time.process_time(), run_queue_wait_s())
        ceiling_seen: list[Any] = [0, None]  # (calls when last checked, the ClientCeiling then): for the progress line
        collecting = asyncio.create_task(batches.collect(batched)) if batches is not None else None
        tasks = [*([collecting] if collecting is not None else []), asyncio.create_task(produce(collecting)),
                 asyncio.create_task(commit()), *(asyncio.create_task(worker()) for _ in range(config.concurrency))]
        with tracker:
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                # A task failed (a full disk, a failed preflight) or we were interrupted: stop the others before the
                # store closes. Attempts in flight stay recorded as sent, so the next invocation counts them.
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        verdicts_file.close()
        count_hits()
        result.verdicts = RunDir(run_dir).view(rundir.VERDICTS, Verdict, sum(result.outcomes.values()))
        result.calls, result.retries = runtime.calls, runtime.retries
        # nothing sent is $0, not unknown: None is kept for attempts that no price covers (one cost vocabulary)
        result.cost_this_run_usd = calls.cost_usd if calls.cost_usd is not None or runtime.calls else 0.0
        result.wall_s, result.cpu_s = time.monotonic() - started, time.process_time() - cpu_started
        result.ceiling = client_ceiling(runtime.calls, time.process_time() - calls_began[1],
                                        time.monotonic() - calls_began[0], config.concurrency, calls.fastest_s,
                                        run_queue_wait_s() - calls_began[2])
        result.budget_exceeded = runtime.budget.exceeded
        if batches is not None:
            result.calls += batches.requests  # requests sent in batches are calls too (their attempts are recorded)
            result.batch_lines = batches.lines()
        result.budget = calls.budget()
        result.preflight_calls = preflight_calls
        result.stopped_by = [f"{redact(target)}: {cause}" for target, cause in runtime.breaker.tripped.items()]
        write_budget(run_dir, result.budget)
        return result
    finally:
        # Every step runs even when one fails: on a full disk the store's close or the flush of verdicts.jsonl can
        # raise, and the judges' HTTP clients must still be closed ("Unclosed client session" otherwise). The stack
        # runs the callbacks last pushed first: the store, the shared cache, verdicts.jsonl, then the judges.
        async with contextlib.AsyncExitStack() as cleanup:
            if own_judges:
                for judge in built.values():
                    cleanup.push_async_callback(judge.aclose)
            if verdicts_file is not None:
                cleanup.callback(verdicts_file.close)
            if own_store:  # a caller's store and shared cache are its own to close
                if shared is not None:
                    cleanup.callback(shared.close)
                cleanup.callback(store.close)
            if shared is not None:  # first (the stack runs it last pushed first): the verdicts it still keeps
                cleanup.callback(_flush_shared, shared)


class PreflightFailed(RuntimeError):
    """A judge could not answer one tiny request before the batch: ``problems`` has one line per judge.

    ``overloaded`` is True when every failing server only did not answer (429, 5xx, a timeout): the judge's
    settings look right and the same command can simply be run again later; False when a judge is misconfigured
    (no connection, a refused key, an unknown model, a bad request)."""

    def __init__(self, problems: list[str], overloaded: bool = False):
        self.problems = problems
        self.overloaded = overloaded
        self.calls_before = 0  # calls of other judges already made when the check failed (a judge first needed late)
        super().__init__("; ".join(problems))


async def _preflight(judges: Mapping[str, Judge], specs: set[str], calls: RunCalls) -> int:
    """One minimal request to each LLM judge that has passes to run; raise :class:`PreflightFailed` listing the
    judges that cannot be used. Each request is a recorded, paid attempt. Returns how many requests were made."""
    runtime = calls.runtime
    check = dataclasses.replace(runtime, policy=dataclasses.replace(
        runtime.policy, max_retries=PREFLIGHT_RETRIES, max_wait_s=PREFLIGHT_WAIT_S,
        retry_kinds=runtime.policy.retry_kinds - {"timeout"}))
    problems: list[str] = []
    misconfigured = False
    requests = 0
    for spec in sorted(specs):
        provider = judges[spec].provider
        if provider is None:
            continue  # rules, replay and other local judges make no call

        on_send, on_attempt = calls.hooks(PREFLIGHT_KEY, "", spec, 0, timed=False)
        before = check.calls
        try:
            await complete_with_retries(provider, PREFLIGHT_MESSAGES, runtime=check, estimated_input_tokens=16,
                                        on_attempt=on_attempt, on_send=on_send, max_tokens=PREFLIGHT_MAX_TOKENS)
        except BudgetExceeded:
            pass  # the cap is reached already: the batch will say so, the judge is not at fault
        except ProviderError as error:
            if error.kind not in ("context_overflow", "refusal"):  # the server answered: it works
                endpoint = redact(getattr(provider, "endpoint", None)) or "the server"
                tries = len(error.attempts) or 1
                misconfigured = misconfigured or error.kind not in BREAKER_KINDS
                if error.kind in BREAKER_KINDS:
                    problems.append(f"{redact(spec)}: {endpoint} is overloaded or out of quota, not misconfigured: "
                                    f"{unanswered_cause([error], check.timeout_s)} ({tries} attempt(s); the last: {error})")
                elif error.kind == "connection_error":
                    detail = error.args[0] if error.args else ""
                    problems.append(f"{redact(spec)}: cannot connect to {endpoint}: {detail}")
                else:
                    problems.append(f"{redact(spec)}: {endpoint} answered a minimal request with an error: {error}")
        requests += check.calls - before
    if problems:
        raise PreflightFailed(problems, overloaded=not misconfigured)
    return requests


Slot = tuple[PassPlan, str, Verdict | None]  # a pass of one trajectory: its plan, cache key, verdict when decided


def _decide(trajectory: Trajectory, plans: list[PassPlan], judges: Mapping[str, Judge], store: RunStore,
            need_hash: bool, shared: SharedCache | None = None, hits: list[str] | None = None,
            hashes: dict[str, str] | None = None, parts: Mapping[str, Mapping[str, Any]] | None = None) -> list[Slot]:
    """Each pass of one trajectory with its cache key and its verdict when it is decided without a call: from the
    run store (a cached pass), from the cache shared across runs (recorded in the run store at once, as the run's
    record of what it used; its key appended to ``hits``), or unscored ``no_assistant_turn`` for a trajectory
    with no assistant turn. ``None``: the pass must run. The content hash is computed only when some judge is
    cached (``need_hash``); ``hashes`` gets it under the key of each pass that must run. ``parts``: each judge's
    :func:`key_parts` by spec (taken here when a judge has none)."""
    if not trajectory.has_assistant_turn:
        return [(plan, "", Verdict(trajectory_id=trajectory.id, judge=redact(plan.judge), pass_index=plan.pass_index,
                                   pass_key=plan.pass_key, status="unscored", reason=NO_ASSISTANT_TURN,
                                   detail="the trajectory has no assistant turn: there is no decision to judge",
                                   deterministic=plan.deterministic, attempts=0)) for plan in plans]
    content_hash = trajectory.content_hash() if need_hash else ""
    slots: list[Slot] = []
    for plan in plans:
        judge = judges[plan.judge]
        if not judge.cacheable:
            slots.append((plan, "", None))
            continue
        key = pass_cache_key(judge, content_hash, plan.pass_index, parts.get(plan.judge) if parts is not None else None)
        stored = store.get_verdict(key)
        if stored is None and shared is not None:
            stored = _from_shared(shared, shared_key(key, judge), trajectory, plan)
            if stored is not None:
                store.put_verdict(key, trajectory.id, plan.judge, plan.pass_index, stored)
                if hits is not None:
                    hits.append(shared_key(key, judge))
        if stored is None and hashes is not None:
            hashes[key] = content_hash
        slots.append((plan, key, None if stored is None else _reused(Verdict.model_validate(stored), trajectory, plan)))
    return slots


def _reused(verdict: Verdict, trajectory: Trajectory, plan: PassPlan) -> Verdict:
    """A pass answered earlier, as this trajectory's: from the run store (``cached``), or the pass of an identical
    trajectory (the same content under another id), which paid for it: this one costs nothing
    (``original_cost_usd`` says what the call cost)."""
    update: dict[str, Any] = {"trajectory_id": trajectory.id, "pass_key": plan.pass_key, "cached": True}
    if verdict.trajectory_id != trajectory.id and not verdict.cached_from:
        update.update(cost_usd=0.0, original_cost_usd=verdict.cost_usd, usage=Usage(), latency_s=None, attempts=0)
    return verdict.model_copy(update=update)


def _record_hits(shared: SharedCache | None, hits: list[str]) -> None:
    """Count the use of shared answers in the cache (bookkeeping: a failure warns and the run goes on)."""
    if shared is None or not hits:
        return
    try:
        shared.record_hits(hits)
    except sqlite3.Error as error:
        print(f"warning: the shared cache's hit counts were not updated: {error}", file=sys.stderr)


def _from_shared(shared: SharedCache, key: str, trajectory: Trajectory, plan: PassPlan) -> dict[str, Any] | None:
    """The verdict row of this pass built from a shared answer (this run pays nothing for it), or None."""
    try:
        found = shared.get(key)
        if found is None:
            return None
        verdict = Verdict.model_validate(found.verdict)  # a row another trajudge version wrote may not fit: a miss
    except (sqlite3.Error, ValueError):
        return None
    return verdict.model_copy(update={
        "trajectory_id": trajectory.id, "judge": redact(plan.judge), "pass_index": plan.pass_index,
        "pass_key": plan.pass_key, "deterministic": plan.deterministic, "cached": False, "cached_from": SHARED,
        "original_cost_usd": found.cost_usd, "cost_usd": 0.0, "usage": Usage(), "latency_s": None, "attempts": 0,
    }).model_dump(mode="json")


def _share(shared: SharedCache, key: str, judge: Judge, trajectory: Trajectory, plan: PassPlan, row: dict[str, Any],
           content_hash: str | None = None, parts: Mapping[str, Any] | None = None) -> bool:
    """Keep a successful verdict (``row``: its JSON form) in the shared cache; False (with a warning) when the cache
    failed. ``content_hash``: the trajectory's, when it is known already; ``parts``: the judge's :func:`key_parts`."""
    identity = parts if parts is not None else key_parts(judge)
    try:  # kept and stored in chunks (SharedCache.add); the rest when the run ends (_flush_shared)
        shared.add(shared_key(key, judge), row, judge=plan.judge,
                   provider=identity["provider"], model=identity["model"], prompt_version=identity["prompt"],
                   pass_index=plan.pass_index, trajectory_hash=content_hash or trajectory.content_hash())
    except sqlite3.Error as error:
        print(f"warning: the shared cache failed ({error}); from now on this run keeps answers in its own store only",
              file=sys.stderr)
        return False
    return True


def _flush_shared(shared: SharedCache) -> None:
    """Store the verdicts the shared cache still keeps (a failure warns: the run does not depend on the cache)."""
    try:
        shared.flush()
    except sqlite3.Error as error:
        print(f"warning: the shared cache failed ({error}); the run's last verdicts are in its own store only",
              file=sys.stderr)


def _warn(line: str) -> None:
    print(line, file=sys.stderr)


def _append(handle: IO[bytes], verdict: Verdict, flush: bool) -> None:
    """One verdicts.jsonl row (the file stays open for the whole run), flushed when ``flush``."""
    rundir.write_row(handle, verdict)
    if flush:
        handle.flush()


def _write_panel_manifest(run_dir: Path, config: PanelConfig, plans: list[PassPlan], judges: Mapping[str, Judge],
                          cap: float | None, store_id: str | None = None) -> None:
    members: list[PanelMember | str] = []
    versions: set[str] = set()
    for plan in plans:
        judge = judges[plan.judge]
        identity = judge.cache_identity()
        if identity["prompt"] is not None:
            versions.add(identity["prompt"])
        members.append(PanelMember(pass_key=plan.pass_key, judge=redact(plan.judge), pass_index=plan.pass_index,
                                   model=identity["model"], deterministic=plan.deterministic,
                                   prompt_version=identity["prompt"],
                                   endpoint=redact(identity["params"].get("endpoint")),
                                   independence=judge.independence))
    with RunDir(run_dir).update_manifest() as manifest:
        manifest.panel = PanelSection(
            size=len(plans),
            members=members,
            prompt_version=min(versions) if len(versions) == 1 else sorted(versions),
            params={**config.described(), "max_cost_usd": cap},  # the run's cap, wherever it was set
            note="a deterministic judge runs once: a panel of one" if len(plans) == 1 and plans[0].deterministic else None,
        )
        if manifest.budget is None:
            manifest.budget = BudgetSection()
        manifest.budget.max_cost_usd = cap  # before any call: a killed run still records its cap
        manifest.budget.store_id = store_id or manifest.budget.store_id  # and the store that records its spend


@dataclass(frozen=True)
class ClientCeiling:
    """This process was the limit: ``cpu_ms_per_call`` of its CPU per call caps it near ``max_calls_per_s``, below the
    ``servers_allow_per_s`` that the concurrency at the servers' latency allows (what was reached: ``calls_per_s``).
    ``cpu_wait_s`` of the ``wall_s`` the calls took, it was ready to run but waited for a CPU other processes held."""

    cpu_ms_per_call: float
    max_calls_per_s: float
    calls_per_s: float
    servers_allow_per_s: float
    cpu_wait_s: float = 0.0
    wall_s: float = 0.0

    def line(self) -> str:
        shared = (f"; it also waited {self.cpu_wait_s:.1f} s of {self.wall_s:.1f} s for a CPU that other processes "
                  "held (a busy host)" if self.cpu_wait_s >= CPU_WAIT_SHOWN * self.wall_s > 0 else "")
        return (f"this process limited the calls, not the servers: {self.cpu_ms_per_call:.1f} ms of CPU per call caps "
                f"it near {self.max_calls_per_s:.0f} calls/s (it reached {self.calls_per_s:.0f}), below the "
                f"{self.servers_allow_per_s:.0f} calls/s that --concurrency at the servers' latency allows{shared}; "
                "more concurrency will not help: split the batch over processes (--engine ray)")


# The share of the calls' wall time a run must have been running or waiting for a CPU to count as CPU-bound (a run
# that spent most of its time waiting on the servers is far below), and calls below which the rates say nothing.
CEILING_SHARE, CEILING_MIN_CALLS = 0.7, 50
CPU_WAIT_SHOWN = 0.1  # the line names the wait for a CPU from this share of the wall time


def client_ceiling(calls: int, cpu_s: float, wall_s: float, concurrency: int, latency_s: float | None,
                   cpu_wait_s: float = 0.0) -> ClientCeiling | None:
    """Whether this process, rather than the servers, limited the call rate (pure): over the calls' ``wall_s`` it was
    running (``cpu_s``) or ready to run and waiting for a CPU (``cpu_wait_s``, :func:`run_queue_wait_s`) at least
    :data:`CEILING_SHARE` of the time, and the rate its CPU per call allows is below what ``concurrency`` calls in
    flight at the servers' latency (``latency_s``: the quickest answer, the least delayed by this process) would
    give. None when not (or when too few calls were timed to say)."""
    if calls < CEILING_MIN_CALLS or cpu_s <= 0 or wall_s <= 0 or not latency_s:
        return None
    per_call = cpu_s / calls
    most, reached, allowed = 1 / per_call, calls / wall_s, concurrency / latency_s
    if cpu_s + cpu_wait_s < CEILING_SHARE * wall_s or most >= allowed:
        return None
    return ClientCeiling(round(per_call * 1000, 2), round(most, 1), round(reached, 1), round(allowed, 1),
                         round(cpu_wait_s, 1), round(wall_s, 1))


def run_queue_wait_s() -> float:
    """Seconds this process's main thread has waited for a CPU while ready to run, since it started: the second
    field of Linux's ``/proc/self/schedstat`` (nanoseconds). 0.0 where the system does not say."""
    try:
        with open("/proc/self/schedstat", encoding="ascii") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _progress_stats(runtime: CallRuntime, cached: int, unscored: int, cost: float | None, elapsed_s: float,
                    makes_calls: bool = True, ceiling: ClientCeiling | None = None) -> str:
    """The progress line's free text. ``ceiling``: this process, not the servers, limits the calls so far (the run's
    summary says it at length; the line says it while there is still time to stop and split the batch)."""
    if not makes_calls:  # a panel of local judges (rules, replay): a call rate, retries and a cost would all be 0
        return f"unscored {unscored}"
    cost_text = fmt_usd(cost or 0.0) if cost is not None or runtime.calls == 0 else "unpriced"
    bound = (f" · client-bound: {ceiling.cpu_ms_per_call:.1f} ms CPU per call caps it near "
             f"{ceiling.max_calls_per_s:.0f} calls/s" if ceiling is not None else "")
    return (f"{runtime.calls / max(1e-6, elapsed_s):.1f} calls/s · cached {cached} · retries {runtime.retries} · "
            f"unscored {unscored} · cost {cost_text}{bound}")


def describe_result(result: PanelResult) -> dict[str, Any]:
    """The figures of :func:`summary_lines` as data (``judge score --json``). Costs in USD, None = unpriced."""
    budget = result.budget
    return {
        "passes": [plan.pass_key for plan in result.plans],
        "verdicts": len(result.verdicts), "cached": result.cached, "shared_cache_hits": result.shared_hits,
        "calls": result.calls, "retries": result.retries, "batch": result.batch_lines,
        "preflight_requests": result.preflight_calls, "unscored": dict(sorted(result.unscored.items())),
        "cost_usd": result.cost_usd, "cost_this_invocation_usd": result.cost_this_run_usd,
        "budget_exceeded": result.budget_exceeded, "stopped_calling": result.stopped_by,
        "client_ceiling": None if result.ceiling is None else dataclasses.asdict(result.ceiling),
        "budget": None if budget is None else {"max_cost_usd": budget.max_cost_usd, "cap_source": budget.cap_source,
                                               "spent_usd": budget.spent_usd,
                                               "interrupted_calls_found": budget.interrupted_now},
    }


def summary_lines(result: PanelResult) -> list[str]:
    """A few human lines about a panel run (the CLI prints them)."""
    cost = "unpriced" if result.cost_usd is None else fmt_usd(result.cost_usd)
    paid = "unpriced" if result.cost_this_run_usd is None else fmt_usd(result.cost_this_run_usd)  # $0 when nothing was sent
    unscored = ", ".join(f"{reason} {n}" for reason, n in sorted(result.unscored.items())) or "none"
    lines = [
        f"panel: {result.panel_size} pass(es): {', '.join(p.pass_key for p in result.plans)}",
        f"verdicts: {len(result.verdicts)} ({result.cached} from cache"
        + (f", {result.shared_hits} of them from the shared cache at no cost to this run" if result.shared_hits else "")
        + f"), calls made: {result.calls}, retries: {result.retries}"
        + (f", preflight requests: {result.preflight_calls}" if result.preflight_calls else ""),
        f"unscored passes: {unscored}",
        f"cost: {cost} for the run's verdicts; {paid} paid in this invocation"
        + (" - budget cap reached, remaining passes unscored budget_exceeded" if result.budget_exceeded else ""),
    ]
    lines += result.batch_lines
    lines += [f"stopped calling {line}" for line in result.stopped_by]
    if result.ceiling is not None:
        lines.append("note: " + result.ceiling.line())
    budget = result.budget
    if budget is not None and budget.interrupted_now:
        lines.append(f"note: {budget.interrupted_now} call(s) were in flight when an earlier invocation stopped (killed, "
                     "or ended by an error): they "
                     f"may have been billed, and count at their worst case (${budget.interrupted_now_usd:.4f}) in the "
                     "run's spend; their passes were judged again")
    if budget is not None and budget.max_cost_usd is not None:
        source = (" (the cap recorded with the run; pass --max-cost N to raise it)" if budget.cap_source == "recorded"
                  else "")
        lines.append(f"budget: ${budget.spent_usd:.4f} of ${budget.max_cost_usd:.4f} spent by the run over all its "
                     f"invocations{source}")
        if result.budget_exceeded:
            lines.append("the cap holds for the whole run, earlier invocations included: raise it with --max-cost N "
                         "and run the same command again to judge the remaining passes")
    return lines

