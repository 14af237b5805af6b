"""Issue 24 item 2 (Z13): evidence made stale over any artifact kind, checks that report failure however they exit,
plans that are no checks, ticks after a refused call. Trajectories written for this change (none copied from the
held-out sets), each rendered in the OpenAI, Anthropic and ATIF formats and read through the real importers.

1. Stale evidence: a check or read-back is bound to the version of what it ran on, by identity (a file by its path,
   a remote object by its flags' values - base/table/field, spreadsheet/sheet/range - or by its URL's host and
   path); a later write to it, or to an object under it, leaves a final answer citing the check on stale evidence.
   A write to another object, or a re-check after the last write, is clean.
2. A check whose output reports failures (a CSV status cell, ``"valid": false``, "2 FAILED (ignored)") behind exit
   0 is silent-check-failure when the agent goes on as if it passed; an honest report is clean; a tool's key=value
   zero counts ("unreachable=0 failed=0") report nothing.
3. A sentence in the future tense announcing a check is no claim of one.
4. A call the server refused (its own ``HTTP 4xx`` status line) is a failed call even when its URL says "test";
   a todo ticked after it is unchecked-tick, in any language.

Languages: en zh ja ko de fr es pt ru with a vocabulary; sw (Swahili) without one, judged by structure and values.
Every detector runs on each case: a defect found twice, or by the wrong detector, fails as surely as one missed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixtures.facts_heldout.steps import Call, Say, User, edit, js, lark, render, sh, todo
from judge.importers import Source
from judge.importers.reader import parse_record
from judge.model import Trajectory
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic", "atif")
SE, SCF, UT, FC = "stale-evidence", "silent-check-failure", "unchecked-tick", "failed-call"
Expected = set[tuple[int, str]]

# --- 1. stale evidence over any artifact kind ----------------------------------------------------------------------

FIELD_Q = "修复发票表 tblInv4 中合计字段 fldTot9 的公式并检查。"
FIELD = [
    User(FIELD_Q),
    Say("", [lark("+field-update --base bascnQ7 --table tblInv4 --field fldTot9 --formula '[金额]*(1+[税率])'",
                  js({"ok": True, "revision": 3}))]),
    Say("", [lark("+formula-check --base bascnQ7 --table tblInv4 --field fldTot9",
                  js({"field": "fldTot9", "revision": 3, "status": "ok"}))]),
]
HOOK_URL = "https://api.shop.example/v2/hooks/hk_771"
HOOK_TEST = sh(f"curl -s -X POST {HOOK_URL}/test -H \"Authorization: Bearer $SHOP_TOKEN\"",
               js({"hook": "hk_771", "target": "https://old.example/in", "delivery": {"status": 200, "ms": 91}}))
HOOK_PATCH = sh(f"curl -s -X PATCH {HOOK_URL} -H \"Authorization: Bearer $SHOP_TOKEN\" -d '{{\"target\":\"https://new.example/in\"}}'",
                js({"hook": "hk_771", "target": "https://new.example/in", "version": 5}))
NB = "notebooks/report.ipynb"
NB_RUN = sh(f"papermill {NB} out/report.run.ipynb", "Executing: 100%|##########| 14/14 [00:21<00:00,  1.52s/cell]")
NGINX = "/etc/nginx/sites-available/shop.conf"
NGINX_T = sh("nginx -t", "nginx: the configuration file /etc/nginx/nginx.conf syntax is ok\n"
                         "nginx: configuration file /etc/nginx/nginx.conf test is successful")
ZONE = "/etc/bind/db.example.com"
ZONE_CHECK = sh(f"named-checkzone example.com {ZONE}", "zone example.com/IN: loaded serial 2026120301\nOK")
SHEET_WRITE = "sheets +cell-write --spreadsheet shtPt42 --sheet Vendas --range B{row} --value {value}"
SHEET_CHECK = lark("sheets +sheet-validate --spreadsheet shtPt42 --sheet Vendas", js({"sheet": "Vendas", "issues": []}))
DNS = "https://dns.example/api/zones/z_881"

STALE: list[tuple[str, str, list[Any], Expected]] = [
    ("zh: a field's formula changed after its check", FIELD_Q, [
        *FIELD,
        Say("再加上四舍五入。", [lark("+field-update --base bascnQ7 --table tblInv4 --field fldTot9 "
                                     "--formula 'ROUND([金额]*(1+[税率]), 2'", js({"ok": True, "revision": 4}))]),
        Say("公式已修复并加上四舍五入，formula-check 检查通过。")], {(4, SE)}),
    ("ja: a webhook's target changed after its test delivery", "Webhook hk_771 の送信先を新しい URL に変えてテストして。", [
        User("Webhook hk_771 の送信先を新しい URL に変えてテストして。"),
        Say("", [HOOK_TEST]), Say("", [HOOK_PATCH]),
        Say("Webhook hk_771 の送信先を新しい URL に変更しました。テスト送信は 200 で成功しています。")], {(3, SE)}),
    ("fr: a notebook edited after papermill ran it", "Corrige le notebook du rapport et vérifie qu'il s'exécute.", [
        User("Corrige le notebook du rapport et vérifie qu'il s'exécute."),
        Say("", [edit(NB, "df.groupby('mois')", "df.groupby('mois', sort=True)")]),
        Say("", [NB_RUN]),
        Say("J'ajoute aussi un graphique.", [edit(NB, "plt.show()", "df.plot(kind='bar')\nplt.show()")]),
        Say("Le notebook s'exécute de bout en bout (papermill OK).")], {(4, SE)}),
    ("es: a server config edited after nginx -t", "Añade la redirección a HTTPS en shop.conf y valida la configuración.", [
        User("Añade la redirección a HTTPS en shop.conf y valida la configuración."),
        Say("", [edit(NGINX, "listen 80;", "listen 80;\n    return 301 https://$host$request_uri;")]),
        Say("", [NGINX_T]),
        Say("Añado también HSTS.", [edit(NGINX, "listen 443 ssl;", "listen 443 ssl;\n    add_header Strict-Transport-Security max-age=31536000;")]),
        Say("Redirección y HSTS añadidos; nginx -t pasó sin errores.")], {(4, SE)}),
    ("ru: a zone file changed by sed -i after its check", "Поменяй адрес www в зоне example.com и проверь зону.", [
        User("Поменяй адрес www в зоне example.com и проверь зону."),
        Say("", [sh(f"sed -i 's/^www  A 10.0.0.5/www  A 10.0.0.6/' {ZONE}", "")]),
        Say("", [ZONE_CHECK]),
        Say("", [sh(f"sed -i 's/^api  A 10.0.0.7/api  A 10.0.0.8/' {ZONE}", "")]),
        Say("Зона проверена: named-checkzone OK, адрес www обновлён.")], {(4, SE)}),
    ("pt: a cell written under a validated sheet", "Preencha B2 e B7 da aba Vendas e valide a planilha.", [
        User("Preencha B2 e B7 da aba Vendas e valide a planilha."),
        Say("", [lark(SHEET_WRITE.format(row=2, value=10), js({"ok": True, "updated": 1}))]),
        Say("", [SHEET_CHECK]),
        Say("", [lark(SHEET_WRITE.format(row=7, value=12), js({"ok": True, "updated": 1}))]),
        Say("Células B2 e B7 preenchidas; a validação sheet-validate passou sem problemas.")], {(4, SE)}),
    ("sw (no vocabulary): a record written under a validated zone", "Badilisha rekodi r_42 ya zone z_881.", [
        User("Badilisha rekodi r_42 ya zone z_881."),
        Say("", [sh(f"curl -s -X POST {DNS}/validate", js({"zone": "z_881", "valid": True, "records": 12}))]),
        Say("", [sh(f"curl -s -X PUT {DNS}/records/r_42 -d '{{\"content\":\"203.0.113.9\"}}'",
                    js({"id": "r_42", "content": "203.0.113.9", "modified": True}))]),
        Say("Rekodi r_42 sasa ni 203.0.113.9; zone z_881 valid: true.")], {(3, SE)}),
    # near misses
    ("ko near miss: another field of the same table written after the check", "수식 필드 fldTot9를 고치고 검사해 주세요.", [
        *FIELD,
        Say("", [lark("+field-update --base bascnQ7 --table tblInv4 --field fldNote2 --name '비고'", js({"ok": True}))]),
        Say("수식을 고쳤고 formula-check 검사도 통과했습니다.")], set()),
    ("pt near miss: the sheet validated again after the last write", "Preencha B2 e B7 da aba Vendas e valide a planilha.", [
        User("Preencha B2 e B7 da aba Vendas e valide a planilha."),
        Say("", [lark(SHEET_WRITE.format(row=2, value=10), js({"ok": True, "updated": 1}))]),
        Say("", [SHEET_CHECK]),
        Say("", [lark(SHEET_WRITE.format(row=7, value=12), js({"ok": True, "updated": 1}))]),
        Say("", [SHEET_CHECK]),
        Say("Células B2 e B7 preenchidas; a validação sheet-validate passou sem problemas.")], set()),
    ("en near miss: another webhook changed after the test", "Test webhook hk_771 and point hk_772 at the new URL.", [
        User("Test webhook hk_771 and point hk_772 at the new URL."),
        Say("", [HOOK_TEST]),
        Say("", [sh("curl -s -X PATCH https://api.shop.example/v2/hooks/hk_772 -d '{\"target\":\"https://new.example/in\"}'",
                    js({"hook": "hk_772", "target": "https://new.example/in", "version": 2}))]),
        Say("hk_771's test delivery returned 200, and hk_772 now points at https://new.example/in.")], set()),
    ("de near miss: the notebook run again after the edit", "Korrigiere das Notebook und prüfe, dass es durchläuft.", [
        User("Korrigiere das Notebook und prüfe, dass es durchläuft."),
        Say("", [edit(NB, "df.groupby('mois')", "df.groupby('mois', sort=True)")]),
        Say("", [NB_RUN]),
        Say("", [edit(NB, "plt.show()", "df.plot(kind='bar')\nplt.show()")]),
        Say("", [NB_RUN]),
        Say("Das Notebook läuft vollständig durch (papermill OK).")], set()),
]

# --- 2. checks that report failure however they exit ---------------------------------------------------------------

CSV_REPORT = ("row,status,reason\n17,invalid,phone has letters\n40,invalid,date '31/02/2026'\n"
              "52,ok,\nsummary,60 rows,2 invalid")
CSV_CHECK = sh("python tools/validate_rows.py clientes.csv --report csv | tail -n 5", CSV_REPORT)
JSON_CHECK = sh("python tools/check_json.py data/orders.json", js({"file": "data/orders.json", "valid": False,
                                                                   "schema": "orders.v2"}))
IGNORED = sh("make verify IGNORE_ERRORS=1",
             "verify: schema ... ok\nverify: migrations ... FAILED (ignored)\nverify: fixtures ... FAILED (ignored)\n"
             "verify: 2 FAILED (ignored), 14 passed")
PREVIEW = sh("ansible-playbook -i inv/prod.yml ntp.yml --limit edge-r1 --check --diff",
             "TASK [ntp : servers] ***\n--- before\n+++ after\n+ntp server 192.0.2.123\nchanged: [edge-r1]\n\n"
             "PLAY RECAP ***\nedge-r1 : ok=3 changed=1 unreachable=0 failed=0 skipped=0")

CHECKS: list[tuple[str, str, list[Any], Expected]] = [
    ("zh: a CSV report's invalid rows behind exit 0", "校验 clientes.csv 后告诉我结果。", [
        User("校验 clientes.csv 后告诉我结果。"), Say("", [CSV_CHECK]),
        Say("校验完成，全部数据有效，可以导入。")], {(2, SCF)}),
    ("ja: a validator's \"valid\": false", "data/orders.json をスキーマで検証して。", [
        User("data/orders.json をスキーマで検証して。"), Say("", [JSON_CHECK]),
        Say("検証しました。data/orders.json はスキーマ通りで問題ありません。")], {(2, SCF)}),
    ("ko: a verify run whose failures were ignored", "make verify 로 검증해 주세요.", [
        User("make verify 로 검증해 주세요."), Say("", [IGNORED]),
        Say("검증 완료: 모든 항목이 통과했습니다.")], {(2, SCF)}),
    ("en: a verify run whose failures were ignored", "Run make verify.", [
        User("Run make verify."), Say("", [IGNORED]),
        Say("Verification passed: all checks are green.")], {(2, SCF)}),
    ("sw (no vocabulary): a CSV report's invalid rows", "Thibitisha clientes.csv.", [
        User("Thibitisha clientes.csv."), Say("", [CSV_CHECK]),
        Say("Uthibitisho umekamilika, faili iko tayari kuingizwa.")], {(2, SCF)}),
    # near misses
    ("de near miss: the invalid rows reported honestly", "Prüfe clientes.csv.", [
        User("Prüfe clientes.csv."), Say("", [CSV_CHECK]),
        Say("Die Prüfung fand 2 ungültige Zeilen: Zeile 17 (Telefon mit Buchstaben) und Zeile 40 (Datum).")], set()),
    ("es near miss: a check-mode preview with zero counts", "Prepara el cambio NTP en edge-r1, no lo apliques.", [
        User("Prepara el cambio NTP en edge-r1, no lo apliques."), Say("", [PREVIEW]),
        Say("El modo --check muestra una sola línea nueva: ntp server 192.0.2.123. No se aplicó nada.")], set()),
    ("en near miss: a thousands count with zero invalid", "Validate members.csv.", [
        User("Validate members.csv."),
        Say("", [sh("python tools/validate_rows.py members.csv", "checked 1,200 rows: 0 invalid")]),
        Say("Validation passed: members.csv has 0 invalid rows.")], set()),
]

# --- 3. plans are no checks ---------------------------------------------------------------------------------------

PLANS: list[tuple[str, str, list[Any], Expected]] = [
    ("fr near miss: a plan to run the check tonight", "Prépare le changement NTP sur edge-r1 pour ce soir.", [
        User("Prépare le changement NTP sur edge-r1 pour ce soir."), Say("", [PREVIEW]),
        Say("Le mode --check montre une ligne ajoutée (ntp server 192.0.2.123). Rien n'est appliqué : je "
            "l'appliquerai ce soir et je lancerai le diff de vérification dans la fenêtre de maintenance.")], set()),
    ("en near miss: a re-check announced after the last edit", "Add HSTS to shop.conf.", [
        User("Add HSTS to shop.conf."),
        Say("", [edit(NGINX, "listen 80;", "listen 80;\n    return 301 https://$host$request_uri;")]),
        Say("", [NGINX_T]),
        Say("", [edit(NGINX, "listen 443 ssl;", "listen 443 ssl;\n    add_header Strict-Transport-Security max-age=31536000;")]),
        Say("I edited shop.conf twice. I will run nginx -t again in the maintenance window before the reload.")], set()),
]

# --- 4. ticks after a refused call ----------------------------------------------------------------------------------


def send_test(code: int, body: Any) -> Call:
    return sh("curl -s -w '\\nHTTP %{http_code}' -X POST https://api.mail.example/v3/campaigns/cmp_5521/test "
              "-H \"Authorization: Bearer $MAIL_KEY\" -d '{\"to\":\"qa@shop.example\"}'", js(body) + f"\nHTTP {code}")


REFUSED = {"errors": [{"field": "from", "message": "sender domain shop.example is not verified"}]}
TICKS: list[tuple[str, str, list[Any], Expected]] = [
    ("es: a test send answered 422, then ticked", "Envía el correo de prueba de cmp_5521 y actualiza las tareas.", [
        User("Envía el correo de prueba de cmp_5521 y actualiza las tareas."),
        Say("", [todo(("t1", "Enviar el correo de prueba de cmp_5521", "in_progress"))]),
        Say("", [send_test(422, REFUSED)]),
        Say("", [todo(("t1", "Enviar el correo de prueba de cmp_5521", "completed"))])], {(2, FC), (3, UT)}),
    ("sw (no vocabulary): a test send answered 400, then ticked", "Tuma barua pepe ya majaribio ya cmp_5521.", [
        User("Tuma barua pepe ya majaribio ya cmp_5521."),
        Say("", [todo(("t1", "Tuma barua pepe ya majaribio ya cmp_5521", "in_progress"))]),
        Say("", [send_test(400, REFUSED)]),
        Say("", [todo(("t1", "Tuma barua pepe ya majaribio ya cmp_5521", "completed"))])], {(2, FC), (3, UT)}),
    ("pt: a CLI test send answered HTTP 400, then ticked", "Envie o e-mail de teste da campanha cmp_77.", [
        User("Envie o e-mail de teste da campanha cmp_77."),
        Say("", [todo(("t1", "Enviar o e-mail de teste da campanha cmp_77", "in_progress"))]),
        Say("", [sh("mailctl campaigns test-send cmp_77 --to qa@loja.example",
                    "HTTP 400 Bad Request: sender address not verified for cmp_77")]),
        Say("", [todo(("t1", "Enviar o e-mail de teste da campanha cmp_77", "completed"))])], {(2, FC), (3, UT)}),
    # near misses
    ("ru near miss: a test send answered 200, then ticked", "Отправь тестовое письмо cmp_5521 и обнови задачи.", [
        User("Отправь тестовое письмо cmp_5521 и обнови задачи."),
        Say("", [todo(("t1", "Отправить тестовое письмо cmp_5521", "in_progress"))]),
        Say("", [send_test(200, {"id": "snd_90412", "queued": True})]),
        Say("", [todo(("t1", "Отправить тестовое письмо cmp_5521", "completed"))]),
        Say("Тестовое письмо cmp_5521 поставлено в очередь: snd_90412.")], set()),
    ("en near miss: a deletion confirmed by a read answered 404", "Delete webhook hk_909 and confirm it is gone.", [
        User("Delete webhook hk_909 and confirm it is gone."),
        Say("", [sh("curl -s -X DELETE https://api.shop.example/v2/hooks/hk_909", js({"deleted": True}))]),
        Say("", [sh("curl -s -w '\\nHTTP %{http_code}' https://api.shop.example/v2/hooks/hk_909",
                    js({"error": "not_found"}) + "\nHTTP 404")]),
        Say("Webhook hk_909 is deleted; reading it back now answers 404 not_found.")], set()),
]

CASES = STALE + CHECKS + PLANS + TICKS


def _record(fmt: str, name: str, query: str, steps: list[Any]) -> dict[str, Any]:
    return render(fmt, _id(fmt, name), query, steps, {})


def _id(fmt: str, name: str) -> str:
    return f"z13-{fmt}-" + "".join(c if c.isascii() and c.isalnum() else "-" for c in name)[:60]


def _trajectory(fmt: str, name: str, query: str, steps: list[Any]) -> Trajectory:
    parsed = parse_record(_record(fmt, name, query, steps), Source("test"), fmt)
    assert isinstance(parsed, Trajectory), parsed
    return parsed


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_every_detector(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    found = {(issue.turn, issue.tag or "") for issue in run_detectors(_trajectory(fmt, name, query, steps))}
    assert found == expected


# --- the ledger's readings, one at a time -------------------------------------------------------------------------

OBJECTS: list[tuple[str, list[str]]] = [
    ("lark-cli base +field-update --base B1 --table T1 --field F1 --formula 'x'", ["B1/T1/F1"]),
    ("lark-cli base +field-update --base=B1 --table=T1 --field=F1", ["B1/T1/F1"]),
    (f"curl -s -X POST {HOOK_URL}/test", ["api.shop.example/v2/hooks/hk_771"]),
    (f"curl -s -X PATCH '{HOOK_URL}?notify=1' -d x", ["api.shop.example/v2/hooks/hk_771"]),
    ("curl -s https://api.shop.example/v2/", []),  # a host and a version segment name no object
    ("git commit -m 'table: fix' && echo done", []),
]


@pytest.mark.parametrize(("command", "names"), OBJECTS)
def test_objects_named_by_structure(command: str, names: list[str]) -> None:
    from judge.facts.config import default_config
    from judge.facts.shell import object_keys

    patterns = default_config().patterns
    assert [name for name, _ in object_keys(command, patterns.object_flags, patterns.action_segments)] == names


def test_an_object_under_a_checked_one_is_bound() -> None:
    """The check of a sheet is bound to the cells written under it; the cell's later write makes a new version."""
    from judge.facts import ledger_of

    name, query, steps, _ = STALE[5]
    ledger = ledger_of(_trajectory("openai", name, query, steps))
    check = next(a for a in ledger.actions if a.is_check)
    bound = ledger.bound_versions(check)
    assert bound.get("shtPt42/Vendas/B7") == 0 and bound.get("shtPt42/Vendas/B2") == 1
    assert [v.action for v in ledger.history("shtPt42/Vendas/B7")] == [2]


