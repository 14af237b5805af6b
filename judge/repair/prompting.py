"""Teacher and rewrite prompts: versioned files in prompts/, filled strictly, sent on the judges' call path.

Prompt files use the shared format of ``judge.prompting`` (front matter with ``version:``, role sections,
strict ``{{ var }}`` filling). Trajectory text is neutralised before it is inserted, by the one function every
prompt uses (``judge.prompting.neutralise``, which knows these prompts' delimiters too: <issue>, <evidence>,
<original>, <rewrite>, <failure>; the rewrite checker's found requirements go in <evidence>), so a trajectory
cannot close a delimiter and pose as instructions to the teacher.

Every call goes through :func:`judge.providers.retry.complete_with_retries`, as a judge's does: retries with
backoff on rate limits, server errors and timeouts, the per-model rate limits, a per-call timeout and the
budget cap. Within a run (:class:`ModelCaller` with the run's :class:`~judge.runcalls.RunCalls`) each attempt
is also recorded in the run store before it is sent, counts in the run's spend against its ``--max-cost``, and
each answer is kept: repairing the run again pays for no call twice.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from judge.model import Usage
from judge.pricing import add_costs
from judge.prompting import estimate_tokens, neutralise
from judge.providers import Provider, base_url_for, make_provider
from judge.providers.errors import ProviderError, unscored_reason
from judge.providers.retry import Attempt, BudgetExceeded, CallRuntime, complete_with_retries
from judge.runcalls import NOT_CACHED_REASONS, RunCalls
from judge.store import cache_key

__all__ = ["CallResult", "ModelCaller", "Provider", "call_json", "make_provider_from_spec", "neutralise", "render_prompt"]

TEMPERATURE = 0.0  # teacher and rewrite answers should not vary between reruns


@dataclass
class ModelCaller:
    """The teacher (or rewrite) model and the path of its calls.

    ``calls``: the run's :class:`~judge.runcalls.RunCalls` (its runtime, store and budget); without it (one
    trajectory outside a run, tests) the calls still retry, rate-limit and time out, on a runtime of their own.
    ``label`` names the calls in the store's attempt rows (``teacher:SPEC``, redacted).
    """

    provider: Provider
    calls: RunCalls | None = None
    label: str = "teacher"
    runtime: CallRuntime = field(default_factory=CallRuntime)

    def __post_init__(self) -> None:
        if self.calls is not None:
            self.runtime = self.calls.runtime

    @classmethod
    def of(cls, target: Provider | ModelCaller) -> ModelCaller:
        """``target`` itself, or a caller of the bare provider ``target``."""
        return target if isinstance(target, ModelCaller) else cls(target)

    def key(self, purpose: str, messages: list[dict[str, str]], schema: dict[str, Any], schema_name: str,
            max_tokens: int, seed: int | None) -> str:
        """The answer's cache key: the model, where it is served, and everything in the request."""
        request = json.dumps([messages, schema], sort_keys=True, ensure_ascii=False)
        return cache_key(purpose=purpose, provider=self.provider.provider, model=self.provider.model,
                         endpoint=getattr(self.provider, "endpoint", None), schema_name=schema_name,
                         max_tokens=max_tokens, seed=seed, temperature=TEMPERATURE,
                         request=hashlib.sha256(request.encode("utf-8")).hexdigest())


def render_prompt(version: str, **values: Any) -> list[dict[str, str]]:
    """Fill ``prompts/<version>.md`` strictly (shared loader in ``judge.prompting``)."""
    from judge.prompting import load_template

    return load_template(version).render(**values)


@dataclass
class CallResult:
    """One model call: parsed JSON (or None), the raw text, usage and cost (failed attempts too), an error, and
    whether the answer came from the run store (its usage and cost are then what it cost when it was made)."""

    parsed: dict[str, Any] | None
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    error: str | None = None
    cost_usd: float | None = None
    cached: bool = False

    @property
    def reason(self) -> str | None:
        """The failure's kind (``parse_error``, ``provider_error``, ``budget_exceeded``...), None for an answer."""
        return self.error.split(":", 1)[0] if self.error else None

    def stored(self) -> dict[str, Any]:
        return {"parsed": self.parsed, "text": self.text, "usage": self.usage.model_dump(), "model": self.model,
                "error": self.error, "cost_usd": self.cost_usd}


