"""Where the stages of ``judge score`` run: in this process (``local``, the default) or on a Ray cluster (``ray``).

An :class:`Engine` carries out the stages of :mod:`judge.pipeline` and :mod:`judge.panel` on a run directory;
it owns no stage logic. :class:`LocalEngine` calls them in-process, in one pass per trajectory. ``RayEngine``
(:mod:`judge.engine.ray_engine`, the ``ray`` extra) runs the same functions in Ray tasks, one per shard of
trajectories, and merges their files into the run directory in input order, so both engines leave the same
run (docs/ray.md). What is batch-wide - the panel's manifest and preflight, the Parquet tables, the summary and
the report - runs once, on the driver.

>>> from judge.engine import make_engine                    # doctest: +SKIP
>>> with make_engine("ray", "auto") as engine: ...          # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from judge.importers.writer import ImportSelection, ImportStats, ImportStream
    from judge.panel import PanelConfig, PanelResult
    from judge.report import ReportStream
    from judge.rundir import RowsView
    from judge.schema import ScoreRow

ENGINES = ("local", "ray")


class EngineUnavailable(RuntimeError):
    """The engine cannot be used here (Ray is not installed, or its cluster cannot be reached)."""


@dataclass(frozen=True)
class StageOptions:
    """What the stages after import need besides the panel settings: ``judge score``'s options."""

    rubric_path: Path | None = None
    cluster_options: dict[str, Any] | None = None
    route: bool = True  # repair routes after the scores (``judge score`` without ``report=False``)
    report: bool = False  # the report, finished by Engine.report once run.json has the run's timing
    progress: bool = False
    preflight: bool = False
    total: int | None = None  # trajectories imported (sizes the progress display)


class Engine(Protocol):
    """Runs the stages of ``judge score`` on a run directory (use it as a context manager)."""

    name: str

    def __enter__(self) -> Engine: ...

    def __exit__(self, *exc: object) -> None: ...

    def check(self, settings: PanelConfig) -> None:
        """Raise ValueError naming a panel setting this engine cannot run (before anything is imported)."""
        ...

    def import_inputs(self, inputs: list[Path], run_dir: Path, fmt: str | None,
                      selection: ImportSelection | None = None) -> ImportStats:
        """Write trajectories.jsonl and rejects.jsonl of ``run_dir`` from the inputs (only the ``selection``'s
        trajectories, when given)."""
        ...

    def import_stream(self, inputs: list[Path], run_dir: Path, fmt: str | None,
                      settings: PanelConfig, selection: ImportSelection | None = None) -> ImportStream | None:
        """Instead of :meth:`import_inputs`, when this engine can: the import as a stream that the next
        :meth:`judge` reads (each trajectory judged as it is imported); None: import first."""
        ...

    async def judge(self, run_dir: Path, settings: PanelConfig, options: StageOptions) -> PanelResult:
        """Judge every trajectory with the panel: verdicts.jsonl."""
        ...

    async def finish(self, run_dir: Path, options: StageOptions) -> RowsView[ScoreRow]:
        """Clusters and scores (and repair routes with ``options.route``) of the judged run."""
        ...

    async def report(self, run_dir: Path) -> dict[str, Path]:
        """The report files of the finished run (summary.json, report.md, report.html ...), by name."""
        ...

    def describe(self) -> dict[str, Any]:
        """run.json's ``engine`` section: which engine ran the stages, and where."""
        ...


