"""The OpenAI chat fine-tuning format check, after OpenAI's cookbook recipe "Data preparation and analysis for
chat model fine-tuning" (``examples/Chat_finetuning_data_prep.ipynb``), brought to the tool-calling format.

The recipe's error checks, with its error names: ``data_type`` (a line is not an object),
``missing_messages_list``, ``message_missing_key`` (``role`` or ``content``), ``message_unrecognized_key``,
``unrecognized_role``, ``missing_content`` (content must be text, and not empty unless the message calls a
tool), ``example_missing_assistant_message``. Added for the tool-calling format: ``unrecognized_key`` (a
top-level key other than ``messages``, ``tools``, ``parallel_tool_calls``), ``tool_calls_shape`` (a call needs
a string ``id``, ``type: function`` and a ``function`` with a string ``name`` and string ``arguments``),
``tool_call_arguments_not_json``, ``tool_result_unpaired`` (a ``tool`` message whose ``tool_call_id`` no earlier
call made), ``tools_shape``, ``weight_on_non_assistant``, ``invalid_weight`` (only 0 or 1), and
``example_without_trained_message`` (every assistant weight is 0: nothing to learn).

The recipe's warnings and token counts: examples missing a system or a user message, tokens per example
counted as the recipe does (3 per message, the text of every value, 1 per name, 3 to prime the reply; tool
calls and the ``tools`` list counted as their JSON text, ``weight`` not counted) and examples over the
per-example limit, which the API truncates. Tokens are counted with tiktoken when it is installed and can load
its encoding, otherwise estimated (:func:`judge.prompting.estimate_tokens`); the report says which.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.prompting import estimate_tokens, token_count_method

TOP_LEVEL_KEYS = frozenset({"messages", "tools", "parallel_tool_calls"})
MESSAGE_KEYS = frozenset({"role", "content", "name", "weight", "function_call", "tool_calls", "tool_call_id"})
ROLES = frozenset({"system", "user", "assistant", "tool", "function"})


def example_errors(example: Any) -> list[str]:
    """The format errors of one example (a parsed line), as the recipe's error names; empty when it is valid."""
    if not isinstance(example, dict):
        return ["data_type"]
    errors: list[str] = []
    if set(example) - TOP_LEVEL_KEYS:
        errors.append("unrecognized_key")
    messages = example.get("messages")
    if not messages or not isinstance(messages, list):
        return [*errors, "missing_messages_list"]
    if "tools" in example and not _tools_ok(example["tools"]):
        errors.append("tools_shape")
    call_ids: set[str] = set()
    for message in messages:
        if not isinstance(message, dict):
            errors.append("data_type")
            continue
        errors.extend(_message_errors(message, call_ids))
    assistants = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
    if not assistants:
        errors.append("example_missing_assistant_message")
    elif all(m.get("weight", 1) == 0 for m in assistants):
        errors.append("example_without_trained_message")
    return errors


def _message_errors(message: dict[str, Any], call_ids: set[str]) -> list[str]:
    errors: list[str] = []
    role = message.get("role")
    if "role" not in message or "content" not in message:
        errors.append("message_missing_key")
    if set(message) - MESSAGE_KEYS:
        errors.append("message_unrecognized_key")
    if role not in ROLES:
        errors.append("unrecognized_role")
    content = message.get("content")
    calls = message.get("tool_calls")
    calling = bool(calls) or bool(message.get("function_call"))
    if not (content is None and calling) and (not isinstance(content, str) or (not content and not calling)):
        errors.append("missing_content")
    if "weight" in message:
        if role != "assistant":
            errors.append("weight_on_non_assistant")
        if message["weight"] not in (0, 1) or isinstance(message["weight"], bool):
            errors.append("invalid_weight")
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list):
            errors.append("tool_calls_shape")
        else:
            for call in calls:
                problem = _call_problem(call)
                if problem:
                    errors.append(problem)
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    call_ids.add(call["id"])
    if role == "tool" and message.get("tool_call_id") not in call_ids:
        errors.append("tool_result_unpaired")
    return errors


def _call_problem(call: Any) -> str | None:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"] or call.get("type") != "function":
        return "tool_calls_shape"
    function = call.get("function")
    if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
        return "tool_calls_shape"
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        return "tool_calls_shape"
    try:
        json.loads(arguments)
    except json.JSONDecodeError:
        return "tool_call_arguments_not_json"
    return None


def _tools_ok(tools: Any) -> bool:
    if not isinstance(tools, list):
        return False
    for tool in tools:
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("function"), dict):
            return False
        function = tool["function"]
        if not isinstance(function.get("name"), str) or not function["name"]:
            return False
        if "parameters" in function and not isinstance(function["parameters"], dict):
            return False
    return True


def example_tokens(example: dict[str, Any]) -> int:
    """Tokens of one example, counted as the recipe's ``num_tokens_from_messages`` (see the module docstring)."""
    total = 3  # every reply is primed with <|start|>assistant<|message|>
    for message in example.get("messages") or []:
        total += 3
        for key, value in message.items():
            if key == "weight" or value is None:
                continue
            total += estimate_tokens(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
            if key == "name":
                total += 1
    if example.get("tools"):
        total += estimate_tokens(json.dumps(example["tools"], ensure_ascii=False))
    return total


@dataclass
class FormatReport:
    """The check of one JSONL file: error counts (with the first line of each), warnings and token figures."""

    examples: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    first_line: dict[str, int] = field(default_factory=dict)
    missing_system: int = 0
    missing_user: int = 0
    tokens: list[int] = field(default_factory=list)
    max_tokens: int = 0
    method: str = ""

    @property
    def over_limit(self) -> int:
        return sum(1 for t in self.tokens if t > self.max_tokens)

    def as_dict(self) -> dict[str, Any]:
        tokens = self.tokens
        return {
            "examples": self.examples,
            "errors": dict(sorted(self.errors.items())),
            "first_error_line": dict(sorted(self.first_line.items())),
            "warnings": {"missing_system_message": self.missing_system, "missing_user_message": self.missing_user,
                         "over_token_limit": self.over_limit},
            "tokens": {"counted_by": self.method, "limit_per_example": self.max_tokens,
                       "min": min(tokens) if tokens else None, "max": max(tokens) if tokens else None,
                       "mean": round(statistics.fmean(tokens), 1) if tokens else None,
                       "total": sum(tokens)},
        }


def check_openai_file(path: Path, max_tokens: int) -> FormatReport:
    """Check every line of an OpenAI chat fine-tuning JSONL file."""
    report = FormatReport(max_tokens=max_tokens, method=token_count_method())
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            report.examples += 1
            try:
                example = json.loads(line)
            except json.JSONDecodeError:
                example = None
            errors = example_errors(example) if example is not None else ["data_type"]
            for error in errors:
                report.errors[error] += 1
                report.first_line.setdefault(error, number)
            if not isinstance(example, dict) or not isinstance(example.get("messages"), list):
                continue
            roles = {m.get("role") for m in example["messages"] if isinstance(m, dict)}
            report.missing_system += "system" not in roles
            report.missing_user += "user" not in roles
            report.tokens.append(example_tokens(example))
    return report
