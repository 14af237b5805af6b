"""The fact ledger of one trajectory: values, artifact versions, claims and dependencies over the actions of
:class:`~judge.facts.analysis.Analysis` (see the package docstring and docs/architecture.md).

A :class:`Ledger` is a view of one analysis: each kind of fact is found on first use and kept in the analysis's
cache, so every consumer of the same trajectory object (rules judge, release gate, editor) reads the facts found
once, and a detector that needs no values pays nothing for them.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Literal

from judge.facts.analysis import Action, Analysis, Sentence, Status, analysis_of, command_of, is_doc
from judge.facts.config import RulesConfig, default_config
from judge.facts.values import (
    ValueKind,
    data_values,
    is_resource_id,
    listed_counts,
    names_in,
    number_pattern,
    printed_counts,
    states,
    value_kind,
    value_tokens,
)
from judge.model import Trajectory

__all__ = ["Claim", "Dependency", "Ledger", "Occurrence", "Status", "Value", "Version", "ledger_of"]

Source = Literal["query", "receipt", "argument", "text"]
DependencyKind = Literal["resource-state", "returned-values", "control", "textual"]
# Statuses whose receipt says the call changed something (or may have): a later step can rest on them.
EFFECTS: frozenset[Status] = frozenset({"ok", "partial", "unknown", "running"})
_QUERY_INDEX = -1  # the query comes before every message


@dataclass(frozen=True, slots=True)
class Occurrence:
    """Where a value appears: a message (``-1``: the query), its turn, what kind of text, and the action whose
    receipt or arguments hold it."""

    message_index: int
    turn: int
    source: Source
    action: int | None = None  # order of the action (receipt or argument), None for text and the query


@dataclass(slots=True)
class Value:
    """An id, number, path or flag: where it first appears and every later use."""

    token: str
    kind: ValueKind
    first: Occurrence
    uses: list[Occurrence] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Version:
    """One version of an artifact (a file, or a resource named by id): made by a successful write."""

    artifact: str
    number: int  # 1 for the first write seen
    action: int  # order of the write
    visible_at: int  # message index of its receipt


@dataclass(frozen=True, slots=True)
class Claim:
    """An assistant sentence that asserts state, with its values and the receipts that support it."""

    message_index: int
    turn: int
    sentence: Sentence
    tense: Literal["past", "future"]
    values: tuple[str, ...]
    counts: tuple[int, ...]
    supported_by: tuple[int, ...]  # orders of successful actions, seen before the claim, that show one of its values

    @property
    def text(self) -> str:
        return self.sentence.text


@dataclass(frozen=True, slots=True)
class Dependency:
    """``dependent`` (an action, or the text of a message) rests on ``source`` (an earlier action)."""

    kind: DependencyKind
    source: int  # order of the action depended on
    message_index: int  # where the dependent sits
    dependent: int | None  # order of the dependent action; None when it is text
    value: str = ""  # the value or artifact that carries the dependency


class Ledger:
    """The facts of one trajectory (see the module docstring); build with :func:`ledger_of`."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis

    @property
    def actions(self) -> list[Action]:
        return self.analysis.actions

    def action_for(self, call_id: str) -> Action | None:
        """The action of the call with id ``call_id`` (the first, when an id is reused)."""
        by_id: dict[str, Action] | None = self.analysis.cache.get("ledger:by_call_id")
        if by_id is None:
            by_id = {}
            for action in self.actions:
                if action.call is not None:
                    by_id.setdefault(action.call.id, action)
            self.analysis.cache["ledger:by_call_id"] = by_id
        return by_id.get(call_id)

    # --- values -----------------------------------------------------------------------------------------

    @property
    def values(self) -> dict[str, Value]:
        """Every value by token, with its first occurrence and later uses, in message order."""
        cached: dict[str, Value] | None = self.analysis.cache.get("ledger:values")
        if cached is None:
            cached = self.analysis.cache["ledger:values"] = self._find_values()
        return cached

    def _find_values(self) -> dict[str, Value]:
        an = self.analysis
        found: dict[str, Value] = {}

        def see(text: str, where: Occurrence) -> None:
            for token in value_tokens(text):
                value = found.get(token)
                if value is None:
                    found[token] = Value(token, value_kind(token), where)
                else:
                    value.uses.append(where)

        see(an.trajectory.query, Occurrence(_QUERY_INDEX, 0, "query"))
        by_receipt = {a.receipt_index: a for a in an.actions if a.receipt_index is not None}
        by_message: dict[int, list[Action]] = {}
        for action in an.actions:
            if action.call is not None:
                by_message.setdefault(action.message_index, []).append(action)
        for index, message in enumerate(an.trajectory.messages):
            turn = message.turn or 0
            if message.role in ("user", "system"):
                see(message.content or "", Occurrence(index, turn, "query"))
            elif message.role == "tool":
                answered = by_receipt.get(index)
                if answered is not None and answered.receipt is not None:
                    see(answered.receipt.content, Occurrence(index, turn, "receipt", answered.order))
            elif message.role == "assistant":
                see("\n".join(t for t in (message.reasoning, message.content) if t), Occurrence(index, turn, "text"))
                for call in by_message.get(index, ()):
                    see(call.text, Occurrence(index, turn, "argument", call.order))
        return found

    def first_receipt(self, token: str) -> Occurrence | None:
        """The first receipt that shows ``token`` (None when only the query, arguments or text hold it)."""
        value = self.values.get(token)
        if value is None:
            return None
        return next((o for o in [value.first, *value.uses] if o.source == "receipt"), None)

    def returned_by(self, action: Action) -> list[tuple[Value, list[Occurrence]]]:
        """The values ``action``'s receipt showed first (no query, argument, text or earlier receipt held them),
        each with its later uses in arguments and text made before another receipt shows it again: what rests on
        that receipt alone (the editor's returned-values dependency)."""
        found: list[tuple[Value, list[Occurrence]]] = []
        for value in self.values.values():
            first = value.first
            if first.source != "receipt" or first.action != action.order:
                continue
            uses: list[Occurrence] = []
            for use in value.uses:
                if use.source == "receipt" and use.action != action.order:
                    break  # another receipt shows it: the source of every later use
                if use.source in ("argument", "text") and use.message_index > first.message_index:
                    uses.append(use)
            found.append((value, uses))
        return found

    def names_of(self, action: Action) -> frozenset[str]:
        """What a call names and what its receipt shows that can tie later text to it: the values of its
        arguments and receipt (ids, numbers, flags), and the files and names its arguments give (``config.yaml``)."""
        memo: dict[int, frozenset[str]] = self.analysis.cache.setdefault("ledger:names", {})
        names = memo.get(action.order)
        if names is None:
            content = action.receipt.content[:4000] if action.receipt is not None else ""
            names = memo[action.order] = names_in(action.text) | value_tokens(content) | frozenset(action.writes)
        return names

    def answer_support(self, message_index: int) -> dict[str, int]:
        """The values the text of message ``message_index`` states that a receipt before it showed and the query
        did not (ids and numbers, and the data a JSON receipt returns), each with the order of the first action
        whose receipt showed it: what an answer rests on."""
        text = self.analysis.trajectory.messages[message_index].content or ""
        query = self.analysis.trajectory.query
        support: dict[str, int] = {}
        for action in self.actions:
            if action.receipt is None or action.visible_at >= message_index:
                continue
            content = action.receipt.content
            for value in value_tokens(content) | data_values(content):
                if value not in support and states(text, value) and not states(query, value):
                    support[value] = action.order
        return support

    # --- artifacts and versions ---------------------------------------------------------------------------

    def artifacts_written(self, action: Action) -> tuple[str, ...]:
        """What a call changed, when its receipt shows an effect: the files it wrote, and (a state-changing call)
        the ids its arguments name and its receipt returns (what it created)."""
        if action.is_plan or action.read_only or action.status not in ("ok", "partial"):
            return ()
        names = list(action.writes)
        if not action.is_check:
            shown = action.text + "\n" + (action.receipt.content[:2000] if action.receipt is not None else "")
            names += sorted(t for t in value_tokens(shown) if is_resource_id(t))
        return tuple(dict.fromkeys(names))

    @property
    def versions(self) -> dict[str, list[Version]]:
        """Every artifact -> its versions in order (each successful write makes one)."""
        names = dict.fromkeys(a for action in self.actions for a in self.artifacts_written(action))
        return {artifact: self.history(artifact) for artifact in names}

    def history(self, artifact: str) -> list[Version]:
        """The versions of one artifact, in order: found on first use with substring tests (most trajectories
        ask about the few artifacts their checks cover, never about all of them)."""
        memo: dict[str, list[Version]] = self.analysis.cache.setdefault("ledger:history", {})
        found = memo.get(artifact)
        if found is None:
            found = memo[artifact] = []
            resource = is_resource_id(artifact)
            for action in self.actions:
                if action.is_plan or action.read_only or action.status not in ("ok", "partial"):
                    continue
                if artifact in action.writes or (resource and not action.is_check and (
                        artifact in action.text
                        or (action.receipt is not None and artifact in action.receipt.content[:2000]))):
                    found.append(Version(artifact, len(found) + 1, action.order, action.visible_at))
        return found

    def version_at(self, artifact: str, index: int) -> int:
        """The version of ``artifact`` the agent could know of at message ``index`` (0: never written)."""
        return bisect.bisect_left([v.visible_at for v in self.history(artifact)], index)

    def bound_versions(self, check: Action) -> dict[str, int]:
        """The artifacts a check (or read-back) ran on, with the version each had: the files and resources it
        names, and (a check) the files written before it that are not documentation."""
        memo: dict[int, dict[str, int]] = self.analysis.cache.setdefault("ledger:bound", {})
        bound = memo.get(check.order)
        if bound is None:
            bound = {}
            at = check.message_index + 1
            files = dict.fromkeys(p for a in self.actions if a.writes and a.status in ("ok", "partial") for p in a.writes)
            for path in files:
                before = self.version_at(path, at)
                if path in check.text or _basename(path) in check.text or (before and check.is_check and not is_doc(path)):
                    bound[path] = before
            for token in value_tokens(check.text):
                if is_resource_id(token) and token not in bound:
                    bound[token] = self.version_at(token, at)
            memo[check.order] = bound
        return bound

    # --- counts -------------------------------------------------------------------------------------------

    def listed(self, action: Action) -> frozenset[int]:
        """Counts a receipt shows by listing items (see :func:`judge.facts.values.listed_counts`)."""
        memo: dict[int, frozenset[int]] = self.analysis.cache.setdefault("ledger:listed", {})
        counts = memo.get(action.order)
        if counts is None:
            content = action.receipt.content if action.receipt is not None else ""
            counts = memo[action.order] = listed_counts(content)
        return counts

    def printed(self, action: Action) -> frozenset[int]:
        """Counts a receipt prints ("total: 4", "4 rows")."""
        return printed_counts(action.receipt.content) if action.receipt is not None else frozenset()

    def shows_count(self, action: Action, count: int) -> bool:
        """Whether one call shows ``count``: the number in its receipt or arguments, that many lines of content it
        wrote (or rows under a header), or a receipt that lists (a JSON array, bullets, table rows) or prints that
        many items.
        The one count check of claims (:attr:`Claim.supported_by`, read by the editor's validators) and of the rules
        judge's ``unverified-completion``."""
        content = action.receipt.content if action.receipt is not None else ""
        number = number_pattern(count)
        if number.search(content) or number.search(action.text):
            return True
        if _written_lines(action) in (count, count + 1):
            return True
        # listed: every JSON array's length too (the record_ids a create returned), bullets, table rows, id lines
        return count in self.listed(action) or count in self.printed(action)

    # --- claims -------------------------------------------------------------------------------------------

    @property
    def claims(self) -> list[Claim]:
        """Every claim sentence of the assistant, in order, with its values and supporting receipts."""
        cached: list[Claim] | None = self.analysis.cache.get("ledger:claims")
        if cached is None:
            cached = self.analysis.cache["ledger:claims"] = self._find_claims()
        return cached

    def _find_claims(self) -> list[Claim]:
        claims: list[Claim] = []
        for speech in self.analysis.speeches:
            index = speech.message_index
            seen = [a for a in self.actions if a.visible_at < index and a.status == "ok" and not a.is_plan]
            for sentence in speech.sentences:
                values = tuple(dict.fromkeys([*sentence.tokens, *sorted(value_tokens(sentence.text))]))
                support = tuple(a.order for a in seen if self._shows(a, values, sentence.counts))
                claims.append(Claim(index, speech.turn, sentence, "future" if sentence.future else "past",
                                    values, sentence.counts, support))
        return claims

    def _shows(self, action: Action, values: tuple[str, ...], counts: tuple[int, ...]) -> bool:
        content = action.receipt.content if action.receipt is not None else ""
        if any(v in content or v in action.text for v in values):
            return True
        return any(self.shows_count(action, count) for count in counts)

    # --- dependencies -------------------------------------------------------------------------------------

    @property
    def dependencies(self) -> list[Dependency]:
        """What each action and each later text rests on, from the value and artifact flows (see
        :class:`Dependency`): values first shown by an earlier receipt (returned values, and text that repeats
        them), artifacts an earlier call wrote (resource state), and a different call made right after a failure
        (control: the decision branched on it)."""
        cached: list[Dependency] | None = self.analysis.cache.get("ledger:dependencies")
        if cached is None:
            cached = self.analysis.cache["ledger:dependencies"] = self._find_dependencies()
        return cached

    def _find_dependencies(self) -> list[Dependency]:
        found: list[Dependency] = []
        for value in self.values.values():
            origin = next((o for o in [value.first, *value.uses] if o.source == "receipt"), None)
            if origin is None or origin.action is None or value.first.source not in ("receipt",):
                continue  # a value the query or the agent gave first is not a returned value
            for use in value.uses:
                if use.message_index <= origin.message_index or use.source in ("receipt", "query"):
                    continue
                kind: DependencyKind = "returned-values" if use.source == "argument" else "textual"
                found.append(Dependency(kind, origin.action, use.message_index, use.action, value.token))
        writers: dict[str, int] = {}
        config = self.analysis.config
        previous: Action | None = None
        for action in self.actions:
            if action.call is not None and not action.is_plan:
                for artifact, source in writers.items():
                    if source != action.order and artifact in action.text:
                        found.append(Dependency("resource-state", source, action.message_index, action.order, artifact))
                if (previous is not None and previous.status not in ("ok", "running")
                        and call_path(previous, config) != call_path(action, config) and previous.visible_at < action.message_index):
                    found.append(Dependency("control", previous.order, action.message_index, action.order))
                previous = action
            for artifact in self.artifacts_written(action):
                writers[artifact] = action.order
        return found

    def dependents(self, action: Action) -> list[Dependency]:
        """The dependencies that rest on ``action``."""
        return [d for d in self.dependencies if d.source == action.order]


