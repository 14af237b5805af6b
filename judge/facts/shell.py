"""One reading of a shell command line: its segments, the files it writes, and whether it only reads.

The fact ledger (``Action.read_only``, ``Action.writes``, the intent head) and the offline editor / continuation
harness (``judge.repair.calls.is_read_only``) both read commands through :func:`read_command`, so they cannot
disagree about what a command did. Operators, redirects and program names count only outside quotes (a jq
filter's ``|`` or ``>`` is an argument); a command substitution (``$(...)``, backticks) runs even inside double
quotes, so a command holding one is read on its raw text, which can only find more writes, never fewer.

Vocabulary (see docs/architecture.md, "Shell commands"): the write markers here are the safety net and always win
(a command that may write is never read-only, whatever a YAML list says); a segment only reads when the built-in
program list says so, when a CLI's subcommand words name one of the rules config's ``read_only_verbs`` (``list``,
``get``, ``count``: data, not code), *or* a ``read_only_commands`` pattern of the rules config matches the segment
(users extend the read-only vocabulary as data). A command only reads when every segment does; it is a check or
shows file content by its segments (:func:`segment_hits`).
"""

from __future__ import annotations

import functools
import itertools
import re
import shlex
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

# Operators that separate commands: chain operators (the last part decides the outcome), pipes, and a single `&`
# (background), which is not part of `&&`, `>&`, `&>` or `|&`.
_OPERATOR = re.compile(r"&&|\|\||\|&?|;|\n|(?<![>&|])&(?![>&])")
CHAIN_OPERATORS = frozenset({"&&", "||", ";", "\n", "&"})

# Commands and flags that change state whatever the program around them (the editor's safety net).
_WRITE_WORDS = re.compile(
    r"\btee\b|\bsed\s+(?:-\w+\s+)*-i|\bsed\s+--in-place|\brm\b|\brmdir\b|\bmv\b|\bcp\b|\bmkdir\b|\btouch\b|\bchmod\b"
    r"|\bchown\b|\|\s*(?:ba|z)?sh\b|-delete\b|-exec(?:dir)?\b|-fprint")
# An output redirect (`>`, `>>`, `2>`, `&>`, `>|`), not `>&2` (a descriptor copy) nor `<>`/`->` text.
_REDIRECT = re.compile(r"(?<![<>\-=])(?:&>>?|\d?>>?\|?)(?!&)\s*")
_TARGET = re.compile(r"""(?:"[^"]*"|'[^']*'|[^\s;&|<>()]+)""")
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr"}

