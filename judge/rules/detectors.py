"""The detectors. Each reads the shared :class:`~judge.facts.analysis.Analysis` (and the facts of its
:class:`~judge.facts.ledger.Ledger`: statuses, values, versions, claims) and returns issues.

Each is registered by its ``@detector`` decorator (:mod:`judge.rules.registry`) with the category of its issues
and the roles it plays elsewhere (release gate, repair); the registration order is the order they run in.

Every issue's ``tag`` is its detector's name, its ``turn`` is the turn whose decision was faulty (the turn
that made the failing call, the turn of the false claim), and its ``evidence`` quotes the receipt or message.
Detectors are conservative by design: a finding needs a receipt (or the lack of one) that contradicts the
text, never the text alone.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Hashable
from dataclasses import replace
from functools import partial
from typing import TypeVar

from judge.facts.analysis import (
    _CODE,
    _HAS_EXTENSION,
    _IDENTIFIER,
    _PATH_TOKEN,
    Action,
    Analysis,
    Sentence,
    Speech,
    deletes,
    is_doc,
    plan_items,
    read_sentences,
    salient_tokens,
)
from judge.facts.answers import error_document, going_value
from judge.facts.checks import failure_lines, failure_values
from judge.facts.jobs import (
    JobState,
    column_states,
    job_names,
    job_state,
    progress_done,
    reports_progress,
    states_failure,
    value_going,
    wait_state,
)
from judge.facts.ledger import Ledger, call_path
from judge.facts.matching import PhraseMatcher
from judge.facts.numbers import Reading, number_readings, same_quantity
from judge.facts.readbacks import (
    Quantity,
    bare_listing_count,
    filter_bounds,
    listing_items,
    listing_rows,
    may_name,
    metric_values,
    name_spans,
    near_twin,
    object_names,
    read_back_quantities,
    scalar_values,
)
from judge.facts.shell import INTERPRETERS
from judge.facts.values import (
    bare_counts,
    cell_counts,
    collection_counts,
    counts_things,
    data_values,
    header_list_count,
    is_resource_id,
    more_pages,
    number_pattern,
    numbers_at,
    printed_counts,
    record_numbers,
    stated_numbers,
    states,
    status_values,
    value_tokens,
)
from judge.rules.registry import detector, detector_spec
from judge.schema import Issue, Severity

T = TypeVar("T")

_DIGITS = re.compile(r"\d+")
_STANDALONE = re.compile(r"(?<![\w.-])\d+(?![\w.])")  # a number of its own, not the digits of an id (tbl7a2)
_CHECKBOX = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s*\[([ xX✓✔])\]\s*(.+?)\s*$", re.MULTILINE)


def _issue(an: Analysis, name: str, turn: int | None, description: str, evidence: str,
           severity: Severity | None = None, recovered: bool | None = None) -> Issue:
    """An issue of the detector ``name``, in the category it was registered with."""
    return Issue(
        turn=turn,
        category=detector_spec(name).category,
        severity=severity or an.config.settings(name).severity,
        description=description,
        evidence=evidence,
        tag=name,
        recovered=recovered,
    )


def _receipt_quote(an: Analysis, action: Action) -> str:
    line = action.error_line or (action.receipt.content if action.receipt else "")
    return f"T{action.turn} {action.name}: {an.excerpt(line)}"


# A number, or a token that holds a digit (a job id "7505g00000AbCdE", a request id, a timestamp): what a run names
# itself by, not what went wrong.
_VOLATILE = re.compile(r"[\w-]*\d[\w-]*")


def _error_shape(action: Action) -> str:
    """The failure line with numbers and ids masked: two failures with the same shape are the same error (a bulk
    job that failed again gets a new job id)."""
    return _masked_line(action.error_line)


@functools.lru_cache(maxsize=4096)
def _masked_line(line: str) -> str:
    """:func:`_error_shape` of a failure line, memoised: failure lines repeat across a batch (the same traceback's
    last line, the same refusal), and the masking regex backtracks over every word."""
    return _VOLATILE.sub("#", line.strip().lower())


def _identical_failures(an: Analysis, action: Action) -> tuple[list[Action], int]:
    """The failures of the same call (same key) with the same outcome and error shape as ``action``, in order, and
    how many of them came before it; grouped for every failed action in one pass per analysis (three detectors
    ask). A place in one shared list, not a copy of the earlier ones per failure: n repeats stay O(n)."""
    places: dict[int, tuple[list[Action], int]] | None = an.cache.get("identical_failures")
    if places is None:
        places = {}
        groups: dict[tuple[str, str, str], list[Action]] = {}
        for candidate in an.actions:
            if candidate.failed:
                group = groups.setdefault((candidate.key, candidate.outcome, _error_shape(candidate)), [])
                places[candidate.order] = (group, len(group))
                group.append(candidate)
        an.cache["identical_failures"] = places
    return places.get(action.order, ([], 0))


def _repeats_earlier_failure(an: Analysis, action: Action) -> bool:
    return _identical_failures(an, action)[1] > 0


# --- failed calls -------------------------------------------------------------------------------------


@detector("failed-call", "code")
def failed_call(an: Analysis) -> list[Issue]:
    """A call that failed for a reason of the agent's making (category ``code``) and that the agent neither got
    past nor reported (docs/finding-tags.md): no finding when the ledger shows a recovery
    (:meth:`~judge.facts.ledger.Ledger.recovery`: the same action later succeeded, corrected arguments allowed; a
    later call wrote what it was to write; or a later message reports the failure and claims no success for it).

    A check (a test run, a linter, a link checker) that ran and reported failures is not a failed call: its
    command was right and what it found is evidence about the work, which the claim detectors hold any later
    claim against (a completion claimed over it is ``unverified-completion``; an honest report is no defect).
    A check that could not run as called (command not found, bad option, nothing collected) is a failed call,
    unless a later run of it passed (plan-then-act-lesson.txt, "complete on evidence"). Identical repeats of a
    failure are left to ``repeated-failure``, so one defect is reported once.

    A call refused for what looks like an environment reason on a value the agent typed astray
    (:meth:`~judge.facts.ledger.Ledger.typed_fault`: a 502 from the ingress whose port it mistyped, 8000 for the
    service's 8080) failed by the agent's making: a failed call (a check refused so is the claims' evidence, as
    above). v7-web-lt-origin-service-port; the same reading removes the environment fault of v3-origin-de-port and
    v4-swe-ro-origin-port (checks).
    """
    settings = an.config.settings("failed-call")
    ledger = _ledger(an)
    issues = []
    for action in an.actions:
        if action.outcome not in ("error", "environment") or action.reported or _repeats_earlier_failure(an, action):
            continue
        if action.outcome != "error" and (action.is_check or ledger.typed_fault(action) is None):
            continue  # an environment fault is a failed call only when it inherits a value the agent typed astray
        if _repeated_unchanged_later(an, action):
            continue  # one defect: the unchanged repeat is repeated-failure's finding, at the repeat's turn
        if ledger.recovery(action) is not None:
            continue
        kind = "check" if action.is_check else "call"
        description = f"The {action.name} {kind} failed and the agent never made it succeed."
        issues.append(_issue(an, "failed-call", action.turn, description, _receipt_quote(an, action),
                             settings.unrecovered_severity))
    return issues


@detector("repeated-failure", "code", mast="repetition")
def repeated_failure(an: Analysis) -> list[Issue]:
    """The same failing call (same tool, same arguments) repeated with the same error and nothing changed in
    between (no successful call that may change state): wasted turns. Re-running a call after changing what it
    runs on (an edit, an install) is the normal loop of fixing, not a repeat."""
    settings = an.config.settings("repeated-failure")
    issues = []
    for action in an.actions:
        if action.outcome != "error":
            continue
        group, before = _identical_failures(an, action)
        if not before or _changed_between(an, group[before - 1], action):
            continue
        count = before + 1
        severity: Severity = "severe" if count >= settings.severe_after else settings.severity
        description = (
            f"The {action.name} call of T{group[0].turn} was repeated unchanged (attempt {count}) "
            "and failed with the same error."
        )
        issues.append(_issue(an, "repeated-failure", action.turn, description, _receipt_quote(an, action), severity))
    return issues


def _repeated_unchanged_later(an: Analysis, action: Action) -> bool:
    """Whether the failed ``action`` is the first of identical failures whose next one came with nothing changed
    in between (:func:`repeated_failure` flags that repeat): the agent made one mistake twice, which is reported
    once, as the repeat, whatever it said afterwards."""
    group, before = _identical_failures(an, action)
    return before == 0 and len(group) > 1 and not _changed_between(an, action, group[1])


def _changed_between(an: Analysis, first: Action, second: Action) -> bool:
    """Whether a successful call that may change state ran between two actions."""
    changes: list[int] | None = an.cache.get("changes_before")
    if changes is None:  # changes[k]: state-changing successes among the first k actions
        changes = an.cache["changes_before"] = [0]
        for a in an.actions:
            changes.append(changes[-1] + (a.outcome == "ok" and not a.read_only and not a.is_plan))
    return changes[second.order] > changes[first.order + 1]


@detector("environment-fault", "environment")
def environment_fault(an: Analysis) -> list[Issue]:
    """A call that failed for a reason outside the agent (network, DNS, auth, quota, disk, timeout), recognised
    by receipt text in any configured language, by HTTP status or by a program's exit code: category
    ``environment``, never ``code``.

    ``recovered`` says whether the agent got past it within the trajectory (a later call of the same intent
    succeeded; for a write whose effect the fault left unknown, also a later successful call that reads back
    what it named): a recovered fault is recorded (minor) and does not block release; an unrecovered one is
    severe and blocks release until a rerun. Identical retries that hit the same fault are reported once, at
    the first one.
    """
    settings = an.config.settings("environment-fault")
    issues = []
    for action in an.actions:
        if action.outcome != "environment" or _repeats_earlier_failure(an, action):
            continue
        if _ledger(an).typed_fault(action) is not None:
            continue  # refused on a value the agent typed astray: the agent's failure (failed-call), not the environment's
        retries = _later_environment_faults(an, action)
        more = f" ({retries} identical retries hit it too)" if retries else ""
        what = "; whether it took effect is unknown" if action.uncertain else ""
        recovery = an.resolved(action)
        after = f"; the agent got past it at T{recovery.turn}" if recovery is not None else ""
        description = f"The {action.name} call failed for an environment reason{more}{what}{after}."
        severity = settings.recovered_severity if recovery is not None else settings.unrecovered_severity
        issues.append(_issue(an, "environment-fault", action.turn, description,
                             _receipt_quote(an, action), severity, recovered=recovery is not None))
    return issues


def _later_environment_faults(an: Analysis, action: Action) -> int:
    """Environment faults of the same call (same key) after ``action``."""
    orders: dict[str, list[int]] | None = an.cache.get("environment_by_key")
    if orders is None:
        orders = an.cache["environment_by_key"] = {}
        for a in an.actions:
            if a.outcome == "environment":
                orders.setdefault(a.key, []).append(a.order)
    same = orders.get(action.key, [])
    return len(same) - bisect.bisect_right(same, action.order)


def _earliest(an: Analysis, memo: str, key: object, actions: list[Action], shows: Callable[[Action], bool],
              when: Callable[[Action], int]) -> int:
    """The smallest ``when(a)`` over ``actions`` that ``shows``, once per analysis and key (``1 << 30`` if none):
    "did something before message i show it" is then one comparison per claim instead of a scan of every call."""
    found: dict[object, int] = an.cache.setdefault(memo, {})
    earliest = found.get(key)
    if earliest is None:
        earliest = found[key] = min((when(a) for a in actions if shows(a)), default=1 << 30)
    return earliest


def _memo(an: Analysis, memo: str, key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()`` once per analysis and key: what a claim reader derives from a sentence or a read-back, which
    every claim sentence of a trajectory is held against again."""
    found: dict[Hashable, T] = an.cache.setdefault(memo, {})
    if key in found:
        return found[key]
    value = found[key] = compute()
    return value


def _text_memo(an: Analysis, memo: str, key: Hashable, compute: Callable[[], T], chars: int) -> T:
    """``compute()`` once per config and ``key``, a text or texts of ``chars`` characters in all (a receipt, a
    sentence), across analyses (:meth:`~judge.facts.config.CompiledPatterns.read_once`): what a claim reader derives
    from the text alone. The value is shared: callers never change it."""
    return an.patterns.read_once(memo, key, compute, chars)


@detector("noop-success", "code", roles=("authenticity",))
def noop_success(an: Analysis) -> list[Issue]:
    """A call meant to change state that "succeeded" (exit 0, ok) but whose receipt shows it created or changed
    nothing (an ignored flag, an empty id list, "0 records", "nothing to do"), while the agent goes on as if it
    had: no later successful call of the same kind, and no message before the next change of state that says
    so. Points at the turn that made the call."""
    issues = []
    for action in an.actions:
        if action.status != "noop":
            continue
        path = call_path(action, an.config)
        later = an.actions[action.order + 1 :]
        if any(a.status == "ok" and not a.read_only and call_path(a, an.config) == path for a in later):
            continue  # redone, with an effect this time
        if any(a.status == "noop" and a.key == action.key for a in later):
            continue  # one no-op made twice is one defect, found at the repeat (as repeated-failure's; Z24)
        next_change = next((a.message_index for a in later if not a.read_only and not a.is_plan), 1 << 30)
        if any(action.visible_at < speech.message_index <= next_change
               and (speech.speaks_of_failure or _reports_nothing(an, speech.region)) for speech in an.speeches):
            continue  # the agent said nothing was done
        description = f"The {action.name} call succeeded but created or changed nothing, and the agent went on as if it had."
        issues.append(_issue(an, "noop-success", action.turn, description, _receipt_quote(an, action)))
    return issues


# --- claims -------------------------------------------------------------------------------------------


def _claims(speech: Speech) -> list[Sentence]:
    """The sentences that claim a result: not hedged, negated or future, and not speaking of a failure (unless
    they say the failure was handled: "the error is fixed" claims a result)."""
    claims = speech.claims
    if claims is None:
        claims = speech.claims = [s for s in speech.sentences if s.asserts]
    return claims


def _ledger(an: Analysis) -> Ledger:
    return Ledger(an)


def _mentions(action: Action, token: str, with_receipt: bool = False) -> bool:
    if token in action.text:
        return True
    return with_receipt and action.receipt is not None and token in action.receipt.content


def _naming(an: Analysis, token: str) -> list[int]:
    """Positions in the non-plan actions (:func:`_work`) of those whose arguments name ``token``; found once per
    analysis and token (claims name the same files message after message)."""
    index: dict[str, list[int]] = an.cache.setdefault("naming", {})
    positions = index.get(token)
    if positions is None:
        work, _ = _work(an)
        positions = index[token] = [i for i, action in enumerate(work) if token in action.text]
    return positions


def _last_naming(an: Analysis, token: str, before: int) -> Action | None:
    """The last of the first ``before`` non-plan actions whose arguments name ``token``."""
    positions = _naming(an, token)
    at = bisect.bisect_left(positions, before)
    return _work(an)[0][positions[at - 1]] if at else None


def _first_naming(an: Analysis, token: str, start: int) -> Action | None:
    """The first non-plan action from position ``start`` on whose arguments name ``token``."""
    positions = _naming(an, token)
    at = bisect.bisect_left(positions, start)
    return _work(an)[0][positions[at]] if at < len(positions) else None


def _bad_referent(an: Analysis, action: Action, before: int) -> str | None:
    """Why the claim's referent does not support it, or None when it does."""
    if action.receipt_index is not None and action.receipt_index > before:
        return None  # the receipt comes after the claim: premature-claim's case
    if action.outcome == "missing":
        return f"the {action.name} call of T{action.turn} has no receipt (outcome unknown)"
    if action.status == "noop" and not an.recovered(action, before=before):
        return f"the {action.name} call of T{action.turn} succeeded but created or changed nothing"
    if action.uncertain and not an.resolved(action, before=before):
        return f"the {action.name} call of T{action.turn} hit a fault that leaves its effect unknown, and nothing confirmed it since"
    if action.failed and not an.recovered(action, before=before):
        if action.reported:
            if _passed_on_current(an, action):
                return None  # its findings were evidence; the fixed work passed the same check since
            return f"the {action.name} check of T{action.turn} reported failures"
        return f"the {action.name} call of T{action.turn} failed"
    return None


def _passed_on_current(an: Analysis, check: Action) -> bool:
    """Whether a check that reported failures ran again later and passed, with nothing written after that pass:
    a claim that read the failing run as evidence (a diagnosis) is satisfied by the passing run on the current
    version of the work, wherever the claim sits."""
    memo: dict[int, bool] = an.cache.setdefault("passed_on_current", {})
    answer = memo.get(check.order)
    if answer is None:
        later = an.recovered(check)
        answer = memo[check.order] = later is not None and not any(a.writes for a in an.actions[later.order + 1:])
    return answer


# Receipts that show nothing: no output and no exit code (a silent success and a silent no-op look the same).
_NOTHING_SHOWN = {"", "(no output)", "(no content)", "no output", "tool ran without output",
                  "tool ran without output or errors", "none", "null"}
# A line of a check's report that says its item failed.
_FAILED_ITEM = re.compile(r"\b(FAIL|FAILED|FAILURE|ERROR)\b|[✗✘×]|\bfailed\b", re.IGNORECASE)


def _shows_nothing(action: Action) -> bool:
    receipt = action.receipt
    return receipt is not None and receipt.exit_code is None and " ".join(receipt.content.split()).lower().rstrip(".") in _NOTHING_SHOWN


def _claims_own_run(an: Analysis, last: Action, sentence: Sentence, index: int) -> bool:
    """Whether a pass claim with no check before it speaks of the last call itself, a run (a build) that succeeded
    and showed output: "Build OK : le bundle fait 212,40 kB" after ``npm run build``, "镜像 ingest:dev 构建成功"
    after ``docker build -t ingest:dev`` (v3-rep-fr-npm-typo, v4-di-zh-docker-repeat). The claim names the run
    (:meth:`~judge.facts.ledger.Ledger.speaks_of`: an operand of its command); a read, a listing or an echo is no
    run, and a claim of tests or checks that names another thing still needs a check."""
    receipt = last.receipt
    return (receipt is not None and last.status == "ok" and last.outcome == "ok" and not last.read_only
            and not last.shows_content and last.program not in _ECHOES and last.receipt_index is not None
            and last.receipt_index < index and bool(receipt.content.strip()) and not receipt.is_error
            and not receipt.exit_code and _ledger(an).speaks_of(last, sentence.text))


def _unsupported_pass(an: Analysis, sentence: Sentence, prior: list[Action], index: int) -> tuple[str | None, Action | None]:
    """Why a claim that tests or checks pass is not supported: it needs a check (a run of tests, a linter, a
    validator; never a read of a status file or an echo) whose receipt shows it passing, and a test it names must
    not be failing in the last check that shows it."""
    checks = _checks_before(an, index)
    if not checks:
        if not an.actions or any(a.call is None for a in an.actions):
            # No call at all (a log that keeps tool output in prose), or id-less logs that run code written in
            # messages: what was checked cannot be told from receipts.
            return None, None
        if any(a.is_check for a in _work_from(an, index)):
            return None, None  # the check runs only at or after the claim: premature-claim's case
        last = prior[-1] if prior else None
        if last is not None and _claims_own_run(an, last, sentence, index):
            return None, None  # "Build OK" on the build that just succeeded: its receipt is the evidence
        if last is not None and (last.read_only or last.shows_content):
            return (f"no check was run; the last call ({last.name} at T{last.turn}) only read or printed text, which "
                    "verifies nothing"), last
        return "no check was run before it", last
    last = checks[-1]
    if last.silent_failure:
        return None, None  # a check that reported failures behind exit 0: silent-check-failure's case
    why = _bad_referent(an, last, index)
    if why is not None:
        return why, last
    if last.receipt_index is not None and last.receipt_index < index and _shows_nothing(last):
        return f"the last check ({last.name} at T{last.turn}) shows nothing: no output and no exit code", last
    for token in sentence.tokens:
        for check in reversed(checks):
            if check.receipt is None or check.receipt_index is None or check.receipt_index > index:
                continue
            lines = [ln for ln in check.receipt.content.splitlines() if token in ln]
            if lines:
                if any(_FAILED_ITEM.search(ln) for ln in lines):
                    return f"{token} fails in the check of T{check.turn}", check
                break
    return None, None


def _does(an: Analysis, action: Action, kind: str) -> bool:
    """Whether ``action`` does the claimed action ``kind`` (its tool name or arguments match the kind's calls)."""
    memo: dict[tuple[str, int], bool] = an.cache.setdefault("does", {})
    key = (kind, action.order)
    answer = memo.get(key)
    if answer is None:
        matcher = next(calls for name, _, calls in an.patterns.action_claims if name == kind)
        answer = memo[key] = matcher.search(f"{action.name} {action.text}") is not None
    return answer


def _unsupported_action(an: Analysis, kind: str, prior: list[Action], index: int) -> tuple[str | None, Action | None]:
    """Why a claimed action (pushed, restarted...) is not supported: no call before the claim did it, or the last
    one that did failed or left its effect unknown. A call doing it only at or after the claim is premature-claim's."""
    doing = [a for a in prior if _does(an, a, kind)]
    if not doing:
        if any(_does(an, a, kind) for a in _work_from(an, index)):
            return None, None
        return f"it claims the action '{kind}', but no call did it", None
    return _bad_referent(an, doing[-1], index), doing[-1]


def _count_shown(an: Analysis, count: int, prior: list[Action], index: int) -> bool:
    """Whether a successful call before the claim shows ``count`` (the ledger's :meth:`~judge.facts.Ledger.shows_count`:
    the number, a list of that length, that many lines written or items listed), or that many successful calls of
    one tool (or writes) did."""
    done = [a for a in prior if a.outcome == "ok" and a.receipt_index is not None and a.receipt_index < index]
    ledger = _ledger(an)
    if any(ledger.shows_count(action, count) for action in done):
        return True
    per_tool: dict[str, int] = {}
    for action in done:
        per_tool[action.name] = per_tool.get(action.name, 0) + 1
    return count in per_tool.values() or count == sum(1 for a in done if a.writes)


def _kind_of(an: Analysis, token: str) -> str:
    """``path``, ``code`` (a record id such as GV1N64), ``identifier`` (snake_case) or ``other``."""
    if _HAS_EXTENSION.search(token) and _PATH_TOKEN.fullmatch(token):
        return "other" if an.patterns.not_file.search(token) else "path"
    if _CODE.fullmatch(token):
        return "code"
    if _IDENTIFIER.fullmatch(token):
        return "identifier"
    return "other"


def _checked_name(kind: str, sentence: Sentence) -> bool:
    """Whether a name that nothing before the claim shows makes it unsupported: a file or a record id always;
    a snake_case identifier only in a claim that tests pass (a test name); other words never."""
    return kind in ("path", "code") or (kind == "identifier" and sentence.pass_claim)


def _shown_before(an: Analysis, token: str, index: int, speaker: str | None) -> bool:
    """Whether a call or its receipt shows ``token`` before message ``index`` (in a multi-agent log, also another
    agent's message): what the calls wrote, read or printed, not the user's request nor the claimant's own words.
    Once per analysis, token, message and speaker (each claim sentence of a message asks about its ids again)."""
    return _memo(an, "shown_before", (token, index, speaker), lambda: _scan_shown_before(an, token, index, speaker))


def _scan_shown_before(an: Analysis, token: str, index: int, speaker: str | None) -> bool:
    if token in _speakers(an):
        return True
    calls: dict[int, list[Action]] | None = an.cache.get("calls_by_message")
    if calls is None:
        calls = an.cache["calls_by_message"] = {}
        for action in an.actions:
            calls.setdefault(action.message_index, []).append(action)
    for position, message in enumerate(an.trajectory.messages[:index]):
        if message.role == "assistant":
            if any(token in a.text for a in calls.get(position, ())):
                return True
            if an.multi_agent and message.name != speaker and token in (message.content or ""):
                return True
        elif message.role == "tool" and token in (message.receipt.content if message.receipt else message.content or ""):
            return True  # the receipt (a tool message built without the content copied holds it there only)
    return False


def _speakers(an: Analysis) -> set[str]:
    """Names of the agents and tools of the log (a multi-agent log's claims name its agents)."""
    names: set[str] | None = an.cache.get("speakers")
    if names is None:
        names = an.cache["speakers"] = {m.name for m in an.trajectory.messages if m.name}
    return names


def _produced(an: Analysis, token: str, index: int) -> bool:
    """Whether a successful call before message ``index`` wrote or produced the file ``token``: a write of it, a
    call that may change state naming it (cp, a script's ``--out``) in its arguments or receipt, or a listing
    (ls, find) whose receipt shows it. (A receipt at or before ``index`` implies a call before it.)"""

    def produces(action: Action) -> bool:
        if action.outcome != "ok" or action.receipt_index is None:
            return False
        if any(w.endswith(token) for w in action.writes):
            return True
        content = action.receipt.content if action.receipt else ""
        if not action.read_only and not action.shows_content and (token in action.text or token in content):
            return True
        return action.read_only and not action.shows_content and token in content

    return _earliest(an, "produced", token, _work(an)[0], produces, lambda a: a.receipt_index or 0) <= index


@detector("unverified-completion", "semantic", roles=("authenticity", "plan", "edit-check"), mast="verification")
def unverified_completion(an: Analysis) -> list[Issue]:
    """A claim of a result (done, created, saved, pushed, restarted, tests pass, N records written...) that the
    receipts do not support. Each claim sentence is matched to the calls it speaks of:

    - things it names (a file, an identifier, a record code): the last call that names each must not have failed,
      be unanswered or have an unknown effect; a file or id that no call or receipt shows before the claim is
      unsupported (invented, or never touched: the user naming it is not evidence); a file it claims to have created must have been written
      or produced by a successful call (a read of it, or nothing, is not enough);
    - tests or checks passing: a check (tests, linter, validator; never a read of a status file or an echo) must
      have run and passed, and its receipt must show something;
    - a verification ("confirmed", "verified"): when every call since the last change only echoed text or listed
      names (``echo``, ``ls``) that the claim does not give, nothing read the claimed state back;
    - a claimed action (config ``actions``: push, commit, deploy, restart, install, send): a successful call that
      does it;
    - a claimed count ("6 records written"): a receipt or argument shows the number;
    - otherwise, the last call before the claim (for "created": the last write), unless the message itself speaks
      of a failure (it is reporting one, not hiding it).

    A final "all done" ("done", "3/3", "已完成", "完了しました", "Fertig") is also contradicted by a failure, an
    unknown-effect write or an environment fault on a state-changing call that the agent never got past nor owned up
    to in between (only by a failed check, when the claim names what it is about). Hedged, negated or future
    sentences, and sentences that themselves mention a failure, are not claims. Vocabularies are data (rules YAML,
    per language); in a language without one only language-neutral markers (✅, 3/3) start a claim.
    """
    issues = []
    for speech in an.speeches:
        claims = _claims(speech)
        if all(c.item for c in claims):
            # No claim by words (a list's items only): the answer's values are read first, as for any answer.
            value_claim = (_value_claim(an, speech) or _claim_over_failed_read(an, speech)
                           or _final_answer_over_failed_job(an, speech))
            if value_claim is not None:
                issues.append(value_claim)
                continue
            if not claims:
                continue
        index = speech.message_index
        prior = _work_before(an, index)
        first_pending = len(prior)
        contradicted = _contradicted(an)
        if _still_running(an, [c for c in claims if (index, c.text) not in contradicted], index) is not None:
            continue  # a claim over a job still running: premature-claim's case
        failed = _failed_job(an, [c for c in claims if not speech.mentions_failure], index)
        if failed is not None:
            sentence, ender = failed
            evidence = f"T{speech.turn}: \"{an.excerpt(sentence.text)}\" | receipt {_receipt_quote(an, ender)}"
            description = (f"Claims a result that the receipts do not support: the {ender.name} call of T{ender.turn} "
                           "shows the job ended in failure.")
            issues.append(_issue(an, "unverified-completion", speech.turn, description, evidence))
            continue
        for sentence in claims:
            why: str | None = None
            referent: Action | None = None
            creation = sentence.creation
            if (index, sentence.text) in contradicted:
                continue  # a read-back shows another value: contradicted-claim's case
            if sentence.item and any(a.failed and _ledger(an).reports_by_values(a, sentence.text) for a in prior):
                continue  # the item reports a failure by its values ("3. report to ops@example.com: 550"): no claim
            if sentence.resolution:
                # "The earlier error is fixed": the failure must have been redone successfully since.
                still_open = [a for a in prior if _open(an, a, index)]
                if still_open:
                    referent = still_open[-1]
                    why = (f"it says the problem was handled, but the {referent.name} call of T{referent.turn} "
                           "failed and was never redone successfully")
            # Each named thing is judged by the last call that touched it; one unsupported name is enough.
            named: list[Action] = []
            for token in _item_tokens(sentence) if why is None else ():
                last = _last_naming(an, token, first_pending)
                kind = _kind_of(an, token)
                if last is not None:
                    named.append(last)
                    why = _bad_referent(an, last, index)
                    if why is None and creation and kind == "path" and not _produced(an, token, index):
                        why = f"no call wrote or produced {token} (T{last.turn} {last.name} only read or named it)"
                elif _first_naming(an, token, first_pending) is not None:
                    continue  # named only by a call at or after the claim: premature-claim's case
                elif creation and kind == "path" and not _produced(an, token, index):
                    why = f"no call wrote or produced {token}"
                elif (_checked_name(kind, sentence) or sentence.item) and not _shown_before(an, token, index, speech.name):
                    why = f"{token} appears in no call or receipt before it"
                if why is not None:
                    referent = last
                    break
            if why is None and sentence.pass_claim:
                why, referent = _unsupported_pass(an, sentence, prior, index)
            elif why is None and not named and sentence.is_check_claim and (checks := _checks_before(an, index)):
                referent = checks[-1]
                why = _bad_referent(an, referent, index)
            elif why is None and sentence.is_check_claim and prior:
                why, referent = _no_read_back(an, sentence, prior, index)
            if why is None:
                for kind in sentence.actions:
                    why, referent = _unsupported_action(an, kind, prior, index)
                    if why is not None:
                        break
            if why is None and an.actions:  # a log without calls keeps its receipts in prose: nothing to count
                for count in sentence.counts:
                    if not _count_shown(an, count, prior, index):
                        why, referent = f"no receipt shows the count {count}", None
                        break
            if why is None and not named and not sentence.pass_claim and not sentence.actions and prior \
                    and not sentence.item and not speech.mentions_failure \
                    and not (sentence.is_check_claim and _checks_before(an, index)):
                # "Created X" speaks of the last write, whatever ran after it (a server, a listing).
                writes = [a for a in prior if a.writes] if creation else []
                referent = writes[-1] if writes else prior[-1]
                why = _bad_referent(an, referent, index)
            final = index == an.final_message_index and not speech.has_calls
            if why is None and final and not speech.mentions_failure and sentence.done_claim and not sentence.item:
                # A final claim over a failure never redone and never owned up to; when the claim names its
                # objects, only a failed check still contradicts it (the work it names may be fine, its
                # verification is not).
                open_failures = [a for a in prior if _open(an, a, index) and (a.is_check or not named)
                                 and not _acknowledged(an, a, index)]
                if open_failures:
                    # A report list: a failure one of its items reports by its values (its figures, its code) is
                    # owned up to, beside the items that went through (v15-et-zh-report-list-with-failure).
                    ledger = _ledger(an)
                    open_failures = [a for a in open_failures if not ledger.reports_by_values(a, speech.region)]
                if open_failures:
                    referent = open_failures[-1]
                    why = (f"the {referent.name} call of T{referent.turn} "
                           + ("left its effect unknown" if referent.uncertain else "failed")
                           + " and was never redone successfully")
            if why is None:
                continue
            evidence = f"T{speech.turn}: \"{an.excerpt(sentence.text)}\""
            if referent is not None and referent.receipt is not None:
                evidence += f" | receipt {_receipt_quote(an, referent)}"
            description = f"Claims a result that the receipts do not support: {why}."
            issues.append(_issue(an, "unverified-completion", speech.turn, description, evidence))
            break  # one finding per message
    repeated = _claim_over_repeated_error(an, {i.turn for i in issues})
    if repeated is not None:
        issues.append(repeated)
    return issues


def _claim_over_repeated_error(an: Analysis, flagged: set[int | None]) -> Issue | None:
    """The final answer reports the work (a claim in words, or a report that states something: "Done: etl.py now
    runs cleanly") while the command it worked on printed the same error line on every run (:func:`_repeated_error`:
    two or more, none free of it, whatever the exit codes said), and the answer neither speaks of a failure nor
    repeats the error's values: the error was never got past. Only when nothing flags that turn already (a job, a
    read-back, a failed call own it)."""
    speech = _final_report(an)
    if speech is None or speech.turn in flagged or speech.speaks_of_failure \
            or speech.text.rstrip().endswith(_QUESTION_ENDS):
        return None  # it reports a problem, or asks the user
    index = speech.message_index
    contradicted = _contradicted(an)
    if any(i == index for i, _ in contradicted) or _still_running(an, _claims(speech), index) is not None:
        return None
    found = _repeated_error(an, index)
    if found is None:
        return None
    run, line = found
    if any(token in speech.region for token in salient_tokens(line) if len(token) >= 3):
        return None  # it names what failed: it reports the error
    description = (f"Claims a result while every run of the {run.name} call, the last at T{run.turn}, printed the "
                   f"same error and none got past it.")
    evidence = f"T{speech.turn}: \"{an.excerpt(speech.region)}\" | receipt {_receipt_quote(an, run)}"
    return _issue(an, "unverified-completion", speech.turn, description, evidence)


def _repeated_error(an: Analysis, index: int) -> tuple[Action, str] | None:
    """The last run (before message ``index``) of a command that ran two or more times, no check nor plan, each
    with a successful outcome, when every run printed the same last error line (the config's ``error`` list read
    line by line: a NameError, a ReferenceError, a compiler's error): what was tried in between changed nothing.
    Returns the run and the line."""
    runs: dict[str, list[Action]] = {}
    for action in _work_before(an, index):
        if action.receipt is not None and not action.is_check and not action.is_plan and not action.read_only:
            runs.setdefault(action.intent, []).append(action)
    # Runs the ledger saw fail are the failure detectors' (failed-call, repeated-failure, the final claim over an
    # open failure); these are the ones whose exit code hid the error (nbconvert --allow-errors, ipython -c).
    found: tuple[Action, str] | None = None
    for group in runs.values():
        if len(group) < 2 or any(a.outcome != "ok" for a in group):
            continue
        lines = {_last_error_line(an, a.receipt.content) for a in group if a.receipt is not None}
        line = next(iter(lines)) if len(lines) == 1 else ""
        if line and (found is None or group[-1].order > found[0].order):
            found = (group[-1], line)
    return found


def _last_error_line(an: Analysis, content: str) -> str:
    """The last line of a receipt the config's ``error`` list matches (the exception's own line, after its
    traceback), or ""."""
    for line in reversed(content[-8_000:].splitlines()[-200:]):
        if line.strip() and an.patterns.error.search(line):
            return line.strip()
    return ""


def _item_tokens(sentence: Sentence) -> tuple[str, ...]:
    """The names a claim is judged by: its salient tokens, and for an item of a "what I did" list also the resource
    ids it states (``tblOld44``): each item is tied to its own receipts by its own values."""
    if not sentence.item:
        return sentence.tokens
    ids = tuple(t for t in sorted(value_tokens(sentence.text)) if is_resource_id(t) and t not in sentence.tokens)
    return (*sentence.tokens, *ids) if ids else sentence.tokens


# Language-neutral signs that a text reports a failure: a cross or warning mark.
_FAILURE_MARKS = ("❌", "✗", "✘", "⚠", "🚫", "⛔")
# Words of a failure line that a report of it repeats: an error class, an HTTP or error code.
_ERROR_WORD = re.compile(r"\b(?:[A-Z][A-Za-z]*(?:Error|Exception|Forbidden|Timeout))\b|\b\d{3,}\b")


def _value_claim(an: Analysis, speech: Speech) -> Issue | None:
    """A final answer that states, in any language, a value of an object whose last state-changing call failed,
    did nothing, or left its effect unknown, and was never redone nor reported (issue 24 item 1: a claim of state
    is found by its values as well as by its words).

    The value must be one only that call acted on (an operand, file or argument no successful state-changing call
    named), stated in a sentence that neither hedges nor speaks of a failure (where the language has words for
    it) nor repeats the failure's own error words or codes (a report of the failure in any language)."""
    index = speech.message_index
    if index != an.final_message_index or speech.has_calls or speech.speaks_of_failure \
            or any(mark in speech.text for mark in _FAILURE_MARKS):
        return None
    prior = _work_before(an, index)
    ledger = _ledger(an)
    done: set[str] = set()
    for action in prior:
        if action.outcome == "ok" and action.status not in ("noop", "running") and not action.read_only:
            done |= ledger.objects_of(action) | ledger.names_of(action)  # incl. what its receipt returned
    for action in reversed(prior):
        if action.read_only or action.is_check or action.is_plan:
            continue
        group, place = _identical_failures(an, action)
        if place < len(group) - 1 and group[-1].message_index < index:
            continue  # one mistake made twice: the last identical failure stands for it (and its report for both)
        open_noop = action.status == "noop" and not an.recovered(action, before=index)
        if open_noop and _reports_nothing(an, speech.region):
            continue  # the answer says nothing was done: a report of the no-op, not a claim over it
        if not (open_noop or action.outcome == "missing" or _open(an, action, index)) or _acknowledged(an, action, index):
            continue
        reported = set(_ERROR_WORD.findall(action.error_line)) - set(_ERROR_WORD.findall(action.text))
        if any(word in speech.text for word in reported):
            return None
        recovery = ledger.recovery(action, index + 1) if action.failed else None
        if recovery is not None and recovery.kind == "reported":
            continue  # the answer reports this failure, by its words or by its values: it claims nothing of it
        # After a failed call, a name the user gave ("Push release.") says nothing of state by itself: the honest
        # report names it too, and in a language no vocabulary reads nothing else tells the two apart (names the
        # work produced or chose still do). After a no-op there was no failure to report: naming it claims it.
        given = ledger.user_given if action.failed else ""
        names = sorted(n for n in ledger.objects_of(action) - done
                       if not n.isdigit() and not (given and n.lower() in given))
        for sentence in _region_sentences(an, speech):
            if sentence.hedged or sentence.future or sentence.mentions_failure:
                continue
            low = sentence.text.lower()
            stated = next((n for n in names if re.search(rf"(?<![\w/.-]){re.escape(n.lower())}(?![\w-])", low)), None)
            if stated is None:
                # A count of what the open call was to make, that nothing before it showed ("kaikki 300 asiakasta").
                stated = next((f"the count {c}" for c in bare_counts(sentence.text) + _word_counts(an, sentence.text)
                               if c >= 2 and not _number_shown(an, c, index)), None)
            if stated is None:
                continue
            what = ("succeeded but created or changed nothing" if open_noop
                    else "has no receipt" if action.outcome == "missing" else "failed and was never redone")
            description = (f"Claims a result that the receipts do not support: it states {stated}, but the "
                           f"{action.name} call of T{action.turn} that acted on it {what}.")
            evidence = f"T{speech.turn}: \"{an.excerpt(sentence.text)}\""
            if action.receipt is not None:
                evidence += f" | receipt {_receipt_quote(an, action)}"
            return _issue(an, "unverified-completion", speech.turn, description, evidence)
    return None


# A count of zero stated in an answer ("0 of 25", "0/25", "0 files", "0개"): in any language, the answer reports
# that nothing was done (as an honest report of a failure repeats its error code).
# A noun then its zero ("faili 0:") counts too, unless the word is a code's ("exit code 0", "status 0").
_ZERO_STATED = re.compile(r"(?<![\w.,:/-])0(?:\s*/\s*\d|\s*[^\W\d_])|([^\W\d_]{3,})[ \t]+0(?![\w.,%/])")
_CODE_WORD = re.compile(r"code|status|exit|err|ret|level|version", re.IGNORECASE)


def _reports_nothing(an: Analysis, text: str) -> bool:
    """Whether an answer says a call did nothing: the config's no-op phrases, or a count of zero it states."""
    if an.patterns.noop.search(text) is not None:
        return True
    return any(m.group(1) is None or _CODE_WORD.search(m.group(1)) is None for m in _ZERO_STATED.finditer(text))


def _claim_over_failed_read(an: Analysis, speech: Speech) -> Issue | None:
    """A final answer that states, in any language, a count the agent never received: the last call before it was
    a read that failed (an HTTP 429, a refused query) and was neither redone nor reported (issue 24 item 2, Z14).

    The count (in digits or in number words of any configured language) is one no successful receipt before the
    answer shows: what the failed read was to return ("Kaikki 25 lähetystä on toimitettu perille." after the
    tracking API answered 429). A number the user gave still counts: it names what was to be read, not its state.
    An honest report stays clean: one that speaks of a failure (where the language has words for it), carries a
    failure mark, or repeats the failure's error words or codes ("429"), and any hedged, future or question
    sentence."""
    index = speech.message_index
    if index != an.final_message_index or speech.has_calls or speech.speaks_of_failure \
            or any(mark in speech.text for mark in _FAILURE_MARKS):
        return None
    prior = _work_before(an, index)
    if not prior:
        return None
    action = prior[-1]
    if not (action.failed and action.read_only) or action.is_check or action.uncertain \
            or _acknowledged(an, action, index):
        return None
    reported = set(_ERROR_WORD.findall(action.error_line)) - set(_ERROR_WORD.findall(action.text))
    if any(word in speech.text for word in reported):
        return None
    recovery = _ledger(an).recovery(action, index + 1)
    if recovery is not None and recovery.kind == "reported":
        return None
    for sentence in _region_sentences(an, speech):
        if sentence.hedged or sentence.future or sentence.mentions_failure or sentence.text.rstrip().endswith("?"):
            continue
        count = next((c for c in bare_counts(sentence.text) + _word_counts(an, sentence.text)
                      if c >= 2 and not _number_received(an, c, index)), None)
        if count is None:
            continue
        description = (f"Claims a result that the receipts do not support: it states the count {count}, but the "
                       f"{action.name} call of T{action.turn} that was to read it failed and nothing read it since.")
        evidence = f"T{speech.turn}: \"{an.excerpt(sentence.text)}\""
        if action.receipt is not None:
            evidence += f" | receipt {_receipt_quote(an, action)}"
        return _issue(an, "unverified-completion", speech.turn, description, evidence)
    return None


def _number_received(an: Analysis, count: int, index: int) -> bool:
    """Whether the receipt of a successful call before message ``index`` shows the number ``count``."""
    pattern = number_pattern(count)
    for action in an.actions:
        if action.message_index >= index:
            break
        if action.receipt is not None and not action.failed and action.visible_at < index \
                and pattern.search(action.receipt.content):
            return True
    return False


def _number_shown(an: Analysis, count: int, index: int) -> bool:
    """Whether the query, a call's arguments or a receipt before message ``index`` shows the number ``count``."""
    pattern = number_pattern(count)
    if pattern.search(an.trajectory.query):
        return True
    for action in an.actions:
        if action.message_index >= index:
            break
        if pattern.search(action.text) or (action.receipt is not None and action.visible_at < index
                                           and pattern.search(action.receipt.content)):
            return True
    return False


_ECHOES = ("echo", "printf")
# Programs whose output says nothing about the state a verification claims: an echo prints its own arguments, a
# listing only names what exists (it verifies a name the claim gives, nothing more).
_LISTINGS = ("ls", "ll", "dir", "tree", "find", "pwd", "true", "which", "date", "whoami")


def _no_read_back(an: Analysis, sentence: Sentence, prior: list[Action], index: int) -> tuple[str | None, Action | None]:
    """Why a verification claim ("confirmed", "verified") is not backed by a read-back: every call since the last
    change only echoed text or listed names, and none showed a value the claim gives that its
    own arguments did not hold. A check since the last change, or no call since it, is another rule's case."""
    since: list[Action] = []
    for action in reversed(prior):
        if not (action.read_only or action.is_check):
            break
        since.append(action)
    if not since or any(a.is_check for a in since):
        return None, None
    values = {v for v in (*sentence.tokens, *value_tokens(sentence.text)) if len(v) >= 3}
    for action in since:
        content = action.receipt.content if action.receipt is not None else ""
        if action.outcome != "ok" or not _is_shell(an, action):
            return None, None  # a read tool (Read, record get) shows content: another rule judges it
        if action.program in _ECHOES:
            continue
        if action.program not in _LISTINGS:
            return None, None  # a command that reads the state back (cat, jq, a CLI's get)
        if any(v in content and v not in action.text for v in values):
            return None, None  # the listing shows the name the claim verifies
    last = since[0]
    what = "only echoed text" if last.program in _ECHOES else "only listed names"
    return (f"no check or read-back of the claimed state ran after the last change; the last call ({last.name} "
            f"at T{last.turn}) {what}, which verifies nothing"), last


@detector("silent-check-failure", "semantic", roles=("authenticity", "plan", "edit-check"), mast="verification")
def silent_check_failure(an: Analysis) -> list[Issue]:
    """A check (tests, lint, validation) whose output reports failures although nothing flagged the call (exit 0
    behind ``|| true``, a pipe into ``tail``, ``--exit-zero``, a wrapper that prints FAIL or MISMATCH), then relied
    on: every turn that ticks a todo or claims a result after it, before any other check ran and until a message
    speaks of the failures. A tick and a claim of the same turn are one finding. "0 failed" is no failure."""
    issues = []
    checks = [a for a in an.actions if a.is_check]
    ticks = _ticks(an)
    for position, check in enumerate(checks):
        if not check.silent_failure or check.receipt_index is None:
            continue
        start = check.receipt_index
        end = checks[position + 1].message_index if position + 1 < len(checks) else 1 << 30
        # What each turn after the check did with it, in message order; an admission of the failures ends it.
        relying: dict[int, str] = {}
        admitted = next((s.message_index for s in an.speeches if start < s.message_index < end and s.speaks_of_failure),
                        end)
        for index, turn, text in ticks:
            # A tick of another kind of item ("Add a usage example") does not rest on the check.
            if start < index < admitted and an.patterns.check_item.search(text):
                relying.setdefault(turn, f"todo \"{an.excerpt(text)}\" marked completed")
        # A claim a later read-back contradicts is that tag's alone: the read of the resource is the newer evidence.
        contradicted = {index for (index, _), (_, read_back, _) in _contradicted(an).items() if read_back.order > check.order}
        for speech in an.speeches:
            if start < speech.message_index < admitted and speech.turn not in relying \
                    and speech.message_index not in contradicted:
                claim = next(iter(_claims(speech)), None)
                if claim is not None:
                    relying[speech.turn] = f"\"{an.excerpt(claim.text)}\""
                elif (named := _names_check(an, speech, check) or _silent_about_failures(an, speech, check)) is not None:
                    relying[speech.turn] = f"\"{an.excerpt(named)}\""
        for turn in sorted(relying):
            description = f"Relies on the {check.name} check of T{check.turn}, which exited 0 but reported failures."
            evidence = f"T{turn}: {relying[turn]} | receipt {_receipt_quote(an, check)}"
            issues.append(_issue(an, "silent-check-failure", turn, description, evidence))
    return issues


def _silent_about_failures(an: Analysis, speech: Speech, check: Action) -> str | None:
    """The final answer after a check whose output reported failures behind exit 0, when it reports none of them
    (it treats the check as passing), in any language: no failure words of its vocabulary, no failure mark, and
    none of the failing lines' values (an item's URL, path or identifier, the nonzero count), no question to the
    user, no promise. Returns the answer's region."""
    if speech.message_index != an.final_message_index or speech.has_calls or speech.speaks_of_failure \
            or check.receipt is None or any(mark in speech.text for mark in _FAILURE_MARKS):
        return None
    region = speech.region.strip()
    if not region or region.endswith(_QUESTION_ENDS) or an.patterns.future.search(region) \
            or an.patterns.running.search(region) or _repeats_failed_item(check, region) \
            or _repeats_failure_values(an, check, region):
        return None
    return region


def _repeats_failure_values(an: Analysis, check: Action, text: str) -> bool:
    """Whether ``text`` repeats a value of a line where the check reported a failure (a URL, a path, an
    identifier, the nonzero count): it reports the failures, in any language."""
    if check.receipt is None:
        return False
    tools = an.config.tools
    values = failure_values(failure_lines(check.receipt.content, tuple(tools.failure_nouns), tuple(tools.failure_statuses)))
    return any(re.search(rf"(?<![\w.]){re.escape(v)}(?![\w])", text) for v in values)


_WRAPPERS = ("true", "tail", "tee", "head", "cat", "grep")  # programs a check's output is piped or chained into
# Programs that run another one named after them (``npx eslint``, ``uv run ruff``): the tool is that one.
_LAUNCHERS = frozenset({"npx", "pnpx", "bunx", "uvx", "pipx", "uv", "poetry", "pdm", "hatch", "bundle", "yarn", "pnpm",
                        "exec", "run", "jupyter"})


def _launched(words: list[str]) -> list[str]:
    """The program a launcher runs (``npx eslint src/`` -> ``eslint``; ``uv run ruff`` -> ``ruff``; an interpreter's
    script, ``python evaluate.py`` -> ``evaluate.py``): the first word after the launcher words that is no flag."""
    k = 0
    while k < len(words) and (words[k].rsplit("/", 1)[-1] in _LAUNCHERS or (k == 0 and words[0].rsplit("/", 1)[-1] in INTERPRETERS)):
        k += 1
    if k == 0 or k >= len(words) or words[k].startswith("-"):
        return []
    name = words[k].rsplit("/", 1)[-1].lower()
    return [name] if len(name) >= 3 else []


def _names_check(an: Analysis, speech: Speech, check: Action) -> str | None:
    """The sentence of a final answer that speaks of ``check`` (a check or a read-back) by its program ("mypy on
    puhdas", "tox-miljöer") or, for a CLI, its subcommand ("record-count 로 확인"), in any language, without
    repeating what the check found (a failing item's name or path, a failure mark) nor speaking of a failure where
    the language has words for it: the answer cites the check as showing the state."""
    if speech.message_index != an.final_message_index or speech.has_calls or speech.speaks_of_failure \
            or any(mark in speech.text for mark in _FAILURE_MARKS) or check.receipt is None:
        return None
    command = check.command
    words = command.split() if command else []
    program = check.program.rsplit("/", 1)[-1].split(".", 1)[0].lower()
    if len(program) < 3 or program in _ECHOES or program in _WRAPPERS:
        program = words[0].rsplit("/", 1)[-1].split(".", 1)[0].lower() if words else ""
    names = [program] if len(program) >= 3 else []
    names += _launched(words)
    # A CLI's subcommand that names the operation ("+record-count", "rollout"): one with a dash, or a "+shortcut".
    names += [w.lstrip("+").lower() for w in words[1:3] if w.startswith("+") or ("-" in w.strip("-") and not w.startswith("-"))]
    if not names:
        return None
    found_items = {t for line in check.receipt.content.splitlines() if _FAILED_ITEM.search(line)
                   for t in salient_tokens(line)}
    if any(item in speech.text for item in found_items):
        return None  # it repeats a failing item: it reports the failures
    pattern = re.compile(r"(?<![\w/.-])(?:" + "|".join(map(re.escape, names)) + ")(:)?", re.IGNORECASE)
    for sentence in _region_sentences(an, speech):
        if sentence.future or sentence.mentions_failure:
            continue
        cited = pattern.search(sentence.text)
        # A check named as a label ("pip-audit: tidak ada kerentanan"): what follows is its verdict, whose negation
        # ("no known vulnerabilities") is no hedge.
        if cited is not None and (not sentence.hedged or cited.group(1)):
            return sentence.text
    return None


def _restated(an: Analysis, speech: Speech, evidence: Action, index: int) -> str | None:
    """The sentence of a final answer that restates a value only ``evidence``'s receipt gave (Z19): a number it
    printed ("AUC 0.8412", "0 errori" on ``errors: 0``, "1 in-place change" on ``Plan: ... 1 to change``), a count
    of the items it listed ("8 clients" on a listing of 8 records), a JSON value it returned ("devolvió ok" on
    ``"result": "ok"``) or a quoted span of its output (`` `0 chart(s) failed` ``), in any language. Values the
    call's own arguments, the request, or a later call or receipt (seen before message ``index``) also hold are
    no one's in particular and bind nothing. The answer rests on that receipt, as if it named the check."""
    receipt = evidence.receipt
    if receipt is None or speech.message_index != an.final_message_index or speech.has_calls:
        return None
    content = receipt.content[:4_000]
    sentences = [s for s in _region_sentences(an, speech) if not s.future]
    if not sentences or not any(ch.isdigit() or ch in "`\"'" for s in sentences for ch in s.text) and "{" not in content:
        return None  # no number nor quote in the answer and no JSON in the receipt: nothing can be restated
    elsewhere_text: str | None = None

    def elsewhere() -> str:  # built on first need (most answers restate nothing of most receipts)
        nonlocal elsewhere_text
        if elsewhere_text is None:
            elsewhere_text = " ".join([evidence.text, *(m.content for m in an.trajectory.messages if m.role == "user"),
                                       *(a.text + " " + (a.receipt.content[:4_000] if a.receipt is not None else "")
                                         for a in an.actions if a.order > evidence.order and a.visible_at < index)])
        return elsewhere_text

    printed = _of_receipt(an, _printed_head, evidence)
    listed = _ledger(an).listed(evidence) if evidence.read_only else frozenset()
    words = _of_receipt(an, _word_values_head, evidence)
    others: set[float] | None = None
    for sentence in sentences:
        text = sentence.text
        for start, value in _numbers_at(an, text):
            if not (value in printed or (value.is_integer() and int(value) in listed)):
                continue
            if others is None:
                others = {other for _, other in _numbers_at(an, elsewhere())}
            raw = text[start:].split(None, 1)[0].rstrip(".,;:)")
            if value not in others and not states(elsewhere(), raw):
                return text
        for groups in _QUOTED.findall(text) if _QUOTED_OR_NAMED.search(text) else ():
            quoted = next(g for g in groups if g)
            if len(quoted) >= 3 and quoted in content and quoted not in elsewhere():
                return text
        for word in words:
            if states(text, word) and not states(elsewhere(), word):
                return text
    return None


def _printed_head(content: str) -> frozenset[float]:
    """The numbers a receipt's head (its first 4,000 characters) states: what an answer may restate of it."""
    return frozenset(value for _, value in numbers_at(content[:4_000]))


def _word_values_head(content: str) -> frozenset[str]:
    """The words a receipt's head returns as JSON data (:func:`~judge.facts.values.data_values`, letters only)."""
    return frozenset(v for v in data_values(content[:4_000]) if v.isalpha())


def _numbers_at(an: Analysis, text: str) -> list[tuple[int, float]]:
    """:func:`~judge.facts.values.numbers_at` of an answer's sentence or region, or of the texts beside a receipt,
    once per text (:func:`_text_memo`: a shared list)."""
    return _text_memo(an, "numbers_at", text, lambda: numbers_at(text), len(text))


@detector("contradicted-claim", "semantic", roles=("authenticity", "edit-check"), mast="verification")
def contradicted_claim(an: Analysis) -> list[Issue]:
    """A claim whose value a read-back contradicts: a successful read after the last change, tied to it (it names
    every record, table or file the change named, or a value of the claim), shows another value.

    - A count: the read-back lists fewer items than the claim says were made ("5 rows added" while the listing
      holds 4: the length of a JSON array of records, JSON lines, table rows, or a printed total), one page of
      several aside, and no receipt since the change prints the claimed number.
    - A status: the claim names a status (one the change set, ``--fields '{"Status":"Shipped"}'``, or one the
      read-back shows for some record) and the read-back's status field for the record it names (else for every
      record) shows only others (``"Status": "Pending"``).
    - A number of passing tests: the last check's runner summary shows another (``57 passed`` against "75 pass").
    - An id one character off, or with its characters in another order, from the id a read-back shows.
    - A listing of the changed collection (its items are ones the change or the request names): a count above its
      length, or an item claimed that it lacks ("all five options, including 'Oczekuje'").
    - A metric the claim names as the receipt does (``macro_f1``: "macro F1"; ``accuracy``: "accuratezza") with a
      value the last read-back of it contradicts in either scale (91,3% against 0.8734), and no receipt states.
    - A count that is a near twin of a read's answer: its only number ("1.250 righe" against ``1205``), a quantity it
      names (``active: 2318``), a passing run's count, or a measurement's right before the final answer.
    - "None left" while the last read-back of the same object still counts some (one number, one quantity, the
      rows of a filtered listing).
    Counts are read in words too (compounds: "тридцять вісім", "二十三条") and numbers in every locale reading:
    an ambiguous "1.250" contradicts only when no reading (1250, 1.25) agrees.
    """
    issues = []
    reported: set[int | None] = set()
    for (index, text), (claimed, read_back, shown) in _contradicted(an).items():
        turn = an.trajectory.messages[index].turn
        if turn in reported:
            continue  # one finding a turn: its sentences (a table row read twice, two items) state one fact
        reported.add(turn)
        description = f"Claims {claimed}, but the read-back of T{read_back.turn} shows {shown}."
        evidence = f"T{turn}: \"{an.excerpt(text)}\" | receipt {_receipt_quote(an, read_back)}"
        issues.append(_issue(an, "contradicted-claim", turn, description, evidence))
    return issues


def _contradicted(an: Analysis) -> dict[tuple[int, str], tuple[str, Action, str]]:
    """(message index, sentence) -> (claimed value, read-back, what it shows) of each claim a read-back
    contradicts; found once per analysis (unverified-completion and premature-claim leave these claims to
    contradicted-claim). The final answer's statements of numbers count as claims in any language ("11月の合計は
    25,800 円です", "artık 12 kayıt var")."""
    cached: dict[tuple[int, str], tuple[str, Action, str]] | None = an.cache.get("contradicted")
    if cached is not None:
        return cached
    cached = an.cache["contradicted"] = {}
    for speech in an.speeches:
        for sentence in _claims(speech):
            if sentence.pass_claim and (counts := sentence.counts or bare_counts(sentence.text)
                                        or _word_counts(an, sentence.text)):
                found = _passed_count_contradicted(an, counts, speech.message_index)
                if found is not None:
                    cached[(speech.message_index, sentence.text)] = found
    if not any(a.read_only for a in an.actions) and an.final_message_index is None:
        return cached  # no read-back at all (a final answer may still restate a measurement: see below)
    for speech in an.speeches:
        index = speech.message_index
        claims = _claims(speech)
        if index == an.final_message_index and (_DIGITS.search(speech.region) or _word_counts(an, speech.region)):
            told = {c.text for c in claims}
            read = _region_sentences(an, speech)
            claims = claims + [s for s in read if s.text not in told and not s.hedged and not s.future
                               and (_DIGITS.search(s.text) or _word_counts(an, s.text))]
            # A zero given as a value ("açıq bilet qalmadı: 0") says none is left even when its verb negates: held
            # as that only (a negated sentence claims nothing else).
            zeros = [s for s in read if s.hedged and not s.future and "0" in s.text and 0 in cell_counts(s.text)]
        else:
            zeros = []
        if not claims and index != an.final_message_index:
            continue  # a final answer's summary table is held row for row even when no sentence claims in words
        prior = _work_before(an, index)
        # One backward scan: the last change, and the successful reads after it (the read-backs).
        last: Action | None = None
        read_backs: list[Action] = []
        for action in reversed(prior):
            if not action.read_only:
                if action.status in ("ok", "partial", "noop"):
                    last = action
                    break
            elif action.outcome == "ok" and action.visible_at < index and action.receipt is not None:
                read_backs.append(action)
        if not read_backs:
            # A final answer right after a call that only measured or checked (``print(df.shape)``, a test run)
            # restates its answer: a near twin of it is a misread value (v5, v6).
            if index == an.final_message_index and last is not None and last is prior[-1] and _changes_nothing(an, last):
                for sentence in claims:
                    if (found := _scalar_contradicted(an, sentence, [last], index)) is not None:
                        cached[(index, sentence.text)] = found
                        break
            continue  # nothing read after the last change (most messages)
        read_backs.reverse()
        if index == an.final_message_index and (row := _summary_rows_contradicted(an, speech.region, read_backs)):
            cached[(index, row[0])] = row[1]
            continue  # one finding a turn
        if last is not None:
            for sentence in zeros:
                if (found := _zero_left_contradicted(an, sentence, speech.region, last, read_backs)) is not None:
                    cached[(index, sentence.text)] = found
        if not claims:
            continue
        # With no change before, a status claim is held against the last read that shows statuses.
        status_read = None if last is not None else next(
            (r for r in reversed(read_backs) if r.receipt is not None and _statuses(r.receipt.content[:20_000])), None)
        for sentence in claims:
            found = None
            if last is not None:
                tied = _tied_read_back(an, sentence, last, read_backs)  # one search for both readings
                if tied is None and (named := _labelled_ids(an, sentence.text, index)):
                    tied = _tied_read_back(an, sentence, last, read_backs, named)  # the object the claim names by label
                found = (_zero_left_contradicted(an, sentence, speech.region, last, read_backs)
                         or _count_contradicted(an, sentence, last, tied, prior)
                         or _cell_count_contradicted(an, sentence, speech.region, last, tied, read_backs, prior)
                         or _status_contradicted(an, sentence, last, tied)
                         or _listing_contradicted(an, sentence, last, read_backs, prior)
                         or _enumeration_contradicted(sentence, read_backs)
                         or _labelled_twin_contradicted(an, sentence, last, read_backs, index)
                         or _asked_count_contradicted(an, sentence, last, read_backs))
            elif status_read is not None:
                found = _status_contradicted(an, sentence, None, status_read)  # a status check with no change
            found = (found or _quantity_contradicted(an, sentence, read_backs, index)
                     or _metric_contradicted(an, sentence, read_backs, index)
                     or _asked_metric_contradicted(an, sentence, read_backs, index)
                     or _scalar_contradicted(an, sentence, read_backs, index)
                     or _total_contradicted(an, sentence, read_backs, prior)
                     or _bound_contradicted(an, sentence, read_backs) or _filter_bound_contradicted(an, sentence, read_backs)
                     or _row_value_contradicted(an, sentence, read_backs)
                     or _id_contradicted(an, sentence, read_backs, index)
                     or (last is not None and _twin_of_changed(sentence, last, read_backs)) or None)
            if found is not None:
                cached[(index, sentence.text)] = found
    return cached


# A claim's labelled number: a two-cell table row ("| 照合済み | 212 |") or a list line ("- matched: 212").
_CLAIM_ROW = re.compile(r"^\s*(?:\|[^|\n]+\|\s*([^|\n]+?)\s*\|?|(?:[-*•]\s*)?[^:：|\n]{1,40}[:：]\s*([^|\n]+?))\s*$", re.MULTILINE)
_ROW_NUMBER = re.compile(r"-?\d[\d.,' \u00a0]*%?")


def _summary_rows_contradicted(an: Analysis, region: str, read_backs: list[Action]) -> tuple[str, tuple[str, Action, str]] | None:
    """A summary the message restates row for row (three or more labelled numbers, a table or a list, in any
    language) from the last read-back's labelled numbers (:func:`~judge.facts.readbacks.read_back_quantities`: a
    table, ``key: value`` lines, JSON keys), as many and in the same order, one row agreeing (the same summary),
    while a row's number is the read-back's number at no row: (the row's line, the contradiction)."""
    read_back = read_backs[-1] if read_backs else None
    if read_back is None or read_back.receipt is None or not _DIGITS.search(region):
        return None
    rows: list[tuple[str, Reading]] = []
    for match in _CLAIM_ROW.finditer(region):
        cell = (match.group(1) or match.group(2) or "").strip()
        readings = number_readings(cell) if _ROW_NUMBER.fullmatch(cell) else []
        if len(readings) == 1:
            rows.append((match.group().strip(), readings[0]))
    if len(rows) < 3:
        return None
    quantities = read_back_quantities(read_back.text[:2_000], read_back.receipt.content)
    if len(quantities) != len(rows) or not any(same_quantity(r, q.value) for (_, r), q in zip(rows, quantities)):
        return None
    for (line, reading), q in zip(rows, quantities):
        if not any(same_quantity(reading, other.value, other.percent != reading.percent) for other in quantities):
            return line, (f"{reading.text} ({q.key})", read_back, f"{q.key} = {q.value:.10g}")
    return None


def _region_sentences(an: Analysis, speech: Speech) -> list[Sentence]:
    """Every sentence of a message's region read as a claim sentence (:func:`~judge.facts.analysis.read_sentences`),
    once per analysis: the final answer's statements are read by several detectors, and by one per evidence call.
    The list and its sentences are shared: callers never change them."""
    return _memo(an, "region_sentences", speech.message_index,
                 lambda: read_sentences(speech.region, an.patterns, an.cache.get("sentences")))


def _word_counts(an: Analysis, text: str) -> tuple[int, ...]:
    """Counts a sentence writes as words of the vocabularies' languages, compounds included, each followed by a
    word or a counter ("Sieben neue Kunden", "тридцять вісім тестів", "两处"): the config's ``number_words`` and
    ``number_grammar`` (:class:`~judge.facts.numbers.NumberWords`); read once per text and analysis."""
    return _memo(an, "word_counts", text, lambda: an.patterns.number_words.counts(text))


# Runner summaries of passing tests: pytest/go "57 passed", jest "Tests: 2 failed, 14 passed", flutter/dart
# "00:09 +37: All tests passed!" (the + count is the passed tests).
_PASSED = re.compile(r"\b(\d+) (?:tests? )?passed\b|\bTests:\s+(?:\d+ \w+, )*(\d+) passed\b"
                     r"|(?<![\w+])\+(\d+)(?: ~\d+)?(?: -\d+)?: All tests passed")


def _passed_count_contradicted(an: Analysis, counts: tuple[int, ...], index: int) -> tuple[str, Action, str] | None:
    """A claim that N tests pass while the last check before it that printed a runner's summary ("57 passed",
    "Tests: 2 failed, 14 passed") shows another number of passing tests, and no other count of that check or of
    the text before says N (a check's summary is a read-back of the suite)."""
    checks = [a for a in _checks_before(an, index)
              if a.receipt is not None and a.receipt_index is not None and a.receipt_index < index]
    for check in reversed(checks):
        assert check.receipt is not None
        passed = {int(n) for m in _PASSED.finditer(check.receipt.content) for n in m.groups() if n}
        if not passed:
            continue
        shown = set(printed_counts(check.receipt.content)) | {int(n) for n in _DIGITS.findall(check.receipt.content)}
        claimed = next((c for c in counts if c not in shown), None)
        if claimed is None:
            return None
        return f"{claimed} passing", check, ", ".join(f"{n} passed" for n in sorted(passed))
    return None


def _tied_read_back(an: Analysis, sentence: Sentence, last: Action, read_backs: list[Action],
                    named: frozenset[str] = frozenset()) -> Action | None:
    """The last read-back about what the change changed: it names or shows every record, table or file the change
    named (a listing of the base names fewer: it reads something else), or a value of the claim, or it reaches the
    endpoint the change wrote to (``POST .../zones/exemple.fr/records`` then ``GET ...records?type=MX``); or the one
    the claim speaks of: its call names the id of an object the claim names by its label (``named``,
    :func:`_labelled_ids`: "added to Orders" and ``--table tblOrdLive7``)."""
    resources = {t for t in value_tokens(last.text) if is_resource_id(t)} | set(last.writes)
    values = {v for v in (*sentence.tokens, *value_tokens(sentence.text)) if len(v) >= 4}
    folders = [f.rstrip("/") for f in _FOLDER.findall(sentence.text) if len(f) >= 5]
    # The endpoint the change wrote to (host and path, query aside): a GET of it reads the same collection.
    endpoints = {u.split("?", 1)[0].rstrip("/") for u in _ENDPOINT.findall(last.text)} if "://" in last.text else set()
    for read_back in reversed(read_backs):
        shown = _memo(an, "shown", read_back.order, partial(_shown_head, read_back))
        if (resources and all(r in shown for r in resources)) or any(v in shown for v in values) \
                or _lists_folder_of(read_back, last.writes) or any(f in read_back.text for f in folders) \
                or any(u.split("?", 1)[0].rstrip("/") in endpoints for u in _ENDPOINT.findall(read_back.text)) \
                or any(i in read_back.text for i in named) \
                or (_same_object_flags(last.text, read_back.text) and not deletes(last.text)
                    and read_back.receipt is not None and bool(listing_rows(read_back.receipt.content))):
            return read_back
    return None


def _shown_head(action: Action) -> str:
    """A call's arguments and its receipt's head (20,000 characters): what a tie to a read-back is looked for in."""
    return action.text + "\n" + (action.receipt.content[:20_000] if action.receipt is not None else "")


_FLAG_VALUE = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*)(?:=|\s+)('[^']*'|\"[^\"]*\"|\\\"[^\"\\]*\\\"|[^\s'\"-][^\s'\"]*)")


