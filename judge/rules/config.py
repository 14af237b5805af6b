"""The rules judge's configuration: detector switches, thresholds and phrase lists, loaded from YAML.

The file (``rubrics/rules-v1.yaml`` by default) is data, versioned by its ``version`` key; that version is
the judge's ``prompt_version``. Phrase lists are regular expressions, compiled once per config into one
alternation per list, so a detector pays one regex search per text, whatever the number of phrases.
"""

from __future__ import annotations

import re
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


def _alternation(patterns: list[str]) -> re.Pattern[str]:
    if not patterns:
        return re.compile(r"(?!x)x")  # matches nothing
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE | re.MULTILINE)


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

    error: re.Pattern[str]
    environment: re.Pattern[str]
    success: re.Pattern[str]
    claim: re.Pattern[str]
    check_claim: re.Pattern[str]
    test_claim: re.Pattern[str]
    hedge: re.Pattern[str]
    failure_words: re.Pattern[str]
    phantom: re.Pattern[str]
    prior_failure: re.Pattern[str]
