"""The offline editor and its validators on the issue-24 editor COUNTEREXAMPLE suite: right or wrong per case.

    python bench/editor_counterexamples.py [--set v1|v2|v3 | --cases FILE] [--verbose]

The suite (tests/fixtures/editor_counterexamples/cases.jsonl, written by us, expectations committed before the
first run; ``--set v2``: tests/fixtures/editor_counterexamples_v2/cases.jsonl, 39 cases written blind after v1 had
been read by the editor's engineers; ``--set v3``: editor_counterexamples_v3, 37 cases in 11 languages written blind
after v2 had been read; the default stays v1) holds an original trajectory and a proposed edit per case, with the decision a correct editor takes:
``refuse`` with a reason kind of docs/finding-tags.md (effects, dependency, order, unsupported-final, reference,
flip, future-claim, side-effects), or ``accept``. Each case goes through the editor's public API:

- ``delete``: :func:`judge.repair.editor.offline_edit` with a ``failed-call`` issue at the turn of the proposed
  calls; accepted when it returns ``status == "edited"`` (then the sentences the case lists under ``cut`` must be
  gone from the edited trajectory);
- ``rewrite`` (a full rewriter output): :func:`judge.repair.validators.validate_edit` on the edited trajectory,
  its message map and deleted calls; accepted when every validator passes.

The editor's own words (dependency kinds, validator names) are mapped to tags.md's reason kinds by
:data:`REASON_KINDS`. A case is **right** when the decision matches and, for a refusal, the expected reason kind is
among those the editor gave; the decision-only count is printed beside it, and how often the first reason the
editor gives (its most specific, :func:`judge.repair.editor.refusal_order`) is the expected one. When the editor's API changes (the fact
ledger), only :func:`run_case` and :data:`REASON_KINDS` change.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.importers import Source
from judge.importers.reader import parse_record
from judge.model import Trajectory
from judge.repair.editor import offline_edit, refusal_order
from judge.repair.textref import get_detectors
from judge.repair.validators import ValidatorResult, validate_edit
from judge.schema import Issue

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
SETS = {"v1": FIXTURES / "editor_counterexamples" / "cases.jsonl",  # --set NAME -> suite file
        "v2": FIXTURES / "editor_counterexamples_v2" / "cases.jsonl",
        "v3": FIXTURES / "editor_counterexamples_v3" / "cases.jsonl",
        "v4": FIXTURES / "editor_counterexamples_v4" / "cases.jsonl",
        "v5": FIXTURES / "editor_counterexamples_v5" / "cases.jsonl",
        "v6": FIXTURES / "editor_counterexamples_v6" / "cases.jsonl",
        "v7": FIXTURES / "editor_counterexamples_v7" / "cases.jsonl",
        "v8": FIXTURES / "editor_counterexamples_v8" / "cases.jsonl",
        "v9": FIXTURES / "editor_counterexamples_v9" / "cases.jsonl",
        "v10": FIXTURES / "editor_counterexamples_v10" / "cases.jsonl",
        "v11": FIXTURES / "editor_counterexamples_v11" / "cases.jsonl",
        "v12": FIXTURES / "editor_counterexamples_v12" / "cases.jsonl",
        "v13": FIXTURES / "editor_counterexamples_v13" / "cases.jsonl",
        "v14": FIXTURES / "editor_counterexamples_v14" / "cases.jsonl",
        "v15": FIXTURES / "editor_counterexamples_v15" / "cases.jsonl",
        "v16": FIXTURES / "editor_counterexamples_v16" / "cases.jsonl",
        "v17": FIXTURES / "editor_counterexamples_v17" / "cases.jsonl",
        "v18": FIXTURES / "editor_counterexamples_v18" / "cases.jsonl"}
CASES = SETS["v1"]

# The editor's dependency kinds and validator names -> the reason kinds of tags.md they stand for.
REASON_KINDS: dict[str, set[str]] = {
    "resource-state": {"effects", "side-effects"},
    "returned-values": {"dependency"},
    "control": {"dependency"},
    "textual": {"reference"},
    "no-reference-to-deleted-failure": {"reference"},
    "no-premature-claim": {"future-claim"},
    "no-failed-receipt-made-success": {"flip"},
    "information-order": {"order"},
    "final-answer-kept": {"unsupported-final"},
    "rules-judge": {"reference", "future-claim"},
    # Validator names of the fact-ledger editor, read off its refusals on the v2 suite (issue 24); each names one
    # reason kind. Its "new-claims-supported" is left unmapped: one name for future claims, flips and early values.
    "no-side-effects-removed": {"effects", "side-effects"},
    "final-answer-supported": {"unsupported-final"},
    "no-dependency-removed": {"dependency"},
}


def reason_kinds(result: ValidatorResult) -> set[str]:
    """The reason kinds a failed validator stands for: the kind it names itself, else the table's (pure)."""
    return {result.kind} if result.kind else REASON_KINDS.get(result.name, {result.name})


