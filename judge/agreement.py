"""Agreement between judge passes (pure functions), for ``summary.json``.

- **Krippendorff's alpha (nominal)** over trajectory x turn x category units: a unit is a (trajectory,
  turn, category) that at least one valid pass flagged; each valid pass of that trajectory codes it 1 (it
  reported an issue there) or 0. Units nobody flagged are left out (there are infinitely many).
  ``alpha = 1 - D_o / D_e`` from the coincidence matrix (Krippendorff 2011, "Computing Krippendorff's
  Alpha-Reliability"); None when every value is the same (no variation: alpha is undefined).
- **Fleiss' kappa** for the efficiency votes (subjects = trajectories, raters = valid passes). For subjects
  with unequal rater counts the per-subject agreement ``P_i = (sum_j n_ij^2 - n_i) / (n_i (n_i - 1))`` is
  used as is and category shares are pooled over all ratings; with equal counts this is Fleiss (1971).
- The same alpha with **clusters** as units (``krippendorff_alpha_clusters``): passes that were clustered
  together agree even when they named neighbouring turns.
- **Vote histogram**: clusters by votes (how many 1-, 2-, 3-vote clusters).
- **Effective number of independent judges** (the design effect of correlated raters, Kish):
  ``n_eff = n / (1 + (n - 1) * r)``, where n is the panel's passes and r the mean pairwise Pearson
  correlation of the passes' 0/1 codes over the alpha units (clipped to [0, 1], so n_eff is in [1, n]).
  Three passes of one model that always agree count as one judge; three independent ones as three.
- **Judge vs human** (:class:`HumanAgreementTally`, from the ``review`` of each score row): the panel's majority
  issues as reviewers judged them (precision, with the minority clusters' beside it as a baseline; recall among the
  issues reviewers confirmed or added) and release decisions (table, observed vs chance agreement, Cohen's kappa).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from judge.schema import EFFICIENCIES, Cluster, ScoreRow, Verdict


def krippendorff_alpha_nominal(units: Sequence[Sequence[Hashable | None]]) -> float | None:
    """Nominal alpha; ``units[u]`` holds the values the coders gave unit u (None = not coded).

    Units with fewer than two values are not pairable and are skipped. None when no pairable unit exists or
    all values are equal.
    """
    coincidence: dict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if i != j:
                    coincidence[(a, b)] += 1.0 / (m - 1)
    if not coincidence:
        return None
    totals: dict[Hashable, float] = defaultdict(float)
    for (a, _), count in coincidence.items():
        totals[a] += count
    n = sum(totals.values())
    observed = sum(count for (a, b), count in coincidence.items() if a != b)
    expected = sum(totals[a] * totals[b] for a in totals for b in totals if a != b) / (n - 1)
    if expected == 0:
        return None
    return 1.0 - observed / expected


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of a subjects x categories count table; subjects with < 2 ratings are skipped.

    None when no subject has two ratings or the expected agreement is 1 (a single category used).
    """
    rows = [list(map(int, r)) for r in table if sum(r) >= 2]
    if not rows:
        return None
    counts = np.array(rows, dtype=np.float64)
    per_subject = counts.sum(axis=1)
    agreement = ((counts**2).sum(axis=1) - per_subject) / (per_subject * (per_subject - 1))
    shares = counts.sum(axis=0) / counts.sum()
    expected = float((shares**2).sum())
    if expected >= 1.0:
        return None
    return (float(agreement.mean()) - expected) / (1.0 - expected)


def vote_histogram(clusters: Sequence[Cluster]) -> dict[int, int]:
    """Number of clusters with each vote count from 1 to the largest panel, e.g. {1: 4, 2: 0, 3: 6}."""
    counts = Counter(c.votes for c in clusters)
    largest = max([c.panel_size for c in clusters] + [c.votes for c in clusters], default=0)
    return {votes: counts.get(votes, 0) for votes in range(1, largest + 1)}


