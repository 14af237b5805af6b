"""The decisive turn of a failure: where the fact flow that leads to it starts (issue 24, item 4).

A failure (a failed call, a check that failed, a false claim) is often only where a fault became visible. The
fault itself is where the bad value or state it inherits was made: an id that a lookup returned and a later call
could not use, a file version an earlier write broke, an id the agent stated without any receipt showing it and
later relied on. :func:`trace_origin` walks the ledger's value and artifact flows back from the failure to that
*origin*, and returns the chain of facts that links them (origin first, failure last). An error that only
inherits a corrupted value is therefore not decisive; an error whose inputs came from the query or from nowhere
earlier is its own origin. When no flow links the failure to an earlier step, the origin is the failure itself
and the result says so (``found`` False).

The links followed, each from principles rather than from wording:

- **artifact**: a failing call that reads or runs a file (names it, or is a check bound to it) without writing it
  inherits the version it ran on: the write that made that version is upstream;
- **value named by the error**: a resource id in the failing call's arguments that its error receipt names (the
  record ``recX`` "not found") came from wherever it first appeared before: a receipt (the lookup that returned
  it), or the agent's own text or an earlier call's arguments (an id no receipt had shown);
- **unsupported value**: a resource id the failing step uses that no receipt or query showed before it, first
  stated in an earlier turn's text or arguments: that unchecked statement is upstream, whatever the error says.

- **astray**: a value born wrong (:attr:`judge.facts.ledger.Ledger.strays`: the calls used a near twin of a port,
  year, version or id the query or a receipt gave): a claim naming the given value, a failing call refused on the
  typed twin (:meth:`judge.facts.ledger.Ledger.typed_fault`) or showing it, and a claim after such a refusal inherit
  the call that first used the twin (Z18; origin cases of v3-v7, v9, v11 of different writers).

Values the query gave are the user's, never the agent's origin; flags and plain numbers are not followed (a flag a
receipt suggested is advice, not inherited state). In a multi-agent chat the task often reaches the agents as an
agent's message that quotes the query (AG2's manager message: the question, then "The attached file path is:
../x.xlsx"): such a *task message* (:func:`restates_query`) hands over the user's task, so the values it adds (the
attached file's id) are the user's too, not an unsupported statement (issue 24 item 5: this link put 3 of 3 moved
Who&When dev predictions on the task message).

:func:`answer_origin` is a separate rule for a recorded failure the judge found nothing in: the failed run's final
answer is the failure, and its origin is the first message (agent text, or the tool output an agent's code
produced) that stated a fact of that answer (a number or a name, :func:`fact_words`) which neither the query nor
the task message held: where the wrong fact entered the chat. It reads words, not a judgement of them, so it is a rule beside the judge, never the judge
(judge.validate reports it as its own rows). Pure: reads the ledger or the trajectory only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from judge.facts.analysis import Action, excerpt
from judge.facts.ledger import Ledger, ledger_of
from judge.facts.values import is_resource_id, listed_counts, value_tokens
from judge.model import Message, Trajectory

__all__ = ["FlowStep", "Origin", "answer_origin", "decisive_of", "decisive_origin", "error_shown", "failing_action",
           "format_chain", "restates_query", "trace_origin"]

LinkKind = Literal["failure", "artifact", "value", "unsupported", "astray"]
MAX_HOPS = 8  # a chain longer than this is cut (each hop moves strictly earlier, so it also ends on its own)
EXCERPT_CHARS = 160
# Statuses of a call that did not do what it was asked (or may not have).
_BAD: frozenset[str] = frozenset({"failed", "partial", "unknown", "noop"})


@dataclass(frozen=True, slots=True)
class FlowStep:
    """One fact of a chain: a call (``action`` its order) or an assistant text (``action`` None) at ``turn``,
    how it links to the next step (``link``: the value or artifact ``value`` it hands on), and an excerpt of its
    receipt (a call) or text (an assistant message) as evidence."""

    turn: int
    message_index: int
    action: int | None
    link: LinkKind
    value: str
    status: str  # the call's status, or "text"
    excerpt: str

    def line(self) -> str:
        """One line of the printed chain: ``T3 call #2 failed [value recX]: "record recX not found"``."""
        what = f"call #{self.action} {self.status}" if self.action is not None else "assistant text"
        carried = f" [{self.link} {self.value}]" if self.value else ""
        return f"T{self.turn} {what}{carried}: \"{self.excerpt}\""


