"""The fact ledger of one trajectory: values, artifact versions, claims and dependencies over the actions of
:class:`~judge.facts.analysis.Analysis` (see the package docstring and docs/architecture.md).

A :class:`Ledger` is a view of one analysis: each kind of fact is found on first use and kept in the analysis's
cache, so every consumer of the same trajectory object (rules judge, release gate, editor) reads the facts found
once, and a detector that needs no values pays nothing for them.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Literal

from judge.facts.analysis import (
    HTTP_CLIENTS,
    Action,
    Analysis,
    Sentence,
    Status,
    analysis_of,
    is_doc,
    path_tokens,
    salient_tokens,
)
from judge.facts.checks import zero_tally
from judge.facts.config import CompiledPatterns, RulesConfig, default_config
from judge.facts.effects import failure_part
from judge.facts.readbacks import near_twin
from judge.facts.shell import ObjectKey, object_keys, read_command, sends_request, url_key, words_of
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

__all__ = ["Claim", "Dependency", "Ledger", "Occurrence", "Recovery", "Status", "Stray", "Value", "Version", "ledger_of"]

Source = Literal["query", "receipt", "argument", "text"]
DependencyKind = Literal["resource-state", "returned-values", "control", "textual"]
RecoveryKind = Literal["redone", "state-shown", "reported"]
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
class Stray:
    """A value the agent's calls used (``value``, first used in arguments at ``used``) in place of its near twin
    ``meant`` that the query or a receipt gave; ``named`` is what a claim about the meant object names (the twin,
    or the query's value that tagged its listed entry); ``kind`` is how it went astray (:attr:`Ledger.strays`)."""

    value: str
    meant: str
    named: str
    kind: Literal["typed", "asked", "listed"]
    used: Occurrence


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


@dataclass(frozen=True, slots=True)
class Recovery:
    """How the agent got past a failed call (docs/finding-tags.md: a failure that is recovered from, or reported
    honestly, is no ``failed-call``):

    - ``redone``: the same action later succeeded: the same command or tool (intent or call path) on the same
      resource (it names one of the ids the failed call named), corrected arguments allowed;
    - ``state-shown``: a later successful call wrote what the failed one was to write (the same files);
    - ``reported``: a later message of the agent reports the failure (failure words of any vocabulary, or a
      negated claim about what the call named) and no later sentence claims a success for it.
    """

    kind: RecoveryKind
    message_index: int  # where the agent could see it: the later success's receipt, or the report
    action: int | None = None  # order of the later successful action (None for a report)


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

    def _find_values(self, scan: Callable[[str], set[str]] = value_tokens) -> dict[str, Value]:
        an = self.analysis
        found: dict[str, Value] = {}

        def see(text: str, where: Occurrence) -> None:
            for token in scan(text):
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

    # --- values astray: the work used a near twin of what the user or a receipt gave -------------------------

    @property
    def strays(self) -> list[Stray]:
        """The values the agent's calls used in place of a near twin (:func:`~judge.facts.readbacks.near_twin`:
        transposed or one character off) that the query or a receipt had given and no call ever used: a port,
        year, version or id born wrong (docs/finding-tags.md, "Values born wrong"). Three shapes, all by values:

        - **typed**: the agent typed the value (no query or receipt showed it before) after a receipt or the
          query showed its twin: ``8018`` written into ``.env`` after ``port = 8081`` was read, ``v2.4.0`` tagged
          after ``version: 2.4.1``, ``Patient/4571`` beside the listed ``4517``;
        - **asked**: the query gave the twin (``2026``) and the calls used only the other (``d.year == 2025``);
        - **listed**: a receipt listed the twin in an entry (a JSON object, else a line) that holds a value of the
          query (``{"base_id": "bascnHr26", "name": "HR 2026"}`` for "HR 2026") and the calls used the sibling
          whose entry does not (``bascnHr25``).

        Values of 4+ characters holding a digit, and dotted versions. Found once per ledger."""
        cached: list[Stray] | None = self.analysis.cache.get("ledger:strays")
        if cached is None:
            cached = self.analysis.cache["ledger:strays"] = self._find_strays()
        return cached

    def _find_strays(self) -> list[Stray]:
        values = self.values
        # Versions are scanned everywhere only when a call's arguments hold one (rare): else none can be astray.
        versions = self._find_values(_versions) if any(_versions(a.text) for a in self.actions) else {}
        worked: dict[str, Occurrence] = {}  # each value's first use in a call's arguments
        given: dict[int, list[Value]] = {}  # values the query or a receipt showed first, no call used: by length
        for table in (values, versions):
            for token, value in table.items():
                if len(token) < 4 or not _DIGIT.search(token):
                    continue
                use = next((o for o in (value.first, *value.uses) if o.source == "argument"), None)
                if use is not None:
                    worked.setdefault(token, use)
                elif value.first.source in ("query", "receipt"):
                    given.setdefault(len(token), []).append(value)
        if not worked or not given:
            return []
        asked = [t for t, v in values.items() if v.first.source == "query" and _DIGIT.search(t)]
        found: list[Stray] = []
        for token, use in worked.items():
            value = values.get(token) or versions[token]
            typed = value.first.source in ("argument", "text")
            for meant in given.get(len(token), ()):
                if meant.first.message_index >= use.message_index or not near_twin(token, meant.token):
                    continue
                if meant.first.source == "query":
                    found.append(Stray(token, meant.token, meant.token, "asked", use))
                elif typed:
                    found.append(Stray(token, meant.token, meant.token, "typed", use))
                elif asked and meant.first.action is not None and value.first.action == meant.first.action:
                    receipt = self.actions[meant.first.action].receipt
                    content = receipt.content[:_ENTRY_CHARS] if receipt is not None else ""
                    tag = next((q for q in asked if q in _entry(content, meant.token) and q not in _entry(content, token)), None)
                    if tag is not None:
                        found.append(Stray(token, meant.token, tag, "listed", use))
        return sorted(found, key=lambda s: (s.used.message_index, s.value, s.meant))

    def typed_fault(self, action: Action) -> Stray | None:
        """The typed stray (:attr:`strays`) a failed call inherits: its receipt shows the value (connection
        refused on the port the agent wrote), or the call reaches what the call that wrote the value configured
        (the URL host of the failing call is in that write's arguments: the host of an ingress whose port was
        mistyped). Such a refusal is the agent's error, also when it reads like the environment's. None
        for a call that did not fail or inherits none."""
        if action.outcome not in ("environment", "error") or action.receipt is None:
            return None
        memo: dict[int, Stray | None] = self.analysis.cache.setdefault("ledger:typed_fault", {})
        if action.order not in memo:
            memo[action.order] = self._typed_fault(action)
        return memo[action.order]

    def _changes_typed(self) -> dict[str, int]:
        """Each value of 4+ characters with a digit (and dotted version) that the arguments of a change (a call that
        is no read and no plan) hold, with the order of the first such call: the gate of :meth:`typed_fault`, one
        dictionary per ledger (a scan of the earlier calls per failed call would be quadratic)."""
        found: dict[str, int] | None = self.analysis.cache.get("ledger:changes_typed")
        if found is None:
            found = self.analysis.cache["ledger:changes_typed"] = {}
            for a in self.actions:
                if not a.is_plan and not a.read_only:
                    for token in value_tokens(a.text) | _versions(a.text):
                        if len(token) >= 4 and _DIGIT.search(token):
                            found.setdefault(token, a.order)
        return found

    def _first_write_naming(self, name: str) -> int:
        """The order of the first write whose arguments hold ``name`` (a host), once per name (``1 << 30``: none)."""
        memo: dict[str, int] = self.analysis.cache.setdefault("ledger:first_write_naming", {})
        if name not in memo:
            memo[name] = next((a.order for a in self.actions if a.writes and name in a.text), 1 << 30)
        return memo[name]

    def _typed_fault(self, action: Action) -> Stray | None:
        assert action.receipt is not None
        shown = action.receipt.content[:4000]
        names = [n for n in _HOST.findall(action.text) if len(n) >= 6]
        # A cheap gate before the ledger's values: an earlier change's arguments hold a value of 4+ characters with
        # a digit that the receipt shows and this call did not send, or a write's arguments hold the host this call
        # reaches (most faults inherit nothing the agent typed).
        held = [t for t in value_tokens(shown) | _versions(shown)
                if len(t) >= 4 and _DIGIT.search(t) and t not in action.text]
        if not held and not names:
            return None  # nothing the receipt shows can be an earlier change's value (the changes are not read)
        typed = self._changes_typed()
        if not typed and not names:
            return None
        if not any(typed.get(t, action.order) < action.order for t in held) \
                and not any(self._first_write_naming(n) < action.order for n in names):
            return None
        strays = [s for s in self.strays if s.kind == "typed" and s.used.message_index < action.message_index]
        if not strays:
            return None
        for stray in strays:
            writer = self.actions[stray.used.action] if stray.used.action is not None else None
            if stray.value in shown or (writer is not None and any(n in writer.text for n in names)):
                return stray
        return None

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

    def objects_of(self, action: Action) -> frozenset[str]:
        """The names of the objects a call acts on, as a later sentence in any language would state them: the
        operands of its command (``git push origin fix/tz`` -> ``origin``, ``fix/tz``; ``pip install httpx`` ->
        ``httpx``; ``--name Fournisseurs`` -> ``Fournisseurs``), never its program, subcommand or flags (a sentence
        naming "push" may report the push's failure), plus the files it writes or names and its argument values."""
        memo: dict[int, frozenset[str]] = self.analysis.cache.setdefault("ledger:objects", {})
        names = memo.get(action.order)
        if names is None:
            found: set[str] = set(action.writes) | set(names_in(action.text))
            command = action.command
            if command is not None:
                for segment in read_command(command).segments:
                    for word in words_of(segment.text)[2:]:
                        word = word.strip("'\"@,")
                        if not word.startswith("-") and "=" not in word and len(word) >= 3:
                            found.add(word)
            elif action.call is not None and isinstance(action.call.arguments, dict):
                found.update(v for v in action.call.arguments.values()
                             if isinstance(v, str) and 3 <= len(v) <= 80 and "\n" not in v)
            names = memo[action.order] = frozenset(found)
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
            objects = self.objects_named(action)
            # An id that is an object flag's value is named by its object: the base or table holding a field is
            # not changed by a write to the field.
            keyed = {value for _, pairs in objects for _, value in pairs}
            names += sorted(t for t in value_tokens(shown) if is_resource_id(t) and t not in keyed)
            names += [name for name, _ in objects]
        return tuple(dict.fromkeys(names))

    def objects_named(self, action: Action) -> tuple[ObjectKey, ...]:
        """The remote objects a call names by structure (:func:`judge.facts.shell.object_keys`): its command's
        object flags and URLs, or (a tool of its own) the arguments keyed by an object word (``field_id``,
        ``webhook``) and the URLs they hold. Identity, never wording: the same object is the same values."""
        memo: dict[int, tuple[ObjectKey, ...]] = self.analysis.cache.setdefault("ledger:named-objects", {})
        found = memo.get(action.order)
        if found is None:
            patterns = self.analysis.patterns
            flags, actions = patterns.object_flags, patterns.action_segments
            if action.command is not None:
                found = object_keys(action.command, flags, actions)
            else:
                found = _argument_objects(action, flags, actions)
            memo[action.order] = found
        return found

    def _written_objects(self) -> dict[str, frozenset[tuple[str, str]]]:
        """Every remote object some write names -> its identity (memoised per trajectory)."""
        cache = self.analysis.cache
        written: dict[str, frozenset[tuple[str, str]]] | None = cache.get("ledger:written-objects")
        if written is None:
            written = {}
            for action in self.actions:
                if action.is_plan or action.read_only or action.is_check or action.status not in ("ok", "partial"):
                    continue
                for name, pairs in self.objects_named(action):
                    written.setdefault(name, pairs)
            cache["ledger:written-objects"] = written
        return written

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
            remote = self._written_objects().get(artifact)
            for action in self.actions:
                if action.is_plan or action.read_only or action.status not in ("ok", "partial"):
                    continue
                if artifact in action.writes or (resource and not action.is_check and not _downloads(action, artifact) and (
                        artifact in action.text
                        or (action.receipt is not None and artifact in action.receipt.content[:2000]))) \
                        or (remote is not None and not action.is_check
                            and any(remote <= pairs for _, pairs in self.objects_named(action))):
                    # (A remote object changes when a write names it or an object under it.)
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
                # A command line that writes and then checks (``cp new.json snap.json && pytest``) ran on its own write.
                # A one-command call's own output (papermill's executed notebook) is the version it wrote; in a
                # chain, only a write before the last segment is (``pytest && cp new.py app.py`` ran before the cp).
                own = _written_before_last(check, path) or (path in check.writes and (
                    check.command is None or len(read_command(check.command).segments) == 1))
                before = self.version_at(path, check.visible_at + 1) if own else self._version_at_call(path, check)
                named = path in check.text or _basename(path) in check.text or _names_folder_of(check.text, path)
                if named or (check.is_check and not is_doc(path) and (before or self._edited_later(path, at))):
                    bound[path] = before
            covered = self.objects_named(check)
            keyed = {value for _, pairs in covered for _, value in pairs}
            unpathed: str | None = None  # the text with its file paths taken out (built on first need)
            for token in value_tokens(check.text):
                if is_resource_id(token) and token not in bound and token not in keyed:
                    if token + "." in check.text:
                        # A file's stem is no remote object: ``validate lease_L8820.yaml`` ran on the file (bound
                        # above), not on a ``lease_L8820`` its upload made later (v12-hr-es-tax-table-recheck,
                        # v12-rl-pt-pipeline-recheck, v16-pm-it-lease-validate-rerun).
                        if unpathed is None:
                            unpathed = check.text
                            for named_path in path_tokens(check.text):
                                unpathed = unpathed.replace(named_path, " ")
                        if token not in unpathed:
                            continue
                    bound[token] = self._version_at_call(token, check)
            if covered:
                # A check of an object covers every object under it (a formula check of a table, its fields).
                for name, pairs in self._written_objects().items():
                    if name not in bound and any(key <= pairs for _, key in covered):
                        bound[name] = self._version_at_call(name, check)
            memo[check.order] = bound
        return bound

    def _version_at_call(self, artifact: str, call: Action) -> int:
        """The version of ``artifact`` a call ran on: the one seen before its message, or a later one an earlier call
        of the same message wrote (calls of one message run in order: an Edit then the validation re-run on it,
        v12-hr-es-tax-table-recheck, v12-rl-pt-pipeline-recheck)."""
        version = self.version_at(artifact, call.message_index + 1)
        history = self.history(artifact)
        while version < len(history) and history[version].action < call.order \
                and self.actions[history[version].action].message_index == call.message_index:
            version += 1
        return version

    def _edited_later(self, path: str, index: int) -> bool:
        """Whether the first write of ``path`` after message ``index`` changed a file that already existed (an edit,
        not a creation): a check made before it ran on the original version (version 0) of that file."""
        first = next((a for a in self.actions if path in a.writes and a.message_index >= index
                      and a.status in ("ok", "partial")), None)
        if first is None or first.call is None:
            return False
        args = first.call.arguments if isinstance(first.call.arguments, dict) else {}
        receipt = first.receipt.content[:300].lower() if first.receipt is not None else ""
        return not any(k in args for k in ("content", "file_text")) or "updated" in receipt or "overwr" in receipt

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

    # --- recovery -----------------------------------------------------------------------------------------

    def recovery(self, action: Action, before: int | None = None, reported: bool = True) -> Recovery | None:
        """How the agent got past the failed ``action`` (see :class:`Recovery`), from what it could see before
        message ``before`` (all of the trajectory when None); None for a call that did not fail, or a failure
        nobody redid, whose state nothing showed and that no message reported. ``reported=False`` asks only
        whether the work was done after all (an honest report does not make a claim of it true)."""
        if not action.failed:
            return None
        limit = (1 << 30) if before is None else before
        later = self._redone(action, limit)
        if later is not None:
            return Recovery("redone", later.visible_at, later.order)
        later = self._state_shown(action, limit)
        if later is not None:
            return Recovery("state-shown", later.visible_at, later.order)
        if reported:
            report = self._reported(action, limit)
            if report is not None:
                return Recovery("reported", report)
        return None

    def _index(self) -> _RecoveryIndex:
        found: _RecoveryIndex | None = self.analysis.cache.get("ledger:recovery")
        if found is None:
            found = self.analysis.cache["ledger:recovery"] = _RecoveryIndex(self.analysis)
        return found

    def _redone(self, action: Action, before: int) -> Action | None:
        """The first later success of the same action: same intent, or the same call path for a command line or a
        failed read (a read of the right path gets what the failed one was for); a read does not redo a write;
        on the same resource, whatever argument was corrected: when the failed call named resource ids, the
        success names one of them, and when both give the name of what they make (``--name X``, ``"name": "X"``),
        a name is the same (creating the next field is not a retry of the failed one)."""
        config = self.analysis.config
        index = self._index()
        by_path = action.read_only or action.command is not None
        ids = [t for t in value_tokens(action.text) if is_resource_id(t)]
        made = _made_names(action, config)

        def redoes(later: Action) -> bool:
            if later.read_only and not action.read_only:
                return False
            if ids and not any(i in later.text for i in ids):
                return False
            names = _made_names(later, config)
            return not (made and names and made.isdisjoint(names))  # another name: another thing to make

        found = [index.first(index.by_intent.get(action.intent, ()), action.order, before, redoes)]
        if by_path:  # a tool's call path is its argument names: another file written is another resource
            found.append(index.first(index.by_path.get(call_path(action, config), ()), action.order, before, redoes))
        if action.read_only and ids and action.program:
            # A failed read redone by another read of the same resource: every id it named that its error did not
            # (the guessed record is what was missing; the base and table it looked in are the resource).
            shown = action.receipt.content if action.receipt is not None else ""
            kept = [i for i in ids if i not in shown]
            found.append(index.first(
                index.by_program.get((action.name, action.program), ()), action.order, before,
                lambda later: bool(kept) and later.read_only and all(i in later.text for i in kept),
                within=_RETRY_WINDOW))
        command = action.command if action.program else None
        if command is not None:
            # A typo corrected: the same command with one word respelled to what the query or the error named
            # (that text joined only when a retry differs by one word).
            receipt = action.receipt
            found.append(index.first(
                index.by_program.get((action.name, action.program), ()), action.order, before,
                lambda later: redoes(later) and _respelled(
                    command, later.command or "",
                    lambda: f"{index.given}\n{receipt.content.lower() if receipt else ''}")
                if later.call is not None else False, within=_RETRY_WINDOW))
        return min((a for a in found if a is not None), key=lambda a: a.order, default=None)

    def _state_shown(self, action: Action, before: int) -> Action | None:
        """The first later success that wrote every file the failed call was to write (another tool may write
        it: a failed ``sed -i`` redone with an editor)."""
        if not action.writes:
            return None
        index = self._index()
        return index.first(index.writers.get(action.writes[0], ()), action.order, before,
                           lambda later: all(w in later.writes for w in action.writes))

    def _reported(self, action: Action, before: int) -> int | None:
        """The message that reports the failure honestly, or None. A report comes after the receipt and is tied to
        the failure (it is the last failure before it, or the message names what only the failed call named);
        it is the first message after the failure that speaks of a failure (the ``prior_failure`` vocabulary, any
        language) or negates a claim ("the dashboard was not created"; not a promise), or the final answer.
        Honest: no later sentence asserts a success for it: "the earlier error is fixed", one naming what only
        the failed call named, a check claim after a failed check, or any claim without names while nothing has
        succeeded since the failure ("Schema checked, no errors"). Not when the identical failing call was run
        again: the agent did not take the failure in."""
        index = self._index()
        seen = action.visible_at
        if index.after_order(index.failed_keys.get(action.key, ()), action.order):
            return None
        if (index.between(index.resolution_at, seen, before) is not None
                or (action.is_check and index.between(index.check_claim_at, seen, before) is not None)):
            return None
        bare = index.between(index.bare_claim_at, seen, before)
        if bare is not None and bare <= index.first_change_seen(action.order):
            return None
        names = {n for n in self.names_of(action) if len(n) >= 4 and not states(self.analysis.trajectory.query, n)}

        def own(name: str) -> bool:  # only the failed call named it: a claim naming it speaks of the failure
            return not index.shown_after(name, action.order) and not index.shown_before(name, action.order)

        if any(index.between(index.claim_values.get(n, []), seen, before) is not None and own(n) for n in names):
            return None
        candidates = [index.between(index.signal_at, seen, before)]
        final = index.final_speech
        if final is not None and seen < final.message_index < before and (
                final.message_index in index.signals or self.reports_by_values(action, final.region)):
            candidates.append(final.message_index)
        for at in candidates:
            if at is not None and (index.last_failure_before(at) is action
                                   or any(n in index.speech_at[at].region and own(n) for n in names)):
                return at
        return None

    @property
    def user_given(self) -> str:
        """What the user gave (the query, user and system messages), lowered: a value from there is no evidence of
        what the agent did."""
        return self._index().given

    def speaks_of(self, action: Action, text: str) -> bool:
        """Whether ``text`` names what ``action`` worked on, in any language: an id, file or value of the call
        (:meth:`names_of`, 4+ characters), or a word of its command (``push``, ``httpx``)."""
        if not text:
            return False
        low = text.lower()
        words = frozenset(_TEXT_WORD.findall(low))
        return any(n in words or (not n.isalnum() and n in low) for n in self._spoken_names(action))

    def _spoken_names(self, action: Action) -> tuple[str, ...]:
        """What a text names ``action`` by (:meth:`speaks_of`), lowered, once per action (every sentence of every
        report is held against each failure)."""
        memo: dict[int, tuple[str, ...]] = self.analysis.cache.setdefault("ledger:spoken_names", {})
        found = memo.get(action.order)
        if found is not None:
            return found
        config = self.analysis.config
        command = action.command
        named = {n.lower() for n in self.names_of(action) | _made_names(action, config) if len(n) >= 4}
        # The command's operands and subcommands (push, origin, fix/tz), not its program nor its flags.
        named |= {w for w in (command or call_path(action, config)).lower().split()[1:]
                  if len(w) >= 4 and not w.startswith("-") and _TEXT_WORD.fullmatch(w)}
        # The paths and hosts inside a remote operand ("deploy@10.0.4.7:/srv/backup/" -> "/srv/backup", "10.0.4.7"):
        # a report names the folder or host, not the whole operand.
        named |= {p.rstrip("/") for w in (command or "").lower().split()[1:] if ("@" in w or ":" in w) and not w.startswith("-")
                  for p in _REMOTE_PARTS.split(w) if ("/" in p.rstrip("/") or "." in p) and len(p.rstrip("/")) >= 4}
        # The values of a JSON operand ('{"Status":"Afgehandel"}'): what the call was to write, as a report names it.
        named |= {v.lower() for w in self.objects_of(action) if w[:1] in "{[" for v in data_values(w) if len(v) >= 4}
        found = memo[action.order] = tuple(named)
        return found

    def output_names(self, action: Action, text: str) -> frozenset[str]:
        """The files and identifiers that only the receipt of ``action`` showed (``Tiles.kt`` of a compiler error,
        ``api.html`` of a sync's skipped file), not its call nor the user, that ``text`` names: in any language, a
        text that repeats what the output named speaks of that output."""
        if action.receipt is None or not text:
            return frozenset()
        # The text's names, read once per text (every failure asks about the same final answer), then looked up in
        # each receipt: cheaper than reading the names of every failed receipt.
        memo: dict[str, tuple[str, ...]] = self.analysis.cache.setdefault("ledger:text_names", {})
        names = memo.get(text)
        if names is None:
            names = memo[text] = tuple(n for n in salient_tokens(text) if len(n) >= 4)
        if not names:
            return frozenset()
        content = action.receipt.content[:2000]
        given = self.user_given
        return frozenset(n for n in names if n in content and n not in action.text and n.lower() not in given)

    def reports_by_values(self, action: Action, text: str) -> bool:
        """Whether ``text`` (the final answer) reports the failed ``action`` by values, in any language: it names
        what the call worked on (an id, file or value of the call, or a word of its command: ``push``) and shows
        the failure's evidence: its exit code or an HTTP status of its error line, a quoted excerpt or a word of
        the error text that the call and the query do not hold, or it ends by asking the user (hands the decision
        back). Words of a vocabulary are extra evidence, read by the caller; the claims that would make the report
        dishonest are read there too."""
        receipt = action.receipt
        if receipt is None:
            return False
        coded = False  # tied only by the output's names: a word of the error counts only when it is a code
        if not self.speaks_of(action, text):
            # Tied only by what the output named: the evidence of a report must be more than those names (a claim
            # "the column is now in accounts_user" names the failed migration's relation and reports nothing), and
            # more than a plain word the error shares with the claim ("bucket"): a code, a status, a question.
            shown = self.output_names(action, text)
            if not shown:
                # Or by the failure's own status: the HTTP status or the tool's error code of its error line, which
                # neither the query nor the call holds ("(HTTP 401)", "(HTTP 400)": v5-lb-th-token-expired,
                # v13-ob-sr-folder-delete-refused): the answer speaks of that failure in any language.
                return self._names_failure_code(action, text) or self._restates_failure_values(action, text)
            for name in shown:
                text = text.replace(name, " ")
            coded = True
        words = frozenset(_TEXT_WORD.findall(text.lower()))
        query = self.user_given
        command = action.text.lower()
        if text.rstrip().endswith(("?", "？", "؟")):
            return True
        # Only the failure's part of the receipt is evidence: the names and counts of what went through beside it
        # are what a claim of the whole repeats (judge.facts.effects.failure_part).
        shown_failure = self._failure_part(action)
        error = shown_failure.lower()
        codes = {str(receipt.exit_code)} if receipt.exit_code else set()
        codes |= set(_STATUS_CODE.findall(action.error_line))
        codes |= set(_ERROR_CODE.findall(action.error_line))  # the tool's own error code ("code 91403")
        if any(code in words and code not in query and (len(code) >= 2 or _stated_code(text, code)) for code in codes):
            return True
        if self._restates_failure_values(action, text):
            return True
        quoted = {q.lower() for m in _QUOTED.finditer(text) for q in m.groups() if q and len(q) >= 4}
        if any(q in error and q not in command for q in quoted):
            return True
        if coded:  # only identifiers of the error text: a code (E0425) or a name in code case (TileService)
            error = " ".join(w for w in _TEXT_WORD.findall(shown_failure)
                             if _CODE_LIKE.search(w)).lower()
        found = [w for w in _TEXT_WORD.findall(error) if not w.isdigit() and len(w) >= 5 and w in words
                 and w not in command and w not in query]
        if found and action.status == "partial":
            # A partial run's failed item is named like the items that went through (edge-r2 beside edge-r1 and
            # edge-r3): a claim of the whole names it too, so only the failure's other words are evidence (Z24:
            # v9-net-es-ansible-one-host-failed).
            through = receipt.content[:2000].lower()
            for line in shown_failure.lower().splitlines():
                through = through.replace(line, " ")
            kinds = {_DIGITS.sub("#", t) for t in _TEXT_WORD.findall(through) if _DIGITS.search(t)}
            found = [w for w in found if _DIGITS.sub("#", w) not in kinds]
        return bool(found)

    def _names_failure_code(self, action: Action, text: str) -> bool:
        """Whether ``text`` names a status or error code of ``action``'s error line (3+ digits; not an exit code),
        one that neither the user nor any call gave (v10-mob-sv-origin-version-code: a typed value is no code)."""
        line = action.error_line
        if not line or not any(c.isdigit() for c in text):
            return False
        codes = set(_STATUS_CODE.findall(line)) | set(_ERROR_CODE.findall(line))
        if not codes:
            return False
        words = frozenset(_TEXT_WORD.findall(text.lower()))
        named = {code for code in codes if len(code) >= 3 and code in words and code not in self.user_given}
        # A value some call typed ("versionCode 411" edited in, then "Version code 411 has already been used") is
        # the answer's claim of that value, not the failure's code.
        return bool(named) and not any(code in a.text for a in self.actions for code in named)

    def _restates_failure_values(self, action: Action, text: str) -> bool:
        """Whether ``text`` restates every value of the failed ``action``'s error line that no call and no
        user gave (its figures: "(0 of 5)", a date "expired 2026-11-30", "rows 10-14"), two of them or one of 3+
        characters: in any language, only a report of that failure holds them (v16-rx-mn-no-refills-reported,
        v16-pm-eu-vendor-insurance-reported, v15-et-zh-report-list-with-failure). Not for a partial run: a claim of
        the whole repeats the figures of what went through."""
        line = action.error_line
        if action.status != "failed" or not line or not any(c.isdigit() for c in text) \
                or not any(c.isdigit() for c in line):
            return False
        # The figures are the action's (once per action: every sentence of every claim asks about each failure).
        memo: dict[int, tuple[re.Pattern[str], ...]] = self.analysis.cache.setdefault("ledger:failure_figures", {})
        values = memo.get(action.order)
        if values is None:
            given = self.user_given
            # A value some call typed ("versionCode 311" edited in, then "Version code 311 has already been used") is
            # the claim's value, not the failure's figure.
            figures = {v: re.compile(rf"(?<![\d.]){re.escape(v)}(?!\d)") for v in _FIGURE.findall(line)}
            kept = {v: figure for v, figure in figures.items() if not figure.search(given)
                    and not any(figure.search(a.text) for a in self.actions)}
            values = memo[action.order] = tuple(kept.values()) \
                if kept and (len(kept) >= 2 or max(len(v) for v in kept) >= 3) else ()
        if not values:
            return False
        return all(figure.search(text) for figure in values)

    def _failure_part(self, action: Action) -> str:
        """The error line and the failure's part of the first 2,000 characters of ``action``'s receipt (once per
        action: every report of every claim asks)."""
        parts: dict[int, str] = self.analysis.cache.setdefault("ledger:failure_part", {})
        found = parts.get(action.order)
        if found is None:
            content = action.receipt.content[:2000] if action.receipt is not None else ""
            patterns = self.analysis.patterns
            found = parts[action.order] = failure_part(
                content, action.error_line, patterns.effect_keys,
                lambda line: patterns.prior_failure.search(line) is not None or patterns.error.search(line) is not None
                or patterns.failure_count.search(line) is not None,
                lambda line: zero_tally(line, patterns.failure_nouns, patterns.failure_statuses))
            if found is content:
                found = parts[action.order] = f"{action.error_line}\n{content}"
        return found

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


class _RecoveryIndex:
    """What :meth:`Ledger.recovery` looks up for every failure, found once per analysis, so that judging n failures
    costs about n lookups, not n scans of the trajectory (tests/adversarial/test_rules_scale.py)."""

    def __init__(self, an: Analysis) -> None:
        config = an.config
        successes = [a for a in an.actions if a.outcome == "ok" and a.status != "noop" and not a.is_plan]
        self.by_intent: dict[str, list[Action]] = {}
        self.by_path: dict[str, list[Action]] = {}
        self.writers: dict[str, list[Action]] = {}
        self.by_program: dict[tuple[str, str], list[Action]] = {}
        for a in successes:
            self.by_intent.setdefault(a.intent, []).append(a)
            if a.program:
                self.by_program.setdefault((a.name, a.program), []).append(a)
            self.by_path.setdefault(call_path(a, config), []).append(a)
            if not a.read_only:
                for path in a.writes:
                    self.writers.setdefault(path, []).append(a)
        # The successes that may change state: when the first after a call was seen (suffix minima), what they show.
        self.changes = [a for a in successes if not a.read_only]
        self.change_orders = [a.order for a in self.changes]
        self.first_seen = [a.visible_at for a in self.changes] + [1 << 30]
        for k in range(len(self.changes) - 1, -1, -1):
            self.first_seen[k] = min(self.first_seen[k], self.first_seen[k + 1])
        self.failed_keys: dict[str, list[int]] = {}
        for a in an.actions:
            if a.failed:
                self.failed_keys.setdefault(a.key, []).append(a.order)
        # The last failed call (in call order) seen before a message: failures by when they were seen, and the
        # latest of each prefix.
        failures = sorted((a for a in an.actions if a.failed), key=lambda a: a.visible_at)
        self.failure_seen = [a.visible_at for a in failures]
        self.latest: list[Action] = []
        for a in failures:
            self.latest.append(a if not self.latest or a.order > self.latest[-1].order else self.latest[-1])
        # What each message says: reports (failure words, negated claims), and the assertions that claim a success.
        self.speech_at = {speech.message_index: speech for speech in an.speeches}
        self.signal_at: list[int] = []
        self.resolution_at: list[int] = []
        self.check_claim_at: list[int] = []
        self.bare_claim_at: list[int] = []
        self.claim_values: dict[str, list[int]] = {}
        values_of: dict[str, set[str]] = {}  # a sentence repeated in several messages is read once
        claim_values = self.claim_values
        for speech in an.speeches:
            at = speech.message_index
            if speech.speaks_of_failure or any(_negated(s, an.patterns) for s in speech.sentences):
                self.signal_at.append(at)
            for sentence in speech.sentences:
                if not sentence.asserts or sentence.item:
                    continue  # (a list item claims by structure: the claim detectors hold it to its receipts)
                values = values_of.get(sentence.text)
                if values is None:
                    values = values_of[sentence.text] = set(sentence.tokens) | value_tokens(sentence.text)
                for kind, where in ((sentence.resolution, self.resolution_at), (sentence.is_check_claim, self.check_claim_at),
                                    (not values, self.bare_claim_at)):
                    if kind and (not where or where[-1] != at):
                        where.append(at)
                for value in values:
                    places = claim_values.get(value)  # (no empty list made for a value already seen)
                    if places is None:
                        claim_values[value] = [at]
                    elif places[-1] != at:
                        places.append(at)
        self.signals = frozenset(self.signal_at)
        self.final_speech = an.speeches[-1] if an.speeches else None
        self._trajectory = an.trajectory

    @cached_property
    def given(self) -> str:
        """What the user gave (the query, user and system messages), lowered: a value from there is no evidence.
        Joined when first asked (a typo's retry is looked for only among later successes of the same program)."""
        trajectory = self._trajectory
        return "\n".join([trajectory.query or "", *(m.content or "" for m in trajectory.messages
                                                     if m.role in ("user", "system"))]).lower()

    @staticmethod
    def first(actions: Sequence[Action], order: int, before: int, passes: Callable[[Action], bool],
              within: int | None = None) -> Action | None:
        """The first action of an ordered list made after call ``order``, seen before message ``before``, that
        ``passes``; with ``within``, only among the next ``within`` actions of the list (a test that rarely passes
        would otherwise read every later action for every failure: quadratic in a long trajectory)."""
        start = bisect.bisect_right(actions, order, key=lambda a: a.order)
        end = len(actions) if within is None else min(len(actions), start + within)
        for k in range(start, end):
            if actions[k].visible_at < before and passes(actions[k]):
                return actions[k]
        return None

    @staticmethod
    def after_order(orders: Sequence[int], order: int) -> bool:
        """Whether an ordered list of call orders holds one after ``order``."""
        return bool(orders) and orders[-1] > order

    @staticmethod
    def between(places: list[int], low: int, high: int) -> int | None:
        """The first message index of an ordered list in (low, high), or None."""
        k = bisect.bisect_right(places, low)
        return places[k] if k < len(places) and places[k] < high else None

    def first_change_seen(self, order: int) -> int:
        """When the first state-changing success made after call ``order`` was seen (``1 << 30``: never)."""
        return self.first_seen[bisect.bisect_right(self.change_orders, order)]

    def shown_after(self, name: str, order: int) -> bool:
        """Whether a state-changing success made after call ``order`` names or shows ``name``."""
        start = bisect.bisect_right(self.change_orders, order)
        return any(name in a.text or (a.receipt is not None and name in a.receipt.content) for a in self.changes[start:])

    def shown_before(self, name: str, order: int) -> bool:
        """Whether a state-changing success made before call ``order`` names or shows ``name`` (a claim naming it,
        "table tblX created", speaks of that success, not of the failure that named it too)."""
        end = bisect.bisect_left(self.change_orders, order)
        return any(name in a.text or (a.receipt is not None and name in a.receipt.content) for a in self.changes[:end])

    def last_failure_before(self, index: int) -> Action | None:
        """The last failed call (in call order) whose receipt was seen before message ``index``."""
        k = bisect.bisect_left(self.failure_seen, index)
        return self.latest[k - 1] if k else None


def call_path(action: Action, config: RulesConfig) -> str:
    """What a call does, finer than its intent: a shell command's words before its first flag (``lark-cli base
    record create``), else the tool name and its argument names. A retry with other values keeps it."""
    call = action.call
    if call is None:
        return action.name
    command = action.command
    if command is not None:
        return f"{action.name}:{_leading_words(command)}"
    keys = sorted(call.arguments) if isinstance(call.arguments, dict) else []
    return f"{action.name}:{','.join(keys)}"


_WAIT_PREFIX = re.compile(r"^sleep\s+[\d.]+[smhd]?\s*(?:;|&&)\s*")


@lru_cache(maxsize=4096)
def _leading_words(command: str) -> str:
    """A command's words before its first flag, value or operator (at most four); memoised: commands repeat. A wait
    before it (``sleep 60; ci pipeline status 9120``) is no part of what it does: a poll after a wait is the same
    call as the poll before it (v13-ci-ta-pipeline-polled)."""
    words: list[str] = []
    if command.startswith("sleep "):
        command = _WAIT_PREFIX.sub("", command, count=1)
    for word in command.split():
        if word.startswith("-") or "=" in word or word in ("&&", "|", ";") or len(words) == 4:
            break
        words.append(word)
    return " ".join(words)


# A retry by another spelling or of a guessed record is among the next successes of the same program: only these are
# read (a failed call with no such retry would otherwise read every later success of its program).
_RETRY_WINDOW = 3


def _respelled(failed: str, later: str, known: Callable[[], str]) -> bool:
    """Whether command ``later`` is ``failed`` with one word respelled (a typo fixed: ``pip install reqeusts`` ->
    ``pip install requests``): the same words but one, a close spelling of the old one that ``known()`` (the query,
    the failed receipt's "did you mean"; made only when one word differs) names."""
    old_words, new_words = failed.split(), later.split()
    if len(old_words) != len(new_words):
        return False
    changed = [(a, b) for a, b in zip(old_words, new_words) if a != b]
    if len(changed) != 1:
        return False
    old, new = changed[0]
    return (len(new) >= 4 and new.lower() in known().lower()
            and difflib.SequenceMatcher(None, old.lower(), new.lower()).ratio() >= 0.75)


# Words of a text in any script (for ties by value: a name, a code, a word of an error line), and HTTP statuses and
# quoted fragments (`...`, "...", '...', «...», „...“) of an error report.
_REMOTE_PARTS = re.compile(r"[@:]")  # user@host:path, the parts of a remote operand (scp, rsync, git remotes)
_ERROR_CODE = re.compile(r"(?<![\w.-])\d{4,}(?![\w.])")
_DIGITS = re.compile(r"\d+")
_FIGURE = re.compile(r"(?<![\w.])\d+(?:[.:/-]\d+)*(?![\w.-]?\w)")  # a number, a date, a range (10-14), a time
_TEXT_WORD = re.compile(r"[^\W_][\w.:/-]*[^\W_]|\d+")
_CODE_LIKE = re.compile(r"\d|[a-z][A-Z]|_")  # a digit, an inner capital or an underscore: a code or identifier
_STATUS_CODE = re.compile(r"(?<!\d)([1-5]\d\d)(?!\d)")
_QUOTED = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"|«([^»\n]+)»|„([^“\n]+)“")


