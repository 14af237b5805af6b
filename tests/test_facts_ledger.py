"""The fact ledger (judge/facts): action statuses read from exit code and content, values with their first
appearance, artifact versions and the checks bound to them, claims with their support, dependencies.

Cases are in the design's domain: a cloud Base built through lark-cli, TodoWrite plans, read-backs, Bash checks.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_imports import import_graph
from test_rules_detectors import A, U, build, sh, tool

from judge.facts import ledger_of
from judge.facts.values import listed_counts, value_tokens

CREATE = "lark-cli base record batch-create --table tblA1B2C3 --json rows.json"

# (what, command, receipt, exit code, error flag, status, silent check failure)
STATUSES: list[tuple[str, str, str | None, int | None, bool, str, bool]] = [
    ("plain success", CREATE, "created 5 records", 0, False, "ok", False),
    ("failed", CREATE, "Error: field 'Owner' is invalid", 1, False, "failed", False),
    ("partial en", CREATE, "created 2 of 5 rows\nError: field 'Owner' is invalid", 1, False, "partial", False),
    ("partial json", CREATE, '{"created": 2, "error": "rate limited on row 3"}', 1, False, "partial", False),
    ("partial zh", CREATE, "已创建 2 条记录\n错误：字段 Owner 无效", 1, False, "partial", False),
    ("partial ja", CREATE, "2 件を作成しました\nエラー: フィールドが無効です", 1, False, "partial", False),
    ("running en", "lark-cli base import start --file a.csv", "job imp42x submitted; status: queued", 0, False, "running", False),
    ("running zh", "lark-cli base import start --file a.csv", "导入任务进行中", 0, False, "running", False),
    ("running de", "lark-cli base import start --file a.csv", "Import läuft noch", 0, False, "running", False),
    ("noop count", CREATE, "0 records created", 0, False, "noop", False),
    ("noop json", CREATE, '{"created": 0, "records": []}', 0, False, "noop", False),
    ("noop ignored flag", CREATE + " --upsert", "warning: unknown flag --upsert ignored\ndone", 0, False, "noop", False),
    ("noop ignored flag, no exit code", CREATE + " --upsert", "warning: unknown flag --upsert ignored\n0 records created",
     None, False, "noop", False),
    ("an unknown flag that stops the call", CREATE + " --upsert", "Error: unknown flag --upsert", None, False, "failed", False),
    ("noop ja", CREATE, "変更はありません", 0, False, "noop", False),
    ("noop ko", CREATE, "변경 사항이 없습니다", 0, False, "noop", False),
    ("noop fr", CREATE, "Aucune modification", 0, False, "noop", False),
    ("noop es", CREATE, "sin cambios", 0, False, "noop", False),
    ("noop pt", CREATE, "nenhuma alteração", 0, False, "noop", False),
    ("noop ru", CREATE, "нет изменений", 0, False, "noop", False),
    ("an empty read is no no-op", "lark-cli base record list --table tblA1B2C3", "[]", 0, False, "ok", False),
    ("timeout", CREATE, "Error: write timed out after 30s", None, True, "unknown", False),
    ("no receipt", CREATE, None, None, False, "unknown", False),
    ("check passes", "pytest -q", "12 passed, 0 failed in 0.4s", 0, False, "ok", False),
    ("check fails, exit 0", "pytest -q", "10 passed, 2 failed in 0.4s", 0, False, "ok", True),
    ("validator fails, exit 0", "lark-cli base validate --table tblA1B2C3", "2 checks failed: Owner empty", 0, False, "ok", True),
    ("check fails, exit 1", "pytest -q", "10 passed, 2 failed in 0.4s", 1, False, "failed", False),
]


@pytest.mark.parametrize(("what", "command", "out", "code", "error", "status", "silent"), STATUSES,
                         ids=[case[0] for case in STATUSES])
def test_status_is_read_from_exit_code_and_content(what: str, command: str, out: str | None, code: int | None,
                                                   error: bool, status: str, silent: bool) -> None:
    trajectory = build(U("Load the rows into the Base."), A("", sh(command, out, code, error)), A("Finished."))
    action = ledger_of(trajectory).actions[0]
    assert (action.status, action.silent_failure) == (status, silent)


LISTINGS: list[tuple[str, set[int]]] = [
    ('[{"id": "rec1"}, {"id": "rec2"}, {"id": "rec3"}]', {3}),
    ('{"data": {"items": [{"id": "a"}, {"id": "b"}], "has_more": false}}', {2}),
    ("id        name\n--------  ----\nrecAAA1   Ada\nrecBBB2   Bob\nrecCCC3   Cy\nrecDDD4   Di", {4}),
    ("- Ada\n- Bob\n- Cy", {3}),
    ("total: 7", set()),  # a printed number is not a listing
    ("[]", {0}),
]


@pytest.mark.parametrize(("text", "counts"), LISTINGS)
def test_listed_counts_count_items_not_printed_numbers(text: str, counts: set[int]) -> None:
    assert counts <= set(listed_counts(text))
    if not counts:
        assert not listed_counts(text)


def test_value_tokens_are_language_neutral() -> None:
    assert value_tokens("已创建记录 recX9Y8Z7W，表 tblA1B2C3。") == {"recX9Y8Z7W", "tblA1B2C3"}
    assert "404" not in value_tokens("HTTP 404 for recX9Y8Z7W")


def base_session() -> Any:
    return build(
        U("Create a Base table tblA1B2C3 with the 3 rows of rows.json and report the record ids."),
        A("", sh(CREATE, "created 3 records: recAAA111, recBBB222, recCCC333", 0)),
        A("", sh("lark-cli base record update --table tblA1B2C3 --record recAAA111 --json fix.json", "updated 1 record", 0)),
        A("", sh("lark-cli base record list --table tblA1B2C3",
                 '[{"id": "recAAA111"}, {"id": "recBBB222"}, {"id": "recCCC333"}]', 0)),
        A("I added 3 rows: recAAA111, recBBB222 and recCCC333."),
    )


def test_values_know_where_they_first_appear_and_every_later_use() -> None:
    ledger = ledger_of(base_session())
    table = ledger.values["tblA1B2C3"]
    assert table.first.source == "query"
    record = ledger.values["recAAA111"]
    assert (record.first.source, record.first.turn) == ("receipt", 1)
    assert [u.source for u in record.uses] == ["argument", "receipt", "text"]
    assert ledger.first_receipt("recAAA111") == record.first


def test_each_write_makes_a_version_and_a_check_is_bound_to_the_one_it_ran_on() -> None:
    trajectory = build(
        U("Fix calc.py"),
        A("", tool("Write", {"file_path": "calc.py", "content": "x = 1\n"}, "File created successfully at: calc.py")),
        A("", sh("pytest -q", "3 passed", 0)),
        A("", tool("Edit", {"file_path": "calc.py", "old_string": "1", "new_string": "2"}, "The file calc.py has been updated.")),
        A("All tests pass."),
    )
    ledger = ledger_of(trajectory)
    assert [v.number for v in ledger.versions["calc.py"]] == [1, 2]
    check = ledger.actions[1]
    assert ledger.bound_versions(check) == {"calc.py": 1}
    final = len(trajectory.messages) - 1
    assert ledger.version_at("calc.py", final) == 2


def test_a_resource_written_through_a_cli_has_versions_too() -> None:
    ledger = ledger_of(base_session())
    assert [v.number for v in ledger.versions["tblA1B2C3"]] == [1, 2]
    read_back = ledger.actions[2]
    assert ledger.bound_versions(read_back)["tblA1B2C3"] == 2


def test_claims_carry_their_values_tense_and_support() -> None:
    ledger = ledger_of(base_session())
    claim = ledger.claims[-1]
    assert claim.tense == "past" and claim.counts == (3,)
    assert {"recAAA111", "recCCC333"} <= set(claim.values)
    assert 2 in claim.supported_by  # the read-back lists the three records


def test_a_future_sentence_is_a_future_claim() -> None:
    trajectory = build(U("Import a.csv"), A("", sh("lark-cli base import start --file a.csv", "status: queued", 0)),
                       A("All done — the import will finish in a minute."))
    claims = ledger_of(trajectory).claims
    assert claims and claims[-1].tense == "future"


def test_dependencies_follow_values_artifacts_and_failures() -> None:
    trajectory = build(
        U("Add a row to the Base and report its id."),
        A("", sh("lark-cli base table create --name Tasks", "created table tblT0001X", 0)),
        A("", sh("lark-cli base record create --table tblT0001X --json a.json --strict", "Error: unknown flag --strict", 1)),
        A("", sh("lark-cli base record create --table tblT0001X --json a.json", "created record recN0001X", 0)),
        A("The new row is recN0001X."),
    )
    ledger = ledger_of(trajectory)
    kinds = {(d.kind, d.source, d.dependent) for d in ledger.dependencies}
    assert ("returned-values", 0, 1) in kinds  # the table id came from the first receipt
    assert ("resource-state", 0, 2) in kinds  # the table the first call made
    assert any(d.kind == "textual" and d.source == 2 and d.value == "recN0001X" for d in ledger.dependencies)
    assert not ledger.dependents(ledger.actions[1])  # the rejected call: the retry has the same intent


def test_a_different_call_after_a_failure_depends_on_it() -> None:
    trajectory = build(
        U("Publish the dashboard."),
        A("", sh("lark-cli base dashboard publish --id dsh12345", "Error: permission missing", 1)),
        A("", sh("lark-cli base dashboard copy --id dsh12345", "copied to dsh67890", 0)),
        A("Published a copy: dsh67890."),
    )
    ledger = ledger_of(trajectory)
    assert [d.kind for d in ledger.dependents(ledger.actions[0])] == ["control"]


def test_the_ledger_is_built_once_per_trajectory_object() -> None:
    trajectory = base_session()
    assert ledger_of(trajectory).values is ledger_of(trajectory).values
    assert ledger_of(trajectory.model_copy(deep=True)).values is not ledger_of(trajectory).values


def test_facts_import_neither_the_rules_judge_nor_the_editor() -> None:
    graph = import_graph(lazy=True)
    for module, targets in graph.items():
        if module.startswith("judge.facts"):
            assert not [t for t in targets if t.startswith(("judge.rules", "judge.repair"))], module


# --- values born astray (Ledger.strays, Z18) --------------------------------------------------------------------

BASES = '{"bases": [{"base_id": "bascnOps23", "name": "Ops 2023"}, {"base_id": "bascnOps24", "name": "Ops 2024"}]}'

# (what, steps, strays as (value used, value meant, what a claim names, kind))
STRAYS: list[tuple[str, list[tuple[str, Any]], list[tuple[str, str, str, str]]]] = [
    ("typed: a port transposed from the one a receipt showed",
     [U("Point the tests at the local API."), A("", tool("Read", {"file_path": "api.toml"}, "port = 8081")),
      A("", tool("Write", {"file_path": ".env", "content": "API_URL=http://127.0.0.1:8018\n"}, "File created"))],
     [("8018", "8081", "8081", "typed")]),
    ("typed: a version one off the read one",
     [U("Tag the release."), A("", tool("Read", {"file_path": "Chart.yaml"}, "version: 1.9.4")),
      A("", sh("git tag v1.9.3", ""))],
     [("1.9.3", "1.9.4", "1.9.4", "typed")]),
    ("asked: the query's year, the sibling year of a receipt used",
     [U("Sum the 2025 sales."), A("", sh("cut -d, -f1 sales.csv | sort -u", "2024\n2025")),
      A("", sh("awk -F, '$1==2024{s+=$2} END{print s}' sales.csv", "8120"))],
     [("2024", "2025", "2025", "asked")]),
    ("listed: the sibling of the entry that holds the query's value",
     [U("Add the incident to the Ops 2024 base."), A("", sh("lark-cli base +base-list", BASES)),
      A("", sh("lark-cli base +record-create --base bascnOps23 --table tblInc1 --json '{}'", '{"record_id": "recX1y2"}'))],
     [("bascnOps23", "bascnOps24", "2024", "listed")]),
    ("control: both twins used (a comparison of two years)",
     [U("Compare 2024 and 2025 sales."), A("", sh("awk -F, '$1==2024' sales.csv | wc -l", "31")),
      A("", sh("awk -F, '$1==2025' sales.csv | wc -l", "40"))],
     []),
    ("control: a listed sibling picked when the query names neither",
     [U("Add the incident to the ops base."), A("", sh("lark-cli base +base-list", BASES)),
      A("", sh("lark-cli base +record-create --base bascnOps23 --table tblInc1 --json '{}'", '{"record_id": "recX1y2"}'))],
     []),
    ("control: an IP address is no version",
     [U("Ping the gateway."), A("", sh("ip route", "default via 10.0.0.1 dev eth0")),
      A("", sh("ping -c1 10.0.0.2", "1 packets transmitted, 1 received"))],
     []),
]


@pytest.mark.parametrize(("what", "steps", "expected"), STRAYS, ids=[c[0] for c in STRAYS])
def test_values_born_astray(what: str, steps: list[tuple[str, Any]], expected: list[tuple[str, str, str, str]]) -> None:
    strays = ledger_of(build(*steps)).strays
    assert [(s.value, s.meant, s.named, s.kind) for s in strays] == expected
    assert all(s.used.source == "argument" for s in strays)