@dataclass(frozen=True, slots=True)
class Origin:
    """The decisive turn of one failure: ``turn`` (the origin's), the failure's turn, the chain of facts from the
    origin to the failure, whether a flow was found (False: the origin is the failure itself), and why."""

    turn: int
    failure_turn: int
    chain: tuple[FlowStep, ...]
    found: bool
    reason: str


@dataclass(frozen=True, slots=True)
class _Node:
    """A step being walked: a call, or the text of an assistant message."""

    message_index: int
    turn: int
    action: Action | None


def failing_action(ledger: Ledger, turn: int) -> Action | None:
    """The call of ``turn`` that failed: the first whose status is failed, partial, unknown or no-op, or a check
    that reported failures with exit 0; None when every call of the turn did what it was asked (or it made none)."""
    for action in ledger.actions:
        if action.turn == turn and not action.is_plan and (action.status in _BAD or action.silent_failure or action.failed):
            return action
    return None


def trace_origin(ledger: Ledger, turn: int, action: int | None = None) -> Origin:
    """Walk back from the failure at ``turn`` (the call ``action`` when given, else the turn's failing call, else
    the turn's assistant text) to the origin of the flow it inherits; see the module docstring."""
    node = _start(ledger, turn, action)
    if node is None:
        return Origin(turn, turn, (), False, f"T{turn} has no assistant message or call: the failure turn is used")
    steps: list[FlowStep] = [_step(ledger, node, "failure", "")]
    for _ in range(MAX_HOPS):
        upstream = _upstream(ledger, node)
        if upstream is None:
            break
        node, link, value = upstream
        steps.append(_step(ledger, node, link, value))
    if len(steps) == 1:
        return Origin(turn, turn, tuple(steps), False,
                      f"no value or artifact flow leads into T{turn}: the failure is its own origin")
    chain = tuple(reversed(steps))  # origin first; each step's link is what it hands to the next
    via = ", ".join(f"{s.link} {s.value}" for s in chain[:-1])
    return Origin(chain[0].turn, turn, chain, True, f"the failure at T{turn} inherits from T{chain[0].turn} ({via})")


def format_chain(origin: Origin, indent: str = "  ") -> list[str]:
    """The printed evidence of an origin: a headline, then one line per fact from origin to failure."""
    head = (f"decisive turn T{origin.turn} (failure at T{origin.failure_turn}): {origin.reason}" if origin.found
            else f"decisive turn T{origin.turn}: {origin.reason}")
    return [head, *(indent + step.line() for step in origin.chain)]


# --- the walk -------------------------------------------------------------------------------------------


def _start(ledger: Ledger, turn: int, order: int | None) -> _Node | None:
    if order is not None and 0 <= order < len(ledger.actions):
        chosen = ledger.actions[order]
        return _Node(chosen.message_index, chosen.turn, chosen)
    found = failing_action(ledger, turn)
    if found is not None:
        return _Node(found.message_index, found.turn, found)
    messages = ledger.analysis.trajectory.messages
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant" and messages[index].turn == turn:
            return _Node(index, turn, None)
    return None


