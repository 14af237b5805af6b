"""The run directory (DESIGN.md, "Run directory"): :class:`RunDir` is the one reader and writer of a run.

File names live here only, and every stage reads a run through :class:`RunDir`: ``trajectories()``,
``verdicts()``, ``clusters()``, ``scores()``, ``repairs()``, ``rejects()``, ``overrides()`` (human review decisions,
the one file that is appended to rather than rewritten), their ``*_by_trajectory`` forms,
``attempts()`` (the store's provider attempts) and ``manifest()``, the typed :class:`RunManifest` of
``run.json``. Every writer goes through :func:`safe_child`, so no name taken from the data can write outside
the run directory.

A missing file is an error naming it, unless the caller passes ``missing_ok=True`` (then it reads as empty).
A bad row is an error naming the file and line, unless the caller collects bad rows (``bad_rows=[...]``: the
report, which must still render, skips and lists them).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.model import Trajectory
from judge.schema import Cluster, OverrideRow, Reject, RepairRow, ScoreRow, Verdict

TRAJECTORIES = "trajectories.jsonl"  # the canonical input the run judged (so later stages need no re-import)
VERDICTS = "verdicts.jsonl"
CLUSTERS = "clusters.jsonl"
SCORES = "scores.jsonl"
REPAIRS = "repairs.jsonl"
TICKETS = "tickets.jsonl"  # continuation tickets (docs/continuation-tickets.md)
EDITED = "edited.jsonl"  # trajectories after offline edits
EDITS = "edits.jsonl"  # the edit log, with diffs
REJECTS = "rejects.jsonl"
OVERRIDES = "overrides.jsonl"  # human review decisions, append-only (judge review; docs/review.md)
SUMMARY = "summary.json"
MANIFEST = "run.json"  # the run's configuration: panel, prompt and rubric versions, embedder, thresholds
REPORT_HTML = "report.html"
REPORT_MD = "report.md"
LOCK = "run.lock"  # the process using the run (judge.runlock); exists only while it runs
STORE = "store.sqlite"  # judge.store: verdict cache, provider attempts, embeddings, settings

ModelT = TypeVar("ModelT", bound=BaseModel)


# --- files -----------------------------------------------------------------------------------------


def safe_child(run_dir: Path, name: str) -> Path:
    """``run_dir / name``, refusing any name that would resolve outside ``run_dir``."""
    root = Path(run_dir).resolve()
    target = (root / name).resolve()
    if target != root and root not in target.parents:
        raise ValueError(f"refusing to write {name!r}: it resolves outside the run directory {root}")
    return target


def write_jsonl(path: Path, rows: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Write rows atomically (temp file + rename) and return how many were written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    with tmp.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(_json_line(row) + "\n")
            count += 1
    os.replace(tmp, path)
    return count


def _json_line(row: BaseModel | dict[str, Any]) -> str:
    return row.model_dump_json() if isinstance(row, BaseModel) else json.dumps(row, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class BadRow:
    """A row that could not be read (skipped by a tolerant reader): where it is and why."""

    file: str
    line: int
    error: str


def read_jsonl(path: Path, model: type[ModelT], bad_rows: list[BadRow] | None = None) -> Iterator[ModelT]:
    """Stream typed rows; a bad row raises with the file and line.

    With ``bad_rows`` given, a bad row (or undecodable bytes) is skipped and appended there instead.
    """
    tolerant = bad_rows is not None
    with Path(path).open(encoding="utf-8", errors="replace" if tolerant else "strict") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield model.model_validate_json(line)
            except ValueError as error:
                if bad_rows is None:
                    raise ValueError(f"{path}:{number}: not a valid {model.__name__} row: {error}") from error
                first = str(error).splitlines()
                bad_rows.append(BadRow(Path(path).name, number, f"not a valid {model.__name__} row: {' '.join(first[:3])}"))


def write_json(path: Path, value: Any) -> None:
    """Write one JSON document atomically, indented."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


# --- run.json --------------------------------------------------------------------------------------


class _Section(BaseModel):
    """A run.json section: typed where the code writes it, any other key kept (a newer or older writer's)."""

    model_config = ConfigDict(extra="allow")

    def to_json(self) -> dict[str, Any]:
        """The keys that were set (read from the file or assigned), in declaration order, then unknown keys."""
        return self.model_dump(exclude_unset=True)


class PanelMember(_Section):
    """One planned pass of the panel (written by :mod:`judge.panel`)."""

    pass_key: str | None = None
    judge: str | None = None
    pass_index: int | None = None
    model: str | None = None
    deterministic: bool | None = None
    prompt_version: str | None = None
    endpoint: str | None = None
    independence: Any = None


