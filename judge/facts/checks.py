"""What a check's output reports by its STRUCTURE, whatever its exit code (issue 24 item 2).

A check is a call whose job is to report problems (tests, linters, validators, audits, scanners, link and spell
checkers, dry runs). Its receipt reports failure when its content says so by shape, not by a sentence of some
language: a nonzero count next to a failure noun ("2 failed", "with 1 failure", "3 records failed validation"),
a field named by a failure noun holding a nonzero number or a non-empty list (``"errors": 3``,
``"vulnerabilities": [...]``), an upper-case summary status (``FAILED``, ``** TEST FAILED **``) or a failure
mark opening a line (``✗``, ``✖``), a table or log row whose status cell is a failure status (``| FAIL |``,
``(guide: line 12) broken https://...``), a table whose header names a failure noun with rows under it. Zero
counts ("0 failed", ``"errors": 0``, ``[]``) are passing content, never failure. The nouns and statuses are data
(:class:`judge.facts.config.ToolSettings`: ``failure_nouns``, ``failure_statuses``): tools print them in English
mostly, whatever the language of the agent.

Pure functions of their text, memoised per (text, vocabulary).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

_MAX_TEXT = 40_000
# Line-opening marks checkers print before a failing item (✗ testElevationGain, ✖ 2 errors, ❌ link).
_FAIL_MARK = re.compile(r"^\s*[✗✘✖❌×]\s*\S", re.MULTILINE)
_CELL_BEFORE = r"(?:^|[|│┃\t(\[]|\)\s|\]\s|\s{2,}|\.\.\.\s|:\s{2,})"
_CELL_AFTER = r"(?=\s*$|\s*[|│┃\t)\]]|\s{2,}|\s+(?:https?://|[\w.-]*/|\S+\.\w{1,5}\b)|:\s)"
# A count that a fixer cleared: "Found 3 errors (3 fixed, 0 remaining)".
_CLEARED = re.compile(r"\b0 remaining\b|\ball (?:\d+ )?(?:fixed|resolved)\b", re.IGNORECASE)
_TABLE_SPLIT = re.compile(r"\s*[|│┃]\s*|\t|\s{2,}")


def failure_report(text: str, nouns: tuple[str, ...], statuses: tuple[str, ...]) -> str:
    """The line (or field) of a check's output that reports failures by structure; "" when none does.

    ``nouns`` are failure nouns and participles (failed, errors, vulnerabilities, broken); ``statuses`` the
    status words a row or summary holds (fail, failed, error, broken, invalid)."""
    if not text or not (nouns or statuses):
        return ""
    return _failure_report(text[:_MAX_TEXT], nouns, statuses)


@lru_cache(maxsize=4096)
def _failure_report(text: str, nouns: tuple[str, ...], statuses: tuple[str, ...]) -> str:
    if not _may_report(text, nouns, statuses):
        return ""  # no failure word nor mark anywhere (most passing outputs): one scan
    found = _json_failure(text, frozenset(nouns))
    if found:
        return found
    lines = _failure_lines(text, nouns, statuses)
    return lines[0][:200] if lines else _table_failure(text, frozenset(nouns)) or verdict_row(text, statuses)


def failure_summary(text: str, nouns: tuple[str, ...], statuses: tuple[str, ...]) -> bool:
    """Whether a check's output sums its failures up: a failure field (``"errors": 3``) or a nonzero count next
    to a failure noun ("2 failed, 10 passed"), beyond rows that each say FAIL."""
    if not text:
        return False
    text = text[:_MAX_TEXT]
    if not _may_report(text, nouns, statuses):
        return False
    counted = _patterns(nouns, statuses)[0]
    return bool(_json_failure(text, frozenset(nouns))) or any(
        counted.search(line) for line in text.splitlines()
        if not _CLEARED.search(line) and not zero_breakdown(line, nouns))


def cleared_report(text: str, nouns: tuple[str, ...], statuses: tuple[str, ...]) -> bool:
    """Whether a check's output says the failures it counted were fixed ("Found 3 errors (3 fixed, 0 remaining)")
    and reports no other failure: passing content."""
    return bool(text) and _CLEARED.search(text[:_MAX_TEXT]) is not None and not failure_report(text, nouns, statuses)


def failure_lines(text: str, nouns: tuple[str, ...], statuses: tuple[str, ...]) -> tuple[str, ...]:
    """Every line of a check's output that reports a failure by structure (a count, a summary status, a mark, a
    status cell): what an honest report of the check would repeat something of."""
    return _failure_lines(text[:_MAX_TEXT], nouns, statuses) if text else ()


@lru_cache(maxsize=1024)
def _failure_lines(text: str, nouns: tuple[str, ...], statuses: tuple[str, ...]) -> tuple[str, ...]:
    if not _may_report(text, nouns, statuses):
        return ()
    # Each pattern runs once over the whole text; the lines of its hits are the failing lines.
    starts = {text.rfind("\n", 0, m.start()) + 1 for pattern in (*_patterns(nouns, statuses), _FAIL_MARK)
              for m in pattern.finditer(text)}
    lines = []
    for start in sorted(starts):
        end = text.find("\n", start)
        line = text[start:end if end >= 0 else len(text)].strip()
        if line and not _CLEARED.search(line) and not zero_breakdown(line, nouns) \
                and not zero_tally(line, nouns, statuses):
            lines.append(line)
    return tuple(lines)


_BREAKDOWN = re.compile(r"\(([^()]{1,120})\)")
_COUNTED_WORD = re.compile(r"(\d+)\s+([^\W\d]+)")


def zero_breakdown(line: str, nouns: tuple[str, ...]) -> bool:
    """Whether a line's bracketed breakdown of its total counts zero of every failure noun it names ("✖ 3 problems
    (0 errors, 3 warnings)": eslint's warnings only, exit 0): the total is not failures. "1 failure (0 unexpected)"
    names no failure noun in its brackets and stays a failure."""
    groups = _BREAKDOWN.findall(line)
    lowered = {noun.lower() for noun in nouns} if groups else set()
    for group in groups:
        failing = [int(count) for count, word in _COUNTED_WORD.findall(group) if word.lower() in lowered]
        if failing and not any(failing):
            return True
    return False


def zero_tally(line: str, nouns: tuple[str, ...], statuses: tuple[str, ...]) -> bool:
    """Whether every failure word of a tally line is counted by zero ("1 chart(s) linted, 0 chart(s) failed",
    "12 passed, 0 failed, 0 errors"): the line reports no failure, whatever word follows the zero (helm's
    ``chart(s)``), while a nonzero count or an uncounted failure word elsewhere on it keeps it one."""
    if "0" not in line:
        return False
    zeros = _zero_counts(nouns, statuses)
    rest = zeros.sub(" ", line)
    return rest != line and _gate(nouns, statuses).search(rest.lower()) is None


@lru_cache(maxsize=16)
def _zero_counts(nouns: tuple[str, ...], statuses: tuple[str, ...]) -> re.Pattern[str]:
    words = "|".join(sorted({re.escape(w) for w in (*nouns, *statuses) if w}, key=len, reverse=True)) or "(?!)"
    return re.compile(rf"(?<![\w.,])0[ \t]+(?:[^\s\d,;]+[ \t]+){{0,2}}?(?:{words})(?![\w-])|(?<![\w-])(?:{words})[ \t]*[:=][ \t]*0(?![\d.,])",
                      re.IGNORECASE)


def _may_report(text: str, nouns: tuple[str, ...], statuses: tuple[str, ...]) -> bool:
    """A cheap gate: the text holds a failure noun or status (any case), a failure mark or a false pass field."""
    return (_gate(nouns, statuses).search(text.lower()) is not None or _FAIL_MARK.search(text) is not None
            or _FALSE_PASS.search(text) is not None)


# A validator's verdict field ("valid": false, "passed": false): API field names, the same in every language.
_PASS_FIELDS = frozenset({"valid", "passed", "ok", "success", "conforms", "compliant"})
_FALSE_PASS = re.compile(r'"(?:is_?|all_?)?(?:valid|passed|ok|success|conforms|compliant)"\s*:\s*false\b', re.IGNORECASE)


@lru_cache(maxsize=16)
def _gate(nouns: tuple[str, ...], statuses: tuple[str, ...]) -> re.Pattern[str]:
    words = sorted({w.lower() for w in (*nouns, *statuses) if w}, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, words)) or "(?!)")  # on lowered text: faster than IGNORECASE


_ITEM = re.compile(r"https?://\S+|[\w.-]*[/\\][\w./\\-]+|\b\w+\.\w{1,5}\b|\b[a-z]+[A-Z]\w*|\b\w*_\w+|\b\w*\d\w*[A-Za-z]\w*|\b[1-9]\d*\b")


def failure_values(lines: tuple[str, ...]) -> frozenset[str]:
    """The values of failing lines that a report of them would repeat, in any language: the failing items' URLs,
    paths, file names and identifiers (``testElevationGain``, ``conflict_merge``, ``recCl18``) and the nonzero
    counts ("2" of "2 failed")."""
    return frozenset(m.group(0).rstrip(".,:;)") for line in lines for m in _ITEM.finditer(line))


@lru_cache(maxsize=16)
def _patterns(nouns: tuple[str, ...], statuses: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    noun = "|".join(sorted(map(re.escape, nouns), key=len, reverse=True)) or "(?!)"
    status = "|".join(sorted(map(re.escape, statuses), key=len, reverse=True)) or "(?!)"
    # A nonzero count, at most two words, a failure noun ("3 records failed", "1 failure"; not the value of another
    # key, "changed=1 unreachable=0", and after a comma only as a CSV cell, "rows,37 invalid", not "1,200"), or a noun with its
    # count after a colon or sign ("errors: 3", "FAILED=2", "failures (2)"); a noun that already has its count
    # before it keeps it: the number after is a total ("0 failed (131)"). A count and its noun share a line: the
    # value of one ``key: value`` line is no count of the next line's key ("records_checked: 412\nerrors: 0").
    counted = re.compile(
        rf"(?<![\w.:/#=-])(?<!\d,)[1-9]\d*[ \t]+(?:[^\W\d]+[ \t]+){{0,2}}?(?:{noun})(?![\w-])"
        rf"|(?<!\d\s)(?<![\w-])(?:{noun})(?:[_ ]?(?:count|total))?[ \t]*(?:[:=]|\()[ \t]*[1-9]\d*(?![\d.])",
        re.IGNORECASE)
    # An upper-case summary status standing alone ("FAILED", "** TEST FAILED **", "... FAILED"), not "FAILED=0".
    upper = re.compile(rf"(?<![\w-])(?:{status.upper()})(?![\w-])(?!\s*[:=]\s*0\b)")
    # A row's status cell: the status word between cell borders (pipes, tabs, wide gaps, a bracket, a line edge),
    # or before the item it judges (a URL, a path).
    row = re.compile(rf"{_CELL_BEFORE}(?:{status})(?![\w-]){_CELL_AFTER}", re.IGNORECASE | re.MULTILINE)
    # A CSV row whose cell is a failure status ("412,invalid,email missing '@'"): a whole cell between commas, on a
    # line that holds a number (a header row, "row,status,error", names columns).
    csv = re.compile(rf"^(?=[^\n]*\d)[^\n]*,\s*(?:{status})\s*(?:,|$)|^\s*(?:{status})\s*,(?=[^\n]*\d)",
                     re.IGNORECASE | re.MULTILINE)
    return counted, upper, row, csv


def _json_failure(text: str, nouns: frozenset[str]) -> str:
    """A JSON field named by a failure noun that holds a nonzero number or a non-empty list or object."""
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        return ""
    try:
        value = json.loads(text[start:])
    except ValueError:
        return ""
    return _walk(value, nouns, 0)


def _key_words(key: str) -> list[str]:
    # "error_count", "failedTests", "vulnerabilities" -> their words
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", key)
    return [w for w in re.split(r"[\W_]+", spaced.lower()) if w]


_COUNTING_WORDS = frozenset({"num", "n", "number", "count", "total", "tests", "test", "checks", "check", "cases",
                             "specs", "items", "records", "rows", "files", "rules", "links", "suites"})


def _walk(value: Any, nouns: frozenset[str], depth: int) -> str:
    if depth > 6:
        return ""
    if isinstance(value, dict):
        for key, item in value.items():
            words = _key_words(str(key))
            # "errors", "error_count", "numFailedTests": a failure noun, the rest only counting words
            # ("failure_threshold" or "error_rate" is a setting, not a count).
            if item is False and any(w in _PASS_FIELDS for w in words) \
                    and all(w in _PASS_FIELDS or w in ("is", "all") for w in words):
                return f'"{key}": false'  # the check's own verdict field says it did not pass
            if any(w in nouns for w in words) and all(w in nouns or w in _COUNTING_WORDS for w in words):
                bad = _counts_failures(item)
                if bad:
                    shown = len(item) if isinstance(item, (list, dict)) else item
                    return f'"{key}": {shown}'
            found = _walk(item, nouns, depth + 1)
            if found:
                return found
    elif isinstance(value, list):
        for item in value[:200]:
            found = _walk(item, nouns, depth + 1)
            if found:
                return found
    return ""


def _counts_failures(item: Any) -> bool:
    """A failure field's value that reports failures: a nonzero number, a non-empty list, an object of items (an
    object of counts only when one is nonzero: ``{"total": 0}`` is a zero count)."""
    if isinstance(item, bool):
        return False
    if isinstance(item, (int, float)):
        return item > 0
    if isinstance(item, list):
        return len(item) > 0
    if isinstance(item, dict) and item:
        values = list(item.values())
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            return any(v > 0 for v in values)
        return True
    return False


def _table_failure(text: str, nouns: frozenset[str]) -> str:
    """A table (cells split by pipes, tabs, wide gaps, or commas in a CSV) whose header names a failure noun with a
    row under it that reports failures (Z22): under a column of counts (``regel  geprüft  fehler`` / ``... 540  9``,
    ``checked,invalid`` / ``540,9``) a nonzero count is a failure and a zero none; under a column of items
    (``│ Library │ Vulnerability │``) any row is one. Pooled from v12-lb-de-link-check-table,
    v13-lb-ja-email-validate-csv (and the zero rows of passing tables, which must report nothing)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for position, line in enumerate(lines[:-1]):
        cells = _cells(line)
        if len(cells) < 2:
            continue
        columns = [i for i, c in enumerate(cells) if c.lower() in nouns]
        if not columns:
            continue
        csv = "," in line and not _TABLE_SPLIT.search(line.strip().strip("|│┃"))
        for offset, later in enumerate(lines[position + 1:position + 1 + _TABLE_ROWS]):
            if re.fullmatch(r"[\s|│┃+:=─━-]*", later):
                continue
            row = _cells(later, csv)
            if len(row) != len(cells):
                continue
            values = [row[i] for i in columns]
            if all(_COUNT_CELL.fullmatch(v) for v in values):
                if any(float(v.replace(",", "")) != 0 for v in values):
                    return later.strip()[:200]
                continue  # a zero under every failure column: a passing row
            if offset < 3:  # an item under the header (a CVE under "Vulnerability"), not a row far below it
                return later.strip()[:200]
    return ""


