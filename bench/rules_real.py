"""The rules judge on the shared third-party logs: score distribution, releases, environment vs code issues.

    python bench/rules_real.py [--out DIR] [--keep]

Runs ``judge score`` (rules panel, the default) on each dataset of ``../shared/datasets`` that is present, in a
subprocess with this checkout first on the path, and prints per dataset: trajectories, the score distribution,
how many are released, the score distribution of the trajectories the log records as failed (reward <= 0), the
issues by category (``code``/``semantic``/``environment``...) and by tag, the environment ledger (recovered vs
not) and the failed gate checks. These logs carry no step labels: the figures describe behaviour, not accuracy
(tau-bench's ``reward`` is the only outcome label; a score that does not track it is a warning, not a metric).
Run it on two commits to compare them (``git stash`` / ``git worktree``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"
SETS = {
    "tau-airline": ["tau_bench_trajectories/gpt-4o-airline.json"],
    "agentrx-tau-retail": ["agentrx/tau_retail/tau_dataset_full.json"],
    "who-and-when": ["who_and_when/Algorithm-Generated", "who_and_when/Hand-Crafted"],
    "mast": ["mast_mad_human/MAD_human_labelled_dataset.json"],
    "swe-agent": ["swe_agent_traj"],
    "openhands": ["openhands_events"],
    "inspect-ai": ["inspect_ai_logs"],
    "mini-swe-agent": ["mini_swe_agent_traj/github_issue.traj.json"],
}


def run(label: str, paths: list[Path], out: Path) -> Path:
    run_dir = out / label
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    command = [sys.executable, "-c", "from judge.cli import main; main()", "score", *map(str, paths), "--out", str(run_dir)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{label}: judge score failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return run_dir


def rewards(run_dir: Path) -> dict[str, float | None]:
    result: dict[str, float | None] = {}
    with (run_dir / "trajectories.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            result[row["id"]] = (row.get("metadata") or {}).get("reward")
    return result


def summarise(label: str, run_dir: Path) -> None:
    rows = [json.loads(line) for line in (run_dir / "scores.jsonl").read_text(encoding="utf-8").splitlines() if line]
    reward = rewards(run_dir)
    scores = Counter(str(r["score"]) for r in rows)
    released = sum(1 for r in rows if r["release"])
    failed_task = [r for r in rows if (reward.get(r["trajectory_id"]) is not None and reward[r["trajectory_id"]] <= 0)]
    categories: Counter[str] = Counter()
    tags: Counter[str] = Counter()
    for r in rows:
        for issue in r["issues"] + r["environment"]:
            categories[f"{issue['category']}/{issue['severity']}"] += 1
            tags[issue["tag"] or "-"] += 1
    ledger = Counter(
        "recovered" if issue.get("recovered") else "unrecovered" for r in rows for issue in r["environment"]
    )
    checks = Counter(c for r in rows for c in r["failed_checks"])
    print(f"== {label}: {len(rows)} trajectories, released {released}")
    print("   scores: " + ", ".join(f"{k}: {scores[k]}" for k in sorted(scores)))
    if failed_task:
        fs = Counter(str(r["score"]) for r in failed_task)
        print(f"   scores of the {len(failed_task)} recorded failures (reward <= 0): "
              + ", ".join(f"{k}: {fs[k]}" for k in sorted(fs)))
    print("   issues by category/severity: " + (", ".join(f"{k} {v}" for k, v in sorted(categories.items())) or "none"))
    print("   issues by tag: " + (", ".join(f"{k} {v}" for k, v in tags.most_common()) or "none"))
    print("   environment ledger: " + (", ".join(f"{k} {v}" for k, v in sorted(ledger.items())) or "empty"))
    print("   failed gate checks: " + (", ".join(f"{k} {v}" for k, v in checks.most_common()) or "none"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="keep the run directories here (default: a temporary folder)")
    parser.add_argument("--only", action="append", choices=sorted(SETS), help="only these datasets (repeatable)")
    args = parser.parse_args()
    if not DATASETS.is_dir():
        raise SystemExit(f"{DATASETS} not found: the shared datasets are needed for this benchmark")
    with tempfile.TemporaryDirectory(prefix="rules-real-") as scratch:
        out = args.out or Path(scratch)
        for label, relative in SETS.items():
            if args.only and label not in args.only:
                continue
            paths = [DATASETS / p for p in relative]
            if not all(p.exists() for p in paths):
                print(f"== {label}: not found, skipped")
                continue
            summarise(label, run(label, paths, out))


if __name__ == "__main__":
    main()
