"""Columnar copies of a run's verdicts, clusters and scores, as Parquet beside the JSONL (docs/parquet.md).

The JSONL files stay the run's record; the Parquet files hold the same rows with typed columns, so a
million-row run is queried with pandas or DuckDB without reading JSON:

- ``verdicts.parquet``: one row per (trajectory, pass), the columns of :class:`judge.schema.Verdict` (issues
  nested as a list of structs, usage as a struct);
- ``clusters.parquet``: one row per cluster, the columns of :class:`judge.schema.Cluster` (members nested);
- ``issues.parquet``: one row per cluster, majority or minority, flat: the cluster's columns without its
  members, plus ``pass_keys`` (the passes that raised it);
- ``scores.parquet``: one row per trajectory, the columns of :class:`judge.schema.ScoreRow` (human review
  nested in ``review``), then flat ``reviewed``, ``reviewers``, ``machine_score`` and ``machine_release``, so the
  judges' result is beside the human-adjusted one without unnesting.

Each Arrow schema is derived from the pydantic model that writes the JSONL row, so the two cannot drift. The
JSONL is converted by Arrow's streaming JSON reader and written in row groups of at most :data:`ROW_GROUP_ROWS`
rows, so memory stays flat.

One row never stops the tables (issue 28: a turn beyond int64 failed every run, and every rerun): a row Arrow
cannot convert (a field the schema does not know, an integer beyond int64) is left out of the table, named on
stderr with its file and line, and listed in run.json (``tables.skipped_rows``, shown by summary.json); the
other rows are written. Not a silently dropped column: the whole row is left out, and said so.
"""

from __future__ import annotations

import io
import os
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, Union, cast, get_args, get_origin

from pydantic import BaseModel

from judge import rundir
from judge.schema import Cluster, ScoreRow, Verdict

try:  # this module is imported where the tables are written (judge.pipeline imports it there)
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json
    import pyarrow.parquet
except ImportError as error:  # a dependency of trajudge: only a broken install lacks it
    raise ImportError("writing the Parquet tables needs pyarrow (a dependency of trajudge: pip install pyarrow)") from error

ROW_GROUP_ROWS = 64_000
CHECK_BYTES = 32 << 20  # after a failed conversion, lines are checked in chunks of about this size (bounds memory)
ROW_GROUP_BYTES = 32 << 20  # flush a row group earlier when its rows are large (raw judge outputs): bounds memory
MIN_BLOCK = 1 << 20  # Arrow's JSON reader needs a block larger than the longest line
Derive = Callable[[pa.RecordBatch], pa.RecordBatch]  # a table's rows made from its JSONL file's batch


def arrow_type(annotation: Any) -> pa.DataType:
    """The Arrow type of a pydantic field annotation (str, int, float, bool, Literal, Optional, list, models)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        present = [a for a in args if a is not type(None)]
        if len(present) != 1:
            raise TypeError(f"no Arrow type for the union {annotation!r}")
        return arrow_type(present[0])
    if origin is Literal:
        kinds = {type(a) for a in args}
        if kinds == {str}:
            return pa.string()
        if kinds == {int}:
            return pa.int64()
        raise TypeError(f"no Arrow type for {annotation!r}")
    if origin is list:
        return pa.list_(arrow_type(args[0]))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct(model_schema(annotation))
    scalars: dict[Any, pa.DataType] = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    if annotation in scalars:
        return scalars[annotation]
    raise TypeError(f"no Arrow type for {annotation!r}")


def model_schema(model: type[BaseModel]) -> pa.Schema:
    """The Arrow schema of a row model: one column per field, in the model's order (every column nullable)."""
    return pa.schema([pa.field(name, arrow_type(field.annotation)) for name, field in model.model_fields.items()])


def issues_schema() -> pa.Schema:
    """``issues.parquet``: the cluster's columns without ``members``, then ``pass_keys``."""
    fields = [f for f in model_schema(Cluster) if f.name != "members"]
    return pa.schema([*fields, pa.field("pass_keys", pa.list_(pa.string()))])


def scores_schema() -> pa.Schema:
    """``scores.parquet``: the score row's columns, then the review's figures flat (as ``judge.frames`` has them)."""
    return pa.schema([*model_schema(ScoreRow), pa.field("reviewed", pa.bool_()), pa.field("reviewers", pa.list_(pa.string())),
                      pa.field("machine_score", pa.int64()), pa.field("machine_release", pa.bool_())])


# (JSONL file, its row model, the Parquet files made from it)
TABLES: tuple[tuple[str, type[BaseModel], tuple[str, ...]], ...] = (
    (rundir.VERDICTS, Verdict, (rundir.VERDICTS_PARQUET,)),
    (rundir.CLUSTERS, Cluster, (rundir.CLUSTERS_PARQUET, rundir.ISSUES_PARQUET)),
    (rundir.SCORES, ScoreRow, (rundir.SCORES_PARQUET,)),
)