class PanelSection(_Section):
    """``panel``: the planned passes, the prompt version(s) and the call parameters (redacted)."""

    size: int | None = Field(default=None, description="Planned passes per trajectory (unscored ones count).")
    members: list[PanelMember | str] = Field(default_factory=list, description="Planned passes; an old run may list plain judge specs.")
    prompt_version: str | list[str] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    note: str | None = None


class BudgetSection(_Section):
    """``budget``: the run's spending cap and what the run spent over all its invocations."""

    max_cost_usd: float | None = None
    spent_usd: float | None = None
    spent_before_this_invocation_usd: float | None = None
    in_doubt_attempts: int | None = None
    in_doubt_usd: float | None = None
    note: str | None = None


class RubricSection(_Section):
    """``rubric``: which rubric scored the run (:meth:`judge.scoring.Rubric.describe`)."""

    name: str | None = None
    version: int | str | None = None
    label: str | None = None
    source: str | None = None


class ClusterSection(_Section):
    """``cluster``: the clustering settings (:meth:`judge.cluster.ClusterConfig.describe`); partial is allowed."""

    embedder: str | None = None
    weights: dict[str, float] | None = None
    bias: float | None = None
    threshold: float | None = None
    turn_window: int | None = None


class EmbedderSection(_Section):
    """``embedder``: the embedder that clustered the issues (``Embedder.describe``)."""

    name: str | None = None
    model: str | None = None
    version: str | None = None
    dim: int | None = None


class RunManifest(_Section):
    """``run.json``: the run's configuration and timing.

    Sections are filled by the stage that owns them: ``panel`` and ``budget`` by the panel, ``rubric``,
    ``cluster`` and ``embedder`` by scoring, the timing by ``judge score``. Keys this version does not know are
    kept and written back, so a run written by a newer (or older) version still loads and round-trips.
    """

    panel: PanelSection | None = None
    budget: BudgetSection | None = None
    rubric: RubricSection | None = None
    cluster: ClusterSection | None = None
    embedder: EmbedderSection | None = None
    started_at: str | None = Field(default=None, description="When the last `judge score` invocation started (ISO 8601).")
    finished_at: str | None = Field(default=None, description="When its judging and scoring ended (ISO 8601).")
    elapsed_s: float | None = None

    @classmethod
    def load(cls, path: Path) -> RunManifest:
        """Read ``run.json``; an absent file is an empty manifest, a malformed one an error naming the file."""
        path = Path(path)
        if not path.exists():
            return cls()
        try:
            return cls.model_validate_json(path.read_bytes())
        except ValidationError as error:
            raise ValueError(f"{path}: not a valid run manifest: {error}") from error

    def planned_passes(self) -> int | None:
        """The panel size the run planned, or None when run.json records none."""
        return self.panel.size if self.panel is not None and self.panel.size else None

    def panel_size(self, observed: int) -> int:
        """The panel size of a trajectory, the denominator of its majority: the planned passes when recorded
        (unscored passes count, they stay in the denominator), else ``observed`` (the distinct passes its
        verdicts show), at least 1."""
        return self.planned_passes() or max(1, observed)

    def cluster_options(self) -> dict[str, Any]:
        """The recorded clustering settings, as options for :meth:`judge.cluster.ClusterConfig.from_options`."""
        return self.cluster.to_json() if self.cluster is not None else {}

    def member_order(self) -> dict[str, int]:
        """Planned pass key -> its position in the panel (members written as plain specs have no key)."""
        members = self.panel.members if self.panel is not None else []
        return {m.pass_key: i for i, m in enumerate(members) if isinstance(m, PanelMember) and m.pass_key is not None}


# --- the run directory ---------------------------------------------------------------------------