def _upstream(ledger: Ledger, node: _Node) -> tuple[_Node, LinkKind, str] | None:
    """The earliest step the node inherits a bad value or state from, with the link and what it carries."""
    candidates: list[tuple[int, int, _Node, LinkKind, str]] = []  # (message index, rank, node, link, value)
    action = node.action
    failing = action is not None and (action.status in _BAD or action.silent_failure or action.failed)
    if action is not None and failing and action.outcome != "environment":
        written = _artifact_source(ledger, action)
        if written is not None:
            writer, artifact = written
            candidates.append((writer.message_index, 0, _node_of(writer), "artifact", artifact))
        for token in _named_by_error(action):
            source = _value_source(ledger, token, node.message_index)
            if source is not None:
                candidates.append((source.message_index, 1, source, "value", token))
    if action is not None and failing and not candidates:
        # A value the error names that the call did not send (a port in a config, a pin in requirements.txt) and
        # that the agent stated before any receipt showed it: the failure inherits what the agent typed, even when
        # it looks like the environment's (connection refused on the port the agent wrote). Only when no file or id
        # link explains the failure: those give the longer chain (the script that holds the value).
        for token in _error_values(action):
            source = _unsupported_source(ledger, token, node.message_index)
            if source is not None:
                candidates.append((source.message_index, 2, source, "unsupported", token))
    if action is not None and action.status == "noop":
        empty = _empty_source(ledger, action)
        if empty is not None:
            candidates.append((empty.message_index, 1, _node_of(empty), "value", "an empty result"))
    stray = _stray_source(ledger, node)
    if stray is not None:
        candidates.append((stray[0].message_index, 1, stray[0], "astray", stray[1]))
    if action is None:
        astray = _astray_write(ledger, node.message_index)
        if astray is not None:
            candidates.append((astray[0].message_index, 0, _node_of(astray[0]), "artifact", astray[1]))
    for token in _ids_used(ledger, node):
        source = _unsupported_source(ledger, token, node.message_index)
        if source is not None:
            candidates.append((source.message_index, 2, source, "unsupported", token))
    candidates = [c for c in candidates if c[0] < node.message_index]
    if not candidates:
        return None
    _, _, chosen, link, value = min(candidates, key=lambda c: (c[0], c[1], c[4]))
    return chosen, link, value


def _stray_source(ledger: Ledger, node: _Node) -> tuple[_Node, str] | None:
    """The call that first used a value born astray (:attr:`~judge.facts.ledger.Ledger.strays`) that the step
    inherits: a claim that names the value the query or a receipt gave (the work used its twin), a failing call
    refused on the typed value (:meth:`~judge.facts.ledger.Ledger.typed_fault`) or whose receipt shows it, or a
    claim after such a refusal."""
    strays = [s for s in ledger.strays if s.used.message_index < node.message_index and s.used.action is not None]
    if not strays:
        return None
    action = node.action
    if action is not None:
        content = action.receipt.content[:4000] if action.receipt is not None else ""
        failing = action.status in _BAD or action.failed
        chosen = next((s for s in strays if failing and (ledger.typed_fault(action) == s or s.value in content)), None)
    else:
        text = ledger.analysis.trajectory.messages[node.message_index].content or ""
        chosen = next((s for s in strays if s.value not in text and (s.named in text or any(
            a.message_index < node.message_index and ledger.typed_fault(a) == s for a in ledger.actions))), None)
    if chosen is None or chosen.used.action is None:
        return None
    return _node_of(ledger.actions[chosen.used.action]), chosen.value


def _node_of(action: Action) -> _Node:
    return _Node(action.message_index, action.turn, action)


def _artifact_source(ledger: Ledger, action: Action) -> tuple[Action, str] | None:
    """The write that made the version of a file the failing call ran on, when the call did not write it itself
    and the failure points at the file (a check bound to it, or a receipt that names it, as a traceback does).
    Of several such files, the one written last (files the call names first)."""
    bound = ledger.bound_versions(action)
    files = {a: v for a, v in bound.items() if v > 0 and a not in action.writes and _is_file(ledger, a)}
    content = action.receipt.content[:8000] if action.receipt is not None else ""
    if not action.is_check:
        files = {a: v for a, v in files.items() if _basename(a) in content}
    named = {a: v for a, v in files.items() if a in action.text or _basename(a) in action.text}
    writers = [(ledger.actions[ledger.history(a)[v - 1].action], a) for a, v in (named or files).items()]
    writers = [(w, a) for w, a in writers if w.order != action.order]
    return max(writers, key=lambda pair: (pair[0].order, pair[1])) if writers else None