def effective_judges(n: int, mean_correlation: float | None) -> float | None:
    """``n / (1 + (n - 1) r)`` with r clipped to [0, 1]; 1 for a panel of one; None when r is unknown."""
    if n == 1:
        return 1.0
    if mean_correlation is None or n < 1:
        return None
    r = min(1.0, max(0.0, mean_correlation))
    return n / (1.0 + (n - 1) * r)


def mean_pairwise_correlation(codes: dict[str, dict[Hashable, int]]) -> float | None:
    """Mean Pearson correlation over pairs of passes, each pair over the units both coded.

    Pairs with fewer than two shared units or a constant code are skipped; None when no pair is usable.
    """
    values = []
    for a, b in combinations(sorted(codes), 2):
        shared = sorted(set(codes[a]) & set(codes[b]), key=repr)
        if len(shared) < 2:
            continue
        x = np.array([codes[a][u] for u in shared], dtype=np.float64)
        y = np.array([codes[b][u] for u in shared], dtype=np.float64)
        if x.std() == 0 or y.std() == 0:
            continue
        values.append(float(np.corrcoef(x, y)[0, 1]))
    return float(np.mean(values)) if values else None


def issue_units(verdicts: Sequence[Verdict]) -> tuple[list[list[int]], dict[str, dict[Hashable, int]]]:
    """Alpha units (trajectory, turn, category) coded 0/1 by each valid pass, and the codes by pass key.

    A pass is identified across trajectories by its ``pass_key`` (e.g. ``openai:gpt-4o#2``).
    """
    by_trajectory: dict[str, list[Verdict]] = defaultdict(list)
    for verdict in verdicts:
        if verdict.status == "ok":
            by_trajectory[verdict.trajectory_id].append(verdict)
    units: list[list[int]] = []
    codes: dict[str, dict[Hashable, int]] = defaultdict(dict)
    for trajectory_id, passes in sorted(by_trajectory.items()):
        flagged = {p.pass_key: {(i.turn, i.category) for i in p.issues} for p in passes}
        for key in sorted(set().union(*flagged.values()), key=repr):
            unit = []
            for p in passes:
                code = int(key in flagged[p.pass_key])
                unit.append(code)
                codes[p.pass_key][(trajectory_id, *key)] = code
            units.append(unit)
    return units, dict(codes)


def cluster_units(verdicts: Sequence[Verdict], clusters: Sequence[Cluster]) -> list[list[int]]:
    """Alpha units at the cluster level: each cluster, coded 1/0 by every valid pass of its trajectory
    (was the pass a member?). Unlike the turn x category units, judges that disagree on the turn by one but
    were clustered together count as agreeing."""
    valid: dict[str, list[str]] = defaultdict(list)
    for verdict in verdicts:
        if verdict.status == "ok":
            valid[verdict.trajectory_id].append(verdict.pass_key)
    units = []
    for cluster in clusters:
        members = {m.pass_key for m in cluster.members}
        units.append([int(key in members) for key in valid.get(cluster.trajectory_id, [])])
    return units