@dataclass
class Outcome:
    """What the editor decided on one case, in tags.md's words, and the editor's own words for it."""

    decision: str  # accept | refuse
    reasons: set[str] = field(default_factory=set)
    detail: str = ""
    primary: str = ""  # the first reason the editor reports (its most specific), for a refusal


def load(record: dict[str, Any], where: str) -> Trajectory:
    item = parse_record(record, Source(where))
    if not isinstance(item, Trajectory):
        raise ValueError(f"{where}: the record does not import: {item.reason}")
    return item


def run_case(case: dict[str, Any]) -> Outcome:
    """Run one case through the editor (``delete``) or the validators (``rewrite``)."""
    original = load(case["original"], f"{case['id']} (original)")
    edit = case["edit"]
    detectors = get_detectors()
    if case["kind"] == "delete":
        issue = Issue(turn=edit["turn"], category="code", severity="severe", tag="failed-call",
                      description="a failed call proposed for deletion")
        result = offline_edit(original, issue, detectors=detectors)
        if result.status == "edited":
            assert result.edited is not None
            text = "\n".join(m.content or "" for m in result.edited.messages if m.role == "assistant")
            left = [c["text"] for c in edit["cut"] if c["text"] in text]
            extra = sorted(set(result.removed_calls) ^ set(edit["delete_calls"]))
            detail = result.reason + (f"; sentences left that must be cut: {left}" if left else "") + (
                f"; removed calls differ from the proposal: {extra}" if extra else "")
            return Outcome("accept", {"cut-missing"} if left else set(), detail)
        reasons = {kind for d in result.dependencies if d.status in ("blocking", "unknown") for kind in REASON_KINDS.get(d.kind, {d.kind})}
        reasons |= {kind for v in result.validators if not v.passed for kind in reason_kinds(v)}
        return Outcome("refuse", reasons, f"{result.status}: {result.reason}", result.reasons[0] if result.reasons else "")
    edited = load(edit["edited"], f"{case['id']} (edited)")
    results = validate_edit(original, edited, edit["message_map"], edit["deleted_calls"], detectors)
    failed = [v for v in results if not v.passed]
    if not failed:
        return Outcome("accept", set(), "validators passed")
    reasons = {kind for v in failed for kind in reason_kinds(v)}
    primary = refusal_order([v.kind or v.name for v in failed])[0]
    return Outcome("refuse", reasons, "; ".join(f"{v.name}: {'; '.join(v.findings) or v.detail}" for v in failed), primary)


def is_right(case: dict[str, Any], outcome: Outcome) -> tuple[bool, bool]:
    """(decision right, decision and reason right) for one case (pure)."""
    expected = case["expected"]
    decision = outcome.decision == expected["decision"]
    if not decision:
        return False, False
    if expected["decision"] == "accept":
        return True, "cut-missing" not in outcome.reasons
    return True, expected["reason"] in outcome.reasons


def read_cases(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--set", choices=sorted(SETS), default="v1", help="which suite (default: v1)")
    which.add_argument("--cases", type=Path, help="a suite file (JSON Lines) instead of a named set")
    parser.add_argument("--verbose", action="store_true", help="print the editor's words for every case")
    args = parser.parse_args()
    path = args.cases or SETS[args.set]
    cases = read_cases(path)
    print(f"suite {args.cases or args.set}: {len(cases)} cases ({path})")
    decision_right = both_right = primary_right = refused_right = 0
    groups: dict[tuple[str, str], list[int]] = {}
    print(f"{'case':36} {'kind':7} {'expected':26} {'editor':40} result")
    for case in cases:
        outcome = run_case(case)
        decided, right = is_right(case, outcome)
        decision_right += decided
        both_right += right
        if decided and case["expected"]["decision"] == "refuse":
            refused_right += 1
            primary_right += outcome.primary == case["expected"]["reason"]
        key = (case["kind"], case["expected"]["decision"])
        groups.setdefault(key, [0, 0])
        groups[key][0] += right
        groups[key][1] += 1
        want = case["expected"]["decision"] + (f" ({case['expected']['reason']})" if case["expected"]["reason"] else "")
        got = outcome.decision + (f" ({', '.join(sorted(outcome.reasons))})" if outcome.reasons else "")
        verdict = "right" if right else ("decision right, reason wrong" if decided else "WRONG")
        print(f"{case['id']:36} {case['kind']:7} {want:26} {got[:40]:40} {verdict}")
        if args.verbose or not right:
            print(f"    {outcome.detail[:400]}")
    print(f"\nright (decision and reason): {both_right} / {len(cases)}; decision right: {decision_right} / {len(cases)}")
    print(f"first reason is the expected one: {primary_right} / {refused_right} refusals decided right")
    for (kind, decision), (good, total) in sorted(groups.items()):
        print(f"  {kind:7} expected {decision:6}: {good:2d} / {total:2d} right")


if __name__ == "__main__":
    main()
