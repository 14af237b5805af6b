"""A judge server that refuses connections, and the exit codes every command shares (issue 12 item 7)."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.providers import ProviderError, make_provider
from judge.providers.retry import CallRuntime, RetryPolicy, complete_with_retries
from judge.store import RunStore
from judge.testing.servers import FakeLLMServer, Scripted

runner = CliRunner()
GOOD = {"reasoning": "Fine.", "issues": [], "efficiency": "medium"}


def closed_port() -> int:
    """A local port nothing listens on (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def fast_retries(tmp_path: Path) -> Path:
    prices = tmp_path / "prices.yaml"
    prices.write_text("prices:\n  '*': {input: 10.0, output: 10.0}\n")
    config = tmp_path / "panel.yaml"
    config.write_text(f"retry_base_delay_s: 0.001\nmax_tokens: 100\nprices: {prices}\n")
    return config


def score(*args: str):
    return runner.invoke(app, ["score", *args, "--embedder", "lexical"])


@pytest.mark.parametrize(("spec", "transport"), [("openai-compatible:m", "httpx"), ("openai-compatible:m", "aiohttp"),
                                                 ("anthropic:claude-x", None)])
def test_a_refused_connection_is_a_connection_error_not_a_timeout(spec: str, transport: str | None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    url = f"http://127.0.0.1:{closed_port()}"
    options = {"base_url": url + "/v1", "http_transport": transport} if transport else {}
    if spec.startswith("anthropic"):
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)

    async def go():
        provider = make_provider(spec, {**options, "timeout_s": 5})
        runtime = CallRuntime(policy=RetryPolicy(max_retries=2, base_delay_s=0.001), timeout_s=5)
        try:
            return await complete_with_retries(provider, [{"role": "user", "content": "hi"}], runtime=runtime,
                                               estimated_input_tokens=10, max_tokens=10)
        finally:
            await provider.aclose()

    with pytest.raises(ProviderError) as raised:
        asyncio.run(go())
    assert raised.value.kind == "connection_error"
    attempts = raised.value.attempts  # type: ignore[attr-defined]
    assert len(attempts) == 3 and all(a.outcome == "connection_error" and a.cost_usd == 0.0 for a in attempts)


def test_preflight_stops_before_the_batch_with_a_clear_error(batch: Path, fast_retries: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    port = closed_port()
    result = score(str(batch), "--out", str(tmp_path / "run"), "--judge", f"openai-compatible:m@http://127.0.0.1:{port}/v1",
                   "--config", str(fast_retries), "--max-cost", "5")
    assert result.exit_code == 3, result.output
    assert "cannot connect" in result.output and f"127.0.0.1:{port}" in result.output and "--no-preflight" in result.output
    assert "Traceback" not in result.output and "budget" not in result.output
    assert not (tmp_path / "run" / "verdicts.jsonl").exists() or not (tmp_path / "run" / "verdicts.jsonl").read_text()


def test_without_preflight_connection_errors_are_unscored_charged_nothing_and_exit_3(
        batch: Path, fast_retries: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run_dir = tmp_path / "run"
    result = score(str(batch), "--out", str(run_dir), "--judge", f"openai-compatible:m@http://127.0.0.1:{closed_port()}/v1",
                   "--config", str(fast_retries), "--max-cost", "0.05", "--no-preflight", "--concurrency", "2")
    assert result.exit_code == 3, result.output
    rows = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    assert len(rows) == 9 and {r["reason"] for r in rows} == {"connection_error"}
    assert "connection_error 9" in result.output and "budget_exceeded" not in result.output
    budget = json.loads((run_dir / "run.json").read_text())["budget"]
    assert budget["spent_usd"] == 0.0
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cost"]["judge"]["total"]["cost_usd"] == 0.0
    # The server is down: once a pass exhausted its retries (5 attempts), later passes were not attempted.
    with RunStore.for_run(run_dir) as store:
        assert len(store.attempts()) <= 2 * 5
    assert sum("not attempted" in r["detail"] for r in rows) >= 7


def test_exit_code_2_when_some_passes_are_unscored(batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(GOOD)) as fake:
        fake.queue(Scripted.ok("not json"), Scripted.ok("still not json"))  # the first pass: parse_error after a retry
        result = score(str(batch), "--out", str(tmp_path / "run"), "--judge", f"openai-compatible:m@{fake.base_url}",
                       "--passes", "1", "--concurrency", "1", "--no-preflight")
    assert result.exit_code == 4, result.output
    assert "parse_error 1" in result.output


def test_a_cached_judge_needs_no_server_and_no_preflight(batch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(GOOD)) as fake:
        spec = f"openai-compatible:m@{fake.base_url}"
        first = score(str(batch), "--out", str(tmp_path / "run"), "--judge", spec, "--passes", "1")
        assert first.exit_code == 0, first.output
        assert fake.request_count == 3 + 1  # the preflight is one request before the batch
    again = score(str(batch), "--out", str(tmp_path / "run"), "--judge", spec, "--passes", "1")  # server gone
    assert again.exit_code == 0 and "calls made: 0" in again.output, again.output


@pytest.mark.parametrize(("args", "code"), [
    (["score", "no-such-input.jsonl", "--out", "{tmp}/run"], 2),
    (["score", "--out", "{tmp}/run"], 2),
    (["score", "{tmp}/batch.jsonl", "--out", "{tmp}/run", "--no-such-option"], 2),
    (["score", "{tmp}/batch.jsonl", "--out", "{tmp}/run", "--judge", "nonsense:x"], 2),
    (["report", "{tmp}/no-such-run"], 2),
    (["rescore", "{tmp}/no-such-run"], 2),
    (["repair", "{tmp}/no-such-run"], 2),
    (["export", "{tmp}/no-such-run", "--out", "{tmp}/x"], 2),
    (["show", "{tmp}/batch.jsonl", "--id", "no-such-id"], 1),
    (["import", "{tmp}/no-such-input.jsonl", "--out", "{tmp}/x.jsonl"], 1),  # a missing input is a reject there
])
def test_usage_errors_exit_2_and_input_errors_1_in_every_command(args: list[str], code: int, batch: Path,
                                                                tmp_path: Path) -> None:
    """click's convention: 2 is a usage error; 4, not 2, is "some passes unscored" (README exit-code table)."""
    result = runner.invoke(app, [a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.exit_code == code, (args, result.output)
    assert "Traceback" not in result.output
