"""The clustering algorithm: issues of one trajectory across judge passes, and majority attribution.

Text similarity alone splits one defect described in three wordings into three single votes (the failure
the reference design names). Judges that see one defect also share other things: the turn (or a turn
next to it), the category, the tag, the evidence they quote. The link score of two issues is a linear
combination of those features (weights in :class:`ClusterConfig`, fitted by ``judge calibrate``):

    score(a, b) = bias + sum_f weight[f] * feature_f(a, b)

Clusters are built by constrained average-linkage agglomeration: repeatedly merge the two clusters with the
highest mean link score, as long as it is >= ``threshold`` and the two clusters share no pass. So two issues
of one pass never sit in one cluster, and a cluster's votes (distinct passes) equal its member count.
Only pairs that may link are compared (:func:`candidate_pairs`: every cross-pass pair at ordinary sizes, pairs
blocked by turn above :data:`EXACT_PAIR_LIMIT`), so neither time nor memory grows with the square of the issues.

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

import bisect
import heapq
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
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


@lru_cache(maxsize=4096)  # called for every scored pair; judges repeat a handful of tags
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
    """(n, n, len(FEATURES)) pairwise features of ``items``; embeds only when some pair can merge.

    For fitting (``judge calibrate``, small labelled sets): clustering itself scores only :func:`candidate_pairs`.
    """
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


# --- candidate pairs and sparse agglomeration ----------------------------------------------------

# Up to this many cross-pass pairs in a trajectory every pair is scored, as always (ordinary sizes: clusters are
# exactly the full comparison's). Above it pairs are blocked by turn: an issue is compared with issues of other
# passes at turns within ``turn_window`` of its own (issues without a turn with each other), at most
# BLOCK_NEIGHBOURS of them (the best by text, turn and category), so work and memory grow with the issues, not
# their square. Far-turn pairs score ``turn_far`` (a penalty) when compared; above the limit they are not.
EXACT_PAIR_LIMIT = 50_000
BLOCK_NEIGHBOURS = 10
_ROW_CHUNK = 512  # rows of a block's cosine matrix computed at once: bounds the transient whatever the block size


def cross_pass_pairs(passes: Sequence[str]) -> int:
    """Pairs of items from different passes (what full comparison scores)."""
    sizes = Counter(passes)
    total = len(passes)
    return (total * total - sum(count * count for count in sizes.values())) // 2


class LinkScores:
    """Link scores of one trajectory's items, scored when first asked and kept (symmetric; ``-inf`` within a pass).

    Replaces the full n x n matrix: the clusterer scores its candidate pairs in one batch (:meth:`score_pairs`),
    and the agglomeration and the medoid rule ask for the few others they need.
    """

    def __init__(self, items: Sequence[IssueItem], config: ClusterConfig, vectors: np.ndarray | None):
        self.items = items
        self.config = config
        self.vectors = vectors
        self.weights = config.weight_vector()
        self.known: dict[tuple[int, int], float] = {}
        self._grams: list[tuple[frozenset[str], frozenset[str]] | None] = [None] * len(items)
        self.scored = 0  # pairs scored so far: what the work grows with

    def _grams_of(self, index: int) -> tuple[frozenset[str], frozenset[str]]:
        grams = self._grams[index]
        if grams is None:
            issue = self.items[index].issue
            grams = self._grams[index] = (_gram_set(description_text(issue)), _gram_set(weighed_evidence(issue)))
        return grams

    def score_pairs(self, pairs: Sequence[tuple[int, int]], cosines: Sequence[float]) -> np.ndarray:
        """Score cross-pass pairs ``(i, j)`` (``i < j``) given their text cosines; keeps and returns the scores."""
        if not pairs:
            return np.zeros(0)
        rows = np.empty((len(pairs), len(FEATURES)), dtype=np.float64)
        for row, ((i, j), cosine) in enumerate(zip(pairs, cosines)):
            (desc_i, ev_i), (desc_j, ev_j) = self._grams_of(i), self._grams_of(j)
            rows[row] = pair_features(self.items[i].issue, self.items[j].issue, float(cosine), self.config.turn_window,
                                      (desc_i, desc_j, ev_i, ev_j))
        scores: np.ndarray = rows @ self.weights + self.config.bias
        self.known.update(zip(pairs, scores.tolist()))
        self.scored += len(pairs)
        return scores

    def __getitem__(self, pair: tuple[int, int]) -> float:
        i, j = pair
        key = (i, j) if i < j else (j, i)
        score = self.known.get(key)
        if score is None:
            if i == j or self.items[i].pass_label == self.items[j].pass_label:
                return -np.inf
            cosine = float(np.clip(self.vectors[i] @ self.vectors[j], -1.0, 1.0)) if self.vectors is not None else 0.0
            score = float(self.score_pairs([key], [cosine])[0])
        return score


def _turn_blocks(items: Sequence[IssueItem], turn_window: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rows, columns) index blocks: the items at one turn and the items at turns within ``turn_window`` of it;
    items without a turn form one block of their own."""
    by_turn: dict[int | None, list[int]] = {}
    for index, item in enumerate(items):
        by_turn.setdefault(item.issue.turn, []).append(index)
    turns = sorted(t for t in by_turn if t is not None)
    blocks = []
    for turn in turns:
        low, high = bisect.bisect_left(turns, turn - turn_window), bisect.bisect_right(turns, turn + turn_window)
        columns = [index for near in turns[low:high] for index in by_turn[near]]
        blocks.append((np.array(by_turn[turn]), np.array(columns)))
    if None in by_turn:
        blocks.append((np.array(by_turn[None]), np.array(by_turn[None])))
    return blocks