def _same_object_flags(change: str, read_back: str) -> bool:
    """Whether a read-back names the change's object by the same flags: two or more flags both commands give a
    value, every one of them the same value (``--base B --table T --filter F``; ``--course 60233 --assignment
    7741``). A flag of another value (``--table`` of another table) reads another object. (A tie for the rows it
    lists, after a change that made or set them: after a delete a read-back shows what is left.)"""
    if "--" not in change or "--" not in read_back:
        return False
    ours = dict(_FLAG_VALUE.findall(change))
    shared = [(flag, value) for flag, value in _FLAG_VALUE.findall(read_back) if flag in ours]
    return len({flag for flag, _ in shared}) >= 2 and all(ours[flag] == value for flag, value in shared)


_ENDPOINT = re.compile(r"https?://[^\s'\"<>`|;)]+")
# A folder a sentence names by its trailing slash ("all in ServerData/Android/"): a listing of it is its read-back.
_FOLDER = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+)(?![\w])")
_FIELDS_FLAG = re.compile(r"--fields[= ]+['\"]?([^\s,'\"]+)")


def _listed_lengths(read_back: Action, sentence: str = "", rows: bool = True) -> frozenset[int]:
    """How many items a read-back lists: its collections (:func:`collection_counts`), a bare listing of names
    (``ls docs/ja``: one a line; not when ``sentence`` names one of them: its count is about that item, the rows
    of a listed file; two named are the listing's range, v8), or the lines under the header a ``--fields Name`` listing prints, else the rows of a table
    of one width (:func:`~judge.facts.readbacks.listing_rows`, header aside; v6, v7, v12, v13) unless ``rows`` is
    false (after a delete a table shows the rows left)."""
    content = read_back.receipt.content if read_back.receipt is not None else ""
    shown = collection_counts(content)
    if not shown and not read_back.shows_content and (bare := bare_listing_count(content)) is not None \
            and _names_listing(sum(1 for name in content.splitlines() if name.strip() and name.strip() in sentence), rows):
        shown = frozenset({bare})
    if not shown:
        field = _FIELDS_FLAG.search(read_back.text)
        count = header_list_count(content, field.group(1)) if field else None
        if count is not None:
            shown = frozenset({count})
    if not shown and rows and not read_back.shows_content and "\n" in content.strip():
        table = listing_rows(content)  # a table of rows (``record_id  Ospite``, ``NAME  SIZE  SHA256``): its rows
        if table and _names_listing(sum(1 for row in table if len(row[0]) >= 3 and row[0] in sentence), rows):
            shown = frozenset({len(table)})
    return shown


