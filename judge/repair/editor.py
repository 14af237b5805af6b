"""The offline editor: delete side-effect-free failed calls, or fix wording, after checking dependencies.

``offline_edit`` never invents an action or a receipt. It removes calls (with their receipts), cuts sentences
that only existed because of what it removed, renumbers the turns (keeping the old -> new map), and then
runs the validators. Whatever needs real execution goes back to an online route; whatever it cannot decide
goes to ``pending``. The result carries a readable unified diff of the rendered trajectory.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Sequence
from typing import Any, Literal, TypedDict, TypeVar

from pydantic import BaseModel, Field

from judge.model import Message, Trajectory, number_turns
from judge.repair.calls import (
    CallSite,
    call_sites,
    corrected_empty_read,
    effects_shown,
    is_read_only,
    receipt_failed,
    refused_argument,
)
from judge.repair.dependencies import (
    Dependency,
    SentenceEdit,
    control_conditions,
    failed_receipt_indices,
    resource_state,
    returned_values,
    textual_context,
)
from judge.repair.textref import Detectors, get_detectors, remove_spans, split_sentences
from judge.repair.validators import (
    ValidatorResult,
    final_answer_supported,
    find_premature_claims,
    no_dependency_removed,
    validate_edit,
)
from judge.rules import DetectorNames
from judge.schema import Cluster, Issue, Route, ScoredIssue

IssueLike = Cluster | ScoredIssue | Issue
_M = TypeVar("_M", bound=BaseModel)

EDIT_SUFFIX = "+edit"
# Tags of wording defects the editor fixes by cutting the sentence (no action changes): the rules detectors
# registered with the role "wording", and free tags an LLM judge may give such a defect.
WORDING_TAGS = DetectorNames("wording", also=("wording", "stale-reference", "typo"))


class _EditOf(TypedDict):
    """Which trajectory and issue an :class:`EditResult` is about (the fields every result starts from)."""

    trajectory_id: str
    cluster: str | None


class EditResult(BaseModel):
    """What the editor did (or why it did not) for one issue of one trajectory; one row of ``edits.jsonl``."""

    trajectory_id: str
    cluster: str | None = None
    kind: Literal["remove-failed-call", "wording", "none"]
    status: Literal["edited", "online", "pending"]
    route: Route
    reason: str
    calls: list[str] = Field(default_factory=list, description="The failed calls the edit targets.")
    removed_calls: list[str] = Field(default_factory=list, description="The calls actually removed (edited only).")
    removed_turns: list[int] = Field(default_factory=list, description="Original turns deleted entirely.")
    sentences: list[SentenceEdit] = Field(default_factory=list)
    dependencies: list[Dependency] = Field(default_factory=list)
    validators: list[ValidatorResult] = Field(default_factory=list)
    reasons: list[str] = Field(default_factory=list, description="Why an edit was refused: refusal kinds of "
                               "docs/finding-tags.md, most specific first (dependency, unsupported-final, effects, ...).")
    turn_map: dict[int, int | None] = Field(default_factory=dict, description="Original turn -> edited turn (None = removed).")
    message_map: list[int] = Field(default_factory=list, description="Original message index of each edited message.")
    diff: str = ""
    edited: Trajectory | None = Field(default=None, exclude=True)

    def log_row(self) -> dict[str, Any]:
        """The ``edits.jsonl`` row (the edited trajectory itself goes to ``edited.jsonl``)."""
        return self.model_dump(mode="json")


def _issue_fields(issue: IssueLike) -> tuple[str | None, int | None, str, str | None, str]:
    """(cluster id, turn, category, tag, evidence text) of any issue-like row."""
    if isinstance(issue, Cluster):
        evidence = "\n".join(m.issue.evidence for m in issue.members if m.issue.evidence)
        return issue.cluster, issue.turn, issue.category, issue.tag, evidence
    if isinstance(issue, ScoredIssue):
        return issue.cluster, issue.turn, issue.category, issue.tag, ""
    return None, issue.turn, issue.category, issue.tag, issue.evidence


def failed_calls_at(trajectory: Trajectory, turn: int | None) -> list[CallSite]:
    """The failed calls the issue's turn made (the call an issue about a failed call points at)."""
    if turn is None:
        return []
    sites = [s for s in call_sites(trajectory) if s.turn == turn]
    failed = [s for s in sites if s.failed]
    if failed:
        return failed
    # Failed by its content rather than its exit code: a read whose short answer names one of its own arguments
    # ("No resources found in shopp namespace.") that a later successful run of the same program dropped.
    # Or a read-only lookup that found nothing ("(integer) 0", an empty output), run again with corrected arguments.
    return [s for s in sites if is_read_only(s.call)[0] and (
        refused_argument(trajectory, s, failed_only=False) or corrected_empty_read(trajectory, s))]


