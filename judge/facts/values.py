"""Language-neutral readings of text: the values a text holds (ids, numbers, paths, flags) and the counts a
receipt shows by listing items (a JSON array, a table, one item a line) rather than by printing the number.

Pure functions of their text, shared by the ledger (:mod:`judge.facts.ledger`) and the editor's checks.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Literal

from judge.facts.analysis import _PATH_TOKEN, salient_tokens
from judge.facts.effects import MAX_JSON as _MAX_JSON
from judge.facts.effects import json_document  # the one memoised parse of a receipt, for the readers below

ValueKind = Literal["id", "number", "path", "flag"]

_VALUE_RE = re.compile(
    r"\b(?:rec|fld|tbl|app|vew|usr|wkf|bas|blk|ou|oc)[A-Za-z0-9]{6,}\b"  # Lark/Airtable-style record ids
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # UUIDs
    r"|\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_-]{4,}\b"  # mixed letters+digits ids
    r"|(?<![\w-])--[a-z][a-z0-9-]+"  # flags a receipt suggests
    r"|\b\d{3,}\b",
    re.IGNORECASE,
)
_HTTP_STATUS = re.compile(r"[45]\d\d")
# Flags every CLI has: a receipt that suggests them ("run --help for usage") hands no value to later steps.
_USAGE_FLAGS = frozenset({"--help", "--version"})


def value_tokens(text: str) -> set[str]:
    """Values a text can hand to later steps: ids, uuids, flags, numbers of 3+ digits (HTTP error statuses
    and the usage flags ``--help`` and ``--version`` excluded: they name no object)."""
    if not text:
        return set()
    # A new set each time (callers may change it), built from the tokens in the order found: it iterates in the
    # same order as one built by a fresh scan.
    if len(text) <= _MEMO_MAX_CHARS:
        return set(_value_token_list(text))
    return set(_long_value_token_list(text) if len(text) <= _LONG_MEMO_MAX_CHARS else _scan_values(text))


_MEMO_MAX_CHARS = 4000  # longer texts (receipts) get a small memo of their own: a large one would hold megabytes
_LONG_MEMO_MAX_CHARS = 200_000  # above this (a whole build log) a text is scanned each time: 64 of them are ~13 MB


@lru_cache(maxsize=64)
def _long_value_token_list(text: str) -> tuple[str, ...]:
    """:func:`_scan_values` of a long text (a receipt), memoised for the few a trajectory's claims are held against
    again and again (a mistyped id is looked for in every read-back, for every id of every claim sentence)."""
    return _scan_values(text)


@lru_cache(maxsize=4096)
def _value_token_list(text: str) -> tuple[str, ...]:
    """:func:`_scan_values`, memoised: the ledger and the claim detectors ask for the values of the same call
    arguments and claim sentences many times per trajectory (the regex scan was ~10% of their time)."""
    return _scan_values(text)


def _scan_values(text: str) -> tuple[str, ...]:
    return tuple(t for t in _VALUE_RE.findall(text) if not _HTTP_STATUS.fullmatch(t) and t not in _USAGE_FLAGS)


def names_in(text: str) -> frozenset[str]:
    """What can tie a text to a call: its values (:func:`value_tokens`) and the names it gives (file names,
    `quoted` names, snake_case identifiers, codes: :func:`~judge.facts.analysis.salient_tokens`)."""
    return frozenset(value_tokens(text) | set(salient_tokens(text)))


def value_kind(token: str) -> ValueKind:
    """What a value token is (see :func:`value_tokens`)."""
    if token.startswith("--"):
        return "flag"
    if token.isdigit():
        return "number"
    if _PATH_TOKEN.fullmatch(token):
        return "path"
    return "id"


_LARK_OR_UUID = re.compile(r"(?:rec|fld|tbl|app|vew|usr|wkf|bas|blk|ou|oc)[A-Za-z0-9]{6,}|[0-9a-f]{8}-[0-9a-f]{4}-.*")
# Letters-and-digits words of tools and formats, not objects a call creates or changes.
_TECH_WORD = re.compile(r"(?:sha|md|base|utf-?|u?int|float|python|py|ipv|http|x86_|arm|es20|h26|mp|v)\d.*|\d+(?:px|ms|s|mb|gb|kb|k)",
                        re.IGNORECASE)


@lru_cache(maxsize=4096)
def is_resource_id(token: str) -> bool:
    """Whether a value token names an object (a record, table, job, booking): a Lark-style id or a UUID, or a
    code of 6+ characters with 2+ letters and 2+ digits that is no tool or format word (sha256, python3)."""
    if _LARK_OR_UUID.fullmatch(token):
        return True
    if len(token) < 6 or token.startswith("-") or _TECH_WORD.fullmatch(token) or value_kind(token) != "id":
        return False
    return sum(c.isdigit() for c in token) >= 2 and sum(c.isalpha() for c in token) >= 2


_TABLE_RULE = re.compile(r"^[\s|+:=-]*-{3,}[\s|+:=-]*$")  # a table's rule line (---+---, |---|)
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+\S")


def listed_counts(text: str) -> frozenset[int]:
    """The numbers of items a receipt lists: the length of each JSON array in it (to depth 4), the number of
    rows of a table (lines under a header rule), of bullet lines, and of record-id lines; never a number it only
    prints. An empty listing shows 0."""
    stripped = text.strip()
    found: set[int] = set()
    if not stripped:
        return frozenset()
    value = json_document(text)
    if value is not None:
        _json_lengths(value, found, 0)
        return frozenset(found)
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    rule = next((i for i, ln in enumerate(lines) if _TABLE_RULE.match(ln)), None)
    if rule is not None and rule <= 2:
        found.add(len([ln for ln in lines[rule + 1 :] if not _TABLE_RULE.match(ln)]))
    bullets = [ln for ln in lines if _BULLET.match(ln)]
    if bullets:
        found.add(len(bullets))
    ids = [ln for ln in lines if _RECORD_LINE.search(ln)]
    if ids:
        found.add(len(ids))
    return frozenset(found)


# A record id holds a digit: a header cell such as "record_id" is no record.
_RECORD_LINE = re.compile(r"^\s*[|\s]*(?:rec|row|id)(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{3,}\b")


def _json_lengths(value: Any, found: set[int], depth: int) -> None:
    if depth > 4:
        return
    if isinstance(value, list):
        found.add(len(value))
        for item in value[:50]:
            _json_lengths(item, found, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            _json_lengths(item, found, depth + 1)


# A count may be grouped by spaces ("records: 1 471", U+00A0, U+202F): one number, never its first group.
_PRINTED_TOTAL = re.compile(r"\b(?:total|count|records?|rows?|items?)\b\W{0,3}\s*[:=]?\s*(\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?![\d.,])|\d+)\b"
                            r"|\b(\d{1,3}(?:[ \u00a0\u202f]\d{3})+|\d+) (?:records?|rows?|items?|entries|results?)\b",
                            re.IGNORECASE)


def printed_counts(text: str) -> frozenset[int]:
    """Numbers a receipt prints as a count of things ("total: 4", "4 rows", ``"count": 4``)."""
    return frozenset(int(re.sub(r"\D", "", a or b)) for a, b in _PRINTED_TOTAL.findall(text[:20_000]))


_RECORD_KEYS = ("items", "records", "data", "rows", "results", "list", "entries", "values")


def collection_counts(text: str) -> frozenset[int]:
    """The lengths of the collections a read-back lists: a top-level JSON array, the arrays of objects in a JSON
    object (to depth 3: ``{"data": {"items": [...]}}``), one JSON object a line (JSON lines), and for text the
    counts :func:`listed_counts` finds. Arrays of plain values inside a record (its tags) are fields, not the
    collection, and do not count."""
    stripped = text.strip()
    if not stripped:
        return frozenset()
    if stripped[0] in "[{" and len(stripped) <= _MAX_JSON:
        value = json_document(text)
        if value is None:
            lines = [ln.strip() for ln in stripped.splitlines() if ln.strip()]
            if len(lines) > 1 and all(ln.startswith("{") and ln.endswith("}") for ln in lines):
                return frozenset({len(lines)})  # JSON lines: one record a line
        else:
            found: set[int] = set()
            if isinstance(value, list):
                found.add(len(value))
            _collections(value, found, 0)
            return frozenset(found)
    return listed_counts(text)


def _collections(value: Any, found: set[int], depth: int) -> None:
    if depth > 3 or not isinstance(value, dict):
        return
    for key, item in value.items():
        if isinstance(item, list) and (key.lower() in _RECORD_KEYS or (item and all(isinstance(i, dict) for i in item))):
            found.add(len(item))
        elif isinstance(item, dict):
            _collections(item, found, depth + 1)


_MORE_PAGES = re.compile(r"""["']?has_more["']?\s*[:=]\s*["']?true|["']?next_page(?:_token)?["']?\s*[:=]\s*["']?[\w-]{4,}""",
                         re.IGNORECASE)


def more_pages(text: str) -> bool:
    """Whether a listing says it is one page of more (``"has_more": true``, a next-page token): its length is
    not the collection's."""
    return _MORE_PAGES.search(text[:20_000]) is not None