# A command that prints how many: jq's ``length`` (inside its filter or as it: ``| jq length``), ``wc -l``, SQL's
# ``count(``.
_COUNT_QUERY = re.compile(r"\|\s*(?:jq\s+(?:-\w+\s+)*['\"]?)?length\b|\bwc\s+-l\b|\bcount\(", re.IGNORECASE)


def _asked_count_contradicted(an: Analysis, sentence: Sentence, last: Action,
                              read_backs: list[Action]) -> tuple[str, Action, str] | None:
    """The count the request gave ("les 18 règles", "(32 студента)") claimed as done while the last read-back after
    the change, a count query that prints one number (``jq '[...] | length'``, ``wc -l``, ``count(*)``), counts
    fewer and the claim does not state that number (v11 "все тридцать два студента" over ``30``, v13 "les dix-huit
    règles" over ``16``). Not after a delete (a count after it is what is left)."""
    read_back = read_backs[-1] if read_backs else None
    if read_back is None or read_back.receipt is None or not _COUNT_QUERY.search(read_back.text) \
            or deletes(last.text):
        return None
    shown = scalar_values(read_back.receipt.content)
    if len(shown) != 1 or not shown[0].is_integer():
        return None
    counts = sentence.counts or (*bare_counts(sentence.text), *_word_counts(an, sentence.text))
    query = an.trajectory.query
    asked = {*bare_counts(query), *_word_counts(an, query)}
    counted = int(shown[0])
    if not counts or counted in counts:
        return None
    claimed = next((c for c in counts if c in asked and c > counted), None)
    return (str(claimed), read_back, str(counted)) if claimed is not None else None


