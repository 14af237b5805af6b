"""The fact log of a trajectory: its ledger as short text lines (the design's "validation log").

What the receipts show, not what the agent says: each action with its outcome, each resource id with the turn
where it first appears and its later uses, each file's versions and the checks bound to them, each claim with the
receipts that support it (or none). The LLM judge (prompt judge-v3) reads it beside the trajectory; the decisive
turn's chain (:mod:`judge.facts.flow`) is printed in the same line forms.

Bounded: :func:`fact_log` keeps within ``max_chars`` (sections share the budget in order; a cut section says how
many lines it left out, and failed actions are kept before successful ones). Pure: the caller neutralises and
scrubs the text before it reaches a prompt (the log repeats receipt text).
"""

from __future__ import annotations

from judge.facts.analysis import Action, excerpt
from judge.facts.config import default_config
from judge.facts.flow import error_shown
from judge.facts.ledger import Ledger
from judge.facts.values import is_resource_id

__all__ = ["DEFAULT_MAX_CHARS", "FORMAT", "fact_log", "fact_log_version"]

# The log's line forms; raise it when they change, so cached judge-v3 answers given the old log are not reused.
FORMAT = "fact-log-1"
DEFAULT_MAX_CHARS = 6000
LINE_CHARS = 160  # one fact, at most
MAX_USES = 6  # later uses listed per value
# Share of the budget of each section (what a section leaves unused goes to the next).
_SHARES = (("actions", 0.45), ("claims", 0.25), ("artifacts", 0.15), ("values", 0.15))


def fact_log_version() -> str:
    """What besides the trajectory decides its fact log: the line forms and the bundled vocabularies' version."""
    return f"{FORMAT}/{default_config().version}"


def fact_log(ledger: Ledger, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """The fact log of ``ledger``'s trajectory in at most ``max_chars`` characters ("" when nothing is known)."""
    sections = {"actions": _action_lines(ledger), "claims": _claim_lines(ledger),
                "artifacts": _artifact_lines(ledger), "values": _value_lines(ledger)}
    out: list[str] = []
    carry = 0.0
    for name, share in _SHARES:
        lines, priority = sections[name]
        if not lines:
            carry += max_chars * share
            continue
        budget = int(max_chars * share + carry) - len(name) - 2
        kept, used = _fit(lines, priority, budget)
        carry = max(0.0, budget - used)
        out.append(f"{name}:")
        out += [f"  {line}" for line in kept]
    text = "\n".join(out)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


def _fit(lines: list[str], priority: list[bool], budget: int) -> tuple[list[str], int]:
    """The lines that fit ``budget`` (priority lines first, then in order), in their order, and a note of the rest."""
    order = sorted(range(len(lines)), key=lambda i: (not priority[i], i))
    chosen: set[int] = set()
    used = 0
    note = 60  # room for the note of left-out lines
    for i in order:
        cost = len(lines[i]) + 3
        if used + cost > budget - (note if len(chosen) + 1 < len(lines) else 0):
            continue
        chosen.add(i)
        used += cost
    kept = [lines[i] for i in sorted(chosen)]
    if len(chosen) < len(lines):
        kept.append(f"[... {len(lines) - len(chosen)} more lines left out ...]")
        used += len(kept[-1]) + 3
    return kept, used


def _what(ledger: Ledger, action: Action) -> str:
    command = action.command
    return excerpt(f"{action.name} {command if command is not None else action.text}", 70)


def _action_lines(ledger: Ledger) -> tuple[list[str], list[bool]]:
    lines: list[str] = []
    priority: list[bool] = []
    for action in ledger.actions:
        if action.is_plan:
            continue
        status = action.status + (" (check reported failures, exit 0)" if action.silent_failure else "")
        if action.receipt is None:
            shown = "no receipt"
        else:
            shown = error_shown(action) or action.receipt.content.strip() or "(empty)"
        lines.append(excerpt(f"T{action.turn} #{action.order} {_what(ledger, action)} -> {status}: {shown}", LINE_CHARS))
        priority.append(action.status != "ok" or action.silent_failure)
    return lines, priority


def _claim_lines(ledger: Ledger) -> tuple[list[str], list[bool]]:
    lines: list[str] = []
    priority: list[bool] = []
    for claim in ledger.claims:
        if claim.sentence.hedged:
            continue
        support = (f"supported by {', '.join(f'#{o}' for o in claim.supported_by)}" if claim.supported_by
                   else "no receipt supports it")
        tense = "future" if claim.tense == "future" else "claim"
        lines.append(excerpt(f"T{claim.turn} {tense} \"{claim.text}\" -> {support}", LINE_CHARS))
        priority.append(not claim.supported_by)
    return lines, priority


def _artifact_lines(ledger: Ledger) -> tuple[list[str], list[bool]]:
    lines: list[str] = []
    priority: list[bool] = []
    files = dict.fromkeys(path for a in ledger.actions if a.status in ("ok", "partial") for path in a.writes)
    for path in files:
        versions = ", ".join(f"v{v.number} T{ledger.actions[v.action].turn} #{v.action}" for v in ledger.history(path))
        lines.append(excerpt(f"{path}: {versions}", LINE_CHARS))
        priority.append(False)
    for action in ledger.actions:
        if not action.is_check:
            continue
        bound = ledger.bound_versions(action)
        on = ", ".join(f"{a} v{v}" for a, v in bound.items() if a in files) or "no file written before it"
        result = "reported failures" if action.silent_failure else action.status
        lines.append(excerpt(f"T{action.turn} #{action.order} check on {on} -> {result}", LINE_CHARS))
        priority.append(True)
    return lines, priority


def _value_lines(ledger: Ledger) -> tuple[list[str], list[bool]]:
    lines: list[str] = []
    priority: list[bool] = []
    for value in ledger.values.values():
        if not is_resource_id(value.token):
            continue
        first = value.first
        where = f"T{first.turn} {first.source}" + (f" #{first.action}" if first.action is not None else "")
        uses = ", ".join(f"T{u.turn} {u.source}" + (f" #{u.action}" if u.action is not None else "")
                         for u in value.uses[:MAX_USES]) + (" ..." if len(value.uses) > MAX_USES else "")
        shown = ledger.first_receipt(value.token)
        used = next((u.message_index for u in [first, *value.uses] if u.source == "argument"), None)
        # Stated or used by the agent before any receipt showed it: an unchecked value.
        unshown = first.source in ("text", "argument") and (
            shown is None or (used is not None and shown.message_index > used))
        lines.append(excerpt(f"{value.token}: first {where}" + (" (no receipt showed it first)" if unshown else "")
                             + (f"; used {uses}" if uses else ""), LINE_CHARS))
        priority.append(unshown)
    return lines, priority
