"""Streaming reader: files and directories in, ``Trajectory`` or ``Reject`` out, one record at a time.

* JSONL (``.jsonl``/``.ndjson``, or a ``.json`` whose first line is a complete JSON value and that has more
  lines) is read line by line from the raw bytes, and each line is decoded on its own, so one invalid UTF-8
  line or one broken line is rejected with its line number and the rest of the file goes on. Lines end at
  ``\\n``, ``\\r\\n`` or a lone ``\\r`` (old Mac files). Memory does not grow with the file; a line longer than
  :data:`MAX_LINE_BYTES` is rejected without being held.
* Any other data file (``.json``, ``.traj``) is one JSON document, read whole (up to
  :data:`MAX_DOCUMENT_BYTES`): a record, a list of records (a reject names the record's line and index), or a
  document that holds several records (an inspect_ai log).
* ``.gz``, ``.bz2`` and ``.xz`` files (``runs.jsonl.gz``) are decompressed while reading; a truncated or corrupt
  stream is a reject naming the line where it broke, after the records before it.
* A record nested too deeply for the JSON parser is rejected with its line, and so is a record whose free-form
  values nest deeper than :data:`~judge.importers._common.MAX_DEPTH` (checked in :func:`parse_record`); in a
  JSON document the other records are kept.
* Directories are walked recursively in sorted order; only data files (``.json``, ``.jsonl``, ``.ndjson``,
  ``.traj``, ``.eval``, optionally compressed) are read. A broken symlink, a symlink loop, an unreadable file or
  directory (no permission: the walk goes on past it), an archive (``.zip``, ``.tar.gz``...) or a compression
  the reader does not open is a reject. Any other entry not read is *skipped*: a hidden file or folder, a file
  that is not data (README.md, notes.txt, scripts), a trajudge run directory, a symlink to a directory and an
  excluded path (the command's own output) are listed as :class:`Skipped` rows (a kind of Reject), never left
  out silently. A file named explicitly is always read; a run directory named explicitly is read as its
  ``trajectories.jsonl``.
"""

from __future__ import annotations

import bz2
import codecs
import errno
import gzip
import io
import json
import lzma
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AnyStr, Literal

from pydantic import ValidationError
from pydantic_core import from_json

from judge import rundir
from judge.importers._common import (
    COMPRESSION_SUFFIXES,
    DATA_SUFFIXES,
    MAX_DEPTH,
    RecordError,
    Source,
    check_depth,
    check_integers,
    one_line,
    replace_lone_surrogates,
)
from judge.importers.formats import FORMATS, FormatSpec, detect_format
from judge.model import Trajectory
from judge.schema import Reject

LINE_SUFFIXES = (".jsonl", ".ndjson")
EVAL_SUFFIX = ".eval"  # inspect_ai's zip log format
UNSUPPORTED_COMPRESSION = (".zst", ".zstd", ".lz4", ".br", ".zip", ".7z")  # named in a reject, not guessed at
MAX_LINE_BYTES = 256 << 20
MAX_DOCUMENT_BYTES = 1 << 30
BLOCK_BYTES = 1 << 16
FIRST_LINE_BYTES = 16 << 20  # split_lines_file reads a large file's first record to decide whether to cut it

_OPENERS: dict[str, Callable[[Path, Literal["rb"]], io.BufferedIOBase]] = {".gz": gzip.GzipFile, ".bz2": bz2.BZ2File, ".xz": lzma.LZMAFile}
# What a corrupt or truncated file raises while being read (BadGzipFile is an OSError).
_READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)
_UTF16_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# A JSON escape that may spell a lone surrogate; records whose text holds one get replace_lone_surrogates.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_TOO_DEEP = f"JSON nested too deeply to parse (values nested deeper than {MAX_DEPTH} levels are refused)"

Item = Trajectory | Reject


class Skipped(Reject):
    """A path deliberately not read (a run directory, the command's own output, a symlinked directory).

    Written with the rejects, so nothing is left out silently, but counted apart: it is not bad input.
    """


def _open_binary(path: Path) -> io.BufferedIOBase:
    """The one place files are opened (tests wrap it to check that reading is lazy); decompresses by suffix."""
    opener = _OPENERS.get(_compression(path.name))
    return opener(path, "rb") if opener else path.open("rb")


