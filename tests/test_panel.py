"""The judge panel end to end through the real SDKs against local fake servers (no network)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from judge import rundir
from judge.judges import BaseJudge
from judge.judges.llm import (
    DEFAULT_TEMPERATURE,
    VERDICT_SCHEMA,
    JudgeOutput,
    LLMJudge,
    VerdictProblem,
    parse_judge_output,
    resolve_temperature,
)
from judge.panel import PanelConfig, PassPlan, plan_passes, run_panel
from judge.rundir import RunDir
from judge.schema import Verdict
from judge.store import RunStore
from judge.testing.servers import FakeLLMServer, Scripted
from judge.testing.simjudge import SimConfig, simulated_server
from judge.testing.synthetic import make_trajectory, synthetic_batch

GOOD = {"reasoning": "T2 repeated a failing command.", "issues": [
    {"turn": 2, "description": "Reran the failing command unchanged.", "evidence": "pytest -x", "category": "code",
     "severity": "severe", "tag": "repeated-failure"}], "efficiency": "medium"}
SECRET = "sk-test-SECRET-do-not-write-4711"


def one_trajectory(turns: int = 3):
    return make_trajectory("traj-1", "Fix the date parser.", [
        {"text": f"turn {t}", "calls": [("bash", {"cmd": "pytest -x"}, "FAILED" if t == 2 else "ok", t == 2, 1 if t == 2 else 0)]}
        for t in range(1, turns + 1)])


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with FakeLLMServer(request.param) as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)  # the SDK's own variable: --base-url is OpenAI-only
        yield fake


def spec_for(server: FakeLLMServer) -> str:
    return f"openai-compatible:fake@{server.base_url}" if server.protocol == "openai" else "anthropic:claude-fake"


def config_for(server: FakeLLMServer, **kw: Any) -> PanelConfig:
    base = {"judges": [spec_for(server)], "passes": 1, "concurrency": 4, "retry_base_delay_s": 0.001}
    return PanelConfig(**{**base, **kw})


def run(trajectories, config: PanelConfig, run_dir: Path):
    return asyncio.run(run_panel(trajectories, config, run_dir, progress=False))


def verdict_rows(run_dir: Path) -> list[Verdict]:
    return list(rundir.read_jsonl(run_dir / rundir.VERDICTS, Verdict))


# --- outcomes of one pass ------------------------------------------------------------------------

BAD_TURN = {**GOOD, "issues": [{**GOOD["issues"][0], "turn": 9}]}
ZERO_TURN = {**GOOD, "issues": [{**GOOD["issues"][0], "turn": 0}]}
WRONG_CATEGORY = {**GOOD, "issues": [{**GOOD["issues"][0], "category": "style"}]}


@pytest.mark.parametrize(
    ("responses", "status", "reason", "requests"),
    [
        ([Scripted.ok(GOOD)], "ok", None, 1),
        ([Scripted.ok("this is not json"), Scripted.ok(GOOD)], "ok", None, 2),  # corrective retry fixes it
        ([Scripted.ok(WRONG_CATEGORY), Scripted.ok(WRONG_CATEGORY)], "unscored", "parse_error", 2),
        ([Scripted.ok({"issues": []}), Scripted.ok("{}")], "unscored", "parse_error", 2),
        ([Scripted.ok(BAD_TURN), Scripted.ok(GOOD)], "ok", None, 2),
        ([Scripted.ok(BAD_TURN), Scripted.ok(ZERO_TURN)], "unscored", "invalid_turn", 2),
        ([Scripted.truncated(), Scripted.truncated()], "unscored", "truncated", 2),
        ([Scripted.refused("I can't review this.")], "unscored", "refusal", 1),
        ([Scripted.context_overflow()], "unscored", "context_overflow", 1),
        ([Scripted(status=401)], "unscored", "provider_error", 1),
        ([Scripted.rate_limited(0.01), Scripted.malformed_body(), Scripted.ok(GOOD)], "ok", None, 3),
        ([Scripted.server_error(), Scripted.slow(5.0), Scripted.ok(GOOD)], "ok", None, 3),
        ([Scripted.server_error()] * 3, "unscored", "provider_error", 3),
    ],
)
def test_pass_outcomes(server: FakeLLMServer, tmp_path: Path, responses, status: str, reason: str | None, requests: int) -> None:
    server.queue(*responses)
    # A tight timeout only where a delay is scripted (a cold first call on a busy machine can be slow).
    timeout_s = 2.0 if any(r.delay_s for r in responses) else 30.0
    result = run([one_trajectory()], config_for(server, max_retries=2, timeout_s=timeout_s), tmp_path)
    (verdict,) = verdict_rows(tmp_path)
    assert (verdict.status, verdict.reason) == (status, reason)
    assert server.request_count == requests == verdict.attempts == len(RunStore.for_run(tmp_path).attempts())
    assert result.calls == requests
    if status == "ok":
        assert verdict.issues[0].turn == 2 and verdict.issues[0].tag == "repeated-failure" and verdict.efficiency == "medium"
    else:
        assert verdict.issues == [] and verdict.efficiency is None
        assert result.unscored[reason] == 1
    if reason in ("parse_error", "truncated", "invalid_turn", "refusal"):
        assert verdict.raw  # the raw answer is kept for inspection


def test_corrective_retry_sends_the_error_back(server: FakeLLMServer, tmp_path: Path) -> None:
    server.queue(Scripted.ok(BAD_TURN), Scripted.ok(GOOD))
    run([one_trajectory()], config_for(server), tmp_path)
    second = server.requests[1]["messages"]
    assert second[-2]["role"] == "assistant" and '"turn": 9' in second[-2]["content"]
    assert "between 1 and 3" in second[-1]["content"] and "issues[0] has turn 9" in second[-1]["content"]


def test_usage_and_cost_are_counted_for_every_attempt(server: FakeLLMServer, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices:\n  '*': {input: 1.0, cached_input: 0.5, output: 4.0}\n")
    usage = {"input": 1000, "output": 200, "cached": 400}
    server.queue(Scripted.server_error(), Scripted.ok("not json", usage=usage), Scripted.ok(GOOD, usage=usage))
    result = run([one_trajectory()], config_for(server, prices=str(prices)), tmp_path / "run")
    (verdict,) = verdict_rows(tmp_path / "run")
    one_call = (600 * 1.0 + 400 * 0.5 + 200 * 4.0) / 1e6
    assert verdict.usage.input_tokens == 2000 and verdict.usage.output_tokens == 400 and verdict.usage.cached_tokens == 800
    assert verdict.cost_usd == pytest.approx(2 * one_call)
    attempts = RunStore.for_run(tmp_path / "run").attempts()
    assert [a["outcome"] for a in attempts] == ["server_error", "ok", "ok"]
    assert sum(a["cost_usd"] for a in attempts) == pytest.approx(2 * one_call)
    assert result.cost_usd == pytest.approx(2 * one_call) == result.cost_by_trajectory["traj-1"]


def test_second_run_makes_no_calls_and_rebuilds_verdicts(server: FakeLLMServer, tmp_path: Path) -> None:
    trajectories, _ = synthetic_batch(5)
    config = config_for(server, passes=3)
    first = run(trajectories, config, tmp_path)
    assert server.request_count == 15 and first.cached == 0
    before = {(v.trajectory_id, v.pass_key): v.issues for v in verdict_rows(tmp_path)}
    second = run(trajectories, config, tmp_path)
    assert server.request_count == 15 and second.calls == 0 and second.cached == 15
    rows = verdict_rows(tmp_path)
    assert len(rows) == 15 and all(v.cached for v in rows)
    assert {(v.trajectory_id, v.pass_key): v.issues for v in rows} == before
    # A changed parameter is a different cache key: new calls.
    run(trajectories, config_for(server, passes=3, temperature=0.2), tmp_path)
    assert server.request_count == 30


def test_passes_are_independent_calls(server: FakeLLMServer, tmp_path: Path) -> None:
    run([one_trajectory()], config_for(server, passes=3), tmp_path)
    assert server.request_count == 3
    requests = server.requests
    assert all(len(r["messages"]) == len(requests[0]["messages"]) for r in requests)  # no pass sees another's output
    assert all(r.get("temperature", 0) > 0 for r in requests)
    if server.protocol == "openai":
        assert sorted(r["seed"] for r in requests) == [1, 2, 3]


def test_budget_cap_stops_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    trajectories, _ = synthetic_batch(6)
    fixed_usage = {"input": 1000, "output": 0, "cached": 0}  # $0.01 a call at $10 per million
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(GOOD, usage=fixed_usage)) as fake:
        prices = tmp_path / "prices.yaml"
        prices.write_text("prices:\n  '*': {input: 10.0, output: 10.0}\n")
        config = PanelConfig(judges=[f"openai-compatible:m@{fake.base_url}"], passes=1, concurrency=2,
                             max_cost_usd=0.035, max_tokens=100, prices=str(prices))
        result = run(trajectories, config, tmp_path / "run")
        rows = verdict_rows(tmp_path / "run")
        assert len(rows) == 6  # every pass is in the file, none dropped
        budget_rows = [v for v in rows if v.reason == "budget_exceeded"]
        assert budget_rows and 1 <= fake.request_count == 6 - len(budget_rows) and result.budget_exceeded
        assert result.unscored["budget_exceeded"] == len(budget_rows)
        assert result.cost_this_run_usd <= 0.035  # worst-case reservations: the cap is never overshot
        # Budget-stopped passes are not cached: a rerun with more money completes exactly those.
        fake.reset_count()
        run(trajectories, config.merged(max_cost_usd=100.0), tmp_path / "run")
        assert fake.request_count == len(budget_rows)
        assert all(v.status == "ok" for v in verdict_rows(tmp_path / "run"))


def test_context_overflow_without_a_call(server: FakeLLMServer, tmp_path: Path) -> None:
    # judge-v1 has no windows (judge-v2 judges this one in windows: tests/test_judge_v2.py)
    trajectory = make_trajectory("long", "q", [{"text": "x" * 500} for _ in range(300)])
    run([trajectory], config_for(server, max_input_tokens=3000, prompt="judge-v1"), tmp_path)
    (verdict,) = verdict_rows(tmp_path)
    assert verdict.reason == "context_overflow" and server.request_count == 0 and "budget" in verdict.detail


def test_keys_never_written(server: FakeLLMServer, tmp_path: Path) -> None:
    server.queue(Scripted(status=401), Scripted.ok(GOOD))
    trajectories = [one_trajectory(), make_trajectory("traj-2", "q2", [{"text": "done"}])]
    run(trajectories, config_for(server), tmp_path)
    sent = json.dumps(server.request_headers)
    assert SECRET in sent  # the key was used...
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"key leaked into {path.name}"


def test_manifest_records_the_panel(server: FakeLLMServer, tmp_path: Path) -> None:
    run([one_trajectory()], config_for(server, passes=3), tmp_path)
    panel = RunDir(tmp_path).manifest().to_json()["panel"]
    spec = spec_for(server)
    assert panel["size"] == 3 and panel["prompt_version"] == "judge-v2.1"
    assert [m["pass_key"] for m in panel["members"]] == [f"{spec}#1", f"{spec}#2", f"{spec}#3"]
    assert all(m["deterministic"] is False for m in panel["members"])


def test_the_endpoint_is_part_of_the_cache_key(server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same model name on another server is another judge: its verdicts are not reused."""
    first = run([one_trajectory()], config_for(server), tmp_path)
    assert first.calls == 1 and server.request_count == 1
    with FakeLLMServer(server.protocol) as other:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", other.base_url)
        spec = f"openai-compatible:fake@{other.base_url}" if other.protocol == "openai" else "anthropic:claude-fake"
        second = run([one_trajectory()], config_for(server, judges=[spec]), tmp_path)
        assert other.request_count == 1 and second.calls == 1 and second.cached == 0
    assert server.request_count == 1
    endpoints = {m["endpoint"] for m in RunDir(tmp_path).manifest().to_json()["panel"]["members"]}
    assert endpoints == {other.base_url.rstrip("/")}


