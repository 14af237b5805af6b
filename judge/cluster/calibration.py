"""Fitting the clusterer (``judge calibrate``): link weights by logistic regression on cross-pass pairs of
labelled rows, then the threshold that gives the best pairwise F1 of the constrained clustering."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from judge.cluster.core import FEATURES, ClusterConfig, agglomerate, feature_tensor, group_labels, link_scores
from judge.cluster.quality import ClusterQuality, cluster_quality
from judge.cluster.rows import group_rows, items_of_rows, truth_of
from judge.embed import Embedder


@dataclass
class Calibration:
    """The fitted config, the quality before (the base config) and after, and the pairs it was fitted on."""

    config: ClusterConfig
    before: ClusterQuality
    after: ClusterQuality
    pairs: int
    positives: int


def calibrate(rows: Sequence[dict[str, Any]], base: ClusterConfig, embedder: Embedder | None, panel_size: int | None = None) -> Calibration:
    """Fit link weights (logistic regression on cross-pass pairs) and the threshold (best pairwise F1).

    Features are computed once per trajectory; the threshold is then chosen by rerunning the constrained
    clustering over a grid, because pairwise link probability is not the same as cluster-level F1.
    """
    from sklearn.linear_model import LogisticRegression

    prepared = []
    xs: list[np.ndarray] = []
    ys: list[int] = []
    for group in group_rows(rows).values():
        items = items_of_rows(group)
        truth = [truth_of(r) for r in group]
        features = feature_tensor(items, base, embedder)
        prepared.append((items, truth, features))
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                if items[i].pass_label != items[j].pass_label:
                    xs.append(features[i, j])
                    ys.append(int(truth[i] == truth[j]))
    if len(set(ys)) < 2:
        raise ValueError("calibration needs both same-defect and different-defect pairs across passes")
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000)
    model.fit(np.array(xs), np.array(ys))
    weights = {name: round(float(w), 3) for name, w in zip(FEATURES, model.coef_[0])}
    fitted = base.model_copy(update={"weights": weights, "bias": round(float(model.intercept_[0]), 3)})
    size = panel_size or max((len({i.pass_label for i in items}) for items, _, _ in prepared), default=1)

    def quality(config: ClusterConfig) -> ClusterQuality:
        measured = []
        for items, truth, features in prepared:
            groups = agglomerate(link_scores(items, features, config), [i.pass_label for i in items], config.threshold)
            measured.append(([i.pass_label for i in items], truth, group_labels(groups, len(items))))
        return cluster_quality(measured, size)

    best: tuple[float, float, ClusterConfig, ClusterQuality] | None = None
    for threshold in np.round(np.arange(-3.0, 3.01, 0.25), 2):
        candidate = fitted.model_copy(update={"threshold": float(threshold)})
        result = quality(candidate)
        key = (result.f1, -abs(float(threshold)))
        if best is None or key > (best[0], best[1]):
            best = (result.f1, -abs(float(threshold)), candidate, result)
    assert best is not None
    return Calibration(config=best[2], before=quality(base), after=best[3], pairs=len(ys), positives=int(sum(ys)))
