"""Importers: real agent logs in, canonical :class:`~judge.model.Trajectory` out.

Public API::

    iter_records(paths, fmt=None)   -> Iterator[Trajectory | Reject]   (streamed)
    load_trajectories(path_or_paths, fmt=None) -> list[Trajectory]     (raises on any reject)
    detect_format(obj) -> str | None
    FORMATS: name -> FormatSpec, in detection order

Formats: ``canonical``, ``openai``, ``tau``, ``anthropic``, ``swe-agent``, ``mini-swe-agent``, ``openhands``,
``inspect``, ``who-and-when``, ``atif``, ``mast``; each lives in its own module with a ``parse(record, source)`` function
and a docstring describing its mapping. Shared helpers are in ``_common``; file reading in ``reader``.

A format from outside this package is one module that calls :func:`register_format` with a :class:`FormatSpec`
(its ``detect`` and ``parse``), found through the ``trajudge.importers`` entry point (:mod:`judge.plugins`);
:func:`formats` lists every format, plugins included. Its ``parse`` builds the trajectory with the helpers the
built-in formats use (exported here): :func:`make_call`, :func:`make_receipt`, :func:`build_metadata` and
:func:`build_trajectory`, which numbers the turns and checks call/receipt pairing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from judge.importers._common import (
    RecordError,
    Source,
    build_metadata,
    build_trajectory,
    make_call,
    make_receipt,
)
from judge.importers.formats import FORMATS, LOOSE_FORMATS, PLUGIN_GROUP, FormatSpec, detect_format
from judge.importers.reader import Skipped, UniqueIds, iter_data_files, parse_record, read_file
from judge.model import Trajectory
from judge.plugins import claim_name, load_plugins, problems_note
from judge.schema import Reject

__all__ = [
    "FORMATS",
    "FormatSpec",
    "RecordError",
    "Skipped",
    "Source",
    "TrajectoryImportError",
    "UniqueIds",
    "build_metadata",
    "build_trajectory",
    "detect_format",
    "formats",
    "iter_records",
    "load_trajectories",
    "make_call",
    "make_receipt",
    "parse_record",
    "register_format",
]


def register_format(spec: FormatSpec, *, before: str | None = None) -> FormatSpec:
    """Add a log format to :data:`FORMATS`, in detection order just before the format ``before``; by default
    before the loose chat shapes (``anthropic``, ``openai``), which would claim many records of a more specific
    format. A name another format has is an error. Returns ``spec``."""
    claim_name(FORMATS, spec.name, spec, "format", owner=lambda registered: registered.parse)
    anchor = before if before is not None else next((name for name in FORMATS if name in LOOSE_FORMATS), None)
    if anchor is not None and anchor not in FORMATS:
        raise ValueError(f"register_format({spec.name!r}, before={anchor!r}): no format {anchor!r}; known: {', '.join(FORMATS)}")
    ordered = [(name, value) for name, value in FORMATS.items() if name != spec.name]
    at = next((i for i, (name, _) in enumerate(ordered) if name == anchor), len(ordered))
    ordered.insert(at, (spec.name, spec))
    FORMATS.clear()  # in place: every module holding FORMATS sees the new order
    FORMATS.update(ordered)
    return spec


def formats() -> dict[str, FormatSpec]:
    """Every format by name, in detection order, with those of the ``trajudge.importers`` plugins."""
    load_plugins(PLUGIN_GROUP)
    return FORMATS


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
    if fmt is not None and fmt not in formats():
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}{problems_note(PLUGIN_GROUP)}")
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
    """All trajectories of the inputs; raises :class:`TrajectoryImportError` if any record was rejected (paths
    skipped, such as a README.md in a folder, are not rejects)."""
    trajectories: list[Trajectory] = []
    rejects: list[Reject] = []
    for item in iter_records(path_or_paths, fmt=fmt):
        if isinstance(item, Skipped):
            continue  # not bad input: a path deliberately not read (notes.txt, a run directory)
        if isinstance(item, Reject):
            rejects.append(item)
        else:
            trajectories.append(item)
    if rejects:
        raise TrajectoryImportError(rejects)
    return trajectories