def _is_file(ledger: Ledger, artifact: str) -> bool:
    """Whether an artifact is a file some call wrote (not a resource named by id)."""
    return any(artifact in a.writes for a in ledger.actions)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _named_by_error(action: Action) -> list[str]:
    """Resource ids of the call's arguments that its (failed) receipt names."""
    if action.receipt is None:
        return []
    shown = action.receipt.content[:4000]
    return sorted(t for t in value_tokens(action.text) if is_resource_id(t) and t in shown)


def _error_values(action: Action) -> list[str]:
    """Values (ids, numbers of 3+ digits) the failed receipt shows that the call's own arguments do not hold."""
    if action.receipt is None:
        return []
    sent = value_tokens(action.text)
    return sorted(value_tokens(action.receipt.content[:4000]) - sent)


def _empty_source(ledger: Ledger, action: Action) -> Action | None:
    """The read a no-op call inherits nothing from: the last earlier successful read on the same resource (it names
    one of the call's ids) whose receipt lists an empty collection (``{"record_ids": []}``)."""
    ids = {t for t in value_tokens(action.text) if is_resource_id(t)}
    for earlier in reversed(ledger.actions[: action.order]):
        if (earlier.read_only and earlier.outcome == "ok" and earlier.receipt is not None
                and (not ids or any(i in earlier.text for i in ids)) and 0 in listed_counts(earlier.receipt.content)):
            return earlier
    return None


def _astray_write(ledger: Ledger, before: int) -> tuple[Action, str] | None:
    """For a claim at message ``before``: the last change before its last read-back, when the change wrote to a
    resource the read-back did not look at and the read-back looked at one the change did not touch (records
    written to ``tblOrdA``, counted in ``tblOrd1``): the claim inherits the write that went astray."""
    done = [a for a in ledger.actions if a.message_index < before and a.outcome == "ok" and not a.is_plan]
    readback = next((a for a in reversed(done) if a.read_only), None)
    if readback is None:
        return None
    change = next((a for a in reversed(done) if not a.read_only and a.order < readback.order), None)
    if change is None:
        return None
    wrote, read = _flag_values(ledger, change), _flag_values(ledger, readback)
    astray = sorted(value for flag, value in wrote.items() if flag in read and read[flag] != value)
    return (change, astray[0]) if astray else None


_FLAG_VALUE = re.compile(r"(?<!\S)(--[a-z][\w-]*)[= ]([^\s'\"@{\[-][^\s'\"]{0,63})(?=\s|$)")


def _flag_values(ledger: Ledger, action: Action) -> dict[str, str]:
    """A shell call's ``--flag value`` pairs whose value is a plain name or id (no JSON, no ``@file``, no quotes)."""
    command = _sent(ledger, action) if action.command else ""
    return {m.group(1): m.group(2) for m in _FLAG_VALUE.finditer(command)}


def _value_source(ledger: Ledger, token: str, before: int) -> _Node | None:
    """Where ``token`` first appeared before message ``before``: a receipt (the call that returned it), or the
    agent's text or arguments; None when the query gave it (the user's value, also when first stated by a task
    message that quotes the query) or it first appears here."""
    value = ledger.values.get(token)
    if value is None or value.first.source == "query" or value.first.message_index >= before:
        return None
    trajectory = ledger.analysis.trajectory
    if value.first.source == "text" and restates_query(trajectory.messages[value.first.message_index], trajectory.query):
        return None
    first = value.first
    if first.action is not None:
        action = ledger.actions[first.action]
        return _node_of(action)
    return _Node(first.message_index, first.turn, None)


def _ids_used(ledger: Ledger, node: _Node) -> list[str]:
    """Resource ids the step uses: its arguments (a call) or its text (an assistant message)."""
    if node.action is not None:
        text = node.action.text
    else:
        message = ledger.analysis.trajectory.messages[node.message_index]
        text = message.content or ""
    return sorted(t for t in value_tokens(text) if is_resource_id(t))


