"""The matching engine of the rules judge: phrase lists searched like the alternation of their patterns, fast.

Python's ``re`` tries every branch of an alternation at every position (~100 ns a character for an English list,
whatever the text says). Here (bench/rules_speed.py): the literals every match needs (:func:`necessary_literals`
of :mod:`judge.facts.regex_subset`) are found with substring tests, for all the lists read over one text
(:class:`PhraseGroup`) and all of a trajectory's receipts (or messages) in one scan (:meth:`LiteralGate.find_many`);
only the patterns needing a found literal run, lowered, on the lowered text, as one alternation once the same set
of patterns has been searched often (:data:`JOIN_AFTER`); in long texts a pattern that cannot cross a line
(:func:`may_match_newline`) runs only on the lines that hold its literals. The answer is the alternation's.

The engine knows nothing of the rules config: :class:`judge.facts.config.CompiledPatterns` builds one
:class:`PhraseMatcher` per list of the config.
"""

from __future__ import annotations

import bisect
import re
from typing import Any

from judge.facts.regex_subset import may_match_newline, necessary_literals

__all__ = [
    "JOIN_AFTER", "JOIN_MAX_CHARS", "WINDOW_MIN_CHARS", "LiteralGate", "PhraseGroup", "PhraseMatcher", "Plan",
    "lower_pattern", "may_match_newline", "necessary_literals",
]


_NOTHING: frozenset[str] = frozenset()
_PLAN_LIMIT = 4096  # distinct sets of found literals remembered per matcher (bounded memory)