def _compression(name: str) -> str:
    """The compression suffix of a file name (``.gz``...; also the unsupported ones), or ``""``."""
    lower = name.lower()
    return next((s for s in (*COMPRESSION_SUFFIXES, *UNSUPPORTED_COMPRESSION) if lower.endswith(s)), "")


def _inner_name(name: str) -> str:
    """The lower-cased name without its compression suffix (``a.JSONL.gz`` -> ``a.jsonl``)."""
    lower = name.lower()
    return lower[: len(lower) - len(_compression(lower))]


def is_data_file_name(name: str) -> bool:
    """A name the directory walk reads: a data suffix, optionally followed by a compression suffix."""
    return _inner_name(name).endswith(DATA_SUFFIXES)


def is_run_dir(path: Path) -> bool:
    """A trajudge run directory: its ``trajectories.jsonl`` beside its run files, or a manifest beside a store."""
    if (path / rundir.TRAJECTORIES).is_file():
        return any((path / name).exists() for name in (rundir.MANIFEST, rundir.STORE, rundir.VERDICTS, rundir.REJECTS, rundir.LOCK))
    return (path / rundir.MANIFEST).is_file() and ((path / rundir.STORE).exists() or (path / rundir.LOCK).exists())


def missing_inputs(paths: Iterable[str | Path]) -> list[str]:
    """The inputs that name nothing at all. A broken symlink, a symlink loop or a file in a folder without
    permission names something: the reader rejects it with its reason, so it is not "not found"."""
    return [str(p) for p in paths if _names_nothing(p)]


def _names_nothing(path: str | Path) -> bool:
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:  # there, but not to be looked at (EACCES): the reader says so
        return False
    return False


# ----------------------------------------------------------------------------------------------------
# Files and directories


def iter_data_files(paths: Iterable[str | Path], exclude: Iterable[str | Path] = ()) -> Iterator[Path | Reject]:
    """Expand inputs to data files, in order. A missing or unreadable input yields a Reject; a run directory
    met in a walk, and any path in ``exclude`` (the command's own output), yield a :class:`Skipped`. Nothing
    raises: an entry the operating system refuses (no permission) is a Reject naming it, and the rest goes on."""
    excluded = {os.path.realpath(p) for p in exclude}
    for raw in paths:
        path = Path(raw)
        if os.path.realpath(path) in excluded:
            yield Skipped(source_file=str(path), reason="skipped: it is the output of this command")
            continue
        try:
            yield from _input(path, excluded)
        except OSError as error:  # e.g. a folder whose run files cannot be looked at (no permission)
            yield Reject(source_file=str(path), reason=_cannot_read(error))


def _input(path: Path, excluded: set[str]) -> Iterator[Path | Reject]:
    """One path named as an input (a file named explicitly is always read, whatever its name)."""
    problem = _link_problem(path) if path.is_symlink() else None
    if problem:
        yield Reject(source_file=str(path), reason=problem)
    elif path.is_dir():
        if not is_run_dir(path):
            yield from _walk(path, excluded, os.path.realpath(path))
        elif (path / rundir.TRAJECTORIES).is_file():  # named explicitly: its trajectories, not its other outputs
            yield path / rundir.TRAJECTORIES
        else:
            yield Reject(source_file=str(path), reason=f"a trajudge run directory without {rundir.TRAJECTORIES}")
    elif path.is_file():
        yield path
    elif path.exists():
        yield Reject(source_file=str(path), reason="not a regular file or directory")
    else:
        yield Reject(source_file=str(path), reason="no such file or directory")


def _cannot_read(error: OSError) -> str:
    return f"cannot read: {error.strerror or error}"


def _walk(directory: Path, excluded: set[str], real_dir: str) -> Iterator[Path | Reject]:
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except OSError as error:
        yield Reject(source_file=str(directory), reason=f"cannot list the directory: {error.strerror or error}")
        return
    for entry in entries:
        path = Path(entry.path)
        try:
            yield from _entry(entry, path, excluded, real_dir)
        except OSError as error:  # a folder or file the walk may not look into: a reject, the walk goes on
            yield Reject(source_file=str(path), reason=_cannot_read(error))