def offline_edit(
    trajectory: Trajectory,
    issue: IssueLike,
    *,
    detectors: Detectors | None = None,
    evidence: str | None = None,
) -> EditResult:
    """Try to fix ``issue`` by a local edit of ``trajectory``; see the module docstring.

    ``issue`` is a Cluster (its members' evidence is used), a ScoredIssue or an Issue. Returns an
    EditResult whose ``edited`` is the new trajectory when ``status == "edited"``.
    """
    detectors = detectors or get_detectors()
    cluster_id, turn, category, tag, quoted = _issue_fields(issue)
    quoted = evidence if evidence is not None else quoted
    base: _EditOf = {"trajectory_id": trajectory.id, "cluster": cluster_id}
    if turn is None:
        return EditResult(**base, kind="none", status="pending", route="pending", reason="the issue is not localised to a turn")
    if tag in WORDING_TAGS:
        return _wording_edit(trajectory, turn, quoted, detectors, base)
    failed = failed_calls_at(trajectory, turn)
    if not failed:
        route: Route = "online-regenerate" if category == "semantic" else "online-guided"
        return EditResult(**base, kind="none", status="online", route=route,
                          reason=f"T{turn} has no failed call to delete: the fix needs a new action")
    return _remove_calls(trajectory, failed, detectors, base)


def _remove_calls(trajectory: Trajectory, failed: list[CallSite], detectors: Detectors, base: _EditOf) -> EditResult:
    sites = call_sites(trajectory)
    deleted = {s.call.id for s in failed}
    failed_indices = failed_receipt_indices(trajectory)
    deleted_indices = {s.receipt_index for s in failed if s.receipt_index is not None}
    deps: list[Dependency] = []
    sentences: list[SentenceEdit] = []
    states = [resource_state(site, trajectory) for site in failed]
    if any(d.status == "blocking" for d in states):
        return _refused_for_state(trajectory, failed, states, detectors, base)
    for site, state in zip(failed, states):
        deps.append(state)
        deps.extend(returned_values(trajectory, site))
        text_deps, text_edits = textual_context(trajectory, site, detectors, failed_indices, deleted_indices, sites)
        deps.append(control_conditions(trajectory, site, sites, deleted, text_edits))
        deps.extend(text_deps)
        sentences.extend(e for e in text_edits if (e.message_index, e.field, e.start) not in {(x.message_index, x.field, x.start) for x in sentences})
    result = EditResult(**base, kind="remove-failed-call", status="edited", route="offline-edit", reason="",
                        calls=sorted(deleted), sentences=sentences, dependencies=deps)
    blocking = [d for d in deps if d.status == "blocking"]
    unknown = [d for d in deps if d.status == "unknown"]
    if blocking:
        result.status, result.route = "online", "online-guided"
        result.reasons = refusal_order([refusal_kind(trajectory, d) for d in blocking])
        result.reason = _reason_text(trajectory, blocking)
        return result
    if unknown:
        result.status, result.route = "pending", "pending"
        result.reasons = refusal_order([refusal_kind(trajectory, d) for d in unknown])
        result.reason = "unknown dependency: " + "; ".join(f"{d.kind}: {d.detail}" for d in unknown)
        return result
    edited, message_map, removed_turns = apply_edit(trajectory, deleted, [s for s in sentences if s.action == "removed"])
    return _finish(trajectory, edited, message_map, removed_turns, sorted(deleted), result, detectors)


