"""``judge score --engine ray``: the stages of a run as Ray tasks, one per shard, merged into one run directory.

- **Import**: the data files of the inputs (the walk of :func:`judge.importers.reader.iter_data_files`) are read in
  parts of consecutive files - a large JSON Lines file in spans of lines - one Ray task each, by
  :func:`judge.importers.reader.read_file` (:func:`~judge.importers.reader.read_span`) into the lines
  :class:`judge.importers.writer.ImportSink` writes; the driver appends the parts in input order and makes the ids
  unique as a local import does (:class:`judge.importers.reader.UniqueIds`), re-writing only a renamed record.
- **Judge, cluster and score, route**: ``trajectories.jsonl`` is cut into shards of consecutive trajectories (all
  passes of a trajectory stay in its shard: clustering needs them together). One task per shard runs the local
  stages on a scratch copy of its shard - :func:`judge.panel.run_panel` with the run's calls
  (:mod:`judge.engine.ledger`: store, budget and rate limits in one actor), then
  :func:`judge.engine.finish_stages` - and returns the files it wrote; the driver appends them in shard order.
- **Once, on the driver**: the panel's manifest and preflight (before the shards), the run's budget, the Parquet
  tables, the summary and the report (after the merge).

Workers get their shard and return their files through Ray's object store: they need no shared filesystem. The
ledger actor and the import tasks run on the *home node*, the node of the driver (a local instance, or
``--address auto`` on a cluster node) - with Ray Client (``ray://``) the cluster's head node, which must then see
the inputs and the run directory at the same paths (docs/ray.md). At most a few shards per CPU are in flight, so
the driver's memory stays flat.
"""

from __future__ import annotations

import asyncio
import io
import ipaddress
import json
import os
import sys
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from judge import rundir
from judge.engine import EngineUnavailable, StageOptions, finish_stages
from judge.importers.reader import LineSpan
from judge.importers.writer import ImportSelection, ImportSink, ImportStats
from judge.panel import PanelConfig, PanelResult, calls_providers
from judge.pricing import add_costs
from judge.rundir import RowsView, RunDir, RunManifest
from judge.schema import Reject, ScoreRow, Verdict
from judge.sharedcache import SharedCache, default_cache_dir

RUNTIME_ENV_VARIABLE = "TRAJUDGE_RAY_RUNTIME_ENV"  # JSON: the runtime_env of a cluster's workers (docs/ray.md)
# Ray's switch (read when it is imported) between the machine's address and 127.0.0.1 for a local instance.
_LOOPBACK_VARIABLE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
PART_BYTES = 8 << 20  # input bytes per import task (consecutive files; one large file is one part)
PART_FILES = 256
MIN_SHARD, MAX_SHARD = 16, 2000  # trajectories per shard
SHARDS_PER_CPU = 4  # shards cut per CPU of the cluster (smaller shards balance better, cost more overhead)
IN_FLIGHT_PER_CPU = 2  # tasks submitted ahead of the oldest not yet merged
SCORED_FILES = (rundir.CLUSTERS, rundir.SCORES)
ROUTED_FILES = (rundir.REPAIRS, rundir.TICKETS, rundir.EDITED, rundir.EDITS)

T = TypeVar("T")
Source = Path | tuple[Path, LineSpan]  # what an import task reads: a data file, or a span of lines of a large one
_SECTIONS: dict[str, type[rundir.ClusterSection | rundir.RubricSection | rundir.EmbedderSection]] = {
    "rubric": rundir.RubricSection, "cluster": rundir.ClusterSection, "embedder": rundir.EmbedderSection}


class ShardFailed(RuntimeError):
    """A Ray task of the run raised. The merged files are not written (each is renamed into place only when every
    shard is in); what was paid for is in the run store, so running the command again resumes."""


@dataclass
class ImportPart:
    """What one import task read: trajectory lines (with their ids), reject lines, counts."""

    trajectories: bytes
    ids: list[str]
    rejects: bytes
    stats: ImportStats


@dataclass
class ShardResult:
    """What one shard's task wrote (file name -> its bytes) and what its calls did."""

    files: dict[str, bytes]
    calls: int = 0
    retries: int = 0
    cost_usd: float | None = None  # paid by this shard's attempts (failed ones included)
    shared_hits: int = 0  # answers taken from the cache shared across runs
    manifest: dict[str, Any] = field(default_factory=dict)  # the shard's run.json: scoring's sections
    stopped_by: list[str] = field(default_factory=list)  # servers its calls stopped calling (PanelResult.stopped_by)


