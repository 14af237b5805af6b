"""Issue rows from any source: the input and output of ``judge cluster FILE`` and ``judge calibrate LABELS``
(docs/cluster-rows.md), clustered with exactly the code the pipeline uses (:mod:`judge.cluster.core`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judge.cluster.core import ClusterConfig, IssueItem, build_clusters, cluster_items
from judge.embed import Embedder
from judge.schema import Issue

ROW_TRUTH_KEYS = ("label", "truth")


@dataclass
class RowError:
    """A row that could not be read; the rest of the file goes on."""

    source: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.reason}"


def read_issue_rows(path: Path) -> tuple[list[dict[str, Any]], list[RowError]]:
    """Read clustering input rows (docs/cluster-rows.md); bad rows become errors naming file and line.

    Every good row gets ``_issue`` (the validated :class:`Issue`) and ``_line``.
    """
    rows: list[dict[str, Any]] = []
    errors: list[RowError] = []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError("not a JSON object")
                row = dict(row)
                row["_issue"] = issue_from_row(row)
            except (ValueError, ValidationError) as error:
                errors.append(RowError(str(path), number, _short_error(error)))
                continue
            row["_line"] = number
            rows.append(row)
    return rows, errors


def issue_from_row(row: dict[str, Any]) -> Issue:
    """The :class:`Issue` of one input row; requires ``trajectory_id`` and ``pass`` besides the issue fields."""
    for key in ("trajectory_id", "pass"):
        if row.get(key) in (None, ""):
            raise ValueError(f"missing {key!r}")
    return Issue.model_validate(
        {
            "turn": row.get("turn"),
            "category": row.get("category"),
            "severity": row.get("severity"),
            "description": row.get("description"),
            "evidence": row.get("evidence") or "",
            "tag": row.get("tag") or None,
            "recovered": row.get("recovered"),
            "evidence_verified": row.get("evidence_verified"),
        }
    )


def _short_error(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'row'}: {e['msg']}" for e in error.errors())
    return str(error)


def group_rows(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows by trajectory id, in file order."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(str(row["trajectory_id"]), []).append(row)
    return grouped


def items_of_rows(rows: Sequence[dict[str, Any]]) -> list[IssueItem]:
    return [IssueItem(pass_label=str(row["pass"]), issue_index=i, issue=row["_issue"]) for i, row in enumerate(rows)]


def cluster_rows(rows: Sequence[dict[str, Any]], config: ClusterConfig, embedder: Embedder | None) -> list[dict[str, Any]]:
    """Cluster rows read by :func:`read_issue_rows` per trajectory; returns them with ``cluster`` and ``votes``.

    Uses the code the pipeline uses (:func:`cluster_items` and :func:`build_clusters`); the panel size for
    the cluster ids is the number of distinct passes of the trajectory in the file.
    """
    out: list[dict[str, Any]] = []
    for trajectory_id, group in group_rows(rows).items():
        items = items_of_rows(group)
        groups, scores = cluster_items(items, config, embedder)
        clusters = build_clusters(trajectory_id, items, groups, scores, panel_size=len({i.pass_label for i in items}))
        for cluster in clusters:
            member_rows = {m.issue_index for m in cluster.members}
            for index in member_rows:
                row = {k: v for k, v in group[index].items() if not k.startswith("_")}
                out.append({**row, "cluster": cluster.cluster, "votes": cluster.votes, "_order": group[index]["_line"]})
    out.sort(key=lambda r: r.pop("_order"))
    return out


def truth_of(row: dict[str, Any]) -> str:
    """The labelled cluster id of a calibration row (``label`` or ``truth``)."""
    for key in ROW_TRUTH_KEYS:
        if row.get(key) not in (None, ""):
            return str(row[key])
    raise ValueError(f"line {row.get('_line')}: no 'label' or 'truth' for calibration")