# Refusal kinds, most specific first (docs/finding-tags.md): a later answer or decision uses the call's values, the
# final answer loses its only support, the receipt shows partial writes, and only then "it may have changed state".
REFUSAL_ORDER = ("dependency", "unsupported-final", "effects", "reference", "order", "flip", "future-claim",
                 "side-effects")


def refusal_order(kinds: Sequence[str]) -> list[str]:
    """The distinct refusal kinds, most specific first (pure): the first is the one users read as the reason."""
    rank = {kind: i for i, kind in enumerate(REFUSAL_ORDER)}
    return sorted(dict.fromkeys(kinds), key=lambda kind: rank.get(kind, len(rank)))


def refusal_kind(trajectory: Trajectory, dependency: Dependency) -> str:
    """The refusal kind a blocking or unknown dependency stands for: values or decisions taken from the call are a
    ``dependency``, text about it a ``reference``, its state ``effects`` when the receipt shows them (the ledger's
    ``partial``) and ``side-effects`` when it shows nothing either way."""
    if dependency.kind in ("returned-values", "control"):
        return "dependency"
    if dependency.kind == "textual":
        return "reference"
    site = next((s for s in call_sites(trajectory) if s.call.id == dependency.call_id), None)
    return "effects" if site is not None and effects_shown(trajectory, site) is not None else "side-effects"


def _reason_text(trajectory: Trajectory, dependencies: Sequence[Dependency]) -> str:
    rank = {kind: i for i, kind in enumerate(REFUSAL_ORDER)}
    ordered = sorted(dependencies, key=lambda d: rank[refusal_kind(trajectory, d)])
    return "; ".join(f"{d.kind}: {d.detail}" for d in ordered)


def _refused_for_state(trajectory: Trajectory, failed: list[CallSite], states: list[Dependency], detectors: Detectors,
                       base: _EditOf) -> EditResult:
    """A call that may have changed state cannot be deleted whatever the text says; the refusal still names every
    reason that applies, most specific first, so the online repair knows what to keep: the values and decisions
    later turns took from it (the ledger's, and the text that cites the failure before a changed course) and, on a
    trial of the deletion, a final answer that would lose its support."""
    sites = call_sites(trajectory)
    deleted = {s.call.id for s in failed}
    failed_indices = failed_receipt_indices(trajectory)
    deleted_indices = {s.receipt_index for s in failed if s.receipt_index is not None}
    deps: list[Dependency] = [*states]
    cuts: list[SentenceEdit] = []
    for site in failed:
        deps.extend(returned_values(trajectory, site))
        _, text_edits = textual_context(trajectory, site, detectors, failed_indices, deleted_indices, sites)
        deps.append(control_conditions(trajectory, site, sites, deleted, text_edits))
        cuts.extend(e for e in text_edits if e.action == "removed")
    blocking = [d for d in deps if d.status == "blocking"]
    # A trial the validators only read, then dropped: it may share the original's parts.
    edited, message_map, _ = apply_edit(trajectory, deleted, cuts, trial=True)
    checks = [no_dependency_removed(trajectory, edited, message_map, sorted(deleted)), final_answer_supported(trajectory, edited)]
    refused = [v for v in checks if not v.passed]
    kinds = [refusal_kind(trajectory, d) for d in blocking] + [v.kind or v.name for v in refused]
    reason = "; ".join([_reason_text(trajectory, blocking),
                        *(f"{v.name}: {'; '.join(v.findings) or v.detail}" for v in refused)])
    return EditResult(**base, kind="remove-failed-call", status="online", route="online-guided", reason=reason,
                      reasons=refusal_order(kinds), calls=sorted(deleted), dependencies=deps, validators=refused)


