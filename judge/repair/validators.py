"""Checks every offline-edited trajectory must pass (reference design, "Offline").

- no reference to a deleted failure remains (paraphrase-aware: the same embedding detector as the editor,
  plus the rules judge's ``phantom-failure-reference`` detector when it is installed);
- no claim of success appears before the receipt that could support it (plus the rules judge's
  ``premature-claim`` detector);
- no failed receipt was turned into success (receipts compared by call id before and after);
- information order is preserved: messages keep their relative order, each receipt follows its call, turn
  numbers are contiguous, no value appears before the first kept receipt that shows it (in the original, a
  receipt showed it first), and no id appears that the original never had (an id changed in text);
- every call the edit removed was free of side effects: its receipt shows no effect (the fact ledger's
  ``partial``: "created 2 of 5 rows" then an error) and it could not change state;
- nothing kept depends on a removed call (a value only its receipt returned, still used later);
- the final answer is still supported: every value it states that a receipt showed in the original is still
  shown by a kept receipt before it;
- no new claim is unsupported: a sentence the edit wrote (not in the original) that claims a result needs a
  receipt before it (a claim in the message that makes the call, in any language, is premature), a text that
  spoke of a failure is not turned into success while the failed receipt stays, and no future-tense claim
  ("will be completed") is written.

Each result names the kind of refusal it stands for (``kind``): ``reference``, ``order``, ``effects``,
``side-effects``, ``dependency``, ``unsupported-final``, ``flip``, ``future-claim``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel

from judge.facts import Action, Claim, Ledger, ledger_of
from judge.facts.analysis import path_tokens
from judge.facts.answers import going_value
from judge.facts.jobs import bare_state, progress_done
from judge.facts.values import is_resource_id, names_in, receipt_numbers, stated_numbers, states, value_tokens
from judge.model import Message, Trajectory, number_turns
from judge.repair.calls import (
    CallSite,
    call_sites,
    effects_shown,
    message_text,
    receipt_failed,
    side_effect_free,
)
from judge.repair.dependencies import (
    failed_receipt_indices,
    kept_receipts_after,
    names_gone_value,
    option_name,
    own_words,
    quoted_uses,
    receipt_values,
    recovery_window,
    retry_residue,
    speaks_of_failure,
    status_cells,
    text_tokens,
    tie_names,
    value_words,
)
from judge.repair.textref import (
    Detectors,
    Sentence,
    split_sentences,
)
from judge.rules import DetectorNames, run_detectors
from judge.schema import Issue

# The rules judge's detectors an edit could trip (registered with the role "edit-check"): text about a failure
# that is gone, a claim before its receipt, and completion marks (TodoList) no longer backed by a receipt.
RULE_DETECTORS = DetectorNames("edit-check")


RefusalKind = Literal["effects", "dependency", "order", "unsupported-final", "reference", "flip", "future-claim",
                      "side-effects"]


class ValidatorResult(BaseModel):
    """Outcome of one validator on an edited trajectory."""

    name: str
    passed: bool
    detail: str = ""
    findings: list[str] = []
    kind: RefusalKind | None = None  # the kind of refusal a failure of this validator stands for

def validate_edit(
    original: Trajectory,
    edited: Trajectory,
    message_map: Sequence[int],
    deleted_calls: Sequence[str],
    detectors: Detectors,
) -> list[ValidatorResult]:
    """Run every validator; ``message_map[i]`` is the original index of edited message ``i``."""
    return [
        no_reference_to_deleted_failure(original, edited, message_map, deleted_calls, detectors),
        no_new_premature_claim(original, edited, detectors),
        no_failed_receipt_made_success(original, edited),
        information_order(original, edited, message_map),
        no_effects_removed(original, edited, deleted_calls),
        no_dependency_removed(original, edited, message_map, deleted_calls),
        final_answer_supported(original, edited),
        rewritten_values_supported(original, edited, message_map),
        new_claims_supported(original, edited, message_map),
        rules_judge_clean(original, edited),
        final_report_kept(original, edited, message_map),
    ]


def no_reference_to_deleted_failure(
    original: Trajectory, edited: Trajectory, message_map: Sequence[int], deleted_calls: Sequence[str], detectors: Detectors
) -> ValidatorResult:
    """No sentence still talks about a failure that is no longer in the trajectory."""
    deleted = set(deleted_calls)
    orig_sites = {s.call.id: s for s in call_sites(original)}
    removed = [orig_sites[c] for c in deleted if c in orig_sites]
    deleted_receipts = {s.receipt_index for s in removed if s.receipt_index is not None}
    # Tied by values and resource (what the deleted calls named or their receipts showed, from the fact ledger),
    # by turn (a deleted failure's recovery window), or by the failure vocabularies (19 languages, data): a
    # paraphrase several turns after the failure that names no call ("as the earlier problem showed") is still
    # read with the lower bar.
    deleted_names = tie_names(original, removed)
    orig_failed = failed_receipt_indices(original)
    edited_failed = failed_receipt_indices(edited)
    windows = [recovery_window(original, s) for s in removed]
    first_removed = min((s.message_index for s in removed), default=-1)
    receipts = kept_receipts_after(original, deleted, first_removed)
    cells = status_cells(original, deleted, first_removed)
    items: list[tuple[int, str, bool, bool]] = []  # (edited index, sentence, names a deleted call, tied by turn alone)
    reads: list[str] = []  # what of each sentence the failure-reference reader reads
    residual: list[bool] = []  # it reads only the clauses left beside a report of the kept retry's values
    naming: list[bool] = []  # it names a value only the deleted calls had: a reference whatever the embedding says
    cues: list[bool] = []
    spoken: list[bool] = []  # the failure vocabularies read the sentence as speaking of a failure
    for index, message in enumerate(edited.messages):
        if message.role != "assistant":
            continue
        near_deleted = any(message_map[index] in window for window in windows)
        # A deleted failure was the last one before this text in the original: a paraphrase of "the failure"
        # any number of turns later is about it.
        latest = max((i for i in orig_failed if i < message_map[index]), default=None) in deleted_receipts
        for sentence in split_sentences(message_text(message)):
            wrong_value = bool(removed) and names_gone_value(original, sentence.text, deleted, first_removed)
            names_deleted = wrong_value or not deleted_names.isdisjoint(names_in(sentence.text))
            own = own_words(sentence.text, receipts, cells)
            # What it reports of the kept retry's values is no reference: only the rest is read.
            residue = retry_residue(original, sentence.text, deleted, first_removed, own) if removed else None
            if residue == "":
                continue
            if residue is not None:
                own = own_words(residue, receipts, cells)
            residual.append(residue is not None)
            naming.append(wrong_value)
            spoken_here = bool(deleted) and speaks_of_failure(edited, own)
            cued = near_deleted or names_deleted or spoken_here
            items.append((index, sentence.text, names_deleted, latest and not cued))
            reads.append(own)
            cues.append(cued or latest)
            spoken.append(spoken_here and cued)
    patterns = ledger_of(edited).analysis.config.patterns
    findings: list[str] = []
    for (index, text, names_deleted, turn_only), (is_ref, margin), rest, wrong in zip(
            items, detectors.failure_reference(reads, cues, spoken), residual, naming):
        if turn_only and margin < detectors.failure_threshold_with_cue:
            is_ref = False  # tied by turn alone: an explicit failure word does not lower the bar
        if rest:
            is_ref = margin >= detectors.failure_threshold_residue
        is_ref = is_ref or wrong
        # An explicit reference in the vocabulary ("since the earlier call failed") is one whatever the embedding says.
        if not (is_ref or (deleted and patterns.phantom.search(text))):
            continue
        original_index = message_map[index]
        nearest_original = max((i for i in orig_failed if i < original_index), default=None)
        nearest_edited = max((i for i in edited_failed if i < index), default=None)
        # It refers to a deleted failure when the failure it followed is gone, when the failure nearest to it
        # was deleted, when it names the deleted call, or when it sits in a deleted failure's recovery window
        # with no kept failure inside that window. A reference that had no failure before it in the original
        # either is not the edit's doing (the rules judge's phantom-failure-reference reports it).
        if deleted_receipts and original_index < min(deleted_receipts):
            continue  # written before the deleted failure: it cannot refer to it
        in_deleted_window = nearest_edited is not None and nearest_edited < _first_window_start(windows, message_map, index)
        lost_its_failure = nearest_edited is None and nearest_original is not None
        if lost_its_failure or nearest_original in deleted_receipts or (names_deleted and deleted) or in_deleted_window:
            turn = edited.messages[index].turn
            findings.append(f"T{turn}: {text!r} (margin {margin:.2f})")
    if removed and any(s.failed for s in removed):
        findings += _story_added_to_final(original, edited, message_map)
    return ValidatorResult(
        name="no-reference-to-deleted-failure",
        passed=not findings,
        detail="a sentence still refers to a failure that is gone" if findings else "no reference to a deleted failure",
        findings=findings,
        kind="reference",
    )


_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{2,}|[\u3040-\u30ff\u3400-\u9fff]{2,}")


# The new words of an added run that make it prose of its own: a clause, not a swapped value or a word of wording.
_STORY_WORDS = 3


def _story_added_to_final(original: Trajectory, edited: Trajectory, message_map: Sequence[int]) -> list[str]:
    """Runs of words a rewrite that deleted a failed call inserted into a sentence of the final answer it kept
    whole (every word of the original sentence is still there), that show nothing a receipt, a call or the query
    shows and that the original's kept texts did not say (``_STORY_WORDS`` or more such words), in any language:
    "za drugim podejściem", "Nakon ispravke pogreške s id-om tablice", "بعد تصحيح نوع الحقل". The kept report needs
    no new prose; words that carry no value can only tell how the agent got there, which after the deleted failure
    is its story. A reworded answer (its words replaced), a swapped value and a cut are read elsewhere."""
    after = _final_index(edited)
    if after is None or edited.messages[after].tool_calls or message_map[after] >= len(original.messages):
        return []
    before = original.messages[message_map[after]]
    if before.role != "assistant":
        return []
    shown = set(value_words(original.query))
    for site in call_sites(original):
        shown |= value_words(site.call.argument_text())
        if site.receipt is not None:
            shown |= value_words((site.receipt.content or "")[:4000])
    # What the original's kept texts said (a sentence moved into the final answer is no new prose).
    said = {w.strip(_EDGE_PUNCTUATION).lower() for i in set(message_map) if i < len(original.messages)
            and original.messages[i].role == "assistant" for w in message_text(original.messages[i]).split()}

    def words(text: str) -> list[str]:
        return [w for w in text.split() if w.strip(_EDGE_PUNCTUATION)]

    def plain(items: Sequence[str]) -> set[str]:
        return {w.strip(_EDGE_PUNCTUATION).lower() for w in items}

    found: list[str] = []
    olds = [words(sentence.text) for sentence in split_sentences(message_text(before))]
    for sentence in split_sentences(message_text(edited.messages[after])):
        new_words = words(sentence.text)
        for old_words in olds:
            if not old_words or not plain(old_words) <= plain(new_words):
                continue
            matcher = difflib.SequenceMatcher(a=old_words, b=new_words, autojunk=False)
            for op, _i1, _i2, j1, j2 in matcher.get_opcodes():
                prose = [w for w in new_words[j1:j2]
                         if (word := w.strip(_EDGE_PUNCTUATION)) and word.lower() not in said
                         and not re.search(r"\d", word) and value_words(word).isdisjoint(shown)]
                if op in ("insert", "replace") and len(prose) >= _STORY_WORDS:
                    found.append(f"T{edited.messages[after].turn}: the rewrite added {' '.join(new_words[j1:j2])!r} to "
                                 "the final answer, words no receipt shows: how it got past the deleted failure")
            break
    return found


def _first_window_start(windows: Sequence[range], message_map: Sequence[int], index: int) -> int:
    """Edited index where the recovery window of a deleted failure containing message ``index`` begins."""
    original_index = message_map[index]
    starts = [w.start for w in windows if original_index in w]
    if not starts:
        return -1
    start = min(starts)
    return next((i for i, o in enumerate(message_map) if o >= start), len(message_map))


@lru_cache(maxsize=65536)
def _stems(text: str) -> frozenset[str]:
    """Lower-cased words with common English inflections cut (imported/imports/importing -> import). Memoised:
    every edit of a trajectory compares the same call texts and sentences again."""
    out = set()
    for word in _WORD.findall(text or ""):
        word = word.lower()
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 4:
                word = word[: -len(suffix)]
                break
        if word.endswith("e") and len(word) >= 5:
            word = word[:-1]  # create / created -> creat
        if word not in _STOP_WORDS:
            out.add(word)
    return frozenset(out)


_STOP_WORDS = {"the", "and", "were", "was", "has", "have", "been", "successfully", "success", "now", "all", "with", "into",
               "from", "this", "that", "are", "done", "command", "content", "file_path", "path", "json", "true", "false"}


def _overlap(sentence: str, call_text: str) -> int:
    """How many words the sentence shares with a call's name and arguments."""
    return len(_stems(sentence) & _stems(call_text))


