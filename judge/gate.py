"""The release gate: checks a trajectory must pass before a score of 4 or 5 is released for training.

Three families of named checks, each a pure reading of the trajectory:

- **authenticity** (``authenticity:<detector>``): observations match receipts, every completion claim traces
  to a successful action, no failed receipt presented as success, call ids paired. These reuse the rules
  judge's detectors (``judge.rules.fired_detectors``) so each idea lives in one place; a detector that finds
  anything fails its check. On a trajectory object the rules judge has just read, its findings are reused.
- **format** (``format:<name>``): roles and order valid, tool arguments parse, nothing the training export
  would reject; all of them facts of one walk of the messages (``MessageWalk``, ``FORMAT_CHECKS``).
- **outcome** (``outcome:failed``, ``outcome:unreadable``): the log itself records that the task failed, or
  records a result that cannot be read (a NaN reward). Both read ``metadata.task_outcome`` (``judge.outcome``),
  which each importer fills from what its format records: a reward, inspect_ai scores, a Who&When or MAST
  failure annotation, a SWE-agent exit without submission, an OpenHands resolver ``success``. The judge scores
  the process, not the result, so a structurally clean run that failed its task can score 5; it is still not
  released as an example to imitate. A partial result and an unknown one (nothing recorded) pass.

:func:`release_checks` returns the names of the failed checks; an empty list means the gate passes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from judge.model import Trajectory
from judge.outcome import TaskOutcome, from_fields
from judge.rules import DetectorNames, fired_detectors

# Detectors of judge.rules that are authenticity checks (registered with the role "authenticity"), in the order
# they run: every completion claim traces to a successful action (unverified-completion: a verification claim to a
# check that ran and passed, never a read of a status file; no failure told as success; no success claimed over a
# write of unknown effect), a plan item marked done is backed by a successful receipt (unchecked-tick), a
# verification claim rests on a check of the current version of what it covers (stale-evidence), no result is
# stated before its receipt exists (premature-claim), no reference to a failure that never happened
# (phantom-failure-reference), every call has its receipt, every receipt its call, no id used twice
# (unpaired-call-id).
AUTHENTICITY_DETECTORS = DetectorNames("authenticity")


@dataclass(frozen=True, slots=True)
class MessageWalk:
    """The format facts of a trajectory, found in one walk over its messages (each message's fields are loaded
    once, not once per check: on a long trajectory the walks cost more than the tests). Each field is one check
    of :data:`FORMAT_CHECKS`: True when it passes."""

    query: bool  # the original query is not empty (training rows are keyed and grouped by it)
    has_assistant_turn: bool  # at least one assistant turn: an empty rollout has nothing to train on
    # The conversation opens with the task and tool results answer the agent. Before T1 there is a user message
    # or a query (the export inserts the query as the user message when the source has none); every tool message
    # follows an assistant message or another tool message (formats that run actions written in text pair results
    # by position, so a call id is not required here; pairing by id is the authenticity check unpaired-call-id).
    role_order: bool
    tool_arguments: bool  # every tool call has a name and arguments that parsed as JSON
    nonempty_assistant: bool  # every assistant message says, reasons or calls something (else no training target)
    # The agent's part ends with an assistant answer, not with a call whose result it never read. Trailing user or
    # system messages are allowed: a simulated user's closing line (tau-bench's ###STOP###) is not the agent's to
    # answer, and the export trains only assistant turns.
    final_message: bool


def walk_messages(trajectory: Trajectory) -> MessageWalk:
    """The format facts of ``trajectory`` (see :class:`MessageWalk`)."""
    query = _has_text(trajectory.query)
    seen_user = query
    previous_role = None  # of the message before (None before the first)
    last_agent = None  # the last assistant or tool message
    role_order = tool_arguments = nonempty_assistant = True
    has_assistant = False
    for message in trajectory.messages:
        role = message.role
        calls = message.tool_calls
        for call in calls:
            if not call.name or call.arguments_error is not None:
                tool_arguments = False
        if role == "user":
            seen_user = True
        elif role == "assistant":
            has_assistant = True
            last_agent = message
            if not seen_user:
                role_order = False
            if not calls and not (_has_text(message.content) or _has_text(message.reasoning)):
                nonempty_assistant = False
        elif role == "tool":
            last_agent = message
            if previous_role not in ("assistant", "tool"):
                role_order = False
        previous_role = role
    final = last_agent is not None and last_agent.role == "assistant" and not last_agent.tool_calls
    return MessageWalk(query, has_assistant, role_order, tool_arguments, nonempty_assistant, final)


def _has_text(text: str | None) -> bool:
    """Whether ``text`` holds more than whitespace (``bool(text.strip())``, without copying the text)."""
    return text is not None and text != "" and not text.isspace()


# Check name -> the MessageWalk field that says it passes, in the order failures are listed.
FORMAT_CHECKS: dict[str, str] = {
    "format:query": "query",
    "format:has-assistant-turn": "has_assistant_turn",
    "format:role-order": "role_order",
    "format:tool-arguments": "tool_arguments",
    "format:empty-assistant-message": "nonempty_assistant",
    "format:final-message": "final_message",
}


def recorded_outcome(trajectory: Trajectory) -> TaskOutcome:
    """The task outcome the log records (``metadata.task_outcome``; read from reward/outcome if never set)."""
    meta = trajectory.metadata
    return meta.task_outcome or from_fields(meta.reward, meta.outcome)


def check_recorded_outcome(trajectory: Trajectory) -> bool:
    """The log does not record a failed task (success, partial credit and no recorded outcome pass)."""
    return recorded_outcome(trajectory).status != "failure"


def check_outcome_readable(trajectory: Trajectory) -> bool:
    """The log does not record a result that cannot be read (a NaN or non-numeric reward holds the trajectory)."""
    return not recorded_outcome(trajectory).unreadable


OUTCOME_CHECKS: dict[str, Callable[[Trajectory], bool]] = {
    "outcome:failed": check_recorded_outcome,
    "outcome:unreadable": check_outcome_readable,
}


def outcome_checks(trajectory: Trajectory) -> list[str]:
    """Names of the failed outcome checks, in :data:`OUTCOME_CHECKS` order."""
    return [name for name, check in OUTCOME_CHECKS.items() if not check(trajectory)]


def format_checks(trajectory: Trajectory) -> list[str]:
    """Names of the failed format checks, in :data:`FORMAT_CHECKS` order."""
    walk = walk_messages(trajectory)
    return [name for name, passes in FORMAT_CHECKS.items() if not getattr(walk, passes)]


def authenticity_checks(trajectory: Trajectory) -> list[str]:
    """Names of the failed authenticity checks: ``authenticity:<detector>`` for each rules detector that fired.

    The detectors run with the rules judge's bundled config.
    """
    names = AUTHENTICITY_DETECTORS[:]  # one read of the registry (list() reads it for the length, then again)
    fired = fired_detectors(trajectory, names)
    return [f"authenticity:{name}" for name in names if name in fired]


def release_checks(trajectory: Trajectory) -> list[str]:
    """All failed gate checks of ``trajectory`` (format, outcome, then authenticity); [] when it may be released."""
    return format_checks(trajectory) + outcome_checks(trajectory) + authenticity_checks(trajectory)
