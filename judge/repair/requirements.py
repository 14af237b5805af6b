"""Explicit requirements of a query found without a model, the floor of the capability rewrite check.

A checker model can leave a requirement out of its list, and then nothing asks whether the rewrite kept it.
What can be found mechanically is found here: numbers, quoted strings, file names and paths, URLs, ids
(tokens mixing letters and digits, snake_case names, ``--flags``, ``#123``), and the clauses that state an
obligation or a prohibition ("must", "should", "do not", "never"... in en, zh, ja, ko, de, fr, es, pt, ru).
Each one must be covered by an item of the checker's list (:func:`uncovered`): a value by an item whose two
quotes both contain it, a clause by an item whose original quote overlaps it, and a prohibition must be kept
as a prohibition in the rewrite quote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from judge.evidence import normalise_quote

Kind = Literal["number", "quoted", "file", "url", "id", "obligation", "prohibition"]

_EXTENSIONS = (
    "py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|ndjson|yaml|yml|toml|ini|cfg|conf|env|lock|md|rst|txt|csv|tsv|"
    "xlsx|xls|docx|pptx|pdf|html|htm|css|scss|xml|sql|db|sqlite|sh|bash|zsh|ps1|bat|go|rs|java|kt|scala|c|h|cc|cpp|"
    "hpp|cs|rb|php|swift|r|m|lua|pl|proto|graphql|parquet|arrow|png|jpg|jpeg|gif|svg|webp|mp4|wav|log|zip|tar|gz|"
    "tgz|whl|dockerfile|tf|vue|svelte")
_W = "A-Za-z0-9_"  # ASCII word characters: a value may touch CJK text ("添加6条", "保存到report.csv")
_URL = re.compile(r"\bhttps?://[^\s<>\"'`)\]]+", re.IGNORECASE)
_FILE = re.compile(
    rf"(?<![{_W}/.\-])(?:~?/|\.{{1,2}}/)?(?:[{_W}.\-]+/)*[{_W}\-][{_W}.\-]*\.(?:{_EXTENSIONS})(?![{_W}\-])"
    rf"|(?<![{_W}/.\-])(?:~?/|\.{{1,2}}/)[{_W}.\-]+(?:/[{_W}.\-]+)*/?"  # ./src, /etc/hosts, ~/data
    rf"|(?<![{_W}/.\-])[{_W}.\-]+(?:/[{_W}.\-]+){{2,}}/?"  # src/app/models (two slashes: not "and/or")
    rf"|(?<![{_W}/.\-])[{_W}.\-]+/(?![{_W}/])",  # src/ (a folder)
    re.IGNORECASE)
_QUOTED = re.compile(r'"([^"\n]+)"|“([^”\n]+)”|«([^»\n]+)»|「([^」\n]+)」|『([^』\n]+)』|`([^`\n]+)`'
                     r"|(?<!\w)'([^'\n]+)'(?!\w)|‘([^’\n]+)’")
_ID = re.compile(
    rf"(?<![{_W}\-])(?:--?[A-Za-z][{_W}\-]*"  # --flag, -n
    r"|#\d+"  # #123
    rf"|(?=[{_W}\-]*\d)(?=[{_W}\-]*[A-Za-z])[A-Za-z0-9]+(?:[_\-.][A-Za-z0-9]+)*"  # PROJ-123, tbl8Xk2, v2, gpt-4o
    r"|[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"  # user_id, created_at
    r"|[a-z]+(?:[A-Z][a-z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+)"  # camelCase, CamelCase
    rf"(?![{_W}\-])")
# A number (a date, a time, a range or a version in one piece) not part of a word or an id, nor a list marker
# ("1." or "2)" opening a line, "Step 3:").
_NUMBER = re.compile(rf"(?<![{_W}.,\-#])\d+(?:[.,:/\-]\d+)*(?![{_W}\-])")
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|step\s+\d+\s*[:.)])", re.IGNORECASE | re.MULTILINE)

# Markers of a prohibition, then of an obligation; a clause runs from its marker to the next marker or the end of
# its sentence. "only" and its kin are left out: they often follow what they restrict ("last names only"). Latin-script words need word boundaries; CJK markers are matched as they are.
_PROHIBITION = (
    r"\b(?:must not|mustn't|should not|shouldn't|shall not|do not|don't|does not|never|may not|cannot|can't"
    r"|darf nicht|dürfen nicht|darfst nicht|nicht|niemals|keine?n?"
    r"|ne (?:doit|doivent|devez|faut) pas|ne pas|jamais|n'\w+ pas|ne \w+ pas"
    r"|no debe|no deben|no debes|no se debe|no tiene que|nunca|jamás"
    r"|não deve|não devem|não|nunca"
    r"|нельзя|не должен|не должна|не должны|не|никогда)\b"
    r"|不要|不得|不能|不可|禁止|切勿|勿|别|請勿|请勿|しないで|ないでください|してはいけない|てはいけません|禁止|ないこと"
    r"|하지 마|하지 말|하면 안|금지|않도록")
_OBLIGATION = (
    r"\b(?:must|should|shall|required to|is required|are required|need to|needs to|make sure|ensure|always"
    r"|muss|müssen|musst|soll|sollen|sollte|immer"
    r"|doit|doivent|devez|il faut|toujours|obligatoire"
    r"|debe|deben|debes|tiene que|tienen que|hay que|siempre|obligatorio"
    r"|deve|devem|precisa|precisam|tem que|têm que|sempre"
    r"|должен|должна|должны|нужно|необходимо|обязательно|всегда)\b"
    r"|必须|务必|一定要|应该|应当|需要|必ず|なければならない|なければなりません|必要があります|べき"
    r"|반드시|해야|하여야")
_MARKER = re.compile(rf"(?P<no>{_PROHIBITION})|(?P<must>{_OBLIGATION})", re.IGNORECASE)
_PROHIBITION_RE = re.compile(_PROHIBITION, re.IGNORECASE)
_SENTENCE = re.compile(r"[.!?;:]\s+|[。！？；\n]")
MIN_OVERLAP = 0.5  # share of a clause an original quote must overlap to cover it


@dataclass(frozen=True)
class Requirement:
    """One explicit requirement found in the query: its kind and its text (a value, or a clause)."""

    kind: Kind
    text: str

    def describe(self) -> str:
        return f"{self.kind} {self.text!r}"


def extract_requirements(query: str) -> list[Requirement]:
    """The explicit requirements of ``query`` that a pattern can find, in order of first appearance, each once."""
    found: list[tuple[int, Requirement]] = []
    taken: list[tuple[int, int]] = []  # spans already used: a number inside a file name or an id is not a number

    def add(kind: Kind, start: int, end: int, text: str | None = None) -> None:
        value = (text if text is not None else query[start:end]).strip()
        if value:
            found.append((start, Requirement(kind, value)))
            taken.append((start, end))

    def free(start: int, end: int) -> bool:
        return not any(s <= start and end <= e for s, e in taken)

    for match in _URL.finditer(query):
        add("url", match.start(), match.end(), match.group(0).rstrip(".,;:"))
    for match in _QUOTED.finditer(query):
        inner = next(g for g in match.groups() if g is not None)
        add("quoted", match.start(), match.end(), inner)
    for match in _FILE.finditer(query):
        if free(match.start(), match.end()):
            add("file", match.start(), match.end(), match.group(0).rstrip("."))
    for match in _ID.finditer(query):
        if free(match.start(), match.end()) and len(match.group(0)) >= 2:
            add("id", match.start(), match.end())
    markers = {m.end() for m in _LIST_MARKER.finditer(query)}
    for match in _NUMBER.finditer(query):
        if free(match.start(), match.end()) and not any(match.start() < end <= match.end() + 2 for end in markers):
            add("number", match.start(), match.end())
    for start, end, prohibition in _clauses(query):
        found.append((start, Requirement("prohibition" if prohibition else "obligation", query[start:end].strip())))
    seen: set[Requirement] = set()
    ordered = []
    for _, requirement in sorted(found, key=lambda item: item[0]):
        if requirement not in seen:
            seen.add(requirement)
            ordered.append(requirement)
    return ordered


def _clauses(query: str) -> list[tuple[int, int, bool]]:
    """(start, end, is a prohibition) of each clause from a modal marker to the next marker or sentence end."""
    bounds = [m.end() for m in _SENTENCE.finditer(query)] + [len(query)]
    markers = list(_MARKER.finditer(query))
    clauses = []
    for index, marker in enumerate(markers):
        end = min(b for b in bounds if b > marker.start())
        if index + 1 < len(markers) and markers[index + 1].start() < end:
            following = markers[index + 1]
            # "must not" is one marker; "must ... and never ..." is two clauses
            end = following.start()
        text = query[marker.start():end].rstrip(" ,;:.、，。！？；!?")
        if len(text) > len(marker.group(0).strip()):
            clauses.append((marker.start(), marker.start() + len(text), marker.group("no") is not None))
    return clauses


def uncovered(requirements: list[Requirement], items: list[tuple[str, str | None]]) -> list[tuple[Requirement, str]]:
    """The requirements no checker item covers, each with why. ``items``: (original quote, rewrite quote) pairs,
    the rewrite quote None when it was not given or not verified.

    A value (number, quoted string, file, URL, id) is covered by an item whose original quote and rewrite quote
    both contain it: the rewrite keeps it literally. A clause is covered by an item whose original quote overlaps
    at least half of it, and a prohibition only when that item's rewrite quote is itself a prohibition.
    """
    quotes = [(normalise_quote(original), normalise_quote(kept or "")) for original, kept in items]
    missing = []
    for requirement in requirements:
        text = normalise_quote(requirement.text)
        if requirement.kind in ("obligation", "prohibition"):
            near = [kept for original, kept in quotes if _overlaps(text, original)]
            if not near:
                missing.append((requirement, "the check does not list it"))
            elif not any(near):
                missing.append((requirement, "no rewrite quote keeps it"))
            elif requirement.kind == "prohibition" and not any(_PROHIBITION_RE.search(kept) for kept in near):
                missing.append((requirement, "the rewrite does not keep it as a prohibition"))
        elif not any(_contains(original, text) for original, _ in quotes):
            missing.append((requirement, "the check does not list it"))
        elif not any(kept and _contains(original, text) and _contains(kept, text) for original, kept in quotes):
            missing.append((requirement, "no rewrite quote keeps this value"))
    return missing


def _contains(text: str, value: str) -> bool:
    """``value`` in ``text`` as a whole token (6 is not in 16, v2 not in v21)."""
    pattern = rf"(?<![{_W}]){re.escape(value)}(?![{_W}])" if value[:1].isalnum() and value[-1:].isalnum() else re.escape(value)
    return re.search(pattern, text) is not None


def _overlaps(clause: str, quote: str) -> bool:
    if not clause or not quote:
        return False
    if clause in quote:
        return True
    match = SequenceMatcher(None, clause, quote, autojunk=False).find_longest_match(0, len(clause), 0, len(quote))
    return match.size >= MIN_OVERLAP * len(clause)
