"""The sandbox's tools: Claude Code-style names and schemas, and the aliases real logs use for them.

Every call is normalised into a :class:`SandboxCall` (a kind and the arguments under one set of names) before
it runs, so ``Bash {command}``, ``execute_bash {command}`` (OpenHands), ``bash {cmd}`` (inspect_ai),
``Write {file_path, content}`` and ``str_replace_editor {command: "create", path, file_text}`` (SWE-agent,
OpenHands, Anthropic's text editor) reach the same code. A call with a sandbox tool's name but arguments the
tool cannot take raises :class:`ArgumentError`; its receipt is an error, as a real tool's validation would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from judge.model import ToolCall, ToolSpec
from judge.repair.calls import SHELL_TOOL_NAMES, is_plan_call

ToolKind = Literal["bash", "read", "write", "edit", "insert", "plan"]

READ_NAMES = {"read", "read_file", "readfile", "view_file", "open_file"}
WRITE_NAMES = {"write", "write_file", "writefile", "create_file"}
EDIT_NAMES = {"edit", "edit_file", "str_replace", "replace_in_file"}
# One tool with a sub-command: view / create / str_replace / insert (undo_edit is not supported).
EDITOR_NAMES = {"str_replace_editor", "str_replace_based_edit_tool", "text_editor"}


class ArgumentError(ValueError):
    """The call names a sandbox tool, with arguments that tool cannot run."""


@dataclass(frozen=True)
class SandboxCall:
    """A call the sandbox can run: ``kind`` and the arguments under the sandbox's own names.

    bash: ``command``, ``timeout_s`` (None = default); read: ``path``, ``offset`` (1-based first line),
    ``limit`` (lines), ``list_dirs``; write: ``path``, ``content``; edit: ``path``, ``old``, ``new``,
    ``replace_all``; insert: ``path``, ``line`` (insert after it; 0 = at the top), ``text``; plan: ``plan``.
    """

    kind: ToolKind
    args: dict[str, Any] = field(default_factory=dict)


def _pick(args: dict[str, Any], *keys: str) -> Any:
    return next((args[k] for k in keys if args.get(k) is not None), None)


def _text(args: dict[str, Any], tool: str, *keys: str, required: bool = True) -> str | None:
    value = _pick(args, *keys)
    if value is None:
        if required:
            raise ArgumentError(f"{tool} needs {keys[0]}")
        return None
    if not isinstance(value, str):
        raise ArgumentError(f"{tool}: {keys[0]} must be a string, not {type(value).__name__}")
    return value


def _int(args: dict[str, Any], tool: str, *keys: str) -> int | None:
    value = _pick(args, *keys)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise ArgumentError(f"{tool}: {keys[0]} must be an integer, not {value!r}")
    return int(value)


def _timeout_s(call: ToolCall, args: dict[str, Any]) -> float | None:
    value = _pick(args, "timeout", "timeout_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ArgumentError(f"{call.name}: timeout must be a positive number, not {value!r}")
    # Claude Code's Bash takes milliseconds; the other shells' (OpenHands, inspect_ai) take seconds.
    return float(value) / 1000.0 if call.name == "Bash" and "timeout" in args else float(value)


def normalise(call: ToolCall) -> SandboxCall | None:
    """The sandbox call for ``call``, or None when no sandbox tool has its name (a mapping or a stop decides)."""
    name = call.name.lower()
    known = name in SHELL_TOOL_NAMES | READ_NAMES | WRITE_NAMES | EDIT_NAMES | EDITOR_NAMES or is_plan_call(call)
    if not known:
        return None
    if call.arguments_error:
        raise ArgumentError(f"{call.name}: the arguments are not valid JSON ({call.arguments_error})")
    if is_plan_call(call):
        return SandboxCall("plan", {"plan": call.arguments})
    if name in SHELL_TOOL_NAMES and isinstance(call.arguments, str):
        return SandboxCall("bash", {"command": call.arguments, "timeout_s": None})
    args = call.arguments if isinstance(call.arguments, dict) else None
    if args is None:
        raise ArgumentError(f"{call.name}: arguments must be a JSON object")
    if name in SHELL_TOOL_NAMES:
        if args.get("run_in_background") or args.get("is_input"):
            raise ArgumentError(f"{call.name}: background and interactive input are not supported by the sandbox")
        command = _text(args, call.name, "command", "cmd", "script")
        return SandboxCall("bash", {"command": command, "timeout_s": _timeout_s(call, args)})
    if name in EDITOR_NAMES:
        return _editor(call, args)
    path = _text(args, call.name, "file_path", "path", "filename", "file")
    if name in READ_NAMES:
        return SandboxCall("read", {"path": path, "offset": _int(args, call.name, "offset"), "limit": _int(args, call.name, "limit"),
                                    "list_dirs": False})
    if name in WRITE_NAMES:
        return SandboxCall("write", {"path": path, "content": _text(args, call.name, "content", "file_text", "text", "contents")})
    return SandboxCall("edit", {"path": path, "old": _text(args, call.name, "old_string", "old_str", "old_text", "search"),
                                "new": _text(args, call.name, "new_string", "new_str", "new_text", "replace"),
                                "replace_all": bool(_pick(args, "replace_all", "replace-all"))})


def _editor(call: ToolCall, args: dict[str, Any]) -> SandboxCall:
    command = args.get("command")
    path = _text(args, call.name, "path", "file_path")
    if command == "view":
        window = args.get("view_range")
        offset = limit = None
        if window is not None:
            if not (isinstance(window, list) and len(window) == 2 and all(isinstance(v, int) for v in window)):
                raise ArgumentError(f"{call.name}: view_range must be [start, end]")
            offset, limit = window[0], (None if window[1] == -1 else window[1] - window[0] + 1)
        return SandboxCall("read", {"path": path, "offset": offset, "limit": limit, "list_dirs": True})
    if command == "create":
        return SandboxCall("write", {"path": path, "content": _text(args, call.name, "file_text", "content")})
    if command == "str_replace":
        return SandboxCall("edit", {"path": path, "old": _text(args, call.name, "old_str", "old_string"),
                                    "new": _text(args, call.name, "new_str", "new_string", required=False) or "",
                                    "replace_all": False})
    if command == "insert":
        line = _int(args, call.name, "insert_line")
        if line is None:
            raise ArgumentError(f"{call.name}: insert needs insert_line")
        return SandboxCall("insert", {"path": path, "line": line, "text": _text(args, call.name, "new_str", "insert_text")})
    raise ArgumentError(f"{call.name}: command {command!r} is not supported by the sandbox (view, create, str_replace, insert)")


_PATH = {"type": "string", "description": "Path of the file: relative to the top of the working directory (not to the "
                                          "shell's current directory), or absolute inside it."}

SCHEMAS: dict[ToolKind, ToolSpec] = {
    "bash": ToolSpec(name="Bash", description="Run a bash command. Each call is a new shell that starts in the directory where the "
                       "previous call ended (initially the working directory); variables do not carry over; stdin "
                       "is closed; output is truncated past the limit.", parameters={
                           "type": "object", "required": ["command"], "additionalProperties": False,
                           "properties": {"command": {"type": "string", "description": "The command to run."},
                                          "timeout": {"type": "number", "description": "Timeout in milliseconds (capped by the sandbox)."},
                                          "description": {"type": "string", "description": "What the command does, in a few words."}}}),
    "read": ToolSpec(name="Read", description="Read a text file.", parameters={
        "type": "object", "required": ["file_path"], "additionalProperties": False,
        "properties": {"file_path": _PATH, "offset": {"type": "integer", "description": "First line to read (1-based)."},
                       "limit": {"type": "integer", "description": "Number of lines to read."}}}),
    "write": ToolSpec(name="Write", description="Write a file (created with its directories, or overwritten).", parameters={
        "type": "object", "required": ["file_path", "content"], "additionalProperties": False,
        "properties": {"file_path": _PATH, "content": {"type": "string"}}}),
    "edit": ToolSpec(name="Edit", description="Replace old_string with new_string in a file; old_string must occur exactly once "
                       "unless replace_all is true.", parameters={
                           "type": "object", "required": ["file_path", "old_string", "new_string"], "additionalProperties": False,
                           "properties": {"file_path": _PATH, "old_string": {"type": "string"}, "new_string": {"type": "string"},
                                          "replace_all": {"type": "boolean", "default": False}}}),
    "plan": ToolSpec(name="TodoWrite", description="Replace the task list (the plan).", parameters={
        "type": "object", "required": ["todos"],
        "properties": {"todos": {"type": "array", "items": {
            "type": "object", "required": ["content", "status"],
            "properties": {"id": {"type": "string"}, "content": {"type": "string"},
                           "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}}}}}}),
}

MAPPED_TOOL_PARAMETERS: dict[str, Any] = {"type": "object", "additionalProperties": True}