@dataclass(frozen=True)
class PrematureClaim:
    """A success claim made before the receipt of the call it talks about."""

    message_index: int
    start: int
    end: int
    text: str
    site: CallSite

    def describe(self, trajectory: Trajectory) -> str:
        return (f"T{trajectory.messages[self.message_index].turn}: {self.text!r} claims {self.site.call.name} succeeded "
                f"before its receipt (call at T{self.site.turn})")


def find_premature_claims(trajectory: Trajectory, detectors: Detectors) -> list[PrematureClaim]:
    """Success claims made before the receipt of the call they speak of, read from the fact ledger's claims and
    actions.

    The claims are the ledger's (unhedged past-tense claim sentences of the rules vocabularies, 19 languages) and,
    for paraphrases the vocabularies miss, sentences the embedding detector reads as success claims. A claim
    speaks of the call it is tied to best, by values and names (the ledger's :meth:`~judge.facts.Ledger.names_of`
    the call and its receipt) and by shared words. It is premature when that call is made in the same message or
    later and no call that had succeeded before the claim is tied as well ("Base created. Now the table..."
    reports the previous receipt). A ledger claim tied to no call at all (a zh or ja claim about an
    English-argument call) speaks of the next state-changing call (in its message or later): it is premature
    when the last state-changing call seen before it did not succeed (or there was none).
    """
    facts = ledger_of(trajectory)
    sites = {s.call.id: s for s in call_sites(trajectory)}
    actions = [a for a in facts.actions if a.call is not None and a.call.id in sites and not a.is_plan]
    claimed: dict[int, list[str]] = {}
    for claim in facts.claims:
        read = claim.sentence
        if claim.tense == "past" and not read.hedged and (not read.mentions_failure or read.resolution):
            claimed.setdefault(claim.message_index, []).append(claim.text)
    items: list[tuple[int, Sentence]] = []
    for index, message in enumerate(trajectory.messages):
        if message.role == "assistant":
            items.extend((index, s) for s in split_sentences(message.content or ""))
    paraphrased = detectors.success_claim([s.text for _, s in items])
    found: list[PrematureClaim] = []
    for (index, sentence), (embedded, _score) in zip(items, paraphrased):
        in_ledger = any(c in sentence.text or sentence.text in c for c in claimed.get(index, ()))
        if not (in_ledger or embedded):
            continue
        names = names_in(sentence.text)

        def tie(action: Action, text: str = sentence.text, names: frozenset[str] = names) -> int:
            assert action.call is not None
            return _overlap(text, action.name + " " + action.text) + 2 * len(names & facts.names_of(action))

        done = [tie(a) for a in actions if a.outcome == "ok" and a.visible_at < index]
        best_done = max(done, default=0)
        pending = [a for a in actions if a.message_index >= index]
        tied = next((a for a in pending if tie(a) > best_done), None)
        if tied is None and in_ledger and not any(done) and not any(tie(a) for a in pending):
            # Tied to nothing by words or values (another language than the arguments): it speaks of the next
            # change, when no change had succeeded just before it.
            upcoming = [a for a in pending if not a.read_only]
            changed = [a for a in actions if a.visible_at < index and not a.read_only]
            if upcoming and (not changed or changed[-1].outcome != "ok"):
                tied = upcoming[0]
        if tied is not None and tied.call is not None:
            found.append(PrematureClaim(index, sentence.start, sentence.end, sentence.text, sites[tied.call.id]))
    return found


