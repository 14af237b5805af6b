"""Numbers as people write them (issue 24 item 2): in words of any configured language, compounds included
("vingt-trois", "dreiundzwanzig", "тридцять вісім", "二十三", "tiga puluh delapan"), and in any locale's digits
("1.250", "1 250", "1'250", "91,3 %"), read into every quantity they can mean.

The words are data (``number_words`` and ``number_grammar`` of the rules config); the one compound rule for every
language is here: a number is a run of number words, each a unit (0-19), a ten (20-90), an inner unit (a word that
is a number only inside a compound: "one", "ein") or a multiplier (hundred, 十, puluh), joined by spaces, hyphens,
a joiner word ("und", "y", "e", "and") or nothing (fused words). Units and tens add in either order ("twenty three",
"drei und zwanzig"); a multiplier multiplies the units before it ("二十三" = 2x10 + 3). A run that does not read as
one number is no number (false alarms are worse than misses).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_WORD = re.compile(r"(?<!\w)[^\W\d_]+")
_HAN = re.compile(r"[\u3007\u4e00-\u9fff]+")  # CJK ideographs: numbers written inside words, no spaces around
# The kinds of number words.
UNIT, INNER, TEN, HUNDRED, MULT, JOIN = "unit", "inner", "ten", "hundred", "mult", "join"


@dataclass(frozen=True, slots=True)
class NumberWords:
    """The number words of every configured language, read once from the config: word -> (kind, value), and the
    scans that find runs of them (followed by a noun, or by a counter in languages that need one: 三件, 세 개)."""

    atoms: dict[str, tuple[str, int]]
    spaced: re.Pattern[str] | None  # runs followed by whitespace and a word
    counted: tuple[tuple[frozenset[str], re.Pattern[str]], ...]  # per language that needs one: the first characters
    # of its number words, and its runs followed by a counter word
    starts: frozenset[str] = frozenset()  # the first three letters of the spaced number words: where a run may start
    atom_re: re.Pattern[str] = re.compile("(?!)")  # any one number word (to split a run)
    memo: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False, repr=False)  # text -> counts

    @classmethod
    def build(cls, words: dict[str, list[str]], grammar: dict[str, dict[str, object]]) -> NumberWords:
        """From ``number_words`` (language -> the words of 0, 1, 2... in order, ``|`` between variants, '' where
        the word is also a common word) and ``number_grammar`` (language -> ``tens`` (20, 30, ... 90), ``hundreds``
        (100, 200, ... 900 written as one word: "четыреста"; '' where a multiplier says it), ``inner``
        (like ``number_words``, words that are numbers only inside a compound), ``joiners``, ``multipliers``
        (word -> value), ``counters`` (words a number needs after it in that language))."""
        atoms: dict[str, tuple[str, int]] = {}
        spaced: dict[str, tuple[str, int]] = {}
        counted: list[tuple[frozenset[str], re.Pattern[str]]] = []
        for lang in sorted(set(words) | set(grammar)):
            rules = grammar.get(lang, {})
            found: dict[str, tuple[str, int]] = {}
            for value, entry in enumerate(words.get(lang, [])):
                for word in _variants(entry):
                    found[word] = (UNIT, value)
            for value, entry in enumerate(_strings(rules.get("inner"))):
                for word in _variants(entry):
                    found.setdefault(word, (INNER, value))
            for step, entry in enumerate(_strings(rules.get("tens"))):
                for word in _variants(entry):
                    found[word] = (TEN, 20 + 10 * step)
            for step, entry in enumerate(_strings(rules.get("hundreds"))):
                for word in _variants(entry):
                    found[word] = (HUNDRED, 100 * (step + 1))
            multipliers = rules.get("multipliers") or {}
            if isinstance(multipliers, dict):
                for word, value in multipliers.items():
                    found[str(word).lower()] = (MULT, int(value))
            for entry in _strings(rules.get("joiners")):
                for word in _variants(entry):
                    found.setdefault(word, (JOIN, 0))
            for word, atom in found.items():
                atoms.setdefault(word, atom)
            counters = {c for entry in _strings(rules.get("counters")) for c in _variants(entry)}
            if counters:
                # Languages that put a counter after a number (三件, 세 개): one scan each, the counter required.
                not_after = "".join(f"(?<!{re.escape(p)})" for entry in _strings(rules.get("not_after"))
                                    for p in _variants(entry))
                if not all(_HAN.fullmatch(w) for w in found):
                    not_after += r"(?<!\w)"  # words of a script with spaces: a whole word
                counted.append((frozenset(w[0] for w in found), _run_pattern(found, not_after, r"(?=\s?(?:" + "|".join(_alternatives(counters)) + "))")))
            else:
                spaced.update(found)
        starts = frozenset(w[:3] for w, a in spaced.items() if a[0] != JOIN)
        return cls(atoms, _run_pattern(spaced, r"(?<!\w)", r"(?!\w)(?=\s+[^\W\d_])") if spaced else None, tuple(counted),
                   starts, re.compile("|".join(_alternatives(set(atoms))) or "(?!)", re.IGNORECASE))

    def counts(self, text: str) -> tuple[int, ...]:
        """The numbers ``text`` writes in words as counts of things (each followed by a noun or a counter), in
        order, without repeats; 0 and 1 aside (an article, "no")."""
        known = self.memo.get(text)
        if known is not None:
            return known
        found: dict[int, None] = {}
        if self.spaced is not None:
            # The run scan only where a word starts as a number word does (one alternation of hundreds of words
            # tried at every position of every sentence would cost more than the rest of the claim reading).
            low = text.lower()
            after = 0  # a word inside a run already read starts no run of its own ("three four files")
            for word in _WORD.finditer(low):
                if word.start() >= after and word.group(0)[:3] in self.starts \
                        and (match := self.spaced.match(low, word.start())) is not None:
                    after = match.end()
                    self._add(match.group(1), found)
        for first, pattern in self.counted:
            if not first.isdisjoint(text):
                for match in pattern.finditer(text):
                    self._add(match.group(1), found)
        if len(self.memo) >= 8192:
            self.memo.clear()  # bounded; a trajectory asks about the same sentences and regions several times
        answer = self.memo[text] = tuple(found)
        return answer

    def _add(self, run: str, found: dict[int, None]) -> None:
        value = self.value(run)
        if value is not None and value >= 2:
            found[value] = None

    def value(self, run: str) -> int | None:
        """The number a run of number words writes, or None when it does not read as one number ("three four",
        a joiner at an end, an inner word alone)."""
        atoms = [self.atoms[m.group(0).lower()] for m in self.atom_re.finditer(run)]
        if not atoms or atoms[0][0] == JOIN or atoms[-1][0] == JOIN:
            return None
        numbers = [a for a in atoms if a[0] != JOIN]
        if len(numbers) == 1 and (numbers[0][0] == INNER or (numbers[0][0] == MULT and not _HAN.fullmatch(run))):
            return None  # "one", "bin", "cent" alone are words; 十 alone is ten
        total = section = digit = 0
        last: str | None = None
        for kind, value in numbers:
            if kind in (UNIT, INNER):
                if last in (UNIT, INNER) or (last == TEN and (value >= 10 or digit % 10)):
                    return None
                digit += value
            elif kind == TEN:
                if last == TEN or (last in (UNIT, INNER) and digit >= 10):
                    return None
                digit += value
            elif kind == HUNDRED:  # one word of a hundreds' value ("четыреста"): it opens a section
                if digit or section:
                    return None
                section = value
            else:  # a multiplier: of the units before it, or of everything before it when it is larger
                if value >= 1000:
                    total = (total + section + digit or 1) * value
                    section = digit = 0
                else:
                    if digit >= value or last == HUNDRED:
                        return None
                    section += (digit or 1) * value
                    digit = 0
            last = kind
        return total + section + digit



def _run_pattern(words: dict[str, tuple[str, int]], start: str, tail: str) -> re.Pattern[str]:
    """A run of number words: atoms joined by spaces, hyphens, a joiner word or nothing, a number word at each end
    and no letter around it (a fused word must be number words through and through)."""
    numbers = "(?:" + "|".join(_alternatives({w for w, a in words.items() if a[0] != JOIN})) + ")"
    joiners = {w for w, a in words.items() if a[0] == JOIN}
    join = r"[\s\-‐]?" + (r"(?:(?:" + "|".join(_alternatives(joiners)) + r")[\s\-‐]?)?" if joiners else "")
    return re.compile(rf"{start}({numbers}(?:{join}{numbers})*)" + tail, re.IGNORECASE)


def _alternatives(words: set[str]) -> list[str]:
    return [re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)) if w]


def _variants(entry: str) -> list[str]:
    return [w.strip().lower() for w in str(entry).split("|") if w.strip()]


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


# --- digits in any locale --------------------------------------------------------------------------------------

# A number as a locale writes it: groups of three after a separator (, . space nbsp ' ’), a decimal part after , or .
_LOCALE_NUMBER = re.compile(
    r"(?<![\w.,'’])(\d{1,3}(?:[,.\u00a0\u202f '’]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?)"
    # Not the digits of an id or a word ("tbl7a2", "x86", "3rd"); a counter of a language written without spaces
    # may follow ("120건", "6件", "3つ").
    r"(?![0-9A-Za-z_\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]|[.,]\d)(\s?[%％])?")
_GROUP_ONLY = frozenset("\u00a0\u202f '’")


@dataclass(frozen=True, slots=True)
class Reading:
    """A number a text states: where, its possible values (more than one when its separator is ambiguous:
    "1.250" is 1250 or 1.25), the unit of its last digit in each reading's scale (for rounding), and whether a
    percent sign follows."""

    start: int
    end: int
    values: tuple[float, ...]
    steps: tuple[float, ...]
    percent: bool
    text: str


def number_readings(text: str) -> list[Reading]:
    """Every number ``text`` states with every quantity it can be: "1,250" and "1.250" are 1250 or 1.25, "1 250"
    and "1'250" are 1250, "1.250,5" is 1250.5, "91,3 %" is 91.3 percent."""
    found: list[Reading] = []
    for match in _LOCALE_NUMBER.finditer(text):
        raw = match.group(1)
        options = _quantities(raw)
        if not options:
            continue
        found.append(Reading(match.start(), match.end(), tuple(v for v, _ in options), tuple(s for _, s in options),
                             match.group(2) is not None, raw))
    return found


def _quantities(raw: str) -> list[tuple[float, float]]:
    """(value, step of the last digit) of each reading of one number."""
    separators = [c for c in raw if not c.isdigit()]
    if not separators:
        return [(float(raw), 1.0)]
    last = raw.rfind(separators[-1])
    tail = raw[last + 1:]
    readings: list[tuple[float, float]] = []
    # As grouping: every separator groups, when every group after the first has three digits.
    groups = re.split(r"[,.\u00a0\u202f '’]", raw)
    if len(groups) > 1 and all(len(g) == 3 for g in groups[1:]) and len(set(separators)) == 1:
        readings.append((float("".join(groups)), 1.0))
    # As a decimal part: the last separator (, or .) is the decimal mark, the others group.
    if separators[-1] in ",." and (len(separators) == 1 or separators[-1] not in separators[:-1]):
        head = re.sub(r"[,.\u00a0\u202f '’]", "", raw[:last])
        if len(separators) == 1 or all(len(g) == 3 for g in re.split(r"[,.\u00a0\u202f '’]", raw[:last])[1:]):
            readings.append((float(f"{head}.{tail}"), 10.0 ** -len(tail)))
    if separators[-1] in _GROUP_ONLY and not readings:
        return []
    return readings


def same_quantity(reading: Reading, value: float, percent_of_fraction: bool = False) -> bool:
    """Whether ``reading`` can state ``value``: some reading of it equals ``value`` rounded (or cut) to the
    reading's last digit; with ``percent_of_fraction``, a percent is also read against a fraction (91.3% = 0.913)
    and a fraction against a percent."""
    for number, step in zip(reading.values, reading.steps):
        candidates = [(number, step)]
        if percent_of_fraction:
            candidates += [(number / 100, step / 100)] if reading.percent or number > 1 else [(number * 100, step * 100)]
        if any(abs(n - value) <= s * 1.0001 for n, s in candidates):
            return True
    return False