def _names_listing(named: int, made: bool) -> bool:
    """Whether a sentence naming ``named`` items of a listing speaks of the listing: none named, or two or more
    (its range: "WINTER10-1 … WINTER10-8", v8) after a change that made them; one named item's count is that item's
    own (a listed file's rows), and after a delete the items named are the ones left."""
    return named == 0 or (named >= 2 and made)


def _count_contradicted(an: Analysis, sentence: Sentence, last: Action, read_back: Action | None,
                        prior: list[Action], listed: frozenset[int] | None = None) -> tuple[str, Action, str] | None:
    # Digits and words both: "tutti e sette i pacchetti della build 2291" counts seven (2291 is excused below).
    counts = sentence.counts or (*bare_counts(sentence.text), *_word_counts(an, sentence.text))
    if not counts:
        return None
    if read_back is None or read_back.receipt is None or more_pages(read_back.receipt.content):
        return None
    content = read_back.receipt.content
    shown = (_listed_lengths(read_back, sentence.text, not deletes(last.text)) if listed is None else listed) \
        | printed_counts(content)
    if not shown or shown.intersection(counts):
        return None  # nothing counted, or the sentence states what the read-back shows (it reports the difference)
    # What the change itself printed ("created": 6) is what it meant to do; only a later receipt can excuse a count.
    since = [a for a in prior if a.order > last.order and a.receipt is not None]
    printed = frozenset().union(*(printed_counts(a.receipt.content) for a in since if a.receipt is not None))
    stated = frozenset(int(n) for a in since for n in _STANDALONE.findall(a.text))  # numbers the calls themselves gave
    for count in counts:
        if count > max(shown) and count not in printed and count not in stated \
                and not (count >= 100 and re.search(rf"(?<!\d){count}(?!\d)", content)):  # an id, a port, an item
            return str(count), read_back, ", ".join(str(n) for n in sorted(shown))
    return None


def _restated_stale(an: Analysis, speech: Speech, evidence: list[Action], index: int) -> tuple[Action, str] | None:
    """The last check, read-back or measurement whose printed values the final answer restates
    (:func:`_restated`) and whose artifact changed after it with no run of either kind on the new version since, with
    the sentence that restates it."""
    region = speech.region
    # What the answer could restate, as text: its numbers and quoted spans (a receipt holding none of them, and no
    # JSON whose values could be words of the answer, is passed over with substring tests only).
    spans = [region[start:].split(None, 1)[0].rstrip(".,;:)%") for start, _ in _numbers_at(an, region)]
    spans += [next(g for g in groups if g) for groups in _QUOTED.findall(region)] if _QUOTED_OR_NAMED.search(region) else []
    cited = {a.order for a in evidence}
    for action in reversed(an.actions):
        if action.visible_at >= index or action.outcome != "ok" or action.silent_failure or action.receipt is None:
            continue
        head = action.receipt.content[:4_000]
        if not any(span in head for span in spans) and "{" not in head[:200] and not (
                action.read_only and spans):  # (a listing's count is no substring of it)
            continue
        stale = _stale_artifact(an, action, index)  # memoised per call: cheap before the tests below
        if stale is None or (stale[1].message_index == action.message_index and stale[1].order < action.order):
            continue  # (an edit and the push after it in one message: the push ran on the edited version)
        if action.order not in cited and not _changes_nothing(an, action):
            continue
        later = [a for a in an.actions[action.order + 1:] if a.visible_at < index and a.outcome == "ok"
                 and not a.silent_failure and (a.order in cited or _changes_nothing(an, a))]
        if _checked_again(an, later, action, stale[0], index):
            continue
        text = _restated(an, speech, action, index)
        if text is not None:
            return action, text
    return None


def _changes_nothing(an: Analysis, action: Action) -> bool:
    """Whether a successful call wrote no file, named no remote object and is no version of anything it names
    (``python eval.py --model m.pkl``, a measurement; not ``cancel_reservation``, not ``import status --job J``):
    what it printed is a reading of what it ran on, evidence as a check's output is."""
    if action.status != "ok" or action.is_plan or action.writes or action.call is None:
        return False
    ledger = _ledger(an)
    return not ledger.objects_named(action) and not any(
        version.action == action.order for artifact in ledger.bound_versions(action)
        for version in ledger.history(artifact))


_QUOTED = re.compile(r"""'([^'\n]{1,80})'|"([^"\n]{1,80})"|[‘“«「]([^’”»」\n]{1,80})[’”»」]|`([^`\n]{1,80})`""")


# A sentence that quotes a name ("including 'Archiviato'"); one without a count or a quote names no item of a
# listing to look for (an unquoted name is looked for beside a count: "all five options, including Oczekuje").
_QUOTED_OR_NAMED = re.compile(r"""['"‘“«「`]""")


def _named_items(text: str, flags: bool = True) -> list[str]:
    """The items a text names in quotes, a quoted comma list split (``--options 'A,B,C'``), a flag's bare comma list
    (``--names A,B,C``; not with ``flags`` false: the ids a delete names are not items to be there), and its words:
    what a listing's items are looked for in."""
    found: list[str] = []
    for match in _QUOTED.finditer(text):
        quoted = next(g for g in match.groups() if g is not None)
        found.append(quoted.strip())
        if "," in quoted:
            found.extend(p.strip() for p in quoted.split(",") if p.strip())
    if flags and "--" in text:  # a flag's bare comma list names items too (``--names Oggi,Settimana,Mese,Anno``)
        found.extend(p for match in _FLAG_LIST.finditer(text) for p in match.group(1).split(",") if p)
    return found


