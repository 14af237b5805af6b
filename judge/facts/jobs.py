"""The state of a job as one receipt shows it (issue 24 item 2): terminal or not, read language-neutrally.

A job is a resource a call started or polled (an export, a sync, a CI run, a rollout, a compose service, a k8s
job). Its receipts say whether it is finished through data, not prose: status fields and table columns, progress
fractions (``4000/9500``, ``1 of 3 updated replicas``, ``42%``), health values (``starting``) and counters of
active work (k8s ``"active": 1``). The phrase list ``running`` of the rules config stays the vocabulary of status
values; this module only finds where a value sits, so a new language or tool needs data, not code.
"""

from __future__ import annotations

import functools
import re
from typing import Literal, Protocol

JobState = Literal["non-terminal", "terminal-success", "terminal-failure"]


class _Search(Protocol):
    def search(self, text: str, low: str | None = None) -> re.Match[str] | None: ...


# A status-like field in any serialisation: JSON/YAML keys, `key: value`, `(health: starting)`.
# The key is machine-written (lower case): a record's user field ("Status": "Pending" of an order) is business
# data, not the state of a job.
_FIELD = re.compile(r'"?\b((?-i:status|state|phase|conclusion|health))"?\s*[:=]\s*"?([A-Za-z][\w -]{1,30}?)"?\s*(?=[,})\n;]|$)',
                    re.IGNORECASE | re.MULTILINE)
# A present participle names work still going on ("exporting", "syncing", "starting"), whatever the tool; the
# few that do not are states reached (a check "failing", a file "missing", "nothing") or a type name ("string").
_GOING = re.compile(r"[a-z]{3,}ing")
_REACHED = frozenset({"failing", "missing", "nothing", "passing", "working", "string", "existing", "matching", "everything",
                      "warning", "during", "something", "anything"})
# A table cell that is only a waiting status (gh pr checks, gh run list, kubectl get pods): tab- or column-aligned.
_CELL_SPLIT = re.compile(r"\t|\s{2,}")
_WAITING_CELLS = frozenset({"pending", "queued", "in_progress", "in progress", "waiting", "starting", "requested",
                            "containercreating", "podinitializing"})
# Work counted out of a total, on a line that speaks of progress; a ratio of checks ("3/5 tests passed") is a
# check's finding, not a job's progress, so it needs one of these words on its line.
_PROGRESS_WORD = re.compile(r"\b(progress|replicas?|processed|indexed|synced|exported|imported|uploaded|downloaded|"
                            r"migrated|copied|transferred|loaded|written|documents|rows|records|items|batch|steps?|"
                            r"epochs?|completed|done)\b", re.IGNORECASE)
_PROGRESS_LOW = re.compile(_PROGRESS_WORD.pattern)  # the same words, for lowered ASCII text
_FRACTION = re.compile(r"(?<![\w./-])(\d{1,12})\s*(?:/|\bof\b)\s*(\d{1,12})(?![\w./-])")
_PERCENT = re.compile(r"(?<![\w.])(\d{1,3}(?:\.\d+)?)\s?%")
_PROGRESS_KEY = re.compile(r'"?\bprogress"?\s*[:=]\s*"?(\d+(?:\.\d+)?)(%?)')
# What a line short of its total holds (:func:`_short_of_total`): a fraction's "/" or "of", a "%", a progress key.
_SHORT_MARKS = ("/", "of", "%", "progress")
_ACTIVE = re.compile(r'"?\bactive"?\s*[:=]\s*([1-9]\d*)\b')
_SUCCEEDED = re.compile(r'"?\b(succeeded|completionTime|completed)"?\s*[:=]\s*"?[1-9]')
_FAILED_PODS = re.compile(r'"?\bfailed"?\s*:\s*[1-9]')  # a k8s job's counter of failed pods
_HEALTH = re.compile(r"\((unhealthy|healthy)\)")  # docker ps: "Up 9 seconds (healthy)"
_MAX_TEXT = 20_000
_FIELD_KEYS = ("status", "state", "phase", "conclusion", "health")
# Status values that end a job, as data: a tool or language adds a word here, not a code path. The waiting ones
# stay in _WAITING_CELLS and the config's ``running`` list.
_SUCCESS_VALUES = frozenset({"succeeded", "success", "successful", "completed", "complete", "done", "finished",
                             "healthy", "ready", "available", "passed", "pass", "ok", "exported", "imported",
                             "synced", "deployed"})
