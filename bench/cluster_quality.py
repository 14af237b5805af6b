"""Clustering quality on real and hand-made data, per embedder (no LLM). Prints a table.

Columns: pairwise precision/recall/F1 and ARI against the truth; maj.rec = share of true defects reaching
a majority (2 of 3 passes); x-merge = share of cross-pass pairs of different defects merged; x-step = the
same among different defects at the same true step (AgentRx only).

    python bench/cluster_quality.py [--embedders use-m3,minilm,lexical] [--calibrate]

Data sets (each as clustering rows with a ``truth`` defect id; a "pass" is one independent wording):
- ``agentrx``: AgentRx tau-bench ground truth (MIT). Every failure has two wordings (``step_reason``,
  ``category_reason``) and the root cause a third (``failure_summary``); each wording kind is one pass.
  "At step N," prefixes are stripped, turns perturbed (exact / off by 1-2 / missing, seeded), and 15% of
  categories flipped, because real judges disagree on those.
- ``agentrx-pooled``: the same, four distinct trajectories pooled into one, so failures of different
  trajectories (often at the same or a nearby step) must be kept apart.
- ``agentrx-same-step``: failures of distinct trajectories annotated at the same step, pooled per step.
- ``mast-names``: MAST/MAD failure-mode label names (CC-BY-4.0) across taxonomy rounds (one pass per round),
  names only: a hard paraphrase set ("Conversation reset" vs "Loss of Conversation History").
- ``stsb-xling``: STS-B test rows (en/zh/ja, row aligned); each row's sentence 1 in three languages is one
  "defect" of three passes, eight rows pooled per trajectory: cross-lingual merging, text only.
- ``multilingual``: tests/fixtures/cluster/multilingual_defects.jsonl (12 hand-written defects en/zh/ja).
- ``simjudge``: whole panels of the SIMULATED judge (judge.testing.simjudge, three personas with templated
  wordings, 10% misses, 10% false alarms, 10% turns off by one) on 60 synthetic trajectories. Templated
  text makes this the easy end-to-end case; a false alarm is "one defect" when two passes raise it at one turn.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any

from judge.cluster import (
    FEATURES,
    ClusterConfig,
    calibrate,
    evaluate_rows,
    issue_from_row,
    read_issue_rows,
)
from judge.embed import char_ngrams, make_embedder

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
FIXTURE = REPO / "tests" / "fixtures" / "cluster" / "multilingual_defects.jsonl"

# AgentRx raw categories -> trajudge categories.
AGENTRX_CATEGORY = {
    "Instruction Adherence Failure": "semantic",
    "Misinterpretation of Tool Output": "semantic",
    "Intent Plan Misalignment": "semantic",
    "Underspecified User Intent": "semantic",
    "Invalid Invocation": "code",
    "Intent Not Supported": "capability",
    "System Failure": "environment",
}
_STEP = re.compile(r"^\s*at step \d+\s*,\s*", re.IGNORECASE)
CATEGORIES = ("code", "semantic", "capability", "environment")


def _finish(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for line, row in enumerate(rows, start=1):
        row["_issue"] = issue_from_row(row)
        row["_line"] = line
    return rows


def _grams(text: str) -> frozenset[str]:
    return frozenset(char_ngrams(text, 3))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _perturb_turn(turn: int, rng: random.Random) -> int | None:
    draw = rng.random()
    if draw < 0.4:
        return turn
    if draw < 0.8:
        return max(1, turn + rng.choice((-2, -1, 1, 2)))
    return None


def _agentrx_entries(distinct: bool) -> list[dict[str, Any]]:
    """The AgentRx tau ground-truth entries; ``distinct`` drops near-duplicates.

    Some entries carry the same or nearly the same annotations (trajectories of one task, notes copied
    between them). Pooled, they would ask the clusterer to separate texts that say the same thing about
    different trajectories, which no real single trajectory asks: pools keep one of each near-duplicate.
    """
    path = DATASETS / "agentrx" / "ground_truth" / "tau_ground_truth.json"
    entries = json.loads(path.read_text(encoding="utf-8"))
    limit = 0.6 if distinct else 1.0
    unique: list[dict[str, Any]] = []
    for entry in entries:
        grams = _grams(entry["failure_summary"])
        if all(_jaccard(grams, _grams(kept["failure_summary"])) < limit for kept in unique):
            unique.append(entry)
    return unique


def _failure_rows(tid: str, entry: dict[str, Any], failure: dict[str, Any], rng: random.Random, perturb: bool) -> list[dict[str, Any]]:
    """One failure's wordings as rows of three passes (step / category / summary for the root cause)."""
    root = failure["failure_id"] == entry["root_cause"]["failure_id"]
    wordings = [("step", _STEP.sub("", failure["step_reason"])), ("category", failure["category_reason"])]
    if root:
        wordings.append(("summary", entry["failure_summary"]))
    category = AGENTRX_CATEGORY.get(failure["failure_category"], "semantic")
    rows = []
    for pass_label, text in wordings:
        turn = _perturb_turn(failure["step_number"], rng) if perturb else failure["step_number"]
        cat = rng.choice(CATEGORIES) if perturb and rng.random() < 0.15 else category
        rows.append({
            "trajectory_id": tid, "pass": pass_label, "turn": turn, "category": cat,
            "severity": "severe" if root else "minor", "description": text,
            "truth": f"{entry['trajectory_id']}/{failure['failure_id']}", "truth_turn": failure["step_number"],
        })
    return rows


