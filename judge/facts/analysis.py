"""One pass over a trajectory that every detector reads: actions with their receipts and outcomes, and claims.

An *action* is one tool call with the receipt that answers it. Formats without call ids (Who&When's
``Computer_terminal``) give receipts that follow an assistant message by position: such a receipt is paired
with the first unanswered call of its turn, or, when the turn made no call, becomes an action of its own whose
"call" is the assistant message before it (the code the terminal ran).

Outcomes: ``ok``; ``error`` (the call failed: error flag, non-zero exit code, or error text); ``environment``
(it failed for a reason outside the agent: network, auth, quota, disk); ``missing`` (no receipt: unknown).
Each action also has a *status* read from the exit code and the content together (:data:`Status`): a failed
call whose receipt shows some effect is ``partial``, a success that created nothing is ``noop``, a job the
receipt shows still running or queued is ``running``, a timeout or a missing receipt is ``unknown``.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from judge.derived import TrajectoryMemo
from judge.facts import answers
from judge.facts.checks import (
    cleared_report,
    failure_report,
    failure_summary,
    verdict_table,
    zero_breakdown,
    zero_tally,
)
from judge.facts.config import CompiledPatterns, RulesConfig
from judge.facts.effects import (
    error_envelope,
    failed_column,
    json_shows_effect,
    may_show_no_effect,
    shows_no_effect,
    target_recap,
)
from judge.facts.jobs import job_state, partial_load, value_going
from judge.facts.matching import PhraseGroup, PhraseMatcher
from judge.facts.shell import (
    CommandReading,
    command_is_read_only,
    exit_answer,
    names_verb,
    object_keys,
    read_command,
    segment_hits,
    segment_names_check,
    segment_read_only,
    sends_request,
    words_of,
)
from judge.jsonenc import canonical_json
from judge.model import Message, Receipt, ToolCall, Trajectory

Outcome = Literal["ok", "error", "environment", "missing"]
Status = Literal["ok", "failed", "partial", "unknown", "noop", "running"]

# Stops that end a sentence wherever they stand: CJK full stops, the Devanagari danda, the Arabic question mark.
_STOPS = "。！？।؟"
_EXTENSIONS = (r"\.(?:py|js|ts|tsx|jsx|json|jsonl|ya?ml|md|txt|csv|tsv|sh|go|rs|java|kt|php|toml|html|css|scss|sql|cfg|"
               r"conf|ini|rb|c|h|cpp|xml|log|ipynb|png|jpe?g|gif|svg|pdf|xlsx?|docx?|pptx|parquet|zip|gz|tgz|db|sqlite)")
_PATH_TOKEN = re.compile(r"(?<![\w/.-])([\w./-]*[\w-]" + _EXTENSIONS + r")\b")
# Every path token holds a dot and an extension: this literal-led search (fast) rules most sentences out first.
_HAS_EXTENSION = re.compile(_EXTENSIONS)
_BACKTICK = re.compile(r"`([^`\n]{3,80})`")
_IDENTIFIER = re.compile(r"\b([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)\b")
# Record ids, booking codes: GV1N64, SKU-001. Written as \b(?=[A-Z0-9-]*\d)([A-Z][A-Z0-9-]{4,})\b, with the
# leading \b as a look-behind after the first letter: a pattern that starts with a character class lets ``re``
# skip to candidate letters (3x faster on prose); the matches are the same.
_CODE = re.compile(r"([A-Z](?<!\w.)(?=[A-Z0-9-]*\d)[A-Z0-9-]{4,})\b")
_CODE_BLOCK = re.compile(r"```[\w+-]*\n(.*?)```", re.DOTALL)
_OPEN_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s*\[ \][^\n]*", re.MULTILINE)
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)  # a fenced block, or an unclosed one to the end of the text
# Link targets and URLs name pages, not files or ids the agent claims anything about.
_LINK = re.compile(r"\]\([^)\s]*\)|https?://\S+|\b(?:www\.)\S+")
_DOC_SUFFIXES = (".md", ".txt", ".rst")
_JSON_REASON = re.compile(r'"(msg|message|error|detail|reason)"\s*:', re.IGNORECASE)  # a JSON error body's reason
_EXIT_LINE = re.compile(r"^\s*(error:\s*)?exit ?code:?\s*-?\d+\s*(\(execution failed\))?\s*$", re.IGNORECASE)


@dataclass(slots=True)
class Action:
    """One tool call (or, for id-less logs, one executed message) and what came back."""

    order: int
    turn: int
    message_index: int  # the assistant message that made the call
    call: ToolCall | None
    name: str
    intent: str  # what the call tries to do, coarser than key: a later success of the same intent is a recovery
    receipt: Receipt | None = None
    receipt_index: int | None = None  # message index of the receipt
    outcome: Outcome = "missing"
    error_line: str = ""  # the receipt line that shows the failure (for evidence)
    is_plan: bool = False
    is_check: bool = False
    read_only: bool = False
    shows_content: bool = False  # its output is file content: only flags and exit codes can say it failed
    link_check: bool = False  # a link checker: HTTP statuses in its receipt are its findings
    program: str = ""  # the program a shell command runs (its last command of a chain), for exit-code meanings
    uncertain: bool = False  # a state-changing call whose effect is unknown (timed out, "may or may not have applied")
    reported: bool = False  # a check that ran and reported failures: evidence about the work, not a failed call
    status: Status = "unknown"  # outcome read with the content: partial, noop, running (see the module doc)
    silent_failure: bool = False  # a check that exited 0 while its output reports failures
    answer: str = ""  # what an exit code that answers "no" means ("no match", "differ"): the call did its job
    # Why its data shows the request refused or answered with an error only, behind a success flag ("the receipt's
    # status is 'declined'", "the read was refused ('HTTP/2 404')"): judge.facts.answers; its status is "failed".
    refusal: str = ""
    writes: tuple[str, ...] = ()
    # Computed on first use (most actions never need them): see the ``text`` and ``key`` properties.
    arguments: str | None = field(default=None, repr=False)
    identity: str | None = field(default=None, repr=False)
    # The shell command of the call (:func:`command_of`), read once when the action is made: detectors and the
    # ledger ask for it a hundred times a trajectory.
    command: str | None = field(default=None, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The call's arguments as text (canonical JSON), for matching names of files and objects."""
        if self.arguments is None:
            self.arguments = self.call.argument_text() if self.call is not None else ""
        return self.arguments

    @property
    def key(self) -> str:
        """Tool name + canonical arguments (without the prose keys of the config): identical calls share it."""
        if self.identity is None:
            self.identity = f"{self.name}\x00{self.text}"
        return self.identity

    @property
    def failed(self) -> bool:
        return self.outcome in ("error", "environment")

    @property
    def visible_at(self) -> int:
        """Message index from which the agent could know the result (after the receipt; never, if none)."""
        return self.receipt_index if self.receipt_index is not None else 1 << 30


@dataclass(slots=True)
class Sentence:
    """A claim sentence and what the phrase lists say about it (read once, when the message is analysed)."""

    text: str
    is_claim: bool
    is_check_claim: bool
    hedged: bool
    mentions_failure: bool
    tokens: tuple[str, ...]
    creation: bool = False  # "created", "已写入": refers to the last write
    test_claim: bool = False  # "all tests pass"
    done_claim: bool = False  # "all done", "3/3"
    pass_claim: bool = False  # "all checks passed", "alles grün": needs a real check that passed
    actions: tuple[str, ...] = ()  # claimed actions (config ``actions``: push, restart...)
    counts: tuple[int, ...] = ()  # claimed counts ("6 records written"): each must be shown by a receipt
    future: bool = False  # future or promised ("will be done", "将在...完成"): claims nothing done yet
    resolution: bool = False  # says an earlier problem was handled ("the error is fixed"): a claim despite its failure words
    item: bool = False  # an item of a "what I did" list in a report: a claim by its structure, read by its values

    @property
    def asserts(self) -> bool:
        """Whether the sentence asserts a result: a claim that is not hedged, negated or a no-op report, and does
        not speak of a failure (unless it says the failure was handled: "the error is fixed" claims a result)."""
        return self.is_claim and not self.hedged and (self.resolution or not self.mentions_failure)


@dataclass(slots=True)
class Speech:
    """The text of one assistant message and the sentences of it that claim something."""

    message_index: int
    turn: int
    name: str | None
    text: str
    region: str  # the part of the text that is read for claims and references (long messages: both ends)
    sentences: list[Sentence]  # the claim sentences (only those)
    has_calls: bool
    mentions_failure: bool  # a claiming message that speaks of a failure or problem: it reports one, not hides it
    speaks_of_failure: bool = False  # the region has failure words at all (prior_failure list)
    phantom: str | None = None  # the sentence that refers to an earlier failure ("that failed, retry"), if any
    # The sentences that assert (see judge.rules.detectors._claims), found on first use: three detectors ask.
    claims: list[Sentence] | None = field(default=None, compare=False, repr=False)


@dataclass
class Analysis:
    """Everything the detectors need, computed once per trajectory and config."""

    trajectory: Trajectory
    config: RulesConfig
    patterns: CompiledPatterns
    actions: list[Action]
    speeches: list[Speech]
    final_message_index: int | None  # the last assistant message
    multi_agent: bool
    # (id, turn, resolved): a reused call id; resolved when the earlier use was answered before the reuse
    duplicate_call_ids: list[tuple[str, int, bool]] = field(default_factory=list)
    orphan_receipts: list[tuple[str, int, int]] = field(default_factory=list)  # (call id, message index, turn)
    cache: dict[str, Any] = field(default_factory=dict)  # per-analysis memo of detector helpers

    def excerpt(self, text: str) -> str:
        return excerpt(text, self.config.receipt.excerpt_chars)

    def recovered(self, action: Action, before: int | None = None) -> Action | None:
        """A later successful action of the same intent (visible before message ``before``, if given). A read
        does not redo a failed write (``lark-cli base record list`` after a failed ``record create``), nor does a
        success that changed nothing (a no-op)."""
        successes: dict[str, _Successes] | None = self.cache.get("ok_by_intent")
        if successes is None:
            grouped: dict[str, list[Action]] = {}
            for candidate in self.actions:
                if candidate.outcome == "ok" and candidate.status != "noop":
                    grouped.setdefault(candidate.intent, []).append(candidate)
            successes = self.cache["ok_by_intent"] = {intent: _Successes(group) for intent, group in grouped.items()}
        found = successes.get(action.intent)
        if found is None:
            return None
        return found.first_after(action, before, lambda later: action.read_only or not later.read_only)

    def resolved(self, action: Action, before: int | None = None) -> Action | None:
        """:meth:`recovered`, or for a call whose effect is unknown (``uncertain``) a later successful call that
        names one of its argument values (a read-back of the reservation, the file, the record it changed)."""
        later = self.recovered(action, before)
        if later is not None or not action.uncertain:
            return later
        values = argument_values(action)
        successes: _Successes | None = self.cache.get("ok_in_order")
        if successes is None:
            successes = self.cache["ok_in_order"] = _Successes([a for a in self.actions if a.outcome == "ok"])
        return successes.first_after(action, before, lambda candidate: any(v in candidate.text for v in values))

    def actions_before(self, message_index: int) -> list[Action]:
        """Actions whose receipts the agent had seen before ``message_index``."""
        return [a for a in self.actions if a.visible_at < message_index]

    def turn_of(self, message_index: int) -> int:
        return self.trajectory.messages[message_index].turn or 0