_FAILURE_VALUES = frozenset({"failed", "failure", "fail", "error", "errored", "unhealthy", "cancelled", "canceled",
                             "timed_out", "timedout", "timeout", "aborted", "crashloopbackoff", "backofflimitexceeded",
                             "imagepullbackoff", "errimagepull", "oomkilled", "rejected",
                             "startup_failure", "action_required",
                             # slurm's ends other than COMPLETED (sacct/squeue State)
                             "out_of_memory", "node_fail", "boot_fail", "preempted", "deadline"})
# Commands that wait for a job's end and say how it ended by their exit code (gh run watch --exit-status,
# kubectl rollout status, kubectl wait): 0 is success, anything else a failure or a time-out.
_WAIT_COMMAND = re.compile(r"\bgh\s+run\s+watch\b[^|;&]*--exit-status|\bkubectl\s+(?:rollout\s+status|wait)\b")
# The names a job goes by in a call or receipt: a k8s kind/name ("deploy/worker", "job.batch/reindex-0412"), an
# id field's value ("job_id": "imp_301"), a run number of 6+ digits (gh run 9120399001).
_KIND_NAME = re.compile(r"\b(?:deploy(?:ment)?s?|job|jobs|pod|pods|sts|statefulset|daemonset|ds|service|svc|run)"
                        r"(?:\.[a-z.]+)?/([A-Za-z0-9][\w.-]{1,62})")
_ID_FIELD = re.compile(r'"?\b(?:\w+_)?(?:id|name)"?\s*[:=]\s*"?([A-Za-z0-9][\w.-]{2,62})')
# A job's id or name given as a flag (``--db-instance-identifier musteri-test``, ``--job-name=reindex``).
_ID_FLAG = re.compile(r"--(?:[a-z]+-)*(?:id|identifier|name)[= ]['\"]?([A-Za-z0-9][\w.-]{2,62})")
_RUN_NUMBER = re.compile(r"(?<![\w.])\d{6,}(?![\w.])")
# A number a receipt gives as a job's ("Submitted batch job 55121", LSF's "Job <3301> is submitted"): any length.
_JOB_NUMBER = re.compile(r"\bjob\s+<?(\d{2,})\b", re.IGNORECASE)


def job_state(text: str, running: _Search | None = None, ends: bool = True,
              names: frozenset[str] = frozenset()) -> JobState | None:
    """``"non-terminal"`` when the receipt shows a job not finished (see the module doc); else
    ``"terminal-failure"`` or ``"terminal-success"`` when a status value, a health value, a k8s counter or a
    progress at its total shows how it ended (a failure anywhere in the receipt wins); else None.

    ``ends=False`` reads only whether the job is going (every successful receipt is asked that; the end is asked
    only of the calls about a job). ``running`` is the rules config's compiled ``running`` list: a status value it reads as running (given as
    ``"status": "<value>"``) is non-terminal too, so the vocabulary is extended in one place. A table with a state
    column is read by that column (:func:`column_state`; ``names``: the job's ids, to read its own rows)."""
    text = text[:_MAX_TEXT]
    if not text:
        return None
    if _has_state_header(text):  # a table: a header and rows
        column = column_state(text, running, names)
        if column is not None and (ends or column == "non-terminal"):
            return column
    if len(text) <= _BARE_MAX:
        bare = bare_state(text, running)
        if bare is not None and (ends or bare == "non-terminal"):
            return bare
    if not _maybe_job(text, ends):
        return None
    # Each shape is looked for only when a cheap substring test says it can be there (receipts come by the
    # hundred thousand; most are file contents and short tool messages).
    ended = False  # a status field says the job ended: its fractions count what it did, not progress
    if any(key in text for key in _FIELD_KEYS):
        for _, value in _FIELD.findall(text.replace('\\"', '"')):
            if value_going(value.strip().lower(), running):
                return "non-terminal"
            ended = ended or value.strip().lower() in _SUCCESS_VALUES or value.strip().lower() in _FAILURE_VALUES
    if "active" in text and _ACTIVE.search(text) and not _SUCCEEDED.search(text):
        return "non-terminal"  # a k8s job with pods still active and none succeeded
    low = text.lower()
    # A waiting row is tab- or column-aligned; a count short of its total needs a fraction, a percentage or a
    # progress key (their patterns are case-sensitive): without these marks no line can show either, and only
    # the end (``ends``) still reads the progress word.
    waiting = ("\t" in text or "  " in text) and any(cell in low for cell in _WAITING_CELLS)
    # ASCII text lowered keeps its length and word boundaries, so the case-sensitive pattern finds the same word
    # (and runs about twice as fast); other text keeps IGNORECASE's Unicode folds (U+017F matches "s").
    progress = ((ends or any(mark in text for mark in _SHORT_MARKS))
                and (_PROGRESS_LOW.search(low) if text.isascii() else _PROGRESS_WORD.search(text)) is not None)
    if waiting or progress:
        for line in text.splitlines()[:400]:
            if (waiting and _waiting_row(line)) or (progress and not ended and _short_of_total(line)):
                return "non-terminal"
    return _terminal(text, low, progress) if ends else None


