"""Issue 24, task D: the offline editor decides read-only per shell segment from data, deletes a call that a
missing input file stopped, and re-checks every rewrite for the final answer's support, numbers written early and
completion claimed over a receipt whose status is not final. Cases written here (several languages; lark-cli and
ordinary coding work: git, pip, pytest, Read/Write), none from the held-out sets. Table-driven."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from test_rules_detectors import A, U, build, sh

from judge.facts import ledger_of
from judge.model import Message, Trajectory
from judge.repair import offline_edit
from judge.repair.editor import apply_edit
from judge.repair.textref import Detectors
from judge.repair.validators import validate_edit
from judge.testing.builders import call, issue, say, tool, trajectory

# --- check and content lists, per segment ----------------------------------------------------------------------

# (command, is a check, shows file content, why)
SEGMENT_LISTS: list[tuple[str, bool, bool, str]] = [
    ("cd app && pytest -q", True, False, "the check is the second segment"),
    ("pip install -e . && pytest tests/", True, False, "install, then the check"),
    ("echo pytest", False, False, "a segment that only reads is never a check"),
    ("git commit -m 'fix the failing tests'", False, False, "the word is inside a quoted message"),
    ("git add -A && git commit -m 'make check green'", False, False, "quoted, in a chain"),
    ("cd docs && cat guide.md", False, True, "the content command is the second segment"),
    ("git log --oneline | head -20", False, True, "a read piped into a content command"),
    ("pytest -q 2>&1 | tail -30", True, False, "a check piped into tail: its failures must still be read"),
    ("pytest -q; cat report.txt", True, False, "the check's output comes first"),
    ("bash -lc 'cd app && pytest -q'", True, False, "a shell's -c script is read on its own segments"),
    # A reading CLI whose own command words name a check (check_verbs): its report is a verdict (v10, v12 misses).
    ("payctl run preview --company KR01 --checks", True, False, "a preview asked to run its checks (a flag name)"),
    ("wmsctl count reconcile --zone A | tail -n 6", True, False, "a reconcile subcommand, its report piped to tail"),
    ("lark-cli base +record-validate --table tblA", True, False, "a shortcut whose last part is a check verb"),
    ("terraform validate", True, False, "a listed read whose subcommand is a check verb"),
    ("payctl run preview --company KR01", False, False, "the same preview without checks only reads"),
    ("cat validate.log", False, True, "an operand of a reading program names nothing"),
    ("kubectl logs lint-job-7", False, False, "a resource's name is no subcommand word"),
    ("lark-cli base +record-list --view verify", False, False, "a flag's value is no flag name"),
]


@pytest.mark.parametrize(("command", "check", "content", "why"), SEGMENT_LISTS, ids=[row[0] for row in SEGMENT_LISTS])
def test_check_and_content_lists_match_per_segment(command: str, check: bool, content: bool, why: str) -> None:
    action = ledger_of(build(U("Go."), A("", sh(command, "ok", 0)), A("Finished."))).actions[0]
    assert (action.is_check, action.shows_content) == (check, content), why


# --- deletion: the editor's decision on a failed first call ----------------------------------------------------

LIST_TABLES = "lark-cli base +table-list --base bascnShop7"
TABLES = json.dumps({"tables": [{"id": "tblOrd9x", "name": "Orders"}]})


def lookup_404(command: str, error: str, answer: str, query: str) -> Trajectory:
    """T1 fails on a guessed table id, T2 lists the tables, T3 repeats the lookup with the real id."""
    return trajectory("t", [
        say("", call("c1", "Bash", command=command)), tool("c1", error, error=True, exit_code=1),
        say("", call("c2", "Bash", command=LIST_TABLES)), tool("c2", TABLES, exit_code=0),
        say("", call("c3", "Bash", command=command.replace("tblOrders", "tblOrd9x"))),
        tool("c3", json.dumps({"total": 41}), exit_code=0),
        say(answer)], query=query)


def missing_input(command: str, error: str, make: Message, receipt: Message, answer: str, query: str,
                  traceback: bool = False) -> Trajectory:
    """T1 stops on a missing input file, T2 makes the file (``make``), T3 retries the same command."""
    content = ("Traceback (most recent call last):\n  File \"load.py\", line 9\n" + error) if traceback else error
    return trajectory("t", [
        say("", call("c1", "Bash", command=command)), tool("c1", content, error=True, exit_code=1),
        make, receipt,
        say("", call("c3", "Bash", command=command)), tool("c3", json.dumps({"record_ids": ["recK1aa", "recK2bb"]}), exit_code=0),
        say(answer)], query=query)


WRITE_JSON = say("", call("c2", "Write", file_path="kunden.json", content="[{\"Name\": \"A\"}, {\"Name\": \"B\"}]"))
WROTE = tool("c2", "File created successfully at: kunden.json", exit_code=0)
GENERATE = say("", call("c2", "Bash", command="python scripts/csv2json.py clientes.csv > clientes.json"))
GENERATED = tool("c2", "", exit_code=0)

# (case, trajectory, edited)
DELETIONS: list[tuple[str, Trajectory, bool]] = [
    ("en-count-404", lookup_404("lark-cli base +record-count --base bascnShop7 --table tblOrders",
                                "Error: HTTP 404: table tblOrders not found", "Orders has 41 records.",
                                "How many orders are there?"), True),
    ("fr-count-404", lookup_404("lark-cli base +record-count --base bascnShop7 --table tblOrders",
                                "Error: HTTP 404: table tblOrders not found", "La table Orders compte 41 enregistrements.",
                                "Combien de commandes y a-t-il ?"), True),
    ("de-missing-json-written", missing_input(
        "lark-cli base +record-create --base bascnCrm3 --table tblKun5 --json @kunden.json",
        "Error: open kunden.json: no such file or directory", WRITE_JSON, WROTE, "Zwei Kunden angelegt: recK1aa, recK2bb.",
        "Lege die zwei Kunden an."), True),
    ("es-missing-json-generated", missing_input(
        "lark-cli base +record-create --base bascnCrm3 --table tblCli5 --json clientes.json",
        "Error: open clientes.json: no such file or directory", GENERATE, GENERATED,
        "Se crearon 2 clientes: recK1aa, recK2bb.", "Importa clientes.csv en la tabla Clientes."), True),
    ("ja-missing-file-localised", missing_input(
        "lark-cli base +record-create --base bascnCrm3 --table tblKun5 --json @kunden.json",
        "open kunden.json: そのようなファイルやディレクトリはありません", WRITE_JSON, WROTE,
        "2 件の顧客を登録しました: recK1aa, recK2bb。", "顧客を 2 件登録してください。"), True),
    # refusals: the missing file does not show that nothing changed
    ("en-missing-after-mkdir", missing_input(
        "mkdir -p out && lark-cli base +record-create --base bascnCrm3 --table tblKun5 --json @kunden.json",
        "Error: open kunden.json: no such file or directory", WRITE_JSON, WROTE, "Two customers added: recK1aa, recK2bb.",
        "Add the two customers."), False),
    ("en-missing-with-traceback", missing_input(
        "python scripts/load.py kunden.json",
        "FileNotFoundError: [Errno 2] No such file or directory: 'kunden.json'", WRITE_JSON, WROTE,
        "Two customers added: recK1aa, recK2bb.", "Load the two customers.", traceback=True), False),
    ("en-missing-with-redirect", missing_input(
        "lark-cli base +record-create --base bascnCrm3 --table tblKun5 --json @kunden.json > created.json",
        "Error: open kunden.json: no such file or directory", WRITE_JSON, WROTE, "Two customers added: recK1aa, recK2bb.",
        "Add the two customers."), False),
    ("en-missing-output-directory", missing_input(
        "lark-cli base +record-create --base bascnCrm3 --table tblKun5 --json @kunden.json -o out/created.json",
        "Error: open out/created.json: no such file or directory", WRITE_JSON, WROTE,
        "Two customers added: recK1aa, recK2bb.", "Add the two customers."), False),
    ("en-count-then-unknown-command", lookup_404(
        "lark-cli base +record-count --base bascnShop7 --table tblOrders && notify-send counted",
        "Error: HTTP 404: table tblOrders not found", "Orders has 41 records.", "How many orders are there?"), False),
]


@pytest.mark.parametrize(("case", "original", "edited"), DELETIONS, ids=[row[0] for row in DELETIONS])
def test_editor_deletes_only_calls_that_changed_nothing(case: str, original: Trajectory, edited: bool,
                                                        detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert (result.status == "edited") is edited, (case, result.status, result.reason)


def test_pip_stopped_by_a_missing_requirements_file_is_deleted(detectors: Detectors) -> None:
    """pip opens the requirements file before it installs anything: the failed call is deleted, the retry kept."""
    original = trajectory("t", [
        say("", call("c1", "Bash", command="pip install -r requirements-dev.txt")),
        tool("c1", "ERROR: Could not open requirements file: [Errno 2] No such file or directory: 'requirements-dev.txt'",
             error=True, exit_code=1),
        say("", call("c2", "Bash", command="pip install -r requirements/dev.txt")),
        tool("c2", "Successfully installed pytest-8.3.2", exit_code=0),
        say("Installed: pytest 8.3.2.")], query="Install the dev requirements.")
    result = offline_edit(original, issue(1), detectors=detectors)
    assert result.status == "edited", result.reason
    assert [c.id for m in result.edited.messages for c in m.tool_calls] == ["c2"]  # type: ignore[union-attr]


# --- rewrites: the validators re-check every edit ----------------------------------------------------------------


def refused(original: Trajectory, deleted: set[str], rewrite: dict[int, str], detectors: Detectors) -> set[str]:
    """The refusal kinds of the validators on ``original`` with ``deleted`` calls removed and the assistant texts
    of ``rewrite`` (edited message index -> new text) replaced, as a rewriter would hand it back."""
    edited, message_map, _ = apply_edit(original, deleted, [])
    messages = [m.model_copy(update={"content": rewrite[i]}) if i in rewrite else m for i, m in enumerate(edited.messages)]
    edited = edited.model_copy(update={"messages": messages})
    deleted_ids = sorted(deleted)
    return {r.kind or r.name for r in validate_edit(original, edited, message_map, deleted_ids, detectors) if not r.passed}


def counted_then_pinged(answer: str, query: str) -> Trajectory:
    """The only lookup's chain 'fails' on a trailing desktop ping (exit 127) after printing the count."""
    return trajectory("t", [
        say("", call("c1", "Bash", command="lark-cli base +record-count --base bascnShip1 --table tblOrd5 && notify-send done")),
        tool("c1", "{\"total\": 17}\nbash: notify-send: command not found", error=True, exit_code=127),
        say(answer)], query=query)