_READ_PROGRAMS = {
    "ls", "cat", "head", "tail", "grep", "egrep", "rg", "wc", "pwd", "which", "whereis", "file", "stat", "tree",
    "less", "more", "du", "df", "env", "printenv", "whoami", "date", "echo", "type", "diff", "cmp", "jq", "sort",
    "uniq", "cut", "nl", "realpath", "dirname", "basename", "id", "uname", "ps", "true", "test", "[",
}
_GIT_LISTING = {"-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "--show-current", "show", "get-url"}
_GIT_READ = {"status", "log", "diff", "show", "branch", "remote", "rev-parse", "ls-files", "blame", "describe"}
# Commands that end a line without a status of their own worth reading: after ``||`` or ``;`` they make the line
# exit 0; at the end of a pipe they set its status (the checker's is lost).
_SWALLOWERS = {"true", ":", "echo", "printf"}
_FILTERS = {"tail", "head", "grep", "egrep", "tee", "less", "more", "cat", "sed", "awk", "cut", "sort", "uniq", "wc", "tr",
            "column", "jq"}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")

ReadOnlyPattern = Callable[[str], bool]


# Flags that tell a checker to exit 0 whatever it found (ruff/pylint --exit-zero, trivy --exit-code 0, sqlfluff
# --nofail, vale --no-exit, tfsec/checkov --soft-fail).
_EXIT_ZERO_FLAGS = re.compile(r"(?<![\w-])(?:--exit-zero|--exit-code[= ]0\b|--nofail|--no-exit|--soft-fail)(?![\w-])")


@dataclass(frozen=True)
class Segment:
    """One simple command of a command line, with the operator that preceded it ("" for the first)."""

    text: str
    after: str = ""


@dataclass(frozen=True)
class CommandReading:
    """What a command line is, read once: its segments, the files it writes, and why it may write (None: no write
    marker outside quotes)."""

    command: str
    segments: tuple[Segment, ...]
    writes: tuple[str, ...]
    writer: str | None
    substitution: bool

    @property
    def masks_exit(self) -> bool:
        """Whether the line's exit status says nothing about its checks: the failure is swallowed (``|| true``,
        ``|| echo ...``, ``; true`` at the end), the last command is a filter the output is piped into
        (``pytest | tail -3``: the pipeline exits with tail's status), or the checker is told to exit 0
        (``--exit-zero``)."""
        if not self.segments:
            return False
        if _EXIT_ZERO_FLAGS.search(self.command):
            return True
        last = self.segments[-1]
        head = words_of(last.text)[:1]
        program = head[0].rsplit("/", 1)[-1] if head else ""
        if last.after in ("||", ";") and (program in _SWALLOWERS or last.text.startswith("exit 0")):
            return True
        return last.after == "|" and program in _FILTERS and "pipefail" not in self.command

    @property
    def last_chained(self) -> str:
        """The last command of a chain (``a && b | c`` -> ``b | c``): the one whose outcome is the chain's."""
        start = max((k for k, s in enumerate(self.segments) if s.after in CHAIN_OPERATORS), default=0)
        return " | ".join(s.text for s in self.segments[start:])

    @property
    def status_segments(self) -> tuple[Segment, ...]:
        """The segments whose exit status the line returns: the last segment of its last pipeline, or, under
        ``pipefail``, every segment of that pipeline (any of them may have set it). An earlier part of an ``&&``
        chain may have stopped the line too; its error text says so (see the ledger's exit-code answers)."""
        if not self.segments:
            return ()
        start = max((k for k, s in enumerate(self.segments) if s.after in CHAIN_OPERATORS), default=0)
        pipeline = self.segments[start:]
        return pipeline if "pipefail" in self.command else pipeline[-1:]


def exit_answer(command: str, code: int, answers: Mapping[tuple[str, ...], Mapping[int, str]]) -> str | None:
    """What exit ``code`` of ``command`` answers when it is an answer, not a failure ("no match" for grep's 1,
    "differ" for diff's 1), or None. ``answers`` maps command words (program first, then words the segment must
    hold: ``("git", "diff", "--quiet")``) to code -> meaning, the rules config's ``exit_answers``; every segment
    the status may come from (:attr:`CommandReading.status_segments`) must give the code the same meaning."""
    meanings: set[str] = set()
    for segment in read_command(command).status_segments:
        words = words_of(segment.text)
        program = words[0].rsplit("/", 1)[-1] if words else ""
        meaning = next((codes[code] for key, codes in answers.items()
                        if key[0] == program and code in codes and all(w in words[1:] for w in key[1:])), None)
        if meaning is None:
            return None
        meanings.add(meaning)
    return meanings.pop() if len(meanings) == 1 else None


def masked_quotes(command: str) -> str:
    """``command`` with what its quotes (and backslashes) protect blanked out, same length: operators, redirects and
    program names found in it are the shell's, not text inside an argument (a jq filter's ``|``, a grep pattern)."""
    out: list[str] = []
    quote: str | None = None
    escaped = False
    for char in command:
        if escaped:
            out.append("_")
            escaped = False
        elif char == "\\" and quote != "'":
            out.append("_")
            escaped = True
        elif quote is not None:
            if char == quote:
                quote = None
                out.append(char)
            else:
                out.append("_")
        elif char in "'\"":
            quote = char
            out.append(char)
        else:
            out.append(char)
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def read_command(command: str) -> CommandReading:
    """Read ``command`` once (memoised: commands repeat across calls and readers)."""
    substitution = "$(" in command or "`" in command
    # With a command substitution nothing is taken for a mere argument: the raw text is read.
    masked = command if substitution else masked_quotes(command)
    segments: list[Segment] = []
    start, after = 0, ""
    for match in _OPERATOR.finditer(masked):
        if command[start:match.start()].strip():
            segments.append(Segment(command[start:match.start()].strip(), after))
        start, after = match.end(), match.group()
    if command[start:].strip():
        segments.append(Segment(command[start:].strip(), after))
    writes = _files_written(command, masked, segments)
    writer = None
    if writes:
        writer = f"the command writes {', '.join(writes)}"
    elif (marker := _WRITE_WORDS.search(masked)) is not None:
        writer = f"the command may write ({marker.group().strip()})"
    elif any(_target_at(command, m.end()) not in _HARMLESS_TARGETS for m in _REDIRECT.finditer(masked)):
        writer = "the command redirects output"
    return CommandReading(command, tuple(segments), writes, writer, substitution)


def _target_at(command: str, position: int) -> str:
    match = _TARGET.match(command, position)
    return match.group().strip("'\"") if match else ""


def _files_written(command: str, masked: str, segments: list[Segment]) -> tuple[str, ...]:
    """Files named by output redirects, ``tee`` and ``sed -i`` (device files and descriptors excluded)."""
    found = [_target_at(command, m.end()) for m in _REDIRECT.finditer(masked)]
    for segment in segments:
        words = words_of(segment.text)
        program = words[0].rsplit("/", 1)[-1] if words else ""
        args = [w for w in words[1:] if not w.startswith("-")]
        if program == "tee":
            found += args
        elif program == "sed" and any(w.startswith("-i") or w.startswith("--in-place") for w in words[1:]):
            found += _sed_files(words[1:])
    # A target named by a variable or substitution is a write to an unknown file: `writer` says so, no name here.
    return tuple(dict.fromkeys(f for f in found if f and f not in _HARMLESS_TARGETS and not f.startswith("&")
                               and "$" not in f and "`" not in f))


def _sed_files(words: list[str]) -> list[str]:
    """The files of ``sed -i``: its operands after the script (the first operand, unless -e / -f gave it)."""
    operands: list[str] = []
    scripted = False
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in ("-e", "-f", "--expression", "--file"):
            scripted = skip = True
        elif not word.startswith("-"):
            operands.append(word)
    return operands if scripted else operands[1:]


def words_of(segment: str) -> list[str]:
    """The words of one simple command as the shell splits them, leading ``VAR=value`` assignments dropped."""
    return list(_split_words(segment))  # a fresh list: callers may change it, the memo must not


@functools.lru_cache(maxsize=4096)
def _split_words(segment: str) -> tuple[str, ...]:
    # Memoised like read_command: shlex is slow and the same segments are split again by every reader.
    try:
        words = shlex.split(segment)
    except ValueError:
        words = segment.split()
    while words and _ASSIGNMENT.fullmatch(words[0]):
        words = words[1:]  # leading VAR=value assignments
    return tuple(words)


def _usage_only(words: Sequence[str]) -> bool:
    """Whether a command only prints its usage or version: ``--help`` anywhere, ``help`` as a subcommand word, ``-h``
    or ``--version`` as the last word. Elsewhere they are options of the command: ``--version 4.2.1`` of a push,
    ``-h HOST`` of a database client, ``--name help`` of a create."""
    if "--help" in words[1:] or words[-1] in ("-h", "--version"):
        return len(words) > 1
    return "help" in itertools.takewhile(lambda w: not w.startswith("-"), words[1:])


def segment_read_only(segment: str, verbs: Collection[str] = frozenset(),
                      writes: Collection[str] = frozenset()) -> tuple[bool, str]:
    """Whether one simple command (no operators) only reads, by the built-in program vocabulary and ``verbs``, the
    GET-like subcommand words of CLIs (the rules config's ``read_only_verbs``: ``lark-cli base record list``,
    ``gh pr view``, ``kubectl get``, ``lark-cli base +record-count``). ``writes`` (the rules config's
    ``write_verbs``) wins over ``verbs``: a part of a subcommand word or of a flag name that names a write
    (``+status-set``, ``list --delete``) makes the segment a write."""
    words = words_of(segment)
    if not words:
        return True, "assignment only"
    program = words[0].rsplit("/", 1)[-1]
    if program == "cd":
        return True, "cd"
    if _usage_only(words):
        return True, f"{program} --help only prints usage"
    if program in _READ_PROGRAMS:
        return True, f"{program} only reads"
    if program == "find":
        return True, "find without -delete/-exec only reads"
    if program == "curl":
        reads = _curl_reads(words[1:])
        return reads, f"curl {'only reads' if reads else 'may change state'}"
    if program == "git":
        at = next((k for k, w in enumerate(words) if k and not w.startswith("-")), len(words))
        sub, rest = (words[at], words[at + 1:]) if at < len(words) else ("", [])
        # `git branch` / `git remote` list, but with a name or an action flag they create, rename or delete.
        lists = sub not in ("branch", "remote") or all(w in _GIT_LISTING for w in rest)
        reads = sub in _GIT_READ and lists
        return reads, f"git {sub} {'only reads' if reads else 'may write'}"
    # A CLI whose subcommand words (before the first flag: a flag's value is no subcommand, `tool create --name
    # list` creates) include a GET-like verb.
    subcommands = [w.lower() for w in itertools.takewhile(lambda w: not w.startswith("-"), words[1:])][:4]
    written = _write_word(subcommands + [w.lower() for w in words[1:] if w.startswith("-")], writes)
    if written is not None:
        return False, f"{program} {written} names a write"
    # A shortcut names its verb last (lark-cli base +record-list, +table-get).
    if any(v in verbs or v.lstrip("+").replace("_", "-").rsplit("-", 1)[-1] in verbs for v in subcommands):
        return True, f"{program} {' '.join(subcommands)} is a GET-like subcommand"
    return False, f"{program} may change state"


def segment_names_check(segment: str, verbs: Collection[str], writes: Collection[str] = frozenset()) -> bool:
    """Whether a CLI segment names a check by its own command words: a subcommand word before the first flag, the
    last part of a shortcut (``+record-validate``) or a flag name (``payctl run preview --checks``, ``wmsctl count
    reconcile``) is one of ``verbs`` (the rules config's ``check_verbs``), and none names a write (``writes``:
    ``reconcile --apply`` changes what it compares). Operands, flag values and the built-in reading programs never
    count (``echo pytest``, ``cat validate.log``, ``kubectl logs lint-job`` name no check)."""
    words = words_of(segment)
    if not verbs or len(words) < 2:
        return False
    program = words[0].rsplit("/", 1)[-1]
    if program in _READ_PROGRAMS or program in ("cd", "find", "curl", "git"):
        return False
    subcommands = [w.lower() for w in itertools.takewhile(lambda w: not w.startswith("-"), words[1:])][:2]
    named = {part for word in subcommands for part in (word, word.lstrip("+").replace("_", "-").rsplit("-", 1)[-1])}
    flags = [w.lower() for w in words[1:] if w.startswith("-")]
    named.update(flag.lstrip("-").partition("=")[0] for flag in flags if flag.startswith("--"))
    return not named.isdisjoint(verbs) and _write_word(subcommands + flags, writes) is None


# curl's options that send a body or write a file (its flags are case-sensitive: -o writes, -f only fails).
_CURL_SHORT_WRITES = frozenset("dFTOo")
_CURL_LONG_WRITES = ("--data", "--form", "--upload-file", "--output", "--remote-name", "--json")


def _curl_reads(words: Sequence[str]) -> bool:
    """Whether a curl call only reads: no body, form, upload or output file, and no method other than GET
    (``-X``/``--request``), so its receipt is a read-back of the resource it names."""
    for at, word in enumerate(words):
        method = None
        if word.startswith("--"):
            name, _, value = word.partition("=")
            if name.startswith(_CURL_LONG_WRITES):
                return False
            if name == "--request":
                method = value or (words[at + 1] if at + 1 < len(words) else "")
        elif word.startswith("-") and len(word) > 1:
            flags = word[1:]
            if _CURL_SHORT_WRITES.intersection(flags.split("X", 1)[0]):
                return False
            if "X" in flags:
                method = flags.split("X", 1)[1] or (words[at + 1] if at + 1 < len(words) else "")
        if method is not None and method.upper() != "GET":
            return False
    return True


_WORD_PARTS = re.compile(r"[-_+.:=]+")


# The last part of a flag that names a parameter of a read, not an action (--start-time, --updated-from,
# --created-after): the verb before it says which records to read.
_PARAMETER_PARTS = frozenset({"time", "date", "at", "from", "to", "after", "before", "since", "until", "offset",
                              "page", "index", "line", "row", "by"})


def _write_word(words: Sequence[str], writes: Collection[str]) -> str | None:
    """The first of ``words`` (subcommand words, flag names; a flag's value after ``=`` is not read) one of whose
    parts (split at ``-``, ``_``, ``+``, ``.``) is one of ``writes``, or None (pure). A flag whose last part names a
    parameter (``--start-time``, ``--update-time-from``) selects what to read and is no write."""
    if not writes:
        return None
    for word in words:
        parts = [part for part in _WORD_PARTS.split(word.split("=", 1)[0]) if part]
        if word.startswith("-") and parts and parts[-1] in _PARAMETER_PARTS:
            continue
        if any(part in writes for part in parts):
            return word
    return None


def names_verb(command: str, verbs: Collection[str]) -> str | None:
    """The first word of ``command`` that names one of ``verbs`` (the rules config's ``write_verbs``,
    ``create_verbs``, ``report_verbs``): a part of its program's name (``deploy-all.sh``, ``import_orders.py``, the
    script an interpreter runs), of a subcommand word (``conda env create``) or of a flag name, in any segment; None
    when no word does."""
    for segment in read_command(command).segments:
        words = words_of(segment.text)
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program in _INTERPRETERS and len(words) > 1 and not words[1].startswith("-"):
            program = words[1].rsplit("/", 1)[-1]  # python tools/import_orders.py: the script names what it does
            words = words[1:]
        subcommands = list(itertools.takewhile(lambda w: not w.startswith("-"), words[1:]))[:4]
        flags = [w for w in words[1:] if w.startswith("-")]
        found = _write_word([program.lower(), *(w.lower() for w in subcommands + flags)], verbs)
        if found is not None:
            return found
    return None


_INTERPRETERS = frozenset({"python", "python3", "node", "bash", "sh", "ruby", "perl", "deno", "bun", "php"})
INTERPRETERS = _INTERPRETERS  # programs whose first operand (a script) is the program that runs


# Words of SQL that change data, schema, sessions or files, anywhere in a statement (a data-modifying CTE, SELECT
# ... INTO, EXPLAIN ANALYZE runs its statement): the safety net of :func:`sql_read_only`, which always wins.
_SQL_WRITE = re.compile(
    r"\b(?:insert|update|delete|merge|upsert|create|drop|alter|truncate|grant|revoke|copy|into|call|do|exec|execute"
    r"|vacuum|reindex|cluster|lock|attach|detach|load|install|import|export|set|reset|begin|commit|rollback|refresh"
    r"|comment|analyze|analyse|nextval|setval|output|once)\b|\bpragma\b[^;]*=", re.IGNORECASE)
_SQL_NOISE = re.compile(r"'(?:[^']|'')*'|--[^\n]*|/\*.*?\*/", re.DOTALL)


def sql_read_only(segment: str, clients: Mapping[str, Sequence[str]], statements: Collection[str]) -> bool:
    """Whether one simple command is a SQL client (``psql -c``, ``sqlite3 DB SQL``, ``bq query SQL``) told to run
    only statements that read: every statement of the SQL its arguments carry starts with one of ``statements``
    (the rules config's ``read_only_sql``: select, show, explain...) and holds no word that writes (``_SQL_WRITE``).

    ``clients`` is the rules config's ``sql_clients``: command words (program first, then words the segment must
    hold: ``bq query``) -> where the SQL is: a flag whose value it is (``-c``, ``--command``), ``#N`` for the Nth
    operand after the command words, ``!FLAG`` for a flag that runs SQL from elsewhere (``-f file.sql``: it cannot
    be read, so the segment may write). No SQL found, or SQL that cannot be read: not read-only (safety first)."""
    words = words_of(segment)
    if not words:
        return False
    program = words[0].rsplit("/", 1)[-1]
    key = next((k for k in clients if k.split()[0] == program and all(w in words[1:] for w in k.split()[1:])), None)
    if key is None:
        return False
    rest = [w for w in words[1:] if w not in key.split()[1:]]
    places = clients[key]
    found: list[str] = []
    operands = [w for k, w in enumerate(rest) if not w.startswith("-") and not (k and rest[k - 1] in places)]
    for k, word in enumerate(rest):
        flag = word.split("=", 1)[0]
        if f"!{flag}" in places:
            return False
        if flag in places and "=" in word:
            found.append(word.split("=", 1)[1])
        elif word in places and k + 1 < len(rest):
            found.append(rest[k + 1])
    found += [operands[int(p[1:]) - 1] for p in places if p.startswith("#") and 0 < int(p[1:]) <= len(operands)]
    allowed = {s.lower() for s in statements}
    return bool(found) and all(_statements_read(sql, allowed) for sql in found)


def _statements_read(sql: str, allowed: Collection[str]) -> bool:
    text = _SQL_NOISE.sub(" ", sql)
    parts = [p.strip() for p in text.split(";") if p.strip()]
    return bool(parts) and all(p.split()[0].lower().lstrip("(") in allowed and _SQL_WRITE.search(p) is None
                               for p in parts)


def command_is_read_only(command: str, listed: ReadOnlyPattern | None = None,
                         verbs: Collection[str] = frozenset(), writes: Collection[str] = frozenset(),
                         _depth: int = 0) -> tuple[bool, str]:
    """Whether every segment of ``command`` only reads, with the reason. A write marker outside quotes always
    makes it a write; a segment reads when the built-in vocabulary or ``verbs`` (the rules config's
    ``read_only_verbs``, unless a ``writes`` word: its ``write_verbs``) say so, or ``listed`` (its
    ``read_only_commands``) matches it. An unknown program may
    write (safety first)."""
    reading = read_command(command)
    if reading.writer is not None:
        return False, reading.writer
    if not reading.segments:
        return False, "empty command"
    for segment in reading.segments:
        inner = wrapped_command(segment.text)
        if inner is not None and _depth < _MAX_WRAPS:
            # A wrapper runs the command it is given (sudo, timeout, ssh host '...', kubectl exec -- ...): that
            # command's structure decides, its write markers included (they sat inside the wrapper's quotes).
            ok, why = command_is_read_only(inner, listed, verbs, writes, _depth + 1)
            if not ok:
                return False, f"{why} (run by {words_of(segment.text)[0]})"
            continue
        ok, why = segment_read_only(segment.text, verbs, writes)
        if not ok and listed is not None and listed(segment.text):
            ok, why = True, "listed as read-only in the rules config"
        if not ok:
            return False, why
    return True, "every part of the command only reads"


_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_MAX_WRAPS = 4  # sudo timeout 30 ssh host 'kubectl exec p -- cat x': deeper nesting is read as the wrapper itself

# Programs that run another command given as their operands, with the options of theirs that take a value (the
# wrapped command starts at the first other operand): sudo -u app CMD, timeout -s KILL 30 CMD, nice -n 5 CMD.
_PREFIX_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group", "--host",
                       "--prompt", "--role", "--type", "--other-user", "--chdir", "--close-from"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir", "-S", "--split-string"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "nohup": frozenset(), "time": frozenset({"-f", "-o", "--format", "--output"}), "stdbuf": frozenset(),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}), "chrt": frozenset(),
}
# Wrappers whose first operand is not the command: timeout's duration. (ssh's host, docker exec's container and
# kubectl exec's pod are read by :func:`wrapped_command` itself.)
_SKIPPED_OPERANDS = {"timeout": 1}
_SSH_VALUE_OPTIONS = frozenset("bcDEeFIiJLlmOopQRSWw")
_EXEC_VALUE_OPTIONS = frozenset({"-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file", "--detach-keys",
                                 "-c", "--container", "-n", "--namespace", "--context", "--index"})