def _entry(entry: os.DirEntry[str], path: Path, excluded: set[str], real_dir: str) -> Iterator[Path | Reject]:
    """One entry of a walked folder: a data file to read, a folder to walk, or a Reject or Skipped row saying why
    not; nothing is left out without a row."""
    if entry.name.startswith("."):  # hidden files and folders (.git, caches) are not data
        what = "folder" if entry.is_dir() else "file"
        yield Skipped(source_file=str(path), reason=f"skipped: a hidden {what} (name it as an input to read it)")
        return
    link = entry.is_symlink()
    problem = _link_problem(path) if link else None
    if problem:
        yield Reject(source_file=str(path), reason=problem)
        return
    real = os.path.realpath(path) if link else os.path.join(real_dir, entry.name)
    if real in excluded:
        yield Skipped(source_file=str(path), reason="skipped: it is the output of this command")
    elif entry.is_dir():
        if link:
            yield Skipped(source_file=str(path), reason="skipped: a symlink to a directory is not followed (name it as an input to read it)")
        elif is_run_dir(path):
            yield Skipped(source_file=str(path), reason=f"skipped: a trajudge run directory (name it, or its {rundir.TRAJECTORIES}, as an input to read it)")
        else:
            yield from _walk(path, excluded, real)
    elif is_data_file_name(entry.name):
        if entry.is_file():
            yield path
        else:
            yield Reject(source_file=str(path), reason="not a regular file")
    elif (unread := _unread_kind(entry.name)) is not None:
        yield Reject(source_file=str(path), reason=unread)
    else:
        yield Skipped(source_file=str(path), reason=f"skipped: not a data file ({_suffix(entry.name)}); read are "
                      f"{', '.join(DATA_SUFFIXES)}, optionally {', '.join(COMPRESSION_SUFFIXES)}")


ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".tbz2", ".txz", ".7z", ".rar")


def _unread_kind(name: str) -> str | None:
    """Why a file that may hold data is not read: an archive or a compression the reader does not open; None
    for any other name (documents, scripts: not data)."""
    lower = name.lower()
    inner = _inner_name(lower)
    archive = next((s for s in ARCHIVE_SUFFIXES if inner.endswith(s) or lower.endswith(s)), None)
    if archive is not None:  # named with its compression: an archive .tar.gz
        return f"an archive ({name[lower.rfind(archive):]}) is not read: unpack it and name the folder as an input"
    compression = _compression(lower)
    if compression in UNSUPPORTED_COMPRESSION:
        return f"{compression} compression is not supported: decompress the file first"
    return None


def _suffix(name: str) -> str:
    suffix = Path(name).suffix
    return suffix if suffix else "no suffix"


