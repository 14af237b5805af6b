"""Our own canonical JSONL: one :meth:`Trajectory.to_json_line` per line.

Read back exactly as written (no renumbering, no metadata rewrite), so export -> import is the identity.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from judge.importers._common import RecordError, Source, one_line
from judge.model import SCHEMA_VERSION, Trajectory

NAME = "canonical"
_PREFIX = SCHEMA_VERSION.split("/")[0] + "/"


def detect(obj: Any) -> bool:
    return isinstance(obj, dict) and str(obj.get("schema_version", "")).startswith(_PREFIX)


def parse(record: Any, src: Source) -> Trajectory:
    if not isinstance(record, dict):
        raise RecordError("record is not a JSON object")
    version = record.get("schema_version")
    if version != SCHEMA_VERSION:
        raise RecordError(f"canonical schema {version!r} is not the supported {SCHEMA_VERSION!r}")
    try:
        return Trajectory.model_validate(record)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        raise RecordError(one_line(f"invalid canonical trajectory: {where}: {first.get('msg')} ({error.error_count()} errors)")) from None
