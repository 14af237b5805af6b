"""The task outcome a log records, normalised: ``success``, ``failure``, ``partial`` or ``unknown``, with its source.

The judge scores the process; the outcome is what the log itself says about the result: a tau-bench reward, an
inspect_ai score, a Who&When or MAST failure annotation, a SWE-agent exit status, an OpenHands resolver
``success``. Each importer reads its format's fields with the helpers here and stores one
:class:`TaskOutcome` in ``metadata.task_outcome``; a record whose importer reads nothing of its own gets the
generic reading of the docs/contracts.md metadata keys ``reward`` and ``outcome`` (:func:`from_fields`). The release
gate (``outcome:failed``, ``outcome:unreadable``) and the report's score-by-outcome table read only that field.

Rules, as pure functions:

- a reward <= 0 is a failure, >= 1 a success, in between partial; a reward that is not a finite number (NaN,
  ``"abc"``) is *unreadable*: status unknown with the reason, and the gate holds the trajectory;
- a word (``passed``, ``failed``, ``partial``...) maps through :data:`SUCCESS_WORDS` and friends; any other word
  is unknown (recorded, but it does not say how the task went);
- an exit status (SWE-agent, mini-swe-agent) that names a submission is unknown (the submission is not graded
  in the log); any other exit (cost limit, format error, crash) is a failure: nothing was submitted;
- several signals about one task combine conservatively (:func:`combine`): a failure anywhere wins, then an
  unreadable value, then partial, then success.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

OutcomeStatus = Literal["success", "failure", "partial", "unknown"]
OUTCOME_STATUSES: tuple[OutcomeStatus, ...] = ("success", "failure", "partial", "unknown")

RAW_CHARS = 200  # a raw value is kept as text, cut to this length

SUCCESS_WORDS = frozenset({"success", "succeeded", "successful", "pass", "passed", "resolved", "solved", "correct", "true"})
FAILURE_WORDS = frozenset({"failure", "failed", "fail", "incorrect", "wrong", "unresolved", "unsolved", "false", "error",
                           "errored", "crashed"})
PARTIAL_WORDS = frozenset({"partial", "partially", "partially_correct", "partial_success", "partial_credit"})
_WORD_STATUSES: tuple[tuple[frozenset[str], OutcomeStatus], ...] = (
    (FAILURE_WORDS, "failure"), (PARTIAL_WORDS, "partial"), (SUCCESS_WORDS, "success"))  # in this order
# inspect_ai's letter scores: CORRECT, INCORRECT, PARTIAL, NOANSWER (no answer is not a solved task).
INSPECT_LETTERS: dict[str, OutcomeStatus] = {"C": "success", "I": "failure", "P": "partial", "N": "failure"}


class TaskOutcome(BaseModel):
    """What the log records about the task's result (not the judge's opinion), and where that was read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    status: OutcomeStatus = "unknown"
    source: str | None = Field(default=None, description="The field it was read from: 'reward', 'scores.match', ...")
    raw: str | None = Field(default=None, description="The recorded value as text.")
    note: str | None = Field(default=None, description="Why this status, in words.")
    unreadable: bool = Field(
        default=False, description="The log records an outcome that cannot be read (a NaN reward): the gate holds it."
    )


UNKNOWN = TaskOutcome(note="the log records no outcome")


def _raw(value: Any) -> str:
    text = str(value)
    return text if len(text) <= RAW_CHARS else text[: RAW_CHARS - 1] + "…"


def from_reward(value: Any, source: str = "reward") -> TaskOutcome:
    """A numeric reward: <= 0 failure, >= 1 success, in between partial; not a finite number: unreadable."""
    if value is None:
        return UNKNOWN
    number: float | None = None
    if isinstance(value, (int, float)):  # bool is an int: True 1, False 0
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        return TaskOutcome(source=source, raw=_raw(value), unreadable=True,
                           note=f"{source} {_raw(value)!r} is not a finite number: the result cannot be read")
    if number <= 0:
        status: OutcomeStatus = "failure"
    elif number >= 1:
        status = "success"
    else:
        status = "partial"
    return TaskOutcome(status=status, source=source, raw=_raw(value), note=f"{source} {number:g}")


def from_word(value: Any, source: str = "outcome") -> TaskOutcome:
    """A recorded word (``passed``, ``failed``, ``partial``...); an unrecognised word is unknown, not unreadable."""
    if value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return from_flag(value, source)
    word = str(value).strip().lower().replace("-", "_").replace(" ", "_")
    for words, status in _WORD_STATUSES:
        if word in words:
            return TaskOutcome(status=status, source=source, raw=_raw(value), note=f"{source} {_raw(value)!r}")
    return TaskOutcome(source=source, raw=_raw(value), note=f"{source} {_raw(value)!r} does not say whether the task succeeded")


