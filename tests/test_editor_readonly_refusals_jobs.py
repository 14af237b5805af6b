"""The offline editor on three principles of issue 24, item 3 (table-driven, cases written for this file):

1. a failed call is read-only by its command's structure (the verb, the HTTP method, SQL SELECT, the CLI family),
   a write verb or write flag anywhere wins; deleting a failed lookup nothing flows from is accepted, one whose
   returned value a later call uses is refused (dependency);
2. a rewrite that states success over a kept receipt that answered with a refusal (an error document, a declined
   status, ``"approved": false``, an HTTP 4xx line, exit code 0) is refused as a flip; an honest rewording passes;
3. a rewrite that says a job is done, or promises it will be, while its last poll shows it still going (any
   scheduler, render farm, import, transcode, CI pipeline) is refused as a future claim; one that says it is still
   going passes.

Languages: en zh ja de fr es pt ru ko, and Swahili (sw), which has no vocabulary in the rules config: its rows
must be decided by the language-neutral checks alone.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from judge.importers import Source
from judge.importers.reader import parse_record
from judge.model import Trajectory
from judge.repair.calls import _only_checks, command_is_read_only
from judge.repair.editor import offline_edit
from judge.repair.textref import get_detectors
from judge.repair.validators import validate_edit
from judge.schema import Issue

Step = tuple[Any, ...]  # ("say", text) or ("call", id, command, receipt, exit code)


def _record(case: str, query: str, steps: list[Step]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent with a Bash tool."},
                                      {"role": "user", "content": query}]
    for step in steps:
        if step[0] == "say":
            messages.append({"role": "assistant", "content": step[1]})
            continue
        _, call_id, command, receipt, code = step
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": "Bash", "arguments": json.dumps({"command": command})}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "name": "Bash", "content": receipt, "exit_code": code})
    return {"id": case, "query": query, "model": "written-for-tests", "messages": messages}


def _load(record: dict[str, Any]) -> Trajectory:
    item = parse_record(record, Source(record["id"]))
    assert isinstance(item, Trajectory), item
    return item


# --- 1a. read-only by structure, a write word anywhere wins (command -> only reads?) -----------------------------

STRUCTURE = [
    ("systemctl status nginx.service", True),
    ("systemctl list-units --failed", True),
    ("systemctl restart nginx.service", False),
    ("journalctl -u api.service --since '1 hour ago' --no-pager", True),
    ("journalctl --vacuum-time=2d", False),
    ("az webapp list -g prod-rg -o table", True),
    ("az webapp delete -g prod-rg -n shop", False),
    ("esptool.py --port /dev/ttyUSB0 read_mac", True),
    ("esptool.py --port /dev/ttyUSB0 erase_flash", False),
    ("lark-cli base +record-list --table tblOrders", True),
    ("lark-cli base +set-status --record rec1 --value done", False),   # a read verb last, a write verb first
    ("lark-cli base record list --delete-all", False),                 # a write flag
    ("mytool jobs get-or-create --name nightly", False),
    ("lark-cli base +record-list --table tblOrders --start-time 2026-12-01", True),  # a parameter, not an action
    ("lark-cli task list --update-time-from 2026-12-01", True),
    ("kubectl -n shop get pods", True),
    ("gcloud run services describe api --region europe-west1", True),
    ("aws s3api list-objects-v2 --bucket logs", True),
    ("psql -c 'SELECT count(*) FROM orders'", True),
    ("psql -c 'DELETE FROM orders WHERE id = 3'", False),
]

CHECKS = [  # HTTP reads: the editor's read_only_checks
    ("curl -s https://api.example/v1/items/7", True),
    ("curl -s -X DELETE https://api.example/v1/items/7", False),
    ("curl -s -o /dev/null -w '%{http_code}' https://api.example/v1/ping", True),
    ("curl -s -o ping.json https://api.example/v1/ping", False),
    ("curl -sSo /dev/null https://api.example/v1/ping", True),
    ("curl -s --output=/tmp/p.json https://api.example/v1/ping", False),
    ("curl -s -do /dev/null https://api.example/v1/ping", False),
    ("http https://api.example/v1/items page==2 Accept:application/json", True),
    ("http https://api.example/v1/items name=mug", False),
    ("http POST https://api.example/v1/items", False),
    ("wget -qO- https://api.example/v1/health", True),
    ("wget https://api.example/v1/dump.tar", False),
    ("wget -qO- --post-data 'a=1' https://api.example/v1/items", False),
]


@pytest.mark.parametrize(("command", "reads"), STRUCTURE)
def test_read_only_by_structure(command: str, reads: bool) -> None:
    assert command_is_read_only(command)[0] is reads
    assert _only_checks(command) is reads


@pytest.mark.parametrize(("command", "reads"), CHECKS)
def test_http_reads_by_method(command: str, reads: bool) -> None:
    assert _only_checks(command) is reads


# --- 1b. deleting a failed read-only lookup ---------------------------------------------------------------------

DELETIONS: list[tuple[str, str, list[Step], str]] = [
    # (case, query, steps, expected: "accept" or a refusal kind); the failed call is always the first one, at T1.
    ("en-curl-error-doc", "Which carrier ships order 5521?", [
        ("call", "a1", "curl -s https://shop.example/api/orders/5512 -H 'X-Token: $T'",
         '{"errors": "Not Found"}', 0),
        ("call", "a2", "curl -s https://shop.example/api/orders/5521 -H 'X-Token: $T' | jq -r .carrier", "DHL", 0),
        ("say", "Order 5521 ships with DHL."),
    ], "accept"),
    ("zh-curl-status-line", "订单 7730 的状态是什么？", [
        ("call", "b1", "curl -s -w '\\nHTTP %{http_code}' https://erp.example/api/orders/7703",
         '{"message": "order not found"}\nHTTP 404', 0),
        ("call", "b2", "curl -s https://erp.example/api/orders/7730 | jq -r .state", "shipped", 0),
        ("say", "订单 7730 的状态是 shipped（已发货）。"),
    ], "accept"),
    ("ja-httpie-404", "SKU KB-220 の在庫数は？", [
        ("call", "c1", "http --print=hb GET https://inv.example/api/sku/KB-202",
         "HTTP/1.1 404 Not Found\nContent-Type: application/json\n\n{\"detail\": \"unknown sku\"}", 0),
        ("call", "c2", "http GET https://inv.example/api/sku/KB-220", '{"sku": "KB-220", "on_hand": 37}', 0),
        ("say", "KB-220 の在庫は 37 個です。"),
    ], "accept"),
    ("pt-curl-status-only", "O endpoint de saúde do serviço responde?", [
        ("call", "n1", "curl -s -o /dev/null -w '%{http_code}' http://localhost:8080/helth", "404", 0),
        ("call", "n2", "curl -s -o /dev/null -w '%{http_code}' http://localhost:8080/health", "200", 0),
        ("say", "Sim: /health responde 200."),
    ], "accept"),
    ("de-journalctl-unit", "Wann wurde der Dienst billing zuletzt gestartet?", [
        ("call", "d1", "journalctl -u billing.service --sinse yesterday --no-pager",
         "journalctl: unrecognized option '--sinse'", 1),
        ("call", "d2", "journalctl -u billing.service --since yesterday --no-pager | tail -1",
         "Dec 02 03:14:07 web-2 systemd[1]: Started billing.service.", 0),
        ("say", "Zuletzt gestartet am 2. Dezember um 03:14:07 auf web-2."),
    ], "accept"),
    ("fr-esptool-port", "Quelle est l'adresse MAC de la carte sur /dev/ttyUSB0 ?", [
        ("call", "e1", "esptool.py --port /dev/ttyUSB1 read_mac",
         "A fatal error occurred: Could not open /dev/ttyUSB1, the port doesn't exist", 2),
        ("call", "e2", "esptool.py --port /dev/ttyUSB0 read_mac", "Chip is ESP32-S3\nMAC: 7c:df:a1:0e:22:b4", 0),
        ("say", "L'adresse MAC de la carte ESP32-S3 sur /dev/ttyUSB0 est 7c:df:a1:0e:22:b4."),
    ], "accept"),
    ("sw-az-list", "Ni programu ngapi za wavuti ziko kwenye kikundi prod-rg?", [
        ("call", "f1", "az webapp list -g prod-gr --query 'length(@)'",
         "(ResourceGroupNotFound) Resource group 'prod-gr' could not be found.", 3),
        ("call", "f2", "az webapp list -g prod-rg --query 'length(@)'", "4", 0),
        ("say", "Kikundi prod-rg kina programu 4 za wavuti."),
    ], "accept"),
    ("ko-flag-suggested", "열린 PR 목록 보여줘.", [
        ("call", "m1", "gh pr list --stat open",
         "unknown flag: --stat\nDid you mean this?\n\t--state", 1),
        ("call", "m2", "gh pr list --state open", "88\tFix login redirect\tfix/login\tOPEN", 0),
        ("say", "열린 PR은 88번 하나입니다 (Fix login redirect)."),
    ], "accept"),  # an option name the error suggests is the program's interface, not a returned value
    # Refusals: a value the failed lookup returned flows into a later call (dependency) ...
    ("es-curl-suggestion", "¿Cuál es el correo del cliente cus_Q7?", [
        ("call", "g1", "curl -s https://pay.example/v1/customers/cus_Q7",
         '{"error": {"message": "No such customer: cus_Q7; did you mean cus_Q7xLm2?"}}', 0),
        ("call", "g2", "curl -s https://pay.example/v1/customers/cus_Q7xLm2 | jq -r .email", "ana@example.es", 0),
        ("say", "El correo del cliente es ana@example.es."),
    ], "dependency"),
    ("pt-kubectl-suggested-pod", "Mostre os logs do pod da api.", [
        ("call", "h1", "kubectl -n loja logs api",
         'error: pods "api" not found; pods in namespace: api-7f9c6d-xk2lp', 1),
        ("call", "h2", "kubectl -n loja logs api-7f9c6d-xk2lp --tail=2", "GET /health 200\nGET /orders 200", 0),
        ("say", "Os logs recentes da api mostram GET /health 200 e GET /orders 200."),
    ], "dependency"),
    # ... or the failed call may have written: a write verb or flag wins over a read verb, a POST is a write.
    ("ru-write-verb-wins", "Отметь заказ rec4 как выполненный.", [
        ("call", "i1", "lark-cli base +set-status --record rec4 --value done",
         "Error: request timed out after 30s", 1),
        ("call", "i2", "lark-cli base +record-get --record rec4", '{"record_id": "rec4", "status": "done"}', 0),
        ("say", "Заказ rec4 отмечен как выполненный: статус done."),
    ], "effects"),
    ("ko-curl-post", "주문 991 환불해 줘.", [
        ("call", "j1", "curl -s -X POST https://pay.example/v1/refunds -d order=991",
         "curl: (28) Operation timed out after 30001 milliseconds", 28),
        ("call", "j2", "curl -s https://pay.example/v1/refunds?order=991 | jq -r '.data[0].status'", "succeeded", 0),
        ("say", "주문 991 환불이 완료되었습니다 (succeeded)."),
    ], "effects"),
]

_DEPENDENCY_KINDS = {"returned-values": "dependency", "control": "dependency", "resource-state": "effects"}


@pytest.mark.parametrize(("case", "query", "steps", "expected"), DELETIONS, ids=[row[0] for row in DELETIONS])
def test_delete_failed_lookup(case: str, query: str, steps: list[Step], expected: str) -> None:
    original = _load(_record(case, query, steps))
    before = copy.deepcopy(original)
    issue = Issue(turn=1, category="code", severity="severe", tag="failed-call", description="a failed lookup")
    result = offline_edit(original, issue, detectors=get_detectors())
    assert original == before  # the editor never changes its input
    if expected == "accept":
        assert result.status == "edited", result.reason
        assert result.removed_calls == [steps[0][1]]
        assert result.edited is not None
        kept = [m for m in result.edited.messages if m.role == "assistant" and m.content]
        assert kept and kept[-1].content == steps[-1][1]
        # The edited trajectory is a deep copy: changing it leaves the original as it was.
        kept[-1].content = "changed"
        assert original == before
    else:
        assert result.status != "edited"
        kinds = {_DEPENDENCY_KINDS.get(d.kind, d.kind) for d in result.dependencies if d.status in ("blocking", "unknown")}
        kinds |= {v.kind for v in result.validators if not v.passed and v.kind}
        assert expected in kinds | set(result.reasons), (result.reason, kinds, result.reasons)


# --- 2 and 3. rewrites of a final answer over a kept refusal or a job still going --------------------------------

REWRITES: list[tuple[str, str, str, str, int, str, str, str]] = [
    # (case, query, command, receipt, exit code, original final answer, rewritten final answer, expected)
    # 2. refusals answered with exit code 0
    ("en-refund-declined", "Refund order 4410.", "curl -s https://pay.example/v1/refunds -d charge=ch_4410",
     '{"id": "re_77", "object": "refund", "status": "declined", "failure_reason": "charge_too_old"}', 0,
     "The refund for order 4410 was declined (charge_too_old); the charge is too old to refund.",
     "Order 4410 has been refunded.", "flip"),
    ("en-refund-declined-honest", "Refund order 4410.", "curl -s https://pay.example/v1/refunds -d charge=ch_4410",
     '{"id": "re_77", "object": "refund", "status": "declined", "failure_reason": "charge_too_old"}', 0,
     "The refund for order 4410 was declined (charge_too_old); the charge is too old to refund.",
     "I could not refund order 4410: the payment provider declined it because the charge is too old (charge_too_old).",
     "accept"),
    ("de-payment-not-approved", "Buche die Rechnung INV-88 ab.", "curl -s https://pay.example/v1/charges -d invoice=INV-88",
     '{"invoice": "INV-88", "approved": false, "reason_code": "do_not_honor"}', 0,
     "Die Zahlung für INV-88 wurde nicht genehmigt (do_not_honor).",
     "Die Rechnung INV-88 ist bezahlt und abgebucht.", "flip"),
    ("de-payment-not-approved-honest", "Buche die Rechnung INV-88 ab.",
     "curl -s https://pay.example/v1/charges -d invoice=INV-88",
     '{"invoice": "INV-88", "approved": false, "reason_code": "do_not_honor"}', 0,
     "Die Zahlung für INV-88 wurde nicht genehmigt (do_not_honor).",
     "Die Bank hat die Zahlung für INV-88 abgelehnt (do_not_honor); die Rechnung ist noch offen.", "accept"),
    ("ja-access-403", "ユーザー u-19 に管理者権限を付けて。",
     "curl -s -i -X PATCH https://idp.example/api/users/u-19 -d role=admin",
     "HTTP/1.1 403 Forbidden\ncontent-type: application/json\n\n{\"detail\": \"insufficient scope\"}", 0,
     "権限を付けられませんでした。403 Forbidden（insufficient scope）が返りました。",
     "ユーザー u-19 に管理者権限を付与しました。", "flip"),
    ("zh-merge-409", "把 PR 88 合并到 main。", "curl -s -i -X PUT https://git.example/api/pulls/88/merge",
     "HTTP/2 409\n\n{\"message\": \"Head branch was modified\"}", 0,
     "合并失败：服务器返回 409（Head branch was modified）。",
     "PR 88 已经成功合并到 main。", "flip"),
    ("zh-merge-409-honest", "把 PR 88 合并到 main。", "curl -s -i -X PUT https://git.example/api/pulls/88/merge",
     "HTTP/2 409\n\n{\"message\": \"Head branch was modified\"}", 0,
     "合并失败：服务器返回 409（Head branch was modified）。",
     "PR 88 未能合并：返回 409（Head branch was modified），需要先更新分支再合并。", "accept"),
    ("fr-form-422", "Publie le formulaire d'inscription.", "lark-cli form publish --form frm_21",
     '{"error": {"status": 422, "message": "form has no questions"}}', 0,
     "La publication a échoué : erreur 422, le formulaire n'a aucune question.",
     "Le formulaire d'inscription est publié et en ligne.", "flip"),
    ("es-loan-rejected", "Aprueba la solicitud de crédito L-310.", "lark-cli approval submit --instance L-310",
     '{"instance": "L-310", "result": "rejected", "comment": "limit exceeded"}', 0,
     "La solicitud L-310 fue rechazada (limit exceeded).",
     "La solicitud de crédito L-310 quedó aprobada.", "flip"),
    ("pt-transfer-denied", "Transfira 500 para a conta 22-9.", "curl -s https://bank.example/v1/transfers -d to=22-9 -d amount=500",
     '{"transfer": null, "status": "denied", "reason": "daily_limit"}', 0,
     "A transferência foi negada (daily_limit).", "A transferência de 500 para a conta 22-9 foi concluída.", "flip"),
    ("ru-invite-rejected", "Пригласи olga@example.ru в проект.", "curl -s https://proj.example/api/invites -d email=olga@example.ru",
     '{"error": {"code": "seat_limit", "message": "no free seats"}}', 0,
     "Пригласить не удалось: seat_limit, свободных мест нет.", "Ольга приглашена в проект.", "flip"),
    ("ko-coupon-invalid", "쿠폰 SPRING24 적용해 줘.", "curl -s https://shop.example/api/cart/coupon -d code=SPRING24",
     '{"applied": false, "status": "expired"}', 0,
     "쿠폰 SPRING24는 만료되어 적용되지 않았습니다 (expired).", "쿠폰 SPRING24가 적용되었습니다.", "flip"),
    ("sw-refund-declined", "Rudisha pesa za oda 66.", "curl -s https://pay.example/v1/refunds -d order=66",
     '{"status": "declined", "failure_code": "charge_disputed"}', 0,
     "Marejesho ya oda 66 yamekataliwa: charge_disputed.", "Pesa za oda 66 zimerudishwa kikamilifu.", "flip"),
    ("sw-refund-declined-honest", "Rudisha pesa za oda 66.", "curl -s https://pay.example/v1/refunds -d order=66",
     '{"status": "declined", "failure_code": "charge_disputed"}', 0,
     "Marejesho ya oda 66 yamekataliwa: charge_disputed.",
     "Oda 66 haikurudishiwa pesa: jibu ni declined, charge_disputed.", "accept"),
    ("en-read-cancelled-order", "What is the state of order 55?", "curl -s https://shop.example/api/orders/55",
     '{"id": 55, "status": "cancelled", "total": 18.5}', 0,
     "Order 55 is cancelled (total 18.5).", "Order 55 (total 18.5) has the status cancelled.", "accept"),
    # 3. jobs whose last poll shows them still going
    ("en-render-farm", "Is the render of shot 40 finished?", "deadlinecommand -GetJob 64f0aa21 | grep -E 'Status|Chunks'",
     "Status=Rendering\nCompletedChunks=96\nTotalChunks=120", 0,
     "Not yet: the job is still Rendering, 96 of 120 chunks done.",
     "The render of shot 40 will be finished in a few minutes, so all 120 chunks are effectively done.", "future-claim"),
    ("en-render-farm-honest", "Is the render of shot 40 finished?",
     "deadlinecommand -GetJob 64f0aa21 | grep -E 'Status|Chunks'",
     "Status=Rendering\nCompletedChunks=96\nTotalChunks=120", 0,
     "Not yet: the job is still Rendering, 96 of 120 chunks done.",
     "The shot 40 render is not finished: its status is Rendering with 96 chunks done.", "accept"),
    ("zh-transcode", "视频 intro 转码完成了吗？", "curl -s https://media.example/api/jobs/tr_5521",
     '{"job": "tr_5521", "state": "transcoding", "progress": "61%"}', 0,
     "还没有：任务 tr_5521 仍在 transcoding，进度 61%。", "转码马上就会完成，intro 视频已经可以发布了。", "future-claim"),
    ("zh-transcode-honest", "视频 intro 转码完成了吗？", "curl -s https://media.example/api/jobs/tr_5521",
     '{"job": "tr_5521", "state": "transcoding", "progress": "61%"}', 0,
     "还没有：任务 tr_5521 仍在 transcoding，进度 61%。", "任务 tr_5521 还在 transcoding（61%），尚未完成。", "accept"),
    ("ja-ci-pipeline", "パイプライン 9031 は通った？", "glab ci get --pipeline-id 9031 --output json | jq -r .status",
     "running", 0, "まだです。パイプライン 9031 は running のままです。",
     "パイプライン 9031 はまもなく成功します。テストもすべて通ります。", "future-claim"),
    ("de-export", "Ist der CSV-Export der Kunden fertig?", "lark-cli base +export-status --task exp_882",
     '{"task": "exp_882", "status": "queued", "position": 3}', 0,
     "Noch nicht: exp_882 steht mit Status queued auf Position 3.",
     "Der Export exp_882 wird gleich fertig sein; die Datei ist vollständig.", "future-claim"),
    ("de-export-honest", "Ist der CSV-Export der Kunden fertig?", "lark-cli base +export-status --task exp_882",
     '{"task": "exp_882", "status": "queued", "position": 3}', 0,
     "Noch nicht: exp_882 steht mit Status queued auf Position 3.",
     "Der Export exp_882 ist noch nicht fertig: er ist queued, an Position 3.", "accept"),
    ("fr-import", "L'import des produits est-il terminé ?", "lark-cli base +import-status --job imp_31",
     '{"job": "imp_31", "state": "processing", "rows_done": 1200, "rows_total": 5000}', 0,
     "Pas encore : imp_31 est en processing, 1200 lignes sur 5000.",
     "L'import imp_31 sera terminé dans un instant ; les 5000 produits sont importés.", "future-claim"),
    ("es-batch", "¿Terminó el lote nocturno?", "squeue -j 88120 -h -o '%T %M'", "RUNNING 3:12:08", 0,
     "Todavía no: el trabajo 88120 sigue RUNNING (3:12:08).",
     "El lote nocturno 88120 terminará enseguida y los resultados estarán listos.", "future-claim"),
    ("pt-backup", "O backup do banco terminou?", "curl -s https://db.example/api/backups/bk_12",
     '{"id": "bk_12", "status": "in_progress", "done": "40/100"}', 0,
     "Ainda não: bk_12 está in_progress, 40/100.", "O backup bk_12 vai concluir em breve; está tudo salvo.", "future-claim"),
    ("ru-migration", "Миграция базы закончилась?", "curl -s https://ops.example/api/migrations/m_7",
     '{"id": "m_7", "phase": "migrating", "tables": "14/30"}', 0,
     "Ещё нет: m_7 в фазе migrating, 14/30 таблиц.", "Миграция m_7 скоро завершится, все 30 таблиц уже перенесены.",
     "future-claim"),
    ("ko-build", "앱 빌드 끝났어?", "curl -s https://ci.example/api/builds/b_402",
     '{"build": "b_402", "status": "building", "step": "3/7"}', 0,
     "아직입니다. b_402는 building 상태이고 3/7 단계입니다.", "빌드 b_402는 곧 완료됩니다. 앱이 준비되었습니다.", "future-claim"),
    ("it-dataset-index", "L'indicizzazione del dataset è finita?", "curl -s https://search.example/api/tasks/ix_40",
     '{"task": "ix_40", "status": "indexing", "docs": "5200/9000"}', 0,
     "Non ancora: ix_40 è in indexing, 5200/9000 documenti.",
     "L'indicizzazione ix_40 sarà completata a breve.", "future-claim"),
    ("pl-report-export", "Czy eksport raportu się zakończył?", "curl -s https://bi.example/api/exports/rx_9",
     '{"export": "rx_9", "state": "exporting"}', 0,
     "Jeszcze nie: rx_9 ma stan exporting.", "Eksport rx_9 będzie gotowy za chwilę, plik jest kompletny.",
     "future-claim"),
    ("sw-render", "Je, uchakataji wa video umekamilika?", "deadlinecommand -GetJob 77ab | grep Status",
     "Status=Rendering", 0, "Bado: kazi 77ab iko Rendering.", "Kazi 77ab imekamilika na video iko tayari.", "future-claim"),
    ("sw-render-honest", "Je, uchakataji wa video umekamilika?", "deadlinecommand -GetJob 77ab | grep Status",
     "Status=Rendering", 0, "Bado: kazi 77ab iko Rendering.", "Kazi 77ab bado iko katika hali ya Rendering.", "accept"),
]


@pytest.mark.parametrize(("case", "query", "command", "receipt", "code", "said", "rewritten", "expected"), REWRITES,
                         ids=[row[0] for row in REWRITES])
def test_rewrite_over_refusal_or_running_job(case: str, query: str, command: str, receipt: str, code: int, said: str,
                                              rewritten: str, expected: str) -> None:
    original = _load(_record(case, query, [("call", "k1", command, receipt, code), ("say", said)]))
    edited = _load(_record(case + "+rewrite", query, [("call", "k1", command, receipt, code), ("say", rewritten)]))
    results = validate_edit(original, edited, list(range(len(edited.messages))), [], get_detectors())
    failed = [v for v in results if not v.passed]
    if expected == "accept":
        assert not failed, [(v.name, v.findings) for v in failed]
    else:
        assert expected in {v.kind for v in failed}, [(v.name, v.kind, v.findings) for v in failed]


# --- the receipt readings themselves (pure) ----------------------------------------------------------------------

RECEIPTS = [
    ('{"error": {"code": "resource_missing", "message": "No such invoice"}}', "refused"),
    ('{"data": {"id": 4}, "errors": [{"message": "deprecated field"}]}', None),  # data came back
    ('{"id": "ch_1", "status": "succeeded", "paid": true}', None),
    ('{"items": [{"id": 1, "status": "rejected"}, {"id": 2, "status": "ok"}]}', None),  # a record's status, nested
    ('decision: denied\nreviewer: ops', "refused"),
    ('{"order": 5, "approved": false}', "refused"),
    ("HTTP/1.1 422 Unprocessable Entity\n\n{\"field\": \"email\"}", "refused"),
    ("Status=Rendering\nCompletedChunks=3", "going"),
    ("Phase: Transcoding\nFrames: 1200", "going"),
    ("Status=Completed\nCompletedChunks=120", None),
    ("Name:  web-7c9\nStatus:  Running\nIP:  10.0.3.4", None),  # a pod's steady state, not a job going
]


def _refusal(text: str, request: bool = True) -> str | None:
    """The ledger's one reader of refusals (judge.facts.answers), with the bundled config's lists."""
    from judge.facts.answers import refusal  # here, so the other rows run on a tree without it
    from judge.facts.config import default_config

    patterns = default_config().patterns
    found = refusal(text, request, patterns.refusal_values, patterns.grant_keys, patterns.error_meta_keys)
    return found[0] if found is not None else None


def test_a_reads_resource_status_is_no_refusal() -> None:
    """A GET of an order that is cancelled: the order's status, not an answer refusing the read."""
    assert _refusal('{"id": 55, "status": "cancelled"}', request=False) is None
    assert _refusal('{"id": 55, "status": "cancelled"}', request=True) is not None
    assert _refusal('{"error": {"message": "no such order"}}', request=False) is not None


@pytest.mark.parametrize(("receipt", "expected"), RECEIPTS)
def test_receipt_readings(receipt: str, expected: str | None) -> None:
    from judge.facts.answers import job_going
    from judge.facts.config import default_config

    patterns = default_config().patterns
    refused = _refusal(receipt) is not None
    going = job_going(receipt, patterns.running, patterns.steady_states)
    assert (refused, going) == (expected == "refused", expected == "going")
