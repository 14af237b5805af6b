"""The Python API, ``import judge`` (documented in docs/python-api.md).

``judge score`` and :func:`score` are one code path: the CLI command parses its flags, calls
:func:`score_async` and prints what it returns. So are ``judge rescore`` and :func:`rescore`. The stages
themselves are :mod:`judge.pipeline`'s and :mod:`judge.panel`'s; a run is read through
:class:`judge.rundir.RunDir`, which :class:`Run` extends with pandas DataFrames (:mod:`judge.frames`).

>>> import judge                                                     # doctest: +SKIP
>>> run = judge.score(["examples/batch"], out="runs/example")        # doctest: +SKIP
>>> run.scores_df().groupby("source_format").score.mean()            # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from judge import rundir
from judge.rundir import RunDir

if TYPE_CHECKING:
    import pandas as pd

    from judge.engine import Engine
    from judge.importers.writer import ImportSelection, ImportStats
    from judge.model import Trajectory
    from judge.panel import PanelConfig, PanelResult
    from judge.schema import Reject, ScoreRow

T = TypeVar("T")
PathLike = str | Path


class SetupError(ValueError):
    """Nothing was judged because of the arguments: a missing input, a bad judge spec, config, rubric or
    embedder, a missing API key, an ``out`` that is a file. The message names what to fix; ``argument`` names
    the argument when one alone is at fault (``"out"``, ``"inputs"``), else None."""

    def __init__(self, message: str, argument: str | None = None):
        super().__init__(message)
        self.argument = argument


class NothingImported(RuntimeError):
    """No input record could be imported (each one is in the run's ``rejects.jsonl``, with its reason)."""

    def __init__(self, stats: ImportStats, rejects_path: Path):
        self.stats = stats
        self.rejects_path = rejects_path
        super().__init__(f"nothing could be imported: {stats.read} record(s) read, {stats.rejected} rejected "
                         f"(see {rejects_path})")


@dataclass
class Invocation:
    """What the call that returned a :class:`Run` did (``Run.invocation``; None for :func:`load_run`)."""

    scores: Sequence[ScoreRow]  # a view of scores.jsonl: each iteration reads the file
    written: dict[str, Path] = field(default_factory=dict)  # file name -> path, of the reports and routes
    imported: ImportStats | None = None  # None for rescore (no import)
    panel: PanelResult | None = None  # None for rescore (no judge call)


class Run(RunDir):
    """A run directory: :class:`~judge.rundir.RunDir`'s typed rows plus pandas DataFrames.

    Every reader of RunDir is here (``trajectories()``, ``verdicts()``, ``clusters()``, ``scores()``,
    ``repairs()``, ``rejects()``, ``overrides()``, their ``*_by_trajectory()`` forms, ``manifest()``, ``attempts()``): the
    objects the CLI and the report use. The ``*_df()`` methods read the same rows into frames whose columns
    are listed in docs/python-api.md (and declared in :mod:`judge.frames`).
    """

    def __init__(self, path: PathLike, invocation: Invocation | None = None):
        super().__init__(path)
        self.invocation = invocation

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    def scores_df(self) -> pd.DataFrame:
        """One row per trajectory: its score (``Int64``, ``<NA>`` when unscored), release, reason, counts of
        majority issues, and a few facts of the trajectory (query, format, recorded outcome, turns)."""
        from judge.frames import scores_frame

        return scores_frame(self.scores(), self.trajectories(missing_ok=True))

    def issues_df(self) -> pd.DataFrame:
        """One row per issue reported by one pass, with the cluster it joined and whether that cluster is a
        majority issue (``df[df.majority]`` are the issues that count)."""
        from judge.frames import issues_frame

        return issues_frame(self.verdicts(), self.clusters(missing_ok=True))

    def verdicts_df(self) -> pd.DataFrame:
        """One row per (trajectory, pass), unscored passes included with their reason; tokens and cost."""
        from judge.frames import verdicts_frame

        return verdicts_frame(self.verdicts())

    def clusters_df(self) -> pd.DataFrame:
        """One row per cluster of issues (one defect as several passes described it)."""
        from judge.frames import clusters_frame

        return clusters_frame(self.clusters())

    def messages_df(self) -> pd.DataFrame:
        """One row per message of every trajectory (role, turn, tool, exit code, error flag), with the issue flags
        of its turn: the majority issues that count and the environment ledger (``scores.jsonl``)."""
        from judge.frames import messages_frame

        return messages_frame(self.trajectories(), self.scores(missing_ok=True))


class Runs:
    """Several run directories read as one: each ``*_df()`` is the frames of every run concatenated, with a
    ``run`` column first (the run's path as given), as inspect_ai's ``samples_df(logs)`` reads many logs.
    ``runs[i]`` and iteration give the :class:`Run` objects."""

    def __init__(self, runs: Sequence[Run]):
        """``runs``: each once (a run directory named twice raises ValueError)."""
        self.runs = list(runs)
        resolved = [run.path.resolve() for run in self.runs]
        if len(set(resolved)) != len(resolved):
            repeated = sorted({str(p) for p in resolved if resolved.count(p) > 1})
            raise ValueError(f"a run is named more than once: {', '.join(repeated)}")

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, index: int) -> Run:
        return self.runs[index]

    def __repr__(self) -> str:
        return f"Runs({[str(run.path) for run in self.runs]!r})"

    def _frames(self, method: str) -> pd.DataFrame:
        from judge.frames import FRAMES, concat_runs

        # the run column: each run's path as given (unique: checked when the Runs was made)
        return concat_runs([(str(run.path), getattr(run, method)()) for run in self.runs], FRAMES[method])

    def scores_df(self) -> pd.DataFrame:
        """:meth:`Run.scores_df` of every run, with ``run``."""
        return self._frames("scores_df")

    def issues_df(self) -> pd.DataFrame:
        """:meth:`Run.issues_df` of every run, with ``run``."""
        return self._frames("issues_df")

    def verdicts_df(self) -> pd.DataFrame:
        """:meth:`Run.verdicts_df` of every run, with ``run``."""
        return self._frames("verdicts_df")

    def clusters_df(self) -> pd.DataFrame:
        """:meth:`Run.clusters_df` of every run, with ``run``."""
        return self._frames("clusters_df")

    def messages_df(self) -> pd.DataFrame:
        """:meth:`Run.messages_df` of every run, with ``run``."""
        return self._frames("messages_df")