def _wording_edit(trajectory: Trajectory, turn: int, quoted: str, detectors: Detectors, base: _EditOf) -> EditResult:
    """Cut the sentences of ``turn`` that claim a later success too early, that the issue quotes, or that
    refer to a failure that never happened."""
    turn_view = next((t for t in trajectory.turns() if t.number == turn), None)
    result = EditResult(**base, kind="wording", status="edited", route="offline-edit", reason="")
    if turn_view is None:
        result.status, result.route, result.reason = "pending", "pending", f"T{turn} does not exist"
        return result
    index = turn_view.message_index
    message = trajectory.messages[index]
    failed_before = [i for i in failed_receipt_indices(trajectory) if i < index]
    edits: list[SentenceEdit] = []
    premature = [c for c in find_premature_claims(trajectory, detectors) if c.message_index == index]
    if premature:
        false_claims = [c for c in premature if c.site.receipt is None or c.site.status != "ok"]
        if false_claims:
            # The claimed operation never succeeded: the agent acted on a false belief, so the suffix must be
            # regenerated; cutting the sentence would hide a semantic error.
            result.status, result.route = "online", "online-regenerate"
            result.reason = f"T{turn} claims {false_claims[0].site.call.name} succeeded, but its receipt (T{false_claims[0].site.turn}) did not"
            result.dependencies = [Dependency(kind="control", status="blocking", turn=turn, detail=result.reason, evidence=false_claims[0].text)]
            return result
        # The operation did succeed later: the claim only came too early. Cutting it keeps information order.
        edits = [SentenceEdit(message_index=index, turn=turn, field="content", start=c.start, end=c.end, text=c.text, margin=0.0,
                              action="removed", why=f"claims {c.site.call.name} succeeded before its receipt (T{c.site.turn})")
                 for c in premature]
    if not edits:
        edits = _quoted_or_phantom(message, index, turn, quoted, bool(failed_before), detectors)
    result.sentences = edits
    result.dependencies = [Dependency(kind="textual", status="resolved" if edits else "unknown", turn=turn,
                                      detail=f"{len(edits)} sentence(s) cut" if edits else "could not locate the wording to fix")]
    if not edits:
        result.status, result.route, result.reason = "pending", "pending", f"could not locate the wording to fix in T{turn}"
        return result
    edited, message_map, removed_turns = apply_edit(trajectory, set(), edits)
    return _finish(trajectory, edited, message_map, removed_turns, [], result, detectors)


def _quoted_or_phantom(message: Message, index: int, turn: int, quoted: str, failed_before: bool,
                       detectors: Detectors) -> list[SentenceEdit]:
    """Sentences of one message that the issue quotes, or that refer to a failure when none happened before."""
    edits: list[SentenceEdit] = []
    for field_name in ("reasoning", "content"):
        pieces = split_sentences(getattr(message, field_name) or "")
        verdicts = detectors.failure_reference([p.text for p in pieces], [False] * len(pieces))
        for piece, (is_ref, margin) in zip(pieces, verdicts):
            quoted_here = bool(quoted.strip()) and (piece.text in quoted or quoted.strip() in piece.text)
            if quoted_here or (is_ref and not failed_before):
                edits.append(SentenceEdit(message_index=index, turn=turn, field=field_name, start=piece.start, end=piece.end,
                                          text=piece.text, margin=round(margin, 3), action="removed",
                                          why="quoted by the issue" if quoted_here else "refers to a failure that did not happen"))
    return edits