# Clause breaks for reading a negation: the analysis's, and commas ("Schema checked, no errors" negates the errors).
_NEGATION_CLAUSE = re.compile(r"\s[—–]\s|\s--?\s|[;,:]\s|[；؛，、：]")


def _negated(sentence: Sentence, patterns: CompiledPatterns) -> bool:
    """Whether a claim sentence says the work was NOT done: hedged, no promise, and every clause that claims is
    negated (or reports a no-op): "the orders were not added", not "schema checked, no errors"."""
    if not sentence.hedged or sentence.future:
        return False
    claiming = [c for c in _NEGATION_CLAUSE.split(sentence.text) if patterns.claim.search(c)]
    return all(patterns.hedge.search(c) or patterns.noop.search(c) for c in claiming)


# The name a call gives what it makes: ``--name X`` / ``--title=X`` on a command line, ``"name": "X"`` in JSON.
_MADE_NAME = re.compile(r"--(?:name|title)[= ](?:\"([^\"]+)\"|'([^']+)'|([^\s'\"]+))|\"(?:name|title)\"\s*:\s*\"([^\"]+)\"")


def _made_names(action: Action, config: RulesConfig) -> frozenset[str]:
    """The names a call gives what it makes (see :data:`_MADE_NAME`), from its command line or its arguments."""
    command = action.command
    text = command if command is not None else action.text
    if "name" not in text and "title" not in text:
        return _NO_NAMES  # every form of _MADE_NAME holds one of these words (most calls name nothing)
    return frozenset(next(g for g in m.groups() if g) for m in _MADE_NAME.finditer(text))