def published(status: str, answer: str, query: str) -> Trajectory:
    return trajectory("t", [
        say("", call("c1", "Bash", command="lark-cli base +form-publish --base bascnForm1 --form frmReg5")),
        tool("c1", json.dumps({"form_id": "frmReg5", "status": status}), exit_code=0),
        say(answer)], query=query)


def counted(answer: str, query: str) -> Trajectory:
    return trajectory("t", [
        say("先查表。", call("c1", "Bash", command=LIST_TABLES)), tool("c1", TABLES, exit_code=0),
        say("", call("c2", "Bash", command="lark-cli base +record-count --base bascnShop7 --table tblOrd9x")),
        tool("c2", json.dumps({"total": 12}), exit_code=0),
        say(answer)], query=query)


# (case, original, deleted calls, rewrite: edited index -> text, expected refusal kind or None for accept)
REWRITES: list[tuple[str, Trajectory, set[str], dict[int, str], str | None]] = [
    ("en-final-lost-its-lookup", counted_then_pinged("There are 17 delivered orders.", "How many delivered orders?"),
     {"c1"}, {}, "unsupported-final"),
    ("pt-final-lost-its-lookup", counted_then_pinged("Há 17 pedidos entregues.", "Quantos pedidos entregues?"),
     {"c1"}, {}, "unsupported-final"),
    ("it-pending-review-done", published("pending_review", "Il modulo è in revisione: non è ancora pubblico.",
                                         "Pubblica il modulo."), set(), {4: "Il modulo verrà pubblicato a breve: fatto."},
     "future-claim"),
    ("de-pending-review-published", published("pending_review", "Das Formular wartet auf Prüfung.",
                                              "Veröffentliche das Formular."), set(),
     {4: "Das Formular wurde veröffentlicht."}, "future-claim"),
    ("en-awaiting-approval", published("awaiting_approval", "The form awaits approval.", "Publish the form."), set(),
     {4: "The form has been published."}, "future-claim"),
    ("de-pending-honest", published("pending_review", "Das Formular wartet auf Prüfung.", "Veröffentliche das Formular."),
     set(), {4: "Das Formular ist noch nicht öffentlich: Status pending_review."}, None),
    ("en-published-done", published("published", "The form is live.", "Publish the form."), set(),
     {4: "The form has been published."}, None),
    ("zh-count-written-early", counted("订单表共有 12 条记录。", "订单表有多少条记录？"), set(),
     {2: "先查表，共 12 条记录。"}, "order"),
    ("en-count-after-receipt", counted("Orders has 12 records.", "How many orders?"), set(),
     {6: "The Orders table holds 12 records."}, None),
]


