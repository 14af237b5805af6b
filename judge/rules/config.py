"""The rules judge's configuration: detector switches, thresholds and phrase lists, loaded from YAML.

The file (``rubrics/rules-v1.yaml`` by default) is data, versioned by its ``version`` key; that version is
the judge's ``prompt_version``. Phrase lists are regular expressions, compiled once per config into one
alternation per list, so a detector pays one regex search per text, whatever the number of phrases.
"""

from __future__ import annotations

import re
import re._constants as _c  # the parsed-pattern opcodes, for necessary_literals
import re._parser as _sre_parser
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from judge.schema import Severity

DEFAULT_FILE = "rules-v1.yaml"


class DetectorSettings(BaseModel):
    """Per-detector switch and severities. Unused fields are ignored by detectors that have no use for them."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    severity: Severity = "severe"
    recovered_severity: Severity = "minor"
    unrecovered_severity: Severity = "severe"
    severe_after: int = Field(default=3, ge=2, description="Identical failures from this count on are severe.")


class EfficiencySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    high_max_waste: float = Field(default=0.10, ge=0, le=1)
    medium_max_waste: float = Field(default=0.30, ge=0, le=1)
    min_calls: int = Field(default=1, ge=0)


class ReceiptSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    head_lines: int = Field(default=15, ge=1)
    tail_lines: int = Field(default=6, ge=0)
    excerpt_chars: int = Field(default=160, ge=20)


class ToolSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan_names: list[str] = Field(default_factory=list)
    check_patterns: list[str] = Field(default_factory=list)
    check_names: list[str] = Field(default_factory=list)
    check_receipt_patterns: list[str] = Field(default_factory=list)
    check_item_patterns: list[str] = Field(default_factory=list)
    read_only_names: list[str] = Field(default_factory=list)
    read_only_commands: list[str] = Field(default_factory=list)
    write_names: list[str] = Field(default_factory=list)
    path_keys: list[str] = Field(default_factory=list)
    command_keys: list[str] = Field(default_factory=list)
    final_names: list[str] = Field(default_factory=list)


PHRASE_LISTS = (
    "error", "environment", "success", "claim", "check_claim", "test_claim", "hedge", "failure_words", "phantom", "prior_failure",
)
DETECTOR_NAMES = (
    "failed-call", "repeated-failure", "environment-fault", "unverified-completion", "plan-receipt-mismatch",
    "stale-evidence", "premature-claim", "phantom-failure-reference", "unpaired-call-id", "budget-exhausted",
)


class RulesConfig(BaseModel):
    """Everything the detectors read. Build with :meth:`load`; a config object is immutable in use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str
    detectors: dict[str, DetectorSettings] = Field(default_factory=dict)
    efficiency: EfficiencySettings = Field(default_factory=EfficiencySettings)
    receipt: ReceiptSettings = Field(default_factory=ReceiptSettings)
    phrases: dict[str, dict[str, list[str]]] = Field(description="list name -> language -> regular expressions")
    tools: ToolSettings = Field(default_factory=ToolSettings)
    source: str | None = Field(default=None, description="The file this config was read from.")

    @field_validator("detectors")
    @classmethod
    def _known_detectors(cls, value: dict[str, DetectorSettings]) -> dict[str, DetectorSettings]:
        unknown = sorted(set(value) - set(DETECTOR_NAMES))
        if unknown:
            raise ValueError(f"unknown detector(s) {unknown}; known: {list(DETECTOR_NAMES)}")
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
                    try:
                        re.compile(pattern)
                    except re.error as error:
                        raise ValueError(f"phrases.{name}.{language}: bad regular expression {pattern!r}: {error}") from None
        return value

    @classmethod
    def load(cls, path: Path | None = None) -> RulesConfig:
        """Read a rules config; ``None`` reads the bundled ``rubrics/rules-v1.yaml``.

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
            raise ValueError(f"{path}: a rules config must be a mapping, got {type(data).__name__}")
        try:
            return cls.model_validate({**data, "source": str(path)})
        except ValueError as error:
            raise ValueError(f"{path}: invalid rules config: {error}") from None

    def settings(self, detector: str) -> DetectorSettings:
        """The detector's settings (defaults when the file does not mention it)."""
        return self.detectors.get(detector) or DetectorSettings()

    def enabled(self, detector: str) -> bool:
        return self.settings(detector).enabled

    # --- compiled patterns (cached on the frozen object) -------------------------------------------

    @cached_property
    def patterns(self) -> CompiledPatterns:
        return CompiledPatterns(self)


def _alternation(patterns: list[str]) -> PhraseMatcher:
    return PhraseMatcher(patterns)


