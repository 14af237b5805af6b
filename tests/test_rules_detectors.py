"""The rules judge, detector by detector: table-driven cases, each detector called alone, plus config and judge."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.facts.analysis import analyse, classify_receipt
from judge.judges import make_judge
from judge.model import (
    Message,
    Receipt,
    ToolCall,
    Trajectory,
    TrajectoryMetadata,
    number_turns,
)
from judge.rules import (
    DETECTOR_NAMES,
    DETECTORS,
    RulesConfig,
    WasteCounts,
    default_config,
    efficiency_vote,
    run_detectors,
    vote_from_waste,
    waste_counts,
)

# --- a compact trajectory builder ------------------------------------------------------------------


def U(text: str) -> tuple[str, Any]:
    return ("user", text)


def A(text: str = "", *calls: dict[str, Any], name: str | None = None) -> tuple[str, Any]:
    return ("assistant", (text, calls, name))


def T(text: str, name: str = "Computer_terminal") -> tuple[str, Any]:
    """An id-less tool output, paired by position (Who&When)."""
    return ("terminal", (text, name))


def sh(command: str, out: str | None = "", code: int | None = 0, error: bool = False, id: str | None = None) -> dict[str, Any]:
    return {"name": "Bash", "args": {"command": command}, "out": out, "code": code, "error": error, "id": id}


def tool(name: str, args: dict[str, Any], out: str | None = "ok", error: bool = False, id: str | None = None) -> dict[str, Any]:
    return {"name": name, "args": args, "out": out, "code": None, "error": error, "id": id}


def todo(*items: tuple[str, str]) -> dict[str, Any]:
    return tool("TodoWrite", {"todos": [{"content": c, "status": s} for c, s in items]}, "Todos updated")


def build(*steps: tuple[str, Any], budget_exhausted: bool | None = None) -> Trajectory:
    messages: list[Message] = []
    counter = 0
    for kind, value in steps:
        if kind == "user":
            messages.append(Message(role="user", content=value))
        elif kind == "terminal":
            text, name = value
            messages.append(Message(role="tool", content=text, name=name, receipt=Receipt(name=name, content=text)))
        else:
            text, calls, name = value
            tool_calls, receipts = [], []
            for call in calls:
                counter += 1
                call_id = call["id"] or f"c{counter}"
                tool_calls.append(ToolCall(id=call_id, name=call["name"], arguments=call["args"]))
                if call["out"] is not None:
                    receipts.append(Message(role="tool", content=call["out"], receipt=Receipt(
                        call_id=call_id, name=call["name"], content=call["out"],
                        is_error=call["error"] or bool(call["code"]), exit_code=call["code"])))
            messages.append(Message(role="assistant", content=text, name=name, tool_calls=tool_calls))
            messages.extend(receipts)
    return Trajectory(id="t", query="q", query_id="q", messages=number_turns(messages),
                      metadata=TrajectoryMetadata(source_format="test", budget_exhausted=budget_exhausted))


def found(name: str, trajectory: Trajectory) -> list[tuple[int | None, str]]:
    return [(i.turn, i.category) for i in DETECTORS[name](trajectory)]


# --- receipts ------------------------------------------------------------------------------------------

RECEIPTS = [
    # (content, is_error, exit_code, outcome)
    ("File created successfully at: a.py", False, None, "ok"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\nNameError: name 'y' is not defined", False, None, "error"),
    ("  File \"x.py\", line 2\n    def f(\n         ^\nSyntaxError: '(' was never closed", False, None, "error"),
    ("bash: jq: command not found", False, 127, "error"),
    ("Error: unknown flag: --records", False, None, "error"),
    ("usage: tool [-h]\ntool: error: unrecognized arguments: --fast", False, 2, "error"),
    ("Error: 12 validation errors for TableCreate", False, None, "error"),
    ("错误：参数 --type 不支持", False, None, "error"),
    ("エラー: ファイルが見つかりません", False, None, "error"),
    ("' Ada Lovelace ' -> 'AdaLovelace' FAIL", False, None, "error"),
    ("anything at all", True, None, "error"),
    ("no output", False, 3, "error"),
    # environment, never code
    ("curl: (6) Could not resolve host: pypi.org", False, 6, "environment"),
    ("Error: connect ECONNREFUSED 127.0.0.1:5432", False, 1, "environment"),
    ("requests.exceptions.ReadTimeout: Read timed out. (read timeout=30)", True, None, "environment"),
    ('Error: HTTP 401 Unauthorized {"msg": "token expired"}', False, 1, "environment"),
    ("HTTP 403 Forbidden", True, None, "environment"),
    ("Error: 429 Too Many Requests: rate limit exceeded", False, 1, "environment"),
    ("write error: No space left on device", False, 1, "environment"),
    ("错误：请求过于频繁（429），请稍后重试", False, 1, "environment"),
    ("エラー: 接続がタイムアウトしました", False, 1, "environment"),
    # not failures: a source view, grep hits, an explicit exit code 0 with error words in the output
    ("[File: app.py (40 lines total)]\n1:import sys\n2:class ParseError(Exception):\n3:    pass", False, None, "ok"),
    ("app.py:12:    raise ValueError('bad')\napp.py:30:        logger.error('x')", False, None, "ok"),
    ("exitcode: 0 (execution succeeded)\nCode output: Error: column missing, using default", False, None, "ok"),
    ("...\n3 passed in 0.01s", False, 0, "ok"),
    ("The script ran, then exited with Unix exit code: 0\nIts output was:\nError count: 3", False, None, "ok"),
    ("The script ran, then exited with Unix exit code: 1\nIts output was:\nboom", False, None, "error"),
    ("No code block detected in the messages. Please provide a markdown-encoded code block.", False, None, "error"),
]


@pytest.mark.parametrize(("content", "is_error", "exit_code", "outcome"), RECEIPTS)
def test_receipts_are_classified(content: str, is_error: bool, exit_code: int | None, outcome: str) -> None:
    config = default_config()
    receipt = Receipt(call_id="x", content=content, is_error=is_error, exit_code=exit_code)
    assert classify_receipt(receipt, config, config.patterns)[0] == outcome


@pytest.mark.parametrize(("call", "outcome"), [
    (tool("Read", {"file_path": "docs/help.md"}, "Error: Connection refused\nTraceback (most recent call last):"), "ok"),
    (sh("cat notes.txt", "Error: disk full on the old server", None), "ok"),
    (sh("cat missing.txt", "cat: missing.txt: No such file or directory", 1), "error"),
    (sh("ls missing", "ls: cannot access 'missing': No such file or directory", None), "error"),
    (tool("Read", {"file_path": "x"}, "File does not exist.", error=True), "error"),
])
def test_file_content_is_judged_by_flags_only(call: dict[str, Any], outcome: str) -> None:
    [action] = analyse(build(U("go"), A("", call)), default_config()).actions
    assert action.outcome == outcome


# --- claim sentences -----------------------------------------------------------------------------------

CLAIMS = [
    ("All tests pass.", True),
    ("I've created report.csv with both orders.", True),
    ("The file has been written.", True),
    ("已完成：产品已写入。", True),
    ("修正が完了しました。", True),
    ("3/3 tasks completed.", True),
    ("Once the tests pass, I'll mark it done.", False),
    ("I have completed the search and will now compute the average.", False),
    ("The tests did not pass.", False),
    ("Let me verify that the tests pass.", False),
    ("如果测试通过就完成了", False),
    ("テストが通ったら完了します", False),
    ("Reading the file now.", False),
]


@pytest.mark.parametrize(("text", "is_claim"), CLAIMS)
def test_claim_sentences(text: str, is_claim: bool) -> None:
    analysis = analyse(build(A(text)), default_config())
    sentences = analysis.speeches[0].sentences
    assert any(s.is_claim and not s.hedged and not s.mentions_failure for s in sentences) is is_claim


# --- detectors, each called alone ------------------------------------------------------------------------

FAIL = "Error: unknown flag: --records"
CASES: list[tuple[str, str, Trajectory, list[tuple[int | None, str]]]] = [
    # failed-call: an unrecovered failure is found at the calling turn; one redone later is no finding (tags.md)
    ("failed-call", "recovered later", build(U("go"), A("", sh("cli add --records x", FAIL, 2)),
                                              A("", sh("cli add --json x", "ok"))), []),
    ("failed-call", "never recovered", build(U("go"), A("", sh("cli add --records x", FAIL, 2)),
                                              A("", sh("echo", "x"))), [(1, "code")]),
    ("failed-call", "environment is not code", build(U("go"), A("", sh("curl x", "Could not resolve host: x", 6))), []),
    ("failed-call", "clean", build(U("go"), A("", sh("ls", "a.py"))), []),
    ("failed-call", "who&when terminal", build(U("go"), A("```python\nprint(x)\n```", name="Coder"),
                                               T("exitcode: 1 (execution failed)\nCode output: NameError: name 'x' is not defined")),
     [(1, "code")]),
    # repeated-failure: identical call + identical error; a changed call is not a repeat
    ("repeated-failure", "three identical", build(U("go"), *[A("", sh("pytest -q", "E ModuleNotFoundError: x", 4))] * 3),
     [(2, "code"), (3, "code")]),
    ("repeated-failure", "arguments changed", build(U("go"), A("", sh("pytest -q", "E ModuleNotFoundError: x", 4)),
                                                    A("", sh("pytest -q tests/", "E ModuleNotFoundError: x", 4))), []),
    ("environment-fault", "dns", build(U("go"), A("", sh("curl x", "curl: (6) Could not resolve host: x", 6))),
     [(1, "environment")]),
    ("environment-fault", "identical retries reported once",
     build(U("go"), *[A("", sh("curl x", "Connection refused", 7))] * 3), [(1, "environment")]),
    ("environment-fault", "code error", build(U("go"), A("", sh("cli x", FAIL, 2))), []),
    # unverified-completion
    ("unverified-completion", "claim after failure", build(U("go"), A("", sh("cli add --records x", FAIL, 2)),
                                                           A("All records have been created.")), [(2, "semantic")]),
    ("unverified-completion", "claim after success", build(U("go"), A("", sh("cli add --json x", "ok")),
                                                           A("All records have been created.")), []),
    ("unverified-completion", "honest failure report", build(U("go"), A("", sh("cli add --records x", FAIL, 2)),
                                                             A("The import failed: --records is not a valid flag.")), []),
    ("unverified-completion", "unknown outcome", build(U("go"), A("", sh("deploy.sh", None)),
                                                       A("Deployment completed successfully.")), [(2, "semantic")]),
    ("unverified-completion", "tests never ran", build(U("go"), A("", sh("echo hi", "hi")), A("All tests pass.")),
     [(2, "semantic")]),
    ("unverified-completion", "final claim over an open failure",
     build(U("go"), A("", sh("make build", "Error: missing target", 2)), A("", sh("echo ok", "ok")), A("已完成。")),
     [(3, "semantic")]),
    ("unverified-completion", "final claim after an owned-up failure",
     build(U("go"), A("", tool("modify_items", {"order": "W1"}, "Error: counts must match", error=True)),
           A("Unfortunately partial changes are not possible."), A("", tool("modify_address", {"user": "u1"}, "ok")),
           A("Your address has been successfully updated.")), []),
    ("unverified-completion", "creation claim after a server run",
     build(U("go"), A("", tool("Write", {"file_path": "app.js", "content": "x"})),
           A("", sh("python3 -m http.server 8000", "Serving HTTP on 0.0.0.0 port 8000 ...", None, error=True)),
           A("I've created the todo application.")), []),
    ("unverified-completion", "multi-agent chatter", build(U("go"), A("I have completed the search; next I will compute.", name="A"),
                                                           A("```python\nprint(1)\n```", name="B"), T("exitcode: 0 (execution succeeded)\nCode output: 1"),
                                                           A("Verified: the result is 1.", name="C")), []),
    # premature-claim
    ("premature-claim", "same message", build(U("go"), A("I've created out.csv.", tool("Write", {"file_path": "out.csv", "content": "x"}))),
     [(1, "semantic")]),
    ("premature-claim", "before the call", build(U("go"), A("I wrote config.yaml."), A("", tool("Write", {"file_path": "config.yaml", "content": "x"}))),
     [(1, "semantic")]),
    ("premature-claim", "claim after its receipt", build(U("go"), A("", tool("Write", {"file_path": "out.csv", "content": "x"})),
                                                         A("I've created out.csv; now checking it.", sh("cat out.csv", "x"))), []),
    ("premature-claim", "tests claimed while starting them", build(U("go"), A("All tests pass.", sh("pytest -q", "2 passed"))),
     [(1, "semantic")]),
    # phantom-failure-reference
    ("phantom-failure-reference", "en", build(U("go"), A("", sh("ls", "a")), A("That failed, so let me retry.", sh("ls", "a"))),
     [(2, "semantic")]),
    ("phantom-failure-reference", "zh", build(U("go"), A("", sh("ls", "a")), A("上次失败了，重试。", sh("ls", "a"))), [(2, "semantic")]),
    ("phantom-failure-reference", "ja", build(U("go"), A("", sh("ls", "a")), A("失敗したので再試行します。", sh("ls", "a"))),
     [(2, "semantic")]),
    ("phantom-failure-reference", "real failure before", build(U("go"), A("", sh("ls x", "ls: x: No such file or directory", 2)),
                                                               A("That failed, so let me retry.", sh("ls", "a"))), []),
    # unchecked-tick
    ("unchecked-tick", "completed with no action", build(U("go"), A("", todo(("fix bug", "in_progress"))),
                                                                A("", todo(("fix bug", "completed")))), [(2, "semantic")]),
    ("unchecked-tick", "check item after a failing check",
     build(U("go"), A("", todo(("run the checks", "in_progress"))), A("", sh("python check.py", "1/2 checks passed\nx FAIL", 1)),
           A("", todo(("run the checks", "completed")))), [(3, "semantic")]),
    ("unchecked-tick", "work item after its own success",
     build(U("go"), A("", todo(("write the draft", "in_progress"))), A("", tool("Write", {"file_path": "a.py", "content": "x"})),
           A("", sh("python check.py", "x FAIL", 1)), A("", todo(("write the draft", "completed")))), []),
    ("unchecked-tick", "markdown checklist", build(U("go"), A("- [ ] run tests", sh("pytest -q", "1 failed", 1)),
                                                          A("- [x] run tests")), [(2, "semantic")]),
    # issue 24: noop-success, silent-check-failure, contradicted-claim (more in test_rules_facts_detectors.py)
    ("noop-success", "nothing created", build(U("go"), A("", sh("lark-cli base record batch-create --ids ''", "0 records created")),
                                              A("Moving on to the views.", sh("lark-cli base view create --name v", "ok"))),
     [(1, "code")]),
    ("noop-success", "said so", build(U("go"), A("", sh("lark-cli base record batch-create --ids ''", "0 records created")),
                                      A("Nothing was created: the id list was empty.")), []),
    ("silent-check-failure", "ticked after exit 0 with failures",
     build(U("go"), A("", todo(("run tests", "in_progress"))), A("", sh("pytest -q", "8 passed, 2 failed", 0)),
           A("", todo(("run tests", "completed")))), [(3, "semantic")]),
    ("silent-check-failure", "0 failed", build(U("go"), A("", sh("pytest -q", "10 passed, 0 failed", 0)), A("All tests pass.")), []),
    ("contradicted-claim", "read-back lists fewer",
     build(U("go"), A("", sh("lark-cli base record batch-create --table tblA1B2C3 --json rows.json", "ok")),
           A("", sh("lark-cli base record list --table tblA1B2C3", '[{"id": "rec1"}, {"id": "rec2"}, {"id": "rec3"}, {"id": "rec4"}]')),
           A("I added 5 rows to the table.")), [(3, "semantic")]),
    ("contradicted-claim", "read-back lists as many",
     build(U("go"), A("", sh("lark-cli base record batch-create --table tblA1B2C3 --json rows.json", "ok")),
           A("", sh("lark-cli base record list --table tblA1B2C3", '[{"id": "rec1"}, {"id": "rec2"}, {"id": "rec3"}, {"id": "rec4"}]')),
           A("I added 4 rows to the table.")), []),
    # stale-evidence
    ("stale-evidence", "changed after the check",
     build(U("go"), A("", tool("Write", {"file_path": "m.py", "content": "1"})), A("", sh("pytest -q", "1 passed")),
           A("", tool("Edit", {"file_path": "m.py", "old_string": "1", "new_string": "2"})), A("Verified: all tests pass.")),
     [(4, "semantic")]),
    ("stale-evidence", "rechecked", build(U("go"), A("", tool("Write", {"file_path": "m.py", "content": "1"})), A("", sh("pytest -q", "1 passed")),
                                          A("", tool("Edit", {"file_path": "m.py", "old_string": "1", "new_string": "2"})),
                                          A("", sh("pytest -q", "1 passed")), A("Verified: all tests pass.")), []),
    ("stale-evidence", "only docs changed", build(U("go"), A("", tool("Write", {"file_path": "m.py", "content": "1"})), A("", sh("pytest -q", "1 passed")),
                                                  A("", tool("Write", {"file_path": "NOTES.md", "content": "2"})), A("Verified: all tests pass.")), []),
    # unpaired-call-id
    ("unpaired-call-id", "no receipt", build(U("go"), A("", sh("x", None)), A("I could not tell if it ran.")), [(1, "environment")]),
    ("unpaired-call-id", "duplicate id in one message", build(U("go"), A("", sh("a", "1", id="same"), sh("b", "2", id="same"))),
     [(1, "environment")]),
    # The one receipt answers the first call (in order): the reuse and the now unanswered second call are reported.
    ("unpaired-call-id", "id reused before its receipt", build(U("go"), A("", sh("a", None, id="same")), A("", sh("b", "2", id="same"))),
     [(2, "environment"), (2, "environment")]),
    ("unpaired-call-id", "id reused after its receipt (tau-bench)", build(U("go"), A("", sh("a", "1", id="same")), A("", sh("b", "2", id="same"))),
     []),
    ("unpaired-call-id", "final submit needs no receipt", build(U("go"), A("", sh("a", "1")), A("", tool("submit", {}, None))), []),
    ("unpaired-call-id", "submit before the end does", build(U("go"), A("", tool("submit", {}, None)), A("", sh("a", "1"))),
     [(1, "environment")]),
    ("unpaired-call-id", "paired", build(U("go"), A("", sh("a", "1"), sh("b", "2"))), []),
    # budget-exhausted
    ("budget-exhausted", "no final answer", build(U("go"), A("", sh("a", "1")), budget_exhausted=True), [(1, "capability")]),
    ("budget-exhausted", "final answer given", build(U("go"), A("", sh("a", "1")), A("Result: 1."), budget_exhausted=True), []),
    ("budget-exhausted", "not marked", build(U("go"), A("", sh("a", "1"))), []),
    # tau-bench: the simulated user closes every run after the agent's answer; that is not a missing answer.
    ("budget-exhausted", "answer then user ###STOP###", build(U("go"), A("", sh("a", "1")), A("Result: 1."), U("###STOP###"),
                                                         budget_exhausted=True), []),
    ("budget-exhausted", "user message after a call", build(U("go"), A("", sh("a", "1")), U("###STOP###"), budget_exhausted=True),
     [(1, "capability")]),
]


@pytest.mark.parametrize(("detector", "case", "trajectory", "expected"), CASES, ids=[f"{d}:{c}" for d, c, _, _ in CASES])
def test_detector_alone(detector: str, case: str, trajectory: Trajectory, expected: list[tuple[int | None, str]]) -> None:
    assert found(detector, trajectory) == expected


@pytest.mark.parametrize(("detector", "case", "trajectory"), [c[:3] for c in CASES if c[3]], ids=[f"{d}:{c}" for d, c, _, e in CASES if e])
def test_findings_are_valid_issues(detector: str, case: str, trajectory: Trajectory) -> None:
    # Detectors build issues without validation (speed): each must still be exactly what validation accepts.
    from judge.schema import Issue

    for issue in DETECTORS[detector](trajectory):
        assert Issue.model_validate(issue.model_dump()) == issue


def test_every_detector_has_positive_and_negative_cases() -> None:
    for name in DETECTOR_NAMES:
        rows = [expected for d, _, _, expected in CASES if d == name]
        assert any(rows) and not all(rows), name


@pytest.mark.parametrize(("follow_up", "severities"), [(sh("cli add --json x", "ok"), []), (sh("echo", "x"), ["severe"])])
def test_failed_call_depends_on_recovery(follow_up: dict[str, Any], severities: list[str]) -> None:
    # A failure redone successfully is no finding (docs/finding-tags.md); one never redone is severe.
    trajectory = build(U("go"), A("", sh("cli add --records x", FAIL, 2)), A("", follow_up))
    issues = DETECTORS["failed-call"](trajectory)
    assert [i.severity for i in issues] == severities and all("--records" in i.evidence for i in issues)


def test_orphan_receipt_is_unpaired() -> None:
    messages = number_turns([Message(role="user", content="go"), Message(role="assistant", content="x"),
                             Message(role="tool", content="r", receipt=Receipt(call_id="ghost", content="r"))])
    trajectory = Trajectory(id="t", query="q", query_id="q", messages=messages, metadata=TrajectoryMetadata(source_format="t"))
    [issue] = DETECTORS["unpaired-call-id"](trajectory)
    assert "ghost" in issue.description and issue.turn == 1


# --- run_detectors, config, efficiency -------------------------------------------------------------------


def test_run_detectors_selects_and_sorts() -> None:
    trajectory = build(U("go"), A("", sh("cli add --records x", FAIL, 2)), A("All records have been created."))
    assert [i.tag for i in run_detectors(trajectory)] == ["failed-call", "unverified-completion"]
    assert [i.tag for i in run_detectors(trajectory, ["unverified-completion"])] == ["unverified-completion"]
    with pytest.raises(ValueError, match="unknown detector"):
        run_detectors(trajectory, ["no-such-detector"])


def test_every_finding_quotes_evidence() -> None:
    trajectory = build(U("go"), A("", sh("cli add --records x", FAIL, 2)), A("All records have been created."))
    assert all(i.evidence and i.tag for i in run_detectors(trajectory))


def test_default_config_is_versioned_and_a_disabled_detector_finds_nothing(tmp_path: Path) -> None:
    config = default_config()
    assert config.version == "rules-v2.5" and set(config.detectors) == set(DETECTOR_NAMES)
    assert Path(config.source or "").name == "rules-v2.yaml"
    text = Path(config.source or "").read_text(encoding="utf-8").replace(
        "  failed-call:\n    enabled: true", "  failed-call:\n    enabled: false")
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    disabled = RulesConfig.load(path)
    trajectory = build(U("go"), A("", sh("cli x", FAIL, 2)))
    assert DETECTORS["failed-call"](trajectory, disabled) == []
    assert DETECTORS["failed-call"](trajectory, config) != []


@pytest.mark.parametrize(("text", "message"), [
    ("version: x\nphrases: [", "cannot read"),
    ("- a\n- b\n", "must be a mapping"),
    ("version: x\ndetectors: {nope: {}}\nphrases: {}\n", "unknown detector"),
])
def test_bad_config_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message) as error:
        RulesConfig.load(path)
    assert "bad.yaml" in str(error.value)


@pytest.mark.parametrize(("where", "pattern", "message"), [
    (("phrases", "error", "en"), "[Z-a]", "phrases.error.en: bad regular expression '[Z-a]' (lowered: '[z-a]')"),
    (("phrases", "error", "en"), "(unclosed", "phrases.error.en: bad regular expression '(unclosed'"),
    (("tools", "check_patterns"), "pytest(", "tools.check_patterns: bad regular expression 'pytest('"),
    (("tools", "read_only_names"), "[Z-a]", "tools.read_only_names: bad regular expression '[Z-a]' (lowered"),
])
def test_a_bad_pattern_is_refused_when_the_config_is_read(tmp_path: Path, where: tuple[str, ...], pattern: str,
                                                          message: str) -> None:
    """Patterns are compiled when a text first needs them: a config the matchers could not use fails to load,
    naming the file and the list, rather than on whichever trajectory needs the pattern."""
    data = yaml.safe_load(Path(default_config().source or "").read_text(encoding="utf-8"))
    *parents, last = where
    target = data
    for key in parents:
        target = target.setdefault(key, {})
    target[last] = [*target.get(last, []), pattern]
    path = tmp_path / "bad-pattern.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValueError) as error:
        RulesConfig.load(path)
    assert "bad-pattern.yaml" in str(error.value) and message in str(error.value)


@pytest.mark.parametrize(("counts", "vote"), [
    (WasteCounts(total=0, failed=0, repeated=0, redundant=0), "high"),
    (WasteCounts(total=10, failed=1, repeated=0, redundant=0), "high"),
    (WasteCounts(total=10, failed=1, repeated=1, redundant=0), "medium"),
    (WasteCounts(total=10, failed=1, repeated=1, redundant=1), "medium"),
    (WasteCounts(total=10, failed=2, repeated=1, redundant=1), "low"),
])
def test_efficiency_thresholds(counts: WasteCounts, vote: str) -> None:
    assert vote_from_waste(counts, default_config()) == vote


def test_efficiency_counts_repeats_and_redundant_reads() -> None:
    wasteful = build(U("go"), *[A("", sh("pytest -q", "E ModuleNotFoundError", 4))] * 3,
                     A("", tool("Read", {"file_path": "a"}, "x")), A("", tool("Read", {"file_path": "a"}, "x")))
    assert efficiency_vote(wasteful) == "low"
    lean = build(U("go"), A("", tool("Read", {"file_path": "a"}, "x")), A("", tool("Edit", {"file_path": "a"}, "ok")),
                 A("", tool("Read", {"file_path": "a"}, "y")))
    assert efficiency_vote(lean) == "high"  # re-reading after an edit is not redundant


def _read(name: str, path: str) -> dict:
    return tool(name, {"file_path": path}, "x")


@pytest.mark.parametrize(("calls", "redundant"), [
    ([_read("Read", "a"), _read("Read", "b"), _read("Read", "a"), _read("Read", "b"), _read("Read", "a")], 3),
    ([_read("Read", "a"), _read("Grep", "a"), _read("Glob", "a")], 0),  # other tools, the same arguments
    ([_read("Read", "a"), tool("Edit", {"file_path": "a"}, "ok"), _read("Read", "a"), _read("Read", "a")], 1),
    ([_read("Read", "a"), tool("Edit", {"file_path": "a"}, "no such file", error=True), _read("Read", "a")], 0),
    ([_read("Read", "a"), _read("Read", "b"), _read("Grep", "a"), tool("Write", {"file_path": "c"}, "ok"),
      _read("Grep", "a"), _read("Read", "b"), _read("Read", "b")], 1),
])
def test_a_read_is_redundant_after_an_identical_read_since_the_last_change(calls: list, redundant: int) -> None:
    counts = waste_counts(analyse(build(U("go"), *[A("", call) for call in calls]), default_config()))
    assert counts.redundant == redundant and counts.total == len(calls)


# --- the judge -----------------------------------------------------------------------------------------------


def test_rules_judge_verdict() -> None:
    judge = make_judge("rules")
    assert judge.spec == "rules" and judge.deterministic is True
    trajectory = build(U("go"), A("", sh("cli add --records x", FAIL, 2)), A("All records have been created."))
    verdict = asyncio.run(judge(trajectory, 0))
    assert verdict.status == "ok" and verdict.deterministic and verdict.model == "rules-v1"
    assert verdict.prompt_version == default_config().version
    assert [i.tag for i in verdict.issues] == ["failed-call", "unverified-completion"]
    assert verdict.efficiency == "low"


def test_rules_judge_takes_a_config_file(tmp_path: Path) -> None:
    text = Path(default_config().source or "").read_text(encoding="utf-8").replace(f"version: {default_config().version}", "version: rules-test")
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    for judge in (make_judge(f"rules:{path}"), make_judge("rules", {"config": str(path)})):
        verdict = asyncio.run(judge(build(U("go"), A("hi")), 0))
        assert verdict.prompt_version == "rules-test" and verdict.status == "ok"


def test_rules_judge_reports_a_crash_as_unscored(monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.judges.rules as rules_module

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("detector bug")

    monkeypatch.setattr(rules_module, "detect", boom)
    verdict = asyncio.run(make_judge("rules")(build(U("go"), A("hi")), 0))
    assert verdict.status == "unscored" and "detector bug" in (verdict.detail or "")


def test_the_judge_and_the_gate_analyse_one_trajectory_object_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import judge.facts.analysis as analysis_module
    from judge.gate import release_checks

    made: list[str] = []
    original = analysis_module.analyse

    def counting(trajectory: Trajectory, config: RulesConfig) -> Any:
        made.append(trajectory.id)
        return original(trajectory, config)

    monkeypatch.setattr(analysis_module, "analyse", counting)
    trajectory = build(U("go"), A("", sh("cli add --records x", FAIL, 2)), A("All records have been created."))
    verdict = asyncio.run(make_judge("rules")(trajectory, 0))
    assert release_checks(trajectory) == ["authenticity:unverified-completion"]
    assert [i.tag for i in verdict.issues] == ["failed-call", "unverified-completion"]
    assert len(made) == 1  # the gate reused the judge's analysis
    run_detectors(trajectory)
    assert len(made) == 1


def test_an_edited_or_copied_trajectory_is_analysed_afresh() -> None:
    from judge.facts.analysis import _ANALYSED, analysis_of

    config = default_config()
    trajectory = build(U("go"), A("", sh("cli add --records x", FAIL, 2)), A("All records have been created."))
    first = analysis_of(trajectory, config)
    assert analysis_of(trajectory, config).actions is first.actions
    # An edit as the repair editor makes one: a copy with other messages (the failed call and the claim gone).
    edited = trajectory.model_copy(update={"messages": [trajectory.messages[0], Message(role="assistant", content="Hi.", turn=1)]})
    assert analysis_of(edited, config).actions == [] and run_detectors(edited) == []
    assert analysis_of(trajectory.model_copy(), config).actions is not first.actions
    trajectory.messages.append(Message(role="assistant", content="Done.", turn=3))  # changed in place: not reused
    assert len(analysis_of(trajectory, config).speeches) == len(first.speeches) + 1
    # The memo holds nothing alive: an entry leaves with its trajectory.
    held = len(_ANALYSED)
    del trajectory, first
    assert len(_ANALYSED) == held - 1


@pytest.mark.parametrize(("text", "tokens"), [
    ("I've updated calc.py; all tests pass.", ("calc.py",)),
    ("Wrote src/app/main.py and `config.yaml`.", ("main.py", "config.yaml")),
    ("Booked GV1N64 and SKU-001 for you.", ("GV1N64", "SKU-001")),
    ("ABCDE-9x is a code up to its hyphen; ABCDEF is not a code (no digit).", ("ABCDE-",)),
    ("xGV1N64 and GV1N64x are inside words.", ()),
    ("Called update_reservation_flights twice.", ("update_reservation_flights",)),
    ("All done (step 12.3).", ()),
    ("修正が完了しました。calc.py を更新。", ("calc.py",)),
])
def test_salient_tokens(text: str, tokens: tuple[str, ...]) -> None:
    from judge.facts.analysis import salient_tokens

    assert salient_tokens(text) == tokens


class _Opaque:
    def __str__(self) -> str:
        return "opaque"


@pytest.mark.parametrize("arguments", [
    {"command": "python -m pytest -q"},
    {"z": 1, "a": [1.5, None, True, "é\"\\\n中😀"], "m": {"b": float("nan"), "a": float("inf")}},
    {"todos": [{"id": "t1", "content": "Fix calc.py", "status": "pending"}]},
    [10**30, -0.0, {"k": (1, "tuple")}],
    {"obj": _Opaque()},  # default=str
    {},
    [],
    7,
    None,
])
def test_argument_text_is_canonical_json(arguments: Any) -> None:
    import json

    call = ToolCall(id="c1", name="t", arguments=arguments)
    assert call.argument_text() == json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)


@pytest.mark.parametrize(("call", "text"), [
    (ToolCall(id="c", name="t", arguments={"path": "a.py"}), '{"path": "a.py"}'),
    (ToolCall(id="c", name="t", arguments="ls -la"), "ls -la"),
    # unparsed: the text the source wrote, never the parsed placeholder
    (ToolCall(id="c", name="t", arguments=None, raw_arguments='{"path": "a.py"', arguments_error="bad"), '{"path": "a.py"'),
    # unparsed with no text (a hand-written canonical record): nothing to search, not "null"
    (ToolCall(id="c", name="t", arguments=None, arguments_error="bad"), ""),
    # parsed: the raw text is not what is searched
    (ToolCall(id="c", name="t", arguments={"b": 1, "a": 2}, raw_arguments='{"b":1,"a":2}'), '{"a": 2, "b": 1}'),
])
def test_argument_text_table(call: ToolCall, text: str) -> None:
    """One argument text for the rules judge and the repair checks (they once differed on the last-but-one row)."""
    assert call.argument_text() == text
