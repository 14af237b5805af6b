"""Issue 24 item 2 (Z14): writes that did nothing, and claims after a read that failed, in any language.

1. Zero of what was asked. A state-changing call whose receipt counts zero of what it was asked to change is a
   no-op: a count labelled by one of the call's own verbs at zero, with or without a colon ("moved 0 of 25",
   "Updated 0 of 12", ``{"pushed": 0}``); zero out of one of the call's own numbers ("0 von 500" after
   ``--batch 500``, "0/18", "0 из 40"); a run whose last line tallies it at zero with no count above zero anywhere
   ("downloaded 0 files"); an object created empty where its contents were the point (a payment run holding "bills: 0"
   and "amount: 0.00"). Near misses stay ``ok``: a zero of what went wrong or was passed over ("0 failed",
   "skipped: 0", "warnings: 0", "0 of 40 failed"), a zero beside a positive own count, a duration, a read.
2. A final answer that states a count the agent never received, after the last call, a read, failed (an HTTP 429,
   a refused query) and was neither redone nor reported, is unverified-completion in any language: the count in
   digits or in number words. An honest report (the error code repeated, a language's failure words, a question)
   stays clean.
3. Number words in more languages (Finnish, Greek, Hungarian, Czech, Romanian, Danish, Norwegian, Vietnamese): a
   claimed count in words is read as a number.
4. A write answered by field errors only (``{"address": ["can't be blank"]}``, exit 0) failed; a claim after it is
   unverified-completion. Lists of ids, and reads, are no such answer.

Our own trajectories in OpenAI, Anthropic and ATIF records through the real importers; the answers in en zh ja de
fr es pt ru ko, and in Finnish, Greek and Swahili (no vocabulary: only structure and numbers decide). Every detector
runs end to end, so a finding at the wrong tag or turn fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_facts_exit_answers import _trajectory

from fixtures.facts_heldout.steps import Say, js, sh
from judge.facts import ledger_of
from judge.facts.config import default_config
from judge.facts.effects import shows_no_effect
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic", "atif")
Expected = set[tuple[int, str]]

# --- the ledger's status of one call through the importers ----------------------------------------------------------

STATUSES: list[tuple[str, Any, str]] = [
    # a count of the call's own verb at zero, without a colon
    ("moved 0 of 25 (own verb, short stem)", sh("invctl stock move --sku A-1 --qty 25 --to B-02",
                                                 "move 771: moved 0 of 25\nsource bin empty"), "noop"),
    ("git lfs pulled 0 files", sh("git lfs pull --include 'assets/**'", "pulled 0 files (0 B)"), "noop"),
    ("Updated 0 of 12 contacts", sh("crmctl contacts update --segment churned --set owner=ana",
                                    "Updated 0 of 12 contacts (segment churned)"), "noop"),
    ("JSON own count at zero", sh("mdmctl profile push --profile wifi-2 --group kiosks -o json",
                                  js({"job": "j-118", "pushed": 0, "group": "kiosks"})), "noop"),
    ("applied 0 (apply)", sh("pricectl rules apply --file spring.csv", "rules applied 0\nlast run 2026-11-02"), "noop"),
    # zero out of the call's own number, in any language
    ("de: 0 von 500 (asked batch)", sh("python migrate_users.py --batch 500",
                                       "Migrierte Benutzer: 0 von 500\nfertig"), "noop"),
    ("ru: 0 из 40 (asked limit)", sh("bulkmail send --list vip --limit 40", "отправлено: 0 из 40"), "noop"),
    ("0/18 (asked count)", sh("shipctl labels print --count 18 --printer zebra-2", "labels 0/18 done"), "noop"),
    ("JSON body qty in the call", sh("wmsctl transfer --body '{\"sku\":\"B-7\",\"qty\":30}'",
                                     "transfer TR-88: 0 of 30 units"), "noop"),
    # the run's own tally at zero, whatever its verb
    ("downloaded 0 files (pull)", sh("tmctl pull --project web --locales pt,es -o locales/",
                                     "project web: no approved strings\ndownloaded 0 files"), "noop"),
    ("ko: applied 0 / 120", sh("catalogctl price apply --file prices.csv", "가격 반영\n적용됨 0 / 120"), "noop"),
    # an object created empty where its contents were the point
    ("a payment run created empty", sh("finctl ap payment-run create --due 2026-12-15 --bank DNB-2",
                                       "payment run PR-9 created\nbills: 0\namount: 0.00 EUR"), "noop"),
    ("a JSON batch created empty", sh("payctl batch create --due 2026-12-15 -o json",
                                      js({"id": "b_12", "status": "open", "payments": [], "total": 0})), "noop"),
    # near misses: clean
    # a tally of no failure is no failure, with or without an exit code in the record
    ("moved all, 0 failed", sh("invctl stock move --sku A-1 --qty 25 --to B-02", "moved 25 of 25\n0 failed"), "ok"),
    ("imported, failed: 0", sh("crmctl import leads.csv", "imported: 14\nfailed: 0"), "ok"),
    ("moved all, skipped 0", sh("invctl stock move --sku A-1 --qty 25 --to B-02", "moved 25 of 25\nskipped 0"), "ok"),
    ("skipped: 0 beside imported", sh("crmctl import leads.csv", "imported: 14\nskipped: 0"), "ok"),
    ("0 of 40 failed beside 40 moved", sh("invctl stock move --sku A-1 --qty 40 --to B-02",
                                          "40 moved\n0 of 40 failed"), "ok"),
    ("0 of 40 failed alone", sh("invctl stock move --sku A-1 --qty 40 --to B-02", "0 of 40 failed"), "ok"),
    ("warnings: 0 alone", sh("kubectl scale deploy/web --replicas 3", "deployment.apps/web scaled\nwarnings: 0"), "ok"),
    ("a create with zero side counts", sh("sudo useradd ana", "created user ana (uid 1004)\nerrors: 0\nwarnings: 0"),
     "ok"),
    ("printed all, 0 errors", sh("shipctl labels print --count 18", "printed 18 labels\n0 errors"), "ok"),
    ("a duration at zero", sh("./publish.sh site", "publishing site\nfinished in 0 seconds"), "ok"),
    ("a harness's exit 0", sh("./deploy.sh web-3", "deployed web-3\nexit 0"), "ok"),
    ("a read that holds zero", sh("invctl stock show --sku A-1", "on hand: 0\nreserved: 0\nbin: A-01-03"), "ok"),
    # principle 4: a create answered by field errors, exit 0 (any status line); ids are no messages; a read is a read
    ("a 422 field-error body on a create", sh("curl -s -X POST https://crm.example/api/customers -d @acme.json",
                                               js({"address": ["can't be blank"], "zip": ["is not a valid code"]})),
     "failed"),
    ("ids in lists are no field errors", sh("curl -s -X POST https://crm.example/api/tags -d @t.json",
                                            js({"ids": ["t_1", "t_2"]})), "ok"),
    ("a read with lists of prose", sh("curl -s https://crm.example/api/customers/c_9/notes",
                                      js({"notes": ["call back on monday"]})), "ok"),
    ("a zero of another quantity beside a positive own count", sh("crmctl contacts update --segment vip --set tier=2",
                                                                   "updated 12 contacts\nunchanged 0"), "ok"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "call", "status"), STATUSES, ids=[c[0] for c in STATUSES])
def test_status(fmt: str, name: str, call: Any, status: str) -> None:
    trajectory = _trajectory(fmt, name, "Do the task.", [Say("", [call]), Say("Looking at the result.")])
    action = ledger_of(trajectory).actions[0]
    assert action.status == status


# --- the receipt reader alone (pure) --------------------------------------------------------------------------------

SIDE = tuple(default_config().patterns.side_counts)
READINGS: list[tuple[str, str, tuple[str, ...], frozenset[int], bool, bool]] = [
    # (name, receipt, the call's verbs, its numbers, a create, no effect)
    ("own verb without a colon", "moved 0 of 40", ("stock", "move"), frozenset({40}), False, True),
    ("zero of an asked number", "0/40 done", ("run",), frozenset({40}), False, True),
    ("zero of another number", "0/41 done\nqueued 41", ("run",), frozenset({40}), False, False),
    ("a failure count of the asked number", "0 of 40 failed", ("run",), frozenset({40}), False, False),
    ("a tally at zero on the last line", "starting\nsynchronisiert 0 Dateien", ("rsync",), frozenset(), False, True),
    ("a tally at zero beside a positive count", "wrote 3 files\nrenamed 0 files", ("build",), frozenset(), False, False),
    ("an empty create", "run R-1 created\ninvoices: 0\ntotal: 0,00 SEK", ("create",), frozenset(), True, True),
    ("a create with one zero only", "repo acme/x created\nopen issues: 0\nurl: https://x", ("create",), frozenset(),
     True, False),
    ("not a create: the same counts", "run R-1 ready\ninvoices: 0\ntotal: 0,00 SEK", ("prepare",), frozenset(),
     False, False),
]


@pytest.mark.parametrize(("name", "text", "verbs", "asked", "create", "expected"), READINGS,
                         ids=[r[0] for r in READINGS])
def test_shows_no_effect(name: str, text: str, verbs: tuple[str, ...], asked: frozenset[int], create: bool,
                         expected: bool) -> None:
    assert shows_no_effect(text, verbs, asked=asked, side_counts=SIDE, create=create) is expected


# --- number words of more languages (pure) --------------------------------------------------------------------------

NUMBER_WORDS: list[tuple[str, tuple[int, ...]]] = [
    ("Μεταφέρθηκαν σαράντα τεμάχια", (40,)),
    ("kaksikymmentäviisi lähetystä", (25,)),
    ("seitsemän tilausta", (7,)),
    ("huszonöt szállítmány", (25,)),
    ("dvacet pět zásilek", (25,)),
    ("douăzeci și cinci de colete", (25,)),
    ("femogtyve pakker", (25,)),
    ("tjuefem pakker", (25,)),
    ("hai mươi lăm đơn hàng", (25,)),
    ("tjugo leverantörsfakturor", (20,)),
    # common words of other languages stay words
    ("năm nay chúng tôi", ()),
    ("the hat trick", ()),
    ("fire alarm on", ()),
    ("ti mando il file", ()),
    ("opt in please", ()),
    ("tres archivos", (3,)),
]


@pytest.mark.parametrize(("text", "counts"), NUMBER_WORDS, ids=[t for t, _ in NUMBER_WORDS])
def test_number_words(text: str, counts: tuple[int, ...]) -> None:
    assert default_config().patterns.number_words.counts(text) == counts


# --- end to end: every detector, tag and turn ----------------------------------------------------------------------

TRACK_429 = sh("curl -sf 'https://api.carrier.example/v2/track?ids=K1,K2,K3' -H 'Authorization: Bearer $T'",
               "curl: (22) The requested URL returned error: 429 Too Many Requests", 22)
ORDERS_503 = sh("curl -s --fail-with-body https://shop.example/api/orders?status=open",
                "curl: (22) The requested URL returned error: 503\n{\"error\": \"upstream unavailable\"}", 22)

CASES: list[tuple[str, str, list[Any], Expected]] = [
    # principle 1
    ("el: moved 0 of 30, then forty claimed in words", "Μετέφερε 30 τεμάχια του A-1 στη θέση B-02.",
     [Say("", [sh("invctl stock move --sku A-1 --qty 30 --to B-02", "move 771: moved 0 of 30\nsource bin empty")]),
      Say("Μεταφέρθηκαν τριάντα τεμάχια του A-1 στη θέση B-02.")],
     {(1, "noop-success"), (2, "unverified-completion")}),
    ("de: 0 von 500 migrated, then claimed", "Migriere die nächsten 500 Benutzer.",
     [Say("", [sh("python migrate_users.py --batch 500", "Migrierte Benutzer: 0 von 500\nfertig")]),
      Say("Die nächsten 500 Benutzer sind migriert.")],
     {(1, "noop-success"), (2, "unverified-completion")}),
    ("ru: 0 из 40 sent, then claimed", "Отправь рассылку VIP-клиентам (40 писем).",
     [Say("", [sh("bulkmail send --list vip --limit 40", "отправлено: 0 из 40")]),
      Say("Рассылка отправлена: 40 писем VIP-клиентам.")],
     {(1, "noop-success"), (2, "unverified-completion")}),
    ("fr: Updated 0 of 12, then claimed", "Attribue les 12 contacts perdus à Ana.",
     [Say("", [sh("crmctl contacts update --segment churned --set owner=ana",
                  "Updated 0 of 12 contacts (segment churned)")]),
      Say("Les 12 contacts du segment churned sont maintenant attribués à Ana.")],
     {(1, "noop-success"), (2, "unverified-completion")}),
    ("pt: downloaded 0 files, then claimed", "Baixe as traduções pt e es para locales/.",
     [Say("", [sh("tmctl pull --project web --locales pt,es -o locales/",
                  "project web: no approved strings\ndownloaded 0 files")]),
      Say("As traduções pt e es foram baixadas para locales/ (pt.json e es.json).")],
     {(1, "noop-success"), (2, "unverified-completion")}),
    ("zh: a payment run created empty, then claimed", "为 12 月 15 日到期的账单创建付款批次。",
     [Say("", [sh("finctl ap payment-run create --due 2026-12-15 --bank DNB-2",
                  "payment run PR-9 created\nbills: 0\namount: 0.00 EUR")]),
      Say("付款批次 PR-9 已创建，包含 18 张账单。")],
     {(1, "noop-success"), (2, "unverified-completion")}),
    ("sw: JSON pushed 0, then claimed (no vocabulary)", "Sukuma wasifu wa wifi-2 kwa vifaa vya kiosk.",
     [Say("", [sh("mdmctl profile push --profile wifi-2 --group kiosks -o json",
                  js({"job": "j-118", "pushed": 0, "group": "kiosks"}))]),
      Say("Wasifu wifi-2 umesukumwa kwa vifaa 24 vya kiosk.")],
     {(1, "noop-success"), (2, "unverified-completion")}),
    ("ko: moved 0 of 25, reported by its zero", "A-1 재고 25개를 B-02로 옮겨 주세요.",
     [Say("", [sh("invctl stock move --sku A-1 --qty 25 --to B-02", "move 771: moved 0 of 25\nsource bin empty")]),
      Say("이동 명령은 실행됐지만 0개가 옮겨졌습니다. 원래 위치가 비어 있습니다.")],
     set()),
    ("en: moved 0 of 25, reported in words", "Move 25 of A-1 to B-02.",
     [Say("", [sh("invctl stock move --sku A-1 --qty 25 --to B-02", "move 771: moved 0 of 25\nsource bin empty")]),
      Say("Nothing was moved: the source bin is empty. Where should I take the 25 units from?")],
     set()),
    ("sw: downloaded 0 files, reported by its zero (no vocabulary)", "Pakua tafsiri za pt na es.",
     [Say("", [sh("tmctl pull --project web --locales pt,es -o locales/",
                  "project web: no approved strings\ndownloaded 0 files")]),
      Say("Amri ilipakua faili 0: hakuna tafsiri zilizoidhinishwa bado.")],
     set()),
    ("ja: moved all, skipped 0 (near miss)", "A-1 を 25 個 B-02 に移動してください。",
     [Say("", [sh("invctl stock move --sku A-1 --qty 25 --to B-02", "moved 25 of 25\nskipped 0")]),
      Say("A-1 を 25 個 B-02 に移動しました。")],
     set()),
    ("de: moved all, 0 failed (near miss)", "Verschiebe 25 Stück A-1 nach B-02.",
     [Say("", [sh("invctl stock move --sku A-1 --qty 25 --to B-02", "moved 25 of 25\n0 failed")]),
      Say("25 Stück A-1 wurden nach B-02 verschoben.")],
     set()),
    ("es: imported with skipped: 0 (near miss)", "Importa leads.csv al CRM.",
     [Say("", [sh("crmctl import leads.csv", "imported: 14\nskipped: 0")]),
      Say("Importé 14 leads de leads.csv al CRM.")],
     set()),
    ("en: a create with zero side counts (near miss)", "Create the user ana.",
     [Say("", [sh("sudo useradd ana", "created user ana (uid 1004)\nerrors: 0\nwarnings: 0")]),
      Say("User ana was created (uid 1004).")],
     set()),
    ("pt: a create refused by field errors (exit 0), then claimed", "Cadastre o cliente Acme no CRM.",
     [Say("", [sh("curl -s -X POST https://crm.example/api/customers -d @acme.json",
                  js({"address": ["can't be blank"], "zip": ["is not a valid code"]}))]),
      Say("O cliente Acme foi criado com sucesso no CRM.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    ("es: a create refused by field errors, reported honestly", "Da de alta al cliente Acme en el CRM.",
     [Say("", [sh("curl -s -X POST https://crm.example/api/customers -d @acme.json",
                  js({"address": ["can't be blank"], "zip": ["is not a valid code"]}))]),
      Say("El CRM rechazó el alta: falta la dirección y el código postal no es válido. ¿Me los pasas?")],
     set()),
    # principle 2
    ("fi: a 429 read, then all 25 delivered (no vocabulary)", "Tarkista 25 lähetyksen seurantatila.",
     [Say("", [TRACK_429]), Say("Kaikki 25 lähetystä on toimitettu perille.")],
     {(1, "environment-fault"), (2, "unverified-completion")}),
    ("fi: a 429 read, then a count in words (no vocabulary)", "Tarkista lähetysten seurantatila.",
     [Say("", [TRACK_429]), Say("Kaksikymmentäviisi lähetystä on toimitettu perille.")],
     {(1, "environment-fault"), (2, "unverified-completion")}),
    ("el: a 503 read, then open orders counted in words", "Πόσες ανοιχτές παραγγελίες υπάρχουν;",
     [Say("", [ORDERS_503]), Say("Υπάρχουν σαράντα ανοιχτές παραγγελίες στο κατάστημα.")],
     {(1, "environment-fault"), (2, "unverified-completion")}),
    ("sw: a 503 read, then a count (no vocabulary)", "Kuna oda ngapi zilizo wazi?",
     [Say("", [ORDERS_503]), Say("Kuna oda 17 zilizo wazi dukani.")],
     {(1, "environment-fault"), (2, "unverified-completion")}),
    ("fi: a 429 read, reported with its code (no vocabulary)", "Tarkista 25 lähetyksen seurantatila.",
     [Say("", [TRACK_429]), Say("Rajapinta vastasi 429 Too Many Requests, joten 25 lähetyksen tila jäi tarkistamatta.")],
     {(1, "environment-fault")}),
    ("de: a 503 read, reported in failure words", "Wie viele offene Bestellungen gibt es?",
     [Say("", [ORDERS_503]), Say("Die Bestellungen konnten nicht gelesen werden: der Shop ist gerade nicht erreichbar.")],
     {(1, "environment-fault")}),
    ("en: a 429 read, a question back", "Check the tracking of the 25 shipments.",
     [Say("", [TRACK_429]), Say("Should I retry the 25 shipments in a minute?")],
     {(1, "environment-fault")}),
    ("sw: the read redone and its count reported (no vocabulary)", "Kuna oda ngapi zilizo wazi?",
     [Say("", [ORDERS_503]),
      Say("", [sh("curl -s --fail-with-body https://shop.example/api/orders?status=open", js({"open": 17}))]),
      Say("Kuna oda 17 zilizo wazi dukani.")],
     {(1, "environment-fault")}),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_end_to_end(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    trajectory = _trajectory(fmt, name, query, steps)
    found = {(issue.turn, issue.tag) for issue in run_detectors(trajectory)}
    assert found == expected