def _unsupported_source(ledger: Ledger, token: str, before: int) -> _Node | None:
    """The earlier text or call that first stated ``token`` when neither the query nor any receipt had shown it
    before message ``before``: an unchecked statement the step relies on."""
    value = ledger.values.get(token)
    if value is None or value.first.source not in ("text", "argument") or value.first.message_index >= before:
        return None
    shown = ledger.first_receipt(token)
    if shown is not None and shown.message_index < before:
        return None
    return _value_source(ledger, token, before)


def _step(ledger: Ledger, node: _Node, link: LinkKind, value: str) -> FlowStep:
    action = node.action
    if action is not None:
        content = action.receipt.content if action.receipt is not None else ""
        error = error_shown(action)
        # The receipt's error line, else its part that shows the value, else the receipt, else what the call sent.
        shown = error or _around(content, value) or content.strip() or f"(no output) {_sent(ledger, action)}"
        return FlowStep(node.turn, node.message_index, action.order, link, value, action.status,
                        excerpt(shown, EXCERPT_CHARS))
    text = ledger.analysis.trajectory.messages[node.message_index].content or ""
    return FlowStep(node.turn, node.message_index, None, link, value, "text",
                    excerpt(_around(text, value) or text, EXCERPT_CHARS))


def _sent(ledger: Ledger, action: Action) -> str:
    """What a call sent: its shell command, else its arguments."""
    command = action.command
    return command if command is not None else action.text


def error_shown(action: Action) -> str:
    """The receipt line that shows a call's failure: its error line, or for a traceback its last line (the
    exception), "" when none."""
    if not action.error_line.startswith("Traceback") or action.receipt is None:
        return action.error_line
    lines = [line for line in action.receipt.content.splitlines() if line.strip()]
    return lines[-1] if lines else action.error_line


def _around(text: str, value: str) -> str:
    """The part of ``text`` around ``value`` (a line, or 120 characters either side), "" when it is not there."""
    at = text.find(value) if value else -1
    if at < 0:
        return ""
    start = max(text.rfind("\n", 0, at) + 1, at - 120)
    end = text.find("\n", at)
    end = min(end if end >= 0 else len(text), at + len(value) + 120)
    return text[start:end]


def _flat(text: str) -> str:
    return " ".join(text.split())


MIN_QUERY_CHARS = 20  # a shorter query ("hi", "fix it") is quoted by chance, not handed over


def restates_query(message: Message, query: str) -> bool:
    """Whether ``message`` is a task message: it quotes the whole query (whitespace aside), as a multi-agent chat's
    manager hands the user's task to its agents. Its added values (an attached file's path) are the user's."""
    flat = _flat(query)
    return len(flat) >= MIN_QUERY_CHARS and flat in _flat(message.content or "")


_WORD = re.compile(r"[^\W_]+(?:[.,'-][^\W_]+)*")


def words(text: str) -> frozenset[str]:
    """The words and numbers of a text, lower-cased, of 2+ characters (``3,200`` and ``e4`` stay whole)."""
    return frozenset(w.lower() for w in _WORD.findall(text or "") if len(w) > 1)


_SENTENCE_END = frozenset(".!?:;\n")


def fact_words(text: str) -> frozenset[str]:
    """The facts a text states, lower-cased: numbers (any word holding a digit: ``1550``, ``3,200``, ``e4``) and
    names (a capitalised word that does not open a sentence or a line: ``Sunrise``, ``Kiosk``). Common words are
    left out without a word list (every language's function words are lower case mid-sentence); a script without
    letter case gives its numbers only. What a final answer can share with the message that first stated it."""
    text = text or ""
    found: set[str] = set()
    for match in _WORD.finditer(text):
        word = match.group()
        if len(word) < 2:
            continue
        before = text[:match.start()].rstrip(" \t*_#>-`\"'([")
        opens = not before or before[-1] in _SENTENCE_END
        if any(c.isdigit() for c in word) or (word[0].isupper() and not opens):
            found.add(word.lower())
    return frozenset(found)


