"""The test support itself: the socket guard of conftest.py, the queued FakeProvider, and the shared builders."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from judge.judges.llm import LLMJudge
from judge.panel import PanelConfig, run_panel
from judge.providers import Completion, RateLimited
from judge.testing.builders import call, cluster, issue, say, tool, trajectory, verdict
from judge.testing.fake_provider import FakeProvider, QueueEmpty
from judge.testing.servers import EMPTY_VERDICT
from trajudge_socket_guard import child_pythonpath

ROOT = Path(__file__).resolve().parents[1]


# --- socket guard ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True), ("::ffff:127.0.0.1", True),
        ("localhost", True), ("LOCALHOST.", True), (b"127.0.0.1", True),
        ("10.255.255.1", False), ("192.168.1.1", False), ("8.8.8.8", False), ("::ffff:10.0.0.1", False),
        ("2001:db8::1", False), ("0.0.0.0", False), ("example.com", False), ("localhost.example.com", False),
        ("", False), (None, False),
    ],
)
def test_loopback_is_decided_without_a_lookup(socket_guard, host, loopback: bool) -> None:
    assert socket_guard.is_loopback(host) is loopback


def test_a_private_address_is_refused_before_any_packet(socket_guard) -> None:
    started = time.monotonic()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(socket_guard.Blocked, match="10.255.255.1"):
        sock.settimeout(5)  # an unroutable address would hang until this timeout if a SYN were sent
        sock.connect(("10.255.255.1", 9))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, pytest.raises(socket_guard.Blocked):
        sock.sendto(b"x", ("10.255.255.1", 53))
    assert time.monotonic() - started < 1.0
    assert len(socket_guard.take()) == 2  # consumed: this test expected them


def test_a_host_name_is_refused_without_dns(socket_guard, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock, pytest.raises(socket_guard.Blocked, match="example.com"):
        sock.connect(("example.com", 80))  # refused by the address check: the C resolver is never reached
    with pytest.raises(socket_guard.Blocked, match="name lookup of 'example.com'"):
        socket.create_connection(("example.com", 80), timeout=5)
    with pytest.raises(socket_guard.Blocked):  # an HTTP client cannot turn it into a "connection failed"
        httpx.get("http://example.com/", timeout=5)
    assert len(socket_guard.take()) == 3


def test_loopback_connections_work(socket_guard) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        for host in ("127.0.0.1", "localhost"):
            with socket.create_connection((host, port), timeout=5):
                conn, _ = server.accept()
                conn.close()
    assert socket_guard.blocked == []


def test_a_swallowed_refusal_still_fails_the_test(tmp_path: Path) -> None:
    """A provider path that catches every exception must not hide a network call: the guard fails at teardown."""
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_swallow.py").write_text(
        "import socket\n"
        "def test_swallows():\n"
        "    try:\n"
        "        socket.create_connection(('10.255.255.1', 9), timeout=5)\n"
        "    except Exception:\n"
        "        pass\n"
    )
    (tmp_path / "test_swallow_in_a_child.py").write_text(
        "import subprocess, sys\n"
        "def test_a_child_swallows():\n"
        f"    subprocess.run([sys.executable, '-c', {SWALLOWING_CHILD!r}], check=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": child_pythonpath(ROOT)}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                             str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 passed, 2 errors" in result.stdout, result.stdout
    assert "tried to reach the network: connect to ('10.255.255.1', 9)" in result.stdout
    assert "tried to reach the network: in a child process, pid" in result.stdout


# A child that swallows the refusal and reports what it caught.
SWALLOWING_CHILD = (
    "import socket\n"
    "try:\n"
    "    socket.create_connection(('10.255.255.1', 9), timeout=5)\n"
    "except Exception as error:\n"
    "    print(type(error).__name__)\n"
)


def test_a_python_child_process_is_guarded(socket_guard) -> None:
    """A Python process a test starts gets the guard from the inherited PYTHONPATH: refused there before any packet,
    and the refusal reaches this process even though the child swallowed it."""
    result = subprocess.run([sys.executable, "-c", SWALLOWING_CHILD], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "BlockedConnection", result.stdout + result.stderr
    (refused,) = socket_guard.take()  # consumed: this test expected it
    assert refused.startswith("in a child process, pid ") and "connect to ('10.255.255.1', 9)" in refused


# --- FakeProvider ---------------------------------------------------------------------------------


def three_turns():
    return trajectory("t1", [say("Running the tests.", call("c1", "bash", cmd="pytest")), tool("c1", "1 failed", error=True),
                             say("Looking at the failure."), say("All tests pass.")])


CLAIM = {"reasoning": "T3 claims success after a failed run.", "efficiency": "low", "issues": [
    {"turn": 3, "description": "Claims the tests pass after they failed.", "evidence": "All tests pass.",
     "category": "semantic", "severity": "severe", "tag": None}]}


def test_an_injected_fake_provider_drives_the_llm_judge() -> None:
    fake = FakeProvider(CLAIM, "not json", "still not json", spec="openai:gpt-test")
    judge = LLMJudge("openai:gpt-test", {"provider": fake})
    first = asyncio.run(judge(three_turns(), 1))
    second = asyncio.run(judge(three_turns(), 2))
    assert first.status == "ok" and [(i.turn, i.category) for i in first.issues] == [(3, "semantic")]
    assert (second.status, second.reason, second.raw) == ("unscored", "parse_error", "still not json")
    assert [r.seed for r in fake.requests] == [1, 2, 2] and all(r.schema is not None for r in fake.requests)
    retry = fake.requests[2].messages  # the corrective retry carries the bad answer and says what was wrong
    assert retry[-2] == {"role": "assistant", "content": "not json"} and retry[-1]["role"] == "user"
    assert fake.pending == 0


def test_fake_providers_fixture_serves_a_panel_built_from_specs(fake_providers, tmp_path: Path) -> None:
    fake_providers["fake:gpt-test"].queue(RateLimited("slow down", retry_after=0.001), CLAIM, EMPTY_VERDICT)
    config = PanelConfig(judges=["fake:gpt-test"], passes=2, concurrency=1, retry_base_delay_s=0.001)
    result = asyncio.run(run_panel([three_turns()], config, tmp_path, progress=False))
    assert sorted(len(v.issues) for v in result.verdicts) == [0, 1] and all(v.status == "ok" for v in result.verdicts)
    assert (result.calls, result.retries) == (3, 1)  # the rate-limited attempt is counted
    assert len(fake_providers["fake:gpt-test"].requests) == 3


def test_fake_provider_queue_rules() -> None:
    truncated = Completion(text='{"reasoning": "cut', parsed=None, finish_reason="length", refusal=None,
                           usage=FakeProvider().usage, model="m", latency_s=0.0)
    fake = FakeProvider({"a": 1}, '{"b": 2}', truncated)
    with_schema = asyncio.run(fake.complete([{"role": "user", "content": "q"}], schema={"type": "object"}))
    plain = asyncio.run(fake.complete([{"role": "user", "content": "q"}]))
    assert (with_schema.parsed, plain.parsed, plain.text) == ({"a": 1}, None, '{"b": 2}')
    assert asyncio.run(fake.complete([])) is truncated
    with pytest.raises(QueueEmpty, match="call 4"):
        asyncio.run(fake.complete([]))
    assert asyncio.run(FakeProvider(default="same").complete([])).text == "same"


# --- builders -------------------------------------------------------------------------------------


def test_builders_follow_the_canonical_model() -> None:
    traj = three_turns()
    assert traj.turn_count == 3 and [m.role for m in traj.messages[:2]] == ["system", "user"]
    assert traj.messages[3].receipt.call_id == "c1" and traj.messages[3].turn == 1
    found = issue(3, "claims success", category="semantic", severity="severe")
    assert verdict(2, [found]).pass_key == "fake#2"
    assert (verdict(1, status="unscored").reason, verdict(1, status="unscored").efficiency) == ("parse_error", None)
    assert cluster(found, votes=2).majority and not cluster(found, votes=1).majority
    assert cluster(found, votes=1, panel_size=1).majority  # a panel of one: one vote is the majority


# --- chromium ------------------------------------------------------------------------------------


class _Profile:
    """A profile folder whose removal fails ``failures`` times ("Directory not empty": a helper still writes)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.attempts = 0

    def cleanup(self) -> None:
        self.attempts += 1
        if self.attempts <= self.failures:
            raise OSError(39, "Directory not empty")


def test_the_chromium_profile_removal_is_retried_while_a_helper_process_still_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.testing import chromium

    monkeypatch.setattr(chromium.time, "sleep", lambda seconds: None)
    late = _Profile(failures=2)
    chromium._remove_profile(late)
    assert late.attempts == 3
    stuck = _Profile(failures=100)
    with pytest.raises(OSError, match="not empty"):  # a profile that cannot be removed is still an error
        chromium._remove_profile(stuck, attempts=5)
    assert stuck.attempts == 5


# --- the simulated judge server -------------------------------------------------------------------


def test_the_simulated_judge_loads_what_it_matches_with_before_its_first_request() -> None:
    # With an empty truth table nothing was matched at construction, and the first request imported
    # judge.prompting on the server's loop, delaying every request of the first wave (~0.15 s in the throughput
    # bench, charged to the client's wall time). A fresh interpreter: this one has judge.prompting loaded already.
    probe = ("import sys; from judge.testing.simjudge import SimulatedJudge; SimulatedJudge({}); "
             "print('judge.prompting' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": child_pythonpath()})
    assert found.stdout.strip() == "True"