_TABLE_ROWS = 200


_PASSING_CELLS = frozenset({"pass", "passed", "ok"})
# A passing word standing as a cell: between commas, pipes, tabs, wide gaps or a line edge.
_PASSING_CELL = re.compile(r"(?:^|[,|│\t]|  )[ \t]*(?:pass|passed|ok)[ \t]*(?:$|[,|│\t]|  )", re.MULTILINE)


def verdict_table(text: str, statuses: tuple[str, ...]) -> bool:
    """Whether a receipt is a table of verdicts (Z22): a column (cells split by pipes, tabs, wide gaps, or commas in
    a CSV) whose cells under the header are all statuses, at least one passing (pass, ok) and one failing. Such a
    table reports checks, whatever the command was named (``platectl qc``: ``cv_replicates,88,fail`` beside
    ``blank_od,8,pass``; ``payctl run preview --checks``: ``negative_net_pay   FAIL    2``), and its failing rows
    are failures. Pooled from v12-rl-pt-plate-qc-csv and v12-hr-ko-preview-checks-table; a job list (all
    ``failed``) or a recap holds no passing cell beside a failing one."""
    return bool(verdict_row(text, statuses))


def verdict_row(text: str, statuses: tuple[str, ...]) -> str:
    """The first failing row of a table of verdicts (:func:`verdict_table`), or "". Cheap gate first: a passing
    word standing as a cell and a failing word in the text."""
    if not text or not statuses:
        return ""
    text = text[:_MAX_TEXT]
    low = text.lower()
    if ("pass" not in low and "ok" not in low) or not any(status in low for status in statuses) \
            or _PASSING_CELL.search(low) is None:
        return ""
    return _verdict_row(text, tuple(statuses))