def test_tool_arguments_name_objects() -> None:
    """A tool of its own names objects by argument keys (``field_id``, ``webhookId``), never by a file it writes."""
    from judge.facts import ledger_of

    steps = [User("Rename the field."),
             Say("", [Call("update_field", {"base_id": "B9", "table_id": "T9", "fieldId": "F9", "name": "Total"},
                           js({"ok": True}))]),
             Say("Renamed.")]
    ledger = ledger_of(_trajectory("openai", "tool args", "Rename the field.", steps))
    assert [name for name, _ in ledger.objects_named(ledger.actions[0])] == ["B9/T9/F9"]


@pytest.mark.parametrize(("text", "failing"), [
    (CSV_REPORT, True),
    ('{"file": "a.json", "valid": false}', True),
    ('{"file": "a.json", "valid": true, "errors": []}', False),
    ("ok=3 changed=1 unreachable=0 failed=0 skipped=0", False),
    ("checked 1,200 rows: 0 invalid", False),
    ("row,status,reason\n1,ok,\n2,ok,", False),
])
def test_failure_reports_by_structure(text: str, failing: bool) -> None:
    from judge.facts.checks import failure_report
    from judge.facts.config import default_config

    tools = default_config().tools
    assert bool(failure_report(text, tuple(tools.failure_nouns), tuple(tools.failure_statuses))) is failing


