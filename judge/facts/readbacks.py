"""Read-back shapes that contradict a claim's values, language-neutrally (issue 24 item 2).

Pure functions of text: how many items a bare listing holds (one name, path or id a line, as ``ls``, ``find`` or
a CLI's ``list -o name`` print them), and the objects a text names that are near twins of another (a transposed
or one-character-off id or IP address: ``203.0.113.47`` / ``203.0.113.74``), which tie a claim to the read-back
of the object a change really acted on; the named quantities a read-back states (:func:`read_back_quantities`: JSON
keys, ``key: value`` lines, small tables, tool summaries, the field a one-number query asks for), which a claim's
number is held against when their name labels it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
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


@lru_cache(maxsize=4096)
def _plain(text: str) -> str:
    """``text`` lower-cased without accents and with ``_``/``-`` as spaces, one character for one (positions
    stay those of ``text``). Memoised: the words around a claim's number are held against every key of every
    read-back."""
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


@lru_cache(maxsize=1024)
def _name_stem(name: str) -> str | None:
    """The letters every span :func:`name_spans` finds of ``name`` starts with (its first word's stem as
    :func:`_name_pattern` requires it), None when no text names it; "" when any text may (a sigma: its lower case
    depends on the letters around it, so a part of a text may read another one than the whole)."""
    words = _plain(name).split()
    if not words:
        return None
    stem = words[0][:max(4, len(words[0]) - 3)] if len(words[0]) >= 6 else words[0]
    return "" if "σ" in stem or "ς" in stem else stem


def may_name(text: str, name: str) -> bool:
    """Whether ``text`` or any part of it can name the field ``name`` (:func:`name_spans`): False when the name's
    stem is nowhere in it, a test of one literal instead of a pattern search of each part."""
    stem = _name_stem(name)
    return stem is not None and stem in _plain(text)


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


_RULE_LINE = re.compile(r"^[\s|:+-]*$")
_HEADER_CELL = re.compile(r"^[A-Za-z][A-Za-z_ ]*$")
_MAX_ROWS = 2_000


def listing_rows(text: str) -> tuple[tuple[str, ...], ...]:
    """The rows of the one listing a read-back shows, each as its cells, header aside: a JSON array of objects
    (each object's scalar values, a nested ``fields`` object's too), a pipe table, or lines of the same number of
    whitespace-separated fields (``kubectl get``, ``jq -r '.[] | "\\(.id) \\(.fw)"'``, a ``record_id  Name``
    listing; a first line of upper-case or ``snake_case`` names is its header). () for any other shape (prose, a
    table of rows of different widths, one row). Memoised: every claim of a trajectory is held against them."""
    return _listing_rows(text[:200_000])


@lru_cache(maxsize=256)
def _listing_rows(text: str) -> tuple[tuple[str, ...], ...]:
    stripped = text.strip()
    if _JSON_START.match(stripped):
        document = json_document(stripped)
        return _object_rows(document, 0) if document is not None else ()
    lines = [ln.strip() for ln in stripped.splitlines()[:_MAX_ROWS] if ln.strip()]
    if len(lines) < 3 and not (len(lines) == 2 and not _is_header(lines[0].split())):
        return ()
    if lines[0].startswith("|"):
        rows = [tuple(c.strip() for c in ln.strip("|").split("|")) for ln in lines if not _RULE_LINE.match(ln)]
        rows = rows[1:]  # a pipe table's first line is its header
    else:
        rows = [tuple(ln.split()) for ln in lines]
        if _is_header(rows[0]) or _is_named_header(rows):
            rows = rows[1:]
    if len(rows) < 2 or len({len(r) for r in rows}) != 1 or len(rows[0]) > 12:
        return ()
    return tuple(rows)


def _is_header(cells: list[str] | tuple[str, ...]) -> bool:
    return all(_HEADER_CELL.match(c) and (c.isupper() or "_" in c) for c in cells)


_KEY_CELL = re.compile(r"^(?:[A-Z][A-Z_]*|[a-z]+_[a-z_]+)$")
_NAME_CELL = re.compile(r"^[A-Za-z][\w ]*$")


def _is_named_header(rows: list[tuple[str, ...]]) -> bool:
    """A first line that names columns by its key column (``record_id  Ospite``, ``NAME  SIZE  SHA256``): its
    first cell an upper-case or ``snake_case`` word no other line's first cell is shaped like, every cell a word."""
    first = rows[0]
    return (bool(_KEY_CELL.match(first[0])) and all(_NAME_CELL.match(c) for c in first)
            and not any(_KEY_CELL.match(r[0]) for r in rows[1:]))