class LocalEngine:
    """The stages in this process. Each trajectory is scored and routed as soon as the panel has committed its
    passes, while it is in memory (:class:`judge.pipeline.FinishStream`): one parse of trajectories.jsonl serves
    judging, scoring and routing, and :meth:`finish` returns what that pass wrote."""

    name = "local"

    def __init__(self) -> None:
        self._finished: dict[Path, RowsView[ScoreRow]] = {}  # run dir -> scores written while judging
        self._imports: dict[Path, ImportStream] = {}  # run dir -> the import its next judge() reads
        self._reports: dict[Path, ReportStream] = {}  # run dir -> its report, written while judging, to finish

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        for report in self._reports.values():  # a run that stopped before its report: its earlier report stays
            report.discard()
        for imports in self._imports.values():  # an import no judge() took (nothing imported, or a failure first)
            imports.close()
        self._reports.clear()
        self._imports.clear()
        self._finished.clear()

    def check(self, settings: PanelConfig) -> None:
        return None

    def import_inputs(self, inputs: list[Path], run_dir: Path, fmt: str | None,
                      selection: ImportSelection | None = None) -> ImportStats:
        from judge.pipeline import import_to_run

        return import_to_run(inputs, run_dir, fmt=fmt, selection=selection)

    def import_stream(self, inputs: list[Path], run_dir: Path, fmt: str | None,
                      settings: PanelConfig, selection: ImportSelection | None = None) -> ImportStream | None:
        """A panel that makes no call judges as fast as it reads: such a run imports, judges, scores and routes
        each trajectory in one pass, so each input record is parsed once (a panel with LLM judges imports
        first: its progress counts against the imported total, and its import counts show before judging)."""
        from judge.panel import calls_providers
        from judge.pipeline import import_stream

        if calls_providers(settings):
            return None
        imports = self._imports[Path(run_dir).resolve()] = import_stream(inputs, run_dir, fmt=fmt, keep_lines=True,
                                                                       selection=selection)
        return imports

    async def judge(self, run_dir: Path, settings: PanelConfig, options: StageOptions) -> PanelResult:
        from judge.collect import fewer_collections
        from judge.panel import run_panel
        from judge.pipeline import FinishStream
        from judge.rundir import RunDir

        key = Path(run_dir).resolve()  # the run's key in this engine's pending work
        imports = self._imports.pop(key, None)
        trajectories = imports if imports is not None else RunDir(run_dir).trajectories()
        try:
            line_of = imports.line_of if imports is not None else None
            with fewer_collections(), FinishStream(run_dir, options.rubric_path, options.cluster_options,
                                                   route=options.route, report=options.report, line_of=line_of) as stream:
                result = await run_panel(trajectories, settings, run_dir, progress=options.progress,
                                         preflight=options.preflight, total=options.total, on_trajectory=stream.add)
        finally:
            if imports is not None:
                imports.close()  # a failed pass leaves no half-written import
        self._finished[key] = stream.scores
        if stream.report is not None:
            self._reports[key] = stream.report
        return result

    async def finish(self, run_dir: Path, options: StageOptions) -> RowsView[ScoreRow]:
        import asyncio

        scores = self._finished.pop(Path(run_dir).resolve(), None)
        if scores is not None:  # scored and routed while judging
            return scores
        # Sync stages that may run event loops of their own (repair routing does): on a worker thread they
        # neither block the caller's loop nor nest in it.
        return await asyncio.to_thread(finish_stages, run_dir, options)

    async def report(self, run_dir: Path) -> dict[str, Path]:
        import asyncio

        pending = self._reports.pop(Path(run_dir).resolve(), None)
        if pending is not None:  # fed while judging: only the summary and the moves are left
            return await asyncio.to_thread(pending.finish)
        from judge.report import build_report

        return await asyncio.to_thread(build_report, run_dir)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}


def finish_stages(run_dir: Path, options: StageOptions, *, tables: bool = True) -> RowsView[ScoreRow]:
    """Cluster and score a judged run, then route its repairs (``options.route``): what every engine runs after
    judging, on the whole run or on one shard (``tables=False``: the Parquet tables wait for the merge)."""
    from judge.pipeline import score_run

    return score_run(run_dir, options.rubric_path, options.cluster_options, tables=tables, route=options.route)


def make_engine(name: str | Engine = "local", address: str | None = None, **options: Any) -> Engine:
    """The engine called ``name`` (or ``name`` itself when it is an engine already). ``address`` is the Ray
    cluster's (``ray://HOST:10001``, ``auto``; None: a local Ray instance started for the run); ``options`` go to
    the engine's constructor. Raises ValueError for an unknown name or an address without ``ray``, and
    :class:`EngineUnavailable` when Ray is not installed (or, on entering the engine, cannot be reached)."""
    if not isinstance(name, str):
        return name
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    if name == "local":
        if address is not None:
            raise ValueError("--address names a Ray cluster: it needs --engine ray")
        return LocalEngine()
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        raise EngineUnavailable("--engine ray needs Ray: pip install 'trajudge[ray]'")
    from judge.engine.ray_engine import RayEngine

    return RayEngine(address, **options)
