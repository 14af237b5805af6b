"""Clustering quality on real data (no LLM): the floors the clusterer must keep.

Sets (built by bench/cluster_quality.py, which prints the same figures as a table):
- AgentRx tau ground truth: each failure's wordings (step_reason, category_reason, failure_summary) are three
  passes; "At step N," stripped, turns perturbed (exact 40% / off by 1-2 40% / missing 20%), 15% of
  categories flipped. Single trajectories and pools of four (failures of different trajectories kept apart).
- MAST failure-mode names across taxonomy rounds (paraphrased names, text only).
- STS-B test sentences in en/zh/ja as three passes of one "defect", eight per trajectory (cross-lingual).

Floors, and why (measured with use-m3 and the default weights; figures in the comments are means over seeds):
- AgentRx single: F1 >= 0.93 and majority recall >= 0.95 (measured 0.975 / 0.99); cross-failure merges
  <= 5% (measured 4.2%: one trajectory whose failure_summary describes its second failure while the label
  says the first, i.e. an annotation slip the clusterer follows correctly).
- AgentRx pooled: F1 >= 0.88, majority recall >= 0.93 (measured 0.94 / 0.99), merges <= 3% (1.1%). Lower than
  single because generic wordings ("misinterpreted the output of the tool call") recur across trajectories.
- AgentRx same step (failures of different trajectories annotated at one step, pooled): merges between
  different failures <= 5% (measured 3.8%), F1 >= 0.82 (0.885), majority recall >= 0.93 (0.96). Turn and
  category agree there, so only the wording separates them: the hardest case.
- The default beats text similarity alone (cosine >= 0.5) on AgentRx by >= 0.05 F1 (0.975 vs 0.86): the point
  of combining turn, category, tag and evidence.
- STS-B cross-lingual: F1 >= 0.95, majority recall >= 0.98 (measured 0.985 / 1.0).
- MAST names: F1 >= 0.90 (measured 0.97); names alone are hard paraphrases (e.g. "Conversation reset").
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from statistics import mean

import pytest

from judge.cluster import ClusterConfig, evaluate_rows
from judge.embed import make_embedder

pytestmark = [pytest.mark.shared, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"
SEEDS = (1, 2, 3, 4)


def _bench():
    spec = importlib.util.spec_from_file_location("cluster_quality_bench", REPO / "bench" / "cluster_quality.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    for needed in ("agentrx", "stsb_multi_mt", "mast_mad_human"):
        if not (DATASETS / needed).is_dir():
            pytest.skip(f"shared dataset {needed} not found under {DATASETS}")
    return _bench()


@pytest.fixture(scope="module")
def embedder():
    return make_embedder("use-m3")


def _mean_quality(rows_by_seed, config, embedder):
    results = [evaluate_rows(rows, config, embedder, panel_size=3) for rows in rows_by_seed]
    return {key: mean(getattr(r, key) for r in results) for key in ("f1", "precision", "recall", "majority_recall", "cross_merge_rate", "ari")}


@pytest.mark.parametrize(
    ("pool", "f1", "majority", "merges"), [(1, 0.93, 0.95, 0.05), (4, 0.88, 0.93, 0.03)], ids=["single", "pooled"]
)
def test_agentrx_wordings_cluster_by_failure(bench, embedder, pool, f1, majority, merges) -> None:
    quality = _mean_quality([bench.agentrx_rows(pool=pool, seed=s) for s in SEEDS], ClusterConfig(), embedder)
    print(f"agentrx pool={pool}: " + ", ".join(f"{k} {v:.3f}" for k, v in quality.items()))
    assert quality["f1"] >= f1
    assert quality["majority_recall"] >= majority
    assert quality["cross_merge_rate"] <= merges


def test_failures_at_the_same_step_stay_apart(bench, embedder) -> None:
    quality = _mean_quality([bench.agentrx_same_step_rows(seed=s) for s in SEEDS], ClusterConfig(), embedder)
    print("agentrx same step: " + ", ".join(f"{k} {v:.3f}" for k, v in quality.items()))
    assert quality["cross_merge_rate"] <= 0.05
    assert quality["f1"] >= 0.82 and quality["majority_recall"] >= 0.93


def test_combined_features_beat_text_alone(bench, embedder) -> None:
    rows = [bench.agentrx_rows(pool=1, seed=s) for s in SEEDS]
    default = _mean_quality(rows, ClusterConfig(), embedder)
    text_only = _mean_quality(rows, bench.text_only(ClusterConfig(), 0.5), embedder)
    print(f"agentrx F1 default {default['f1']:.3f} vs text-only {text_only['f1']:.3f}")
    assert default["f1"] >= text_only["f1"] + 0.05


def test_cross_lingual_sentences_merge_across_languages(bench, embedder) -> None:
    quality = evaluate_rows(bench.stsb_rows(), ClusterConfig(), embedder, panel_size=3)
    print("stsb en/zh/ja:", quality.as_dict())
    assert quality.f1 >= 0.95 and quality.majority_recall >= 0.98


def test_mast_mode_names_paraphrases(bench, embedder) -> None:
    rows = bench.mast_rows()
    quality = evaluate_rows(rows, ClusterConfig(), embedder, panel_size=len({r["pass"] for r in rows}))
    print("mast names:", quality.as_dict())
    assert quality.f1 >= 0.90


def test_agentrx_loader_perturbs_turns_and_strips_step_prefixes(bench) -> None:
    rows = bench.agentrx_rows(pool=1, seed=1)
    assert not any(r["description"].lower().startswith("at step") for r in rows)
    assert any(r["turn"] is None for r in rows)
    exact = bench.agentrx_rows(pool=1, seed=1, perturb=False)
    assert sum(a["turn"] != b["turn"] for a, b in zip(rows, exact)) > len(rows) // 3
