"""Offline rules judge: deterministic defect detectors with turn localisation.

Public API::

    config = RulesConfig.load()                      # rubrics/rules-v2.yaml, or a path
    issues = run_detectors(trajectory)               # every enabled detector
    issues = run_detectors(trajectory, ["premature-claim"])   # one detector, as a validator
    DETECTORS["failed-call"](trajectory)             # the same, one detector, called alone
    vote = efficiency_vote(trajectory, config)       # "high" | "medium" | "low"

Detector names (each issue's ``tag`` is exactly the name of the detector that found it; no sub-tags):

=========================== =========== =========================================================
detector                    category    finds
=========================== =========== =========================================================
failed-call                 code        a failed call nobody redid, whose state nothing showed, that no message
                                        reported (not a check that reported failures); Ledger.recovery
repeated-failure            code        the same failing call repeated unchanged
environment-fault           environment network, DNS, auth, quota, disk, timeout (never ``code``); ``recovered``
noop-success                code        a write that "succeeded" but created nothing, treated as done
unverified-completion       semantic    a done/created/pushed/tests-pass/N-records claim no receipt supports
silent-check-failure        semantic    a check that exited 0 while reporting failures, then relied on
contradicted-claim          semantic    a claimed count that a read-back contradicts
unchecked-tick              semantic    a todo marked completed without a successful call / a check of the
                                        current version
stale-evidence              semantic    "verified" after the checked file or resource changed
premature-claim             semantic    a result stated before its receipt exists, or while the job still runs
phantom-failure-reference   semantic    "that failed, retry" with no failure before it
unpaired-call-id            environment a call without receipt, a receipt without call, an id reused unanswered
budget-exhausted            capability  the log marks the budget exhausted and no final answer came
=========================== =========== =========================================================

Each detector is registered by its ``@detector(name, category, roles=..., mast=...)`` decorator
(:mod:`judge.rules.registry`); the sets of detector names other modules use (the release gate's authenticity
checks, repair's plan and wording tags, the edit validators, the MAST mapping) are views of the registry.
Their rules are documented on the functions in :mod:`judge.rules.detectors`; phrase lists and thresholds are
data in ``rubrics/rules-v2.yaml`` (per language; a language without a vocabulary gets the structural checks).
Everything is computed from one fact ledger (:mod:`judge.facts`) per trajectory, so a single detector is
as cheap as the analysis it needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from judge.facts.analysis import Action, Analysis, analyse, analysis_of
from judge.facts.config import RulesConfig, default_config, set_detector_names
from judge.model import Trajectory
from judge.rules import detectors as _detectors  # registers the built-in detectors
from judge.rules.registry import (
    ROLES,
    DetectorNames,
    DetectorSpec,
    MastGroups,
    Role,
    detector,
    detector_names,
    detector_spec,
    unregister,
)
from judge.schema import Efficiency, Issue

DetectorFn = Callable[[Analysis], list[Issue]]
set_detector_names(detector_names)  # configs name only registered detectors

__all__ = [
    "DETECTORS", "DETECTOR_NAMES", "ROLES", "Analysis", "Detector", "DetectorFn", "DetectorNames", "DetectorSpec",
    "MastGroups", "Role", "RulesConfig", "WasteCounts", "analyse", "analysis_of", "default_config", "detect", "detector",
    "detector_names", "detector_spec", "efficiency_vote", "fired_detectors", "run_detectors", "unregister", "vote_from_waste",
    "waste_counts",
]


@dataclass(frozen=True)
class Detector:
    """One detector, callable alone: ``DETECTORS[name](trajectory, config=None) -> list[Issue]``.

    A disabled detector (``enabled: false`` in the config) returns no issues.
    """

    name: str
    find: DetectorFn

    def __call__(self, trajectory: Trajectory, config: RulesConfig | None = None) -> list[Issue]:
        config = config or default_config()
        if not config.enabled(self.name):
            return []
        return detect(analysis_of(trajectory, config), [self.name])

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]  # a detector's doc is its find function's
        return self.find.__doc__


class _Detectors(Mapping[str, Detector]):
    """Every registered detector by name, callable alone; a live view of the registry."""

    def __getitem__(self, name: str) -> Detector:
        return Detector(name, detector_spec(name).find)

    def __iter__(self) -> Iterator[str]:
        return iter(detector_names())

    def __len__(self) -> int:
        return len(detector_names())


DETECTORS: Mapping[str, Detector] = _Detectors()
# Every registered detector, in the order they run (and report same-turn issues in).
DETECTOR_NAMES = DetectorNames()


def run_detectors(
    trajectory: Trajectory, names: Iterable[str] | None = None, config: RulesConfig | None = None
) -> list[Issue]:
    """Run the named detectors (default: all enabled) over one trajectory; issues sorted by turn.

    The trajectory is analysed once and shared by the detectors (and by the rules judge and any other caller of
    :func:`analysis_of` on the same object). An unknown name raises ``ValueError``.
    """
    config = config or default_config()
    return detect(analysis_of(trajectory, config), names)


def detect(analysis: Analysis, names: Iterable[str] | None = None) -> list[Issue]:
    """:func:`run_detectors` on an existing analysis (the judge shares one analysis with the efficiency vote)."""
    issues: list[Issue] = []
    for found, first in _found(analysis, _selected(analysis, names)):
        # Issues are mutable models: only the first caller gets the detector's own objects.
        issues.extend(found if first else [issue.model_copy() for issue in found])
    return sorted(issues, key=lambda i: (i.turn if i.turn is not None else 1 << 30))


def fired_detectors(trajectory: Trajectory, names: Iterable[str] | None = None,
                    config: RulesConfig | None = None) -> set[str]:
    """The names of the detectors of ``names`` (default: all enabled) that find an issue in ``trajectory``.

    The release gate's question: on a trajectory object the rules judge has read, its detectors' findings are
    reused (:func:`analysis_of`), not found again.
    """
    analysis = analysis_of(trajectory, config or default_config())
    selected = _selected(analysis, names)
    return {name for name, (found, _) in zip(selected, _found(analysis, selected)) if found}


def _selected(analysis: Analysis, names: Iterable[str] | None) -> list[str]:
    """The enabled detectors of ``names`` (default: all registered); ``ValueError`` for an unknown name."""
    registered = detector_names()
    selected: Sequence[str] = registered
    if names is not None:
        selected = list(names)
        unknown = [n for n in selected if n not in registered]
        if unknown:
            raise ValueError(f"unknown detector(s) {unknown}; known: {list(registered)}")
    return analysis.config.enabled_among(selected)


def _found(analysis: Analysis, selected: list[str]) -> list[tuple[list[Issue], bool]]:
    """(issues, whether just found) of each detector of ``selected``: each detector runs once per analysis (keyed
    by its function, so a detector registered anew runs anew)."""
    memo: dict[DetectorFn, list[Issue]] = analysis.cache.setdefault("found", {})
    fresh = [name for name in selected if detector_spec(name).find not in memo]
    for name in fresh:
        memo[detector_spec(name).find] = detector_spec(name).find(analysis)
    _add_final_claim(analysis, memo)
    return [(memo[detector_spec(name).find], name in fresh) for name in selected]


def _add_final_claim(analysis: Analysis, memo: dict[DetectorFn, list[Issue]]) -> None:
    """Once per analysis, add :func:`~judge.rules.detectors.final_claim` (a final answer silent about an open
    problem) to its detector's issues, when no enabled detector already flags the final turn: every enabled
    detector runs first, so the answer is the same whichever detectors the caller asked for."""
    if "final_claim" in analysis.cache:
        return
    analysis.cache["final_claim"] = None
    enabled = analysis.config.enabled_among(detector_names())
    for name in enabled:
        find = detector_spec(name).find
        if find not in memo:
            memo[find] = find(analysis)
    flagged = {(i.turn, i.tag or "") for name in enabled for i in memo[detector_spec(name).find]}
    issue = _detectors.final_claim(analysis)
    if issue is None or issue.tag not in enabled or any(turn == issue.turn for turn, _ in flagged):
        return
    analysis.cache["final_claim"] = issue
    memo[detector_spec(issue.tag).find].append(issue)


@dataclass(frozen=True)
class WasteCounts:
    """Calls counted for the efficiency vote. Environment faults are not the agent's waste."""

    total: int
    failed: int
    repeated: int
    redundant: int

    @property
    def waste(self) -> int:
        return self.failed + self.repeated + self.redundant

    @property
    def ratio(self) -> float:
        return self.waste / self.total if self.total else 0.0


