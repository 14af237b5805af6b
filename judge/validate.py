"""``judge validate``: how far a run's majority issues agree with human failure labels.

Label adapters (``load_labels``) read the labelled sets in ``../shared/datasets``:

- ``who-and-when``: one JSON file per failed trajectory; ``mistake_step`` is a 0-based index into
  ``history`` (stored as a string: parsed with ``int``, never matched as text), ``mistake_agent`` names
  the agent. One label per trajectory; it is the decisive error, so it is also the root cause.
- ``agentrx``: a JSON list; each entry has several ``failures`` with ``step_number`` = the 1-based
  ``index`` field of the tau-bench ``traj`` message (index 1 is the system prompt, so the message is at
  position ``step_number - 1``), and ``root_cause.failure_id`` naming the decisive one.
- ``mast``: trace-level failure modes with three annotators; a mode is labelled present when at least two
  of three marked it (majority-positive). No step labels.

Mapping a label step to our turn (:func:`label_turn`): the label's step is converted to the position of
the message in the source record, the trajectory message with that ``source_index`` is found, and its
``turn`` is used. For an assistant message that is its own turn. A label on a non-assistant message maps
to the turn that message belongs to: a tool result belongs to the turn that called it, and a user/system
message to the turn it follows (``judge.model.number_turns``). A user message before T1 therefore maps
to turn 0, which no issue can point at: such a label counts as missed, never dropped. Steps are compared
as integers (:func:`turns_match`), exactly or within +-k turns.

Our prediction for a trajectory's decisive error (:func:`decisive_issue`) is its first severe majority
issue by turn, else its first majority issue; a trajectory without one (or unscored) has no prediction
and counts as wrong in every denominator.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from judge import rundir
from judge.model import Trajectory
from judge.schema import Cluster, ScoredIssue, ScoreRow

LabelKind = Literal["who-and-when", "agentrx", "mast"]
LABEL_KINDS: tuple[LabelKind, ...] = ("who-and-when", "agentrx", "mast")

# Published reference points printed beside our figures.
REFERENCE_POINTS: dict[str, str] = {
    "step_exact": "14.2% best step-level accuracy (Who&When, ICML 2025)",
    "agent": "53.5% best agent-level accuracy (Who&When, ICML 2025)",
    "mast_kappa": "kappa 0.77, MAST LLM annotator vs experts (Cemri et al. 2025)",
}

# AgentRx failure categories -> our categories (DESIGN.md "category"). Underspecified user intent is the
# agent acting on an ambiguous request without asking: a semantic (missed requirement) error on our side.
AGENTRX_CATEGORY_MAP: dict[str, str] = {
    "invalid invocation": "code",
    "misinterpretation of tool output": "semantic",
    "intent plan misalignment": "semantic",
    "instruction adherence failure": "semantic",
    "underspecified user intent": "semantic",
    "intent not supported": "capability",
    "system failure": "environment",
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

# Our issues -> MAST groups. Tags of the rules judge are mapped explicitly (None: the detector has no MAST
# counterpart, e.g. a failed tool call, so it counts for "any" only); any other tag (an LLM judge's free tag)
# is grouped by the MAST_GROUPS keywords of its tag and description. Environment issues are never a MAST failure.
RULES_TAG_TO_MAST: dict[str, str | None] = {
    "repeated-failure": "repetition",
    "unverified-completion": "verification",
    "plan-receipt-mismatch": "verification",
    "stale-evidence": "verification",
    "premature-claim": "verification",
    "phantom-failure-reference": "reasoning-action",
    "budget-exhausted": "termination",
    "failed-call": None,
}


class LabelError(ValueError):
    """A label file or record that cannot be read; the message names the file and record."""


@dataclass(frozen=True)
class LabelledFailure:
    """One annotated failure, in the label's own step numbering."""

    step: int | None
    agent: str | None = None
    category: str | None = None  # the label's raw category
    is_root: bool = False
    reason: str = ""