def _terminal(text: str, low: str, progress: bool) -> JobState | None:
    """How the job the receipt shows ended, when its data says so (see :func:`job_state`)."""
    values: list[str] = []
    if any(key in text for key in _FIELD_KEYS):
        values += [v.strip().lower() for _, v in _FIELD.findall(text.replace('\\"', '"'))]
    values += _HEALTH.findall(low)
    if "\t" in text or "  " in text:
        values += [c.strip().lower() for line in text.splitlines()[:400] if "\t" in line or "  " in line
                   for c in _CELL_SPLIT.split(line.strip())]
    words = [(v, v.split()[0] if v else "") for v in values]
    if _FAILED_PODS.search(text) or any(v in _FAILURE_VALUES or w in _FAILURE_VALUES for v, w in words):
        return "terminal-failure"
    if (_SUCCEEDED.search(text) or any(v in _SUCCESS_VALUES or w in _SUCCESS_VALUES for v, w in words)
            or (progress and any(_at_total(line) for line in text.splitlines()[:400]))):
        return "terminal-success"
    return None


def _at_total(line: str) -> bool:
    """A progress line that counts all done: ``9500/9500 rows``, ``progress: 100%``."""
    if not _PROGRESS_WORD.search(line):
        return False
    fractions = _FRACTION.findall(line)
    if fractions and all(int(done) == int(total) > 0 for done, total in fractions):
        return True
    return "progress" in line.lower() and any(float(p) >= 100 for p in _PERCENT.findall(line))


def wait_state(command: str, exit_code: int | None) -> JobState | None:
    """How a job ended by the exit code of a command that waits for its end (``gh run watch --exit-status``,
    ``kubectl rollout status``, ``kubectl wait``); None for any other command or an unknown code."""
    if exit_code is None or not _WAIT_COMMAND.search(command):
        return None
    return "terminal-success" if exit_code == 0 else "terminal-failure"


def job_names(text: str) -> frozenset[str]:
    """The names a job goes by in a call or receipt: k8s ``kind/name``, id and name fields' values, run numbers
    of 6+ digits, a number given as a job's (``Submitted batch job 55121``). A later call or receipt naming one of them is about the same job, wherever it comes."""
    text = text[:_MAX_TEXT]
    return (frozenset(_KIND_NAME.findall(text)) | frozenset(_ID_FIELD.findall(text)) | frozenset(_RUN_NUMBER.findall(text))
            | (frozenset(_ID_FLAG.findall(text)) if "--" in text else frozenset())
            | (frozenset(_JOB_NUMBER.findall(text)) if "ob" in text else frozenset()))


def _maybe_job(text: str, ends: bool) -> bool:
    # Cheap gate: every shape below needs one of these characters (receipts are read by the thousand); an end can
    # also sit in a space-aligned table cell (gh run list: "completed  CI  8812003411").
    return (":" in text or "=" in text or "/" in text or "%" in text or "\t" in text or " of " in text
            or (ends and "  " in text))