@pytest.mark.parametrize(
    ("spec", "base_url", "endpoint"),
    [
        ("openai-compatible:m@http://user:pw@127.0.0.1:9/v1", None, "http://127.0.0.1:9/v1"),
        ("openai-compatible:m@http://127.0.0.1:9/v1/", None, "http://127.0.0.1:9/v1"),
        ("openai:m", "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"),
        ("openai:m", None, "https://api.openai.com/v1"),
    ],
)
def test_cache_identity_names_the_endpoint_without_credentials(
    spec: str, base_url: str | None, endpoint: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    identity = LLMJudge(spec, {"base_url": base_url}).cache_identity()
    assert identity["params"]["endpoint"] == endpoint and "pw" not in json.dumps(identity)


def test_passes_of_one_judge_share_one_provider_and_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import openai

    from judge.providers import openai_provider

    built: list[object] = []
    real_init = openai_provider.OpenAIProvider.__init__
    clients: list[object] = []
    real_client = openai.AsyncOpenAI

    def counting_init(self, *args: Any, **kwargs: Any) -> None:
        built.append(self)
        real_init(self, *args, **kwargs)

    def counting_client(*args: Any, **kwargs: Any) -> Any:
        clients.append(real_client(*args, **kwargs))
        return clients[-1]

    monkeypatch.setattr(openai_provider.OpenAIProvider, "__init__", counting_init)
    monkeypatch.setattr(openai, "AsyncOpenAI", counting_client)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    trajectories, _ = synthetic_batch(4)
    with FakeLLMServer("openai") as fake:
        run(trajectories, PanelConfig(judges=[f"openai-compatible:m@{fake.base_url}"], passes=3, concurrency=4), tmp_path)
        assert fake.request_count == 12
    assert len(built) == 1 and len(clients) == 1  # 12 calls, 3 passes: one provider, one SDK client


def test_reasoning_is_kept_and_replayed(server: FakeLLMServer, tmp_path: Path) -> None:
    server.queue(Scripted.ok(GOOD), Scripted.ok({**GOOD, "reasoning": "  Second look: T2 again.  "}))
    run([one_trajectory()], config_for(server, passes=2, concurrency=1), tmp_path / "first")
    rows = verdict_rows(tmp_path / "first")
    assert sorted(v.reasoning for v in rows) == ["Second look: T2 again.", GOOD["reasoning"]]
    run([one_trajectory()], PanelConfig(judges=[f"replay:{tmp_path / 'first'}"]), tmp_path / "second")
    replayed = {v.pass_index: v.reasoning for v in verdict_rows(tmp_path / "second")}
    assert replayed == {v.pass_index: v.reasoning for v in rows}


def test_an_unscored_pass_has_no_reasoning_but_keeps_the_raw_answer(server: FakeLLMServer, tmp_path: Path) -> None:
    server.queue(Scripted.ok(WRONG_CATEGORY), Scripted.ok(WRONG_CATEGORY))
    run([one_trajectory()], config_for(server), tmp_path)
    (verdict,) = verdict_rows(tmp_path)
    assert verdict.status == "unscored" and verdict.reasoning is None and GOOD["reasoning"] in verdict.raw


@pytest.mark.parametrize(
    ("setting", "model", "expected"),
    [
        (None, "gpt-4o", DEFAULT_TEMPERATURE),
        (None, "claude-sonnet-4-5", DEFAULT_TEMPERATURE),
        (None, "o1", None),
        (None, "o3-mini", None),
        (None, "o4-mini-2025-04-16", None),
        (None, "gpt-5", None),
        (None, "gpt-5-mini", None),
        (None, "openai/o3", None),
        (None, "gpt-4o-mini", DEFAULT_TEMPERATURE),
        (None, "omni-judge", DEFAULT_TEMPERATURE),
        ("none", "gpt-4o", None),
        ("None", "qwen2.5", None),
        (0.2, "o3", 0.2),  # an explicit number is sent as given
        ("0.3", "gpt-4o", 0.3),
        (0, "gpt-4o", 0.0),
    ],
)
def test_resolve_temperature(setting: float | str | None, model: str, expected: float | None) -> None:
    assert resolve_temperature(setting, model) == expected


@pytest.mark.parametrize("setting", ["warm", -0.5])
def test_resolve_temperature_rejects(setting: float | str) -> None:
    with pytest.raises(ValueError, match="temperature"):
        resolve_temperature(setting, "gpt-4o")


@pytest.mark.parametrize(
    ("model", "temperature", "sent"),
    [("o3-mini", None, False), ("fake", "none", False), ("fake", None, True), ("gpt-5", 0.4, True)],
)
def test_temperature_left_out_of_requests(model: str, temperature: str | None, sent: bool, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai") as fake:
        config = PanelConfig(judges=[f"openai-compatible:{model}@{fake.base_url}"], passes=2, temperature=temperature)
        run([one_trajectory()], config, tmp_path)
        assert len(fake.requests) == 2
        assert all(("temperature" in r) == sent for r in fake.requests)
        assert sorted(r["seed"] for r in fake.requests) == [1, 2]  # independence still has the per-pass seed
    members = RunDir(tmp_path).manifest().to_json()["panel"]["members"]
    assert all("seed = pass index" in m["independence"] and "separate call" in m["independence"] for m in members)
    assert all(("left out" in m["independence"]) != sent for m in members)


@pytest.mark.parametrize(("text", "value"), [("temperature: none", "none"), ("temperature: 0.2", 0.2),
                                             ("temperature: null", None)])
def test_temperature_in_the_config_file(text: str, value: object, tmp_path: Path) -> None:
    path = tmp_path / "panel.yaml"
    path.write_text(f"judge: [openai:o3]\n{text}\n")
    assert PanelConfig.load(path).temperature == value
    path.write_text("judge: [openai:o3]\ntemperature: hot\n")
    with pytest.raises(ValueError, match="(?s)panel.yaml.*temperature"):
        PanelConfig.load(path)


# --- planning ------------------------------------------------------------------------------------


class _Stub(BaseJudge):
    def __init__(self, spec: str, deterministic: bool = False, default_passes: int | None = None):
        self.spec, self.deterministic = spec, deterministic
        if default_passes:
            self.default_passes = default_passes


@pytest.mark.parametrize(
    ("judges", "passes", "expected"),
    [
        (["llm"], None, ["llm#1", "llm#2", "llm#3"]),
        (["llm"], 5, ["llm#1", "llm#2", "llm#3", "llm#4", "llm#5"]),
        (["a", "b", "c"], None, ["a#1", "b#1", "c#1"]),
        (["a", "a", "b"], None, ["a#1", "a#2", "b#1"]),
        (["a", "b"], 2, ["a#1", "a#2", "b#1", "b#2"]),
        (["rules"], None, ["rules#1"]),
        (["rules"], 3, ["rules#1"]),  # a deterministic judge runs once
        (["rules", "a", "b"], None, ["rules#1", "a#1", "b#1"]),
        (["replay"], None, ["replay#1", "replay#2"]),
        ([], None, ["rules#1"]),  # nothing asked for: the offline rules judge
    ],
)
def test_plan_passes(judges: list[str], passes: int | None, expected: list[str]) -> None:
    stubs = {"llm": _Stub("llm"), "a": _Stub("a"), "b": _Stub("b"), "c": _Stub("c"),
             "rules": _Stub("rules", deterministic=True), "replay": _Stub("replay", default_passes=2)}
    plans = plan_passes(PanelConfig(judges=judges, passes=passes), stubs)
    assert [p.pass_key for p in plans] == expected
    assert all(isinstance(p, PassPlan) and p.deterministic == (p.judge == "rules") for p in plans)


def test_config_file_and_flags(tmp_path: Path) -> None:
    path = tmp_path / "panel.yaml"
    path.write_text("panel:\n  judge: [openai:gpt-4o]\n  passes: 3\n  rpm: 100\n  params: {structured_output: json_object}\n")
    config = PanelConfig.load(path).merged(passes=None, rpm=50, concurrency=2)
    assert config.judges == ["openai:gpt-4o"] and config.passes == 3 and config.rpm == 50 and config.concurrency == 2
    path.write_text("judge: [a]\nparams: {api_key: sk-x}\n")
    with pytest.raises(ValueError, match="(?s)panel.yaml.*only from the environment"):
        PanelConfig.load(path)
    path.write_text("judge: [a]\nconcurency: 3\n")
    with pytest.raises(ValueError, match="panel.yaml"):
        PanelConfig.load(path)


# --- verdict parsing -----------------------------------------------------------------------------


def test_schema_agrees_with_the_model() -> None:
    assert set(VERDICT_SCHEMA["required"]) == set(JudgeOutput.model_fields)
    assert next(iter(VERDICT_SCHEMA["properties"])) == "reasoning"  # reasoning first, then the verdict
    item = VERDICT_SCHEMA["properties"]["issues"]["items"]
    from judge.judges.llm import JudgeIssue

    assert set(item["required"]) == set(JudgeIssue.model_fields) == set(item["properties"])


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("nope", "parse_error"),
        ('{"reasoning": "r", "issues": [], "efficiency": "great"}', "parse_error"),
        ('{"reasoning": "r", "issues": [], "efficiency": "high", "extra": 1}', "parse_error"),
        ('{"reasoning": "r", "issues": [{"turn": 4, "description": "d", "evidence": "", "category": "code", "severity": "minor", "tag": null}], "efficiency": "high"}', "invalid_turn"),
        ('{"reasoning": "r", "issues": [{"turn": -1, "description": "d", "evidence": "", "category": "code", "severity": "minor", "tag": null}], "efficiency": "high"}', "invalid_turn"),
        ('```json\n{"reasoning": "r", "issues": [], "efficiency": "high"}\n```', None),
        ('{"reasoning": "r", "issues": [{"turn": null, "description": "d", "evidence": "", "category": "semantic", "severity": "minor", "tag": null}], "efficiency": "low"}', None),
    ],
)
def test_parse_judge_output(text: str, reason: str | None) -> None:
    if reason is None:
        assert isinstance(parse_judge_output(text, None, turn_count=3), JudgeOutput)
    else:
        with pytest.raises(VerdictProblem) as raised:
            parse_judge_output(text, None, turn_count=3)
        assert raised.value.reason == reason