class _Successes:
    """Successful actions in call order, to find the first after a given action, seen before a given message,
    that passes a test: a bisect to the first later one, and the earliest sighting of each suffix, so that a
    failure nothing got past before the message costs O(log n), not a scan of every later call."""

    def __init__(self, actions: list[Action]):
        self.actions = actions
        self.orders = [a.order for a in actions]
        self.first_seen = [a.visible_at for a in actions] + [1 << 31]  # then: the earliest from each index on
        for k in range(len(actions) - 1, -1, -1):
            self.first_seen[k] = min(self.first_seen[k], self.first_seen[k + 1])

    def first_after(self, action: Action, before: int | None, passes: Callable[[Action], bool]) -> Action | None:
        """The first success after ``action`` (seen before message ``before``, if given) for which ``passes``."""
        for k in range(bisect.bisect_right(self.orders, action.order), len(self.actions)):
            if before is not None and self.first_seen[k] >= before:
                return None  # nothing from here on was seen in time
            later = self.actions[k]
            if (before is None or later.visible_at < before) and passes(later):
                return later
        return None


def excerpt(text: str, limit: int) -> str:
    if len(text) > 4 * limit + 64:
        # A long text (a whole receipt): its head flattened is a prefix of the whole flattened; when that already
        # runs past the limit, the excerpt is its cut (no split of the rest).
        head = " ".join(text[: 4 * limit + 64].split())
        if len(head) > limit:
            return head[: limit - 1] + "…"
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def analyse(trajectory: Trajectory, config: RulesConfig) -> Analysis:
    """Build the shared view of ``trajectory`` (pure: reads only the trajectory and config)."""
    patterns = config.patterns
    messages = trajectory.messages
    actions: list[Action] = []
    by_call_id: dict[str, list[Action]] = {}
    seen_ids: set[str] = set()
    duplicates: list[tuple[str, int, bool]] = []
    orphans: list[tuple[str, int, int]] = []
    spoken: list[int] = []  # assistant messages, read after the loop in one batch
    receipted: list[Action] = []  # actions with a receipt, classified after the loop in one batch
    last_assistant: int | None = None
    names: set[str] = set()

    for index, message in enumerate(messages):
        if message.role == "assistant":
            last_assistant = index
            if message.name:
                names.add(message.name)
            for call in message.tool_calls:
                if call.id in seen_ids:
                    answered = all(a.receipt is not None for a in by_call_id.get(call.id, []))
                    duplicates.append((call.id, message.turn or 0, answered))
                seen_ids.add(call.id)
                action = _make_action(len(actions), index, message, call, config, patterns)
                actions.append(action)
                by_call_id.setdefault(call.id, []).append(action)
            spoken.append(index)
        elif message.role == "tool" and message.receipt is not None:
            receipt = message.receipt
            action = None
            if receipt.call_id:
                candidates = by_call_id.get(receipt.call_id)
                if not candidates:
                    orphans.append((receipt.call_id, index, message.turn or 0))
                    continue
                # A reused call id: receipts answer its calls in order; a receipt beyond them is a duplicate.
                for action in candidates:
                    if action.receipt is None:
                        break
                else:
                    action = None
                if action is None:
                    duplicates.append((receipt.call_id, message.turn or 0, False))
                    continue
            else:
                action = _positional_action(actions, message, index, messages, last_assistant, config, patterns)
                if action is None:
                    continue
            action.receipt = receipt
            action.receipt_index = index
            receipted.append(action)

    _classify_actions(receipted, config, patterns)
    _read_answers(receipted, patterns)
    _background_logs(actions, config)
    read: dict[str, Sentence] = {}
    speeches = _speeches(messages, spoken, config, patterns, read)
    if actions:
        _read_summaries(speeches, messages, patterns, read)

    # Importers make reused ids unique (``id#2``) and record the renaming: still a reused id in the source log.
    # Resolved when every earlier call under the same source id had its receipt before the reuse.
    renamed = trajectory.metadata.extra.get("renamed_call_ids")
    if isinstance(renamed, dict):
        source_of = {str(new): str(original) for new, original in renamed.items()}
        for new_id, original in source_of.items():
            for action in by_call_id.get(new_id, []):
                earlier = [a for a in actions if a.order < action.order and a.call is not None
                           and source_of.get(a.call.id, a.call.id) == original]
                resolved = all(a.receipt_index is not None and a.receipt_index < action.message_index for a in earlier)
                duplicates.append((original, action.turn, resolved))

    return Analysis(
        trajectory=trajectory,
        config=config,
        patterns=patterns,
        actions=actions,
        speeches=speeches,
        final_message_index=last_assistant,
        multi_agent=len(names) > 1,
        duplicate_call_ids=duplicates,
        orphan_receipts=orphans,
        cache={"sentences": read},  # the claim sentences read, by text (see read_sentences)
    )


# The analyses of the last trajectory objects analysed, without the trajectory (see judge.derived).
# A pass takes each trajectory from the judge to the gate within a few dozen others. Kept analyses outlive their
# use: many would be promoted to the collector's oldest generation and make its full collections frequent.
ANALYSIS_MEMO_LIMIT = 256
_ANALYSED: TrajectoryMemo[tuple[RulesConfig, dict[str, Any]]] = TrajectoryMemo(ANALYSIS_MEMO_LIMIT)
_FIELDS = tuple(f.name for f in fields(Analysis) if f.name != "trajectory")


def analysis_of(trajectory: Trajectory, config: RulesConfig) -> Analysis:
    """:func:`analyse`, once per trajectory object and config: the rules judge and the release gate's
    authenticity checks, run on the same object, share one analysis (and the detectors' findings on it).

    Reused only for the very object it was made from, as :class:`~judge.derived.TrajectoryMemo` tells; a copy or
    an edited trajectory is a new object and is analysed again.
    """
    kept = _ANALYSED.get(trajectory)
    if kept is not None and kept[0] is config:
        return Analysis(trajectory, **kept[1])
    analysis = analyse(trajectory, config)
    _ANALYSED.put(trajectory, (config, {name: getattr(analysis, name) for name in _FIELDS}))
    return analysis


def classify_receipt(receipt: Receipt, config: RulesConfig, patterns: CompiledPatterns) -> tuple[Outcome, str]:
    """Outcome of one receipt and the line that shows a failure ("" when it succeeded)."""
    reading = _classify(receipt, config, patterns)
    return reading.outcome, reading.line


@dataclass(frozen=True, slots=True)
class Reading:
    """What one receipt says, from its flags and text (memoised per receipt text, flags and mode)."""

    outcome: Outcome
    line: str  # the line that shows the failure ("" when it succeeded)
    reports_checks: bool = False  # it reports checks passing or failing ("3 passed", "FAIL")
    uncertain: bool = False  # it leaves the effect of the call unknown (a timeout, "may or may not have been applied")
    invocation_error: bool = False  # the command itself was wrong (not found, bad option): nothing was checked
    shows: str = ""  # what the content adds to the outcome: "partial", "noop", "running" or "" (see Status)
    reports_failures: bool = False  # it reports failed checks ("2 failed", "FAIL:"), whatever its exit code
    # A failure its content shows behind an explicit success (exit 0): an error envelope, a count of errors. This
    # reading says "error"; ``exit0`` is the reading the success had, kept for a check, a plan or a read, whose
    # exit-0 failures are not failed calls (a check's are silent-check-failure's).
    exit0: Reading | None = None
    counted: bool = False  # the failure behind the success is a count of errors (not an envelope or a statement)


# Receipt reading modes: the text says nothing for file content (flags only); HTTP statuses and network errors
# in a link checker's report are its findings, not the environment.
NORMAL, CONTENT, LINK_CHECK = 0, 1, 2
_OK = Reading("ok", "")


def _classify(receipt: Receipt, config: RulesConfig, patterns: CompiledPatterns, mode: int = NORMAL) -> Reading:
    """What ``receipt`` says (see :class:`Reading`).

    ``mode=CONTENT`` (a read-only call: its output is file content) trusts only the error flag and the exit code.
    Memoised per config: identical receipts are common ("Todos have been modified successfully.", the shared
    prefix of a continuation and its source trajectory), and the answer depends on nothing else.
    """
    key = (receipt.content, receipt.is_error, receipt.exit_code, mode)
    cached: Reading | None = patterns.memo_receipts.get(key)
    if cached is None:
        cached = patterns.remember(patterns.memo_receipts, key, _classify_uncached(receipt, config, patterns, mode),
                                   len(receipt.content))
    return cached


def _mode(action: Action) -> int:
    return CONTENT if action.shows_content else LINK_CHECK if action.link_check else NORMAL


