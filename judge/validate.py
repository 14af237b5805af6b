"""``judge validate``: how far a run's majority issues agree with human failure labels.

The labels are read by :mod:`judge.importers.labels` (Who&When, AgentRx, MAST), beside the importers of the
same datasets' trajectories; this module matches them with a run's trajectories and computes the figures.

Mapping a label step to our turn (:func:`label_turn`): the label's step is converted to the position of
the message in the source record, the trajectory message with that ``source_index`` is found, and its
``turn`` is used. For an assistant message that is its own turn. A label on a non-assistant message maps
to the turn that message belongs to: a tool result belongs to the turn that called it, and a user/system
message to the turn it follows (``judge.model.number_turns``). A user message before T1 therefore maps
to turn 0, which no issue can point at: such a label counts as missed, never dropped. Steps are compared
as integers (:func:`turns_match`), exactly or within +-k turns.

Our prediction for a trajectory's decisive error (:func:`decisive`) is the *origin* of the fact flow that
leads to its failure (issue 24 item 4, :func:`judge.facts.flow.trace_origin`): each severe majority issue
(every localised majority issue when none is severe) is walked back through the fact ledger's value and artifact
flows to the earliest step whose output it inherits (the lookup that returned the id a later call could not use,
the write that made the file version a run failed on, the text that stated an id no receipt had shown), and the
earliest origin is the decisive turn; an issue no flow leads into is its own origin. A trajectory without a
localised majority issue (or unscored) has no prediction and counts as wrong in every denominator. The chain of
facts behind each prediction (turn, kind, value, receipt excerpt, origin to failure) is in the JSON results
(``decisive``) and printed by ``judge validate --explain``. Before this, the prediction was the first severe
majority issue's own turn (:func:`decisive_issue`, kept for its readers).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from judge import rundir
from judge.facts.flow import Origin, answer_origin, decisive_of, format_chain, restates_query
from judge.importers.labels import (
    LabelError,
    LabelKind,
    TrajectoryLabels,
    detect_kind,
    load_labels,
    normalise_agent,
)
from judge.model import Trajectory
from judge.rules import MastGroups
from judge.rundir import RunDir
from judge.schema import ScoredIssue

# Published reference points printed beside our figures.
REFERENCE_POINTS: dict[str, str] = {
    "step_exact": "14.2% best step-level accuracy (Who&When, ICML 2025)",
    "agent": "53.5% best agent-level accuracy (Who&When, ICML 2025)",
    "mast_kappa": "kappa 0.77, MAST LLM annotator vs experts (Cemri et al. 2025)",
}

# AgentRx failure categories -> our categories (docs/contracts.md "category"), keyed by the normalised name
# (:func:`category_key`: lower case, punctuation as spaces), so "Intent-Plan Misalignment" and "Intent Plan
# Misalignment" are one key. The taxonomy is AgentRx's (microsoft/AgentRx, judge.py TAXONOMY_DATA, 9 categories plus
# "Inconclusive"); the tau ground truth uses 7 of them, with the shorter spellings listed too.
AGENTRX_CATEGORY_MAP: dict[str, str | None] = {
    # the agent did not follow the directions, the agreed plan or the policy: a missed requirement
    "instruction plan adherence failure": "semantic",
    "instruction adherence failure": "semantic",
    "plan adherence failure": "semantic",
    # facts not grounded in any input or tool output (fabricated, altered or omitted): a false claim
    "invention of new information": "semantic",
    # a call that cannot be parsed or validated (bad or missing arguments, syntax)
    "invalid invocation": "code",
    # wrong reasoning about a tool's or another agent's output, or a partial reading of it
    "misinterpretation of tool output handoff failure": "semantic",
    "misinterpretation of tool output": "semantic",
    "handoff failure": "semantic",
    # the user's goal or constraints misread: the plan aims at the wrong objective
    "intent plan misalignment": "semantic",
    # acting on an ambiguous request without asking (agent-attributed; a failure the labels attribute to the user
    # is user-caused and is not an agent turn at all, see LabelledFailure.by_user)
    "underspecified user intent": "semantic",
    # no tool can do what is asked: beyond the agent as equipped
    "intent not supported": "capability",
    # blocked by a safety policy, CAPTCHA, login, paywall, 403: AgentRx calls it "not an agent planning/execution
    # error", an external block, which is our environment category
    "guardrails triggered": "environment",
    # an endpoint not reachable, a timeout, a service down
    "system failure": "environment",
    # AgentRx's own "cannot classify": deliberately mapped to nothing (counted as unmapped)
    "inconclusive": None,
    "inconclusive use sparingly": None,
}



# MAST category mapping (documented in docs/validation.md). MAST failure modes are renamed and renumbered
# between annotation rounds (Round 1: 18 modes, Rounds 2-3: 17, final taxonomy: 14), so a label mode is put in a
# group by keywords of its name; the first group in this order whose keyword occurs wins. Every mode name of the
# shared file falls in a group except "backtracking interruption", which counts only for "any".
MAST_GROUPS: dict[str, tuple[str, ...]] = {
    "repetition": ("repetition", "repetitive", "repeat"),  # step repetition, unbatched repetitive execution
    "verification": ("verification", "verif", "unverified"),  # no/incomplete, incorrect, lack of result/critical
    "termination": ("termination", "stopping", "premature", "gave up", "give up"),  # unaware of stopping conditions
    "clarification": ("clarification", "ambigu"),  # fail to ask/elicit clarification, undetected ambiguities
    "task-compliance": ("task specification", "constraint compliance", "requirement", "task derailment",
                        "derailment"),  # disobey task specification, derailment from task
    "role": ("role specification", "blurring roles"),  # disobey role specification
    "reasoning-action": ("reasoning and action", "reasoning-action"),  # inconsistency / mismatch
    "history": ("conversation reset", "conversation history"),  # conversation reset, loss of history
    "inter-agent": ("other agents", "suggestions from agents", "withholding", "witholding", "disagreement",
                    "known information"),  # ignored input, information withholding, inaction, waiting
}

# Our issues -> MAST groups. Tags of the rules judge are mapped by what each detector declares (its ``mast`` in
# judge.rules.detectors; None: no MAST counterpart, e.g. a failed tool call, so it counts for "any" only); any other
# tag (an LLM judge's free tag) is grouped by the MAST_GROUPS keywords of its tag and description. Environment
# issues are never a MAST failure.
RULES_TAG_TO_MAST = MastGroups()


# --- step -> turn ------------------------------------------------------------------------------


def label_source_index(step: int, kind: LabelKind) -> int:
    """Position (0-based) in the source record of the message a label step names."""
    if kind == "agentrx":
        return step - 1  # step_number is the 1-based ``index`` field of the traj message
    return step  # Who&When mistake_step is already a 0-based history index


def label_turn(trajectory: Trajectory, step: int | None, kind: LabelKind) -> int | None:
    """Our turn for a label step (see the module docstring), or None when no message has that position."""
    if step is None:
        return None
    position = label_source_index(step, kind)
    for message in trajectory.messages:
        if message.source_index == position:
            return message.turn
    return None


def turns_match(label: int | None, predicted: int | None, k: int = 0) -> bool:
    """Integer comparison within ``k`` turns. Unknown on either side is no match."""
    if label is None or predicted is None:
        return False
    return abs(int(label) - int(predicted)) <= k


def agent_at_turn(trajectory: Trajectory, turn: int | None) -> str | None:
    """The speaker of the assistant message of ``turn`` (its ``name``; single-agent logs: None)."""
    for message in trajectory.messages:
        if message.role == "assistant" and message.turn == turn:
            return message.name
    return None


# --- predictions ---------------------------------------------------------------------------------


def decisive_issue(issues: Sequence[ScoredIssue]) -> ScoredIssue | None:
    """The first severe majority issue by turn, else the first majority issue (localised ones only)."""
    localised = [(i.turn, i) for i in issues if i.turn is not None]
    severe = [(turn, i) for turn, i in localised if i.severity == "severe"]
    pool = severe or localised
    return min(pool, key=lambda pair: pair[0])[1] if pool else None


@dataclass(frozen=True)
class Decisive:
    """A trajectory's decisive turn: the majority issue whose failure it explains, and the origin of the fact flow
    behind it (``origin.turn`` is the decisive turn, ``origin.chain`` the evidence)."""

    issue: ScoredIssue
    origin: Origin

    @property
    def turn(self) -> int:
        return self.origin.turn


def decisive(trajectory: Trajectory, issues: Sequence[ScoredIssue]) -> Decisive | None:
    """The decisive turn of ``trajectory`` from its majority issues (see the module docstring); None when no issue
    is localised. Reads the trajectory's fact ledger (built once per trajectory object)."""
    found = decisive_of(trajectory, issues)
    return Decisive(*found) if found is not None else None


