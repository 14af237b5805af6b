"""Secrets are redacted by value, not by name (issue 28 item 4).

One secret is planted in each place a secret can be configured - two gateway headers with names no rule knows, the
user info and the ``?code=`` query of a judge URL, the user info and ``?access_code=`` of ``OPENAI_BASE_URL``, the
key variable of each built-in provider and of a plugin's - and both local servers echo every one of them in each
answer. After one run (and the commands that read it) no file of the run directory, no byte of the shared cache and
no line of stdout or stderr holds any of them.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.providers import make_provider, redact, register_provider, unregister_provider
from judge.providers.openai_provider import OpenAIProvider
from judge.sharedcache import default_cache_dir
from judge.testing.servers import FakeLLMServer, Scripted
from judge.testing.synthetic import synthetic_batch

runner = CliRunner()
SECRETS = {
    "header X-Authentication": "hdr-xauth-5b81c0e2",
    "header Api-Keys": "hdr-apikeys-9f03d7a4",
    "judge URL user info": "url-userinfo-2c6e91b7",
    "judge URL ?code=": "azure-code-8d47f1a3",
    "OPENAI_BASE_URL user info": "env-url-userinfo-41e9c2d8",
    "OPENAI_BASE_URL ?access_code=": "access-code-6a2f08e5",
    "OPENAI_API_KEY": "sk-openai-env-73b5e19c",
    "ANTHROPIC_API_KEY": "sk-ant-env-0e8d4c62",
    "ACME_API_KEY (a plugin provider's env_key)": "acme-env-key-95c3a7f1",
}


def echoing(*secrets: str) -> Callable[[dict[str, Any]], Scripted]:
    """A server that repeats ``secrets`` (default: every one) in each (valid, successful) answer: in the reasoning,
    an issue's description and its evidence."""
    echoed = " ".join(secrets or SECRETS.values())
    return lambda request: Scripted.ok({"reasoning": f"The request carried {echoed}.", "efficiency": "medium", "issues": [
        {"turn": 1, "description": f"The agent leaked {echoed}", "evidence": echoed, "category": "semantic",
         "severity": "minor", "tag": "leak", "recovered": None}]})


@pytest.fixture
def acme_provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A plugin provider whose key variable is set: registered like any other provider, never used by the run."""
    monkeypatch.setenv("ACME_API_KEY", SECRETS["ACME_API_KEY (a plugin provider's env_key)"])

    class AcmeProvider(OpenAIProvider):
        pass

    register_provider("acme", env_key="ACME_API_KEY")(AcmeProvider)
    yield
    unregister_provider("acme")


def leaks(where: str, data: bytes) -> list[str]:
    return [f"{name} in {where}" for name, secret in SECRETS.items() if secret.encode() in data]


def parquet_text(path: Path) -> bytes:
    """A Parquet file's values as text (its bytes may be compressed: grepping them alone could miss a value)."""
    import pyarrow.parquet as pq

    return json.dumps(pq.read_table(path).to_pylist(), default=str, ensure_ascii=False).encode()