# Status fields in any of the rules languages' words for them (keys are data of the receipt, not prose).
_STATUS_KEY = (r"(?:status|state|phase|状态|狀態|ステータス|상태|estado|statut|zustand|статус|stato|stan|durum|toestand"
               r"|trạng thái|keadaan|стан|الحالة|स्थिति|tillstånd)")
_STATUS_PAIR = re.compile(r"""["']?\b""" + _STATUS_KEY + r"""\b["']?\s*[:=|]\s*["']?([^\s"',|}{\]\[][^"',|}{\]\[\n]{0,30}?)\s*(?=\s-|["',|}\]\n]|$)""",
                          re.IGNORECASE)
_STATUS_PAIR_LOW = re.compile(_STATUS_PAIR.pattern)  # the same on lowered ASCII text (see status_values)
_STATUS_KEY_RE = re.compile(_STATUS_KEY + "$", re.IGNORECASE)


@lru_cache(maxsize=256)
def status_values(text: str, near: frozenset[str] = frozenset()) -> frozenset[str]:
    """The values of the status fields a text shows (lower-cased): of a JSON receipt, the ``status``/``state``
    fields of the objects that hold one of ``near`` (a record the claim names) when some do, else of every
    object; of other text (and of escaped JSON in a command line), ``status: X`` / ``--set status=X`` pairs.

    Memoised (the answer is immutable): the claims of a trajectory are held against the same read-backs."""
    text = text[:_MAX_JSON]
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            value = json.loads(stripped)
        except ValueError:
            pass
        else:
            pairs: list[tuple[bool, str]] = []
            _status_pairs(value, near, False, pairs, 0)
            named = [v for held, v in pairs if held]
            if pairs:
                return frozenset(named or [v for _, v in pairs])
    unescaped = text.replace('\\"', '"')[:20_000]
    if unescaped.isascii():
        # ASCII lowered keeps every position and word boundary, and the pattern has no cased character outside its
        # (lower-case) keys: the case-sensitive pattern finds the same pairs, lowered, ~50x faster than IGNORECASE.
        return frozenset(v.strip() for v in _STATUS_PAIR_LOW.findall(unescaped.lower()) if v.strip())
    return frozenset(v.strip().lower() for v in _STATUS_PAIR.findall(unescaped) if v.strip())