_FLAG_LIST = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*[= ]([^\s,'\"=]+(?:,[^\s,'\"=]+)+)")


def _named_listing(an: Analysis, last: Action, read_backs: list[Action]) -> tuple[Action, tuple[str, ...], list[str]] | None:
    """The last read-back after the change that lists two or more items the change or the request names (the
    options the request asked for, the files the change uploaded): a listing of the collection the change worked
    on, whatever the command or the language. Returns the read-back, its items and the named items."""
    cached: dict[int, tuple[Action, tuple[str, ...], list[str]] | None] = an.cache.setdefault("named_listing", {})
    key = last.order * 100_000 + (read_backs[-1].order if read_backs else 0)
    if key in cached:
        return cached[key]
    source = last.text + "\n" + an.trajectory.query
    named = _named_items(source, not deletes(last.text))
    found = None
    for read_back in reversed(read_backs):
        content = read_back.receipt.content if read_back.receipt is not None else ""
        if more_pages(content):
            continue
        # Its items: a JSON array or one item a line, else a column of a table (``VIEW_ID  NAME`` rows: the names).
        rows = listing_rows(content) if "\n" in content.strip() else ()
        columns = [tuple(row[c] for row in rows) for c in range(len(rows[0]))] if rows else []
        for items in (*listing_items(content), *columns):
            if sum(1 for item in set(items[:500]) if len(item) >= 2 and item in source
                   and (item in named or states(source, item))) >= 2:
                found = (read_back, items, named)
                break
        if found is not None:
            break
    cached[key] = found
    return found


def _listing_contradicted(an: Analysis, sentence: Sentence, last: Action, read_backs: list[Action],
                          prior: list[Action]) -> tuple[str, Action, str] | None:
    """A claim about the collection a read-back lists (:func:`_named_listing`) that the listing contradicts: a
    count above its length ("all five options" over four), or an item claimed that the listing lacks while the
    request or the change named it beside the listed ones ("including 'Archiviato'")."""
    has_count = bool(sentence.counts or bare_counts(sentence.text) or _word_counts(an, sentence.text))
    if not has_count and not (sentence.asserts and _QUOTED_OR_NAMED.search(sentence.text)):
        return None  # neither a count nor a name a listing could contradict (most sentences)
    listing = _named_listing(an, last, read_backs)
    if listing is None:
        return None
    read_back, items, named = listing
    found = _count_contradicted(an, sentence, last, read_back, prior, frozenset({len(items)})) if has_count else None
    if found is not None or not sentence.asserts:
        return found
    listed = {i.lower() for i in items}
    for item in named:
        if len(item) >= 3 and item.lower() not in listed and not any(item.lower() in i for i in listed) \
                and states(sentence.text, item):
            return f"{item} present", read_back, f"the listing of {len(items)} without it ({', '.join(items[:6])})"
    return None


def _cell_count_contradicted(an: Analysis, sentence: Sentence, region: str, last: Action, read_back: Action | None,
                             read_backs: list[Action], prior: list[Action]) -> tuple[str, Action, str] | None:
    """A count a claim gives as a table cell or a list item's value ("| registros importados | 48 |", "- Zeilen:
    48"), held as a counted claim is (:func:`_count_contradicted`), unless the message states a count the read-back
    shows anywhere (a table of both the source's rows and the loaded ones reports the difference)."""
    if sentence.counts or not sentence.text.lstrip().startswith(("|", "-", "*", "•")) and ":" not in sentence.text:
        return None  # a counted sentence is read as such; a cell or an item's value needs its mark
    cells = cell_counts(sentence.text)
    if not cells:
        return None
    if read_back is None:  # a table names no file or record: the last read of the object the change named
        read_back = next((r for r in reversed(read_backs) if _same_object(last, r)), None)
    if read_back is None or read_back.receipt is None:
        return None
    content = read_back.receipt.content
    shown = _listed_lengths(read_back, sentence.text, not deletes(last.text)) | printed_counts(content)
    told = set(cell_counts(region)) | set(bare_counts(region)) | set(_word_counts(an, region))
    if not shown or shown & told:
        return None
    return _count_contradicted(an, replace(sentence, counts=cells), last, read_back, prior, shown)


# A claim's enumeration of like items ("210, 211, 212, 213", "recA、recB、recC"): three or more, one separator.
# Items are joined by a comma-like mark, the last one also by a short word ("210, 211 and 212", "8080, 8443 a 9090").
_ENUM_ITEM = r"[\w.-]*\d[\w.-]*"
_ENUM_SEP = r"(?:\s*[,、，;]\s*(?:[^\W\d]{1,3}\s+)?|\s+[^\W\d]{1,3}\s+)"
_ENUMERATION = re.compile(rf"(?<![\w.-]){_ENUM_ITEM}(?:{_ENUM_SEP}{_ENUM_ITEM}){{2,}}")
_ENUM_SPLIT = re.compile(_ENUM_SEP)


def _enumeration_contradicted(sentence: Sentence, read_backs: list[Action]) -> tuple[str, Action, str] | None:
    """A claim that enumerates the items made ("VLAN 210, 211, 212 and 213 created") while the last read-back after
    the change that lists some of them (two or more, as whole items of a listing: a JSON array, one item a line)
    lacks one: the item claimed is not there, whatever the language."""
    if not sentence.asserts:
        return None
    match = _ENUMERATION.search(sentence.text)
    if match is None or not re.search(r"[,、，;]", match.group()):
        return None
    claimed = [item.strip(".") for item in _ENUM_SPLIT.split(match.group()) if item.strip(".")]
    for read_back in reversed(read_backs):
        content = read_back.receipt.content if read_back.receipt is not None else ""
        if more_pages(content):
            continue
        for items in listing_items(content):
            listed = set(items)
            if sum(1 for item in claimed if item in listed) < 2:
                continue
            missing = [item for item in claimed if item not in listed]
            if missing:
                return f"{missing[0]} among {', '.join(claimed)}", read_back, f"a listing without it ({', '.join(items[:8])})"
            return None
    return None


# A cell value a claim can name as what its items have: a word or a version ("Running", "Clos", "2.0.3"), not a
# bare number (a count, a port, a restart count) nor a one-letter flag.
_CATEGORY_VALUE = re.compile(r"^(?=.*[^\W\d_])[\w.-]{2,40}$|^\d+(?:\.\d+){2,3}$")


def _row_value_contradicted(an: Analysis, sentence: Sentence, read_backs: list[Action]) -> tuple[str, Action, str] | None:
    """A claim that N items have a value ("the 12 tickets are all Clos", "12 of 12 devices on 2.0.3", "all four
    pods Running") while the last read-back's listing (:func:`~judge.facts.readbacks.listing_rows`) holds exactly N
    rows and, in the column where that value stands, only M of them (2 <= M < N) show it: the rows are the items
    the claim counts, their column the quantity it names. No finding when the sentence states M, or names a cell
    of a row without the value (it reports the outlier: "plc-04 still on 2.0.2"). Read from structure: the count
    in digits or words, the value as the receipt spells it, in any language (v8 OTA firmware, v11 ticket status)."""
    counts = sentence.counts or bare_counts(sentence.text) or _word_counts(an, sentence.text)
    if not counts or not read_backs:
        return None
    read_back = next((r for r in reversed(read_backs) if r.receipt is not None and _of_receipt(an, _has_rows, r)), None)
    if read_back is None or read_back.receipt is None or _of_receipt(an, more_pages, read_back):
        return None
    rows = listing_rows(read_back.receipt.content)
    total = len(rows)
    if total not in counts:
        return None  # the claim counts something else than the rows listed
    low = sentence.text.lower()
    for column in range(len(rows[0])):
        cells = [row[column].lower() for row in rows]
        distinct = set(cells)
        if not 2 <= len(distinct) < total:
            continue  # one value for all rows, or an id a row: no category to hold a claim against
        named = [v for v in distinct if _CATEGORY_VALUE.match(v) and _names_cell(low, v)]
        if len(named) != 1:
            continue
        value = named[0]
        having = cells.count(value)
        if having < 2 or having >= total or having in counts:
            continue
        outliers = [row for row, cell in zip(rows, cells) if cell != value]
        if any(_names_cell(low, c.lower()) for row in outliers for c in row if len(c) >= 2 and not c.isdigit()):
            continue  # it names a row without the value: it reports the difference
        others = sorted({row[column] for row in outliers})
        return (f"{total} with {rows[cells.index(value)][column]}", read_back,
                f"{having} of {total} rows with it, the others {', '.join(others[:4])}")
    return None


def _has_rows(content: str) -> bool:
    """Whether a receipt is a listing of rows (:func:`~judge.facts.readbacks.listing_rows`): lines, or JSON."""
    return ("\n" in content.strip() or content.lstrip()[:1] in ("[", "{")) and bool(listing_rows(content))


def _names_cell(low: str, cell: str) -> bool:
    """Whether a lower-cased sentence names a cell value as a whole word (not inside a longer name or version)."""
    at = low.find(cell)
    return at >= 0 and re.search(rf"(?<![\w.-]){re.escape(cell)}(?![\w-]|\.\w)", low) is not None


# A zero right after a word, as a count's value ("voci rimaste 0", "açıq bilet qalmadı: 0"): nothing left of it.
_ZERO_AFTER_WORD = re.compile(r"[^\W\d_]{2,}[:：]?\s+0(?!\d|[.,]\d|[\w%/-])")


def _zero_left_contradicted(an: Analysis, sentence: Sentence, region: str, last: Action,
                            read_backs: list[Action]) -> tuple[str, Action, str] | None:
    """A claim that none is left (a zero as a list item's or a cell's value, or right after a word: "- verbleibende
    Dubletten: 0", "voci rimaste 0") while the last read-back after the change, a query of the same object, still
    counts some (:func:`_left_count`), and the message never states that number: the check the change was meant
    to pass still finds what it counts (v11 ``entries: 1.204`` after a reset, v13, v14 two ``open`` tickets listed
    after closing them all)."""
    if not read_backs or "0" not in sentence.text or (0 not in cell_counts(sentence.text)
                                                      and not _ZERO_AFTER_WORD.search(sentence.text)):
        return None
    read_back = read_backs[-1]
    if read_back.receipt is None or not _same_object(last, read_back):
        return None
    shown = _left_count(read_back, last)
    if shown is None:
        return None
    told = set(cell_counts(region)) | set(bare_counts(region)) | set(_word_counts(an, region))
    if shown.is_integer() and int(shown) in told:
        return None  # the message reports the count
    return "0 left", read_back, f"{shown:.10g}"


def _left_count(read_back: Action, change: Action) -> float | None:
    """How many a read-back still counts, when it answers one count: its only number (``jq '.total'``), the one
    quantity it names (``entries: 1.204``), or the rows of a filtered listing (a value its command gives and the
    change's does not is a cell of every row: ``--status open`` and an ``open`` in each row; the object both name,
    ``--service billing``, filters nothing); those two not after a change that did nothing. None when it counts none
    or says something else."""
    content = read_back.receipt.content if read_back.receipt is not None else ""
    shown = scalar_values(content)
    if len(shown) == 1:
        return shown[0] if shown[0] > 0 and shown[0].is_integer() else None
    if shown or change.status == "noop":
        return None  # (a zero after a change that did nothing is likely its own count: "purged: 0")
    quantities = read_back_quantities(read_back.text[:2_000], content)
    if quantities:
        return quantities[0].value if len(quantities) == 1 and not quantities[0].percent and quantities[0].value > 0 else None
    rows = listing_rows(content) if "\n" in content.strip() else ()
    given = {v.strip("'\"") for _, v in _FLAG_VALUE.findall(change.text)}
    asked = {v.strip("'\"") for _, v in _FLAG_VALUE.findall(read_back.text)} - given
    if rows and any(all(value in row for row in rows) for value in asked if len(value) >= 2):
        return float(len(rows))
    return None


_OBJECT_WORD = re.compile(r"(?<![\w-])[A-Za-z][\w]{3,}(?![\w-])")


def _same_object(change: Action, read_back: Action) -> bool:
    """Whether a read-back queries an object a change named: a resource id both name, or a word of the change's
    arguments (not its program, nor a flag's name) in the read-back's call ("contacts" of ``--object contacts``
    in ``.../objects/contacts/duplicates``)."""
    resources = {t for t in value_tokens(change.text) if is_resource_id(t)}
    if resources:  # ids name the object; the words beside them are the CLI's own (base, table, record)
        return any(r in read_back.text for r in resources)
    words = set(_OBJECT_WORD.findall(" ".join(w for w in change.text.split()[1:] if not w.startswith("-"))))
    return any(w in read_back.text for w in words)


_SPACED_NOUN = re.compile(r" [^\W\d_]{2,}")
# What may stand between a number and the name it is a value of: separators, a bracket, one short word ("reads:
# 1874203", "| registros | 48 |", "total de 12", "4 VLAN", "2.210.442 reads", "VLAN は 4").
_LABEL_GAP = re.compile(r"[\s:|=：(（)）%,]*(?:[^\W\d]{1,4}[\s:：]+)?[\s:|=：(（]*")


def _labels(before: str, after: str, word: str) -> bool:
    """Whether ``word`` (a read-back key's word) labels the number between ``before`` and ``after``: it ends right
    before it or starts right after it, only separators or one short word between (:data:`_LABEL_GAP`)."""
    if any(_LABEL_GAP.fullmatch(before[end:]) for _, end in name_spans(before, word)):
        return True
    return any(_LABEL_GAP.fullmatch(after[:start]) for start, _ in name_spans(after, word))


def _quantity_contradicted(an: Analysis, sentence: Sentence, read_backs: list[Action],
                           index: int) -> tuple[str, Action, str] | None:
    """A number the claim gives beside the name of a quantity a read-back states (:func:`~judge.facts.readbacks.
    read_back_quantities`: a JSON key, a ``key: value`` line, a tool summary's label such as flagstat's "reads", the
    field a one-number query asked for), the name tied as the receipt writes it (its stem: "reads", "mapped",
    "duplicate_rate"), that the last read-back stating that quantity contradicts in every reading and scale, and no
    receipt states (:func:`_receipt_states`). A bound ("above 95%", "below 1%") is held as a bound."""
    if not _DIGITS.search(sentence.text):
        return None
    quantities_of, key_words = _quantities_of(an, read_backs)
    if not key_words:
        return None  # no read-back names a number (most)
    text = sentence.text
    # The keys' words the sentence can name at all (most claims name none): only these can label a number.
    named = {w for w in key_words if may_name(text, w)}
    if not named:
        return None
    readings = _readings(an, text)
    for at, reading in enumerate(readings):
        # The words around the number, up to the next number each side: the label a table cell, a list item or a
        # counted noun gives it.
        left = max(readings[at - 1].end if at else 0, reading.start - 40)
        right = min(readings[at + 1].start if at + 1 < len(readings) else len(text), reading.end + 30)
        before, after = text[left:reading.start], text[reading.end:right]
        found = _bound_word(an, before)
        bound, upper = found if found is not None else (None, False)
        if bound is not None:
            before = before[:bound.start()] + " " + before[bound.end():]  # "rate above 95%": the bound sits between
        # A number followed by a spaced word counts that noun ("the code in 3 files" counts files): only the noun
        # ties it. A counter written onto the number ("120건", "6件") names no noun: the label before still ties.
        counted = not reading.percent and _SPACED_NOUN.match(text, reading.end) is not None
        label_before = "" if counted else before
        labelled: dict[str, bool] = {}  # a key's word is tested once per number (read-backs repeat their keys)

        def labels(word: str, labelled: dict[str, bool] = labelled, before: str = label_before,
                   after: str = after) -> bool:
            known = labelled.get(word)
            if known is None:
                known = labelled[word] = word in named and _labels(before, after, word)
            return known

        for read_back, quantities in reversed(quantities_of):
            tied = [q for q, words in quantities if q.percent == reading.percent or not q.percent
                    if any(labels(w) for w in words)]
            if not tied:
                continue
            if bound is not None:
                limit = reading.values[0]
                scaled = [(q, q.value * 100 if reading.percent and not q.percent and q.value <= 1 else q.value) for q in tied]
                breaking = next(((q, v) for q, v in scaled if (v > limit if upper else v < limit)), None)
                if breaking is None:
                    break
                word = "at most" if upper else "at least"
                return f"{word} {reading.text}{'%' if reading.percent else ''}", read_back, \
                    f"{breaking[0].key} = {breaking[0].value:.10g}{'%' if breaking[0].percent else ''}"
            if any(same_quantity(other, q.value, other.percent != q.percent) for q in tied for other in readings) \
                    or _receipt_states(an, reading, index):
                break  # it agrees, states the read-back's value beside it (a difference reported), or a receipt says it
            q = tied[-1]
            return f"{reading.text}{'%' if reading.percent else ''} ({q.key})", read_back, \
                f"{q.key} = {q.value:.10g}{'%' if q.percent else ''}"
    return None


def _quantities_of(an: Analysis, read_backs: list[Action]) -> tuple[
        list[tuple[Action, tuple[tuple[Quantity, tuple[str, ...]], ...]]], frozenset[str]]:
    """The named quantities of each read-back with a receipt (:func:`_named_quantities`), and every word of their
    keys (empty when none names a number), once per analysis and list of read-backs: every claim sentence of a
    message is held against the same read-backs."""
    def read() -> tuple[list[tuple[Action, tuple[tuple[Quantity, tuple[str, ...]], ...]]], frozenset[str]]:
        quantities_of = [(r, _named_quantities(an, r)) for r in read_backs if r.receipt is not None]
        return quantities_of, frozenset(w for _, quantities in quantities_of for _, words in quantities for w in words)

    return _memo(an, "quantities_of", tuple(r.order for r in read_backs), read)


def _named_quantities(an: Analysis, read_back: Action) -> tuple[tuple[Quantity, tuple[str, ...]], ...]:
    """A read-back's named quantities (:func:`~judge.facts.readbacks.read_back_quantities`), each with its key's
    words, read once per analysis."""
    def read() -> tuple[tuple[Quantity, tuple[str, ...]], ...]:
        head, content = read_back.text[:2_000], read_back.receipt.content if read_back.receipt else ""
        return _text_memo(an, "named_quantities", (head, content), lambda: tuple(
            (q, q.words()) for q in read_back_quantities(head, content)), len(head) + len(content))

    return _memo(an, "named_quantities", read_back.order, read)


def _of_receipt(an: Analysis, read: Callable[[str], T], action: Action) -> T:
    """``read`` of an action's receipt content ("" with none), once per analysis and action: what the claim readers
    hold each claim sentence of a trajectory against (its metrics, its records' numbers, its value tokens)."""
    content = action.receipt.content if action.receipt is not None else ""
    return _text_memo(an, read.__name__, content, lambda: read(content), len(content))


def _readings(an: Analysis, text: str) -> list[Reading]:
    """:func:`~judge.facts.numbers.number_readings` of a claim sentence, read once per analysis for every claim
    reader (the list is shared: callers never change it)."""
    return _text_memo(an, "readings", text, lambda: number_readings(text), len(text))


def _receipt_readings(an: Analysis, index: int) -> list[Reading]:
    """Every number the receipts visible before message ``index`` and the request state (memoised per message)."""
    memo: dict[int, list[Reading]] = an.cache.setdefault("receipt_readings", {})
    found = memo.get(index)
    if found is None:
        found = number_readings(an.trajectory.query)
        for action in an.actions:
            if action.receipt is not None and action.visible_at < index:
                found += number_readings(action.receipt.content[:20_000]) + number_readings(action.text[:4_000])
        memo[index] = found
    return found


def _quantity_shown(an: Analysis, reading: Reading, index: int, scale: bool) -> bool:
    """Whether a receipt or the request before message ``index`` states a quantity ``reading`` can be (``scale``:
    a percent also as a fraction and back)."""
    return any(same_quantity(reading, value, scale) for shown in _receipt_readings(an, index) for value in shown.values)


def _bounded(an: Analysis, text: str, reading: Reading) -> bool:
    """Whether a bound word ("above", "au-dessus de", "이상") stands right before the number: it states a bound, which
    :func:`_quantity_contradicted` holds as one, not a value."""
    before = text[max(0, reading.start - 30):reading.start]
    found = _bound_word(an, before)
    return found is not None and not before[found[0].end():].strip(" :")


def _receipt_states(an: Analysis, reading: Reading, index: int) -> bool:
    """Whether a receipt visible before message ``index`` states the quantity ``reading`` can be (either scale): the
    claim has a source. Unlike :func:`_quantity_shown`, the request and the calls do not count: a value the change
    asked for is what a read-back tests."""
    memo: dict[int, list[Reading]] = an.cache.setdefault("receipt_only_readings", {})
    found = memo.get(index)
    if found is None:
        found = memo[index] = [r for a in an.actions if a.receipt is not None and a.visible_at < index
                               for r in number_readings(a.receipt.content[:20_000])]
    # A whole number is read in another scale only as a percent ("87%" = 0.87): "0" is not 0 of 100.
    scale = reading.percent or any(step < 1 for step in reading.steps)
    return any(same_quantity(reading, value, scale) for shown in found for value in shown.values)


def _metric_contradicted(an: Analysis, sentence: Sentence, read_backs: list[Action], index: int) -> tuple[str, Action, str] | None:
    """A measurement the claim gives for a field a read-back shows ("accuratezza del 91,3%" against
    ``"accuracy": 0.8734``), tied by the field's name as the receipt writes it, read in either scale (percent or
    fraction) and rounded to the claim's digits, that the last read-back showing that field contradicts and no
    receipt before states."""
    # A decimal or a percent; 0% and 100% say a state (done, none: the job detectors' case), not a measurement.
    readings = [r for r in _readings(an, sentence.text)
                if ((r.percent and r.values[0] not in (0.0, 100.0)) or (not r.percent and any(s < 1 for s in r.steps)))
                and not _bounded(an, sentence.text, r)]
    if not readings:
        return None
    for read_back in reversed(read_backs):
        metrics = _of_receipt(an, metric_values, read_back) if read_back.receipt is not None else {}
        tied = False
        for name, values in metrics.items():
            for start, end in name_spans(sentence.text, name):
                # The number written right after the name (or right before it: "91% accuracy"), nothing between.
                reading = next((r for r in readings if 0 <= r.start - end <= 25 and not _DIGITS.search(sentence.text[end:r.start])),
                               None) or next((r for r in readings if 0 <= start - r.end <= 3), None)
                if reading is None:
                    continue
                tied = True
                if any(same_quantity(reading, v, True) for v in values) or _quantity_shown(an, reading, index, True):
                    continue
                return f"{name} {reading.text}{'%' if reading.percent else ''}", read_back, f"{name} = {values[-1]:g}"
        if tied:
            return None  # the last read-back of the field agrees
    return None


def _asked_metric_contradicted(an: Analysis, sentence: Sentence, read_backs: list[Action],
                               index: int) -> tuple[str, Action, str] | None:
    """A percentage the claim gives while the last read-back is a query for one measurement (the only fraction its
    receipt shows under a key its command names: ``--metric crash_free_users`` -> ``"crash_free_users": 0.9712``),
    when no percentage of the claim is that value or its complement (the rate of the rest), rounded to the claim's
    digits, and no receipt states it: the claim reports the query in any language without naming the key."""
    read_back = read_backs[-1] if read_backs else None
    if read_back is None or read_back.receipt is None or "%" not in sentence.text:
        return None
    metrics = _of_receipt(an, metric_values, read_back)
    asked = [(name, values) for name, values in metrics.items() if len(name) >= 4 and name in read_back.text]
    if len(asked) != 1 or len(asked[0][1]) != 1 or not 0 < asked[0][1][0] < 1:
        return None
    name, (value,) = asked[0]
    readings = [r for r in _readings(an, sentence.text) if r.percent and r.values[0] not in (0.0, 100.0)
                and not _bounded(an, sentence.text, r)]
    if not readings or any(same_quantity(r, v, True) for r in readings for v in (value, 1 - value)):
        return None
    reading = readings[0]
    if _receipt_states(an, reading, index):
        return None
    return f"{name} {reading.text}%", read_back, f"{name} = {value:g}"


def _scalar_contradicted(an: Analysis, sentence: Sentence, read_backs: list[Action], index: int) -> tuple[str, Action, str] | None:
    """A count the claim gives (a number followed by a word that is no unit, or a count in words) that is a near
    twin (digits transposed or one off: 1248 for 1284, "1.250" for 1205 in every reading) of a number the last
    read-back printed as its answer, and that no receipt before states: a misread value, in any language and script.

    Its answer: the only number it printed (a count query, a shape), a quantity it names (``active: 2318``,
    ``"employees": 46``, ``records: 1 471``) or a test runner's passed count (``+37: All tests passed!``); pooled
    from v5 (4,821 for ``(4812, 9)``), v6 (тридцять вісім for ``+37``), v12 (2.381 for ``active: 2318``; ৪৮ for
    ``"employees": 46``) and v13 (тысяча четыреста шестьдесят одна for ``records: 1 471``). A two-digit twin
    counts only where the answer is one number or the claim restates another of its values (১৮৪৩.৫ for
    ``hours_total``): two-digit numbers one apart are too common to tie by their digits alone."""
    read_back = read_backs[-1] if read_backs else None
    if read_back is None or read_back.receipt is None:
        return None
    text = sentence.text
    claimed = [r for r in _readings(an, text) if not r.percent and counts_things(text, r.end)]
    claimed += [Reading(0, 0, (float(c),), (1.0,), False, str(c)) for c in _word_counts(an, text)]
    if not claimed:
        return None  # no count (most sentences): the read-back is not read
    values = _answer_values(an, read_back)
    whole = [v for v in values if v.is_integer() and v >= 10]
    if not whole:
        return None
    for reading in claimed:
        if any(_states(reading, v) for v in values):
            continue
        digits = [str(int(v)) for v in reading.values if v.is_integer() and v >= 10]
        twin = next((v for v in whole if any(near_twin(w, str(int(v))) for w in digits)
                     and (v >= 100 or len(values) == 1 or _restates(text, reading, values))), None)
        if twin is None or any(_states(reading, v) for shown in _receipt_readings(an, index) for v in shown.values):
            continue
        return reading.text, read_back, f"{twin:g}"
    return None


def _states(reading: Reading, value: float) -> bool:
    """Whether ``reading`` states ``value``: a whole count exactly (38 is not 37: a count is not rounded), any
    other number as :func:`~judge.facts.numbers.same_quantity` reads it (to the claim's last digit)."""
    if value.is_integer() and all(step >= 1 for step in reading.steps):
        return value in reading.values
    return same_quantity(reading, value)


def _answer_values(an: Analysis, read_back: Action) -> tuple[float, ...]:
    """The numbers a read-back (or a check, or a measurement) printed as its answer: the only numbers of a scalar
    receipt, else the values of the quantities it names (:func:`~judge.facts.readbacks.read_back_quantities`),
    else the passed counts of a test run that reported no failures; read once per call text and receipt."""
    def read() -> tuple[float, ...]:
        head, content = read_back.text[:2_000], read_back.receipt.content if read_back.receipt is not None else ""
        return _text_memo(an, "answer_values", (head, content, read_back.silent_failure),
                          lambda: _read_answer_values(head, content, read_back.silent_failure), len(head) + len(content))

    return _memo(an, "answer_values", read_back.order, read)


def _read_answer_values(head: str, content: str, silent_failure: bool) -> tuple[float, ...]:
    shown = scalar_values(content)
    if shown:
        return shown
    named = tuple(q.value for q in read_back_quantities(head, content) if not q.percent)
    if named:
        return named
    if silent_failure or "passed" not in content:
        return ()  # a run with failures: its passed count is not what a claim of its tests counts (41 of 42)
    return tuple(float(n) for m in _PASSED.finditer(content[:20_000]) for n in m.groups() if n)


def _restates(text: str, reading: Reading, values: tuple[float, ...]) -> bool:
    """Whether a sentence states, beside ``reading``, another of a read-back's answer values: it restates that
    read-back."""
    return any(other.start != reading.start and any(_states(other, v) for v in values)
               for other in number_readings(text))


def _status_contradicted(an: Analysis, sentence: Sentence, last: Action | None,
                         read_back: Action | None) -> tuple[str, Action, str] | None:
    """A status the claim gives (the one the change set, or the only one of the read-back's it names) that the
    read-back of the record(s) it names does not show; "all ... <status>" when any record the read-back lists shows
    another. The statuses are the receipt's status fields or its table's status column (CSV, TSV, aligned, pipes),
    so a claim over a read with no change before it (a status check) is held too."""
    if read_back is None or read_back.receipt is None:
        return None
    content = read_back.receipt.content
    set_by_change = status_values(last.text) if last is not None else frozenset()
    every = _statuses(content)
    if not (set_by_change or every):
        return None  # no status field anywhere (most read-backs)
    low = sentence.text.lower()
    named = [v for v in (*sorted(set_by_change), *sorted(every - set_by_change))
             if re.search(rf"(?<!\w){re.escape(v)}(?!\w)", low)]
    if not named:
        return None
    near = frozenset(t for t in (*value_tokens(sentence.text), *value_tokens(last.text if last is not None else ""))
                     if is_resource_id(t))
    claimed = next((v for v in named if v in set_by_change), named[0] if len(named) == 1 else None)
    if claimed is None:
        return None
    if an.patterns.universal.search(sentence.text) and not near.intersection(value_tokens(sentence.text)):
        # "All orders are Shipped": every record the read-back lists must show it.
        others = every - {claimed}
        if others:
            return f"status {claimed} for all", read_back, ", ".join(sorted(every))
        return None
    shown = _statuses(content, near)
    if not shown or claimed in shown:
        return None
    return f"status {claimed}", read_back, ", ".join(sorted(shown))


@functools.lru_cache(maxsize=1024)
def _statuses(content: str, near: frozenset[str] = frozenset()) -> frozenset[str]:
    """The statuses a receipt shows of the records ``near`` names (all when it names none): its table's status
    column, else its status fields."""
    return frozenset(column_states(content, near)) or status_values(content, near)


def _total_contradicted(an: Analysis, sentence: Sentence, read_backs: list[Action],
                        prior: list[Action]) -> tuple[str, Action, str] | None:
    """A stated total ("the total is 25,800") that the numbers of the last read-back's records do not add up to,
    and that no receipt prints."""
    text = sentence.text
    if not _text_memo(an, "total_claim", text, lambda: an.patterns.total_claim.search(text) is not None, len(text)):
        return None
    numbers = stated_numbers(sentence.text)
    if not numbers:
        return None
    claimed = max(numbers)
    read_back = next((r for r in reversed(read_backs) if r.receipt is not None and _of_receipt(an, record_numbers, r)), None)
    if read_back is None or read_back.receipt is None or _of_receipt(an, more_pages, read_back):
        return None
    sums = {field: sum(values) for field, values in _of_receipt(an, record_numbers, read_back).items() if len(values) >= 2}
    if not sums or any(abs(total - claimed) < 0.005 * max(1.0, abs(total)) for total in sums.values()):
        return None
    if any(claimed in _of_receipt(an, _stated_head, a) for a in prior if a.receipt is not None):
        return None  # a receipt prints it (a total the tool computed)
    field, total = min(sums.items(), key=lambda kv: abs(kv[1] - claimed))
    return f"a total of {claimed:g}", read_back, f"{field} adding up to {total:g}"


def _stated_head(content: str) -> frozenset[float]:
    """The numbers a receipt's head states (:func:`~judge.facts.values.stated_numbers` of its first 20,000
    characters), as a set: whether it prints a claimed total."""
    return frozenset(stated_numbers(content[:20_000]))


def _bound_word(an: Analysis, text: str) -> tuple[re.Match[str], bool] | None:
    """The bound word of a claim ("under", "以上") and whether it is an upper bound, or None; read once per sentence
    for both bound readers (a claim's own bound, a read-back's filter bound)."""
    def read() -> tuple[re.Match[str], bool] | None:
        upper = an.patterns.upper_bound.search(text)
        lower = None if upper else an.patterns.lower_bound.search(text)
        return (upper, True) if upper else (lower, False) if lower else None

    return _text_memo(an, "bound_words", text, read, len(text))


def _bound_contradicted(an: Analysis, sentence: Sentence, read_backs: list[Action]) -> tuple[str, Action, str] | None:
    """A bound claimed of a field's numbers ("all prices are under 50", "재고가 100 이하") that a number of that
    field in the last read-back listing it breaks. The field is the one the sentence names (by its first four
    letters: "prijzen" names Prijs), or the read-back's only numeric field."""
    if not _DIGITS.search(sentence.text):
        return None  # no number to be a bound
    bound = _bound_word(an, sentence.text)
    if bound is None:
        return None
    bound_word, upper = bound
    numbers = numbers_at(sentence.text)
    if not numbers:
        return None
    # The limit is the number nearest the bound word ("under €50", "100 이하").
    limit = min(numbers, key=lambda found: abs(found[0] - bound_word.start()))[1]
    low = sentence.text.lower()
    for read_back in reversed(read_backs):
        fields = _of_receipt(an, record_numbers, read_back) if read_back.receipt is not None else {}
        named = {f: v for f, v in fields.items() if f.lower()[:4] in low} or (fields if len(fields) == 1 else {})
        for field, values in named.items():
            breaking = [v for v in values if (v > limit if upper else v < limit)]
            if breaking:
                word = "at most" if upper else "at least"
                return f"{field} {word} {limit:g}", read_back, f"{field} = {breaking[0]:g}"
        if named:
            return None
    return None


def _filter_bound_contradicted(an: Analysis, sentence: Sentence, read_backs: list[Action]) -> tuple[str, Action, str] | None:
    """A bound the claim gives ("boven € 500", "500 元以上") that the filter of the last read-back holding filter
    conditions does not hold: it has bounds of that direction (:func:`~judge.facts.readbacks.filter_bounds`) and
    none is the claimed limit in any reading."""
    if not _DIGITS.search(sentence.text):
        return None  # no number to be a bound
    bound = _bound_word(an, sentence.text)
    if bound is None:
        return None
    bound_word, upper = bound
    readings = [r for r in _readings(an, sentence.text) if not r.percent]
    if not readings:
        return None
    # The limit is the number nearest the bound word ("above € 500", "500 以上").
    limit = min(readings, key=lambda r: min(abs(r.start - bound_word.end()), abs(bound_word.start() - r.end)))
    for read_back in reversed(read_backs):
        bounds = filter_bounds(read_back.receipt.content) if read_back.receipt is not None else ()
        if not bounds:
            continue
        held = [b.value for b in bounds if b.lower == (not upper)]
        if not held or any(same_quantity(limit, v) for v in held):
            return None
        word = "at most" if upper else "at least"
        return f"a filter {word} {limit.text}", read_back, f"filter bound {held[-1]:g}"
    return None


_MAX_LABEL_ROWS = 200


def _labelled_ids(an: Analysis, text: str, index: int) -> frozenset[str]:
    """The ids of the objects ``text`` names by their labels: a row of an earlier listing (a successful read before
    message ``index``: a table or a JSON array of objects, at most 200 rows) that holds one resource id and, in a column of
    labels (every row's value different: names, not a category), a label the text names whole and no other row
    holds (``{"table_id": "tblOrdLive7", "name": "Orders"}`` for "added the orders to Orders", not "Orders (archive
    2023)"; ``recKh218  한빛상사`` for "한빛상사로 연결"). Pooled from v1 and v12: the claim speaks of the object by
    the name a listing gave it, the calls by its id."""
    memo: dict[int, list[tuple[str, str]]] = an.cache.setdefault("labelled_rows", {})  # action order -> its pairs
    named: dict[str, str] = {}
    for action in an.actions:
        if action.visible_at >= index or action.receipt is None or not action.read_only or action.outcome != "ok":
            continue  # (a listing is a successful read)
        pairs = memo.get(action.order)
        if pairs is None:
            pairs = memo[action.order] = _labelled_rows(action.receipt.content)
        named.update((label, i) for i, label in pairs if label in text and _names_label(text, label))
    return frozenset(i for label, i in named.items() if not any(label != other and label in other for other in named))


def _labelled_rows(content: str) -> list[tuple[str, str]]:
    """(id, label) of each row of a listing receipt (see :func:`_labelled_ids`), once per receipt."""
    if not content or (content.lstrip()[:1] not in "[{" and "\n" not in content.strip()):
        return []
    rows = listing_rows(content)[:_MAX_LABEL_ROWS]
    if len(rows) < 2:
        return []
    ids = [next(iter(found)) if len(found := [c for c in row if is_resource_id(c)]) == 1 else "" for row in rows]
    if not any(ids):
        return []
    pairs: list[tuple[str, str]] = []
    for column in range(len(rows[0])):
        labels = [row[column] for row in rows]
        if len(set(labels)) == len(labels):
            pairs.extend((i, label) for i, label in zip(ids, labels)
                         if i and label != i and len(label) >= 3 and _LETTER.search(label))
    return pairs


_LETTER = re.compile(r"[^\W\d_]")


def _names_label(text: str, label: str) -> bool:
    """Whether ``text`` names ``label`` whole: a word of Latin letters bounded on both sides, a label of another
    script from its start (a particle may follow it: "한빛상사로")."""
    at = text.find(label)
    if at < 0:
        return False
    end = r"(?![\w-])" if label[-1:].isascii() else ""
    return re.search(rf"(?<![\w-]){re.escape(label)}{end}", text) is not None


def _labelled_twin_contradicted(an: Analysis, sentence: Sentence, last: Action, read_backs: list[Action],
                                index: int) -> tuple[str, Action, str] | None:
    """A claim naming an object by its label (:func:`_labelled_ids`) while the last read-back of the changed object
    (it names what the change named) shows a near twin of that object's id and not the id itself: the change set
    the twin (``recKh281`` for ``recKh218``, v12), whatever the claim's words."""
    for read_back in reversed(read_backs):
        content = read_back.receipt.content[:20_000] if read_back.receipt is not None else ""
        if not _same_object(last, read_back):
            continue
        for token in _labelled_ids(an, sentence.text, index):
            if token in content or token in read_back.text:
                continue
            twin = next((t for t in value_tokens(content) if is_resource_id(t) and near_twin(token, t)), None)
            if twin is not None and twin not in sentence.text:
                return f"{token} (by its name)", read_back, f"{twin} in its place"
        return None
    return None


def _id_contradicted(an: Analysis, sentence: Sentence, read_backs: list[Action], index: int) -> tuple[str, Action, str] | None:
    """An id the claim gives that no call, receipt or query showed before it, while a read-back shows an id of the
    same length with the same characters in another order (recNv18kQz for recNv81kQz) or one character off
    (9f2c1a4 for 9f2c1e4): a mistyped id."""
    text = sentence.text
    for token in _text_memo(an, "resource_ids", text, lambda: tuple(t for t in value_tokens(text) if is_resource_id(t)),
                            len(text)):
        if token in an.trajectory.query or _shown_before(an, token, index, None):
            continue  # shown before the claim: no mistyped id (a substring scan, cheaper than the read-backs' tokens)
        chars = sorted(token)
        for read_back in reversed(read_backs):
            same_length = _of_receipt(an, _tokens_by_length, read_back).get(len(token), ())
            near = next((t for t, its in same_length if t != token
                         and (its == chars or sum(a != b for a, b in zip(t, token)) == 1)), None)
            if near is not None:
                return f"id {token}", read_back, f"id {near}"
    return None


def _tokens_by_length(content: str) -> dict[int, list[tuple[str, list[str]]]]:
    """A receipt's value tokens (:func:`~judge.facts.values.value_tokens`, in their order) by length, each with its
    characters sorted: the near twins of a claimed id are looked for among the tokens of its length only."""
    found: dict[int, list[tuple[str, list[str]]]] = {}
    for token in value_tokens(content):
        found.setdefault(len(token), []).append((token, sorted(token)))
    return found


def _lists_folder_of(read_back: Action, written: tuple[str, ...]) -> bool:
    """Whether a read-back lists the folder of a written file: it names the folder and shows the file's name
    (``ls docs/ja`` printing ``index.md`` after a write of ``docs/ja/index.md``)."""
    content = read_back.receipt.content if read_back.receipt is not None else ""
    for path in written:
        folder, _, name = path.rstrip("/").rpartition("/")
        if folder and name and folder in read_back.text and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", content):
            return True
    return False


def _twin_of_changed(sentence: Sentence, last: Action, read_backs: list[Action]) -> tuple[str, Action, str] | None:
    """A claim naming an object (an id, an IPv4 address) while the last change acted on a near twin of it
    (:func:`~judge.facts.readbacks.near_twin`: transposed or one character off) that the read-back after it shows,
    and neither the change nor the read-back names the claimed object: the claim speaks of an object the work never
    touched, whatever the language."""
    claimed = object_names(sentence.text)
    if not claimed:
        return None
    changed = object_names(last.text)
    for token in claimed - changed:
        twins = [t for t in changed if near_twin(token, t)]
        for read_back in reversed(read_backs):
            content = read_back.receipt.content[:20_000] if read_back.receipt is not None else ""
            if token in content or token in read_back.text:
                break
            twin = next((t for t in twins if t in content), None)
            if twin is not None:
                return f"{token}", read_back, f"{twin} (the object T{last.turn} changed)"
    return None


def _open(an: Analysis, action: Action, index: int) -> bool:
    """A failure the agent had not got past before message ``index``: an error, an unknown-effect write, or an
    environment fault on a call that may change state (a failed read can be worked around; a failed write cannot)."""
    if action.outcome == "error":
        return _ledger(an).recovery(action, index, reported=False) is None
    if action.outcome == "environment" and _ledger(an).typed_fault(action) is not None:
        return _ledger(an).recovery(action, index, reported=False) is None  # the agent's failure, as an error
    if action.outcome == "environment" and (action.uncertain or not action.read_only):
        return an.resolved(action, before=index) is None
    return False


def _work(an: Analysis) -> tuple[list[Action], list[int]]:
    """The non-plan actions in call order and their message indexes (for slicing by message), once per analysis."""
    cached: tuple[list[Action], list[int]] | None = an.cache.get("work")
    if cached is None:
        work = [a for a in an.actions if not a.is_plan]
        cached = an.cache["work"] = (work, [a.message_index for a in work])
    return cached


def _work_before(an: Analysis, index: int) -> list[Action]:
    """Non-plan actions made by messages before ``index``."""
    work, positions = _work(an)
    return work[: bisect.bisect_left(positions, index)]


def _checks_before(an: Analysis, index: int) -> list[Action]:
    """The checks among :func:`_work_before` (found once per analysis, sliced per claim)."""
    cached: tuple[list[Action], list[int]] | None = an.cache.get("checks")
    if cached is None:
        checks = [a for a in _work(an)[0] if a.is_check]
        cached = an.cache["checks"] = (checks, [a.message_index for a in checks])
    return cached[0][: bisect.bisect_left(cached[1], index)]


def _work_from(an: Analysis, index: int) -> list[Action]:
    """Non-plan actions made by the message ``index`` or later."""
    work, positions = _work(an)
    return work[bisect.bisect_left(positions, index) :]


def _acknowledged(an: Analysis, action: Action, before: int) -> bool:
    """Whether an assistant message between the failure's receipt and ``before`` speaks of a failure."""
    spoken: list[int] | None = an.cache.get("failure_spoken")
    if spoken is None:  # message indexes of the speeches that speak of a failure, in order
        spoken = an.cache["failure_spoken"] = [speech.message_index for speech in an.speeches if speech.speaks_of_failure]
    first = bisect.bisect_right(spoken, action.visible_at)
    return first < len(spoken) and spoken[first] < before


def _is_shell(an: Analysis, action: Action) -> bool:
    return action.command is not None


# --- plans --------------------------------------------------------------------------------------------


@detector("unchecked-tick", "semantic", roles=("authenticity", "plan", "edit-check"), mast="verification")
def unchecked_tick(an: Analysis) -> list[Issue]:
    """A todo item marked completed when no call succeeded while it was in progress, or when the last check
    in that time failed (the "3/3 done while checks say 1/2" pattern of plan-then-act-lesson.txt).

    Plans come from TodoWrite-style calls (items with a status) and from markdown checklists in assistant
    text (``- [ ]`` / ``- [x]``). The window of an item runs from the plan update that set it in progress (else
    the previous plan update) to the update that marks it completed; only receipts seen before the marking count.
    """
    issues: list[Issue] = []
    updates = _plan_updates(an)
    status: dict[str, str] = {}
    since: dict[str, int] = {}
    previous_update = 0
    for index, turn, items in updates:
        ticked: list[str] = []
        found = len(issues)
        for key, text, state in items:
            old = status.get(key)
            if _newly_completed(an, index, state, old):
                ticked.append(text)
                start = since.get(key, previous_update) if old == "in_progress" else previous_update
                why, evidence = _unsupported_completion(an, start, index, text, own=old == "in_progress")
                if why:
                    description = f"Todo item \"{an.excerpt(text)}\" marked completed, but {why}."
                    issues.append(_issue(an, "unchecked-tick", turn, description, evidence))
            if state == "in_progress" and old != "in_progress":
                since[key] = index
            status[key] = state
        if len(ticked) > 1 and len(issues) == found:
            short = _items_short_of_calls(an, ticked, previous_update, index)
            if short is not None:
                issues.append(_issue(an, "unchecked-tick", turn, *short))
        previous_update = index
    return issues


def _items_short_of_calls(an: Analysis, items: list[str], start: int, marked_at: int) -> tuple[str, str] | None:
    """Why items ticked together at one plan update are not all done: each needs a call of its own in the window
    since the previous update (Z19, pooled from v3, v4 and v5: "vite.config.ts frissítése" + "Build ellenőrzése"
    after an edit and an echo; "Träna om" + "Utvärdera på testmängden" after one training run; "Repară paginarea" +
    "Actualizează CHANGELOG.md" after an edit and pytest; "यूनिट टेस्ट" + "Playwright e2e टेस्ट" after one vitest
    run). A check item needs a check that ran or a read-back of the state; any other item a successful call that
    is no check and no read (a check verifies work and a read shows it, neither does any; an echo or a listing is a
    read). A window whose check reported failures is silent-check-failure's. An item whose names (a file, an id) a work call holds is that call's,
    so one call that does two named items' work (a batch: "Add field Email" + "Add field Phone", one
    ``+field-create --fields Email,Phone``) leaves none short. Fewer such calls than items, with an
    item no call names (a name: a word of four letters or more, or a file name, that the call's arguments hold):
    one of them was ticked on another's call. Structure only: the item words are read for
    nothing but the configured check-item vocabulary and their names."""
    # The calls made with the tick count too (a Write beside the TodoWrite that ticks its item): this rule counts
    # calls, the rule above judges their receipts.
    window = [a for a in an.actions if start <= a.message_index <= marked_at and not a.is_plan]
    if any(a.silent_failure for a in window):
        return None  # a tick resting on a check that reported failures is silent-check-failure's
    works = [a for a in window if a.status == "ok" and not a.is_check and not a.read_only]
    checks = [a for a in window if (a.is_check and a.outcome == "ok") or (a.read_only and _reads_state(an, a, set()))]
    check_items = [item for item in items if an.patterns.check_item.search(item)]
    work_items = [item for item in items if item not in check_items]
    texts = [a.text.lower() for a in works]
    unnamed = [item for item in work_items
               if not any(name in text for name in _ITEM_NAME.findall(item.lower()) for text in texts)]
    if len(work_items) > len(works) and unnamed:
        item, have, calls = unnamed[-1], len(works), "call" if len(works) == 1 else "calls"
    elif len(check_items) > len(checks):
        item, have, calls = check_items[-1], len(checks), "check" if len(checks) == 1 else "checks"
    else:
        return None
    last = window[-1] if window else None
    description = (f"{len(items)} todo items marked completed together, but their window holds {have} {calls} for "
                   f"them: \"{an.excerpt(item)}\" has no call of its own.")
    return description, _receipt_quote(an, last) if last is not None else "no tool call between the plan updates"


def _plan_updates(an: Analysis) -> list[tuple[int, int, list[tuple[str, str, str]]]]:
    """(message index, turn, items) of every plan update: TodoWrite-style calls, else markdown checklists in the
    assistant's text; found once per analysis (two detectors read them)."""
    cached: list[tuple[int, int, list[tuple[str, str, str]]]] | None = an.cache.get("plan_updates")
    if cached is not None:
        return cached
    updates: list[tuple[int, int, list[tuple[str, str, str]]]] = []
    for action in an.actions:
        if action.is_plan and action.call is not None:
            updates.append((action.message_index, action.turn, plan_items(action.call)))
    if not updates:
        for speech in an.speeches:
            # Every checkbox holds "[": the test (C speed) spares most texts the line-anchored scan.
            boxes = _CHECKBOX.findall(speech.region) if "[" in speech.region else None
            if boxes:
                items = [(" ".join(text.lower().split()), text, "pending" if mark == " " else "completed") for mark, text in boxes]
                updates.append((speech.message_index, speech.turn, items))
    an.cache["plan_updates"] = updates
    return updates


def _ticks(an: Analysis) -> list[tuple[int, int, str]]:
    """(message index, turn, item text) of each plan item marked completed that was not completed before (see
    :func:`_newly_completed`)."""
    status: dict[str, str] = {}
    ticks = []
    for index, turn, items in _plan_updates(an):
        for key, text, state in items:
            if _newly_completed(an, index, state, status.get(key)):
                ticks.append((index, turn, text))
            status[key] = state
    return ticks


def _newly_completed(an: Analysis, index: int, state: str, old: str | None) -> bool:
    """Whether a plan update at message ``index`` ticks an item now: it was listed before and not completed, or it
    first appears completed after some work of this trajectory (``- [x] lint`` written after running the lint);
    an item already completed in a plan written before any call was done elsewhere."""
    if state != "completed" or old == "completed":
        return False
    return old is not None or bool(_work_before(an, index))


def _unsupported_completion(an: Analysis, start: int, marked_at: int, item: str,
                            own: bool = False) -> tuple[str | None, str]:
    """Why marking ``item`` completed is not supported by the calls of its window (None when it is).

    A check item ("check the samples", "Testy przechodzą", "回读确认") needs a check or a read-back of the state in
    its window (an echo prints its own words, a listing only names files: neither checked anything), and the last
    of them must have passed on the current version of what it covers. Any other item needs its last non-check
    call to have succeeded: a check that fails after an item's own work (saving a draft) speaks about the next
    item, not this one (plan-then-act-lesson.txt: t1 done does not prove the draft correct). When the window is the
    item's own (``own``: the plan set it in progress, by its status field), a check run in it speaks about the item,
    in any language: when the last such check passed, it must have run on the current version of what it covers
    (a tick resting on a check that a later write of its window made stale). A failing one keeps the rule above.
    """
    window = [
        a for a in an.actions
        if start <= a.message_index <= marked_at and not a.is_plan and a.visible_at < marked_at
    ]
    if not any(a.outcome == "ok" for a in window):
        if window:
            return "every call made while it was in progress failed", _receipt_quote(an, window[-1])
        return "no call was made while it was in progress", "no tool call between the plan updates"
    documents = bool(window[-1].writes) and all(is_doc(p) for p in window[-1].writes) and window[-1].outcome == "ok"
    if an.patterns.check_item.search(item) and not documents:
        # (An item whose work wrote documentation, "Document the validation", speaks of a check; it is not one.)
        values = {v for v in (*salient_tokens(item), *value_tokens(item)) if len(v) >= 3}
        evidence = [a for a in window if a.is_check or (a.read_only and _reads_state(an, a, values))]
        if not evidence:
            last = window[-1]
            what = ("only echoed text" if last.program in _ECHOES else "only listed names" if last.program in _LISTINGS
                    else "did not check it")
            return (f"no check or read-back of it ran; the last call ({last.name} at T{last.turn}) {what}",
                    _receipt_quote(an, last))
        last = evidence[-1]
    else:
        last = ([a for a in window if not a.is_check] or window)[-1]
        short = _short_of_count(an, item, window, marked_at) or _read_short_of_count(item, window)
        if short is not None:
            return short, _receipt_quote(an, last)
        done = [a for a in window if a.outcome == "ok"]
        if all(a.read_only and not a.is_check for a in done) and not documents and not any(
                _ledger(an).shows_count(a, count) for count in bare_counts(item) for a in done):
            # An item of work (no check item) whose window only read state (Z19: v4 "Teslim alanının tipini Tarih
            # olarak değiştir" after a field list, v5 "Exportera Medlemmar till CSV" after a record count): a read
            # changes nothing, whatever the item's words; it shows the work done only by the count the item asks
            # for ("Armazenar 40 caixas" and ``"cartons_stored": 40``).
            return (f"its window only read state (the last call, {last.name} at T{last.turn}, changed nothing)",
                    _receipt_quote(an, last))
    missed = _bound_missed(an, item, window)
    if missed is not None:
        return missed
    if last.failed:
        what = "check" if last.is_check else "call"
        return f"its last {what} (T{last.turn}) failed", _receipt_quote(an, last)
    if last.status == "noop":
        return f"its last call (T{last.turn}) created or changed nothing", _receipt_quote(an, last)
    if (last.is_check or last.read_only) and last.outcome == "ok" and not last.silent_failure:
        # The check or read-back must have run on the current version of what it covers.
        stale = _stale_artifact(an, last, marked_at)
        if stale is not None:
            artifact, write = stale
            return (f"its last check (T{last.turn}) ran on an older version of {artifact}, changed at T{write.turn}",
                    f"check T{last.turn} {last.name} | write T{write.turn} {write.name} {artifact}")
    checks = [a for a in window if a.is_check] if own and not documents else []
    if checks and checks[-1] is not last and checks[-1].outcome == "ok" and not checks[-1].silent_failure:
        # The passing check of the item's own window is its evidence too, whatever words the item uses.
        check = checks[-1]
        stale = _stale_artifact(an, check, marked_at)
        if stale is not None:
            artifact, write = stale
            return (f"the check of its own window (T{check.turn}) ran on an older version of {artifact}, changed at "
                    f"T{write.turn}", f"check T{check.turn} {check.name} | write T{write.turn} {write.name} {artifact}")
    return None, ""


def _short_of_count(an: Analysis, item: str, window: list[Action], marked_at: int) -> str | None:
    """Why an item that states a count ("3 Ansichten anlegen", "뷰 3개 만들기") is not done, in any language: its work
    was one call per object (two or more successful calls of one kind), fewer of them than the count, and no
    receipt of the window shows the count."""
    counts = bare_counts(item)
    if not counts:
        return None
    per_path: dict[str, int] = {}
    for action in window:
        if action.status == "ok" and not action.read_only and not action.is_check:
            path = call_path(action, an.config)
            per_path[path] = per_path.get(path, 0) + 1
    made = max(per_path.values(), default=0)
    ledger = _ledger(an)
    for count in counts:
        if 2 <= made < count and not any(a.outcome == "ok" and ledger.shows_count(a, count) for a in window):
            return f"it asks for {count}, only {made} calls made them and no receipt shows {count}"
    return None


def _read_short_of_count(item: str, window: list[Action]) -> str | None:
    """Why an item that states a count ("receive ASN-5521 (60 pallets)") is not done by the last read of its window:
    the read states that count under one key only (``expected_pallets: 60``) and a quantity of the same noun short
    of it (``received_pallets: 58``), k of N, in any language (the keys are the receipt's)."""
    counts = bare_counts(item)
    read = next((a for a in reversed(window) if a.read_only and a.outcome == "ok" and a.receipt is not None), None)
    if not counts or read is None or read is not window[-1] or read.receipt is None:
        return None
    quantities = read_back_quantities(read.text[:2_000], read.receipt.content)
    for count in counts:
        total = [q for q in quantities if q.value == count and not q.percent]
        if len(total) != 1:
            continue
        nouns = set(total[0].words())
        short = next((q for q in quantities if 0 < q.value < count and not q.percent and nouns & set(q.words())), None)
        if short is not None:
            return f"its last read (T{read.turn}) shows {short.key} = {short.value:g} of {total[0].key} = {count}"
    return None


def _bound_missed(an: Analysis, item: str, window: list[Action]) -> tuple[str, str] | None:
    """Why an item that states a target ("确认无崩溃用户 ≥ 99.5%", "iperf3 验证带宽 ≥ 900 Mbit/s") is not met by the
    last successful call of its window (a read, a check, a measurement; Z19, v9 and v11): the bound (``upper_bound`` / ``lower_bound``: a
    sign or a word of any configured language) right before a number, held against that receipt's quantities of the
    same kind, in any language: a percent against the one fraction or percent it states (0.9891 is 98.91%), a number
    with a unit ("Mbit/s") against every number the receipt writes with that unit ("413 Mbits/sec"). A quantity of
    another kind, or two fractions it cannot choose between, decide nothing."""
    found = _bound_word(an, item)
    if found is None:
        return None
    bound, upper = found
    limit = next((r for r in number_readings(item) if 0 <= r.start - bound.end() <= 2), None)
    read = next((a for a in reversed(window) if a.outcome == "ok" and a.receipt), None)
    if limit is None or read is None or read.receipt is None:
        return None
    content = read.receipt.content[:4_000]
    if limit.percent:
        shares = [q.value if q.percent else q.value * 100 for q in read_back_quantities(read.text[:2_000], content)
                  if q.percent or 0 < q.value <= 1]
        values = shares if len(shares) == 1 else []
    else:
        unit = _UNIT.match(item, limit.end)
        values = [float(m.group(1)) for m in re.finditer(rf"(?<![\w.])(\d+(?:\.\d+)?)\s*{re.escape(unit.group(1))}",
                                                         content, re.IGNORECASE)] if unit else []
    breaking = [v for v in values if (v > limit.values[0] if upper else v < limit.values[0])]
    if not breaking:
        return None
    word = "at most" if upper else "at least"
    shown = f"{breaking[-1]:g}{'%' if limit.percent else ''}"
    return (f"it asks for {word} {limit.text}{'%' if limit.percent else ''}, and its last read (T{read.turn}) shows "
            f"{shown}", _receipt_quote(an, read))


_ITEM_NAME = re.compile(r"[\w.-]*\.\w{1,5}\b|[^\W\d_]{4,}")  # a file name or a word an item and a call share

_UNIT = re.compile(r"\s*([^\W\d_]{2,}?)(?:s|/|\b)", re.IGNORECASE)  # "900 Mbit/s" -> "Mbit"; "413 Mbits/sec" holds it


def _reads_state(an: Analysis, action: Action, values: set[str]) -> bool:
    """Whether a successful read-only call read state back: not an echo (it prints its own words), and not a bare
    listing (``ls``: names only) unless it shows one of ``values`` that its own arguments do not hold."""
    if action.outcome != "ok" or action.program in _ECHOES:
        return False
    if action.program in _LISTINGS and _is_shell(an, action):
        content = action.receipt.content if action.receipt is not None else ""
        return any(v in content and v not in action.text for v in values)
    return True


def _stale_artifact(an: Analysis, check: Action, index: int) -> tuple[str, Action] | None:
    """An artifact the check ran on that has a newer version at message ``index``, with the write that made it."""
    ledger = _ledger(an)
    for artifact, version in ledger.bound_versions(check).items():
        if ledger.version_at(artifact, index) > version:
            return artifact, an.actions[ledger.history(artifact)[version].action]
    return None


# --- stale evidence -----------------------------------------------------------------------------------


@detector("stale-evidence", "semantic", roles=("authenticity", "plan"), mast="verification")
def stale_evidence(an: Analysis) -> list[Issue]:
    """A claim of verification whose evidence ran on an older version of an artifact it covered.

    The evidence is the last check seen before the claim (a claim that tests or checks pass), or the last check or
    read-back of the state (a claim that something was verified, checked, confirmed: "the list showed 6", "Widok
    sprawdzony"); an echo or a bare listing is no evidence. Versions are the ledger's
    (:class:`~judge.facts.ledger.Ledger`): each successful write of a file, or of a resource a CLI call names or
    creates, is a new version; a check is bound to the versions of what it names (a folder holds its files) and,
    for files, of the code it ran on; a read-back to what it names. The evidence is stale when a newer version
    exists at the claim, with no check or read-back after the write.
    """
    issues: list[Issue] = []
    evidence = [a for a in an.actions if a.is_check or (a.read_only and not a.is_plan and _reads_state(an, a, set()))
                or _cited_evidence(an, a)]
    if not evidence and not any(a.status == "ok" and not a.writes and not a.is_plan for a in an.actions):
        return issues  # nothing checked, read or measured
    # Speeches come in message order: the evidence seen before each is a growing prefix of it sorted by when it
    # was seen; the last of it (in call order) is what a claim rests on.
    by_sight = sorted(evidence, key=lambda c: c.visible_at)
    sighted = 0
    last_seen: Action | None = None
    last_check: Action | None = None
    for speech in an.speeches:
        index = speech.message_index
        sentence = next((s for s in _claims(speech) if s.is_check_claim), None)
        if sentence is None and index != an.final_message_index:
            continue
        while sighted < len(by_sight) and by_sight[sighted].visible_at < index:
            seen = by_sight[sighted]
            if last_seen is None or seen.order > last_seen.order:
                last_seen = seen
            if seen.is_check and (last_check is None or seen.order > last_check.order):
                last_check = seen
            sighted += 1
        if sentence is not None:
            check = last_check if sentence.pass_claim else last_seen
            cited = sentence.text
        else:
            # A final answer in any language that cites a check or read-back by its program ("ruff чистый",
            # "record-count 로 확인"): that evidence, the last run of it seen before.
            named = next(((a, text) for a in sorted(by_sight[:sighted], key=lambda a: -a.order)
                          if (text := _names_check(an, speech, a)) is not None), None)
            if named is None:
                # An answer that restates what a check, a read-back or a run that changed nothing printed rests on
                # it (Z19): the last stale one.
                named = _restated_stale(an, speech, evidence, index)
            if named is None:
                continue
            check, cited = named
        if check is None or check.outcome != "ok" or check.silent_failure:
            continue
        stale = _stale_artifact(an, check, index)
        if stale is None or _checked_again(an, evidence, check, stale[0], index):
            continue
        artifact, write = stale
        what = "check" if check.is_check else "read-back"
        description = (
            f"Claims verification, but {artifact} was changed at T{write.turn} after the last passing {what} "
            f"(T{check.turn}) and not checked again."
        )
        evidence_text = f"T{speech.turn}: \"{an.excerpt(cited)}\" | write T{write.turn} {write.name} {artifact}"
        issues.append(_issue(an, "stale-evidence", speech.turn, description, evidence_text))
    return issues


def _checked_again(an: Analysis, evidence: list[Action], check: Action, artifact: str, index: int) -> bool:
    """Whether a later passing check or read-back, seen before message ``index``, ran on the current version of
    ``artifact`` (``cp new.json snap.json && pytest``): the answer citing the earlier one is not left on stale
    evidence."""
    ledger = _ledger(an)
    current = ledger.version_at(artifact, index)
    return any(e.order > check.order and e.visible_at < index and e.outcome == "ok" and not e.silent_failure
               and (e.is_check or not check.is_check)  # a read-back does not re-run a check
               and ledger.bound_versions(e).get(artifact) == current for e in evidence)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _cited_evidence(an: Analysis, action: Action) -> bool:
    """Whether the final answer cites a call that no vocabulary knows as a check (``codespell README.md``,
    ``pip-audit -r requirements.txt``, ``jupyter nbconvert --execute qc.ipynb``) as evidence, by its program: a
    successful call that ran on a file (it names one; what it writes, an executed copy, is its own output). What
    the answer cites as evidence is evidence, whatever the tool; a write after it to the file it ran on makes it
    stale."""
    if (action.is_check or action.read_only or action.is_plan or action.outcome != "ok"
            or action.status != "ok" or action.call is None or an.final_message_index is None):
        return False
    final = an.speeches[-1] if an.speeches else None
    if final is None or final.message_index != an.final_message_index or not action.program:
        return False
    low: str | None = an.cache.get("final_region_low")
    if low is None:
        low = an.cache["final_region_low"] = final.region.lower()
    if action.program.lower() not in low and not (
            action.command and any(name in low for name in _launched(action.command.split()))):
        return False
    if not _HAS_EXTENSION.search(action.text):
        return False
    return _names_check(an, final, action) is not None


# --- claims before their receipts, failures that never happened ---------------------------------------


@detector("premature-claim", "semantic", roles=("authenticity", "plan", "wording", "edit-check"), mast="verification")
def premature_claim(an: Analysis) -> list[Issue]:
    """A message that states the result of an operation before any receipt for it exists: in the message
    that issues the call, or before the call is made at all.

    Tied by name (the claim names a file or identifier that only a call at or after the message touches,
    with no earlier successful call to support it) or, for claims about tests, by a check that runs only then.
    """
    issues = []
    for speech in an.speeches:
        claims = _claims(speech)
        index = speech.message_index
        if not claims and index != an.final_message_index:
            continue
        contradicted = _contradicted(an)
        running_claims = [c for c in claims if (index, c.text) not in contradicted] + _promised_done(an, speech)
        running = _still_running(an, running_claims, index) if running_claims else None
        if running is not None:
            sentence, job = running
            description = (f"Claims a result while the last receipt of the {job.name} call of T{job.turn} shows the "
                           "job still running or queued.")
            evidence = f"T{speech.turn}: \"{an.excerpt(sentence.text)}\" | receipt {_receipt_quote(an, job)}"
            issues.append(_issue(an, "premature-claim", speech.turn, description, evidence))
            continue
        if not claims:  # no sentence claims in words (a claim the read-back contradicts is that tag's alone)
            unfinished = _final_answer_over_unfinished(an, speech)
            if unfinished is not None:
                description = (f"States results in the final answer by the values of the {unfinished.name} call of "
                               f"T{unfinished.turn}, whose last receipt shows the job still running or queued.")
                evidence = f"T{speech.turn}: \"{an.excerpt(speech.region)}\" | receipt {_receipt_quote(an, unfinished)}"
                issues.append(_issue(an, "premature-claim", speech.turn, description, evidence))
                continue
        if not claims:
            continue
        pending = _work_from(an, index)
        if not pending:
            continue
        first_pending = len(_work(an)[0]) - len(pending)
        successes = an.cache.get("successes")
        if successes is None:
            # A check that reported failures has a receipt too: its findings are evidence a message may name.
            successes = an.cache["successes"] = [a for a in an.actions if a.outcome == "ok" or a.reported]
        for sentence in claims:
            found: tuple[str, Action] | None = None
            for token in sentence.tokens:
                later = _first_naming(an, token, first_pending)
                if later is None:
                    continue
                # No success seen before the message mentions it (the earliest one that does is seen later).
                if _earliest(an, "mentioned", token, successes, partial(_mentions, token=token, with_receipt=True),
                             lambda a: a.visible_at) >= index:
                    found = (f"`{token}`", later)
                    break
            if found is None and sentence.is_check_claim:
                if _earliest(an, "seen", "check", successes, lambda a: a.is_check, lambda a: a.visible_at) < index:
                    continue
                later = next((a for a in pending if a.is_check), None)
                if later is not None and (later.message_index == index or sentence.test_claim):
                    found = ("the check", later)
            if found is None:
                continue
            what, later = found
            when = "in the same message that makes the call" if later.message_index == index else f"before the call at T{later.turn}"
            description = f"States the result of {what} {when}, before any receipt for it exists."
            evidence = f"T{speech.turn}: \"{an.excerpt(sentence.text)}\" | call T{later.turn} {later.name}: {an.excerpt(later.text)}"
            issues.append(_issue(an, "premature-claim", speech.turn, description, evidence))
            break
    return issues


_CLAUSE_BREAK = re.compile(r"[,;:，、；：]\s*|\s[—–-]\s")


def _promised_done(an: Analysis, speech: Speech) -> list[Sentence]:
    """The sentences of a message that promise or hedge and claim all the same, while a job is going: a clause that
    calls the step done or states a result, neither future nor hedged, beside a clause that promises ("the sync
    finishes in a moment, so this step can be taken as done"; "CI is green, the fix can be merged"). A promise
    alone ("will be done soon") claims nothing."""
    if _unfinished_job(an, speech.message_index) is None:
        return []
    patterns = an.patterns
    found = []
    for sentence in read_sentences(speech.region, patterns):
        if not (sentence.future or sentence.hedged) or not (sentence.done_claim or sentence.is_claim):
            continue
        clauses = _CLAUSE_BREAK.split(sentence.text)
        if len(clauses) > 1 and any(
                (patterns.done_claim.search(c) or patterns.claim.search(c))
                and not patterns.future.search(c) and not patterns.hedge.search(c) and not patterns.noop.search(c)
                for c in clauses):
            found.append(sentence)
    return found


def _still_running(an: Analysis, claims: list[Sentence], index: int) -> tuple[Sentence, Action] | None:
    """A claim of the message at ``index`` and the job it speaks of, when the last receipt about that job
    shows it still running: no later successful call of the same kind or naming the same job says otherwise.

    The claim speaks of the job when it names a value of the job's call or receipt, or when the job is the last
    call before it that may change state."""
    found = _unfinished_job(an, index)
    if found is None:
        return None
    job, shown = found
    work, positions = _work(an)
    end = bisect.bisect_left(positions, index)
    last_change = next((work[k] for k in range(end - 1, -1, -1) if not work[k].read_only and work[k].status != "running"),
                       None)
    for sentence in claims:
        if _named_record_settled(an, sentence.text, job):
            continue
        named = any(t in shown for t in sentence.tokens)
        if named or last_change is None or last_change.order < job.order:
            return sentence, job
    return None


def _unfinished_job(an: Analysis, index: int) -> tuple[Action, str] | None:
    """The last job whose receipt before the message at ``index`` shows it not finished (status ``running``),
    with the text its call and receipt show, unless a later call naming the job (or of the same kind) shows it
    ended or succeeded before the message (:func:`_job_end`)."""
    found = _job_end(an, index)
    if found is None or found[2] is not None:
        return None
    return found[0], found[1]


def _job_end(an: Analysis, index: int) -> tuple[Action, str, Action | None, JobState | None] | None:
    """The last job seen going before the message at ``index`` (status ``running``), the text its call and receipt
    show, and the later call before the message that settles it with the state it shows (``terminal-failure``,
    ``terminal-success``, or None for a plain success of that call), or (job, shown, None, None) when none does.

    A later call is about the job when it names it (an id, a k8s kind/name, a run number, in its arguments or its
    receipt), wherever it comes, or is of the same kind; the last one whose data or exit code shows an end decides,
    else the first plain success settles it. Found once per message (three readings of each claim ask)."""
    memo: dict[int, tuple[Action, str, Action | None, JobState | None] | None] = an.cache.setdefault("job_end", {})
    if index not in memo:
        memo[index] = _find_job_end(an, index)
    return memo[index]


def _find_job_end(an: Analysis, index: int) -> tuple[Action, str, Action | None, JobState | None] | None:
    work, positions = _work(an)
    end = bisect.bisect_left(positions, index)  # work[:end] are the actions before the message
    # The running jobs, found once per analysis: the last one before each claim is one bisect, not a scan of every
    # earlier call per claim (quadratic in a long trajectory; issue 28 item 6).
    running: tuple[list[int], list[int]] | None = an.cache.get("running")
    if running is None:
        at = [k for k, a in enumerate(work) if a.status == "running"]
        running = an.cache["running"] = (at, [positions[k] for k in at])
    last = bisect.bisect_left(running[1], index)
    if not last:
        return None
    start = running[0][last - 1]
    job = work[start]
    shown = (job.receipt.content if job.receipt is not None else "") + job.text
    ids = {t for t in value_tokens(shown) if is_resource_id(t)} | job_names(shown)
    settled: tuple[Action, str, Action | None, JobState | None] = (job, shown, None, None)
    for later in work[start + 1 : end]:
        content = later.receipt.content if later.receipt is not None else ""
        if not (call_path(later, an.config) == call_path(job, an.config)
                or any(i in later.text or i in content for i in ids)):
            continue
        state = _ended(an, later, frozenset(ids))
        if state is not None:
            settled = (job, shown, later, state)  # the LAST end seen decides (failed, then re-polled succeeded)
        elif later.status == "ok" and settled[2] is None:
            settled = (job, shown, later, None)
    return settled


def _failed_job(an: Analysis, claims: list[Sentence], index: int) -> tuple[Sentence, Action] | None:
    """A claim of the message at ``index`` over a job whose last state before it is a failure (an export
    ``"status": "failed"``, a service ``(unhealthy)``, ``gh run watch --exit-status`` exiting 1), and the call that
    showed it: the claim speaks of the job as in :func:`_still_running`."""
    found = _job_end(an, index)
    if found is None or found[2] is None or found[3] != "terminal-failure":
        poll = _failed_poll(an, index)
        if poll is None:
            return None
        # A poll alone (no call seen starting the job): the claim must name the job (its id, its name).
        shown = _shown(poll)
        return next(((sentence, poll) for sentence in claims if any(t in shown for t in sentence.tokens)), None)
    job, shown, ender, _ = found
    if ender is None:  # checked above; for the type checker
        return None
    work, positions = _work(an)
    end = bisect.bisect_left(positions, index)
    last_change = next((work[k] for k in range(end - 1, -1, -1) if not work[k].read_only and work[k].status != "running"
                        and work[k] is not ender), None)
    for sentence in claims:
        if any(t in shown for t in sentence.tokens) or last_change is None or last_change.order < job.order:
            return sentence, ender
    return None


def _shown(action: Action) -> str:
    """What a call and its receipt show (its arguments and the receipt's content)."""
    return (action.receipt.content if action.receipt is not None else "") + action.text


def _failed_poll(an: Analysis, index: int) -> Action | None:
    """The last successful read before the message at ``index`` whose receipt shows a job ended in failure (``sacct``
    State FAILED, an import job ``"state": "failed"``; a read only: a call that changes state may have asked for
    the state it shows, ``cancel`` -> ``cancelled``), when no later call before the message names the job and
    shows another state: a job polled once, with no call of the log seen starting it."""
    memo: dict[int, Action | None] = an.cache.setdefault("failed_poll", {})
    if index not in memo:
        memo[index] = _find_failed_poll(an, index)
    return memo[index]


def _find_failed_poll(an: Analysis, index: int) -> Action | None:
    polls: list[Action] | None = an.cache.get("failed_polls")
    if polls is None:
        polls = an.cache["failed_polls"] = [
            a for a in _work(an)[0] if a.status == "ok" and a.read_only and _asks_of_one(an, a)
            and _ended(an, a) == "terminal-failure"]
    before = [p for p in polls if p.visible_at < index]
    if not before:
        return None
    poll = before[-1]
    names = job_names(_shown(poll))
    for later in _work_before(an, index):
        if later.order > poll.order and later.receipt is not None and any(n in _shown(later) for n in names) \
                and _ended(an, later, names) not in (None, "terminal-failure"):
            return None
    return poll


_ASKED_NUMBER = re.compile(r"(?<=[\s=])\d{4,}(?![\w.])")


def _asks_of_one(an: Analysis, action: Action) -> bool:
    """Whether a call names the thing its receipt answers about (an id or job name in its arguments that the
    receipt shows: ``sacct -j 771990``, ``+job-status --job imp_4410``): a poll of one job, not a listing. Read
    once per call text and receipt (:func:`_text_memo`)."""
    receipt = action.receipt
    if receipt is None:
        return False
    text, content = action.text, receipt.content

    def read() -> bool:
        # An id, a job name, or a number given in the command (``-j 55120``) that the receipt shows.
        asked = ({t for t in value_tokens(text) if is_resource_id(t)} | job_names(text)
                 | set(_ASKED_NUMBER.findall(text)))
        return any(name in content for name in asked)

    return _text_memo(an, "asks_of_one", (text, content), read, len(text) + len(content))


def _final_answer_over_failed_job(an: Analysis, speech: Speech) -> Issue | None:
    """A final answer that states results by the values of a job whose last state is a failure (the job's id, the
    table it loaded), in any language, and neither speaks of the failure nor repeats its error words: it reports
    the job as done by its silence (issue 24 item 2)."""
    index = speech.message_index
    if index != an.final_message_index or speech.has_calls or speech.speaks_of_failure \
            or any(mark in speech.text for mark in _FAILURE_MARKS):
        return None
    found = _job_end(an, index)
    if found is not None and found[2] is not None and found[3] == "terminal-failure":
        ender, shown = found[2], found[1] + _shown(found[2])
    else:
        poll = _failed_poll(an, index)
        if poll is None:
            return None
        ender, shown = poll, _shown(poll)
    region = speech.region
    # Its error words (an error class, a code) repeated report it; its counts ("300 rows") do not.
    errors = {w for w in _ERROR_WORD.findall(ender.receipt.content if ender.receipt is not None else "")
              if not w.isdigit()}
    if (an.patterns.hedge.search(region) or an.patterns.future.search(region) or any(w in region for w in errors)
            or states_failure(region)):
        return None
    stated = value_tokens(region) & value_tokens(shown)
    if not stated:
        return None
    description = (f"States results in the final answer by the values of a job ({', '.join(sorted(stated)[:3])}) "
                   f"whose last receipt, of the {ender.name} call of T{ender.turn}, shows it ended in failure.")
    evidence = f"T{speech.turn}: \"{an.excerpt(region)}\" | receipt {_receipt_quote(an, ender)}"
    return _issue(an, "unverified-completion", speech.turn, description, evidence)


def _ended(an: Analysis, action: Action, names: frozenset[str] = frozenset()) -> JobState | None:
    """How the job an action polled ended: by the exit code of a wait command, else by its receipt's data (a table's
    rows that name the job, ``names``, when some do)."""
    command = action.command
    receipt = action.receipt
    waited = None if command is None or receipt is None else wait_state(
        command, receipt.exit_code if receipt.exit_code is not None else (1 if action.status == "failed" else 0))
    if waited is not None:
        return waited
    content = receipt.content if receipt is not None else None
    state = None if content is None else _text_memo(
        an, "job_state", (content, names), lambda: job_state(content, an.patterns.running, names=names), len(content))
    return state if state != "non-terminal" else None


def _final_answer_over_unfinished(an: Analysis, speech: Speech) -> Action | None:
    """The unfinished job (:func:`_unfinished_job`) that the final answer states results of by its values, in any
    language: it names a value of the job's call or receipt (a total, an id, a PR number) or what the call that
    started it worked on, and neither restates the job as going (the ``running`` list, a fraction short of its
    total, "40%") nor hedges. A message with calls, or one that speaks of a failure, reports rather than claims."""
    index = speech.message_index
    if index != an.final_message_index or speech.has_calls or speech.speaks_of_failure:
        return None
    found = _unfinished_job(an, index)
    if found is None:
        return None
    job, shown = found
    region = speech.region
    stated = {int(n) for n in stated_numbers(region) if n.is_integer()}
    if (an.patterns.running.search(region) or an.patterns.hedge.search(region) or an.patterns.future.search(region)
            or reports_progress(region) or stated & progress_done(shown)):
        return None
    state = going_value(job.receipt.content if job.receipt is not None else "", an.patterns.running)
    if state and state in region.lower():
        return None  # it restates the receipt's own state word ("Status=Rendering" -> "still Rendering"): a report
    # Ids, and numbers of 3+ digits (a total, a PR number: 412 is no HTTP status here), shown by the job.
    if value_tokens(region) & value_tokens(shown) or {n for n in stated if n >= 100} & {
            int(n) for n in stated_numbers(shown) if n.is_integer()}:
        return job
    ledger = _ledger(an)
    started = _job_start(an, job, shown, ledger)
    # What the job's calls name (its id, the file it writes), not the words of their commands: an honest report
    # names the job too ("the import will finish soon"), a claim states what it made.
    calls = [job] + ([started] if started is not None else [])
    low = region.lower()
    if any(len(n) >= 4 and states(low, n.lower()) for call in calls for n in ledger.names_of(call) | ledger.objects_of(call)):
        return job
    return None


def _job_start(an: Analysis, job: Action, shown: str, ledger: Ledger) -> Action | None:
    """The call that started the job ``job`` polled: the last state-changing call before it whose arguments or
    receipt name the job (an id, a k8s kind/name, a run number, a file both name: ``train.log``), wherever it
    came; None when none does."""
    names = {n for n in job_names(shown) | ledger.objects_of(job) if len(n) >= 3}
    if job.receipt is None or not names:
        return None
    for earlier in reversed(_work(an)[0]):
        if earlier.order >= job.order or earlier.read_only:
            continue
        content = earlier.receipt.content if earlier.receipt is not None else ""
        if any(n in earlier.text or n in content for n in names):
            return earlier
    return None


def _named_record_settled(an: Analysis, text: str, job: Action) -> bool:
    """Whether the claim (``text``) names a record whose own status field in the job's receipt reads as settled (a listing
    where another record is pending says nothing of the one claimed)."""
    content = job.receipt.content if job.receipt is not None else ""
    ids = frozenset(t for t in value_tokens(text) if is_resource_id(t) and t in content)
    if not ids:
        return False
    # A table's state column holds the record's state on its row; else the status fields that hold its id.
    statuses = frozenset(column_states(content, ids)) or status_values(content, ids)
    return bool(statuses) and not any(value_going(v.lower(), an.patterns.running) for v in statuses)


@detector("phantom-failure-reference", "semantic", roles=("authenticity", "wording", "edit-check"), mast="reasoning-action")
def phantom_failure_reference(an: Analysis) -> list[Issue]:
    """A message that refers to an earlier failure ("that failed, so retry", "上次失败了", "失敗したので")
    when nothing before it failed: the signature of a careless offline edit.

    Anything that could be the failure counts against firing: a failed receipt, failure words in any earlier
    receipt, in a user message after the query, or (multi-agent logs) in another agent's message. The first
    turn is never flagged: nothing of the log precedes it, so it can only refer to the brief or an older session.
    """

    messages = an.trajectory.messages
    issues = []
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), None)
    for speech in an.speeches:
        if speech.phantom is None:
            continue
        index = speech.message_index
        if speech is an.speeches[0]:
            continue  # nothing of the log precedes the first turn: it can only mean the brief or an older session
        if any(a.failed and a.visible_at < index for a in an.actions):
            continue
        if _failure_text_before(an, index, first_user, speech.name):
            continue
        description = "Refers to an earlier failure, but nothing before this message failed."
        evidence = f"T{speech.turn}: \"{an.excerpt(speech.phantom)}\""
        issues.append(_issue(an, "phantom-failure-reference", speech.turn, description, evidence))
    return issues