def efficiency_table(verdicts: Sequence[Verdict]) -> list[list[int]]:
    """Trajectories x (high, medium, low) counts of the valid passes' efficiency votes."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for verdict in verdicts:
        if verdict.status == "ok" and verdict.efficiency is not None:
            counts[verdict.trajectory_id][verdict.efficiency] += 1
    return [[counts[t][e] for e in EFFICIENCIES] for t in sorted(counts)]


def agreement_summary(verdicts: Sequence[Verdict], clusters: Sequence[Cluster]) -> dict[str, Any]:
    """The agreement block of ``summary.json``. Values that cannot be computed are None, never 0."""
    units, codes = issue_units(verdicts)
    passes = [c.panel_size for c in clusters]
    panel = max(passes) if passes else max((len({v.pass_key for v in verdicts if v.trajectory_id == t})
                                            for t in {v.trajectory_id for v in verdicts}), default=0)
    correlation = mean_pairwise_correlation(codes)
    alpha = krippendorff_alpha_nominal(units)
    alpha_clusters = krippendorff_alpha_nominal(cluster_units(verdicts, clusters))
    kappa = fleiss_kappa(efficiency_table(verdicts))
    histogram = vote_histogram(clusters)
    return {
        "krippendorff_alpha_issues": None if alpha is None else round(alpha, 4),
        "alpha_units": sum(1 for u in units if len(u) >= 2),
        "krippendorff_alpha_clusters": None if alpha_clusters is None else round(alpha_clusters, 4),
        "fleiss_kappa_efficiency": None if kappa is None else round(kappa, 4),
        "efficiency_subjects": sum(1 for r in efficiency_table(verdicts) if sum(r) >= 2),
        "vote_histogram": {str(k): v for k, v in histogram.items()},
        "panel_size": panel,
        "mean_pairwise_correlation": None if correlation is None else round(correlation, 4),
        "effective_judges": None if (n := effective_judges(panel, correlation)) is None else round(n, 3),
        "definitions": {
            "alpha": "nominal Krippendorff alpha; units = (trajectory, turn, category) flagged by any valid pass, coded 0/1 per pass",
            "alpha_clusters": "the same with units = clusters (a pass codes 1 when it is a member)",
            "kappa": "Fleiss kappa of efficiency votes (high/medium/low), subjects = trajectories",
            "effective_judges": "n / (1 + (n-1) r), r = mean pairwise correlation of passes' 0/1 unit codes, clipped to [0,1]",
        },
    }


# --- judge vs human (docs/review.md) -------------------------------------------------------------------

MIN_KAPPA_DECISIONS = 10  # Cohen's kappa on release needs at least this many reviewed release decisions
REVIEW_LIST_LIMIT = 200  # rows of the per-trajectory lists kept in summary.json


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of two raters over ``(a, b)`` pairs (Cohen 1960): ``(p_o - p_e) / (1 - p_e)``.

    None when there is no pair or the chance agreement is 1 (both raters used one and the same value throughout).
    """
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[v] * second[v] for v in first) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def _rate(part: int, whole: int) -> dict[str, Any]:
    return {"value": None if whole == 0 else round(part / whole, 4), "n": whole}