def _finish(
    original: Trajectory,
    edited: Trajectory,
    message_map: list[int],
    removed_turns: list[int],
    deleted: list[str],
    result: EditResult,
    detectors: Detectors,
) -> EditResult:
    result.message_map = message_map
    result.removed_turns = removed_turns
    result.turn_map = turn_map(original, edited, message_map)
    result.validators = validate_edit(original, edited, message_map, deleted, detectors)
    result.diff = render_diff(original, edited, result.turn_map)
    failed = [v for v in result.validators if not v.passed]
    if edited.messages and edited.messages[-1].role == "assistant" and not (edited.messages[-1].content or edited.messages[-1].tool_calls):
        failed.append(ValidatorResult(name="final-answer-kept", passed=False, detail="the edit emptied the final answer"))
        result.validators.append(failed[-1])
    if failed:
        result.status, result.route = "pending", "pending"
        result.reasons = refusal_order([v.kind or v.name for v in failed])
        result.reason = "validator failed: " + "; ".join(f"{v.name} ({'; '.join(v.findings) or v.detail})" for v in failed)
        return result
    cut = sum(1 for s in result.sentences if s.action == "removed")
    what = f"removed {', '.join(deleted)}" if deleted else "wording fixed"
    result.reason = f"{what}; {cut} sentence(s) cut; dependencies checked; validators passed"
    result.removed_calls = list(deleted)
    result.edited = edited
    return result


def apply_edit(
    trajectory: Trajectory, deleted_calls: set[str], sentence_edits: Sequence[SentenceEdit], *, trial: bool = False
) -> tuple[Trajectory, list[int], list[int]]:
    """Remove calls (and receipts) and cut sentences; renumber turns.

    Returns the edited trajectory, the original index of each kept message, and the original turns that
    disappeared. An assistant message that only made deleted calls disappears with its text. The edited
    trajectory is a deep copy: it shares no object with the original, unless ``trial`` (an edit that is only
    read, then dropped): its messages and metadata are then new objects whose calls, receipts and other parts are
    the original's.
    """
    fresh = _shallow if trial else _copied
    cuts: dict[tuple[int, str], list[tuple[int, int]]] = {}
    for edit in sentence_edits:
        cuts.setdefault((edit.message_index, edit.field), []).append((edit.start, edit.end))
    deleted_receipts = {s.receipt_index for s in call_sites(trajectory) if s.call.id in deleted_calls}
    kept: list[Message] = []
    message_map: list[int] = []
    removed_turns: list[int] = []
    carried = ""  # text of a dropped call turn, written before the failure, that the next turn may take over
    for index, message in enumerate(trajectory.messages):
        if message.role == "user":
            carried = ""
        if message.role == "tool" and index in deleted_receipts:
            continue
        new = fresh(message)
        if message.role == "assistant":
            if message.tool_calls:
                # The copy's own calls: the edited trajectory shares no object with the original.
                new.tool_calls = [c for c in new.tool_calls if c.id not in deleted_calls]
                if not new.tool_calls:
                    removed_turns.append(message.turn or 0)
                    carried = message.content or ""
                    continue
            for field_name in ("content", "reasoning"):
                spans = cuts.get((index, field_name))
                if spans:
                    setattr(new, field_name, remove_spans(getattr(message, field_name) or "", spans) or (None if field_name == "reasoning" else ""))
            if carried and not new.content and any((index, f) in cuts for f in ("content",)):
                # The retry's own words were all about the failure; the dropped turn's intention, written
                # before the failure, moves later (never earlier), so information order holds.
                new.content = carried
            carried = ""
            if not (new.content or new.reasoning or new.tool_calls) and index != len(trajectory.messages) - 1:
                removed_turns.append(message.turn or 0)
                continue
        kept.append(new)
        message_map.append(index)
    number_turns(kept)
    metadata = fresh(trajectory.metadata)
    source = metadata.extra.get("edited_from", trajectory.id)
    metadata.extra = {**metadata.extra, "edited_from": source}
    # A new id: the edited trajectory is judged and reported beside its original, never in its place.
    new_id = trajectory.id if trajectory.id.endswith(EDIT_SUFFIX) else trajectory.id + EDIT_SUFFIX
    update: dict[str, Any] = {"id": new_id, "messages": kept, "metadata": metadata}
    # The messages and metadata are already the edit's own copies: copy only the other fields (strings today), not
    # the whole original again (a deep model_copy copies every message before the update replaces them).
    memo: dict[int, Any] = {}
    update |= {name: value if trial else copy.deepcopy(value, memo) for name, value in trajectory.__dict__.items()
               if name not in update and not isinstance(value, str)}
    edited = trajectory.model_copy(update=update)
    return edited, message_map, removed_turns


