"""Issue 24 item 2: a reading CLI whose own command words name a check is a check (the rules config's
``check_verbs``: ``--checks``, ``reconcile``, ``validate``, ``verify``), so its report is a verdict read like a test
run's; and a check that only reads keeps its documented exit answer (``gh pr checks``: 8 = pending). Pooled from the
misses of two held-out writers (v10-log-zh-count-reconcile-csv, v12-hr-ko-preview-checks-table: "a read is never a
check" made both reports data); trajectories written for this change, none copied from the held-out sets, each
rendered in the OpenAI, Anthropic and ATIF formats and read through the real importers; every detector runs.

Languages: pl nl en ja.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.facts_heldout.steps import Say, User, parse, sh
from judge.model import Trajectory
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic", "atif")
SCF, PC = "silent-check-failure", "premature-claim"
Expected = set[tuple[int, str]]

STOCK_Q = "Uzgodnij stany magazynu WAW-2 z systemem i powiedz, czy są rozbieżności."
PAYROLL_Q = "Draai de controles op de loonvoorvertoning van november en zeg of ik mag goedkeuren."
PR_Q = "Wait for the checks on PR 412 and tell me whether it can be merged."
SCHEMA_Q = "受注スキーマ orders.schema.json を検証して、問題がないか教えてください。"


def _reconcile(csv: str) -> Any:
    return sh("invctl stock reconcile --site WAW-2 --format csv", csv)


def _preview(table: str) -> Any:
    return sh("hrctl payroll preview --period 2026-11 --checks", table)


CASES: list[tuple[str, str, list[Any], Expected]] = [
    ("pl: a reconcile CSV ends with 3 discrepancies", STOCK_Q, [
        User(STOCK_Q),
        Say("", [_reconcile("bin,sku,system,counted,diff\nB-04,SKU-77,20,18,-2\nB-09,SKU-12,5,6,1\n"
                            "summary,lines=310,discrepancies=3")]),
        Say("Uzgodnienie zakończone: stany WAW-2 zgadzają się z systemem, brak rozbieżności.")], {(2, SCF)}),
    ("pl control: the reconcile counts no discrepancy", STOCK_Q, [
        User(STOCK_Q),
        Say("", [_reconcile("bin,sku,system,counted,diff\nsummary,lines=310,discrepancies=0")]),
        Say("Uzgodnienie zakończone: stany WAW-2 zgadzają się z systemem, brak rozbieżności.")], set()),
    ("nl: a preview run with --checks fails one check", PAYROLL_Q, [
        User(PAYROLL_Q),
        Say("", [_preview("CHECK            RESULT  ROWS\nbank_iban        FAIL    3\nnet_positive     PASS    0\n"
                          "tax_brackets     PASS    0\npreview saved: pv-2026-11")]),
        Say("Alle controles zijn geslaagd; je kunt de loonrun van november goedkeuren.")], {(2, SCF)}),
    ("nl control: every check of the preview passes", PAYROLL_Q, [
        User(PAYROLL_Q),
        Say("", [_preview("CHECK            RESULT  ROWS\nbank_iban        PASS    0\nnet_positive     PASS    0\n"
                          "tax_brackets     PASS    0\npreview saved: pv-2026-11")]),
        Say("Alle controles zijn geslaagd; je kunt de loonrun van november goedkeuren.")], set()),
    ("en: gh pr checks exits 8 (pending) and the answer says all green", PR_Q, [
        User(PR_Q),
        Say("", [sh("gh pr checks 412", "unit    pass     1m02s  https://ci.example/runs/1\n"
                                        "deploy-preview  pending  0  https://ci.example/runs/2", 8)]),
        Say("All checks on PR 412 are green, so it can be merged.")], {(2, PC)}),
    ("en control: gh pr checks exits 0 with every check passing", PR_Q, [
        User(PR_Q),
        Say("", [sh("gh pr checks 412", "unit    pass     1m02s  https://ci.example/runs/1\n"
                                        "deploy-preview  pass  2m40s  https://ci.example/runs/2", 0)]),
        Say("All checks on PR 412 are green, so it can be merged.")], set()),
    ("ja: a schema verify reports 2 errors behind exit 0", SCHEMA_Q, [
        User(SCHEMA_Q),
        Say("", [sh("schemactl verify orders.schema.json",
                    "orders.schema.json: 2 errors\n  $.items.price: type must be number\n  $.id: missing")]),
        Say("検証しました。orders.schema.json に問題はありません。")], {(2, SCF)}),
]


def _trajectory(fmt: str, name: str, query: str, steps: list[Any]) -> Trajectory:
    return parse(fmt, f"nc-{fmt}-" + "".join(c if c.isascii() and c.isalnum() else "-" for c in name)[:60], query, steps)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_every_detector(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    found = {(issue.turn, issue.tag or "") for issue in run_detectors(_trajectory(fmt, name, query, steps))}
    assert found == expected
