"""The rules judge's matching engine: the fast phrase matcher answers exactly like the plain alternation of its
patterns, and the facts it reads from a pattern (necessary literals, whether a match may cross a line) are sound."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from judge.facts import matching
from judge.facts.matching import LiteralGate, PhraseMatcher, lower_pattern
from judge.facts.regex_subset import Unsupported, may_match_newline, necessary_literals, parse
from judge.importers import load_trajectories
from judge.rules import default_config

# --- phrase matching: the fast matcher must answer exactly like the plain alternation ------------------

_FILLER = "\n".join(f"line {i}: nothing to see here, x = {i}" for i in range(40))  # > WINDOW_MIN_CHARS
MATCHER_TEXTS = [
    ("empty", ""),
    ("no literal", "Let me look at the file first."),
    ("claim", "I've updated calc.py; all tests pass."),
    ("two claims", "Done.\nThe tests now pass and I have created README.md."),
    ("zh", "已完成：README.md 已写入。测试全部通过。"),
    ("ja", "修正が完了しました。テストもすべて通過しました。"),
    ("long, claim in the middle", _FILLER + "\nAll 3 tests passed and the work is done.\n" + _FILLER),
    ("long, claim on the last line", _FILLER + "\nEverything is complete"),
    ("long, lone done line", _FILLER + "\n\n  done  \n\n" + _FILLER),
    ("long, multi-line error", _FILLER + "\nUsage: tool [flags]\nerror: unknown flag --records\n" + _FILLER),
    ("long, lowering changes length", "İ" * 10 + _FILLER + "\nTraceback (most recent call last):\nValueError: bad\n"),
    ("long, many hits", "\n".join(f"step {i}: error: failed, not done, will retry" for i in range(30))),
    # Each line holds another pattern's literals: a pattern runs only on its own literals' lines.
    ("long, phrases on separate lines", _FILLER + "\nThe file was saved.\nAll tests pass.\nerror: no such file\n"
     "I pushed the branch; it is done.\nConnection timed out\n" + _FILLER),
]


@pytest.mark.parametrize("list_name", ["claim", "done_claim", "hedge", "error", "environment", "prior_failure", "phantom"])
@pytest.mark.parametrize(("case", "text"), MATCHER_TEXTS, ids=[c for c, _ in MATCHER_TEXTS])
def test_phrase_matcher_answers_like_the_alternation(list_name: str, case: str, text: str) -> None:
    matcher = getattr(default_config().patterns, list_name)
    flags = re.IGNORECASE | re.MULTILINE
    compiled = [re.compile(p, flags) for p in matcher.patterns]
    first = [m for m in (c.search(text) for c in compiled) if m]
    want = min(first, key=lambda m: m.start()) if first else None
    got = matcher.search(text)
    assert got.span() == want.span() if want else got is None
    everything = sorted(m.span() for c in compiled for m in c.finditer(text))
    assert sorted(m.span() for m in matcher.finditer(text)) == everything


@pytest.mark.parametrize("list_name", ["claim", "done_claim", "hedge", "error", "environment", "prior_failure", "phantom"])
def test_joined_patterns_answer_like_one_by_one(list_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A hot set of patterns is searched as one alternation: same match as searching them one by one.
    patterns = getattr(default_config().patterns, list_name).patterns
    one_by_one = matching.PhraseMatcher(patterns)
    monkeypatch.setattr(matching, "JOIN_AFTER", 1)
    joined = matching.PhraseMatcher(patterns)
    texts = [text for _, text in MATCHER_TEXTS] + ["Error: unknown flag", "Connection timed out; retry failed", "不是完成"]
    for _ in range(2):  # the first search settles the join, the second uses it
        for text in texts:
            want, got = one_by_one.search(text), joined.search(text)
            assert (got.span() if got else None) == (want.span() if want else None), text
    if list_name in ("claim", "error", "environment"):  # these texts search several of their patterns at once
        assert any(plan.joined is not None for plan in joined._plans.values())


@pytest.mark.parametrize(("patterns", "text", "span"), [
    (["abc", "ab", "b"], "xabc", (1, 4)),  # leftmost start; at one start, the earliest pattern of the list
    (["b", "ab", "abc"], "xabc", (1, 3)),
    (["zz", "c", "ab"], "xabc", (1, 3)),  # the leftmost start wins over list order
    (["(a)(b)", "(c)"], "ABC", (0, 2)),  # groups of one pattern do not disturb another
])
def test_joined_patterns_keep_the_leftmost_earliest_match(patterns: list[str], text: str, span: tuple[int, int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matching, "JOIN_AFTER", 1)
    matcher = matching.PhraseMatcher(patterns)
    answers = [matcher.search(text) for _ in range(2)]  # before and after the join
    assert [a.span() if a else None for a in answers] == [span, span]
    assert all(plan.joined is not None for plan in matcher._plans.values())


@pytest.mark.parametrize(("pattern", "lowered"), [
    (r"^\s*[A-Z]\w*(Error|Exception)\b:?", r"^\s*[a-z]\w*(error|exception)\b:?"),
    (r"\bI('ve| have)\S\W\D\B", r"\bi('ve| have)\S\W\D\B"),
    (r"^\s*(FAIL|FAILED)\b", r"^\s*(fail|failed)\b"),
    (r"(错误|エラー)", r"(错误|エラー)"),
])
def test_lower_pattern_keeps_escapes(pattern: str, lowered: str) -> None:
    assert lower_pattern(pattern) == lowered


def test_literal_gate_finds_exactly_the_literals_that_occur() -> None:
    literals = ["rror", "error", "syntaxerror", "fail", "failed", "ab", "bc", "abc", "失败", "失败了"]
    gate = LiteralGate(literals)
    for text in ["", "syntaxerror: failed", "abc", "xbcx", "上次失败了", "rror", "nothing"]:
        assert gate.find(text) == {lit for lit in literals if lit in text}, text


@pytest.mark.parametrize("texts", [
    [],
    ["syntaxerror: failed"],
    ["", "syntaxerror: failed", "abc", "xbcx", "上次失败了", "rror", "nothing", ""],
    ["ab", "c", "a", "bc"],  # a literal split across two texts is in neither
    ["nothing", "at all"],
    ["abc", "abc", "abc"],
    ["x" * 600 + "syntaxerror", "abc", "上次" * 300 + "失败了", "fail"],  # long texts are scanned alone
])
def test_literal_gate_finds_the_same_in_a_batch(texts: list[str]) -> None:
    literals = ["rror", "error", "syntaxerror", "fail", "failed", "ab", "bc", "abc", "失败", "失败了"]
    gate = LiteralGate(literals)
    assert gate.find_many(texts) == [gate.find(text) for text in texts]


# --- what the engine reads from a pattern: the regex subset parser ---------------------------------------
# Expected values are those re's private parser gave before issue 13 replaced it (checked on every pattern of
# rules-v2.yaml and on random patterns of the subset at the time); they follow the shape re gives a pattern.

@pytest.mark.parametrize(("pattern", "literals"), [
    (r"tests? passed", [" passed"]),  # the longest run of literal characters
    (r"(tests pass|tests passed)", ["tests pass"]),  # alternatives lose their shared leading characters
    (r"all (tests|checks) (pass|passed)", ["checks", "tests"]),  # the longest shortest string wins
    (r"ab(?:cd)ef", ["abcdef"]),  # a non-capturing group is part of its sequence
    (r"(?:abc|abd)x", ["ab"]),
    (r"(a|b)cd", ["cd"]),  # one-character alternatives are a class, not a literal
    (r"x(ab)?", ["x"]),  # an optional group needs nothing
    (r"(?:foo)+bar", ["foo"]),  # a repeat of at least one needs its item; first of equals wins
    (r"(foo)*", None),
    (r"[.]com", [".com"]),  # a one-character class is that character
    (r"[^a]bc", ["bc"]),
    (r"\bdone\b", ["done"]),
    (r"(Error|Exception):", ["rror", "xception"]),  # lower-cased; the shared "E" is matched before the alternation
    (r"已(完成|写入)", ["写入", "完成"]),
    (r"(?<![/\d.])\b\d+ (records?|rows?)\b", ["ecord", "ow"]),  # look-arounds need nothing
    (r"^=+ .*\b\d+ passed\b(?!.*\bfailed\b).*=+$", [" passed"]),
    (r"a{2}b", ["a"]),
    (r"x{", ["x{"]),  # a "{" that starts no {m,n} is a character
    (r"ab|cd|", None),  # an empty alternative needs nothing
    (r"\d+", None),
    (r"(?P<n>push(ed)?)", ["push"]),
    (r"colou?r", ["colo"]),
    (r"(a|bc)++d", ["d"]),  # a possessive repeat is not read
    (r"(ab|cd)(efg|hij)", ["efg", "hij"]),
    (r"\x41\u00e9", ["aé"]),
    (r"^\s*[✗✘×]", ["×", "✗", "✘"]),  # a class of caseless characters needs one of them
    (r"\d+\s*(条|个|行)", ["个", "条", "行"]),
    (r"[<≤]\s*\d", ["<", "≤"]),
    (r"[ab]\d", None),  # letters have a case: IGNORECASE matches others too
    (r"[^✗]", None),
    # outside the subset: no literal (the pattern always runs)
    (r"(a)\1", None),
    (r"(?i)done", None),
    (r"(?>done)", None),
    (r"(?#c)done", None),
    (r"\N{EM DASH}", None),
    (r"\0done", None),
])
def test_necessary_literals(pattern: str, literals: list[str] | None) -> None:
    found = necessary_literals(pattern)
    assert (sorted(found) if found is not None else None) == literals


@pytest.mark.parametrize(("pattern", "crosses"), [
    (r"\b(tests?|checks?) (now )?(pass|passed)\b", False),
    (r"^.{0,30}(错误|失败)", False),  # "." stops at a line break
    (r"(?!.*\bfailed\b)ok", False),
    (r"[^\n]+done", False),
    (r"\S+\w\d", False),
    (r"^\W*(done)\b\W*$", True),  # \W, \s and \D hold a line break
    (r"\s(FAIL|FAILED)\s*$", True),
    (r"^\s*Usage: .*\n?.*error", True),
    (r"[^a]b", True),
    (r"\d+/\d+\s*(项)", True),
    (r"a[\t-\r]b", True),  # a range around "\n"
    (r"(?<=\n)x", True),  # look-arounds count
    (r"(a)\1", True),  # outside the subset: unsure
])
def test_may_match_newline(pattern: str, crosses: bool) -> None:
    assert may_match_newline(pattern) is crosses


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?P<a>x)(?P=a)", r"(?(1)a|b)", r"(?>a)", r"(?i)a", r"(?i:a)", r"(?#c)",
                                     r"\N{EM DASH}", r"\0", r"\p", "a\\", r"(a", r"a)", r"*a", r"a**", r"[b-a]", r"[a"])
def test_patterns_outside_the_subset_are_refused(pattern: str) -> None:
    with pytest.raises(Unsupported):
        parse(pattern)


def _bundled_patterns() -> list[str]:
    patterns = default_config().patterns
    lists = [v for v in vars(patterns).values() if isinstance(v, PhraseMatcher)]
    lists += [m for _, claim, calls in patterns.action_claims for m in (claim, calls)]
    return list(dict.fromkeys(p for matcher in lists for p in matcher.patterns))


def test_every_bundled_pattern_is_inside_the_subset() -> None:
    # A pattern outside it would still be found (it always runs), only slower: keep the bundled config inside.
    patterns = _bundled_patterns()
    assert len(patterns) > 300
    for pattern in patterns:
        parse(pattern)


def _texts() -> list[str]:
    root = Path(__file__).resolve().parents[1]
    trajectories = load_trajectories([root / "tests/fixtures/rules_corpus", root / "tests/fixtures/rules_heldout",
                                      root / "examples/batch"])
    texts = {m.content for t in trajectories for m in t.messages if m.content}
    texts |= {m.receipt.content for t in trajectories for m in t.messages if m.receipt and m.receipt.content}
    return sorted(texts)


def test_the_facts_hold_on_every_match_in_the_fixtures() -> None:
    # Soundness, on real texts: every match of a bundled pattern contains one of its necessary literals (the
    # engine skips a pattern whose literals a text lacks), and a pattern said not to cross a line never matches
    # across one (the engine searches it only in the lines holding its literals).
    texts = _texts()
    assert len(texts) > 300
    matched = 0
    for pattern in _bundled_patterns():
        literals = necessary_literals(pattern)
        one_line = not may_match_newline(pattern)
        compiled = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
        for text in texts:
            for match in compiled.finditer(text):
                matched += 1
                found = match.group(0).lower()
                assert literals is None or any(literal in found for literal in literals), (pattern, found)
                assert not (one_line and "\n" in match.group(0)), (pattern, found)
    assert matched > 1000  # the texts exercise the patterns
