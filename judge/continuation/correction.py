"""Runtime correction of a continuation arm: a code/argument error -> teacher guidance -> rewind -> choose again.

With ``judge continue --teacher SPEC --correct code,argument`` every tool call's receipt is read as the rules judge
reads it (:func:`error_kind`: the ``failed-call`` detector's reading, with
:func:`~judge.repair.calls.rejected_before_running` telling an argument error from a code error). On such an error:

1. the teacher writes guidance about the failed call (:class:`TemplateTeacher` offline, or a model on the run's one
   call path, :class:`ModelTeacher`: recorded in the run's store, counted in the run's spend and the arm's cost);
2. the arm rewinds to before the turn that made the call: the working copy, the shell's directory and the plan
   state are restored from the :class:`Snapshot` taken before the turn's first state-changing call, and the
   turn's messages are dropped from the conversation (a write the failed branch made does not leak);
3. the guidance is added as a user message and the model chooses again.

At most ``max_corrections`` rewinds per arm; after that an error stays in the conversation as it is. Every failed
branch is kept in the arm's audit record (:attr:`Corrector.records`: the arm log's ``corrections``), and its
tokens stay in the arm's usage; the retained trajectory has only the kept turns (and the guidance).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from judge.model import Message, Receipt, ToolCall, Trajectory, TrajectoryMetadata, Usage
from judge.pricing import add_costs
from judge.repair.calls import is_read_only, rejected_before_running
from judge.schema import ScoredIssue

ErrorKind = Literal["code", "argument"]
KINDS: tuple[ErrorKind, ...] = ("code", "argument")
DEFAULT_MAX_CORRECTIONS = 2
TEMPLATE = "template"  # the teacher spec of template guidance (no model)
_SNAPSHOT = "snapshot"  # in the arm directory, beside the copy: the agent's files never see it
_COMPLETE = ".complete"


def parse_kinds(text: str) -> frozenset[ErrorKind]:
    """``--correct code,argument`` as a set of kinds; an unknown word is an error naming the allowed ones."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    unknown = [w for w in words if w not in KINDS]
    if unknown or not words:
        raise ValueError(f"unknown kind(s) {', '.join(unknown) or '(none)'}; write a comma list of {', '.join(KINDS)}")
    return frozenset(w for w in KINDS if w in words)


def error_kind(call: ToolCall, receipt: Receipt | None) -> tuple[ErrorKind, str] | None:
    """The kind of agent error the receipt shows, with the line that shows it; None when the call did not fail by
    the agent's doing (it succeeded, the environment failed it, or a check ran and reported failures).

    The rules judge's reading decides (the same that makes a ``failed-call`` issue, category ``code``); an error
    whose receipt shows the call was refused before it ran is an ``argument`` error.
    """
    if receipt is None:
        return None
    from judge.rules import analyse, default_config

    probe = Trajectory(id="correction-probe", query="", query_id="correction-probe",
                       messages=[Message(role="assistant", content="", tool_calls=[call], turn=1),
                                 Message(role="tool", content=receipt.content,
                                         receipt=receipt.model_copy(update={"call_id": call.id}), turn=1)],
                       metadata=TrajectoryMetadata(source_format="trajudge-correction"))
    actions = analyse(probe, default_config()).actions
    action = actions[0] if actions else None
    if action is None or action.outcome != "error" or action.reported:
        return None
    line = action.error_line or (receipt.content.splitlines() or [""])[0]
    return ("argument" if rejected_before_running(receipt) else "code"), line


# --- teachers ----------------------------------------------------------------------------------------


@dataclass
class Guidance:
    """What the teacher said about one failed call, where it came from and what it cost."""

    text: str
    source: str
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None


class Teacher(Protocol):
    """Writes guidance about a failed call in an arm's conversation."""

    spec: str

    async def guidance(self, trajectory: Trajectory, issue: ScoredIssue, evidence: list[str]) -> Guidance:
        """Guidance for ``issue`` at its turn of ``trajectory`` (the conversation up to the failed call's receipt)."""
        ...


@dataclass
class TemplateTeacher:
    """Guidance written from the failed call's own receipt (``judge repair``'s template): no model, no cost."""

    spec: str = TEMPLATE

    async def guidance(self, trajectory: Trajectory, issue: ScoredIssue, evidence: list[str]) -> Guidance:
        from judge.repair.tickets import template_guidance

        return Guidance(template_guidance(trajectory, issue, evidence) or issue.description, TEMPLATE)


@dataclass
class ModelTeacher:
    """A teacher model (``judge repair --teacher``'s prompt), on the run's call path when bound to its calls;
    a failed answer falls back to the template, and what the attempts cost is still counted."""

    caller: Any  # judge.repair.prompting.ModelCaller
    spec: str

    async def guidance(self, trajectory: Trajectory, issue: ScoredIssue, evidence: list[str]) -> Guidance:
        from judge.repair.tickets import TEACHER_PROMPT, teacher_guidance

        result = await teacher_guidance(self.caller, trajectory, issue, evidence, issue.turn or 0)
        if result.parsed is not None:
            return Guidance(result.parsed["guidance"].strip(), f"teacher:{self.spec} ({TEACHER_PROMPT})",
                            result.usage, result.cost_usd)
        fallback = await TemplateTeacher().guidance(trajectory, issue, evidence)
        return Guidance(fallback.text, f"template (teacher failed: {result.error})", result.usage, result.cost_usd)


