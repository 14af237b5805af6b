"""Read-back shapes that contradict a claim's values, language-neutrally (issue 24 item 2).

Pure functions of text: how many items a bare listing holds (one name, path or id a line, as ``ls``, ``find`` or
a CLI's ``list -o name`` print them), and the objects a text names that are near twins of another (a transposed
or one-character-off id or IP address: ``203.0.113.47`` / ``203.0.113.74``), which tie a claim to the read-back
of the object a change really acted on.
"""

from __future__ import annotations

import re

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
