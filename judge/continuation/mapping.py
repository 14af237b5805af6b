"""Tools the sandbox cannot run (a cloud CLI, a domain API), served by a user-supplied mapping.

A mapping file (YAML or JSON; paths in it are relative to the file, and ``{dir}`` in a command is the file's
directory)::

    programs:                               # a program the sandbox lacks, replaced by a local command;
      lark-cli: python {dir}/fake_lark.py   # the arguments of each use are appended (a shim on PATH)
    commands:                               # a canned receipt for a shell command starting with these words
      - prefix: lark-cli base fields create
        receipt: receipts/fields-create.json
    tools:                                  # a tool other than Bash/Read/Write/Edit, by name:
      present_files: {receipt: receipts/present.txt}                   # a canned receipt, or
      get_order_details: {run: python {dir}/tau.py get_order_details}   # a local command (arguments as JSON on stdin)
    external: [aws]                         # programs never run for real, even when installed here
    network: false                          # true: tool calls may reach the network (bubblewrap shares it)
    path: [/opt/py312/bin, /usr/bin, /bin]  # the tools' PATH after the shims (default: the harness's PATH
                                            # without its own interpreter's directories: the system's python3)

A canned receipt file is JSON (``content``, optional ``exit_code`` and ``is_error``) or plain text (a
successful receipt with that content). Every served receipt is recorded as ``mapped`` with the rule that
served it, so a reader can tell it from an executed one.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from judge.continuation.confine import Confinement, Isolation
from judge.continuation.sandbox import Sandbox, truncate
from judge.model import Receipt, ToolCall

_PROGRAM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
MAPPED_LOG = "mapped-programs.log"


class MappingError(ValueError):
    """A mapping file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class CommandRule:
    """A canned receipt for shell commands whose words start with ``words``."""

    words: tuple[str, ...]
    receipt: Receipt
    source: str


@dataclass(frozen=True)
class ToolRule:
    """A non-sandbox tool served by a local command (``run``) or a canned ``receipt``."""

    name: str
    run: str | None
    receipt: Receipt | None
    source: str


