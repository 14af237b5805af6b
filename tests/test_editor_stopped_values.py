"""Issue 24 item 3 (W1): the offline editor on failures that stopped before any effect, and rewrites held against
the receipts by their values. Cases written here (several languages, one with no vocabulary at all; lark-cli, git,
pip, pytest, make, curl, ruff, Read/Write), none from the held-out sets. Table-driven.

- "stopped before any effect" is data (rules-v2 ``tools.stopped_receipts`` and ``read_only_checks``), read on the
  program's first output: a make recipe that ran before failing keeps "may write", whatever its last line says;
- a rewritten message states no value it changed or added that nothing kept shows (``unsupported-final``);
- a rewrite that drops every tie to the failed receipt it still follows is a flip, in any language.
"""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from test_editor_segments import refused

from judge.model import Trajectory
from judge.repair import offline_edit
from judge.repair.calls import call_sites, side_effect_free
from judge.repair.textref import Detectors
from judge.testing.builders import call, issue, say, tool, trajectory

# --- side effects: the first call of a one-call trajectory -------------------------------------------------------

# (case, command, receipt, exit code, side-effect free)
FIRST_CALLS: list[tuple[str, str, str, int, bool]] = [
    ("pip-no-distribution", "pip install pandsa",
     "ERROR: Could not find a version that satisfies the requirement pandsa (from versions: none)\n"
     "ERROR: No matching distribution found for pandsa", 1, True),
    ("python-m-pip", "python3 -m pip install flsk", "ERROR: No matching distribution found for flsk", 1, True),
    ("git-unknown-remote", "git push upstrem feature/login",
     "fatal: 'upstrem' does not appear to be a git repository\nfatal: Could not read from remote repository.", 128, True),
    ("pytest-missing-node", "pytest tests/test_cart.py::test_totl",
     "ERROR: not found: /src/tests/test_cart.py::test_totl\n(no match in any of [<Module test_cart.py>])", 4, True),
    ("harness-header", "lark-cli base +record-create --base bascnA1b2 --table tblX9y8 --rowz 3",
     "Exit code 2\nError: unknown flag: --rowz", 2, True),
    ("json-error-body", "lark-cli base +field-create --base bascnA1b2 --table tblX9y8 --type numbr",
     json.dumps({"ok": False, "code": 400, "msg": "invalid field type: numbr"}, indent=2), 1, True),
    ("ruff-check-reads", "ruff check src/api", "src/api/views.py:3:1: F401 unused import", 1, True),
    ("mypy-reads", "mypy --strict pkg", "pkg/a.py:9: error: Missing return statement", 1, True),
    ("cd-then-pip", "cd services/api && pip install pandsa", "ERROR: No matching distribution found for pandsa", 1, True),
    ("usage-then-error", "lark-cli base +record-create --base bascnA1b2 --tabel tblX9y8",
     "usage: lark-cli base +record-create --base BASE --table TABLE\nerror: unknown flag: --tabel", 2, True),
    # refusals: work ran before the failure, or the command may write
    ("make-ran-recipes", "make bootstrap",
     "mkdir -p build\ncp config.example.yml build/config.yml\n./scripts/migrate.sh\n"
     "./scripts/migrate.sh: line 2: flyway: command not found\nmake: *** [Makefile:4: bootstrap] Error 127", 2, False),
    ("make-no-target", "make instal", "make: *** No rule to make target 'instal'.  Stop.", 2, True),
    ("ruff-fix-writes", "ruff check --fix src/api", "Found 3 errors (2 fixed, 1 remaining).", 1, False),
    ("pip-installed-then-failed", "pip install -r requirements.txt",
     "Collecting httpx\nSuccessfully installed httpx-0.27.0\nERROR: No matching distribution found for fastapi-extra", 1, False),
    ("mkdir-then-stopped", "mkdir -p dist && pip install pandsa", "ERROR: No matching distribution found for pandsa", 1,
     False),
    ("curl-post", "curl -s -X POST https://api.shop.test/v1/orders -d '{\"sku\": \"A1\"}'",
     "HTTP/1.1 404 Not Found", 22, False),
]