# --- replay --------------------------------------------------------------------------------------


def test_replay_rescoring_without_calls(server: FakeLLMServer, tmp_path: Path) -> None:
    trajectories, _ = synthetic_batch(3)
    first_dir = tmp_path / "first"
    run(trajectories, config_for(server, passes=3), first_dir)
    rundir.write_jsonl(first_dir / rundir.TRAJECTORIES, trajectories)
    calls = server.request_count
    changed = trajectories[1].model_copy(update={"query": "a different query"})
    result = run([trajectories[0], changed], PanelConfig(judges=[f"replay:{first_dir}"]), tmp_path / "second")
    assert server.request_count == calls and result.panel_size == 3
    rows = verdict_rows(tmp_path / "second")
    original = {(v.trajectory_id, v.pass_index): v for v in verdict_rows(first_dir)}
    for row in rows:
        if row.trajectory_id == trajectories[0].id:
            assert row.status == original[(row.trajectory_id, row.pass_index)].status
            assert row.issues == original[(row.trajectory_id, row.pass_index)].issues
        else:
            assert row.reason == "provider_error" and "no recorded verdict" in row.detail


def test_a_replayed_verdict_is_not_marked_cached(server: FakeLLMServer, tmp_path: Path) -> None:
    """A replay judge answers with the recorded verdict, which says cached when the recording run read it from its
    cache; the replaying run computed it afresh (its pass, judge and flags are the replay's own)."""
    trajectory = one_trajectory()
    first_dir = tmp_path / "first"
    run([trajectory], config_for(server, passes=2), first_dir)
    run([trajectory], config_for(server, passes=2), first_dir)  # again: every pass from the cache
    assert [v.cached for v in verdict_rows(first_dir)] == [True, True]
    run([trajectory], PanelConfig(judges=[f"replay:{first_dir}"]), tmp_path / "second")
    rows = verdict_rows(tmp_path / "second")
    assert [(v.cached, v.judge, v.status) for v in rows] == [(False, f"replay:{first_dir}", "ok")] * 2


