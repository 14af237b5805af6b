"""The main job, ``judge score``: import -> judge panel -> cluster -> score + release gate -> routes -> report.

Each stage reads the files of the stage before it from the run directory, so every stage after judging
(``rescore``, ``repair``, ``report``) can be rerun without any judge call.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge import rundir
from judge.model import Trajectory
from judge.schema import Cluster, ScoreRow, Verdict


@dataclass
class ImportStats:
    """How many records were read, imported and rejected; how many paths were skipped (listed with the
    rejects, not counted as records) and how many trajectories were renamed to keep ids unique."""

    read: int = 0
    imported: int = 0
    rejected: int = 0
    by_format: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    renamed: int = 0


def import_to_run(inputs: Iterable[Path], run_dir: Path, fmt: str | None = None) -> ImportStats:
    """Stream ``inputs`` into ``trajectories.jsonl`` and ``rejects.jsonl`` of ``run_dir``.

    Trajectory ids are unique within the import (a repeated id gets ``~2``, ``~3``...; see iter_records).
    The run directory itself is never read as input, even when it lies inside an input folder.
    """
    from judge.importers.writer import write_import

    run_dir.mkdir(parents=True, exist_ok=True)
    return write_import(
        inputs, rundir.safe_child(run_dir, rundir.TRAJECTORIES), rundir.safe_child(run_dir, rundir.REJECTS), fmt=fmt,
        exclude=[run_dir],
    )


def read_trajectories(run_dir: Path) -> Iterable[Trajectory]:
    """Stream the run's canonical trajectories."""
    return rundir.read_jsonl(run_dir / rundir.TRAJECTORIES, Trajectory)


def verdicts_by_trajectory(run_dir: Path) -> dict[str, list[Verdict]]:
    grouped: dict[str, list[Verdict]] = defaultdict(list)
    path = run_dir / rundir.VERDICTS
    if path.exists():
        for verdict in rundir.read_jsonl(path, Verdict):
            grouped[verdict.trajectory_id].append(verdict)
    return grouped


def score_run(run_dir: Path, rubric_path: Path | None = None, cluster_options: dict[str, Any] | None = None) -> list[ScoreRow]:
    """Cluster the stored verdicts and score every trajectory; writes clusters.jsonl and scores.jsonl.

    Makes no judge call: this is also ``judge rescore``.
    """
    from judge.cluster import ClusterConfig, cluster_verdicts
    from judge.embed import make_embedder
    from judge.gate import release_checks
    from judge.scoring import load_rubric, score_trajectory

    manifest = read_manifest(run_dir)
    rubric = load_rubric(rubric_path)
    config = ClusterConfig.from_options(cluster_options or manifest.get("cluster") or {})
    embedder = make_embedder(config.embedder, run_dir=run_dir)
    verdicts = verdicts_by_trajectory(run_dir)
    all_clusters: list[Cluster] = []
    scores: list[ScoreRow] = []
    for trajectory in read_trajectories(run_dir):
        passes = verdicts.get(trajectory.id, [])
        panel_size = panel_size_of(passes, manifest)
        clusters = cluster_verdicts(trajectory.id, passes, panel_size=panel_size, config=config, embedder=embedder)
        all_clusters.extend(clusters)
        failed_checks = release_checks(trajectory)
        scores.append(score_trajectory(trajectory, passes, clusters, rubric, panel_size=panel_size, failed_checks=failed_checks))
    rundir.write_jsonl(run_dir / rundir.CLUSTERS, all_clusters)
    rundir.write_jsonl(run_dir / rundir.SCORES, scores)
    manifest.update({"rubric": rubric.describe(), "cluster": config.describe(), "embedder": embedder.describe()})
    write_manifest(run_dir, manifest)
    return scores


def panel_size_of(passes: list[Verdict], manifest: dict[str, Any]) -> int:
    """Passes the panel planned for a trajectory (unscored ones count: they stay in the denominator)."""
    planned = manifest.get("panel", {}).get("size")
    return int(planned) if planned else max(1, len({v.pass_key for v in passes}))


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = run_dir / rundir.MANIFEST
    return dict(rundir.read_json(path)) if path.exists() else {}


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    rundir.write_json(rundir.safe_child(run_dir, rundir.MANIFEST), manifest)


def finish_run(run_dir: Path) -> dict[str, Path]:
    """After scoring: repair routes (offline, no teacher call), then summary and reports.

    Returns the paths of what it wrote, by name. Both stages read the run directory only, so this is
    also what ``judge rescore`` runs after recomputing scores.
    """
    from judge.repair import route_run
    from judge.report import build_report

    route_run(run_dir)
    written = {"repairs": run_dir / rundir.REPAIRS}
    written.update(build_report(run_dir))
    return written
