"""The registries: a provider defined here is usable by spec with nothing else edited; judge kinds, the complete
Judge protocol, and input formats registered from outside their packages."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from judge.importers import FORMATS, FormatSpec, detect_format, register_format
from judge.judges import BaseJudge, Judge, check_judge, is_local, make_judge, register_judge, unregister_judge
from judge.judges.llm import LLMJudge
from judge.model import Usage
from judge.panel import PanelConfig, run_panel
from judge.pricing import load_price_table, price
from judge.providers import (
    AuthError,
    Completion,
    ProviderSpec,
    make_provider,
    parse_spec,
    provider_names,
    register_provider,
    scrub,
)
from judge.schema import Verdict
from judge.testing.synthetic import synthetic_batch

ANSWER = {"reasoning": "T1 is fine.", "critical_turn": None, "efficiency": "medium", "issues": [
    {"turn": 1, "description": "A detour.", "evidence": "", "category": "semantic", "severity": "minor", "tag": None,
     "recovered": None}]}


# The whole of a new provider: this class and its decorator (its prices come from the openai lines here).
@register_provider("testecho", env_key="TESTECHO_API_KEY", supports_seed=False, pricing_key="openai")
class EchoProvider:
    def __init__(self, spec: str, parsed: ProviderSpec, *, api_key: str | None, timeout_s: float,
                 options: dict[str, Any]) -> None:
        self.spec, self.provider, self.model, self.api_key = spec, parsed.kind, parsed.model, api_key
        self.endpoint = None

    async def complete(self, messages: list[dict[str, Any]], *, schema: dict[str, Any] | None = None,
                       schema_name: str = "verdict", temperature: float | None = None, seed: int | None = None,
                       max_tokens: int | None = None) -> Completion:
        return Completion(text=json.dumps(ANSWER), parsed=ANSWER if schema else None, finish_reason="stop", refusal=None,
                          usage=Usage(input_tokens=1000, output_tokens=100), model=self.model, latency_s=0.0)

    async def aclose(self) -> None:
        return None


def test_a_provider_defined_in_a_test_module_is_a_judge_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TESTECHO_API_KEY", "sk-testecho-1234567890")
    judge = make_judge("testecho:gpt-4o")
    assert isinstance(judge, LLMJudge) and judge.provider.api_key == "sk-testecho-1234567890"  # type: ignore[attr-defined]
    assert judge.price_key == "openai:gpt-4o" and "seed" not in judge.independence
    result = asyncio.run(run_panel(synthetic_batch(1)[0], PanelConfig(judges=["testecho:gpt-4o"], passes=2),
                                   tmp_path, progress=False))
    assert [v.status for v in result.verdicts] == ["ok", "ok"]
    expected = price("openai:gpt-4o", Usage(input_tokens=1000, output_tokens=100), load_price_table())
    assert expected and result.cost_usd == pytest.approx(2 * expected)  # priced through pricing_key
    assert "testecho" in provider_names()


def test_a_registered_provider_gets_its_key_from_its_variable_and_has_it_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TESTECHO_API_KEY", raising=False)
    with pytest.raises(AuthError, match="TESTECHO_API_KEY is not set"):
        make_provider("testecho:m")
    monkeypatch.setenv("TESTECHO_API_KEY", "sk-testecho-abcdefgh")
    make_provider("testecho:m")  # reads the key: from now on it is scrubbed by value
    assert scrub("server said: bad key sk-testecho-abcdefgh") == "server said: bad key ***"


def test_unknown_providers_and_names_taken_by_another_class_are_errors() -> None:
    with pytest.raises(ValueError, match="unknown provider 'nope'.*known: .*openai.*testecho"):
        parse_spec("nope:m")
    with pytest.raises(ValueError, match="'openai' is already registered by judge.providers.openai_provider.OpenAIProvider"):
        register_provider("openai")(EchoProvider)
    with pytest.raises(ValueError, match="lower case"):
        register_provider("Bad:Name")(EchoProvider)
    register_provider("testecho", env_key="TESTECHO_API_KEY")(EchoProvider)  # the same class again: allowed


@pytest.mark.parametrize(("spec", "base_url", "kind", "url"), [
    ("openai:m", None, "openai", None),
    ("openai:m", "http://127.0.0.1:1/v1", "openai-compatible", "http://127.0.0.1:1/v1"),  # with_url
    ("openai-compatible:m@http://h/v1", None, "openai-compatible", "http://h/v1"),  # self_hosted: MODEL@URL
    ("anthropic:m@x", None, "anthropic", None),  # not self-hosted: '@' is part of the model name
])
def test_the_spec_parser_reads_the_registry(spec: str, base_url: str | None, kind: str, url: str | None) -> None:
    parsed = parse_spec(spec, base_url)
    assert (parsed.kind, parsed.base_url) == (kind, url)


# --- judges --------------------------------------------------------------------------------------


class CountingJudge(BaseJudge):
    """A local sampled judge: only spec and __call__ are its own; every other member is BaseJudge's default."""

    def __init__(self, spec: str) -> None:
        self.spec = spec

    async def __call__(self, trajectory, pass_index, *, on_attempt=None, on_send=None) -> Verdict:
        return Verdict(trajectory_id=trajectory.id, judge=self.spec, pass_index=pass_index, pass_key="-",
                       status="ok", efficiency="high")