# --- resume after SIGKILL ------------------------------------------------------------------------

CHILD = """
import asyncio, sys
from pathlib import Path
from judge.panel import PanelConfig, run_panel
from judge.testing.synthetic import synthetic_batch
trajectories, _ = synthetic_batch(40)
config = PanelConfig(judges=["openai-compatible:simjudge@" + sys.argv[1]], passes=1, concurrency=2)
asyncio.run(run_panel(trajectories, config, Path(sys.argv[2]), progress=False))
"""


def test_resume_after_sigkill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    trajectories, truth = synthetic_batch(40)
    run_dir = tmp_path / "run"
    with simulated_server(truth, SimConfig(latency_s=0.1)) as sim:
        child = subprocess.Popen([sys.executable, "-c", CHILD, sim.base_url, str(run_dir)])
        verdicts = run_dir / rundir.VERDICTS
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            if verdicts.exists() and len(verdicts.read_text().splitlines()) >= 8:
                break
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL
        before_kill = {json.loads(line)["trajectory_id"]: json.loads(line) for line in verdicts.read_text().splitlines()}
        with RunStore.for_run(run_dir) as store:
            stored = store.count_verdicts()
        assert 8 <= stored < 40
        sim.reset_count()
        result = run(trajectories, PanelConfig(judges=[f"openai-compatible:simjudge@{sim.base_url}"], passes=1), run_dir)
        assert sim.request_count == 40 - stored == result.calls  # only the missing calls
        rows = verdict_rows(run_dir)
        assert len(rows) == 40 and len({v.trajectory_id for v in rows}) == 40  # no duplicates, none lost
        by_id = {v.trajectory_id: v for v in rows}
        for trajectory_id, row in before_kill.items():
            assert by_id[trajectory_id].cached and by_id[trajectory_id].issues == Verdict.model_validate(row).issues