@dataclass
class TrajectoryLabels:
    """All labels of one source trajectory and how to find it among a run's trajectories."""

    label_id: str
    kind: LabelKind
    source_file: str | None = None
    task_id: str | None = None
    failures: list[LabelledFailure] = field(default_factory=list)
    modes: dict[str, bool] = field(default_factory=dict)  # MAST: raw mode name -> majority-positive


# --- label adapters ------------------------------------------------------------------------------


def parse_step(value: Any, where: str) -> int:
    """A label step as an integer. Strings must hold a whole integer: "1" is 1 and "10" is 10, never 1."""
    if isinstance(value, bool):
        raise LabelError(f"{where}: step {value!r} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    raise LabelError(f"{where}: step {value!r} is not an integer")


def load_who_and_when(path: Path) -> tuple[list[TrajectoryLabels], list[str]]:
    """Who&When: a file or a folder of ``*.json`` files (searched recursively)."""
    files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
    labels: list[TrajectoryLabels] = []
    errors: list[str] = []
    for file in files:
        try:
            record = json.loads(file.read_text(encoding="utf-8"))
            step = parse_step(record.get("mistake_step"), f"{file}: mistake_step")
            labels.append(
                TrajectoryLabels(
                    label_id=f"{file.parent.name}/{file.name}",
                    kind="who-and-when",
                    source_file=str(file.resolve()),
                    task_id=str(record.get("question_ID") or "") or None,
                    failures=[LabelledFailure(step=step, agent=record.get("mistake_agent"), is_root=True,
                                              reason=str(record.get("mistake_reason") or ""))],
                )
            )
        except (OSError, json.JSONDecodeError, LabelError, AttributeError) as error:
            errors.append(f"{file}: {error}")
    return labels, errors


def load_agentrx(path: Path) -> tuple[list[TrajectoryLabels], list[str]]:
    """AgentRx ground truth: a JSON list of ``{trajectory_id, failures, root_cause}``."""
    labels: list[TrajectoryLabels] = []
    errors: list[str] = []
    entries = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(entries, list):
        raise LabelError(f"{path}: expected a JSON list of AgentRx ground-truth entries")
    for index, entry in enumerate(entries):
        where = f"{path} [record {index}]"
        try:
            root_id = (entry.get("root_cause") or {}).get("failure_id")
            failures = [
                LabelledFailure(
                    step=parse_step(f.get("step_number"), f"{where}: step_number"),
                    agent=f.get("failed_agent"),
                    category=f.get("failure_category"),
                    is_root=f.get("failure_id") == root_id,
                    reason=str(f.get("step_reason") or ""),
                )
                for f in entry.get("failures") or []
            ]
            tid = str(entry["trajectory_id"])
            labels.append(TrajectoryLabels(label_id=tid, kind="agentrx", task_id=tid, failures=failures))
        except (KeyError, AttributeError, LabelError) as error:
            errors.append(f"{where}: {error}")
    return labels, errors


def mast_mode_name(raw: str) -> str:
    """``"1.3 Step Repetition\\n\\nDefinition..."`` -> ``"step repetition"`` (the importer's rule)."""
    from judge.importers.mast import mode_name

    return mode_name(raw)


def load_mast(path: Path) -> tuple[list[TrajectoryLabels], list[str]]:
    """MAST/MAD human labels: trace-level modes, majority-positive when >= 2 of 3 annotators marked them
    (``judge.importers.mast.majority_modes``, the rule the importer's recorded outcome uses too)."""
    from judge.importers.mast import majority_modes

    labels: list[TrajectoryLabels] = []
    errors: list[str] = []
    records = json.loads(path.read_text(encoding="utf-8"))
    for index, record in enumerate(records):
        try:
            positive = set(majority_modes(record["annotations"]))
            modes = {mast_mode_name(a["failure mode"]): False for a in record["annotations"]}
            modes.update({name: True for name in positive})
            label_id = f"{record.get('mas_name')}/{record.get('round')}/{record.get('trace_id')}"
            labels.append(TrajectoryLabels(label_id=label_id, kind="mast", source_file=str(path.resolve()),
                                           task_id=str(index), modes=modes))
        except (KeyError, TypeError, AttributeError) as error:
            errors.append(f"{path} [record {index}]: {error}")
    return labels, errors


def detect_kind(path: Path) -> LabelKind:
    """Guess the label kind from the file's shape (a folder or a dict with ``mistake_step``: Who&When)."""
    if path.is_dir():
        return "who-and-when"
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "mistake_step" in data:
        return "who-and-when"
    if isinstance(data, list) and data and isinstance(data[0], dict):
        if "failures" in data[0]:
            return "agentrx"
        if "annotations" in data[0]:
            return "mast"
    raise LabelError(f"{path}: cannot tell the label kind; pass --kind who-and-when|agentrx|mast")


def load_labels(path: Path, kind: LabelKind | None = None) -> tuple[list[TrajectoryLabels], list[str]]:
    """Read labels of ``kind`` (detected when None). Returns the labels and per-record errors."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"labels not found: {path}")
    loaders = {"who-and-when": load_who_and_when, "agentrx": load_agentrx, "mast": load_mast}
    try:
        kind = kind or detect_kind(path)
        if kind not in loaders:
            raise LabelError(f"unknown label kind {kind!r}; expected one of {', '.join(LABEL_KINDS)}")
        return loaders[kind](path)
    except json.JSONDecodeError as error:  # a Who&When folder reports per file; a single bad document stops here
        raise LabelError(f"{path}: not valid JSON ({error})") from error


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


def normalise_agent(name: str | None) -> str:
    """``"Orchestrator (-> WebSurfer)"`` -> ``"orchestrator"``: Who&When labels drop the suffix."""
    if not name:
        return ""
    return re.sub(r"\s*\(.*\)\s*$", "", name).strip().lower()


def agent_at_turn(trajectory: Trajectory, turn: int | None) -> str | None:
    """The speaker of the assistant message of ``turn`` (its ``name``; single-agent logs: None)."""
    for message in trajectory.messages:
        if message.role == "assistant" and message.turn == turn:
            return message.name
    return None


# --- predictions ---------------------------------------------------------------------------------


def decisive_issue(issues: Sequence[ScoredIssue]) -> ScoredIssue | None:
    """The first severe majority issue by turn, else the first majority issue (localised ones only)."""
    localised = [i for i in issues if i.turn is not None]
    severe = [i for i in localised if i.severity == "severe"]
    pool = severe or localised
    return min(pool, key=lambda i: i.turn) if pool else None  # type: ignore[arg-type,return-value]


def match_issues(labels: Sequence[tuple[int | None, str | None]], predictions: Sequence[tuple[int | None, str | None]],
                 k: int, by_category: bool) -> list[tuple[int, int]]:
    """One-to-one matches (label index, prediction index): turns within ``k``, same category if asked.

    Greedy by turn distance, ties by order: every label and prediction is used at most once.
    """
    candidates = []
    for li, (lt, lc) in enumerate(labels):
        for pi, (pt, pc) in enumerate(predictions):
            if turns_match(lt, pt, k) and (not by_category or lc == pc):
                candidates.append((abs(lt - pt), li, pi))  # type: ignore[operator]
    used_l: set[int] = set()
    used_p: set[int] = set()
    matches = []
    for _, li, pi in sorted(candidates):
        if li not in used_l and pi not in used_p:
            used_l.add(li)
            used_p.add(pi)
            matches.append((li, pi))
    return matches


def map_category(raw: str | None) -> str | None:
    """AgentRx category -> ours (None when unknown or absent)."""
    return AGENTRX_CATEGORY_MAP.get((raw or "").strip().lower())


def mast_group(text: str) -> str | None:
    """The MAST mode group whose keywords occur in ``text`` (first in MAST_GROUPS order), else None."""
    lowered = text.lower()
    for group, words in MAST_GROUPS.items():
        if any(w in lowered for w in words):
            return group
    return None


def issue_mast_group(issue: ScoredIssue) -> str | None:
    """The MAST group of one of our issues: the rules-tag table first, else keywords of tag and description."""
    if issue.tag in RULES_TAG_TO_MAST:
        return RULES_TAG_TO_MAST[issue.tag]
    return mast_group(f"{issue.tag or ''} {issue.description}")


# --- evaluation ----------------------------------------------------------------------------------


@dataclass
class Rate:
    """hits of n (n counts every evaluated trajectory or item, including those without a prediction)."""

    hits: int = 0
    n: int = 0

    @property
    def value(self) -> float | None:
        """hits / n, or None when nothing was evaluated."""
        return self.hits / self.n if self.n else None

    def add(self, hit: bool) -> None:
        """Count one evaluated item."""
        self.n += 1
        self.hits += int(hit)


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
    step_exact: Rate = field(default_factory=Rate)
    step_within_k: Rate = field(default_factory=Rate)
    # Trivial predictors on the same labels, for scale: "always the first turn", "always the last turn".
    first_turn_exact: Rate = field(default_factory=Rate)
    last_turn_exact: Rate = field(default_factory=Rate)
    agent: Rate = field(default_factory=Rate)
    root_exact: Rate = field(default_factory=Rate)
    root_within_k: Rate = field(default_factory=Rate)
    issue_counts: dict[str, dict[str, int]] = field(default_factory=dict)  # category -> tp_pred, pred, tp_label, label
    mast: dict[str, Any] = field(default_factory=dict)
    results: list[TrajectoryResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form: each rate as hits, n and value, plus precision/recall per category."""
        data = asdict(self)
        for name in ("step_exact", "step_within_k", "first_turn_exact", "last_turn_exact", "agent", "root_exact",
                     "root_within_k"):
            rate: Rate = getattr(self, name)
            data[name] = {"hits": rate.hits, "n": rate.n, "value": rate.value}
        data["issue_precision_recall"] = {c: precision_recall(v) for c, v in self.issue_counts.items()}
        return data


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
    issues: dict[str, list[ScoredIssue]] = defaultdict(list)
    scored: dict[str, bool] = {}
    scores_path = run_dir / rundir.SCORES
    clusters_path = run_dir / rundir.CLUSTERS
    if scores_path.exists():
        for row in rundir.read_jsonl(scores_path, ScoreRow):
            issues[row.trajectory_id] = [*row.issues, *row.environment]
            scored[row.trajectory_id] = row.valid_passes > 0
    elif clusters_path.exists():
        for cluster in rundir.read_jsonl(clusters_path, Cluster):
            scored[cluster.trajectory_id] = True
            if cluster.majority:
                issues[cluster.trajectory_id].append(
                    ScoredIssue(cluster=cluster.cluster, turn=cluster.turn, category=cluster.category,
                                severity=cluster.severity, tag=cluster.tag, description=cluster.description,
                                votes=cluster.votes)
                )
    else:
        raise FileNotFoundError(f"{run_dir}: no scores.jsonl or clusters.jsonl; score the run first")
    return issues, scored


def evaluate(labels: list[TrajectoryLabels], trajectories: dict[str, Trajectory],
             issues: dict[str, list[ScoredIssue]], scored: dict[str, bool], kind: LabelKind, k: int = 1,
             label_errors: Sequence[str] = ()) -> ValidationReport:
    """Compare majority issues with labels. ``trajectories`` maps label_id -> matched trajectory."""
    report = ValidationReport(kind=kind, k=k, labels=len(labels), evaluated=0, label_errors=list(label_errors),
                              unmatched_labels=[l.label_id for l in labels if l.label_id not in trajectories],
                              unscored=0, unmappable_steps=0)
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    mast_rows: list[tuple[dict[str, bool], set[str], bool]] = []
    for label in labels:
        trajectory = trajectories.get(label.label_id)
        if trajectory is None:
            continue
        report.evaluated += 1
        predicted = issues.get(trajectory.id, [])
        is_scored = scored.get(trajectory.id, False)
        report.unscored += int(not is_scored)
        if kind == "mast":
            groups = {g for i in predicted if i.category != "environment" for g in [issue_mast_group(i)] if g}
            mast_rows.append((label.modes, groups, bool([i for i in predicted if i.category != "environment"])))
            continue
        label_turns = [label_turn(trajectory, f.step, kind) for f in label.failures]
        report.unmappable_steps += sum(1 for t in label_turns if t is None)
        decisive = decisive_issue(predicted)
        predicted_turn = decisive.turn if decisive else None
        root = next((t for f, t in zip(label.failures, label_turns) if f.is_root), None)
        report.step_exact.add(any(turns_match(t, predicted_turn, 0) for t in label_turns))
        report.step_within_k.add(any(turns_match(t, predicted_turn, k) for t in label_turns))
        report.first_turn_exact.add(any(turns_match(t, 1, 0) for t in label_turns))
        report.last_turn_exact.add(any(turns_match(t, trajectory.turn_count, 0) for t in label_turns))
        report.root_exact.add(turns_match(root, predicted_turn, 0))
        report.root_within_k.add(turns_match(root, predicted_turn, k))
        label_agent = next((f.agent for f in label.failures if f.is_root), None)
        predicted_agent = agent_at_turn(trajectory, predicted_turn) if decisive else None
        if kind == "who-and-when" and label_agent:
            report.agent.add(bool(predicted_agent) and normalise_agent(predicted_agent) == normalise_agent(label_agent))
        # issue precision/recall: every labelled failure against every majority issue, within k turns
        label_items = [(t, map_category(f.category)) for f, t in zip(label.failures, label_turns)]
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
            label_id=label.label_id, trajectory_id=trajectory.id, label_turns=label_turns, root_turn=root,
            predicted_turn=predicted_turn, predicted_agent=predicted_agent, label_agent=label_agent, scored=is_scored))
    report.issue_counts = {c: {key: v.get(key, 0) for key in ("tp_pred", "pred", "tp_label", "label")} for c, v in counts.items()}
    if kind == "mast":
        report.mast = mast_agreement(mast_rows)
    return report


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


