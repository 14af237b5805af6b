"""Reading and writing the run directory's files (DESIGN.md, "Run directory").

File names live here only. Every writer goes through :func:`safe_child`, so no name taken from the data
can write outside the run directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

TRAJECTORIES = "trajectories.jsonl"  # the canonical input the run judged (so later stages need no re-import)
VERDICTS = "verdicts.jsonl"
CLUSTERS = "clusters.jsonl"
SCORES = "scores.jsonl"
REPAIRS = "repairs.jsonl"
TICKETS = "tickets.jsonl"  # continuation tickets (docs/continuation-tickets.md)
EDITED = "edited.jsonl"  # trajectories after offline edits
EDITS = "edits.jsonl"  # the edit log, with diffs
REJECTS = "rejects.jsonl"
SUMMARY = "summary.json"
MANIFEST = "run.json"  # the run's configuration: panel, prompt and rubric versions, embedder, thresholds
REPORT_HTML = "report.html"
REPORT_MD = "report.md"
LOCK = "run.lock"  # the process using the run (judge.runlock); exists only while it runs

ModelT = TypeVar("ModelT", bound=BaseModel)


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
            line = row.model_dump_json() if isinstance(row, BaseModel) else json.dumps(row, ensure_ascii=False, default=str)
            handle.write(line + "\n")
            count += 1
    os.replace(tmp, path)
    return count


def append_jsonl(path: Path, row: BaseModel | dict[str, Any]) -> None:
    """Append one row and flush it to disk (used for rows that must survive a kill)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = row.model_dump_json() if isinstance(row, BaseModel) else json.dumps(row, ensure_ascii=False, default=str)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")
        handle.flush()


def read_jsonl(path: Path, model: type[ModelT]) -> Iterator[ModelT]:
    """Stream typed rows; a bad row raises with the file and line."""
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield model.model_validate_json(line)
            except ValueError as error:
                raise ValueError(f"{path}:{number}: not a valid {model.__name__} row: {error}") from error


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, ensure_ascii=False, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    return json.loads(Path(path).read_text(encoding="utf-8"))
