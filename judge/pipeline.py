"""The main job, ``judge score``: import -> judge panel -> cluster -> score + release gate -> routes -> report.

This module only orchestrates: each stage reads the files of the stage before it through
:class:`judge.rundir.RunDir`, so every stage after judging (``rescore``, ``repair``, ``report``) can be rerun
without any judge call. Only the CLI (and the Python API) import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from judge import rundir
from judge.importers.writer import ImportSelection, ImportStats, ImportStream
from judge.model import Trajectory
from judge.rundir import ClusterSection, EmbedderSection, RowsView, RubricSection, RunDir
from judge.schema import ScoreRow, Verdict

if TYPE_CHECKING:
    from judge.report import ReportStream


def import_to_run(inputs: Iterable[Path], run_dir: Path, fmt: str | None = None,
                  selection: ImportSelection | None = None) -> ImportStats:
    """Stream ``inputs`` into ``trajectories.jsonl`` and ``rejects.jsonl`` of ``run_dir``.

    Trajectory ids are unique within the import (a repeated id gets ``~2``, ``~3``...; see iter_records).
    The run directory itself is never read as input, even when it lies inside an input folder. ``selection``
    keeps only some trajectories (``judge score --limit`` / ``--sample``).
    """
    return import_stream(inputs, run_dir, fmt, selection=selection).run()


def import_stream(inputs: Iterable[Path], run_dir: Path, fmt: str | None = None, *,
                  keep_lines: bool = False, selection: ImportSelection | None = None) -> ImportStream:
    """:func:`import_to_run` as a stream of the trajectories it writes (:class:`judge.importers.writer.ImportStream`)."""
    run = RunDir(run_dir)
    run.path.mkdir(parents=True, exist_ok=True)
    return ImportStream(inputs, run.file(rundir.TRAJECTORIES), run.file(rundir.REJECTS), fmt=fmt, exclude=[run.path],
                        keep_lines=keep_lines, selection=selection)


def score_run(run_dir: Path, rubric_path: Path | None = None, cluster_options: dict[str, Any] | None = None, *,
              tables: bool = True, route: bool = False) -> RowsView[ScoreRow]:
    """Cluster the stored verdicts and score every trajectory; writes clusters.jsonl and scores.jsonl, then their
    Parquet copies and the verdicts' (:func:`judge.tables.write_tables`; not with ``tables=False``: a shard of a
    run, whose tables are written once its shards are merged); with ``route``, the repair routes too. Returns a
    view of scores.jsonl.

    Streams: one trajectory and its verdicts in memory at a time (:class:`FinishStream`). Makes no judge call:
    this is also ``judge rescore``.
    """
    run = RunDir(run_dir)
    with run.verdicts_by_trajectory() as verdicts, FinishStream(run.path, rubric_path, cluster_options, route=route,
                                                                 tables=tables) as stream:
        for trajectory in run.trajectories():
            stream.add(trajectory, verdicts.get(trajectory.id, []))
    return stream.scores


class FinishStream:
    """The stages after judging, for one trajectory at a time, in input order, while it is in memory: cluster its
    passes, score it (rubric, release gate, human decisions from overrides.jsonl), and with ``route`` route its
    repair (offline: no teacher call).

    ``judge score`` feeds it each trajectory as soon as the panel has committed its passes, so the trajectory is
    parsed once for judging, scoring and routing; :func:`score_run` feeds it from the run's files (``judge
    rescore``, a shard of a Ray run). Use it as a context manager: clusters.jsonl, scores.jsonl (and the repair
    files) are written atomically when the block ends without an error, then run.json's rubric, cluster and
    embedder sections and (``tables``) the Parquet tables; :attr:`scores` is then a view of scores.jsonl.
    run.json is read at the first trajectory (the panel writes its planned passes before judging).

    With ``report``, each trajectory also goes to a :class:`judge.report.ReportStream` (:attr:`report`), which
    the caller finishes once the run's timing is in run.json (or discards); ``line_of`` gives a trajectory's
    canonical line when the caller has it (the report embeds it instead of serialising the trajectory again).
    """

    def __init__(self, run_dir: Path, rubric_path: Path | None = None, cluster_options: dict[str, Any] | None = None,
                 *, route: bool = False, tables: bool = True, report: bool = False,
                 line_of: Callable[[str], bytes | None] | None = None):
        self.run = RunDir(run_dir)
        self.rubric_path, self.cluster_options, self.route, self.tables = rubric_path, cluster_options, route, tables
        self.with_report, self.line_of = report, line_of
        self.report: ReportStream | None = None
        self._files: ExitStack | None = None
        self._scores: RowsView[ScoreRow] | None = None

    @property
    def scores(self) -> RowsView[ScoreRow]:
        """The scores.jsonl this stream wrote (once its block has ended)."""
        if self._scores is None:
            raise RuntimeError("the scores are written when the FinishStream block ends")
        return self._scores

    def __enter__(self) -> FinishStream:
        return self

    def _start(self) -> ExitStack:
        from judge.cluster import ClusterConfig, cluster_verdicts
        from judge.embed import make_embedder
        from judge.gate import release_checks
        from judge.repair.run import RepairOutputs, Router
        from judge.review import score_reviewed
        from judge.scoring import load_rubric

        # The functions add() calls for every trajectory, imported once (an import statement per call costs more).
        self._stages = (cluster_verdicts, release_checks, score_reviewed)

        self.manifest = self.run.manifest()
        self.rubric = load_rubric(self.rubric_path)
        self.config = ClusterConfig.from_options(self.cluster_options or self.manifest.cluster_options())
        self.embedder = make_embedder(self.config.embedder, run_dir=self.run.path)
        self.overrides = self.run.overrides_by_trajectory()
        with ExitStack() as files:
            self.clusters_out = files.enter_context(self.run.writer(rundir.CLUSTERS))
            self.scores_out = files.enter_context(self.run.writer(rundir.SCORES))
            self.router = files.enter_context(Router(self.run, RepairOutputs())) if self.route else None
            if self.with_report:
                from judge.report import ReportStream
                from judge.report.stream import Entry

                self._entry = Entry
                # The batch's size is not known yet when the import streams: auto's layout is settled on the way.
                self.report = ReportStream(self.run.path, trajectories=None, input_bytes=None)
            self._files = files.pop_all()
        return self._files

    def _discard_report(self) -> None:
        """After a failure: the run's earlier report stays as it was."""
        if self.report is not None:
            self.report.discard()
            self.report = None

    def add(self, trajectory: Trajectory, verdicts: list[Verdict]) -> ScoreRow:
        """Cluster, score and (``route``) route one judged trajectory; returns its score row."""
        if self._files is None:
            self._start()
        cluster_verdicts, release_checks, score_reviewed = self._stages
        panel_size = self.manifest.panel_size(len({v.pass_key for v in verdicts}))
        clusters = cluster_verdicts(trajectory.id, verdicts, panel_size=panel_size, config=self.config,
                                    embedder=self.embedder)
        for cluster in clusters:
            self.clusters_out.write(cluster)
        score = score_reviewed(trajectory, verdicts, clusters, self.rubric, panel_size=panel_size,
                               failed_checks=release_checks(trajectory), overrides=self.overrides.get(trajectory.id, ()))
        self.scores_out.write(score)
        repair = self.router.add_offline(trajectory, score, clusters) if self.router is not None else None
        # Taken even without a report: the import keeps each trajectory's line until it is taken.
        line = self.line_of(trajectory.id) if self.line_of is not None else None
        if self.report is not None:
            self.report.add(self._entry(trajectory.id, trajectory, scores=[score], clusters=clusters, verdicts=verdicts,
                                  repairs=[repair] if repair is not None else [], line=line))
        return score

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None and self._files is None:
            self._start()  # no trajectory: the files are still written, empty
        if self._files is None:
            return
        if kind is not None:
            self._discard_report()
        from judge.tables import write_tables

        try:
            self._files.__exit__(kind, error, trace)
            if kind is not None:
                return
            with self.run.update_manifest() as manifest:
                manifest.rubric = RubricSection.model_validate(self.rubric.describe())
                manifest.cluster = ClusterSection.model_validate(self.config.describe())
                manifest.embedder = EmbedderSection.model_validate(self.embedder.describe())
            if self.tables:
                write_tables(self.run.path)
        except BaseException:
            self._discard_report()
            raise
        self._scores = self.run.view(rundir.SCORES, ScoreRow, self.scores_out.count)


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
