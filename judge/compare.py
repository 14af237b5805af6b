"""``judge compare``: continuation arms (e.g. guided vs unguided) judged on the same scale, pair by pair.

A continuation trajectory carries DESIGN.md's metadata keys: ``arm``, ``source_id`` and ``branch_turn``
(the trajectory it branched from and the turn it branched after), optionally ``target_issue`` (the issue the
guidance addressed, as text), ``budget_exhausted`` and ``usage``. Pairs are formed by
(``source_id``, ``branch_turn``) across arms; a continuation without a partner is listed, never dropped.

Per pair and arm: the score; whether the targeted error recurs in the arm's suffix (the turns after
``branch_turn``), decided by the panel's own clustering link score (:func:`recurs`); the other majority
issues of the suffix; the generation tokens of the suffix; budget exhaustion.

Aggregates per (treatment arm, baseline arm):

- wins/ties/losses of the score; mean score difference with a paired bootstrap 95% interval (percentile,
  seeded, so the same input gives the same interval); an exact two-sided sign test on wins vs losses, ties
  excluded (the usual convention: a tie says nothing about direction);
- target-error recurrence rate per arm, over every pair with a target (budget-exhausted pairs included);
- suffix-token difference with its bootstrap interval; budget-exhausted counts.

Tokens (:func:`suffix_tokens`): the output tokens of assistant messages after ``branch_turn``, from
per-message usage. When no message of the suffix reports usage, the trajectory's metadata ``usage``
output tokens are used instead: for a continuation the prefix was restored, not generated, so its recorded
generation is the suffix's. The source (``message``/``metadata``) is kept beside the number.

Noise floor (:func:`noise_floor`): the turns up to ``branch_turn`` are identical in both arms, so any
difference between the two arms' majority issues there is judge variation, not a difference of the arms.
It is only measurable when both arms were judged with more than one pass.

Pairs with an unscored arm have no score difference: they are counted in ``unscored`` and stay in the
recurrence, token and budget figures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from judge import rundir
from judge.model import Trajectory
from judge.rundir import RunDir
from judge.schema import Cluster, Issue, ScoreRow

BOOTSTRAP_RESAMPLES = 10_000
SIGNIFICANCE = 0.05


# --- statistics (pure) ---------------------------------------------------------------------------


def paired_bootstrap_ci(differences: Sequence[float], seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES,
                        level: float = 0.95) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of paired differences (resampling pairs). None if empty.

    scipy's ``bootstrap`` (percentile method) with a seeded generator: the same input gives the same interval.
    """
    from scipy.stats import bootstrap

    values = np.asarray(list(differences), dtype=np.float64)
    if values.size == 0:
        return None
    if values.size == 1:  # every resample is the one value (scipy refuses a sample of one)
        return float(values[0]), float(values[0])
    result = bootstrap((values,), np.mean, n_resamples=resamples, confidence_level=level, method="percentile",
                       rng=np.random.default_rng(seed), vectorized=True)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test (binomial, p = 1/2) on wins vs losses; ties are excluded by the caller."""
    from scipy.stats import binomtest

    if wins + losses == 0:
        return 1.0
    return float(binomtest(wins, wins + losses, 0.5).pvalue)


def mean_or_none(values: Sequence[float]) -> float | None:
    """The mean, or None for no values (never a made-up 0)."""
    return float(np.mean(values)) if len(values) else None


# --- per-arm facts -----------------------------------------------------------------------------


@dataclass
class ArmRecord:
    """One continuation trajectory with what its run says about it."""

    trajectory: Trajectory
    score: ScoreRow | None
    clusters: list[Cluster]
    panel_size: int

    @property
    def arm(self) -> str | None:
        return self.trajectory.metadata.arm

    @property
    def key(self) -> tuple[str, int] | None:
        meta = self.trajectory.metadata
        if meta.source_id is None or meta.branch_turn is None:
            return None
        return meta.source_id, meta.branch_turn

    def majority(self) -> list[Cluster]:
        return [c for c in self.clusters if c.majority]

    def agent_issues(self, branch_turn: int, side: str) -> list[Cluster]:
        """Majority issues of the agent (environment ones are not its doing) on the ``prefix`` (turns up to
        ``branch_turn``) or the ``suffix`` (turns after it). Unlocalised issues belong to neither."""
        def on_side(turn: int) -> bool:
            return turn <= branch_turn if side == "prefix" else turn > branch_turn

        return [c for c in self.majority() if c.turn is not None and on_side(c.turn) and c.category != "environment"]


def suffix_tokens(trajectory: Trajectory, branch_turn: int) -> tuple[int | None, str | None]:
    """Generation (output) tokens of the turns after ``branch_turn`` and where the number came from."""
    total: int | None = None
    for message in trajectory.messages:
        usage = message.usage
        if message.role == "assistant" and (message.turn or 0) > branch_turn and usage and usage.output_tokens is not None:
            total = (total or 0) + usage.output_tokens
    if total is not None:
        return total, "message"
    usage = trajectory.metadata.usage
    if usage is not None and usage.output_tokens is not None:
        return usage.output_tokens, "metadata"
    return None, None


def cluster_issue(cluster: Cluster) -> Issue:
    """A cluster as one issue (its medoid description and member-rule fields) for link scoring."""
    evidence = next((m.issue.evidence for m in cluster.members if m.issue.evidence), "")
    return Issue(turn=cluster.turn, category=cluster.category, severity=cluster.severity,
                 description=cluster.description, evidence=evidence, tag=cluster.tag)


class LinkScorer:
    """The panel clusterer's pairwise link score (judge.cluster), with embeddings computed once per text."""

    def __init__(self, config: Any, embedder: Any) -> None:
        self.config = config
        self.embedder = embedder
        self._vectors: dict[str, np.ndarray] = {}

    def _vector(self, text: str) -> np.ndarray | None:
        if self.embedder is None or self.config.weights.get("text", 0.0) == 0.0:
            return None
        if text not in self._vectors:
            self._vectors[text] = self.embedder.embed([text])[0]
        return self._vectors[text]

    def score(self, a: Issue, b: Issue, category_known: bool = True) -> float:
        """Link score of two issues; with ``category_known=False`` the category feature counts as unknown (0)."""
        from judge.cluster import FEATURES, description_text, pair_features

        va, vb = self._vector(description_text(a)), self._vector(description_text(b))
        cosine = float(np.clip(va @ vb, -1.0, 1.0)) if va is not None and vb is not None else 0.0
        features = pair_features(a, b, cosine, self.config.turn_window)
        if not category_known:
            features[FEATURES.index("category")] = 0.0
        return float(features @ self.config.weight_vector() + self.config.bias)

    def same_defect(self, a: Issue, b: Issue, category_known: bool = True) -> bool:
        """Would the clusterer link these two (score at or above its threshold)?"""
        return self.score(a, b, category_known) >= self.config.threshold