def write_tables(run_dir: Path) -> dict[str, Path]:
    """Write the Parquet copies of the run's verdicts, clusters and scores; returns their paths by file name.

    A JSONL file the run does not have yet gives no table (a stale table of an earlier run is removed). A row
    that cannot be converted is left out, with a line on stderr, and listed in run.json's ``tables`` section.
    """
    run = rundir.RunDir(run_dir)
    written: dict[str, Path] = {}
    skipped: list[rundir.BadRow] = []
    for source, model, targets in TABLES:
        if not run.has(source):
            for name in targets:
                run.file(name).unlink(missing_ok=True)
            continue
        derived = {rundir.ISSUES_PARQUET: (issues_schema(), _issue_rows), rundir.SCORES_PARQUET: (scores_schema(), _score_rows)}
        outputs = [(run.file(name), *(derived.get(name) or (model_schema(model), None))) for name in targets]
        left_out = _convert(run.file(source), model, outputs)
        for row in left_out:
            print(f"warning: {source}:{row.line}: row left out of {', '.join(targets)}: {row.error}", file=sys.stderr)
        skipped += left_out
        written.update({name: run.file(name) for name in targets})
    _record_skipped(run, skipped)
    return written


def _record_skipped(run: rundir.RunDir, skipped: list[rundir.BadRow]) -> None:
    """run.json's ``tables.skipped_rows``: the rows the last writing left out (the section goes when none was)."""
    if not skipped and run.manifest().tables is None:
        return  # nothing to record and nothing to clear: run.json is left as it is (or absent)
    with run.update_manifest() as manifest:
        if skipped:
            manifest.tables = rundir.TablesSection(skipped_rows=[rundir.TableSkip(file=r.file, line=r.line, error=r.error)
                                                                 for r in skipped])
        else:
            manifest.tables = None
            manifest.model_fields_set.discard("tables")  # left out of run.json, not written as null


