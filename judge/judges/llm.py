"""LLM judges: ``openai:MODEL``, ``anthropic:MODEL`` and ``openai-compatible:MODEL@URL``.

One pass = one judge call (plus at most one corrective retry): render the versioned prompt with the
neutralised trajectory, force the verdict JSON schema, validate the answer with :class:`JudgeOutput`, and
reject issues whose turn lies outside the trajectory. Anything that cannot become a valid verdict is an
``unscored`` verdict with the raw text and a reason - never a zero, never an exception.

Independence of passes: each pass is its own call with ``temperature`` > 0 (default 0.7) *and* a per-pass
``seed`` (the pass index), and no pass sees another's output.

Reasoning models (OpenAI o1/o3/o4 and gpt-5 style names, see :data:`REASONING_MODEL`) reject
``temperature``: for them it is left out of the request by default, and so it is for any model when the
temperature is set to ``none`` (``--temperature none``, or ``temperature: none`` in the panel config).
Independence then rests on the separate calls and the per-pass seed (the model samples at its own default
temperature); the run manifest says so for each pass (``panel.members[].independence``).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judge.judges import register_judge
from judge.model import Trajectory, Usage
from judge.pricing import add_costs
from judge.prompting import (
    PromptTemplate,
    RenderedTrajectory,
    estimate_tokens,
    load_template,
    neutralise,
    render_trajectory,
)
from judge.providers import Completion, Provider, make_provider
from judge.providers.errors import ProviderError
from judge.providers.retry import (
    Attempt,
    BudgetExceeded,
    CallRuntime,
    complete_with_retries,
)
from judge.schema import Efficiency, Issue, Verdict

DEFAULT_PROMPT = "judge-v1"
DEFAULT_TEMPERATURE = 0.7
DEFAULT_MAX_TOKENS = 4096  # output budget per call
DEFAULT_MAX_INPUT_TOKENS = 100_000  # prompt budget per call (the trajectory is elided to fit)
SCHEMA_NAME = "verdict"
PROMPT_CACHE_SIZE = 256
# OpenAI reasoning models, which reject a temperature: o1, o3-mini, o4-mini, gpt-5, gpt-5-mini... (an
# optional "vendor/" prefix, as routers write it, is allowed).
REASONING_MODEL = re.compile(r"^(?:[\w.-]+/)?(?:o\d+|gpt-5)(?:[-.].*)?$", re.IGNORECASE)
OMIT_TEMPERATURE = "none"  # the setting that leaves temperature out of every request


def resolve_temperature(setting: float | str | None, model: str) -> float | None:
    """The temperature to send, or None to leave it out of the request.

    ``setting`` None means the default: 0.7, except for reasoning models (:data:`REASONING_MODEL`), which
    reject the parameter. ``"none"`` always leaves it out; a number is sent as given.
    """
    if setting is None:
        return None if REASONING_MODEL.match(model) else DEFAULT_TEMPERATURE
    if isinstance(setting, str):
        if setting.strip().lower() == OMIT_TEMPERATURE:
            return None
        try:
            setting = float(setting)
        except ValueError:
            raise ValueError(f"temperature must be a number >= 0 or {OMIT_TEMPERATURE!r}, not {setting!r}") from None
    value = float(setting)
    if value < 0:
        raise ValueError(f"temperature must be >= 0, not {value}")
    return value


class JudgeIssue(BaseModel):
    """One issue as the judge writes it (the description, its reasoning, comes before the labels it justifies)."""

    model_config = ConfigDict(extra="forbid")

    turn: int | None = Field(description="Assistant turn (1 = T1) whose decision was faulty; null if not localised.")
    description: str = Field(min_length=1, description="What went wrong, one or two sentences.")
    evidence: str = Field(description="A short quotation from the trajectory showing it.")
    category: str = Field(pattern="^(code|semantic|capability|environment)$")
    severity: str = Field(pattern="^(severe|minor)$")
    tag: str | None = Field(default=None, description="Short machine name, e.g. repeated-failure.")


class JudgeOutput(BaseModel):
    """The verdict object: reasoning first, then issues, then the efficiency vote."""

    model_config = ConfigDict(extra="forbid")

    reasoning: str
    issues: list[JudgeIssue]
    efficiency: Efficiency


# Hand-written so it satisfies OpenAI strict mode (every property required, no extra properties) and is a
# valid Anthropic tool input schema. tests/test_panel.py checks it agrees with JudgeOutput.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "description": "Brief analysis of the trajectory, written first."},
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "turn": {"type": ["integer", "null"], "description": "Assistant turn (T1 = 1) of the faulty decision."},
                    "description": {"type": "string"},
                    "evidence": {"type": "string", "description": "Quoted from the trajectory."},
                    "category": {"type": "string", "enum": ["code", "semantic", "capability", "environment"]},
                    "severity": {"type": "string", "enum": ["severe", "minor"]},
                    "tag": {"type": ["string", "null"]},
                },
                "required": ["turn", "description", "evidence", "category", "severity", "tag"],
                "additionalProperties": False,
            },
        },
        "efficiency": {"type": "string", "enum": ["high", "medium", "low"]},
    },
    "required": ["reasoning", "issues", "efficiency"],
    "additionalProperties": False,
}


class VerdictProblem(Exception):
    """Why an answer is not a valid verdict: ``reason`` is the unscored reason it leads to."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def parse_judge_output(completion_text: str, parsed: dict[str, Any] | None, turn_count: int) -> JudgeOutput:
    """Validate a judge answer; raise :class:`VerdictProblem` (parse_error or invalid_turn) with a message
    that can be sent back to the model as the corrective instruction."""
    data: Any = parsed
    if data is None:
        try:
            data = json.loads(_json_text(completion_text))
        except ValueError as error:
            raise VerdictProblem("parse_error", f"The answer is not valid JSON ({error}).") from None
    try:
        output = JudgeOutput.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'answer'}: {e['msg']}" for e in error.errors()[:10])
        raise VerdictProblem("parse_error", f"The answer does not match the verdict schema: {problems}.") from None
    bad = [(i, issue.turn) for i, issue in enumerate(output.issues) if issue.turn is not None and not 1 <= issue.turn <= turn_count]
    if bad:
        listed = ", ".join(f"issues[{i}] has turn {turn}" for i, turn in bad)
        raise VerdictProblem(
            "invalid_turn",
            f"Turn numbers must be between 1 and {turn_count} (the trajectory has {turn_count} turns): {listed}.",
        )
    return output