def mast_agreement(rows: list[tuple[dict[str, bool], set[str], bool]]) -> dict[str, Any]:
    """Trace-level agreement: any failure, and each mode group, as kappa + precision/recall over traces.

    Also ``baseline_any`` (a predictor that calls every trace failing, for scale) and ``unmapped_positive``
    (majority-positive label modes in no group: they count for "any" only).
    """
    out: dict[str, Any] = {}
    label_any = [any(modes.values()) for modes, _, _ in rows]
    pred_any = [has for _, _, has in rows]
    out["any"] = _binary_summary(label_any, pred_any)
    for group in MAST_GROUPS:
        labelled = [any(v and mast_group(name) == group for name, v in modes.items()) for modes, _, _ in rows]
        predicted = [group in groups for _, groups, _ in rows]
        out[group] = _binary_summary(labelled, predicted)
    out["baseline_any"] = _binary_summary(label_any, [True] * len(rows))
    out["unmapped_positive"] = sorted({name for modes, _, _ in rows for name, v in modes.items()
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


def validate_run(run_dir: Path, labels_path: Path, kind: LabelKind | None = None, k: int = 1) -> ValidationReport:
    """Load labels and the run, match them, and evaluate (the library form of ``judge validate``)."""
    from judge.pipeline import read_trajectories

    run_dir = Path(run_dir)
    if not (run_dir / rundir.TRAJECTORIES).exists():
        raise FileNotFoundError(f"{run_dir / rundir.TRAJECTORIES} not found: not a run directory")
    kind = kind or detect_kind(Path(labels_path))
    labels, errors = load_labels(Path(labels_path), kind)
    issues, scored = majority_issues(run_dir)
    matched = match_trajectories(labels, read_trajectories(run_dir))
    return evaluate(labels, matched, issues, scored, kind, k=k, label_errors=errors)


# --- the printed table ---------------------------------------------------------------------------


def _pct(rate: Rate) -> str:
    return "n/a" if rate.value is None else f"{100 * rate.value:.1f}% ({rate.hits}/{rate.n})"


def _num(value: float | None, percent: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}%" if percent else f"{round(value, 2) + 0.0:.2f}"  # + 0.0: no "-0.00"


def format_table(report: ValidationReport) -> str:
    """The table ``judge validate`` prints: our figures beside the published reference points."""
    rows: list[tuple[str, str, str]] = []
    if report.kind == "mast":
        groups = ["any", *MAST_GROUPS]
        for group in groups:
            summary = report.mast.get(group)
            if summary is None:
                continue
            name = "any failure" if group == "any" else f"'{group}'"
            rows.append((f"trace-level {name}: kappa", _num(summary["kappa"], percent=False),
                         REFERENCE_POINTS["mast_kappa"] if group == "any" else ""))
            rows.append((f"  precision / recall ({summary['labelled']} labelled, {summary['predicted']} predicted)",
                         f"{_num(summary['precision'])} / {_num(summary['recall'])}", ""))
            if group == "any" and "baseline_any" in report.mast:
                base = report.mast["baseline_any"]
                rows.append(("  trivial baseline: every trace failing, kappa", _num(base["kappa"], percent=False), ""))
                rows.append(("  trivial baseline: precision / recall", f"{_num(base['precision'])} / {_num(base['recall'])}", ""))
    else:
        step_ref = REFERENCE_POINTS["step_exact"] if report.kind == "who-and-when" else ""
        # Several failures per AgentRx trajectory: the decisive prediction hits if it names any of them.
        which = " (any labelled failure)" if report.kind == "agentrx" else ""
        rows.append((f"step accuracy, exact turn{which}", _pct(report.step_exact), step_ref))
        rows.append((f"step accuracy, within +-{report.k} turns{which}", _pct(report.step_within_k), ""))
        rows.append(("  trivial baseline: always T1, exact", _pct(report.first_turn_exact), ""))
        rows.append(("  trivial baseline: always the last turn, exact", _pct(report.last_turn_exact), ""))
        if report.kind == "who-and-when":
            rows.append(("agent accuracy", _pct(report.agent), REFERENCE_POINTS["agent"]))
        rows.append(("root-cause accuracy, exact turn", _pct(report.root_exact), ""))
        rows.append((f"root-cause accuracy, within +-{report.k}", _pct(report.root_within_k), ""))
        for category, counts in sorted(report.issue_counts.items(), key=lambda kv: (kv[0] != "any", kv[0])):
            pr = precision_recall(counts)
            name = "issues, any category" if category == "any" else f"issues, {category}"
            value = (f"{_num(pr['precision'])} ({counts['tp_pred']}/{counts['pred']}) / "
                     f"{_num(pr['recall'])} ({counts['tp_label']}/{counts['label']})")
            rows.append((f"{name}: precision / recall (+-{report.k})", value, ""))
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    title = (f"judge validate: {report.kind} labels, {report.evaluated} of {report.labels} labelled trajectories "
             f"found in the run ({report.unscored} unscored, counted as misses)")
    lines = [title, f"{'metric'.ljust(width)}  {'ours'.ljust(value_width)}  published reference"]
    lines += [f"{name.ljust(width)}  {value.ljust(value_width)}  {ref}".rstrip() for name, value, ref in rows]
    if report.kind == "who-and-when":
        lines.append("Who&When labels only the decisive error: issue precision counts any other real defect as a false positive")
    if report.kind == "mast":
        lines.append("labels: a mode is present when >= 2 of 3 annotators marked it; modes and our issues are grouped "
                     "by the MAST category mapping of judge.validate (kappa 0 = chance; n/a when both sides are constant)")
        unmapped = report.mast.get("unmapped_positive") or []
        if unmapped:
            lines.append(f"label modes in no group (counted for 'any' only): {', '.join(unmapped)}")
    if report.kind != "mast":
        lines.append("ours is measured on turns (a label on a tool or user message counts as the turn it belongs to); "
                     "the published figures count history steps")
    if report.unmappable_steps:
        lines.append(f"{report.unmappable_steps} label steps name no message of the imported trajectory (counted as misses)")
    if report.unmatched_labels:
        shown = ", ".join(report.unmatched_labels[:8]) + (" ..." if len(report.unmatched_labels) > 8 else "")
        lines.append(f"{len(report.unmatched_labels)} labelled trajectories not in the run: {shown}")
    for error in report.label_errors[:10]:
        lines.append(f"label error: {error}")
    return "\n".join(lines)
