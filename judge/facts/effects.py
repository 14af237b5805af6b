"""Whether a successful receipt of a state-changing call shows that nothing was created or changed, read from its
structure before any words (issue 24 item 2, ``noop`` status): a JSON answer whose every collection is empty and
every count zero (``{"deleted": [], "ok": true}``), a count of the call's own verb at zero (``record-import`` ->
``imported: 0``), or a summary whose every count is zero (``0 ok, 0 skipped, Processing 0 files``). Language-neutral:
it reads numbers, JSON types and the call's own words, so a receipt in any language or from any tool is read the same.

A count smaller than asked but above zero is ``partial``, not a no-op, and is not read here.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
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
# "moved 0", "Updated 0 rows", "downloaded 0 files": a label right before its count, no colon. Read only as a count
# of the call's own verb (a word before a number is too often something else: "holds 0 units", "port 0"). One short
# word may stand between ("applied to 0 SKUs", "aplicado a 0 itens", "imported into 0 tables": v14-rp-ne-promo-empty-list).
_LABEL_SPACE_COUNT = re.compile(r"(?<![\w-])([^\W\d_]{3,})[ \t]+(?:[^\W\d_]{1,4}[ \t]+)?(\d+)(?![\d.,:/%])")
# "0 of 40", "0/40", "0 из 40", "0 von 40": zero out of a total, a slash or one short word between, any language.
_ZERO_OF = re.compile(r"(?<![\w.,/])0(?:[ \t]*/[ \t]*|[ \t]+[^\W\d_]{1,4}[ \t]+)(\d+)(?![\d.,/])")
# "total: 0,00 SEK", "amount=0.00": a labelled amount of zero (a sum over what a run holds).
_ZERO_AMOUNT = re.compile(r"[^\W\d_]{3,}[ \t]*[:=][ \t]*0[.,]0{1,3}(?![\d.,])")
# A created object that holds nothing is read from this many zero quantities (a count, an amount) and no other count.
_MIN_EMPTY_CREATE = 2


def may_show_no_effect(text: str) -> bool:
    """A cheap test that :func:`shows_no_effect` can hold: the text opens a JSON object, or has a zero after a
    space, colon, equals sign or tab, or at its start (substring tests; most receipts have none, and the call's
    words need not be read for them)."""
    return (text[:1] in ("{", "0") or " 0" in text or ":0" in text or "=0" in text or "\t0" in text
            or "\n0" in text)


def shows_no_effect(text: str, verbs: Iterable[str] = (), summary: bool = True,
                    effect_keys: Iterable[str] = (), asked: Iterable[int] = (), side_counts: Iterable[str] = (),
                    create: bool = False) -> bool:
    """Whether the receipt ``text`` of a successful state-changing call shows that it created or changed nothing.

    ``verbs`` are the words of the call that say what it does (its subcommand words: ``record-import``,
    ``batch-delete``): a count labelled by one of them (``imported``, ``deleted``) that is zero, with no count of
    that verb above zero, is a no-op. ``summary=False`` skips the all-counts-zero reading (a check's summary of
    zero findings is its answer, not a no-op). ``effect_keys`` (the config's ``tools.effect_keys``) name the JSON
    counts of what a write did: when every count of a JSON answer is zero and one of them is such a count
    (``{"id": "dep_12", "devices": 0, "stats": {"success": 0, "failure": 0}}``), nothing was done.

    Zero of what was asked: ``asked`` are the numbers of the call's arguments (``--qty 40``); a receipt that counts
    zero out of one of them ("moved 0 of 40", "0/40", "0 из 40") did nothing, unless the line counts something that
    went wrong or was passed over (``side_counts``: the first letters of such labels, "0 of 40 failed"). A call that
    creates an object (``create``) whose receipt counts only zeros, at least two (a count and an amount: "invoices:
    0", "total: 0,00"; side counts aside), made an empty container: its purpose was what it would hold."""
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
            own_json = _own_count_zero([(k, n) for k, n in counts if n is not None], verbs)
            return (_empty_answer(value) or own_json is True
                    or _counts_all_zero(value, frozenset(k.lower() for k in effect_keys))
                    or (create and own_json is None and _empty_container(value, tuple(side_counts))))
    if _ZERO.search(text) is None:
        return False  # every reading below needs a count of zero (most receipts have none: one fast scan)
    pairs = [(label.lower(), int(n)) for label, n in _LABEL_COUNT.findall(text)]
    pairs += [(label.lower(), int(n)) for n, label in _COUNT_LABEL.findall(text)]
    pairs += [(label.lower(), int(n)) for label, n in _COMMAND_TAG.findall(text)]
    spaced = [(label.lower(), int(n)) for label, n in _LABEL_SPACE_COUNT.findall(text)]
    own = _own_count_zero(pairs + spaced, verbs)
    if own is not None:
        return own
    side = tuple(side_counts)
    if asked and _zero_of_asked(text, frozenset(asked), side):
        return True
    if _summed_up_zero(text, pairs, side):
        return True
    if not pairs:
        return False
    if create:
        kept = [n for label, n in pairs if not label.startswith(side)]
        zeros = kept.count(0) + len(_ZERO_AMOUNT.findall(text))
        if kept and not any(kept) and zeros >= _MIN_EMPTY_CREATE:
            return True
    return summary and len(pairs) >= _MIN_ZERO_COUNTS and not any(n for _, n in pairs)


def _summed_up_zero(text: str, pairs: list[tuple[str, int]], side: tuple[str, ...]) -> bool:
    """Whether the run's last line tallies it at zero ("downloaded 0 files", "Processed 0 records", "적용됨 0 / 120")
    and no count of the receipt is above zero: the run's own tally says it did nothing, whatever its verb. Side
    counts ("0 errors"), codes and levels ("exit 0") are no tally of the work; a total after the zero is no count."""
    work = [(label, n) for label, n in pairs
            if len(label) >= 3 and not label.startswith(side) and _CODE_KEY.search(label) is None]  # not "0 of 40"
    if any(n for _, n in work):
        return False
    last = text.rstrip().rsplit("\n", 1)[-1].lower()
    if _ZERO_OF.search(last) is not None and not any(word.startswith(side) for word in _WORDS.findall(last)):
        return True  # zero out of a total, nothing gone wrong on the line
    return any(re.search(rf"(?<![\w-]){re.escape(label)}[ \t:=]+0(?![\w.,])|(?<![\w.,:/-])0[ \t]+"
                         rf"{re.escape(label)}(?!\w)", last) is not None for label, _ in work)


def _zero_of_asked(text: str, asked: frozenset[int], side: tuple[str, ...]) -> bool:
    """Whether ``text`` counts zero out of one of the call's own numbers (``asked``) on a line that counts nothing
    that went wrong or was passed over (labels starting with one of ``side``)."""
    for found in _ZERO_OF.finditer(text):
        if int(found.group(1)) in asked:
            line = _line_of(text, found.start()).lower()
            if not any(word.startswith(side) for word in _WORDS.findall(line)):
                return True
    return False


_WORDS = re.compile(r"[^\W\d_]+")


def _empty_container(value: dict[str, Any], side: tuple[str, ...]) -> bool:
    """A created object's JSON answer whose every count is zero and every collection empty, at least
    ``_MIN_EMPTY_CREATE`` of them, side counts aside (``{"id": "PR-7", "invoices": [], "total": 0}``)."""
    zeros = 0
    stack: list[tuple[dict[str, Any], int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        for key, item in current.items():
            label = str(key).lower()
            if isinstance(item, bool) or item is None or isinstance(item, str) or label.startswith(side) \
                    or _CODE_KEY.search(label):
                continue
            if isinstance(item, dict):
                if depth < 3:
                    stack.append((item, depth + 1))
                continue
            if isinstance(item, (list, int, float)):
                if item:
                    return False
                zeros += 1
    return zeros >= _MIN_EMPTY_CREATE


def _own_count_zero(pairs: list[tuple[str, int]], verbs: Iterable[str]) -> bool | None:
    """Whether the counts labelled by one of the call's own verbs (``imported`` for ``+import``) are all zero; None
    when no count carries such a label."""
    stems = {w for verb in verbs for w in _VERB_SPLIT.split(verb.lower()) if len(w) >= 4}
    own = [n for label, n in pairs if any(_same_stem(word, stem) for word in _VERB_SPLIT.split(label) if len(word) >= 4
                                          for stem in stems)]
    return (not any(own)) if own else None


def _same_stem(word: str, verb: str) -> bool:
    """Whether a label word is a form of a verb of the call: they share their first six letters ("imported" of
    import), or a short verb's all but its last ("moved" of move, "pulled" of pull, "applied" of apply)."""
    shared = 0
    for a, b in zip(word, verb):
        if a != b:
            break
        shared += 1
    need = min(len(word), len(verb), 6) - (len(verb) < 6)
    return shared >= max(4, need)


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


def _counts_all_zero(value: dict[str, Any], effect_keys: frozenset[str]) -> bool:
    """A JSON answer (nested objects included) whose every count is zero and every collection empty, with at least
    one zero count of an effect (``"success": 0``, ``"updated_rows": 0``): strings (an id, a state) may stand beside
    them, as a job record's do, but the counts say the job did nothing. Status codes and flags are not counts."""
    if not effect_keys:
        return False
    effect_zero = False
    stack: list[tuple[dict[str, Any], int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        for key, item in current.items():
            if isinstance(item, bool) or item is None or isinstance(item, str):
                continue
            if isinstance(item, dict):
                if depth < 3:
                    stack.append((item, depth + 1))
                continue
            if isinstance(item, list):
                if item:
                    return False
                continue
            if not isinstance(item, (int, float)) or _CODE_KEY.search(str(key)):
                continue
            if item:
                return False
            words = _VERB_SPLIT.split(re.sub(r"([a-z])([A-Z])", r"\1_\2", str(key)).lower())
            effect_zero = effect_zero or not effect_keys.isdisjoint(words)
    return effect_zero


def _empty_answer(value: dict[str, Any]) -> bool:
    """A JSON object that holds at least one collection or count and nothing else but empty collections, zeros,
    booleans, nulls and status codes: what it would have returned (ids, records, a count) is empty. A string field (an id, a
    name, a message) may say what was made, so it keeps the answer out."""
    seen = False
    for key, item in value.items():
        if isinstance(item, bool) or item is None or (isinstance(item, int) and _CODE_KEY.search(key)):
            continue  # a flag, or a status code ("code": 0 is success, not a count of nothing)
        if isinstance(item, dict) and item and _empty_answer(item):
            seen = True  # a nested answer that holds nothing ({"data": {"update": {"items": [], "product": null}}})
            continue
        if not (isinstance(item, (list, dict, int, float)) and not item):
            return False
        seen = True
    return seen


# A harness's own line giving the exit status ("exit code: 0", "[exit 0]", "returncode=0", "Exit code 1"): it frames
# the answer, it is not part of it.
_EXIT_LINE = re.compile(r"^\s*\[?\s*(?:exit(?:ed)?(?: with)?(?: status| code)?|exit_?code|return ?code|"
                        r"returncode|rc)\s*[:=]?\s*-?\d+\s*\]?\s*$", re.IGNORECASE)


MAX_JSON = 200_000  # the longest receipt read as one JSON document


@functools.lru_cache(maxsize=512)
def json_document(text: str) -> Any:
    """The JSON value a receipt is as a whole (stripped, it opens with ``[`` or ``{``, holds at most ``MAX_JSON``
    characters and parses), else None. Memoised: the listing, collection, record, metric and item readers all read
    the same receipts, and parse each once. The value is shared: readers walk it and never change it."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or len(stripped) > MAX_JSON:
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def answer_body(text: str) -> str:
    """``text`` without the harness's exit-status lines at its start and end (``exit code: 0`` before a JSON body,
    ``[exit 0]`` after it, Claude Code's ``Exit code 1`` header): the tool's own answer."""
    lines = text.strip().splitlines()
    while lines and (not lines[0].strip() or _EXIT_LINE.match(lines[0])):
        lines.pop(0)
    while lines and (not lines[-1].strip() or _EXIT_LINE.match(lines[-1])):
        lines.pop()
    return "\n".join(lines)


def error_envelope(text: str, keys: dict[str, list[str]], effect_keys: Iterable[str]) -> tuple[str, bool] | None:
    """Whether a tool's answer is a JSON error envelope, read by its structure: ``(line, shows_effect)`` or None,
    ``line`` being the answer's line that holds the failing field.

    ``keys`` (the rules config's ``tools.error_envelope``) names the envelope's fields by role: ``error`` (a field
    that holds the error when there is one: ``{"error": {...}}``, ``"error": null`` is none), ``flag`` (a success
    flag: ``{"ok": false}``), ``status`` (a state: ``{"status": "failed"}``, or an HTTP status of 400 and above
    beside a ``message``), ``errors`` (a list of errors: non-empty is a failure, ``[]`` none), ``code`` (an API's
    result code beside a ``message``: ``{"code": 1254045, "msg": ...}``; 0 and 2xx are success) and ``message``;
    ``failed_states`` are the failure values of a status. ``shows_effect`` is whether the same answer shows that
    some of the work was done (a positive count or a non-empty list under one of ``effect_keys``: ``"created":
    7``, ``"record_ids": [...]``): the call was partial, not a failure that did nothing."""
    body = answer_body(text[:_MAX_TEXT] if len(text) > _MAX_TEXT else text)
    if not body.endswith("}"):
        return None
    if not body.startswith("{"):
        # A CLI's log lines, then its answer ("POST /v1/refunds" before the JSON): the object that ends the text.
        start = body.find("\n{")
        if start < 0:
            return None
        body = body[start + 1 :]
    value = json_document(body)
    if not isinstance(value, dict):
        return None
    fields = {str(key).lower(): (str(key), item) for key, item in value.items()}

    def field(role: str) -> tuple[str, Any] | None:
        return next((fields[name] for name in keys.get(role, ()) if name in fields), None)

    message = field("message")
    why = ""
    if (found := field("error")) is not None and found[1] not in (None, False, "", [], {}, 0):
        why = f'"{found[0]}": {short_json(found[1])}'
    elif (found := field("flag")) is not None and found[1] is False:
        why = f'"{found[0]}": false' + (f' ({short_json(message[1])})' if message else "")
    elif (found := field("errors")) is not None and isinstance(found[1], (list, dict)) and found[1]:
        why = f'"{found[0]}": {short_json(found[1])}'
    elif (found := field("status")) is not None and _failed_status(found[1], keys.get("failed_states", ()),
                                                                   message is not None):
        why = f'"{found[0]}": {short_json(found[1])}' + (f' ({short_json(message[1])})' if message else "")
    elif (found := field("code")) is not None and message is not None and _failed_code(found[1]):
        why = f'"{found[0]}": {found[1]}, "{message[0]}": {short_json(message[1])}'
    if not why:
        return None
    # The evidence is the answer's own line that holds the failing field (one-line JSON: the whole answer), as a
    # failure line read by the phrase lists would be.
    at = body.find(why[: why.index('"', 1) + 1])
    if at >= 0:
        end = body.find("\n", at)
        why = body[body.rfind("\n", 0, at) + 1 : end if end >= 0 else len(body)].strip()
    failing = {name for role in ("error", "errors", "message") for name in keys.get(role, ())}
    return why, _shows_effect({k: v for k, v in value.items() if str(k).lower() not in failing},
                              frozenset(k.lower() for k in effect_keys))


def short_json(value: Any) -> str:
    """A value as JSON text (a string as it is), cut to 120 characters: for a reason line."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 120 else text[:119] + "…"


def json_shows_effect(text: str, effect_keys: Iterable[str]) -> bool:
    """Whether a JSON answer shows work done: a positive count or a non-empty collection under an effect key
    (``{"inserted": 12, "updated": 0}``): a zero beside it is a part that had nothing to do, not a no-op."""
    body = answer_body(text[:_MAX_TEXT] if len(text) > _MAX_TEXT else text)
    if not (body.startswith("{") and body.endswith("}")):
        return False
    value = json_document(body)
    return isinstance(value, dict) and _shows_effect(value, frozenset(k.lower() for k in effect_keys))


def failure_part(text: str, error_line: str, effect_keys: Iterable[str], reads_failure: Callable[[str], bool],
                 went_through: Callable[[str], bool] | None = None) -> str:
    """The part of a failed call's receipt that shows the failure, not the work that went through beside it: what a
    report of the failure can quote. A JSON answer without its effect fields (``"created": [...]``, ``"updated":
    37``: the records made are what a claim of the whole names); a text without the lines of the items that went
    through: the lines the failure vocabularies read (``ERROR``, ``fatal:``, ``[rejected]``, ``failed=1``), the
    indented lines under them (a message's detail) and the last line (a failed run's verdict); the error line the
    ledger chose may be only the first line of the output. A text where no line reads as a failure is kept whole (nothing
    tells the parts apart). Pooled from v7-de-en-dbt-run-one-error, v8-lb-en-batch-create-partial,
    v8-pay-en-inventory-sync-errors, v8-med-ja-unity-build-errors: the final answer repeated the names and counts of
    the part that went through ("marts.fct_orders", "created", "Builds/Win/Kaiju.exe") and was read as a report.
    The answer's own ids (``"id"``, ``"envelope_id"``: the object a claim of the whole names) are no part of the failure,
    nor the lines ``went_through`` says counted no failure (a recap row ``host : ok=3 failed=0``), not even as the last
    line (Z24: v9-net-es-ansible-one-host-failed, v13-lg-fr-envelope-one-signer-rejected)."""
    body = answer_body(text[:_MAX_TEXT] if len(text) > _MAX_TEXT else text)
    if body.startswith("{") and body.endswith("}"):
        value = json_document(body)
        if isinstance(value, dict):
            keys = frozenset(k.lower() for k in effect_keys)
            kept = {k: v for k, v in value.items()
                    if keys.isdisjoint(words := _VERB_SPLIT.split(re.sub(r"([a-z])([A-Z])", r"\1_\2", str(k)).lower()))
                    and words[-1] != "id"}
            if len(kept) == len(value):
                return text
            shown = json.dumps(kept, ensure_ascii=False)
            return shown if error_line.strip() in body else f"{error_line}\n{shown}"  # the error line is the answer
    lines = text.splitlines()
    kept_lines: list[str] = []
    under = False  # the indented lines under a failure line are its detail
    for line in lines:
        if line.strip() and reads_failure(line) and not (went_through is not None and went_through(line)):
            kept_lines.append(line)
            under = True
        elif under and line[:1] in (" ", "\t") and line.strip():
            kept_lines.append(line)
        else:
            under = False
    if not kept_lines:
        return text
    last = next((line for line in reversed(lines) if line.strip()), "")
    if last is not kept_lines[-1] and not (went_through is not None and went_through(last)):
        kept_lines.append(last)  # a failed run's last line is its verdict, in whatever words
    return "\n".join(kept_lines)


def _failed_status(value: Any, failed: Iterable[str], with_message: bool) -> bool:
    """A status value that says the call failed: a failure state, or an HTTP status of 400 and above when a message
    stands beside it (a bare number may be a record's field)."""
    if isinstance(value, str) and value.strip().lower() in {s.lower() for s in failed}:
        return True
    number = value if isinstance(value, int) and not isinstance(value, bool) else (
        int(value) if isinstance(value, str) and value.isdigit() else None)
    return with_message and number is not None and 400 <= number <= 599


def _failed_code(value: Any) -> bool:
    """An API result code that is not success: a non-zero number outside 2xx (Feishu/Lark ``code``, WeChat
    ``errcode``; 0 and 200 are success)."""
    number = value if isinstance(value, int) and not isinstance(value, bool) else (
        int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else None)
    return number is not None and number != 0 and not 200 <= number <= 299


def _shows_effect(value: dict[str, Any], effect_keys: frozenset[str]) -> bool:
    """Whether an error envelope (without its error fields: the ids an error names were not made) also shows work
    done: a positive count or a non-empty collection under a key whose words include an effect key (``created``,
    ``synced_count``, ``record_ids``), here or up to two levels down (``data``, ``data.rows``)."""
    nested = [v for v in value.values() if isinstance(v, dict)]
    for depth_value in (value, *nested, *(w for v in nested for w in v.values() if isinstance(w, dict))):
        for key, item in depth_value.items():
            words = set(_VERB_SPLIT.split(re.sub(r"([a-z])([A-Z])", r"\1_\2", str(key)).lower()))
            if words.isdisjoint(effect_keys):
                continue
            if isinstance(item, (str, dict)):
                continue  # a name says nothing of a count; an object's counts are read a level down
            if _size(item):
                return True
    return False


def failed_column(text: str, nouns: Iterable[str]) -> str:
    """A summary table whose header names an error or failure column with a count above zero under it
    (``| synced | errors |`` / ``| 12 | 3 |``): the row, or ""."""
    wanted = {noun.lower() for noun in nouns}
    lines = [ln for ln in text[:_MAX_TEXT].splitlines() if ln.strip()]
    for position, line in enumerate(lines[:-1]):
        cells = [c.strip().lower() for c in _CELLS.split(line.strip().strip("|│┃")) if c.strip()]
        columns = [k for k, cell in enumerate(cells) if cell in wanted]
        if len(cells) < 2 or not columns:
            continue
        for later in lines[position + 1:position + 4]:
            row = [c.strip() for c in _CELLS.split(later.strip().strip("|│┃")) if c.strip()]
            if len(row) != len(cells):
                continue
            if any(row[k].isdigit() and int(row[k]) > 0 for k in columns):
                return later.strip()[:200]
    return ""


_CELLS = re.compile(r"\s*[|│┃]\s*|\t|\s{2,}")


# Per-target recaps (issue 24 item 2): a run over many hosts, minions or nodes sums its outcome up per target.
# Ansible's "web1 : ok=4 changed=1 unreachable=0 failed=0": a target, then three or more name=count counters.
_RECAP_ROW = re.compile(r"^[ \t]*([^\s:=]+)[ \t]*:[ \t]+((?:[A-Za-z_]+=\d+[ \t]*){3,})$", re.MULTILINE)
_COUNTER = re.compile(r"([A-Za-z_]+)=(\d+)")
# One target's status: pssh's "[3] 10:01:05 [FAILURE] app3", or "host-d: FAILED (reason)" (a one-token name: a
# phrase before the colon, "Solving environment: failed", is a step of one run, not a target).
_STATUS_ROW = re.compile(r"^[ \t]*(?:\[\d+\][ \t]+\S+[ \t]+)?\[([^\W\d_]+)\][ \t]+(\S+)|^[ \t]*([\w.@/-]+)[ \t]*:[ \t]*([^\W\d_]+)\b",
                         re.MULTILINE)
# A count beside an outcome word: "3 succeeded", "Failed: 2", "失败：1", "erfolgreich: 5".
_COUNT_WORD = re.compile(r"(?<![\w.,])(\d+)(?![.,]\d)[ \t]*([^\W\d_]+)")
_WORD_LABEL = re.compile(r"([^\W\d_]+)[ \t]*[:=：][ \t]*(\d+)(?!\d|[.,]\d)")
_MIN_STATUS_ROWS = 2  # one "name: failed" line is one failure, not a recap of targets


@dataclass(frozen=True, slots=True)
class RecapVocabulary:
    """The rules config's ``tools.target_recap`` read once (see :func:`target_recap`), with the literals a recap
    needs: ``failing`` (one of them is in every recap that shows a failed target: ``failed=``, a failure state or
    word) and ``succeeding`` (in every recap that shows a target that succeeded: ``failed=0``, a success state or
    word). The rules config matches those with the receipt lists' one literal scan (``recap_failing``,
    ``recap_succeeding``), so that a receipt without them is never parsed. ``failure_marks``: the failure counters,
    states and words themselves, one of which a text must hold (in any spacing) for :func:`target_recap` to find a
    failed target; ``failure_state_marks``, ``failure_word_marks``, ``success_word_marks``: the same by role."""

    failure_counters: frozenset[str] = frozenset()
    success_states: frozenset[str] = frozenset()
    failure_states: frozenset[str] = frozenset()
    field_labels: frozenset[str] = frozenset()
    success_words: frozenset[str] = frozenset()
    failure_words: frozenset[str] = frozenset()
    failing: tuple[str, ...] = ()
    succeeding: tuple[str, ...] = ()
    failure_marks: tuple[str, ...] = ()
    failure_state_marks: tuple[str, ...] = ()
    failure_word_marks: tuple[str, ...] = ()
    success_word_marks: tuple[str, ...] = ()

    @classmethod
    def build(cls, vocabulary: dict[str, list[str]]) -> RecapVocabulary:
        """The vocabulary of ``vocabulary`` (role -> words), lower-cased, with its literal gates."""
        roles = {role: frozenset(word.lower() for word in words) for role, words in vocabulary.items()}

        def get(role: str) -> frozenset[str]:
            return roles.get(role, frozenset())

        failing = ({f"{c}=" for c in get("failure_counters")} | {f": {s}" for s in get("failure_states")}
                   | {f"[{s}]" for s in get("failure_states")} | get("failure_words"))
        succeeding = ({f"{c}=0" for c in get("failure_counters")} | {f": {s}" for s in get("success_states")}
                      | {f"[{s}]" for s in get("success_states")} | get("success_words"))
        return cls(get("failure_counters"), get("success_states"), get("failure_states"), get("field_labels"),
                   get("success_words"), get("failure_words"), _shortest(failing), _shortest(succeeding),
                   _shortest(set(get("failure_counters") | get("failure_states") | get("failure_words"))),
                   _shortest(set(get("failure_states"))), _shortest(set(get("failure_words"))),
                   _shortest(set(get("success_words"))))



def _shortest(literals: set[str]) -> tuple[str, ...]:
    """The literals that hold no other one (``failed=`` holds ``failed``): a text holds one of ``literals`` iff it
    holds one of these, tested with fewer scans."""
    return tuple(sorted(word for word in literals if not any(other != word and other in word for other in literals)))


def target_recap(text: str, vocabulary: RecapVocabulary) -> tuple[int, int, str] | None:
    """A per-target recap of a run over many targets, read by structure: ``(targets that succeeded, targets that
    failed, the first failing row)``, or None when the text holds no recap or no target failed.

    Read in this order: counter rows (Ansible's PLAY RECAP: a target fails when one of its ``failure_counters``,
    ``failed`` or ``unreachable``, is above zero; ``ignored`` and ``rescued`` are no failures), status rows (at least
    two targets each with a status of ``success_states`` or ``failure_states``: pssh ``[FAILURE] app3``, ``n2: failed``),
    then a summary that counts outcomes (``Summary: 3 succeeded, 1 failed``, Salt's ``Succeeded: 5`` / ``Failed: 2``,
    ``成功: 3, 失败: 1``: counts beside ``success_words`` and ``failure_words``, both present). ``vocabulary`` is the
    rules config's ``tools.target_recap`` (:class:`RecapVocabulary`): words as data, most of them the tools' own
    English. Callers test the vocabulary's ``failing`` literals on the receipt first (this reads the whole text)."""
    text = text[:_MAX_TEXT] if len(text) > _MAX_TEXT else text
    low = text.lower()
    if not any(mark in low for mark in vocabulary.failure_marks):
        return None  # every failed target is named by a failure counter, state or word (most receipts hold none)
    failing = vocabulary.failure_counters
    succeeded = failed = 0
    first = ""
    if "=" in text:
        for match in _RECAP_ROW.finditer(text):
            counters = {name.lower(): int(n) for name, n in _COUNTER.findall(match.group(2))}
            if any(n for name, n in counters.items() if name in failing):
                failed += 1
                first = first or match.group(0).strip()
            else:
                succeeded += 1
        if succeeded + failed:
            return (succeeded, failed, first) if failed else None
    # Past the counters, a failed target is a failure state's row or a failure word counted beside a success word.
    if not any(mark in low for mark in vocabulary.failure_state_marks) and not (
            any(mark in low for mark in vocabulary.failure_word_marks)
            and any(mark in low for mark in vocabulary.success_word_marks)):
        return None
    good_states, bad_states = vocabulary.success_states, vocabulary.failure_states
    rows = 0
    fields = vocabulary.field_labels
    for match in _STATUS_ROW.finditer(text):
        if match.group(3) is not None and match.group(3).lower() in fields:
            continue  # "status: failed" is the run's own state field, not a target's row
        state = (match.group(1) or match.group(4)).lower()
        if state in bad_states:
            failed += 1
            first = first or match.group(0).strip()
        elif state in good_states:
            succeeded += 1
        else:
            continue
        rows += 1
    if rows >= _MIN_STATUS_ROWS:
        return (succeeded, failed, first) if failed else None
    good_words, bad_words = vocabulary.success_words, vocabulary.failure_words
    succeeded = failed = 0
    seen_good = False
    first = ""
    pairs = [(m.start(), int(m.group(1)), m.group(2)) for m in _COUNT_WORD.finditer(text)]
    pairs += [(m.start(), int(m.group(2)), m.group(1)) for m in _WORD_LABEL.finditer(text)]
    for at, count, word in sorted(pairs):
        word = word.lower()
        if word in good_words:
            seen_good, succeeded = True, succeeded + count
        elif word in bad_words:
            failed += count
            if count and not first:
                first = _line_of(text, at)
    return (succeeded, failed, first) if seen_good and failed else None


def _line_of(text: str, position: int) -> str:
    end = text.find("\n", position)
    return text[text.rfind("\n", 0, position) + 1 : end if end >= 0 else len(text)].strip()
