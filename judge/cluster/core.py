"""The clustering algorithm: issues of one trajectory across judge passes, and majority attribution.

Text similarity alone splits one defect described in three wordings into three single votes (the failure
the reference design names). Judges that see one defect also share other things: the turn (or a turn
next to it), the category, the tag, the evidence they quote. The link score of two issues is a linear
combination of those features (weights in :class:`ClusterConfig`, fitted by ``judge calibrate``):

    score(a, b) = bias + sum_f weight[f] * feature_f(a, b)

Clusters are built by constrained average-linkage agglomeration: repeatedly merge the two clusters with the
highest mean link score, as long as it is >= ``threshold`` and the two clusters share no pass. So two issues
of one pass never sit in one cluster, and a cluster's votes (distinct passes) equal its member count.

Member rule for a cluster's fields (pure functions below, table-tested):
- ``severity``: the most common; a tie goes to ``severe``.
- ``category``: the most common; a tie goes to the category with more severe members, then to the stricter
  category in the order semantic, code, capability, environment (an agent category before ``environment``,
  so a tie never excuses the agent).
- ``turn``: the most common among members that name one; a tie goes to the earliest; None if none names one.
- ``tag``: the most common among members that name one; a tie goes to the first in pass order.
- ``description``: the member with the highest mean link score to the others (the medoid); ties: first.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from judge.embed import DEFAULT_EMBEDDER, Embedder, char_ngrams
from judge.schema import Category, Cluster, ClusterMember, Issue, Severity, Verdict

FEATURES: tuple[str, ...] = (
    "text",  # cosine of the description embeddings
    "lexical",  # character 3-gram Jaccard of the descriptions (language-neutral, no model)
    "turn_exact",  # both name a turn and it is the same
    "turn_near",  # both name a turn, 1..turn_window apart
    "turn_far",  # both name a turn, further apart
    "category",  # same category
    "tag_same",  # both have a tag and it is the same
    "tag_differ",  # both have a tag and they differ
    "evidence",  # overlap coefficient of the quoted evidence (character 3-grams); 0 if either has none or
    # either quote failed verification (evidence_verified False: an invented quote weighs nothing)
)

# Set by hand for use-m3 cosines, then checked with `judge calibrate` / `bench/cluster_quality.py --calibrate`
# on the AgentRx wordings (perturbed turns) plus the en/zh/ja fixture: the fit lands close (text 6.0, lexical
# 2.2, turn_exact 1.6, turn_near 0.9, turn_far -2.0, category 1.1, tag_same 0.8) and is not better on F1,
# also on held-out halves. Lexical overlap was then raised from 2 to 5: same-step AgentRx F1 0.85 -> 0.89,
# MAST names 0.90 -> 0.97, nothing worse; it adds nothing across languages, so cross-lingual is unchanged.
DEFAULT_WEIGHTS: dict[str, float] = {
    "text": 7.0,
    "lexical": 5.0,
    "turn_exact": 1.5,
    "turn_near": 0.5,
    "turn_far": -2.0,
    "category": 1.0,
    "tag_same": 1.5,
    "tag_differ": -0.5,
    # No labelled set here quotes evidence, so this one is set by reasoning, not fitted: an identical quote at
    # a near turn with the same category links two wordings (a failed call and a false claim about it quote
    # the same error line too, but differ in category, and stay apart; see tests/test_cluster_core.py).
    "evidence": 2.5,
}
DEFAULT_BIAS = -4.0

# Stricter first: used to break category ties.
CATEGORY_PRIORITY: tuple[Category, ...] = ("semantic", "code", "capability", "environment")


class ClusterConfig(BaseModel):
    """Everything that decides which issues merge; recorded in run.json (``describe``)."""

    model_config = ConfigDict(extra="forbid")

    embedder: str = Field(default=DEFAULT_EMBEDDER, description="Embedder name (judge.embed.make_embedder).")
    weights: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_WEIGHTS),
        description="Weight per feature (FEATURES); a feature left out weighs 0 (from_options keeps the defaults).",
    )
    bias: float = DEFAULT_BIAS
    threshold: float = Field(default=0.0, description="Merge while the mean link score is >= this.")
    turn_window: int = Field(default=2, ge=0, description="Turns this far apart (and not equal) count as near.")

    @field_validator("weights")
    @classmethod
    def _known_features(cls, weights: dict[str, float]) -> dict[str, float]:
        unknown = set(weights) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown cluster weight(s) {sorted(unknown)}; known: {', '.join(FEATURES)}")
        return weights

    @classmethod
    def from_options(cls, options: dict[str, Any] | None) -> ClusterConfig:
        """Build from a run.json ``cluster`` entry or CLI options; missing weights keep their defaults."""
        options = dict(options or {})
        weights = dict(DEFAULT_WEIGHTS)
        weights.update(options.pop("weights", None) or {})
        return cls(weights=weights, **options)

    def describe(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def weight_vector(self) -> np.ndarray:
        return np.array([self.weights.get(name, 0.0) for name in FEATURES], dtype=np.float64)


@dataclass(frozen=True)
class IssueItem:
    """One issue of one pass, the unit the clusterer works on."""

    pass_label: str
    issue_index: int
    issue: Issue


def majority_floor(panel_size: int) -> int:
    """Votes a cluster needs to be attributed: floor(n/2)+1 of the n planned passes (2 of 3, 1 of 1)."""
    return panel_size // 2 + 1


# --- pairwise features ---------------------------------------------------------------------------


def _gram_set(text: str) -> frozenset[str]:
    return frozenset(char_ngrams(text, 3)) if text and text.strip() else frozenset()


# "At step 4,", "In turn 12:", "At T3": a judge's pointer, not part of what went wrong (the turn is a feature).
_STEP_PREFIX = re.compile(r"^\s*(?:at|in|on)\s+(?:(?:step|turn)\s+|t)\d+\s*[,:]?\s*", re.IGNORECASE)


def description_text(issue: Issue) -> str:
    """The text that is embedded: the description, NFKC-normalised and without a leading 'At step N,'."""
    return _STEP_PREFIX.sub("", unicodedata.normalize("NFKC", issue.description)).strip() or issue.description


def normalise_tag(tag: str | None) -> str:
    """Tags compare case-insensitively, with ``_`` and spaces read as ``-`` (judges spell them loosely)."""
    return re.sub(r"[\s_]+", "-", (tag or "").strip().lower())


def weighed_evidence(issue: Issue) -> str:
    """The evidence that counts for clustering: none when the quote was not found in the trajectory."""
    return "" if issue.evidence_verified is False else issue.evidence


def pair_features(a: Issue, b: Issue, cosine: float, turn_window: int, grams: tuple[frozenset[str], ...] = ()) -> np.ndarray:
    """Feature vector of two issues in :data:`FEATURES` order.

    ``grams`` optionally passes precomputed (desc_a, desc_b, evidence_a, evidence_b) 3-gram sets.
    """
    if not grams:
        grams = (
            _gram_set(description_text(a)),
            _gram_set(description_text(b)),
            _gram_set(weighed_evidence(a)),
            _gram_set(weighed_evidence(b)),
        )
    da, db, ea, eb = grams
    lexical = len(da & db) / len(da | db) if da and db else 0.0
    evidence = len(ea & eb) / min(len(ea), len(eb)) if ea and eb else 0.0
    gap = abs(a.turn - b.turn) if a.turn is not None and b.turn is not None else None
    tag_a, tag_b = normalise_tag(a.tag), normalise_tag(b.tag)
    both_tags = bool(tag_a) and bool(tag_b)
    return np.array(
        [
            cosine,
            lexical,
            float(gap == 0),
            float(gap is not None and 0 < gap <= turn_window),
            float(gap is not None and gap > turn_window),
            float(a.category == b.category),
            float(both_tags and tag_a == tag_b),
            float(both_tags and tag_a != tag_b),
            evidence,
        ],
        dtype=np.float64,
    )


def _one_pass(items: Sequence[IssueItem]) -> bool:
    """Whether every item comes from one pass (then no two may merge)."""
    return len({item.pass_label for item in items}) < 2


def feature_tensor(items: Sequence[IssueItem], config: ClusterConfig, embedder: Embedder | None) -> np.ndarray:
    """(n, n, len(FEATURES)) pairwise features of ``items``; embeds only when some pair can merge."""
    n = len(items)
    tensor = np.zeros((n, n, len(FEATURES)), dtype=np.float64)
    if _one_pass(items):
        return tensor  # one pass: nothing can merge, so nothing is embedded (no model load)
    texts = [description_text(item.issue) for item in items]
    if embedder is not None and config.weights.get("text", 0.0) != 0.0:
        vectors = embedder.embed(texts)
        cosines = np.clip(vectors @ vectors.T, -1.0, 1.0).astype(np.float64)
    else:
        cosines = np.zeros((n, n))
    grams = [(_gram_set(t), _gram_set(weighed_evidence(item.issue))) for t, item in zip(texts, items)]
    for i in range(n):
        for j in range(i + 1, n):
            if items[i].pass_label == items[j].pass_label:
                continue
            vector = pair_features(
                items[i].issue, items[j].issue, float(cosines[i, j]), config.turn_window,
                (grams[i][0], grams[j][0], grams[i][1], grams[j][1]),
            )
            tensor[i, j] = tensor[j, i] = vector
    return tensor


def link_scores(items: Sequence[IssueItem], features: np.ndarray, config: ClusterConfig) -> np.ndarray:
    """Link score matrix; -inf where two issues come from the same pass (they may never merge)."""
    scores = features @ config.weight_vector() + config.bias
    passes = np.array([item.pass_label for item in items], dtype=object)
    same_pass = passes[:, None] == passes[None, :]
    return np.where(same_pass, -np.inf, scores)


def agglomerate(scores: np.ndarray, passes: Sequence[str], threshold: float) -> list[list[int]]:
    """Constrained average-linkage clustering of a link-score matrix.

    Merges the pair of clusters with the highest mean score while it is >= ``threshold`` and the two share
    no pass (ties: the pair that comes first). Returns member index lists, each sorted, in order of their
    first member. Keeps between-cluster score sums, so each merge costs O(n^2).
    """
    n = len(passes)
    labels = np.array(list(passes), dtype=object)
    conflict = labels[:, None] == labels[None, :]  # clusters that share a pass may never merge
    sums = np.where(conflict, 0.0, np.asarray(scores, dtype=np.float64))
    sizes = np.ones(n)
    alive = np.ones(n, dtype=bool)
    members: list[list[int]] = [[i] for i in range(n)]
    while alive.sum() > 1:
        means = sums / np.outer(sizes, sizes)
        blocked = conflict | ~alive[:, None] | ~alive[None, :] | np.tri(n, dtype=bool)  # upper triangle only
        means = np.where(blocked, -np.inf, means)
        x, y = np.unravel_index(int(np.argmax(means)), means.shape)
        if not np.isfinite(means[x, y]) or means[x, y] < threshold:
            break
        sums[x, :] += sums[y, :]
        sums[:, x] += sums[:, y]
        conflict[x, :] |= conflict[y, :]
        conflict[:, x] |= conflict[:, y]
        sizes[x] += sizes[y]
        alive[y] = False
        members[x] = sorted(members[x] + members[y])
    return sorted((members[i] for i in range(n) if alive[i]), key=lambda g: g[0])


def cluster_items(items: Sequence[IssueItem], config: ClusterConfig, embedder: Embedder | None) -> tuple[list[list[int]], np.ndarray]:
    """Cluster issue items; returns member index lists and the link-score matrix (for medoids)."""
    if _one_pass(items):
        # One pass (a panel of one, or the only pass that found anything; or no item): every pair shares it, so every
        # link is -inf and nothing merges. What the agglomeration would return, without building its matrices.
        return [[i] for i in range(len(items))], np.full((len(items), len(items)), -np.inf)
    scores = link_scores(items, feature_tensor(items, config, embedder), config)
    return agglomerate(scores, [item.pass_label for item in items], config.threshold), scores


def group_labels(groups: Sequence[Sequence[int]], size: int) -> list[str]:
    """Member index lists -> one cluster label per item (``"0"``, ``"1"``, ... in group order)."""
    labels = [""] * size
    for number, members in enumerate(groups):
        for index in members:
            labels[index] = str(number)
    return labels


# --- member rules (pure) -------------------------------------------------------------------------


def cluster_severity(severities: Sequence[Severity]) -> Severity:
    """The most common severity; a tie goes to ``severe``."""
    counts = Counter(severities)
    return "severe" if counts["severe"] >= counts["minor"] else "minor"


def cluster_category(members: Sequence[tuple[Category, Severity]]) -> Category:
    """The most common category; ties: more severe members, then :data:`CATEGORY_PRIORITY`."""
    counts = Counter(category for category, _ in members)
    severe = Counter(category for category, severity in members if severity == "severe")
    return min(counts, key=lambda c: (-counts[c], -severe[c], CATEGORY_PRIORITY.index(c)))


def cluster_turn(turns: Sequence[int | None]) -> int | None:
    """The most common named turn; a tie goes to the earliest; None when no member names a turn."""
    counts = Counter(t for t in turns if t is not None)
    if not counts:
        return None
    return min(counts, key=lambda t: (-counts[t], t))


def cluster_tag(tags: Sequence[str | None]) -> str | None:
    """The most common tag; a tie goes to the first one seen."""
    named = [t for t in tags if t]
    if not named:
        return None
    counts = Counter(named)
    return min(named, key=lambda t: (-counts[t], named.index(t)))


def cluster_recovered(flags: Sequence[bool | None]) -> bool | None:
    """Recovered only when every member that says, says so (one pass that saw no recovery keeps it blocking)."""
    said = [f for f in flags if f is not None]
    if not said:
        return None
    return all(said)


def medoid(indices: Sequence[int], scores: np.ndarray) -> int:
    """The member with the highest mean link score to the other members (first on ties)."""
    if len(indices) == 1:
        return indices[0]
    sub = scores[np.ix_(list(indices), list(indices))]
    means = [float(np.mean([sub[i, j] for j in range(len(indices)) if j != i])) for i in range(len(indices))]
    return indices[int(np.argmax(means))]


def build_clusters(
    trajectory_id: str, items: Sequence[IssueItem], groups: list[list[int]], scores: np.ndarray, panel_size: int
) -> list[Cluster]:
    """Turn member index lists into :class:`Cluster` rows with ids c1, c2, ... ordered by turn."""
    floor = majority_floor(panel_size)
    rows: list[Cluster] = []
    for group in groups:
        issues = [items[i].issue for i in group]
        votes = len({items[i].pass_label for i in group})
        if len(issues) == 1:  # one member (every cluster of a panel of one): its own values, nothing to weigh
            (one,) = issues
            turn, category, severity, tag, recovered = one.turn, one.category, one.severity, one.tag or None, one.recovered
            description = one.description
        else:
            turn = cluster_turn([x.turn for x in issues])
            category = cluster_category([(x.category, x.severity) for x in issues])
            severity = cluster_severity([x.severity for x in issues])
            tag = cluster_tag([x.tag for x in issues])
            recovered = cluster_recovered([x.recovered for x in issues])
            description = items[medoid(group, scores)].issue.description
        rows.append(
            Cluster(
                trajectory_id=trajectory_id,
                cluster="",
                members=[ClusterMember(pass_key=items[i].pass_label, issue_index=items[i].issue_index, issue=items[i].issue) for i in group],
                votes=votes,
                panel_size=panel_size,
                majority=votes >= floor,
                turn=turn,
                category=category,
                severity=severity,
                tag=tag,
                recovered=recovered,
                description=description,
            )
        )
    rows.sort(key=lambda c: (c.turn is None, c.turn or 0, -c.votes))
    for number, row in enumerate(rows, start=1):
        row.cluster = f"c{number}"
    return rows


def cluster_verdicts(
    trajectory_id: str, verdicts: list[Verdict], *, panel_size: int, config: ClusterConfig, embedder: Embedder | None
) -> list[Cluster]:
    """Cluster the issues of the ``ok`` passes of one trajectory; every cluster is kept (minorities too)."""
    items = [
        IssueItem(pass_label=verdict.pass_key, issue_index=index, issue=issue)
        for verdict in sorted((v for v in verdicts if v.status == "ok"), key=lambda v: (v.pass_index, v.pass_key))
        for index, issue in enumerate(verdict.issues)
    ]
    groups, scores = cluster_items(items, config, embedder)
    return build_clusters(trajectory_id, items, groups, scores, panel_size)
