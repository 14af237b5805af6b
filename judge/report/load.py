"""Read everything a report needs from the run directory, and nothing else (no judge call, no network).

The report must still render when a stage did not run (no ``repairs.jsonl``) or a file has a bad row: a
missing file counts as empty and is named in the report; a bad row is skipped and listed with its file and
line, so the reader sees exactly what the figures leave out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from judge import rundir
from judge.model import Trajectory
from judge.schema import Cluster, Reject, RepairRow, ScoreRow, Verdict
from judge.store import STORE_FILE

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class BadRow:
    """A row the report could not read: where it is and why."""

    file: str
    line: int
    error: str


@dataclass
class RunData:
    """The stored run, as typed rows. Built by :func:`load_run`."""

    run_dir: Path
    manifest: dict[str, Any]
    trajectories: list[Trajectory]
    verdicts: list[Verdict]
    clusters: list[Cluster]
    scores: list[ScoreRow]
    repairs: list[RepairRow]
    rejects: list[Reject]
    attempts: list[dict[str, Any]] | None  # None when the run has no store.sqlite
    present: dict[str, bool] = field(default_factory=dict)  # file name -> found in the run directory
    bad_rows: list[BadRow] = field(default_factory=list)


def load_run(run_dir: Path) -> RunData:
    """Read the run directory's files into typed rows, tolerating absent files and bad rows."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory not found: {run_dir}")
    present: dict[str, bool] = {}
    bad_rows: list[BadRow] = []

    def rows(name: str, model: type[ModelT]) -> list[ModelT]:
        path = run_dir / name
        present[name] = path.is_file()
        return _read_rows(path, model, bad_rows) if present[name] else []

    manifest_path = run_dir / rundir.MANIFEST
    present[rundir.MANIFEST] = manifest_path.is_file()
    manifest: dict[str, Any] = {}
    if present[rundir.MANIFEST]:
        try:
            loaded = rundir.read_json(manifest_path)
            manifest = loaded if isinstance(loaded, dict) else {}
        except ValueError as error:
            bad_rows.append(BadRow(rundir.MANIFEST, 1, f"not valid JSON: {error}"))

    data = RunData(
        run_dir=run_dir,
        manifest=manifest,
        trajectories=rows(rundir.TRAJECTORIES, Trajectory),
        verdicts=rows(rundir.VERDICTS, Verdict),
        clusters=rows(rundir.CLUSTERS, Cluster),
        scores=rows(rundir.SCORES, ScoreRow),
        repairs=rows(rundir.REPAIRS, RepairRow),
        rejects=rows(rundir.REJECTS, Reject),
        attempts=_read_attempts(run_dir / STORE_FILE),
        present=present,
        bad_rows=bad_rows,
    )
    present[STORE_FILE] = data.attempts is not None
    return data


def _read_rows(path: Path, model: type[ModelT], bad_rows: list[BadRow]) -> list[ModelT]:
    result: list[ModelT] = []
    with path.open(encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                result.append(model.model_validate_json(line))
            except ValueError as error:
                first = str(error).splitlines()
                bad_rows.append(BadRow(path.name, number, f"not a valid {model.__name__} row: {' '.join(first[:3])}"))
    return result


def _read_attempts(path: Path) -> list[dict[str, Any]] | None:
    """Every provider attempt in the store (failed ones too), read-only; None when there is no store.

    Opened read-only through a URI so that reporting never creates or migrates a store.
    """
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


def manifest_json(manifest: dict[str, Any]) -> str:
    """The manifest as indented JSON text, for the reproducibility block."""
    return json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True, default=str)