def match_issues(labels: Sequence[tuple[int | None, str | None]], predictions: Sequence[tuple[int | None, str | None]],
                 k: int, by_category: bool) -> list[tuple[int, int]]:
    """One-to-one matches (label index, prediction index): turns within ``k``, same category if asked.

    Greedy by turn distance, ties by order: every label and prediction is used at most once.
    """
    candidates = []
    for li, (lt, lc) in enumerate(labels):
        for pi, (pt, pc) in enumerate(predictions):
            if lt is not None and pt is not None and turns_match(lt, pt, k) and (not by_category or lc == pc):
                candidates.append((abs(lt - pt), li, pi))
    used_l: set[int] = set()
    used_p: set[int] = set()
    matches = []
    for _, li, pi in sorted(candidates):
        if li not in used_l and pi not in used_p:
            used_l.add(li)
            used_p.add(pi)
            matches.append((li, pi))
    return matches


def category_key(raw: str | None) -> str:
    """``"Intent-Plan Misalignment"`` -> ``"intent plan misalignment"``: lower case, punctuation as spaces."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", (raw or "").lower()).split())


def map_category(raw: str | None) -> str | None:
    """AgentRx category -> ours (None when unknown, absent, or AgentRx's own "Inconclusive")."""
    return AGENTRX_CATEGORY_MAP.get(category_key(raw))


def mast_group(text: str) -> str | None:
    """The MAST mode group whose keywords occur in ``text`` (first in MAST_GROUPS order), else None."""
    lowered = text.lower()
    for group, words in MAST_GROUPS.items():
        if any(w in lowered for w in words):
            return group
    return None


def issue_mast_group(issue: ScoredIssue) -> str | None:
    """The MAST group of one of our issues: the rules-tag table first, else keywords of tag and description."""
    if issue.tag is not None and issue.tag in RULES_TAG_TO_MAST:
        return RULES_TAG_TO_MAST[issue.tag]
    return mast_group(f"{issue.tag or ''} {issue.description}")


# --- evaluation ----------------------------------------------------------------------------------


@dataclass
class Rate:
    """hits of n (n counts every evaluated trajectory or item, including those without a prediction).

    ``hits`` is a float so that the random baseline can add its expected hit (a probability) per item.
    """

    hits: float = 0
    n: int = 0

    @property
    def value(self) -> float | None:
        """hits / n, or None when nothing was evaluated."""
        return self.hits / self.n if self.n else None

    def add(self, hit: bool | float) -> None:
        """Count one evaluated item (a bool, or an expected hit in [0, 1])."""
        self.n += 1
        self.hits += float(hit)

    def to_json(self) -> dict[str, Any]:
        hits = int(self.hits) if float(self.hits).is_integer() else round(self.hits, 4)
        return {"hits": hits, "n": self.n, "value": self.value}


# The localisation figures, each a Rate per predictor (the agent is measured on Who&When only).
METRICS: tuple[str, ...] = ("step_exact", "step_within_k", "root_exact", "root_within_k", "agent")


@dataclass
class PredictorScores:
    """One predictor's figures on the labels (the judge's, or a baseline's)."""

    step_exact: Rate = field(default_factory=Rate)
    step_within_k: Rate = field(default_factory=Rate)
    root_exact: Rate = field(default_factory=Rate)
    root_within_k: Rate = field(default_factory=Rate)
    agent: Rate = field(default_factory=Rate)

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name).to_json() for name in METRICS}