def _status_pairs(value: Any, near: frozenset[str], held: bool, pairs: list[tuple[bool, str]], depth: int) -> None:
    if depth > 6:
        return
    if isinstance(value, list):
        for item in value[:500]:
            _status_pairs(item, near, held, pairs, depth + 1)
    elif isinstance(value, dict):
        held = held or any(isinstance(v, str) and v in near for v in value.values())
        for key, item in value.items():
            if isinstance(item, str) and _STATUS_KEY_RE.match(str(key)):
                pairs.append((held, item.strip().lower()))
            else:
                _status_pairs(item, near, held, pairs, depth + 1)


_JSON_OPEN = re.compile(r"^[\[{]", re.MULTILINE)


def data_values(text: str) -> frozenset[str]:
    """The data a receipt returns as JSON (after any leading lines of text: "Warning: ...\\n{...}", before any
    trailing ones): its leaf values, strings of 2 to 60 characters and numbers, never its keys, booleans or nulls.
    An answer that repeats one rests on the receipt ("Stapler, with 2 left" on ``{"Name": "Stapler", "Stock": 2}``)."""
    start = _JSON_OPEN.search(text[:_MAX_JSON])
    if start is None:
        return frozenset()
    try:
        # The first JSON value, whatever follows it: a chain prints its other commands' output after it
        # (`lark-cli ... && notify-send done` -> '{"total": 17}' then "notify-send: command not found").
        value, _end = json.JSONDecoder().raw_decode(text[start.start():_MAX_JSON])
    except ValueError:
        return frozenset()
    found: set[str] = set()
    _leaves(value, found, 0)
    return frozenset(found)