def _classify_actions(actions: list[Action], config: RulesConfig, patterns: CompiledPatterns) -> None:
    """Set outcome, failure line and flags of every answered action: :func:`_classify` for all of a trajectory's
    receipts at once, with one literal scan of the receipts the memo does not know."""
    memo = patterns.memo_receipts
    unknown: list[tuple[Action, Receipt, Any, str]] = []  # (action, its receipt, memo key, window)
    for action in actions:
        receipt = action.receipt
        assert receipt is not None
        # What a read-only call shows is file content, not a message of the tool: only its flags count.
        mode = _mode(action)
        key = (receipt.content, receipt.is_error, receipt.exit_code, mode)
        cached = memo.get(key)
        if cached is None:
            window = _receipt_window(receipt, config, mode != CONTENT)
            if window is None:
                cached = patterns.remember(memo, key, _OK, len(receipt.content))
            else:
                unknown.append((action, receipt, key, window))
                continue
        _set_outcome(action, cached, config)
    if not unknown:
        return
    lows = [window.lower() for _, _, _, window in unknown]
    founds = patterns.receipt_lists.gate.find_many(lows)
    for (action, receipt, key, window), low, found in zip(unknown, lows, founds):
        group = patterns.receipt_lists

        def hit(name: str, window: str = window, low: str = low, found: frozenset[str] = found,
                group: PhraseGroup = group) -> re.Match[str] | None:
            return group.search_one(name, window, low, found)

        cached = patterns.remember(memo, key, _classify_hits(receipt, window, hit, patterns, key[3]),
                                   len(receipt.content))
        _set_outcome(action, cached, config)


_HTTP_CLIENTS = frozenset({"curl", "wget", "http", "https", "xh"})
HTTP_CLIENTS = _HTTP_CLIENTS  # programs whose calls are HTTP requests (a download with -o sends nothing)


def _set_outcome(action: Action, reading: Reading, config: RulesConfig) -> None:
    # A request the server refused (its own 4xx status line) checked nothing, whatever its URL says (a test send
    # answered 400): a failed call, not a check's findings.
    # (A read answered 404 may be the point: a deletion confirmed. Only a call that asked for something counts: a
    # CLI call that is no read, an HTTP client call that sends a method or a body.)
    command = action.command
    refused = ("" if action.link_check or action.read_only or action.receipt is None or command is None
               or ("://" in command and not sends_request(command)) else answers.refused_status_line(action.receipt.content))
    if refused:
        action.is_check = False
        action.refusal = f"the receipt shows {refused}"
        if reading.outcome == "ok":
            reading = Reading("error", refused)
    checks_by_call = action.is_check
    # A receipt that reads like a check's report makes the call a check, unless the call names a write
    # (deploy-all.sh, conda env create) and what reads like verdicts is its own run's: a per-target recap ("host-c:
    # FAILED"), a step's stated failure ("Solving environment: failed").
    # A table of verdicts (a status column holding pass and fail cells) reports checks too, in a CSV or aligned (Z22).
    reports_checks = (reading.reports_checks or (
        action.receipt is not None and not action.read_only and not action.is_check and not action.is_plan
        and verdict_table(action.receipt.content, config.patterns.failure_statuses))) \
        and not (_names_write(action, config) and _reports_own_run(action, config))
    if reading.exit0 is not None and not refused \
            and (checks_by_call or reports_checks or action.is_plan
                 or (action.read_only and action.program not in _HTTP_CLIENTS)
                 or (reading.counted and _reports_on_input(action, config))):
        # A check's failures behind exit 0 are silent-check-failure's (one finding, not two); a read shows data
        # (an HTTP GET's body is the server's answer to that request: its error envelope is the call's failure).
        reading = reading.exit0
    answered = _exit_answer(action, reading, config)
    if answered is not None:
        action.answer, reading = answered
    action.outcome, action.error_line = reading.outcome, reading.line
    # A run that no name makes a check (a build, a bundle, a rollout) and whose exit code says it failed is a failed
    # run, whatever verdict-like lines it printed on the way ("error TS2322", "lintVitalRelease FAILED", "12/40 failed
    # health check"): the work it was to do was not done (v4-swe-he-build-fails, v6-app-en-keystore-missing,
    # v10-mob-en-bundle-lint-vital, v11-gm-ja-rollout-region-halt).
    failed_run = (not checks_by_call and reading.outcome == "error" and action.receipt is not None
                  and bool(action.receipt.exit_code))
    if reports_checks and not action.is_plan and not action.read_only and not refused and not failed_run:
        action.is_check = True  # it reported checks passing/failing: it was a check (a read or an echo never is)
    receipt = action.receipt
    # Exit codes some programs reserve for network / auth faults (curl 6: could not resolve host).
    if (action.outcome == "error" and receipt is not None and receipt.exit_code and action.program
            and receipt.exit_code in config.tools.environment_exit_codes.get(action.program, ())):
        action.outcome = "environment"
        action.error_line = action.error_line or f"{action.program} exit code {receipt.exit_code}"
    # A state-changing call that timed out may or may not have taken effect; a read that timed out changed nothing.
    action.uncertain = reading.uncertain and not action.read_only and action.outcome != "ok"
    # A check that ran and reported failures found something: evidence, not an error of the agent's call.
    if (action.is_check and action.outcome == "error" and reading.reports_failures and not reading.invocation_error
            and receipt is not None and not receipt.is_error and not receipt.exit_code and _masks_exit(action, config)):
        # Only the text reports failures and the command line made its exit status 0 (`|| true`, a pipe into tail,
        # --exit-zero): the log holds no flag to say so, but the harness saw a success. A tick or claim that relies
        # on it is silent-check-failure's case, not a failed call.
        action.outcome = "ok"
    action.reported = (action.is_check and action.outcome == "error" and reading.reports_checks
                       and not reading.invocation_error)
    if action.outcome == "error" and not action.reported and not action.is_plan and _answers_with_records(receipt):
        action.is_check = action.reported = True  # a scanner's findings with its verdict as exit code
    action.status = status_of(action, reading)
    if action.status == "ok" and reading.shows == "noop" and action.is_check and not checks_by_call \
            and not reading.reports_failures and not action.read_only and not action.is_plan:
        # A call no name makes a check, whose receipt reads as a report only by a status word ("ok", "exit status:
        # ok") and whose content says it did nothing ("nothing imported", "no changes to save"): a no-op, as the
        # structural reading below has it (v14-eg-en-meter-window-empty, v14-rp-ne-promo-empty-list).
        action.status, action.is_check = "noop", False
    if action.status == "ok" and (conflict := _create_conflict(action, config)):
        action.outcome, action.status, action.error_line = "error", "failed", conflict  # the object was there already
    if action.status == "noop" and receipt is not None and "{" in receipt.content \
            and json_shows_effect(receipt.content, config.patterns.effect_keys):
        action.status = "ok"  # "updated": 0 beside "inserted": 12: a zero of one part, the write did something
    # A load that "succeeded" but whose data shows records turned away: part of the work failed.
    if action.status == "ok" and not action.read_only and not action.is_check and not action.is_plan \
            and receipt is not None and (why := partial_load(receipt.content)) is not None:
        action.outcome, action.status, action.error_line = "error", "partial", why
    if action.status == "ok" and not action.read_only and not action.is_check and not action.is_plan \
            and receipt is not None and (items := answers.item_failures(receipt.content, config.patterns.error_envelope,
                                                               config.patterns.effect_keys)):
        # A batch's answer holds one outcome per item and some items failed: partial (or failed, when all did).
        action.outcome, action.status, action.error_line = "error", "partial" if items[1] else "failed", items[0]
    if action.status == "ok" and not action.read_only and not action.is_check and not action.is_plan \
            and receipt is not None and (why := answers.field_errors(receipt.content)):
        action.outcome, action.status, action.error_line = "error", "failed", why  # a validation answer, exit 0
    if action.status == "ok" and _shows_no_effect(action, config, checks_by_call):
        action.status = "noop"
        action.is_check = checks_by_call  # its counts said what it did ("0 records imported"): no check's verdict
    # Its data (a status field, a column, a fraction) shows a job not finished (a log read with tail is a poll too).
    if (action.status == "ok" and receipt is not None
            and _job_going(receipt.content, config.patterns)
            and not _echoed(action, receipt) and not _counts_asked_state(action, receipt)):
        action.status = "running"
    action.silent_failure = action.is_check and action.outcome == "ok" and reading.reports_failures
    tools = config.tools
    if action.silent_failure and receipt is not None \
            and cleared_report(receipt.content, tuple(tools.failure_nouns), tuple(tools.failure_statuses)):
        action.silent_failure = False  # "3 errors (3 fixed, 0 remaining)": the fixer cleared what it counted
    elif action.is_check and not action.silent_failure and _reports_failure_silently(action, reading, config):
        # The harness saw a success, the output's structure reports failures: evidence relied on, not a failed call.
        action.outcome, action.error_line, action.reported, action.status = "ok", "", False, "ok"
        action.silent_failure = True


def _create_conflict(action: Action, config: RulesConfig) -> str:
    """The line of the answer to a call that names a create (``tools.create_verbs``: ``kubectl create``,
    ``+record-create``, ``add_user.py``) that says its object exists already (the ``create_conflict`` list), or ""."""
    receipt, command = action.receipt, action.command
    if receipt is None or command is None or action.read_only or action.is_check or action.is_plan:
        return ""
    found = config.patterns.create_conflict.search(receipt.content[:20_000])
    if found is None or _names_write_of(command, config.patterns.create_verbs) is None:
        return ""
    return _line_at(receipt.content, found.start())


def _reports_own_run(action: Action, config: RulesConfig) -> bool:
    """Whether the receipt sums up the call's own run: a per-target recap with a failed target, or a failure the
    run states (the ``stated_failure`` list)."""
    receipt = action.receipt
    if receipt is None:
        return False
    patterns = config.patterns
    text = receipt.content[:20_000]
    return (target_recap(text, patterns.target_recap) is not None
            or patterns.stated_failure.search(text) is not None)


def _names_write(action: Action, config: RulesConfig) -> bool:
    """Whether the action's shell command names a write by its verb (:func:`judge.facts.shell.names_write`)."""
    command = action.command
    return command is not None and _names_write_of(command, config.patterns.write_verbs) is not None


@functools.lru_cache(maxsize=2048)
def _names_write_of(command: str, writes: frozenset[str]) -> str | None:
    """:func:`judge.facts.shell.names_verb`, memoised (commands repeat across a batch)."""
    return names_verb(command, writes)


def _reports_on_input(action: Action, config: RulesConfig) -> bool:
    """Whether the call is a report over the data it reads (its program, script or subcommand names a report:
    ``summarize.py``, ``csvstat``, ``report``; no write verb, no file written): the errors it counts are findings
    in that data ("errors: 3 (malformed dates)"), not failures of its own run."""
    command = action.command
    patterns = config.patterns
    return (command is not None and not action.writes and _names_write_of(command, patterns.report_verbs) is not None
            and _names_write_of(command, patterns.write_verbs) is None)


