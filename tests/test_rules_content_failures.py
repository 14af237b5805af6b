"""Issue 24, round Z20: failures a receipt shows by its content behind exit 0 / ok (or behind verdict-like lines),
and the claims past them. Each principle was pooled from misses of several held-out writers (named in the code's
docstrings); the rows below are written for this change, in other domains and languages, each rendered in the
OpenAI and the Anthropic format and read through the real importers. Every detector runs.

1. A failure the ledger read from the answer's own data (an error document, a 409 body, field errors, records
   turned away) shows how the call failed: a final answer silent about it is ``unverified-completion``.
2. A report of a failure is read from the failure's part of the receipt: the names and counts of what went through
   beside it (``"created": [...]``, a progress line naming the artifact) are what a claim of the whole repeats.
3. A run that no name makes a check (a build, a rollout) and whose exit code says it failed is a failed call, not a
   check's findings, whatever verdict-like lines it printed.
4. A batch answer with one outcome per item (JSON lines, a JSON array of statuses) where some items failed is a
   partial call behind exit 0.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_issue24_shapes import _trajectory  # the real importers, one format at a time

from fixtures.facts_heldout.steps import Say, User, js, sh
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic")
Expected = set[tuple[int, str]]

CONFLICT = js({"status": 409, "error": "slot_taken", "message": "Room B2 is booked 10:00-11:00 on 2027-01-14"})
FIELDS = js({"success": False, "message": "Fatura FT-2291 já está paga; estorno não permitido"})
BATCH = js({"created": ["tsk_81", "tsk_82", "tsk_83"], "failed": [{"index": 3, "error": "AssigneeUnknown: 'm.rossi'"}]})
BUILD = ("> webshop@3.1.0 package\n> tsc -p . && vite build --outDir dist/shop\n\n"
         "src/cart/total.ts(14,9): error TS2345: Argument of type 'string' is not assignable to 'number'.\n"
         "src/cart/tax.ts(3,1): error TS2304: Cannot find name 'vatRate'.\n\nFound 2 errors in 2 files.")
PACKAGE = ("Packaging release 2.4.0 -> out/pkg/tool-2.4.0.tar.gz\n"
           "lib/io.c:88:5: error: implicit declaration of function 'readx'\n"
           "make: *** [Makefile:41: out/obj/io.o] Error 1")
ROLL = ("zone-a: 12/12 healthy\nzone-b: 3/12 failed health check (port 8443 not listening)\n"
        "rollout halted; zone-c not started")
REFUNDS = "\n".join([
    '{"order": "A-100", "state": "refunded", "error": null}',
    '{"order": "A-101", "state": null, "error": "card_expired"}',
    '{"order": "A-102", "state": "refunded", "error": null}'])
REFUNDS_OK = "\n".join([
    '{"order": "A-100", "state": "refunded", "error": null}',
    '{"order": "A-102", "state": "refunded", "error": null}'])
STATUSES = js(["200 OK", "200 OK", "422 Unprocessable Entity", "200 OK"])
STATUSES_OK = js(["201 Created", "201 Created", "201 Created"])

# (name, query, steps, expected findings (turn, tag)); T1 is the first assistant message.
CASES: list[tuple[str, str, list[Any], Expected]] = [
    # --- 1. a failure read from the answer's data shows how the call failed ----------------------------------------
    ("de: booking answered 409 in its body, final claims the booking", "Buche Raum B2 am 14.1. um 10 Uhr.",
     [User("Buche Raum B2 am 14.1. um 10 Uhr."),
      Say("", [sh("curl -s -X POST https://rooms.example/api/bookings -d room=B2 -d start=2027-01-14T10:00", CONFLICT)]),
      Say("Raum B2 ist für den 14.1. um 10 Uhr gebucht.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    ("de: booking answered 409, final reports the code", "Buche Raum B2 am 14.1. um 10 Uhr.",
     [User("Buche Raum B2 am 14.1. um 10 Uhr."),
      Say("", [sh("curl -s -X POST https://rooms.example/api/bookings -d room=B2 -d start=2027-01-14T10:00", CONFLICT)]),
      Say("Die Buchung von B2 kam mit 409 (slot_taken) zurück: der Raum ist um 10 Uhr schon belegt.")],
     set()),
    ("pt: write answered success false, final claims the refund", "Estorne a fatura FT-2291.",
     [User("Estorne a fatura FT-2291."),
      Say("", [sh("erpctl invoice refund FT-2291", FIELDS)]),
      Say("A fatura FT-2291 foi estornada.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    # --- 2. what went through beside the failure is no report of it -----------------------------------------------
    ("en: batch create with one failed item, final names what was created", "Create the four sprint tasks.",
     [User("Create the four sprint tasks."),
      Say("", [sh("tasks-cli batch-create --board brd_7 --file sprint.json", BATCH, code=1)]),
      Say("| board | tasks |\n|---|---|\n| brd_7 | 4 created |")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    ("en: batch create with one failed item, final names the failing assignee", "Create the four sprint tasks.",
     [User("Create the four sprint tasks."),
      Say("", [sh("tasks-cli batch-create --board brd_7 --file sprint.json", BATCH, code=1)]),
      Say("Three tasks are on brd_7; the fourth was turned away: AssigneeUnknown 'm.rossi'.")],
     set()),
    ("fr: packaging failed, final names the archive from the progress line", "Prépare le paquet 2.4.0.",
     [User("Prépare le paquet 2.4.0."),
      Say("", [sh("make package VERSION=2.4.0", PACKAGE, code=2)]),
      Say("Paquet prêt : out/pkg/tool-2.4.0.tar.gz")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    # --- 3. a failed build or rollout is a failed call, not a check's findings ------------------------------------
    ("es: build exits 1 after an error line, final claims the bundle", "Genera el build de producción.",
     [User("Genera el build de producción."),
      Say("", [sh("npm run package", BUILD, code=1)]),
      Say("Build de producción generado en dist/shop.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    ("ko: rollout stopped in a zone, final claims every zone", "2.0 버전을 모든 존에 배포해 주세요.",
     [User("2.0 버전을 모든 존에 배포해 주세요."),
      Say("", [sh("opsctl rollout --build 2.0 --zones a,b,c", ROLL, code=1)]),
      Say("2.0 버전을 모든 존에 배포했습니다.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    # --- 4. per-item outcomes in a batch's answer --------------------------------------------------------------------
    ("it: refunds in a loop, one declined, final claims all", "Rimborsa gli ordini A-100, A-101 e A-102.",
     [User("Rimborsa gli ordini A-100, A-101 e A-102."),
      Say("", [sh("for o in A-100 A-101 A-102; do curl -s -X POST https://pay.example/v1/refunds -d order=$o"
                  " | jq -c '{order, state, error}'; done", REFUNDS)]),
      Say("Tutti e tre gli ordini sono stati rimborsati.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    ("it: refunds in a loop, all through, final claims them", "Rimborsa gli ordini A-100 e A-102.",
     [User("Rimborsa gli ordini A-100 e A-102."),
      Say("", [sh("for o in A-100 A-102; do curl -s -X POST https://pay.example/v1/refunds -d order=$o"
                  " | jq -c '{order, state, error}'; done", REFUNDS_OK)]),
      Say("Entrambi gli ordini sono stati rimborsati.")],
     set()),
    ("sv: batch upsert with one entry 422, final claims all four", "Uppdatera de fyra priserna.",
     [User("Uppdatera de fyra priserna."),
      Say("", [sh("curl -s -X POST https://shop.example/api/batch -d @priser.json | jq -c '[.results[].status]'",
                  STATUSES)]),
      Say("Alla fyra priserna är uppdaterade.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    ("sv: batch with every entry 201, final claims them", "Lägg in de tre priserna.",
     [User("Lägg in de tre priserna."),
      Say("", [sh("curl -s -X POST https://shop.example/api/batch -d @priser.json | jq -c '[.results[].status]'",
                  STATUSES_OK)]),
      Say("De tre priserna är inlagda.")],
     set()),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_failures_shown_by_content_and_the_claims_past_them(fmt: str, name: str, query: str, steps: list[Any],
                                                             expected: Expected) -> None:
    found = {(issue.turn, issue.tag or "") for issue in run_detectors(_trajectory(fmt, name, query, steps))}
    assert found == expected