class RayEngine:
    """``--engine ray``; see the module docstring. ``address``: None starts a local Ray instance for the run
    (``num_cpus`` of it), ``auto`` joins the cluster this machine belongs to, ``ray://HOST:10001`` connects
    through Ray Client. ``shard_size`` overrides the trajectories per shard, ``part_bytes`` the input bytes per
    import task."""

    name = "ray"

    def __init__(self, address: str | None = None, *, shard_size: int | None = None, num_cpus: int | None = None,
                 part_bytes: int = PART_BYTES):
        self.address = address
        self.shard_size = shard_size
        self.part_bytes = part_bytes
        self.num_cpus = num_cpus
        self.shards = 0
        self.import_parts = 0
        self._started = False  # this engine started (or connected) Ray, so it shuts it down
        self._home: str | None = None
        self._ledger: Any = None
        self._sections: dict[str, Any] = {}  # scoring's sections of run.json, as the first shard wrote them
        self._scores = 0

    # --- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> RayEngine:
        # A local instance started for the run listens on 127.0.0.1 only, and a cluster named by a loopback address
        # is reached there (else Ray swaps 127.0.0.1 for the machine's address): Ray reads this when it is first
        # imported, and the processes it starts inherit it.
        loopback = (_on_loopback(self.address) and "ray" not in sys.modules and _LOOPBACK_VARIABLE not in os.environ)
        if loopback:
            os.environ[_LOOPBACK_VARIABLE] = "0"
        try:
            ray = _import_ray()
            if not ray.is_initialized():
                try:
                    ray.init(**self._init_options())
                except Exception as error:  # an unreachable address, a version mismatch: say where
                    raise EngineUnavailable(f"cannot start or reach Ray ({self.address or 'a local instance'}): "
                                            f"{type(error).__name__}: {error}") from error
                self._started = True
        finally:
            if loopback:
                del os.environ[_LOOPBACK_VARIABLE]
        self._home = ray.get_runtime_context().get_node_id()
        return self

    def __exit__(self, *exc: object) -> None:
        import ray

        if self._ledger is not None:
            from judge.engine.ledger import stop_ledger

            stop_ledger(self._ledger)
            self._ledger = None
        if self._started:
            ray.shutdown()
            self._started = False

    def _init_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": True}
        runtime_env = os.environ.get(RUNTIME_ENV_VARIABLE)
        if self.address is None:
            options["num_cpus"] = self.num_cpus
            # The workers import this very package (a checkout on PYTHONPATH included), not another install.
            package_root = str(Path(__file__).resolve().parents[2])
            paths = [package_root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
            options["runtime_env"] = {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(paths))}}
        else:
            options["address"] = self.address
            if runtime_env:
                try:
                    options["runtime_env"] = json.loads(runtime_env)
                except json.JSONDecodeError as error:
                    raise EngineUnavailable(f"${RUNTIME_ENV_VARIABLE} is not JSON: {error}") from None
        return options

    def check(self, settings: PanelConfig) -> None:
        if settings.batch:
            raise ValueError("--batch sends one provider batch from one process: it does not combine with --engine ray "
                             "(run it with the local engine)")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "address": self.address or "local", "shards": self.shards,
                "import_parts": self.import_parts, "cpus": _cluster_resources().get("CPU")}

    def _cpus(self) -> int:
        return max(1, int(_cluster_resources().get("CPU", 1)))

    # --- import ----------------------------------------------------------------------------------

    async def report(self, run_dir: Path) -> dict[str, Path]:
        """On the driver, from the merged run directory."""
        import asyncio

        from judge.report import build_report

        return await asyncio.to_thread(build_report, run_dir)

    def import_stream(self, inputs: list[Path], run_dir: Path, fmt: str | None,
                      settings: PanelConfig, selection: ImportSelection | None = None) -> None:
        """Shards import before they judge: no streamed import."""
        return None

    def import_inputs(self, inputs: list[Path], run_dir: Path, fmt: str | None,
                      selection: ImportSelection | None = None) -> ImportStats:
        """Import in parts (consecutive data files), merged in input order; the same files as a local import.
        A selection (``--limit``, ``--sample``) needs the whole input in one place: the local engine's."""
        if selection is not None:
            raise ValueError("--limit and --sample run with --engine local (the parts of a Ray import are read apart)")
        import ray

        from judge.importers.reader import UniqueIds, iter_data_files, with_new_id
        from judge.model import Trajectory

        run = RunDir(run_dir)
        run.path.mkdir(parents=True, exist_ok=True)
        out_path, rejects_path = run.file(rundir.TRAJECTORIES), run.file(rundir.REJECTS)
        task = ray.remote(import_part).options(num_cpus=1, scheduling_strategy=self._on_home())
        stats, ids = ImportStats(), UniqueIds()
        walked = iter_data_files(inputs, exclude=[out_path, rejects_path, run.path])

        def submit(part: list[Source] | Reject) -> Any:
            return part if isinstance(part, Reject) else task.remote(part, fmt)

        self.import_parts = 0
        with run.writer(rundir.TRAJECTORIES) as out, run.writer(rundir.REJECTS) as rejects:
            sink = ImportSink(io.BytesIO(), _Lines(rejects), stats)  # the walk's own rejects and skipped paths
            parts = _import_parts(walked, self.part_bytes, fmt)
            for item in _in_order((submit(part) for part in parts), self._window()):
                if isinstance(item, Reject):
                    sink.add(item)
                    continue
                self.import_parts += 1
                _add_stats(stats, item.stats)
                rejects.write_text(item.rejects)
                # The part's lines go out as one block (they end with a newline), with any repeated id renamed.
                lines = item.trajectories.split(b"\n")
                renamed = False
                for index, original in enumerate(item.ids):
                    new_id = ids.claim(original)
                    if new_id != original:
                        lines[index] = with_new_id(Trajectory.model_validate_json(lines[index]), new_id).to_json_bytes()
                        renamed = True
                out.write_text(b"\n".join(lines) if renamed else item.trajectories)
        stats.renamed = ids.renamed
        return stats

    def _on_home(self) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return NodeAffinitySchedulingStrategy(node_id=self._home, soft=False) if self._home else "DEFAULT"

    def _window(self) -> int:
        return max(2, IN_FLIGHT_PER_CPU * self._cpus())

    # --- judge, score, route ---------------------------------------------------------------------

    async def judge(self, run_dir: Path, settings: PanelConfig, options: StageOptions) -> PanelResult:
        """The panel's set-up and preflight here, then every stage after import in shard tasks, merged."""
        import ray

        from judge.engine.ledger import ledger_calls, start_ledger
        from judge.panel import _preflight, _write_panel_manifest, build_judges, plan_passes, shares_answers
        from judge.runcalls import write_budget
        from judge.terminal import Progress

        started = time.monotonic()
        run = RunDir(run_dir)
        self._ledger = start_ledger(run.path, settings.call_settings(), self._home)
        info = ray.get(self._ledger.info.remote())
        calls = ledger_calls(self._ledger, info)
        judges = build_judges(settings, calls.runtime)
        try:
            for judge in judges.values():
                judge.share_runtime(calls.runtime)
            plans = plan_passes(settings, judges)
            _write_panel_manifest(run.path, settings, plans, judges, calls.cap, calls.store_id)
            # The shared cache's folder as this process would find it (--cache-dir, else its environment's default),
            # opened by the ledger on the home node.
            shared = shares_answers(settings, judges) and ray.get(self._ledger.open_shared.remote(
                str(Path(settings.cache_dir).expanduser() if settings.cache_dir else default_cache_dir())))
            # Once for the run, before any shard: each LLM judge answers one tiny request (a local run asks when
            # its first uncached pass comes; here every LLM judge is asked, even when all its passes are cached).
            preflight_calls = (await _preflight(judges, {plan.judge for plan in plans}, calls)) if options.preflight else 0
        finally:
            for judge in judges.values():
                await judge.aclose()
        manifest = run.manifest().to_json()
        # Human decisions apply to the scores (judge.review): each shard gets the run's (a small file, put once).
        overrides = ray.put(run.file(rundir.OVERRIDES).read_bytes() if run.has(rundir.OVERRIDES) else None)
        total = options.total or 0
        size = self.shard_size or _shard_size(total, self._cpus())
        task = ray.remote(run_shard).options(num_cpus=1)
        files = (rundir.VERDICTS, *SCORED_FILES, *(ROUTED_FILES if options.route else ()))
        result = PanelResult(plans=plans, verdicts=run.view(rundir.VERDICTS, Verdict, 0))
        calls_made, retries, cost = 0, 0, calls.cost_usd
        self.shards = 0
        tracker = Progress("judging, scoring and routing" if options.route else "judging and scoring",
                           total=total * len(plans), enabled=options.progress)
        with ExitStack() as files_open, tracker:
            # Each file is written under a temporary name and renamed when every shard is in: a failed shard
            # leaves none half-merged (the verdicts it paid for are in the store; a rerun takes them from there).
            writers = {name: files_open.enter_context(run.writer(name)) for name in files}
            submitted = (task.remote(index, lines, settings, manifest, overrides, options, self._ledger, info, shared)
                         for index, lines in enumerate(_shards(run.file(rundir.TRAJECTORIES), size)))
            async for shard in _in_order_async(submitted, self._window()):
                self.shards += 1
                for name, writer in writers.items():
                    writer.write_text(shard.files.get(name, b""))
                for line in shard.files.get(rundir.VERDICTS, b"").splitlines():
                    result.count(Verdict.model_validate_json(line))  # in file order, as a local run counts
                calls_made, retries = calls_made + shard.calls, retries + shard.retries
                result.shared_hits += shard.shared_hits
                result.stopped_by += [line for line in shard.stopped_by if line not in result.stopped_by]
                cost = add_costs(cost, shard.cost_usd)
                if not self._sections:
                    self._sections = {k: v for k, v in shard.manifest.items() if k in ("rubric", "cluster", "embedder")}
                paid = f" · calls {calls_made} · retries {retries}" if calls_providers(settings) else ""  # rules: no call
                tracker.advance(sum(result.outcomes.values()) - tracker.done, stats=f"{self.shards} shard(s){paid}")
        self._scores = writers[rundir.SCORES].count
        budget, exceeded = ray.get(self._ledger.budget.remote())
        result.verdicts = run.view(rundir.VERDICTS, Verdict, writers[rundir.VERDICTS].count)
        result.calls, result.retries, result.cost_this_run_usd = calls_made, retries, cost
        result.wall_s, result.budget, result.budget_exceeded = time.monotonic() - started, budget, exceeded
        result.preflight_calls = preflight_calls
        write_budget(run.path, budget)
        return result

    async def finish(self, run_dir: Path, options: StageOptions) -> RowsView[ScoreRow]:
        """The shards scored and routed already: scoring's manifest sections and the Parquet tables, once."""
        from judge.tables import write_tables

        run = RunDir(run_dir)
        with run.update_manifest() as manifest:
            for name, section in self._sections.items():
                setattr(manifest, name, _SECTIONS[name].model_validate(section))
        await asyncio.to_thread(write_tables, run.path)
        return run.view(rundir.SCORES, ScoreRow, self._scores)


