"""Streaming reader: files and directories in, ``Trajectory`` or ``Reject`` out, one record at a time.

* JSONL (``.jsonl``/``.ndjson``, or a ``.json`` whose first line is a complete JSON value and that has more
  lines) is read line by line from the raw bytes, and each line is decoded on its own, so one invalid UTF-8
  line or one broken line is rejected with its line number and the rest of the file goes on. Memory does not
  grow with the file.
* Any other data file (``.json``, ``.traj``) is one JSON document, read whole: a record, a list of records, or
  a document that holds several records (an inspect_ai log).
* Directories are walked recursively in sorted order; only ``.json``, ``.jsonl``, ``.ndjson`` and ``.traj``
  files are read (README.md, SOURCE.md, scripts and hidden folders are skipped). A file named explicitly is
  always read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from judge.importers._common import RecordError, Source, one_line
from judge.importers.formats import FORMATS, FormatSpec, detect_format
from judge.model import Trajectory
from judge.schema import Reject

DATA_SUFFIXES = (".json", ".jsonl", ".ndjson", ".traj")
LINE_SUFFIXES = (".jsonl", ".ndjson")

Item = Trajectory | Reject


def _open_binary(path: Path) -> IO[bytes]:
    """The one place files are opened (tests wrap it to check that reading is lazy)."""
    return path.open("rb")


def iter_data_files(paths: Iterable[str | Path]) -> Iterator[Path | Reject]:
    """Expand inputs to data files, in order; a missing input yields a Reject."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                relative = child.relative_to(path).parts
                if child.is_file() and child.name.lower().endswith(DATA_SUFFIXES) and not any(p.startswith(".") for p in relative):
                    yield child
        elif path.is_file():
            yield path
        else:
            yield Reject(source_file=str(path), reason="no such file or directory")


def read_file(path: Path, fmt: str | None = None) -> Iterator[Item]:
    """Records of one file."""
    if path.name.lower().endswith(LINE_SUFFIXES):
        yield from _read_lines(path, fmt)
        return
    with _open_binary(path) as handle:
        data = handle.read()
    if _looks_like_jsonl(data):
        yield from _read_lines(path, fmt)
        return
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        yield Reject(source_file=str(path), line=line, format=fmt, reason=f"invalid UTF-8 at byte {error.start} (line {line})")
        return
    if not text.strip():
        yield Reject(source_file=str(path), format=fmt, reason="empty file")
        return
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        yield Reject(source_file=str(path), line=error.lineno, format=fmt, reason=f"broken JSON: {error.msg} (line {error.lineno} column {error.colno})")
        return
    yield from _read_document(document, str(path), fmt)


def _looks_like_jsonl(data: bytes) -> bool:
    """A .json file that is really JSON Lines: several lines, the first of which is a whole JSON object."""
    lines = [line for line in data.splitlines() if line.strip()]
    if len(lines) < 2 or not lines[0].lstrip().startswith(b"{"):
        return False
    try:
        json.loads(lines[0].decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    return True


def _read_lines(path: Path, fmt: str | None) -> Iterator[Item]:
    # The first record decides whether the file is one a format reads whole (span exports: a trace's spans are
    # spread over lines); such a file's records are collected and handed to that format's ``gather``.
    gathering: FormatSpec | None = None
    gathered: list[tuple[Source, Any]] = []
    first = True
    with _open_binary(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as error:
                yield Reject(source_file=str(path), line=number, format=fmt, reason=f"invalid UTF-8 at byte {error.start} of the line")
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as error:
                yield Reject(source_file=str(path), line=number, format=fmt, reason=f"broken JSON: {error.msg} (column {error.colno})")
                continue
            if first:
                first = False
                gathering = _gathering_spec(record, fmt)
            if gathering is not None:
                gathered.append((Source(str(path), line=number), record))
                continue
            yield parse_record(record, Source(str(path), line=number), fmt)
    if gathering is not None and gathering.gather is not None:
        yield from gathering.gather(gathered)


def _gathering_spec(record: Any, fmt: str | None) -> FormatSpec | None:
    spec = FORMATS.get(fmt or detect_format(record) or "")
    return spec if spec is not None and spec.gather is not None else None


def _read_document(document: Any, file: str, fmt: str | None) -> Iterator[Item]:
    name = fmt or detect_format(document)
    spec = FORMATS.get(name) if name else None
    if spec is not None and spec.gather is not None:
        yield from spec.gather([(Source(file), document)])
        return
    if spec is not None and spec.split is not None:
        try:
            parts = spec.split(document)
        except RecordError as error:
            yield Reject(source_file=file, format=name, reason=one_line(str(error)))
            return
        if parts is not None:
            for index, part in parts:
                yield parse_record(part, Source(file, index=index), name)
            return
    if isinstance(document, list) and not (spec is not None and spec.whole_list and spec.detect(document)):
        for index, element in enumerate(document):
            yield parse_record(element, Source(file, index=index), fmt)
        return
    yield parse_record(document, Source(file), name)


def parse_record(record: Any, src: Source, fmt: str | None = None) -> Item:
    """One record -> Trajectory, or a Reject naming file, line/index, format and a one-line reason."""
    name = fmt or detect_format(record)
    if name is None:
        return _reject(src, None, f"unknown format: no messages/traj/history/steps/samples found ({_shape(record)})")
    spec: FormatSpec = FORMATS[name]
    try:
        return spec.parse(record, src)
    except RecordError as error:
        return _reject(src, name, str(error))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return _reject(src, name, f"invalid value at {where}: {first.get('msg')}")
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
        # A record of an unexpected shape must not stop the batch; the reason names what broke.
        return _reject(src, name, f"unexpected record shape: {type(error).__name__}: {error}")


def _reject(src: Source, fmt: str | None, reason: str) -> Reject:
    return Reject(source_file=src.file, line=src.line, record_index=src.index, format=fmt, reason=one_line(reason))


def _shape(record: Any) -> str:
    if isinstance(record, dict):
        keys = sorted(map(str, record))[:8]
        return "top-level keys: " + ", ".join(keys) if keys else "empty object"
    if isinstance(record, list):
        return f"a list of {len(record)} items"
    return f"a JSON {type(record).__name__}"


class UniqueIds:
    """Makes trajectory ids unique within one import: a repeated id gets ``~2``, ``~3``... in input order."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def __call__(self, trajectory: Trajectory) -> Trajectory:
        count = self._seen.get(trajectory.id, 0)
        self._seen[trajectory.id] = count + 1
        if count == 0:
            return trajectory
        new_id = f"{trajectory.id}~{count + 1}"
        self._seen[new_id] = 1
        return trajectory.model_copy(update={"id": new_id})