@dataclass(frozen=True)
class Target:
    """The issue a guided continuation addressed: ``target_issue`` text, plus optional structure.

    ``metadata.extra`` may add ``target_category``, ``target_tag`` and ``target_evidence`` (e.g. copied from
    the source run's majority cluster); each one given is used by the link score like any issue's field.
    """

    description: str
    category: str | None = None
    tag: str | None = None
    evidence: str = ""

    @classmethod
    def of(cls, trajectory: Trajectory) -> Target | None:
        """The target of a continuation, from its metadata (None when it names none)."""
        meta = trajectory.metadata
        if not meta.target_issue:
            return None
        extra = meta.extra or {}
        category = extra.get("target_category")
        return cls(description=meta.target_issue,
                   category=category if category in ("code", "semantic", "capability", "environment") else None,
                   tag=extra.get("target_tag") or None, evidence=str(extra.get("target_evidence") or ""))


def recurs(target: Target | str, suffix: Sequence[Cluster], scorer: LinkScorer) -> tuple[bool, list[str]]:
    """Does the targeted error recur among the suffix's majority issues? Returns the verdict and the ids matched.

    The target's turn is unknown (a continuation's turns after the branch need not line up with the
    source's), so the turn features are 0, as for any issue without a turn; so is the category feature
    when the target has no category. The match is the panel clusterer's link score against its
    threshold: "recurs" means "the clusterer would put the two in one cluster". With a judge whose
    descriptions are generic (the rules judge), the target's evidence is what can tell two failures apart.
    """
    if isinstance(target, str):
        target = Target(description=target)
    matched = []
    for cluster in suffix:
        candidate = cluster_issue(cluster)
        probe = Issue(turn=None, category=target.category or candidate.category, severity=candidate.severity,  # type: ignore[arg-type]
                      description=target.description, evidence=target.evidence, tag=target.tag)
        if scorer.same_defect(probe, candidate, category_known=target.category is not None):
            matched.append(cluster.cluster)
    return bool(matched), matched