def no_premature_claim(trajectory: Trajectory, detectors: Detectors) -> ValidatorResult:
    """No message claims an operation succeeded before a successful receipt for it exists."""
    findings = [c.describe(trajectory) for c in find_premature_claims(trajectory, detectors)]
    return ValidatorResult(
        name="no-premature-claim",
        passed=not findings,
        detail="a success is claimed before its receipt" if findings else "every success claim follows its receipt",
        findings=findings,
    )


def no_new_premature_claim(original: Trajectory, edited: Trajectory, detectors: Detectors) -> ValidatorResult:
    """The edit introduced no premature claim (one already in the original is the judges' business, noted here)."""
    before = {re.sub(r"\bT\d+\b", "T#", f) for f in no_premature_claim(original, detectors).findings}
    after = no_premature_claim(edited, detectors)
    new = [f for f in after.findings if re.sub(r"\bT\d+\b", "T#", f) not in before]
    kept = len(after.findings) - len(new)
    return ValidatorResult(
        name="no-premature-claim",
        passed=not new,
        detail=("the edit put a success claim before its receipt" if new else "every success claim follows its receipt")
        + (f" ({kept} already in the original)" if kept else ""),
        findings=new,
        kind="order",
    )


def no_failed_receipt_made_success(original: Trajectory, edited: Trajectory) -> ValidatorResult:
    """Every call id kept has the identical call and receipt; no call or receipt was invented."""
    before = {s.call.id: s for s in call_sites(original)}
    findings: list[str] = []
    for site in call_sites(edited):
        old = before.get(site.call.id)
        if old is None:
            findings.append(f"call {site.call.id} does not exist in the original")
            continue
        if old.call != site.call:
            findings.append(f"call {site.call.id} arguments changed")
        if (old.receipt is None) != (site.receipt is None):
            findings.append(f"receipt of {site.call.id} added or removed")
        elif old.receipt is not None and site.receipt is not None:
            if receipt_failed(old.receipt) and not receipt_failed(site.receipt):
                findings.append(f"failed receipt of {site.call.id} now reads as success")
            elif old.receipt != site.receipt:
                findings.append(f"receipt of {site.call.id} changed")
    return ValidatorResult(
        name="no-failed-receipt-made-success",
        passed=not findings,
        detail="receipts changed" if findings else "every kept receipt is identical to the original",
        findings=findings,
        kind="flip",
    )


def information_order(original: Trajectory, edited: Trajectory, message_map: Sequence[int]) -> ValidatorResult:
    """Relative order kept, receipts after calls, turns contiguous, no value used before its source."""
    findings: list[str] = []
    if list(message_map) != sorted(set(message_map)):
        findings.append("messages were reordered or duplicated")
    turns = [m.turn for m in edited.messages if m.role == "assistant"]
    if turns != list(range(1, len(turns) + 1)):
        findings.append(f"assistant turns are not contiguous: {turns}")
    renumbered = number_turns([m.model_copy() for m in edited.messages])
    if [m.turn for m in renumbered] != [m.turn for m in edited.messages]:
        findings.append("turn numbers disagree with the numbering rule")
    for site in call_sites(edited):
        if site.receipt_index is not None and site.receipt_index < site.message_index:
            findings.append(f"receipt of {site.call.id} precedes its call")
    # A value may appear in an assistant message only after a kept receipt (or the query) has shown it, when in
    # the original a receipt showed it first (values the agent chose itself may appear anywhere); an id the
    # original never had is a changed id. Both read from the ledgers' first occurrences.
    facts, kept = ledger_of(original), ledger_of(edited)
    asked = value_tokens(edited.query + "\n" + "\n".join(m.content for m in edited.messages if m.role in ("system", "user")))
    early = sorted((v for v in kept.values.values() if v.first.source in ("argument", "text") and v.token not in asked
                    and not option_name(v.token)),
                   key=lambda v: (v.first.message_index, v.token))
    for value in early:
        before = facts.values.get(value.token)
        if before is None:
            if is_resource_id(value.token):
                findings.append(f"T{value.first.turn} states {value.token!r}, which the original never had (an id changed?)")
        elif before.first.source == "receipt":
            findings.append(f"T{value.first.turn} uses {value.token!r} before any kept receipt returned it")
    findings += _numbers_written_early(original, edited, asked)
    return ValidatorResult(
        name="information-order",
        passed=not findings,
        detail="information order broken" if findings else "order, pairing and numbering preserved",
        findings=findings,
        kind="order",
    )


