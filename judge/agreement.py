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
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from itertools import combinations
from typing import Any

from judge.schema import EFFICIENCIES, Cluster, Verdict


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
        flagged = {p.pass_key: {(i.turn, i.category) for i in p.issues} for p in valid}
        for key in set().union(*flagged.values()):
            unit = [int(key in flagged[p.pass_key]) for p in valid]
            self._issues.add(unit)
            self._alpha_units += len(unit) >= 2
            for a, b in combinations(sorted(flagged), 2):
                self._pairs[(a, b)].add(int(key in flagged[a]), int(key in flagged[b]))
        counts = Counter(v.efficiency for v in valid if v.efficiency is not None)
        if counts:
            self._efficiency.add([counts[e] for e in EFFICIENCIES])
        valid_keys = [v.pass_key for v in valid]
        for cluster in clusters:
            members = {m.pass_key for m in cluster.members}
            self._clusters.add([int(key in members) for key in valid_keys])
            self._votes[cluster.votes] += 1
            self._largest = max(self._largest, cluster.panel_size, cluster.votes)
            self._panel_of_clusters = max(self._panel_of_clusters, cluster.panel_size)
        self._panel_of_passes = max(self._panel_of_passes, len({v.pass_key for v in verdicts}))

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
            "vote_histogram": {str(k): self._votes.get(k, 0) for k in range(1, self._largest + 1)},
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