@dataclass
class ArmOutcome:
    """What ``compare.json`` says about one arm of one pair."""

    trajectory_id: str
    score: int | None
    target_recurred: bool | None
    recurred_clusters: list[str]
    new_issues: list[dict[str, Any]]
    suffix_issue_count: int
    prefix_issue_count: int
    suffix_tokens: int | None
    tokens_source: str | None
    budget_exhausted: bool
    valid_passes: int
    panel_size: int

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of this arm in a ``compare.json`` pair."""
        return dict(self.__dict__)


def arm_outcome(record: ArmRecord, branch_turn: int, target: Target | str | None, scorer: LinkScorer | None) -> ArmOutcome:
    """Score, recurrence, new issues, tokens and budget of one arm after ``branch_turn``."""
    suffix = record.agent_issues(branch_turn, "suffix")
    prefix = record.agent_issues(branch_turn, "prefix")
    recurred: bool | None = None
    matched: list[str] = []
    if target and scorer is not None:
        recurred, matched = recurs(target, suffix, scorer)
    tokens, source = suffix_tokens(record.trajectory, branch_turn)
    score = record.score
    return ArmOutcome(
        trajectory_id=record.trajectory.id,
        score=score.score if score else None,
        target_recurred=recurred,
        recurred_clusters=matched,
        new_issues=[{"cluster": c.cluster, "turn": c.turn, "category": c.category, "severity": c.severity,
                     "description": c.description} for c in suffix if c.cluster not in matched],
        suffix_issue_count=len(suffix),
        prefix_issue_count=len(prefix),
        suffix_tokens=tokens,
        tokens_source=source,
        budget_exhausted=bool(record.trajectory.metadata.budget_exhausted),
        valid_passes=score.valid_passes if score else 0,
        panel_size=record.panel_size,
    )


# --- pairing -----------------------------------------------------------------------------------


@dataclass
class Pairing:
    """Complete groups by (source_id, branch_turn) -> arm -> record, and the records left unpaired."""

    groups: dict[tuple[str, int], dict[str, ArmRecord]] = field(default_factory=dict)
    unmatched: list[dict[str, Any]] = field(default_factory=list)


def pair_records(records: Iterable[ArmRecord], baseline: str) -> Pairing:
    """Group by (source_id, branch_turn); keep groups with the baseline arm and at least one other; list the rest.

    With more than two arms a group may lack some of them: each comparison then uses the groups that have
    both of its arms.
    """
    grouped: dict[tuple[str, int], dict[str, ArmRecord]] = defaultdict(dict)
    pairing = Pairing()
    for record in records:
        key = record.key
        if key is None or not record.arm:
            missing = [n for n, v in (("arm", record.arm), ("source_id", record.trajectory.metadata.source_id),
                                      ("branch_turn", record.trajectory.metadata.branch_turn)) if v is None]
            pairing.unmatched.append({"trajectory_id": record.trajectory.id, "reason": f"no {', '.join(missing)} in metadata"})
            continue
        if record.arm in grouped[key]:
            pairing.unmatched.append({"trajectory_id": record.trajectory.id, "arm": record.arm, "source_id": key[0],
                                      "branch_turn": key[1],
                                      "reason": f"second {record.arm!r} continuation of this source and turn "
                                                f"(first: {grouped[key][record.arm].trajectory.id})"})
            continue
        grouped[key][record.arm] = record
    for key in sorted(grouped):
        group = grouped[key]
        if baseline in group and len(group) > 1:
            pairing.groups[key] = group
            continue
        reason = f"no {baseline} continuation to pair with" if baseline not in group else "no other arm to pair with"
        for arm, record in sorted(group.items()):
            pairing.unmatched.append({"trajectory_id": record.trajectory.id, "arm": arm, "source_id": key[0],
                                      "branch_turn": key[1], "reason": reason})
    return pairing


def choose_baseline(arms: Sequence[str], baseline: str | None = None) -> str:
    """The reference arm: the one named, else ``unguided`` when present, else the first in sorted order."""
    if baseline is not None:
        if baseline not in arms:
            raise ValueError(f"--baseline {baseline!r} is not an arm of the input (arms: {', '.join(arms)})")
        return baseline
    return "unguided" if "unguided" in arms else min(arms)


# --- noise floor ---------------------------------------------------------------------------------


def match_clusters(left: Sequence[Cluster], right: Sequence[Cluster], scorer: LinkScorer | None) -> list[tuple[int, int]]:
    """One-to-one counterparts (left index, right index) between two judgments of the same turns.

    Matched by the clusterer's link score (turns are comparable here: it is the same trajectory prefix);
    without a scorer, on (turn, category). Greedy in left order.
    """
    used: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for li, cluster in enumerate(left):
        for ri, other in enumerate(right):
            if ri in used:
                continue
            same = (scorer.same_defect(cluster_issue(cluster), cluster_issue(other)) if scorer is not None
                    else (cluster.turn, cluster.category) == (other.turn, other.category))
            if same:
                used.add(ri)
                pairs.append((li, ri))
                break
    return pairs


def prefix_disagreement(a: ArmRecord, b: ArmRecord, branch_turn: int, scorer: LinkScorer | None) -> int:
    """Majority issues on the shared prefix found in one arm's judgment with no counterpart in the other's."""
    left, right = a.agent_issues(branch_turn, "prefix"), b.agent_issues(branch_turn, "prefix")
    matched = len(match_clusters(left, right, scorer))
    return (len(left) - matched) + (len(right) - matched)


def prefix_vote_change(a: ArmRecord, b: ArmRecord, branch_turn: int, scorer: LinkScorer | None) -> int:
    """Votes that moved on the shared prefix: over all its clusters (minority ones too), |votes A - votes B|
    for counterparts, and the full vote count of a cluster without one."""
    def prefix_clusters(record: ArmRecord) -> list[Cluster]:
        return [c for c in record.clusters if c.turn is not None and c.turn <= branch_turn and c.category != "environment"]

    left, right = prefix_clusters(a), prefix_clusters(b)
    pairs = match_clusters(left, right, scorer)
    moved = sum(abs(left[li].votes - right[ri].votes) for li, ri in pairs)
    matched_left, matched_right = {li for li, _ in pairs}, {ri for _, ri in pairs}
    moved += sum(c.votes for i, c in enumerate(left) if i not in matched_left)
    moved += sum(c.votes for i, c in enumerate(right) if i not in matched_right)
    return moved


def noise_floor(pairs: Sequence[tuple[ArmRecord, ArmRecord, int]], scorer: LinkScorer | None) -> dict[str, Any]:
    """How much the judge's findings move on facts both arms share (the prefix up to the branch).

    ``mean_count_change``: mean |prefix majority count of A - of B| per pair (comparable with a difference
    in issue counts). ``mean_unmatched``: mean number of prefix majority issues without a counterpart per
    pair. ``mean_vote_change``: mean number of votes that moved per pair, minority clusters included.
    Only estimated when both arms of every pair were judged with more than one pass.
    """
    judged = [(a, b, t) for a, b, t in pairs if a.panel_size > 1 and b.panel_size > 1]
    if not pairs or len(judged) < len(pairs):
        return {"estimated": False, "reason": "needs both arms judged with more than one pass", "pairs": len(judged)}
    changes = [abs(len(a.agent_issues(t, "prefix")) - len(b.agent_issues(t, "prefix"))) for a, b, t in judged]
    unmatched = [prefix_disagreement(a, b, t, scorer) for a, b, t in judged]
    votes = [prefix_vote_change(a, b, t, scorer) for a, b, t in judged]
    return {"estimated": True, "pairs": len(judged), "mean_count_change": float(np.mean(changes)),
            "mean_unmatched": float(np.mean(unmatched)), "mean_vote_change": float(np.mean(votes))}


# --- the comparison ------------------------------------------------------------------------------


def compare_arms(outcomes: Sequence[tuple[ArmOutcome, ArmOutcome]], seed: int = 0,
                 resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, Any]:
    """Aggregate (treatment, baseline) outcomes of complete pairs into the summary figures."""
    scored = [(t.score, b.score) for t, b in outcomes if t.score is not None and b.score is not None]
    differences = [float(t - b) for t, b in scored]
    wins = sum(d > 0 for d in differences)
    losses = sum(d < 0 for d in differences)
    ties = sum(d == 0 for d in differences)
    p_value = sign_test(wins, losses)
    ci = paired_bootstrap_ci(differences, seed=seed, resamples=resamples)

    token_pairs = [(t.suffix_tokens, b.suffix_tokens) for t, b in outcomes
                   if t.suffix_tokens is not None and b.suffix_tokens is not None]
    token_diffs = [float(t - b) for t, b in token_pairs]
    token_ci = paired_bootstrap_ci(token_diffs, seed=seed, resamples=resamples)

    def recurrence(side: int) -> dict[str, Any]:
        flags = [bool(pair[side].target_recurred) for pair in outcomes if pair[side].target_recurred is not None]
        return {"recurred": sum(flags), "pairs": len(flags), "rate": (sum(flags) / len(flags)) if flags else None}

    issue_diffs = [float(t.suffix_issue_count - b.suffix_issue_count) for t, b in outcomes]
    mean_diff = mean_or_none(differences)
    evidence = bool(ci is not None and (ci[0] > 0 or ci[1] < 0) and p_value < SIGNIFICANCE)
    return {
        "pairs": len(outcomes),
        "scored_pairs": len(scored),
        "unscored_pairs": len(outcomes) - len(scored),
        "wins": wins, "ties": ties, "losses": losses,
        "mean_score_difference": mean_diff,
        "score_difference_ci95": list(ci) if ci else None,
        "sign_test_p": p_value,
        "evidence_of_difference": evidence,
        "target_recurrence": {"treatment": recurrence(0), "baseline": recurrence(1)},
        "suffix_tokens": {
            "pairs_with_tokens": len(token_pairs),
            "treatment_mean": mean_or_none([float(t) for t, _ in token_pairs]),
            "baseline_mean": mean_or_none([float(b) for _, b in token_pairs]),
            "mean_difference": mean_or_none(token_diffs),
            "difference_ci95": list(token_ci) if token_ci else None,
        },
        "suffix_issue_difference": mean_or_none(issue_diffs),
        "budget_exhausted": {"treatment": sum(t.budget_exhausted for t, _ in outcomes),
                             "baseline": sum(b.budget_exhausted for _, b in outcomes)},
    }


def verdict_text(treatment: str, baseline: str, summary: dict[str, Any]) -> list[str]:
    """Plain-language reading of the figures: says plainly when a difference is not evidence of improvement."""
    lines: list[str] = []
    n = summary["scored_pairs"]
    mean = summary["mean_score_difference"]
    ci = summary["score_difference_ci95"]
    p = summary["sign_test_p"]
    if not n:
        return [f"No pair has a score in both arms, so nothing can be said about {treatment} vs {baseline}."]
    if mean == 0:
        headline = f"{treatment} and {baseline} scored the same on average over {n} pairs"
    else:
        headline = (f"{treatment} scored {abs(mean):.2f} points {'higher' if mean > 0 else 'lower'} than {baseline} "
                    f"on average over {n} pairs")
    lines.append(f"{headline} (95% interval {ci[0]:+.2f} to {ci[1]:+.2f}; sign test p = {p:.3f}, "
                 f"{summary['wins']} wins / {summary['ties']} ties / {summary['losses']} losses).")
    if summary["evidence_of_difference"]:
        better = treatment if mean > 0 else baseline
        lines.append(f"The interval excludes 0 and p < {SIGNIFICANCE}: this is evidence that {better} scores higher.")
    else:
        reasons = []
        if ci[0] <= 0 <= ci[1]:
            reasons.append("the interval includes 0")
        if p >= SIGNIFICANCE:
            reasons.append(f"the sign test gives p >= {SIGNIFICANCE}")
        ahead, behind = (baseline, treatment) if mean < 0 else (treatment, baseline)
        lines.append(f"This is NOT evidence that {ahead} is better than {behind}: {' and '.join(reasons)}."
                     + (f" With {n} pairs only a large, consistent difference could show." if n < 20 else ""))
    noise = summary.get("noise_floor") or {}
    issue_diff = summary.get("suffix_issue_difference")
    if noise.get("estimated") and issue_diff is not None:
        floor = noise["mean_count_change"]
        relation = "exceeds" if abs(issue_diff) > floor else "does not exceed"
        lines.append(
            f"Noise floor: on the shared prefix (identical in both arms) the judge's majority issue count moves by "
            f"{floor:.2f} per pair between the two judgments ({noise['mean_unmatched']:.2f} issues per pair without a "
            f"counterpart, {noise['mean_vote_change']:.2f} votes moved per pair). The measured difference after the "
            f"branch, {issue_diff:+.2f} issues per pair, {relation} it."
        )
    elif noise:
        lines.append(f"Noise floor not estimated: {noise.get('reason', 'not enough passes')}.")
    return lines


@dataclass
class CompareResult:
    """Everything ``compare.json`` holds; ``to_json`` gives its ``pairs`` and ``summary``."""

    arms: list[str]
    baseline: str
    pairs: list[dict[str, Any]]
    unmatched: list[dict[str, Any]]
    comparisons: list[dict[str, Any]]
    settings: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The ``compare.json`` document."""
        return {
            "pairs": self.pairs,
            "summary": {"arms": self.arms, "baseline": self.baseline, "comparisons": self.comparisons,
                        "unmatched": self.unmatched, "settings": self.settings},
        }


