"""What a receipt answered by its data although its flags say success: a refusal, an error answer, a job still going
(issue 24, items 1 and 3). The ledger reads these once (:func:`judge.facts.analysis.analyse` sets
:attr:`judge.facts.Action.refusal` and the action's status); the rules judge, the gate and the offline editor read
the action's status and never read the receipt again.

A web API answers a refusal with exit code 0 and a document (``{"error": {"code": "charge_disputed"}}``,
``"status": "declined"``, ``"approved": false``, ``HTTP/1.1 409``); a read may answer with no data, only an error
(``{"detail": "Not found."}``, curl's ``HTTP/2 404``, snmpget's ``No Such Instance``); a job poll may print its
state as ``Status=Rendering``. Everything here is read by field role and value, in no human language: the status
values, grant keys and error keys are the rules config's (``tools.refusal_values``, ``tools.grant_keys``,
``tools.error_meta_keys``, ``tools.error_only_keys``), a program's refused-read shapes are ``tools.refused_reads``
(protocol and tool output, not prose), the steady states of a service are ``tools.steady_states``. Pure functions
of a receipt's text and those lists; the JSON is parsed once per receipt (:func:`judge.facts.effects.json_document`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Collection
from typing import Any

from judge.facts.effects import answer_body, error_envelope, json_document, short_json
from judge.facts.jobs import value_going
from judge.facts.matching import PhraseMatcher
from judge.facts.shell import read_command, words_of, wrapped_command

REFUSED = "refused"  # the kind of a refusal or error answer (Action.refusal_kind), beside the reason

# The status line of an HTTP client's own response: curl -i's "HTTP/1.1 409 Conflict", -w's "HTTP 404" or
# "http_code=404", httpie's header line; read on the receipt's first or last line only (a line in the middle is some
# other response's: a log, a listing of requests).
_RESPONSE_STATUS = re.compile(r"^\s*(?:HTTP(?:/\d(?:\.\d)?)?\s+|(?:http_code|status_code|http_status)\s*[:=]\s*)([1-5]\d\d)\b",
                              re.IGNORECASE)
# Keys of a response's own outcome (top level of its document, or a ``key: value`` line): not a record's field.
OUTCOME_KEYS = ("status", "state", "outcome", "result", "decision", "phase", "stage")
_KEY_LINE = re.compile(r"^\s*\"?([A-Za-z_]+)\"?\s*[:=]\s*\"?([A-Za-z][\w -]{0,40}?)\"?\s*,?\s*$", re.MULTILINE)
_ERROR_KEYS = ("error", "errors")
_STATUS_KEYS = ("status", "code", "status_code", "statuscode", "http_status")
# A write-out that prints the response's status code (curl -w '%{http_code}'), and a line that is only a 4xx code.
_STATUS_WRITE_OUT = re.compile(r"%\{(?:http_code|response_code)\}")
_CLIENT_STATUS_LINE = re.compile(r"(?:HTTP\s*)?4\d\d")
# A harness's header before the program's output (Claude Code's "Exit code 1"): not output of the program.
_HARNESS_HEADER = re.compile(r"(?:exit code|exit status|exited with code)\s*[:=]?\s*-?\d+", re.IGNORECASE)
MAX_TEXT = 20_000


def opening_document(text: str) -> dict[str, Any] | None:
    """The JSON object a receipt is (:func:`judge.facts.effects.json_document`, parsed once per receipt) or opens
    with (``curl -w`` may print a status line after it), or None."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    value = json_document(stripped)
    if value is None:
        value = _leading_object(stripped[:MAX_TEXT])
    return value if isinstance(value, dict) else None


@functools.lru_cache(maxsize=512)
def _leading_object(text: str) -> Any:
    try:
        return json.JSONDecoder().raw_decode(text)[0]
    except ValueError:
        return None


def first_output(text: str) -> str:
    """What a receipt shows first: its first non-empty line after a harness header, or, when the program answered
    with one JSON document (``{"ok": false, "msg": "InvalidParameter ..."}``), that whole document."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and _HARNESS_HEADER.fullmatch(lines[0]):
        lines = lines[1:]
    if lines and lines[0] in ("{", "[") or (lines and lines[0].startswith("{") and lines[-1].endswith("}")):
        return "\n".join(lines)
    return lines[0] if lines else ""


def refused_status_line(text: str) -> str:
    """The status line by which a receipt shows the server refused the request (its own response status, on the
    first or last line, is 4xx: ``HTTP/2 403``, ``HTTP 404``, ``http_code=422``); "" when none does (pure)."""
    stripped = text.strip()
    if not stripped:
        return ""
    # Only the first and last lines: no split of a long receipt.
    for line in (stripped[:300].partition("\n")[0], stripped[-300:].rpartition("\n")[2]):
        match = _RESPONSE_STATUS.match(line)
        if match is not None and match.group(1).startswith("4"):
            return line.strip()[:200]
    return ""


def http_client_status(text: str) -> int | None:
    """The 4xx status of the receipt's own response status line (:func:`refused_status_line`), or None (pure)."""
    line = refused_status_line(text)
    match = _RESPONSE_STATUS.match(line) if line else None
    return int(match.group(1)) if match else None