def make_counting(spec: str, options: dict[str, Any]) -> CountingJudge:
    return CountingJudge(spec)


def make_other(spec: str, options: dict[str, Any]) -> CountingJudge:
    return CountingJudge(spec)


def test_a_judge_kind_registered_outside_the_package_runs_in_a_panel(tmp_path: Path) -> None:
    register_judge("counting")(make_counting)
    try:
        judge = make_judge("counting:x")
        assert isinstance(judge, Judge) and judge.default_passes == 3 and not judge.cacheable
        result = asyncio.run(run_panel(synthetic_batch(2)[0], PanelConfig(judges=["counting:x"]), tmp_path, progress=False))
        assert [p.pass_key for p in result.plans] == ["counting:x#1", "counting:x#2", "counting:x#3"]
        assert result.calls == 0 and all(v.status == "ok" for v in result.verdicts)
        with pytest.raises(ValueError, match="'counting' is already registered by .*make_counting; .*make_other cannot"):
            register_judge("counting")(make_other)
    finally:
        unregister_judge("counting")
    with pytest.raises(ValueError, match=r"unknown judge 'counting:x'; known judge kinds: replay, rules; LLM providers"):
        make_judge("counting:x")


def test_a_plugin_kind_is_local_only_when_registered_so() -> None:
    from judge.panel import calls_providers

    register_judge("counting")(make_counting)
    try:
        assert not is_local("counting:x") and calls_providers(PanelConfig(judges=["rules", "counting:x"]))
    finally:
        unregister_judge("counting")
    register_judge("counting", local=True)(make_counting)
    try:
        assert is_local("counting:x") and not calls_providers(PanelConfig(judges=["rules", "counting:x"]))
    finally:
        unregister_judge("counting")
    assert not is_local("counting:x"), "unregistering forgets the flag"
    with pytest.raises(ValueError, match="needs a kind of its own"):
        register_judge(for_providers=True, local=True)


def test_a_judge_missing_protocol_members_is_refused_when_built() -> None:
    class Bare:
        spec = "bare"

        async def __call__(self, trajectory, pass_index):
            raise AssertionError("never called")

    with pytest.raises(TypeError, match="judge 'bare' \\(.*Bare\\) lacks deterministic, default_passes, cacheable, .*BaseJudge"):
        check_judge("bare", Bare())
    assert check_judge("rules", make_judge("rules")).deterministic


# --- formats -------------------------------------------------------------------------------------


@pytest.fixture
def restore_formats():
    before = dict(FORMATS)
    yield
    FORMATS.clear()
    FORMATS.update(before)


def test_a_registered_format_is_detected_before_the_loose_chat_shapes(restore_formats) -> None:
    spec = FormatSpec("chatlike", "a chat log with a marker", lambda obj: "marker" in obj, lambda record, src: None)  # type: ignore[arg-type,return-value]
    register_format(spec)
    names = list(FORMATS)
    assert names.index("chatlike") == names.index("anthropic") - 1 and names[-2:] == ["anthropic", "openai"]
    assert detect_format({"marker": 1, "messages": [{"role": "user", "content": "x"}]}) == "chatlike"
    register_format(FormatSpec("first", "tried first", lambda obj: False, spec.parse), before="canonical")
    assert list(FORMATS)[0] == "first"
    with pytest.raises(ValueError, match="format 'openai' is already registered"):
        register_format(FormatSpec("openai", "again", spec.detect, spec.parse))