JUDGE = "judge"
# Baselines scored on the same labels and the same denominators as the judge, in the order they are printed.
BASELINES: dict[str, str] = {
    "random": "random (expected value)",
    "always-first": "always T1",
    "always-last": "always the last turn",
    "first-failed-call": "first failed call",
    "first-agent-step": "first agent step after the task",
    "answer-origin": "final answer's origin (rule, not the judge)",
    "judge-or-answer-origin": "judge, else the answer's origin (fall-back)",
    "majority-agent": "majority agent (from the labels)",
}
BASELINE_NOTES: dict[str, str] = {
    "random": "random is the exact expected value of a turn drawn uniformly from the trajectory's turns (and, for "
              "the agent, of an agent drawn uniformly from those that speak in it), not a seeded sample",
    "first-failed-call": "first failed call is the first turn with a call whose receipt the log marks as failed "
                         "(error flag or non-zero exit); a trajectory without one has no prediction",
    "first-agent-step": "first agent step after the task is the first assistant turn that is not a task message (one "
                        "that quotes the query, as AG2's manager message does): T1 where no agent restates the task",
    "answer-origin": "final answer's origin is a rule, not the judge: the first agent text or tool output that states "
                     "a fact (number or name) of the final answer the query and the task message do not hold (judge.facts.flow."
                     "answer_origin; every labelled run is a recorded failure, so its answer is wrong)",
    "judge-or-answer-origin": "judge, else the answer's origin: the judge's decisive turn where it has one, the final "
                              "answer's origin where it has none (a fall-back, reported apart from the judge's own row)",
    "majority-agent": "majority agent predicts, for every trajectory, the agent the labels blame most often: it reads "
                      "the label distribution, so it is an optimistic baseline",
}


@dataclass
class TrajectoryResult:
    """One labelled trajectory as evaluated: label turns, our decisive turn and agent."""
    label_id: str
    trajectory_id: str | None
    label_turns: list[int | None]
    root_turn: int | None
    predicted_turn: int | None
    predicted_agent: str | None
    label_agent: str | None
    scored: bool
    user_caused: int = 0  # labelled failures attributed to the user (not an agent turn)
    failure_turn: int | None = None  # the turn of the majority issue the decisive turn explains
    decisive: Origin | None = None  # the decisive turn's origin and its chain of facts (origin to failure)


@dataclass
class ValidationReport:
    """Every figure of ``judge validate`` with its counts; ``to_json`` is what ``--json`` writes."""
    kind: LabelKind
    k: int
    labels: int
    evaluated: int
    unmatched_labels: list[str]
    label_errors: list[str]
    unscored: int
    unmappable_steps: int
    predictors: dict[str, PredictorScores] = field(
        default_factory=lambda: {name: PredictorScores() for name in (JUDGE, *BASELINES)})
    majority_agent: str | None = None
    user_failures: int = 0  # labelled failures attributed to the user: not an agent turn, not a target
    failures: int = 0
    user_only: list[str] = field(default_factory=list)  # labels whose every failure is the user's: no step target
    user_root: list[str] = field(default_factory=list)  # labels whose root cause is the user's: no root target
    unmapped_categories: dict[str, int] = field(default_factory=dict)  # raw label category -> failures
    run_trajectories: int | None = None  # set by validate_run: how many trajectories the run holds ...
    matched_trajectories: int | None = None  # ... and how many of them the labels name
    issue_counts: dict[str, dict[str, int]] = field(default_factory=dict)  # category -> tp_pred, pred, tp_label, label
    mast: dict[str, Any] = field(default_factory=dict)
    results: list[TrajectoryResult] = field(default_factory=list)

    # The judge's figures by their old names (``report.step_exact`` is the judge's exact-step Rate).
    @property
    def step_exact(self) -> Rate:
        return self.predictors[JUDGE].step_exact

    @property
    def step_within_k(self) -> Rate:
        return self.predictors[JUDGE].step_within_k

    @property
    def root_exact(self) -> Rate:
        return self.predictors[JUDGE].root_exact

    @property
    def root_within_k(self) -> Rate:
        return self.predictors[JUDGE].root_within_k

    @property
    def agent(self) -> Rate:
        return self.predictors[JUDGE].agent

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form: the judge's rates at the top level (as before), every predictor under ``predictors``."""
        data = asdict(self)
        data["predictors"] = {name: scores.to_json() for name, scores in self.predictors.items()}
        data.update(self.predictors[JUDGE].to_json())
        data["issue_precision_recall"] = {c: precision_recall(v) for c, v in self.issue_counts.items()}
        return data