def _numbers_written_early(original: Trajectory, edited: Trajectory, asked: set[str]) -> list[str]:
    """Numbers a sentence the edit wrote states before the first kept receipt that shows them ("48 件を取り込みます"
    two receipts before the import returns 48): the value ledger leaves out numbers under three digits."""
    written = "\n".join(message_text(m) for m in original.messages if m.role == "assistant")
    shown = [(action.visible_at, frozenset(receipt_numbers(action.receipt.content)) | _bare_number(action.receipt.content))
             for action in ledger_of(edited).actions if action.receipt is not None]
    findings: list[str] = []
    for index, message in enumerate(edited.messages):
        if message.role != "assistant":
            continue
        seen = frozenset().union(*(numbers for at, numbers in shown if at < index))
        later = frozenset().union(*(numbers for at, numbers in shown if at > index)) - seen
        for sentence in split_sentences(message_text(message)):
            if sentence.text.strip() in written:
                continue
            # Numbers of 3+ digits are values: the ledger's first occurrences above read them.
            # A number glued to a counter of an unspaced script or Hangul ("42건", "6件") is still stated.
            text = _UNSPACED_COUNTER.sub(r"\1 ", sentence.text)
            early = sorted(n for n in later if len(n) < 3 and n not in asked and states(text, n))
            findings += [f"T{message.turn} states {n!r} before any kept receipt showed it" for n in early]
    return findings


def _bare_number(content: str) -> frozenset[str]:
    """The number a receipt prints as its whole output (a count query's ``42``), which no key or noun names."""
    answer = content.strip()
    return frozenset({str(int(answer))}) if answer.isascii() and answer.isdigit() and len(answer) <= 9 else frozenset()


def _rule_findings(trajectory: Trajectory) -> list[Issue]:
    return list(run_detectors(trajectory, names=RULE_DETECTORS))


def _finding_key(finding: Issue) -> tuple[str | None, str]:
    """A finding's identity across renumbering: its tag and evidence with turn labels blanked."""
    evidence = re.sub(r"\bT\d+\b", "T#", finding.evidence or "")
    return finding.tag, evidence[:120]


def rules_judge_clean(original: Trajectory, edited: Trajectory) -> ValidatorResult:
    """The rules judge finds no phantom failure reference or premature claim the original did not have."""
    after = _rule_findings(edited)
    before = _rule_findings(original)
    before_keys = {_finding_key(f) for f in before}
    new = [f for f in after if _finding_key(f) not in before_keys]
    return ValidatorResult(
        name="rules-judge",
        passed=not new,
        detail="the rules judge finds new defects" if new else "no new rule finding",
        findings=[f"T{f.turn} {f.tag}: {f.description}" for f in new],
    )


def _removed_sites(original: Trajectory, edited: Trajectory, deleted_calls: Sequence[str]) -> list[CallSite]:
    """The original's calls the edit removed: those named, and any other the edited trajectory no longer has."""
    # The edited trajectory's calls as its messages hold them (the ledger has one action per assistant call): its
    # ledger is not built for this.
    kept = {call.id for message in edited.messages if message.role == "assistant" for call in message.tool_calls}
    named = set(deleted_calls)
    return [s for s in call_sites(original) if s.call.id in named or s.call.id not in kept]


def no_effects_removed(original: Trajectory, edited: Trajectory, deleted_calls: Sequence[str]) -> ValidatorResult:
    """Every removed call was free of side effects: no receipt showing effects, nothing it could have changed."""
    findings: list[str] = []
    kind: RefusalKind = "side-effects"
    for site in _removed_sites(original, edited, deleted_calls):
        effects = effects_shown(original, site)
        if effects is not None:
            kind = "effects"
            findings.append(f"{site.call.id} (T{site.turn} {site.call.name}): {effects}")
            continue
        free, why = side_effect_free(site, original)
        if not free:
            findings.append(f"{site.call.id} (T{site.turn} {site.call.name}): {why}")
    return ValidatorResult(
        name="no-side-effects-removed", passed=not findings,
        detail="a removed call may have changed state" if findings else "every removed call was side-effect free",
        findings=findings, kind=kind,
    )


def no_dependency_removed(original: Trajectory, edited: Trajectory, message_map: Sequence[int],
                          deleted_calls: Sequence[str]) -> ValidatorResult:
    """Nothing kept rests on a removed call: no value that only its receipt returned is still used by a kept
    message (the fact ledger's returned-values and textual dependencies)."""
    facts = ledger_of(original)
    kept_at = {original_index: edited_index for edited_index, original_index in enumerate(message_map)}
    findings: list[str] = []
    for site in _removed_sites(original, edited, deleted_calls):
        action = facts.action_for(site.call.id)
        if action is None:
            continue
        # Sorted: the ledger's values come from sets, and a report must read the same on every run.
        for dependency in sorted(facts.dependents(action), key=lambda d: (d.message_index, d.value or "")):
            if dependency.kind not in ("returned-values", "textual") or not dependency.value or option_name(dependency.value):
                continue
            at = kept_at.get(dependency.message_index)
            if at is None:
                continue
            message = edited.messages[at]
            text = message_text(message) + "\n" + "\n".join(c.argument_text() for c in message.tool_calls)
            if dependency.value in text:
                findings.append(f"T{message.turn} still uses {dependency.value!r}, returned by the removed "
                                f"{site.call.name} call of T{site.turn}")
        for value, index in quoted_uses(original, site):
            at = kept_at.get(index)
            if at is None:
                continue
            message = edited.messages[at]
            text = message_text(message) + "\n" + "\n".join(c.argument_text() for c in message.tool_calls)
            if value in text:
                findings.append(f"T{message.turn} still uses {value!r}, which only the removed {site.call.name} call "
                                f"of T{site.turn} quoted")
    return ValidatorResult(
        name="no-dependency-removed", passed=not findings,
        detail="a kept message depends on a removed call" if findings else "nothing kept depends on a removed call",
        findings=findings, kind="dependency",
    )


def _final_index(trajectory: Trajectory) -> int | None:
    return next((i for i in range(len(trajectory.messages) - 1, -1, -1)
                 if trajectory.messages[i].role == "assistant"), None)


