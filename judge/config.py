"""Option files (``--config FILE``): the command's own flag names, in YAML, JSON or TOML.

A key is a flag's name without its leading dashes: ``max-cost: 5`` is ``--max-cost 5``. Dashes and underscores
are the same (``max_cost`` works too). A repeatable flag takes a list or one value (``judge: [a, b]`` or
``judge: rules``). Settings that have no flag (``max-retries``, ``params``, ...) follow the same rule.

Precedence: a flag given on the command line wins over the file, and the file over the default.

The format follows the file's suffix: ``.toml`` is read with :mod:`tomllib`, ``.json`` as JSON, anything else as
YAML. Settings may sit under one top-level section (``panel:`` / ``[panel]``); the other top-level keys of such
a file are then not read (a run.json holds ``cluster`` beside other sections).

Every problem is a :class:`ConfigError` that names the file, the line where it can find it, the key as written
and, for an unknown key, the closest valid one and the list of valid keys. Keys renamed since an earlier
release (``max_cost_usd``) keep working; each one read adds a note (:attr:`OptionFile.notes`) that says the
current name.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError

T = TypeVar("T")


class ConfigError(ValueError):
    """An option file that cannot be used; the message names the file (and line, when known) and the key."""


@dataclass
class OptionFile:
    """The settings read from one option file.

    ``values`` are keyed by destination (the name the code uses, e.g. ``max_cost_usd``); ``spelled`` keeps each
    destination's key as the file wrote it and ``lines`` its line, for error messages.
    """

    path: Path
    values: dict[str, Any] = field(default_factory=dict)
    spelled: dict[str, str] = field(default_factory=dict)
    lines: dict[str, int | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def subset(self, destinations: Iterable[str]) -> OptionFile:
        """The same file restricted to some destinations (the options one consumer reads)."""
        keep = set(destinations)
        return OptionFile(self.path, {k: v for k, v in self.values.items() if k in keep},
                          {k: v for k, v in self.spelled.items() if k in keep},
                          {k: v for k, v in self.lines.items() if k in keep}, list(self.notes))

    def where(self, destination: str | None = None) -> str:
        """``path`` or ``path:line`` of a destination's key."""
        line = self.lines.get(destination) if destination else None
        return f"{self.path}:{line}" if line else str(self.path)


def flag_key(key: str) -> str:
    """The one spelling of a key: a flag's name, lower case with dashes (``max_cost`` -> ``max-cost``)."""
    return key.strip().lstrip("-").replace("_", "-").lower()


def read_option_file(path: Path | str, keys: Mapping[str, str], *, renamed: Mapping[str, str] | None = None,
                     section: str | None = None) -> OptionFile:
    """Read an option file whose keys are ``keys`` (flag spelling -> destination).

    ``renamed`` maps old keys (flag spelling) to their current key: they are read, with a note. ``section``:
    when the file has this top-level key holding a mapping, only that mapping is read.
    """
    path = Path(path)
    renamed = dict(renamed or {})
    text, data = _parse(path)
    if section is not None and isinstance(data.get(section), dict):
        data = data[section]
    result = OptionFile(path)
    for raw_key, value in data.items():
        key = flag_key(str(raw_key))
        line = _line_of(text, str(raw_key))
        where = f"{path}:{line}" if line else str(path)
        current = key
        if key in renamed:
            current = renamed[key]
            result.notes.append(f"{where}: {raw_key!r} is the old name of {current!r}; it still works, but write "
                                f"{current!r} (the flag's name)")
        if current not in keys:
            raise ConfigError(_unknown_key(where, str(raw_key), keys, renamed))
        destination = keys[current]
        if destination in result.values:
            raise ConfigError(f"{where}: {raw_key!r} sets {current!r} a second time (also set by "
                              f"{result.spelled[destination]!r}): keep one")
        result.values[destination] = value
        result.spelled[destination] = str(raw_key)
        result.lines[destination] = line
    return result


def build_checked(build: Callable[[dict[str, Any]], T], file: OptionFile) -> T:
    """``build(file.values)``, with a validation error turned into a :class:`ConfigError` that names the file,
    the line and each bad key as the file wrote it."""
    try:
        return build(dict(file.values))
    except ValidationError as error:
        problems = []
        for item in error.errors():
            location = [str(part) for part in item["loc"]]
            destination = location[0] if location else None
            key = file.spelled.get(destination or "", destination or "")
            name = ".".join([key, *location[1:]]) if key else "value"
            message = str(item["msg"]).removeprefix("Value error, ")
            got = f" (got {item['input']!r})" if item.get("type") != "value_error" and "input" in item else ""
            problems.append(f"{file.where(destination)}: {name}: {message}{got}")
        raise ConfigError("\n".join(problems)) from None
    except ValueError as error:  # a builder's own check (not pydantic's)
        raise ConfigError(f"{file.path}: {error}") from None


def _parse(path: Path) -> tuple[str, dict[str, Any]]:
    """The file's text and its top-level mapping; a syntax error names the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read the config file: {error}") from None
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text) if text.strip() else {}
        else:
            data = yaml.safe_load(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}:{error.lineno}: not valid JSON: {error.msg}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigError(f"{where}: not valid YAML: {problem}") from None
    if data is None:
        return text, {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a config file holds settings as 'key: value' (a mapping), not a "
                          f"{type(data).__name__}")
    return text, data


def _line_of(text: str, key: str) -> int | None:
    """The first line where ``key`` is set (``key:``, ``key =``, ``"key":``); None when not found."""
    pattern = re.compile(r"(^|[{,])\s*[\"']?" + re.escape(key) + r"[\"']?\s*[:=]")
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.search(line):
            return number
    return None


def _unknown_key(where: str, raw_key: str, keys: Mapping[str, str], renamed: Mapping[str, str]) -> str:
    valid = sorted(keys)
    guess = difflib.get_close_matches(flag_key(raw_key), [*valid, *renamed], n=1, cutoff=0.6)
    hint = f" (did you mean {renamed.get(guess[0], guess[0])!r}?)" if guess else ""
    return f"{where}: unknown key {raw_key!r}{hint}; valid keys (the flags' names, with '-' or '_'): {', '.join(valid)}"
