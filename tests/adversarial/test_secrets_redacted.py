"""Credentials in a judge URL or in config params never reach a file of the run (issue 12 item 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judge.cli import app
from judge.providers import redact
from judge.testing.servers import FakeLLMServer, Scripted
from judge.testing.synthetic import synthetic_batch

runner = CliRunner()
SECRETS = {
    "url_password": "PASSWORD-in-url-4711",
    "query_key": "QUERYKEY-in-url-4712",
    "header": "HEADERTOKEN-4713",
    "param_token": "PARAMTOKEN-4714",
    "nested_secret": "NESTEDSECRET-4715",
}
GOOD = {"reasoning": "Fine.", "issues": [], "efficiency": "medium"}


def test_planted_secrets_are_in_no_file_of_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    trajectories, _ = synthetic_batch(2)
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    config = tmp_path / "panel.yaml"
    config.write_text(
        "passes: 1\n"
        "params:\n"
        f"  headers: {{Authorization: 'Bearer {SECRETS['header']}'}}\n"
        f"  access_token: {SECRETS['param_token']}\n"
        f"  gateway: {{client_secret: {SECRETS['nested_secret']}, region: eu}}\n")
    run_dir = tmp_path / "run"
    with FakeLLMServer("openai", responder=lambda request: Scripted.ok(GOOD)) as fake:
        host = fake.base_url.split("//", 1)[1]
        spec = f"openai-compatible:m@http://user:{SECRETS['url_password']}@{host}?api_key={SECRETS['query_key']}"
        result = runner.invoke(app, ["score", str(batch), "--out", str(run_dir), "--judge", spec, "--config", str(config),
                                     "--embedder", "lexical"])
        assert result.exit_code == 0, result.output
        assert fake.request_count == 3  # preflight + 2 passes: the judge worked with its credentials...
        sent = json.dumps(fake.request_headers)
        assert SECRETS["header"] in sent  # ...which reached the server, at runtime only
    rescored = runner.invoke(app, ["rescore", str(run_dir)])
    assert rescored.exit_code == 0, rescored.output
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert {"store.sqlite", "run.json", "summary.json", "report.md", "report.html", "verdicts.jsonl"} <= {p.name for p in files}
    for path in files:
        data = path.read_bytes()
        for name, secret in SECRETS.items():
            assert secret.encode() not in data, f"{name} leaked into {path.name}"
    for name, secret in SECRETS.items():
        assert secret not in result.output + rescored.output, f"{name} printed"
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["panel"]["params"]["params"]["gateway"]["region"] == "eu"  # only the secret parts are hidden


@pytest.mark.parametrize(("value", "expected"), [
    ("openai-compatible:m@http://u:pw@h:8000/v1", "openai-compatible:m@http://h:8000/v1"),
    ("http://h/v1?api_key=abc&model=x", "http://h/v1"),  # a recorded URL has no query (issue 28)
    ("http://h/v1?sig=abc", "http://h/v1"),
    ("openai:gpt-4o", "openai:gpt-4o"),
    ({"max_tokens": 100, "max_input_tokens": 5, "token": "t"}, {"max_tokens": 100, "max_input_tokens": 5, "token": "***"}),
    ({"headers": {"X-Api-Key": "k", "Accept": "json"}}, {"headers": {"X-Api-Key": "***", "Accept": "***"}}),
    ({"apiKey": "k", "accessToken": "t", "password": "p", "cookie": "c"},
     {"apiKey": "***", "accessToken": "***", "password": "***", "cookie": "***"}),
    ({"note": "Bearer abc.def"}, {"note": "***"}),
    ([{"base_url": "https://u:p@h/x"}], [{"base_url": "https://h/x"}]),
    (None, None),
    (3, 3),
])
def test_redact(value: object, expected: object) -> None:
    assert redact(value) == expected