def final_answer_supported(original: Trajectory, edited: Trajectory) -> ValidatorResult:
    """The final answer still rests on receipts: every value it states that a receipt showed before it in the
    original (the fact ledger's :meth:`~judge.facts.Ledger.answer_support`: ids, numbers, and the data a JSON
    receipt returned, "Stapler" and "2" of ``{"Name": "Stapler", "Stock": 2}``) is shown by a kept receipt before
    it in the edited trajectory."""
    findings: list[str] = []
    before, after = _final_index(original), _final_index(edited)
    if before is not None and after is not None:
        answer = edited.messages[after].content or ""
        stated = [(value, order) for value, order in sorted(_answer_support(original, before).items())
                  if states(answer, value)]
        # The edited trajectory's support only when the answer still states a value (its ledger is built for it).
        kept = ledger_of(edited).answer_support(after) if stated else {}
        for value, order in stated:
            if value not in kept:
                action = ledger_of(original).actions[order]
                findings.append(f"the final answer states {value!r}, which only the removed or changed receipt of "
                                f"T{action.turn} {action.name} showed")
        findings += _plain_numbers_lost(original, edited, before, after, {f.split("'")[1] for f in findings})
    return ValidatorResult(
        name="final-answer-supported", passed=not findings,
        detail="the final answer lost its support" if findings else "the final answer is still supported",
        findings=findings, kind="unsupported-final",
    )


def _answer_support(trajectory: Trajectory, index: int) -> dict[str, int]:
    """The ledger's :meth:`~judge.facts.Ledger.answer_support` of message ``index``, memoized per trajectory: every
    failed call of one trajectory the editor tries to delete asks for its final answer's support again."""
    memo: dict[int, dict[str, int]] = ledger_of(trajectory).analysis.cache.setdefault("repair:answer-support", {})
    found = memo.get(index)
    if found is None:
        found = memo[index] = ledger_of(trajectory).answer_support(index)
    return found


def _plain_numbers_lost(original: Trajectory, edited: Trajectory, before: int, after: int, found: set[str]) -> list[str]:
    """Numbers of 10 or more (or with a fraction) the final answer states as prose reads them, that a plain-text
    receipt before it showed in the original ("37" printed by ``jq``) and no kept receipt before it shows: what
    the ledger's values (3+ digits, JSON data) do not cover. Small whole numbers are left out: they coincide."""
    # A number glued to a counter of an unspaced script or Hangul ("212개", "3件") is still a number.
    answer = _UNSPACED_COUNTER.sub(r"\1 ", _unlisted(edited.messages[after].content or ""))
    wanted = {x for x in stated_numbers(answer) if x >= 10 or x != int(x)} - set(stated_numbers(edited.query))
    if not wanted:
        return []
    shown = [a.receipt.content for a in ledger_of(original).actions if a.receipt is not None and a.visible_at < before]
    # The numbers each text states, read once per text of the original (the edited copy keeps its texts): what
    # _shows reads, for every number and every failed call of the trajectory.
    numbers: dict[str, frozenset[float]] = ledger_of(original).analysis.cache.setdefault("repair:stated-numbers", {})
    kept: list[str] | None = None  # what the edited trajectory shows, read only for a number the original showed
    lost: list[str] = []
    for number in sorted(wanted):
        text = _number_text(number)
        if text in found or not _shows_number(shown, float(text), numbers):
            continue
        if kept is None:
            kept, _ = _shown_texts(edited, after)
        if not _shows_number(kept, float(text), numbers):
            lost.append(f"the final answer states {text!r}, which only a removed or changed receipt showed")
    return lost


def rewritten_values_supported(original: Trajectory, edited: Trajectory, message_map: Sequence[int]) -> ValidatorResult:
    """A rewritten message states no value it changed or added that nothing kept before it shows: held by values,
    in any language. The values are the ledger's (:func:`~judge.facts.values.names_in`: ids, paths, names, codes)
    and the numbers prose states (``212,40`` is ``212.40``); a value counts as shown when the query, a kept
    receipt, or a kept call's arguments before the message state it. Not shown before, but by a later kept receipt:
    ``order``; by none: ``unsupported-final``."""
    findings: list[tuple[RefusalKind, str]] = []
    for index, message in enumerate(edited.messages):
        if message.role != "assistant" or index >= len(message_map):
            continue
        before = original.messages[message_map[index]]
        text, old_text = message_text(message), message_text(before)
        if text == old_text:
            continue
        shown_before, shown_later = _shown_texts(edited, index)
        old_names, old_numbers = names_in(old_text) | set(path_tokens(old_text)), set(stated_numbers(_unlisted(old_text)))
        added = sorted(n for n in names_in(text) | set(path_tokens(text)) - old_names if not n.isdigit())
        added += sorted({_number_text(x) for x in stated_numbers(_unlisted(text)) if x not in old_numbers})
        added += [word for word in swapped_words(old_text, text) if word not in added]
        for value in added:
            if _shows(shown_before, value):
                continue
            kind: RefusalKind = "order" if _shows(shown_later, value) else "unsupported-final"
            where = "only a later receipt shows" if kind == "order" else "no kept receipt shows"
            findings.append((kind, f"T{message.turn} states {value!r}, which the edit changed or added and {where}"))
    return ValidatorResult(
        name="rewritten-values-supported", passed=not findings,
        detail="a rewritten message states a value nothing kept shows" if findings else "rewritten values are shown",
        findings=[f for _, f in findings], kind=findings[0][0] if findings else "unsupported-final",
    )


# A swap is this many words or fewer on each side; a longer replacement is a rewording, not a changed value.
_SWAP_WORDS = 3