def _leaves(value: Any, found: set[str], depth: int) -> None:
    if depth > 6 or len(found) > 2000:
        return
    if isinstance(value, list):
        for item in value[:500]:
            _leaves(item, found, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            _leaves(item, found, depth + 1)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, float)):
        found.add(str(value))
    elif isinstance(value, str) and 2 <= len(value.strip()) <= 60:
        found.add(value.strip())


@lru_cache(maxsize=1024)
def number_pattern(count: int) -> re.Pattern[str]:
    """``count`` as a whole number in text ("6" in "6 rows", not in "16", "6a" or "6.5")."""
    return re.compile(rf"(?<![\w.]){count}(?![\w]|\.\d)")


def receipt_numbers(text: str) -> set[str]:
    """The numbers a receipt shows as data: in its JSON (:func:`data_values`), as a count it prints
    (:func:`printed_counts`), or as a value (:func:`value_tokens`, 3+ digits)."""
    found = {v for v in value_tokens(text) | data_values(text) if v.isdigit()}
    return found | {str(n) for n in printed_counts(text)}


def states(text: str, value: str) -> bool:
    """Whether ``text`` states ``value``: as a whole word for letters and digits ("2" is not in "12"), as a
    substring otherwise (CJK has no word breaks)."""
    if value not in text:
        return False  # every match below is the value itself: no need to build (and compile) its pattern
    if value.isascii():
        # A hyphen-joined id is one token: "api-1" is not stated by "shop-api-1" nor "api-1-old".
        joined = "-" if "-" in value else ""
        return re.search(rf"(?<![\w.{joined}]){re.escape(value)}(?!\w|-\w)" if joined else
                         rf"(?<![\w.]){re.escape(value)}(?!\w)", text) is not None
    return value in text


# A number as prose writes it: "25,800", "25.800", "25 800", "12.5" (grouping by threes, one decimal part).
_STATED_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:([,.\u00a0\u202f ])\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?)(?![\w])")
# A number directly followed by a word ("6 suppliers", "12 kayıt", "6件"): a count of things. Not a date, a time or
# a unit ("11月", "3 ms", "50 €"), and not part of a version, id or path (CJK text puts no space before it: "には6件").
_NOUN_AFTER = (r"\s?(?=[^\W\d_])(?![年月日時分秒号號点時間]|"
               r"(?:ms|s|sec|min|h|px|kb|mb|gb|tb|k|x|%|am|pm|st|nd|rd|th|d|w|m|y|v)\b)")
_BARE_COUNT = re.compile(r"(?<![A-Za-z0-9_.,:/#-])(\d{1,5})(?![\d.,:/-])" + _NOUN_AFTER, re.IGNORECASE)
_COUNTED = re.compile(_NOUN_AFTER, re.IGNORECASE)


def counts_things(text: str, end: int) -> bool:
    """Whether the number that ends at ``end`` in ``text`` is followed by a word that is no unit, date or time
    part ("1.250 righe", "6件"; not "3 ms", "11月", "2 pm"): a count of things."""
    return _COUNTED.match(text, end) is not None


def stated_numbers(text: str) -> list[float]:
    """The numbers a sentence states, read with their grouping ("25,800" and "25.800" are 25800; "12.5" and
    "12,5" are 12.5)."""
    return [value for _, value in numbers_at(text)]