def _reports_failure_silently(action: Action, reading: Reading, config: RulesConfig) -> bool:
    """A check the log does not flag (no error flag, exit code 0 or none, no "Exit code N" line) whose output
    reports failures by structure (:func:`judge.facts.checks.failure_report`), in any language."""
    receipt = action.receipt
    if (receipt is None or receipt.is_error or receipt.exit_code or reading.invocation_error
            or action.outcome not in ("ok", "error") or _EXIT_LINE.match(receipt.content.partition("\n")[0])):
        return False
    tools = config.tools
    nouns, statuses = tuple(tools.failure_nouns), tuple(tools.failure_statuses)
    if action.outcome == "error" and receipt.exit_code is None and not _echoes_masked_recipe(receipt.content) \
            and not failure_summary(receipt.content, nouns, statuses):
        # No exit code, and only rows that say FAIL (an agent's own script printing per-item verdicts): read as a
        # failed check, as the log's text shows it; a runner's summary ("2 failed, 10 passed") behind a success is
        # the wrapper's exit 0 (a harness writes "Exit code N" when it was not).
        return False
    return bool(failure_report(receipt.content, nouns, statuses))


def _echoes_masked_recipe(content: str) -> bool:
    """Whether a receipt's first lines echo a command whose exit status is masked (make prints the recipe it runs:
    ``cargo test --workspace || true``): the failures it prints after it were swallowed."""
    return any(read_command(line).masks_exit for line in content.splitlines()[:3] if line.strip())


_BACKGROUND = re.compile(r"(?<![&>|])&\s*(?:$|\n)|\bnohup\b")


# A call that deletes (an HTTP DELETE, a verb that takes records away) and an answer that the object is not there
# (a 404/410 status, an API's not-found code): language-neutral shapes.
_DELETES = re.compile(r"""(?:^|\s)(?:-X|--request)\s*['"]?DELETE\b|(?:^|\s)(?:https?|xh)\s+DELETE\s"""
                      r"|\b(?:delete|remove|destroy|rm|del|purge|prune|truncate|unlink|dedupe|dedup|deduplicate)\b",
                      re.IGNORECASE)
_NOT_FOUND = re.compile(r"\b(?:404|410)\b|not[\s_-]?found|no[\s_-]?such|resource[\s_-]missing", re.IGNORECASE)


def deletes(command: str) -> bool:
    """Whether a call's text deletes (an HTTP DELETE, a verb that takes records away: delete, remove, destroy,
    purge, prune, truncate, dedupe): a read-back after it shows what is left, not what the call made."""
    return _DELETES.search(command) is not None


def _read_answers(actions: list[Action], patterns: CompiledPatterns) -> None:
    """What each receipt the outcome reading left ``ok`` / ``unknown`` / ``noop`` answered by its data
    (:mod:`judge.facts.answers`, read once here for the judge, the gate and the editor): a refusal or an error-only
    answer makes it ``failed`` (with :attr:`Action.refusal`), a state line of a job going makes it ``running``. A
    read's document describes a resource (its ``"status": "cancelled"`` is the order's): only an error answer or a
    refused-read shape is a refusal of a read. A read of a file shows the file, not an answer of a service."""
    for position, action in enumerate(actions):
        receipt = action.receipt
        if action.status not in ("ok", "unknown", "noop") or receipt is None or action.is_plan or not receipt.content:
            continue
        content = receipt.content
        why = None
        if not action.shows_content:
            reads = _only_reads(action, patterns)
            lists = (patterns.refusal_values, patterns.grant_keys, patterns.error_meta_keys)
            found = answers.refusal(content, not reads, *lists)
            if found is not None and found[1] and answers.stem(found[1]) in (own := answers.own_stems(action.name,
                                                                                                      action.text)):
                found = answers.refusal(content, not reads, *lists, own)  # "cancelled" answers a cancel call
            why = found[0] if found is not None else None
            if why is None and reads and action.command is not None and not receipt.is_error \
                    and not receipt.exit_code:
                why = answers.refused_read(action.command, content, patterns.refused_reads)
            if why is None and reads and "{" in content and answers.error_only_answer(
                    content, patterns.error_meta_keys, patterns.error_only_keys,
                    patterns.error_envelope.get("failed_states", ())):
                why = "the read answered with an error only, no data"
        if why is not None and reads and _NOT_FOUND.search(content) and _deleted_before(actions[:position], action,
                                                                                       patterns):
            why = None  # the deletion's read-back: "not found" is what it was meant to show
        if why is not None:
            action.refusal = why
            action.status, action.outcome = "failed", "error"
            action.error_line = action.error_line or answers.first_output(content)[:200] or why
        elif answers.job_going(content, patterns.running, patterns.steady_states) \
                and not _echoed(action, receipt):
            action.status = "running"


def _deleted_before(earlier: list[Action], read: Action, patterns: CompiledPatterns) -> bool:
    """Whether a successful earlier call deleted an object the ``read`` names (by object identity:
    :func:`judge.facts.shell.object_keys`). Asked only of a read answered "not found" (rare): the earlier statuses
    are final by then, so a refused deletion does not count."""
    if read.command is None:
        return False
    named = {name for name, _ in object_keys(read.command, patterns.object_flags, patterns.action_segments)}
    return bool(named) and any(
        earlier_action.command is not None and earlier_action.status == "ok" and _DELETES.search(earlier_action.command)
        and any(name in named for name, _ in object_keys(earlier_action.command, patterns.object_flags,
                                                          patterns.action_segments))
        for earlier_action in earlier)


def _only_reads(action: Action, patterns: CompiledPatterns) -> bool:
    """Whether an action only reads or checks: the ledger's read-only or check, or a command every segment of which
    only reads or is a check the rules config lists as read-only (``read_only_checks``: a curl GET, mypy)."""
    if action.read_only or action.is_check:
        return True
    return action.command is not None and _command_only_reads(action.command, patterns)


def _command_only_reads(command: str, patterns: CompiledPatterns) -> bool:
    """Whether every segment of ``command`` only reads or is a check listed as read-only (memoised per config)."""
    known = patterns.memo_reads.get(command)
    if known is None:
        known = patterns.remember(patterns.memo_reads, command, command_is_read_only(
            command, lambda segment: patterns.listed_read_only(segment) or patterns.read_only_check.search(segment) is not None,
            patterns.read_only_verbs, patterns.write_verbs)[0], len(command))
    return known


def _background_logs(actions: list[Action], config: RulesConfig) -> None:
    """A read of a log that a background command writes (``nohup npm run build > build.log &``, then ``tail
    build.log``) polls that job: when the log's last line says work is going (it starts with a present participle
    or a waiting word, ``transforming (530) src/...``), the read shows the job still running."""
    logs: set[str] = set()
    for action in actions:
        if action.call is None:
            continue
        if action.writes and not action.read_only:
            command = action.command
            if command is not None and "&" in command and _BACKGROUND.search(command):
                logs.update(action.writes)
            continue
        receipt = action.receipt
        if (logs and action.read_only and action.status == "ok" and receipt is not None
                and any(log in action.text for log in logs)):
            last = next((ln for ln in reversed(receipt.content.splitlines()) if ln.strip()), "")
            word = last.strip().split(" ", 1)[0].lower().strip(".…:")
            if word and value_going(word, config.patterns.running):
                action.status = "running"


def _echoed(action: Action, receipt: Receipt) -> bool:
    """Whether a short receipt only repeats a word the call itself gave (``echo checking`` -> ``checking``): the
    call printed its own words, it polled no job."""
    text = receipt.content.strip()
    return len(text) <= 80 and re.search(r"(?<![\w-])" + re.escape(text) + r"(?![\w-])", action.text) is not None


def _answers_with_records(receipt: Receipt | None) -> bool:
    """Whether a receipt with a failing exit code is all data: after the harness's "Exit code N" line, a JSON array
    of records, none of them an error body. The program ran and answered (a scanner listing its findings, a query
    listing what it matched); its exit code is its verdict on them, as a check's is, not a failure to run."""
    if receipt is None or "[" not in receipt.content:
        return False
    first, _, rest = receipt.content.partition("\n")
    text = (rest if _EXIT_LINE.match(first) else receipt.content).strip()
    if not text.startswith("[") or not text.endswith("]") or len(text) > 200_000:
        return False
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return (isinstance(value, list) and bool(value) and all(isinstance(item, dict) and item for item in value)
            and not any(_JSON_REASON.search(json.dumps(list(item))) for item in value))


_STATEMENT_VERB = re.compile(r"""(?<=["'])\s*([A-Za-z]{4,})\b""")


def _job_going(content: str, patterns: CompiledPatterns) -> bool:
    """Whether a receipt's data shows a job not finished (:func:`~judge.facts.jobs.job_state`), once per text."""
    return patterns.read_once("job_going", content, lambda: job_state(content, patterns.running, ends=False)
                              == "non-terminal", len(content))


def _shows_no_effect(action: Action, config: RulesConfig, checks_by_call: bool) -> bool:
    """Whether the successful receipt of a call meant to change state shows by its structure that nothing was
    created or changed (:func:`judge.facts.effects.shows_no_effect`), read with the words of the call that say what
    it does (its subcommand words, else its tool name). A read, a plan or a check by its command is never a no-op;
    a call that is a check only because its output counted findings ("0 errors") may be."""
    receipt = action.receipt
    if receipt is None or action.read_only or action.is_plan or checks_by_call or action.call is None:
        return False
    if not may_show_no_effect(receipt.content):
        return False  # no zero, no empty collection, no null: nothing can show "none" (most receipts)
    command = action.command
    if command is None and action.writes:
        return False  # an editor's file write: its receipt shows the file, not a count of what it did
    if command is None:
        verbs = [action.name]
    else:
        verbs = []
        for word in command.split()[1:5]:
            if word.startswith("-") or word in ("&&", "|", ";"):
                break
            verbs.append(word)
        verbs += _STATEMENT_VERB.findall(command)  # an SQL statement's verb: UPDATE ... -> "UPDATE 0"
    patterns = config.patterns
    asked = {int(n) for n in _ASKED_NUMBER.findall(command or action.text)[:_MAX_ASKED]}
    create = _names_write_of(command or action.name, patterns.create_verbs) is not None
    content = receipt.content
    asked = {n for n in asked if n >= 2}
    return patterns.read_once("shows_no_effect", (content, tuple(verbs), frozenset(asked), create), lambda: shows_no_effect(
        content, verbs, effect_keys=patterns.effect_keys, asked=asked, side_counts=patterns.side_counts, create=create),
        len(content))