_NO_NAMES: frozenset[str] = frozenset()


def _downloads(action: Action, artifact: str) -> bool:
    """Whether a call names ``artifact`` only in HTTP downloads (``curl -fsSL -o designs.zip https://files/att_88.zip
    && ls -l designs.zip``: a GET that writes a local file): it reads the remote, it changes only its own output
    (Z19: a read-back of ``att_88`` before it stays current)."""
    if action.command is None or not action.writes or artifact not in action.command:
        return False
    naming = [segment.text for segment in read_command(action.command).segments if artifact in segment.text]
    return bool(naming) and all((head := words_of(text)[:1]) and head[0].rsplit("/", 1)[-1] in HTTP_CLIENTS
                                and not sends_request(text) for text in naming)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


_ID_SUFFIXES = ("_id", "_name", "id", "name", "_key", "key")
_CAMEL_HUMP = re.compile(r"([a-z])([A-Z])")  # fieldId -> field_Id


def _argument_objects(action: Action, flags: frozenset[str], actions: frozenset[str]) -> tuple[ObjectKey, ...]:
    """The remote objects a tool call of its own names (no command line): its arguments keyed by an object word,
    bare or with an id / name suffix (``table_id``, ``fieldId``, ``webhook``), and the URLs its values hold."""
    if action.writes or action.call is None or not isinstance(action.call.arguments, dict):
        return ()  # (a file-writing tool names its file, a file artifact already)
    arguments = action.call.arguments
    pairs: list[tuple[str, str]] = []
    keys: list[ObjectKey] = []
    for key, value in arguments.items():
        if not isinstance(value, str) or not value or len(value) > 300 or value in action.writes:
            continue  # (a file the call writes is a file artifact already)
        word = _CAMEL_HUMP.sub(r"\1_\2", str(key)).lower().replace("-", "_")
        for suffix in _ID_SUFFIXES:
            if word.endswith(suffix) and word != suffix:
                word = word[: -len(suffix)].rstrip("_")
                break
        if word.replace("_", "-") in flags or word in flags:
            pairs.append((word, value))
        elif value.startswith(("http://", "https://")) and (found := url_key(value.split()[0], actions)) is not None:
            keys.append(found)
    if pairs:
        keys.insert(0, ("/".join(v for _, v in pairs), frozenset(pairs)))
    return tuple(keys)


