"""The decisive turn as the origin of the fact flow (judge/facts/flow.py, issue 24 item 4).

Small hand-written trajectories, one per shape: a direct error (its own origin), an id a lookup returned that a
later call could not use, a file version an earlier write broke, an id the agent stated without a receipt and
later relied on, a chain of two links, and failures no flow leads into (the failure turn, said so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from test_rules_detectors import A, U, build, sh, tool

from judge.facts import ledger_of
from judge.facts.factlog import fact_log
from judge.facts.flow import decisive_origin, format_chain, trace_origin

LIST = "lark-cli base record list --table tblA1B2C3"
ROWS = "recQ1W2E3R4 Ada\nrecZ9X8C7V6 Bob"

# (what, steps, failure turn, expected origin turn, flow found, links of the chain from origin to failure)
CASES: list[tuple[str, list[tuple[str, Any]], int, int, bool, list[str]]] = [
    ("direct error: a wrong flag is its own origin",
     [U("Load rows into tblA1B2C3."), A("", sh(LIST, ROWS)),
      A("", sh("lark-cli base record create --table tblA1B2C3 --upsert", "Error: unknown flag --upsert", 1))],
     2, 2, False, ["failure"]),
    ("inherited wrong id: the lookup that returned it is the origin",
     [U("Rename Bob in table tblA1B2C3."), A("", sh(LIST, ROWS)), A("Updating Bob now."),
      A("", sh("lark-cli base record update --table tblA1B2C3 --record recQ1W2E3R4 --name Robert",
               "Error: record recQ1W2E3R4 is locked by another user", 1))],
     3, 1, True, ["value", "failure"]),
    ("broken artifact version: the write that made it is the origin",
     [U("Write a loader and run it."), A("", sh("cat > load.py <<'EOF'\nimport csv\nrows = csv.reader(open('a.csv')\nEOF", "")),
      A("", sh("ls", "load.py a.csv")),
      A("", sh("python load.py", "  File \"load.py\", line 2\n    rows = csv.reader(open('a.csv')\nSyntaxError: '(' was never closed", 1))],
     3, 1, True, ["artifact", "failure"]),
    ("an id stated without a receipt, relied on later: the statement is the origin",
     [U("Add a row to the sales table."), A("The sales table is tblS4L3S9X2, I remember it from last week."),
      A("", sh("lark-cli base record create --table tblS4L3S9X2 --json row.json", "Error: table not found", 1))],
     2, 1, True, ["unsupported", "failure"]),
    ("two links: an unchecked id written into a script that then fails",
     [U("Export the sales table."), A("The table is tblS4L3S9X2."),
      A("", sh("cat > export.py <<'EOF'\nTABLE = 'tblS4L3S9X2'\nexport(TABLE)\nEOF", "")),
      A("", sh("python export.py", "Traceback (most recent call last):\n  File \"export.py\", line 2\nKeyError: 'tblS4L3S9X2'", 1))],
     3, 1, True, ["unsupported", "artifact", "failure"]),
    ("an id the user gave is the user's: the failure is its own origin",
     [U("Delete record recU5S3R8I9 from tblA1B2C3."),
      A("", sh("lark-cli base record delete --table tblA1B2C3 --record recU5S3R8I9", "Error: record recU5S3R8I9 not found", 1))],
     1, 1, False, ["failure"]),
    ("an error that does not name the looked-up id is not traced to the lookup",
     [U("Rename Bob in table tblA1B2C3."), A("", sh(LIST, ROWS)),
      A("", sh("lark-cli base record update --table tblA1B2C3 --record recZ9X8C7V6 --nmae Robert", "Error: unknown flag --nmae", 1))],
     2, 2, False, ["failure"]),
    ("an environment fault is its own origin even when it names an earlier id",
     [U("Rename Bob in table tblA1B2C3."), A("", sh(LIST, ROWS)),
      A("", sh("lark-cli base record update --record recZ9X8C7V6", "Error: connect ECONNREFUSED while updating recZ9X8C7V6", 1))],
     2, 2, False, ["failure"]),
    ("a false claim with no value flow falls back to its own turn",
     [U("Add two rows."), A("", tool("Write", {"file_path": "rows.json", "content": "[1, 2]"}, "File created")),
      A("Both rows were added to the Base.")],
     2, 2, False, ["failure"]),
    ("a claim repeating an id no receipt showed, first stated earlier",
     [U("Create the report record."), A("Created record recR3P0R7X1 for the report."),
      A("", sh("lark-cli base record list --table tblA1B2C3", "recQ1W2E3R4 Ada")),
      A("The report is in record recR3P0R7X1, all done.")],
     3, 1, True, ["unsupported", "failure"]),
    # Values born astray (Ledger.strays; origin cases of v3, v4, v5, v7): the call that first used the twin.
    ("a claim naming the version a receipt gave, after the agent tagged its twin: the tagging is the origin",
     [U("Release the chart at the version in Chart.yaml."),
      A("", tool("Read", {"file_path": "charts/web/Chart.yaml"}, "apiVersion: v2\nversion: 3.7.2")),
      A("", sh("git tag v3.7.1 && git push origin v3.7.1", " * [new tag]  v3.7.1 -> v3.7.1")),
      A("Release 3.7.2 is published.")],
     3, 2, True, ["astray", "failure"]),
    ("a gateway error behind a mistyped service port: the write that typed it is the origin",
     [U("Expose the service ledger at ledger.example.org."),
      A("", sh("kubectl get svc ledger", "NAME     TYPE        PORT(S)    AGE\nledger   ClusterIP   9090/TCP   3d")),
      A("", tool("Write", {"file_path": "ingress.yaml", "content": "host: ledger.example.org\nport: {number: 9009}\n"}, "File created")),
      A("", sh("curl -fsS https://ledger.example.org/ -o /dev/null", "curl: (22) The requested URL returned error: 502", 22))],
     3, 2, True, ["astray", "failure"]),
    ("a claim naming the version it made (a bump) inherits nothing",
     [U("Bump the chart version and release it."),
      A("", tool("Read", {"file_path": "charts/web/Chart.yaml"}, "apiVersion: v2\nversion: 3.7.2")),
      A("", sh("git tag v3.7.3 && git push origin v3.7.3", " * [new tag]  v3.7.3 -> v3.7.3")),
      A("Release 3.7.3 is published.")],
     3, 3, False, ["failure"]),
]


@pytest.mark.parametrize(("what", "steps", "failure", "origin", "flow", "links"), CASES, ids=[c[0] for c in CASES])
def test_trace_origin_walks_value_and_artifact_flows(what: str, steps: list[tuple[str, Any]], failure: int,
                                                     origin: int, flow: bool, links: list[str]) -> None:
    found = trace_origin(ledger_of(build(*steps)), failure)
    assert (found.turn, found.failure_turn, found.found) == (origin, failure, flow)
    assert [step.link for step in found.chain] == links
    assert [step.turn for step in found.chain] == sorted(step.turn for step in found.chain)
    assert found.chain[0].turn == origin and found.chain[-1].turn == failure


def test_the_printed_chain_names_turns_values_and_receipt_excerpts() -> None:
    steps = CASES[1][1]
    lines = format_chain(trace_origin(ledger_of(build(*steps)), 3))
    assert lines[0].startswith("decisive turn T1 (failure at T3)")
    assert "T1 call #0 ok [value recQ1W2E3R4]" in lines[1] and "recQ1W2E3R4 Ada" in lines[1]
    assert "T3 call #1 failed" in lines[2] and "locked by another user" in lines[2]


def test_no_flow_says_the_failure_turn_is_used() -> None:
    found = trace_origin(ledger_of(build(*CASES[0][1])), 2)
    assert not found.found and "its own origin" in found.reason
    assert format_chain(found)[0].startswith("decisive turn T2: no value or artifact flow")
    missing = trace_origin(ledger_of(build(*CASES[0][1])), 9)
    assert (missing.turn, missing.found, missing.chain) == (9, False, ())


@dataclass(frozen=True)
class Issue:
    turn: int | None
    severity: str
    category: str


FAULT = [U("Rename Bob in table tblA1B2C3."), A("", sh(LIST, ROWS)),
         A("", sh("lark-cli base record update --table tblA1B2C3 --record recZ9X8C7V6 --name Robert",
                  "Error: dial tcp: lookup open.feishu.cn: no such host", 1)),
         A("Bob is now Robert.")]
TYPED_PORT = [U("Start the client against the local API."), A("", tool("Write", {"file_path": ".env", "content": "API_PORT=5137\n"}, "File created")),
              A("", sh("python client.py", "Error: connect ECONNREFUSED 127.0.0.1:5137", 1)),
              A("The API is healthy.")]

# (what, steps, issues, decisive turn): docs/finding-tags.md, "The decisive turn"
DECISIVE: list[tuple[str, list[tuple[str, Any]], list[Issue], int]] = [
    ("an unhandled environment fault: the faulted call begins the flow, not the claim past it", FAULT,
     [Issue(2, "severe", "environment"), Issue(3, "severe", "semantic")], 2),
    ("the claim alone (no fault issue listed) is its own origin", FAULT, [Issue(3, "severe", "semantic")], 3),
    ("a fault that inherits a value the agent typed: the typing is decisive", TYPED_PORT,
     [Issue(2, "severe", "environment"), Issue(3, "severe", "semantic")], 1),
    ("minor issues count only when none is severe", FAULT,
     [Issue(1, "minor", "semantic"), Issue(3, "severe", "semantic")], 3),
]


@pytest.mark.parametrize(("what", "steps", "issues", "turn"), DECISIVE, ids=[c[0] for c in DECISIVE])
def test_decisive_origin_is_the_earliest_origin_of_the_severe_issues(what: str, steps: list[tuple[str, Any]],
                                                                     issues: list[Issue], turn: int) -> None:
    found = decisive_origin(ledger_of(build(*steps)), issues)
    assert found is not None and found[1].turn == turn


# --- the fact log ----------------------------------------------------------------------------------------

# (case of CASES, lines the log must hold)
LOGS: list[tuple[int, list[str]]] = [
    (1, ["T3 #1 Bash lark-cli base record update", "-> failed: Error: record recQ1W2E3R4 is locked",
         "recQ1W2E3R4: first T1 receipt #0; used T3 argument #1"]),
    (2, ["load.py: v1 T1 #0", "T3 #2 Bash python load.py -> failed: SyntaxError"]),
    (4, ["tblS4L3S9X2: first T1 text (no receipt showed it first); used T2 argument #0",
         "-> failed: KeyError: 'tblS4L3S9X2'"]),
    (8, ["T2 claim \"Both rows were added to the Base.\" -> no receipt supports it", "rows.json: v1 T1 #0"]),
]


@pytest.mark.parametrize(("case", "expected"), LOGS, ids=[CASES[c][0] for c, _ in LOGS])
def test_fact_log_lists_actions_values_artifacts_and_claims(case: int, expected: list[str]) -> None:
    log = fact_log(ledger_of(build(*CASES[case][1])))
    for text in expected:
        assert text in log


def test_fact_log_is_bounded_and_keeps_failures_first() -> None:
    calls = [A("", sh(f"lark-cli base record get --record rec{n:04d}AB12", f"rec{n:04d}AB12 row {n}")) for n in range(200)]
    failed = A("", sh("lark-cli base record update --record rec0007AB12", "Error: record rec0007AB12 is locked", 1))
    log = fact_log(ledger_of(build(U("Check every row."), *calls, failed)), 3000)
    assert len(log) <= 3000
    assert "-> failed: Error: record rec0007AB12 is locked" in log  # a failure is kept before 200 successes
    assert "more lines left out" in log
