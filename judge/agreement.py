"""Agreement between judge passes, for ``summary.json``: pure functions, and :class:`AgreementTally`, the same
figures tallied one trajectory at a time (the report streams the run).

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

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence
from itertools import combinations
from typing import Any, TypeVar

from judge.schema import EFFICIENCIES, Cluster, ScoreRow, Verdict

V = TypeVar("V", bound=Hashable)  # one rater's value (Counter keys are invariant: a bool table is not a Hashable one)


class _Coincidence:
    """Krippendorff's coincidence matrix, filled one unit at a time (see :func:`krippendorff_alpha_nominal`)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[Hashable, Hashable], float] = defaultdict(float)

    def add(self, unit: Sequence[Hashable | None]) -> None:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            return
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if i != j:
                    self.counts[(a, b)] += 1.0 / (m - 1)

    def alpha(self) -> float | None:
        if not self.counts:
            return None
        totals: dict[Hashable, float] = defaultdict(float)
        for (a, _), count in self.counts.items():
            totals[a] += count
        n = sum(totals.values())
        observed = sum(count for (a, b), count in self.counts.items() if a != b)
        expected = sum(totals[a] * totals[b] for a in totals for b in totals if a != b) / (n - 1)
        if expected == 0:
            return None
        return 1.0 - observed / expected


def krippendorff_alpha_nominal(units: Sequence[Sequence[Hashable | None]]) -> float | None:
    """Nominal alpha; ``units[u]`` holds the values the coders gave unit u (None = not coded).

    Units with fewer than two values are not pairable and are skipped. None when no pairable unit exists or
    all values are equal.
    """
    coincidence = _Coincidence()
    for unit in units:
        coincidence.add(unit)
    return coincidence.alpha()


class _Fleiss:
    """Fleiss' kappa, filled one subject (a row of category counts) at a time (see :func:`fleiss_kappa`)."""

    def __init__(self) -> None:
        self.subjects = 0
        self.agreement = 0.0  # sum over subjects of P_i
        self.columns: list[int] = []

    def add(self, row: Sequence[int]) -> None:
        counts = [int(c) for c in row]
        ratings = sum(counts)
        if ratings < 2:
            return
        self.subjects += 1
        self.agreement += (sum(c * c for c in counts) - ratings) / (ratings * (ratings - 1))
        if len(self.columns) < len(counts):
            self.columns.extend([0] * (len(counts) - len(self.columns)))
        for index, count in enumerate(counts):
            self.columns[index] += count

    def kappa(self) -> float | None:
        if not self.subjects:
            return None
        total = sum(self.columns)
        expected = sum((c / total) ** 2 for c in self.columns)
        if expected >= 1.0:
            return None
        return (self.agreement / self.subjects - expected) / (1.0 - expected)


def fleiss_kappa(table: Sequence[Sequence[int]]) -> float | None:
    """Fleiss' kappa of a subjects x categories count table; subjects with < 2 ratings are skipped.

    None when no subject has two ratings or the expected agreement is 1 (a single category used).
    """
    tally = _Fleiss()
    for row in table:
        tally.add(row)
    return tally.kappa()


HISTOGRAM_SPAN = 64  # vote counts listed one by one up to this panel size


def vote_histogram(clusters: Sequence[Cluster]) -> dict[int, int]:
    """Number of clusters with each vote count from 1 to the largest panel, e.g. {1: 4, 2: 0, 3: 6}."""
    counts = Counter(c.votes for c in clusters)
    largest = max([c.panel_size for c in clusters] + [c.votes for c in clusters], default=0)
    return vote_counts(counts, largest)


def vote_counts(counts: Counter[int], largest: int) -> dict[int, int]:
    """``counts`` for every vote count from 1 to ``largest``; above :data:`HISTOGRAM_SPAN`, only the counts seen
    (a cluster row edited by hand can claim a panel of 2**63: listing its range stalled the report)."""
    keys = range(1, largest + 1) if largest <= HISTOGRAM_SPAN else sorted(k for k in counts if k >= 1)
    return {votes: counts.get(votes, 0) for votes in keys}


def effective_judges(n: int, mean_correlation: float | None) -> float | None:
    """``n / (1 + (n - 1) r)`` with r clipped to [0, 1]; 1 for a panel of one; None when r is unknown."""
    if n == 1:
        return 1.0
    if mean_correlation is None or n < 1:
        return None
    r = min(1.0, max(0.0, mean_correlation))
    return n / (1.0 + (n - 1) * r)


class _Pair:
    """Running sums for the Pearson correlation of two passes' codes over the units both coded."""

    __slots__ = ("n", "sx", "sy", "sxx", "syy", "sxy")

    def __init__(self) -> None:
        self.n = self.sx = self.sy = self.sxx = self.syy = self.sxy = 0

    def add(self, x: int, y: int) -> None:
        self.n += 1
        self.sx += x
        self.sy += y
        self.sxx += x * x
        self.syy += y * y
        self.sxy += x * y

    def correlation(self) -> float | None:
        """None with fewer than two shared units or a constant code (integer sums: the test is exact)."""
        vx, vy = self.n * self.sxx - self.sx * self.sx, self.n * self.syy - self.sy * self.sy
        if self.n < 2 or vx == 0 or vy == 0:
            return None
        return (self.n * self.sxy - self.sx * self.sy) / math.sqrt(vx * vy)