def first_failed_call_turn(trajectory: Trajectory) -> int | None:
    """The first turn with a call whose receipt the log marks as failed (``is_error``), or None."""
    for turn in trajectory.turns():
        if any(receipt.is_error for receipt in turn.receipts):
            return turn.number
    return None


def first_agent_turn(trajectory: Trajectory) -> int | None:
    """The first assistant turn that is not a task message (:func:`judge.facts.flow.restates_query`), or None: the
    first step an agent took on the task, a position baseline for chats that open with the task restated."""
    for message in trajectory.messages:
        if message.role == "assistant" and message.turn and not restates_query(message, trajectory.query):
            return message.turn
    return None


def random_turn_hit(label_turns: Sequence[int | None], turn_count: int, k: int = 0) -> float:
    """Probability that a turn drawn uniformly from 1..turn_count lies within ``k`` of any label turn (pure)."""
    if turn_count <= 0:
        return 0.0
    hits = sum(1 for turn in range(1, turn_count + 1) if any(turns_match(t, turn, k) for t in label_turns))
    return hits / turn_count


def speaking_agents(trajectory: Trajectory) -> list[str]:
    """The distinct agents (normalised names) that have an assistant turn, in order of first appearance."""
    agents: list[str] = []
    for message in trajectory.messages:
        name = normalise_agent(message.name) if message.role == "assistant" else ""
        if name and name not in agents:
            agents.append(name)
    return agents


def random_agent_hit(trajectory: Trajectory, label_agent: str | None) -> float:
    """Probability that an agent drawn uniformly from those that speak names the labelled agent (pure)."""
    agents = speaking_agents(trajectory)
    return 1 / len(agents) if agents and normalise_agent(label_agent) in agents else 0.0


def majority_agent(labels: Iterable[TrajectoryLabels]) -> str | None:
    """The agent the labels blame most often for the root cause (normalised; ties: alphabetical first)."""
    counts = Counter(normalise_agent(f.agent) for label in labels for f in label.failures
                     if f.is_root and f.agent and not f.by_user)
    if not counts:
        return None
    return min(counts, key=lambda name: (-counts[name], name))