def test_a_secret_planted_in_each_place_is_in_no_file_no_cache_and_no_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, acme_provider: None) -> None:
    trajectories, _ = synthetic_batch(2)
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    config = tmp_path / "panel.yaml"
    config.write_text("passes: 1\nmax-retries: 0\nparams:\n  headers:\n"
                      f"    X-Authentication: {SECRETS['header X-Authentication']}\n"
                      f"    Api-Keys: {SECRETS['header Api-Keys']}\n")
    monkeypatch.setenv("OPENAI_API_KEY", SECRETS["OPENAI_API_KEY"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRETS["ANTHROPIC_API_KEY"])
    run_dir = tmp_path / "run"
    outputs: list[tuple[str, str]] = []
    with FakeLLMServer("openai", responder=echoing()) as openai, FakeLLMServer("anthropic", responder=echoing()) as anthropic:
        host = openai.base_url.split("//", 1)[1]
        azure = f"openai-compatible:az@http://judge:{SECRETS['judge URL user info']}@{host}?code={SECRETS['judge URL ?code=']}"
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://gateway:{SECRETS['OPENAI_BASE_URL user info']}@{host}"
                                              f"?access_code={SECRETS['OPENAI_BASE_URL ?access_code=']}")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic.base_url)
        result = runner.invoke(app, ["score", str(batch), "--out", str(run_dir), "--config", str(config),
                                     "--judge", azure, "--judge", "openai:gpt-4o", "--judge", "anthropic:claude-sonnet-4-5",
                                     "--embedder", "lexical"])
        outputs.append(("judge score", result.stdout + result.stderr))
        assert result.exit_code == 0, result.output
        # The secrets were used: each reached its server, and each judge answered (OPENAI_BASE_URL's user info
        # used to stop every openai: call with "Cannot combine AUTHORIZATION header").
        sent = json.dumps([*openai.request_headers, *anthropic.request_headers])
        assert SECRETS["header X-Authentication"] in sent and SECRETS["header Api-Keys"] in sent
        assert SECRETS["ANTHROPIC_API_KEY"] in json.dumps(anthropic.request_headers)
        basic = {f"Basic {base64.b64encode(pair.encode()).decode()}" for pair in (
            f"judge:{SECRETS['judge URL user info']}", f"gateway:{SECRETS['OPENAI_BASE_URL user info']}")}
        assert basic <= {headers.get("authorization") for headers in openai.request_headers}
        assert openai.request_count == 2 * 2 + 2 and anthropic.request_count == 2 + 1  # passes + preflights
    for command in (["rescore", str(run_dir)], ["report", str(run_dir)], ["cache", "stats"]):
        more = runner.invoke(app, command)
        assert more.exit_code in (0, 4), more.output
        outputs.append(("judge " + command[0], more.stdout + more.stderr))

    verdicts = [json.loads(line) for line in (run_dir / "verdicts.jsonl").read_text().splitlines()]
    assert {v["status"] for v in verdicts} == {"ok"}
    # A judge is named by its URL without user info or query.
    assert {v["judge"] for v in verdicts} == {f"openai-compatible:az@http://{host}", "openai:gpt-4o",
                                              "anthropic:claude-sonnet-4-5"}
    found: list[str] = []
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert {"run.json", "summary.json", "report.html", "report.md", "store.sqlite", "verdicts.parquet",
            "issues.parquet"} <= {p.name for p in files}
    for path in files:
        found += leaks(f"run/{path.relative_to(run_dir)}", path.read_bytes())
        if path.suffix == ".parquet":
            found += leaks(f"run/{path.relative_to(run_dir)} (values)", parquet_text(path))
    cache_files = [p for p in default_cache_dir().rglob("*") if p.is_file()]
    assert cache_files  # the answers were shared
    for path in cache_files:
        found += leaks(f"shared cache/{path.name}", path.read_bytes())
    for command, text in outputs:
        found += leaks(f"the output of {command}", text.encode())
    assert not found, found
    assert "***" in (run_dir / "verdicts.jsonl").read_text()  # the echoes were scrubbed, not dropped


def test_base_url_query_and_user_info_are_not_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    trajectories, _ = synthetic_batch(1)
    batch = tmp_path / "batch.jsonl"
    batch.write_text(trajectories[0].to_json_line() + "\n")
    password, access = SECRETS["judge URL user info"], SECRETS["OPENAI_BASE_URL ?access_code="]
    with FakeLLMServer("openai", responder=echoing(password, access)) as fake:
        base_url = fake.base_url.replace("http://", f"http://u:{password}@") + f"?access_code={access}"
        result = runner.invoke(app, ["score", str(batch), "--out", str(tmp_path / "run"), "--judge", "openai:m",
                                     "--base-url", base_url, "--passes", "1", "--embedder", "lexical"])
        assert result.exit_code == 0, result.output
        assert fake.request_count == 2
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["panel"]["params"]["base_url"] == fake.base_url  # the URL without its user info and query
    found = [hit for p in (tmp_path / "run").rglob("*") if p.is_file() for hit in leaks(p.name, p.read_bytes())]
    assert not found + leaks("output", (result.stdout + result.stderr).encode())


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("case", ["unknown provider", "unknown provider, console entry point", "unreachable server",
                                  "server echoes the key in a 401"])