class RunDir:
    """One run directory: reads its files as typed rows and writes them atomically.

    >>> run = RunDir("runs/example")            # doctest: +SKIP
    >>> scores = run.scores_by_trajectory()    # doctest: +SKIP
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    def file(self, name: str) -> Path:
        """The path of one of the run's files (checked to stay inside the run directory)."""
        return safe_child(self.path, name)

    def has(self, name: str) -> bool:
        return (self.path / name).is_file()

    def is_scored(self) -> bool:
        """A scored run: trajectories.jsonl and scores.jsonl present."""
        return self.path.is_dir() and self.has(TRAJECTORIES) and self.has(SCORES)

    # --- rows ---

    def rows(self, name: str, model: type[ModelT], *, missing_ok: bool = False,
             bad_rows: list[BadRow] | None = None) -> Iterator[ModelT]:
        """Stream the typed rows of one JSONL file of the run (see the module docstring for errors)."""
        path = self.path / name
        if not path.is_file():
            if missing_ok:
                return iter(())
            raise FileNotFoundError(f"{path} not found: the run directory {self.path} has no {name}")
        return read_jsonl(path, model, bad_rows)

    def trajectories(self, **options: Any) -> Iterator[Trajectory]:
        """The canonical trajectories the run judged, in input order."""
        return self.rows(TRAJECTORIES, Trajectory, **options)

    def verdicts(self, **options: Any) -> Iterator[Verdict]:
        return self.rows(VERDICTS, Verdict, **options)

    def clusters(self, **options: Any) -> Iterator[Cluster]:
        return self.rows(CLUSTERS, Cluster, **options)

    def scores(self, **options: Any) -> Iterator[ScoreRow]:
        return self.rows(SCORES, ScoreRow, **options)

    def repairs(self, **options: Any) -> Iterator[RepairRow]:
        return self.rows(REPAIRS, RepairRow, **options)

    def rejects(self, **options: Any) -> Iterator[Reject]:
        return self.rows(REJECTS, Reject, **options)

    def overrides(self, **options: Any) -> Iterator[OverrideRow]:
        """Human review decisions in the order they were made (absent file: none)."""
        return self.rows(OVERRIDES, OverrideRow, **{"missing_ok": True, **options})

    def overrides_by_trajectory(self) -> dict[str, list[OverrideRow]]:
        """Trajectory id -> its review decisions, in file order (the last per target wins; judge.review)."""
        grouped: dict[str, list[OverrideRow]] = defaultdict(list)
        for row in self.overrides():
            grouped[row.trajectory_id].append(row)
        return grouped

    def append_rows(self, name: str, rows: Iterable[BaseModel]) -> Path:
        """Append rows to an append-only JSONL file of the run (``overrides.jsonl``), one ``write`` per row and
        flushed to disk, so a reader sees whole rows and a crash loses at most the row being written."""
        path = self.file(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            for row in rows:
                handle.write(_json_line(row) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
        return path

    def verdicts_by_trajectory(self) -> dict[str, list[Verdict]]:
        """Trajectory id -> its passes, in file order; empty when the run has no verdicts yet."""
        grouped: dict[str, list[Verdict]] = defaultdict(list)
        for verdict in self.verdicts(missing_ok=True):
            grouped[verdict.trajectory_id].append(verdict)
        return grouped

    def clusters_by_trajectory(self) -> dict[str, list[Cluster]]:
        """Trajectory id -> its clusters, in file order; empty when the run has no clusters.jsonl."""
        grouped: dict[str, list[Cluster]] = defaultdict(list)
        for cluster in self.clusters(missing_ok=True):
            grouped[cluster.trajectory_id].append(cluster)
        return grouped

    def scores_by_trajectory(self) -> dict[str, ScoreRow]:
        """Trajectory id -> its score row (scores.jsonl must exist)."""
        return {row.trajectory_id: row for row in self.scores()}

    def write_rows(self, name: str, rows: Iterable[BaseModel | dict[str, Any]]) -> Path:
        """Write one JSONL file of the run atomically; returns its path."""
        path = self.file(name)
        write_jsonl(path, rows)
        return path

    def write_json(self, name: str, value: Any) -> Path:
        """Write one JSON document of the run atomically (``summary.json``); returns its path."""
        path = self.file(name)
        write_json(path, value)
        return path

    # --- run.json ---

    def manifest(self) -> RunManifest:
        """The typed ``run.json`` (empty when absent)."""
        return RunManifest.load(self.path / MANIFEST)

    def write_manifest(self, manifest: RunManifest) -> None:
        write_json(self.file(MANIFEST), manifest.to_json())

    @contextmanager
    def update_manifest(self) -> Iterator[RunManifest]:
        """Read ``run.json``, let the caller change it, write it back (nothing is written if the block raises)."""
        manifest = self.manifest()
        yield manifest
        self.write_manifest(manifest)

    # --- store.sqlite ---

    def attempts(self) -> list[dict[str, Any]] | None:
        """Every provider attempt in the store (failed ones too), read-only; None when there is no store.

        Opened read-only through a URI, so that reading a run never creates or migrates a store.
        """
        path = self.path / STORE
        if not path.is_file():
            return None
        import sqlite3

        uri = f"{path.resolve().as_uri()}?mode=ro"
        try:
            with sqlite3.connect(uri, uri=True) as db:
                tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if "call_attempts" not in tables:
                    return []
                cursor = db.execute("SELECT * FROM call_attempts ORDER BY id")
                names = [d[0] for d in cursor.description]
                return [dict(zip(names, row)) for row in cursor.fetchall()]
        except sqlite3.Error as error:
            raise RuntimeError(f"{path}: cannot read the run store: {error}") from error
