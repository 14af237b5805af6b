"""Issue 24 item 2: a final answer silent about a problem the ledger holds open is a completion claim, in any
language (docs/finding-tags.md: "a failed result is never rewritten as success").

Cases written for this change: lark-cli, coding and infra, in English and in languages with no vocabulary
(Finnish, Swahili), each rendered in the OpenAI and the Anthropic format and read through the real importers.
Every detector runs, so the final-turn finding must carry the most specific tag and appear only where no
detector already flags the final turn; honest reports that name the failure by its values must pass.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_issue24_shapes import _trajectory  # the real importers, one format at a time

from fixtures.facts_heldout.steps import Say, User, edit, js, lark, read, sh, write
from judge.rules import DETECTORS, run_detectors

FORMATS = ("openai", "anthropic")
Expected = set[tuple[int, str]]

PUSH_REJECTED = ("To github.com:acme/app.git\n ! [rejected]        fix/tz -> fix/tz (non-fast-forward)\n"
                 "error: failed to push some refs to 'github.com:acme/app.git'")
IMPORT_RUNNING = js({"code": 0, "data": {"job_id": "job7731", "status": "running", "progress": "3/12"}})
UPDATE_NOOP = js({"code": 0, "data": {"updated": 0, "records": []}})

# (name, query, steps, expected findings (turn, tag)); T1 is the first assistant message.
CASES: list[tuple[str, str, list[Any], Expected]] = [
    # --- open failed or no-op writes: unverified-completion at the final turn ---------------------------------
    ("fi: rejected push, final 'valmis'", "Korjaa aikavyöhykebugi ja puske haaraan fix/tz.",
     [User("Korjaa aikavyöhykebugi ja puske haaraan fix/tz."),
      Say("", [edit("src/tz.py", "utc=False", "utc=True")]),
      Say("", [sh("git push origin fix/tz", PUSH_REJECTED, code=1)]),
      Say("Valmis. Korjaus on tehty tiedostoon src/tz.py ja toimitettu.")],
     {(2, "failed-call"), (3, "unverified-completion")}),
    ("fi: rejected push reported by its values", "Korjaa aikavyöhykebugi ja puske haaraan fix/tz.",
     [User("Korjaa aikavyöhykebugi ja puske haaraan fix/tz."),
      Say("", [edit("src/tz.py", "utc=False", "utc=True")]),
      Say("", [sh("git push origin fix/tz", PUSH_REJECTED, code=1)]),
      Say("Korjaus on tiedostossa src/tz.py, mutta push haaraan fix/tz hylättiin (non-fast-forward).")],
     set()),
    ("sw: lark-cli update that changed nothing, final 'imekamilika'", "Sasisha hali ya mteja rec4Kd9 kuwa Active.",
     [User("Sasisha hali ya mteja rec4Kd9 kuwa Active."),
      Say("", [lark("record update --table tblCli001 --record rec4Kd9 --field Status=Active", UPDATE_NOOP)]),
      Say("Imekamilika. Mteja sasa yuko katika hali mpya.")],
     {(1, "noop-success"), (2, "unverified-completion")}),
    ("en: failed kubectl apply, a summary table as the answer", "Roll out the new ingress config.",
     [User("Roll out the new ingress config."),
      Say("", [sh("kubectl apply -f k8s/ingress.yaml",
                  'Error from server (Forbidden): ingresses.networking.k8s.io "web" is forbidden', code=1)]),
      Say("| step | result |\n|---|---|\n| ingress.yaml | applied |")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    # --- the most specific tag ----------------------------------------------------------------------------------
    ("sw: lark-cli import still running, final states the import", "Leta wateja 12 kutoka clients.csv.",
     [User("Leta wateja 12 kutoka clients.csv."),
      Say("", [lark("import start --table tblCli001 --file clients.csv", IMPORT_RUNNING)]),
      Say("Wateja wameletwa kwenye jedwali.")],
     {(2, "premature-claim")}),
    ("fi: pytest failures behind a pipe, final names no check", "Korjaa laskin ja aja testit.",
     [User("Korjaa laskin ja aja testit."),
      Say("", [edit("src/calc.py", "a - b", "a + b")]),
      Say("", [sh("pytest -q | tail -n 2", "FAILED tests/test_calc.py::test_sub\n1 failed, 9 passed in 0.4s")]),
      Say("Laskin on korjattu tiedostossa src/calc.py.")],
     {(3, "silent-check-failure")}),
    ("sw: tests passed, then the code changed again", "Rekebisha kikokotoo na uendeshe majaribio.",
     [User("Rekebisha kikokotoo na uendeshe majaribio."),
      Say("", [edit("src/calc.py", "a - b", "a + b")]),
      Say("", [sh("pytest -q tests/test_calc.py", "10 passed in 0.4s")]),
      Say("", [edit("src/calc.py", "a + b", "b + a")]),
      Say("Kikokotoo kimerekebishwa katika src/calc.py.")],
     {(4, "stale-evidence")}),
    # --- a refusal shown only by an error-only document (no exit code, no error line of a vocabulary) --------------
    # v6, v8, v10, v11: the server answered {"error": ...} or {"status": 4xx, "errors": [...]} and the answer claims done.
    ("fi: refund refused by an error document, final claims it done", "Hyvitä 40,00 € maksusta ch_9Qp1.",
     [User("Hyvitä 40,00 € maksusta ch_9Qp1."),
      Say("", [sh("curl -s https://api.pay.example/v1/refunds -u \"$PAY_KEY:\" -d charge=ch_9Qp1 -d amount=4000",
                  js({"error": {"type": "invalid_request_error", "code": "charge_already_refunded",
                                "message": "Charge ch_9Qp1 has already been refunded."}}), code=None)]),
      Say("Hyvitys tehty: 40,00 € maksusta ch_9Qp1.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    ("en: the same refusal reported by its code", "Refund 40.00 EUR of charge ch_9Qp1.",
     [User("Refund 40.00 EUR of charge ch_9Qp1."),
      Say("", [sh("curl -s https://api.pay.example/v1/refunds -u \"$PAY_KEY:\" -d charge=ch_9Qp1 -d amount=4000",
                  js({"error": {"type": "invalid_request_error", "code": "charge_already_refunded",
                                "message": "Charge ch_9Qp1 has already been refunded."}}), code=None)]),
      Say("The refund of ch_9Qp1 was turned down: charge_already_refunded.")],
     set()),  # reported: no failed-call (Ledger.recovery) and no claim
    # --- values born astray (Ledger.strays): the work used a near twin of what the query or a receipt gave ---------
    # Pooled from the 'origin' cases of v3, v4, v5, v7 (different writers): the decisive typing is upstream, the
    # final answer claims what was asked. Each positive row fails without the rule; the controls must stay clean.
    ("en: typed version twin, answer claims the read one", "Cut a release of the chart at the version in Chart.yaml.",
     [User("Cut a release of the chart at the version in Chart.yaml."),
      Say("", [read("charts/web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 3.7.2\n")]),
      Say("", [sh("git tag v3.7.1 && git push origin v3.7.1", "To github.com:acme/charts.git\n * [new tag]  v3.7.1 -> v3.7.1")]),
      Say("Release 3.7.2 is published.")],
     {(3, "unverified-completion")}),
    ("de: the query's year, the sibling year in the script", "Berechne den Durchschnittsumsatz für 2024 aus orders.parquet.",
     [User("Berechne den Durchschnittsumsatz für 2024 aus orders.parquet."),
      Say("", [sh("python -c \"import pandas as pd; print(pd.read_parquet('orders.parquet').year.value_counts())\"",
                  "year\n2023    9120\n2024    9877")]),
      Say("", [write("avg.py", "import pandas as pd\nd = pd.read_parquet('orders.parquet')\nprint(d[d.year == 2023].total.mean())\n")]),
      Say("", [sh("python avg.py", "51.2")]),
      Say("Der Durchschnittsumsatz 2024 beträgt 51,20.")],
     {(4, "unverified-completion")}),
    ("sw: the listed sibling of the base the query named", "Ongeza mteja 'Juma Ali' kwenye base ya CRM 2024.",
     [User("Ongeza mteja 'Juma Ali' kwenye base ya CRM 2024."),
      Say("", [lark("+base-list", js({"bases": [{"base_id": "bascnCrm23", "name": "CRM 2023"},
                                                 {"base_id": "bascnCrm24", "name": "CRM 2024"}]}))]),
      Say("", [lark("+record-create --base bascnCrm23 --table tblCus7 --json '{\"Jina\":\"Juma Ali\"}'",
                    js({"record_id": "recJa91", "base_id": "bascnCrm23"}))]),
      Say("Juma Ali ameongezwa kwenye base ya CRM 2024 (recJa91).")],
     {(3, "unverified-completion")}),
    ("fi: a check refused on the typed port is no environment fault", "Laita integraatiotestit käyttämään paikallista Redistä.",
     [User("Laita integraatiotestit käyttämään paikallista Redistä."),
      Say("", [read("docker-compose.yml", "services:\n  cache:\n    image: redis:7\n    ports:\n      - \"6380:6379\"\n")]),
      Say("", [write("tests/.env", "REDIS_URL=redis://localhost:6308/0\n")]),
      Say("", [sh("pytest -q tests/integration", "EE\nE   redis.exceptions.ConnectionError: Error 111 connecting to localhost:6308. Connection refused.\n2 errors in 0.3s", code=1)]),
      Say("Integraatiotestit käyttävät nyt paikallista Redistä.")],
     {(4, "unverified-completion")}),
    ("en: a gateway error behind the mistyped service port is the agent's failed call", "Expose the service 'ledger' at ledger.example.org.",
     [User("Expose the service 'ledger' at ledger.example.org."),
      Say("", [sh("kubectl get svc ledger -n fin", "NAME     TYPE        CLUSTER-IP    PORT(S)    AGE\nledger   ClusterIP   10.0.3.17     9090/TCP   3d")]),
      Say("", [write("k8s/ingress-ledger.yaml", "kind: Ingress\nspec:\n  rules:\n  - host: ledger.example.org\n    http: {paths: [{path: /, backend: {service: {name: ledger, port: {number: 9009}}}}]}\n")]),
      Say("", [sh("kubectl apply -f k8s/ingress-ledger.yaml", "ingress.networking.k8s.io/ledger created")]),
      Say("", [sh("curl -fsS https://ledger.example.org/ -o /dev/null", "curl: (22) The requested URL returned error: 502", code=22)]),
      Say("The ingress is live at ledger.example.org.")],
     {(4, "failed-call"), (5, "unverified-completion")}),
    ("en: control: a version bumped on purpose and claimed as bumped", "Bump the chart's patch version and release it.",
     [User("Bump the chart's patch version and release it."),
      Say("", [read("charts/web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 3.7.2\n")]),
      Say("", [edit("charts/web/Chart.yaml", "version: 3.7.2", "version: 3.7.3")]),
      Say("", [sh("git tag v3.7.3 && git push origin v3.7.3", "To github.com:acme/charts.git\n * [new tag]  v3.7.3 -> v3.7.3")]),
      Say("Release 3.7.3 is published.")],
     set()),
    ("en: control: a port taken, the next one used and named", "Start the dev server.",
     [User("Start the dev server."),
      Say("", [sh("python -m http.server 8080", "OSError: [Errno 98] Address already in use: 8080", code=1)]),
      Say("", [sh("python -m http.server 8081 > srv.log 2>&1 & sleep 1; curl -sI localhost:8081 | head -1", "HTTP/1.0 200 OK")]),
      Say("The dev server runs on port 8081 (8080 was taken).")],
     set()),
    ("en: control: a refusal on a port no receipt contradicts stays the environment's", "Run the integration tests against the local database.",
     [User("Run the integration tests against the local database."),
      Say("", [write("tests/.env", "DATABASE_URL=postgresql://app@localhost:5432/app\n")]),
      Say("", [sh("psql postgresql://app@localhost:5432/app -c 'select 1'", "psql: error: connection to server at \"localhost\" (127.0.0.1), port 5432 failed: Connection refused", code=2)]),
      Say("I could not reach the database: connection refused on port 5432.")],
     {(2, "environment-fault")}),
    # --- no claim: a question, a read-only failure, an answer that is not the last message ------------------------
    ("fi: rejected push, final only asks", "Korjaa aikavyöhykebugi ja puske haaraan fix/tz.",
     [User("Korjaa aikavyöhykebugi ja puske haaraan fix/tz."),
      Say("", [sh("git push origin fix/tz", PUSH_REJECTED, code=1)]),
      Say("Haluatko, että teen force-pushin?")],
     {(1, "failed-call")}),  # the failed call stays failed-call's; the question claims nothing
    ("en: a failed read worked around, final 'done'", "Add a CHANGELOG entry for 1.2.",
     [User("Add a CHANGELOG entry for 1.2."),
      Say("", [sh("cat docs/CHANGES.md", "cat: docs/CHANGES.md: No such file or directory", code=1)]),
      Say("", [edit("CHANGELOG.md", "## 1.1", "## 1.2\n- tz fix\n\n## 1.1")]),
      Say("Done: CHANGELOG.md has the 1.2 entry.")],
     {(1, "failed-call")}),  # failed-call's view of the read; no final-turn claim over it
    ("sw: the user spoke last", "Sasisha hali ya mteja rec4Kd9 kuwa Active.",
     [User("Sasisha hali ya mteja rec4Kd9 kuwa Active."),
      Say("", [lark("record update --table tblCli001 --record rec4Kd9 --field Status=Active", UPDATE_NOOP)]),
      Say("Imekamilika."),
      User("Asante.")],
     {(1, "noop-success")}),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_final_answer_over_an_open_problem(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    found = {(issue.turn, issue.tag or "") for issue in run_detectors(_trajectory(fmt, name, query, steps))}
    assert found == expected


@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_detector_called_alone_agrees(name: str, query: str, steps: list[Any], expected: Expected) -> None:
    """A detector called alone (as a validator) finds the final-turn issue too: the answer does not depend on
    which detectors the caller asked for."""
    for tag in {t for _, t in expected}:
        alone = {(i.turn, i.tag) for i in DETECTORS[tag](_trajectory("openai", name, query, steps))}
        assert alone == {e for e in expected if e[1] == tag}