_ATOMS = (str, int, float, bool, type(None))


def _copied(model: _M) -> _M:
    """A deep copy of a model of the trajectory (a message with its calls and receipts, the metadata), made
    structurally: the same as ``model_copy(deep=True)`` for the JSON-like values a trajectory holds (no object is
    shared with the original, the fields set are kept), about twice as fast as the generic deep copy."""
    new = model.__copy__()
    fields = new.__dict__
    for name, value in fields.items():
        if not isinstance(value, _ATOMS):
            fields[name] = _copied_value(value)
    if new.__pydantic_extra__:
        new.__pydantic_extra__ = _copied_value(new.__pydantic_extra__)
    if new.__pydantic_private__:
        new.__pydantic_private__ = copy.deepcopy(new.__pydantic_private__)
    return new


def _copied_value(value: Any) -> Any:
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, BaseModel):
        return _copied(value)
    if type(value) is list:
        return [_copied_value(item) for item in value]
    if type(value) is dict:
        return {key: _copied_value(item) for key, item in value.items()}
    return copy.deepcopy(value)


def _shallow(model: _M) -> _M:
    """A new model object holding the same parts (what a trial edit sets on it leaves the original as it was)."""
    return model.model_copy()


def turn_map(original: Trajectory, edited: Trajectory, message_map: Sequence[int]) -> dict[int, int | None]:
    """Original assistant turn -> edited turn (None when the turn was removed)."""
    mapping: dict[int, int | None] = {m.turn: None for m in original.messages if m.role == "assistant" and m.turn}
    for new_index, old_index in enumerate(message_map):
        old = original.messages[old_index]
        if old.role == "assistant" and old.turn:
            mapping[old.turn] = edited.messages[new_index].turn
    return mapping


DIFF_LINE_CHARS = 300


def render(trajectory: Trajectory, *, labels: bool = True, width: int | None = None) -> list[str]:
    """A plain-text rendering, one line per message part, for diffs and logs.

    ``labels=False`` leaves turn numbers out (a diff then shows what changed, not every renumbered line);
    ``width`` shortens long lines.
    """
    def cut(text: str) -> str:
        text = text.replace("\n", "\\n")
        return text if width is None or len(text) <= width else text[:width] + f" ... [{len(text) - width} more chars]"

    lines = [f"query: {cut(trajectory.query)}"]
    for message in trajectory.messages:
        label = (f"T{message.turn} " if message.turn else "-- ") if labels else ""
        if message.role == "tool":
            receipt = message.receipt
            status = "ERROR" if receipt and receipt_failed(receipt) else "ok"
            content = receipt.content if receipt else message.content
            lines.append(f"{label}tool[{receipt.call_id if receipt else ''}] {status}: {cut(content)}")
            continue
        if message.reasoning:
            lines.append(f"{label}{message.role} (reasoning): {cut(message.reasoning)}")
        if message.content or not message.tool_calls:
            lines.append(f"{label}{message.role}: {cut(message.content)}")
        for call in message.tool_calls:
            lines.append(f"{label}  call {call.id} {call.name}({cut(call.argument_text())})")
    return lines


def render_diff(original: Trajectory, edited: Trajectory, turns: dict[int, int | None] | None = None) -> str:
    """Unified diff of the two renderings without turn labels (renumbering alone is not a change), headed
    by the turn map when turns moved."""
    header: list[str] = []
    if turns:
        moved = [f"T{old}->{'removed' if new is None else f'T{new}'}" for old, new in sorted(turns.items()) if old != new]
        if moved:
            header.append("# turns: " + ", ".join(moved))
    body = difflib.unified_diff(
        render(original, labels=False, width=DIFF_LINE_CHARS), render(edited, labels=False, width=DIFF_LINE_CHARS),
        fromfile=f"{original.id} (original)", tofile=f"{edited.id} (edited)", lineterm="", n=1,
    )
    return "\n".join([*header, *body])

