"""What a kept receipt answered, read from its data, for the offline editor's validators (issue 24, item 3).

The fact ledger reads a receipt's outcome from its exit code and content (:attr:`judge.facts.Action.status`). A web
API answers a refusal with exit code 0 and a document (``{"error": {"code": "charge_disputed"}}``, ``"status":
"declined"``, ``"approved": false``, ``HTTP/1.1 409``), and a job poll may print its state as ``Status=Rendering``:
a rewrite that turns either into a success must still be refused. This module reads those shapes as data, in no
human language: the status values, grant keys and error-document keys are the rules config's
(``tools.refusal_values``, ``tools.grant_keys``, ``tools.error_meta_keys``); the job states are
:mod:`judge.facts.jobs`'s. :func:`judge.repair.calls.outcome_of` gives the ledger's status, made ``failed`` or ``running`` by them.
"""

from __future__ import annotations

import functools
import json
import re

from judge.facts.config import default_config
from judge.facts.jobs import value_going

# A status line of an HTTP client answer: curl -i's "HTTP/1.1 409 Conflict", -w's "HTTP 404", httpie's header line.
_HTTP_STATUS = re.compile(r"^\s*HTTP(?:/[\d.]+)?\s+(4\d\d)\b", re.IGNORECASE | re.MULTILINE)
# Keys of a response's own outcome (top level of its document, or a ``key: value`` line): not a record's field.
_OUTCOME_KEYS = ("status", "state", "outcome", "result", "decision", "phase", "stage")
_KEY_LINE = re.compile(r"^\s*\"?([A-Za-z_]+)\"?\s*[:=]\s*\"?([A-Za-z][\w -]{0,40}?)\"?\s*,?\s*$", re.MULTILINE)
_ERROR_KEYS = ("error", "errors")
_MAX_TEXT = 20_000


def _document(text: str) -> dict[str, object] | None:
    """The JSON object a receipt is, or opens with (``curl -w`` may print a status line after it), or None."""
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def http_client_status(text: str) -> int | None:
    """The 4xx status of an HTTP status line the receipt prints (``HTTP/2 403``, ``HTTP 404``), or None (pure)."""
    match = _HTTP_STATUS.search(text[:_MAX_TEXT])
    return int(match.group(1)) if match else None


def error_document(text: str) -> bool:
    """Whether the receipt is a JSON document that answers only with an error (pure): a non-empty top-level
    ``error`` / ``errors``, and nothing besides but the keys that describe an error (the rules config's
    ``tools.error_meta_keys``: message, code, request_id ...) or a 4xx status: no data came back."""
    document = _document(text[:_MAX_TEXT])
    if document is None or not any(document.get(key) for key in _ERROR_KEYS):
        return False
    meta = {key.lower() for key in default_config().tools.error_meta_keys}
    others = {key.lower() for key in document} - set(_ERROR_KEYS)
    return others <= meta or http_client_status(text) is not None


@functools.lru_cache(maxsize=4096)
def refusal_shown(text: str, request: bool = True) -> str | None:
    """Why a receipt shows its request was refused or declined, read from its data, or None (pure, memoised):
    an error-only document (:func:`error_document`), a 4xx HTTP status line, or, for a ``request`` (a call that
    asked for a change: a read's document describes a resource, whose ``"status": "cancelled"`` is the order's, not
    an answer to the read), a top-level outcome key whose value is one of the rules config's
    ``tools.refusal_values`` (``"status": "declined"``, ``decision: denied``) or a grant key of ``tools.grant_keys``
    set false (``"approved": false``)."""
    text = text[:_MAX_TEXT]
    if not text.strip():
        return None
    if error_document(text):
        return "the receipt is an error document"
    if (status := http_client_status(text)) is not None:
        return f"the receipt shows HTTP {status}"
    if not request:
        return None
    tools = default_config().tools
    refusals = {value.lower() for value in tools.refusal_values}
    grants = {key.lower() for key in tools.grant_keys}
    document = _document(text)
    pairs: list[tuple[str, object]] = (list(document.items()) if document is not None
                                       else [(k, v) for k, v in _KEY_LINE.findall(text)])
    for key, value in pairs:
        name = key.lower()
        if name in _OUTCOME_KEYS and isinstance(value, str) and value.strip().lower().replace(" ", "_") in refusals:
            return f"the receipt's {key} is {value!r}"
        if name in grants and (value is False or (isinstance(value, str) and value.strip().lower() == "false")):
            return f"the receipt's {key} is false"
    return None


# States a service or pod stays in while it works ("Status: Running" of kubectl describe): steady, not a job going.
_STEADY = frozenset({"running", "up", "active", "online", "serving"})


@functools.lru_cache(maxsize=4096)
def job_going(text: str) -> bool:
    """Whether a receipt the ledger read as finished shows a job still going by a ``key: value`` / ``Key=Value``
    line of an outcome key in any case (a render farm's ``Status=Rendering``; the ledger's
    :func:`judge.facts.jobs.job_state` reads machine-written lower-case keys) whose value
    :func:`judge.facts.jobs.value_going` reads as going and is no steady state of a service (pure, memoised)."""
    running = default_config().patterns.running
    return any(key.lower() in _OUTCOME_KEYS and (word := value.strip().lower()) not in _STEADY
               and value_going(word, running) for key, value in _KEY_LINE.findall(text[:_MAX_TEXT]))


def going_value(text: str) -> str | None:
    """The state word of a top-level key of a receipt's document, or of a ``key: value`` line, that reads as going
    (``Rendering``, ``"state": "running"``), or None (pure): the word an honest report of the poll keeps (a steady
    ``running`` too, when the ledger read the job as running)."""
    text = text[:_MAX_TEXT]
    running = default_config().patterns.running
    document = _document(text)
    pairs: list[tuple[str, str]] = [(k, v) for k, v in document.items() if isinstance(v, str)] if document else []
    for key, value in pairs + [(str(k), str(v)) for k, v in _KEY_LINE.findall(text)]:
        word = value.strip().lower()
        if key.lower() in _OUTCOME_KEYS and value_going(word, running):
            return word
    return None