# The header cells of a table's state column (squeue's ST/STATE, sacct's State, airflow's state, kubectl's STATUS).
_STATE_COLUMNS = frozenset({"state", "status", "st", "phase", "conclusion"})
# Scheduler state codes of a state column (squeue's ST): going, and ended in failure. Longer values are read as
# any status value (a participle, the waiting and end lists).
_GOING_CODES = frozenset({"r", "pd", "cg", "cf", "s", "rq", "rf", "rs", "rh",
                          "q", "h", "w", "t"})  # PBS/Torque qstat: queued, held, waiting, in transit
_FAILED_CODES = frozenset({"f", "to", "ca", "oom", "nf", "bf", "dl", "pr"})
# Header words of a readiness column: the table lists services (pods, containers), whose steady state is running.
_SERVICE_COLUMNS = frozenset({"ready", "available", "up-to-date", "restarts", "ports", "health", "replicas"})


@functools.lru_cache(maxsize=1)
def _steady_values() -> frozenset[str]:
    """The states a service stays in while it works (the rules config's ``tools.steady_states``: one list for the
    ledger's tables and state lines). Read lazily: the config module reads this one's neighbours at import."""
    from judge.facts.config import default_config

    return default_config().patterns.steady_states


_HEADER_LINES = 4
_HEADER_CHARS = 600
# What every state column's name holds (state, Status, STATE, ST, phase, conclusion): one case-sensitive scan.
_HEADER_GATE = re.compile("tat|ST|hase|HASE|onclusion|ONCLUSION|Job id|Job ID")
_STATE_HEADER = re.compile(r"(?<![\w-])(?:state|status|st|phase|conclusion|job id)(?![\w-])", re.IGNORECASE)  # a header sits within the first lines (after a psql box border)
_WORD_SPAN = re.compile(r"\S+")


def _has_state_header(text: str) -> bool:
    """Cheap gate of :func:`column_states`: several lines, and a state column's name in the first of them."""
    if "\n" not in text or _HEADER_GATE.search(text, 0, _HEADER_CHARS) is None:
        return False
    end = -1
    for _ in range(_HEADER_LINES):
        end = text.find("\n", end + 1)
        if end < 0:
            break
    return _STATE_HEADER.search(text, 0, end if end > 0 else _HEADER_CHARS) is not None


def column_states(text: str, names: frozenset[str] = frozenset()) -> list[str]:
    """:func:`state_table`'s values."""
    return state_table(text, names)[0]


def state_table(text: str, names: frozenset[str] = frozenset()) -> tuple[list[str], bool]:
    """The values of a table's state column, one per row, in lower case: the header names the column
    (``STATE``, ``ST``, ``| state |``), a row's value is the cell under it (pipe-separated, or the word that
    overlaps the header's span in an aligned table: squeue right-aligns, kubectl left-aligns). When some rows name
    one of ``names`` (the job's id), only those rows: a listing of runs holds yesterday's too. Second: whether the
    header has a readiness column (kubectl's READY, docker's PORTS): its rows are services, whose ``Running`` is the
    state they are meant to stay in, not work going on."""
    lines: list[str] = []
    for at, header in enumerate(text.split("\n", _HEADER_LINES)[:_HEADER_LINES]):
        rows: list[tuple[str, str]] = []
        header = header.rstrip("\r")
        # A delimited header (a markdown/psql table, CSV, `;`-separated export) cuts its rows the same way.
        mark = next((m for m in ("|", "\t", ",", ";") if m in header), None)
        if mark is not None:
            cells = [c.strip().strip("\"'").lower() for c in header.strip().strip("|").split(mark)]
            column = next((k for k, c in enumerate(cells) if c in _STATE_COLUMNS), None)
            if column is None or len(cells) < 2:
                continue
            lines = text[:_MAX_TEXT].splitlines()[:400]
            for line in lines[at + 1:]:
                row = [c.strip().strip("\"'") for c in line.strip().strip("|").split(mark)]
                if len(row) == len(cells) and row[column].strip("-+ "):
                    rows.append((line, row[column].lower()))
        else:
            spans = [(m.start(), m.end(), m.group().lower()) for m in _WORD_SPAN.finditer(header)]
            # qstat names its state column "S", which is a state only in a table of jobs ("Job id" heads it).
            job_table = header.lower().startswith("job id")
            column = next((k for k, (_, _, word) in enumerate(spans)
                           if word in _STATE_COLUMNS or (job_table and word == "s")), None)
            if column is None or len(spans) < 2:
                continue
            found = spans[column][:2]
            lines = text[:_MAX_TEXT].splitlines()[:400]
            aligned = "  " in header.strip()  # a header one space apart (squeue -o '%i %T %r') aligns nothing
            for line in lines[at + 1:]:
                words = _WORD_SPAN.findall(line)
                if not aligned and len(words) == len(spans):
                    under = [words[column]]  # the same cell by its place
                else:
                    under = [m.group() for m in _WORD_SPAN.finditer(line) if m.start() < found[1] and m.end() > found[0]]
                if len(under) == 1 and under[0].strip("-="):
                    rows.append((line, under[0].lower()))
        named = [value for line, value in rows if any(n in line for n in names)]
        return named or [value for _, value in rows], any(w in _SERVICE_COLUMNS for w in _WORD_SPAN.findall(header.lower()))
    return [], False