# A number the call gives as an argument ("--qty 40", "count=12", '"qty": 30'): not part of a date, a version, a path,
# an id ("SKU-4471", "v1.2", "2026-11-30"). The receipt's "0 of 40" is read against them.
_ASKED_NUMBER = re.compile(r"(?<![\w.\-/])(\d{1,7})(?![\w.\-/:])")
_MAX_ASKED = 32


def _exit_answer(action: Action, reading: Reading, config: RulesConfig) -> tuple[str, Reading] | None:
    """When the call's non-zero exit code answers "no" (the rules config's ``exit_answers``: grep 1 = no match,
    diff 1 = differ), the answer and the reading of its receipt without the code; None otherwise. Not when the
    text shows an error besides the code (``cd missing && grep x`` stopped at cd), nor for a check that runs
    something, whose status is its verdict (``pytest | grep -q passed``)."""
    receipt = action.receipt
    if reading.outcome != "error" or receipt is None or not receipt.exit_code or action.call is None:
        return None
    command = action.command
    # A check that only reads (`gh pr checks 88`: exit 8 = pending) answers by its own documented code.
    if action.is_check and (command is None or not _command_only_reads(command, config.patterns)):
        return None
    answer = None if command is None else _exit_answer_of(command, receipt.exit_code, config.patterns)
    if answer is None:
        return None
    first, _, rest = receipt.content.partition("\n")
    text = rest if _EXIT_LINE.match(first) else receipt.content  # the harness's "Exit code 1" line is the code again
    again = _classify(Receipt(call_id=receipt.call_id, content=text), config, config.patterns, _mode(action))
    return (answer, again) if again.outcome == "ok" else None


def _exit_answer_of(command: str, code: int, patterns: CompiledPatterns) -> str | None:
    """:func:`~judge.facts.shell.exit_answer` of the config's ``exit_answers``, memoised per config."""
    memo = patterns.memo_exit_answers
    key = (command, code)
    if key in memo:
        return memo[key]
    return patterns.remember(memo, key, exit_answer(command, code, patterns.exit_answers), len(command))


def _masks_exit(action: Action, config: RulesConfig) -> bool:
    """Whether the action's shell command makes its exit status 0 whatever its checks found (see
    :attr:`~judge.facts.shell.CommandReading.masks_exit`)."""
    command = action.command
    if command is not None and action.receipt is not None and _MAKE_IGNORED.search(action.receipt.content):
        return True  # make ran the failing recipe line with '-': it says "(ignored)" and exits 0
    return command is not None and read_command(command).masks_exit


def status_of(action: Action, reading: Reading) -> Status:
    """The status of an answered action (see :data:`Status`): the outcome, refined by what the content shows."""
    if action.outcome == "ok":
        if reading.shows == "running":
            return "running"
        # A read or a check that finds nothing has done its job; only a call meant to change state can be a no-op.
        if reading.shows == "noop" and not action.read_only and not action.is_check and not action.is_plan:
            return "noop"
        return "ok"
    if reading.shows == "partial" and not action.read_only:
        return "partial"
    if action.uncertain:
        return "unknown"
    return "failed"


def _receipt_window(receipt: Receipt, config: RulesConfig, text_signals: bool) -> str | None:
    """The part of a receipt that is read (its first and last lines, clipped); None when its flags say "ok"
    and its text is not to be read (``text_signals=False``)."""
    text = receipt.content or ""
    explicit_failure = receipt.is_error or (receipt.exit_code is not None and receipt.exit_code != 0)
    if not text_signals and not explicit_failure:
        return None
    settings = config.receipt
    # Most receipts are short: count line breaks (C speed) before splitting into lines.
    if text.count("\n") + 1 > settings.head_lines + settings.tail_lines or "\r" in text:
        lines = text.splitlines()
        window = "\n".join(lines[: settings.head_lines] + lines[-settings.tail_lines :] if settings.tail_lines else lines[: settings.head_lines])
    else:
        window = text
    return clip(window, settings.head_chars, settings.tail_chars)  # one-line JSON dumps can be huge


def _classify_uncached(receipt: Receipt, config: RulesConfig, patterns: CompiledPatterns, mode: int = NORMAL) -> Reading:
    window = _receipt_window(receipt, config, mode != CONTENT)
    if window is None:
        return _OK
    low = window.lower()
    found = patterns.receipt_lists.gate.find(low)
    return _classify_hits(receipt, window, lambda name: patterns.receipt_lists.search_one(name, window, low, found),
                          patterns, mode)


def _classify_hits(
    receipt: Receipt, window: str, hit: Callable[[str], re.Match[str] | None], patterns: CompiledPatterns,
    mode: int = NORMAL,
) -> Reading:
    """What a receipt says from its flags and the phrase lists' matches in its window (``hit(list)``: a list is
    searched only when its answer can change the outcome)."""
    text = receipt.content or ""
    explicit_failure = receipt.is_error or (receipt.exit_code is not None and receipt.exit_code != 0)
    uncertain = hit("uncertain") if mode != LINK_CHECK else None
    environment = (hit("environment") or uncertain) if mode != LINK_CHECK else None
    explicit_success = (receipt.exit_code == 0 and not receipt.is_error) or hit("success") is not None
    error = None if explicit_success and not explicit_failure else hit("error")
    if error is not None and not explicit_failure and (
            _ZERO_COUNT_LINE.fullmatch(line := _line_at(window, error.start()))
            or zero_tally(line, patterns.failure_nouns, patterns.failure_statuses)):
        # "0 failed", "failed: 0", "1 chart(s) linted, 0 chart(s) failed" with no exit code: a tally of no failure;
        # another line may still say one.
        error = patterns.error.search(_ZERO_COUNT_LINES.sub("", _zero_tallies_out(window, patterns)))
    reports_checks = hit("check_receipt") is not None
    if not (explicit_failure or error or environment) or (explicit_success and not explicit_failure and not environment):
        # A success by its flags: the content may still say the job is only queued, that nothing was created,
        # or (a check) that some of what it checked failed.
        going = hit("running")
        shows = "running" if going is not None and not _listed_value(window, going) else "noop" if hit("noop") else ""
        counted = hit("check_failure")
        # "3 problems (0 errors, 3 warnings)": a total whose breakdown counts no failure is no failed check.
        failures = counted is not None and not zero_breakdown(line := _line_at(window, counted.start()), patterns.failure_nouns) \
            and not zero_tally(line, patterns.failure_nouns, patterns.failure_statuses)
        success = _OK if not (reports_checks or shows or failures) else Reading(
            "ok", "", reports_checks, shows=shows, reports_failures=failures)
        behind = _failure_behind_success(receipt, window, hit, patterns) if mode == NORMAL else None
        if behind is None:
            return success
        line, effect, counted_errors = behind
        return Reading("error", line, reports_checks, shows="partial" if effect else "", reports_failures=failures,
                       exit0=success, counted=counted_errors)
    if error is not None and not explicit_failure and not environment and hit("noop") is not None:
        # "warning: unknown flag --upsert ignored" with no exit code: the tool went on and did nothing (a no-op).
        warned = _line_at(window, error.start()).lower()
        if warned.startswith(("warning", "warn:", "notice")) or "ignor" in warned:
            return Reading("ok", "", reports_checks, shows="noop")
    shown = environment or error
    line = _line_at(window, shown.start()) if shown else (text.splitlines() or [""])[0]
    if _EXIT_LINE.match(line):
        line = _reason_after_exit_line(window, patterns) or line
    if environment:
        return Reading("environment", line, reports_checks, uncertain is not None,
                       shows="partial" if hit("partial") or _targets_succeeded(text, hit, patterns) else "")
    invocation = reports_checks and hit("invocation_error") is not None
    return Reading("error", line or f"exit code {receipt.exit_code}", reports_checks, False, invocation,
                   shows="partial" if hit("partial") or _envelope_effect(receipt, patterns) or _targets_succeeded(text, hit, patterns)
                   else "",
                   reports_failures=reports_checks or hit("check_failure") is not None)


def _listed_value(window: str, going: re.Match[str]) -> bool:
    """Whether a going word stands as one element of a JSON list of strings (``"options": ["Nowe", "W toku"]``): an
    enumerated value (a field's options, tags), not the state of a job (Z22: v5-lb-pl-five-options)."""
    before = window[: going.start()].rstrip()
    after = window[going.end():].lstrip()
    return before.endswith('"') and before[:-1].rstrip()[-1:] in ("[", ",") \
        and after.startswith('"') and after[1:].lstrip()[:1] in (",", "]")


# A state key counting things: "active: 2318", "active=12".
_STATE_COUNT = re.compile(r"^\s*\"?([a-z_]+)\"?\s*[:=]\s*\d+\s*,?\s*$", re.MULTILINE)


def _counts_asked_state(action: Action, receipt: Receipt) -> bool:
    """Whether the receipt counts things in the state the call itself filtered by (``fleetctl devices count
    --status active`` -> ``active: 2318``): a count of devices, not a job going (Z22: v12-io-pt-active-count-twin).
    A k8s job's ``"active": 1`` comes from a call that names no state."""
    command = action.command
    if not command or "=" not in command and "--" not in command:
        return False
    keys = {m.group(1).lower() for m in _STATE_COUNT.finditer(receipt.content[:2000])}
    return bool(keys) and all(re.search(rf"(?:--[\w-]+[ =]|[\w.]+=)['\"]?{re.escape(key)}\b", command) for key in keys)


def _zero_tallies_out(window: str, patterns: CompiledPatterns) -> str:
    """``window`` without its zero-tally lines (:func:`judge.facts.checks.zero_tally`)."""
    return "\n".join(line for line in window.split("\n")
                     if not zero_tally(line, patterns.failure_nouns, patterns.failure_statuses))


# A line that is one count of zero and its label ("0 failed", "failed: 0", "errors=0"): it counts no failure.
_ZERO_COUNT_LINE = re.compile(r"\s*(?:0[ \t]+[^\W\d_]+|[^\W\d_]+[ \t]*[:=][ \t]*0)[ \t]*[.,;]?[ \t]*")
_ZERO_COUNT_LINES = re.compile(r"^\s*(?:0[ \t]+[^\W\d_]+|[^\W\d_]+[ \t]*[:=][ \t]*0)[ \t]*[.,;]?[ \t]*$",
                               re.MULTILINE)


