"""Per-detector precision and recall of the rules judge on the HELD-OUT set, beside trivial baselines.

    python bench/rules_heldout.py [--config RULES_YAML] [--cases]

The set (tests/fixtures/rules_heldout, written by us, expectations committed before the first run) is not the
tuning corpus: its figures are the honest ones, the tuning corpus's (tests/test_rules_corpus.py) an upper bound.
A finding counts when (turn, tag, category) match the truth. Printed beside the judge, from the same labels:

- ``final-claim``: flag unverified-completion at the final assistant turn of every trajectory (every final claim);
- ``failed-receipt``: every call whose receipt carries an error flag or a non-zero exit code is a failed-call;
- ``failed-env``: the same calls, all called environment faults.

Also printed: recall per group of cases and per language, false alarms on the clean trajectories, and how often
an environment fault found at the right turn says correctly whether it was recovered. To measure another checkout
(the code before a change), put it first on the path: ``PYTHONPATH=/path/to/old python bench/rules_heldout.py``.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path

from judge.importers import load_trajectories
from judge.model import Trajectory
from judge.rules import RulesConfig, default_config, run_detectors

HELDOUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "rules_heldout"
Finding = tuple[int | None, str, str]


def truth(trajectory: Trajectory) -> set[Finding]:
    return {(e["turn"], e["tag"], e["category"]) for e in trajectory.metadata.extra["expected"]}


def failed_receipt_turns(trajectory: Trajectory) -> list[int]:
    turns = []
    for message in trajectory.messages:
        receipt = message.receipt
        if message.role == "tool" and receipt is not None and (receipt.is_error or receipt.exit_code not in (None, 0)):
            turns.append(message.turn or 0)
    return turns


def final_turn(trajectory: Trajectory) -> int | None:
    return next((m.turn for m in reversed(trajectory.messages) if m.role == "assistant"), None)


SYSTEMS: dict[str, Callable[[Trajectory], set[Finding]]] = {
    "final-claim": lambda t: {(final_turn(t), "unverified-completion", "semantic")},
    "failed-receipt": lambda t: {(turn, "failed-call", "code") for turn in failed_receipt_turns(t)},
    "failed-env": lambda t: {(turn, "environment-fault", "environment") for turn in failed_receipt_turns(t)},
}


def scores(found: dict[str, set[Finding]], trajectories: list[Trajectory]) -> dict[str, tuple[int, int, int]]:
    """Per tag: (true positives, found, expected)."""
    table: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for trajectory in trajectories:
        want, got = truth(trajectory), found[trajectory.id]
        for item in got:
            table[item[1]][1] += 1
            table[item[1]][0] += item in want
        for item in want:
            table[item[1]][2] += 1
    return {tag: (tp, f, e) for tag, (tp, f, e) in table.items()}


def ratio(a: int, b: int) -> str:
    return f"{a / b:5.2f}" if b else "    -"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, help="a rules YAML file (default: the bundled one)")
    parser.add_argument("--cases", action="store_true", help="list every case with a missed or extra finding")
    args = parser.parse_args()
    trajectories = load_trajectories(sorted(HELDOUT.glob("*.jsonl")))
    config = RulesConfig.load(args.config) if args.config else None
    issues = {t.id: run_detectors(t, config=config) for t in trajectories}
    judge = {tid: {(i.turn, i.tag or "", i.category) for i in found} for tid, found in issues.items()}
    results = {"rules": scores(judge, trajectories)}
    for name, system in SYSTEMS.items():
        results[name] = scores({t.id: system(t) for t in trajectories}, trajectories)

    version = (config or default_config()).version
    clean = [t for t in trajectories if not truth(t)]
    print(f"held-out set: {len(trajectories)} trajectories ({len(clean)} clean), "
          f"{sum(len(truth(t)) for t in trajectories)} expected findings; rules config {version}")
    tags = sorted({tag for table in results.values() for tag in table})
    print(f"\n{'detector':27} {'system':15} {'prec':>5} {'recall':>6} {'found':>5} {'expected':>8}")
    for tag in tags:
        for name, table in results.items():
            if tag not in table:
                continue
            tp, f, e = table[tag]
            if name != "rules" and f == 0:
                continue
            print(f"{tag:27} {name:15} {ratio(tp, f)} {ratio(tp, e):>6} {f:5d} {e:8d}")

    # Recall by group and language; false alarms on clean trajectories.
    by_group: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_lang: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for trajectory in trajectories:
        want, got = truth(trajectory), judge[trajectory.id]
        group, lang = trajectory.metadata.extra["group"], trajectory.metadata.extra["lang"]
        by_group[group][0] += len(want & got)
        by_group[group][1] += len(want)
        by_lang[lang][0] += len(want & got)
        by_lang[lang][1] += len(want)
        by_lang[lang][2] += len(got - want)
    print("\nrecall by group (found / expected):")
    for group, (hit, total) in sorted(by_group.items()):
        print(f"  {group:24} {hit:3d} / {total:3d}")
    print("by language (found / expected, extra findings):")
    for lang, (hit, total, extra) in sorted(by_lang.items()):
        print(f"  {lang:3} {hit:3d} / {total:3d}, extra {extra}")
    alarms = sum(1 for t in clean if judge[t.id])
    print(f"clean trajectories with any finding: {alarms} of {len(clean)}")

    # Recovered flag of environment faults found at the right turn.
    right = wrong = 0
    for trajectory in trajectories:
        expected = {e["turn"]: e.get("recovered") for e in trajectory.metadata.extra["expected"] if e["tag"] == "environment-fault"}
        for issue in issues[trajectory.id]:
            if issue.tag == "environment-fault" and issue.turn in expected:
                if getattr(issue, "recovered", None) == expected[issue.turn]:
                    right += 1
                else:
                    wrong += 1
    print(f"environment faults at the right turn: recovered flag right {right}, wrong {wrong}")

    if args.cases:
        print("\ncases with a missed or an extra finding:")
        for trajectory in trajectories:
            want, got = truth(trajectory), judge[trajectory.id]
            if want != got:
                print(f"  {trajectory.id:26} missed {sorted(want - got, key=str)} extra {sorted(got - want, key=str)}")
    counts = Counter(i.tag for found in issues.values() for i in found)
    print("\nfindings by tag: " + ", ".join(f"{k} {v}" for k, v in counts.most_common()))


if __name__ == "__main__":
    main()
