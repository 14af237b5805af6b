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

import json
import os
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge.importers import Source
from judge.importers.reader import parse_record
from judge.model import Trajectory, number_turns
from judge.repair import offline_edit
from judge.repair.textref import Detectors, get_detectors
from judge.repair.validators import swapped_words, validate_edit
from judge.testing.builders import issue


@pytest.fixture(scope="module")
def detectors() -> Detectors:
    return get_detectors()


def _bash(call_id: str, command: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function", "function": {"name": "Bash", "arguments": json.dumps({"command": command})}}]}


def _receipt(call_id: str, content: str, code: int) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": "Bash", "content": content, "exit_code": code}


def imported(query: str, failed: str, receipt: str, code: int, retry: str, retry_receipt: str, answer: str) -> Trajectory:
    """T1 fails, T2 runs the corrected call, T3 answers: an OpenAI chat record read by the real importer."""
    record = {"id": "z2", "query": query, "messages": [
        {"role": "system", "content": "You are a coding agent with a Bash tool."}, {"role": "user", "content": query},
        _bash("c1", failed), _receipt("c1", receipt, code), _bash("c2", retry), _receipt("c2", retry_receipt, 0),
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