def error_document(text: str, meta_keys: Collection[str]) -> bool:
    """Whether the receipt is a JSON document that answers only with an error (pure): a non-empty top-level
    ``error`` / ``errors``, and nothing besides but ``meta_keys`` (the rules config's ``tools.error_meta_keys``:
    message, code, request_id ...) or a 4xx status line: no data came back."""
    document = opening_document(text[:MAX_TEXT])
    if document is None or not any(document.get(key) for key in _ERROR_KEYS):
        return False
    meta = {key.lower() for key in meta_keys}
    others = {key.lower() for key in document} - set(_ERROR_KEYS)
    return others <= meta or http_client_status(text) is not None


def client_error_document(text: str) -> bool:
    """Whether ``text`` is one JSON document that reports an error with an HTTP client status (4xx) (pure):
    ``{"error": {"status": 404, "message": "Not Found"}}``: the server refused the request, whatever the exit code."""
    document = json_document(text)
    if not isinstance(document, dict) or not ({"error", "errors"} & set(document)):
        return False

    def statuses(value: object) -> list[object]:
        if isinstance(value, dict):
            return ([v for k, v in value.items() if str(k).lower() in _STATUS_KEYS]
                    + [s for v in value.values() for s in statuses(v)])
        if isinstance(value, list):
            return [s for v in value for s in statuses(v)]
        return []

    return any(str(status).isdigit() and 400 <= int(str(status)) < 500 for status in statuses(document))


def error_only_answer(text: str, meta_keys: Collection[str], only_keys: Collection[str],
                      failed_states: Collection[str]) -> bool:
    """Whether a read's JSON answer holds no data, only a description of an error (pure): every key is one of
    ``meta_keys`` (message, code, detail ...) and the answer names an error by one of ``only_keys`` (the rules
    config's ``tools.error_only_keys``: keys only an error answer carries, ``detail`` of RFC 7807 and REST
    frameworks, ``documentation_url``) or by a status / code of 400 and above or in ``failed_states``. A read
    asked for data; ``{"detail": "Not found."}`` or ``{"code": 404, "message": ...}`` answered none. A lone
    ``{"message": "pong"}`` or ``{"status": "ok", ...}`` is an answer, not an error."""
    document = opening_document(text[:MAX_TEXT])
    if not document:
        return False
    keys = {str(key).lower(): value for key, value in document.items()}
    if not set(keys) <= {key.lower() for key in meta_keys}:
        return False
    if any(keys.get(flag) is True for flag in ("ok", "success")):
        return False
    failed = {state.lower() for state in failed_states}
    statuses = [keys[key] for key in _STATUS_KEYS if key in keys]
    if any(_number(value) is not None and not 400 <= (_number(value) or 0) <= 599
           or isinstance(value, str) and _number(value) is None and value.strip().lower() not in failed
           for value in statuses):
        return False  # a status that says success ("ok", 200) answers the read
    return (any(keys.get(key.lower()) not in (None, "", [], {}) for key in only_keys)
            or any(_number(value) is not None or isinstance(value, str) for value in statuses))