@pytest.mark.parametrize(("case", "command", "receipt", "code", "free"), FIRST_CALLS, ids=[row[0] for row in FIRST_CALLS])
def test_side_effect_free_reads_the_first_output(case: str, command: str, receipt: str, code: int, free: bool) -> None:
    original = trajectory("t", [say("", call("c1", "Bash", command=command)), tool("c1", receipt, error=True, exit_code=code),
                                say("Done.")], query="Do the task.")
    site = call_sites(original)[0]
    assert side_effect_free(site, original)[0] is free, (case, side_effect_free(site, original)[1])


# --- deletions ---------------------------------------------------------------------------------------------------


def retried(command: str, receipt: str, code: int, retry: str, retry_receipt: str, answer: str, query: str) -> Trajectory:
    """T1 fails, T2 runs the corrected call, T3 answers."""
    return trajectory("t", [
        say("", call("c1", "Bash", command=command)), tool("c1", receipt, error=code != 0, exit_code=code),
        say("", call("c2", "Bash", command=retry)), tool("c2", retry_receipt, exit_code=0),
        say(answer)], query=query)


# (case, trajectory, edited)
DELETIONS: list[tuple[str, Trajectory, bool]] = [
    ("sv-pip-typo", retried("pip install pandsa", "ERROR: No matching distribution found for pandsa", 1,
                            "pip install pandas", "Successfully installed pandas-2.2.3", "pandas 2.2.3 är installerat.",
                            "Installera pandas."), True),
    ("en-git-remote-typo", retried("git push upstrem feature/login",
                                   "fatal: 'upstrem' does not appear to be a git repository", 128,
                                   "git push upstream feature/login", "To github.com:acme/web.git\n   4e1a2b3..77c9d01  "
                                   "feature/login -> feature/login", "Pushed feature/login (77c9d01).",
                                   "Push the login branch."), True),
    ("de-pytest-node", retried("pytest tests/test_cart.py::test_totl",
                               "ERROR: not found: /src/tests/test_cart.py::test_totl", 4,
                               "pytest tests/test_cart.py::test_total", "1 passed in 0.02s", "Der Test läuft durch.",
                               "Lass den Summentest laufen."), True),
    ("pt-npm-script-typo", retried("npm run tset", "npm ERR! Missing script: \"tset\"", 1,
                                   "npm run test", "Tests: 14 passed, 14 total", "Os 14 testes passaram.",
                                   "Rode os testes."), True),
    ("fi-curl-get-404", retried("curl -s -i https://api.shop.test/v1/customer/88",
                                "HTTP/1.1 404 Not Found\n\n{\"error\": \"no route\"}", 0,
                                "curl -s https://api.shop.test/v1/customers/88", "{\"id\": 88, \"tila\": \"aktiivinen\"}",
                                "Asiakkaan 88 tila on aktiivinen.", "Tarkista asiakkaan 88 tila."), True),
    # refusals
    ("hu-count-only-in-failed-read", trajectory("t", [
        say("", call("c1", "Bash", command="lark-cli base +record-count --base bascnHr4 --table tblStf7 --fields Név")),
        tool("c1", "42\nError: --fields is not allowed with +record-count", error=True, exit_code=1),
        say("42 rekord van a táblában.")], query="Hány rekord van?"), False),
    ("fi-make-ran-recipes", retried("make bootstrap",
                                    "mkdir -p build\ncp config.example.yml build/config.yml\n"
                                    "./scripts/migrate.sh: line 2: flyway: command not found\n"
                                    "make: *** [Makefile:4: bootstrap] Error 127", 2,
                                    "docker compose run --rm flyway migrate", "Successfully applied 3 migrations",
                                    "Ympäristö on valmis.", "Pystytä ympäristö."), False),
    ("en-curl-post-404", retried("curl -s -i -X POST https://api.shop.test/v1/order -d '{\"sku\": \"A1\"}'",
                                 "HTTP/1.1 404 Not Found", 0,
                                 "curl -s -X POST https://api.shop.test/v1/orders -d '{\"sku\": \"A1\"}'",
                                 "{\"id\": 5521}", "Order 5521 created.", "Order one A1."), False),
]


