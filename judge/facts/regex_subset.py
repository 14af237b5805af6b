"""What the matching engine needs to know about a phrase pattern, read by a small parser of the regex subset the
rules config uses (no private ``re`` internals).

Two facts per pattern, both conservative:

- :func:`necessary_literals`: lower-cased strings one of which every match contains (the engine's literal pre-gate
  runs a pattern only on texts holding one of them); None when the pattern has no such set.
- :func:`may_match_newline`: whether a match can contain a line break (the engine runs a pattern that cannot only
  on the lines holding its literals); True when unsure.

The subset: literal characters and escapes (``\\.``, ``\\n``, ``\\xhh``, ``\\uhhhh``, ``\\Uhhhhhhhh``), ``.``,
classes (``[...]``, ``[^...]``, ranges, ``\\d \\D \\s \\S \\w \\W``), anchors (``^ $ \\A \\Z \\b \\B``), capturing,
named and non-capturing groups, look-ahead and look-behind, alternation, and the quantifiers ``? * + {m} {m,}
{m,n}`` (greedy, lazy ``?`` or possessive ``+``). Anything else (back-references, conditionals, atomic groups,
inline flags, comments, octal and named escapes) raises :class:`Unsupported`, and the two facts fall back to
their safe answer (no literal: the pattern always runs; may cross a line), so a pattern outside the subset is only
slower, never missed.

The parse keeps the shape ``re``'s own parser gives a pattern, which the facts read: a non-capturing group is
inlined into its sequence, a one-character class is that character, the alternatives of an alternation lose the
leading items they all share (``tests pass|tests passed`` needs ``tests pass``), and an alternation of single
characters or classes is one class.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Unsupported", "may_match_newline", "necessary_literals", "parse"]


class Unsupported(ValueError):
    """A pattern (or a part of it) outside the subset this parser reads; the message says where."""


# --- the parse tree --------------------------------------------------------------------------------------
# Single-character items compare by value (an alternation's shared leading items are found by comparing them);
# compound items never compare equal, as in ``re``'s parser.

ClassItem = tuple[str, ...]  # ("char", c) | ("range", lo, hi) | ("category", letter of \d \D \s \S \w \W)


@dataclass(frozen=True)
class Char:
    char: str


@dataclass(frozen=True)
class NotChar:
    """A negated one-character class, ``[^x]``."""

    char: str


@dataclass(frozen=True)
class CharClass:
    items: tuple[ClassItem, ...]
    negated: bool = False


@dataclass(frozen=True)
class AnyChar:
    """``.``: any character but a line break (the rules patterns are compiled without DOTALL)."""


@dataclass(frozen=True)
class Anchor:
    kind: str  # ^ $ \A \Z \b \B


@dataclass(eq=False)
class Group:
    """A capturing (or named) group; a non-capturing group is inlined into its sequence instead."""

    body: list[Node]


@dataclass(eq=False)
class Alternation:
    branches: list[list[Node]]


@dataclass(eq=False)
class Repeat:
    low: int
    high: int | None  # None: unbounded
    body: list[Node]
    mode: str = "greedy"  # greedy | lazy | possessive


@dataclass(eq=False)
class Look:
    """A look-ahead or look-behind assertion (matches no character of its own)."""

    body: list[Node]
    behind: bool = False
    negative: bool = False


Node = Char | NotChar | CharClass | AnyChar | Anchor | Group | Alternation | Repeat | Look


# --- the parser --------------------------------------------------------------------------------------

_CATEGORIES = frozenset("dDsSwW")
_ANCHOR_ESCAPES = frozenset("AZbB")
_CONTROL = {"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
_HEX_LENGTH = {"x": 2, "u": 4, "U": 8}
_SPECIAL = frozenset(".\\[{()*+?^$|")
_QUANTIFIERS = frozenset("*+?{")


@dataclass
class _Source:
    text: str
    at: int = 0
    groups: dict[str, int] = field(default_factory=dict)

    def peek(self) -> str | None:
        return self.text[self.at] if self.at < len(self.text) else None

    def take(self) -> str:
        if self.at >= len(self.text):
            raise Unsupported(f"unexpected end of pattern {self.text!r}")
        char = self.text[self.at]
        self.at += 1
        return char

    def take_if(self, expected: str) -> bool:
        if self.text.startswith(expected, self.at):
            self.at += len(expected)
            return True
        return False

    def fail(self, what: str) -> Unsupported:
        return Unsupported(f"{what} at position {self.at} of {self.text!r}")


def parse(pattern: str) -> list[Node]:
    """The parse tree of ``pattern`` (a sequence of items); :class:`Unsupported` outside the subset."""
    source = _Source(pattern)
    sequence = _alternation(source)
    if source.peek() is not None:
        raise source.fail("unbalanced parenthesis")
    return sequence


def _alternation(source: _Source) -> list[Node]:
    branches = [_sequence(source)]
    while source.take_if("|"):
        branches.append(_sequence(source))
    if len(branches) == 1:
        return branches[0]
    result: list[Node] = []
    # Items every alternative starts with are matched once, before the alternation.
    while all(branches) and all(branch[0] == branches[0][0] for branch in branches[1:]):
        result.append(branches[0][0])
        for branch in branches:
            del branch[0]
    # Alternatives of one character or class each make one class.
    if all(len(b) == 1 and (isinstance(b[0], Char) or isinstance(b[0], CharClass) and not b[0].negated) for b in branches):
        items: list[ClassItem] = []
        for (item,) in branches:
            if isinstance(item, Char):
                items.append(("char", item.char))
            elif isinstance(item, CharClass):
                items.extend(item.items)
        result.append(CharClass(tuple(dict.fromkeys(items))))
        return result
    result.append(Alternation(branches))
    return result


def _sequence(source: _Source) -> list[Node]:
    items: list[Node] = []
    inlined: list[int] = []  # positions of non-capturing groups, spliced into the sequence at its end
    while True:
        char = source.peek()
        if char is None or char in "|)":
            break
        source.take()
        if char == "\\":
            items.append(_escape(source))
        elif char not in _SPECIAL:
            items.append(Char(char))
        elif char == "[":
            items.append(_class(source))
        elif char in _QUANTIFIERS:
            if not _quantify(source, char, items, inlined):
                items.append(Char(char))  # a "{" that starts no {m,n} is itself
        elif char == ".":
            items.append(AnyChar())
        elif char == "(":
            group = _group(source)
            if isinstance(group, list):
                inlined.append(len(items))
                items.append(Group(group))  # a placeholder until the sequence ends (it may still be repeated)
            else:
                items.append(group)
        elif char == "^":
            items.append(Anchor("^"))
        elif char == "$":
            items.append(Anchor("$"))
    for position in reversed(inlined):
        placeholder = items[position]
        if isinstance(placeholder, Group):
            items[position : position + 1] = placeholder.body
    return items


def _quantify(source: _Source, char: str, items: list[Node], inlined: list[int]) -> bool:
    """Apply the quantifier ``char`` (already read) to the last item; False when a ``{`` is a plain character."""
    if char == "?":
        low, high = 0, 1
    elif char == "*":
        low, high = 0, None
    elif char == "+":
        low, high = 1, None
    else:
        start = source.at
        digits_low = _digits(source)
        if source.take_if(","):
            digits_high = _digits(source)
        else:
            digits_high = digits_low
        if not source.take_if("}") or not digits_low and source.text[start] == "}":
            source.at = start
            return False
        low = int(digits_low) if digits_low else 0
        high = int(digits_high) if digits_high else None
        if high is not None and high < low:
            raise source.fail("min repeat greater than max repeat")
    if not items or isinstance(items[-1], Anchor | Repeat):
        raise source.fail("nothing to repeat")
    mode = "lazy" if source.take_if("?") else "possessive" if source.take_if("+") else "greedy"
    position = len(items) - 1
    last = items[-1]
    if inlined and inlined[-1] == position and isinstance(last, Group):
        inlined.pop()  # a repeated non-capturing group: the repeat holds its items
        body = last.body
    else:
        body = [last]
    items[-1] = Repeat(low, high, body, mode)
    return True


def _digits(source: _Source) -> str:
    start = source.at
    while (char := source.peek()) is not None and char in "0123456789":
        source.at += 1
    return source.text[start : source.at]


def _group(source: _Source) -> Node | list[Node]:
    """A group after its "(": the node, or the items of a non-capturing group (inlined by the caller)."""
    capturing = True
    look: Look | None = None
    if source.take_if("?"):
        if source.take_if(":"):
            capturing = False
        elif source.take_if("P<"):
            end = source.text.find(">", source.at)
            name = source.text[source.at : end] if end > 0 else ""
            if not name.isidentifier() or name in source.groups:
                raise source.fail("bad group name")
            source.groups[name] = len(source.groups)
            source.at = end + 1
        elif source.take_if("="):
            look = Look([])
        elif source.take_if("!"):
            look = Look([], negative=True)
        elif source.take_if("<="):
            look = Look([], behind=True)
        elif source.take_if("<!"):
            look = Look([], behind=True, negative=True)
        else:
            raise source.fail("unsupported group extension")
    body = _alternation(source)
    if not source.take_if(")"):
        raise source.fail("missing )")
    if look is not None:
        look.body = body
        return look
    return Group(body) if capturing else body


def _escape(source: _Source) -> Node:
    """An escape outside a class, after its backslash."""
    char = source.take()
    if char in _ANCHOR_ESCAPES:
        return Anchor("\\" + char)
    if char in _CATEGORIES:
        return CharClass((("category", char),))
    return Char(_escaped_char(source, char))


def _escaped_char(source: _Source, char: str) -> str:
    """The character an escape (other than a class or an anchor) stands for."""
    if char in _CONTROL:
        return _CONTROL[char]
    if char in _HEX_LENGTH:
        length = _HEX_LENGTH[char]
        digits = source.text[source.at : source.at + length]
        if len(digits) != length or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise source.fail(f"incomplete escape \\{char}")
        source.at += length
        try:
            return chr(int(digits, 16))
        except ValueError:
            raise source.fail(f"bad escape \\{char}{digits}") from None
    if char.isascii() and char.isalnum():
        # Letters are reserved (or \N{name}); digits are back-references or octal escapes.
        raise source.fail(f"unsupported escape \\{char}")
    return char


def _class(source: _Source) -> Node:
    """A class after its "[": a one-character class is that character."""
    negated = source.take_if("^")
    items: list[ClassItem] = []
    while True:
        char = source.take()
        if char == "]" and items:
            break
        first = _class_item(source, char)
        if source.take_if("-"):
            char = source.take()
            if char == "]":
                items += [first, ("char", "-")]
                break
            second = _class_item(source, char)
            if first[0] != "char" or second[0] != "char" or second[1] < first[1]:
                raise source.fail("bad character range")
            items.append(("range", first[1], second[1]))
        else:
            items.append(first)
    unique = tuple(dict.fromkeys(items))
    if len(unique) == 1 and unique[0][0] == "char":
        return NotChar(unique[0][1]) if negated else Char(unique[0][1])
    return CharClass(unique, negated)


def _class_item(source: _Source, char: str) -> ClassItem:
    if char != "\\":
        return ("char", char)
    char = source.take()
    if char in _CATEGORIES:
        return ("category", char)
    if char == "b":
        return ("char", "\b")  # inside a class, \b is a backspace
    return ("char", _escaped_char(source, char))


# --- the facts ----------------------------------------------------------------------------------------


def necessary_literals(pattern: str) -> set[str] | None:
    """Lower-cased strings one of which every match of ``pattern`` (compiled with IGNORECASE) contains; None when
    there is no such set or the pattern is outside the subset.

    A sequence needs the strongest requirement of its parts (its longest run of literal characters, or a group's
    requirement; the longest shortest string wins, then the fewest strings, then the earliest), an alternation
    needs one of its branches' requirements, a repeat needs its item's only when it must occur at least once.
    """
    try:
        return _sequence_needs(parse(pattern))
    except Unsupported:
        return None


def _sequence_needs(items: list[Node]) -> set[str] | None:
    candidates: list[set[str]] = []
    run: list[str] = []
    for item in items:
        if isinstance(item, Char):
            run.append(item.char.lower())
            continue
        if run:
            candidates.append({"".join(run)})
            run = []
        required = _item_needs(item)
        if required:
            candidates.append(required)
    if run:
        candidates.append({"".join(run)})
    if not candidates:
        return None
    return max(candidates, key=lambda c: (min(len(x) for x in c), -len(c)))


def _item_needs(item: Node) -> set[str] | None:
    if isinstance(item, Group):
        return _sequence_needs(item.body)
    if isinstance(item, Alternation):
        union: set[str] = set()
        for branch in item.branches:
            required = _sequence_needs(branch)
            if required is None:
                return None
            union |= required
        return union
    if isinstance(item, Repeat) and item.mode != "possessive":
        return _sequence_needs(item.body) if item.low >= 1 else None
    if isinstance(item, CharClass) and not item.negated and len(item.items) <= _CLASS_LITERALS \
            and all(entry[0] == "char" and _caseless(entry[1]) for entry in item.items):
        return {entry[1] for entry in item.items}  # "[✗✘×]", "(条|个|行)": one of its characters
    return None


_CLASS_LITERALS = 8  # a class of at most this many caseless characters requires one of them


def _caseless(char: str) -> bool:
    """Whether IGNORECASE matches ``char`` only with itself (no letter case, no special fold), and it is no NUL
    (the literal gate joins texts with it)."""
    return char != "\x00" and char.lower() == char == char.upper() and char.casefold() == char


_LINE_CATEGORIES = frozenset("sWD")  # classes that hold "\n": \s, \W, \D


def may_match_newline(pattern: str) -> bool:
    """Whether some match of ``pattern`` (compiled without DOTALL) can contain a line break; True when unsure
    (outside the subset). Look-arounds count as if they consumed what they look at."""
    try:
        return _crosses(parse(pattern))
    except Unsupported:
        return True


def _crosses(items: list[Node]) -> bool:
    return any(_item_crosses(item) for item in items)


def _item_crosses(item: Node) -> bool:
    if isinstance(item, Char):
        return item.char == "\n"
    if isinstance(item, NotChar):
        return item.char != "\n"
    if isinstance(item, CharClass):
        return item.negated or any(_holds_newline(entry) for entry in item.items)
    if isinstance(item, Group | Repeat | Look):
        return _crosses(item.body)
    if isinstance(item, Alternation):
        return any(_crosses(branch) for branch in item.branches)
    return False  # "." stops at a line break without DOTALL; anchors match no character


def _holds_newline(entry: ClassItem) -> bool:
    kind = entry[0]
    if kind == "char":
        return entry[1] == "\n"
    if kind == "range":
        return entry[1] <= "\n" <= entry[2]
    return entry[1] in _LINE_CATEGORIES
