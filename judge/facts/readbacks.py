"""Read-back shapes that contradict a claim's values, language-neutrally (issue 24 item 2).

Pure functions of text: how many items a bare listing holds (one name, path or id a line, as ``ls``, ``find`` or
a CLI's ``list -o name`` print them), and the objects a text names that are near twins of another (a transposed
or one-character-off id or IP address: ``203.0.113.47`` / ``203.0.113.74``), which tie a claim to the read-back
of the object a change really acted on.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from judge.facts.effects import json_document
from judge.facts.values import is_resource_id, value_tokens

_BARE_LINE = re.compile(r"^\s*[^\s|│]+\s*$")
_IP = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w.])")
_MAX_LINES = 5_000


def bare_listing_count(text: str) -> int | None:
    """The number of items of a listing that prints one bare item a line (a name, path or id, no spaces): at
    least two lines, every non-empty line one token. None for any other shape (a table, prose, ``ls -l``)."""
    lines = [ln for ln in text.strip().splitlines()[:_MAX_LINES] if ln.strip()]
    if len(lines) < 2 or not all(_BARE_LINE.match(ln) for ln in lines):
        return None
    return len(lines)


def object_names(text: str) -> set[str]:
    """Objects a text names that can have a near twin: resource ids and IPv4 addresses."""
    found = {t for t in value_tokens(text) if is_resource_id(t)}
    found.update(_IP.findall(text))
    return found


def near_twin(token: str, other: str) -> bool:
    """Whether two different names of the same length hold the same characters in another order, or differ in
    one character: a mistyped id or address, not another object of the same family."""
    if len(token) != len(other) or token == other:
        return False
    return sorted(token) == sorted(other) or sum(a != b for a, b in zip(token, other)) == 1


# --- values a read-back shows: metrics, a scalar answer, the items of a listing ---------------------------------

_JSON_START = re.compile(r"^\s*[\[{]")
_METRIC_LINE = re.compile(r"(?<![\w.])([A-Za-z][\w.-]{1,40})\s*[:=]\s*(-?\d+(?:\.\d+)?\s?%|-?\d+\.\d+)")
_SCALAR = re.compile(r"^\s*[(\[]?\s*-?\d+(?:\.\d+)?(?:\s*[,;|\t ]\s*-?\d+(?:\.\d+)?){0,3}\s*[)\]]?\s*$")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def metric_values(text: str) -> dict[str, list[float]]:
    """Named measurements a receipt shows, as fractions or plain values: the non-integer numbers of a JSON
    receipt under their keys (``"accuracy": 0.8734``), and ``name: 0.87`` / ``name=87.3%`` pairs of text (a percent
    is kept as its fraction). Integers (counts, epochs, ports, sizes) are no measurements."""
    found: dict[str, list[float]] = {}
    head = text[:20_000]
    document = json_document(text) if len(text) <= 20_000 else None
    if document is not None:
        _metric_leaves(document, found, 0)
    for name, raw in _METRIC_LINE.findall(head):
        value = float(raw.rstrip("% "))
        if raw.endswith("%"):
            value /= 100
        elif value.is_integer():
            continue
        found.setdefault(name, []).append(value)
    return found


def _metric_leaves(value: object, found: dict[str, list[float]], depth: int) -> None:
    if depth > 5:
        return
    if isinstance(value, list):
        for item in value[:200]:
            _metric_leaves(item, found, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, float) and not item.is_integer():
                found.setdefault(str(key), []).append(item)
            else:
                _metric_leaves(item, found, depth + 1)


def _plain(text: str) -> str:
    """``text`` lower-cased without accents and with ``_``/``-`` as spaces, one character for one (positions
    stay those of ``text``)."""
    return "".join(" " if c in "_-" else (unicodedata.normalize("NFKD", c)[:1] or c) for c in text.lower())


@lru_cache(maxsize=1024)
def _name_pattern(name: str) -> re.Pattern[str] | None:
    words = _plain(name).split()
    if not words:
        return None
    # A long word may be inflected or translated with the same stem ("accuracy" in "accuratezza"): its first
    # letters but the last three (four at least) name it; a short one (f1, mae, loss) must be whole.
    parts = [rf"{re.escape(w[:max(4, len(w) - 3)])}\w*" if len(w) >= 6 else rf"{re.escape(w)}(?!\w)" for w in words]
    return re.compile(r"(?<!\w)" + r"\s+".join(parts))


def name_spans(text: str, name: str) -> list[tuple[int, int]]:
    """Where ``text`` names a receipt's field ``name`` (``macro_f1`` in "macro F1", ``accuracy`` in
    "accuratezza"): its spans, language-neutrally (the identifier as it appears in the receipt)."""
    pattern = _name_pattern(name)
    return [m.span() for m in pattern.finditer(_plain(text))] if pattern is not None else []


def scalar_values(text: str) -> tuple[float, ...]:
    """The numbers of a receipt that is only a scalar answer (``1205``, ``(4812, 9)``: a count query, a shape),
    else ()."""
    if len(text) > 200 or not _SCALAR.match(text):
        return ()
    return tuple(float(n) for n in _NUMBER.findall(text))


@lru_cache(maxsize=256)
def listing_items(text: str) -> tuple[tuple[str, ...], ...]:
    """The item lists a read-back shows: each JSON array of strings, each array of objects by the first string
    value of each object (its name or id), and a one-item-a-line listing (its lines). Memoised: the claims of a
    trajectory are held against the same read-backs."""
    return tuple(tuple(items) for items in _listing_items(text))


def _listing_items(text: str) -> list[list[str]]:
    stripped = text.strip()[:200_000]
    found: list[list[str]] = []
    document = json_document(text) if _JSON_START.match(stripped) else None
    if document is not None:
        _item_lists(document, found, 0)
        return found
    lines = [ln.strip() for ln in stripped.splitlines()[:_MAX_LINES] if ln.strip()]
    if len(lines) >= 2 and len({len(ln.split()) for ln in lines}) == 1 and len(lines[0].split()) <= 3:
        found.append(lines)  # uniform lines of at most three fields: one item a line
    return found


def _item_lists(value: object, found: list[list[str]], depth: int) -> None:
    if depth > 4:
        return
    if isinstance(value, list):
        if value and all(isinstance(v, str) for v in value):
            found.append([str(v) for v in value])
        elif value and all(isinstance(v, dict) for v in value):
            found.append([next((str(x) for x in v.values() if isinstance(x, str)), "") for v in value])
        for item in value[:50]:
            _item_lists(item, found, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            _item_lists(item, found, depth + 1)