def _failure_behind_success(receipt: Receipt, window: str, hit: Callable[[str], re.Match[str] | None],
                            patterns: CompiledPatterns) -> tuple[str, bool, bool] | None:
    """The failure a receipt's content shows although its flags say success (exit 0, "exit code: 0", no flag):
    ``(line, shows_effect, counted)``, or None. Read by structure first: a JSON error envelope
    (:func:`judge.facts.effects.error_envelope`: ``{"error": {...}}``, ``{"ok": false}``, ``{"code": 99991663,
    "msg": ...}``), a per-target recap with a target failed (:func:`judge.facts.effects.target_recap`: ansible's
    PLAY RECAP, "3 succeeded, 1 failed"), a summary table with an error column above zero, the run's own count of
    errors above zero or its "failed" summary (the ``failure_count`` list: "3 errors", "BUILD FAILED"), then a
    failure a resolver or a service states (the ``stated_failure`` list: "ResolvePackageNotFound", "duplicate
    key"). ``shows_effect``: the same receipt shows some work done (an effect count in the envelope, targets that
    succeeded, or the ``partial`` list: "6 of 10 synced"). ``counted``: the failure is read from counts or rows
    (a recap, a column, a count of errors), which a report over its input prints about the data it read."""
    text = receipt.content
    if "{" in text:
        envelope = error_envelope(text, patterns.error_envelope, patterns.effect_keys)
        if envelope is not None:
            return envelope[0], envelope[1], False
    recap = target_recap(text, patterns.target_recap) if hit("recap_failing") is not None else None
    if recap is not None:
        return recap[2], recap[0] > 0, True  # some targets failed: partial beside targets that succeeded
    columns = patterns.error_envelope.get("columns", ())
    # A table is read only when its header can name an error column (most receipts with a pipe are no such table).
    counted = failed_column(window, columns) if (("|" in window or "\t" in window)
                                                  and any(c in window.lower() for c in columns)) else ""
    if counted:
        return counted, hit("partial") is not None, True
    found = hit("failure_count")
    if found is not None:
        return _line_at(window, found.start()), hit("partial") is not None, True
    found = hit("stated_failure")
    if found is not None:
        return _line_at(window, found.start()), hit("partial") is not None, False
    return None


def _targets_succeeded(text: str, hit: Callable[[str], re.Match[str] | None], patterns: CompiledPatterns) -> bool:
    """Whether a failed run's per-target recap shows other targets that succeeded (ansible's PLAY RECAP with one
    host failed, "3 succeeded, 1 failed"): the run was partial, not a failure that did nothing."""
    if hit("recap_succeeding") is None:
        return False  # nothing in the receipt's window can name a target that succeeded (most failures)
    recap = target_recap(text, patterns.target_recap)
    return recap is not None and recap[0] > 0


def _envelope_effect(receipt: Receipt, patterns: CompiledPatterns) -> bool:
    """Whether a failed receipt is a JSON error envelope that also shows work done (``{"success": false,
    "imported": 7, ...}``): the call was partial."""
    if "{" not in receipt.content:
        return False
    envelope = error_envelope(receipt.content, patterns.error_envelope, patterns.effect_keys)
    return envelope is not None and envelope[1]


def _reason_after_exit_line(window: str, patterns: CompiledPatterns) -> str:
    """ "Exit code 1" says that a call failed; the lines after it usually say why. Pick the best of them."""
    rest = window.split("\n", 1)[1] if "\n" in window else ""
    match = (patterns.environment.search(rest) or patterns.error.search(rest) or _JSON_REASON.search(rest)
             or patterns.prior_failure.search(rest))
    if match is not None:
        return _line_at(rest, match.start())
    return next((ln.strip() for ln in rest.splitlines() if len(ln.strip()) > 3), "")


def _line_at(text: str, position: int) -> str:
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return text[start : end if end >= 0 else len(text)].strip()


def argument_values(action: Action) -> list[str]:
    """The string values of a call's arguments that can name what it changed (ids, paths): 4 characters or more,
    no spaces (free text such as a message body names nothing)."""
    args = action.call.arguments if action.call is not None else None
    if not isinstance(args, dict):
        return []
    return [v for v in args.values() if isinstance(v, str) and len(v) >= 4 and " " not in v and "\n" not in v]


def command_of(call: ToolCall, config: RulesConfig) -> str | None:
    """The shell command of a Bash-like call (first string argument under a command key)."""
    args = call.arguments
    if isinstance(args, dict):
        keys = config.tools.command_keys
        if args.keys().isdisjoint(keys):  # most calls have none of them: one test in C
            return None
        for key in keys:
            value = args.get(key)
            if isinstance(value, str):
                return value
    if isinstance(args, str):
        return args
    return None


_INTERPRETERS = {"python", "python3", "node", "bash", "sh", "ruby", "perl"}


def _command_head(reading: CommandReading) -> str:
    """The first words of a command that name what it does (program, subcommand), before any flag or value.

    In a chain (``a && b``) the last command decides the outcome, so its head is the intent (chains are split
    outside quotes: a jq filter's ``||`` is an argument). ``python -m X`` keeps the module; inline code
    (``python -c CODE``) is its own intent, so one snippet does not "recover" another.
    """
    last = reading.last_chained or reading.command.strip()
    tokens = last.split()
    words: list[str] = []
    for position, word in enumerate(tokens):
        if words and words[0] in _INTERPRETERS and word in ("-m", "-c") and position + 1 < len(tokens):
            rest = " ".join(tokens[position + 1 :]) if word == "-c" else tokens[position + 1]
            return " ".join(words + [word, rest[:200]])
        if word.startswith("-") or any(ch in word for ch in "'\"={}[]<>|;&$") or len(words) == 3:
            break
        words.append(word)
    return " ".join(words)


def _read_command(command: str, patterns: CompiledPatterns) -> tuple[str, bool, bool, bool, bool, tuple[str, ...]]:
    """(intent head, read-only, check, shows file content, link check, files written by redirects / ``tee`` /
    ``sed -i``) of a shell command, read by :mod:`judge.facts.shell`; memoised (commands repeat)."""
    cached: tuple[str, bool, bool, bool, bool, tuple[str, ...]] | None = patterns.memo_commands.get(command)
    if cached is None:
        hits = patterns.command_lists.search_all(command.strip())
        reading = read_command(command)

        listed = patterns.listed_read_only

        def reads(segment: str) -> bool:
            return segment_read_only(segment, patterns.read_only_verbs, patterns.write_verbs)[0] or listed(segment)

        read_only = command_is_read_only(command, listed, patterns.read_only_verbs, patterns.write_verbs)[0]
        # The check and content lists are read per segment. A segment that only reads is never a check (`echo
        # pytest`); the whole-command hit is a cheap first test. The output is file content when a segment shows
        # a file and every other one only reads (`cd docs && cat guide.md`, `git log | head`): `pytest | tail`
        # and `pytest; cat log` print a check's output, whose failures must still be read.
        segments = [segment.text for segment in reading.segments]
        # A CLI segment whose own command words name a check and no write (`payctl run preview --checks`, `wmsctl
        # count reconcile`) is a check, even when its verbs read: its report is a verdict, and a check is no
        # read-only call (v10, v12).
        named = [segment_names_check(text, patterns.check_verbs, patterns.write_verbs) for text in segments]
        named_check = any(named)
        check = named_check or hits["check"] is not None and any(
            hit and not reads(text)
            for text, hit in zip(segments, segment_hits(command, lambda text: patterns.check.search(text) is not None)))
        read_only = read_only and not named_check
        shows = segment_hits(command, lambda text: patterns.content_command.search(text) is not None)
        content = any(shows) and all(hit or (reads(text) and not check_segment)
                                     for text, hit, check_segment in zip(segments, shows, named))
        writes = reading.writes + tuple(w for w in _structured_writes(reading, patterns, reads) if w not in reading.writes)
        read_only = read_only and not writes
        cached = patterns.remember(patterns.memo_commands, command, (
            _command_head(reading), read_only, check, content, hits["link_check"] is not None, writes),
            len(command))
    return cached


# A write target worth a version: a file or folder path (a dot or a slash), not a flag, setting or variable.
_WRITE_TARGET = re.compile(r"[^\s=$`-][^\s=$`]*[./][^\s=$`]*")


def _structured_writes(reading: CommandReading, patterns: CompiledPatterns,
                       reads: Callable[[str], bool]) -> tuple[str, ...]:
    """The files a command line writes by its structure, beyond redirects and ``sed -i`` (issue 24 item 2): the
    value of an output flag (``pandoc -o out.pdf``, ``script.py --output=r.csv``) and the last operand of a program
    that writes there (``cp a.py src/app.py``, ``ffmpeg -y -i in.mov out.mp4``); flag names and programs are data
    (``tools.output_flags``, ``tools.last_operand_writers``). A segment that only reads writes nothing (``grep -o``)."""
    flags, writers = patterns.output_flags, patterns.last_operand_writers
    if not flags and not writers:
        return ()
    found: list[str] = []
    for segment in reading.segments:
        words = words_of(segment.text)
        if len(words) < 2 or reads(segment.text):
            continue
        for position, word in enumerate(words[1:], 1):
            name, eq, value = word.partition("=")
            if name in flags and name.startswith("--") and eq:
                found.append(value)
            elif word in flags and position + 1 < len(words):
                found.append(words[position + 1])
        if words[0].rsplit("/", 1)[-1] in writers:
            operands = [w for w in words[1:] if not w.startswith("-")]
            if len(operands) >= 2:
                found.append(operands[-1])
    return tuple(dict.fromkeys(f for f in found if _WRITE_TARGET.fullmatch(f)))


_NAME_KINDS = ("plan_name", "write_name", "read_only_name", "check_name", "content_name")


def _name_kinds(name: str, patterns: CompiledPatterns) -> tuple[bool, ...]:
    """Whether tool ``name`` is in each list of :data:`_NAME_KINDS`, memoised per config (names repeat)."""
    kinds = patterns.memo_names.get(name)
    if kinds is None:
        kinds = patterns.remember(patterns.memo_names, name, tuple(patterns.name_is(kind, name) for kind in _NAME_KINDS))
    return kinds