def test_simulated_panel_reports_known_defects_and_says_it_is_a_simulation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    trajectories, truth = synthetic_batch(12)
    with simulated_server(truth, SimConfig(latency_s=0.0, miss_rate=0.1, false_alarm_rate=0.2)) as sim:
        run(trajectories, PanelConfig(judges=[f"openai-compatible:simjudge@{sim.base_url}"]), tmp_path)
    rows = verdict_rows(tmp_path)
    assert len(rows) == 36 and all(v.status == "ok" for v in rows)
    assert all("SIMULATION" in v.model for v in rows)  # every verdict row says where it came from
    assert all(v.raw is None for v in rows)
    found = {(v.trajectory_id, i.tag, i.turn) for v in rows for i in v.issues}
    votes = [sum(1 for v in rows if v.trajectory_id == trajectory.id and any(i.tag == defect["tag"] for i in v.issues))
             for trajectory, row in zip(trajectories, truth) for defect in row["issues"]]
    assert votes and min(votes) >= 1  # every known defect is seen by some pass
    assert sum(1 for n in votes if n >= 2) >= 0.75 * len(votes)  # noisy, but mostly by a majority
    assert sum(1 for n in votes if n == 3) < len(votes)  # and the simulated judges do miss some
    wordings = {i.description for v in rows for i in v.issues if i.tag == "repeated-failure"}
    assert len(wordings) >= 3  # the three simulated judges word the same defect differently
    assert not any("{" in wording for wording in wordings)  # every template field is filled
    assert found  # and the panel did report something
    request_bodies = json.dumps(sim.requests)
    assert "[SIMULATED JUDGE]" not in request_bodies  # the label is on the server's answers, not our prompt