def compare_records(records: Sequence[ArmRecord], scorer: LinkScorer | None, baseline: str | None = None,
                    seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES) -> CompareResult:
    """Pair the records, compute every pair's arm outcomes and each arm's comparison with the baseline."""
    arms = sorted({r.arm for r in records if r.arm})
    if len(arms) < 2:
        raise ValueError(f"need continuations of at least two arms (metadata 'arm'); found {arms or 'none'}")
    reference = choose_baseline(arms, baseline)
    pairing = pair_records(records, reference)
    pairs: list[dict[str, Any]] = []
    outcome_by_key: dict[tuple[str, int], dict[str, ArmOutcome]] = {}
    for (source_id, branch_turn), group in pairing.groups.items():
        # The target is read from whichever arm carries it (usually only the guided one).
        target = next((t for t in (Target.of(group[a].trajectory) for a in sorted(group)) if t is not None), None)
        outcomes = {arm: arm_outcome(group[arm], branch_turn, target, scorer) for arm in arms if arm in group}
        outcome_by_key[(source_id, branch_turn)] = outcomes
        pairs.append({"source_id": source_id, "branch_turn": branch_turn,
                      "target_issue": target.description if target else None,
                      "arms": {arm: o.as_dict() for arm, o in outcomes.items()}})
    comparisons = []
    for treatment in [a for a in arms if a != reference]:
        duo = [(o[treatment], o[reference]) for o in outcome_by_key.values() if treatment in o]
        summary = compare_arms(duo, seed=seed, resamples=resamples)
        summary["noise_floor"] = noise_floor(
            [(g[treatment], g[reference], key[1]) for key, g in pairing.groups.items() if treatment in g], scorer)
        summary.update({"treatment": treatment, "baseline": reference})
        summary["verdict"] = verdict_text(treatment, reference, summary)
        comparisons.append(summary)
    return CompareResult(arms=arms, baseline=reference, pairs=pairs, unmatched=pairing.unmatched,
                         comparisons=comparisons, settings={"seed": seed, "bootstrap_resamples": resamples,
                                                            "significance": SIGNIFICANCE})


