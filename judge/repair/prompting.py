"""Teacher and rewrite prompts: versioned files in prompts/, filled strictly, sent through a Provider.

Prompt files use the shared format of ``judge.prompting`` (front matter with ``version:``, role sections,
strict ``{{ var }}`` filling). Trajectory text is neutralised before it is inserted, by the one function every
prompt uses (``judge.prompting.neutralise``, which knows these prompts' delimiters too: <issue>, <evidence>,
<original>, <rewrite>, <failure>), so a trajectory cannot close a delimiter and pose as instructions to the
teacher.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from judge.model import Usage
from judge.prompting import neutralise

__all__ = ["CallResult", "Provider", "call_json", "make_provider_from_spec", "neutralise", "render_prompt"]


class Provider(Protocol):
    """The slice of ``judge.providers.Provider`` the fixer uses."""

    async def complete(self, messages: list[dict[str, Any]], *, schema: dict | None = None, schema_name: str = "verdict",
                       temperature: float | None = None, seed: int | None = None, max_tokens: int | None = None) -> Any: ...


def render_prompt(version: str, **values: Any) -> list[dict[str, str]]:
    """Fill ``prompts/<version>.md`` strictly (shared loader in ``judge.prompting``)."""
    from judge.prompting import load_template

    return load_template(version).render(**values)


@dataclass
class CallResult:
    """One provider call: parsed JSON (or None), the raw text, usage (failed calls too) and an error."""

    parsed: dict[str, Any] | None
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    error: str | None = None


def _usage_of(completion: Any) -> Usage:
    usage = getattr(completion, "usage", None)
    if isinstance(usage, Usage):
        return usage
    if isinstance(usage, dict):
        return Usage(**{k: usage.get(k) for k in ("input_tokens", "output_tokens", "cached_tokens")})
    if usage is not None:
        return Usage(input_tokens=getattr(usage, "input_tokens", None), output_tokens=getattr(usage, "output_tokens", None))
    return Usage()


async def call_json(provider: Provider, messages: list[dict[str, str]], schema: dict, *, schema_name: str = "answer",
                    seed: int | None = None,
                    max_tokens: int = 800, timeout_s: float = 120.0) -> CallResult:
    """Ask for a JSON object; never raises: a failure comes back with ``error`` set and its usage counted."""
    try:
        completion = await asyncio.wait_for(
            provider.complete(messages, schema=schema, schema_name=schema_name, temperature=0.0, seed=seed, max_tokens=max_tokens),
            timeout_s,
        )
    except Exception as error:  # noqa: BLE001 - any provider failure falls back to the template; it is recorded
        return CallResult(parsed=None, error=f"provider_error: {type(error).__name__}: {error}")
    usage = _usage_of(completion)
    text = getattr(completion, "text", "") or ""
    model = getattr(completion, "model", None)
    if getattr(completion, "refusal", None):
        return CallResult(parsed=None, text=text, usage=usage, model=model, error=f"refusal: {completion.refusal}")
    if getattr(completion, "finish_reason", None) == "length":
        return CallResult(parsed=None, text=text, usage=usage, model=model, error="truncated")
    parsed = getattr(completion, "parsed", None)
    if not isinstance(parsed, dict):
        try:
            parsed = json.loads(_strip_fences(text))
        except ValueError:
            return CallResult(parsed=None, text=text, usage=usage, model=model, error="parse_error")
    if not isinstance(parsed, dict):
        return CallResult(parsed=None, text=text, usage=usage, model=model, error="parse_error: not an object")
    return CallResult(parsed=parsed, text=text, usage=usage, model=model)


def _strip_fences(text: str) -> str:
    match = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    return match.group(1) if match else text


def make_provider_from_spec(spec: str, base_url: str | None = None) -> Provider:
    """Build a provider through the panel issue's registry (``judge.providers.make_provider``)."""
    from judge.providers import make_provider

    options: dict[str, Any] = {}
    if base_url:
        options["base_url"] = base_url
    return make_provider(spec, options)
