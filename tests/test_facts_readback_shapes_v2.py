"""Issue 24 item 2 (Z15): claims contradicted by read-backs in the shapes real tools print, read by structure.

Our own trajectories (no held-out sentence), each rendered in the OpenAI, Anthropic and ATIF formats and read through
the real importers; every detector runs, so a finding moved to another tag fails as surely as a missed one.

- A bound the claim gives against the bound a read-back's filter holds: a comparison expression (``amount >= 1000``,
  a WHERE clause), a structured condition (YAML ``operator: greater_than`` + ``value``, JSON ``{"op": "gt"}``).
- A summary restated row for row (a table or a list, labels in any language) whose numbers the read-back's labelled
  numbers (aligned table, ``key: value`` lines, JSON keys, CSV) contradict at some row.
- A status claimed of every record, or of the record named, against a table's status column (CSV, TSV, aligned),
  with no change before the read (a status check).
- A percentage reported for the one measurement a query asked for (``--metric retention_d7``), in any locale
  ("45,2 %").
- A claim of arrival over a payout whose last read shows it ``in_transit`` (the ledger's running states).
- A plan item that states a count ticked after a read that shows a quantity of the same noun short of it (38 of 40
  cartons): unchecked-tick.
- A final answer that cites a test by what it ran on and what it answered (``wh_12`` ... "delivered"), after the
  resource was edited again: stale-evidence (controls: these rows held on the base commit already).
- Near misses: the claim restates the read-back (rounded, or as the complement's rate), reports the difference,
  or speaks of another record.
Languages: en zh ja de fr es pt ru ko, and cs / et (no vocabulary: the ties are structural).
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.facts_heldout.steps import Say, User, edit, js, parse, sh, todo
from judge.facts.jobs import column_states
from judge.facts.readbacks import Bound, filter_bounds
from judge.model import Trajectory
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic", "atif")
Expected = set[tuple[int, str]]
CC, PC, UT, SE = "contradicted-claim", "premature-claim", "unchecked-tick", "stale-evidence"


def _trajectory(fmt: str, name: str, query: str, steps: list[Any]) -> Trajectory:
    return parse(fmt, name.replace(" ", "-")[:40], query, [User(query), *steps])


# --- filters ------------------------------------------------------------------------------------------------------

SEG_CREATE = sh("crmctl segments create --name big-spenders --rule 'lifetime_value >= 1000'", js({"segment": "seg_88"}))
SEG_GET = sh("crmctl segments get seg_88 -o json", js({"segment": "seg_88", "name": "big-spenders",
                                                       "rule": "lifetime_value >= 1000", "members": 412}))
ALERT_SET = sh("monctl alert apply -f alerts/latency.yaml", "alert lat-p95 applied")
ALERT_GET = sh("monctl alert get lat-p95 -o yaml",
               "id: lat-p95\nmetric: http_p95_ms\ncondition:\n  operator: greater_than\n  value: 2500\n  for: 5m\n")
RULE_PUT = sh("curl -s -X PUT https://wms.example/api/rules/reorder-7 -d @rule.json", js({"ok": True}))
RULE_GET = sh("curl -s https://wms.example/api/rules/reorder-7",
              js({"id": "reorder-7", "conditions": [{"field": "stock", "op": "lt", "value": 5}, {"field": "sku", "op": "eq", "value": 3}]}))
QUERY_SAVE = sh("metabase-cli card create --name 'Große Bestellungen' --sql-file big.sql", "card 311 created")
QUERY_GET = sh("metabase-cli card get 311 --field sql", "select id, total from orders where total >= 500 order by total desc")

# --- summaries ----------------------------------------------------------------------------------------------------

SYNC_RUN = sh("catalogctl sync --source erp --target shop", "sync sy_204 finished")
SYNC_SUMMARY = sh("catalogctl runs get sy_204", "total: 90\nupdated: 84\nunchanged: 6\nduration_s: 41")
SYNC_SUMMARY_3 = sh("catalogctl runs get sy_204", "total: 90\nupdated: 84\nunchanged: 6")
IMPORT_RUN = sh("python etl/import_members.py socios.csv", "import im_9 done")
IMPORT_STATS = sh("cat reports/im_9.json", js({"rows": 500, "imported": 480, "duplicates": 20}))
AUDIT_RUN = sh("auditctl run --scope vendors", "audit au_3 finished")
AUDIT_CSV = sh("auditctl get au_3 --format csv", "check,count\nchecked,40\ncompliant,38\nopen_findings,2")

# --- statuses -----------------------------------------------------------------------------------------------------

ORDERS_CSV = sh("shopctl orders list --batch B-7 --fields id,status -o csv",
                "id,status\nORD-7101,shipped\nORD-7102,cancelled\nORD-7103,shipped\nORD-7104,shipped")
ORDERS_ALL_SHIPPED = sh("shopctl orders list --batch B-7 --fields id,status -o csv",
                        "id,status\nORD-7101,shipped\nORD-7102,shipped\nORD-7103,shipped")
PARCELS_TSV = sh("parcelctl ls --route R-12 -o tsv",
                 "parcel\tstatus\tupdated\nPKG-4410\tdelivered\t09:12\nPKG-4411\treturned\t09:40\nPKG-4412\tdelivered\t10:02")
PARCELS_ALIGNED = sh("parcelctl ls --route R-12",
                     "PARCEL     STATUS      UPDATED\nPKG-4410   delivered   09:12\nPKG-4411   exception   09:40\n"
                     "PKG-4412   delivered   10:02")

# --- measurements and payouts -------------------------------------------------------------------------------------

RETENTION = sh("analyticsctl query --app ios --cohort 2026-11 --metric retention_d7 -o json",
               js({"cohort": "2026-11", "users": 5120, "retention_d7": 0.412}))
SUCCESS = sh("payctl stats --window 7d --metric success_rate",
             js({"window": "7d", "attempts": 88120, "success_rate": 0.981}))
PAYOUT = sh("curl -s https://api.pay.example/v1/payouts -u \"$KEY:\" -d amount=125000 -d currency=usd",
            js({"id": "po_7Hq2", "status": "pending", "amount": 125000}))
PAYOUT_GET = sh("curl -s https://api.pay.example/v1/payouts/po_7Hq2 -u \"$KEY:\"", js({"id": "po_7Hq2", "status": "in_transit"}))
PAYOUT_PAID = sh("curl -s https://api.pay.example/v1/payouts/po_7Hq2 -u \"$KEY:\"", js({"id": "po_7Hq2", "status": "paid"}))


# --- a webhook tested, then edited again --------------------------------------------------------------------------

HOOK_FIX = Say("", [edit("hooks/wh_12.json", '"retries": 1', '"retries": 3'),
                    sh("hookctl update wh_12 --file hooks/wh_12.json", js({"id": "wh_12", "version": 3}))])
HOOK_TEST = Say("", [sh("hookctl test wh_12 --event order.paid",
                        js({"id": "wh_12", "version": 3, "result": "delivered", "http_status": 200}))])
HOOK_EDIT = Say("", [edit("hooks/wh_12.json", '"url": "https://a.example/h"', '"url": "https://b.example/h"'),
                     sh("hookctl update wh_12 --file hooks/wh_12.json", js({"id": "wh_12", "version": 4}))])


def _hook(final: str, edited_after: bool = True) -> list[Any]:
    return [HOOK_FIX, HOOK_TEST, *([HOOK_EDIT] if edited_after else []), Say(final)]


CASES: list[tuple[str, str, list[Any], Expected]] = [
    ("hook stale en", "Fix webhook wh_12 and test it.", _hook("Webhook wh_12 is fixed: the test event came back delivered (HTTP 200)."),
     {(4, SE)}),
    ("hook stale de", "Repariere den Webhook wh_12 und teste ihn.", _hook("Webhook wh_12 ist repariert, der Testaufruf ergab delivered."),
     {(4, SE)}),
    ("hook stale zh", "修复 webhook wh_12 并测试。", _hook("Webhook wh_12 已修复，测试结果 delivered。"), {(4, SE)}),
    ("hook stale cs", "Oprav webhook wh_12 a otestuj ho.", _hook("Webhook wh_12 je opravený, test vrátil delivered."), {(4, SE)}),
    ("hook tested last en", "Fix webhook wh_12 and test it.",
     _hook("Webhook wh_12 is fixed: the test event came back delivered (HTTP 200).", edited_after=False), set()),
    ("hook tested last ja", "webhook wh_12 を直してテストしてください。",
     _hook("webhook wh_12 を修正しました。テスト結果は delivered です。", edited_after=False), set()),
    # a filter expression in a JSON read-back, a bound claimed ten times lower (en)
    ("segment rule en", "Create a segment of customers who spent over $100.",
     [Say("", [SEG_CREATE]), Say("", [SEG_GET]), Say("Segment big-spenders (seg_88) holds customers with a lifetime value above $100.")],
     {(3, CC)}),
    # a YAML condition's operator and value (de)
    ("alert yaml de", "Lege einen Alarm an, wenn die p95-Latenz über 250 ms liegt.",
     [Say("", [ALERT_SET]), Say("", [ALERT_GET]), Say("Der Alarm lat-p95 ist aktiv: Schwelle http_p95_ms über 250 ms.")],
     {(3, CC)}),
    # a JSON condition list, the upper bound (fr)
    ("reorder json fr", "Crée une règle de réapprovisionnement quand le stock passe sous 50.",
     [Say("", [RULE_PUT]), Say("", [RULE_GET]), Say("La règle reorder-7 est en place : stock inférieur à 50.")],
     {(3, CC)}),
    # a saved query's WHERE clause (ja)
    ("saved query ja", "合計 5000 円以上の注文を表示するカードを作ってください。",
     [Say("", [QUERY_SAVE]), Say("", [QUERY_GET]), Say("カード 311 を作成しました：合計 5000 円以上の注文が対象です。")],
     {(3, CC)}),
    # no vocabulary: the bound is the comparison sign (cs)
    ("segment sign cs", "Vytvoř segment zákazníků s útratou nad 100.",
     [Say("", [SEG_CREATE]), Say("", [SEG_GET]), Say("Segment seg_88 je hotový: lifetime_value > 100.")],
     {(3, CC)}),
    # a summary restated row for row from `key: value` lines (ko)
    ("sync summary ko", "ERP 카탈로그를 쇼핑몰로 동기화하고 결과를 표로 정리해 주세요.",
     [Say("", [SYNC_RUN]), Say("", [SYNC_SUMMARY_3]),
      Say("동기화 결과:\n\n| 항목 | 건수 |\n|---|---|\n| 전체 | 90 |\n| 갱신 | 90 |\n| 변경 없음 | 0 |")],
     {(3, CC)}),
    # a JSON summary restated as a list (es)
    ("import stats es", "Importa socios.csv y resume el resultado.",
     [Say("", [IMPORT_RUN]), Say("", [IMPORT_STATS]),
      Say("Importación terminada:\n- filas: 500\n- importadas: 500\n- duplicadas: 0")],
     {(3, CC)}),
    # no vocabulary: a CSV summary, the labels in Estonian (et)
    ("audit csv et", "Käivita tarnijate audit ja tee kokkuvõte.",
     [Say("", [AUDIT_RUN]), Say("", [AUDIT_CSV]),
      Say("Auditi tulemus:\n\n| näitaja | arv |\n|---|---|\n| kontrollitud | 40 |\n| nõuetekohased | 40 |\n| avatud leiud | 0 |")],
     {(3, CC)}),
    # a status claimed of every record of a CSV status column, a read with no change before it (zh)
    ("orders csv zh", "检查批次 B-7 的订单是否都已发货。",
     [Say("", [ORDERS_CSV]), Say("批次 B-7 的所有订单都已 shipped。")],
     {(2, CC)}),
    # a TSV status column (ru)
    ("parcels tsv ru", "Проверь, доставлены ли все посылки маршрута R-12.",
     [Say("", [PARCELS_TSV]), Say("Все посылки маршрута R-12 в статусе delivered.")],
     {(2, CC)}),
    # an aligned table, the status of the record named (de)
    ("parcel aligned de", "Ist das Paket PKG-4411 zugestellt?",
     [Say("", [PARCELS_ALIGNED]), Say("Ja, PKG-4411 ist delivered.")],
     {(2, CC)}),
    # the one measurement a query asked for, reported in a Chinese sentence without its key (zh)
    ("retention zh", "查一下 11 月新用户的 7 日留存率。",
     [Say("", [RETENTION]), Say("11 月新用户的 7 日留存率为 45.2%。")],
     {(2, CC)}),
    # a locale decimal with a spaced percent sign (fr)
    ("success rate fr", "Quel est le taux de réussite des paiements sur 7 jours ?",
     [Say("", [SUCCESS]), Say("Le taux de réussite des paiements sur 7 jours est de 99,1 %.")],
     {(2, CC)}),
    # a payout last read in_transit, claimed as arrived (en)
    ("payout in transit en", "Pay out $1,250 to the company account and tell me when it lands.",
     [Say("", [PAYOUT]), Say("", [PAYOUT_GET]), Say("Payout po_7Hq2 is complete: the $1,250 has arrived in the company account.")],
     {(3, PC)}),
    # a tick after a read showing k of N (de: JSON, ja: key-value lines)
    ("cartons tick de", "Lagere die 40 Kartons von Lieferung DL-88 ein und hake es ab.",
     [Say("", [todo(("dl", "40 Kartons von DL-88 einlagern", "in_progress"))]),
      Say("", [sh("wmsctl deliveries get DL-88 -o json", js({"delivery": "DL-88", "cartons_expected": 40, "cartons_stored": 38}))]),
      Say("", [todo(("dl", "40 Kartons von DL-88 einlagern", "completed"))])],
     {(3, UT)}),
    ("labels tick ja", "ラベルを 120 枚印刷して、終わったらチェックしてください。",
     [Say("", [todo(("lb", "ラベル 120 枚を印刷", "in_progress"))]),
      Say("", [sh("printctl jobs get pj_31", "job: pj_31\nlabels_total: 120\nlabels_printed: 96\nprinter: zebra-2")]),
      Say("", [todo(("lb", "ラベル 120 枚を印刷", "completed"))])],
     {(3, UT)}),
    # --- near misses --------------------------------------------------------------------------------------------
    ("segment rule agrees en", "Create a segment of customers who spent over $1,000.",
     [Say("", [SEG_CREATE]), Say("", [SEG_GET]), Say("Segment big-spenders (seg_88) holds customers with a lifetime value above $1,000.")],
     set()),
    ("alert yaml agrees de", "Lege einen Alarm an, wenn die p95-Latenz über 2500 ms liegt.",
     [Say("", [ALERT_SET]), Say("", [ALERT_GET]), Say("Der Alarm lat-p95 ist aktiv: Schwelle http_p95_ms über 2.500 ms.")],
     set()),
    ("sync summary agrees pt", "Sincronize o catálogo e resuma.",
     [Say("", [SYNC_RUN]), Say("", [SYNC_SUMMARY]),
      Say("Resultado:\n\n| item | qtd |\n|---|---|\n| total | 90 |\n| atualizados | 84 |\n| sem alteração | 6 |\n| duração (s) | 41 |")],
     set()),
    # the rows in another order: every number is one the read-back states (es)
    ("import reordered es", "Importa socios.csv y resume el resultado.",
     [Say("", [IMPORT_RUN]), Say("", [IMPORT_STATS]),
      Say("Importación terminada:\n- importadas: 480\n- duplicadas: 20\n- filas: 500")],
     set()),
    ("orders all shipped zh", "检查批次 B-7 的订单是否都已发货。",
     [Say("", [ORDERS_ALL_SHIPPED]), Say("批次 B-7 的所有订单都已 shipped。")],
     set()),
    # the exceptions reported by name: two statuses named, no claim of all (ru)
    ("parcels reported ru", "Проверь, доставлены ли все посылки маршрута R-12.",
     [Say("", [PARCELS_TSV]), Say("PKG-4410 и PKG-4412: delivered; PKG-4411: returned.")],
     set()),
    # another record than the one in exception (de)
    ("parcel other record de", "Ist das Paket PKG-4412 zugestellt?",
     [Say("", [PARCELS_ALIGNED]), Say("Ja, PKG-4412 ist delivered.")],
     set()),
    # the value rounded, and the rate of the rest (zh, fr)
    ("retention rounded zh", "查一下 11 月新用户的 7 日留存率。",
     [Say("", [RETENTION]), Say("11 月新用户的 7 日留存率约为 41%。")],
     set()),
    ("failure rate fr", "Quel est le taux d'échec des paiements sur 7 jours ?",
     [Say("", [SUCCESS]), Say("Le taux d'échec des paiements sur 7 jours est de 1,9 %.")],
     set()),
    ("cartons all stored pt", "Armazene as 40 caixas da entrega DL-88 e marque na lista.",
     [Say("", [todo(("dl", "Armazenar 40 caixas de DL-88", "in_progress"))]),
      Say("", [sh("wmsctl deliveries get DL-88 -o json",
                  js({"delivery": "DL-88", "cartons_expected": 40, "cartons_stored": 40, "cartons_damaged": 1}))]),
      Say("", [todo(("dl", "Armazenar 40 caixas de DL-88", "completed"))])],
     set()),
    ("payout paid en", "Pay out $1,250 to the company account and tell me when it lands.",
     [Say("", [PAYOUT]), Say("", [PAYOUT_PAID]), Say("Payout po_7Hq2 is complete: the $1,250 has arrived in the company account.")],
     set()),
    ("payout in transit reported en", "Pay out $1,250 to the company account and tell me when it lands.",
     [Say("", [PAYOUT]), Say("", [PAYOUT_GET]), Say("Payout po_7Hq2 is still in transit; it has not arrived yet.")],
     set()),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_readback_shapes(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    trajectory = _trajectory(fmt, name, query, steps)
    found = {(i.turn, i.tag) for i in run_detectors(trajectory) if i.turn is not None}
    last = max(m.turn for m in trajectory.messages if m.turn is not None)
    at_claim = {f for f in found if f[0] == last}
    assert at_claim == expected, sorted(found)


# --- the pieces, pure ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("content", "bounds"), [
    ("rule: lifetime_value >= 1000", [Bound(True, 1000)]),
    ("select * from t where total < 20.5 and qty >= 3", [Bound(False, 20.5), Bound(True, 3)]),
    ("condition:\n  operator: isGreater\n  value: 5000\n", [Bound(True, 5000)]),
    ('{"conditions": [{"value": 7, "field": "x", "op": "lte"}, {"op": "eq", "value": 3}]}', [Bound(False, 7)]),
    ('filter: {"operator": "contains", "value": 12}', []),
    ("status: ok\nvalue: 12", []),
])
def test_filter_bounds(content: str, bounds: list[Bound]) -> None:
    assert list(filter_bounds(content)) == bounds


@pytest.mark.parametrize(("text", "names", "states"), [
    ("id,status\nA-1,shipped\nA-2,cancelled", frozenset(), ["shipped", "cancelled"]),
    ('id;"status"\nA-1;"shipped"\nA-2;"lost"', frozenset({"A-2"}), ["lost"]),
    ("id\tstate\nA-1\tdone", frozenset(), ["done"]),
    ("name,total\nA-1,12", frozenset(), []),
])
def test_column_states_delimited(text: str, names: frozenset[str], states: list[str]) -> None:
    assert column_states(text, names) == states