def wrapped_command(segment: str) -> str | None:
    """The command line a wrapper segment runs, or None when the segment is no wrapper or runs nothing given
    (``env`` alone prints the environment; ``ssh host`` alone opens a shell; pure): ``sudo -u app cat x`` ->
    ``cat x``; ``timeout 30 psql -c 'select 1'``; ``env A=1 kubectl get pods``; ``ssh -p 22 host 'show ip route'``
    (the remote shell reads the joined operands); ``kubectl exec -n ns pod -- cat /etc/x``; ``docker exec -it c ls``;
    ``bash -c 'script'``."""
    words = words_of(segment)
    if len(words) < 2:
        return None
    program = words[0].rsplit("/", 1)[-1]
    rest = words[1:]
    if program in _PREFIX_WRAPPERS:
        valued = _PREFIX_WRAPPERS[program]
        at = 0
        while at < len(rest) and rest[at].startswith("-") and rest[at] != "--":
            at += 2 if rest[at] in valued else 1
        at += 1 if at < len(rest) and rest[at] == "--" else 0
        while program == "env" and at < len(rest) and _ASSIGNMENT.fullmatch(rest[at]):
            at += 1
        at += _SKIPPED_OPERANDS.get(program, 0)
        return shlex.join(rest[at:]) if at < len(rest) else None
    if program == "ssh":
        at = 0
        while at < len(rest) and rest[at].startswith("-"):
            flag = rest[at]
            at += 2 if len(flag) == 2 and flag[1] in _SSH_VALUE_OPTIONS else 1
        # ssh joins the operands after the host with spaces; the remote shell splits them again.
        return " ".join(rest[at + 1:]) if at + 1 < len(rest) else None
    if program in _SHELLS:
        script = next((rest[k + 1] for k, word in enumerate(rest[:-1])
                       if word.startswith("-") and not word.startswith("--") and "c" in word), None)
        return script
    sub = [w for w in rest if not w.startswith("-")][:2]
    if program in ("kubectl", "oc") and sub[:1] == ["exec"] and "--" in rest:
        return shlex.join(rest[rest.index("--") + 1:]) or None
    if program in ("docker", "podman") and "exec" in sub:
        operands = rest[rest.index("exec") + 1:]
        at = 0
        while at < len(operands) and operands[at].startswith("-"):
            at += 2 if operands[at] in _EXEC_VALUE_OPTIONS else 1
        return shlex.join(operands[at + 1:]) if at + 1 < len(operands) else None
    return None


