"""What a tool call did to the world: read-only or not, failed or not, rejected before it ran or not.

The offline editor may only delete a call that changed nothing. Two kinds qualify (reference design,
"Offline"): calls that cannot change state (reads, listings, ``--help``, GET-like CLI subcommands) and failed
calls whose receipt shows they were rejected before doing anything (unknown flag, validation error, usage
text). Everything else is treated as a write whose outcome must be known from a receipt.
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass

from judge.facts import Status, ledger_of, shell
from judge.facts.answers import first_output as _first_output
from judge.facts.answers import programs as _programs
from judge.facts.answers import refused_read as _refused_read
from judge.facts.config import default_config
from judge.facts.matching import PhraseMatcher
from judge.facts.values import names_in, stated_numbers
from judge.model import Message, Receipt, ToolCall, Trajectory

# Tools whose name alone says they read (Claude Code, SWE-agent, OpenHands, MCP-style names).
_READ_TOOL_NAMES = {
    "read", "read_file", "readfile", "view", "view_file", "open", "open_file", "cat", "ls", "list", "list_dir",
    "list_directory", "list_files", "glob", "grep", "search", "search_file", "search_dir", "find", "find_file",
    "webfetch", "web_fetch", "websearch", "web_search", "fetch", "think", "notebookread",
}
_READ_NAME_PREFIXES = ("get_", "list_", "read_", "search_", "find_", "view_", "describe_", "show_", "fetch_", "lookup_")
SHELL_TOOL_NAMES = {"bash", "shell", "sh", "terminal", "run", "run_command", "execute_bash", "execute", "exec", "cmd", "command"}
# Planning tools change the harness's plan state (Spec -> TodoList): never deleted offline.
_PLAN_TOOL_RE = re.compile(r"todo|plan", re.IGNORECASE)

# The receipt shapes that say a program refused to start the work are data: the rules config's
# ``tools.stopped_receipts`` (program -> patterns, "*" for any program).
ANY_PROGRAM = "*"
# A harness's header before the program's output (Claude Code's "Exit code 1"): not output of the program.
_HARNESS_HEADER = re.compile(r"(?:exit code|exit status|exited with code)\s*[:=]?\s*-?\d+", re.IGNORECASE)


def first_output(receipt: Receipt) -> str:
    """What a receipt shows first (:func:`judge.facts.answers.first_output`): its first non-empty line after a
    harness header, or the whole JSON document the program answered with."""
    return _first_output(receipt.content or "")


@dataclass(frozen=True)
class CallSite:
    """One call with its receipt and where both sit in the message list."""

    call: ToolCall
    turn: int
    message_index: int
    receipt: Receipt | None
    receipt_index: int | None
    status: Status = "unknown"  # the fact ledger's status of the call (read from exit code and content)
    refusal: str = ""  # the ledger's reading of a refusal or error answer behind a success flag (Action.refusal)

    @property
    def failed(self) -> bool:
        """The receipt reports failure: by its flags, or by its content (the ledger's ``failed`` / ``partial``:
        "Error: ..." in a tool result that carries no flag)."""
        return receipt_failed(self.receipt) or (self.receipt is not None and self.status in ("failed", "partial"))


def refused_read(call: ToolCall, receipt: Receipt | None) -> bool:
    """A read its program refused although the receipt carries no error flag (curl's ``HTTP/1.1 404`` exits 0): the
    call only reads or checks and the receipt has a refused-read shape of its program
    (:func:`judge.facts.answers.refused_read`, the reader the ledger uses)."""
    command = shell_command(call)
    if receipt is None or command is None or receipt_failed(receipt):
        return False
    patterns = default_config().patterns
    return (_refused_read(command, receipt.content or "", patterns.refused_reads) is not None
            and _only_checks(command))


def receipt_failed(receipt: Receipt | None) -> bool:
    """A receipt reports failure by its error flag or a non-zero exit code."""
    if receipt is None:
        return False
    return bool(receipt.is_error) or (receipt.exit_code is not None and receipt.exit_code != 0)


def call_sites(trajectory: Trajectory) -> list[CallSite]:
    """Every tool call in message order, paired with its receipt: the fact ledger's actions (by call id, else,
    in formats that pair by position, the first unanswered call of the receipt's turn). Read from the ledger
    built once per trajectory object, as are the (frozen) sites; each call returns a new list."""
    analysis = ledger_of(trajectory).analysis
    sites: tuple[CallSite, ...] | None = analysis.cache.get("repair:call-sites")
    if sites is None:
        sites = analysis.cache["repair:call-sites"] = tuple(
            CallSite(a.call, a.turn, a.message_index, a.receipt, a.receipt_index, a.status, a.refusal)
            for a in analysis.actions if a.call is not None)
    return list(sites)


def shell_command(call: ToolCall) -> str | None:
    """The command line of a shell-like call, when it has one."""
    args = call.arguments
    if isinstance(args, str):
        return args if call.name.lower() in SHELL_TOOL_NAMES else None
    if isinstance(args, dict):
        for key in ("command", "cmd", "script", "code", "input"):
            value = args.get(key)
            if isinstance(value, str) and (call.name.lower() in SHELL_TOOL_NAMES or key in ("command", "cmd")):
                return value
        if isinstance(args.get("argv"), list):
            return " ".join(str(a) for a in args["argv"])
    return None


def is_plan_call(call: ToolCall) -> bool:
    """A planning-tool call (TodoWrite and the like): it changes plan state the harness tracks."""
    return bool(_PLAN_TOOL_RE.search(call.name))


def is_read_only(call: ToolCall) -> tuple[bool, str]:
    """Whether the call cannot change state, with the reason."""
    name = call.name.lower()
    if is_plan_call(call):
        return False, f"{call.name} updates the plan state"
    args = call.arguments if isinstance(call.arguments, dict) else {}
    # Editor tools with a sub-command (str_replace_based_edit_tool view / create / str_replace).
    sub = args.get("command") if isinstance(args.get("command"), str) else None
    if sub in {"view", "read", "list", "search"}:
        return True, f"{call.name} {sub} only reads"
    if name in _READ_TOOL_NAMES or name.startswith(_READ_NAME_PREFIXES):
        return True, f"tool {call.name} only reads"
    command = shell_command(call)
    if command is not None:
        return command_is_read_only(command)
    return False, f"tool {call.name} may change state"


def command_is_read_only(command: str) -> tuple[bool, str]:
    """Whether every part of a shell command line only reads: :func:`judge.facts.shell.command_is_read_only` with
    the bundled rules config's ``read_only_commands`` and ``read_only_verbs`` (the vocabulary the fact ledger
    reads), so the editor and the ledger give one answer; write markers outside quotes always win."""
    patterns = default_config().patterns
    return shell.command_is_read_only(command, _listed_read_only, patterns.read_only_verbs, patterns.write_verbs)


def _listed_read_only(segment: str) -> bool:
    return default_config().patterns.listed_read_only(segment)


def rejected_before_running(receipt: Receipt | None) -> bool:
    """A failed receipt whose text shows, anywhere, a shape of a call refused before it ran (the rules config's
    ``stopped_receipts`` for any program: usage text, unknown flag, validation error). Tells an argument error from
    a code error; whether a deletion is safe asks :func:`stopped_before_effect`, which is stricter."""
    if receipt is None or not receipt_failed(receipt):
        return False
    text = receipt.content or ""
    return _says_rejected(text) if len(text) <= 4096 else _stopped_matcher(ANY_PROGRAM).search(text) is not None


@functools.lru_cache(maxsize=1024)
def _says_rejected(text: str) -> bool:
    # Memoised (short texts only: the cache holds them): one routing asks it of the same receipts several times,
    # and logs repeat their error texts.
    return _stopped_matcher(ANY_PROGRAM).search(text) is not None


@functools.lru_cache(maxsize=64)
def _stopped_matcher(program: str) -> PhraseMatcher:
    return PhraseMatcher(default_config().tools.stopped_receipts.get(program, []))


def stopped_before_effect(call: ToolCall, receipt: Receipt | None) -> str | None:
    """Why a failed call changed nothing because its program refused to start the work, or None.

    The receipt's first output (:func:`first_output`) must have a shape of the rules config's ``stopped_receipts`` (for any
    program, or for the program of a segment of the command: pip's "No matching distribution", git's "does not
    appear to be a git repository", pytest's "not found:"). Output before it means work ran first (a make recipe's
    commands, "Successfully installed"), whatever the last line says. In a command line with several segments, all
    but the refused one must only read (a chain may have run them), and no write marker may stand outside quotes."""
    if receipt is None or not (receipt_failed(receipt) or refused_read(call, receipt)):
        return None
    first = first_output(receipt)
    if not first:
        return None
    command = shell_command(call)
    programs = [ANY_PROGRAM]
    if command is not None:
        reading = shell.read_command(command)
        if reading.writer is not None:
            return None
        # One segment may be the refused program; every other one only reads (``cd app && pip install pandsa``):
        # a chain may have run them before or after the refusal.
        writers = [segment.text for segment in reading.segments if not _only_checks(segment.text)]
        if len(writers) > 1:
            return None
        programs += _programs(writers[0] if writers else command)[:1]
    if refused_read(call, receipt) or any(_stopped_matcher(program).search(first) is not None for program in programs):
        return f"the receipt shows the call was rejected before it ran ({first[:80]!r}), so nothing was changed"
    return None


def _only_checks(command: str) -> bool:
    """Every segment only reads: a read (:func:`command_is_read_only`) or a check the rules config lists as
    read-only (``read_only_checks``: ruff check without --fix, mypy, a curl GET)."""
    patterns = default_config().patterns
    return shell.command_is_read_only(
        command, lambda segment: bool(_listed_read_only(segment) or patterns.read_only_check.search(segment)),
        patterns.read_only_verbs, patterns.write_verbs)[0]


def missing_input(call: ToolCall, receipt: Receipt | None) -> str | None:
    """Why a failed shell call changed nothing because an input file it names was missing
    (:func:`missing_input_file`), or None."""
    file = missing_input_file(call, receipt)
    return None if file is None else f"the receipt shows its input {file} was missing, so it stopped before doing anything"


def missing_input_file(call: ToolCall, receipt: Receipt | None) -> str | None:
    """The input file whose absence stopped a failed shell call before it did anything, or None.

    The receipt must open with the operating system's "no such file or directory" (the rules config's
    ``missing_file`` list, in its locales) naming a file one segment of the command takes as an argument
    (``--json clienti.json``, ``@products.json``, ``--file=a.csv``): the program stopped before it did anything.
    Safety first: no traceback (the program's own code ran before the error), no redirect or other write marker in
    the command (the shell opens ``> out`` before the program starts), and every other segment only reads (a chain
    may have run them before or after the failure)."""
    command = shell_command(call)
    if command is None or receipt is None or not receipt_failed(receipt):
        return None
    lines = [line for line in (receipt.content or "").splitlines() if line.strip()]
    patterns = default_config().patterns
    if not lines or "Traceback (most recent call last)" in receipt.content or patterns.missing_file.search(lines[0]) is None:
        return None
    reading = shell.read_command(command)
    if reading.writer is not None:
        return None
    named = [(segment.text, file) for segment in reading.segments
             if (file := _input_named(shell.words_of(segment.text)[1:], lines[0])) is not None]
    if len(named) != 1:
        return None
    failing, file = named[0]
    others = " ; ".join(segment.text for segment in reading.segments if segment.text != failing)
    if others and not command_is_read_only(others)[0]:
        return None
    return file


# Flags whose value a program writes (`-o out.json`, `--report=r.xml`): a missing directory there is met after the
# work is done, so it proves nothing about the work.
_OUTPUT_FLAG = re.compile(r"-o|--(?:out|output|dest|destination|report|log|save|write|target)[\w-]*")


def _input_named(arguments: list[str], line: str) -> str | None:
    """The first argument that names an input file (``a.json``, ``@a.json``, ``--json=a.json``; not the value of an
    output flag) and that ``line`` names."""
    previous = ""
    for word in arguments:
        flag, value = (word.split("=", 1) if "=" in word else (word, "")) if word.startswith("-") else (previous, word)
        previous = word
        if not value or _OUTPUT_FLAG.fullmatch(flag):
            continue
        value = value.lstrip("@")
        if ("." in value or "/" in value) and value in line:
            return value
    return None


def effects_shown(trajectory: Trajectory, site: CallSite) -> str | None:
    """What the receipt shows the call changed although it failed ("created 2 of 5 rows", then an error), read
    from the fact ledger's status (``partial``), or None."""
    action = ledger_of(trajectory).action_for(site.call.id)
    if action is None or action.status != "partial":
        return None
    return f"the receipt shows the call had effects before it failed ({action.error_line or 'partial write'})"


def side_effect_free(site: CallSite, trajectory: Trajectory | None = None) -> tuple[bool, str]:
    """Whether deleting the call cannot hide a change of state (resource-state dependency, first half); with the
    trajectory, a receipt that shows effects (the ledger's ``partial``) also keeps the call."""
    if site.receipt is None:
        return False, "the call has no receipt: its outcome is unknown"
    if trajectory is not None and (effects := effects_shown(trajectory, site)) is not None:
        return False, effects
    if is_plan_call(site.call):
        return False, f"{site.call.name} updates the plan state"
    ok, why = is_read_only(site.call)
    if ok:
        return True, why
    command = shell_command(site.call)
    if command is not None and _only_checks(command):
        return True, "every part of the command only reads or checks"
    if (stopped := stopped_before_effect(site.call, site.receipt)) is not None:
        return True, stopped
    if (missing := missing_input(site.call, site.receipt)) is not None:
        return True, missing
    if trajectory is not None and (refused := refused_argument(trajectory, site)) is not None:
        return True, refused
    return False, f"{why}, and its receipt does not show that nothing was changed"


# A refusal is short; a receipt longer than this printed work as well.
_REFUSAL_LINES = 3
# A token followed by a position (``migrate.sql:12:``, ``deploy.sh: line 3``) names code that ran, not an argument
# the program refused.
_POSITION_AFTER = re.compile(r"\s*(?::\s*\d|[:,]?\s*line\s+\d)", re.IGNORECASE)
_TOKEN_EDGE = "\"'`()[]{}<>,;:=!?"


def _argument_tokens(command: str) -> set[str]:
    """The words a command line gives its programs (not the programs themselves; ``--flag=value`` gives both parts):
    what a refusal can name. Three characters or more. A word with spaces is code or text the program runs
    (``-c 'delete form orders'``, ``-c 'import x'``): an error naming a piece of it is the code's, not a refusal of
    an argument, so only the whole word counts."""
    tokens: set[str] = set()
    for segment in shell.read_command(command).segments:
        for word in shell.words_of(segment.text)[1:]:
            pieces = [word] if any(c.isspace() for c in word) else [word, *word.split("=", 1)]
            tokens |= {piece.strip(_TOKEN_EDGE) for piece in pieces}
    return {token for token in tokens if len(token) >= 3}


def _names_token(text: str, token: str) -> bool:
    """Whether ``text`` names ``token`` as a whole word (quotes and brackets delimit it), not followed by a position."""
    for match in re.finditer(re.escape(token), text):
        before = text[match.start() - 1] if match.start() else " "
        after = text[match.end()] if match.end() < len(text) else " "
        if (before.isspace() or before in _TOKEN_EDGE or before == "-" and token.startswith("-")) and (
                after.isspace() or after in _TOKEN_EDGE + ".") and not _POSITION_AFTER.match(text, match.end()):
            return True
    return False


def found_nothing(text: str, arguments: set[str]) -> bool:
    """Whether a read's answer is empty in any tool's language: at most ``_REFUSAL_LINES`` short lines, every
    number in it zero, and no value in it but the call's own arguments (``(integer) 0``, ``(nil)``, ``[]``, an
    empty output, ``sysName.1 = No Such Instance``)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > _REFUSAL_LINES or any(len(line) > 160 for line in lines):
        return False
    return all(n == 0 for n in stated_numbers(text)) and all(
        name in arguments or name.split(":", 1)[0] in arguments or any(name in a for a in arguments)
        for name in names_in(text))


_CORRECTION_RATIO = 0.6  # "tm:shop-ios:esp:keys" -> "tm:shop-ios:es:keys" (0.97), "4419023" -> "4410923" (0.71)


def _corrects(before: set[str], after: set[str]) -> bool:
    """Whether ``after`` corrects ``before``: as many arguments, each one changed into a near copy of itself (a typo
    or swapped digits fixed), not a different question (``-n billing`` widened to ``-A``)."""
    gone, new = sorted(before - after), sorted(after - before)
    if not gone or len(gone) != len(new):
        return False
    return all(max(difflib.SequenceMatcher(None, g, n).ratio() for n in new) >= _CORRECTION_RATIO for g in gone)


def corrected_empty_read(trajectory: Trajectory, site: CallSite) -> str | None:
    """Why a read-only shell call that found nothing is a failed lookup, or None: a later run of the same programs
    (through the same wrappers: ``docker exec c redis-cli``, ``ssh host``) with corrected arguments (:func:`_corrects`)
    answered with something (a nonzero number, a value it did not give). The lookup asked for the wrong thing (a typo'd key, a
    swapped job id); the corrected run is the work, whatever words either answer uses."""
    command = shell_command(site.call)
    if command is None or site.receipt is None or not is_read_only(site.call)[0]:
        return None
    arguments = _argument_tokens(command)
    if not found_nothing(site.receipt.content or "", arguments):
        return None
    programs = _programs(command)
    for later in ledger_of(trajectory).actions:
        later_command = shell_command(later.call) if later.call is not None else None
        if (later_command is None or later.message_index <= site.message_index or later.status != "ok"
                or later.receipt is None or _programs(later_command) != programs):
            continue
        later_arguments = _argument_tokens(later_command)
        answer = (later.receipt.content or "").strip()
        # It got an answer: some output, not the same empty one, no zero count (``"on"`` after ``(nil)`` counts).
        answered = bool(answer) and answer != (site.receipt.content or "").strip() and not (
            stated_numbers(answer) and all(n == 0 for n in stated_numbers(answer)))
        if _corrects(arguments, later_arguments) and answered:
            return f"the read found nothing, and T{later.turn} ran it again with corrected arguments and got an answer"
    return None


def refused_argument(trajectory: Trajectory, site: CallSite, *, failed_only: bool = True) -> str | None:
    """Why a failed shell call changed nothing because its program refused one of its arguments, or None.

    Read from the receipt and the later calls, not from any tool's wording: a short receipt (no more than
    ``_REFUSAL_LINES`` lines, no traceback: the program's own code never ran) whose first line names an argument of
    the call (a typo'd flag ``--al``, a subcommand ``outdate``, a builder ``htm``, a file ``missing.pem``, a user
    ``bakup``), and a later call of the same program that no longer has that argument and succeeded: the program
    checked its arguments before the work, and the correction is the work. Never with a redirect or other write
    marker in the command, nor when another segment may write. ``failed_only=False`` reads a receipt that carries no
    failure flag the same way (``No resources found in shopp namespace.``, exit 0): a call that failed by its
    content."""
    command = shell_command(site.call)
    receipt = site.receipt
    if command is None or receipt is None or (failed_only and not site.failed):
        return None
    text = receipt.content or ""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines and _HARNESS_HEADER.fullmatch(lines[0]):
        lines = lines[1:]
    if not lines or len(lines) > _REFUSAL_LINES or "Traceback (most recent call last)" in text:
        return None
    reading = shell.read_command(command)
    writers = [segment.text for segment in reading.segments if not _only_checks(segment.text)]
    if reading.writer is not None or len(writers) > 1:
        return None
    # The refusal must name an argument of the segment that may write: a refused read beside it (``count && notify``)
    # says nothing of whether that segment ran.
    refused = writers[0] if writers else command
    programs = _programs(refused)
    arguments = _argument_tokens(refused)
    retries = [(later.turn, _argument_tokens(later_command)) for later in ledger_of(trajectory).actions
               if later.call is not None and later.message_index > site.message_index
               and later.status in ("ok", "running", "noop")  # the program took its arguments and answered
               and later.name == site.call.name and (later_command := shell_command(later.call)) is not None
               and set(_programs(later_command)[:1]) & set(programs)]
    if any(not names_in(line) <= arguments for line in lines):
        return None  # the receipt shows a value the call did not give (``{"view_id": "vewPip01"}``): work was done
    for line in lines:
        named = sorted(t for t in arguments if t.lower() not in programs and _names_token(line, t))
        for turn, kept in retries:
            gone = [t for t in named if t not in kept]
            if gone:
                return (f"the receipt shows its program refused the argument {gone[0]!r} before doing anything "
                        f"({line[:80]!r}), and T{turn} ran it again without it")
        # A count before the refusal is output of work that ran first; a bare "Sphinx error:" header, or a line
        # naming kept arguments, is not.
        if stated_numbers(line):
            return None
    return None


def message_text(message: Message) -> str:
    """Content and reasoning of a message, the text later references could sit in."""
    return "\n".join(t for t in (message.reasoning, message.content) if t)