def test_rules_and_llm_in_one_panel(server: FakeLLMServer, tmp_path: Path) -> None:
    config = config_for(server, passes=None, judges=["rules", spec_for(server)])
    result = run([one_trajectory()], config, tmp_path)
    assert [p.pass_key for p in result.plans] == ["rules#1", f"{spec_for(server)}#1"]
    members = RunDir(tmp_path).manifest().to_json()["panel"]["members"]
    assert [m["deterministic"] for m in members] == [True, False]
    assert server.request_count == 1 and len(verdict_rows(tmp_path)) == 2


def test_auth_failure_stops_all_further_calls(server: FakeLLMServer, tmp_path: Path) -> None:
    server.queue(Scripted(status=401, error_message="invalid key"))
    trajectories, _ = synthetic_batch(4)
    result = run(trajectories, config_for(server, passes=2, concurrency=1), tmp_path)
    assert server.request_count == 1  # not 8 identical failures
    rows = verdict_rows(tmp_path)
    assert len(rows) == 8 and all(v.reason == "provider_error" for v in rows)
    assert result.unscored["provider_error"] == 8 and "not attempted" in rows[-1].detail


def test_a_failing_judge_does_not_stop_the_batch(tmp_path: Path) -> None:
    class Flaky(BaseJudge):
        spec, deterministic = "flaky", True

        async def __call__(self, trajectory, pass_index, **hooks):
            if trajectory.id.endswith("1"):
                raise RuntimeError("detector bug")
            return Verdict(trajectory_id=trajectory.id, judge=self.spec, pass_index=pass_index, pass_key="x", status="ok")

    trajectories, _ = synthetic_batch(3)
    result = asyncio.run(run_panel(trajectories, PanelConfig(judges=["flaky"]), tmp_path, progress=False, judges={"flaky": Flaky()}))
    assert [v.status for v in result.verdicts] == ["ok", "unscored", "ok"]
    assert "RuntimeError: detector bug" in result.verdicts[1].detail


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("openai-compatible:m@http://user:pw@h:8000/v1", "openai-compatible:m@http://h:8000/v1"),
        ("openai-compatible:m@http://h:8000/v1", "openai-compatible:m@http://h:8000/v1"),
        ("openai:gpt-4o", "openai:gpt-4o"),
    ],
)
def test_url_credentials_never_reach_pass_keys(spec: str, shown: str) -> None:
    (plan,) = plan_passes(PanelConfig(judges=[spec], passes=1), {spec: _Stub(spec)})
    assert plan.pass_key == f"{shown}#1" and plan.judge == spec


