"""Human failure labels, read next to the importers that read the same datasets' trajectories.

``judge validate`` compares a run with these labels (:mod:`judge.validate`); this module only reads them:

- ``who-and-when``: one JSON file per failed trajectory; ``mistake_step`` is a 0-based index into
  ``history`` (stored as a string: parsed with ``int``, never matched as text), ``mistake_agent`` names
  the agent. One label per trajectory; it is the decisive error, so it is also the root cause. The
  trajectories are read by :mod:`judge.importers.who_and_when`.
- ``agentrx``: a JSON list; each entry has several ``failures`` with ``step_number`` = the 1-based
  ``index`` field of the tau-bench ``traj`` message (index 1 is the system prompt, so the message is at
  position ``step_number - 1``), and ``root_cause.failure_id`` naming the decisive one. The trajectories are
  read by :mod:`judge.importers.tau`.
- ``mast``: trace-level failure modes with three annotators; a mode is labelled present when at least two
  of three marked it (majority-positive, :func:`judge.importers.mast.majority_modes`, the rule the MAST
  importer's recorded outcome uses too). No step labels.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from judge.importers.mast import majority_modes, mode_name

LabelKind = Literal["who-and-when", "agentrx", "mast"]
LABEL_KINDS: tuple[LabelKind, ...] = ("who-and-when", "agentrx", "mast")

# Who caused a labelled failure: these agent names mean the user (tau-bench's simulated customer), not the agent.
USER_AGENTS = frozenset({"user", "human", "simulated user", "user simulator", "customer"})


def normalise_agent(name: str | None) -> str:
    """``"Orchestrator (-> WebSurfer)"`` -> ``"orchestrator"``: Who&When labels drop the suffix."""
    if not name:
        return ""
    return re.sub(r"\s*\(.*\)\s*$", "", name).strip().lower()


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

    @property
    def by_user(self) -> bool:
        """The labels attribute it to the user (or simulated user): no agent turn is at fault."""
        return normalise_agent(self.agent) in USER_AGENTS


@dataclass
class TrajectoryLabels:
    """All labels of one source trajectory and how to find it among a run's trajectories."""

    label_id: str
    kind: LabelKind
    source_file: str | None = None
    task_id: str | None = None
    failures: list[LabelledFailure] = field(default_factory=list)
    modes: dict[str, bool] = field(default_factory=dict)  # MAST: raw mode name -> majority-positive


def parse_step(value: Any, where: str) -> int:
    """A label step as an integer. Strings must hold a whole integer: "1" is 1 and "10" is 10, never 1."""
    if isinstance(value, bool):
        raise LabelError(f"{where}: step {value!r} is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    raise LabelError(f"{where}: step {value!r} is not an integer")


def failure_id(value: Any) -> str | None:
    """A failure id compared as text, so the root cause's ``2`` names the failure ``"2"`` (and ``" 2 "``)."""
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    if re.fullmatch(r"-?\d+(\.0+)?", text):  # 2, "2" and 2.0 are one id
        text = str(int(float(text)))
    return text or None


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
            root_id = failure_id((entry.get("root_cause") or {}).get("failure_id"))
            failures = [
                LabelledFailure(
                    step=parse_step(f.get("step_number"), f"{where}: step_number"),
                    agent=f.get("failed_agent"),
                    category=f.get("failure_category"),
                    is_root=root_id is not None and failure_id(f.get("failure_id")) == root_id,
                    reason=str(f.get("step_reason") or ""),
                )
                for f in entry.get("failures") or []
            ]
            tid = str(entry["trajectory_id"])
            labels.append(TrajectoryLabels(label_id=tid, kind="agentrx", task_id=tid, failures=failures))
        except (KeyError, AttributeError, LabelError) as error:
            errors.append(f"{where}: {error}")
    return labels, errors


def load_mast(path: Path) -> tuple[list[TrajectoryLabels], list[str]]:
    """MAST/MAD human labels: trace-level modes, majority-positive when >= 2 of 3 annotators marked them
    (``judge.importers.mast.majority_modes``, the rule the importer's recorded outcome uses too)."""
    labels: list[TrajectoryLabels] = []
    errors: list[str] = []
    records = json.loads(path.read_text(encoding="utf-8"))
    for index, record in enumerate(records):
        try:
            positive = set(majority_modes(record["annotations"]))
            modes = {mode_name(a["failure mode"]): False for a in record["annotations"]}
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
