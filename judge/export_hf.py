"""``judge export --format hf``: a folder that Hugging Face ``datasets`` loads as it is.

``train.parquet`` and ``test.parquet`` (``datasets.load_dataset("parquet", data_dir=DIR)`` or, through the
card's YAML header, ``load_dataset(DIR)``) and a ``README.md`` dataset card. Each row is one sample with
``messages`` (role, content, name, tool_calls, tool_call_id, weight, reasoning_content), ``tools`` (the OpenAI
tools list as JSON text: schemas differ per tool, which a columnar type cannot hold) and the ids
(``trajectory_id``, ``query_id``, ``turn`` for per-turn samples; the ids the OpenAI form keeps in the index).
Writing needs ``pyarrow`` (the ``hf`` extra), not ``datasets``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

BATCH_ROWS = 256


def require_pyarrow() -> None:
    """Fail early, with the install line, when pyarrow is missing."""
    try:
        import pyarrow  # noqa: F401
    except ImportError as error:
        raise ValueError("--format hf needs pyarrow (a dependency of trajudge): pip install pyarrow") from error


def schema() -> pa.Schema:
    """The parquet schema (fixed, so an all-null column in a small export still has its type)."""
    import pyarrow as pa

    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
    message = pa.struct([("role", pa.string()), ("content", pa.string()), ("name", pa.string()),
                         ("tool_calls", pa.list_(call)), ("tool_call_id", pa.string()), ("weight", pa.int8()),
                         ("reasoning_content", pa.string())])
    columns: list[tuple[str, pa.DataType]] = [("trajectory_id", pa.string()), ("query_id", pa.string()),
                                              ("turn", pa.int32()), ("messages", pa.list_(message)), ("tools", pa.string())]
    return pa.schema(columns)


def to_row(sample: dict[str, Any], ids: dict[str, Any]) -> dict[str, Any]:
    """A rendered sample (OpenAI-like messages) as a parquet row."""
    tools = sample.get("tools")
    return {**ids, "messages": sample["messages"], "tools": json.dumps(tools, ensure_ascii=False) if tools else None}


def write_parquet(path: Path, samples: Iterable[tuple[dict[str, Any], dict[str, Any]]]) -> int:
    """Write (sample, ids) pairs to ``path`` in batches; returns the row count. Written to a temporary name first;
    no file when there is no row (``datasets`` cannot load an empty parquet split)."""
    with SampleWriter(path) as writer:
        for sample, ids in samples:
            writer.write(sample, ids)
    return writer.count


class SampleWriter:
    """Push (sample, ids) pairs into one parquet split, :data:`BATCH_ROWS` rows per batch (see :func:`write_parquet`):
    the export writes both sides in one pass over the run."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.count = 0
        self._tmp = self.path.with_name(self.path.name + ".tmp")
        self._batch: list[dict[str, Any]] = []
        self._writer: Any = None

    def __enter__(self) -> SampleWriter:
        return self

    def write(self, sample: dict[str, Any], ids: dict[str, Any]) -> None:
        self._batch.append(to_row(sample, ids))
        if len(self._batch) >= BATCH_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._batch:
            return
        self._writer = self._writer or pq.ParquetWriter(self._tmp, schema())
        self._writer.write_table(pa.Table.from_pylist(self._batch, schema=schema()))
        self.count += len(self._batch)
        self._batch = []

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        try:
            if kind is None:
                self._flush()
        finally:
            if self._writer is not None:
                self._writer.close()
        self.path.unlink(missing_ok=True)  # an earlier export's file must not stand in for an empty side
        if kind is None and self.count:
            self._tmp.replace(self.path)
        else:
            self._tmp.unlink(missing_ok=True)


def card_text(record: dict[str, Any]) -> str:
    """The dataset card: a YAML header naming the splits' files, then what the rows are and how they were chosen."""
    files = record["files"]
    lines = ["---", "configs:", "- config_name: default", "  data_files:"]
    for side in ("train", "test"):
        if side in files:  # a side without samples has no file
            lines += [f"  - split: {side}", f"    path: {files[side]}"]
    lines += ["tags:", "- trajudge", "- agent-trajectories", "- tool-use", "---", ""]
    per_turn = record["per_turn"]
    filters = record["filters"]
    lines += [
        "# Agent trajectories exported by trajudge",
        "",
        f"Exported from the scored run `{record['run']}` by `judge export --format hf`"
        + (" --per-turn" if per_turn else "") + ".",
        "",
        "| split | trajectories | queries | samples | trained turns |",
        "|---|---|---|---|---|",
    ]
    for side in ("train", "test"):
        counts = record[side]
        lines.append(f"| {side} | {counts['trajectories']} | {counts['queries']} | {counts['samples']} | "
                     f"{counts['trained_turns']} |")
    lines += [
        "",
        "## Rows",
        "",
        ("One row per trained turn: the history up to that assistant turn, only the last assistant message trained."
         if per_turn else "One row per trajectory: the whole conversation, each assistant message weighted."),
        "`messages` follow the OpenAI chat form (`role`, `content`, `tool_calls`, `tool_call_id`, `name`); `weight` is 1 "
        "on the assistant messages to train on and 0 on the rest (context only); `reasoning_content` holds the "
        f"assistant's native reasoning (reasoning mode: `{record['reasoning']}`). `tools` is the OpenAI tools list as "
        "JSON text (`json.loads` it). `trajectory_id`, `query_id` (and `turn` for per-turn rows) tie a row to the run.",
        "",
        "## Selection and split",
        "",
        f"Released trajectories only{' plus those the release gate held back' if filters['include_unreleased'] else ''}"
        f"{', score at least ' + str(filters['min_score']) if filters['min_score'] is not None else ''}"
        f"{', without majority ' + '/'.join(filters['exclude_categories']) + ' issues' if filters['exclude_categories'] else ''}. "
        "A turn at or after the first majority issue of a trajectory is not trained (weight 0).",
        f"Split by original query (seed {record['seed']}, test size {record['test_size']}): all trajectories of one "
        "query are on one side.",
        "",
        "## Licence",
        "",
        "The rows are the recorded agent logs: they carry the licence and terms of the logs they were imported from.",
        "",
    ]
    return "\n".join(lines)


def write_card(path: Path, record: dict[str, Any]) -> None:
    path.write_text(card_text(record), encoding="utf-8")