@dataclass
class CommandMapping:
    """The user's mapping for what the sandbox cannot run. The empty mapping maps nothing."""

    programs: dict[str, str] = field(default_factory=dict)
    commands: list[CommandRule] = field(default_factory=list)
    tools: dict[str, ToolRule] = field(default_factory=dict)
    external: frozenset[str] = frozenset()
    network: bool = False
    path: tuple[str, ...] | None = None
    source: str | None = None

    @classmethod
    def load(cls, path: Path) -> CommandMapping:
        """Read a mapping file; any problem is a :class:`MappingError` naming the file and the entry."""
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise MappingError(f"{path}: cannot read the mapping: {error}") from None
        return cls.from_dict(data or {}, base_dir=path.resolve().parent, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, base_dir: Path, source: str = "<mapping>") -> CommandMapping:
        """Build a mapping from parsed YAML/JSON; ``base_dir`` anchors relative receipt paths and ``{dir}``."""
        if not isinstance(data, dict):
            raise MappingError(f"{source}: the mapping must be an object with programs/commands/tools/external")
        unknown = set(data) - {"programs", "commands", "tools", "external", "network", "path"}
        if unknown:
            raise MappingError(f"{source}: unknown key(s) {', '.join(sorted(unknown))} (programs, commands, tools, external, "
                               "network, path)")
        where_dir = shlex.quote(str(base_dir))
        programs: dict[str, str] = {}
        for name, run in (data.get("programs") or {}).items():
            if not _PROGRAM_NAME.fullmatch(str(name)) or not isinstance(run, str) or not run.strip():
                raise MappingError(f"{source}: programs.{name}: needs a program name and a command string")
            programs[str(name)] = run.replace("{dir}", where_dir)
        commands = []
        for index, rule in enumerate(data.get("commands") or []):
            where = f"{source}: commands[{index}]"
            if not isinstance(rule, dict) or not isinstance(rule.get("prefix"), str) or "receipt" not in rule:
                raise MappingError(f"{where}: needs 'prefix' (the command's first words) and 'receipt' (a file)")
            try:
                words = tuple(shlex.split(rule["prefix"]))
            except ValueError as error:
                raise MappingError(f"{where}: prefix does not parse as shell words: {error}") from None
            if not words:
                raise MappingError(f"{where}: empty prefix")
            commands.append(CommandRule(words, _canned(base_dir / str(rule["receipt"]), where), where))
        tools: dict[str, ToolRule] = {}
        for name, rule in (data.get("tools") or {}).items():
            where = f"{source}: tools.{name}"
            if not isinstance(rule, dict) or len({"run", "receipt"} & set(rule)) != 1:
                raise MappingError(f"{where}: needs exactly one of 'run' (a local command) or 'receipt' (a file)")
            run = rule.get("run")
            if run is not None and (not isinstance(run, str) or not run.strip()):
                raise MappingError(f"{where}: 'run' must be a command string")
            receipt = _canned(base_dir / str(rule["receipt"]), where) if "receipt" in rule else None
            tools[str(name).lower()] = ToolRule(str(name), run.replace("{dir}", where_dir) if run else None, receipt, where)
        external = data.get("external") or []
        if not isinstance(external, list) or not all(isinstance(e, str) and _PROGRAM_NAME.fullmatch(e) for e in external):
            raise MappingError(f"{source}: external must be a list of program names")
        network = data.get("network", False)
        if not isinstance(network, bool):
            raise MappingError(f"{source}: network must be true or false")
        path = data.get("path")
        if path is not None and (not isinstance(path, list) or not path or not all(isinstance(d, str) and d for d in path)):
            raise MappingError(f"{source}: path must be a non-empty list of directories")
        return cls(programs=programs, commands=commands, tools=tools, external=frozenset(external), network=network,
                   path=tuple(str(base_dir / d.replace("{dir}", str(base_dir))) for d in path) if path else None,
                   source=source)

    def confinement(self, isolation: Isolation) -> Confinement:
        """How the tool processes of an arm run under this mapping (its network and PATH) and ``isolation``."""
        return Confinement(isolation=isolation, network=self.network, path=self.path)

    # --- matching ------------------------------------------------------------------------------

    def command_rule(self, command: str) -> CommandRule | None:
        """The most specific canned-receipt rule whose words start ``command``, if any."""
        try:
            words = tuple(shlex.split(command))
        except ValueError:
            return None
        matches = [r for r in self.commands if words[:len(r.words)] == r.words]
        return max(matches, key=lambda r: len(r.words), default=None)

    def tool_rule(self, name: str) -> ToolRule | None:
        return self.tools.get(name.lower())

    def external_in(self, command: str) -> list[str]:
        """External programs named in ``command`` that no program mapping replaces (they must not run here)."""
        return sorted(name for name in self.external - set(self.programs)
                      if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", command))

    # --- running -------------------------------------------------------------------------------

    def install(self, sandbox: Sandbox) -> None:
        """Put a shim for each mapped program on the sandbox's PATH; each use is logged for the receipt record."""
        log = shlex.quote(str(sandbox.arm_dir / MAPPED_LOG))
        for name, run in self.programs.items():
            shim = sandbox.bin_dir / name
            shim.write_text(f"#!/bin/sh\nprintf '%s\\n' {shlex.quote(name)} >> {log}\n{run} \"$@\"\n", encoding="utf-8")
            shim.chmod(0o755)

    @staticmethod
    def used_programs(sandbox: Sandbox) -> list[str]:
        """Mapped programs a command used since the last look (the shims' log is emptied)."""
        log = sandbox.arm_dir / MAPPED_LOG
        if not log.exists():
            return []
        names = log.read_text(encoding="utf-8").split()
        log.unlink()
        return sorted(set(names))

    async def run_tool(self, rule: ToolRule, call: ToolCall, sandbox: Sandbox) -> Receipt:
        """Serve a non-sandbox tool call: its canned receipt, or its local command fed the arguments as JSON."""
        if rule.receipt is not None:
            return rule.receipt.model_copy(update={"content": truncate(rule.receipt.content, sandbox.limits.output_chars)})
        assert rule.run is not None
        arguments = call.raw_arguments if call.arguments_error else json.dumps(call.arguments, ensure_ascii=False)
        return await sandbox.bash(rule.run, stdin=(arguments or "null").encode("utf-8"), session=False)


def _canned(path: Path, where: str) -> Receipt:
    """A canned receipt file: JSON with ``content`` (``exit_code``, ``is_error`` optional), or plain text."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise MappingError(f"{where}: cannot read receipt file {path}: {error.strerror or error}") from None
    if path.suffix.lower() != ".json":
        return Receipt(content=text)
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("content"), str):
            raise MappingError(f"{where}: {path}: a JSON receipt needs a 'content' string")
        receipt = Receipt.model_validate({k: data[k] for k in ("content", "exit_code", "is_error") if k in data})
    except (json.JSONDecodeError, ValidationError) as error:
        raise MappingError(f"{where}: {path}: not a receipt: {str(error).splitlines()[0]}") from None
    return receipt