def test_secrets_never_reach_stderr(case: str, tmp_path: Path, batch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    password, code, key = SECRETS["judge URL user info"], SECRETS["judge URL ?code="], SECRETS["OPENAI_API_KEY"]
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    args = ["score", str(batch), "--out", str(tmp_path / "run"), "--embedder", "lexical"]
    bogus = f"bogus:m@http://u:{password}@h/v1?code={code}"
    if case == "unknown provider":
        result = runner.invoke(app, [*args, "--judge", bogus])
        assert result.exit_code == 2 and "unknown judge" in result.output
    elif case == "unknown provider, console entry point":  # judge.cli.main, as the `judge` command runs it
        process = subprocess.run([sys.executable, "-c", "from judge.cli import main; main()", *args, "--judge", bogus],
                                 capture_output=True, text=True, timeout=120)
        assert process.returncode == 2 and "unknown judge" in process.stderr
        assert not leaks("stdout", process.stdout.encode()) + leaks("stderr", process.stderr.encode())
        return
    elif case == "unreachable server":
        spec = f"openai-compatible:m@http://u:{password}@127.0.0.1:{closed_port()}/v1?code={code}"
        result = runner.invoke(app, [*args, "--judge", spec])
        assert result.exit_code == 3 and "cannot connect" in result.output
    else:
        with FakeLLMServer("openai") as fake:
            fake.responder = lambda request: Scripted(status=401, error_message=f"bad key {key}, url code {code}")
            result = runner.invoke(app, [*args, "--judge", "openai:m", "--base-url", f"{fake.base_url}?code={code}"])
        assert result.exit_code == 3 and "bad key ***" in result.output
    assert not leaks("stdout", result.stdout.encode()) + leaks("stderr", result.stderr.encode())


def test_a_crash_shows_no_secret_in_its_message(batch: Path, tmp_path: Path) -> None:
    """An unexpected exception is printed as a traceback in a box whose line breaks could split a secret: its
    message is scrubbed before it is drawn."""
    from judge.judges import register_judge, unregister_judge

    def crashing(spec: str, options: dict[str, Any]) -> Any:
        raise RuntimeError(f"cannot build {spec}")

    register_judge("crashy")(crashing)
    try:
        password = SECRETS["judge URL user info"]
        result = runner.invoke(app, ["score", str(batch), "--out", str(tmp_path / "run"), "--judge",
                                     f"crashy:m@http://u:{password}@h/v1"])
    finally:
        unregister_judge("crashy")
    assert isinstance(result.exception, RuntimeError) and "cannot build crashy:m@http://u:***@h/v1" in str(result.exception)


@pytest.mark.parametrize(("value", "expected"), [
    ("openai-compatible:m@http://u:pw@h:8000/v1?code=abc", "openai-compatible:m@http://h:8000/v1"),
    ("http://h/v1?api-version=2024-06-01&code=k", "http://h/v1"),
    ("https://TOKEN@h/x#frag", "https://h/x#frag"),
    ({"headers": {"X-Authentication": "a", "Api-Keys": "b", "Accept": "json"}},
     {"headers": {"X-Authentication": "***", "Api-Keys": "***", "Accept": "***"}}),  # every header value
    ({"region": "eu", "client_secret": "s"}, {"region": "eu", "client_secret": "***"}),
])
def test_redact_records_urls_without_user_info_or_query_and_no_header_value(value: object, expected: object) -> None:
    assert redact(value) == expected


def test_scrubbing_by_value_has_a_minimum_length(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short password is kept out of names and records by the URL rules, but not searched for in free text."""
    from judge.secrets import MIN_SCRUB_LENGTH, scrub  # imported here: absent before issue 28

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    short, long = "pw1", "a-long-enough-password"
    assert len(short) < MIN_SCRUB_LENGTH <= len(long)
    make_provider(f"openai-compatible:m@http://u:{short}@127.0.0.1:9/v1", {"headers": {"X-Token": long}})
    assert scrub(f"the answer says pw1 and {long}") == "the answer says pw1 and ***"
    assert scrub(json.dumps({"echo": long + '"'})) == json.dumps({"echo": '***"'})
    assert redact(f"openai-compatible:m@http://u:{short}@127.0.0.1:9/v1") == "openai-compatible:m@http://127.0.0.1:9/v1"