def _issue_rows(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of cluster rows as issue rows: ``members`` replaced by the pass keys of its members."""
    members = cast("pa.ListArray[Any]", batch.column("members"))  # a list of member structs (the Cluster schema)
    # offsets and values stay paired even for a sliced list array (values are not sliced)
    pass_keys = pa.ListArray.from_arrays(members.offsets, cast(pa.StructArray, members.values).field("pass_key"))
    columns = [batch.column(f.name) for f in issues_schema() if f.name != "pass_keys"]
    return pa.RecordBatch.from_arrays([*columns, pass_keys], schema=issues_schema())


def _score_rows(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A batch of score rows with the review's figures added flat: ``reviewed`` (a human decision applies),
    ``reviewers`` (null when not reviewed), and the judges' ``machine_score``/``machine_release`` (the final ones
    when not reviewed)."""
    review = batch.column("review")
    reviewed = pc.is_valid(review)
    machine = pc.struct_field(review, "machine")
    columns = [*batch.columns, reviewed,
               pc.struct_field(review, "reviewers"),  # null when not reviewed (a list scalar would import pandas)
               pc.if_else(reviewed, pc.struct_field(machine, "score"), batch.column("score")),
               pc.if_else(reviewed, pc.struct_field(machine, "release"), batch.column("release"))]
    return pa.RecordBatch.from_arrays(columns, schema=scores_schema())


def _convert(source: Path, model: type[BaseModel], outputs: list[tuple[Path, pa.Schema, Derive | None]]) -> list[rundir.BadRow]:
    """Stream ``source`` (JSONL) into one Parquet file per output, atomically; returns the rows left out.

    Arrow's reader stops at the first row it cannot convert, naming no line: then the lines are checked in
    chunks (each chunk parsed whole, a chunk that fails halved until the bad lines are found), the good ones
    copied to a temporary file beside the source, and that file converted instead.
    """
    schema = model_schema(model)
    try:
        _write(source, schema, outputs)
        return []
    except pa.ArrowInvalid:
        pass
    kept = source.with_name(source.name + ".convertible.tmp")
    try:
        bad = _copy_convertible(source, kept, model, schema)
        try:
            _write(kept, schema, outputs)
        except pa.ArrowInvalid as error:  # every line converts alone but not together: not a row's fault
            raise ValueError(f"{source}: cannot convert to Parquet: {_first_bad_row(source, model) or error}") from error
    finally:
        kept.unlink(missing_ok=True)
    return bad


def _write(source: Path, schema: pa.Schema, outputs: list[tuple[Path, pa.Schema, Derive | None]]) -> None:
    """Convert ``source`` into the outputs (temporary names renamed when complete); ArrowInvalid on a bad row."""
    writers = []
    temps = [path.with_name(path.name + ".tmp") for path, _, _ in outputs]
    try:
        for tmp, (_, out_schema, _) in zip(temps, outputs):
            writers.append(pyarrow.parquet.ParquetWriter(tmp, out_schema, compression="zstd"))
        pending: list[pa.RecordBatch] = []
        rows = size = 0

        def flush() -> None:
            nonlocal rows, size
            if not pending:
                return
            table = pa.Table.from_batches(pending, schema=schema)
            for writer, (_, out_schema, derive) in zip(writers, outputs):
                part = table if derive is None else pa.Table.from_batches(
                    [derive(b) for b in table.to_batches()], schema=out_schema)
                writer.write_table(part, row_group_size=ROW_GROUP_ROWS)
            pending.clear()
            rows = size = 0

        for batch in _batches(source, schema):
            pending.append(batch)
            rows += batch.num_rows
            size += batch.nbytes
            if rows >= ROW_GROUP_ROWS or size >= ROW_GROUP_BYTES:
                flush()
        flush()
        for writer in writers:
            writer.close()
        writers.clear()
        for tmp, (path, _, _) in zip(temps, outputs):
            os.replace(tmp, path)
    finally:
        for writer in writers:
            writer.close()
        for tmp in temps:
            tmp.unlink(missing_ok=True)


def _parse_options(schema: pa.Schema) -> pyarrow.json.ParseOptions:
    return pyarrow.json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error", newlines_in_values=False)


def _batches(source: Path, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    """Record batches of a JSONL file typed by ``schema``; ArrowInvalid at a row that does not convert (a field
    the schema lacks, an integer beyond int64)."""
    with source.open("rb") as handle:
        longest = max(map(len, handle), default=0)
    if longest <= 1:  # empty, or blank lines only: Arrow's reader refuses an empty input
        return
    reader = pyarrow.json.open_json(source, read_options=pyarrow.json.ReadOptions(use_threads=False, block_size=max(MIN_BLOCK, 2 * longest)),
                                    parse_options=_parse_options(schema))
    yield from reader


def _copy_convertible(source: Path, target: Path, model: type[BaseModel], schema: pa.Schema) -> list[rundir.BadRow]:
    """Copy the lines of ``source`` that Arrow converts to ``target``; return the others as bad rows (file, line,
    the reason: the row model's when it refuses the row too, as it names the field, else Arrow's). Reads about
    :data:`CHECK_BYTES` at a time."""
    bad: list[rundir.BadRow] = []
    chunk: list[tuple[int, bytes]] = []
    size = 0
    with source.open("rb") as lines, target.open("wb") as out:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            chunk.append((number, line if line.endswith(b"\n") else line + b"\n"))
            size += len(line)
            if size >= CHECK_BYTES:
                _check_chunk(chunk, model, schema, source.name, out, bad)
                chunk, size = [], 0
        _check_chunk(chunk, model, schema, source.name, out, bad)
    return bad


def _check_chunk(chunk: list[tuple[int, bytes]], model: type[BaseModel], schema: pa.Schema, name: str, out: Any,
                 bad: list[rundir.BadRow]) -> None:
    """Write the lines of ``chunk`` that convert to ``out``, in order; append the others to ``bad``."""
    if not chunk:
        return
    problem = _arrow_problem(b"".join(line for _, line in chunk), schema)
    if problem is None:
        out.writelines(line for _, line in chunk)
    elif len(chunk) == 1:
        number, line = chunk[0]
        bad.append(rundir.BadRow(name, number, _model_problem(line, model) or problem))
    else:
        half = len(chunk) // 2
        _check_chunk(chunk[:half], model, schema, name, out, bad)
        _check_chunk(chunk[half:], model, schema, name, out, bad)


def _model_problem(line: bytes, model: type[BaseModel]) -> str | None:
    """Why the row model refuses a line (the first error, one line), or None when it reads it."""
    try:
        model.model_validate_json(line)
    except ValueError as error:
        return " ".join(" ".join(str(error).splitlines()[:3]).split())
    return None


def _arrow_problem(data: bytes, schema: pa.Schema) -> str | None:
    """Why Arrow's JSON reader refuses these lines (its message, one line), or None when it converts them."""
    try:
        pyarrow.json.read_json(io.BytesIO(data), parse_options=_parse_options(schema),
                               read_options=pyarrow.json.ReadOptions(use_threads=False, block_size=max(MIN_BLOCK, len(data) + 1)))
    except pa.ArrowInvalid as error:
        return " ".join(str(error).split())
    return None


def _first_bad_row(source: Path, model: type[BaseModel]) -> str | None:
    """Where a file Arrow refused first fails its row model (Arrow's message names no line)."""
    try:
        for row in rundir.read_jsonl(source, model):
            del row
    except ValueError as error:
        return " ".join(str(error).splitlines()[:2])
    return None