def _final_answer(messages: Sequence[Message], query: str) -> int | None:
    """The index of the last assistant message that says more than one word (a lone word such as AG2's TERMINATE
    closes a chat, it answers nothing) and is not the task message; None when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant" and message.turn and len(words(message.content or "")) > 1 \
                and not restates_query(message, query):
            return index
    return None


def answer_origin(trajectory: Trajectory) -> Origin | None:
    """The origin of a failed run's final answer (module docstring): the earliest assistant text or tool output,
    from the first agent step on, that states a fact (:func:`fact_words`) of the final answer that the query, the
    user/system messages and the task message do not hold; the answer's own turn when no earlier message states one. None when the run
    has no final answer. A recorded failure is assumed: on a success there is nothing wrong to trace."""
    messages = trajectory.messages
    answer = _final_answer(messages, trajectory.query)
    if answer is None:
        return None
    given = set(fact_words(trajectory.query))
    for message in messages:
        if message.role in ("user", "system") or (message.role == "assistant" and restates_query(message, trajectory.query)):
            given |= fact_words(message.content or "")
    answer_turn = messages[answer].turn or 0
    new = fact_words(messages[answer].content or "") - given
    source = None
    for index, message in enumerate(messages[:answer]):
        if message.role in ("assistant", "tool") and message.turn and fact_words(message.content or "") & new \
                and not (message.role == "assistant" and restates_query(message, trajectory.query)):
            source = index
            break
    final = FlowStep(answer_turn, answer, None, "failure", "", "text", excerpt(messages[answer].content or "", EXCERPT_CHARS))
    if source is None:
        return Origin(answer_turn, answer_turn, (final,), False,
                      f"no earlier message states the final answer's facts: the answer at T{answer_turn} is its own origin")
    shared = sorted(fact_words(messages[source].content or "") & new)
    value = " ".join(shared[:3])
    turn = messages[source].turn or 0
    kind = "tool output" if messages[source].role == "tool" else "agent text"
    first = FlowStep(turn, source, None, "value", value, "text",
                     excerpt(_around(messages[source].content or "", shared[0]) or messages[source].content or "", EXCERPT_CHARS))
    return Origin(turn, answer_turn, (first, final), turn != answer_turn or source != answer,
                  f"the final answer at T{answer_turn} first appears in the {kind} of T{turn} ({value})")


class Localised(Protocol):
    """An issue as :func:`decisive_origin` reads it: its turn (None: not localised) and severity."""

    @property
    def turn(self) -> int | None: ...

    @property
    def severity(self) -> str: ...


IssueT = TypeVar("IssueT", bound=Localised)


def decisive_origin(ledger: Ledger, issues: Sequence[IssueT]) -> tuple[IssueT, Origin] | None:
    """The decisive turn of a trajectory from its issues: each severe localised issue (every localised issue when
    none is severe) is traced to its origin, and the earliest origin is decisive (ties: the earlier failure, then
    the first listed). Returns (that issue, its origin); None when no issue is localised."""
    localised = [(issue, issue.turn) for issue in issues if issue.turn is not None]
    pool = [pair for pair in localised if pair[0].severity == "severe"] or localised
    if not pool:
        return None
    traced = [(trace_origin(ledger, turn), n, issue) for n, (issue, turn) in enumerate(pool)]
    origin, _, chosen = min(traced, key=lambda t: (t[0].turn, t[0].failure_turn, t[1]))
    return chosen, origin


def decisive_of(trajectory: Trajectory, issues: Sequence[IssueT]) -> tuple[IssueT, Origin] | None:
    """:func:`decisive_origin` over the trajectory's ledger (built only when an issue is localised)."""
    if all(issue.turn is None for issue in issues):
        return None
    return decisive_origin(ledger_of(trajectory), issues)