def _object_rows(value: object, depth: int) -> tuple[tuple[str, ...], ...]:
    """The rows of the first array of two or more objects in a JSON document (at most three levels down)."""
    if depth > 3:
        return ()
    if isinstance(value, list) and len(value) >= 2 and all(isinstance(v, dict) for v in value):
        return tuple(tuple(_scalar_cells(v)) for v in value[:_MAX_ROWS] if isinstance(v, dict))
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        if isinstance(child, (list, dict)) and (rows := _object_rows(child, depth + 1)):
            return rows
    return ()


def _scalar_cells(record: dict[object, object]) -> list[str]:
    cells: list[str] = []
    for key, value in record.items():
        if isinstance(value, dict) and key == "fields":
            cells.extend(str(v) for v in value.values() if isinstance(v, (str, int, float)) and not isinstance(v, bool))
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            cells.append(str(value))
    return cells


# --- named quantities a read-back states: what a claim's number is held against -------------------------------

@dataclass(frozen=True, slots=True)
class Quantity:
    """One number a read-back states under a name: a JSON key, a ``key: value`` line, a tool summary's label
    (samtools flagstat ``1874203 + 0 in total (QC-passed reads ...)``), or what the command asked for when the
    receipt is only that number (``jq '.total'``, ``count(*)``, the URL's last path part)."""

    key: str
    value: float
    percent: bool = False

    def words(self) -> tuple[str, ...]:
        """The key's words of three letters or more (``rows_processed``: rows, processed): how a claim names it."""
        return tuple(w for w in _KEY_WORDS.findall(self.key.lower()) if len(w) >= 3)


_KEY_WORDS = re.compile(r"[^\W\d_]+")
# `key: 12`, `key = 0.93`, `- key: 45%` as a whole line (YAML, tool status blocks), and `key=12` pairs inside a line
# (ansible's PLAY RECAP, logfmt).
_KEY_LINE = re.compile(r"^\s*[-*]?\s*([^\W\d][\w .()/-]{0,40}?)\s*[:=]\s*(-?\d{1,3}(?:[ \u00a0\u202f'’]\d{3})+|-?\d+(?:\.\d+)?)\s*(%)?\s*(?:\([^)\n]{0,40}\))?\s*$",
                       re.MULTILINE)  # a value may carry its name in brackets: "Access Mode VLAN: 20 (users)"
_GROUPS = re.compile(r"[ \u00a0\u202f'’]")  # thousands separators that are never a decimal mark
_KEY_PAIR = re.compile(r"(?<![\w.-])([^\W\d][\w.-]{1,40})=(-?\d+(?:\.\d+)?)(%)?(?![\w.])")
# samtools flagstat: "<passed> + <failed> <label> (<percent> : N/A)".
_FLAGSTAT = re.compile(r"^(\d+) \+ \d+ ([^\n(]+?)\s*(?:\(([^)\n]*)\))?\s*$", re.MULTILINE)
_PERCENT_IN = re.compile(r"(\d+(?:\.\d+)?)%")
# What a command that prints one number asked for: a jq path's last name, SQL's count(...), wc -l, a URL's last
# path part, a CLI's shortcut word (lark-cli +record-count).
_JQ_KEY = re.compile(r"\bjq\b[^|]*?\.([A-Za-z_]\w*)\s*(?:\|\s*length\s*)?['\"]?\s*$")
_URL_PART = re.compile(r"https?://[^\s'\"?#]*/([A-Za-z][\w-]*)/?(?:[?#'\"\s]|$)")
_SQL_TABLE = re.compile(r"\bfrom\s+[\"`]?(?:\w+\.)?([A-Za-z_]\w*)", re.IGNORECASE)
_SHORTCUT = re.compile(r"(?<!\S)\+([A-Za-z][\w-]*)")