def waste_counts(analysis: Analysis) -> WasteCounts:
    """Failed calls (first of their kind), identical repeats of a failure, and redundant read-only repeats.

    A failed check that later passes is not waste (it found what the next calls fixed), nor is a check that ran
    and reported failures (its findings are evidence). A repeat of a failure counts only when no successful call
    that may change state ran since the identical failure (re-running after a fix is the loop working). A
    read-only call is redundant when an identical call already succeeded and no call that may change state ran in
    between (re-reading an unchanged file).
    """
    failed = repeated = redundant = 0
    last_failure: dict[tuple[str, str], int] = {}  # signature -> order of the last identical failure
    # Since the last call that may change state: the first successful read-only call of each tool, and the keys of
    # the reads of tools read more than once (a read is redundant when its key is there). Keys (canonical
    # arguments) are only made for a tool's second read and after: most reads are the only one of their tool.
    first_reads: dict[str, Action] = {}
    read_keys: set[str] = set()
    last_ok_mutation = -1  # order of the last call that may change state and succeeded
    for action in analysis.actions:
        if action.outcome == "error":
            signature = (action.key, action.error_line.strip().lower())
            previous = last_failure.get(signature)
            if previous is not None:
                if previous > last_ok_mutation:
                    repeated += 1
            elif not action.reported and not (action.is_check and analysis.recovered(action)):
                failed += 1
            last_failure[signature] = action.order
        elif action.outcome == "ok" and action.read_only:
            first = first_reads.setdefault(action.name, action)
            if first is not action:
                read_keys.add(first.key)  # a key begins with its tool's name: tools never share one
                if action.key in read_keys:
                    redundant += 1
                else:
                    read_keys.add(action.key)
        if not action.read_only and not action.is_plan:
            first_reads.clear()
            read_keys.clear()
            if action.outcome == "ok":
                last_ok_mutation = action.order
    return WasteCounts(total=len(analysis.actions), failed=failed, repeated=repeated, redundant=redundant)


def vote_from_waste(counts: WasteCounts, config: RulesConfig) -> Efficiency:
    """Pure threshold rule: ratio <= high_max -> high, <= medium_max -> medium, else low."""
    settings = config.efficiency
    if counts.total < settings.min_calls:
        return "high"
    if counts.ratio <= settings.high_max_waste:
        return "high"
    if counts.ratio <= settings.medium_max_waste:
        return "medium"
    return "low"


def efficiency_vote(trajectory: Trajectory, config: RulesConfig | None = None) -> Efficiency:
    """The efficiency vote from measured waste (see :func:`waste_counts`, thresholds in the config)."""
    config = config or default_config()
    return vote_from_waste(waste_counts(analysis_of(trajectory, config)), config)