# --- tasks (run in Ray workers) -----------------------------------------------------------------------


def import_part(sources: list[Source], fmt: str | None) -> ImportPart:
    """Read consecutive data files (or one span of lines of a large file) as a local import reads them, without
    making ids unique: the driver does, in input order."""
    from judge.importers.reader import read_file, read_span
    from judge.model import Trajectory

    out, rejects, stats = io.BytesIO(), io.StringIO(), ImportStats()
    sink = ImportSink(out, rejects, stats)
    ids: list[str] = []
    for source in sources:
        items = read_file(source, fmt) if isinstance(source, Path) else read_span(source[0], source[1], fmt)
        for item in items:
            written = stats.imported
            sink.add(item)
            if isinstance(item, Trajectory) and stats.imported > written:
                ids.append(item.id)
    return ImportPart(out.getvalue(), ids, rejects.getvalue().encode("utf-8"), stats)


def run_shard(index: int, lines: bytes, settings: PanelConfig, manifest: dict[str, Any], overrides: bytes | None,
              options: StageOptions, ledger: Any, info: Any, shared: bool) -> ShardResult:
    """Judge, score and route one shard in a scratch run directory with the run's calls (and its shared cache,
    when ``shared``), run.json and human decisions; return the files it wrote."""
    from judge.engine.ledger import LedgerSharedCache, ledger_calls
    from judge.panel import run_panel

    with tempfile.TemporaryDirectory(prefix=f"trajudge-shard-{index}-") as scratch:
        shard = RunDir(scratch)
        shard.file(rundir.TRAJECTORIES).write_bytes(lines)
        shard.write_manifest(RunManifest.model_validate(manifest))
        if overrides is not None:
            shard.file(rundir.OVERRIDES).write_bytes(overrides)
        calls = ledger_calls(ledger, info)
        answers = cast(SharedCache, LedgerSharedCache(ledger)) if shared else None
        result = asyncio.run(run_panel(shard.trajectories(), settings, shard.path, progress=False, preflight=False,
                                       calls=calls, shared=answers))
        finish_stages(shard.path, options, tables=False)
        names = (rundir.VERDICTS, *SCORED_FILES, *ROUTED_FILES)
        files = {name: shard.file(name).read_bytes() for name in names if shard.has(name)}
        return ShardResult(files, calls=result.calls, retries=result.retries, cost_usd=result.cost_this_run_usd,
                           shared_hits=result.shared_hits, manifest=shard.manifest().to_json(),
                           stopped_by=result.stopped_by)