@lru_cache(maxsize=512)
def read_back_quantities(command: str, content: str) -> tuple[Quantity, ...]:
    """The named numbers a read-back's receipt states (see :class:`Quantity`), language-neutrally: the keys are the
    receipt's own (a claim ties to one by naming it). Numbers inside a listing of records are the records' fields
    (:func:`~judge.facts.values.record_numbers`), not a quantity of the resource. Memoised: every claim of a
    trajectory is held against the same read-backs."""
    text = content[:20_000]
    found: list[Quantity] = []
    document = json_document(content) if _JSON_START.match(text) else None
    if document is not None:
        _json_quantities(document, found, 0)
    elif not scalar_values(text):
        found.extend(_table_quantities(text, command))
        for key, raw, percent in _KEY_LINE.findall(text):  # "records: 1 471": a value grouped by spaces is one number
            found.append(Quantity(key.strip(), float(_GROUPS.sub("", raw)), bool(percent)))
        for key, raw, percent in _KEY_PAIR.findall(text):
            found.append(Quantity(key, float(raw), bool(percent)))
        for passed, label, inner in _FLAGSTAT.findall(text):
            found.append(Quantity(f"{label} {inner}", float(passed)))
            found.extend(Quantity(f"{label} {inner}", float(p), True) for p in _PERCENT_IN.findall(inner))
    if not found and (shown := scalar_values(text)) and len(shown) == 1:
        key = command_quantity(command)
        if key:
            found.append(Quantity(key, shown[0]))
    return tuple(found)


_RULE_LINE = re.compile(r"^[\s|+:=-]+$")
_ROWS_FOOTER = re.compile(r"^\(\d+ rows?\)$")
_NUMBER_CELL = re.compile(r"-?\d+(?:\.\d+)?\s?%?")
_MAX_TABLE_ROWS = 20


def _table_quantities(text: str, command: str) -> list[Quantity]:
    """The numbers of a small table with a header line (psql's boxed output, CSV, tab- or column-aligned text, a
    markdown table): each numeric cell under its column's name, and its row's label when there are several rows
    ("count valid" of ``status,count`` / ``valid,1163``). A one-row result of a query keeps what it counts
    (``count invoices``)."""
    lines = [ln.strip() for ln in text.strip().splitlines()[:_MAX_TABLE_ROWS + 3]
             if ln.strip() and not _RULE_LINE.match(ln) and not _ROWS_FOOTER.match(ln.strip())]
    if len(lines) < 2 or len(lines) > _MAX_TABLE_ROWS + 1:
        return []
    header = lines[0]
    if "|" not in header and re.search(r"[:=]\s", header):
        return []  # `key: value` lines, read as such
    if "|" in header:
        cut = re.compile(r"\s*\|\s*")
    elif "," in header:
        cut = re.compile(r"\s*,\s*")
    elif "\t" in header or "  " in header:
        cut = re.compile(r"\t|\s{2,}")
    elif " " in header:
        return []  # words one space apart: prose, not a header
    else:
        cut = re.compile(r"(?!)")  # one word a line: a one-column result (psql's "count" over its value)
    names = cut.split(header.strip("| "))
    if not names or any(_NUMBER_CELL.fullmatch(n) for n in names):
        return []  # a header names columns; a line of numbers is data
    rows = [cut.split(ln.strip("| ")) for ln in lines[1:]]
    if any(len(row) != len(names) for row in rows):
        return []
    counted = " ".join(_SQL_TABLE.findall(command)[:2]) if "count(" in command.lower() else ""
    found: list[Quantity] = []
    for row in rows:
        # A row's label is its first cell that is no number ("valid" of `valid,1163`); a result without one keeps
        # what the query counts.
        label = next((c for c in row if c and not _NUMBER_CELL.fullmatch(c)), counted)
        for name, cell in zip(names, row):
            if _NUMBER_CELL.fullmatch(cell):
                found.append(Quantity(f"{name} {label}".strip(), float(cell.rstrip("% ")), cell.endswith("%")))
    return found


