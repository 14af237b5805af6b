"""Issue 24 item 3 (Z2): failed calls whose program refused one of their arguments, and rewrites that swap a value.

Cases written here (not from any held-out set), in several languages and for programs no vocabulary lists (php
artisan, rake, python -c, psql -f, helm, lark-cli), read through the real importer (OpenAI chat records). Table-driven.

- a failed call whose short receipt names an argument that a later successful run of the same program dropped was
  refused before it ran: deleting it is safe; output of work before the refusal, a value the call did not give, a
  position in a file that ran (``migrate.sql:12:``), or a retry that kept the named argument keep it;
- a rewrite that swaps a few value-like words of a kept sentence (a version, a path, a number's month) states a value
  no receipt shows: ``unsupported-final``; a rewording is not a swap.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge.facts.answers import client_error_document
from judge.importers import Source
from judge.importers.reader import parse_record
from judge.model import Trajectory, number_turns
from judge.repair import offline_edit
from judge.repair.editor import refusal_order
from judge.repair.textref import Detectors
from judge.repair.validators import swapped_words, validate_edit
from judge.testing.builders import bash_call, bash_chat, bash_receipt, issue


def imported(query: str, failed: str, receipt: str, code: int, retry: str, retry_receipt: str, answer: str) -> Trajectory:
    """T1 fails, T2 runs the corrected call, T3 answers: an OpenAI chat record read by the real importer."""
    record = {"id": "z2", "query": query, "messages": [
        {"role": "system", "content": "You are a coding agent with a Bash tool."}, {"role": "user", "content": query},
        bash_call("c1", failed), bash_receipt("c1", receipt, code), bash_call("c2", retry), bash_receipt("c2", retry_receipt, 0),
        {"role": "assistant", "content": answer}]}
    item = parse_record(record, Source("test_editor_refused_arguments"))
    assert isinstance(item, Trajectory), item
    return item


# (case, trajectory, deletable)
DELETIONS: list[tuple[str, Trajectory, bool]] = [
    ("ja-artisan-command", imported("ルート一覧を見せて。", "php artisan route:lst",
                                    'Command "route:lst" is not defined.', 1, "php artisan route:list",
                                    "GET|HEAD  api/orders ... OrderController@index", "api/orders の GET ルートがあります。"),
     True),
    ("es-sphinx-builder", imported("Construye la documentación.", "sphinx-build -b htmll docs _build",
                                   "Sphinx error:\nBuilder name htmll not registered", 2,
                                   "sphinx-build -b html docs _build", "build succeeded.",
                                   "Documentación construida en _build."), True),
    # code the program ran: an error naming a piece of it is the code's ("form" of a SQL delete)
    ("sw-python-code-piece", imported("Badilisha jina la faili.", "python3 -c 'import os; os.rename(\"a.csv\", \"b.csv\"); import yamll'",
                                      "ModuleNotFoundError: No module named 'yamll'", 1,
                                      "python3 -c 'import yaml'", "", "Imefanyika."), False),
    ("pt-rake-task-header-first", imported("Qual é a versão do schema?", "bundle exec rake db:verison",
                                           "rake aborted!\nDon't know how to build task 'db:verison'", 1,
                                           "bundle exec rake db:version", "Current version: 20261130120000",
                                           "O schema está na versão 20261130120000."), True),
    # refusals: work shown before or beside the refusal, a position in a file that ran, the named argument kept
    ("nl-view-created-then-refused", imported(
        "Maak een kalenderweergave.", "lark-cli base +view-create --base bascnQ1 --table tblQ2 --name Agenda --date Eindd",
        "view created: vewQ7 (grid)\nError: field 'Eindd' not found", 1,
        "lark-cli base +view-create --base bascnQ1 --table tblQ2 --name Agenda2 --date Einddatum",
        '{"view_id": "vewQ8"}', "Weergave vewQ8 gemaakt."), False),
    ("en-warning-value-shown", imported(
        "Create the Pipeline view.", "lark-cli base +view-create --base bascnQ1 --table tblQ2 --name Pipeline --sort Stge",
        "Warning: sort field 'Stge' not found; view created without sort\n{\"view_id\": \"vewQ5\"}", 1,
        "lark-cli base +view-create --base bascnQ1 --table tblQ2 --name Pipeline --sort Stage",
        '{"view_id": "vewQ6"}', "Pipeline view created (vewQ6)."), False),
    ("de-psql-file-position", imported("Spiel die Migration ein.", "psql -d shop -f migrate_0042.sql",
                                       'psql:migrate_0042.sql:12: ERROR:  column "pricee" does not exist', 3,
                                       "psql -d shop -f migrate_0042_fix.sql", "ALTER TABLE", "Migration eingespielt."),
     False),
    ("fr-helm-release-kept", imported("Mets à jour shop.", "helm upgrade shop ./chart -n prod",
                                      "Error: UPGRADE FAILED: release shop failed", 1,
                                      "helm upgrade shop ./chart -n prod --timeout 10m", "Release \"shop\" has been upgraded.",
                                      "shop est à jour."), False),
    # a read the server refused with a JSON error body (exit 0), and a POST with such a body
    ("fi-get-404-json", imported("Mikä on artikkelin otsikko?", "curl -s https://cms.esim.fi/api/articles/talvi-alee",
                                 '{"error": {"status": 404, "message": "Not Found"}}', 0,
                                 "curl -s https://cms.esim.fi/api/articles/talvi-ale", '{"id": 12, "title": "Talviale"}',
                                 "Otsikko on Talviale (id 12)."), True),
    # a POST is no read: its error body proves nothing about what the server stored
    ("it-post-error-json", imported("Pubblica l'articolo.", "curl -s -X POST https://cms.esim.it/api/articles -d @a.json",
                                    '{"id": 4411, "error": {"status": 409, "message": "publish failed"}}', 0,
                                    "curl -s -X POST https://cms.esim.it/api/articles -d @b.json", '{"id": 4412}',
                                    "Articolo pubblicato (4412)."), False),
]


@pytest.mark.parametrize(("case", "original", "deletable"), DELETIONS, ids=[row[0] for row in DELETIONS])
def test_a_call_refused_for_an_argument_the_retry_dropped_is_deletable(case: str, original: Trajectory, deletable: bool,
                                                                      detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert (result.status == "edited") is deletable, (case, result.status, result.reason)


# (case, original answer, rewritten answer, swapped value-like words)
SWAPS: list[tuple[str, str, str, list[str]]] = [
    ("ms-month", "Sijil tamat pada 3 Jun 2027.", "Sijil tamat pada 3 Julai 2027.", ["Julai"]),
    ("fr-version", "La version v3.1.0 est publiée.", "La version v3.1.1 est publiée.", ["v3.1.1"]),
    ("es-path", "El informe está en out/report/final.pdf.", "El informe está en out/prod/final.pdf.", ["out/prod/final.pdf"]),
    ("en-rewording", "I first checked the flag, then ran it.", "I checked the flag again, then ran it.", []),
    ("ja-clause", "名前を直しました。 12 件です。", "確認しました。 12 件です。", []),
    ("de-cut-only", "Nach dem Tippfehler lief der Build: 212 kB.", "Der Build lief: 212 kB.", []),
    ("tr-suffix-only", "30 testten 29 u geçti, 1 i kaldı.", "30 testten 29'u geçti, 1'i başarısız.", []),
    ("tr-number-changed", "30 testten 29'u geçti.", "30 testten 30'u geçti.", ["30'u"]),
    ("en-unit", "The bundle is 212 kB.", "The bundle is 212 MB.", ["MB"]),
]


@pytest.mark.parametrize(("case", "before", "after", "words"), SWAPS, ids=[row[0] for row in SWAPS])
def test_swapped_words(case: str, before: str, after: str, words: list[str]) -> None:
    assert swapped_words(before, after) == words, case


def test_a_rewrite_that_swaps_the_answers_month_is_unsupported(detectors: Detectors) -> None:
    original = imported("Bila sijil tamat?", "openssl x509 -in ap.pem -noout -enddate",
                        "Could not read certificate from ap.pem", 1, "openssl x509 -in api.pem -noout -enddate",
                        "notAfter=Jun  3 12:00:00 2027 GMT", "Sijil tamat pada 3 Jun 2027.")
    edited = original.model_copy(deep=True)
    edited.messages = [m for m in edited.messages if not (m.role == "tool" and m.receipt and m.receipt.call_id == "c1")]
    edited.messages = [m for m in edited.messages if not any(c.id == "c1" for c in m.tool_calls)]
    edited.messages[-1].content = "Sijil tamat pada 3 Julai 2027."
    number_turns(edited.messages)
    message_map = [i for i in range(len(original.messages)) if i not in (2, 3)]
    results = validate_edit(original, edited, message_map, ["c1"], detectors)
    failed = {v.kind for v in results if not v.passed}
    assert "unsupported-final" in failed, [(v.name, v.findings) for v in results if not v.passed]
    assert "side-effects" not in failed and "effects" not in failed


# --- the reason of a refused deletion: every one that applies, most specific first --------------------------------


def chat(query: str, steps: list[tuple[str, str, int] | str]) -> Trajectory:
    """Bash calls and assistant texts, each text its own message."""
    return bash_chat(query, steps, record_id="z2r")


# (case, trajectory, the first reason, reasons that must be among them)
REFUSALS: list[tuple[str, Trajectory, str, set[str]]] = [
    # a state-changing call failed, but its receipt returned an id a later call uses
    ("en-returned-id-used", chat("Create the Leads table and add a view.", [
        ("lark-cli base +table-create --base bascnZ1 --name Leads --json @leads.json",
         '{"table_id": "tblLd77", "warning": "index build failed"}', 1),
        ("lark-cli base +view-create --base bascnZ1 --table tblLd77 --name Open", '{"view_id": "vewOp1"}', 0),
        "Leads (tblLd77) has the Open view (vewOp1)."]), "dependency", {"dependency", "side-effects"}),
    # a state-changing check whose receipt alone holds the numbers the final answer gives
    ("ko-final-only-receipt", chat("테스트와 린트를 돌려 주세요.", [
        ("nox -s tests lint", "tests: 212 passed\nlint: failed (3 errors)", 1),
        "테스트 212개 통과, 린트는 오류 3개로 실패했습니다."]), "unsupported-final", {"unsupported-final", "side-effects"}),
    # nothing but the state: the receipt shows neither effects nor their absence
    ("de-state-only", chat("Spiel das Backup ein.", [
        ("pg_restore -d shop backup.dump", "pg_restore: error: could not execute query", 1),
        ("pg_restore -d shop --clean backup.dump", "", 0),
        "Das Backup ist eingespielt."]), "side-effects", {"side-effects"}),
]


@pytest.mark.parametrize(("case", "original", "first", "among"), REFUSALS, ids=[row[0] for row in REFUSALS])
def test_a_refused_deletion_names_the_most_specific_reason_first(case: str, original: Trajectory, first: str,
                                                                 among: set[str], detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert result.status != "edited", (case, result.reason)
    assert result.reasons[:1] == [first], (case, result.reasons, result.reason)
    assert among <= set(result.reasons), (case, result.reasons)


@pytest.mark.parametrize(("kinds", "ordered"), [
    (["side-effects", "dependency"], ["dependency", "side-effects"]),
    (["side-effects", "unsupported-final", "effects"], ["unsupported-final", "effects", "side-effects"]),
    (["reference", "dependency", "reference"], ["dependency", "reference"]),
    (["rules-judge", "order"], ["order", "rules-judge"]),
])
def test_refusal_order(kinds: list[str], ordered: list[str]) -> None:
    assert refusal_order(kinds) == ordered


# --- a read the server refused with a JSON error body (exit 0) -----------------------------------------------------


@pytest.mark.parametrize(("text", "refused"), [
    ('{"error": {"status": 404, "message": "Not Found"}}', True),
    ('{"errors": [{"code": "422", "detail": "bad filter"}]}', True),
    ('{"error": "timeout", "status": 504}', False),  # a server fault, not a refusal of the request
    ('{"status": 404}', False),  # no error reported: a field of the data
    ('{"id": 77, "title": "Talvi"}', False),
    ("HTTP/1.1 404 Not Found", False),
])
def test_client_error_document(text: str, refused: bool) -> None:
    assert client_error_document(text) is refused