# --- helpers ------------------------------------------------------------------------------------------


def _import_ray() -> Any:
    """``import ray``, or :class:`EngineUnavailable` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise EngineUnavailable("--engine ray needs Ray: pip install 'trajudge[ray]'") from None
    return ray


def _on_loopback(address: str | None) -> bool:
    """Whether ``address`` (None: a local instance; ``ray://HOST:PORT``, ``HOST:PORT``, ``auto``) is this machine's
    loopback."""
    if address is None:
        return True
    host = address.removeprefix("ray://").rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cluster_resources() -> dict[str, float]:
    import ray

    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    return resources


def _shard_size(total: int, cpus: int) -> int:
    """Trajectories per shard: about :data:`SHARDS_PER_CPU` shards per CPU, within [MIN_SHARD, MAX_SHARD]."""
    return max(MIN_SHARD, min(MAX_SHARD, -(-total // (SHARDS_PER_CPU * cpus)) if total else MIN_SHARD))


def _shards(path: Path, size: int) -> Iterator[bytes]:
    """Consecutive runs of ``size`` lines of a JSONL file, as bytes (read as they are needed)."""
    chunk: list[bytes] = []
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                chunk.append(line if line.endswith(b"\n") else line + b"\n")
                if len(chunk) == size:
                    yield b"".join(chunk)
                    chunk = []
    if chunk:
        yield b"".join(chunk)


def _import_parts(walked: Iterable[Path | Reject], part_bytes: int = PART_BYTES,
                  fmt: str | None = None) -> Iterator[list[Source] | Reject]:
    """Consecutive data files grouped into parts of about ``part_bytes``, a large JSON Lines file cut into spans of
    lines of that size (:func:`judge.importers.reader.split_lines_file`), the walk's rejects in their place."""
    from judge.importers.reader import split_lines_file

    part: list[Source] = []
    size = 0
    for item in walked:
        spans = None if isinstance(item, Reject) else split_lines_file(item, part_bytes, fmt)
        if isinstance(item, Reject) or spans:
            if part:
                yield part
                part, size = [], 0
            if isinstance(item, Reject):
                yield item
            else:
                yield from ([cast(Source, (item, span))] for span in spans or ())
            continue
        part.append(item)
        with suppress(OSError):  # the reader rejects it with its reason
            size += item.stat().st_size
        if size >= part_bytes or len(part) >= PART_FILES:
            yield part
            part, size = [], 0
    if part:
        yield part


def _in_order(items: Iterable[Any], window: int) -> Iterator[Any]:
    """The results of submitted tasks (Ray object refs; other items pass through) in submission order, with at
    most ``window`` submitted ahead of the oldest one not yet returned."""
    import ray

    for item in _windowed(items, window):
        yield _result(ray.get, item) if isinstance(item, ray.ObjectRef) else item


async def _in_order_async(items: Iterable[Any], window: int) -> Any:
    """:func:`_in_order` for async code: awaits each result instead of blocking the event loop."""
    for item in _windowed(items, window):
        yield await _result_async(item)


def _windowed(items: Iterable[Any], window: int) -> Iterator[Any]:
    """``items`` in order, each taken from the source only when fewer than ``window`` are taken and not yet
    handed on: iterating the source is what submits a task, so this bounds the tasks in flight."""
    pending: deque[Any] = deque()
    source = iter(items)
    exhausted = False
    while True:
        while not exhausted and len(pending) < window:
            try:
                pending.append(next(source))
            except StopIteration:
                exhausted = True
        if not pending:
            return
        yield pending.popleft()


def _result(get: Callable[[Any], T], ref: Any) -> T:
    import ray

    try:
        return get(ref)
    except ray.exceptions.RayTaskError as error:
        raise ShardFailed(f"a Ray task of the run failed: {error}") from error


async def _result_async(ref: Awaitable[T]) -> T:
    import ray

    try:
        return await ref
    except ray.exceptions.RayTaskError as error:
        raise ShardFailed(f"a Ray task of the run failed: {error}") from error


def _add_stats(total: ImportStats, part: ImportStats) -> None:
    total.read += part.read
    total.imported += part.imported
    total.rejected += part.rejected
    total.skipped += part.skipped
    for name, count in part.by_format.items():
        total.by_format[name] = total.by_format.get(name, 0) + count


class _Lines(io.StringIO):
    """A text sink that hands each written line to a :class:`~judge.rundir.JsonlWriter`."""

    def __init__(self, writer: rundir.JsonlWriter):
        super().__init__()
        self._writer = writer

    def write(self, text: str) -> int:
        self._writer.write_text(text)
        return len(text)
