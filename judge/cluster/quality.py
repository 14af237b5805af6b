"""How good a clustering is against labelled truth: pairwise precision/recall/F1, ARI, majority recall and
false merges (pure), and :func:`evaluate_rows` for labelled ``judge cluster`` rows."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from judge.cluster.core import ClusterConfig, cluster_items, group_labels, majority_floor
from judge.cluster.rows import group_rows, items_of_rows, truth_of
from judge.embed import Embedder

NOISE_PREFIX = "noise:"  # truth ids of labelled false alarms (not counted as defects in majority recall)


@dataclass
class ClusterQuality:
    """Pairwise precision/recall/F1 over issue pairs of one trajectory, ARI, majority recall, false merges."""

    pairs: int
    precision: float
    recall: float
    f1: float
    ari: float
    majority_recall: float
    cross_merge_rate: float
    defects: int
    items: int
    same_step_merge_rate: float | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def cluster_quality(trajectories: Sequence[Sequence[Sequence[Any]]], panel_size: int) -> ClusterQuality:
    """Measure predicted clusters against truth.

    ``trajectories``: per trajectory, (pass labels, truth ids, predicted ids[, true turns]) aligned by item.
    Pairwise scores count unordered item pairs within a trajectory (same truth vs same prediction).
    ``majority_recall``: share of true defects with some predicted cluster holding >= floor(n/2)+1 distinct
    passes of that defect (truth ids starting with ``noise:`` are false alarms and left out of it).
    ``cross_merge_rate``: share of cross-pass pairs of *different* defects that were
    put together; ``same_step_merge_rate`` the same over pairs whose true turns are equal (None when no
    true turns are given or no such pair exists). ARI is the adjusted Rand index over all items (ids made
    unique per trajectory).
    """
    tp = fp = fn = 0
    cross_pairs = cross_merged = 0
    step_pairs = step_merged = 0
    defects = reached = 0
    all_truth: list[str] = []
    all_pred: list[str] = []
    needed = majority_floor(panel_size)
    for number, measured in enumerate(trajectories):
        passes, truth, pred = measured[0], measured[1], measured[2]
        true_turns = measured[3] if len(measured) > 3 else [None] * len(truth)
        n = len(truth)
        all_truth += [f"{number}/{t}" for t in truth]
        all_pred += [f"{number}/{p}" for p in pred]
        for i in range(n):
            for j in range(i + 1, n):
                same_truth, same_pred = truth[i] == truth[j], pred[i] == pred[j]
                tp += same_truth and same_pred
                fp += same_pred and not same_truth
                fn += same_truth and not same_pred
                if not same_truth and passes[i] != passes[j]:
                    cross_pairs += 1
                    cross_merged += same_pred
                    if true_turns[i] is not None and true_turns[i] == true_turns[j]:
                        step_pairs += 1
                        step_merged += same_pred
        for defect in set(truth):
            if defect.startswith(NOISE_PREFIX):
                continue  # a labelled false alarm: it should not reach a majority
            defects += 1
            votes: dict[str, set[str]] = {}
            for p, t, c in zip(passes, truth, pred):
                if t == defect:
                    votes.setdefault(c, set()).add(p)
            reached += max(len(v) for v in votes.values()) >= needed
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return ClusterQuality(
        pairs=tp + fn,
        precision=precision,
        recall=recall,
        f1=f1,
        ari=adjusted_rand_index(all_truth, all_pred),
        majority_recall=reached / defects if defects else 1.0,
        cross_merge_rate=cross_merged / cross_pairs if cross_pairs else 0.0,
        defects=defects,
        items=len(all_truth),
        same_step_merge_rate=step_merged / step_pairs if step_pairs else None,
    )


def adjusted_rand_index(truth: Sequence[Hashable], predicted: Sequence[Hashable]) -> float:
    """Hubert-Arabie adjusted Rand index of two labelings: sklearn's ``adjusted_rand_score`` (1.0 when both are
    trivially identical, e.g. one cluster each or no items)."""
    from sklearn.metrics import adjusted_rand_score

    if len(truth) != len(predicted):
        raise ValueError("labelings differ in length")
    return float(adjusted_rand_score(list(truth), list(predicted)))


def evaluate_rows(rows: Sequence[dict[str, Any]], config: ClusterConfig, embedder: Embedder | None, panel_size: int | None = None) -> ClusterQuality:
    """Cluster labelled rows and measure the result against their truth labels."""
    measured = []
    for group in group_rows(rows).values():
        items = items_of_rows(group)
        groups, _ = cluster_items(items, config, embedder)
        predicted = group_labels(groups, len(items))
        true_turns = [r.get("truth_turn") for r in group]
        measured.append(([i.pass_label for i in items], [truth_of(r) for r in group], predicted, true_turns))
    size = panel_size or max((len(set(m[0])) for m in measured), default=1)
    return cluster_quality(measured, size)
