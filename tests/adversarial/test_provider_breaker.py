"""A server that answers only 429/5xx or nothing stops the run; a busy server does not fail the preflight (issue 28
item 7).

Before: a constant 429 made 5 attempts per pass for every trajectory, a hung server cost 5 x --timeout per pass,
and 4 transient 429s at the start failed the preflight with "Fix the judge".
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.providers import retry  # its Breaker and unanswered_cause are new: read them as attributes
from judge.providers.errors import ProviderTimeout, RateLimited, ServerError, classify_status
from judge.store import RunStore
from judge.testing.servers import FakeLLMServer, Scripted

runner = CliRunner()
QUOTA = "You exceeded your current quota, please check your plan and billing details. (insufficient_quota)"


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "panel.yaml"
    path.write_text("retry_base_delay_s: 0.001\nembedder: lexical\n")
    return path


def score(batch: Path, run_dir: Path, server: FakeLLMServer, config: Path, *extra: str):
    return runner.invoke(app, ["score", str(batch), "--out", str(run_dir), "--judge",
                               f"openai-compatible:m@{server.base_url}", "--config", str(config), "--embedder",
                               "lexical", *extra])


def answers_then(answered: int, then: Scripted) -> tuple[FakeLLMServer, threading.Event]:
    """A server that answers ``answered`` requests, then ``then`` until the returned event is set."""
    count = [0]
    healed = threading.Event()
    lock = threading.Lock()

    def responder(request: dict) -> Scripted:
        with lock:
            count[0] += 1
            good = count[0] <= answered or healed.is_set()
        return Scripted.ok() if good else then

    return FakeLLMServer("openai", responder=responder), healed


@pytest.mark.parametrize(
    ("failure", "cause"),
    [
        (Scripted.rate_limited(retry_after=0.05), "rate limited (Retry-After 0.05s)"),
        (Scripted(status=429, headers={"retry-after": "0.05"}, error_message=QUOTA), "quota exhausted"),
        (Scripted.server_error(503), "server errors (HTTP 503)"),
    ],
)
def test_a_server_that_stops_answering_stops_the_run_and_a_rerun_resumes(
        batch: Path, tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch, failure: Scripted, cause: str) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    run_dir = tmp_path / "run"
    server, healed = answers_then(3, failure)  # the preflight and 2 passes are answered, then nothing is
    with server:
        result = score(batch, run_dir, server, config, "--concurrency", "1")
        assert result.exit_code == 3, result.output
        # 5 consecutive failures stop every call to the server: not 5 attempts for each of the 7 other passes.
        assert server.request_count == 3 + 5, result.output
        assert "stopped the run (exit 3)" in result.output and cause in result.output
        assert "run the same command again" in result.output and "Traceback" not in result.output
        with RunStore.for_run(run_dir) as store:
            assert sum(a["outcome"] == "ok" for a in store.attempts()) == 3
        rows = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()]
        assert [r["status"] for r in rows].count("ok") == 2 and len(rows) == 9
        assert (run_dir / "report.html").exists()  # the run finished its outputs with what it had

        healed.set()
        server.reset_count()
        again = score(batch, run_dir, server, config, "--concurrency", "1")
    assert again.exit_code == 0, again.output
    assert server.request_count == 1 + 7  # the preflight, then only the 7 passes that were not answered


def test_a_hung_server_costs_about_one_timeout_per_attempt_round_not_per_pass(
        batch: Path, tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server, _ = answers_then(0, Scripted.slow(30.0))
    with server:
        result = score(batch, tmp_path / "run", server, config, "--concurrency", "3", "--timeout", "0.3",
                       "--no-preflight")
        requests = server.request_count
    assert result.exit_code == 3, result.output
    assert "hung server: no answer within --timeout 0.3s" in result.output
    # Calls in flight together time out together and count once: 5 rounds of at most 3, not 9 passes x 5.
    assert requests <= 5 * 3, requests


def test_a_hung_server_fails_the_preflight_after_one_timeout_as_overloaded(
        batch: Path, tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server, _ = answers_then(0, Scripted.slow(30.0))
    with server:
        result = score(batch, tmp_path / "run", server, config, "--timeout", "0.3")
        assert server.request_count == 1
    assert result.exit_code == 3, result.output
    assert "hung server" in result.output and "not misconfigured" in result.output
    assert "Fix the judge" not in result.output and "Run the same command again later" in result.output


def test_transient_429s_at_the_start_do_not_fail_the_preflight(
        batch: Path, tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer("openai") as server:
        server.queue(*[Scripted.rate_limited(retry_after=0.01)] * 4)
        result = score(batch, tmp_path / "run", server, config, "--passes", "1")
    assert result.exit_code == 0, result.output
    assert "preflight requests: 5" in result.output


def test_a_preflight_against_a_dead_quota_says_quota_and_not_fix_the_judge(
        batch: Path, tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server, _ = answers_then(0, Scripted(status=429, headers={"retry-after": "0.01"}, error_message=QUOTA))
    with server:
        result = score(batch, tmp_path / "run", server, config)
        assert server.request_count == 1  # a used-up quota is not retried: waiting does not refill it
    assert result.exit_code == 3, result.output
    assert "quota exhausted" in result.output and "Fix the judge" not in result.output


def test_a_misconfigured_judge_is_still_told_to_fix_the_judge(
        batch: Path, tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server, _ = answers_then(0, Scripted(status=404, error_message="The model `m` does not exist"))
    with server:
        result = score(batch, tmp_path / "run", server, config)
    assert result.exit_code == 3, result.output
    assert "Fix the judge" in result.output and "overloaded" not in result.output


def test_the_limit_is_configurable(batch: Path, tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config.write_text(config.read_text() + "stop-after-failures: 2\n")
    server, _ = answers_then(0, Scripted.server_error())
    with server:
        result = score(batch, tmp_path / "run", server, config, "--concurrency", "1", "--no-preflight")
        assert server.request_count == 2
    assert result.exit_code == 3 and "no answer 2 times in a row" in result.output, result.output


# --- the breaker's arithmetic ------------------------------------------------------------------------------

LATE = ProviderTimeout("no answer within 1s")
BUSY = RateLimited("rate limit reached", retry_after=2.0, status=429)
DOWN = ServerError("internal server error", status=500)


@pytest.mark.parametrize(
    ("events", "tripped"),
    [
        # (error or None for an answer, started, ended)
        ([(BUSY, 0, 1), (BUSY, 1, 2), (BUSY, 2, 3)], True),
        ([(BUSY, 0, 1), (None, 1, 2), (BUSY, 2, 3), (BUSY, 3, 4)], False),  # an answer ends the streak
        ([(BUSY, 0, 1), (BUSY, 0, 1.1), (BUSY, 0, 1.2), (BUSY, 0, 1.3)], False),  # in flight together: one failure
        ([(LATE, 0, 1), (DOWN, 1, 2), (BUSY, 2, 3)], True),
        ([(BUSY, 0, 1), (classify_status(400, "bad", None), 1, 2), (BUSY, 2, 3), (BUSY, 3, 4)], False),
    ],
)
def test_breaker_counts_consecutive_failures(events: list, tripped: bool) -> None:
    breaker = retry.Breaker(limit=3)
    trips = [breaker.record("m@x", error, started, ended, 1.0) for error, started, ended in events]
    assert any(trips) == tripped and ("m@x" in breaker.tripped) == tripped


def test_a_breaker_of_zero_never_trips() -> None:
    breaker = retry.Breaker(limit=0)
    assert not any(breaker.record("m@x", BUSY, n, n + 0.5, 1.0) for n in range(100))


@pytest.mark.parametrize(
    ("errors", "cause"),
    [
        ([BUSY, BUSY], "rate limited (Retry-After 2s)"),
        ([RateLimited(QUOTA, status=429)], "quota exhausted"),
        ([DOWN, ServerError("x", status=503)], "server errors (HTTP 500, 503)"),
        ([LATE], "hung server: no answer within --timeout 1s"),
        ([LATE, BUSY], "rate limited, server errors or no answer"),
    ],
)
def test_unanswered_cause(errors: list, cause: str) -> None:
    assert retry.unanswered_cause(errors, 1.0) == cause


@pytest.mark.parametrize(
    ("message", "quota"),
    [
        (QUOTA, True),
        ("Your credit balance is too low to access the API.", True),
        ("Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000. Please try again in 1.2s.", False),
        ("Please retry after 2 seconds. Please go here: https://aka.ms/oai/quotaincrease to increase it", False),
        ("Quota exceeded for quota metric 'Generate Content API requests per minute'", False),
    ],
)
def test_a_used_up_quota_is_told_from_a_rate_limit(message: str, quota: bool) -> None:
    error = classify_status(429, message, 1.0)
    assert getattr(error, "quota_exhausted", None) is quota
    assert error.retryable is not quota  # waiting refills a rate limit, not a quota