class PhraseMatcher:
    """One phrase list, searched like the alternation of its patterns, but much faster on ordinary text.

    Python's ``re`` tries every branch of an alternation at every position, so a 25-pattern list costs ~100 us
    on a page of text. Instead, every match of most patterns must contain one of a few literals (found by
    :func:`necessary_literals`); one literal-only regex over the lowered text finds which literals occur, and
    only the patterns needing one of them are run. The result is the alternation's: the leftmost match, the
    earliest pattern first at one position. Patterns without a necessary literal always run.
    """

    def __init__(self, patterns: list[str]) -> None:
        self.patterns = patterns
        self.compiled = [re.compile(p, re.IGNORECASE | re.MULTILINE) for p in patterns]
        self.always: list[int] = []
        by_literal: dict[str, set[int]] = {}
        for index, pattern in enumerate(patterns):
            required = necessary_literals(pattern)
            if required is None:
                self.always.append(index)
                continue
            for literal in required:
                by_literal.setdefault(literal, set()).add(index)
        # A literal found in the text also contains every shorter literal inside it: close over substrings.
        self.needs: dict[str, frozenset[int]] = {
            literal: frozenset(i for other, ids in by_literal.items() if other in literal for i in ids)
            for literal in by_literal
        }
        ordered = sorted(by_literal, key=len, reverse=True)
        self.gate = re.compile("|".join(re.escape(x) for x in ordered)) if ordered else None

    def search(self, text: str) -> re.Match[str] | None:
        candidates = set(self.always)
        if self.gate is not None:
            low = text.lower()
            if len(low) == len(text):  # lower() kept positions aligned (true except for a few exotic letters)
                candidates |= self._gated(low)
            else:
                candidates = set(range(len(self.compiled)))
        best: re.Match[str] | None = None
        for index in sorted(candidates):
            match = self.compiled[index].search(text)
            if match is not None and (best is None or match.start() < best.start()):
                best = match
        return best

    def _gated(self, low: str) -> set[int]:
        found: set[int] = set()
        assert self.gate is not None
        for hit in self.gate.finditer(low):
            found |= self.needs[hit.group()]
            # finditer skips literals that start inside a hit; look for them there too.
            for position in range(hit.start() + 1, hit.end()):
                inner = self.gate.match(low, position)
                if inner is not None:
                    found |= self.needs[inner.group()]
        return found


def necessary_literals(pattern: str) -> set[str] | None:
    """Lower-cased strings one of which every match of ``pattern`` contains; None when there is no such set.

    Walks the parsed pattern: a sequence needs the strongest requirement of its parts (its longest run of
    literal characters, or a group's requirement), an alternation needs one of its branches' requirements, a
    repeat needs its item's only when it must occur at least once.
    """
    try:
        parsed = _sre_parser.parse(pattern, re.IGNORECASE)
    except re.error:
        return None
    return _sequence(list(parsed))


def _sequence(items: list[tuple[Any, Any]]) -> set[str] | None:
    candidates: list[set[str]] = []
    run: list[str] = []
    for op, value in items:
        if op is _c.LITERAL:
            run.append(chr(value).lower())
            continue
        if run:
            candidates.append({"".join(run)})
            run = []
        required = _node(op, value)
        if required:
            candidates.append(required)
    if run:
        candidates.append({"".join(run)})
    if not candidates:
        return None
    return max(candidates, key=lambda c: (min(len(x) for x in c), -len(c)))


def _node(op: Any, value: Any) -> set[str] | None:
    if op is _c.SUBPATTERN:
        return _sequence(list(value[-1]))
    if op is _c.BRANCH:
        union: set[str] = set()
        for branch in value[1]:
            required = _sequence(list(branch))
            if required is None:
                return None
            union |= required
        return union
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        low, _, item = value
        return _sequence(list(item)) if low >= 1 else None
    return None


class CompiledPatterns:
    """One compiled alternation per phrase list and tool list."""

    def __init__(self, config: RulesConfig) -> None:
        for name in PHRASE_LISTS:
            merged = [p for language in config.phrases.get(name, {}).values() for p in language]
            setattr(self, name, _alternation(merged))
        tools = config.tools
        self.plan_name = _alternation(tools.plan_names)
        self.check = _alternation(tools.check_patterns)
        self.check_name = _alternation(tools.check_names)
        self.check_receipt = _alternation(tools.check_receipt_patterns)
        self.check_item = _alternation(tools.check_item_patterns)
        self.read_only_name = _alternation(tools.read_only_names)
        self.read_only_command = _alternation(tools.read_only_commands)
        self.write_name = _alternation(tools.write_names)
        self.final_name = _alternation(tools.final_names)

    error: PhraseMatcher
    environment: PhraseMatcher
    success: PhraseMatcher
    claim: PhraseMatcher
    check_claim: PhraseMatcher
    test_claim: PhraseMatcher
    hedge: PhraseMatcher
    failure_words: PhraseMatcher
    phantom: PhraseMatcher
    prior_failure: PhraseMatcher