class PhraseMatcher:
    """One phrase list, searched like the alternation of its patterns, but much faster on ordinary text.

    Python's ``re`` tries every branch of an alternation at every position (~100 ns a character for an English
    list, whatever the text says). Instead, every match of most patterns must contain one of a few literals
    (found by :func:`necessary_literals`); a :class:`LiteralGate` finds which literals occur in the lowered text
    with C-speed substring tests, and only the patterns needing one of them are run. The result is the
    alternation's: the leftmost match, the earliest pattern first at one position. Patterns without a necessary
    literal always run.
    """

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = patterns
        # Compiled when a plan first needs them (most lists hold other languages' patterns, which a batch may
        # never need; compiling all of them was ~0.1 s of every run): case-insensitive for the text, and the same
        # pattern in lower case without IGNORECASE for the lowered text (``re`` compares case-folded characters
        # several times slower, and a case-insensitive start defeats its first-character skip).
        self._compiled: list[tuple[re.Pattern[str], re.Pattern[str]] | None] = [None] * len(patterns)
        self.always: list[int] = []
        self.requires: dict[str, set[int]] = {}  # literal -> patterns that need it
        for index, pattern in enumerate(patterns):
            required = necessary_literals(pattern)
            if required is None:
                self.always.append(index)
                continue
            for literal in required:
                self.requires.setdefault(literal, set()).add(index)
        self.gate = LiteralGate(list(self.requires))
        # A pattern that cannot match a line break has every match inside one line, and that line holds one of
        # its literals: on a long text it is run only on the lines where its literals occur.
        self.one_line = [i not in self.always and not may_match_newline(p) for i, p in enumerate(patterns)]
        self._plans: dict[frozenset[str], Plan] = {}
        # Patterns of a plan joined into one alternation (see Plan.joined), per set of patterns: set-up shared by
        # every literal set that selects the same patterns. A pattern with group references cannot be joined.
        self.joinable = [_joinable(p) for p in patterns]
        self._joined: dict[tuple[int, ...], tuple[re.Pattern[str], re.Pattern[str]] | None] = {}
        self._uses: dict[tuple[int, ...], int] = {}

    def plan(self, found: frozenset[str]) -> Plan:
        """The patterns to run, in list order, when exactly the literals ``found`` occur (others are ignored)."""
        plan = self._plans.get(found)
        if plan is None:
            indices = set(self.always)
            window_literals: set[str] = set()
            own: dict[int, list[str]] = {}  # a one-line pattern -> its literals found (its matches' lines hold one)
            for literal in found:
                needing = self.requires.get(literal, ())
                indices.update(needing)
                for i in needing:
                    if self.one_line[i]:
                        window_literals.add(literal)
                        own.setdefault(i, []).append(literal)
            if len(self._plans) >= _PLAN_LIMIT:
                self._plans.clear()
            ordered = sorted(indices)
            compiled = [self.compiled(i) for i in ordered]
            plan = self._plans[found] = Plan(
                tuple(pair[0] for pair in compiled), tuple(pair[1] for pair in compiled),
                tuple(self.one_line[i] for i in ordered), tuple(sorted(window_literals)), self,
                tuple(ordered) if len(ordered) > 1 else (), tuple(tuple(sorted(own.get(i, ()))) for i in ordered))
        return plan

    def compiled(self, index: int) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """Pattern ``index`` compiled (case-insensitive, and lowered for the lowered text)."""
        pair = self._compiled[index]
        if pair is None:
            pattern = self.patterns[index]
            pair = self._compiled[index] = (re.compile(pattern, re.IGNORECASE | re.MULTILINE),
                                            re.compile(lower_pattern(pattern), re.MULTILINE))
        return pair

    def join(self, plan: Plan) -> None:
        """Count a search with ``plan``; once its patterns have been searched :data:`JOIN_AFTER` times, give it
        their alternation (compiling one costs milliseconds, as much as a few thousand searches save)."""
        ordered = plan.indices
        uses = self._uses.get(ordered, 0) + 1
        if uses < JOIN_AFTER:
            if len(self._uses) >= _PLAN_LIMIT:
                self._uses.clear()
            self._uses[ordered] = uses
            return
        plan.joined = self._join(ordered)
        plan.indices = ()  # settled: joined or not joinable

    def _join(self, ordered: tuple[int, ...]) -> tuple[re.Pattern[str], re.Pattern[str]] | None:
        """(case-insensitive, lowered) alternation of the patterns ``ordered``; None for fewer than two or when
        one of them cannot be joined."""
        if len(ordered) < 2 or not all(self.joinable[i] for i in ordered):
            return None
        if ordered in self._joined:
            return self._joined[ordered]
        if len(self._joined) >= _PLAN_LIMIT:
            self._joined.clear()
        joined: tuple[re.Pattern[str], re.Pattern[str]] | None
        try:
            joined = (
                re.compile("|".join(f"(?:{self.patterns[i]})" for i in ordered), re.IGNORECASE | re.MULTILINE),
                re.compile("|".join(f"(?:{lower_pattern(self.patterns[i])})" for i in ordered), re.MULTILINE),
            )
        except re.error:
            joined = None
        self._joined[ordered] = joined
        return joined

    def search(self, text: str, low: str | None = None) -> re.Match[str] | None:
        """Like ``re.search`` of the alternation; ``low`` is ``text.lower()`` when the caller already has it."""
        low = text.lower() if low is None else low
        return self.search_found(text, self.gate.find(low), low)

    def search_found(self, text: str, found: frozenset[str], low: str | None = None) -> re.Match[str] | None:
        """:meth:`search` when the literals occurring in ``text`` are known (a superset of this list's is fine:
        a :class:`PhraseGroup` finds the literals of several lists at once)."""
        if not found and not self.always:
            return None  # the common case: no literal of the list occurs at all
        plan = self.plan(found)
        return self.run(text, plan, low) if plan.patterns else None

    def finditer(self, text: str, low: str | None = None) -> list[re.Match[str]]:
        """Every match of every pattern of the list, by position (overlapping matches of different patterns kept)."""
        low = text.lower() if low is None else low
        return self.finditer_found(text, self.gate.find(low), low)

    def finditer_found(self, text: str, found: frozenset[str], low: str | None = None) -> list[re.Match[str]]:
        """:meth:`finditer` when the literals occurring in ``text`` are known (see :meth:`search_found`)."""
        if not found and not self.always:
            return []
        plan = self.plan(found)
        if not plan.patterns:
            return []
        patterns, text = plan.for_text(text, low)
        # Windows are found in the lowered text; on the case-insensitive fallback the whole text is searched.
        windows = plan.pattern_windows(text) if text is low and len(text) >= WINDOW_MIN_CHARS else None
        first = plan.first_line(text) if windows is None and text is low and plan.any_one_line else 0
        matches: list[re.Match[str]] = []
        for at, (pattern, one_line) in enumerate(zip(patterns, plan.one_line)):
            if one_line and windows is not None:
                for start, end in windows[at]:
                    matches.extend(pattern.finditer(text, start, end))
            else:
                matches.extend(pattern.finditer(text, first if one_line else 0))
        if len(matches) > 1:
            matches.sort(key=lambda m: m.start())
        return matches

    @staticmethod
    def run(text: str, plan: Plan, low: str | None = None) -> re.Match[str] | None:
        """The leftmost match of the plan's patterns (the earliest pattern first at one position).

        With ``low`` the match is made on the lowered text (same positions; only ``start``/``end`` are meant
        to be read from it).
        """
        patterns, text = plan.for_text(text, low)
        # Windows are found in the lowered text; on the case-insensitive fallback the whole text is searched.
        windows = plan.pattern_windows(text) if text is low and len(text) >= WINDOW_MIN_CHARS else None
        # A short text is searched whole, but a pattern that cannot cross a line from the first line that holds
        # one of the plan's literals on (no match of it starts before; look-behinds still see the text before).
        first = plan.first_line(text) if windows is None and text is low and plan.any_one_line else 0
        if windows is None:
            if plan.joined is not None:
                # One search of the alternation finds the same leftmost match start, earliest pattern first.
                return plan.joined[1 if text is low else 0].search(text, first if plan.all_one_line else 0)
            if plan.indices and plan.matcher is not None:
                plan.matcher.join(plan)
        best: re.Match[str] | None = None
        for at, (pattern, one_line) in enumerate(zip(patterns, plan.one_line)):
            if one_line and windows is not None:
                match = None
                for start, end in windows[at]:  # in text order: the first window with a match has the leftmost
                    match = pattern.search(text, start, end)
                    if match is not None:
                        break
            else:
                match = pattern.search(text, first if one_line else 0)
            if match is not None and (best is None or match.start() < best.start()):
                best = match
        return best


