"""``example-llm:MODEL``: an in-process stand-in for an LLM API (no network): it answers a verdict schema with an
empty verdict and anything else with "OK". Registered with no key and no seed."""

from __future__ import annotations

import json
from typing import Any

from judge.model import Usage
from judge.providers import Completion, ProviderSpec, register_provider


@register_provider("example-llm", supports_seed=False)
class ExampleProvider:
    def __init__(self, spec: str, parsed: ProviderSpec, *, api_key: str | None, timeout_s: float,
                 options: dict[str, Any]) -> None:
        self.spec, self.provider, self.model = spec, parsed.kind, parsed.model
        self.endpoint = None
        self.requests = 0

    async def complete(self, messages: list[dict[str, Any]], *, schema: dict[str, Any] | None = None,
                       schema_name: str = "verdict", temperature: float | None = None, seed: int | None = None,
                       max_tokens: int | None = None) -> Completion:
        self.requests += 1
        answer: dict[str, Any] | None = None
        if schema is not None:
            answer = {"reasoning": f"{self.model} found nothing wrong.", "issues": [], "critical_turn": None,
                      "efficiency": "high"}
        text = json.dumps(answer) if answer is not None else "OK"
        size = sum(len(str(m.get("content", ""))) for m in messages) // 4
        return Completion(text=text, parsed=answer, finish_reason="stop", refusal=None, model=self.model,
                          usage=Usage(input_tokens=size, output_tokens=len(text) // 4), latency_s=0.0)

    async def aclose(self) -> None:
        return None