def evaluate(labels: list[TrajectoryLabels], trajectories: dict[str, Trajectory],
             issues: dict[str, list[ScoredIssue]], scored: dict[str, bool], kind: LabelKind, k: int = 1,
             label_errors: Sequence[str] = (), origins: bool = True) -> ValidationReport:
    """Compare majority issues, and every baseline of :data:`BASELINES`, with labels.

    ``trajectories`` maps label_id -> matched trajectory. Every predictor is scored on the same trajectories and
    the same denominators; no prediction (or an unscored trajectory) is a miss. A failure the labels attribute to
    the user (:attr:`LabelledFailure.by_user`) is not an agent turn: it is no step target and no labelled issue, a
    trajectory whose root cause is the user's has no root-cause target, and both are counted in the report.
    ``origins=False`` predicts the decisive issue's own turn instead of its origin (checks of the label mapping
    with issues placed at the labelled turns).
    """
    report = ValidationReport(kind=kind, k=k, labels=len(labels), evaluated=0, label_errors=list(label_errors),
                              unmatched_labels=[l.label_id for l in labels if l.label_id not in trajectories],
                              unscored=0, unmappable_steps=0)
    found = [label for label in labels if label.label_id in trajectories]
    if kind == "who-and-when":
        report.majority_agent = majority_agent(found)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    unmapped: Counter[str] = Counter()
    mast_rows: list[tuple[dict[str, bool], set[str], bool, bool]] = []
    for label in found:
        trajectory = trajectories[label.label_id]
        report.evaluated += 1
        predicted = issues.get(trajectory.id, [])
        is_scored = scored.get(trajectory.id, False)
        report.unscored += int(not is_scored)
        failed_call = first_failed_call_turn(trajectory)
        if kind == "mast":
            agent_issues = [i for i in predicted if i.category != "environment"]
            groups = {g for i in agent_issues for g in [issue_mast_group(i)] if g}
            mast_rows.append((label.modes, groups, bool(agent_issues), failed_call is not None))
            continue
        label_turns = [label_turn(trajectory, f.step, kind) for f in label.failures]
        report.unmappable_steps += sum(1 for t in label_turns if t is None)
        report.failures += len(label.failures)
        agent_items = [(f, t) for f, t in zip(label.failures, label_turns) if not f.by_user]
        user_caused = len(label.failures) - len(agent_items)
        report.user_failures += user_caused
        agent_turns = [t for _, t in agent_items]
        root, root_turn = next(((f, t) for f, t in zip(label.failures, label_turns) if f.is_root), (None, None))
        steps_counted = bool(agent_items)
        root_counted = root is None or not root.by_user  # a missing root is a miss; the user's is no target
        if not steps_counted:
            report.user_only.append(label.label_id)
        if not root_counted:
            report.user_root.append(label.label_id)
        label_agent = root.agent if root is not None and not root.by_user else None
        chosen = decisive(trajectory, predicted) if origins else None
        own = decisive_issue(predicted) if not origins else None
        predicted_turn = chosen.turn if chosen else (own.turn if own else None)
        last = trajectory.turn_count or None
        first_step = first_agent_turn(trajectory)
        found_answer = answer_origin(trajectory)
        answer_turn = found_answer.turn if found_answer is not None else None
        judge_agent = agent_at_turn(trajectory, predicted_turn) if chosen or own else None
        predictions: dict[str, tuple[int | None, str | None]] = {
            JUDGE: (predicted_turn, judge_agent),
            "always-first": (1 if last else None, agent_at_turn(trajectory, 1)),
            "always-last": (last, agent_at_turn(trajectory, last)),
            "first-failed-call": (failed_call, agent_at_turn(trajectory, failed_call)),
            "first-agent-step": (first_step, agent_at_turn(trajectory, first_step)),
            "answer-origin": (answer_turn, agent_at_turn(trajectory, answer_turn)),
            "judge-or-answer-origin": (predicted_turn, judge_agent) if predicted_turn is not None
            else (answer_turn, agent_at_turn(trajectory, answer_turn)),
            "majority-agent": (None, report.majority_agent),
        }
        for name, (turn, agent) in predictions.items():
            rates = report.predictors[name]
            if name != "majority-agent":  # an agent prior names no turn
                if steps_counted:
                    rates.step_exact.add(any(turns_match(t, turn, 0) for t in agent_turns))
                    rates.step_within_k.add(any(turns_match(t, turn, k) for t in agent_turns))
                if root_counted:
                    rates.root_exact.add(turns_match(root_turn, turn, 0))
                    rates.root_within_k.add(turns_match(root_turn, turn, k))
            if kind == "who-and-when" and label_agent:
                rates.agent.add(bool(agent) and normalise_agent(agent) == normalise_agent(label_agent))
        chance = report.predictors["random"]
        if steps_counted:
            chance.step_exact.add(random_turn_hit(agent_turns, trajectory.turn_count, 0))
            chance.step_within_k.add(random_turn_hit(agent_turns, trajectory.turn_count, k))
        if root_counted:
            chance.root_exact.add(random_turn_hit([root_turn], trajectory.turn_count, 0))
            chance.root_within_k.add(random_turn_hit([root_turn], trajectory.turn_count, k))
        if kind == "who-and-when" and label_agent:
            chance.agent.add(random_agent_hit(trajectory, label_agent))
        # issue precision/recall: every agent-caused labelled failure against every majority issue, within k turns
        label_items = [(t, map_category(f.category)) for f, t in agent_items]
        unmapped.update(f.category for f, _ in agent_items if f.category and map_category(f.category) is None)
        pred_items: list[tuple[int | None, str | None]] = [(i.turn, i.category) for i in predicted]
        any_matches = match_issues(label_items, pred_items, k, by_category=False)
        counts["any"].update(pred=len(pred_items), label=len(label_items), tp_pred=len(any_matches), tp_label=len(any_matches))
        if kind == "agentrx":
            cat_matches = match_issues(label_items, pred_items, k, by_category=True)
            for _, predicted_category in pred_items:
                counts[predicted_category or "unmapped"]["pred"] += 1
            for _, category in label_items:
                counts[category or "unmapped"]["label"] += 1
            for li, pi in cat_matches:
                counts[pred_items[pi][1] or "unmapped"]["tp_pred"] += 1
                counts[label_items[li][1] or "unmapped"]["tp_label"] += 1
        report.results.append(TrajectoryResult(
            label_id=label.label_id, trajectory_id=trajectory.id, label_turns=label_turns, root_turn=root_turn,
            predicted_turn=predicted_turn, predicted_agent=predictions[JUDGE][1], label_agent=label_agent,
            scored=is_scored, user_caused=user_caused, failure_turn=chosen.origin.failure_turn if chosen else None,
            decisive=chosen.origin if chosen else None))
    report.issue_counts = {c: {key: v.get(key, 0) for key in ("tp_pred", "pred", "tp_label", "label")} for c, v in counts.items()}
    report.unmapped_categories = dict(unmapped.most_common())
    if kind == "mast":
        report.mast = mast_agreement(mast_rows)
    return report


def precision_recall(counts: dict[str, int]) -> dict[str, float | None]:
    """Precision and recall from matched/total counts (None when a denominator is 0)."""
    precision = counts["tp_pred"] / counts["pred"] if counts["pred"] else None
    recall = counts["tp_label"] / counts["label"] if counts["label"] else None
    return {"precision": precision, "recall": recall}


def trajectory_keys(trajectory: Trajectory) -> set[str]:
    """Every key a label may use to name this trajectory."""
    keys = {f"id:{trajectory.id}", f"query:{trajectory.query_id}"}
    extra = trajectory.metadata.extra or {}
    for name in ("task_id", "question_ID", "trajectory_id"):
        if extra.get(name) is not None:
            keys.add(f"task:{extra[name]}")
    if trajectory.metadata.source_file:
        source = Path(trajectory.metadata.source_file)
        keys.add(f"file:{source.resolve()}")
        keys.add(f"name:{source.parent.name}/{source.name}")
        if trajectory.metadata.source_line is not None:
            keys.add(f"record:{source.name}#{trajectory.metadata.source_line}")
    return keys


