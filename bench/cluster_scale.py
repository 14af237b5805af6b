"""Clustering time and memory against the number of issues per pass (3 passes, one trajectory).

    python bench/cluster_scale.py [--sizes 200,500,2000] [--embedder use-m3] [--seed 3]

Each size runs in a fresh process, so its peak RSS is its own. A synthetic panel: N defects spread over N/2 turns,
each reported by each of three passes with its own wording (a template and synonyms), the turn off by one or two
in a quarter of the reports, 10% of reports missed and 10% false alarms; truth labels give pairwise F1. Printed per
size: items, the pairs scored (every cross-pass pair up to ``EXACT_PAIR_LIMIT``, above it blocked by turn), the
embedding time (linear in items; the model's own cost, cached in a run's store), the clustering time without it,
the peak RSS, F1, and the growth of the clustering time against the growth of the items between sizes (1.0 is
linear, 2.0 quadratic). Target: 2,000 issues per pass clustered in under 10 s.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from typing import Any

import numpy as np

from judge.cluster import ClusterConfig, IssueItem, cluster_items, cluster_quality, cross_pass_pairs, group_labels
from judge.cluster.core import EXACT_PAIR_LIMIT, description_text
from judge.embed import make_embedder
from judge.schema import Issue

TOOLS = ["read_file", "write_file", "pytest", "pip install", "git push", "curl", "grep", "sed", "make", "docker build",
         "npm test", "ls", "cat", "python script.py", "bash", "kubectl apply", "terraform plan", "psql", "jq", "tar"]
OBJECTS = ["the config path", "the output file", "the test module", "the API token", "the record id", "the branch name",
           "the port number", "the requirements file", "the schema version", "the cache folder", "the user id",
           "the retry count", "the date column", "the log level", "the image tag", "the migration"]
FAULTS = [
    ("called {tool} with the wrong value for {obj}", "{tool} got a wrong {obj} from the agent",
     "passed an incorrect {obj} to {tool}"),
    ("claimed {tool} succeeded without checking {obj}", "said {tool} worked but never verified {obj}",
     "reported success of {tool} while {obj} was unchecked"),
    ("retried {tool} unchanged after it failed on {obj}", "repeated the failing {tool} call on {obj}",
     "ran {tool} again on {obj} with nothing changed"),
    ("ignored the error {tool} printed about {obj}", "did not react to {tool}'s error on {obj}",
     "overlooked that {tool} complained about {obj}"),
]
CATEGORIES = ["code", "semantic", "code", "code"]
TAGS = ["wrong-argument", "unverified-completion", "repeated-failure", "ignored-error"]


def synthetic_panel(per_pass: int, seed: int) -> tuple[list[IssueItem], list[str]]:
    """Items of three passes over ``per_pass`` defects, and each item's truth label."""
    rng = random.Random(seed)
    turns = max(1, per_pass // 2)
    defects = [(rng.randrange(len(FAULTS)), rng.choice(TOOLS), rng.choice(OBJECTS), rng.randint(1, turns))
               for _ in range(per_pass)]
    items: list[IssueItem] = []
    truth: list[str] = []
    for pass_index in range(3):
        label = f"judge#{pass_index}"
        reports = [(d, f"d{d}") for d in range(per_pass) if rng.random() >= 0.1]
        reports += [(rng.randrange(per_pass), f"noise{pass_index}-{k}") for k in range(per_pass // 10)]
        for defect, name in reports:
            kind, tool, obj, turn = defects[defect]
            if name.startswith("noise"):  # a false alarm: another fault at that turn
                kind, tool = (kind + 1) % len(FAULTS), rng.choice(TOOLS)
            wording = FAULTS[kind][(pass_index + rng.randrange(2)) % 3].format(tool=tool, obj=obj)
            if rng.random() < 0.25:
                turn = max(1, turn + rng.choice([-2, -1, 1, 2]))
            issue = Issue(turn=turn, category=CATEGORIES[kind], severity="severe", description=wording[0].upper() + wording[1:],
                          tag=TAGS[kind] if rng.random() < 0.5 else None)
            items.append(IssueItem(label, len(items), issue))
            truth.append(name)
    return items, truth


class Precomputed:
    """An embedder that returns vectors computed beforehand: the clustering is timed without the model."""

    name = "precomputed"

    def __init__(self, vectors: np.ndarray):
        self.vectors = vectors

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.vectors

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


def measure(per_pass: int, embedder_name: str, seed: int) -> dict[str, Any]:
    items, truth = synthetic_panel(per_pass, seed)
    embedder = make_embedder(embedder_name)
    embedder.embed(["warm up"])  # model load is paid once per process, not per trajectory
    started = time.perf_counter()
    vectors = embedder.embed([description_text(item.issue) for item in items])
    embed_seconds = time.perf_counter() - started
    config = ClusterConfig(embedder=embedder_name)
    started, cpu_started = time.perf_counter(), time.process_time()
    groups, scores = cluster_items(items, config, Precomputed(vectors))
    cluster_seconds, cluster_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    passes = [item.pass_label for item in items]
    quality = cluster_quality([(passes, truth, group_labels(groups, len(items)))], 3)
    return {
        "per_pass": per_pass, "items": len(items), "cross_pairs": cross_pass_pairs(passes), "scored": scores.scored,
        "embed": embed_seconds, "cluster": cluster_seconds, "cpu": cluster_cpu, "f1": quality.f1,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="200,500,2000", help="issues per pass, comma-separated")
    parser.add_argument("--embedder", default="use-m3")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process: measure one size, print JSON
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one, args.embedder, args.seed)))
        return
    print(f"3 passes, embedder {args.embedder}; every cross-pass pair scored up to {EXACT_PAIR_LIMIT:,}, above: blocked")
    header = f"{'per pass':>8} {'items':>6} {'cross pairs':>12} {'scored':>8} {'embed s':>8} {'cluster s':>9} {'CPU s':>6} {'peak RSS MB':>11} {'F1':>6} {'growth':>7}"
    print(header)
    print("-" * len(header))
    previous: dict[str, Any] | None = None
    for size in (int(s) for s in args.sizes.split(",")):
        child = subprocess.run([sys.executable, __file__, "--one", str(size), "--embedder", args.embedder, "--seed", str(args.seed)],
                               capture_output=True, text=True, check=True)
        row = json.loads(child.stdout.strip().splitlines()[-1])
        growth = "-"
        exact = row["scored"] == row["cross_pairs"]
        if previous is not None and exact != (previous["scored"] == previous["cross_pairs"]):
            growth = "(mode)"  # every pair above, blocked here: the two times do not measure one algorithm
        elif previous is not None:
            # Exponent of the clustering CPU time in the items: log(time ratio) / log(items ratio).
            growth = f"{np.log(row['cpu'] / previous['cpu']) / np.log(row['items'] / previous['items']):.2f}"
        print(f"{row['per_pass']:8d} {row['items']:6d} {row['cross_pairs']:12,d} {row['scored']:8,d} {row['embed']:8.2f} "
              f"{row['cluster']:9.2f} {row['cpu']:6.2f} {row['rss_mb']:11.0f} {row['f1']:6.3f} {growth:>7}")
        previous = row
    print("wall includes time other processes held the CPU on a shared machine; CPU s is this process's own share")
    print("growth: exponent of the clustering CPU time in the items between this size and the one above (1 linear, 2 quadratic)")


if __name__ == "__main__":
    main()
