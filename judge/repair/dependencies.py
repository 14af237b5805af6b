"""The four dependency kinds the offline editor checks before deleting a failed call (reference design, "Offline").

- resource state: did the call create or modify anything? (read-only, or rejected before it ran)
- returned values: are values that only its receipt contained (ids, flags, numbers) used later?
- control conditions: did later decisions branch on the failure? A plain retry of the same call does not
  block (after the edit it is simply the first attempt); a different action chosen *because* of the failure does.
- textual context: does later text refer to the failure, in any wording or language? Such sentences are cut;
  one too long to cut safely is flagged.

Each check returns :class:`Dependency` rows with a status: ``none`` (no dependency), ``resolved`` (the edit
handles it), ``blocking`` (needs real execution: back to online) or ``unknown`` (goes to pending).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from judge.facts.values import value_tokens
from judge.model import Trajectory
from judge.repair.calls import (
    CallSite,
    call_sites,
    is_read_only,
    message_text,
    receipt_failed,
    shell_command,
    side_effect_free,
)
from judge.repair.textref import (
    Detectors,
    Sentence,
    distinctive_tokens,
    split_sentences,
)

DependencyKind = Literal["resource-state", "returned-values", "control", "textual"]
DependencyStatus = Literal["none", "resolved", "blocking", "unknown"]

# A sentence longer than this may carry more than the failure: it is flagged rather than cut.
MAX_CUT_WORDS = 40
MAX_CUT_CJK_CHARS = 60
RETRY_SIMILARITY = 0.5
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


def _later_text(trajectory: Trajectory, index: int) -> str:
    message = trajectory.messages[index]
    return message_text(message) + "\n" + "\n".join(c.argument_text() for c in message.tool_calls)


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
    """Values that only the deleted receipt contained and that later messages use."""
    if site.receipt is None or site.receipt_index is None:
        return []
    known_before = trajectory.query + "\n" + site.call.argument_text()
    for message in trajectory.messages[: site.receipt_index]:
        known_before += "\n" + message_text(message) + "\n" + "\n".join(c.argument_text() for c in message.tool_calls)
        if message.receipt:
            known_before += "\n" + message.receipt.content
    candidates = {t for t in value_tokens(site.receipt.content) if t not in known_before}
    found: list[Dependency] = []
    other_sources: set[str] = set()
    for index in range(site.receipt_index + 1, len(trajectory.messages)):
        message = trajectory.messages[index]
        if message.role == "tool" and message.receipt:
            # A later receipt that also returns the value becomes its source from here on.
            other_sources |= {t for t in candidates if t in message.receipt.content}
            continue
        if message.role != "assistant":
            continue
        text = _later_text(trajectory, index)
        for token in sorted(candidates - other_sources):
            if token in text:
                found.append(Dependency(
                    kind="returned-values", status="blocking", call_id=site.call.id, turn=message.turn,
                    detail=f"T{message.turn} uses {token!r}, which only the deleted receipt returned",
                    evidence=token,
                ))
                candidates.discard(token)
    return found


def _tokens_of_call(site: CallSite) -> set[str]:
    return distinctive_tokens(site.call.argument_text()) | {site.call.name.lower()}


def is_retry(failed: CallSite, later: CallSite) -> bool:
    """Whether ``later`` repeats ``failed`` with adjusted arguments (same tool, mostly the same arguments)."""
    if failed.call.name != later.call.name:
        return False
    a_cmd, b_cmd = shell_command(failed.call), shell_command(later.call)
    if a_cmd is not None and b_cmd is not None:
        # Same program and subcommand path (the words before the first flag): `x records create --a` vs `--b`.
        return _command_path(a_cmd) == _command_path(b_cmd) and not {"--help", "-h", "help"} & set(b_cmd.split())
    # Same tool with the same argument names: the same intent with corrected values (another path, id).
    if (isinstance(failed.call.arguments, dict) and isinstance(later.call.arguments, dict)
            and failed.call.arguments.keys() == later.call.arguments.keys()):
        return True
    a, b = distinctive_tokens(failed.call.argument_text()), distinctive_tokens(later.call.argument_text())
    if not a and not b:
        return True
    return len(a & b) / max(1, len(a | b)) >= RETRY_SIMILARITY


def recovery_window(trajectory: Trajectory, site: CallSite, sites: list[CallSite], span: int = RECOVERY_TURNS) -> range:
    """Message indices from the failed receipt to the first retry of the call (inclusive), else ``span`` turns.

    Text in this window is where an agent talks about the failure it is recovering from: a structural cue.
    """
    start = (site.receipt_index if site.receipt_index is not None else site.message_index) + 1
    retry = next((s for s in sites if s.message_index > site.message_index and is_retry(site, s)), None)
    if retry is not None:
        return range(start, retry.message_index + 1)
    assistants = [i for i in range(start, len(trajectory.messages)) if trajectory.messages[i].role == "assistant"][:span]
    return range(start, (assistants[-1] + 1) if assistants else start)


def _command_path(command: str) -> list[str]:
    words = command.strip().split()
    path: list[str] = []
    for word in words:
        if word.startswith("-") or "=" in word or word in ("&&", "|", ";"):
            break
        path.append(word)
    return path[:4]


def textual_context(
    trajectory: Trajectory, site: CallSite, detectors: Detectors, failed_indices: list[int], deleted_indices: set[int],
    sites: list[CallSite] | None = None,
) -> tuple[list[Dependency], list[SentenceEdit]]:
    """Sentences after the failure that refer to it (paraphrase-aware), attributed to the nearest failure.

    A sentence refers to the deleted failure when the embedding detector says it talks about a failure and
    a structural cue ties it to this one: it lies in the recovery window (between the failure and its retry)
    or names the call's own tokens (its arguments, its error text). ``failed_indices`` are the message indices
    of all failed receipts; ``deleted_indices`` those being deleted. A reference whose nearest preceding
    failure stays in the trajectory is left alone unless it names the deleted call.
    """
    if site.receipt_index is None:
        return [], []
    sites = sites if sites is not None else call_sites(trajectory)
    window = recovery_window(trajectory, site, sites)
    own_tokens = _tokens_of_call(site) | (distinctive_tokens(site.receipt.content if site.receipt else "") - distinctive_tokens(trajectory.query))
    items: list[tuple[int, TextField, Sentence]] = []
    fields: tuple[TextField, ...] = ("reasoning", "content")
    cues: list[bool] = []
    for index in range(site.receipt_index + 1, len(trajectory.messages)):
        message = trajectory.messages[index]
        if message.role != "assistant":
            continue
        for field_name in fields:
            for sentence in split_sentences(getattr(message, field_name) or ""):
                names_call = bool(distinctive_tokens(sentence.text) & own_tokens)
                if index in window or names_call:
                    items.append((index, field_name, sentence))
                    cues.append(True)
    if not items:
        return [Dependency(kind="textual", status="none", call_id=site.call.id, detail="no later text near or about the failure")], []
    verdicts = detectors.failure_reference([s.text for _, _, s in items], cues)
    edits: list[SentenceEdit] = []
    deps: list[Dependency] = []
    for (index, field_name, sentence), (is_ref, margin) in zip(items, verdicts):
        if not is_ref:
            continue
        nearest = max((i for i in failed_indices if i < index), default=None)
        names_call = bool(distinctive_tokens(sentence.text) & own_tokens)
        if nearest not in deleted_indices and not names_call:
            continue  # it refers to a failure that stays
        if nearest is not None and nearest != site.receipt_index and nearest in deleted_indices and not names_call:
            continue  # it belongs to another deleted failure (handled there)
        text = sentence.text
        too_long = len(text.split()) > MAX_CUT_WORDS or len(re.findall(r"[\u3040-\u30ff\u3400-\u9fff]", text)) > MAX_CUT_CJK_CHARS
        message = trajectory.messages[index]
        edits.append(SentenceEdit(
            message_index=index, turn=message.turn, field=field_name, start=sentence.start, end=sentence.end,
            text=text, margin=round(margin, 3), action="flagged" if too_long else "removed",
            why="refers to the deleted failure" + (" but is too long to cut without losing other content" if too_long else ""),
        ))
        deps.append(Dependency(
            kind="textual", status="unknown" if too_long else "resolved", call_id=site.call.id, turn=message.turn,
            detail=("flagged" if too_long else "cut") + f" a reference to the deleted failure (margin {margin:.2f})",
            evidence=text,
        ))
    if not deps:
        deps.append(Dependency(kind="textual", status="none", call_id=site.call.id, detail="no later text refers to the failure"))
    return deps, edits


def control_conditions(
    trajectory: Trajectory, site: CallSite, sites: list[CallSite], deleted: set[str], references: list[SentenceEdit]
) -> Dependency:
    """Did a later decision branch on the failure?

    The calls after the failure, up to its retry, are the decisions it caused. A retry is resolved by the
    edit (it becomes the first attempt); read-only checks stay valid without the failure (they read as
    ordinary exploration once the text about the failure is cut). A state-changing call that is not a retry
    and whose explanation cites the failure is a fallback chosen because of it: the decision must be re-made.
    """
    window = recovery_window(trajectory, site, sites)
    # A user (or another agent) who answered the failure is part of the environment: their words cannot be
    # edited, and without the failure they would not have been said. The conversation must be re-run.
    replies = [i for i in window if trajectory.messages[i].role == "user"]
    if replies:
        reply = trajectory.messages[replies[0]]
        return Dependency(kind="control", status="blocking", call_id=site.call.id, turn=reply.turn,
                          detail=f"a user message after T{reply.turn} answers the failure; the conversation must be re-run",
                          evidence=reply.content[:200])
    after = [s for s in sites if s.call.id not in deleted and s.message_index > site.message_index and s.message_index in window]
    if not after:
        return Dependency(kind="control", status="none", call_id=site.call.id, detail="no later decision near the failure")
    checks: list[int] = []
    for later in after:
        if is_retry(site, later):
            extra = f" (read-only checks in between at {', '.join(f'T{t}' for t in checks)})" if checks else ""
            return Dependency(kind="control", status="resolved", call_id=site.call.id, turn=later.turn,
                              detail=f"T{later.turn} retries {site.call.name}; after the edit it is the first attempt{extra}")
        if is_read_only(later.call)[0]:
            checks.append(later.turn)
            continue
        cited = [r for r in references if r.message_index <= later.message_index]
        if cited:
            return Dependency(kind="control", status="blocking", call_id=site.call.id, turn=later.turn,
                              detail=f"T{later.turn} changed course ({later.call.name}) because of the failure; the decision must be re-made",
                              evidence=cited[0].text)
        break
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