def _link_problem(path: Path) -> str | None:
    """Why a symlink cannot be followed (broken, a loop), or None when it can."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return f"broken symlink: its target {os.readlink(path)!r} does not exist"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "symlink loop: the link never reaches a file"
        return f"cannot follow the symlink: {error.strerror or error}"
    return None


def read_file(path: Path, fmt: str | None = None) -> Iterator[Item]:
    """Records of one file."""
    compression = _compression(path.name)
    if compression in UNSUPPORTED_COMPRESSION:
        yield Reject(source_file=str(path), format=fmt, reason=f"{compression} compression is not supported: decompress the file first")
    elif path.name.lower().endswith(EVAL_SUFFIX):
        yield from read_inspect_eval(path, fmt)
    elif _inner_name(path.name).endswith(LINE_SUFFIXES):
        yield from _read_lines(path, fmt)
    else:
        yield from _read_whole(path, fmt)


def read_inspect_eval(path: Path, fmt: str | None = None) -> Iterator[Item]:
    """The samples of an inspect_ai ``.eval`` log (a zip of JSON files, zstd-compressed by recent versions),
    read through inspect_ai itself (the ``inspect`` extra) one sample at a time, then parsed by the inspect
    importer as the same sample of a JSON log would be (record index = the sample's position)."""
    from judge.importers.inspect_log import NAME, Sample

    file = str(path)
    if fmt not in (None, NAME):
        yield Reject(source_file=file, format=fmt, reason=f"an inspect_ai .eval log cannot be read as {fmt}")
        return
    try:
        from inspect_ai.log import read_eval_log, read_eval_log_samples
    except ImportError:
        yield Reject(source_file=file, format=NAME, reason="an inspect_ai .eval log: reading it needs inspect_ai "
                     "(pip install 'trajudge[inspect]'), or convert it first: inspect log convert FILE --to json")
        return
    count = 0
    try:
        header = read_eval_log(file, header_only=True).model_dump(mode="json", exclude_none=True)
        for sample in read_eval_log_samples(file, all_samples_required=False):
            record = Sample(header["eval"], sample.model_dump(mode="json", exclude_none=True))
            yield parse_record(record, Source(file, index=count), NAME)
            count += 1
    except Exception as error:  # a corrupt or truncated zip, a log version inspect_ai cannot read
        yield Reject(source_file=file, record_index=count if count else None, format=NAME,
                     reason=one_line(f"cannot read the .eval log: {type(error).__name__}: {error}"))
        return
    if count == 0:
        yield Reject(source_file=file, format=NAME, reason=f"inspect log has no samples (status {header.get('status')!r})")


# ----------------------------------------------------------------------------------------------------
# JSON Lines


@dataclass(frozen=True)
class LineSpan:
    """Lines ``[start, end)`` (byte offsets at line starts) of an uncompressed JSON Lines file, the first of them
    line ``first_line``: a part of a large file read on its own (:func:`split_lines_file`)."""

    start: int
    end: int
    first_line: int


def read_span(path: Path, span: LineSpan, fmt: str | None = None) -> Iterator[Item]:
    """The records of one span of a JSON Lines file, exactly as reading the whole file yields them for those
    lines (the same line numbers and rejects); the file-wide checks (its first record's format, an empty file)
    were made by :func:`split_lines_file`."""
    yield from _read_lines(path, fmt, span)


def split_lines_file(path: Path, part_bytes: int, fmt: str | None = None) -> list[LineSpan] | None:
    """Cut an uncompressed JSON Lines file larger than ``part_bytes`` into spans of about that many bytes, each
    ending at a line end; None when the file is read whole: small, compressed, not JSON Lines by name, or one
    whose first record is of a format that reads a file's records together (span exports)."""
    if _compression(path.name) or not _inner_name(path.name).endswith(LINE_SUFFIXES):
        return None
    try:
        size = path.stat().st_size
        if size <= part_bytes:
            return None
        with path.open("rb") as handle:
            # The first line with a record (not ended by \n within FIRST_LINE_BYTES, e.g. lone-\r line ends: whole).
            first = handle.readline(FIRST_LINE_BYTES)
            while first.endswith(b"\n") and not first.strip():
                first = handle.readline(FIRST_LINE_BYTES)
            if not first.endswith(b"\n") or first.startswith(_UTF16_BOMS):
                return None
            value = _value_of_line(first.removeprefix(codecs.BOM_UTF8).rstrip(b"\r\n"), str(path), 1, fmt)
            if isinstance(value, Reject) or _gathering_spec(value, fmt) is not None:
                return None
            spans: list[LineSpan] = []
            start, line = 0, 1
            while start < size:
                handle.seek(start)
                chunk = handle.read(part_bytes)
                rest = handle.readline() if chunk and not chunk.endswith(b"\n") else b""
                chunk += rest
                if not chunk:
                    break
                spans.append(LineSpan(start, start + len(chunk), line))
                # Line ends as _split_lines counts them: \n, \r\n, or a lone \r (a span ends after a \n).
                line += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
                start += len(chunk)
    except OSError:
        return None  # read whole, where the reader names the problem
    return spans if len(spans) > 1 else None


def _open_span(path: Path, span: LineSpan) -> io.BufferedIOBase:
    with path.open("rb") as handle:
        handle.seek(span.start)
        return io.BytesIO(handle.read(span.end - span.start))


def _read_lines(path: Path, fmt: str | None, span: LineSpan | None = None) -> Iterator[Item]:
    file = str(path)
    try:
        handle = _open_binary(path) if span is None else _open_span(path, span)
    except OSError as error:
        yield Reject(source_file=file, format=fmt, reason=f"cannot open: {error.strerror or error}")
        return
    records = 0
    number = 0
    # The first record decides whether the file is one a format reads whole (span exports: a trace's spans are
    # spread over lines); such a file's records are collected and handed to that format's ``gather``. A span of a
    # file was cut only after that first record decided against it.
    gathering: FormatSpec | None = None
    decided = span is not None
    gathered: list[tuple[Source, Any]] = []
    surrogates = False
    offset = 0 if span is None else span.first_line - 1
    with handle:
        try:
            for number, raw in ((n + offset, r) for n, r in _split_lines(handle)):
                if raw is None:
                    records += 1
                    yield Reject(source_file=file, line=number, format=fmt, reason=f"line longer than {MAX_LINE_BYTES} bytes: not read")
                    continue
                if number == 1:
                    if raw.startswith(_UTF16_BOMS):
                        yield Reject(source_file=file, line=1, format=fmt, reason="UTF-16/UTF-32 text (byte-order mark): convert the file to UTF-8")
                        return
                    raw = raw.removeprefix(codecs.BOM_UTF8)
                if not raw.strip():
                    continue
                records += 1
                if not decided or gathering is not None:
                    value = _value_of_line(raw, file, number, fmt)
                    if isinstance(value, Reject):
                        yield value
                        continue
                    if not decided:
                        decided, gathering = True, _gathering_spec(value, fmt)
                    if gathering is not None:
                        gathered.append((Source(file, line=number), value))
                        surrogates = surrogates or _may_spell_surrogates(raw)
                        continue
                    yield _finish(parse_record(value, Source(file, line=number), fmt), _may_spell_surrogates(raw))
                    continue
                yield _record_of_line(raw, file, number, fmt)
        except _READ_ERRORS as error:
            yield Reject(source_file=file, line=number + 1, format=fmt, reason=f"cannot read past line {number}: {type(error).__name__}: {error}")
            return
    if gathering is not None:
        yield from _gathered(gathering, gathered, surrogates)
    if records == 0 and span is None:
        yield Reject(source_file=file, format=fmt, reason="empty file: no records")


def _gathering_spec(record: Any, fmt: str | None) -> FormatSpec | None:
    spec = FORMATS.get(fmt or detect_format(record) or "")
    return spec if spec is not None and spec.gather is not None else None


def _gathered(spec: FormatSpec, records: list[tuple[Source, Any]], may_spell_surrogates: bool) -> Iterator[Item]:
    """The items of a format that reads a file's records together, checked as :func:`parse_record` checks one."""
    assert spec.gather is not None
    for item in spec.gather(records):
        if isinstance(item, Trajectory):
            try:
                check_depth(item)
            except RecordError as error:
                item = Reject(source_file=item.metadata.source_file or "", line=item.metadata.source_line, format=spec.name,
                              reason=one_line(f"trajectory {item.id}: {error}"))
        yield _finish(item, may_spell_surrogates)


def _split_lines(handle: io.BufferedIOBase) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, line without its ending)`` per line; ``None`` for a line over :data:`MAX_LINE_BYTES`.

    Lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r`` (raw CR and LF never occur inside a JSON value).
    """
    number = 0
    pending: list[bytes] = []  # the start of a line that runs on past the block in hand
    size = 0
    overflow = False
    after_cr = False  # the previous block ended with \r: a \n opening this block belongs to that line end
    while block := handle.read1(BLOCK_BYTES):  # read1: what a truncated stream held before its cut still comes out
        if after_cr and block.startswith(b"\n"):
            block = block[1:]
        after_cr = block.endswith(b"\r")
        lines, rest = _block_lines(block)
        for body in lines:
            if pending or overflow:  # the end of a line begun in an earlier block
                if not overflow:
                    size += len(body)
                    overflow = size > MAX_LINE_BYTES
                line = None if overflow else b"".join((*pending, body))
                pending, size, overflow = [], 0, False
            else:
                line = None if len(body) > MAX_LINE_BYTES else body
            number += 1
            yield number, line
        if rest and not overflow:
            pending.append(rest)
            size += len(rest)
            if size > MAX_LINE_BYTES:
                overflow, pending = True, []
    if pending or overflow:
        yield number + 1, None if overflow else b"".join(pending)


def _block_lines(block: bytes) -> tuple[list[bytes], bytes]:
    """The lines a block ends (without their line ends), and the start of the line it leaves open (``b""``: none).

    Most files end lines with \\n alone: those are found with ``bytes.find`` (memchr), about ten times faster
    than ``splitlines``, which tests every byte for each kind of line end; a block holding a \\r is split by it.
    """
    if b"\r" in block:
        lines = block.splitlines()
        return (lines, b"") if block.endswith((b"\n", b"\r")) else (lines, lines.pop())
    lines = []
    start = 0
    while (end := block.find(b"\n", start)) >= 0:
        lines.append(block[start:end])
        start = end + 1
    return lines, block[start:]


def _value_of_line(raw: bytes, file: str, number: int, fmt: str | None) -> Any:
    """The JSON value of a line, or a Reject saying why it has none."""
    try:
        # The common case without decoding the line first: jiter accepts bytes only when they are valid UTF-8 (it
        # checks every string; everything else must be ASCII), and then gives the value the decoded text gives.
        return from_json(raw)
    except (ValueError, TypeError):
        pass  # below: the decode names invalid UTF-8, and json.loads reads what jiter refuses or names the fault
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return Reject(source_file=file, line=number, format=fmt, reason=f"invalid UTF-8 at byte {error.start} of the line")
    try:
        return json.loads(text)  # not load_json: jiter has refused these bytes, so it refuses their text too
    except json.JSONDecodeError as error:
        return Reject(source_file=file, line=number, format=fmt, reason=f"broken JSON: {error.msg} (column {error.colno})")
    except RecursionError:
        return Reject(source_file=file, line=number, format=fmt, reason=_TOO_DEEP)


def _record_of_line(raw: bytes, file: str, number: int, fmt: str | None) -> Item:
    record = _value_of_line(raw, file, number, fmt)
    if isinstance(record, Reject):
        return record
    return _finish(parse_record(record, Source(file, line=number), fmt), _may_spell_surrogates(raw))


def _may_spell_surrogates(raw: bytes) -> bool:
    return _SURROGATE_ESCAPE.search(raw) is not None  # ~0.3 ms per MB (two `in` tests cost more)


def _finish(item: Item, may_spell_surrogates: bool) -> Item:
    """Replace lone surrogates in a trajectory whose source text may spell one (rare: checked only then)."""
    if may_spell_surrogates and isinstance(item, Trajectory):
        return replace_lone_surrogates(item)
    return item


# ----------------------------------------------------------------------------------------------------
# Whole JSON documents


def _read_whole(path: Path, fmt: str | None) -> Iterator[Item]:
    file = str(path)
    try:
        with _open_binary(path) as handle:
            data = _read_at_most(handle, MAX_DOCUMENT_BYTES + 1)
    except _READ_ERRORS as error:
        yield Reject(source_file=file, format=fmt, reason=f"cannot read: {type(error).__name__}: {error}")
        return
    if data.startswith(_UTF16_BOMS):
        yield Reject(source_file=file, line=1, format=fmt, reason="UTF-16/UTF-32 text (byte-order mark): convert the file to UTF-8")
        return
    if _looks_like_jsonl(data):
        yield from _read_lines(path, fmt)
        return
    if len(data) > MAX_DOCUMENT_BYTES:
        yield Reject(source_file=file, format=fmt, reason=f"a JSON document over {MAX_DOCUMENT_BYTES} bytes is not read whole: write it as JSON Lines")
        return
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = _count_lines(data, 0, error.start) + 1
        yield Reject(source_file=file, line=line, format=fmt, reason=f"invalid UTF-8 at byte {error.start} (line {line})")
        return
    if not text.strip():
        yield Reject(source_file=file, format=fmt, reason="empty file: no records")
        return
    cut = False
    try:
        document, starts = _parse_document(text)
    except json.JSONDecodeError as error:
        yield _broken_json(file, fmt, text, error)
        return
    except RecursionError:
        # Too deep for the parser: cut every value below MAX_DEPTH, so the other records can still be read;
        # a record that lost a value is rejected below with the line of the cut.
        cut = True
        text = _cut_deep(text, MAX_DEPTH)
        try:
            document, starts = _parse_document(text)
        except json.JSONDecodeError as error:
            yield _broken_json(file, fmt, text, error)
            return
    may_spell_surrogates = _may_spell_surrogates(data)
    del data
    produced = False
    for item in _read_document(document, file, fmt, _LineFinder(text, starts), cut):
        produced = True
        yield _finish(item, may_spell_surrogates)
    if not produced:
        yield Reject(source_file=file, format=fmt, reason="no records: the document is empty")


def _read_at_most(handle: io.BufferedIOBase, limit: int) -> bytes:
    """Up to ``limit`` bytes, in chunks (``read(limit)`` would allocate ``limit`` bytes up front)."""
    chunks: list[bytes] = []
    size = 0
    while size < limit and (chunk := handle.read(min(1 << 24, limit - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _broken_json(file: str, fmt: str | None, text: str, error: json.JSONDecodeError) -> Reject:
    line = _count_lines(text, 0, error.pos) + 1
    column = error.pos - max(text.rfind("\n", 0, error.pos), text.rfind("\r", 0, error.pos))
    return Reject(source_file=file, line=line, format=fmt, reason=f"broken JSON: {error.msg} (line {line} column {column})")


def _count_lines(text: AnyStr, start: int, end: int) -> int:
    """Line ends between two offsets: ``\\n``, ``\\r\\n`` or a lone ``\\r`` each count once."""
    nl, cr, crlf = ("\n", "\r", "\r\n") if isinstance(text, str) else (b"\n", b"\r", b"\r\n")
    return text.count(nl, start, end) + text.count(cr, start, end) - text.count(crlf, start, end)


def _looks_like_jsonl(data: bytes) -> bool:
    """A .json file that is really JSON Lines: several lines, the first of which is a whole JSON object."""
    lines = (line for match in re.finditer(rb"[^\r\n]+", data) if (line := match.group()).strip())
    first, second = next(lines, None), next(lines, None)
    if first is None or second is None or not first.lstrip().startswith((b"{", codecs.BOM_UTF8 + b"{")):
        return False
    try:
        json.loads(first.decode("utf-8-sig"))
    except RecursionError:
        return True  # a whole record too deep to parse: one record per line all the same
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    return True


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]  # the pattern matches everywhere


def _parse_document(text: str) -> tuple[Any, list[int] | None]:
    """The parsed document, and for a top-level array the offset where each element starts (for lines)."""
    start = _skip_space(text, 0)
    if not text.startswith("[", start):
        return json.loads(text), None
    values: list[Any] = []
    starts: list[int] = []
    pos = _skip_space(text, start + 1)
    if text.startswith("]", pos):
        pos += 1
    else:
        while True:
            value, end = _DECODER.raw_decode(text, pos)
            values.append(value)
            starts.append(pos)
            pos = _skip_space(text, end)
            if text.startswith(",", pos):
                pos = _skip_space(text, pos + 1)
            elif text.startswith("]", pos):
                pos += 1
                break
            else:
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
    end = _skip_space(text, pos)
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return values, starts


class _LineFinder:
    """The line where each element of a top-level array starts; counted on first use (for a reject) only."""

    def __init__(self, text: str, starts: list[int] | None) -> None:
        self._text, self._starts = text, starts
        self._lines: list[int] | None = None

    def __call__(self, index: int) -> int | None:
        if self._starts is None:
            return None
        if self._lines is None:
            self._lines, line, previous = [], 1, 0
            for start in self._starts:
                line += _count_lines(self._text, previous, start)
                previous = start
                self._lines.append(line)
        return self._lines[index]


_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)|[\[\]{}]', re.DOTALL)  # a string (closed or not) or a bracket
_CUT = "\x00trajudge-cut-at-line:"


def _cut_deep(text: str, limit: int) -> str:
    """``text`` with every value that opens below ``limit`` levels replaced by a marker string naming its line,
    followed by as many newlines as the value spanned, so every line keeps its number.

    Only used on a document too deep for the JSON parser; a Python scan of the brackets outside strings.
    """
    pieces: list[str] = []
    depth, last, cut_from = 0, 0, -1
    line, counted = 1, 0
    for match in _TOKEN.finditer(text):
        char = text[match.start()]
        if char == '"':
            continue
        if char in "[{":
            depth += 1
            if depth == limit + 1:
                cut_from = match.start()
        else:
            if depth == limit + 1 and cut_from >= 0:
                line += _count_lines(text, counted, cut_from)
                counted = cut_from
                pieces += [text[last:cut_from], json.dumps(f"{_CUT}{line}"), "\n" * _count_lines(text, cut_from, match.end())]
                last, cut_from = match.end(), -1
            depth -= 1
    pieces.append(text[last:])
    return "".join(pieces)


def _cut_line(value: Any) -> int | None:
    """The line of the first :func:`_cut_deep` marker inside ``value``, or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.startswith(_CUT):
                return int(item[len(_CUT):])
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _read_document(document: Any, file: str, fmt: str | None, line_of: _LineFinder, cut: bool) -> Iterator[Item]:
    """Records of a parsed document. ``line_of``: the line of an element of a top-level array; ``cut``: the
    document went through :func:`_cut_deep`, so a record holding a marker is rejected."""

    def record(part: Any, src: Source, name: str | None, in_array: bool = False) -> Item:
        cut_at = _cut_line(part) if cut else None
        if cut_at is not None:
            too_deep = _reject(src, name, _TOO_DEEP)
            too_deep.line = cut_at  # where the value too deep opens
            return too_deep
        item = parse_record(part, src, name)
        if cut and isinstance(item, Trajectory) and (cut_at := _cut_line(item.model_dump())) is not None:
            too_deep = _reject(src, name, _TOO_DEEP)  # a cut value outside the record reached it
            too_deep.line = cut_at
            item = too_deep
        if in_array and isinstance(item, Reject) and item.line is None and src.index is not None:
            item.line = line_of(src.index)
        return item

    name = fmt or detect_format(document)
    spec = FORMATS.get(name) if name else None
    if spec is not None and spec.gather is not None:
        cut_at = _cut_line(document) if cut else None
        if cut_at is not None:
            yield Reject(source_file=file, line=cut_at, format=name, reason=_TOO_DEEP)
            return
        yield from _gathered(spec, [(Source(file), document)], False)
        return
    if spec is not None and spec.split is not None:
        try:
            parts = spec.split(document)
        except RecordError as error:
            yield Reject(source_file=file, format=name, reason=one_line(str(error)))
            return
        if parts is not None:
            for index, part in parts:
                yield record(part, Source(file, index=index), name)
            return
    if isinstance(document, list) and not (spec is not None and spec.whole_list and spec.detect(document)):
        for index, element in enumerate(document):
            yield record(element, Source(file, index=index), fmt, in_array=True)
        return
    yield record(document, Source(file), name)


