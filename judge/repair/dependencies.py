"""The four dependency kinds the offline editor checks before deleting a failed call (reference design, "Offline"),
read from the fact ledger (:mod:`judge.facts`), which is built once per trajectory and shared with the judges.

- resource state: did the call create or modify anything? (read-only, or rejected before it ran; never when the
  ledger's status is ``partial``: its receipt shows effects)
- returned values: are values its receipt showed first (the ledger's values, with their first occurrence and
  later uses) used later, before another receipt shows them?
- control conditions: did later decisions branch on the failure? A plain retry (the same call path) does not
  block (after the edit it is simply the first attempt); a different state-changing action chosen *because* of
  the failure does.
- textual context: does later text refer to the failure, in any wording or language? Tied to it by turn (the
  recovery window), by values and resource (what the call named or its receipt showed), or by the failure
  vocabularies; read by the paraphrase-aware embedding detector. Such sentences are cut; one too long to cut
  safely is flagged.

Each check returns :class:`Dependency` rows with a status: ``none`` (no dependency), ``resolved`` (the edit
handles it), ``blocking`` (needs real execution: back to online) or ``unknown`` (goes to pending).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel

from judge.facts import Action, Ledger, ledger_of
from judge.facts.ledger import call_path
from judge.facts.values import names_in
from judge.model import Receipt, Trajectory
from judge.repair.calls import (
    CallSite,
    call_sites,
    message_text,
    missing_input_file,
    receipt_failed,
    side_effect_free,
    stopped_before_effect,
)
from judge.repair.textref import (
    Detectors,
    Sentence,
    clauses,
    split_sentences,
)

DependencyKind = Literal["resource-state", "returned-values", "control", "textual"]
DependencyStatus = Literal["none", "resolved", "blocking", "unknown"]

# A sentence longer than this may carry more than the failure: it is flagged rather than cut.
MAX_CUT_WORDS = 40
MAX_CUT_CJK_CHARS = 60
# With no retry, the recovery window spans this many assistant turns after the failure.
RECOVERY_TURNS = 2


class Dependency(BaseModel):
    """One finding of a dependency check."""

    kind: DependencyKind
    status: DependencyStatus
    call_id: str | None = None
    turn: int | None = None
    detail: str
    evidence: str = ""


TextField = Literal["content", "reasoning"]  # the assistant message fields a sentence edit cuts from


class SentenceEdit(BaseModel):
    """A sentence that existed only because of the deleted failure: removed, or flagged for a person."""

    message_index: int
    turn: int | None
    field: TextField
    start: int
    end: int
    text: str
    margin: float
    action: Literal["removed", "flagged"]
    why: str


def resource_state(site: CallSite, trajectory: Trajectory | None = None) -> Dependency:
    """Did the call create or modify anything? Only side-effect-free calls may be deleted offline; with the
    trajectory, a failed call whose receipt shows effects (the ledger's ``partial``) is never one."""
    ok, why = side_effect_free(site, trajectory)
    if site.receipt is None:
        return Dependency(kind="resource-state", status="unknown", call_id=site.call.id, turn=site.turn, detail=why)
    return Dependency(
        kind="resource-state", status="none" if ok else "blocking", call_id=site.call.id, turn=site.turn, detail=why
    )


def returned_values(trajectory: Trajectory, site: CallSite) -> list[Dependency]:
    """Values that only the deleted receipt showed and that later messages use: the fact ledger's values whose
    first occurrence is this receipt, used in arguments or text before another receipt shows them."""
    facts = ledger_of(trajectory)
    action = facts.action_for(site.call.id)
    if action is None or action.receipt is None:
        return []
    found: list[Dependency] = []
    for value, uses in sorted(facts.returned_by(action), key=lambda pair: pair[0].token):
        # An option name a usage error lists (``--json-output``) is the program's interface, not a value of the
        # world, as in :func:`quoted_uses`: the next call that uses it is the corrected retry.
        if not uses or option_name(value.token):
            continue
        turn = uses[0].turn
        found.append(Dependency(
            kind="returned-values", status="blocking", call_id=site.call.id, turn=turn,
            detail=f"T{turn} uses {value.token!r}, which only the deleted receipt returned", evidence=value.token,
        ))
    known = {d.evidence for d in found}
    for quoted, index in quoted_uses(trajectory, site):
        if quoted in known:
            continue
        used_at = trajectory.messages[index].turn
        found.append(Dependency(
            kind="returned-values", status="blocking", call_id=site.call.id, turn=used_at,
            detail=f"T{used_at} uses {quoted!r}, which only the deleted receipt quoted", evidence=quoted,
        ))
    return found


_OPTION = re.compile(r"--?[A-Za-z][\w-]*")


def option_name(token: str) -> bool:
    """Whether a value token is a program's option name (``--json-output``, ``-n``; not ``-100123``, a negative
    id) (pure): the program's interface, which a usage error lists and the corrected retry uses, not a value a
    receipt returned from the world."""
    return _OPTION.fullmatch(token) is not None


# A value a receipt quotes: between quotes, guillemets or corner brackets ('締切日', "build", «Cliente»).
_QUOTED_VALUE = re.compile(r"'([^'\n]{1,60})'|\"([^\"\n]{1,60})\"|`([^`\n]{1,60})`|«([^»\n]{1,60})»|「([^」\n]{1,60})」")


def quoted_uses(trajectory: Trajectory, site: CallSite) -> list[tuple[str, int]]:
    """Values the receipt of ``site`` quotes or offers in a list of alternatives that a later message then uses
    before anything else showed them, with the index of that first use: a hint of the error ("did you mean '締切日'?",
    "options: Nový, Dokončeno", "available: 1.6.4, 1.7.0") taken over by the next call or text.
    Read by the value flow, in any language: a quoted value counts when the call did not send it itself, the query
    and the user did not give it, no other receipt before the use showed it, and a later call's arguments or an
    assistant text hold it. The ledger's values need an id's shape; a field or script name need not have one."""
    receipt = site.receipt
    if receipt is None or site.receipt_index is None:
        return []
    # Pure in the trajectory and the call: the editor's returned-values check and the dependency validator ask for
    # the same call's, once per trajectory.
    memo: dict[tuple[str, int], list[tuple[str, int]]] = (
        ledger_of(trajectory).analysis.cache.setdefault("repair:quoted-uses", {}))
    key = (site.call.id, site.receipt_index)
    if key not in memo:
        memo[key] = _quoted_uses(trajectory, site, receipt, site.receipt_index)
    return list(memo[key])


def _quoted_uses(trajectory: Trajectory, site: CallSite, receipt: Receipt, receipt_index: int) -> list[tuple[str, int]]:
    own = site.call.argument_text()
    given = trajectory.query + "\n" + "\n".join(m.content or "" for m in trajectory.messages if m.role in ("system", "user"))
    found: list[tuple[str, int]] = []
    content = (receipt.content or "")[:4000]
    sent = text_tokens(own)
    offered = _offered_values(content)
    for value in offered:
        # One value (a field, script or id), not a command line or a flag the error suggests running.
        if (len(value) < (1 if _UNSPACED.search(value) else 3) or any(c.isspace() for c in value)
                or value.startswith("-") or value in own or value in given or value in {v for v, _ in found}):
            continue
        # The respelling of a word the call sent ("relase" -> "release" of "expected: debug, release") is the
        # call's own value corrected, as a respelt retry is: the agent did not need the receipt for it. Not an id or
        # number: "recHd72" for "recHd27" is another record, which only the receipt named.
        # Unless the receipt offers two or more twins of that word ("VIP" -> "VIP-A, VIP-B"): which one to take,
        # only the receipt said.
        if not any(c.isdigit() for c in value) and any(
                _twins(value, word) and len({other.lower() for other in offered if other.lower() != word.lower()
                                             and _twins(other, word)}) < 2 for word in sent):
            continue
        for index in range(receipt_index + 1, len(trajectory.messages)):
            message = trajectory.messages[index]
            if message.role == "tool":
                if value in (message.content or ""):
                    break  # another receipt showed it first: the use rests on that one
                continue
            if message.role != "assistant":
                continue
            # A decision: a call's arguments or the text that leads to one. The final answer's values are its
            # support, checked as such (``unsupported-final``).
            if not message.tool_calls and not any(m.role == "tool" for m in trajectory.messages[index + 1:]):
                continue
            used = message_text(message) + "\n" + "\n".join(c.argument_text() for c in message.tool_calls)
            if value in used:
                found.append((value, index))
                break
    return found


_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def _twins(value: str, word: str) -> bool:
    """Whether ``value`` is a respelling of ``word`` (pure): near twins, case aside."""
    return difflib.SequenceMatcher(a=value.lower(), b=word.lower()).ratio() >= _TWIN_RATIO

# A list of alternatives a receipt offers after a colon or an opening parenthesis and ending the line, clause or
# bracket ("(options: Nový, Rozpracováno, Dokončeno)", "available: 1.6.4, 1.7.0"): two or more single tokens
# separated by commas. Quotes, brackets and colons end an item, so JSON ("a": 1, "b": 2) never reads as one.
_LISTED = re.compile(r"(?:^|[:(])[ \t]*([^\s,;:()\[\]{}\"'`]+(?:[ \t]*,[ \t]*[^\s,;:()\[\]{}\"'`]+)+)[ \t]*(?=[).;\]]|$)",
                     re.MULTILINE)


def _offered_values(content: str) -> list[str]:
    """The values a receipt offers (pure): each one it quotes ('締切日', "build", «Cliente»; not a key of its
    data, ``"code": ...``) and each item of a list of alternatives it prints (:data:`_LISTED`), in order."""
    found: list[tuple[int, str]] = []
    for match in _QUOTED_VALUE.finditer(content):
        if content[match.end():match.end() + 2].lstrip().startswith(":"):
            continue  # a key of the answer's data ("code": ...), not a value
        found.append((match.start(), next(g for g in match.groups() if g is not None).strip()))
    for match in _LISTED.finditer(content):
        found.extend((match.start(1), item.strip().rstrip(".")) for item in match.group(1).split(","))
    return [value for _, value in sorted(found, key=lambda pair: pair[0])]


def _action(trajectory: Trajectory, site: CallSite) -> Action:
    action = ledger_of(trajectory).action_for(site.call.id)
    assert action is not None, f"call {site.call.id} is not in the ledger of {trajectory.id}"
    return action


def is_retry(facts: Ledger, failed: Action, later: Action) -> bool:
    """Whether ``later`` repeats ``failed`` with adjusted arguments: the same call path (a shell command's words
    before its first flag, else the tool and its argument names), and not a request for help."""
    if failed.name != later.name or call_path(failed, facts.analysis.config) != call_path(later, facts.analysis.config):
        return False
    return not {"--help", "-h", "help"} & set(later.text.replace('"', " ").split())


def corrected_retry(facts: Ledger, failed: Action, later: Action) -> bool:
    """Whether ``later`` runs the same program step as ``failed`` (the same tool and the first two words of its call
    path: ``npm run``, ``git push``, ``pip install``) with other arguments: the correction of a call its program
    refused to start."""
    if failed.name != later.name:
        return False
    config = facts.analysis.config
    paths = [call_path(action, config).split(":", 1)[-1].split() for action in (failed, later)]
    if not paths[0] or not paths[1]:
        return False
    if paths[0][:2] == paths[1][:2]:
        return True
    # The same program with the refused word respelt ("npm run tests" -> "npm test"): every word of the later path
    # is a word of the failed one or a near twin of one.
    return paths[0][0] == paths[1][0] and all(
        any(word == old or difflib.SequenceMatcher(a=word, b=old).ratio() >= _TWIN_RATIO for old in paths[0][1:])
        for word in paths[1][1:])


# Two spellings of one word ("test" / "tests", "build" / "biuld") are at least this similar.
_TWIN_RATIO = 0.75


def recovery_window(trajectory: Trajectory, site: CallSite, span: int = RECOVERY_TURNS) -> range:
    """Message indices from the failed receipt to the first retry of the call (inclusive), else ``span`` turns.

    Text in this window is where an agent talks about the failure it is recovering from: the turn tie of a
    reference to it.
    """
    facts = ledger_of(trajectory)
    failed = _action(trajectory, site)
    start = (site.receipt_index if site.receipt_index is not None else site.message_index) + 1
    retry = next((a for a in facts.actions if a.call is not None and a.message_index > failed.message_index
                  and is_retry(facts, failed, a)), None)
    if retry is not None:
        return range(start, retry.message_index + 1)
    assistants = [i for i in range(start, len(trajectory.messages)) if trajectory.messages[i].role == "assistant"][:span]
    return range(start, (assistants[-1] + 1) if assistants else start)


def tie_names(trajectory: Trajectory, sites: Iterable[CallSite]) -> frozenset[str]:
    """The values and resources that tie later text to these calls (the ledger's :meth:`~judge.facts.Ledger.names_of`
    of each), less what the query already names (the task's own objects tie text to no failure)."""
    facts = ledger_of(trajectory)
    names: set[str] = set()
    for site in sites:
        action = facts.action_for(site.call.id)
        if action is not None:
            names |= facts.names_of(action)
    return frozenset(names - names_in(trajectory.query))


_QUOTE_WORDS = 3  # a run of this many words a receipt printed is a quote of its output, not the agent's words


def unquoted(text: str, receipts: Iterable[str]) -> str:
    """``text`` without the runs of ``_QUOTE_WORDS`` or more words that one of ``receipts`` printed verbatim: the
    agent quoting output ("a1b2c3d (retry on 502)", a commit subject) says nothing of its own failure, so the
    failure-reference embedding reads only the agent's words."""
    words = text.split()
    shown = [r for r in receipts if r]
    # One text to search: a run of words holds no line break, so it is in the joined receipts iff in one of them.
    printed = "\n".join(shown)
    keep = [True] * len(words)
    start = 0
    while start < len(words):
        end = start
        while end < len(words) and shown and " ".join(words[start:end + 1]).strip("()[]\"'.,;:") in printed:
            end += 1
        if end - start >= _QUOTE_WORDS:
            keep[start:end] = [False] * (end - start)
            start = end
        else:
            start += 1
    return " ".join(w for w, k in zip(words, keep) if k) or text


def kept_receipts_after(trajectory: Trajectory, deleted: set[str], after: int) -> list[str]:
    """The receipt texts of the calls after message ``after`` that the edit keeps."""
    return [s.receipt.content for s in call_sites(trajectory)
            if s.call.id not in deleted and s.message_index > after and s.receipt is not None and s.receipt.content]


def status_cells(trajectory: Trajectory, deleted: set[str], after: int) -> frozenset[str]:
    """Words the kept successful receipts after message ``after`` print as a listing's status column (the last cell
    of two or more rows: ``daily_sales scheduled__2026-11-29 failed``), lower-cased: data a later sentence repeats
    ("29.11 failed") when it reports the listing, not the agent's words about a failure of its own."""
    cells: set[str] = set()
    for site in call_sites(trajectory):
        if site.call.id in deleted or site.message_index <= after or site.receipt is None or site.failed:
            continue
        content = site.receipt.content or ""
        rows = [line.split() for line in content.splitlines()]
        last = [row[-1].lower() for row in rows if len(row) >= 2 and row[-1].isalpha()]
        if len(last) >= 2:
            cells.update(last)
        # The cells of a table it printed (tab or column aligned: "recFo1  Rossi srl"): its rows' data.
        table = [_TABLE_CELLS.split(line.strip()) for line in content.splitlines()]
        if sum(len(row) >= 2 for row in table) >= 2:
            cells.update(word.lower() for row in table if len(row) >= 2 for cell in row for word in cell.split())
        # The values it returned (ids, names): a sentence that repeats them quotes the receipt.
        cells.update(name.lower() for name in names_in(content[:4000]))
    return frozenset(cells)


def own_words(text: str, receipts: Iterable[str], cells: frozenset[str]) -> str:
    """The agent's own words in ``text``: without what a receipt printed verbatim (:func:`unquoted`) and without
    the status cells of a kept listing (:func:`status_cells`) it repeats."""
    text = unquoted(text, receipts)
    if not cells:
        return text
    kept = [w for w in text.split() if w.strip(_CELL_EDGE).lower() not in cells]
    return " ".join(kept) or text


_TABLE_CELLS = re.compile(r"\t+|\s{2,}")
_CELL_EDGE = ".,;:!?()[]{}\"'`"


_TOKEN = re.compile(r"[^\W_](?:[\w.\-/:@]*[^\W_])?")
_TOKEN_PARTS = re.compile(r"[.\-/:@_]+")


def value_words(text: str) -> frozenset[str]:
    """The words and values of ``text``, lower-cased, in any script: each run of letters and digits joined by
    ``. - / : @ _`` (``10.0.0.9``, ``xe-0/0/3``, ``recHd27``) and its parts (``shop``, ``logg``), three characters
    or more (shorter pieces are function words that collide across languages)."""
    tokens = set(_TOKEN.findall(text.lower()))
    found = set(tokens)
    for token in tokens:
        if not token.isalnum():  # joined parts (an alphanumeric token is its only part)
            found.update(_TOKEN_PARTS.split(token))
    return frozenset(w for w in found if len(w) >= 3)


def _is_value(word: str) -> bool:
    """Whether a receipt's word (as printed) is a value: an id, number, address or a name in mixed or upper case
    (``recHd27``, ``10.0.0.9``, ``AppStore``, ``ARCHIVE``), not a common word."""
    if word.isascii():  # most words: the same test by two scans in C
        return bool(_ASCII_VALUE_CHAR.search(word) or _ASCII_UPPER.search(word, 1))
    return any(c.isdigit() for c in word) or bool(_TOKEN_PARTS.search(word)) or any(c.isupper() for c in word[1:])


_ASCII_VALUE_CHAR = re.compile(r"[0-9.\-/:@_]")  # an ASCII digit or a joiner of _TOKEN_PARTS
_ASCII_UPPER = re.compile(r"[A-Z]")


def receipt_values(text: str, *, cased: bool = False) -> frozenset[str]:
    """The values a receipt printed, whole (``com.example.pay.PayBridge``, ``4410923``, ``FAILED``): ids, numbers,
    addresses, names in mixed or upper case (:func:`_is_value`), never common words; lower-cased unless ``cased``
    (a copy of ``FAILED`` is a value, a path's ``build`` is not ``BUILD``)."""
    return frozenset(raw if cased else raw.lower() for raw in _TOKEN.findall(text) if _is_value(raw))


def text_tokens(text: str) -> frozenset[str]:
    """The whole tokens of ``text`` as written (``10.0.0.9``, ``com.example.pay.PayBridge``, ``FAILED``)."""
    return frozenset(_TOKEN.findall(text))


def retry_words(trajectory: Trajectory, deleted: set[str], first_removed: int) -> tuple[frozenset[str], frozenset[str], bool]:
    """What separates talk about a deleted failure from talk about its successful retry: the words only the
    deleted calls and their receipts had (the wrong id or typo, the error's words; less what the kept later calls
    and receipts and the query also say), the values the kept later calls and receipts show, and whether a kept
    later receipt itself reports a failure (a sentence repeating it speaks of that failure, not the deleted one).
    Memoized per trajectory and deleted set."""
    memo: dict[tuple[frozenset[str], int], tuple[frozenset[str], frozenset[str], bool]] = (
        ledger_of(trajectory).analysis.cache.setdefault("repair:retry-words", {}))
    key = (frozenset(deleted), first_removed)
    if key in memo:
        return memo[key]
    gone: set[str] = set()
    kept: set[str] = set(value_words(trajectory.query))
    values: set[str] = set()
    kept_failure = False
    calls = _CallWords(trajectory)
    for position, site in enumerate(call_sites(trajectory)):
        if site.call.id in deleted:
            gone |= calls.words(position, site)
        elif site.message_index > first_removed:
            kept |= calls.words(position, site)
            shown, failure = calls.values(position, site)
            values |= shown
            # A kept receipt that reports a failure, by its flags or as an error line of its output (a log it
            # read: "error: profile expired"): a sentence explaining that failure speaks of it, not of the deleted one.
            kept_failure = kept_failure or failure
    memo[key] = result = (frozenset(gone - kept), frozenset(values), kept_failure)
    return result


class _CallWords:
    """What :func:`retry_words` reads of each call (by its position in :func:`call_sites`), read once per trajectory
    (every deleted set asks again): the words of its arguments and receipt (:func:`value_words`), and the values they
    show (:func:`receipt_values`) with whether the receipt reports a failure (its flags, or an error line)."""

    def __init__(self, trajectory: Trajectory):
        analysis = ledger_of(trajectory).analysis
        self.error = analysis.config.patterns.error
        self._words: dict[int, frozenset[str]] = analysis.cache.setdefault("repair:call-words", {})
        self._values: dict[int, tuple[frozenset[str], bool]] = analysis.cache.setdefault("repair:call-values", {})

    @staticmethod
    def _texts(site: CallSite) -> tuple[str, str]:
        return site.call.argument_text(), (site.receipt.content or "")[:4000] if site.receipt is not None else ""

    def words(self, position: int, site: CallSite) -> frozenset[str]:
        found = self._words.get(position)
        if found is None:
            text, receipt = self._texts(site)
            found = self._words[position] = value_words(text) | value_words(receipt)
        return found

    def values(self, position: int, site: CallSite) -> tuple[frozenset[str], bool]:
        found = self._values.get(position)
        if found is None:
            text, receipt = self._texts(site)
            found = self._values[position] = (receipt_values(f"{text} {receipt}"), site.failed or bool(self.error.search(receipt)))
        return found


def _sentence_words(trajectory: Trajectory, sentence: str) -> tuple[frozenset[str], frozenset[str]]:
    """(:func:`value_words`, :func:`receipt_values`) of a sentence of ``trajectory``, memoized per trajectory: each
    failed call the editor is asked about reads the same later sentences."""
    memo: dict[str, tuple[frozenset[str], frozenset[str]]] = (
        ledger_of(trajectory).analysis.cache.setdefault("repair:sentence-words", {}))
    found = memo.get(sentence)
    if found is None:
        found = memo[sentence] = (value_words(sentence), receipt_values(sentence))
    return found


def names_gone_value(trajectory: Trajectory, sentence: str, deleted: set[str], first_removed: int) -> bool:
    """Whether ``sentence`` names a value only the deleted calls had (their wrong id or typo'd name as written in the
    call or its receipt: ``wateja_206``, ``v3.81``), in any language: a text naming it speaks of the failure."""
    return not receipt_values(unglued(sentence)).isdisjoint(retry_words(trajectory, deleted, first_removed)[0])


# Where a run of Latin letters or digits meets a script written without spaces (CJK, kana, Hangul): a particle or
# counter glued to an id ("TNT-00383으로", "VIP-Aに") is no part of it.
_GLUED = re.compile(r"(?<=[A-Za-z0-9])(?=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])"
                    r"|(?<=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])(?=[A-Za-z0-9])")


def unglued(text: str) -> str:
    """``text`` with a space where Latin letters or digits meet a script written without spaces, so a value glued to
    a particle reads as itself (pure)."""
    return _GLUED.sub(" ", text)


_COGNATE_RATIO = 0.85  # "procentowego" -> "procent" ~ "percent" (0.86); "recHd27" ~ "recHd72" never: ids are exact


def _names_cognate(words: frozenset[str], gone: frozenset[str]) -> bool:
    """Whether a word of a sentence begins with a near copy of a word only the deleted calls had, in another
    language or inflection (the abandoned ``percent`` as Polish ``procentowego``). Letters only, five or more:
    ids and numbers match exactly or not at all (the typo and its fix are near copies of each other)."""
    plain = [g for g in gone if len(g) >= 5 and g.isalpha()]
    if not plain:
        return False
    candidates = [word for word in words if len(word) >= 5 and word.isalpha() and word not in gone]
    for g in plain:
        # One matcher per gone word (what it learns of ``g`` is kept); quick_ratio() bounds ratio() from above, so
        # most pairs are ruled out by their letters alone.
        matcher = difflib.SequenceMatcher(None, "", g)
        for word in candidates:
            if len(word) < len(g):
                continue
            matcher.set_seq1(word[:len(g)])
            if matcher.quick_ratio() >= _COGNATE_RATIO and matcher.ratio() >= _COGNATE_RATIO:
                return True
    return False


def retry_residue(trajectory: Trajectory, sentence: str, deleted: set[str], first_removed: int, own: str) -> str | None:
    """What of ``sentence`` may still refer to the deleted failure once what it reports of the kept retry is set
    aside, in any language, or None when the whole sentence must be read.

    A sentence that names a value the kept later calls or receipts show and none that only the deleted calls had
    (their wrong id, typo or error words), and says nothing of a failure in its own words (``own``) unless a kept
    receipt itself reports one ("the build failed: the profile expired"), speaks of the retry. Its clauses that
    carry such a value are the report; the clauses left ("since the first attempt did not work") are returned for
    the failure-reference reader, "" when every clause reports the retry."""
    gone, values, kept_failure = retry_words(trajectory, deleted, first_removed)
    words = _sentence_words(trajectory, sentence)[0]
    if not words.isdisjoint(gone) or words.isdisjoint(values) or _names_cognate(words, gone):
        return None
    if not kept_failure and speaks_of_failure(trajectory, own):
        return None
    rest = [part for part in clauses(sentence) if value_words(part).isdisjoint(values)]
    return ", ".join(rest)


def speaks_of_failure(trajectory: Trajectory, text: str) -> bool:
    """Whether the rules vocabularies (19 languages, data) read ``text`` as speaking of an earlier failure."""
    patterns = ledger_of(trajectory).analysis.config.patterns
    return bool(patterns.phantom.search(text) or patterns.prior_failure.search(text))


def textual_context(
    trajectory: Trajectory, site: CallSite, detectors: Detectors, failed_indices: list[int], deleted_indices: set[int],
    sites: list[CallSite] | None = None,
) -> tuple[list[Dependency], list[SentenceEdit]]:
    """Sentences after the failure that refer to it (paraphrase-aware), attributed to the nearest failure.

    A sentence is read as a reference by the embedding detector when something ties it to this failure: its turn
    (it lies in the recovery window, between the failure and its retry), its values or resource (it names a value
    or file of the call or its receipt, from the fact ledger), or the vocabularies (it speaks of an earlier failure
    in words of the rules config, however many turns later). ``failed_indices`` are the message indices of all
    failed receipts; ``deleted_indices`` those being deleted. A reference whose nearest preceding failure stays
    in the trajectory is left alone unless it names the deleted call.
    """
    if site.receipt_index is None:
        return [], []
    window = recovery_window(trajectory, site)
    own = tie_names(trajectory, [site])
    deleted_ids = {s.call.id for s in (sites or []) if s.receipt_index in deleted_indices} | {site.call.id}
    receipts = kept_receipts_after(trajectory, deleted_ids, site.message_index)
    cells = status_cells(trajectory, deleted_ids, site.message_index)
    items: list[tuple[int, TextField, Sentence, bool, bool]] = []  # (..., names the call, tied by turn alone)
    reads: list[str] = []  # what of each item's sentence the failure-reference reader reads
    residual: list[bool] = []  # it reads only the clauses left beside a report of the kept retry's values
    naming: list[bool] = []  # it names a value only the deleted calls had: a reference whatever the embedding says
    fields: tuple[TextField, ...] = ("reasoning", "content")
    for index in range(site.receipt_index + 1, len(trajectory.messages)):
        message = trajectory.messages[index]
        if message.role != "assistant":
            continue
        # The deleted failure is the last one before this text: whatever it says of "a failure" is about it.
        latest = max((i for i in failed_indices if i < index), default=None) == site.receipt_index
        for field_name in fields:
            for sentence in split_sentences(getattr(message, field_name) or ""):
                names_call = not own.isdisjoint(names_in(sentence.text))
                said = own_words(sentence.text, receipts, cells)
                wrong_value = names_gone_value(trajectory, sentence.text, deleted_ids, site.message_index)
                names_call = names_call or wrong_value
                # What it reports of the kept retry's values is no reference: only the rest is read.
                residue = retry_residue(trajectory, sentence.text, deleted_ids, site.message_index, said)
                if residue == "":
                    continue
                if residue is not None:
                    said = own_words(residue, receipts, cells)
                cued = index in window or names_call or (latest and speaks_of_failure(trajectory, said))
                if cued or latest:
                    items.append((index, field_name, sentence, names_call, not cued))
                    reads.append(said)
                    residual.append(residue is not None)
                    naming.append(wrong_value)
    if not items:
        return [Dependency(kind="textual", status="none", call_id=site.call.id, detail="no later text near or about the failure")], []
    verdicts = detectors.failure_reference(reads, [True] * len(items),
                                           [not turn_only and speaks_of_failure(trajectory, said)
                                            for (_, _, _, _, turn_only), said in zip(items, reads)])
    final = _final_index(trajectory)
    edits: list[SentenceEdit] = []
    deps: list[Dependency] = []
    for (index, field_name, sentence, names_call, turn_only), (is_ref, margin), rest, wrong in zip(
            items, verdicts, residual, naming):
        if rest:
            is_ref = margin >= detectors.failure_threshold_residue
        is_ref = is_ref or wrong
        if not is_ref or (turn_only and margin < detectors.failure_threshold_with_cue):
            continue  # tied by turn alone: an explicit failure word does not lower the bar
        nearest = max((i for i in failed_indices if i < index), default=None)
        if nearest not in deleted_indices and not names_call:
            continue  # it refers to a failure that stays
        if nearest is not None and nearest != site.receipt_index and nearest in deleted_indices and not names_call:
            continue  # it belongs to another deleted failure (handled there)
        text = sentence.text
        message = trajectory.messages[index]
        whole_answer = index == final and field_name == "content" and (message.content or "").strip() == text
        too_long = len(text.split()) > MAX_CUT_WORDS or len(re.findall(r"[\u3040-\u30ff\u3400-\u9fff]", text)) > MAX_CUT_CJK_CHARS
        why = (" but is the whole final answer: cutting it leaves no answer" if whole_answer
               else " but is too long to cut without losing other content" if too_long else "")
        edits.append(SentenceEdit(
            message_index=index, turn=message.turn, field=field_name, start=sentence.start, end=sentence.end,
            text=text, margin=round(margin, 3), action="flagged" if why else "removed",
            why="refers to the deleted failure" + why,
        ))
        deps.append(Dependency(
            kind="textual", status="unknown" if why else "resolved", call_id=site.call.id, turn=message.turn,
            detail=("flagged" if why else "cut") + f" a reference to the deleted failure (margin {margin:.2f}){why}",
            evidence=text,
        ))
    if not deps:
        deps.append(Dependency(kind="textual", status="none", call_id=site.call.id, detail="no later text refers to the failure"))
    return deps, edits


def _final_index(trajectory: Trajectory) -> int | None:
    """The index of the last assistant message (the final answer), if any."""
    return next((i for i in range(len(trajectory.messages) - 1, -1, -1) if trajectory.messages[i].role == "assistant"), None)


def control_conditions(
    trajectory: Trajectory, site: CallSite, sites: list[CallSite], deleted: set[str], references: list[SentenceEdit]
) -> Dependency:
    """Did a later decision branch on the failure?

    The calls after the failure, up to its retry, are the decisions it caused (the fact ledger's actions). A retry
    (the same call path) is resolved by the edit (it becomes the first attempt); read-only calls stay valid
    without the failure (they read as ordinary exploration once the text about the failure is cut). A
    state-changing call that is not a retry and whose explanation cites the failure is a fallback chosen because
    of it: the decision must be re-made. ``sites`` is kept for callers; the ledger holds the calls.
    """
    del sites  # the ledger's actions are the calls
    facts = ledger_of(trajectory)
    failed = _action(trajectory, site)
    window = recovery_window(trajectory, site)
    # A user (or another agent) who answered the failure is part of the environment: their words cannot be
    # edited, and without the failure they would not have been said. The conversation must be re-run.
    replies = [i for i in window if trajectory.messages[i].role == "user"]
    if replies:
        reply = trajectory.messages[replies[0]]
        return Dependency(kind="control", status="blocking", call_id=site.call.id, turn=reply.turn,
                          detail=f"a user message after T{reply.turn} answers the failure; the conversation must be re-run",
                          evidence=reply.content[:200])
    after = [a for a in facts.actions if a.call is not None and a.call.id not in deleted
             and a.message_index > failed.message_index and a.message_index in window]
    if not after:
        return Dependency(kind="control", status="none", call_id=site.call.id, detail="no later decision near the failure")
    checks: list[int] = []
    # A call that was stopped by a missing input file: a later call that makes that file prepares the input the
    # retry needs; the decision stands without the failure (the query or plan named the file).
    missing = missing_input_file(site.call, site.receipt)
    # A call its program refused to start (a misspelled script, remote or package) is retried by the next call of
    # the same program step with a corrected argument: "npm run build" after "npm run biuld".
    stopped = stopped_before_effect(site.call, site.receipt) is not None
    prepared: list[int] = []
    for later in after:
        assert later.call is not None
        if missing is not None and missing in later.writes:
            prepared.append(later.turn)
            continue
        if is_retry(facts, failed, later) or (stopped and corrected_retry(facts, failed, later)):
            extra = f" (read-only checks in between at {', '.join(f'T{t}' for t in checks)})" if checks else ""
            return Dependency(kind="control", status="resolved", call_id=site.call.id, turn=later.turn,
                              detail=f"T{later.turn} retries {site.call.name}; after the edit it is the first attempt{extra}")
        if later.read_only:
            checks.append(later.turn)
            continue
        cited = [r for r in references if r.message_index <= later.message_index]
        if cited:
            return Dependency(kind="control", status="blocking", call_id=site.call.id, turn=later.turn,
                              detail=f"T{later.turn} changed course ({later.name}) because of the failure; the decision must be re-made",
                              evidence=cited[0].text)
        break
    if prepared:
        return Dependency(kind="control", status="resolved", call_id=site.call.id, turn=prepared[0],
                          detail=f"T{prepared[0]} makes the missing input {missing}; the decision stands without the failure")
    if checks:
        return Dependency(kind="control", status="resolved", call_id=site.call.id, turn=checks[0],
                          detail=f"read-only checks at {', '.join(f'T{t}' for t in checks)} stay valid without the failure")
    return Dependency(kind="control", status="none", call_id=site.call.id, detail="no later decision branches on the failure")


def failed_receipt_indices(trajectory: Trajectory) -> list[int]:
    """Message indexes of the failed receipts: by their flags, or by their content (the fact ledger's status)."""
    found = {i for i, m in enumerate(trajectory.messages)
             if m.role == "tool" and m.receipt is not None and receipt_failed(m.receipt)}
    found |= {s.receipt_index for s in call_sites(trajectory) if s.failed and s.receipt_index is not None}
    return sorted(found)