# --- reading runs --------------------------------------------------------------------------------


def load_records(run_dir: Path) -> list[ArmRecord]:
    """Every trajectory of a scored run with its score row, its clusters and the panel size."""
    run = RunDir(run_dir)
    if not run.is_scored():
        raise FileNotFoundError(f"{run_dir}: not a scored run directory (needs trajectories.jsonl and scores.jsonl)")
    manifest = run.manifest()
    scores = run.scores_by_trajectory()
    clusters = run.clusters_by_trajectory()
    records = []
    for trajectory in run.trajectories():
        score = scores.get(trajectory.id)
        panel_size = manifest.panel_size(score.panel_size if score else 1)
        records.append(ArmRecord(trajectory=trajectory, score=score, clusters=clusters.get(trajectory.id, []),
                                 panel_size=panel_size))
    return records


def make_scorer(run_dirs: Sequence[Path], cluster_options: dict[str, Any] | None = None,
                cache_dir: Path | None = None) -> LinkScorer:
    """The link scorer of the first run's clustering settings (run.json ``cluster``), or the given options.

    Embeddings are cached in ``cache_dir``'s store (the compare output), never in the input runs.
    """
    from judge.cluster import ClusterConfig
    from judge.embed import make_embedder

    recorded = RunDir(run_dirs[0]).manifest().cluster_options() if run_dirs else {}
    config = ClusterConfig.from_options(cluster_options or recorded)
    embedder = make_embedder(config.embedder, run_dir=cache_dir)
    return LinkScorer(config, embedder)


