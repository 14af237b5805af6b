"""The secret registry (judge.secrets): what is registered, the forms it is scrubbed in, the streams."""

from __future__ import annotations

import base64
import html
import io
import json
import sys
from urllib.parse import quote, quote_plus

import pytest

from judge.model import ToolCall, Usage
from judge.providers import Completion, make_provider, scrub_completion
from judge.secrets import register_secret, register_secrets_in, scrub, scrub_output


@pytest.mark.parametrize(("configured", "scrubbed", "kept"), [
    ("openai-compatible:m@http://u:PASSWORD-one@h/v1?code=CODEVALUE-1&v=1", ["PASSWORD-one", "CODEVALUE-1"], ["u", "h/v1"]),
    ("https://TOKEN-AS-USER@h/x", ["TOKEN-AS-USER"], ["h/x"]),
    ("http://alice-the-user:PASSWORD-two@h/", ["PASSWORD-two"], ["alice-the-user"]),  # a user name with a password
    ("http://u:p%40ssword-long@h/", ["p@ssword-long", "p%40ssword-long"], []),
    ("http://h/v1?access_code=a+b+c+d+e", ["a b c d e", "a+b+c+d+e"], []),
    ({"headers": {"X-Anything": "HEADER-VALUE-1", "Accept": "application/json"}}, ["HEADER-VALUE-1", "application/json"], []),
    ({"gateway": {"client_secret": "NESTED-VALUE-1", "region": "europe-west"}}, ["NESTED-VALUE-1"], ["europe-west"]),
    ({"headers": {"Authorization": "Bearer BEARER-TOKEN-1"}}, ["BEARER-TOKEN-1"], ["Bearer"]),
    ({"headers": {"X-Short": "abc"}}, [], ["abc"]),  # below the minimum length: not searched for in text
])
def test_what_a_configuration_registers(configured: object, scrubbed: list[str], kept: list[str]) -> None:
    register_secrets_in(configured)
    for value in scrubbed:
        assert scrub(f"<{value}>") == "<***>", value
    for value in kept:
        assert scrub(f"<{value}>") == f"<{value}>", value


def test_a_secret_is_scrubbed_as_json_html_and_urls_write_it() -> None:
    secret = 'se"cr&et<é>/value'
    register_secret(secret)
    for written in (json.dumps({"a": secret}), json.dumps({"a": secret}, ensure_ascii=False), html.escape(secret),
                    f"https://h/x?k={quote(secret, safe='')}", f"https://h/x?k={quote_plus(secret, safe='')}"):
        assert "se" not in scrub(written).replace("***", ""), written
    assert json.loads(scrub(json.dumps({"a": secret}))) == {"a": "***"}  # still valid JSON


def test_url_user_info_becomes_a_basic_header_also_from_the_sdk_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-a-real-key-1234")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gw:PW-of-the-gateway@127.0.0.1:9/v1?access_code=ACCESS-123")
    provider = make_provider("openai:gpt-4o")
    client = provider._clients[0]  # type: ignore[attr-defined]
    assert provider.endpoint == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]
    assert client.default_headers["Authorization"] == "Basic " + base64.b64encode(b"gw:PW-of-the-gateway").decode()
    assert client._custom_query == {"access_code": "ACCESS-123"}
    assert scrub("PW-of-the-gateway ACCESS-123 sk-a-real-key-1234") == "*** *** ***"


def test_an_answer_is_scrubbed_everywhere_it_holds_text() -> None:
    register_secret("ECHOED-SECRET-9")
    completion = Completion(
        text='{"reasoning": "saw ECHOED-SECRET-9"}', parsed={"reasoning": "saw ECHOED-SECRET-9", "n": 1},
        finish_reason="stop", refusal="no ECHOED-SECRET-9", usage=Usage(), model="m", latency_s=0.1,
        raw={"choices": [{"message": {"content": "ECHOED-SECRET-9"}}]},
        tool_calls=[ToolCall(id="c1", name="bash", arguments={"cmd": "echo ECHOED-SECRET-9"})])
    scrub_completion(completion)
    assert "ECHOED-SECRET-9" not in json.dumps([completion.text, completion.parsed, completion.refusal, completion.raw,
                                                 [call.model_dump() for call in completion.tool_calls]])
    assert completion.parsed == {"reasoning": "saw ***", "n": 1}


def test_scrubbed_streams_and_putting_them_back(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    restore = scrub_output()
    try:
        assert scrub_output()() is None  # already scrubbed: nothing to undo
        register_secret("PRINTED-SECRET-7")  # registered after the streams were wrapped: still scrubbed
        print("stdout PRINTED-SECRET-7")
        print("stderr PRINTED-SECRET-7", file=sys.stderr)
    finally:
        restore()
    assert sys.stdout is out and sys.stderr is err
    assert (out.getvalue(), err.getvalue()) == ("stdout ***\n", "stderr ***\n")