JOIN_AFTER = 1000  # searches with one set of patterns before they are joined into one alternation


def _joinable(pattern: str) -> bool:
    """Whether ``pattern`` keeps its meaning inside an alternation of several: no group references (their
    numbers would shift), no named groups (names would clash), no global inline flags."""
    return not (
        "(?P" in pattern or "(?(" in pattern or re.search(r"\\\d", pattern) or re.match(r"\(\?[aiLmsux]+\)", pattern)
    )


WINDOW_MIN_CHARS = 400  # below this, running a pattern over the whole text is cheaper than finding its lines


class Plan:
    """The patterns of one list to run on a text, and the literals whose lines bound the one-line patterns."""

    __slots__ = ("all_one_line", "any_one_line", "indices", "joined", "literals", "lowered", "matcher", "one_line",
                 "own", "patterns")

    def __init__(self, patterns: tuple[re.Pattern[str], ...], lowered: tuple[re.Pattern[str], ...],
                 one_line: tuple[bool, ...], literals: tuple[str, ...], matcher: PhraseMatcher | None = None,
                 indices: tuple[int, ...] = (), own: tuple[tuple[str, ...], ...] = ()) -> None:
        self.patterns = patterns
        self.lowered = lowered
        self.one_line = one_line
        self.all_one_line = all(one_line)
        self.any_one_line = any(one_line)
        self.literals = literals
        # Per pattern, the literals of :attr:`literals` it needs: a one-line pattern runs only on their lines (every
        # match of it holds one; the other literals' lines cannot hold a match of it).
        self.own = own or tuple(literals if line else () for line in one_line)
        # The patterns as one alternation (case-insensitive, lowered), for a search of a whole text: its match
        # starts where the leftmost of theirs does (callers read only ``start()``). None: run them one by one.
        self.joined: tuple[re.Pattern[str], re.Pattern[str]] | None = None
        self.matcher = matcher
        self.indices = indices  # the patterns' positions in the list, until joining them is settled

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def for_text(self, text: str, low: str | None) -> tuple[tuple[re.Pattern[str], ...], str]:
        """(patterns, text to run them on): the lowered patterns on ``low`` when lowering kept every position,
        else the case-insensitive ones on ``text`` (a few characters, such as "İ", lower to two)."""
        if low is not None and len(low) == len(text):
            return self.lowered, low
        return self.patterns, text

    def first_line(self, low: str) -> int:
        """Where the first line of the lowered text that holds one of the literals starts (0 when none does):
        every match of a one-line pattern lies on a line that holds one of its literals."""
        first = -1
        for literal in self.literals:
            at = low.find(literal)
            if at >= 0 and (first < 0 or at < first):
                first = at
        return low.rfind("\n", 0, first) + 1 if first > 0 else 0

    def pattern_windows(self, low: str) -> list[list[tuple[int, int]]] | None:
        """Per pattern, the line spans of the lowered text holding one of its own literals (merged, in order): a
        one-line pattern runs only there. None: search the text whole (a short text, or no one-line pattern)."""
        if not self.literals or len(low) < WINDOW_MIN_CHARS:
            return None
        lines = {literal: _lines_holding(low, literal) for literal in self.literals}
        return [_merged(lines[own[0]]) if len(own) == 1 else _merged(sorted(s for literal in own for s in lines[literal]))
                for own in self.own]