def _written_before_last(action: Action, path: str) -> bool:
    """Whether a command line writes ``path`` in a segment before its last one (``cp a b && pytest``): what the
    last segment (the check) ran on is that write."""
    if path not in action.writes or action.command is None:
        return False
    return any(path in segment.text for segment in read_command(action.command).segments[:-1])


_WORD = re.compile(r"""[^\s"'\\=]+""")


def _names_folder_of(text: str, path: str) -> bool:
    """Whether a command names a folder that holds ``path`` (``ruff check scripts/``, ``pytest .``): what it ran
    on includes the file."""
    if "/" not in path and "." not in text:
        return False
    relative = path.removeprefix("./")
    for word in _WORD.findall(text):
        folder = word.removeprefix("./")
        if folder in ("", ".", "/") and word in (".", "./"):
            return True
        if folder and not folder.startswith("-") and "." not in folder.rsplit("/", 1)[-1] \
                and relative.startswith(folder.rstrip("/") + "/"):
            return True
    return False


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


def _stated_code(text: str, code: str) -> bool:
    """Whether a one-digit ``code`` stands in ``text`` as a word that is not a list's number ("1. Read the ids"):
    a numbered summary is no report of an exit code."""
    return any(text[:m.start()].rsplit("\n", 1)[-1].strip(" \t*-#>") for m in re.finditer(rf"(?<!\w){code}(?!\w)", text))