def label_keys(label: TrajectoryLabels) -> list[str]:
    """Keys to try, most specific first."""
    if label.kind == "who-and-when":
        assert label.source_file
        source = Path(label.source_file)
        return [f"file:{source}", f"name:{source.parent.name}/{source.name}"]
    if label.kind == "agentrx":
        # AgentRx labels tau-bench *retail* tasks; the tau importer names their query group tau-retail-<task_id>,
        # which keeps an airline task with the same number from being taken for it.
        return [f"query:tau-retail-{label.task_id}", f"task:{label.task_id}", f"query:{label.task_id}", f"id:{label.task_id}"]
    assert label.source_file and label.task_id is not None
    name = Path(label.source_file).name
    # The importers record a JSON document's record index (0-based) as source_line.
    return [f"record:{name}#{int(label.task_id)}", f"id:{label.label_id}"]


def match_trajectories(labels: Iterable[TrajectoryLabels], trajectories: Iterable[Trajectory]) -> dict[str, Trajectory]:
    """label_id -> the run's trajectory for that label (first key that names exactly one trajectory)."""
    index: dict[str, list[Trajectory]] = defaultdict(list)
    for trajectory in trajectories:
        for key in trajectory_keys(trajectory):
            index[key].append(trajectory)
    found: dict[str, Trajectory] = {}
    for label in labels:
        for key in label_keys(label):
            hits = index.get(key, [])
            if len(hits) >= 1:
                # several runs of one task (e.g. tau full + failed sets) are identical copies: take the first
                found[label.label_id] = hits[0]
                break
    return found


def majority_issues(run_dir: Path) -> tuple[dict[str, list[ScoredIssue]], dict[str, bool]]:
    """trajectory id -> majority issues (scores.jsonl; clusters.jsonl when there is no scores file), and scored?"""
    from judge.scoring import scored_issue

    run = RunDir(run_dir)
    issues: dict[str, list[ScoredIssue]] = defaultdict(list)
    scored: dict[str, bool] = {}
    if run.has(rundir.SCORES):
        for row in run.scores():
            issues[row.trajectory_id] = [*row.issues, *row.environment]
            scored[row.trajectory_id] = row.valid_passes > 0
    elif run.has(rundir.CLUSTERS):
        for cluster in run.clusters():
            scored[cluster.trajectory_id] = True
            if cluster.majority:
                issues[cluster.trajectory_id].append(scored_issue(cluster))
    else:
        raise FileNotFoundError(f"{run_dir}: no scores.jsonl or clusters.jsonl; score the run first")
    return issues, scored


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """Cohen's kappa of two binary raters (None when undefined: no items, or chance agreement is 1)."""
    n = len(a)
    if n == 0 or n != len(b):
        return None
    observed = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def mast_agreement(rows: list[tuple[dict[str, bool], set[str], bool, bool]]) -> dict[str, Any]:
    """Trace-level agreement: any failure, and each mode group, as kappa + precision/recall over traces.

    Baselines for "any failure", on the same traces: ``baseline_any`` (the majority class here: every trace
    failing), ``baseline_random_any`` (a fair coin per trace, as expected values: precision = the share of failing
    traces, recall 0.5, kappa 0) and ``baseline_first_failed_any`` (a trace with a call the log marks failed).
    ``unmapped_positive`` lists majority-positive label modes in no group (they count for "any" only).
    Each row is (label modes, our issue groups, any agent issue, any failed call).
    """
    out: dict[str, Any] = {}
    label_any = [any(modes.values()) for modes, _, _, _ in rows]
    out["any"] = _binary_summary(label_any, [has for _, _, has, _ in rows])
    for group in MAST_GROUPS:
        labelled = [any(v and mast_group(name) == group for name, v in modes.items()) for modes, _, _, _ in rows]
        predicted = [group in groups for _, groups, _, _ in rows]
        out[group] = _binary_summary(labelled, predicted)
    out["baseline_any"] = _binary_summary(label_any, [True] * len(rows))
    out["baseline_random_any"] = expected_random_summary(label_any)
    out["baseline_first_failed_any"] = _binary_summary(label_any, [failed for _, _, _, failed in rows])
    out["unmapped_positive"] = sorted({name for modes, _, _, _ in rows for name, v in modes.items()
                                       if v and mast_group(name) is None})
    return out


def _binary_summary(labelled: list[bool], predicted: list[bool]) -> dict[str, Any]:
    tp = sum(l and p for l, p in zip(labelled, predicted))
    return {
        "traces": len(labelled),
        "labelled": sum(labelled),
        "predicted": sum(predicted),
        "precision": tp / sum(predicted) if sum(predicted) else None,
        "recall": tp / sum(labelled) if sum(labelled) else None,
        "kappa": cohen_kappa(labelled, predicted),
    }


def expected_random_summary(labelled: list[bool]) -> dict[str, Any]:
    """A fair coin per trace, as expected values: half the traces predicted, precision = prevalence, recall 0.5,
    kappa 0 (a predictor independent of the labels agrees only by chance). None where undefined."""
    n, positives = len(labelled), sum(labelled)
    return {
        "traces": n,
        "labelled": positives,
        "predicted": n / 2,
        "precision": positives / n if n else None,
        "recall": 0.5 if positives else None,
        "kappa": 0.0 if 0 < positives < n else None,
        "expected": True,
    }


class LabelMismatch(LabelError):
    """The labels name too few of the run's trajectories: they are probably not labels of this run."""


MIN_COVERAGE = 0.5  # labels must name at least half of the run's trajectories


Half = Literal["dev", "test"]
HALVES: tuple[Half, ...] = ("dev", "test")