def _lines_holding(low: str, literal: str) -> list[tuple[int, int]]:
    """The spans of the lines of ``low`` that hold ``literal``, in order (each line once)."""
    spans: list[tuple[int, int]] = []
    at = low.find(literal)
    while at >= 0:
        start = low.rfind("\n", 0, at) + 1
        end = low.find("\n", at + len(literal))
        end = len(low) if end < 0 else end
        spans.append((start, end))
        at = low.find(literal, end)  # the rest of this line is covered already
    return spans


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted spans with the overlapping ones joined."""
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


JOIN_MAX_CHARS = 512  # texts up to this length are scanned for literals together (LiteralGate.find_many)


class LiteralGate:
    """Finds exactly which of a set of literals occur in a lowered text.

    Substring tests (``literal in text``) run at C speed (a few ns a character, against ~100 ns for a regex
    alternation of the same literals). Literals form a tree by containment: a literal is tested only when a
    shorter literal inside it was found ("error" only after "rror"), so a text with none of the roots costs one
    test per root.
    """

    def __init__(self, literals: list[str]) -> None:
        ordered = sorted(set(literals), key=lambda x: (len(x), x))
        known = set(ordered)
        roots: list[str] = []
        self.children: dict[str, list[str]] = {}
        for literal in ordered:
            # Parent: the longest shorter literal inside this one (present whenever this one is), the greatest of
            # one length; found among its substrings (a scan of every shorter literal was quadratic in the list).
            parent = None
            for size in range(len(literal) - 1, 0, -1):
                inside = {literal[at : at + size] for at in range(len(literal) - size + 1)} & known
                if inside:
                    parent = max(inside)
                    break
            if parent is None:
                roots.append(literal)
            else:
                self.children.setdefault(parent, []).append(literal)
        # Most texts are ASCII: the literals with other characters (Chinese, Japanese, Korean, Cyrillic, accented
        # letters) are only tested on a text that is not, and only those whose key character (their first
        # non-ASCII one) occurs in it: a Chinese text is not searched for Korean or Russian words.
        self.roots = tuple(r for r in roots if r.isascii())
        self.wide_roots = tuple(r for r in roots if not r.isascii())
        # Many roots (nineteen languages' words): one scan of a trie-shaped regex finds them about twice as fast as a
        # substring test per root. No root is a prefix of another (it would contain it), so at most one root starts
        # at a position, and searching again from the position after each match finds every occurrence. A long text
        # (a trajectory's receipts joined) is scanned once per first character instead (a root alone there: a
        # substring test): a regex that starts with a literal jumps from one occurrence of it to the next in C,
        # where the trie of all roots tries its branches at almost every position (~2x slower on such a text; on a
        # sentence the thirty tests cost more than they save).
        self.root_scan = _trie_scan(self.roots) if len(self.roots) >= TRIE_MIN_ROOTS else None
        self.root_scans = _first_char_scans(self.roots) if self.root_scan is not None and all(self.roots) else None
        self.wide_by_key: dict[str, list[str]] = {}
        for root in self.wide_roots:
            self.wide_by_key.setdefault(next(ch for ch in root if not ch.isascii()), []).append(root)

    def find(self, low: str) -> frozenset[str]:
        scans = self.root_scans if len(low) >= FIRST_CHAR_MIN_CHARS else None
        if scans is not None:
            seen: dict[str, None] = {}
            for first, scan, only in scans:
                if first not in low:
                    continue
                if scan is None:
                    if only in low:
                        seen[only] = None
                    continue
                match = scan.search(low)
                while match is not None:
                    seen[match.group()] = None
                    match = scan.search(low, match.start() + 1)
            found = list(seen)
        elif self.root_scan is not None:
            # The root starting at each position where one does (at most one can), in text order: a search skips
            # to the next candidate start in C, where a look-ahead tried at every position costs ~25% more.
            seen = {}
            match = self.root_scan.search(low)
            while match is not None:
                seen[match.group()] = None
                match = self.root_scan.search(low, match.start() + 1)
            found = list(seen)
        else:
            found = [literal for literal in self.roots if literal in low]
        if self.wide_roots and not low.isascii():
            by_key = self.wide_by_key
            for key in by_key.keys() & set(low):
                found += [literal for literal in by_key[key] if literal in low]
        if not found:
            return _NOTHING
        children = self.children
        at = 0
        while at < len(found):
            for child in children.get(found[at], ()):
                if child in low:
                    found.append(child)
            at += 1
        return frozenset(found)

    def find_many(self, lows: list[str]) -> list[frozenset[str]]:
        """:meth:`find` of each lowered text, in one scan of them all (a trajectory's texts share most misses).

        The texts are joined with NUL, which no literal contains, so no literal is found across two texts. The
        literals of the joined text are found once; each is then located text by text with ``str.find``, so a
        text costs only the literals that occur somewhere in the batch, not a test of every root.
        """
        if len(lows) < 2:
            return [self.find(low) for low in lows]
        # Joining pays for short texts (a test per literal and text is mostly call overhead); a long text holds
        # many literals, each then located again in the joined text, so it is scanned alone. One non-ASCII
        # character makes the whole joined text a wide string (slower to search, and tested for the wide literals
        # too): ASCII texts and the others are joined apart.
        narrow: list[int] = []
        wide: list[int] = []
        result: list[frozenset[str]] = [_NOTHING] * len(lows)
        for position, low in enumerate(lows):
            if len(low) > JOIN_MAX_CHARS:
                result[position] = self.find(low)
            elif low.isascii():
                narrow.append(position)
            else:
                wide.append(position)
        for positions in (narrow, wide):
            for position, found in zip(positions, self._find_joined([lows[p] for p in positions])):
                result[position] = found
        return result

    def _find_joined(self, lows: list[str]) -> list[frozenset[str]]:
        if len(lows) < 2:
            return [self.find(low) for low in lows]
        joined = "\x00".join(lows)
        present = self.find(joined)
        if not present:
            return [_NOTHING] * len(lows)
        starts: list[int] = []
        at = 0
        for low in lows:
            starts.append(at)
            at += len(low) + 1
        last = len(lows) - 1
        hits: dict[int, list[str]] = {}  # only the texts that hold a literal: most of a batch holds none
        for literal in present:
            at = joined.find(literal)
            while at >= 0:
                text = bisect.bisect_right(starts, at) - 1
                held = hits.get(text)
                if held is None:
                    hits[text] = [literal]
                else:
                    held.append(literal)
                if text == last:
                    break
                at = joined.find(literal, starts[text + 1])  # the next text that holds it
        result = [_NOTHING] * len(lows)
        for text, held in hits.items():
            result[text] = frozenset(held)
        return result


TRIE_MIN_ROOTS = 60  # below this many roots, a substring test per root is as fast as a trie scan
FIRST_CHAR_MIN_CHARS = 400  # from this length on, a text's roots are found by one scan per first character


def _first_char_scans(words: tuple[str, ...]) -> list[tuple[str, re.Pattern[str] | None, str]]:
    """(first character, :func:`_trie_scan` of the words starting with it, or None and the one word that does) for
    each first character of ``words``: every match of a scan starts with its literal character."""
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word)
    return [(first, None, group[0]) if len(group) == 1 else (first, _trie_scan(tuple(group)), "")
            for first, group in sorted(groups.items())]


def _trie_scan(words: tuple[str, ...]) -> re.Pattern[str]:
    """A regex that matches, at a position, the word of ``words`` starting there (one alternation, as a trie)."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        branches = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return re.compile(build(trie))


class PhraseGroup:
    """Several phrase lists searched over the same text with one literal scan (receipts, commands)."""

    def __init__(self, matchers: dict[str, PhraseMatcher]) -> None:
        self.matchers = matchers
        self.gate = LiteralGate([lit for m in matchers.values() for lit in m.requires])

    def find(self, low: str) -> frozenset[str]:
        """The literals of all the group's lists that occur in the lowered text ``low``."""
        return self.gate.find(low)

    def search_one(self, name: str, text: str, low: str, found: frozenset[str]) -> re.Match[str] | None:
        """The list ``name``'s search of ``text`` when ``low`` and the group's literals in it are known."""
        matcher = self.matchers[name]
        if not found and not matcher.always:
            return None
        plan = matcher.plan(found)
        return matcher.run(text, plan, low) if plan.patterns else None

    def search_all(self, text: str) -> dict[str, re.Match[str] | None]:
        low = text.lower()
        return self.search_all_found(text, low, self.gate.find(low))

    def search_all_found(self, text: str, low: str, found: frozenset[str]) -> dict[str, re.Match[str] | None]:
        """:meth:`search_all` when ``low`` (``text.lower()``) and its literals are known (:meth:`LiteralGate.find_many`)."""
        result: dict[str, re.Match[str] | None] = {}
        for name, matcher in self.matchers.items():
            if not found and not matcher.always:
                result[name] = None
            else:
                plan = matcher.plan(found)
                result[name] = matcher.run(text, plan, low) if plan.patterns else None
        return result


def lower_pattern(pattern: str) -> str:
    """``pattern`` for lowered text: every character lowered except escapes (``\\S``, ``\\W``, ``\\D``, ``\\B``
    keep their meaning). Matching it on ``text.lower()`` finds what ``pattern`` with IGNORECASE finds in
    ``text``, at the same positions, when lowering keeps the length."""
    out: list[str] = []
    at = 0
    while at < len(pattern):
        if pattern[at] == "\\" and at + 1 < len(pattern):
            out.append(pattern[at : at + 2])
            at += 2
        else:
            out.append(pattern[at].lower())
            at += 1
    return "".join(out)