def _json_text(text: str) -> str:
    """The JSON object inside ``text``, tolerating a code fence or prose around it (servers without schemas)."""
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.DOTALL)
    if fenced:
        return fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    return text[start:end + 1] if 0 <= start < end else text


def to_issues(output: JudgeOutput) -> list[Issue]:
    return [
        Issue(turn=i.turn, category=i.category, severity=i.severity, description=i.description.strip(),  # type: ignore[arg-type]
              evidence=i.evidence, tag=(i.tag or "").strip() or None)
        for i in output.issues
    ]


class LLMJudge:
    """A judge backed by one provider. ``await judge(trajectory, pass_index)`` returns a :class:`Verdict`.

    Options: ``runtime`` (:class:`CallRuntime`, shared across the panel), ``temperature`` (a number,
    ``"none"`` to leave it out, or None for the default: see :func:`resolve_temperature`), ``max_tokens``,
    ``max_input_tokens``, ``prompt`` (template name or path), ``base_url`` (OpenAI-protocol judges only),
    ``timeout_s``, ``params``
    (extra provider settings recorded in the cache key), ``provider`` (a ready :class:`Provider`, for tests).
    """

    deterministic = False
    reports_attempts = True  # the panel passes on_attempt= so every HTTP attempt is recorded

    def __init__(self, spec: str, options: dict[str, Any]):
        self.spec = spec
        self.provider: Provider = options.get("provider") or make_provider(spec, {
            # --base-url names an OpenAI-compatible server; an Anthropic endpoint comes from ANTHROPIC_BASE_URL,
            # so a mixed panel (openai-compatible + anthropic) does not send Claude requests to a vLLM.
            "base_url": None if spec.startswith("anthropic:") else options.get("base_url"),
            "timeout_s": options.get("timeout_s"),
            "concurrency": options.get("concurrency"),
            **(options.get("params") or {}),
        })
        self.template: PromptTemplate = load_template(options.get("prompt") or DEFAULT_PROMPT)
        self.prompt_version = self.template.version
        self.temperature: float | None = resolve_temperature(options.get("temperature"), self.provider.model)
        self.max_tokens = int(options.get("max_tokens") or DEFAULT_MAX_TOKENS)
        self.max_input_tokens = int(options.get("max_input_tokens") or DEFAULT_MAX_INPUT_TOKENS)
        self.runtime: CallRuntime = options.get("runtime") or CallRuntime(timeout_s=float(options.get("timeout_s") or 120))
        self.extra_params = dict(options.get("params") or {})
        self._prompts: OrderedDict[tuple[str, int], tuple[Trajectory, RenderedTrajectory, list[dict[str, str]]]] = OrderedDict()

    @property
    def model(self) -> str:
        return self.provider.model

    @property
    def independence(self) -> str:
        """How the passes of this judge are kept independent (recorded in the run manifest)."""
        seeded = self.provider.provider != "anthropic"  # the Messages API has no seed
        parts = ["a separate call per pass, no pass sees another's output"]
        if self.temperature is not None:
            parts.append(f"temperature {self.temperature:g}")
        else:
            parts.append("temperature left out of the request (the model's own default sampling)")
        if seeded:
            parts.append("seed = pass index")
        return "; ".join(parts)

    @property
    def price_key(self) -> str:
        return f"{self.provider.provider}:{self.provider.model}"

    def cache_identity(self) -> dict[str, Any]:
        """What besides the trajectory and pass index determines this judge's answer (the cache key parts)."""
        return {
            "provider": self.provider.provider,
            "model": self.provider.model,
            "prompt": self.prompt_version,
            "params": {
                # The same model name on another server is another judge: the endpoint is part of the key.
                "endpoint": getattr(self.provider, "endpoint", None),
                "temperature": self.temperature,
                "seed": "pass_index",
                "max_tokens": self.max_tokens,
                "max_input_tokens": self.max_input_tokens,
                "schema": SCHEMA_NAME,
                **self.extra_params,
            },
        }

    async def aclose(self) -> None:
        await self.provider.aclose()

    async def __call__(
        self, trajectory: Trajectory, pass_index: int, *, on_attempt: Callable[[Attempt], None] | None = None,
        on_send: Callable[[Attempt], None] | None = None,
    ) -> Verdict:
        base = Verdict(
            trajectory_id=trajectory.id, judge=self.spec, pass_index=pass_index, pass_key=f"{self.spec}#{pass_index}",
            status="unscored", model=self.provider.model, prompt_version=self.prompt_version, attempts=0,
        )
        rendered, messages = self.prompt_for(trajectory)
        if not rendered.fits:
            return base.model_copy(update={
                "reason": "context_overflow",
                "detail": f"the trajectory needs about {rendered.estimated_tokens} tokens after elision; "
                          f"the budget is {self.max_input_tokens} input tokens",
            })
        attempts: list[Attempt] = []
        problem: VerdictProblem | None = None
        last_text: str | None = None
        for round_number in (1, 2):  # the original call, then at most one corrective retry
            try:
                completion, made = await complete_with_retries(
                    self.provider, messages, runtime=self.runtime,
                    estimated_input_tokens=sum(estimate_tokens(str(m["content"])) for m in messages),
                    on_attempt=on_attempt, on_send=on_send, schema=VERDICT_SCHEMA, schema_name=SCHEMA_NAME,
                    temperature=self.temperature, seed=pass_index, max_tokens=self.max_tokens,
                )
                attempts += made
            except BudgetExceeded as error:
                return _finish(base, attempts, "budget_exceeded", str(error), last_text)
            except ProviderError as error:
                attempts += getattr(error, "attempts", [])
                reason = {"context_overflow": "context_overflow", "refusal": "refusal",
                          "connection_error": "connection_error"}.get(error.kind, "provider_error")
                return _finish(base, attempts, reason, f"{error} (after {len(getattr(error, 'attempts', []))} attempt(s))", last_text)
            last_text = completion.text
            if completion.finish_reason in ("refusal", "content_filter"):
                return _finish(base, attempts, "refusal", completion.refusal or completion.finish_reason,
                               completion.refusal or completion.text)
            try:
                self._check(completion)
                output = parse_judge_output(completion.text, completion.parsed, trajectory.turn_count)
            except VerdictProblem as found:
                problem = found
            else:
                verdict = _finish(base, attempts, None, None, None)
                return verdict.model_copy(update={
                    "status": "ok", "issues": to_issues(output), "efficiency": output.efficiency,
                    "reasoning": output.reasoning.strip() or None,
                    "model": completion.model or self.provider.model,
                    "detail": "elided to fit the budget" if rendered.elided else None,
                })
            if round_number == 1:
                messages = [*messages, {"role": "assistant", "content": completion.text or "(empty answer)"},
                            {"role": "user", "content": _corrective(problem)}]
        assert problem is not None
        return _finish(base, attempts, problem.reason, str(problem), last_text)

    @staticmethod
    def _check(completion: Completion) -> None:
        """A truncated answer is never parsed: a cut-off JSON object could still look valid."""
        if completion.finish_reason == "length":
            raise VerdictProblem("truncated", "Your answer was cut off at the output token limit.")

    def prompt_for(self, trajectory: Trajectory) -> tuple[RenderedTrajectory, list[dict[str, str]]]:
        """The rendered trajectory and the chat messages of the first call.

        The passes of one trajectory share the same prompt, so it is rendered once (a small LRU keyed by the
        trajectory object; the panel hands every pass the same object).
        """
        key = (trajectory.id, id(trajectory))
        cached = self._prompts.get(key)
        if cached is not None and cached[0] is trajectory:
            self._prompts.move_to_end(key)
            return cached[1], cached[2]
        rendered, messages = self._render_prompt(trajectory)
        self._prompts[key] = (trajectory, rendered, messages)
        if len(self._prompts) > PROMPT_CACHE_SIZE:
            self._prompts.popitem(last=False)
        return rendered, messages

    def _render_prompt(self, trajectory: Trajectory) -> tuple[RenderedTrajectory, list[dict[str, str]]]:
        query = neutralise(trajectory.query)
        frame = self.template.render(query=query, trajectory="", turn_count=trajectory.turn_count, elision_note="")
        overhead = sum(estimate_tokens(m["content"]) for m in frame)
        rendered = render_trajectory(trajectory, max(0, self.max_input_tokens - overhead - 64))
        note = "; some long outputs were shortened, marked [... N chars elided ...]" if rendered.elided else ""
        messages = self.template.render(query=query, trajectory=rendered.text, turn_count=trajectory.turn_count, elision_note=note)
        return rendered, messages


def _corrective(problem: VerdictProblem) -> str:
    if problem.reason == "truncated":
        return ("Your previous answer was cut off at the output token limit. Answer again with the complete verdict "
                "object, more briefly: short reasoning and one-sentence descriptions.")
    return f"Your previous answer was not a valid verdict. {problem} Answer again with the corrected verdict object only."


def _finish(base: Verdict, attempts: list[Attempt], reason: str | None, detail: str | None, raw: str | None) -> Verdict:
    usage = Usage()
    cost: float | None = None
    latency = 0.0
    for attempt in attempts:
        usage = usage + attempt.usage
        cost = add_costs(cost, attempt.cost_usd)
        latency += attempt.latency_s or 0.0
    return base.model_copy(update={
        "reason": reason, "detail": detail, "raw": raw if reason else None, "usage": usage, "cost_usd": cost,
        "latency_s": round(latency, 4) if attempts else None, "attempts": len(attempts),
    })


def _factory(spec: str, options: dict[str, Any]) -> LLMJudge:
    return LLMJudge(spec, options)


for _prefix in ("openai", "anthropic", "openai-compatible"):
    register_judge(_prefix)(_factory)