def candidate_pairs(items: Sequence[IssueItem], config: ClusterConfig, vectors: np.ndarray | None) -> tuple[list[tuple[int, int]], list[float]]:
    """The cross-pass pairs ``(i, j)``, ``i < j``, worth scoring, and their text cosines.

    Every cross-pass pair up to :data:`EXACT_PAIR_LIMIT`; above it, blocked by turn and bounded to
    :data:`BLOCK_NEIGHBOURS` per item (see the limit's comment).
    """
    n = len(items)
    passes = np.array([item.pass_label for item in items], dtype=object)
    exact = cross_pass_pairs(list(passes)) <= EXACT_PAIR_LIMIT
    blocks = [(np.arange(n), np.arange(n))] if exact else _turn_blocks(items, config.turn_window)
    turns = np.array([-1 if item.issue.turn is None else item.issue.turn for item in items])
    categories = np.array([item.issue.category for item in items], dtype=object)
    text_weight = config.weights.get("text", 0.0)
    found: dict[tuple[int, int], float] = {}
    for block_rows, columns in blocks:
        for start in range(0, len(block_rows), _ROW_CHUNK):
            rows = block_rows[start : start + _ROW_CHUNK]
            if vectors is not None:
                cosines = np.clip(vectors[rows] @ vectors[columns].T, -1.0, 1.0).astype(np.float64)
            else:
                cosines = np.zeros((len(rows), len(columns)))
            allowed = passes[rows][:, None] != passes[columns][None, :]
            if exact:
                allowed &= rows[:, None] < columns[None, :]
            elif len(columns) > BLOCK_NEIGHBOURS:
                # The cheap part of the link score ranks the block: text, same turn, same category.
                rank = text_weight * cosines + config.weights.get("turn_exact", 0.0) * (turns[rows][:, None] == turns[columns][None, :])
                rank += config.weights.get("category", 0.0) * (categories[rows][:, None] == categories[columns][None, :])
                rank = np.where(allowed, rank, -np.inf)
                keep = np.argpartition(-rank, BLOCK_NEIGHBOURS - 1, axis=1)[:, :BLOCK_NEIGHBOURS]
                best = np.zeros_like(allowed)
                np.put_along_axis(best, keep, True, axis=1)
                allowed &= best
            for r, c in zip(*np.nonzero(allowed)):
                i, j = int(rows[r]), int(columns[c])
                found[(i, j) if i < j else (j, i)] = float(cosines[r, c])
    pairs = sorted(found)
    return pairs, [found[p] for p in pairs]


def agglomerate(scores: np.ndarray, passes: Sequence[str], threshold: float) -> list[list[int]]:
    """Constrained average-linkage clustering of a full link-score matrix (see :func:`agglomerate_pairs`)."""
    n = len(passes)
    matrix = np.asarray(scores, dtype=np.float64)
    labels = np.array(list(passes), dtype=object)
    linked = (matrix >= threshold) & (labels[:, None] != labels[None, :]) & ~np.tri(n, dtype=bool)
    edges = [(int(i), int(j)) for i, j in zip(*np.nonzero(linked))]
    return agglomerate_pairs(edges, lambda i, j: float(matrix[i, j]), passes, threshold)


@dataclass
class _Node:
    """A cluster of the agglomeration: its members, passes, its smallest member and how it was made."""

    members: list[int]
    passes: frozenset[str]
    first: int
    born: int  # merge step that made it (0: a single item)
    parts: tuple[int, int] | None  # the two clusters it was made of