def numbers_at(text: str) -> list[tuple[int, float]]:
    """(position, value) of each number :func:`stated_numbers` reads in ``text``."""
    found: list[tuple[int, float]] = []
    for match in _STATED_NUMBER.finditer(text):
        number, grouping = match.group(1), match.group(2)
        if grouping:
            digits = re.sub(r"[,.\u00a0\u202f ](?=\d{3}(?:\D|$))", "", number)
            number = digits.replace(",", ".")
        else:
            number = number.replace(",", ".")
        try:
            found.append((match.start(), float(number)))
        except ValueError:
            continue
    return found


@lru_cache(maxsize=4096)
def bare_counts(text: str) -> tuple[int, ...]:
    """Counts a sentence states in any language: a number directly followed by a word (see ``_BARE_COUNT``);
    memoised (pure): the claim readers ask it of the same sentences, and the pattern, led by a look-behind, tries
    every position (~3 us a sentence)."""
    return tuple(dict.fromkeys(int(m.group(1)) for m in _BARE_COUNT.finditer(text)))


# A number that is a whole table cell ("| registros importados | 48 |") or a labelled item's value ("- Zeilen: 48",
# "verbleibende Dubletten: 0"): digits with locale grouping, nothing else in the cell.
_CELL_NUMBER = re.compile(r"(?:^|\|)\s*(\d{1,3}(?:[,.\u00a0\u202f ']\d{3})+|\d+)\s*(?=\||$)"
                          r"|[^\W\d][^:：|\n]{0,60}[:：]\s*(\d{1,3}(?:[,.\u00a0\u202f ']\d{3})+|\d+)\s*\.?\s*$")


def cell_counts(text: str) -> tuple[int, ...]:
    """Counts a line states as table cells or as a label's value (see ``_CELL_NUMBER``), their grouping read
    ("2.210.442", "1,200"): a claim in a summary table or a key-value list, in any language."""
    if "|" not in text and ":" not in text and "：" not in text:
        return ()  # neither a cell nor a label (most sentences)
    found: list[int] = []
    for match in _CELL_NUMBER.finditer(text.strip()):
        raw = match.group(1) or match.group(2)
        digits = re.sub(r"[,.\u00a0\u202f ']", "", raw)
        if digits.isdigit():
            found.append(int(digits))
    return tuple(dict.fromkeys(found))


def record_numbers(text: str) -> dict[str, list[float]]:
    """Field -> the numbers of that field in the records a JSON read-back lists (the objects of its collections),
    for fields that hold a number in every record that has them: what a total or a bound is held against."""
    value = json_document(text)
    if value is None:
        return {}
    records: list[dict[str, Any]] = []
    _records(value, records, 0)
    fields: dict[str, list[float]] = {}
    spoiled: set[str] = set()
    for record in records:
        # A record's fields may sit one level down ({"record_id": ..., "fields": {"Price": 4}}).
        flat = {**record, **{k: v for inner in record.values() if isinstance(inner, dict) for k, v in inner.items()}}
        for key, item in flat.items():
            if isinstance(item, bool) or not isinstance(item, (int, float)):
                if isinstance(item, (str, list, dict)):
                    spoiled.add(key)
                continue
            fields.setdefault(key, []).append(float(item))
    return {k: v for k, v in fields.items() if k not in spoiled}


def _records(value: Any, found: list[dict[str, Any]], depth: int) -> None:
    if depth > 4:
        return
    if isinstance(value, list):
        dicts = [v for v in value[:5000] if isinstance(v, dict)]
        if dicts and len(dicts) == len(value[:5000]):
            found.extend(dicts)
            return
        for item in value[:50]:
            _records(item, found, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            _records(item, found, depth + 1)


def header_list_count(text: str, header: str) -> int | None:
    """The number of items of a plain listing that prints one item a line under a header line ``header`` (the
    field a ``--fields Name`` read-back asked for): lines after the header, blank ones aside."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if len(lines) < 2 or lines[0].split()[0].strip("|,;").lower() != header.lower():
        return None
    return len(lines) - 1
