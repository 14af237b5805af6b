"""Read everything a report needs from the run directory, and nothing else (no judge call, no network).

The report must still render when a stage did not run (no ``repairs.jsonl``) or a file has a bad row: a
missing file counts as empty and is named in the report; a bad row is skipped and listed with its file and
line, so the reader sees exactly what the figures leave out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge import rundir
from judge.model import Trajectory
from judge.rundir import BadRow, RunDir, RunManifest
from judge.schema import Cluster, Reject, RepairRow, ScoreRow, Verdict

__all__ = ["BadRow", "RunData", "load_run", "manifest_json"]


@dataclass
class RunData:
    """The stored run, as typed rows. Built by :func:`load_run`."""

    run_dir: Path
    manifest: RunManifest
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
    run = RunDir(run_dir)
    if not run.path.is_dir():
        raise FileNotFoundError(f"run directory not found: {run.path}")
    present = {name: run.has(name) for name in (rundir.MANIFEST, rundir.TRAJECTORIES, rundir.VERDICTS,
                                                rundir.CLUSTERS, rundir.SCORES, rundir.REPAIRS, rundir.REJECTS)}
    bad_rows: list[BadRow] = []
    manifest = RunManifest()
    try:
        manifest = run.manifest()
    except ValueError as error:
        message = " ".join(str(error).removeprefix(f"{run.path / rundir.MANIFEST}: ").splitlines()[:3])
        bad_rows.append(BadRow(rundir.MANIFEST, 1, message))
    tolerant: dict[str, Any] = {"missing_ok": True, "bad_rows": bad_rows}
    data = RunData(
        run_dir=run.path,
        manifest=manifest,
        trajectories=list(run.trajectories(**tolerant)),
        verdicts=list(run.verdicts(**tolerant)),
        clusters=list(run.clusters(**tolerant)),
        scores=list(run.scores(**tolerant)),
        repairs=list(run.repairs(**tolerant)),
        rejects=list(run.rejects(**tolerant)),
        attempts=run.attempts(),
        present=present,
        bad_rows=bad_rows,
    )
    present[rundir.STORE] = data.attempts is not None
    return data


def manifest_json(manifest: RunManifest) -> str:
    """The manifest as indented JSON text, for the reproducibility block."""
    return json.dumps(manifest.to_json(), ensure_ascii=False, indent=2, sort_keys=True, default=str)