def column_state(text: str, running: _Search | None = None, names: frozenset[str] = frozenset()) -> JobState | None:
    """The state a table's state column shows (:func:`column_states`): going when a row is going (a participle, a
    waiting value, a scheduler code such as ``R``/``PD``), else failed when a row ended in failure, else succeeded
    when a row shows a success value; None without such a column."""
    values, services = state_table(text, names)
    if not values:
        return None
    if any(v in _GOING_CODES or value_going(v, running) for v in values
           if not (services and v in _steady_values())):
        return "non-terminal"
    if any(v in _FAILED_CODES or v in _FAILURE_VALUES for v in values):
        return "terminal-failure"
    return "terminal-success" if any(v in _SUCCESS_VALUES for v in values) else None


_BARE_MAX = 80
_NON_SPACE = re.compile(r"\S")
_BARE_CELL = re.compile(r"[\t,;|]+|\s{2,}")
_SPACED_CELL = re.compile(r"[\t,;|\s]+")
_NUMBER_CELL = re.compile(r"[\d.:%/-]+")


def bare_state(text: str, running: _Search | None = None, *, spaced: bool = False) -> JobState | None:
    """The state of a job when a receipt is nothing but that state: one short line whose cells are one status word
    and numbers (``building``, ``RUNNING\t40.0``, ``available``: a poll that asked only for the state, ``--query
    State``, ``jq -r .state``). Going in any tool's words (a present participle, a waiting value:
    :func:`value_going`), or an end in the data lists of end values; None for anything else. ``spaced=True`` also
    reads cells one space apart (``squeue -o '%T %M %L'``: ``RUNNING 5:12:40 2:47:20``); the offline editor asks
    it of the poll a rewritten answer follows (the ledger's own reading keeps the aligned cells)."""
    # One line of at most _BARE_MAX characters between any whitespace, found without copying the receipt: nothing
    # but whitespace may follow _BARE_MAX characters after the first visible one (long receipts fail at once).
    first = _NON_SPACE.search(text)
    if first is None or _NON_SPACE.search(text, first.start() + _BARE_MAX) is not None:
        return None
    line = text[first.start():first.start() + _BARE_MAX].rstrip()
    if "\n" in line:
        return None
    splitter = _SPACED_CELL if spaced else _BARE_CELL
    cells = [c.strip(" .…'\"").lower() for c in splitter.split(line) if c.strip(" .…'\"")]
    words = [c for c in cells if not _NUMBER_CELL.fullmatch(c)]
    if not 1 <= len(cells) <= 3 or len(words) != 1 or (" " in words[0] and words[0] not in _WAITING_CELLS):
        return None
    word = words[0]
    if value_going(word, running):
        return "non-terminal"
    if word in _FAILURE_VALUES:
        return "terminal-failure"
    return "terminal-success" if word in _SUCCESS_VALUES else None


def value_going(value: str, running: _Search | None) -> bool:
    """Whether a status value (lower case) names work still going on: a present participle ("syncing", in any
    tool's words), a waiting cell, or a value the config's ``running`` list reads as running."""
    parts = value.split()
    word = parts[0] if parts else ""  # a cell of whitespace only ("\r" between separators) names nothing
    if word in _REACHED:
        return False
    if _GOING.fullmatch(word) or value in _WAITING_CELLS or _waits_within(value):
        return True
    return running is not None and running.search(f'"status": "{value}"') is not None