def agentrx_rows(pool: int = 1, seed: int = 7, perturb: bool = True) -> list[dict[str, Any]]:
    """Rows of the AgentRx tau ground truth; ``pool`` distinct trajectories per pseudo-trajectory."""
    rng = random.Random(seed)
    unique = _agentrx_entries(distinct=pool > 1)
    rows: list[dict[str, Any]] = []
    for start in range(0, len(unique), pool):
        group = unique[start : start + pool]
        tid = "+".join(str(e["trajectory_id"]) for e in group)
        for entry in group:
            for failure in entry["failures"]:
                rows += _failure_rows(tid, entry, failure, rng, perturb)
    return _finish(rows)


def agentrx_same_step_rows(seed: int = 7, perturb: bool = True) -> list[dict[str, Any]]:
    """Failures of different (distinct) trajectories annotated at the same step, pooled per step: the
    hardest separation, since turn and usually category agree and only the wording differs."""
    rng = random.Random(seed)
    by_step: dict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    for entry in _agentrx_entries(distinct=True):
        for failure in entry["failures"]:
            by_step.setdefault(failure["step_number"], []).append((entry, failure))
    rows: list[dict[str, Any]] = []
    for step, pairs in sorted(by_step.items()):
        if len(pairs) < 2:
            continue
        for entry, failure in pairs:
            rows += _failure_rows(f"step-{step}", entry, failure, rng, perturb)
    return _finish(rows)


MAST_MODES = {  # a phrase of the definition -> mode id (the definitions are stable across rounds; names are not)
    "adhere to the specified constraints": "task-spec",
    "assigned role": "role-spec",
    "unnecessary reiteration": "step-repetition",
    "context truncation": "history-loss",
    "trigger the termination": "termination-unaware",
    "request additional information": "clarification",
    "deviation from the intended objective": "derailment",
    "share or communicate important data": "withholding",
    "adequately consider input": "ignored-input",
    "discrepancy between the logical reasoning": "reasoning-action",
    "ending a dialogue, interaction or task before": "premature-termination",
    "validate or cross-check": "no-verification",
    "omission of proper checking": "incorrect-verification",
    "inefficient repetition of tasks": "unbatched",
    "restarting of a dialogue": "conversation-reset",
    "unclear or conflicting information": "ambiguities",
    "ambiguities and contradictio": "ambiguities",
    "converge on a mutually acceptable": "disagreement",
    "inefficient idling": "waiting",
}


def mast_rows() -> list[dict[str, Any]]:
    """MAST failure-mode names, one pass per taxonomy round, truth = the mode (matched by its definition)."""
    data = json.loads((DATASETS / "mast_mad_human" / "MAD_human_labelled_dataset.json").read_text(encoding="utf-8"))
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for record in data:
        for annotation in record["annotations"]:
            label = annotation["failure mode"]
            head, _, _definition = label.partition("\n")
            name = re.sub(r"^\s*\d+(\.\d+)?\s*", "", head).split("  ")[0].strip()
            lowered = label.lower()
            mode = next((m for phrase, m in MAST_MODES.items() if phrase in lowered), None)
            if mode is None or (record["round"], mode) in seen:
                continue
            seen[(record["round"], mode)] = {
                "trajectory_id": "mast", "pass": record["round"], "turn": None, "category": "semantic",
                "severity": "minor", "description": name, "truth": mode,
            }
    return _finish(list(seen.values()))


def stsb_rows(groups: int = 20, per_group: int = 8, seed: int = 11) -> list[dict[str, Any]]:
    """Cross-lingual: each STS-B row's first sentence in en/zh/ja is one defect seen by three passes."""
    path = DATASETS / "stsb_multi_mt" / "stsb-test-aligned-en-zh-ja.tsv"
    with path.open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle, delimiter="\t"))
    rng = random.Random(seed)
    # Distinct first sentences only (STS-B repeats some).
    by_text = {row["en_sentence1"].strip().lower(): row for row in table}
    chosen = rng.sample(sorted(by_text), groups * per_group)
    rows: list[dict[str, Any]] = []
    for number, key in enumerate(chosen):
        row = by_text[key]
        for lang in ("en", "zh", "ja"):
            rows.append({
                "trajectory_id": f"stsb-{number // per_group}", "pass": lang, "turn": None, "category": "semantic",
                "severity": "minor", "description": row[f"{lang}_sentence1"], "truth": row["row"],
            })
    return _finish(rows)


