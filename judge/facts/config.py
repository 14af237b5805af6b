"""The vocabularies and settings the fact ledger and the rules judge read: detector switches, thresholds and
phrase lists, loaded from YAML.

The file (``rubrics/rules-v2.yaml`` by default) is data, versioned by its ``version`` key; that version is
the judge's ``prompt_version``. Phrase lists are regular expressions; :class:`CompiledPatterns` (``config.patterns``,
built once per config) holds one :class:`~judge.facts.matching.PhraseMatcher` per list, which answers like the
alternation of its patterns (the matching engine is :mod:`judge.facts.matching`). Long receipts and messages are
read at both ends only (``receipt`` and ``message`` settings of the YAML file).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from judge.facts.effects import RecapVocabulary
from judge.facts.matching import PhraseGroup, PhraseMatcher, lower_pattern
from judge.facts.numbers import NumberWords
from judge.facts.shell import sql_read_only
from judge.schema import Severity

DEFAULT_FILE = "rules-v2.yaml"
# The detector names a config may name (set by judge.rules, which registers the detectors: judge.facts never
# imports the rules judge). Unset, any name is accepted.
_known_detectors: Callable[[], Sequence[str]] | None = None


def set_detector_names(names: Callable[[], Sequence[str]]) -> None:
    """Make every config loaded from now on refuse detector names that ``names()`` does not list."""
    global _known_detectors  # noqa: PLW0603 - one registry-wide hook, set once at import of judge.rules
    _known_detectors = names
K = TypeVar("K")
V = TypeVar("V")


class DetectorSettings(BaseModel):
    """Per-detector switch and severities. Unused fields are ignored by detectors that have no use for them."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    severity: Severity = "severe"
    recovered_severity: Severity = "minor"
    unrecovered_severity: Severity = "severe"
    severe_after: int = Field(default=4, ge=2, description="Identical failures from this count on are severe.")


class EfficiencySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    high_max_waste: float = Field(default=0.10, ge=0, le=1)
    medium_max_waste: float = Field(default=0.30, ge=0, le=1)
    min_calls: int = Field(default=1, ge=0)


class ReceiptSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    head_lines: int = Field(default=15, ge=1)
    tail_lines: int = Field(default=6, ge=0)
    head_chars: int = Field(default=2000, ge=100)
    tail_chars: int = Field(default=1000, ge=0)
    excerpt_chars: int = Field(default=160, ge=20)


class MessageSettings(BaseModel):
    """How much of a long assistant message is read for claims and failure references (its two ends)."""

    model_config = ConfigDict(extra="forbid")

    head_chars: int = Field(default=4000, ge=100)
    tail_chars: int = Field(default=2000, ge=0)


def check_pattern(place: str, pattern: str) -> None:
    """Raise ``ValueError`` naming ``place`` unless ``pattern`` compiles as the matchers use it: as written
    (searched case-insensitively) and lowered (searched on lowered text). The matchers compile a pattern when a
    text first needs it, so a bad one must be refused when the config is read, not on some trajectory."""
    for form in (pattern, lower_pattern(pattern)):
        try:
            re.compile(form)
        except re.error as error:
            lowered = "" if form == pattern else f" (lowered: {form!r})"
            raise ValueError(f"{place}: bad regular expression {pattern!r}{lowered}: {error}") from None


# The tool settings that are lists of regular expressions (the others are argument keys and exit codes).
TOOL_PATTERN_LISTS = (
    "plan_names", "check_patterns", "check_names", "check_receipt_patterns", "check_item_patterns", "read_only_names",
    "read_only_commands", "write_names", "final_names", "content_names", "content_commands", "link_check_patterns",
    "not_file_names", "read_only_checks",
)


class ToolSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan_names: list[str] = Field(default_factory=list)
    check_patterns: list[str] = Field(default_factory=list)
    check_names: list[str] = Field(default_factory=list)
    check_receipt_patterns: list[str] = Field(default_factory=list)
    check_item_patterns: list[str] = Field(default_factory=list)
    read_only_names: list[str] = Field(default_factory=list)
    read_only_commands: list[str] = Field(default_factory=list)
    read_only_verbs: list[str] = Field(
        default_factory=list,
        description="GET-like subcommand words of CLIs (list, get, count): a segment whose subcommand words (before "
                    "its first flag, or the last part of a shortcut: +record-count) name one only reads. Plain words.")
    check_verbs: list[str] = Field(
        default_factory=list,
        description="Subcommand words and flag names that make a reading CLI segment a check (validate, verify, "
                    "reconcile: `payctl run preview --checks`): its report is a check's verdict. Plain words.")
    write_verbs: list[str] = Field(
        default_factory=list,
        description="Subcommand words that write (create, delete, set, refund): one as a part of a subcommand word "
                    "or a flag name (+status-set, --delete) makes a segment a write, whatever read verb it holds.")
    sql_clients: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Command words of SQL clients (psql, sqlite3, bq query) -> where their SQL is: a flag whose value "
                    "it is (-c), '#N' for the Nth operand, '!FLAG' for a flag that runs SQL from a file (may write).")
    read_only_sql: list[str] = Field(
        default_factory=list,
        description="First words of SQL statements that only read (select, show, explain): a SQL client segment "
                    "whose every statement starts with one, and holds no writing word, only reads. Plain words.")
    write_names: list[str] = Field(default_factory=list)
    path_keys: list[str] = Field(default_factory=list)
    command_keys: list[str] = Field(default_factory=list)
    final_names: list[str] = Field(default_factory=list)
    content_names: list[str] = Field(default_factory=list)
    content_commands: list[str] = Field(default_factory=list)
    link_check_patterns: list[str] = Field(
        default_factory=list,
        description="Checks of links (lychee, linkcheck): HTTP statuses in their receipts are findings, not the environment.")
    not_file_names: list[str] = Field(
        default_factory=list, description="Names that look like files but name products (Vue.js, Node.js).")
    read_only_checks: list[str] = Field(
        default_factory=list,
        description="Checks that only read (ruff check without --fix, mypy, a curl GET): read by the offline editor.")
    stopped_receipts: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Program ('*': any) -> receipt shapes that mean it refused to start the work (usage errors, "
                    "unknown remote, no matching distribution): read by the offline editor on a receipt's first line.")
    refused_reads: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Program -> first-output shapes of a read it refused although it exited 0 (curl's HTTP/1.1 404).")
    refusal_values: list[str] = Field(
        default_factory=list,
        description="Values of a response's own outcome key (status, state, decision) that say the request was "
                    "refused or declined (declined, denied, rejected): read by the offline editor's validators.")
    grant_keys: list[str] = Field(
        default_factory=list,
        description="Keys of a response whose false value says the request was not granted (approved, allowed).")
    error_meta_keys: list[str] = Field(
        default_factory=list,
        description="Keys that may stand beside error/errors in a document that answers only with an error "
                    "(message, code, request_id): no data came back.")
    error_only_keys: list[str] = Field(
        default_factory=list,
        description="Keys only an answer that describes an error carries (detail, documentation_url): a read's JSON "
                    "answer of error_meta_keys only, holding one of them, brought no data back (a refused read).")
    steady_states: list[str] = Field(
        default_factory=list,
        description="States a service or pod stays in while it works (running, up, active): in a readiness table "
                    "or a service's status line they are steady, not a job going. Plain lower-case tokens.")
    environment_exit_codes: dict[str, list[int]] = Field(
        default_factory=dict,
        description="Program -> exit codes that mean a network, auth or resource fault (curl 6: could not resolve host).")
    failure_nouns: list[str] = Field(
        default_factory=lambda: [
            "failed", "failing", "failure", "failures", "error", "errors", "broken", "invalid", "vulnerability",
            "vulnerabilities", "violation", "violations", "problem", "problems", "mismatch", "mismatches", "leak",
            "leaks", "finding", "findings", "misspelling", "misspellings", "typo", "typos", "unreachable",
            "discrepancy", "discrepancies", "fehler"],
        description="Plain nouns and participles of a check's report that count failures ('2 failed', 'errors: 3', "
                    "a JSON field 'vulnerabilities': [...], a table column 'Vulnerability'): tools print English "
                    "mostly; a nonzero count or a non-empty list next to one is a failure, zero never.")
    failure_statuses: list[str] = Field(
        default_factory=lambda: ["fail", "failed", "failure", "error", "broken", "invalid", "mismatch", "dead",
                                 "rejected", "vulnerable", "not ok"],
        description="Status words of a check's row or summary ('| FAIL |', '** TEST FAILED **', '... broken "
                    "https://...'): a row whose status cell holds one reports a failure.")
    prose_keys: list[str] = Field(
        default_factory=list,
        description="Argument names whose value is the agent's prose about a call, not what it does (Claude Code's "
                    "Bash 'description'): two calls that differ only there are the same call, in any language.")
    output_flags: list[str] = Field(
        default_factory=list,
        description="Flags whose value is a file the command writes (-o, --output): a later write to the checked "
                    "artifact makes a new version of it, whatever the program. Plain flag names.")
    last_operand_writers: list[str] = Field(
        default_factory=list,
        description="Programs whose last operand is the file they write (cp, mv, ffmpeg, convert). Plain names.")
    in_place_flags: list[str] = Field(
        default_factory=list,
        description="Flags that make a program rewrite the files it is given (jupyter nbconvert --inplace): each "
                    "file operand of that command is written. Plain flag names.")
    object_flags: list[str] = Field(
        default_factory=list,
        description="Flag names (without dashes) whose value names a remote object a CLI call acts on (--base, "
                    "--table, --field, --webhook, --host): a write names the object by their values, a check or "
                    "read-back covers the object its values name and every object under it (issue 24 item 2).")
    action_segments: list[str] = Field(
        default_factory=list,
        description="Last URL path segments that name an action on the resource before them (/test, /verify, "
                    "/validate): a call to .../wh_31/test acts on .../wh_31.")
    error_envelope: dict[str, list[str]] = Field(
        default_factory=dict,
        description="A tool's JSON error envelope by the role of its fields (judge.facts.effects.error_envelope): "
                    "'error' holds the error, 'flag' is a success flag (false = failed), 'status' a state "
                    "('failed_states') or an HTTP status >= 400 beside a 'message', 'errors' a list of errors, "
                    "'code' an API result code beside a 'message' (0 and 2xx are success); 'columns' name a summary "
                    "table's error column. API field names, the same in every language.")
    effect_keys: list[str] = Field(
        default_factory=list,
        description="Words of a JSON key that counts what a write did ('created', 'synced_count', 'record_ids'): a "
                    "positive count or a non-empty list under one, in an error envelope, shows the call was partial.")
    side_counts: list[str] = Field(
        default_factory=list,
        description="The first letters of labels that count what went wrong or was passed over beside a run's work "
                    "('failed', 'skipped', 'warnings', any language): their zero is no zero of what the call was "
                    "asked to do ('0 of 40 failed', an empty create's 'errors: 0').")
    create_verbs: list[str] = Field(
        default_factory=list,
        description="Words of a call that makes a new object (create, add, register): a part of its program, "
                    "subcommand or flag words. Its receipt saying the object exists already is a failed create.")
    report_verbs: list[str] = Field(
        default_factory=list,
        description="Words of a call that reports on the data it reads (summarize, stats, profile, report): a part of "
                    "its program, script or subcommand words. With no write verb and no file written, the errors it "
                    "counts are findings in that data, not failures of its run.")
    target_recap: dict[str, list[str]] = Field(
        default_factory=dict,
        description="A per-target recap of a run over many targets (judge.facts.effects.target_recap): "
                    "'failure_counters' (a recap row's counters that fail a target: failed, unreachable), "
                    "'success_states' / 'failure_states' (a target row's status), 'field_labels' (labels that are the "
                    "run's own fields, not targets: status, state), 'success_words' / 'failure_words' (a summary's "
                    "outcome words beside counts, in several languages). A target failed beside others that "
                    "succeeded is a partial run, whatever the exit code.")
    exit_answers: dict[str, dict[int, str]] = Field(
        default_factory=dict,
        description="Command words (program first, then words the command must hold: 'git diff --quiet') -> exit "
                    "code -> what it answers ('no match', 'differ'): an answer 'no', not a failure.")

    @field_validator(*TOOL_PATTERN_LISTS)
    @classmethod
    def _patterns_compile(cls, value: list[str], info: ValidationInfo) -> list[str]:
        for pattern in value:
            check_pattern(f"tools.{info.field_name}", pattern)
        return value

    @field_validator("stopped_receipts", "refused_reads")
    @classmethod
    def _stopped_compile(cls, value: dict[str, list[str]], info: ValidationInfo) -> dict[str, list[str]]:
        for program, patterns in value.items():
            for pattern in patterns:
                check_pattern(f"tools.{info.field_name}.{program}", pattern)
        return value


class ActionClaim(BaseModel):
    """A kind of action a sentence can claim (pushed, restarted, deployed...) and the calls that can do it."""

    model_config = ConfigDict(extra="forbid")

    claim: dict[str, list[str]] = Field(description="language -> regular expressions of the claim")
    calls: list[str] = Field(description="Regular expressions on a call's tool name and arguments that do the action.")


PHRASE_LISTS = (
    "error", "environment", "success", "claim", "check_claim", "test_claim", "creation_claim", "done_claim", "hedge", "failure_words", "phantom", "prior_failure",
)
# Lists added in rules-v2 (optional, so that an older config still loads; empty when absent):
# pass_claim: checks pass / all green (needs a real check that passed); count_claim: "6 records written" (its number
# must be in a receipt); uncertain: a receipt that leaves a write's effect unknown; invocation_error: a failed check
# that could not run as called (the command is wrong, not the work it checks).
OPTIONAL_PHRASE_LISTS = ("pass_claim", "count_claim", "uncertain", "invocation_error",
                         # issue 24 (the fact ledger): what a successful receipt's content adds (still running,
                         # nothing created, checks that failed), what a failed one's adds (some effect), and in
                         # claims: the future tense and "the earlier problem was handled".
                         "running", "noop", "partial", "check_failure", "future", "resolution_claim",
                         # failure_count: a run's own summary counting errors above zero ("3 errors", "BUILD
                         # FAILED"): behind an explicit exit 0, a call that is no check failed.
                         "failure_count",
                         # stated_failure: a resolver or a service stating its failure in words behind exit 0
                         # ("ResolvePackageNotFound", "duplicate key"); create_conflict: "already exists" (a failed
                         # create when the call names one, tools.create_verbs).
                         "stated_failure", "create_conflict",
                         # all_clear: "no errors", "0 failed", "sorunsuz": failure and negation words inside one
                         # say nothing failed (a claim, not a report of a failure nor a negated claim).
                         "all_clear",
                         # universal: "all", "tutti", "wszystkie" (a status claimed of every record a read-back
                         # lists); total_claim: "total", "合計", "toplam" (a sum a read-back's records must add up to).
                         "universal", "total_claim",
                         # upper_bound / lower_bound: "under 50", "100 이하" / "over 10", "以上" (a bound every
                         # number of the field a read-back lists must keep).
                         "upper_bound", "lower_bound",
                         # the operating system's "no such file or directory" in its locales: a call that stopped
                         # because an input file was missing (read by the offline editor, judge.repair.calls)
                         "missing_file",
                         # completion: "done", "完成", "selesai" (a future sentence holding one promises a result;
                         # read by the offline editor's validators, judge.repair.validators)
                         "completion")
# Lists read over a whole message region (one literal scan per region), and lists read only in its claim sentences
# (short: one scan per sentence), so that a long message is not scanned for the literals of every list.
SPEECH_LISTS = ("claim", "prior_failure", "phantom", "all_clear")
SENTENCE_LISTS = (
    "check_claim", "test_claim", "pass_claim", "count_claim", "creation_claim", "done_claim", "hedge", "failure_words",
    "future", "resolution_claim", "all_clear", "noop",
)


class RulesConfig(BaseModel):
    """Everything the detectors read. Build with :meth:`load`; a config object is immutable in use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    detectors: dict[str, DetectorSettings] = Field(default_factory=dict)
    efficiency: EfficiencySettings = Field(default_factory=EfficiencySettings)
    receipt: ReceiptSettings = Field(default_factory=ReceiptSettings)
    message: MessageSettings = Field(default_factory=MessageSettings)
    phrases: dict[str, dict[str, list[str]]] = Field(description="list name -> language -> regular expressions")
    actions: dict[str, ActionClaim] = Field(
        default_factory=dict, description="Claimed actions (push, restart...): a claim needs a successful call that does it.")
    tools: ToolSettings = Field(default_factory=ToolSettings)
    number_words: dict[str, list[str]] = Field(
        default_factory=dict, description="language -> the words of the numbers 0, 1, 2... in order (counts written as words)")
    number_grammar: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="language -> how it writes compounds: tens, hundreds, inner, joiners, multipliers, counters "
                                          "(read by judge.facts.numbers.NumberWords)")
    source: str | None = Field(default=None, description="The file this config was read from.")

    @field_validator("detectors")
    @classmethod
    def _known_detectors(cls, value: dict[str, DetectorSettings]) -> dict[str, DetectorSettings]:
        if _known_detectors is None:
            return value
        known = _known_detectors()
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(f"unknown detector(s) {unknown}; known: {list(known)}")
        return value

    @field_validator("phrases")
    @classmethod
    def _phrase_lists_compile(cls, value: dict[str, dict[str, list[str]]]) -> dict[str, dict[str, list[str]]]:
        missing = [name for name in PHRASE_LISTS if name not in value]
        if missing:
            raise ValueError(f"phrase lists missing: {missing}")
        for name, languages in value.items():
            for language, patterns in languages.items():
                for pattern in patterns:
                    check_pattern(f"phrases.{name}.{language}", pattern)
        return value

    @field_validator("actions")
    @classmethod
    def _action_patterns_compile(cls, value: dict[str, ActionClaim]) -> dict[str, ActionClaim]:
        for name, action in value.items():
            where = [(f"actions.{name}.claim.{lang}", p) for lang, ps in action.claim.items() for p in ps]
            for place, pattern in where + [(f"actions.{name}.calls", p) for p in action.calls]:
                check_pattern(place, pattern)
        return value

    def languages(self) -> list[str]:
        """Every language some phrase list or action claim has patterns for (``neutral``: markers of any language)."""
        found = {lang for lists in self.phrases.values() for lang in lists}
        found |= {lang for action in self.actions.values() for lang in action.claim}
        return sorted(found)

    @classmethod
    def load(cls, path: Path | None = None) -> RulesConfig:
        """Read a rules config; ``None`` reads the bundled ``rubrics/rules-v2.yaml``.

        A missing file, bad YAML or a bad pattern raises ``ValueError`` naming the file.
        """
        if path is None:
            from judge.resources import resource_path

            path = resource_path("rubrics", DEFAULT_FILE)
        path = Path(path)
        try:
            data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise ValueError(f"{path}: cannot read rules config: {error}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: a rules config must be a mapping, got {type(data).__name__}")  # noqa: TRY004 (bad file content, not a bad argument)
        try:
            return cls.model_validate({**data, "source": str(path)})
        except ValueError as error:
            raise ValueError(f"{path}: invalid rules config: {error}") from None

    def settings(self, detector: str) -> DetectorSettings:
        """The detector's settings (defaults when the file does not mention it)."""
        return self.detectors.get(detector) or DetectorSettings()

    def enabled(self, detector: str) -> bool:
        """Whether ``detector`` runs (see :meth:`enabled_among`)."""
        return bool(self.enabled_among((detector,)))

    def enabled_among(self, detectors: Iterable[str]) -> list[str]:
        """The enabled ones of ``detectors``, in their order. A detector the config does not mention has the default
        settings: enabled (no settings object is built to say so; asked twice per trajectory)."""
        settings = self.detectors
        return [name for name in detectors if (found := settings.get(name)) is None or found.enabled]

    # --- compiled patterns (cached on the frozen object) -------------------------------------------

    @cached_property
    def patterns(self) -> CompiledPatterns:
        return CompiledPatterns(self)


@lru_cache(maxsize=1)
def default_config() -> RulesConfig:
    """The bundled config, read once per process."""
    return RulesConfig.load()


_UNREAD = object()  # read_once: no value remembered (a reader's value may be None)


class Memo(dict[K, V]):
    """A memo of :class:`CompiledPatterns`: a dict that counts the characters of the texts its keys hold."""

    chars = 0

    def clear(self) -> None:
        super().clear()
        self.chars = 0


class CompiledPatterns:
    """One matcher per phrase list and tool list; tool-name answers are memoised (names repeat a lot)."""

    def __init__(self, config: RulesConfig) -> None:
        for name in PHRASE_LISTS + OPTIONAL_PHRASE_LISTS:
            merged = [p for language in config.phrases.get(name, {}).values() for p in language]
            if name == "claim":
                # A sentence that claims an action (pushed, restarted), that tests or checks pass, or that something
                # was verified ("Widok sprawdzony", "確認したとおり") is a claim too.
                for extra in ("pass_claim", "test_claim", "resolution_claim", "check_claim"):
                    merged += [p for language in config.phrases.get(extra, {}).values() for p in language]
                merged += [p for action in config.actions.values() for language in action.claim.values() for p in language]
            setattr(self, name, PhraseMatcher(merged))
        # Per claimed action: (name, claim matcher, matcher of the calls that do it).
        self.action_claims = [
            (name, PhraseMatcher([p for language in action.claim.values() for p in language]), PhraseMatcher(action.calls))
            for name, action in config.actions.items()
        ]
        tools = config.tools
        self.plan_name = PhraseMatcher(tools.plan_names)
        self.check = PhraseMatcher(tools.check_patterns)
        self.check_name = PhraseMatcher(tools.check_names)
        self.check_receipt = PhraseMatcher(tools.check_receipt_patterns)
        self.check_item = PhraseMatcher(tools.check_item_patterns)
        self.read_only_name = PhraseMatcher(tools.read_only_names)
        self.read_only_command = PhraseMatcher(tools.read_only_commands)
        self.read_only_check = PhraseMatcher(tools.read_only_checks)
        self.read_only_verbs = frozenset(verb.lower() for verb in tools.read_only_verbs)
        self.write_verbs = frozenset(verb.lower() for verb in tools.write_verbs)
        self.check_verbs = frozenset(verb.lower() for verb in tools.check_verbs)
        self.sql_clients = {words: tuple(places) for words, places in tools.sql_clients.items() if words.split()}
        self.read_only_sql = frozenset(word.lower() for word in tools.read_only_sql)
        self.failure_nouns = tuple(noun.lower() for noun in tools.failure_nouns)
        self.failure_statuses = tuple(status.lower() for status in tools.failure_statuses)
        self.output_flags = frozenset(tools.output_flags)
        self.prose_keys = frozenset(tools.prose_keys)
        self.last_operand_writers = frozenset(tools.last_operand_writers)
        self.in_place_flags = frozenset(tools.in_place_flags)
        self.object_flags = frozenset(flag.lower() for flag in tools.object_flags)
        self.action_segments = frozenset(segment.lower() for segment in tools.action_segments)
        self.error_envelope = {role: [name.lower() for name in names] for role, names in tools.error_envelope.items()}
        self.effect_keys = tuple(key.lower() for key in tools.effect_keys)
        # What a receipt answered by its data (judge.facts.answers): refusals, error answers, steady states.
        self.refusal_values = frozenset(value.lower() for value in tools.refusal_values)
        self.grant_keys = frozenset(key.lower() for key in tools.grant_keys)
        self.error_meta_keys = frozenset(key.lower() for key in tools.error_meta_keys)
        self.error_only_keys = frozenset(key.lower() for key in tools.error_only_keys)
        self.steady_states = frozenset(state.lower() for state in tools.steady_states)
        self.refused_reads = {program: PhraseMatcher(shapes) for program, shapes in tools.refused_reads.items()}
        self.report_verbs = frozenset(verb.lower() for verb in tools.report_verbs)
        self.create_verbs = frozenset(verb.lower() for verb in tools.create_verbs)
        self.side_counts = tuple(stem.lower() for stem in tools.side_counts)
        self.target_recap = RecapVocabulary.build(tools.target_recap)
        # Its literals, found by the receipt lists' one scan: a receipt without them holds no recap to parse.
        self.recap_failing = PhraseMatcher([re.escape(word) for word in self.target_recap.failing])
        self.recap_succeeding = PhraseMatcher([re.escape(word) for word in self.target_recap.succeeding])
        self.write_name = PhraseMatcher(tools.write_names)
        self.final_name = PhraseMatcher(tools.final_names)
        self.content_name = PhraseMatcher(tools.content_names)
        self.content_command = PhraseMatcher(tools.content_commands)
        self.link_check = PhraseMatcher(tools.link_check_patterns)
        self.not_file = PhraseMatcher(tools.not_file_names)
        self.exit_answers = {tuple(words.split()): codes for words, codes in tools.exit_answers.items() if words.split()}
        self.receipt_lists = PhraseGroup({"environment": self.environment, "success": self.success,
                                          "error": self.error, "check_receipt": self.check_receipt,
                                          "uncertain": self.uncertain, "invocation_error": self.invocation_error,
                                          "running": self.running, "noop": self.noop, "partial": self.partial,
                                          "check_failure": self.check_failure,
                                          "failure_count": self.failure_count,
                                          "stated_failure": self.stated_failure,
                                          "recap_failing": self.recap_failing,
                                          "recap_succeeding": self.recap_succeeding})
        self.command_lists = PhraseGroup(
            {"read_only": self.read_only_command, "check": self.check, "content": self.content_command,
             "link_check": self.link_check})
        # Lists read in assistant text: one literal scan per message region for the region's lists, one per claim
        # sentence for the others.
        self.speech_lists = PhraseGroup({name: getattr(self, name) for name in SPEECH_LISTS})
        self.sentence_lists = PhraseGroup({
            **{name: getattr(self, name) for name in SENTENCE_LISTS},
            **{f"action:{name}": claim for name, claim, _ in self.action_claims},
        })
        # Literals of every claimed action: a sentence holding none of them claims no action (most sentences).
        self.action_literals = frozenset(lit for _, claim, _ in self.action_claims for lit in claim.requires)
        self.actions_always = any(claim.always for _, claim, _ in self.action_claims)
        # Counts written as words ("Sieben neue Kunden", "sete registros"): word -> number, and one scan for them.
        self.number_words = NumberWords.build(config.number_words, config.number_grammar)
        self._names: dict[tuple[str, str], bool] = {}
        # Per-text answers of the analysis (receipt outcome, claim sentences), bounded; see analysis._classify.
        # Keyed by the texts themselves (a dict hashes a text faster than any digest, and a text's hash is kept on
        # it): a memo holds at most MEMO_CHARS characters of texts, besides MEMO_LIMIT entries.
        self.memo_receipts: Memo[Any, Any] = Memo()
        self.memo_speeches: Memo[Any, Any] = Memo()
        self.memo_commands: Memo[Any, Any] = Memo()
        self.memo_names: Memo[str, tuple[bool, ...]] = Memo()  # tool name -> its kinds (analysis._name_kinds)
        # (command, exit code) -> what the code answers (analysis._exit_answer): commands and codes repeat.
        self.memo_exit_answers: Memo[tuple[str, int], str | None] = Memo()
        # command -> whether it only reads or checks (analysis._only_reads: the refusal reader asks every call).
        self.memo_reads: Memo[str, bool] = Memo()
        # sentence -> its reading as a claim sentence (analysis._claim_sentence): answers repeat their sentences
        # ("Is there anything else I can help you with?") across a batch; the readings are shared, never changed.
        self.memo_sentences: Memo[str, Any] = Memo()
        # reader name -> its memo of what it reads from a text (a receipt, a claim sentence): the claim detectors
        # read the same receipts and sentences again in every copy of a trajectory (a batch's repeats, the offline
        # editor's edited copies), and each reading is a pure function of the text (rules.detectors._text_memo).
        self.memo_readers: dict[str, Memo[Any, Any]] = {}

    MEMO_LIMIT = 20000
    MEMO_CHARS = MEMO_LIMIT * 512  # what MEMO_LIMIT texts of 512 characters hold (before: longer texts were digested)

    def remember(self, memo: Memo[K, V], key: K, value: V, chars: int = 0) -> V:
        """Store ``value`` under ``key`` in one of the memos above, ``chars`` the length of the text the key holds
        (emptied when full); returns ``value``."""
        if len(memo) >= self.MEMO_LIMIT or memo.chars + chars > self.MEMO_CHARS:
            memo.clear()  # simple and bounded; a batch's repeats are close together
        memo[key] = value
        memo.chars += chars
        return value

    def read_once(self, reader: str, key: Hashable, compute: Callable[[], V], chars: int) -> V:
        """``compute()`` once per ``reader`` and ``key``, a text or texts of ``chars`` characters in all (a receipt,
        a sentence), in :attr:`memo_readers` (bounded as the other memos): what a reader derives from the text
        alone, which every copy of a trajectory (a batch's repeats, the offline editor's edited copies) asks again.
        The value is shared: callers never change it."""
        found = self.memo_readers.get(reader)
        if found is None:
            found = self.memo_readers[reader] = Memo()
        else:
            known = found.get(key, _UNREAD)
            if known is not _UNREAD:
                return cast(V, known)
        value = compute()
        self.remember(found, key, value, chars)
        return value

    def listed_read_only(self, segment: str) -> bool:
        """Whether the rules config says one shell segment only reads: a ``read_only_commands`` pattern matches it,
        or it is a SQL client running only reading statements (``sql_clients``, ``read_only_sql``). The ledger and
        the offline editor ask this one question."""
        return (self.read_only_command.search(segment) is not None
                or sql_read_only(segment, self.sql_clients, self.read_only_sql))

    def name_is(self, kind: str, name: str) -> bool:
        """Whether tool ``name`` matches the tool list ``kind`` (plan_name, write_name, check_name, ...)."""
        key = (kind, name)
        answer = self._names.get(key)
        if answer is None:
            answer = self._names[key] = getattr(self, kind).search(name) is not None
        return answer

    error: PhraseMatcher
    environment: PhraseMatcher
    success: PhraseMatcher
    claim: PhraseMatcher
    check_claim: PhraseMatcher
    test_claim: PhraseMatcher
    creation_claim: PhraseMatcher
    done_claim: PhraseMatcher
    hedge: PhraseMatcher
    failure_words: PhraseMatcher
    phantom: PhraseMatcher
    prior_failure: PhraseMatcher
    pass_claim: PhraseMatcher
    count_claim: PhraseMatcher
    uncertain: PhraseMatcher
    invocation_error: PhraseMatcher
    running: PhraseMatcher
    noop: PhraseMatcher
    number_words: NumberWords
    partial: PhraseMatcher
    check_failure: PhraseMatcher
    failure_count: PhraseMatcher
    stated_failure: PhraseMatcher
    create_conflict: PhraseMatcher
    future: PhraseMatcher
    resolution_claim: PhraseMatcher
    all_clear: PhraseMatcher
    universal: PhraseMatcher
    total_claim: PhraseMatcher
    upper_bound: PhraseMatcher
    lower_bound: PhraseMatcher
    missing_file: PhraseMatcher
    completion: PhraseMatcher