async def call_json(target: Provider | ModelCaller, messages: list[dict[str, str]], schema: dict[str, Any], *,
                    schema_name: str = "answer", purpose: str = "teacher", trajectory_id: str = "",
                    seed: int | None = None, max_tokens: int = 800) -> CallResult:
    """Ask for a JSON object; never raises: a failure comes back with ``error`` set and its usage counted.

    ``target`` is a :class:`ModelCaller` (or a bare provider); ``purpose`` and ``trajectory_id`` name the call in
    the run store. An answer the store holds is returned without a call.
    """
    caller = ModelCaller.of(target)
    store = caller.calls.store if caller.calls is not None else None
    key = caller.key(purpose, messages, schema, schema_name, max_tokens, seed)
    if store is not None and (kept := store.get_answer(key)) is not None:
        return CallResult(**{**kept, "usage": Usage(**kept.get("usage") or {})}, cached=True)
    on_send, on_attempt = (caller.calls.hooks(key, trajectory_id, caller.label, 0) if caller.calls is not None
                           else (None, None))
    result = await _call(caller, messages, schema, schema_name, seed, max_tokens, on_send, on_attempt)
    if store is not None and result.reason not in NOT_CACHED_REASONS:
        store.put_answer(key, purpose, trajectory_id, f"{caller.provider.provider}:{caller.provider.model}", result.stored())
    return result


async def _call(caller: ModelCaller, messages: list[dict[str, str]], schema: dict[str, Any], schema_name: str, seed: int | None,
                max_tokens: int, on_send: Any, on_attempt: Any) -> CallResult:
    try:
        completion, attempts = await complete_with_retries(
            caller.provider, messages, runtime=caller.runtime,
            estimated_input_tokens=sum(estimate_tokens(str(m["content"])) for m in messages),
            on_attempt=on_attempt, on_send=on_send, schema=schema, schema_name=schema_name, temperature=TEMPERATURE,
            seed=seed, max_tokens=max_tokens)
    except BudgetExceeded as error:
        return CallResult(parsed=None, error=f"budget_exceeded: {error}")
    except ProviderError as error:
        made: list[Attempt] = getattr(error, "attempts", [])
        return CallResult(parsed=None, usage=_usage(made), cost_usd=_cost(made),
                          error=f"{unscored_reason(error)}: {error} (after {len(made)} attempt(s))")
    except Exception as error:  # noqa: BLE001 - any provider failure falls back to the template; it is recorded
        return CallResult(parsed=None, error=f"provider_error: {type(error).__name__}: {error}")
    usage, cost = _usage(attempts), _cost(attempts)
    text, model = completion.text or "", completion.model
    if completion.refusal or completion.finish_reason in ("refusal", "content_filter"):
        return CallResult(parsed=None, text=text, usage=usage, model=model, cost_usd=cost,
                          error=f"refusal: {completion.refusal or completion.finish_reason}")
    if completion.finish_reason == "length":
        return CallResult(parsed=None, text=text, usage=usage, model=model, cost_usd=cost, error="truncated")
    parsed: Any = completion.parsed
    if not isinstance(parsed, dict):
        try:
            parsed = json.loads(_strip_fences(text))
        except ValueError:
            return CallResult(parsed=None, text=text, usage=usage, model=model, cost_usd=cost, error="parse_error")
    if not isinstance(parsed, dict):
        return CallResult(parsed=None, text=text, usage=usage, model=model, cost_usd=cost,
                          error="parse_error: not an object")
    return CallResult(parsed=parsed, text=text, usage=usage, model=model, cost_usd=cost)


def _usage(attempts: list[Attempt]) -> Usage:
    total = Usage()
    for attempt in attempts:
        total = total + attempt.usage
    return total


def _cost(attempts: list[Attempt]) -> float | None:
    cost: float | None = None
    for attempt in attempts:
        cost = add_costs(cost, attempt.cost_usd)
    return cost


def _strip_fences(text: str) -> str:
    match = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    return match.group(1) if match else text


def make_provider_from_spec(spec: str, base_url: str | None = None, timeout_s: float | None = None) -> Provider:
    """The teacher's provider from its spec (the provider registry); ``--base-url`` as for the panel's judges."""
    return make_provider(spec, {"base_url": base_url_for(spec, base_url), "timeout_s": timeout_s})
