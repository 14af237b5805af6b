"""Import to files: stream records into a canonical JSONL file and a rejects JSONL file, counting as it goes.

Shared by ``judge import`` and :func:`judge.pipeline.import_to_run`, so both write the same rows the same way.
"""

from __future__ import annotations

import os
import random
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from judge.importers._common import one_line
from judge.model import Trajectory
from judge.schema import Reject

OUT_BUFFER_BYTES = 1 << 20


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
    selected_from: int | None = None  # with a seeded sample: the trajectories it was drawn from


@dataclass(frozen=True)
class ImportSelection:
    """Which imported trajectories go on (``judge score --limit N`` / ``--sample N --seed S``): the first ``limit``
    in input order, or a seeded random sample of ``sample`` (kept in input order). Rejects are never selected away.
    """

    limit: int | None = None
    sample: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.limit is not None and self.sample is not None:
            raise ValueError("give --limit N or --sample N, not both")
        for name, value in (("--limit", self.limit), ("--sample", self.sample)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")

    def describe(self) -> dict[str, Any]:
        """As run.json records it (``selection``)."""
        if self.limit is not None:
            return {"limit": self.limit}
        return {"sample": self.sample, "seed": self.seed}


def select_items(items: Iterable[Trajectory | Reject], selection: ImportSelection,
                 stats: ImportStats) -> Iterator[Trajectory | Reject]:
    """``items`` with only the selected trajectories. ``limit`` stops reading after the N-th trajectory; ``sample``
    reads everything and holds N trajectories (reservoir sampling with ``random.Random(seed)``: the same input and
    seed give the same sample), yielded in input order at the end; ``stats.selected_from`` counts the drawn-from."""
    if selection.limit is not None:
        taken = 0
        for item in items:
            yield item
            taken += isinstance(item, Trajectory)
            if taken >= selection.limit:
                return
        return
    size = selection.sample or 0
    rng = random.Random(selection.seed)
    kept: list[tuple[int, Trajectory]] = []
    seen = 0
    for item in items:
        if not isinstance(item, Trajectory):
            yield item
            continue
        if len(kept) < size:
            kept.append((seen, item))
        else:
            slot = rng.randrange(seen + 1)
            if slot < size:
                kept[slot] = (seen, item)
        seen += 1
    stats.selected_from = seen
    stats.read += seen - len(kept)  # read, but not written: the sink counts only what it writes
    for _, trajectory in sorted(kept, key=lambda pair: pair[0]):
        yield trajectory


def write_import(
    inputs: Iterable[str | Path],
    out_path: Path,
    rejects_path: Path,
    fmt: str | None = None,
    keep_rejects: list[Reject] | None = None,
    exclude: Iterable[str | Path] = (),
    selection: ImportSelection | None = None,
) -> ImportStats:
    """Write every trajectory of ``inputs`` to ``out_path`` and every reject to ``rejects_path``.

    Both files are written to a temporary name and renamed when done, so an interrupted import leaves no
    half-written file under the final name. Memory stays flat: one record at a time. When ``keep_rejects``
    is given, rejects (and skipped paths) are also appended to it (for the CLI's summary). The two output
    files and any path in ``exclude`` (a run directory) are never read as inputs: they are listed as skipped.
    ``selection`` keeps only some trajectories (:class:`ImportSelection`).
    """
    return ImportStream(inputs, out_path, rejects_path, fmt, keep_rejects, exclude, selection=selection).run()


class ImportStream:
    """:func:`write_import` as an iterator of the trajectories it writes, each yielded once its line is written,
    so the caller can take it further while it is in memory (``judge score`` with a panel that makes no call
    judges, scores and routes it at once: one parse of each input record serves every stage).

    The files are renamed into place when the iteration ends, and :attr:`stats` is complete then; :meth:`close`
    (or an iteration left early) removes the temporary files and leaves the final names untouched. With
    ``keep_lines``, each yielded trajectory's line is kept until :meth:`line_of` takes it (the report embeds it
    as is instead of serialising the trajectory again): the taker must take every line, or they accumulate.
    """

    def __init__(self, inputs: Iterable[str | Path], out_path: Path, rejects_path: Path, fmt: str | None = None,
                 keep_rejects: list[Reject] | None = None, exclude: Iterable[str | Path] = (), *,
                 keep_lines: bool = False, selection: ImportSelection | None = None):
        self.stats = ImportStats()
        self._lines: dict[str, bytes] | None = {} if keep_lines else None
        self._selection = selection
        self._items = self._import(list(inputs), Path(out_path), Path(rejects_path), fmt, keep_rejects, list(exclude))
        self._first: Trajectory | None = None

    def peek(self) -> bool:
        """Import up to the first trajectory: False when the inputs hold none (the import is then complete)."""
        if self._first is None:
            self._first = next(self._items, None)
        return self._first is not None

    def __iter__(self) -> Iterator[Trajectory]:
        if self._first is not None:
            first, self._first = self._first, None
            yield first
        yield from self._items

    def line_of(self, trajectory_id: str) -> bytes | None:
        """Take the line written for a yielded trajectory (None: not kept, or taken already)."""
        return self._lines.pop(trajectory_id, None) if self._lines is not None else None

    def run(self) -> ImportStats:
        """Import everything (nothing is taken further) and return the counts."""
        for _ in self:
            pass
        return self.stats

    def close(self) -> None:
        """Stop importing; an unfinished import leaves no file behind."""
        self._items.close()

    def _import(self, inputs: list[str | Path], out_path: Path, rejects_path: Path, fmt: str | None,
                keep_rejects: list[Reject] | None, exclude: list[str | Path]) -> Generator[Trajectory, None, None]:
        from judge.importers import iter_records
        from judge.importers.reader import UniqueIds

        stats = self.stats
        ids = UniqueIds()
        out_path.parent.mkdir(parents=True, exist_ok=True)
        rejects_path.parent.mkdir(parents=True, exist_ok=True)
        out_tmp = out_path.with_name(out_path.name + ".tmp")
        rejects_tmp = rejects_path.with_name(rejects_path.name + ".tmp")
        try:
            # A 1 MiB buffer: a trajectory line (~25 KB on tau-bench) is larger than the default 8 KiB one, so each line
            # would be its own write call; buffered, one call carries ~40 lines.
            with out_tmp.open("wb", buffering=OUT_BUFFER_BYTES) as out, rejects_tmp.open("w", encoding="utf-8") as rejects:
                sink = ImportSink(out, rejects, stats, keep_rejects, lines=self._lines)
                items: Iterable[Trajectory | Reject] = iter_records(
                    inputs, fmt=fmt, exclude=[out_path, rejects_path, *exclude], ids=ids)
                if self._selection is not None:
                    items = select_items(items, self._selection, stats)
                for item in items:
                    if sink.add(item):
                        assert isinstance(item, Trajectory)
                        yield item
            stats.renamed = ids.renamed
            os.replace(out_tmp, out_path)
            os.replace(rejects_tmp, rejects_path)
        finally:
            for tmp in (out_tmp, rejects_tmp):
                if tmp.exists():
                    tmp.unlink()


class ImportSink:
    """Writes imported items as lines and counts them: a trajectory to ``out``, a reject (or a skipped path) to
    ``rejects``. :func:`write_import` and the Ray engine's import parts (judge.engine.ray_engine) share it."""

    def __init__(self, out: BinaryIO, rejects: TextIO, stats: ImportStats, keep_rejects: list[Reject] | None = None,
                 lines: dict[str, bytes] | None = None):
        self.out, self.rejects, self.stats, self.keep_rejects = out, rejects, stats, keep_rejects
        self.lines = lines  # trajectory id -> its line, for ImportStream(keep_lines=True)

    def add(self, item: Trajectory | Reject) -> bool:
        """Write one item; True when it was a trajectory and its line was written (False: a reject's line)."""
        stats = self.stats
        if isinstance(item, Trajectory):
            try:
                line = item.to_json_bytes()
            except ValueError as error:  # the last guard: one record that cannot be written is a reject
                item = Reject(source_file=item.metadata.source_file or "?", line=item.metadata.source_line,
                              format=item.metadata.source_format, reason=one_line(f"cannot be written as JSON: {error}"))
            else:
                stats.read += 1
                stats.imported += 1
                fmt_name = item.metadata.source_format
                stats.by_format[fmt_name] = stats.by_format.get(fmt_name, 0) + 1
                # The UTF-8 bytes pydantic-core wrote, then the newline: two writes copy no long line (rundir.write_row).
                self.out.write(line)
                self.out.write(b"\n")
                if self.lines is not None:
                    self.lines[item.id] = line
                return True
        from judge.importers.reader import Skipped  # here, not per trajectory: a function-level import costs ~0.5 us a call

        if isinstance(item, Skipped):
            stats.skipped += 1
        else:
            stats.read += 1
            stats.rejected += 1
        self.rejects.write(item.model_dump_json() + "\n")
        if self.keep_rejects is not None:
            self.keep_rejects.append(item)
        return False


def default_rejects_path(out_path: Path) -> Path:
    """``x.jsonl`` -> ``x.rejects.jsonl`` next to it."""
    name = out_path.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else out_path.stem
    return out_path.with_name(f"{stem}.rejects.jsonl")