# ----------------------------------------------------------------------------------------------------
# One record


def parse_record(record: Any, src: Source, fmt: str | None = None) -> Item:
    """One record -> Trajectory, or a Reject naming file, line/index, format and a one-line reason."""
    try:
        name = fmt or detect_format(record)
    except RecursionError:
        return _reject(src, fmt, _TOO_DEEP)
    if name is None:
        return _reject(src, None, f"unknown format: no messages/traj/history/steps/samples found ({_shape(record)})")
    spec: FormatSpec = FORMATS[name]
    try:
        trajectory = spec.parse(record, src)
        check_depth(trajectory)
        check_integers(trajectory)
        return trajectory
    except RecordError as error:
        return _reject(src, name, str(error))
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return _reject(src, name, f"invalid value at {where}: {first.get('msg')}")
    except RecursionError:
        return _reject(src, name, _TOO_DEEP)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as error:
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
    """Makes trajectory ids unique within one import, whatever ids the input holds.

    A repeated id gets the first free ``~2``, ``~3``... in input order (``x``, ``x~2``, ``x`` -> ``x``, ``x~2``,
    ``x~3``), and the renamed trajectory keeps the id it had in ``metadata.extra["original_id"]``.
    ``renamed`` counts the renames.
    """

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self._next: dict[str, int] = {}
        self.renamed = 0

    def __call__(self, trajectory: Trajectory) -> Trajectory:
        new_id = self.claim(trajectory.id)
        return trajectory if new_id == trajectory.id else with_new_id(trajectory, new_id)

    def claim(self, original: str) -> str:
        """The id of the next trajectory whose id is ``original`` (``original`` itself when it is free), taken.
        A merge of separately imported parts calls it per id and parses only the rare renamed record."""
        if original not in self._taken:
            self._taken.add(original)
            return original
        number = self._next.get(original, 2)
        while f"{original}~{number}" in self._taken:
            number += 1
        new_id = f"{original}~{number}"
        self._next[original] = number + 1
        self._taken.add(new_id)
        self.renamed += 1
        return new_id


def with_new_id(trajectory: Trajectory, new_id: str) -> Trajectory:
    """``trajectory`` renamed to ``new_id``, its id before kept in ``metadata.extra["original_id"]``."""
    extra = {**trajectory.metadata.extra, "original_id": trajectory.id}
    return trajectory.model_copy(update={"id": new_id, "metadata": trajectory.metadata.model_copy(update={"extra": extra})})
