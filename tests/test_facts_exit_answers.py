"""Issue 24 (W3): exit codes that answer "no" rather than fail, recovery read without a vocabulary, a polled job's
count read whole, and the decisive walk to where a fault was born.

Our own cases (not the held-out sentences), each rendered in the OpenAI and the Anthropic format and read through
the real importers; languages with a vocabulary (en, de, es, ja) and without one (ro, et, el). Every detector runs,
so a finding moved to the wrong tag fails as surely as a missed one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from fixtures.facts_heldout.steps import Say, User, edit, js, parse, read, sh, write
from judge.facts import ledger_of
from judge.facts.config import default_config
from judge.facts.flow import decisive_origin
from judge.facts.shell import exit_answer
from judge.model import Trajectory
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic")
Expected = set[tuple[int, str]]


def _trajectory(fmt: str, name: str, query: str, steps: list[Any]) -> Trajectory:
    return parse(fmt, name.replace(" ", "-")[:40], query, [User(query), *steps])


def lark(rest: str, out: str, code: int = 0) -> Any:
    return sh("lark-cli base " + rest, out, code)


# --- which exit codes answer, by command (pure) ---------------------------------------------------------------------

EXIT_ANSWERS: list[tuple[str, int, str | None]] = [
    ("grep -rn 'TODO' src/", 1, "no match"),
    ("rg -l deprecated_call lib/", 1, "no match"),
    ("egrep 'a|b' notes.txt", 1, "no match"),
    ("grep -rn x src/", 2, None),  # grep's 2 is an error
    ("diff -u old.json new.json", 1, "differ"),
    ("cmp a.bin b.bin", 1, "differ"),
    ("test -f build/app.js", 1, "false"),
    ("[ -d dist ]", 1, "false"),
    ("git diff --quiet", 1, "changes"),
    ("git diff --exit-code -- src/", 1, "changes"),
    ("git diff", 1, None),  # without --quiet / --exit-code a 1 is no answer
    ("systemctl is-active nginx", 3, "inactive"),
    ("systemctl restart nginx", 3, None),
    ("curl -fsS https://api.example.com/health", 22, None),  # curl -f's 22: an HTTP error status, a real failure
    ("cat app.log | grep -c ERROR", 1, "no match"),  # a pipeline's status is its last segment's
    ("grep ERROR app.log | wc -l", 1, None),  # ... here wc's
    ("set -o pipefail; cat app.log | grep ERROR", 1, None),  # under pipefail cat may have set it
    ("set -o pipefail; grep ERROR a.log | grep -v known", 1, "no match"),  # every segment answers the same
    ("make lint", 1, None),
]


@pytest.mark.parametrize(("command", "code", "meaning"), EXIT_ANSWERS, ids=[f"{c} -> {n}" for c, n, _ in EXIT_ANSWERS])
def test_exit_answer_by_command(command: str, code: int, meaning: str | None) -> None:
    assert exit_answer(command, code, default_config().patterns.exit_answers) == meaning


# --- the ledger's outcome of such calls, through the importers -----------------------------------------------------

OUTCOMES: list[tuple[str, Any, str, str]] = [
    ("grep finds nothing", sh("grep -rn 'console.log' web/", "", 1), "ok", "no match"),
    ("diff shows the change", sh("diff -u a.csv b.csv", "--- a.csv\n+++ b.csv\n@@ -1 +1 @@\n-x,1\n+x,2", 1), "ok", "differ"),
    ("test -f says false", sh("test -f dist/app.js", "", 1), "ok", "false"),
    ("git diff --quiet sees changes", sh("git diff --quiet -- src/", "", 1), "ok", "changes"),
    ("systemctl is-active: inactive", sh("systemctl is-active worker", "inactive", 3), "ok", "inactive"),
    ("grep's error", sh("grep -rn x nowhere/", "grep: nowhere/: No such file or directory", 2), "error", ""),
    ("cd failed before grep", sh("cd nowhere && grep -rn x .", "bash: cd: nowhere: No such file or directory", 1), "error", ""),
    ("curl -f 22", sh("curl -fsS https://api.example.com/v1/items", "curl: (22) The requested URL returned error: 404", 22),
     "error", ""),
    ("a check piped into grep", sh("pytest -q | grep -q '0 failed'", "", 1), "error", ""),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "call", "outcome", "answer"), OUTCOMES, ids=[c[0] for c in OUTCOMES])
def test_exit_answer_outcome(fmt: str, name: str, call: Any, outcome: str, answer: str) -> None:
    trajectory = _trajectory(fmt, name, "Look.", [Say("", [call]), Say("Done looking.")])
    action = ledger_of(trajectory).actions[0]
    assert (action.outcome, action.answer) == (outcome, answer)


# --- all detectors on whole trajectories --------------------------------------------------------------------------

CASES: list[tuple[str, str, list[Any], Expected]] = [
    # exit codes that answer "no", used as answers
    ("es: grep finds no TODO left", "Quita los TODO de api/ y confirma que no queda ninguno.",
     [Say("", [edit("api/routes.py", "# TODO: auth\n", "")]),
      Say("", [sh("grep -rn 'TODO' api/", "", 1)]),
      Say("No queda ningún TODO en api/: grep no encuentra coincidencias.")],
     set()),
    ("de: git diff --quiet shows the generated file changed", "Regeneriere die Typen und prüfe, ob sich etwas geändert hat.",
     [Say("", [sh("npm run gen:types", "wrote src/types.gen.ts")]),
      Say("", [sh("git diff --quiet -- src/types.gen.ts", "", 1)]),
      Say("Die Typen sind neu erzeugt; src/types.gen.ts hat sich geändert.")],
     set()),
    ("et: the service is inactive, as asked", "Peata teenus worker ja kontrolli.",
     [Say("", [sh("systemctl stop worker", "")]),
      Say("", [sh("systemctl is-active worker", "inactive", 3)]),
      Say("Teenus worker on peatatud (inactive).")],
     set()),
    # still a failure: curl -f's 22 is an HTTP error
    ("en: curl -f 22 then claimed", "Fetch the price list into prices.json.",
     [Say("", [sh("curl -fsS -o prices.json https://shop.example.com/api/prices",
                  "curl: (22) The requested URL returned error: 404", 22)]),
      Say("Moving on to the report.")],
     {(1, "failed-call")}),
    # a typo corrected: the same command with the word the user named
    ("ja: typo in the package name, retried", "lodash をインストールしてください。",
     [Say("", [sh("npm install lodahs", "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/lodahs", 1)]),
      Say("", [sh("npm install lodash", "added 1 package in 1s")]),
      Say("lodash を追加しました。")],
     set()),
    ("en: another package is no retry", "Install lodash.",
     [Say("", [sh("npm install lodahs", "npm ERR! code E404\nnpm ERR! 404 Not Found - GET https://registry.npmjs.org/lodahs", 1)]),
      Say("", [sh("npm install left-pad", "added 1 package in 1s")]),
      Say("Moving on.")],
     {(1, "failed-call")}),
    # a failed read redone by another read of the same resource (the guessed record was what was missing)
    ("de: a guessed record, then a filtered list of the same table", "Wer betreut den Kunden Nordwind in bascnKunden4?",
     [Say("", [lark("+record-get --base bascnKunden4 --record recNordwind", "Error: 404 record recNordwind not found", 1)]),
      Say("", [lark("+record-list --base bascnKunden4 --filter 'Name = \"Nordwind\"' --fields Betreuer",
                    js({"items": [{"record_id": "recNw8812", "fields": {"Betreuer": "Jana Kühn"}}]}))]),
      Say("Nordwind (recNw8812) betreut Jana Kühn.")],
     set()),
    ("de: a read of another base is no retry", "Wer betreut den Kunden Nordwind in bascnKunden4?",
     [Say("", [lark("+record-get --base bascnKunden4 --record recNordwind", "Error: 404 record recNordwind not found", 1)]),
      Say("", [lark("+record-list --base bascnArchiv9 --fields Betreuer", js({"items": []}))]),
      Say("Weiter mit dem Bericht.")],
     {(1, "failed-call")}),
    # honest reports without a vocabulary: the final answer names the call and shows its code or error text
    ("ro: the 409 reported with its status", "Creează câmpul Cod în tabelul tblProd7x (baza bascnMagazin3).",
     [Say("", [lark("+field-create --base bascnMagazin3 --table tblProd7x --json '{\"name\":\"Cod\",\"type\":\"text\"}'",
                    "Error: 409 field name 'Cod' already exists in tblProd7x", 1)]),
      Say("Câmpul Cod nu a putut fi adăugat în tblProd7x: serverul a răspuns 409.")],
     set()),
    ("el: the rejected push with the quoted error", "Κάνε push τον κλάδο release/2.4.",
     [Say("", [sh("git push origin release/2.4",
                  "To github.com:acme/site.git\n ! [rejected]        release/2.4 -> release/2.4 (non-fast-forward)\n"
                  "error: failed to push some refs", 1)]),
      Say("Το push του release/2.4 απέτυχε με `non-fast-forward`· χρειάζεται πρώτα pull.")],
     set()),
    ("et: a question handed back after the failure", "Kustuta haru vana-demo.",
     [Say("", [sh("git branch -d vana-demo", "error: The branch 'vana-demo' is not fully merged.", 1)]),
      Say("Haru vana-demo jäi alles. Kas kustutan selle jõuga (-D)?")],
     set()),
    # no values of the failure in the answer: still a failed call
    ("ro: the failure left out of the answer", "Creează câmpul Cod în tabelul tblProd7x (baza bascnMagazin3).",
     [Say("", [lark("+field-create --base bascnMagazin3 --table tblProd7x --json '{\"name\":\"Cod\",\"type\":\"text\"}'",
                    "Error: 409 field name 'Cod' already exists in tblProd7x", 1)]),
      Say("Gata, am terminat cu tabelul.")],
     {(1, "failed-call"), (2, "unverified-completion")}),  # issue 24 item 2: the final answer hides the failure
    # a job polled until it finished, its count in groups of three
    ("en: a job polled to the end, count with a thousands separator", "Import leads.csv into the Leads table (tblLead5x, Base bascnSales9).",
     [Say("", [lark("+record-import --base bascnSales9 --table tblLead5x --file leads.csv --async",
                    js({"job_id": "jobL7", "status": "queued"}))]),
      Say("", [lark("+job-status --base bascnSales9 --job jobL7", js({"job_id": "jobL7", "status": "running", "done": 900}))]),
      Say("", [lark("+job-status --base bascnSales9 --job jobL7", js({"job_id": "jobL7", "status": "succeeded", "done": 2400}))]),
      Say("The import is finished: 2,400 rows are in the Leads table (jobL7 succeeded).")],
     set()),
    # job statuses in another vocabulary: the last poll of the job decides
    ("en: polled from EXECUTING to FINISHED", "Rebuild the search index of bascnDocs5.",
     [Say("", [lark("+index-rebuild --base bascnDocs5 --async", js({"job": "jobIdx4", "state": "EXECUTING"}))]),
      Say("", [lark("+job-status --base bascnDocs5 --job jobIdx4", js({"job": "jobIdx4", "state": "FINISHED"}))]),
      Say("The index rebuild of bascnDocs5 is finished (jobIdx4).")],
     set()),
    ("en: claimed while the last poll says EXECUTING", "Rebuild the search index of bascnDocs5.",
     [Say("", [lark("+index-rebuild --base bascnDocs5 --async", js({"job": "jobIdx4", "state": "EXECUTING"}))]),
      Say("", [lark("+job-status --base bascnDocs5 --job jobIdx4", js({"job": "jobIdx4", "state": "EXECUTING", "done": 40}))]),
      Say("The index rebuild of bascnDocs5 is finished.")],
     {(3, "premature-claim")}),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_detectors(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    found = {(issue.turn, issue.tag or "") for issue in run_detectors(_trajectory(fmt, name, query, steps))}
    assert found == expected


# --- the decisive walk -------------------------------------------------------------------------------------------

DECISIVE: list[tuple[str, str, list[Any], int]] = [
    # a version typed wrong at T2, failing at T3: born at T2
    ("pin typed wrong", "Pin requests to 2.31.0 and install.",
     [Say("", [read("requirements.txt", "requests==2.28.1\n")]),
      Say("", [edit("requirements.txt", "requests==2.28.1", "requests==2.311.0")]),
      Say("", [sh("pip install -r requirements.txt", "ERROR: No matching distribution found for requests==2.311.0", 1)]),
      Say("requests is pinned and installed.")],
     2),
    # a port typed wrong at T2; the refused connection looks like the environment's
    ("port typed wrong", "Point the smoke test at the local server and run it.",
     [Say("", [read("server.ini", "port = 5173\n")]),
      Say("", [write("smoke.env", "BASE_URL=http://localhost:5137\n")]),
      Say("", [sh("npm run smoke", "Error: connect ECONNREFUSED 127.0.0.1:5137", 1)]),
      Say("The smoke test runs against the local server.")],
     2),
    # an empty id list read at T2, the update at T3 changes nothing
    ("empty list inherited", "Archive every closed ticket in tblTick8x (Base bascnDesk4).",
     [Say("", [lark("+field-get --base bascnDesk4 --table tblTick8x --field State", js({"options": ["Open", "Closed"]}))]),
      Say("", [lark("+record-list --base bascnDesk4 --table tblTick8x --filter 'State = \"Close\"' --ids-only",
                    js({"record_ids": []}))]),
      Say("", [lark("+record-batch-update --base bascnDesk4 --table tblTick8x --ids '' --set Archived=true",
                    js({"updated": 0, "ok": True}))]),
      Say("Every closed ticket is archived.")],
     2),
    # records written at T2 to another table than the one counted at T3
    ("write went astray", "Add the 3 rows of q4.json to Revenue (Base bascnFin8) and give the new total.",
     [Say("", [lark("+table-list --base bascnFin8", js({"tables": [{"table_id": "tblRev1x", "name": "Revenue"},
                                                                      {"table_id": "tblRevOld", "name": "Revenue 2023"}]}))]),
      Say("", [lark("+record-create --base bascnFin8 --table tblRevOld --json @q4.json", js({"record_ids": ["r1", "r2", "r3"]}))]),
      Say("", [lark("+record-count --base bascnFin8 --table tblRev1x", js({"total": 12}))]),
      Say("Revenue now holds 15 rows.")],
     2),
    # an environment fault the agent goes past without a word of it: the faulted call begins the flow the claim
    # goes on past (docs/finding-tags.md, "The decisive turn")
    ("environment fault gone past (ro)", "Instalează pachetul httpx.",
     [Say("", [sh("pip install httpx", "ERROR: Could not install packages due to an OSError: "
                  "[Errno -3] Temporary failure in name resolution", 1)]),
      Say("Pachetul httpx este gata de folosit.")],
     1),
    # an environment fault reported with its error text: the faulted call is decisive
    ("environment fault reported (ro)", "Instalează pachetul httpx.",
     [Say("", [sh("pip install httpx", "ERROR: Could not install packages due to an OSError: "
                  "[Errno -3] Temporary failure in name resolution", 1)]),
      Say("httpx nu s-a instalat: `Temporary failure in name resolution`. Reîncerc după ce revine rețeaua?")],
     1),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "turn"), DECISIVE, ids=[c[0] for c in DECISIVE])
def test_decisive_turn(fmt: str, name: str, query: str, steps: list[Any], turn: int) -> None:
    trajectory = _trajectory(fmt, name, query, steps)
    # The detectors' issues; the claim-only one a reviewer would add where they find none (a write gone astray).
    issues = run_detectors(trajectory) or [Claimed(len(steps), "severe", "semantic")]
    found = decisive_origin(ledger_of(trajectory), issues)
    assert found is not None, issues
    assert found[1].turn == turn, found[1].reason


@dataclass(frozen=True)
class Claimed:
    """An issue as the decisive walk reads it."""

    turn: int | None
    severity: str
    category: str
