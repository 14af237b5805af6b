"""The requirements found in a query without a model (judge/repair/requirements.py), the floor of the capability
rewrite check: one table of queries in several languages and what must be found in each."""

from __future__ import annotations

import pytest

from judge.repair.requirements import Requirement, extract_requirements, uncovered


@pytest.mark.parametrize("query, expected", [
    ("Add 6 sample rows to products.csv.", {("number", "6"), ("file", "products.csv")}),
    ('Name it "Quarterly Sales" and tag it `v2-final`.', {("quoted", "Quarterly Sales"), ("quoted", "v2-final")}),
    ("Close PROJ-123 and #42, then set the user_id field.", {("id", "PROJ-123"), ("id", "#42"), ("id", "user_id")}),
    ("Fetch https://example.com/data.json on 2024-01-05.", {("url", "https://example.com/data.json"), ("number", "2024-01-05")}),
    ("You must keep the header row; never touch src/legacy/.",
     {("obligation", "must keep the header row"), ("prohibition", "never touch src/legacy/"), ("file", "src/legacy/")}),
    ("1. Read the log\n2. Count the errors", set()),  # list markers are structure, not values
    ("创建6条记录，保存到report.csv，不要删除现有数据。", {("number", "6"), ("file", "report.csv"), ("prohibition", "不要删除现有数据")}),
    ("必ず tests/ を更新してください", {("obligation", "必ず tests/ を更新してください"), ("file", "tests/")}),
    ("Du darfst nicht die Tabelle löschen.", {("prohibition", "darfst nicht die Tabelle löschen")}),
    ("Il ne faut pas supprimer la table.", {("prohibition", "ne faut pas supprimer la table")}),
    ("No debe borrar la tabla.", {("prohibition", "No debe borrar la tabla")}),
    ("Você deve manter o cabeçalho.", {("obligation", "deve manter o cabeçalho")}),
    ("Нельзя удалять таблицу.", {("prohibition", "Нельзя удалять таблицу")}),
    ("테이블을 삭제하지 마세요", {("prohibition", "하지 마세요")}),
])
def test_requirements_are_extracted_deterministically(query, expected):
    assert {(r.kind, r.text) for r in extract_requirements(query)} == expected


@pytest.mark.parametrize("items, missing", [
    ([("add 6 rows", "add 6 rows")], []),
    ([("add 6 rows", "add 16 rows")], ["no rewrite quote keeps this value"]),  # 6 is not in 16
    ([("add 6 rows", None)], ["no rewrite quote keeps this value"]),
    ([], ["the check does not list it"]),
])
def test_a_value_is_covered_only_by_an_item_keeping_it_in_both_quotes(items, missing):
    assert [why for _, why in uncovered([Requirement("number", "6")], items)] == missing


@pytest.mark.parametrize("items, missing", [
    ([("do not delete the Orders table", "Never delete the Orders table")], []),
    ([("delete the Orders table", "do not delete the Orders table")], []),  # the main part quoted
    ([("do not delete the Orders table", "delete the Orders table")], ["the rewrite does not keep it as a prohibition"]),
    ([("do not delete the Orders table", None)], ["no rewrite quote keeps it"]),
    ([("Orders", "Orders")], ["the check does not list it"]),  # too small a part of the clause
])
def test_a_clause_is_covered_by_an_overlapping_quote_and_a_prohibition_stays_one(items, missing):
    clause = Requirement("prohibition", "do not delete the Orders table")
    assert [why for _, why in uncovered([clause], items)] == missing