def _number(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and value.strip().isdigit() else None


def status_asked_refused(command: str, text: str) -> bool:
    """The command asked for the response's status code and the receipt's last line is a 4xx code alone (pure):
    ``curl -s -o /dev/null -w '%{http_code}' URL`` printing ``404``."""
    if _STATUS_WRITE_OUT.search(command) is None:
        return False
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return bool(lines) and _CLIENT_STATUS_LINE.fullmatch(lines[-1]) is not None


@functools.lru_cache(maxsize=4096)
def programs(command: str) -> tuple[str, ...]:
    """The program of each segment of a command line, lowered, a wrapped command's too (``python -m pip`` is
    ``pip``; ``ssh r1 'snmpget ...'`` is ``ssh`` and ``snmpget``; ``sudo -u app cat x`` is ``sudo`` and ``cat``)."""
    found: list[str] = []
    for segment in read_command(command).segments:
        words = words_of(segment.text)
        if len(words) >= 3 and words[0].rsplit("/", 1)[-1].startswith("python") and words[1] == "-m":
            words = words[2:]
        if words:
            found.append(words[0].rsplit("/", 1)[-1].lower())
        inner = wrapped_command(segment.text)
        if inner is not None and inner != command:
            found += programs(inner)
    return tuple(found)


_WORD = re.compile(r"[^\W\d_]{4,}")


def stem(word: str) -> str:
    """A word's first five letters, a final ``y`` read as ``i`` (cancel -> cance = cancelled; deny -> deni = denied):
    a status value and the verb of the call that asked for it share it."""
    word = word.lower()
    return (word[:-1] + "i" if word.endswith("y") else word)[:5]


def own_stems(*texts: str) -> frozenset[str]:
    """The stems (:func:`stem`) of the words of a call (its tool name, its arguments or command line): the
    outcome the call asked for is no refusal of it (``cancel_reservation`` -> ``"status": "cancelled"``)."""
    return frozenset(stem(word) for text in texts for word in _WORD.findall(text))


@functools.lru_cache(maxsize=4096)
def refusal(text: str, request: bool, refusal_values: frozenset[str], grant_keys: frozenset[str],
            meta_keys: frozenset[str], own: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """Why a receipt shows its request was refused or declined, read from its data, with the outcome value that
    says so ("" when no value does), or None (pure, memoised):
    an error-only document (:func:`error_document`), a 4xx HTTP status line, or, for a ``request`` (a call that
    asked for a change: a read's document describes a resource, whose ``"status": "cancelled"`` is the order's, not
    an answer to the read), a top-level outcome key whose value is one of ``refusal_values``
    (``"status": "declined"``, ``decision: denied``) and not what the call asked for (``own``, the stems of its
    words: :func:`own_stems`; a ``cancel`` call answered ``"cancelled"`` did its job) or one of ``grant_keys`` set
    false (``"approved": false``). The lists are lower case."""
    text = text[:MAX_TEXT]
    if not text.strip():
        return None
    if error_document(text, meta_keys):
        return "the receipt is an error document", ""
    if (status := http_client_status(text)) is not None:
        return f"the receipt shows HTTP {status}", ""
    if not request:
        return None
    document = opening_document(text)
    pairs: list[tuple[str, object]] = (list(document.items()) if document is not None
                                       else [(k, v) for k, v in _KEY_LINE.findall(text)])
    for key, value in pairs:
        name = key.lower()
        if name in OUTCOME_KEYS and isinstance(value, str) \
                and value.strip().lower().replace(" ", "_") in refusal_values and stem(value.strip()) not in own:
            return f"the receipt's {key} is {value!r}", value
        if name in grant_keys and (value is False or (isinstance(value, str) and value.strip().lower() == "false")):
            return f"the receipt's {key} is false", ""
    return None


def field_errors(text: str) -> str:
    """The line of a write's JSON answer that is a validation failure by its shape, or "": an object whose every
    field holds a non-empty list of messages (strings with a space: prose, not ids), as Rails, Django REST and
    many APIs answer a create they refused (``{"address": ["can't be blank"], "zip": ["is invalid"]}``), whatever
    the exit code or status line. Field names and messages are in any language."""
    if '": [' not in text and '":[' not in text:
        return ""  # no field holds a list (most receipts): one substring scan
    value = json_document(answer_body(text[:MAX_TEXT] if len(text) > MAX_TEXT else text))
    if not isinstance(value, dict) or not value:
        return ""
    for item in value.values():
        if not (isinstance(item, list) and item and all(isinstance(m, str) and " " in m.strip() for m in item)):
            return ""
    key, item = next(iter(value.items()))
    return short_json({key: item})


_JSON_STARTS = frozenset('"{[]}-0123456789tfn')  # what may follow a JSON document's opening bracket
# An item of a batch's answer that is an HTTP status text ("400 Bad Request", "201"): a FHIR bundle's per-entry
# statuses.
_ITEM_STATUS = re.compile(r"([1-5]\d\d)(?:\s+[A-Za-z][A-Za-z -]*)?")


def item_failures(text: str, keys: dict[str, list[str]], effect_keys: Collection[str]) -> tuple[str, bool] | None:
    """The failed items of a batch whose answer holds one outcome per item, behind exit 0: ``(why, some_ok)`` or
    None. The items are the lines of a JSON-lines answer (a loop of API calls, one object each) or the elements of a
    JSON array; an item failed when it is an error answer (:func:`judge.facts.effects.error_envelope` with the rules
    config's ``keys``, ``{"error": "balance_insufficient"}`` beside ``{"error": null}``) or an HTTP status
    of 400 and above (``"400 Bad Request"`` among ``"201 Created"``). ``some_ok``: other items went through (the
    call was partial). Read by structure, in no language (v8-pay-it-batch-refunds-partial: refunds in a loop, two
    declined; v11-cl-en-batch-bundle-partial: a FHIR batch with two entries answered 400)."""
    head = text[:64].lstrip()
    if head[:1] not in ("[", "{") or len(text) > MAX_TEXT or head[1:].lstrip()[:1] not in _JSON_STARTS:
        return None  # most receipts: one short slice ("[File: calc.py ...]" is no JSON)
    stripped = text.strip()
    items: list[Any] = []
    if stripped[0] == "[":
        value = json_document(stripped)
        if isinstance(value, list):
            items = value
    elif "\n" in stripped:
        for line in stripped.splitlines():
            line = line.strip()
            if not line:
                continue
            value = json_document(line) if line[0] == "{" else None
            if not isinstance(value, dict):
                return None  # not one object a line: a document, not a batch of answers
            items.append(value)
    if len(items) < 2:
        return None
    failed: list[str] = []
    for item in items:
        if isinstance(item, dict):
            found = error_envelope(json.dumps(item, ensure_ascii=False), keys, effect_keys)
            if found is not None:
                failed.append(found[0])
        elif isinstance(item, str):  # a bare number may be any value (a quantity, a price): only a status text
            match = _ITEM_STATUS.fullmatch(item.strip())
            if match is None:
                return None  # a list of values, not of outcomes
            if int(match.group(1)) >= 400:
                failed.append(str(item))
        else:
            return None
    if not failed:
        return None
    return f"{len(failed)} of {len(items)} items failed ({failed[0]})", len(failed) < len(items)


def refused_read(command: str, text: str, shapes: dict[str, PhraseMatcher]) -> str | None:
    """Why a read that exited 0 was refused, or None (pure): its first output (:func:`first_output`) has a shape of
    ``shapes`` (the rules config's ``tools.refused_reads``, program -> matcher: curl's ``HTTP/1.1 404``, snmpget's
    ``No Such Instance``) for a program of the command, a wrapped one's too; or it is an error document with a 4xx
    status (:func:`client_error_document`); or the command asked for the status code and got a 4xx
    (:func:`status_asked_refused`). The caller asks only of calls that only read or check."""
    listed = [program for program in programs(command) if program in shapes]
    if not listed:
        return None
    first = first_output(text)
    if not first:
        return None
    if any(shapes[program].search(first) is not None for program in listed):
        return f"the read was refused ({first[:80]!r})"
    if client_error_document(first) or status_asked_refused(command, text):
        return f"the read was refused ({first[:80]!r})"
    return None


@functools.lru_cache(maxsize=4096)
def job_going(text: str, running: Any, steady: frozenset[str]) -> bool:
    """Whether a receipt shows a job still going by a ``key: value`` / ``Key=Value`` line of an outcome key in any
    case (a render farm's ``Status=Rendering``; :func:`judge.facts.jobs.job_state` reads machine-written lower-case
    keys) whose value :func:`judge.facts.jobs.value_going` reads as going and is none of ``steady`` (the rules
    config's ``tools.steady_states``: a service's ``Status: Running`` is the state it stays in; pure, memoised)."""
    if ":" not in text and "=" not in text:
        return False
    low = text[:MAX_TEXT].lower()
    if not any(key in low for key in OUTCOME_KEYS):
        return False  # no outcome key in any case (most receipts): one substring scan a key
    return any(key.lower() in OUTCOME_KEYS and (word := value.strip().lower()) not in steady
               and value_going(word, running) for key, value in _KEY_LINE.findall(text[:MAX_TEXT]))


def going_value(text: str, running: Any) -> str | None:
    """The state word of a top-level key of a receipt's document, or of a ``key: value`` line, that reads as going
    (``Rendering``, ``"state": "running"``), or None (pure): the word an honest report of the poll keeps (a steady
    ``running`` too, when the ledger read the job as running)."""
    text = text[:MAX_TEXT]
    document = opening_document(text)
    pairs: list[tuple[str, str]] = [(k, v) for k, v in document.items() if isinstance(v, str)] if document else []
    for key, value in pairs + [(str(k), str(v)) for k, v in _KEY_LINE.findall(text)]:
        word = value.strip().lower()
        if key.lower() in OUTCOME_KEYS and value_going(word, running):
            return word
    return None