def load_runs(paths: Iterable[PathLike]) -> Runs:
    """Open several run directories (:func:`load_run` each; the same errors); their frames concatenate with a
    ``run`` column. A path given twice raises ValueError."""
    return Runs([load_run(path) for path in paths])


def load_run(path: PathLike) -> Run:
    """Open an existing run directory (written by ``judge score`` or :func:`score`).

    Raises FileNotFoundError naming the path when it is not a run directory (no ``trajectories.jsonl``).
    Reading makes no change to the run: no lock, no store created.
    """
    run = Run(path)
    if not run.path.is_dir():
        raise FileNotFoundError(f"{run.path}: no such run directory")
    if not run.has(rundir.TRAJECTORIES):
        raise FileNotFoundError(f"{run.path} is not a run directory: it has no {rundir.TRAJECTORIES}")
    return run


# --- judge score --------------------------------------------------------------------------------------


def score(
    inputs: Iterable[PathLike] | PathLike,
    out: PathLike,
    *,
    judges: Iterable[str] | None = None,
    passes: int | None = None,
    config: PathLike | PanelConfig | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    timeout: float | None = None,
    max_cost: float | None = None,
    temperature: float | str | None = None,
    format: str | None = None,
    rubric: PathLike | None = None,
    embedder: str | None = None,
    preflight: bool = True,
    report: bool = True,
    progress: bool = False,
    batch: bool | None = None,
    no_shared_cache: bool | None = None,
    cache_dir: PathLike | None = None,
    engine: str | Engine = "local",
    address: str | None = None,
    reset_store: bool | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> Run:
    """Judge, score and report on a batch of trajectories, writing the run directory ``out``: ``judge score``.

    The keyword arguments are the command's flags (``timeout`` is ``--timeout``, ``max_cost`` is
    ``--max-cost``...); ``config`` is a panel config file, or a :class:`judge.panel.PanelConfig`, that they
    override. Without ``judges`` the offline rules judge runs. A run directory that exists is resumed: calls
    already answered are not paid again. ``report=False`` stops after the scores (no repair routes, summary
    or report files). ``progress=True`` shows the CLI's progress bar. ``batch=True`` sends LLM passes through
    the providers' batch APIs (``--batch``); answers are shared across runs through the user's cache unless
    ``no_shared_cache=True`` (``cache_dir``: another folder for it). ``engine="ray"`` runs the stages as Ray tasks
    per shard of trajectories (``--engine ray``; ``address``: ``auto``, ``ray://HOST:10001``, or None for a local
    Ray instance; docs/ray.md), leaving the same run directory as the default ``"local"``. ``reset_store=True``
    (``--reset-store``) takes a store.sqlite that run.json's spend was not recorded with, which otherwise raises
    :class:`judge.runlock.ForeignStore`. ``limit`` judges only the first N imported trajectories, ``sample`` a random
    sample of N drawn with ``seed`` (``--limit``, ``--sample``, ``--seed``); run.json records the selection, and a
    run directory keeps the one it started with.

    Returns the :class:`Run`; ``run.invocation`` says what this call did (import counts, panel totals). A pass
    that failed is unscored in the run with its reason, not an exception. Raises :class:`SetupError` when
    nothing could be judged because of the arguments, :class:`NothingImported`, or
    :class:`judge.panel.PreflightFailed` when a judge does not answer its preflight request.

    Works where an event loop is already running (Jupyter): the judging then runs on a helper thread. From
    async code, await :func:`score_async`.
    """
    return _run_sync(score_async(
        inputs, out, judges=judges, passes=passes, config=config, base_url=base_url, concurrency=concurrency,
        rpm=rpm, tpm=tpm, timeout=timeout, max_cost=max_cost, temperature=temperature, format=format,
        rubric=rubric, embedder=embedder, preflight=preflight, report=report, progress=progress, batch=batch,
        no_shared_cache=no_shared_cache, cache_dir=cache_dir, engine=engine, address=address, reset_store=reset_store,
        limit=limit, sample=sample, seed=seed))


async def score_async(
    inputs: Iterable[PathLike] | PathLike,
    out: PathLike,
    *,
    judges: Iterable[str] | None = None,
    passes: int | None = None,
    config: PathLike | PanelConfig | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    rpm: float | None = None,
    tpm: float | None = None,
    timeout: float | None = None,
    max_cost: float | None = None,
    temperature: float | str | None = None,
    format: str | None = None,
    rubric: PathLike | None = None,
    embedder: str | None = None,
    preflight: bool = True,
    report: bool = True,
    progress: bool = False,
    batch: bool | None = None,
    no_shared_cache: bool | None = None,
    cache_dir: PathLike | None = None,
    engine: str | Engine = "local",
    address: str | None = None,
    reset_store: bool | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    on_imported: Callable[[ImportStats], None] | None = None,
    on_judged: Callable[[PanelResult], None] | None = None,
) -> Run:
    """:func:`score` for async code; also what ``judge score`` runs.

    ``on_imported`` and ``on_judged`` are called as each stage ends (the CLI prints its lines there, so a
    long batch shows its import counts before the judging starts).
    """
    from judge.engine import EngineUnavailable, StageOptions, make_engine
    from judge.providers.errors import ProviderError
    from judge.runcalls import check_store
    from judge.runlock import run_lock
    from judge.store import RunStore

    started_at, started = datetime.now(UTC), time.monotonic()
    paths = [Path(inputs)] if isinstance(inputs, (str, Path)) else [Path(p) for p in inputs]
    out = Path(out)
    rubric_path = Path(rubric) if rubric is not None else None
    specs = [judges] if isinstance(judges, str) else list(judges or [])
    settings = panel_settings(config, judges=specs, passes=passes, base_url=base_url, concurrency=concurrency,
                         rpm=rpm, tpm=tpm, timeout_s=timeout, max_cost_usd=max_cost, temperature=temperature,
                         batch=batch, no_shared_cache=no_shared_cache, cache_dir=str(cache_dir) if cache_dir else None)
    _check_before_judging(paths, out, format, rubric_path, embedder)
    selection = _selection(limit, sample, seed)
    try:
        runner = make_engine(engine, address)
        runner.check(settings)
        if selection is not None and runner.name != "local":
            raise ValueError("--limit and --sample run with --engine local (a Ray import reads its parts apart)")
    except (ValueError, EngineUnavailable) as error:
        raise SetupError(str(error)) from error

    def imported(stats: ImportStats) -> None:
        if on_imported is not None:
            on_imported(stats)
        if stats.imported == 0:
            raise NothingImported(stats, out / rundir.REJECTS)

    with run_lock(out, "judge score"), runner:
        with RunStore.for_run(out) as store:  # before the import: a store that forgot the run's spend stops here
            try:
                check_store(store, reset=bool(reset_store))
            except ValueError as error:  # a run.json that cannot be read
                raise SetupError(str(error)) from error
        _keep_selection(out, selection)
        # A panel that makes no call is judged while the import streams past (each record parsed once); its
        # import counts are known, and shown, when that pass ends. Otherwise the import comes first.
        imports = runner.import_stream(paths, out, format, settings, selection)
        if imports is None:
            stats = runner.import_inputs(paths, out, format, selection)
            imported(stats)
        elif not imports.peek():
            imported(imports.stats)  # nothing to judge: raises NothingImported
        options = StageOptions(rubric_path=rubric_path, cluster_options={"embedder": embedder} if embedder else None,
                               route=report, report=report, progress=progress, preflight=preflight,
                               total=None if imports is not None else stats.imported)
        try:
            result = await runner.judge(out, settings, options)
        except (ValueError, FileNotFoundError, ProviderError) as error:  # a bad spec, a missing key or replay file
            raise SetupError(str(error)) from error
        if imports is not None:
            stats = imports.stats
            imported(stats)
        if on_judged is not None:
            on_judged(result)
        scores = await runner.finish(out, options)  # clusters, scores and (with a report) repair routes
        _record_timing(out, started_at, time.monotonic() - started, runner.describe())  # the report shows it
        written = {}
        if report:
            written = {"repairs": out / rundir.REPAIRS, **(await runner.report(out))}
    return Run(out, Invocation(scores=scores, written=written, imported=stats, panel=result))


def panel_settings(config: PathLike | PanelConfig | None, **flags: Any) -> PanelConfig:
    """The panel settings: ``config`` (a file, a :class:`~judge.panel.PanelConfig` or None), then the flags
    that are not None over it (``PanelConfig`` field names). Raises :class:`SetupError` naming the problem."""
    from judge.judges import resolve
    from judge.panel import PanelConfig

    try:
        if isinstance(config, PanelConfig):
            base = config
        else:
            base = PanelConfig.load(config) if config is not None else PanelConfig()
        settings = base.merged(**flags)
        for spec in settings.judges:
            resolve(spec)  # an unknown judge kind or provider stops here, before anything is imported
        return settings
    except ValueError as error:
        raise SetupError(str(error)) from error


def _check_before_judging(inputs: list[Path], out: Path, fmt: str | None, rubric: Path | None, embedder: str | None) -> None:
    """Every argument that can be checked without a judge call, so that a mistake costs nothing."""
    from judge.importers import FORMATS
    from judge.importers.reader import missing_inputs

    if not inputs:
        raise SetupError("no input given")
    missing = missing_inputs(inputs)
    if missing:
        raise SetupError(f"input not found: {', '.join(missing)}", "inputs")
    if out.exists() and not out.is_dir():
        raise SetupError(f"{out} is a file, not a run directory: give a new or existing directory", "out")
    if fmt is not None and fmt not in FORMATS:
        raise SetupError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    try:
        if rubric is not None:
            from judge.scoring import load_rubric

            load_rubric(rubric)
        if embedder:
            from judge.embed import check_embedder

            check_embedder(embedder)
    except (ValueError, ImportError, OSError) as error:
        raise SetupError(str(error)) from error


def _selection(limit: int | None, sample: int | None, seed: int) -> ImportSelection | None:
    """The ``--limit`` / ``--sample`` selection (None: every trajectory); a bad combination is a SetupError."""
    from judge.importers.writer import ImportSelection

    if limit is None and sample is None:
        return None
    try:
        return ImportSelection(limit=limit, sample=sample, seed=seed)
    except ValueError as error:
        raise SetupError(str(error)) from error


def _keep_selection(run_dir: Path, selection: ImportSelection | None) -> None:
    """Record the selection in run.json; refuse one that differs from the selection the run was judged with.

    A run directory holds one selection: resuming it with another (or with none where it had one, or the
    reverse) would mix verdicts of different trajectory sets in one report, so it is an error naming both."""
    wanted = selection.describe() if selection is not None else None
    run = RunDir(run_dir)
    if run.has(rundir.MANIFEST) or run.has(rundir.TRAJECTORIES):  # started before: its selection stands
        recorded = run.manifest().selection
        if recorded != wanted:
            def shown(value: dict[str, Any] | None) -> str:
                return " ".join(f"--{key} {n}" for key, n in value.items()) if value else "every trajectory"

            raise SetupError(f"{run_dir} was judged with {shown(recorded)}, this command asks for {shown(wanted)}: "
                             "a run keeps one selection. Give the same one, or another --out", "selection")
    if wanted is not None:  # a run of every trajectory writes no key (its run.json is as before)
        with run.update_manifest() as manifest:
            manifest.selection = wanted


def _record_timing(run_dir: Path, started_at: datetime, elapsed_s: float, engine: dict[str, Any] | None = None) -> None:
    """Write this invocation's timing into the manifest: ``started_at`` and ``finished_at`` (ISO 8601, UTC)
    and ``elapsed_s``, and the engine that ran its stages. ``finished_at`` is when judging, scoring and repair
    routing ended, just before the reports are written (so the report can show it). A resumed run records its
    own invocation."""
    from judge.rundir import EngineSection

    with RunDir(run_dir).update_manifest() as manifest:
        if engine is not None:
            manifest.engine = EngineSection.model_validate(engine)
        manifest.started_at = started_at.isoformat(timespec="milliseconds")
        manifest.finished_at = (started_at + timedelta(seconds=elapsed_s)).isoformat(timespec="milliseconds")
        manifest.elapsed_s = round(elapsed_s, 3)


# --- judge rescore ------------------------------------------------------------------------------------


def rescore(run: PathLike, *, rubric: PathLike | None = None, report: bool = True) -> Run:
    """Recompute clusters and scores from the stored verdicts (no judge call), then, with ``report``, the
    repair routes, summary and reports: ``judge rescore``. ``rubric`` is a rubric YAML (default: the
    bundled one). Raises FileNotFoundError when the run has no trajectories or verdicts."""
    from judge.pipeline import finish_run, score_run
    from judge.runlock import run_lock

    path = Path(run)
    for name in (rundir.TRAJECTORIES, rundir.VERDICTS):
        if not RunDir(path).has(name):
            raise FileNotFoundError(f"{path} has no {name}")
    with run_lock(path, "judge rescore"):
        scores = score_run(path, rubric_path=Path(rubric) if rubric is not None else None)
        written = (finish_run(path) or {}) if report else {}
    return Run(path, Invocation(scores=scores, written=written))


# --- import -------------------------------------------------------------------------------------------


@overload
def read_trajectories(inputs: Iterable[PathLike] | PathLike, format: str | None = None, *,
                      strict: Literal[True] = True) -> list[Trajectory]: ...


@overload
def read_trajectories(inputs: Iterable[PathLike] | PathLike, format: str | None = None, *,
                      strict: Literal[False]) -> tuple[list[Trajectory], list[Reject]]: ...


def read_trajectories(inputs: Iterable[PathLike] | PathLike, format: str | None = None, *,
                      strict: bool = True) -> list[Trajectory] | tuple[list[Trajectory], list[Reject]]:
    """The canonical trajectories of log files or folders (any supported format, detected per file unless
    ``format`` names one), in input order, without writing anything.

    ``strict=True`` raises :class:`judge.importers.TrajectoryImportError` (listing every reject, with file
    and line) when any record cannot be read; ``strict=False`` returns ``(trajectories, rejects)`` instead,
    as inspect_ai's ``samples_df(strict=False)`` returns its errors beside the frame.
    """
    from judge.importers import Skipped, TrajectoryImportError, iter_records
    from judge.model import Trajectory

    trajectories: list[Trajectory] = []
    rejects: list[Reject] = []
    for item in iter_records(inputs, fmt=format):
        if isinstance(item, Trajectory):
            trajectories.append(item)
        else:
            rejects.append(item)
    if not strict:
        return trajectories, rejects
    if any(not isinstance(r, Skipped) for r in rejects):  # a path skipped on purpose (notes.txt) is not bad input
        raise TrajectoryImportError(rejects)
    return trajectories


def import_(inputs: Iterable[PathLike] | PathLike, out: PathLike, format: str | None = None, *,
            rejects: PathLike | None = None) -> ImportStats:
    """Convert logs to canonical JSONL at ``out``, unreadable records to ``rejects`` (default
    ``NAME.rejects.jsonl`` beside it): the files ``judge import`` writes, by the same writer. Returns the
    counts (read, imported, rejected, per format)."""
    from judge.importers.writer import default_rejects_path, write_import

    out = Path(out)
    paths = [inputs] if isinstance(inputs, (str, Path)) else list(inputs)
    return write_import(paths, out, Path(rejects) if rejects is not None else default_rejects_path(out), fmt=format)


# --- helpers ------------------------------------------------------------------------------------------


def _run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to its end from sync code, also where this thread already runs an event loop
    (Jupyter): then on a helper thread with its own loop, this thread waiting for it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="judge-score") as pool:
        return pool.submit(asyncio.run, coroutine).result()