def make_teacher(spec: str, calls: Any = None, *, base_url: str | None = None, timeout_s: float | None = None) -> Teacher:
    """``template``, or a provider spec whose calls take ``calls`` (the run's :class:`~judge.runcalls.RunCalls`)."""
    if spec == TEMPLATE:
        return TemplateTeacher()
    from judge.providers import redact
    from judge.repair.prompting import ModelCaller, make_provider_from_spec

    shown = redact(spec) or spec
    caller = ModelCaller(make_provider_from_spec(spec, base_url, timeout_s), calls=calls, label=f"teacher:{shown}")
    return ModelTeacher(caller, shown)


@dataclass
class Correction:
    """Runtime correction settings of a run: the teacher, the kinds of error corrected, the rewinds per arm."""

    teacher: Teacher
    kinds: frozenset[ErrorKind] = frozenset(KINDS)
    max_corrections: int = DEFAULT_MAX_CORRECTIONS


# --- the working copy before a turn ------------------------------------------------------------------


@dataclass
class Snapshot:
    """The working copy, the shell's directory and the plan before a turn's first state-changing call.

    Kept in the arm directory under the seq of the call it precedes, so a resumed run (its arm directory is the
    one a kill left) finds the snapshot the killed run took before the same call.
    """

    path: Path
    cwd: Path
    plan: Any

    @classmethod
    def take(cls, sandbox: Any, seq: int) -> Snapshot:
        path = Path(sandbox.arm_dir) / _SNAPSHOT / str(seq)
        if not (path / _COMPLETE).exists():  # else: taken before this very call by a run a kill stopped
            shutil.rmtree(path, ignore_errors=True)
            shutil.copytree(sandbox.root, path / "work", symlinks=True)
            (path / _COMPLETE).touch()
        return cls(path, sandbox.cwd, sandbox.plan)

    def restore(self, sandbox: Any) -> None:
        """Put the copy back as it was (in place: the copy's directory itself stays)."""
        root = Path(sandbox.root)
        for entry in list(root.iterdir()):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        shutil.copytree(self.path / "work", root, symlinks=True, dirs_exist_ok=True)
        sandbox.cwd = self.cwd if self.cwd.is_dir() else root
        sandbox.plan = self.plan

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def outside_effect(call: ToolCall, event: Any) -> bool:
    """Whether a call may have changed state outside the working copy, which no rewind can undo: a state-changing
    call served by a mapping's local command (a mapped tool's ``run``, or a Bash call using a mapped program)."""
    if is_read_only(call)[0]:
        return False
    if event.disposition == "mapped":
        return "canned receipt" not in event.detail
    return bool(event.disposition == "executed" and event.detail.startswith("mapped programs:"))


# --- one arm -----------------------------------------------------------------------------------------


@dataclass
class Corrector:
    """The correction state of one arm: the rewinds used, the snapshot of the current turn, the audit records."""

    correction: Correction
    records: list[dict[str, Any]] = field(default_factory=list)
    snapshot: Snapshot | None = None
    cwd: Path | None = None
    plan: Any = None
    usage: Usage = field(default_factory=Usage)  # the teacher's, over this arm's corrections
    cost_usd: float | None = None

    @property
    def left(self) -> int:
        return self.correction.max_corrections - sum(1 for r in self.records if r["rewound"])

    def begin_turn(self, sandbox: Any, seq: int) -> None:
        """A new assistant turn, whose first call is ``seq``: the snapshots of earlier turns go (those turns were
        kept); one of this turn's, left by a run a kill stopped, stays for :meth:`before_call` to find."""
        folder = Path(sandbox.arm_dir) / _SNAPSHOT
        for old in folder.iterdir() if folder.is_dir() else ():
            if not old.name.isdigit() or int(old.name) < seq:
                shutil.rmtree(old, ignore_errors=True)
        self.snapshot = None
        self.cwd, self.plan = sandbox.cwd, sandbox.plan

    def before_call(self, sandbox: Any, call: ToolCall, seq: int) -> None:
        """Snapshot the copy before the turn's first call that may change it (while rewinds are left)."""
        if self.left > 0 and self.snapshot is None and not is_read_only(call)[0]:
            self.snapshot = Snapshot.take(sandbox, seq)

    def faulty(self, call: ToolCall, receipt: Receipt | None) -> tuple[ErrorKind, str] | None:
        """The error to correct at this call, if any (and a rewind is left)."""
        if self.left <= 0:
            return None
        found = error_kind(call, receipt)
        return found if found is not None and found[0] in self.correction.kinds else None

    async def guide(self, conversation: Trajectory, call: ToolCall, turn: int, kind: ErrorKind, line: str) -> Guidance:
        """The teacher's guidance about the failed call (the conversation ends with its receipt)."""
        issue = ScoredIssue(cluster="runtime-correction", turn=turn, category="code", severity="minor", tag="failed-call",
                            description=f"The {call.name} call failed ({kind} error).", votes=1)
        evidence = [f"T{turn} {call.name} -> {line[:300]}"]
        guidance = await self.correction.teacher.guidance(conversation, issue, evidence)
        self.usage = self.usage + guidance.usage
        self.cost_usd = add_costs(self.cost_usd, guidance.cost_usd)
        return guidance

    def rewind(self, sandbox: Any, *, restore_copy: bool = True) -> None:
        """Put the copy (when the turn changed it: its snapshot; not when a resumed run finds the rewind already
        made), the shell's directory and the plan back as they were before the turn."""
        if restore_copy and self.snapshot is not None:
            self.snapshot.restore(sandbox)
        if self.cwd is not None:
            sandbox.cwd = self.cwd if Path(self.cwd).is_dir() else sandbox.root
        sandbox.plan = self.plan
        if self.snapshot is not None:
            self.snapshot.discard()
        self.snapshot = None
