"""Importers: real agent logs in, canonical :class:`~judge.model.Trajectory` out.

Public API::

    iter_records(paths, fmt=None)   -> Iterator[Trajectory | Reject]   (streamed)
    load_trajectories(path_or_paths, fmt=None) -> list[Trajectory]     (raises on any reject)
    detect_format(obj) -> str | None
    FORMATS: name -> FormatSpec, in detection order

Formats: ``canonical``, ``openai``, ``tau``, ``anthropic``, ``swe-agent``, ``mini-swe-agent``, ``openhands``,
``inspect``, ``who-and-when``, ``atif``, ``mast``; each lives in its own module with a ``parse(record, source)`` function
and a docstring describing its mapping. Shared helpers are in ``_common``; file reading in ``reader``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from judge.importers._common import RecordError, Source
from judge.importers.formats import FORMATS, FormatSpec, detect_format
from judge.importers.reader import Skipped, UniqueIds, iter_data_files, parse_record, read_file
from judge.model import Trajectory
from judge.schema import Reject

__all__ = [
    "FORMATS",
    "FormatSpec",
    "RecordError",
    "Skipped",
    "Source",
    "TrajectoryImportError",
    "UniqueIds",
    "detect_format",
    "iter_records",
    "load_trajectories",
    "parse_record",
]


class TrajectoryImportError(ValueError):
    """Raised by :func:`load_trajectories` when any record was rejected; ``rejects`` lists them all."""

    def __init__(self, rejects: list[Reject]) -> None:
        self.rejects = rejects
        shown = "; ".join(describe_reject(r) for r in rejects[:3])
        more = f" (and {len(rejects) - 3} more)" if len(rejects) > 3 else ""
        super().__init__(f"{len(rejects)} record(s) rejected: {shown}{more}")


def describe_reject(reject: Reject) -> str:
    """``file:line [record N]: reason`` for messages and logs."""
    return f"{reject.location()}: {reject.reason}"


def iter_records(
    paths: Iterable[str | Path] | str | Path,
    fmt: str | None = None,
    *,
    exclude: Iterable[str | Path] = (),
    ids: UniqueIds | None = None,
) -> Iterator[Trajectory | Reject]:
    """Stream trajectories and rejects from files and directories, in input order.

    ``paths`` may mix files and directories (walked recursively, sorted, data files only; ``.gz``, ``.bz2`` and
    ``.xz`` files are decompressed). The format is detected per record (per document for .json/.traj files)
    unless ``fmt`` names one of :data:`FORMATS`. JSONL is read line by line; a .json/.traj file is read as one
    JSON document. Trajectory ids are made unique within the call, whatever the input holds (a repeated id gets
    the first free ``~2``, ``~3``... in input order, and keeps its id in ``metadata.extra["original_id"]``;
    pass ``ids`` to count the renames). Nothing is dropped: every unreadable record comes out as a
    :class:`~judge.schema.Reject`, and every path not read (a run directory in a folder, a path in ``exclude``
    such as the command's own output) as a :class:`Skipped` (a kind of Reject).
    """
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if isinstance(paths, (str, Path)):
        paths = [paths]
    unique = ids if ids is not None else UniqueIds()
    for item in iter_data_files(paths, exclude=exclude):
        if isinstance(item, Reject):
            yield item
            continue
        for record in read_file(item, fmt):
            yield unique(record) if isinstance(record, Trajectory) else record


def load_trajectories(path_or_paths: Iterable[str | Path] | str | Path, fmt: str | None = None) -> list[Trajectory]:
    """All trajectories of the inputs; raises :class:`TrajectoryImportError` if any record was rejected."""
    trajectories: list[Trajectory] = []
    rejects: list[Reject] = []
    for item in iter_records(path_or_paths, fmt=fmt):
        if isinstance(item, Reject):
            rejects.append(item)
        else:
            trajectories.append(item)
    if rejects:
        raise TrajectoryImportError(rejects)
    return trajectories