def call_path(action: Action, config: RulesConfig) -> str:
    """What a call does, finer than its intent: a shell command's words before its first flag (``lark-cli base
    record create``), else the tool name and its argument names. A retry with other values keeps it."""
    call = action.call
    if call is None:
        return action.name
    command = command_of(call, config)
    if command is not None:
        words: list[str] = []
        for word in command.split():
            if word.startswith("-") or "=" in word or word in ("&&", "|", ";") or len(words) == 4:
                break
            words.append(word)
        return f"{action.name}:{' '.join(words)}"
    keys = sorted(call.arguments) if isinstance(call.arguments, dict) else []
    return f"{action.name}:{','.join(keys)}"


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _written_lines(action: Action) -> int | None:
    """How many non-blank lines of content a writing call wrote (None: it wrote no content argument)."""
    args = action.call.arguments if action.call is not None else None
    if not action.writes or not isinstance(args, dict):
        return None
    content = next((v for k, v in args.items() if k in ("content", "file_text", "new_string", "text") and isinstance(v, str)), None)
    return None if content is None else len([line for line in content.splitlines() if line.strip()])


def ledger_of(trajectory: Trajectory, config: RulesConfig | None = None) -> Ledger:
    """The ledger of ``trajectory``: built once per trajectory object and config, shared by every reader."""
    return Ledger(analysis_of(trajectory, config or default_config()))