def _make_action(order: int, index: int, message: Message, call: ToolCall, config: RulesConfig, patterns: CompiledPatterns) -> Action:
    name = call.name
    command = command_of(call, config)
    path = _path_argument(call, config)
    plan_name, write_name, read_only_name, check_name, content_name = _name_kinds(name, patterns)
    is_plan = plan_name and _plan_items(call) is not None
    writes: tuple[str, ...] = ()
    link_check = False
    program = ""
    if command:
        head, read_only_hit, check_hit, content_hit, link_check, command_writes = _read_command(command, patterns)
        program = head.split(" ", 1)[0].rsplit("/", 1)[-1]
    if path and write_name and not _is_view(call):
        writes = (path,)
    elif command:
        writes = command_writes
    if command:
        intent = f"{name}:{head}"
        read_only = read_only_hit and not writes
        # Reading a results file or echoing "tests passed" checks nothing: a read-only command is never a check.
        is_check = (check_hit or link_check) and not read_only
        shows_content = content_hit and not writes
    else:
        intent = f"{name}:{path}" if path else name
        read_only = read_only_name or _is_view(call)
        is_check = check_name
        shows_content = content_name or _is_view(call)
    identity = None
    if isinstance(call.arguments, dict) and not patterns.prose_keys.isdisjoint(call.arguments):
        # The agent's prose about the call (a Bash ``description``) is no part of what it does: a re-issue that only
        # words it differently, in any language, is the same call.
        kept = {k: v for k, v in call.arguments.items() if k not in patterns.prose_keys}
        identity = f"{name}\x00{canonical_json(kept)}"
    return Action(
        order=order,
        turn=message.turn or 0,
        message_index=index,
        call=call,
        name=name,
        intent=intent,
        identity=identity,
        is_plan=is_plan,
        is_check=is_check and not is_plan,
        read_only=read_only and not is_plan,
        shows_content=shows_content and not is_plan,
        link_check=link_check,
        program=program,
        writes=writes,
        command=command,
    )


def _positional_action(
    actions: list[Action],
    message: Message,
    index: int,
    messages: list[Message],
    last_assistant: int | None,
    config: RulesConfig,
    patterns: CompiledPatterns,
) -> Action | None:
    """Pair an id-less receipt with its turn's first unanswered call, or make the executed message an action."""
    turn = message.turn or 0
    for action in actions:
        if action.turn == turn and action.receipt is None and action.call is not None:
            return action
    if last_assistant is None:
        return None
    source = messages[last_assistant]
    code = "\n".join(_CODE_BLOCK.findall(source.content)) or source.content
    name = message.receipt.name if message.receipt and message.receipt.name else (message.name or "tool")
    key = hashlib.sha256(f"{name}\x00{code}".encode()).hexdigest()[:16]
    action = Action(
        order=len(actions),
        turn=turn,
        message_index=last_assistant,
        call=None,
        name=name,
        intent=name,
        arguments=code,
        identity=key,
    )
    actions.append(action)
    return action


def _path_argument(call: ToolCall, config: RulesConfig) -> str | None:
    args = call.arguments
    if isinstance(args, dict):
        keys = config.tools.path_keys
        if args.keys().isdisjoint(keys):  # most calls have none of them: one test in C
            return None
        for key in keys:
            value = args.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def _is_view(call: ToolCall) -> bool:
    # str_replace_editor-style tools multiplex view and write through a `command` argument.
    args = call.arguments
    return isinstance(args, dict) and args.get("command") in ("view", "read", "list")


def _plan_items(call: ToolCall) -> list[dict[str, Any]] | None:
    args = call.arguments
    if isinstance(args, dict):
        for key in ("todos", "plan", "items", "tasks"):
            items = args.get(key)
            if isinstance(items, list) and all(isinstance(i, dict) and "status" in i for i in items):
                return items
    return None


def plan_items(call: ToolCall) -> list[tuple[str, str, str]]:
    """(key, text, status) of each todo item of a plan call; the key is the item id, else its text."""
    result = []
    for item in _plan_items(call) or []:
        text = str(item.get("content") or item.get("step") or item.get("title") or item.get("task") or "")
        key = str(item.get("id") or " ".join(text.lower().split()))
        result.append((key, text, str(item.get("status", "")).lower()))
    return result


_NUMBER = re.compile(r"\d+")
_MAKE_IGNORED = re.compile(r"^g?make(\[\d+\])?: \[[^\]\n]*\] Error \d+ \(ignored\)", re.MULTILINE)
_CLAUSE = re.compile(r"\s[—–]\s|\s--?\s|;\s|[；؛]")  # clause breaks inside a sentence (dashes, semicolons)
# Sentence ends: [.!?] before whitespace (not the dot of "report.csv"), any of the _STOPS, or a line break.
_SENTENCE_END = re.compile(rf"[.!?](?=\s)|[{_STOPS}]|\n")


def _speeches(messages: list[Message], indexes: list[int], config: RulesConfig, patterns: CompiledPatterns,
              read: dict[str, Sentence]) -> list[Speech]:
    """The :class:`Speech` of each assistant message at ``indexes``; the texts the memo does not know are read
    together, with one literal scan of them all. ``read`` collects the claim sentences read, by text."""
    memo = patterns.memo_speeches
    readings: list[Any] = []
    unknown: list[tuple[int, str, str]] = []  # (position in readings, text, region)
    for index in indexes:
        text = messages[index].content or ""
        cached = memo.get(text)
        if cached is None:
            unknown.append((len(readings), text, clip(text, config.message.head_chars, config.message.tail_chars)))
        readings.append(cached)
    if unknown:
        lows = [region.lower() for _, _, region in unknown]
        founds = patterns.speech_lists.gate.find_many(lows)
        # An agent repeats its sentences within a trajectory ("Running the tests now.", "All tests pass.") in
        # messages that differ elsewhere: each distinct sentence is read once (readings are shared, never changed).
        for (position, text, region), low, found in zip(unknown, lows, founds):
            readings[position] = patterns.remember(memo, text, _read_region(region, low, found, patterns, read),
                                                   len(text))
    speeches = []
    for index, (region, sentences, speaks_of_failure, phantom) in zip(indexes, readings):
        message = messages[index]
        speeches.append(Speech(index, message.turn or 0, message.name, message.content or "", region, sentences,
                               bool(message.tool_calls), bool(sentences) and speaks_of_failure, speaks_of_failure,
                               phantom))
    return speeches


def _read_speech(
    text: str, config: RulesConfig, patterns: CompiledPatterns
) -> tuple[str, list[Sentence], bool, str | None]:
    """(region read, claim sentences, whether it speaks of a failure, phantom sentence): from the text only.

    One literal scan of the region serves every phrase list; a claim sentence is only tested for the literals
    the region holds.
    """
    region = clip(text, config.message.head_chars, config.message.tail_chars)
    low = region.lower()
    return _read_region(region, low, patterns.speech_lists.find(low), patterns)


def _read_region(
    region: str, low: str, found: frozenset[str], patterns: CompiledPatterns, read: dict[str, Sentence] | None = None
) -> tuple[str, list[Sentence], bool, str | None]:
    """:func:`_read_speech` of a clipped region, its lowered text and the literals that occur in it; ``read`` keeps
    the claim sentences already read (by their text), shared between the regions of one trajectory."""
    sentences: list[Sentence] = []
    matches = patterns.claim.finditer_found(region, found, low) if found else []
    if matches and "```" in region:
        # Code the message writes is not a claim of the agent ('print("saved to out.csv")').
        fences = [m.span() for m in _FENCE.finditer(region)]
        matches = [m for m in matches if not any(a <= m.start() < b for a, b in fences)]
    if matches and "[ ]" in region:
        # An open checklist item ("- [ ] Verify the CSV has 3 rows") is a plan, not a claim.
        open_items = [m.span() for m in _OPEN_ITEM.finditer(region)]
        matches = [m for m in matches if not any(a <= m.start() < b for a, b in open_items)]
    if matches:
        ends = [m.end() for m in _SENTENCE_END.finditer(region)]
        seen: set[int] = set()
        for match in matches:
            # The sentence around the claim: from the end of the previous sentence to the end of this one.
            at = bisect.bisect_right(ends, match.start())
            if at in seen:
                continue
            seen.add(at)
            start = ends[at - 1] if at else 0
            stop = ends[at] if at < len(ends) else len(region)
            piece = region[start:stop].strip()
            if read is None:
                sentences.append(_claim_sentence(piece, patterns))
                continue
            sentence = read.get(piece)
            if sentence is None:
                sentence = read[piece] = _claim_sentence(piece, patterns)
            sentences.append(sentence)
    if not found:
        return region, sentences, False, None
    speaks_of_failure = _beyond_all_clear(patterns.prior_failure, patterns, region, found, low) is not None
    phantom = patterns.phantom.search_found(region, found, low)
    return region, sentences, speaks_of_failure, (_sentence_around(region, phantom.start()) if phantom else None)


# An item of a numbered or bulleted list: its marker ("1.", "2)", "-", "・", "①") and its text; a checkbox item is a
# plan (unchecked-tick's), not a summary.
_LIST_ITEM = re.compile(r"^[ \t]*(?:(?:\d{1,2}[.)]|[-*+])[ \t]+|[•・●▪‣◦\u2460-\u2473][ \t]*)(?!\[[ xX]?\])(\S[^\n]*)$",
                        re.MULTILINE)


def _read_summaries(speeches: list[Speech], messages: list[Message], patterns: CompiledPatterns,
                    read: dict[str, Sentence]) -> None:
    """Read the numbered or bulleted "what I did" lists of the agent's reports as claims, one per item (issue 24
    item 2), by their structure, in any language: a report is an assistant message that makes no call, after work,
    with no call of the agent after it before the user speaks again. An item that a claim sentence already covers is
    not read twice; a list headed by a future or hedged line ("Next steps:") is a plan; a heading is no item. The
    list number is no value of the claim (the marker is cut off)."""
    called_after = False  # whether an assistant call comes after the message, before the next user message
    reports: list[Speech] = []
    by_index = {speech.message_index: speech for speech in speeches}
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user":
            called_after = False
        elif message.role == "assistant":
            if message.tool_calls:
                called_after = True
            elif not called_after and index in by_index:
                reports.append(by_index[index])
    first_work = next((i for i, m in enumerate(messages) if m.role == "assistant" and m.tool_calls), None)
    for speech in reports:
        if first_work is None or speech.message_index < first_work:
            continue
        region = speech.region
        if "\n" not in region:
            continue
        known = tuple(s.text for s in speech.sentences)
        items: list[Sentence] = []
        for piece in patterns.read_once("summary_items", (region, known), functools.partial(_summary_items, region, known, patterns),
                                        len(region)):
            sentence = read.get(piece)
            if sentence is None:
                sentence = read[piece] = _claim_sentence(piece, patterns)
            items.append(replace(sentence, is_claim=True, item=True))
        if items:
            speech.sentences = [*speech.sentences, *items]
            speech.mentions_failure = speech.speaks_of_failure