def label_half(label_id: str) -> Half:
    """The fixed half of a labelled trajectory (docs/validation.md, "Dev and test halves"): ``dev`` when the first
    byte of the SHA-256 of its label id (UTF-8) is even, else ``test``. Pure and seedless, so the split never moves."""
    return "dev" if hashlib.sha256(label_id.encode("utf-8")).digest()[0] % 2 == 0 else "test"


def check_coverage(labels: list[TrajectoryLabels], matched: dict[str, Trajectory], run: list[Trajectory],
                   labels_path: Path, kind: LabelKind, min_coverage: float = MIN_COVERAGE) -> None:
    """Refuse labels that name under ``min_coverage`` of the run's trajectories (:class:`LabelMismatch`).

    A run of another dataset can still share a few task numbers or query ids with a label file (tau airline
    task 12 and AgentRx retail task 12); a table computed on those few accidental matches would look like a
    result. The message says what matched and how to proceed knowingly.
    """
    names = {t.id for t in matched.values()}
    if run and len(names) >= min_coverage * len(run):
        return
    share = f"{100 * len(names) / len(run):.0f}%" if run else "no trajectory"
    label_ids = ", ".join(l.label_id for l in labels[:3]) or "none"
    run_ids = ", ".join(t.id for t in run[:3]) or "none"
    raise LabelMismatch(
        f"the {kind} labels in {labels_path} name {len(names)} of the run's {len(run)} trajectories ({share}), "
        f"under the {100 * min_coverage:.0f}% needed: they are probably not labels of this run (label ids: "
        f"{label_ids}...; run ids: {run_ids}...). Score the labelled data itself, or pass --min-coverage "
        f"{len(names) / len(run) if run else 0:.2f} to validate on the matched part knowingly."
    )


def validate_run(run_dir: Path, labels_path: Path, kind: LabelKind | None = None, k: int = 1,
                 min_coverage: float = MIN_COVERAGE, half: Half | None = None) -> ValidationReport:
    """Load labels and the run, match them, refuse a mismatch, and evaluate (the library form of ``judge validate``).
    ``half`` keeps only the labels of that half (:func:`label_half`); coverage is checked on the whole set first."""
    run_dir = Path(run_dir)
    if not RunDir(run_dir).has(rundir.TRAJECTORIES):
        raise FileNotFoundError(f"{run_dir / rundir.TRAJECTORIES} not found: not a run directory")
    kind = kind or detect_kind(Path(labels_path))
    labels, errors = load_labels(Path(labels_path), kind)
    issues, scored = majority_issues(run_dir)
    run = list(RunDir(run_dir).trajectories())
    matched = match_trajectories(labels, run)
    check_coverage(labels, matched, run, Path(labels_path), kind, min_coverage)
    if half is not None:
        labels = [label for label in labels if label_half(label.label_id) == half]
    report = evaluate(labels, matched, issues, scored, kind, k=k, label_errors=errors)
    report.run_trajectories = len(run)
    report.matched_trajectories = len({t.id for t in matched.values()})
    return report


# --- the printed tables --------------------------------------------------------------------------


def _pct(rate: Rate) -> str:
    if rate.value is None:
        return "n/a"
    hits = f"{rate.hits:.0f}" if float(rate.hits).is_integer() else f"{rate.hits:.1f}"
    return f"{100 * rate.value:.1f}% ({hits}/{rate.n})"


def _num(value: float | None, percent: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}%" if percent else f"{round(value, 2) + 0.0:.2f}"  # + 0.0: no "-0.00"


@dataclass
class Table:
    """Rows of text cells under a header: printed aligned (:func:`format_table`) or as Markdown."""

    header: list[str]
    rows: list[list[str]]


