"""The format registry: one entry per supported log format, in detection order."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from judge.importers import (
    anthropic_messages,
    atif,
    canonical,
    inspect_log,
    mast,
    mini_swe_agent,
    openai_chat,
    openhands,
    otel_spans,
    swe_agent,
    tau,
    who_and_when,
)
from judge.importers._common import Source
from judge.model import Trajectory
from judge.plugins import load_plugins
from judge.schema import Reject

PLUGIN_GROUP = "trajudge.importers"
LOOSE_FORMATS = ("anthropic", "openai")  # shapes many records have: a plugin's format is tried before them


@dataclass(frozen=True)
class FormatSpec:
    """How to recognise and read one format.

    ``split`` turns a JSON document holding several records (an inspect_ai log's samples) into
    ``(record index, record)`` pairs, or returns None when the document is a single record.
    ``whole_list``: a JSON list document is one record of this format (an event or message list), not a list
    of records.
    """

    name: str
    summary: str
    detect: Callable[[Any], bool]
    parse: Callable[[Any, Source], Trajectory]
    split: Callable[[Any], Iterator[tuple[int | None, Any]] | None] | None = None
    whole_list: bool = False
    # Formats whose trajectories are spread over a file's records (span exports: one trace, many lines): the
    # reader hands every (source, record) of such a file to ``gather``, which yields trajectories and rejects.
    gather: Callable[[Iterable[tuple[Source, Any]]], Iterator[Trajectory | Reject]] | None = None


# Order matters: specific shapes first, the loose chat shapes (anthropic, then openai) last.
FORMATS: dict[str, FormatSpec] = {
    spec.name: spec
    for spec in (
        FormatSpec("canonical", "trajudge canonical JSONL (Trajectory.to_json_line)", canonical.detect, canonical.parse),
        FormatSpec("otel", "OpenTelemetry GenAI / OpenInference (Phoenix) / Langfuse span exports", otel_spans.detect,
                   otel_spans.parse, gather=otel_spans.gather),
        FormatSpec("atif", "Harbor ATIF (schema_version ATIF-v1.x, steps)", atif.detect, atif.parse),
        FormatSpec("inspect", "inspect_ai JSON eval log (one trajectory per sample)", inspect_log.detect, inspect_log.parse, split=inspect_log.split),
        FormatSpec("mast", "MAST/MAD multi-agent trace (trace string, annotations, mas_name)", mast.detect, mast.parse),
        FormatSpec("tau", "tau-bench / AgentRx record (traj, task_id, reward)", tau.detect, tau.parse),
        FormatSpec("who-and-when", "Who&When multi-agent log (history, question, mistake_*)", who_and_when.detect, who_and_when.parse),
        FormatSpec("swe-agent", "SWE-agent .traj (history, trajectory, info)", swe_agent.detect, swe_agent.parse),
        FormatSpec("openhands", "OpenHands event list or resolver output (history of events)", openhands.detect, openhands.parse, whole_list=True),
        FormatSpec("mini-swe-agent", "mini-swe-agent message list (mswea_bash_command, <returncode>)", mini_swe_agent.detect, mini_swe_agent.parse, whole_list=True),
        FormatSpec("anthropic", "Anthropic messages (system + content blocks, tool_use/tool_result)", anthropic_messages.detect, anthropic_messages.parse),
        FormatSpec("openai", "OpenAI chat (messages with tool_calls and role=tool results)", openai_chat.detect, openai_chat.parse, whole_list=True),
    )
}


def detect_format(obj: Any) -> str | None:
    """The name of the first format whose shape ``obj`` has, or None (plugin formats included)."""
    load_plugins(PLUGIN_GROUP)
    for spec in FORMATS.values():
        try:
            if spec.detect(obj):
                return spec.name
        except (AttributeError, TypeError):  # a detector meeting a shape it does not expect is a 'no'
            continue
    return None