def _summary_items(region: str, known: tuple[str, ...], patterns: CompiledPatterns) -> tuple[str, ...]:
    """The items of a report's lists that :func:`_read_summaries` reads as claims (the texts of the ones no claim
    sentence of ``known`` covers, outside code fences, under no future or hedged heading): a pure function of the
    region, read once per text."""
    fences = [m.span() for m in _FENCE.finditer(region)] if "```" in region else []
    pieces: list[str] = []
    for match in _LIST_ITEM.finditer(region):
        piece = match.group(1).strip()
        if not piece or piece.endswith((":", "：")) or any(a <= match.start() < b for a, b in fences):
            continue
        if any(piece in text or text in piece for text in known):
            continue
        heading = region[:match.start()].rstrip("\n").rsplit("\n", 1)[-1] if match.start() else ""
        heading = "" if _LIST_ITEM.match(heading) else heading
        if heading and (patterns.future.search(heading) or patterns.hedge.search(heading)):
            continue
        pieces.append(piece)
    return tuple(pieces)


def clip(text: str, head: int, tail: int) -> str:
    """The first ``head`` and last ``tail`` characters of a long text (claims and errors sit at the ends)."""
    if len(text) <= head + tail:
        return text
    return text[:head] + "\n" + (text[-tail:] if tail else "")


def read_sentences(text: str, patterns: CompiledPatterns, read: dict[str, Sentence] | None = None,
                   keep: Callable[[str], bool] | None = None) -> list[Sentence]:
    """Every sentence of ``text`` read as a claim sentence is (``is_claim`` false where no claim phrase starts
    it): the statements of an answer ("11月の合計は 25,800 円です") whose numbers the language-neutral checks hold
    against receipts in any language. ``read``: claim sentences already read, by text (the analysis's
    ``cache["sentences"]``); each is copied, not read again. ``keep``: only the sentences whose text it passes
    are read (a caller that wants those with a number does not pay for reading the others)."""
    found: list[Sentence] = []
    for piece, is_claim in patterns.read_once("sentence_pieces", text, functools.partial(_sentence_pieces, text, patterns),
                                              len(text)):
        if keep is None or keep(piece):
            known = read.get(piece) if read else None
            if known is not None:
                found.append(replace(known, is_claim=is_claim))
                continue
            # The reading is shared by the batch (:func:`_claim_sentence`): a copy, which callers may change.
            found.append(replace(_claim_sentence(piece, patterns), is_claim=is_claim))
    return found


def _sentence_pieces(text: str, patterns: CompiledPatterns) -> tuple[tuple[str, bool], ...]:
    """The sentences of ``text`` (:func:`read_sentences`), each with whether a claim phrase starts it: a pure
    function of the text, read once per text and config."""
    pieces: list[tuple[str, bool]] = []
    start = 0
    for end in [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]:
        piece = text[start:end].strip()
        start = end
        if piece:
            pieces.append((piece, patterns.claim.search(piece) is not None))
    return tuple(pieces)


def _claim_sentence(text: str, patterns: CompiledPatterns) -> Sentence:
    """Read one claim sentence (:func:`_read_claim_sentence`), once per batch (``patterns.memo_sentences``): the
    reading is shared between trajectories, and never changed (a copy is)."""
    memo = patterns.memo_sentences
    sentence: Sentence | None = memo.get(text)
    if sentence is None:
        sentence = patterns.remember(memo, text, _read_claim_sentence(text, patterns), len(text))
    return sentence


def _read_claim_sentence(text: str, patterns: CompiledPatterns) -> Sentence:
    """Read one claim sentence (one literal scan of it for the sentence-level lists)."""
    low = text.lower()
    found = patterns.sentence_lists.find(low)
    # A sentence that reports a no-op ("nothing was deleted", "0 rows matched, so nothing changed") says what was
    # NOT done: like a negation, it claims no state (issue 24; the receipts' no-op vocabulary, read in the text).
    # Negation words inside an "all clear" phrase ("no errors") negate nothing.
    hedged = (_beyond_all_clear(patterns.hedge, patterns, text, found) is not None
              or patterns.noop.search_found(text, found) is not None)
    if hedged and _CLAUSE.search(text):
        # A hedge holds for its clause: "It will ship Monday — the address has been updated" still claims.
        hedged = not any(patterns.claim.search(clause) and not patterns.hedge.search(clause)
                         and not patterns.noop.search(clause) for clause in _CLAUSE.split(text))
    test_claim = patterns.test_claim.search_found(text, found) is not None
    pass_claim = test_claim or patterns.pass_claim.search_found(text, found) is not None
    return Sentence(
        text=text,
        is_claim=True,
        is_check_claim=pass_claim or patterns.check_claim.search_found(text, found) is not None,
        hedged=hedged,
        mentions_failure=_beyond_all_clear(patterns.failure_words, patterns, text, found) is not None,
        tokens=salient_tokens(text),
        creation=patterns.creation_claim.search_found(text, found) is not None,
        test_claim=test_claim,
        done_claim=patterns.done_claim.search_found(text, found) is not None,
        pass_claim=pass_claim,
        actions=tuple(name for name, claim, _ in patterns.action_claims if claim.search_found(text, found) is not None)
        if patterns.actions_always or not patterns.action_literals.isdisjoint(found) else (),
        counts=tuple(dict.fromkeys(n for m in patterns.count_claim.finditer_found(text, found, low)
                                   for n in _claimed_numbers(text, m))),
        future=patterns.future.search_found(text, found) is not None,
        resolution=patterns.resolution_claim.search_found(text, found) is not None,
    )


# A number written in groups of three ("1,500", "1 500", "1.500"): a count phrase may match its last group only.
_GROUPED = re.compile(r"(?<![\d.,])\d{1,3}(?:[,.\u00a0\u202f ]\d{3})+(?![\d])")


def _claimed_numbers(text: str, match: re.Match[str]) -> list[int]:
    """The numbers of a count phrase's match, each whole: "1,500행" claims 1500, not the 500 the phrase matched."""
    numbers: list[int] = []
    for number in _NUMBER.finditer(match.group(0)):
        at = match.start() + number.start()
        whole = int(number.group())
        if at >= 2 and text[at - 1] in ",.\u00a0\u202f " and text[at - 2].isdigit():
            for grouped in _GROUPED.finditer(text, max(0, at - 40), match.end() + 1):
                if grouped.start() < at < grouped.end():
                    whole = int(re.sub(r"\D", "", grouped.group()))
        numbers.append(whole)
    return numbers


def _beyond_all_clear(matcher: PhraseMatcher, patterns: CompiledPatterns, text: str, found: frozenset[str],
                      low: str | None = None) -> re.Match[str] | None:
    """The first match of ``matcher`` outside every "all clear" phrase of the text ("no errors", "0 failed",
    "ошибок нет", "sorunsuz"): the failure or negation words inside one say that nothing failed."""
    hit = matcher.search_found(text, found, low)
    if hit is None:
        return None
    if not _number_suffix(text, hit.start()):
        # No all-clear phrase starts at or before the hit (the leftmost is after it, or there is none): none holds it.
        first_clear = patterns.all_clear.search_found(text, found, low)
        if first_clear is None or first_clear.start() > hit.start():
            return hit
    clear = [m.span() for m in patterns.all_clear.finditer_found(text, found, low)]
    if not any(a <= hit.start() < b for a, b in clear) and not _number_suffix(text, hit.start()):
        return hit  # the leftmost match is outside every all-clear phrase: it is the first such match
    return next((m for m in matcher.finditer_found(text, found, low)
                 if not any(a <= m.start() < b for a, b in clear) and not _number_suffix(text, m.start())), None)


def _number_suffix(text: str, start: int) -> bool:
    """Whether a word at ``start`` is glued to a number by an apostrophe: the number's case ending (Turkish
    "12'si de", "2026'da"), no word of its own (not the French or Spanish "si" of a condition)."""
    return start >= 2 and text[start - 1] in "'’" and text[start - 2].isdigit()


def _sentence_around(text: str, position: int) -> str:
    """The sentence of ``text`` that holds ``position`` (for quoting evidence)."""
    starts = [text.rfind(ch, 0, position) for ch in ".!?\n" + _STOPS]
    start = max(starts) + 1
    ends = [e for e in (text.find(ch, position) for ch in ".!?\n" + _STOPS) if e >= 0]
    end = min(ends) + 1 if ends else len(text)
    return text[start:end].strip()


def salient_tokens(text: str) -> tuple[str, ...]:
    """Names in a sentence that can tie it to a call: file paths, `quoted` names, snake_case identifiers, codes
    (not inside URLs or link targets)."""
    if "http" in text or "](" in text or "www." in text:
        text = _LINK.sub(" ", text)
    found: list[str] = []
    if _HAS_EXTENSION.search(text):
        for match in _PATH_TOKEN.findall(text):
            found.append(match.rsplit("/", 1)[-1])
    if "`" in text:
        for match in _BACKTICK.findall(text):
            token = match.strip()
            if " " not in token:
                found.append(token.rsplit("/", 1)[-1])
    if "_" in text:  # snake_case needs one
        found += _IDENTIFIER.findall(text)
    found += _CODE.findall(text)
    return tuple(dict.fromkeys(t for t in found if len(t) >= 4))


def path_tokens(text: str) -> tuple[str, ...]:
    """The file paths a text names, whole (``src/util/dates.py``; :func:`salient_tokens` keeps only the last part):
    a path changed in a folder is a different value."""
    if not _HAS_EXTENSION.search(text):
        return ()
    return tuple(dict.fromkeys(_PATH_TOKEN.findall(text)))


def is_doc(path: str) -> bool:
    return path.lower().endswith(_DOC_SUFFIXES)
