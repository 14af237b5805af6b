"""Issue 24 (task C): the pure readings the check and read-back detectors rest on, table-driven: whether a command
line masks its checker's exit status, the numbers and counts a sentence states in any language, and the numbers,
lengths and records a read-back lists."""

from __future__ import annotations

import pytest

from judge.facts.shell import read_command
from judge.facts.values import bare_counts, header_list_count, record_numbers, stated_numbers

MASKS_EXIT = [
    ("pytest -q || true", True),
    ("npm test 2>&1 | tail -n 20", True),
    ("ruff check --exit-zero src/", True),
    ("python verify.py; echo done", True),
    ("make check || :", True),
    ("pytest -q | tee out.log", True),
    ("set -o pipefail; pytest -q | tail -3", False),  # pipefail keeps pytest's status
    ("pytest -q", False),
    ("pytest -q && echo ok", False),  # echo runs only when pytest passed
    ("ruff check src/ | grep -c F401 || true", True),
    ("echo 'a || true'", False),  # quoted: an argument, not an operator
]


@pytest.mark.parametrize(("command", "masks"), MASKS_EXIT)
def test_masks_exit(command: str, masks: bool) -> None:
    assert read_command(command).masks_exit is masks


STATED = [
    ("11月の合計は 25,800 円です。", [25800.0]),
    ("Le total est de 1 234,50 €.", [1234.5]),
    ("Der Preis liegt bei 12,5 Euro", [12.5]),
    ("total 3.141", [3141.0]),  # grouped by threes: a thousands separator
    ("v2 and abc123", []),
]


@pytest.mark.parametrize(("text", "numbers"), STATED)
def test_stated_numbers(text: str, numbers: list[float]) -> None:
    assert stated_numbers(text) == numbers


BARE = [
    ("All 6 suppliers are in the table.", (6,)),
    ("Hareketler tablosunda artık 12 kayıt var.", (12,)),
    ("商品テーブルには6件そろっています。", (6,)),
    ("Taulukossa on nyt 7 riviä.", (7,)),
    ("11月の売上", ()),  # a month, not a count
    ("took 3 ms on port 8080", ()),  # a unit; a number no word follows
    ("version 2.1 of tbl7a2", ()),
]


@pytest.mark.parametrize(("text", "counts"), BARE)
def test_bare_counts(text: str, counts: tuple[int, ...]) -> None:
    assert bare_counts(text) == counts


RECORDS = [
    ('{"items": [{"n": "a", "price": 12.5}, {"n": "b", "price": 64.9}]}', {"price": [12.5, 64.9]}),
    ('{"items": [{"fields": {"stock": 40}}, {"fields": {"stock": 140}}]}', {"stock": [40.0, 140.0]}),
    ('[{"id": 1, "tags": [1, 2]}, {"id": 2, "tags": []}]', {"id": [1.0, 2.0]}),  # a list field is no number
    ('{"mixed": [{"v": 1}, {"v": "x"}]}', {}),  # a field that is text in one record is not numeric
    ("not json", {}),
]


@pytest.mark.parametrize(("text", "numbers"), RECORDS)
def test_record_numbers(text: str, numbers: dict[str, list[float]]) -> None:
    assert record_numbers(text) == numbers


@pytest.mark.parametrize(("text", "header", "count"), [
    ("Name\nAcme\nBolt & Co\n\nCrane Ltd\n", "Name", 3),
    ("name | city\nAcme | Rome\n", "Name", 1),
    ("Acme\nBolt\n", "Name", None),  # no header: not this shape
    ("Name\n", "Name", None),
])
def test_header_list_count(text: str, header: str, count: int | None) -> None:
    assert header_list_count(text, header) == count
