"""The main job, ``judge score``: import -> judge panel -> cluster -> score + release gate -> routes -> report.

This module only orchestrates: each stage reads the files of the stage before it through
:class:`judge.rundir.RunDir`, so every stage after judging (``rescore``, ``repair``, ``report``) can be rerun
without any judge call. Only the CLI (and the Python API) import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from judge import rundir
from judge.importers.writer import ImportStats, write_import
from judge.rundir import ClusterSection, EmbedderSection, RowsView, RubricSection, RunDir
from judge.schema import ScoreRow


def import_to_run(inputs: Iterable[Path], run_dir: Path, fmt: str | None = None) -> ImportStats:
    """Stream ``inputs`` into ``trajectories.jsonl`` and ``rejects.jsonl`` of ``run_dir``.

    Trajectory ids are unique within the import (a repeated id gets ``~2``, ``~3``...; see iter_records).
    The run directory itself is never read as input, even when it lies inside an input folder.
    """
    run = RunDir(run_dir)
    run.path.mkdir(parents=True, exist_ok=True)
    return write_import(inputs, run.file(rundir.TRAJECTORIES), run.file(rundir.REJECTS), fmt=fmt, exclude=[run.path])


def score_run(run_dir: Path, rubric_path: Path | None = None, cluster_options: dict[str, Any] | None = None, *,
              tables: bool = True) -> RowsView[ScoreRow]:
    """Cluster the stored verdicts and score every trajectory; writes clusters.jsonl and scores.jsonl, then their
    Parquet copies and the verdicts' (:func:`judge.tables.write_tables`; not with ``tables=False``: a shard of a
    run, whose tables are written once its shards are merged). Returns a view of scores.jsonl.

    Streams: one trajectory and its verdicts in memory at a time. Human decisions (overrides.jsonl, small: read
    whole) are applied to each score row (:func:`judge.review.score_reviewed`). Makes no judge call: this is also
    ``judge rescore``.
    """
    from judge.cluster import ClusterConfig, cluster_verdicts
    from judge.embed import make_embedder
    from judge.gate import release_checks
    from judge.review import score_reviewed
    from judge.scoring import load_rubric
    from judge.tables import write_tables

    run = RunDir(run_dir)
    manifest = run.manifest()
    rubric = load_rubric(rubric_path)
    config = ClusterConfig.from_options(cluster_options or manifest.cluster_options())
    embedder = make_embedder(config.embedder, run_dir=run.path)
    overrides = run.overrides_by_trajectory()
    with (run.verdicts_by_trajectory() as verdicts, run.writer(rundir.CLUSTERS) as clusters_out,
          run.writer(rundir.SCORES) as scores_out):
        for trajectory in run.trajectories():
            passes = verdicts.get(trajectory.id, [])
            panel_size = manifest.panel_size(len({v.pass_key for v in passes}))
            clusters = cluster_verdicts(trajectory.id, passes, panel_size=panel_size, config=config, embedder=embedder)
            for cluster in clusters:
                clusters_out.write(cluster)
            failed_checks = release_checks(trajectory)
            scores_out.write(score_reviewed(trajectory, passes, clusters, rubric, panel_size=panel_size,
                                            failed_checks=failed_checks, overrides=overrides.get(trajectory.id, ())))
    manifest.rubric = RubricSection.model_validate(rubric.describe())
    manifest.cluster = ClusterSection.model_validate(config.describe())
    manifest.embedder = EmbedderSection.model_validate(embedder.describe())
    run.write_manifest(manifest)
    if tables:
        write_tables(run.path)
    return run.view(rundir.SCORES, ScoreRow, scores_out.count)


def finish_run(run_dir: Path) -> dict[str, Path]:
    """After scoring: repair routes (offline, no teacher call), then summary and reports.

    Returns the paths of what it wrote, by name. Both stages read the run directory only, so this is
    also what ``judge rescore`` runs after recomputing scores.
    """
    from judge.repair import route_run
    from judge.report import build_report

    route_run(run_dir)
    written = {"repairs": Path(run_dir) / rundir.REPAIRS}
    written.update(build_report(run_dir))
    return written