@pytest.mark.parametrize(("case", "original", "deleted", "rewrite", "expected"), REWRITES, ids=[row[0] for row in REWRITES])
def test_validators_recheck_every_rewrite(case: str, original: Trajectory, deleted: set[str], rewrite: dict[int, str],
                                          expected: str | None, detectors: Detectors) -> None:
    kinds = refused(original, deleted, rewrite, detectors)
    if expected is None:
        assert not kinds, (case, kinds)
    else:
        assert expected in kinds, (case, kinds)


# --- one count check for claims (editor) and unverified-completion (rules judge) --------------------------------

# (case, call, receipt, count, shown)
COUNTS: list[tuple[str, dict[str, str], str, int, bool]] = [
    ("printed total", {"command": "lark-cli base +record-count --table tblA1"}, "{\"total\": 6}", 6, True),
    ("a number in the receipt", {"command": "pytest -q"}, "6 passed in 0.12s", 6, True),
    ("not a part of a number", {"command": "pytest -q"}, "16 passed in 0.12s", 6, False),
    ("a JSON list's length", {"command": "lark-cli base +record-create --json @p.json"},
     json.dumps({"record_ids": ["recA1", "recA2", "recA3"]}), 3, True),
    ("bullets listed", {"command": "lark-cli base +table-list"}, "- Orders\n- Stock\n- Clients\n- Suppliers", 4, True),
    ("nothing shows it", {"command": "git push"}, "Everything up-to-date", 2, False),
]


@pytest.mark.parametrize(("case", "arguments", "receipt", "count", "shown"), COUNTS, ids=[row[0] for row in COUNTS])
def test_one_count_check_for_claims_and_the_rules_judge(case: str, arguments: dict[str, str], receipt: str, count: int,
                                                        shown: bool) -> None:
    ledger = ledger_of(trajectory("t", [say("", call("c1", "Bash", **arguments)), tool("c1", receipt, exit_code=0),
                                        say("Done.")]))
    assert ledger.shows_count(ledger.actions[0], count) is shown, case


def test_written_lines_show_a_count() -> None:
    """A Write of four CSV rows under a header shows the count 4 (the rules judge's old rule, now the ledger's)."""
    content = "name,qty\nA,1\nB,2\nC,3\nD,4\n"
    ledger = ledger_of(trajectory("t", [say("", call("c1", "Write", file_path="stock.csv", content=content)),
                                        tool("c1", "File created successfully at: stock.csv", exit_code=0),
                                        say("Wrote 4 rows.")]))
    assert ledger.shows_count(ledger.actions[0], 4) and not ledger.shows_count(ledger.actions[0], 7)