def segment_hits(command: str, matches: ReadOnlyPattern) -> tuple[bool, ...]:
    """For each segment of ``command``, whether ``matches`` holds on its text with quoted arguments blanked: how the
    rules config's ``check`` and ``content`` lists read a command, so ``git commit -m "fix tests"`` names no check.
    A ``bash -c SCRIPT`` segment holds when a segment of SCRIPT does; a command with a command substitution is read
    on its raw text (it runs whatever the quotes hold)."""
    reading = read_command(command)
    hits: list[bool] = []
    for segment in reading.segments:
        words = words_of(segment.text)
        script = next((words[k + 1] for k, word in enumerate(words[:-1])
                       if k and word.startswith("-") and not word.startswith("--") and "c" in word), None)
        if words and words[0].rsplit("/", 1)[-1] in _SHELLS and script is not None:
            hits.append(any(segment_hits(script, matches)))
        else:
            hits.append(matches(segment.text if reading.substitution else masked_quotes(segment.text)))
    return tuple(hits)


ObjectKey = tuple[str, frozenset[tuple[str, str]]]
"""A remote object a call names: a readable name and its identity, a set of (kind, value) pairs; an object is
under another when its pairs hold all of the other's."""

_URL = re.compile(r"https?://[^\s'\"<>`|;]+")
_VERSION_SEGMENT = re.compile(r"v\d+(?:\.\d+)*|api", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def object_keys(command: str, flags: frozenset[str], actions: frozenset[str]) -> tuple[ObjectKey, ...]:
    """The remote objects a command line names by its structure (issue 24 item 2): per segment, the values of its
    object flags (``--base B --table T --field F`` -> ``B/T/F``, one object under ``B/T``) and each URL, as its
    host and path (``.../webhooks/v1/wh_31/test`` acts on ``.../webhooks/v1/wh_31``: a last segment in ``actions``
    names an action, not an object). A URL is keyed by each prefix of its path, so a listing of a collection covers
    its members; a host alone is no object."""
    keys: list[ObjectKey] = []
    for segment in read_command(command).segments:
        words = words_of(segment.text)
        pairs: list[tuple[str, str]] = []
        for position, word in enumerate(words[1:], 1):
            if not word.startswith("--"):
                continue
            name, eq, value = word[2:].partition("=")
            if name.lower() not in flags:
                continue
            if not eq:
                value = words[position + 1] if position + 1 < len(words) else ""
            if value and not value.startswith("-"):
                pairs.append((name.lower(), value))
        if pairs:
            keys.append(("/".join(v for _, v in pairs), frozenset(pairs)))
        for match in _URL.finditer(segment.text):
            key = url_key(match.group(), actions)
            if key is not None:
                keys.append(key)
    return tuple(dict.fromkeys(keys))


def url_key(url: str, actions: Collection[str]) -> ObjectKey | None:
    """A URL's object: host and path without query, fragment and a last action segment; each path prefix is one
    pair (``host/a``, ``host/a/b``), so an object under a listed collection holds the collection's pairs. None
    when nothing but the host and version segments is left."""
    rest = url.split("://", 1)[-1].split("?", 1)[0].split("#", 1)[0]
    host, _, path = rest.partition("/")
    parts = [p for p in path.split("/") if p]
    if parts and parts[-1].lower() in actions:
        parts = parts[:-1]
    if not host or not any(not _VERSION_SEGMENT.fullmatch(p) for p in parts):
        return None
    prefixes = [f"{host}/" + "/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    return prefixes[-1], frozenset(("url", p) for p in prefixes)


_SENDS = re.compile(r"""(?:^|\s)(?:-X|--request)\s*['"]?(?:POST|PUT|PATCH|DELETE)\b|(?:^|\s)(?:-d|--data(?:-\w+)?|--json|-F|--form)(?:\s|=)"""
                    r"|(?:^|\s)(?:https?|xh)\s+(?:POST|PUT|PATCH|DELETE)\s", re.IGNORECASE)


def sends_request(command: str) -> bool:
    """Whether a command line sends an HTTP request that asks for something (a method other than GET, or a body):
    a refusal of it (4xx) is its failure; a read answered 404 may be the point (a deletion confirmed)."""
    return _SENDS.search(command) is not None
