"""Whether a successful receipt of a state-changing call shows that nothing was created or changed, read from its
structure before any words (issue 24 item 2, ``noop`` status): a JSON answer whose every collection is empty and
every count zero (``{"deleted": [], "ok": true}``), a count of the call's own verb at zero (``record-import`` ->
``imported: 0``), or a summary whose every count is zero (``0 ok, 0 skipped, Processing 0 files``). Language-neutral:
it reads numbers, JSON types and the call's own words, so a receipt in any language or from any tool is read the same.

A count smaller than asked but above zero is ``partial``, not a no-op, and is not read here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

_MAX_TEXT = 20_000
# "imported: 0", "skipped (key exists): 25", "rows_affected=0": a label of letters (any script), then a count.
_LABEL_COUNT = re.compile(r"([^\W\d_]{3,}(?:[ _-][^\W\d_]{2,}){0,2})[ \t]*(?:\([^)\n]{0,40}\))?[ \t]*[:=][ \t]*(\d+)(?![\d.,:/])")
# "0 files", "14 ok": a count, then a word of letters.
_COUNT_LABEL = re.compile(r"(?<![\w.,:/-])(\d+)[ \t]+([^\W\d_]{2,})")
_CODE_KEY = re.compile(r"code|status|err|exit|ret|level", re.IGNORECASE)
_ZERO = re.compile(r"(?<![\w.,])0(?![\w.,%])")
# A line that is only a command tag and its count (psql's "UPDATE 0", "DELETE 3", "INSERT 0 1": oid, then count).
_COMMAND_TAG = re.compile(r"^([A-Z]{4,})(?: \d+)? (\d+)$", re.MULTILINE)
_VERB_SPLIT = re.compile(r"[^\w]+|_")
# Summaries print several counts; fewer than this many all at zero is too little to read "nothing was done" from.
_MIN_ZERO_COUNTS = 3


def may_show_no_effect(text: str) -> bool:
    """A cheap test that :func:`shows_no_effect` can hold: the text opens a JSON object, or has a zero after a
    space, colon, equals sign or tab, or at its start (substring tests; most receipts have none, and the call's
    words need not be read for them)."""
    return (text[:1] in ("{", "0") or " 0" in text or ":0" in text or "=0" in text or "\t0" in text
            or "\n0" in text)


def shows_no_effect(text: str, verbs: Iterable[str] = (), summary: bool = True) -> bool:
    """Whether the receipt ``text`` of a successful state-changing call shows that it created or changed nothing.

    ``verbs`` are the words of the call that say what it does (its subcommand words: ``record-import``,
    ``batch-delete``): a count labelled by one of them (``imported``, ``deleted``) that is zero, with no count of
    that verb above zero, is a no-op. ``summary=False`` skips the all-counts-zero reading (a check's summary of
    zero findings is its answer, not a no-op)."""
    text = (text[:_MAX_TEXT] if len(text) > _MAX_TEXT else text).strip()
    if not text:
        return False
    if text[0] == "{":
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            # A field named by the call's verb ("created" of view-create, "imported" of +import) holds what it did:
            # null, zero or empty is nothing. Only the key's first word counts ("would_create" is a dry run's plan).
            counts = [(str(k).lower().split("_", 1)[0], _size(v)) for k, v in value.items()]
            return _empty_answer(value) or _own_count_zero([(k, n) for k, n in counts if n is not None], verbs) is True
    if _ZERO.search(text) is None:
        return False  # every reading below needs a count of zero (most receipts have none: one fast scan)
    pairs = [(label.lower(), int(n)) for label, n in _LABEL_COUNT.findall(text)]
    pairs += [(label.lower(), int(n)) for n, label in _COUNT_LABEL.findall(text)]
    pairs += [(label.lower(), int(n)) for label, n in _COMMAND_TAG.findall(text)]
    if not pairs:
        return False
    own = _own_count_zero(pairs, verbs)
    if own is not None:
        return own
    return summary and len(pairs) >= _MIN_ZERO_COUNTS and not any(n for _, n in pairs)


def _own_count_zero(pairs: list[tuple[str, int]], verbs: Iterable[str]) -> bool | None:
    """Whether the counts labelled by one of the call's own verbs (``imported`` for ``+import``) are all zero; None
    when no count carries such a label."""
    stems = {w[:6] for verb in verbs for w in _VERB_SPLIT.split(verb.lower()) if len(w) >= 4}
    own = [n for label, n in pairs if any(word[:6] in stems for word in _VERB_SPLIT.split(label) if len(word) >= 4)]
    return (not any(own)) if own else None


def _size(value: Any) -> int | None:
    """How much a JSON field holds as a count: a number, a collection's length, 0 for null or an empty string, 1 for
    anything else that is there; None for a boolean (a flag, not a count)."""
    if isinstance(value, bool):
        return None
    if value is None or value == "":
        return 0
    if isinstance(value, (int, float)):
        return int(value != 0)
    if isinstance(value, (list, dict)):
        return len(value)
    return 1


def _empty_answer(value: dict[str, Any]) -> bool:
    """A JSON object that holds at least one collection or count and nothing else but empty collections, zeros,
    booleans, nulls and status codes: what it would have returned (ids, records, a count) is empty. A string field (an id, a
    name, a message) may say what was made, so it keeps the answer out."""
    seen = False
    for key, item in value.items():
        if isinstance(item, bool) or item is None or (isinstance(item, int) and _CODE_KEY.search(key)):
            continue  # a flag, or a status code ("code": 0 is success, not a count of nothing)
        if not (isinstance(item, (list, dict, int, float)) and not item):
            return False
        seen = True
    return seen
