"""The judge, the release gate and the decisive turn on the issue-24 HELD-OUT set, beside trivial baselines.

    python bench/facts_heldout.py [--set v1|v2|v3 | --dir DIR] [--judge SPEC ...] [--keep DIR] [--cases]

The set (tests/fixtures/facts_heldout: 66 trajectories written by us in the reference design's domain, 9 languages,
OpenAI / Anthropic / ATIF records, expectations committed before the first run) is scored by the real pipeline
(``judge.api.score``, the rules judge unless ``--judge`` says otherwise) into a temporary run directory (``--keep DIR``
keeps it). Printed, all from that one run:

- **findings**: per tag of docs/finding-tags.md, precision and recall of the panel's issues (every pass's issues;
  a finding counts when its turn and tag match an expected one), and a tag-agnostic row "any finding at the right
  turn" (an expected finding is hit when any finding points at its turn; a finding is right when an expected one
  is at its turn). Beside them, from the same labels: ``first-failed-call`` (a failed-call at the first turn whose
  receipt the log marks failed, :func:`judge.validate.first_failed_call_turn`) and ``final-claim`` (an
  unverified-completion at the last assistant turn);
- **release**: the pipeline's decision (score 4/5 and every gate check) against ``release_expected``, beside
  ``release-iff-outcome-success`` (the recorded outcome, :func:`judge.gate.recorded_outcome`), ``no-failed-call``
  (released iff no receipt is marked failed) and ``never``;
- **decisive turn**: the pipeline's decisive turn (:func:`judge.validate.decisive`: the origin of the fact flow
  behind its first severe issue, environment issues included) and, beside it, the decisive issue's own turn
  (:func:`judge.validate.decisive_issue`, the rule before issue 24 item 4), against ``decisive_turn`` on the
  defective trajectories, beside always-T1, always-last and first-failed-call;
- per language and per format: recall at the right tag and turn, recall at the right turn, extra findings, release
  agreement; and the false alarms on the clean trajectories (any finding; not released).

``--set v2`` measures the second held-out set (tests/fixtures/facts_heldout_v2: 73 trajectories, 8 languages, written
blind after v1 had been read by the detectors' engineers); ``--set v3`` the third (facts_heldout_v3: 74 trajectories,
11 languages, half ordinary coding work, written blind after v2 had been read); ``--dir`` any folder of such records.
The default stays v1.
A figure here is held out only for code written before it was first printed (docs/facts-heldout.md). To measure
another checkout, put it first on the path: ``PYTHONPATH=/path/to/checkout python bench/facts_heldout.py``.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from judge.api import score
from judge.gate import recorded_outcome
from judge.model import Trajectory
from judge.schema import ScoreRow
from judge.validate import decisive, decisive_issue, first_failed_call_turn

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
SETS = {"v1": FIXTURES / "facts_heldout", "v2": FIXTURES / "facts_heldout_v2",  # --set NAME -> folder of records
        "v3": FIXTURES / "facts_heldout_v3", "v4": FIXTURES / "facts_heldout_v4",
        "v5": FIXTURES / "facts_heldout_v5", "v6": FIXTURES / "facts_heldout_v6",
        "v7": FIXTURES / "facts_heldout_v7", "v8": FIXTURES / "facts_heldout_v8",
        "v9": FIXTURES / "facts_heldout_v9", "v10": FIXTURES / "facts_heldout_v10",
        "v11": FIXTURES / "facts_heldout_v11", "v12": FIXTURES / "facts_heldout_v12",
        "v13": FIXTURES / "facts_heldout_v13",
        "v14": FIXTURES / "facts_heldout_v14", "v15": FIXTURES / "facts_heldout_v15",
        "v16": FIXTURES / "facts_heldout_v16", "v17": FIXTURES / "facts_heldout_v17",
        "v18": FIXTURES / "facts_heldout_v18"}
HELDOUT = SETS["v1"]
Finding = tuple[int | None, str]  # (turn, tag)
# Tags the rules judge used before tags.md fixed the vocabulary -> the tags.md tag for the same defect. Shown as a
# separate row ("judge, old tags renamed"), never folded into the judge's own row.
OLD_TAGS = {"plan-receipt-mismatch": "unchecked-tick"}


@dataclass
class Case:
    """One trajectory of the set with its truth and what the run said about it."""

    trajectory: Trajectory
    found: set[Finding]
    row: ScoreRow

    @property
    def meta(self) -> dict[str, object]:
        return self.trajectory.metadata.extra

    @property
    def expected(self) -> set[Finding]:
        return {(e["turn"], e["tag"]) for e in self.trajectory.metadata.extra["expected"]}

    @property
    def decisive(self) -> int | None:
        value = self.trajectory.metadata.extra.get("decisive_turn")
        return value if isinstance(value, int) else None


def last_turn(trajectory: Trajectory) -> int | None:
    return next((m.turn for m in reversed(trajectory.messages) if m.role == "assistant"), None)


def has_failed_receipt(trajectory: Trajectory) -> bool:
    return first_failed_call_turn(trajectory) is not None


FINDING_BASELINES: dict[str, Callable[[Trajectory], set[Finding]]] = {
    "first-failed-call": lambda t: {(turn, "failed-call")} if (turn := first_failed_call_turn(t)) is not None else set(),
    "final-claim": lambda t: {(last_turn(t), "unverified-completion")},
}
RELEASE_BASELINES: dict[str, Callable[[Trajectory], bool]] = {
    "release-iff-outcome-success": lambda t: recorded_outcome(t).status == "success",
    "no-failed-call": lambda t: not has_failed_receipt(t),
    "never": lambda t: False,
}
DECISIVE_BASELINES: dict[str, Callable[[Trajectory], int | None]] = {
    "always T1": lambda t: 1,
    "always the last turn": last_turn,
    "first failed call": first_failed_call_turn,
}


def tag_table(pairs: Iterable[tuple[set[Finding], set[Finding]]]) -> dict[str, list[int]]:
    """Per tag: [true positives, found, expected] over (expected, found) pairs (pure)."""
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for want, got in pairs:
        for item in got:
            table[item[1]][1] += 1
            table[item[1]][0] += item in want
        for item in want:
            table[item[1]][2] += 1
    return dict(table)


def turn_table(pairs: Iterable[tuple[set[Finding], set[Finding]]]) -> tuple[int, int, int, int]:
    """Tag-agnostic: (right findings, findings, expected hit, expected) where only turns have to match (pure)."""
    right = found = hit = expected = 0
    for want, got in pairs:
        want_turns, got_turns = {t for t, _ in want}, {t for t, _ in got}
        found += len(got)
        right += sum(1 for t, _ in got if t in want_turns)
        expected += len(want)
        hit += sum(1 for t, _ in want if t in got_turns)
    return right, found, hit, expected


def ratio(a: float, b: float) -> str:
    return f"{a / b:5.2f}" if b else "    -"


def run_pipeline(out: Path, judges: list[str] | None, folder: Path = HELDOUT) -> list[Case]:
    """Score every ``*.jsonl`` record of ``folder`` with the real pipeline into ``out``."""
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"{folder}: no *.jsonl records")
    run = score(files, out, judges=judges, report=False, no_shared_cache=True)
    found: dict[str, set[Finding]] = defaultdict(set)
    for verdict in run.verdicts():
        found[verdict.trajectory_id] |= {(i.turn, i.tag or "") for i in verdict.issues}
    rows = {row.trajectory_id: row for row in run.scores()}
    return [Case(t, found[t.id], rows[t.id]) for t in run.trajectories()]


def print_findings(cases: list[Case]) -> None:
    systems = {"judge": [(c.expected, c.found) for c in cases]}
    if any(tag in OLD_TAGS for c in cases for _, tag in c.found):
        systems["judge, old tags renamed"] = [(c.expected, {(t, OLD_TAGS.get(tag, tag)) for t, tag in c.found}) for c in cases]
    for name, baseline in FINDING_BASELINES.items():
        systems[name] = [(c.expected, baseline(c.trajectory)) for c in cases]
    tables = {name: tag_table(pairs) for name, pairs in systems.items()}
    tags = sorted({tag for table in tables.values() for tag in table})
    print(f"\nfindings (turn and tag must match)\n{'tag':26} {'system':24} {'prec':>5} {'recall':>6} {'found':>5} {'expected':>8}")
    for tag in tags:
        for name, table in tables.items():
            renamed_same = name == "judge, old tags renamed" and table.get(tag) == tables["judge"].get(tag)
            if tag not in table or (name != "judge" and table[tag][1] == 0) or renamed_same:
                continue
            tp, f, e = table[tag]
            print(f"{tag:26} {name:24} {ratio(tp, f)} {ratio(tp, e):>6} {f:5d} {e:8d}")
    for name, pairs in systems.items():
        tp, f, e = (sum(v[i] for v in tag_table(pairs).values()) for i in range(3))
        print(f"{'all tags':26} {name:24} {ratio(tp, f)} {ratio(tp, e):>6} {f:5d} {e:8d}")
    print("\nany finding at the right turn (tags ignored)")
    for name, pairs in systems.items():
        right, f, hit, e = turn_table(pairs)
        print(f"{'':26} {name:24} {ratio(right, f)} {ratio(hit, e):>6} {f:5d} {e:8d}")


def print_release(cases: list[Case]) -> None:
    want = [bool(c.meta["release_expected"]) for c in cases]
    systems = {"pipeline (score 4/5 + gate)": [c.row.release for c in cases]}
    systems.update({name: [rule(c.trajectory) for c in cases] for name, rule in RELEASE_BASELINES.items()})
    print(f"\nrelease vs release_expected ({sum(want)} of {len(want)} should be released)")
    print(f"{'system':30} {'agree':>9} {'released':>8} {'wrongly released':>16} {'wrongly held':>12}")
    for name, got in systems.items():
        agree = sum(g == w for g, w in zip(got, want))
        wrong_out = sum(g and not w for g, w in zip(got, want))
        wrong_in = sum(w and not g for g, w in zip(got, want))
        print(f"{name:30} {agree:3d}/{len(want):<3d} {ratio(agree, len(want))} {sum(got):3d} {wrong_out:16d} {wrong_in:12d}")
    scores: dict[str, int] = defaultdict(int)
    for c in cases:
        scores[str(c.row.score)] += 1
    print("pipeline scores: " + ", ".join(f"{k}: {v}" for k, v in sorted(scores.items())))
    released_bad = [c.trajectory.id for c in cases if c.row.release and not c.meta["release_expected"]]
    if released_bad:
        print("released although defective: " + ", ".join(released_bad))


def print_decisive(cases: list[Case]) -> None:
    defective = [c for c in cases if c.decisive is not None]
    print(f"\ndecisive turn, exact ({len(defective)} defective trajectories)")
    origins, own = [], []
    for c in defective:
        issues = [*c.row.issues, *c.row.environment]
        found, issue = decisive(c.trajectory, issues), decisive_issue(issues)
        origins.append(found.turn if found else None)
        own.append(issue.turn if issue else None)
    for name, turns in (("judge (origin of the flow)", origins), ("judge (decisive issue's turn)", own)):
        hits = sum(t == c.decisive for t, c in zip(turns, defective))
        print(f"  {name:28} {hits:3d}/{len(defective)} {ratio(hits, len(defective))}")
    for name, rule in DECISIVE_BASELINES.items():
        hits = sum(rule(c.trajectory) == c.decisive for c in defective)
        print(f"  {name:28} {hits:3d}/{len(defective)} {ratio(hits, len(defective))}")


def print_slices(cases: list[Case]) -> None:
    for label, key in (("language", lambda c: str(c.meta["lang"])), ("format", lambda c: c.trajectory.metadata.source_format)):
        groups: dict[str, list[Case]] = defaultdict(list)
        for c in cases:
            groups[key(c)].append(c)
        print(f"\nby {label}: tag+turn hits / expected, turn hits / expected, extra findings, release agreement")
        for name, members in sorted(groups.items()):
            expected = sum(len(c.expected) for c in members)
            tag_hits = sum(len(c.expected & c.found) for c in members)
            _, _, turn_hits, _ = turn_table((c.expected, c.found) for c in members)
            extra = sum(len(c.found - c.expected) for c in members)
            agree = sum(c.row.release == c.meta["release_expected"] for c in members)
            print(f"  {name:10} {tag_hits:3d} / {expected:3d}   {turn_hits:3d} / {expected:3d}   extra {extra:3d}   release {agree:2d} / {len(members):2d}")


def print_clean(cases: list[Case], show_cases: bool) -> None:
    clean = [c for c in cases if not c.expected]
    alarms = [c for c in clean if c.found]
    held = [c for c in clean if not c.row.release]
    print(f"\nclean near-miss trajectories: {len(clean)}; with any finding: {len(alarms)}; not released: {len(held)}")
    for c in alarms:
        print(f"  false alarm {c.trajectory.id:30} {sorted(c.found, key=str)}  ({c.meta.get('near_miss')})")
    if show_cases:
        print("\ncases with a missed or an extra finding:")
        for c in cases:
            if c.expected != c.found:
                print(f"  {c.trajectory.id:30} missed {sorted(c.expected - c.found, key=str)} extra {sorted(c.found - c.expected, key=str)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--judge", action="append", help="a judge spec (repeatable; default: the rules judge)")
    parser.add_argument("--keep", type=Path, help="write the run directory here instead of a temporary one")
    parser.add_argument("--cases", action="store_true", help="list every trajectory with a missed or extra finding")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--set", choices=sorted(SETS), default="v1", help="which held-out set (default: v1)")
    which.add_argument("--dir", type=Path, help="a folder of held-out records (*.jsonl) instead of a named set")
    args = parser.parse_args()
    folder = args.dir or SETS[args.set]
    with tempfile.TemporaryDirectory() as tmp:
        cases = run_pipeline(args.keep or Path(tmp) / "run", args.judge, folder)
    clean = sum(1 for c in cases if not c.expected)
    print(f"held-out set {args.dir or args.set} ({folder.name}): {len(cases)} trajectories ({clean} clean), {sum(len(c.expected) for c in cases)} expected findings; "
          f"panel: {', '.join(args.judge or ['rules'])}")
    print_findings(cases)
    print_release(cases)
    print_decisive(cases)
    print_slices(cases)
    print_clean(cases, args.cases)


if __name__ == "__main__":
    main()
