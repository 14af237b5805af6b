"""One reader of refusals and error answers (issue 24, items 1 and 3), table-driven, cases written for this file.

1. The fact ledger reads what a receipt answered by its data behind a success flag, once: a refusal of a request
   (``"status": "declined"``, ``"approved": false``, an HTTP 4xx status line, an error-only document, a ``decision:
   rejected`` line), a read answered with an error only (``{"detail": ...}``, a 404 body with a documentation link,
   snmpget's ``No Such Instance``, a scheduler's ``Invalid job id``), and a job's state line (``Status=Encoding``).
   The action's status says so (``failed`` with :attr:`Action.refusal`, or ``running``); the offline editor reads
   that status (:func:`judge.repair.calls.call_sites`) and never reads the receipt again, so both agree.
2. Near misses stay ``ok``: ``rejected: 0``, ``"approved": true``, a read of a resource whose status is
   ``cancelled``, a cancel call answered ``"cancelled"``, a ping's ``{"message": "pong"}``, a pod's steady
   ``Status: Running``, a file read whose content is an error document.
3. A failed read-only lookup the agent then fixes is deleted by the editor (it was "no failed call to delete"
   before), and the rules judge finds nothing in it; a read wrapped in ``ssh host '...'``, ``kubectl exec --``,
   ``docker exec``, ``sudo``, ``timeout N``, ``env X=1`` is read by the wrapped command, a write verb anywhere wins.

Languages: en zh ja de fr es pt ru ko and Swahili (sw, no vocabulary in the rules config); formats: OpenAI,
Anthropic and ATIF records.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from judge.facts import ledger_of
from judge.importers import Source
from judge.importers.reader import parse_record
from judge.model import Trajectory
from judge.repair.calls import call_sites, command_is_read_only
from judge.repair.editor import offline_edit
from judge.rules import run_detectors
from judge.schema import Issue

Call = tuple[str, str, int]  # (command, receipt, exit code)


def _record(fmt: str, case: str, query: str, calls: list[Call], final: str) -> dict[str, Any]:
    """One trajectory in ``fmt`` (openai, anthropic, atif): the calls in order, each in its own turn, then
    ``final`` as the last assistant message."""
    system = "You are a coding agent with a Bash tool. Report only what tool results show."
    if fmt == "openai":
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}, {"role": "user", "content": query}]
        for k, (command, receipt, code) in enumerate(calls, 1):
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"{case}-{k}", "type": "function",
                 "function": {"name": "Bash", "arguments": json.dumps({"command": command})}}]})
            messages.append({"role": "tool", "tool_call_id": f"{case}-{k}", "content": receipt, "exit_code": code})
        messages.append({"role": "assistant", "content": final})
        return {"id": case, "query": query, "model": "written-for-tests", "messages": messages}
    if fmt == "anthropic":
        messages = [{"role": "user", "content": query}]
        for k, (command, receipt, code) in enumerate(calls, 1):
            messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": f"{case}-{k}", "name": "Bash", "input": {"command": command}}]})
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"{case}-{k}",
                                      "content": receipt if not code else f"Exit code {code}\n{receipt}"}
            if code:
                result["is_error"] = True
            messages.append({"role": "user", "content": [result]})
        messages.append({"role": "assistant", "content": [{"type": "text", "text": final}]})
        return {"id": case, "query": query, "model": "written-for-tests", "system": system, "messages": messages}
    steps: list[dict[str, Any]] = [{"step_id": 1, "source": "system", "message": system},
                                   {"step_id": 2, "source": "user", "message": query}]
    for k, (command, receipt, code) in enumerate(calls, 1):
        steps.append({"step_id": len(steps) + 1, "source": "agent", "message": "", "tool_calls": [
            {"tool_call_id": f"{case}-{k}", "function_name": "Bash", "arguments": {"command": command}}],
            "observation": {"results": [{"source_call_id": f"{case}-{k}",
                                         "content": receipt if not code else f"Exit code {code}\n{receipt}"}]}})
    steps.append({"step_id": len(steps) + 1, "source": "agent", "message": final})
    return {"schema_version": "ATIF-v1.4", "session_id": case,
            "agent": {"name": "tests", "version": "1", "model_name": "written-for-tests"}, "steps": steps}


def _load(fmt: str, case: str, query: str, calls: list[Call], final: str) -> Trajectory:
    item = parse_record(_record(fmt, case, query, calls, final), Source(case), fmt)
    assert isinstance(item, Trajectory), item
    return item


# --- 1 and 2: what the ledger reads, and the editor with it ----------------------------------------------------
# (case, format, query, command, receipt, final answer, expected status, refused)
RECEIPTS = [
    # refusals of a request behind exit 0
    ("en-charge-declined", "openai", "Charge the customer's card 42.00 EUR.",
     "curl -s -X POST https://pay.example/v1/charges -d amount=4200 -d source=tok_77",
     '{"id": "ch_88", "status": "declined", "decline_code": "do_not_honor"}',
     "The card was declined (do_not_honor); nothing was charged.", "failed", True),
    ("zh-leave-not-approved", "anthropic", "提交请假申请 5521。",
     "curl -s -X POST https://hr.example/api/leave/5521/submit",
     '{"request": 5521, "approved": false, "approver": "wang.l"}',
     "请假申请 5521 未被批准（approved: false）。", "failed", True),
    ("ja-stock-409", "atif", "SKU sku-31 の在庫を 4 に更新してください。",
     "curl -si -X PUT https://inv.example/api/items/sku-31 -d qty=4",
     'HTTP/1.1 409 Conflict\ncontent-type: application/json\n\n{"item": "sku-31", "version": 7}',
     "在庫の更新は 409 Conflict で拒否されました。", "failed", True),
    ("fr-campaign-rejected", "anthropic", "Envoie la campagne cmp_44.",
     "mailctl campaign send cmp_44", "decision: rejected\nreviewer: conformite",
     "La campagne cmp_44 a été rejetée par la revue de conformité.", "failed", True),
    ("sw-loan-denied", "atif", "Idhinisha maombi ya mkopo ap_3.",
     "curl -s -X POST https://loans.example/v2/applications/ap_3/submit",
     '{"application": "ap_3", "state": "denied", "reason_code": "R17"}',
     "Maombi ap_3 yamekataliwa (R17).", "failed", True),
    ("de-refund-error-document", "openai", "Erstatte die Zahlung ch_5.",
     "payctl refund create --charge ch_5",
     '{"error": {"type": "invalid_request", "message": "charge ch_5 already refunded"}, "request_id": "req_9"}',
     "Die Erstattung wurde abgelehnt: ch_5 war bereits erstattet.", "failed", None),  # the envelope reader's too
    # reads answered with an error only, no data (exit 0)
    ("es-snmp-no-such-instance", "atif", "¿Cuál es la descripción de la interfaz 99 del router 10.1.1.1?",
     "snmpget -v2c -c public 10.1.1.1 IF-MIB::ifDescr.99",
     "IF-MIB::ifDescr.99 = No Such Instance currently exists at this OID",
     "La interfaz 99 no existe en 10.1.1.1.", "failed", True),
    ("pt-squeue-over-ssh", "openai", "Qual é o estado do job 77120 no cluster?",
     "ssh login-2 'squeue -j 77120 -h -o %T'", "slurm_load_jobs error: Invalid job id specified",
     "O job 77120 não existe no cluster.", "failed", True),
    ("ru-pull-404-body", "openai", "Какой статус у pull request 9912?",
     "curl -s https://git.example/api/v3/repos/ops/infra/pulls/9912",
     '{"message": "Not Found", "documentation_url": "https://docs.git.example/rest/pulls"}',
     "Pull request 9912 не найден.", "failed", True),
    ("ko-rack-detail", "anthropic", "랙 4411의 위치를 알려주세요.",
     "curl -s https://dcim.example/api/dcim/racks/4411/ -H 'Authorization: Token $T'",
     '{"detail": "No Rack matches the given query."}', "랙 4411은 찾을 수 없습니다.", "failed", True),
    # a job's state line behind exit 0, read through a wrapper
    ("sw-encode-going", "openai", "Je, usimbaji wa video 77 umekamilika?",
     "kubectl exec -n media enc-0 -- cat /srv/jobs/77.state", "Status=Encoding\nFrames=1200/4000",
     "Usimbaji wa 77 bado uko katika hali ya Encoding.", "running", False),
    # near misses: ok
    ("en-rejected-zero", "openai", "Import leads.csv into the CRM.",
     "crmctl leads import --file leads.csv", "imported: 120\nrejected: 0",
     "Imported 120 leads, none rejected.", "ok", False),
    ("zh-approved-true", "anthropic", "提交报销单 88。", "curl -s -X POST https://hr.example/api/claims/88/submit",
     '{"claim": 88, "approved": true}', "报销单 88 已批准。", "ok", False),
    ("ja-read-cancelled-order", "atif", "注文 55 の状態を教えてください。", "curl -s https://shop.example/api/orders/55",
     '{"id": 55, "status": "cancelled", "total": 3200}', "注文 55 はキャンセル済みです。", "ok", False),
    ("de-cancel-answered-cancelled", "openai", "Storniere Bestellung 55.", "orderctl cancel --order 55",
     '{"order": 55, "status": "cancelled"}', "Bestellung 55 ist storniert.", "ok", False),
    ("fr-ping-message", "anthropic", "Le service répond-il ?", "curl -s http://localhost:8080/ping",
     '{"message": "pong"}', "Le service répond (pong).", "ok", False),
    ("es-pods-serving-steady", "atif", "¿En qué estado están los pods de api?", "meshctl pods list api",
     "NAME    READY   STATUS    RESTARTS   AGE\napi-0   1/1     Serving   0          3d\n"
     "api-1   1/1     Serving   0          3d", "Los pods api-0 y api-1 están en Serving.", "ok", False),
    ("pt-file-holds-error-document", "openai", "O que diz o último relatório salvo?", "cat reports/last.json",
     '{"error": {"message": "quota exceeded"}}', "O arquivo reports/last.json guarda um erro de cota.", "ok", False),
]


@pytest.mark.parametrize(("case", "fmt", "query", "command", "receipt", "final", "status", "refused"), RECEIPTS,
                         ids=[row[0] for row in RECEIPTS])
def test_the_ledger_reads_it_once_and_the_editor_agrees(case: str, fmt: str, query: str, command: str,
                                                        receipt: str, final: str, status: str,
                                                        refused: bool | None) -> None:
    trajectory = _load(fmt, case, query, [(command, receipt, 0)], final)
    action = ledger_of(trajectory).actions[0]
    assert action.status == status, (action.status, action.refusal)
    if refused is not None:
        assert bool(action.refusal) is refused, action.refusal
    site = call_sites(trajectory)[0]
    # The editor reads the ledger's status, never the receipt again: one answer.
    assert (site.status, site.refusal) == (action.status, action.refusal)
    assert site.failed is (status == "failed")


# --- 3: a failed lookup the agent then fixes: deleted offline, no finding ---------------------------------------
# (case, format, query, failed lookup, fixed lookup, final answer)
FIXED_LOOKUPS = [
    ("de-snmp-oid-fixed", "atif", "Wie heißt der Switch 10.9.0.2?",
     ("snmpget -v2c -c public 10.9.0.2 SNMPv2-MIB::sysName.7",
      "SNMPv2-MIB::sysName.7 = No Such Instance currently exists at this OID", 0),
     ("snmpget -v2c -c public 10.9.0.2 SNMPv2-MIB::sysName.0", "SNMPv2-MIB::sysName.0 = STRING: mad-acc-2", 0),
     "Der Systemname ist mad-acc-2."),
    ("pt-squeue-id-fixed", "openai", "Qual é o estado do job 88213?",
     ("ssh login-1 'squeue -j 88231 -h -o %T'", "slurm_load_jobs error: Invalid job id specified", 0),
     ("ssh login-1 'sacct -j 88213 -X -n -o JobID,State'", "88213        COMPLETED", 0),
     "O job 88213 terminou: COMPLETED."),
    ("ko-dcim-path-fixed", "anthropic", "사이트 sel-3의 랙 수는?",
     ("curl -s 'https://dcim.example/api/dcim/rack/?site=sel-3'", '{"detail": "Not found."}', 0),
     ("curl -s 'https://dcim.example/api/dcim/racks/?site=sel-3' | jq .count", "14", 0),
     "사이트 sel-3에는 랙이 14개 있습니다."),
    ("ru-repo-name-fixed", "openai", "Сколько открытых issue в репозитории ops/infra?",
     ("curl -s https://git.example/api/v3/repos/ops/infr/issues?state=open",
      '{"message": "Not Found", "documentation_url": "https://docs.git.example/rest/issues"}', 0),
     ("curl -s 'https://git.example/api/v3/repos/ops/infra/issues?state=open' | jq length", "6", 0),
     "В ops/infra 6 открытых issue."),
    ("es-docker-exec-fixed", "openai", "¿Qué versión tiene la base de datos del contenedor db?",
     ("docker exec db psql -U app -tc 'select versoin()'",
      'ERROR:  function versoin() does not exist\nLINE 1: select versoin()', 1),
     ("docker exec db psql -U app -tc 'select version()'", " PostgreSQL 16.4 on x86_64-pc-linux-gnu", 0),
     "La base de datos usa PostgreSQL 16.4."),
]


@pytest.mark.parametrize(("case", "fmt", "query", "failed", "fixed", "final"), FIXED_LOOKUPS,
                         ids=[row[0] for row in FIXED_LOOKUPS])
def test_a_failed_lookup_the_agent_fixed_is_deleted_and_no_finding(case: str, fmt: str, query: str, failed: Call,
                                                                  fixed: Call, final: str) -> None:
    trajectory = _load(fmt, case, query, [failed, fixed], final)
    first = ledger_of(trajectory).actions[0]
    assert first.status == "failed", (first.status, first.refusal)
    assert not run_detectors(trajectory), [f"{i.turn} {i.tag}" for i in run_detectors(trajectory)]
    result = offline_edit(trajectory, Issue(turn=1, category="code", severity="minor",
                                            description="The first lookup failed.", tag="failed-call"))
    assert result.status == "edited", result.reason
    assert result.removed_calls == [f"{case}-1"], result.removed_calls


# --- 3: wrapped commands read by the wrapped command's structure ----------------------------------------------
WRAPPED = [
    ("ssh r1 'show interfaces ge-0/0/3 terse'", True),
    ("ssh -p 2222 -i ~/.ssh/ops r1 snmpwalk -v2c -c public localhost IF-MIB::ifOperStatus", True),
    ("ssh r1 'rm -rf /var/tmp/cache'", False),
    ("ssh r1 'cat /etc/hosts > /tmp/hosts.bak'", False),  # the redirect inside the quotes runs remotely
    ("kubectl exec -n shop web-0 -- cat /etc/nginx/nginx.conf", True),
    ("kubectl exec -n shop web-0 -- sh -c 'ls /srv && rm /srv/old.log'", False),
    ("docker exec -it -e PGUSER=app db psql -c 'select count(*) from orders'", True),
    ("docker exec db psql -c 'delete from orders where id = 7'", False),
    ("sudo -u postgres cat /var/lib/postgresql/16/main/postgresql.auto.conf", True),
    ("sudo systemctl restart nginx", False),
    ("timeout 20 kubectl get pods -n shop", True),
    ("timeout -s KILL 20 kubectl delete pod web-0 -n shop", False),
    ("env KUBECONFIG=/tmp/kc kubectl get nodes", True),
    ("env KUBECONFIG=/tmp/kc kubectl drain node-3", False),
    ("sudo timeout 10 ssh r2 'show bgp summary'", True),
    ("ssh r1", False),  # no command: an interactive shell
]


@pytest.mark.parametrize(("command", "reads"), WRAPPED, ids=[row[0] for row in WRAPPED])
def test_a_wrapped_command_is_read_by_what_it_runs(command: str, reads: bool) -> None:
    assert command_is_read_only(command)[0] is reads
    trajectory = _load("openai", "wrapped", "Check it.", [(command, "ok", 0)], "Checked.")
    assert ledger_of(trajectory).actions[0].read_only is reads


# --- a read's answer that holds no data, only an error (language-neutral: keys and values) -----------------------
ERROR_ONLY = [
    ('{"detail": "Nicht gefunden."}', True),
    ('{"status": 404, "message": "нет такой стойки"}', True),
    ('{"code": "410", "msg": "已删除"}', True),
    ('{"message": "Not Found", "documentation_url": "https://docs.example/rest"}', True),
    ('{"message": "pong"}', False),                               # a ping's answer
    ('{"status": "ok", "message": "pong"}', False),
    ('{"code": 0, "message": "success"}', False),                 # an API's success code
    ('{"title": "Standup", "message": "hoje às 10h"}', False),    # a record, not an error
    ('{"id": 7, "detail": "rack in row B"}', False),              # data beside it
]


@pytest.mark.parametrize(("text", "expected"), ERROR_ONLY, ids=[row[0] for row in ERROR_ONLY])
def test_error_only_answer(text: str, expected: bool) -> None:
    from judge.facts.answers import error_only_answer
    from judge.facts.config import default_config

    patterns = default_config().patterns
    assert error_only_answer(text, patterns.error_meta_keys, patterns.error_only_keys,
                             patterns.error_envelope["failed_states"]) is expected


# --- one status-line reader: the judge's refused request (a test send answered 400) and the answers' refusal -----
# (text, the refused status line it shows)
STATUS_LINES = [
    ('{"errors": ["bad address"]}\nHTTP 400', "HTTP 400"),              # curl -w's last line
    ("HTTP/1.1 409 Conflict\ncontent-type: application/json\n\n{}", "HTTP/1.1 409 Conflict"),  # curl -i
    ('{"id": 3}\nhttp_code=422', "http_code=422"),
    ('{"id": 3}\nHTTP 201', ""),                                      # a success
    ("GET /a 200\nHTTP 404 /favicon.ico\nGET /b 200", ""),            # a log line in the middle: another request's
    ("", ""),
]


@pytest.mark.parametrize(("text", "line"), STATUS_LINES, ids=[f"row{n}" for n in range(len(STATUS_LINES))])
def test_one_reader_of_a_response_status_line(text: str, line: str) -> None:
    from judge.facts.answers import http_client_status, refused_status_line

    assert refused_status_line(text) == line
    assert (http_client_status(text) is not None) is bool(line)


# A read answered "not found" is the read-back of a deletion when an earlier call deleted that object (any client:
# an HTTP DELETE, a CLI's delete verb); of an object nobody deleted it is a failed lookup.
DELETION_READBACKS = [
    ("en-http-delete-then-404", "curl -s -X DELETE https://api.shop.example/v2/hooks/hk_5", '{"deleted": true}',
     "curl -s -w '\\nHTTP %{http_code}' https://api.shop.example/v2/hooks/hk_5", '{"error": "not_found"}\nHTTP 404',
     "ok"),
    ("ja-cli-delete-then-not-found", "lark-cli base record delete --table tblA --record rec9", '{"code": 0}',
     "lark-cli base record get --table tblA --record rec9", '{"error": {"code": "NOT_FOUND"}}', "ok"),
    ("en-refused-delete-then-404", "curl -s -X DELETE https://api.shop.example/v2/hooks/hk_5",
     '{"error": "forbidden"}\nHTTP 403',
     "curl -s -w '\\nHTTP %{http_code}' https://api.shop.example/v2/hooks/hk_5", '{"error": "not_found"}\nHTTP 404',
     "failed"),                                                      # a refused deletion confirms nothing
    ("en-other-hook-404", "curl -s -X DELETE https://api.shop.example/v2/hooks/hk_5", '{"deleted": true}',
     "curl -s -w '\\nHTTP %{http_code}' https://api.shop.example/v2/hooks/hk_6", '{"error": "not_found"}\nHTTP 404',
     "failed"),
]


@pytest.mark.parametrize(("case", "delete", "deleted", "read", "answer", "status"), DELETION_READBACKS,
                         ids=[row[0] for row in DELETION_READBACKS])
def test_a_deletions_read_back_answered_not_found_is_no_failure(case: str, delete: str, deleted: str, read: str,
                                                                answer: str, status: str) -> None:
    trajectory = _load("openai", case, "Delete it and confirm.", [(delete, deleted, 0), (read, answer, 0)],
                       "Deleted; the read-back answers not found.")
    action = ledger_of(trajectory).actions[1]
    assert action.status == status, action.refusal