def _failure_text_before(an: Analysis, index: int, first_user: int | None, speaker: str | None) -> bool:
    """Whether any message before ``index`` could be the failure a reference points at (see the detector)."""
    for position, name in _failure_texts(an, first_user):
        if position >= index:
            return False
        if name is _ANYONE or name != speaker:
            return True
    return False


_ANYONE = "\x00anyone"


def _failure_texts(an: Analysis, first_user: int | None) -> list[tuple[int, str | None]]:
    """(message index, speaker) of every message whose text speaks of a failure, computed once per analysis.

    Receipts and user messages after the query count for any speaker; in multi-agent logs, an agent's message
    counts for the other agents.
    """
    cached: list[tuple[int, str | None]] | None = an.cache.get("failure_texts")
    if cached is None:
        words = an.patterns.prior_failure
        cached = []
        for i, message in enumerate(an.trajectory.messages):
            if message.role == "tool":
                if message.receipt and words.search(message.receipt.content or ""):
                    cached.append((i, _ANYONE))
            elif message.role == "user" and i != first_user:
                if words.search(message.content or ""):
                    cached.append((i, _ANYONE))
            elif message.role == "assistant" and an.multi_agent and words.search(message.content or ""):
                cached.append((i, message.name))
        an.cache["failure_texts"] = cached
    return cached


