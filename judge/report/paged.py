"""The paged layout's data files: ``report_data/`` beside ``report.html``.

- ``report_data/index.js``: one row per trajectory (the index the page lists, sorts, searches and filters);
- ``report_data/v/<k>.js``: shard ``k``, the viewer data of consecutive trajectories (each ``[view, trajectory]``:
  :func:`judge.report.viewer.view_json` and the trajectory's canonical JSON, which the page's script renders),
  about :data:`SHARD_BYTES` each, so opening one trajectory reads one small file.

Both are scripts, not JSON: a page opened from disk (file://) may not fetch anything, but its script may
insert a script element. Each file is a single call of the page's ``trajudgeData`` function with JSON
arguments, written while the run streams past (rows and viewer data are never held for the whole batch). JSON
is a subset of JavaScript (since ES2019), so the JSON texts are written as they are, never encoded again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from judge.jsonenc import compact_json
from judge.report.viewer import address

DATA_DIR = "report_data"
INDEX_FILE = "index.js"
SHARD_DIR = "v"
SHARD_BYTES = 256 * 1024  # a shard closes once its viewer data reach this size
SHARD_ROWS = 64  # ... or this many trajectories
INDEX_COLUMNS = ("id", "score", "release", "turns", "majority", "severe", "minority", "cost", "outcome", "route",
                 "categories", "tags", "text", "viewable", "review", "address")


def index_review(marker: dict[str, Any] | None) -> dict[str, Any] | None:
    """The index's ``review`` column of a row's review marker (:func:`judge.report.summary.review_marker`):
    None when no human decision is recorded, else who decided, the judges' score and release beside the row's,
    whether a reviewer released it against the gate or the score, and how many decisions are stale."""
    if marker is None:
        return None
    return {"by": ", ".join(marker["reviewers"]), "score": marker["machine_score"],
            "release": int(bool(marker["machine_release"])),
            "over": int(bool(marker["release_decision"] and (marker["over_failed_checks"] or marker["over_score"]))),
            "stale": marker["stale"]}


# At most this many pieces go to one os.writev (its IOV_MAX: 1024 on Linux; POSIX promises 16, -1 is no limit).
WRITEV_PIECES = max(16, os.sysconf("SC_IOV_MAX")) if hasattr(os, "writev") else 0


def write_pieces(path: Path, pieces: list[bytes]) -> None:
    """A new file of ``pieces`` one after another. The system gathers them (``os.writev``), so a shard (~256 kB)
    is never joined into one more copy in memory; where there is no ``os.writev`` (Windows) they are joined."""
    with path.open("wb") as out:
        if not hasattr(os, "writev"):
            out.write(b"".join(pieces))
            return
        start = 0
        while start < len(pieces):
            written = os.writev(out.fileno(), pieces[start:start + WRITEV_PIECES])
            # A regular file takes everything but on a full disk or a signal: go on after what was written.
            while start < len(pieces) and written >= len(pieces[start]):
                written -= len(pieces[start])
                start += 1
            if written:
                pieces[start] = pieces[start][written:]


class PagedWriter:
    """Writes ``index.js`` and the shards into ``folder`` (the build's copy of report_data)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.shards = self.folder / SHARD_DIR
        self.shards.mkdir(parents=True)
        self.index: IO[str] = (self.folder / INDEX_FILE).open("w", encoding="utf-8")
        self.index.write('trajudgeData("index", [\n')
        self.rows = 0
        self.starts: list[int] = []  # the first index row of each shard
        self.pieces: list[bytes] = []  # the open shard's viewer data, with the separators between views
        self.views = 0  # ... of this many trajectories
        self.size = 0

    def add(self, row: dict[str, Any], label: str, text: str, view: Sequence[bytes] | None) -> None:
        """One row of the index (``row`` from :func:`judge.report.summary.trajectory_row`, shown as ``label``)
        and its viewer data: one JSON text, as UTF-8 pieces that follow each other (None: a score row without a
        trajectory, nothing to show). The pieces are written as they are, never joined in memory."""
        score = "unscored" if row["score"] is None else str(row["score"])
        values = [label, score, int(bool(row["release"])), row["turns"], row["majority_issues"], row["severe"],
                  row["minority_issues"], row["judge_cost_usd"], row["outcome"], row["route"], row["categories"],
                  row["tags"], text, int(view is not None), index_review(row["review"]), address(row["id"])]
        # A JSON value is a JavaScript literal (JSON is a subset of JavaScript since ES2019).
        self.index.write(("" if self.rows == 0 else ",\n") + compact_json(values))
        if self.views:
            self.pieces.append(b",\n")
        else:
            self.starts.append(self.rows)
        pieces = (b"null",) if view is None else view
        self.pieces.extend(pieces)
        self.size += sum(map(len, pieces))
        self.views += 1
        self.rows += 1
        if self.size >= SHARD_BYTES or self.views >= SHARD_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self.views:
            return
        number = len(self.starts) - 1
        head = f'trajudgeData("shard", {number}, {self.starts[-1]}, [\n'.encode()
        write_pieces(self.shards / f"{number}.js", [head, *self.pieces, b"\n]);\n"])
        self.pieces = []
        self.views = self.size = 0

    def finish(self) -> None:
        """Close the last shard and the index (its trailer names the columns and the shards' first rows)."""
        self._flush()
        meta = {"version": 1, "columns": list(INDEX_COLUMNS), "rows": self.rows, "shards": self.starts}
        self.index.write("\n], " + compact_json(meta) + ");\n")
        self.index.close()

    def close(self) -> None:
        if not self.index.closed:
            self.index.close()