def test_urls_that_differ_only_in_their_query_are_passes_of_one_judge() -> None:
    specs = ["openai-compatible:m@http://h/api?code=KEY-ONE-1234", "openai-compatible:m@http://h/api?code=KEY-TWO-5678"]
    plans = plan_passes(PanelConfig(judges=specs, passes=1), {spec: _Stub(spec) for spec in specs})
    assert [(plan.pass_key, plan.judge, plan.pass_index) for plan in plans] == [
        ("openai-compatible:m@http://h/api#1", specs[0], 1), ("openai-compatible:m@http://h/api#2", specs[1], 2)]


@pytest.mark.parametrize(("calls", "cpu_s", "wall_s", "concurrency", "latency", "bound"), [
    (900, 11.7, 12.4, 32, 0.2, True),  # 13 ms per call: ~77 calls/s at most, reached 73, the servers allow 160
    (900, 3.0, 6.0, 32, 0.2, False),  # 3.3 ms per call: the servers (160 calls/s) were the limit
    (900, 11.7, 40.0, 32, 0.2, False),  # reached 22 calls/s of a possible 77: waiting, not CPU, was the limit
    (900, 11.7, 12.4, 4, 0.2, False),  # 4 in flight at 0.2 s allow 20 calls/s: below the process's 77
    (20, 1.0, 1.0, 32, 0.2, False),  # too few calls to say
    (900, 11.7, 12.4, 32, None, False),  # no timed attempt: no latency to compare with
])
def test_client_ceiling_says_when_this_process_limited_the_calls(calls: int, cpu_s: float, wall_s: float,
                                                               concurrency: int, latency: float | None, bound: bool) -> None:
    from judge.panel import client_ceiling

    ceiling = client_ceiling(calls, cpu_s, wall_s, concurrency, latency)
    assert (ceiling is not None) == bound
    if ceiling is not None:
        assert ceiling.cpu_ms_per_call == 13.0 and ceiling.max_calls_per_s == 76.9 and ceiling.servers_allow_per_s == 160.0
        assert "13.0 ms of CPU per call caps it near 77 calls/s" in ceiling.line()
        assert "for a CPU" not in ceiling.line()  # it had a CPU whenever it was ready


