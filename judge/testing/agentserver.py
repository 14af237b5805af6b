"""SCRIPTED agent server: an OpenAI- (or Anthropic-) compatible endpoint that replays fixed tool calls. NOT A MODEL.

It lets ``judge continue --agent openai-compatible:scripted-agent@URL`` run end to end without a model: the
real SDK, the provider layer (retries, rate limits, budget, recorded attempts, kept answers) and the sandbox
all work as with a real model; only the answers are fixed. Each *arm* of the script is chosen by what the
request shows - every text in ``contains`` present and none in ``lacks`` (e.g. the guidance text is what
tells a guided arm from its unguided control) - first match wins, and replays its turns in order: turn ``k``
is sent when the conversation already holds the calls of turns ``1 .. k-1`` (their ids say so), so the server
keeps no state and a repeated or retried request gets the same answer. A request no arm matches, or one past
an arm's last turn, is answered with HTTP 400 naming why: the agent fails visibly, never silently.

Script (YAML or JSON)::

    arms:
      - name: guided
        contains: ["Re-read the original request"]
        turns:
          - content: "Make invalid input raise."
            tool_calls: [{name: Edit, arguments: {file_path: utils/date.py, old_string: "...", new_string: "..."}}]
            usage: {input_tokens: 1800, output_tokens: 90}      # optional: else estimated from the text
          - content: "Fixed; 2 tests pass."
      - name: unguided
        contains: ["parse_date"]
        lacks: ["Re-read the original request"]
        turns: [...]

Run it: ``python -m judge.testing.agentserver --script script.yaml --port 8766`` then
``judge continue RUN --agent openai-compatible:scripted-agent@http://127.0.0.1:8766/v1 ...`` (the model name is
free; ``scripted-agent*`` has made-up prices in rubrics/prices.yaml so that cost figures are not all zero).
``--protocol anthropic`` speaks the Messages API instead (``ANTHROPIC_BASE_URL=http://127.0.0.1:8766``).
"""

from __future__ import annotations

import argparse
import re
import threading
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.testing.servers import FakeLLMServer, Protocol, Scripted

CALL_PREFIX = "scripted-agent"  # ids of the calls this server makes: scripted-agent-<arm>-<turn>-<i>
_CALL_ID = re.compile(rf"^{CALL_PREFIX}-(?P<arm>.+)-(?P<turn>\d+)-\d+$")


class ScriptCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: Any = Field(default_factory=dict)


class ScriptUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_tokens: int
    output_tokens: int
    cached_tokens: int = 0


class ScriptTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = ""
    tool_calls: list[ScriptCall] = Field(default_factory=list)
    usage: ScriptUsage | None = None


class ScriptArm(BaseModel):
    """One arm: chosen when every ``contains`` text is in the request and no ``lacks`` text is."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.:]+$")
    contains: list[str] = Field(default_factory=list)
    lacks: list[str] = Field(default_factory=list)
    turns: list[ScriptTurn]

    def matches(self, text: str) -> bool:
        return all(t in text for t in self.contains) and not any(t in text for t in self.lacks)


class AgentScript(BaseModel):
    model_config = ConfigDict(extra="forbid")

    arms: list[ScriptArm]

    @classmethod
    def load(cls, path: Path | str) -> AgentScript:
        """Read a script file; errors name the file and the entry."""
        try:
            return cls.model_validate(yaml.safe_load(Path(path).read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError) as error:
            raise ValueError(f"{path}: cannot read the script: {error}") from None
        except ValidationError as error:
            first = error.errors()[0]
            raise ValueError(f"{path}: {'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg')}") from None


def request_text(request: dict[str, Any]) -> str:
    """Every text of a chat request (OpenAI or Anthropic form): system, messages, tool results."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for key in ("content", "text"):
                walk(value.get(key))

    walk(request.get("system"))
    walk(request.get("messages"))
    return "\n".join(parts)


def turns_done(request: dict[str, Any], arm: str) -> int:
    """The last turn of ``arm`` whose calls the conversation holds (0: none yet)."""
    done = 0
    for message in request.get("messages") or []:
        ids = [c.get("id") for c in message.get("tool_calls") or []]  # OpenAI
        content = message.get("content")
        if isinstance(content, list):  # Anthropic
            ids += [b.get("id") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        for call_id in ids:
            match = _CALL_ID.match(str(call_id or ""))
            if match and match["arm"] == arm:
                done = max(done, int(match["turn"]))
    return done


class ScriptedAgentServer(FakeLLMServer):
    """A :class:`FakeLLMServer` whose answers come from an :class:`AgentScript`. ``served`` lists (arm, turn) per
    answered request, ``(None, 0)`` for a refused one."""

    def __init__(self, script: AgentScript, protocol: Protocol = "openai", port: int = 0):
        super().__init__(protocol, responder=self._answer, port=port, model="scripted-agent")
        self.script = script
        self.served: list[tuple[str | None, int]] = []
        self._served_lock = threading.Lock()

    def _answer(self, request: dict[str, Any]) -> Scripted:
        text = request_text(request)
        arm = next((a for a in self.script.arms if a.matches(text)), None)
        if arm is None:
            return self._refuse(f"no scripted arm matches this request (arms: {', '.join(a.name for a in self.script.arms)})")
        turn = turns_done(request, arm.name) + 1
        if turn > len(arm.turns):
            return self._refuse(f"arm {arm.name!r} has {len(arm.turns)} turns; turn {turn} was asked for")
        with self._served_lock:
            self.served.append((arm.name, turn))
        step = arm.turns[turn - 1]
        calls = [{"id": f"{CALL_PREFIX}-{arm.name}-{turn}-{i}", "name": c.name, "arguments": c.arguments}
                 for i, c in enumerate(step.tool_calls)]
        usage = ({"input": step.usage.input_tokens, "output": step.usage.output_tokens, "cached": step.usage.cached_tokens}
                 if step.usage else None)
        return Scripted(content=step.content, tool_calls=calls or None, usage=usage)

    def _refuse(self, message: str) -> Scripted:
        with self._served_lock:
            self.served.append((None, 0))
        return Scripted(status=400, error_message=message)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="SCRIPTED agent server (not a model): replays fixed tool calls per arm.")
    parser.add_argument("--script", required=True, type=Path, help="YAML/JSON script (see the module docstring).")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--protocol", choices=("openai", "anthropic"), default="openai")
    args = parser.parse_args(argv)
    server = ScriptedAgentServer(AgentScript.load(args.script), args.protocol, port=args.port)
    server.start()
    print(f"scripted agent server (NOT A MODEL) on {server.base_url}: "
          f"{', '.join(f'{a.name} ({len(a.turns)} turns)' for a in server.script.arms)}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()


__all__ = ["AgentScript", "ScriptedAgentServer", "request_text", "turns_done"]