class HumanAgreementTally:
    """Judge vs human figures, tallied one score row at a time (rows without a review add nothing but the count).

    Issues: each majority cluster a reviewer confirmed or rejected is one judgement of the panel's majority
    (precision = confirmed / (confirmed + rejected)); minority clusters give the same figure for what a majority
    left out, the baseline beside it. Issues reviewers confirmed or added are the human issues; the share the
    panel's majority had found is its recall among them. Release: each applied release decision against the machine's
    release decision (2 x 2 table, observed and chance agreement, Cohen's kappa from :data:`MIN_KAPPA_DECISIONS`).
    """

    def __init__(self) -> None:
        self.trajectories = 0
        self.reviewed = 0
        self.reviewers: set[str] = set()
        self.counts: Counter[str] = Counter()
        self.by_kind: Counter[str] = Counter()
        self.release_pairs: list[tuple[bool, bool]] = []
        self.stale: list[dict[str, Any]] = []
        self.released_over_gate: list[dict[str, Any]] = []
        self.changed: list[dict[str, Any]] = []

    def add(self, row: ScoreRow) -> None:
        self.trajectories += 1
        review = row.review
        if review is None:
            return
        for decision in review.stale:
            self.counts["stale"] += 1
            if len(self.stale) < REVIEW_LIST_LIMIT:
                self.stale.append({"trajectory_id": row.trajectory_id, "kind": decision.kind, "target": decision.target,
                                   "reviewer": decision.reviewer, "at": decision.at, "why": decision.stale})
        applied = [d for d in review.decisions if d.stale is None]
        if not applied:
            return
        self.reviewed += 1
        self.reviewers.update(review.reviewers)
        self.by_kind.update(d.kind for d in applied)
        decided = set(review.confirmed) | set(review.rejected)
        self.counts["majority_confirmed"] += len(review.confirmed)
        self.counts["majority_rejected"] += len(review.rejected)
        self.counts["majority_unreviewed"] += sum(1 for c in review.machine.majority if c not in decided)
        self.counts["minority_confirmed"] += len(review.confirmed_minority)
        self.counts["minority_rejected"] += len(review.rejected_minority)
        self.counts["added"] += len(review.added)
        machine = review.machine
        if review.release is not None:
            self.release_pairs.append((machine.release, review.release.release))
            if review.release.release and (review.release.over_failed_checks or review.release.over_score):
                self.released_over_gate.append({
                    "trajectory_id": row.trajectory_id, "checks": review.release.over_failed_checks,
                    "score": row.score, "over_score": review.release.over_score,
                    "reviewer": review.release.reviewer, "at": review.release.at, "reason": review.release.reason})
        if row.score != machine.score or row.release != machine.release:
            self.counts["score_changed"] += int(row.score != machine.score)
            self.counts["release_changed"] += int(row.release != machine.release)
            if len(self.changed) < REVIEW_LIST_LIMIT:
                self.changed.append({"trajectory_id": row.trajectory_id, "machine_score": machine.score,
                                     "score": row.score, "machine_release": machine.release, "release": row.release})

    def section(self) -> dict[str, Any]:
        """The ``review`` block of ``summary.json``: counts with their n, never a figure without its denominator."""
        c = self.counts
        pairs = self.release_pairs
        n = len(pairs)
        table = Counter(("released" if j else "held", "released" if h else "held") for j, h in pairs)
        kappa = cohen_kappa(pairs) if n >= MIN_KAPPA_DECISIONS else None
        if n < MIN_KAPPA_DECISIONS:
            kappa_note = f"needs at least {MIN_KAPPA_DECISIONS} reviewed release decisions, has {n}"
        elif kappa is None:
            kappa_note = "undefined: the judges and the reviewers each gave one and the same decision throughout"
        else:
            kappa_note = None
        observed = sum(1 for j, h in pairs if j == h)
        chance = None
        if n:
            machine_released = sum(1 for j, _ in pairs if j) / n
            human_released = sum(1 for _, h in pairs if h) / n
            chance = round(machine_released * human_released + (1 - machine_released) * (1 - human_released), 4)
        human_issues = c["majority_confirmed"] + c["minority_confirmed"] + c["added"]
        return {
            "trajectories": self.trajectories,
            "reviewed_trajectories": self.reviewed,
            "reviewers": sorted(self.reviewers),
            "decisions": dict(sorted(self.by_kind.items())),
            "stale_decisions": c["stale"],
            "stale": self.stale,
            "issues": {
                "majority_confirmed": c["majority_confirmed"],
                "majority_rejected": c["majority_rejected"],
                "majority_unreviewed": c["majority_unreviewed"],
                "minority_confirmed": c["minority_confirmed"],
                "minority_rejected": c["minority_rejected"],
                "added": c["added"],
                "precision_majority": _rate(c["majority_confirmed"], c["majority_confirmed"] + c["majority_rejected"]),
                "precision_minority": _rate(c["minority_confirmed"], c["minority_confirmed"] + c["minority_rejected"]),
                "recall_majority": _rate(c["majority_confirmed"], human_issues),
            },
            "release": {
                "decisions": n,
                "table": {f"judges {j}, reviewer {h}": table[(j, h)] for j in ("released", "held") for h in ("released", "held")},
                "agreement": _rate(observed, n),
                "chance_agreement": chance,
                "cohen_kappa": None if kappa is None else round(kappa, 4),
                "kappa_unavailable": kappa_note,
                "overridden": n - observed,
                "released_over_gate": self.released_over_gate,
            },
            "score_changed": c["score_changed"],
            "release_changed": c["release_changed"],
            "changed": self.changed,
            "note": "Figures cover the reviewed trajectories only; reviewers choose what they review, so they are not an "
                    "unbiased estimate for the batch unless the reviewed trajectories were sampled at random.",
        }


def human_agreement(rows: Iterable[ScoreRow]) -> dict[str, Any]:
    """:meth:`HumanAgreementTally.section` of the score rows."""
    tally = HumanAgreementTally()
    for row in rows:
        tally.add(row)
    return tally.section()