def swapped_words(before: str, after: str) -> list[str]:
    """Words the rewrite put in place of others inside a sentence it otherwise kept (pure): "27 Februari 2027" made
    "27 Mac 2027", "v2.4.1" made "v2.4.2", a path's last parts. A cut or an added clause is no swap (what was
    cut is the failure talk; what is added the other validators read); only replacements of a few words by a few
    value-like others (a digit, a path, a dotted name) or of the one word after a number (its unit or month), in any
    language."""
    found: list[str] = []
    old_words, new_words = _spaced_words(before), _spaced_words(after)
    matcher = difflib.SequenceMatcher(a=old_words, b=new_words, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or i2 - i1 > _SWAP_WORDS or j2 - j1 > _SWAP_WORDS:
            continue
        # One word right after a number is part of the value (its unit or month: "27 Februari 2027", "212 kB"); the
        # verb before it ("has 12", "jest 318") is wording.
        beside_number = i2 - i1 == 1 and i1 > 0 and bool(re.search(r"\d", old_words[i1 - 1]))
        old = {w.strip(_EDGE_PUNCTUATION) for w in old_words[i1:i2]}
        found += [w for word in new_words[j1:j2] if (w := word.strip(_EDGE_PUNCTUATION)) and w not in old
                  and _NUMBER_SUFFIX.sub(r"\1", w) not in old
                  and not _UNSPACED_SCRIPT.search(w) and (beside_number or _VALUE_WORD.search(w))]
    return found


def _spaced_words(text: str) -> list[str]:
    """The words of ``text``, a run of an unspaced script (CJK, kana, Thai...) and its punctuation cutting a word
    too: a value glued to such text ("チェックポイント：runs/mt/final.pt") stands as a word of its own, and the
    script's runs drop out (a changed run is a rewording there, not a value)."""
    return [piece for word in text.split() for piece in _UNSPACED_RUN.split(word) if piece]


# A value-like word: a digit, a path or a dotted name ("v2.4.2", "apk/prod/tienda.apk").
_VALUE_WORD = re.compile(r"\d|\w/\w|\w\.\w")
# A number with a case suffix after an apostrophe or colon ("29'u", "1'i", "12:ta"): the same number, declined.
_NUMBER_SUFFIX = re.compile(r"^(\d+(?:[.,]\d+)*)['’:][^\W\d_]+$")
_EDGE_PUNCTUATION = ".,;:!?()[]{}\"'`«»“”。、，：；！？"
# Scripts written without spaces (CJK, kana, Thai, Lao, Khmer, Myanmar): a space-separated piece there is a clause,
# not a word, so a changed piece is a rewording.
_UNSPACED_CHARS = r"[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]"
_UNSPACED_SCRIPT = re.compile(_UNSPACED_CHARS)
_UNSPACED_RUN = re.compile(rf"(?:{_UNSPACED_CHARS}|[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20])+")
_UNSPACED_COUNTER = re.compile(rf"(\d)(?={_UNSPACED_CHARS})")


# A numbered list's markers ("1. ", "2) "): the rewrite's layout, not values.
_LIST_MARKER = re.compile(r"^(\s*)\d{1,2}[.)](?=\s)", re.MULTILINE)


def _unlisted(text: str) -> str:
    return _LIST_MARKER.sub(r"\1", text)


def _number_text(number: float) -> str:
    return str(int(number)) if number == int(number) else str(number)


def _shown_texts(trajectory: Trajectory, index: int) -> tuple[list[str], list[str]]:
    """What is shown before message ``index`` (the query, system and user text, the ledger's receipts, the
    arguments of calls up to its own: "creating the records with --json" names its own call's flag) and what
    receipts show after it."""
    before = [trajectory.query] + [m.content or "" for m in trajectory.messages[:index] if m.role in ("system", "user")]
    later: list[str] = []
    for action in ledger_of(trajectory).actions:
        if action.message_index <= index:
            before.append(action.text)
        if action.receipt is not None:
            (before if action.visible_at < index else later).append(action.receipt.content or "")
    return before, later


def _shows(texts: Sequence[str], value: str) -> bool:
    """Whether some text states ``value``: a name as a whole word, a number by its value in any grouping."""
    try:
        number = float(value)
    except ValueError:
        return any(states(text, value) for text in texts)
    return any(number in stated_numbers(text) for text in texts)


def _shows_number(texts: Sequence[str], number: float, memo: dict[str, frozenset[float]]) -> bool:
    """:func:`_shows` of a number, with the numbers each text states memoized in ``memo`` (text -> numbers)."""
    for text in texts:
        found = memo.get(text)
        if found is None:
            found = memo[text] = frozenset(stated_numbers(text))
        if number in found:
            return True
    return False


def new_claims_supported(original: Trajectory, edited: Trajectory, message_map: Sequence[int]) -> ValidatorResult:
    """Sentences the edit wrote (not in the original) claim nothing the receipts do not show: no future-tense
    claim, no claim before the receipt of the call it speaks of (a claim in the message that makes the call, in
    any language), no claim over a failed last call, and no message that spoke of a failure turned into
    success while the failed receipt stays."""
    facts = ledger_of(edited)
    patterns = facts.analysis.config.patterns
    written = "\n".join(message_text(m) for m in original.messages if m.role == "assistant")
    findings: list[tuple[RefusalKind, str]] = []
    for index, message in enumerate(edited.messages):
        if message.role != "assistant":
            continue
        for piece in split_sentences(message_text(message)):
            text = piece.text.strip()
            if text in written:
                continue
            if patterns.future.search(text) and (patterns.claim.search(text) or patterns.completion.search(text)):
                findings.append(("future-claim", f"T{message.turn}: {text!r} promises a result"))
        original_message = original.messages[message_map[index]] if index < len(message_map) else None
        if (original_message is not None and patterns.prior_failure.search(message_text(original_message))
                and not patterns.prior_failure.search(message_text(message)) and message_text(message).strip()
                and _failed_receipt_kept(facts, index)):
            findings.append(("flip", f"T{message.turn}: the text no longer speaks of the failure its receipt still shows"))
        elif original_message is not None and (open_problem := _open_problem_unreported(edited, original_message,
                                                                                        message, index)):
            problem_kind, problem = open_problem
            what = "failed" if problem_kind == "flip" else "still running"
            findings.append((problem_kind, f"T{message.turn}: the rewritten final answer no longer reports the {what} "
                                           f"{problem.name} call of T{problem.turn}, whose receipt it keeps"))
        elif original_message is not None and (lost := _failure_ties_lost(edited, original_message, message, index)):
            lost_kind, ties = lost
            what = "the failed receipt" if lost_kind == "flip" else "the receipt of an unfinished job"
            findings.append((lost_kind, f"T{message.turn}: the text no longer names {ties}, which tie it to {what} it "
                                   f"still follows"))
    for claim in facts.claims:
        sentence = claim.sentence
        if claim.text in written or sentence.hedged or (sentence.mentions_failure and not sentence.resolution):
            continue
        job = _still_running(facts, claim)
        if job is not None and not patterns.running.search(claim.text):
            findings.append(("future-claim", f"T{claim.turn}: {claim.text!r} claims completion while the receipt of the "
                                             f"{job.name} call of T{job.turn} shows it is not finished"))
            continue
        why = _claim_unsupported(facts, claim)
        if why is not None:
            findings.append(("flip" if "failed" in why else "order", f"T{claim.turn}: {claim.text!r} {why}"))
    kind: RefusalKind | None = findings[0][0] if findings else None
    return ValidatorResult(
        name="new-claims-supported", passed=not findings,
        detail="the edit wrote a claim the receipts do not support" if findings else "no unsupported new claim",
        findings=[f for _, f in findings], kind=kind,
    )


def final_report_kept(original: Trajectory, edited: Trajectory, message_map: Sequence[int]) -> ValidatorResult:
    """A rewritten final answer still reports the receipt it answers, by values, in any language: the original final
    answer named words only the last kept receipt before it showed (not the call's nor the query's: ``lint`` of a CI
    run's failed jobs, ``N-88`` of a map's unreachable nodes, ``sm-305`` of a sensor out of tolerance) and the rewrite
    names none of them. What that receipt showed was replaced by a new story: over a failure (the ledger's
    ``failed`` or ``partial``, or a receipt line the failure vocabularies read) a ``flip``, over a job still going a
    ``future-claim``, otherwise a final answer that lost its support (``unsupported-final``). Pooled from
    rw13-flip-ru-run-failed-lint, rw16-flip-mn-map-invalid, rw17-flip-my-out-of-tolerance (E3): the first check that
    needs no vocabulary of the answer's language."""
    findings: list[str] = []
    kind: RefusalKind | None = None
    after = _final_index(edited)
    if after is not None and after < len(message_map) and not edited.messages[after].tool_calls \
            and original.messages[message_map[after]].role == "assistant":
        old_text, new_text = message_text(original.messages[message_map[after]]), message_text(edited.messages[after])
        facts = ledger_of(edited)
        seen = [a for a in facts.actions if a.visible_at < after and not a.is_plan and a.receipt is not None]
        if old_text != new_text and new_text.strip() and seen:
            last = seen[-1]
            assert last.receipt is not None
            receipt = last.receipt.content[:4000]
            only = value_words(receipt) - value_words(last.text + "\n" + edited.query)
            reported = only & value_words(old_text)
            if reported and not reported & value_words(new_text):
                kind = _report_kind(facts, last, receipt)
                # Over a receipt that shows no problem, plain words ("created", "successfully") are wording: only a
                # value dropped (an id, a number, a dotted or hyphenated name) is a lost report.
                if kind == "unsupported-final" and not any(_VALUE_SHAPE.search(word) for word in reported):
                    kind = None
            if kind is not None:
                findings.append(f"T{edited.messages[after].turn}: the rewritten final answer names none of "
                                f"{', '.join(repr(w) for w in sorted(reported))}, which the original took from the "
                                f"receipt of the {last.name} call of T{last.turn} it still answers")
        if old_text != new_text and new_text.strip() and (undone := _undone_part_dropped(original, old_text, new_text)):
            # After a failed change the dropped word was the failure's report (``flip``); else the part was never done.
            kind = kind or ("flip" if seen and seen[-1].status in ("failed", "partial") else "unsupported-final")
            findings.append(f"T{edited.messages[after].turn}: the rewrite dropped {undone!r}, the original's word on a "
                            "part of the request no call touched, and its final answer still names that part")
    return ValidatorResult(
        name="final-report-kept", passed=not findings,
        detail="the rewrite dropped the final answer's report of its receipt" if findings
        else "the final answer still reports its receipt",
        findings=findings, kind=kind or "unsupported-final",
    )


_VALUE_SHAPE = re.compile(r"\d|[.\-/:@_]")


_SENTENCE_END = (".", "!", "?", "。", "！", "？", ":")


def _request_names(query: str) -> frozenset[str]:
    """The names a request gives (pure): its value-shaped words and the words it capitalises inside a sentence
    ("Finance", "Billing"), as :func:`value_words` reads them; never its plain words, which any answer shares."""
    found: set[str] = set()
    for match in re.finditer(r"[^\W_](?:[\w.\-/:@]*[^\W_])?", query):
        word = match.group(0)
        opening = not query[:match.start()].rstrip() or query[:match.start()].rstrip().endswith(_SENTENCE_END)
        if _VALUE_SHAPE.search(word) or (word[:1].isupper() and not opening):
            found |= value_words(word)
    return frozenset(found)


def _undone_part_dropped(original: Trajectory, old_text: str, new_text: str) -> str | None:
    """The sentence of the original final answer on a part of the request no call touched that the rewrite dropped,
    while its final answer still names that part, or None (by values, in any language): the sentence names a name the
    request gives (:func:`_request_names`) that no call's arguments nor any receipt hold, and nothing a call or
    receipt shows, not even a number, nor speaks of a failure ("Sharing it with Finance is still to do.", "Nincs
    bundle."); a new sentence naming that part is then a claim of it, unless a vocabulary reads it as not done
    (failure, future, hedge or running words, a question). From rw16-final-en-share-added and
    rw10-flip-hu-gradle-failed (E3)."""
    shown: set[str] = set()
    for site in call_sites(original):
        shown |= value_words(site.call.argument_text())
        if site.receipt is not None:
            shown |= value_words((site.receipt.content or "")[:4000])
    request = _request_names(original.query) - shown
    if not request:
        return None
    kept = {piece.text.strip() for piece in split_sentences(new_text)}
    patterns = ledger_of(original).analysis.config.patterns
    for piece in split_sentences(old_text):
        sentence = piece.text.strip()
        words = value_words(sentence)
        # A sentence about a failure and its retry is the story the edit may cut, not a part of the request.
        if sentence in kept or words & shown or stated_numbers(sentence) or speaks_of_failure(original, sentence):
            continue
        part = words & request
        if not part:
            continue
        naming = [p.text for p in split_sentences(new_text) if value_words(p.text) & part]
        if naming and not any(
                any(m.search(text) for m in (patterns.failure_words, patterns.future, patterns.hedge, patterns.running,
                                             patterns.prior_failure)) or text.rstrip().endswith(("?", "？", "؟"))
                for text in naming):
            return sentence
    return None


def _report_kind(facts: Ledger, action: Action, receipt: str) -> RefusalKind:
    """What replacing the report of ``action``'s receipt hides: a failure (``flip``: the ledger's failed or partial,
    or a line of the receipt the failure vocabularies read), a job still going (``future-claim``), else the final
    answer's support (``unsupported-final``)."""
    if action.status == "running":
        return "future-claim"
    patterns = facts.analysis.config.patterns
    if action.status in ("failed", "partial") or any(
            patterns.prior_failure.search(line) or patterns.error.search(line) or patterns.failure_count.search(line)
            for line in receipt.splitlines()):
        return "flip"
    return "unsupported-final"


def _failure_ties_lost(edited: Trajectory, before: Message, after: Message, index: int) -> tuple[RefusalKind, str] | None:
    """Values first, in any language: the rewritten message ``index`` answers a kept receipt that did not succeed
    (the last call before it failed, or its job is still running), its original named what ties it to that receipt
    (a value or name of the call or receipt, the ledger's :meth:`~judge.facts.Ledger.names_of`, or a word of the
    call's text or receipt), and the rewrite keeps none of those ties: a report of the failure turned into something else
    (``flip``), or of a running job into a result (``future-claim``). Returns the kind and the lost ties."""
    old_text, new_text = message_text(before), message_text(after)
    if old_text == new_text or not new_text.strip():
        return None
    facts = ledger_of(edited)
    seen = [a for a in facts.actions if a.visible_at < index and not a.is_plan]
    if not seen or seen[-1].status not in ("failed", "partial", "running"):
        return None
    failed = seen[-1]
    receipt = failed.receipt.content[:4000] if failed.receipt is not None else ""
    # The task's own words count too: a report of a failed push names the push and its branch, whatever the query says.
    names, words = facts.names_of(failed), _stems(failed.text + "\n" + receipt)

    def ties(text: str) -> set[str]:
        return set(names_in(text) & names) | set(_stems(text) & words)

    kind: RefusalKind = "future-claim" if failed.status == "running" else "flip"
    lost = ties(old_text)
    if not lost:
        return None
    if not lost & ties(new_text):  # no tie of the original kept: a new story
        return kind, ", ".join(repr(t) for t in sorted(lost))
    # Some tie kept, but maybe only the object's (the bundle, the branch): the original named the failure by values
    # only the receipt showed (the error's class name, the failing task, its code, "FAILED" copied from it; not the
    # call's own words nor the query's) and the rewrite names none of it nor says in words of the rules config that
    # something failed or is still going: a flip in any language.
    failure_values = receipt_values(receipt, cased=True) - text_tokens(failed.text + "\n" + edited.query)

    def failure_ties(text: str) -> set[str]:
        return set(text_tokens(text) & failure_values)

    named = failure_ties(old_text)
    patterns = facts.analysis.config.patterns
    reported = (patterns.failure_words.search(new_text) or patterns.running.search(new_text)
                or any(mark in new_text for mark in _FAILURE_MARKS))
    if named and not failure_ties(new_text) and not reported:
        return kind, ", ".join(repr(t) for t in sorted(named))
    return None


# Language-neutral signs that a text reports a failure: a cross or warning mark (the rules judge's, too).
_FAILURE_MARKS = ("❌", "✗", "✘", "⚠", "🚫", "⛔")


def _open_problem_unreported(edited: Trajectory, before: Message, after: Message,
                             index: int) -> tuple[RefusalKind, Action] | None:
    """The open problem a rewritten final answer leaves unreported, or None: message ``index`` is the final answer,
    the rewrite wrote new sentences into it (not only cut some), and the last call before it is a change that failed
    and was neither redone nor shown done (the ledger's :meth:`~judge.facts.Ledger.recovery`, reports aside):
    ``flip``; or a job whose last poll shows it still going (the ledger's ``running``, or a poll that printed only
    its state, :func:`~judge.facts.jobs.bare_state`): ``future-claim``. The new text must report it in some way the
    ledger reads: failure, hedge, future or running words of a vocabulary, a failure mark, a question back, the
    failure's values (:meth:`~judge.facts.Ledger.reports_by_values`) or the poll's state word. In a language with no
    vocabulary an honest rewording cannot be told from a flip, so such a rewrite is refused: what cannot be checked
    against the kept receipt is not accepted."""
    if index != _final_index(edited) or after.tool_calls:
        return None
    old_text, new_text = message_text(before), message_text(after)
    if not new_text.strip() or all(piece.text in old_text for piece in split_sentences(new_text)):
        return None  # unchanged, or only cut: cuts are read by the other validators
    facts = ledger_of(edited)
    seen = [a for a in facts.actions if a.visible_at < index and not a.is_plan]
    if not seen:
        return None
    last = seen[-1]
    status = last.status
    patterns = facts.analysis.config.patterns
    kind: RefusalKind
    if status in ("failed", "partial") and not (last.read_only or last.is_check):
        if facts.recovery(last, index, reported=False) is not None or facts.reports_by_values(last, new_text):
            return None
        # A word of the error output that is not what the call worked on ties the text to the failure ("push" of
        # "failed to push some refs"); the object itself does not ("fct_sales" is the failure's and the claim's word
        # alike: the ledger's objects_of, never the program or its subcommand).
        receipt = last.receipt.content[:4000] if last.receipt is not None else ""
        objects = _stems(" ".join(facts.objects_of(last)))
        if _stems(new_text) & (_stems(receipt) - objects):
            return None
        kind = "flip"
    elif last.receipt is not None and (status == "running" or bare_state(
            last.receipt.content, patterns.running, spaced=True) == "non-terminal"):
        content = last.receipt.content
        state = going_value(content, patterns.running) or (content.split()[0].lower() if last.status != "running" else "")
        # The poll's state word, or the count it had done so far (180 of 200), kept: the job is reported going.
        if (state and state in new_text.lower()) or (progress_done(content) & {int(n) for n in stated_numbers(new_text) if n == int(n)}):
            return None
        kind = "future-claim"
    else:
        return None
    # Words that report the problem. Future and hedge words report a failure honestly ("I will retry", "probably
    # a typo"), but over a job still going they are the promise itself ("it will surely finish in minutes"): only
    # running words (or the state word, the progress count, read above) report that.
    reporting = ((patterns.failure_words, patterns.running)
                 + ((patterns.future, patterns.hedge) if kind == "flip" else ()))
    if (speaks_of_failure(edited, new_text) or any(mark in new_text for mark in _FAILURE_MARKS)
            or any(p.search(new_text) for p in reporting)
            or new_text.rstrip().endswith(("?", "？", "؟"))):
        return None
    return kind, last


def _failed_receipt_kept(facts: Ledger, index: int) -> bool:
    """Whether the last call seen before message ``index`` failed (the failure its text spoke of is kept)."""
    seen = [a for a in facts.actions if a.visible_at < index and not a.is_plan]
    return bool(seen) and seen[-1].status in ("failed", "partial", "unknown")


def _still_running(facts: Ledger, claim: Claim) -> Action | None:
    """The job a claim speaks of whose last receipt before it shows a non-terminal status (the ledger's
    ``running``: still running, queued, ``pending_review``; the status words are the rules vocabularies'), or None.
    The claim speaks of the job when it names a value of the job's call or receipt, or when the job is the last
    call before it that may change state; a later successful call of the same job says it finished."""
    seen = [a for a in facts.actions if a.visible_at < claim.message_index and not a.is_plan]
    changes = [a for a in seen if not a.read_only]
    for position in range(len(seen) - 1, -1, -1):
        job = seen[position]
        if job.status != "running":
            continue
        named = not set(claim.values).isdisjoint(facts.names_of(job))
        if not (named or (changes and changes[-1] is job)):
            continue
        settled = any(later.status == "ok" and later.intent == job.intent for later in seen[position + 1:])
        return None if settled else job
    return None


def _claim_unsupported(facts: Ledger, claim: Claim) -> str | None:
    """Why a new claim sentence is not supported by the edited trajectory's receipts (None when it is)."""
    shown_first = [v for v in claim.values if (value := facts.values.get(v)) is not None and value.first.source == "receipt"]
    if (shown_first or claim.counts) and not claim.supported_by:
        return "states values no receipt before it shows"
    index = claim.message_index
    own = [a for a in facts.actions if a.message_index == index and not a.read_only and not a.is_plan]
    if own and not claim.supported_by:
        return f"claims a result in the message that makes the {own[0].name} call, before its receipt"
    prior = [a for a in facts.actions if a.visible_at < index and not a.read_only and not a.is_plan]
    if prior and prior[-1].status in ("failed", "partial", "unknown", "noop") and not claim.supported_by:
        return f"claims a result although the {prior[-1].name} call of T{prior[-1].turn} failed"
    return None