# --- output ----------------------------------------------------------------------------------------

COMPARE_JSON = "compare.json"
COMPARE_HTML = "compare.html"
COMPARE_MD = "compare.md"
HTML_TEMPLATE = "compare.html.j2"
MD_TEMPLATE = "compare.md.j2"


def render(result: CompareResult) -> tuple[str, str]:
    """(HTML, Markdown) pages, in the batch report's style: its environments, filters and stylesheet."""
    import datetime

    from markupsafe import Markup

    from judge import __version__
    from judge.report.render import (
        CSS_FILE,
        csp_hash,
        html_environment,
        markdown_environment,
    )
    from judge.resources import resource_dir

    css_path = resource_dir("reports") / CSS_FILE
    css = css_path.read_text(encoding="utf-8") if css_path.exists() else ""
    # No script on this page: only our own stylesheet (by hash) may apply; nothing may load.
    csp = f"default-src 'none'; style-src-elem {csp_hash(css)}; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
    context = {"r": result, "generated_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
               "version": __version__}
    html = html_environment().get_template(HTML_TEMPLATE).render(css=Markup(css), csp=csp, **context)
    markdown = markdown_environment().get_template(MD_TEMPLATE).render(**context)
    return html, markdown


def write_outputs(result: CompareResult, out_dir: Path) -> dict[str, Path]:
    """Write compare.json, compare.html and compare.md into ``out_dir``; return their paths by name."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": rundir.safe_child(out_dir, COMPARE_JSON), "html": rundir.safe_child(out_dir, COMPARE_HTML),
             "md": rundir.safe_child(out_dir, COMPARE_MD)}
    rundir.write_json(paths["json"], result.to_json())
    html, markdown = render(result)
    for name, text in (("html", html), ("md", markdown)):
        tmp = paths[name].with_name(paths[name].name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(paths[name])
    return paths