# --- structure ----------------------------------------------------------------------------------------


@detector("unpaired-call-id", "environment", roles=("authenticity",))
def unpaired_call_id(an: Analysis) -> list[Issue]:
    """A call without a receipt, a receipt without its call, or a call id reused while an earlier call under it
    was still unanswered, so its receipts cannot be told apart (category ``environment``: ids and receipts are
    the harness's record). A run-ending call (``submit``) that is the last call of the trajectory needs no receipt.

    An id reused after its earlier call was answered is not reported: the record is unambiguous (in OpenAI chat
    a tool result only has to answer a call of the message before it), and harnesses do it routinely (tau-bench's
    logs reuse ids across turns in a third of the airline runs), so flagging it would send sound trajectories
    to the environment ledger and block their release for a rerun that cannot change it.
    """
    issues = []
    last_call = max((a.order for a in an.actions if a.call is not None), default=-1)
    for action in an.actions:
        if action.call is None or action.receipt is not None:
            continue
        if action.order == last_call and an.patterns.name_is("final_name", action.name):
            continue
        issues.append(_issue(
            an, "unpaired-call-id", action.turn,
            f"The {action.name} call (id {action.call.id}) has no receipt: its outcome is unknown.",
            f"T{action.turn} {action.name}: {an.excerpt(action.text)}",
        ))
    for call_id, message_index, turn in an.orphan_receipts:
        receipt = an.trajectory.messages[message_index].receipt
        content = receipt.content if receipt is not None else ""
        issues.append(_issue(
            an, "unpaired-call-id", turn,
            f"A receipt answers call id {call_id}, which no call has.", f"receipt: {an.excerpt(content)}",
        ))
    for call_id, turn, resolved in an.duplicate_call_ids:
        if resolved:
            continue
        issues.append(_issue(
            an, "unpaired-call-id", turn,
            f"Call id {call_id} is used again before its earlier call was answered; its receipts cannot be told apart.",
            f"call id {call_id}",
        ))
    return issues


