"""What a command prints: human lines, or with ``--json`` one JSON document on stdout and the lines on stderr.

Every command that reports figures takes ``--json`` (:data:`JSON_HELP`). With it, stdout carries exactly one
JSON document (parse it with ``json.loads``) and everything a person reads - counts, notes, warnings - goes to
stderr, so ``judge show FILE --list --json | jq`` works while the messages stay visible.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

JSON_HELP = "Print one JSON document on stdout instead of the text (messages go to stderr)."


def json_option() -> Any:
    """The ``--json`` flag, the same on every command."""
    return typer.Option(False, "--json", help=JSON_HELP)


class Output:
    """A command's printer. ``line`` writes a human line (stdout, or stderr in JSON mode); ``document`` writes
    the JSON document (JSON mode only)."""

    def __init__(self, as_json: bool):
        self.as_json = as_json

    def line(self, text: str = "", *, err: bool = False) -> None:
        typer.echo(text, err=err or self.as_json)

    def document(self, value: Any) -> None:
        if self.as_json:
            sys.stdout.write(json.dumps(jsonable(value), ensure_ascii=False, indent=2, allow_nan=False) + "\n")
            sys.stdout.flush()


def jsonable(value: Any) -> Any:
    """``value`` with paths, pydantic models, dataclasses, sets and tuples as JSON types, and NaN or infinite
    numbers as null (strict JSON has no NaN)."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):  # float, numpy's
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v) for v in items]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return jsonable(dump(mode="json"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable(dataclasses.asdict(value))
    return str(value)