def test_the_progress_line_says_when_this_process_limits_the_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 27 item 2: not only the run's summary but the progress line, while the run goes on (checked every
    CEILING_MIN_CALLS calls with the one client_ceiling reading)."""
    from judge import panel
    from judge.panel import ClientCeiling, _progress_stats

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    bound = ClientCeiling(13.0, 76.9, 73.0, 160.0)
    seen: list[int] = []

    def ceiling(calls: int, *rest: object) -> ClientCeiling:
        seen.append(calls)
        return bound

    monkeypatch.setattr(panel, "client_ceiling", ceiling)
    trajectories, truth = synthetic_batch(120)
    with simulated_server(truth, SimConfig(latency_s=0.0)) as sim:
        asyncio.run(run_panel(trajectories, PanelConfig(judges=[f"openai-compatible:simjudge@{sim.base_url}"],
                                                        passes=1, concurrency=4), tmp_path, progress=True))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("judging")]
    assert any("client-bound: 13.0 ms CPU per call caps it near 77 calls/s" in line for line in lines), lines
    assert seen and all(b - a >= panel.CEILING_MIN_CALLS for a, b in zip([0, *seen[:-1]], seen[:-1]))  # not per call
    from judge.providers.retry import CallRuntime

    assert "client-bound" not in _progress_stats(CallRuntime(), 0, 0, 0.0, 1.0)  # no ceiling, no note


@pytest.mark.parametrize(("cpu_wait_s", "bound"), [(2.9, True), (0.0, False), (0.5, False)])
def test_client_ceiling_counts_the_wait_for_a_cpu_on_a_busy_host(cpu_wait_s: float, bound: bool) -> None:
    # A `judge score` of 600 real trajectories against the simulated server at 10 ms, --concurrency 32, on the
    # shared 2-core host: 3.4 s on a CPU and 2.9 s ready but waiting for one (/proc/self/schedstat) of 6.4 s. Counted
    # by its CPU alone the run looked half idle, and no note was printed although the servers waited on it.
    from judge.panel import client_ceiling

    ceiling = client_ceiling(600, 3.4, 6.4, 32, 0.011, cpu_wait_s)
    assert (ceiling is not None) == bound
    if ceiling is not None:
        assert (ceiling.cpu_wait_s, ceiling.wall_s) == (2.9, 6.4)
        assert "waited 2.9 s of 6.4 s for a CPU that other processes held" in ceiling.line()


def test_the_servers_latency_is_the_quickest_answer_of_a_real_call(tmp_path: Path) -> None:
    # Each answer a CPU-bound client reads waits for the client: their mean measured the client (0.24 s against a
    # server answering in 0.01 s). A failed attempt and a preflight's minimal request say nothing of a call's latency.
    from judge.providers.retry import Attempt
    from judge.runcalls import open_calls

    with RunStore.for_run(tmp_path) as store:
        calls = open_calls(store, PanelConfig().call_settings())
        _, preflight = calls.hooks("preflight", "", "j", 0, timed=False)
        _, on_attempt = calls.hooks("k", "t", "j", 1)
        preflight(Attempt(1, "ok", latency_s=0.05))
        on_attempt(Attempt(1, "timeout", latency_s=0.1))
        for latency in (0.4, 0.25, 0.3):
            on_attempt(Attempt(1, "ok", latency_s=latency))
        assert calls.fastest_s == 0.25


# --- per-call work a run does once (issue 27 item 2) ----------------------------------------------


class _CountingJudge(BaseJudge):
    """A cacheable judge that makes no call: counts how often the panel asks for its cache identity, and notes the
    collector's threshold while it judges."""

    spec, deterministic, cacheable = "counting", False, True

    def __init__(self) -> None:
        self.identities = 0
        self.thresholds: list[int] = []

    def cache_identity(self) -> Any:
        self.identities += 1
        return {"provider": "p", "model": "m", "prompt": "v1", "params": {"endpoint": "http://h/v1"}}

    async def __call__(self, trajectory, pass_index, **hooks):
        import gc

        self.thresholds.append(gc.get_threshold()[0])
        return Verdict(trajectory_id=trajectory.id, judge=self.spec, pass_index=pass_index, pass_key="x", status="ok")


def test_a_run_takes_each_judges_cache_identity_once_and_keys_stay_the_same(tmp_path: Path) -> None:
    from judge.panel import pass_cache_key

    judge = _CountingJudge()
    trajectories, _ = synthetic_batch(6)
    config = PanelConfig(judges=["counting"], passes=3)
    asyncio.run(run_panel(trajectories, config, tmp_path, progress=False, judges={"counting": judge}))
    # once per planned pass for the manifest, once for the keys: not once more per (trajectory, pass) as before
    assert judge.identities == 3 + 1
    stored = {row["key"] for row in _store_rows(tmp_path)}
    assert stored == {pass_cache_key(judge, t.content_hash(), index) for t in trajectories for index in (1, 2, 3)}


def test_the_panel_runs_under_the_streaming_collector_policy(tmp_path: Path) -> None:
    import gc

    from judge.collect import GC_THRESHOLD

    judge = _CountingJudge()
    before = gc.get_threshold()
    trajectories, _ = synthetic_batch(2)
    asyncio.run(run_panel(trajectories, PanelConfig(judges=["counting"], passes=1), tmp_path, progress=False,
                          judges={"counting": judge}))
    # as `judge score` runs it (judge.collect): the young generation collected every GC_THRESHOLD allocations, not
    # every 700, during the run; the process's own setting back after it
    assert judge.thresholds == [max(before[0], GC_THRESHOLD)] * 2
    assert gc.get_threshold() == before


def _store_rows(run_dir: Path) -> list[dict[str, Any]]:
    import sqlite3

    with sqlite3.connect(run_dir / "store.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(row) for row in db.execute("SELECT key FROM judge_calls")]