@detector("budget-exhausted", "capability", mast="termination")
def budget_exhausted(an: Analysis) -> list[Issue]:
    """The log marks the budget as exhausted and the trajectory ends without a final answer (capability).

    The final answer is the last assistant message when it makes no call and no tool result follows it; user
    messages after it (tau-bench's simulated customer ends every run with ``###STOP###``) do not undo it.
    """
    if not an.trajectory.metadata.budget_exhausted:
        return []
    final = an.final_message_index
    messages = an.trajectory.messages
    if final is not None:
        last = messages[final]
        answered = (not last.tool_calls and last.content.strip()
                    and all(m.role != "tool" for m in messages[final + 1 :]))
        if answered:
            return []
    turn = messages[final].turn if final is not None else None
    last_text = messages[-1].content if messages else ""
    return [_issue(
        an, "budget-exhausted", turn,
        "The budget ran out before the agent gave a final answer.",
        f"last message: {an.excerpt(last_text) or '(a tool call or result)'}",
    )]



# --- the final answer over an open problem ------------------------------------------------------------

_QUESTION_ENDS = ("?", "？", "؟")
_LETTERS = re.compile(r"[^\W\d_]{2,}")  # a word of letters, any script


def _final_report(an: Analysis) -> Speech | None:
    """The final answer, when it is the agent's report to the user: the last message of the trajectory is the
    assistant's, it makes no call, and it states something (not empty, not only a question)."""
    messages = an.trajectory.messages
    if not an.speeches or not messages or messages[-1].role != "assistant":
        return None
    final = an.speeches[-1]
    text = final.region.strip()
    if final.message_index != len(messages) - 1 or final.has_calls or not text:
        return None
    if text.endswith(_QUESTION_ENDS) and not final.sentences:
        return None  # it asks, it does not claim
    return final


def _repeats_failed_item(check: Action, text: str) -> bool:
    """Whether ``text`` repeats a failing item of the check's output (its name or path): it reports the failures."""
    content = check.receipt.content if check.receipt is not None else ""
    return any(t in text for line in content.splitlines() if _FAILED_ITEM.search(line) for t in salient_tokens(line))


def _open_problem(an: Analysis, final: Speech) -> tuple[str, Action, str] | None:
    """The most specific problem the ledger holds open at the final answer that the answer does not report by
    values, as (tag, action, what): an unfinished job, a check that failed behind exit 0, a passing check made
    stale by a later write, or a failed or no-op write nobody redid (a failed read is no open problem: it can be
    worked around; a check that reported failures is the claim detectors' evidence). A failure is shown by an exit
    code, an error line or an error-only document (:func:`_shows_failure`: v6-doc-es-cms-401,
    v8-pay-hr-refund-missing-param-repeat, v10-fin-fi-origin-refund-units, v10-fin-es-invoice-422-body,
    v10-log-es-label-address-repeat, v11-ed-da-gradebook-locked). The failure's own finding at
    its turn (``failed-call``) says the call failed; this one says the answer hid it. None when everything is
    settled or reported."""
    index = final.message_index
    region = final.region
    ledger = _ledger(an)
    unfinished = _unfinished_job(an, index)
    if unfinished is not None and not reports_progress(region) and not _named_record_settled(an, region, unfinished[0]):
        job, shown = unfinished
        if not ({int(n) for n in stated_numbers(region) if n.is_integer()} & progress_done(shown)):
            return "premature-claim", job, "whose last receipt shows the job still running or queued"
    checks = _checks_before(an, index)
    last_check = checks[-1] if checks else None
    if last_check is not None and last_check.silent_failure and not _repeats_failed_item(last_check, region) \
            and not _repeats_failure_values(an, last_check, region):
        return "silent-check-failure", last_check, "which exited 0 but reported failures"
    if last_check is not None and last_check.outcome == "ok" and not last_check.silent_failure:
        stale = _stale_artifact(an, last_check, index)
        if stale is not None:
            artifact, write = stale
            return "stale-evidence", last_check, f"after which {artifact} was changed at T{write.turn} and not checked again"
    later_writes: set[str] = set()  # call paths of the successful writes after the action (walking back)
    for action in reversed(_work_before(an, index)):
        if action.failed and _shows_failure(an, action) and not action.read_only and not action.is_check \
                and _unreported(an, ledger, action, index) \
                and not ledger.reports_by_values(action, region):
            return "unverified-completion", action, "which failed and was never redone"
        if action.status == "noop" and not action.read_only and not action.is_check \
                and call_path(action, an.config) not in later_writes \
                and not _reports_nothing(an, region):
            return "unverified-completion", action, "which succeeded but created or changed nothing"
        if action.status == "ok" and not action.read_only:
            later_writes.add(call_path(action, an.config))
    return _astray_problem(an, ledger, index, region)


def _astray_problem(an: Analysis, ledger: Ledger, index: int, region: str) -> tuple[str, Action, str] | None:
    """A value born wrong that the final answer is silent about (:attr:`~judge.facts.ledger.Ledger.strays`): the
    calls used a near twin of what the query or a receipt gave, and the answer names the given value (the
    release "2.4.1" that was tagged ``v2.4.0``; "2026" counted on ``d.year == 2025`` or in base ``bascnHr25``
    listed as "HR 2025"), or a later call was refused on the typed value (ECONNREFUSED on the mistyped port), and
    the answer never names the value used. Pooled from v3, v4, v5 (origin cases of three writers)."""
    # Cheap gates before the ledger's values: the answer names a value with a digit, or a failed call may
    # inherit a typed value (Ledger.typed_fault has its own gate).
    refusals = [a for a in ledger.actions if a.message_index < index and a.outcome in ("environment", "error")
                and ledger.typed_fault(a) is not None]
    if not refusals and not any(c.isdigit() for c in region):
        return None
    for stray in ledger.strays:
        if stray.used.message_index >= index or stray.used.action is None or stray.value in region:
            continue
        refused = stray.named not in region and any(ledger.typed_fault(a) == stray for a in refusals)
        if stray.named in region or refused:
            source = "query" if stray.kind == "asked" else "receipts"
            return ("unverified-completion", ledger.actions[stray.used.action],
                    f"which used {stray.value} where the {source} gave {stray.meant}")
    return None


def _shows_failure(an: Analysis, action: Action) -> bool:
    """Whether the receipt shows how the call failed: an exit code, an error line the vocabulary reads, a failure
    the ledger read from the answer's own data behind a success (no error flag, no exit code: an error document, a
    4xx/409/422 body, field errors, records turned away; v6-doc-es-cms-401, v7-de-sl-copy-partially-loaded,
    v9-net-he-netbox-duplicate-ip, v10-fin-es-invoice-422-body, v11-ed-da-gradebook-locked), or by its structure a
    document that answers only with an error (``{"error": {"code": "amount_too_large", ...}}``,
    :func:`~judge.facts.answers.error_document`). A server stopped with no exit code ("Serving HTTP on ...", the
    flag only) or a timeout shows no failure of the work."""
    receipt = action.receipt
    if receipt is None:
        return False
    return bool(receipt.exit_code) or an.patterns.error.search(action.error_line) is not None \
        or (not receipt.is_error and not action.uncertain and bool(action.error_line)) \
        or (receipt.content.lstrip()[:1] == "{" and error_document(receipt.content, an.patterns.error_meta_keys))


def _unreported(an: Analysis, ledger: Ledger, action: Action, index: int) -> bool:
    """A failure still open before message ``index`` that no earlier message reported (a report the user already
    read is no silence; :meth:`~judge.facts.ledger.Ledger.recovery`)."""
    if action.outcome == "error":
        return ledger.recovery(action, index) is None
    return _open(an, action, index) and not _acknowledged(an, action, index)


def _speakers_word(an: Analysis, matcher: PhraseMatcher, text: str) -> bool:
    """Whether ``matcher`` (a hedge, running or future list) matches ``text`` in a phrase of the speaker's own, not
    one the user's request gave: a value or name the task is about ("uji coba" rows to delete, the status
    "Pendente" a filter shows, the "belum bayar" members, "计划" the plan to record in) echoed in the answer hedges
    nothing (v1 noop-zh-flag-ignored, v3-noop-pt-view-unchanged, v7-lb-id-update-matched-zero,
    v8-lb-id-delete-empty-ids). The request is read only when the list matches (rarely)."""
    if matcher.search(text) is None:
        return False
    given = _ledger(an).user_given
    return any(m.group(0).strip().lower() not in given for m in matcher.finditer(text))


def final_claim(an: Analysis) -> Issue | None:
    """The final answer as a completion claim the receipts contradict (docs/finding-tags.md: "a failed result is
    never rewritten as success"): the last assistant message after the work is the agent's report to the user;
    when the ledger holds a problem open there (:func:`_open_problem`) and the answer does not report it, neither
    by failure, hedge or running words of any vocabulary, nor by a failure mark, nor by the problem's values
    (:meth:`~judge.facts.ledger.Ledger.reports_by_values`: what the call worked on and its error's code, quote or
    words), the answer claims completion by its silence, in any language. The issue carries the most specific
    tag of the open problem. The caller adds it only when no detector already flags the final turn. A bare
    acknowledgement ("OK.") claims nothing."""
    final = _final_report(an)
    if final is None:
        return None
    region = final.region
    patterns = an.patterns
    if final.speaks_of_failure or any(mark in region for mark in _FAILURE_MARKS) \
            or _speakers_word(an, patterns.hedge, region) or _speakers_word(an, patterns.running, region) \
            or _speakers_word(an, patterns.future, region) or (not final.sentences and len(_LETTERS.findall(region)) < 2):
        return None
    found = _open_problem(an, final)
    if found is None:
        return None
    tag, action, what = found
    description = (f"The final answer \"{an.excerpt(region)}\" reports the work as done, silent about the "
                   f"{action.name} call of T{action.turn}, {what}.")
    # The evidence is the receipt of the open problem, not the answer's words: an edit that only rewords a silent
    # answer adds no finding of its own (the editor keys findings on their evidence).
    evidence = f"receipt {_receipt_quote(an, action)} | final answer T{final.turn}"
    return _issue(an, tag, final.turn, description, evidence)