def agglomerate_pairs(links: Sequence[tuple[int, int]], score: Callable[[int, int], float], passes: Sequence[str], threshold: float) -> list[list[int]]:
    """Constrained average-linkage clustering from the pairs that may link.

    Repeatedly merges the two clusters with the highest mean link score while it is >= ``threshold`` and the two
    share no pass (ties: the pair whose smallest members come first). Returns member index lists, each sorted, in
    order of their first member. ``links`` are the item pairs scoring >= ``threshold``: a mean reaches the
    threshold only if one member pair does, so only clusters joined by a link are ever compared; ``score(i, j)``
    gives any other member pair a mean needs. Sums of member scores are added up in the order the full n x n
    algorithm adds them (each merge adds the two parts' sums), so the merges and their ties are the same.
    """
    nodes = [_Node([i], frozenset([passes[i]]), i, 0, None) for i in range(len(passes))]
    alive = [True] * len(nodes)
    neighbours: list[set[int]] = [set() for _ in nodes]
    sums: dict[tuple[int, int], float] = {}

    def pair_sum(a: int, b: int) -> float:
        key = (a, b) if a < b else (b, a)
        total = sums.get(key)
        if total is None:
            if nodes[a].parts is None and nodes[b].parts is None:
                total = score(nodes[key[0]].first, nodes[key[1]].first)
            else:  # the younger cluster's sum is the sum of its two parts' sums with the older one
                young, old = (a, b) if nodes[a].born > nodes[b].born else (b, a)
                parts = nodes[young].parts
                assert parts is not None  # born > 0: made by a merge
                total = pair_sum(parts[0], old) + pair_sum(parts[1], old)
            sums[key] = total
        return total

    heap: list[tuple[float, int, int, int, int]] = []

    def offer(a: int, b: int) -> None:
        mean = pair_sum(a, b) / (float(len(nodes[a].members)) * float(len(nodes[b].members)))
        if mean >= threshold:
            first_a, first_b = nodes[a].first, nodes[b].first
            if first_a < first_b:
                heapq.heappush(heap, (-mean, first_a, first_b, a, b))
            else:
                heapq.heappush(heap, (-mean, first_b, first_a, b, a))

    for i, j in links:
        if passes[i] != passes[j] and j not in neighbours[i]:
            neighbours[i].add(j)
            neighbours[j].add(i)
            offer(i, j)
    while heap:
        _, _, _, a, b = heapq.heappop(heap)
        if not (alive[a] and alive[b]):
            continue
        alive[a] = alive[b] = False
        merged = len(nodes)
        nodes.append(_Node(sorted(nodes[a].members + nodes[b].members), nodes[a].passes | nodes[b].passes,
                           min(nodes[a].first, nodes[b].first), merged, (a, b)))
        alive.append(True)
        neighbours.append(set())
        for other in sorted((neighbours[a] | neighbours[b]) - {a, b}):
            neighbours[other] -= {a, b}
            if alive[other] and not nodes[other].passes & nodes[merged].passes:
                neighbours[merged].add(other)
                neighbours[other].add(merged)
                offer(merged, other)
    return sorted((node.members for node, live in zip(nodes, alive) if live), key=lambda g: g[0])


def cluster_items(items: Sequence[IssueItem], config: ClusterConfig, embedder: Embedder | None) -> tuple[list[list[int]], LinkScores]:
    """Cluster issue items; returns member index lists and the link scores (for medoids)."""
    if _one_pass(items):
        # One pass (a panel of one, or the only pass that found anything; or no item): every pair shares it, so every
        # link is -inf and nothing merges: no embedding, no pair scored.
        return [[i] for i in range(len(items))], LinkScores(items, config, None)
    vectors = None
    if embedder is not None and config.weights.get("text", 0.0) != 0.0:
        vectors = embedder.embed([description_text(item.issue) for item in items])
    scores = LinkScores(items, config, vectors)
    pairs, cosines = candidate_pairs(items, config, vectors)
    scored = scores.score_pairs(pairs, cosines)
    links = [pair for pair, value in zip(pairs, scored.tolist()) if value >= config.threshold]
    groups = agglomerate_pairs(links, lambda i, j: scores[i, j], [item.pass_label for item in items], config.threshold)
    return groups, scores


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


def medoid(indices: Sequence[int], scores: LinkScores | np.ndarray) -> int:
    """The member with the highest mean link score to the other members (first on ties)."""
    if len(indices) == 1:
        return indices[0]
    means = [float(np.mean([float(scores[i, j]) for j in indices if j != i])) for i in indices]
    return indices[int(np.argmax(means))]


def build_clusters(
    trajectory_id: str, items: Sequence[IssueItem], groups: list[list[int]], scores: LinkScores | np.ndarray, panel_size: int
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
