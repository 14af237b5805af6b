"""Clustering the issues of one trajectory across judge passes, and majority attribution.

- :mod:`judge.cluster.core`: the algorithm (link features and weights, constrained average-linkage
  agglomeration, the member rules of a cluster's fields, majority) - what ``judge score`` runs;
- :mod:`judge.cluster.rows`: issue rows from any source, the input and output of ``judge cluster``;
- :mod:`judge.cluster.quality`: pairwise P/R/F1, ARI, majority recall and false merges against labels;
- :mod:`judge.cluster.calibration`: fitting weights and threshold on labelled rows (``judge calibrate``).

The names below are the public API, importable from ``judge.cluster``.
"""

from judge.cluster.calibration import Calibration, calibrate
from judge.cluster.core import (
    CATEGORY_PRIORITY,
    DEFAULT_BIAS,
    DEFAULT_WEIGHTS,
    FEATURES,
    ClusterConfig,
    IssueItem,
    LinkScores,
    agglomerate,
    agglomerate_pairs,
    build_clusters,
    candidate_pairs,
    cluster_category,
    cluster_items,
    cluster_recovered,
    cluster_severity,
    cluster_tag,
    cluster_turn,
    cluster_verdicts,
    cross_pass_pairs,
    description_text,
    feature_tensor,
    group_labels,
    link_scores,
    majority_floor,
    medoid,
    normalise_tag,
    pair_features,
    weighed_evidence,
)
from judge.cluster.quality import NOISE_PREFIX, ClusterQuality, adjusted_rand_index, cluster_quality, evaluate_rows
from judge.cluster.rows import (
    ROW_TRUTH_KEYS,
    RowError,
    cluster_rows,
    group_rows,
    issue_from_row,
    items_of_rows,
    read_issue_rows,
    truth_of,
)

__all__ = [
    "CATEGORY_PRIORITY", "DEFAULT_BIAS", "DEFAULT_WEIGHTS", "FEATURES", "NOISE_PREFIX", "ROW_TRUTH_KEYS", "Calibration",
    "ClusterConfig", "ClusterQuality", "IssueItem", "LinkScores", "RowError", "adjusted_rand_index", "agglomerate",
    "agglomerate_pairs", "build_clusters", "calibrate", "candidate_pairs", "cross_pass_pairs", "cluster_category", "cluster_items", "cluster_quality", "cluster_recovered", "cluster_rows",
    "cluster_severity", "cluster_tag", "cluster_turn", "cluster_verdicts", "description_text", "evaluate_rows",
    "feature_tensor", "group_labels", "group_rows", "issue_from_row", "items_of_rows", "link_scores", "majority_floor",
    "medoid", "normalise_tag", "pair_features", "read_issue_rows", "truth_of", "weighed_evidence",
]