def _waits_within(value: str) -> bool:
    """A status value of several words that ends in a waiting phrase ("translation in progress", "build queued"):
    the job it names is still going, whatever noun precedes the phrase."""
    return " " in value and any(value.endswith(" " + cell) for cell in _WAITING_CELLS)


def _waiting_row(line: str) -> bool:
    """A table row with a cell that is only a waiting status (``build\\tpending\\t0\\t...``)."""
    if "\t" not in line and "  " not in line:
        return False
    cells = [c.strip().lower() for c in _CELL_SPLIT.split(line.strip())]
    return len(cells) >= 2 and any(c in _WAITING_CELLS for c in cells)


def _short_of_total(line: str) -> bool:
    """A progress line that counts fewer done than the total: ``indexed 4000/9500``, ``1 of 3 updated replicas``,
    ``progress: 40%``, ``"progress": 0.4``."""
    key = _PROGRESS_KEY.search(line)
    if key is not None:
        amount = float(key.group(1))
        return amount < (100 if key.group(2) or amount > 1 else 1)
    if not _PROGRESS_WORD.search(line):
        return False
    for done, total in _FRACTION.findall(line):
        if int(total) > 0 and int(done) < int(total):
            return True
    return any(float(p) < 100 for p in _PERCENT.findall(line)) and "progress" in line.lower()


def progress_done(text: str) -> frozenset[int]:
    """The counts done of the progress fractions short of their total in ``text`` (``4000`` of ``4000/9500``): a
    message that restates one reports the job as going, in any language."""
    return frozenset(int(done) for done, total in _FRACTION.findall(text[:_MAX_TEXT]) if int(done) < int(total))


def reports_progress(text: str) -> bool:
    """Whether a message gives a progress short of done ("310/940", "40%"), in any language: it reports the job
    as going, it does not claim it finished."""
    return bool(progress_done(text)) or any(float(p) < 100 for p in _PERCENT.findall(text[:_MAX_TEXT]))


_WORD = re.compile(r"[A-Za-z_]{2,}")


def states_failure(text: str) -> bool:
    """Whether a text repeats a job's failure state (``FAILED``, ``TIMEOUT``, ``OUT_OF_MEMORY``, ``CrashLoopBackOff``):
    a report that quotes the state reports the failure, in whatever language it is written around it."""
    return any(word.lower() in _FAILURE_VALUES for word in _WORD.findall(text[:_MAX_TEXT]))


# Machine keys of a load's count of records it turned away ("errors_seen": 1000, "rows_rejected": 20,
# "rejected": 3, "failed_rows": 7): a nonzero one beside a success means the load was partial.
_REJECTED_KEY = re.compile(r'"?\b((?:[a-z]+_)?(?:rejected|errors?_seen|error_rows|errored|failed_rows|rows_(?:error|failed))'
                           r'(?:_count|_rows)?)"?\s*[:=]\s*"?([1-9]\d*)\b')
_REJECTED_LITERALS = ("rejected", "errors_seen", "error_seen", "error_rows", "errored", "failed_rows", "rows_error",
                      "rows_failed", "records_error", "records_failed")
_PARTIAL_STATE = re.compile(r"partial(?:ly)?[_ -]?\w*")


def partial_load(text: str) -> str | None:
    """Why a load or copy that reported success shows it turned part of its input away, or None: a row of its
    state column in a failure state or a partial one (Snowflake's ``PARTIALLY_LOADED``, ``LOAD_FAILED``), or a
    nonzero count under a key of rejected records (``"errors_seen": 1000``, ``rows_rejected=20``). Read from the
    receipt's data, whatever language the tool speaks around it."""
    text = text[:_MAX_TEXT]
    if _has_state_header(text):
        for value in column_states(text):
            if value in _FAILURE_VALUES or _PARTIAL_STATE.fullmatch(value) or value.endswith(("_failed", "_error")):
                return f"a row's state is {value}"
    # Every rejected-count key holds one of these (machine keys are lower case): most receipts hold none.
    found = _REJECTED_KEY.search(text) if any(k in text for k in _REJECTED_LITERALS) else None
    return f"{found.group(1)} = {found.group(2)}" if found else None