_DIGIT = re.compile(r"\d")
_VERSION = re.compile(r"(?<![\w.])v?(\d+\.\d+\.\d+)(?![\w.]*\w)")  # 2.4.1, v2.4.0: not an IP (four parts)
_ENTRY_CHARS = 8000
_HOST = re.compile(r"://([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")  # the host a URL reaches


def _versions(text: str) -> set[str]:
    """The dotted versions of a text (``v2.4.0`` -> ``2.4.0``), gated by a cheap test for a dot between digits."""
    return set(_VERSION.findall(text)) if text and "." in text and _DOT_BETWEEN_DIGITS.search(text) else set()


_DOT_BETWEEN_DIGITS = re.compile(r"\d\.\d")  # what every version holds; a digit-led scan, ~4x faster than _VERSION's


def _entry(content: str, token: str) -> str:
    """The entry of a listing that holds ``token``: the innermost JSON object around it, else its line."""
    at = content.find(token)
    if at < 0:
        return ""
    start, end = content.rfind("{", 0, at), content.find("}", at)
    if start >= 0 and end >= 0 and "}" not in content[start:at] and "{" not in content[at:end]:
        return content[start:end + 1]
    return content[content.rfind("\n", 0, at) + 1:content.find("\n", at) if "\n" in content[at:] else len(content)]