@pytest.mark.parametrize(("case", "original", "edited"), DELETIONS, ids=[row[0] for row in DELETIONS])
def test_editor_deletes_failures_that_stopped_before_any_effect(case: str, original: Trajectory, edited: bool,
                                                                detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert (result.status == "edited") is edited, (case, result.status, result.reason)


# --- rewrites ----------------------------------------------------------------------------------------------------


def linted(answer: str) -> Trajectory:
    """T1 writes a module, T2 lints a mistyped path, T3 lints the real one, T4 answers."""
    return trajectory("t", [
        say("", call("c1", "Write", file_path="app/core/money.py", content="def cents(x: float) -> int:\n    return round(x * 100)\n")),
        tool("c1", "File created successfully at: app/core/money.py", exit_code=0),
        say("", call("c2", "Bash", command="ruff check app/core/mony.py")),
        tool("c2", "error: Failed to lint app/core/mony.py: No such file or directory (os error 2)", error=True, exit_code=2),
        say("", call("c3", "Bash", command="ruff check app/core/money.py")), tool("c3", "All checks passed!", exit_code=0),
        say(answer)], query="Add a money helper and lint it.")


def counted(answer: str) -> Trajectory:
    """T1 counts a guessed table (404), T2 counts the real one, T3 answers."""
    return trajectory("t", [
        say("", call("c1", "Bash", command="lark-cli base +record-count --base bascnHr4 --table tblStaff")),
        tool("c1", "Error: 404 table tblStaff not found", error=True, exit_code=1),
        say("", call("c2", "Bash", command="lark-cli base +record-count --base bascnHr4 --table tblStf7")),
        tool("c2", json.dumps({"total": 318}), exit_code=0),
        say(answer)], query="How many staff records are there?")


def rejected_push(answer: str) -> Trajectory:
    """T1's push is rejected and kept; T2 reports it."""
    return trajectory("t", [
        say("", call("c1", "Bash", command="git push origin release")),
        tool("c1", "To github.com:acme/web.git\n ! [rejected]        release -> release (non-fast-forward)\n"
                   "error: failed to push some refs to 'github.com:acme/web.git'", error=True, exit_code=1),
        say(answer)], query="Push release.")


# (case, original, deleted calls, rewrite: edited index -> text, expected refusal kind or None for accept)
REWRITES: list[tuple[str, Trajectory, set[str], dict[int, str], str | None]] = [
    ("en-path-changed", linted("The helper is in `app/core/money.py`; ruff passes."), {"c2"},
     {6: "The helper is in `app/util/money.py`; ruff passes."}, "unsupported-final"),
    ("en-path-kept", linted("The helper is in `app/core/money.py`; ruff passes."), {"c2"},
     {6: "Helper written to `app/core/money.py`, and ruff passes on it."}, None),
    ("tr-count-changed", counted("Personel tablosunda 318 kayıt var."), {"c1"}, {4: "Personel tablosunda 381 kayıt var."},
     "unsupported-final"),
    ("pl-count-regrouped", counted("W tabeli jest 318 rekordów."), {"c1"}, {4: "Tabela liczy 318 rekordów."}, None),
    ("pl-numbered-list", counted("W tabeli jest 318 rekordów."), {"c1"},
     {4: "Wynik:\n1. tabela `tblStf7`\n2. rekordów: 318"}, None),
    # Welsh: no phrase list of the rules config knows these words; the ties are the branch and the push itself
    ("cy-flip-no-vocabulary", rejected_push("Gwrthodwyd y push i release: mae gan y gangen bell gomitiau newydd."), set(),
     {4: "Mae'r newidiadau ar GitHub nawr."}, "flip"),
    ("cy-honest-rewording", rejected_push("Gwrthodwyd y push i release."), set(),
     {4: "Ni lwyddodd y push i release: mae angen pull yn gyntaf."}, None),
]


@pytest.mark.parametrize(("case", "original", "deleted", "rewrite", "expected"), REWRITES, ids=[row[0] for row in REWRITES])
def test_rewrites_are_held_against_the_receipts_by_values(case: str, original: Trajectory, deleted: set[str],
                                                          rewrite: dict[int, str], expected: str | None,
                                                          detectors: Detectors) -> None:
    kinds = refused(original, deleted, rewrite, detectors)
    if expected is None:
        assert not kinds, (case, kinds)
    else:
        assert expected in kinds, (case, kinds)