def from_flag(value: bool, source: str) -> TaskOutcome:
    """A boolean such as ``success`` or ``is_correct``."""
    return TaskOutcome(status="success" if value else "failure", source=source, raw=str(value).lower(),
                       note=f"{source} is {str(value).lower()}")


def from_exit_status(value: Any, source: str = "info.exit_status") -> TaskOutcome:
    """An agent harness's exit status: a submission is ungraded (unknown); any other exit is a failure."""
    if value is None or not str(value).strip():
        return UNKNOWN
    text = str(value).strip()
    if "submit" in text.lower():
        return TaskOutcome(source=source, raw=_raw(text),
                           note=f"{source} {text!r}: the agent submitted, and the log does not grade the submission")
    return TaskOutcome(status="failure", source=source, raw=_raw(text),
                       note=f"{source} {text!r}: the run ended without a submission")


def from_inspect_score(value: Any, source: str) -> TaskOutcome:
    """One inspect_ai score value: a letter (C/I/P/N), a bool, a number, or a dict/list of those (aggregated)."""
    if value is None:
        return UNKNOWN
    if isinstance(value, str) and value.strip().upper() in INSPECT_LETTERS:
        letter = value.strip().upper()
        return TaskOutcome(status=INSPECT_LETTERS[letter], source=source, raw=letter, note=f"{source} = {letter}")
    if isinstance(value, bool):
        return from_flag(value, source)
    if isinstance(value, (int, float)):
        return from_reward(value, source)
    if isinstance(value, Mapping):
        return aggregate([from_inspect_score(v, f"{source}.{k}") for k, v in value.items()], source)
    if isinstance(value, list):
        return aggregate([from_inspect_score(v, f"{source}[{i}]") for i, v in enumerate(value)], source)
    return from_word(value, source)


def from_inspect_scores(scores: Any) -> TaskOutcome:
    """Every scorer of an inspect_ai sample (``scores: {name: {value, ...}}``), aggregated."""
    if not isinstance(scores, Mapping) or not scores:
        return UNKNOWN
    parts = [from_inspect_score(score.get("value") if isinstance(score, Mapping) else score, f"scores.{name}")
             for name, score in scores.items()]
    return aggregate(parts, "scores")


def aggregate(parts: Iterable[TaskOutcome], source: str) -> TaskOutcome:
    """Several scores of one task (inspect scorers, a dict score's metrics): all succeed -> success, all fail ->
    failure, a mix or a partial -> partial; any unreadable part makes the whole unreadable."""
    known = [p for p in parts if p.status != "unknown" or p.unreadable]
    if not known:
        return UNKNOWN
    if len(known) == 1:
        return known[0]
    unreadable = [p for p in known if p.unreadable]
    if unreadable:
        return unreadable[0]
    statuses = {p.status for p in known}
    status: OutcomeStatus = next(iter(statuses)) if len(statuses) == 1 else "partial"
    raw = ", ".join(f"{p.source}={p.raw}" for p in known)
    note = f"{len(known)} scores ({raw})" + ("; they disagree" if len(statuses) > 1 else "")
    return TaskOutcome(status=status, source=source, raw=_raw(raw), note=note)


# Rank of a reading when several signals describe one task: the gate must not release a failure that any one
# signal records, nor a value it cannot read.
_RANK = {"failure": 0, "unreadable": 1, "partial": 2, "success": 3, "unknown": 4}


def _rank(outcome: TaskOutcome) -> tuple[int, int]:
    key = "unreadable" if outcome.unreadable else outcome.status
    return _RANK[key], 0 if outcome.source else 1  # among unknowns, one with a source says more


def decides(outcome: TaskOutcome) -> bool:
    """Whether :func:`combine`, given ``outcome`` first, keeps it whatever follows: a failure read from a named
    source (nothing ranks above it), so the readings it would be combined with need not be made."""
    return _rank(outcome) == (0, 0)


def combine(*outcomes: TaskOutcome | None) -> TaskOutcome:
    """The conservative reading of several signals about one task (ties: the first given)."""
    present = [o for o in outcomes if o is not None]
    if not present:
        return UNKNOWN
    return min(present, key=_rank)  # min is stable: the first of equal rank wins


def from_fields(reward: Any, outcome: Any, *, reward_source: str = "reward", outcome_source: str = "outcome") -> TaskOutcome:
    """The generic reading of the docs/contracts.md metadata keys ``reward`` and ``outcome``."""
    readings = []
    if reward is not None:
        readings.append(from_reward(reward, reward_source))
    if outcome is not None:
        readings.append(from_word(outcome, outcome_source))
    return combine(*readings)
