"""Import to files: stream records into a canonical JSONL file and a rejects JSONL file, counting as it goes.

Shared by ``judge import`` and :func:`judge.pipeline.import_to_run`, so both write the same rows the same way.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from judge.pipeline import ImportStats
from judge.schema import Reject


def write_import(
    inputs: Iterable[str | Path],
    out_path: Path,
    rejects_path: Path,
    fmt: str | None = None,
    keep_rejects: list[Reject] | None = None,
) -> ImportStats:
    """Write every trajectory of ``inputs`` to ``out_path`` and every reject to ``rejects_path``.

    Both files are written to a temporary name and renamed when done, so an interrupted import leaves no
    half-written file under the final name. Memory stays flat: one record at a time. When ``keep_rejects``
    is given, rejects are also appended to it (for the CLI's summary).
    """
    from judge.importers import iter_records

    stats = ImportStats()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    rejects_path.parent.mkdir(parents=True, exist_ok=True)
    out_tmp = out_path.with_name(out_path.name + ".tmp")
    rejects_tmp = rejects_path.with_name(rejects_path.name + ".tmp")
    try:
        with out_tmp.open("w", encoding="utf-8") as out, rejects_tmp.open("w", encoding="utf-8") as rejects:
            for item in iter_records(list(inputs), fmt=fmt):
                stats.read += 1
                if isinstance(item, Reject):
                    stats.rejected += 1
                    rejects.write(item.model_dump_json() + "\n")
                    if keep_rejects is not None:
                        keep_rejects.append(item)
                    continue
                stats.imported += 1
                fmt_name = item.metadata.source_format
                stats.by_format[fmt_name] = stats.by_format.get(fmt_name, 0) + 1
                out.write(item.to_json_line() + "\n")
        os.replace(out_tmp, out_path)
        os.replace(rejects_tmp, rejects_path)
    finally:
        for tmp in (out_tmp, rejects_tmp):
            if tmp.exists():
                tmp.unlink()
    return stats


def default_rejects_path(out_path: Path) -> Path:
    """``x.jsonl`` -> ``x.rejects.jsonl`` next to it."""
    name = out_path.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else out_path.stem
    return out_path.with_name(f"{stem}.rejects.jsonl")