def command_quantity(command: str) -> str:
    """The name of what a command that prints one number asks for ("total" of ``jq '.total'``, "count" of
    ``select count(*)``, "lines" of ``wc -l``, "duplicates" of ``.../contacts/duplicates``, "record-count" of
    ``lark-cli base +record-count``), or ""."""
    names = []
    if (jq := _JQ_KEY.search(command)) is not None:
        names.append(jq.group(1))
    low = command.lower()
    if "count(" in low:
        names.append("count")
        names.extend(_SQL_TABLE.findall(command)[:2])  # what it counts: "invoices" of ``... from invoices``
    if re.search(r"\bwc\s+-l\b", command):
        names.append("lines")
    if (url := _URL_PART.search(command)) is not None:
        names.append(url.group(1))
    elif not names and (shortcut := _SHORTCUT.search(command.split("|")[0])) is not None:
        names.append(shortcut.group(1))
    return " ".join(names)


def _json_quantities(value: object, found: list[Quantity], depth: int) -> None:
    if depth > 3 or len(found) > 200:
        return
    if isinstance(value, dict):
        for name, item in value.items():
            if isinstance(item, bool):
                continue
            if isinstance(item, (int, float)):
                found.append(Quantity(str(name), float(item)))
            elif isinstance(item, dict):
                _json_quantities(item, found, depth + 1)
    # A list holds records (their fields are no quantities of the resource) or values: neither is read here.


# --- bounds a read-back's filter holds: what a claimed bound ("above 500") is held against --------------------

@dataclass(frozen=True, slots=True)
class Bound:
    """One comparison of a filter a read-back shows: ``lower`` for greater-than (``amount >= 500``, ``operator:
    isGreater`` + ``value: 5000``, ``{"op": "gt", "value": 5000}``), else less-than."""

    lower: bool
    value: float


# An expression `amount >= 500`, `price<20` (a filter, a where clause, a rule a tool prints).
_COMPARISON = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*[\"'`\]]?\s*(>=|=>|>|<=|=<|<|≥|≤)\s*[\"']?(-?\d+(?:\.\d+)?)(?![\d.])")
# A structured condition's operator and value (YAML lines, JSON, key=value), paired by nearness.
_OPERATOR = re.compile(r"(?<![\w])[\"']?(?:operator|op|comparison|comparator|operation)[\"']?\s*[:=]\s*[\"']?([\w<>=≥≤]{1,30})",
                       re.IGNORECASE)
_OPERAND = re.compile(r"(?<![\w])[\"']?(?:value|threshold|operand)[\"']?\s*[:=]\s*[\"'\[]?\s*(-?\d+(?:\.\d+)?)(?![\d.])",
                      re.IGNORECASE)
_GREATER = re.compile(r"greater|above|more|^gte?$|^min|after|^>|^≥|^=>", re.IGNORECASE)
_LESS = re.compile(r"less|below|fewer|^lte?$|^max|before|^<|^≤|^=<", re.IGNORECASE)
_PAIR_SPAN = 160


def _direction(operator: str) -> bool | None:
    """True for a greater-than operator, False for less-than, None for any other (equality, contains)."""
    if _GREATER.search(operator):
        return True
    return False if _LESS.search(operator) else None


@lru_cache(maxsize=256)
def filter_bounds(content: str) -> tuple[Bound, ...]:
    """The bounds the filter conditions of a read-back hold (see :class:`Bound`), language-neutrally: comparison
    expressions, and each operator key with the nearest value key after it (before it when none follows) within
    one condition. Memoised: every claim of a trajectory is held against the same read-backs."""
    text = content[:20_000]
    found = [Bound(d, float(raw)) for op, raw in _COMPARISON.findall(text) if (d := _direction(op)) is not None]
    operands = [(m.start(), float(m.group(1))) for m in _OPERAND.finditer(text)]
    if operands:
        operators = list(_OPERATOR.finditer(text))
        for at, match in enumerate(operators):
            direction = _direction(match.group(1))
            if direction is None:
                continue
            end = operators[at + 1].start() if at + 1 < len(operators) else len(text)
            start = operators[at - 1].end() if at else 0
            after = [v for pos, v in operands if match.end() <= pos < min(end, match.end() + _PAIR_SPAN)]
            before = [v for pos, v in operands if max(start, match.start() - _PAIR_SPAN) <= pos < match.start()]
            if after or before:
                found.append(Bound(direction, after[0] if after else before[-1]))
    return tuple(found)