def report_tables(report: ValidationReport) -> tuple[str, list[Table], list[str]]:
    """The title, the tables and the notes of a report: what both the text and the Markdown forms show."""
    title = (f"judge validate: {report.kind} labels, {report.evaluated} of {report.labels} labelled trajectories found "
             f"in the run ({report.unscored} unscored, counted as misses)")
    if report.run_trajectories is not None:
        title += f"; the labels name {report.matched_trajectories} of the run's {report.run_trajectories} trajectories"
    tables: list[Table] = []
    notes: list[str] = []
    if report.kind == "mast":
        rows = []
        for group in ["any", *MAST_GROUPS]:
            summary = report.mast.get(group)
            if summary is None:
                continue
            rows.append(_mast_row("any failure: judge" if group == "any" else f"'{group}': judge", summary))
            if group == "any":
                for key, name in (("baseline_random_any", "  random (expected value)"),
                                  ("baseline_any", "  every trace failing (majority class)"),
                                  ("baseline_first_failed_any", "  first failed call")):
                    if key in report.mast:
                        rows.append(_mast_row(name, report.mast[key]))
        tables.append(Table(["trace-level", "kappa", "precision", "recall", "labelled", "predicted"], rows))
        notes.append(f"published reference: {REFERENCE_POINTS['mast_kappa']} (agreement on the modes themselves, "
                     "a different task at a different level)")
        notes.append("labels: a mode is present when >= 2 of 3 annotators marked it; modes and our issues are grouped "
                     "by the MAST category mapping of judge.validate (kappa 0 = chance; n/a when both sides are constant)")
        notes.append("random: a fair coin per trace, as expected values; first failed call: a trace with a call the "
                     "log marks failed is called failing")
        unmapped = report.mast.get("unmapped_positive") or []
        if unmapped:
            notes.append(f"label modes in no group (counted for 'any' only): {', '.join(unmapped)}")
    else:
        which = " (any labelled failure)" if report.kind == "agentrx" else ""
        metrics = ["step_exact", "step_within_k", "root_exact", "root_within_k"]
        header = ["predictor", f"step, exact{which}", f"step, +-{report.k}", "root cause, exact", f"root cause, +-{report.k}"]
        if report.kind == "who-and-when":
            metrics.append("agent")
            header.append("agent")
        names = {JUDGE: "judge (ours)", **BASELINES}
        rows = [[names[name], *(_pct(getattr(scores, m)) for m in metrics)] for name, scores in report.predictors.items()
                if any(getattr(scores, m).n for m in metrics)]
        if report.kind == "who-and-when":
            rows.append(["published best (history steps)", "14.2%", "", "", "", "53.5%"])
        tables.append(Table(header, rows))
        issue_rows = []
        for category, counts in sorted(report.issue_counts.items(), key=lambda kv: (kv[0] != "any", kv[0])):
            pr = precision_recall(counts)
            issue_rows.append(["any category" if category == "any" else category,
                               f"{_num(pr['precision'])} ({counts['tp_pred']}/{counts['pred']})",
                               f"{_num(pr['recall'])} ({counts['tp_label']}/{counts['label']})"])
        if issue_rows:
            tables.append(Table([f"judge's majority issues vs labelled failures (+-{report.k})", "precision", "recall"],
                                issue_rows))
        if report.kind == "who-and-when":
            notes.append(f"published: {REFERENCE_POINTS['step_exact']}; {REFERENCE_POINTS['agent']}")
            notes.append("Who&When labels only the decisive error: issue precision counts any other real defect as a "
                         "false positive")
        notes.append("ours is measured on turns (a label on a tool or user message counts as the turn it belongs to); "
                     "the published figures count history steps")
        notes.append("every predictor is scored on the same trajectories; no prediction (or unscored) is a miss")
        for name, note in BASELINE_NOTES.items():
            if name == "majority-agent" and report.kind != "who-and-when":
                continue
            notes.append(note + (f" (here: {report.majority_agent})" if name == "majority-agent" and report.majority_agent else ""))
        if report.user_failures:
            notes.append(
                f"{report.user_failures} of {report.failures} labelled failures are attributed to the user (simulated "
                f"customer), not an agent turn: they are no step target and no labelled issue; "
                f"{len(report.user_root)} trajectories whose root cause is the user's are left out of the root-cause "
                f"columns and {len(report.user_only)} with only user-caused failures out of the step columns")
        if report.unmapped_categories:
            shown = ", ".join(f"{name} ({n})" for name, n in report.unmapped_categories.items())
            notes.append(f"label categories with no counterpart in ours (counted as 'unmapped'): {shown}")
    if report.unmappable_steps:
        notes.append(f"{report.unmappable_steps} label steps name no message of the imported trajectory (counted as misses)")
    if report.unmatched_labels:
        shown = ", ".join(report.unmatched_labels[:8]) + (" ..." if len(report.unmatched_labels) > 8 else "")
        notes.append(f"{len(report.unmatched_labels)} labelled trajectories not in the run: {shown}")
    notes += [f"label error: {error}" for error in report.label_errors[:10]]
    return title, tables, notes


def _mast_row(name: str, summary: dict[str, Any]) -> list[str]:
    predicted = summary["predicted"]
    return [name, _num(summary["kappa"], percent=False), _num(summary["precision"]), _num(summary["recall"]),
            str(summary["labelled"]), f"{predicted:g}" if isinstance(predicted, float) else str(predicted)]


def format_decisive(report: ValidationReport) -> str:
    """Per labelled trajectory: the labelled turns, our decisive turn and the chain of facts behind it (what
    ``judge validate --explain`` prints after the tables)."""
    lines = ["decisive turns, with the facts from origin to failure:"]
    for result in report.results:
        labelled = ", ".join("?" if t is None else f"T{t}" for t in result.label_turns) or "none"
        head = f"{result.label_id}: labelled {labelled}; "
        if result.decisive is None:
            lines.append(head + ("no localised majority issue: no prediction" if result.scored else "unscored: no prediction"))
            continue
        chain = format_chain(result.decisive, indent="    ")
        lines.append(head + chain[0])
        lines += chain[1:]
    return "\n".join(lines)


def format_table(report: ValidationReport) -> str:
    """The text ``judge validate`` prints: the judge beside every baseline, then the notes."""
    title, tables, notes = report_tables(report)
    lines = [title]
    for table in tables:
        widths = [max(len(row[i]) for row in [table.header, *table.rows]) for i in range(len(table.header))]
        lines.append("")
        for row in [table.header, *table.rows]:
            lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    lines.append("")
    lines += notes
    return "\n".join(lines)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


def format_markdown(report: ValidationReport) -> str:
    """The same tables as Markdown (``judge validate --markdown``; docs/validation.md is made from it)."""
    title, tables, notes = report_tables(report)
    lines = [title, ""]
    for table in tables:
        lines.append("| " + " | ".join(_md_cell(c) for c in table.header) + " |")
        lines.append("|" + "|".join(["---"] + ["---:"] * (len(table.header) - 1)) + "|")
        lines += ["| " + " | ".join(_md_cell(c.strip()) for c in row) + " |" for row in table.rows]
        lines.append("")
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines)