def fixture_rows() -> list[dict[str, Any]]:
    rows, errors = read_issue_rows(FIXTURE)
    if errors:
        raise ValueError("; ".join(map(str, errors)))
    return rows


def simjudge_rows(count: int = 60, seed: int = 5) -> list[dict[str, Any]]:
    """Panels of the simulated judge over synthetic trajectories; truth = the planted defect (or false alarm)."""
    from judge.testing.simjudge import SimConfig, SimulatedJudge
    from judge.testing.synthetic import synthetic_batch

    trajectories, truth_rows = synthetic_batch(count, seed=seed)
    judge = SimulatedJudge(truth_rows, SimConfig())
    rows: list[dict[str, Any]] = []
    for trajectory, truth in zip(trajectories, truth_rows):
        planted = {d["description"]: f"d{k}" for k, d in enumerate(truth["issues"])}
        for persona in range(3):
            verdict = judge.verdict(truth, persona, truth["turn_count"], random.Random(f"{trajectory.id}/{persona}"))
            for issue in verdict["issues"]:
                label = next((v for d, v in planted.items() if d in issue["description"] or d[:1].lower() + d[1:] in issue["description"]), None)
                rows.append({**issue, "trajectory_id": trajectory.id, "pass": f"sim#{persona}",
                             "truth": label or f"noise:{issue['tag']}:{issue['turn']}"})
    return _finish(rows)


DATASET_BUILDERS = {
    "agentrx": lambda: agentrx_rows(pool=1),
    "agentrx-pooled": lambda: agentrx_rows(pool=4),
    "agentrx-same-step": agentrx_same_step_rows,
    "mast-names": mast_rows,
    "stsb-xling": stsb_rows,
    "multilingual": fixture_rows,
    "simjudge": simjudge_rows,
}


def text_only(config: ClusterConfig, cosine: float) -> ClusterConfig:
    """The text-similarity-only baseline: link when cosine >= ``cosine``."""
    return config.model_copy(update={"weights": {f: float(f == "text") for f in FEATURES}, "bias": -cosine, "threshold": 0.0})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default="use-m3,minilm,lexical")
    parser.add_argument("--datasets", default=",".join(DATASET_BUILDERS))
    parser.add_argument("--calibrate", action="store_true", help="also fit weights on all sets and print them")
    args = parser.parse_args(argv)
    data = {}
    for name in args.datasets.split(","):
        try:
            data[name] = DATASET_BUILDERS[name]()
        except FileNotFoundError as error:
            print(f"skip {name}: {error}", file=sys.stderr)
    header = f"{'embedder':8} {'config':14} {'dataset':15} {'items':>5} {'P':>6} {'R':>6} {'F1':>6} {'ARI':>6} {'maj.rec':>7} {'x-merge':>7} {'x-step':>6} {'secs':>5}"
    print(header)
    print("-" * len(header))
    for embedder_name in args.embedders.split(","):
        embedder = make_embedder(embedder_name)
        config = ClusterConfig(embedder=embedder_name)
        configs = {"default": config, "text>=0.5": text_only(config, 0.5)}
        for label, cfg in configs.items():
            for name, rows in data.items():
                started = time.perf_counter()
                panel = 3 if name != "mast-names" else len({r["pass"] for r in rows})
                q = evaluate_rows(rows, cfg, embedder, panel_size=panel)
                print(f"{embedder_name:8} {label:14} {name:15} {q.items:5d} {q.precision:6.3f} {q.recall:6.3f} {q.f1:6.3f} "
                      f"{q.ari:6.3f} {q.majority_recall:7.3f} {q.cross_merge_rate:7.3f} "
                      f"{'-' if q.same_step_merge_rate is None else format(q.same_step_merge_rate, '.3f'):>6} "
                      f"{time.perf_counter() - started:5.1f}")
        if args.calibrate:
            rows = [r for name, rs in data.items() if name.startswith(("agentrx", "multilingual")) for r in rs]
            fit = calibrate(rows, config, embedder, panel_size=3)
            print(f"calibrated on agentrx+multilingual ({fit.pairs} pairs, {fit.positives} same-defect): "
                  f"F1 {fit.before.f1:.3f} -> {fit.after.f1:.3f}")
            print(json.dumps(fit.config.describe()))
            # Held out: fit on half of the AgentRx trajectories, measure on the other half (and swap).
            single = agentrx_rows(pool=1)
            ids = sorted({r["trajectory_id"] for r in single})
            for fold in (0, 1):
                train = [r for r in single if ids.index(r["trajectory_id"]) % 2 == fold]
                test = [r for r in single if ids.index(r["trajectory_id"]) % 2 != fold]
                fitted = calibrate(train, config, embedder, panel_size=3).config
                held = evaluate_rows(test, fitted, embedder, panel_size=3)
                base = evaluate_rows(test, config, embedder, panel_size=3)
                print(f"agentrx fold {fold}: held-out F1 fitted {held.f1:.3f} vs default {base.f1:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