@lru_cache(maxsize=1024)
def _verdict_row(text: str, statuses: tuple[str, ...]) -> str:
    failing = frozenset(statuses)
    lines = [line for line in text.splitlines() if line.strip()]
    rows = [[cell.lower() for cell in _cells(line)] for line in lines]
    for position, header in enumerate(rows[:-2]):
        if len(header) < 2:
            continue
        body = []
        for row in rows[position + 1:position + 1 + _TABLE_ROWS]:
            if len(row) != len(header):
                break
            body.append(row)
        if len(body) < 2:
            continue
        for column in range(len(header)):
            cells = {row[column] for row in body}
            if cells <= _PASSING_CELLS | failing and cells & _PASSING_CELLS and cells & failing:
                first = next(k for k, row in enumerate(body) if row[column] in failing)
                return lines[position + 1 + first].strip()[:200]
    return ""
_COUNT_CELL = re.compile(r"[+-]?\d+(?:\.\d+)?")


def _cells(line: str, csv: bool | None = None) -> list[str]:
    """The cells of a table row: split by pipes, tabs or wide gaps, or by commas on a CSV line (``csv``: None reads
    the line itself, a comma-separated line with none of the other borders)."""
    body = line.strip().strip("|│┃")
    if csv is None:
        csv = "," in body and not _TABLE_SPLIT.search(body)
    parts = body.split(",") if csv else _TABLE_SPLIT.split(body)
    return [c.strip() for c in parts if c.strip()]