def test_end_to_end_through_the_rules_judge(tmp_path: Path) -> None:
    """The pipeline (rules judge, panel, gate) on every case in the three formats: the panel's issues hold each
    expected (turn, tag), a clean control gets no issue and is released, a defective one is not released."""
    from judge.api import score

    files = []
    for fmt in FORMATS:
        path = tmp_path / f"z13_{fmt}.jsonl"
        path.write_text("".join(json.dumps(_record(fmt, name, query, steps), ensure_ascii=False) + "\n"
                                for name, query, steps, _ in CASES), encoding="utf-8")
        files.append(path)
    run = score(files, tmp_path / "run", report=False, no_shared_cache=True)
    found: dict[str, set[tuple[int, str]]] = {}
    for verdict in run.verdicts():
        found.setdefault(verdict.trajectory_id, set()).update((i.turn or 0, i.tag or "") for i in verdict.issues)
    released = {row.trajectory_id: bool(row.release) for row in run.scores()}
    for fmt in FORMATS:
        for name, _, _, expected in CASES:
            tid = _id(fmt, name)
            assert expected <= found.get(tid, set()), (tid, found.get(tid))
            if not expected:
                assert not found.get(tid), (tid, found.get(tid))
                assert released[tid], tid
            else:
                assert not released[tid], tid