def _mean_correlation(pairs: dict[tuple[str, str], _Pair]) -> float | None:
    values = [r for pair in pairs.values() if (r := pair.correlation()) is not None]
    return sum(values) / len(values) if values else None


def mean_pairwise_correlation(codes: dict[str, dict[Hashable, int]]) -> float | None:
    """Mean Pearson correlation over pairs of passes, each pair over the units both coded.

    Pairs with fewer than two shared units or a constant code are skipped; None when no pair is usable.
    """
    pairs: dict[tuple[str, str], _Pair] = {}
    for a, b in combinations(sorted(codes), 2):
        pair = pairs[(a, b)] = _Pair()
        for unit in set(codes[a]) & set(codes[b]):
            pair.add(codes[a][unit], codes[b][unit])
    return _mean_correlation(pairs)


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


class AgreementTally:
    """:func:`agreement_summary` over a stream: :meth:`add` the verdicts and clusters of one trajectory at a
    time (all of them in one call), read :meth:`summary` at the end.

    Memory grows with the number of distinct pass keys and vote counts, not with the batch: the coincidence
    matrices, Fleiss' column totals and the pairwise correlation sums are running totals.
    """

    def __init__(self) -> None:
        self._issues = _Coincidence()
        self._clusters = _Coincidence()
        self._efficiency = _Fleiss()
        self._pairs: dict[tuple[str, str], _Pair] = defaultdict(_Pair)
        self._alpha_units = 0
        self._votes: Counter[int] = Counter()
        self._largest = 0  # the largest panel size or vote count of a cluster
        self._panel_of_clusters = 0
        self._panel_of_passes = 0  # the most distinct pass keys of one trajectory

    def add(self, verdicts: Sequence[Verdict], clusters: Sequence[Cluster]) -> None:
        """One trajectory's passes (valid or not) and its clusters."""
        valid = [v for v in verdicts if v.status == "ok"]
        if len(valid) > 1:  # fewer valid passes code no unit twice: no agreement, no correlation (a panel of one)
            self._add_codes(valid, clusters)
        for cluster in clusters:
            self._votes[cluster.votes] += 1
            self._largest = max(self._largest, cluster.panel_size, cluster.votes)
            self._panel_of_clusters = max(self._panel_of_clusters, cluster.panel_size)
        self._panel_of_passes = max(self._panel_of_passes, len({v.pass_key for v in verdicts}))

    def _add_codes(self, valid: list[Verdict], clusters: Sequence[Cluster]) -> None:
        """The codes of one trajectory's valid passes: issue units, efficiency votes, cluster units."""
        flagged = {p.pass_key: {(i.turn, i.category) for i in p.issues} for p in valid}
        pairs = list(combinations(sorted(flagged), 2))
        for key in set().union(*flagged.values()):
            unit = [int(key in flagged[p.pass_key]) for p in valid]
            self._issues.add(unit)
            self._alpha_units += 1  # every unit here has two codes or more (one valid pass adds none)
            for a, b in pairs:
                self._pairs[(a, b)].add(int(key in flagged[a]), int(key in flagged[b]))
        counts: dict[str, int] = {}  # a plain dict: a Counter costs ~1 us to build, once per trajectory
        for verdict in valid:
            if verdict.efficiency is not None:
                counts[verdict.efficiency] = counts.get(verdict.efficiency, 0) + 1
        if counts:
            self._efficiency.add([counts.get(e, 0) for e in EFFICIENCIES])
        valid_keys = [v.pass_key for v in valid]
        for cluster in clusters:
            members = {m.pass_key for m in cluster.members}
            self._clusters.add([int(key in members) for key in valid_keys])

    @classmethod
    def of(cls, verdicts: Sequence[Verdict], clusters: Sequence[Cluster]) -> AgreementTally:
        """The tally of a batch in memory: its rows grouped by trajectory, added in id order."""
        verdicts_of: dict[str, list[Verdict]] = defaultdict(list)
        clusters_of: dict[str, list[Cluster]] = defaultdict(list)
        for verdict in verdicts:
            verdicts_of[verdict.trajectory_id].append(verdict)
        for cluster in clusters:
            clusters_of[cluster.trajectory_id].append(cluster)
        tally = cls()
        for trajectory_id in sorted(verdicts_of.keys() | clusters_of.keys()):
            tally.add(verdicts_of.get(trajectory_id, []), clusters_of.get(trajectory_id, []))
        return tally

    def summary(self) -> dict[str, Any]:
        """The agreement block of ``summary.json``. Values that cannot be computed are None, never 0."""
        panel = self._panel_of_clusters or self._panel_of_passes
        correlation = _mean_correlation(self._pairs)
        alpha, alpha_clusters, kappa = self._issues.alpha(), self._clusters.alpha(), self._efficiency.kappa()
        return {
            "krippendorff_alpha_issues": None if alpha is None else round(alpha, 4),
            "alpha_units": self._alpha_units,
            "krippendorff_alpha_clusters": None if alpha_clusters is None else round(alpha_clusters, 4),
            "fleiss_kappa_efficiency": None if kappa is None else round(kappa, 4),
            "efficiency_subjects": self._efficiency.subjects,
            "vote_histogram": {str(k): n for k, n in vote_counts(self._votes, self._largest).items()},
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


def agreement_summary(verdicts: Sequence[Verdict], clusters: Sequence[Cluster]) -> dict[str, Any]:
    """The agreement block of ``summary.json`` for a whole batch in memory (see :class:`AgreementTally`)."""
    return AgreementTally.of(verdicts, clusters).summary()


# --- judge vs human (docs/review.md) -------------------------------------------------------------------

MIN_KAPPA_DECISIONS = 10  # Cohen's kappa on release needs at least this many reviewed release decisions
REVIEW_LIST_LIMIT = 200  # rows of the per-trajectory lists kept in summary.json


def cohen_kappa(pairs: Iterable[tuple[V, V]]) -> float | None:
    """Cohen's kappa of two raters over ``(a, b)`` pairs (Cohen 1960): ``(p_o - p_e) / (1 - p_e)``.

    None when there is no pair or the chance agreement is 1 (both raters used one and the same value throughout).
    """
    return cohen_kappa_table(Counter(pairs))


def cohen_kappa_table(table: Counter[tuple[V, V]]) -> float | None:
    """:func:`cohen_kappa` from the count of each ``(a, b)`` pair (a running tally's form)."""
    n = sum(table.values())
    if n == 0:
        return None
    observed = sum(count for (a, b), count in table.items() if a == b) / n
    first: Counter[V] = Counter()
    second: Counter[V] = Counter()
    for (a, b), count in table.items():
        first[a] += count
        second[b] += count
    expected = sum(first[v] * second[v] for v in first) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def _rate(part: int, whole: int) -> dict[str, Any]:
    return {"value": None if whole == 0 else round(part / whole, 4), "n": whole}


class HumanAgreementTally:
    """Judge vs human figures, tallied one score row at a time (rows without a review add nothing but the count).

    Memory does not grow with the batch: counts, the 2 x 2 release table and the reviewers' names; the lists of
    stale decisions, releases over the gate and changed rows keep their first :data:`REVIEW_LIST_LIMIT` rows
    (each is counted in full).

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
        self.release_table: Counter[tuple[bool, bool]] = Counter()  # (judges released, reviewer released) -> count
        self.stale: list[dict[str, Any]] = []
        self.released_over_gate: list[dict[str, Any]] = []
        self.changed: list[dict[str, Any]] = []

    def add(self, row: ScoreRow) -> None:
        """One score row (a trajectory's, human-adjusted when reviewed)."""
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
        release = review.release
        if release is not None:
            self.release_table[(machine.release, release.release)] += 1
            if release.release and (release.over_failed_checks or release.over_score):
                self.counts["released_over_gate"] += 1
                if len(self.released_over_gate) < REVIEW_LIST_LIMIT:
                    self.released_over_gate.append({
                        "trajectory_id": row.trajectory_id, "checks": release.over_failed_checks, "score": row.score,
                        "over_score": release.over_score, "reviewer": release.reviewer, "at": release.at,
                        "reason": release.reason})
        if row.score != machine.score or row.release != machine.release:
            self.counts["score_changed"] += int(row.score != machine.score)
            self.counts["release_changed"] += int(row.release != machine.release)
            if len(self.changed) < REVIEW_LIST_LIMIT:
                self.changed.append({"trajectory_id": row.trajectory_id, "machine_score": machine.score,
                                     "score": row.score, "machine_release": machine.release, "release": row.release})

    def section(self) -> dict[str, Any]:
        """The ``review`` block of ``summary.json``: counts with their n, never a figure without its denominator."""
        c = self.counts
        pairs = self.release_table
        n = sum(pairs.values())
        table = Counter({("released" if j else "held", "released" if h else "held"): k for (j, h), k in pairs.items()})
        kappa = cohen_kappa_table(pairs) if n >= MIN_KAPPA_DECISIONS else None
        if n < MIN_KAPPA_DECISIONS:
            kappa_note = f"needs at least {MIN_KAPPA_DECISIONS} reviewed release decisions, has {n}"
        elif kappa is None:
            kappa_note = "undefined: the judges and the reviewers each gave one and the same decision throughout"
        else:
            kappa_note = None
        observed = sum(k for (j, h), k in pairs.items() if j == h)
        chance = None
        if n:
            machine_released = sum(k for (j, _), k in pairs.items() if j) / n
            human_released = sum(k for (_, h), k in pairs.items() if h) / n
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
                "released_over_gate_total": c["released_over_gate"],
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
