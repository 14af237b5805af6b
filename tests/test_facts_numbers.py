"""Numbers as written (judge/facts/numbers.py) and the values read-backs show (judge/facts/readbacks.py):
number words with compounds from the config's data, locale numbers in every reading, metrics, scalar answers and
item listings. Cases written for this file."""

from __future__ import annotations

import pytest

from judge.facts.config import default_config
from judge.facts.numbers import number_readings, same_quantity
from judge.facts.readbacks import listing_items, metric_values, name_spans, scalar_values

# --- number words: one compound rule, words as data ------------------------------------------------------------

WORDS: list[tuple[str, tuple[int, ...]]] = [
    ("vingt-trois fichiers", (23,)),
    ("dreiundzwanzig Kunden", (23,)),
    ("sechsundvierzig Zeilen", (46,)),
    ("drieëntwintig rijen", (23,)),
    ("quarantadue righe", (42,)),
    ("ventotto prenotazioni", (28,)),
    ("treinta y ocho filas", (38,)),
    ("veintitrés pedidos", (23,)),
    ("trinta e cinco linhas", (35,)),
    ("fyrtiotvå rader", (42,)),
    ("тридцять вісім записів", (38,)),
    ("сорок два файла", (42,)),
    ("dwadzieścia siedem rekordów", (27,)),
    ("otuz sekiz kayıt", (38,)),
    ("dua puluh tujuh baris", (27,)),
    ("forty-one files", (41,)),
    ("two hundred and twelve rows", (212,)),
    ("已添加二十三条记录", (23,)),
    ("发现两处泄露", (2,)),
    ("三件のレコード", (3,)),
    ("十二個のファイル", (12,)),
    ("파일 다섯 개", (5,)),
    ("열두 건", (12,)),
    # not counts: an article, a word that only looks like a number, an ordinal, a Han numeral inside a word
    ("one file", ()),
    ("the bin folder", ()),
    ("three four files", ()),
    ("第三个文件", ()),
    ("统一个接口", ()),
    ("十分好", ()),
    ("tutte e quattro le opzioni", (4,)),
]


@pytest.mark.parametrize(("text", "counts"), WORDS)
def test_number_words_read_compounds(text: str, counts: tuple[int, ...]) -> None:
    assert default_config().patterns.number_words.counts(text) == counts


READINGS: list[tuple[str, set[float]]] = [
    ("1.250 righe", {1250.0, 1.25}),
    ("1,250 rows", {1250.0, 1.25}),
    ("1 250 lignes", {1250.0}),
    ("1'250 Zeilen", {1250.0}),
    ("1.250,5 €", {1250.5}),
    ("1,250.5 USD", {1250.5}),
    ("91,3 %", {91.3}),
    ("0.8734", {0.8734}),
    ("12.5", {12.5}),
]


@pytest.mark.parametrize(("text", "values"), READINGS)
def test_locale_numbers_have_every_reading(text: str, values: set[float]) -> None:
    readings = number_readings(text)
    assert readings and set(readings[0].values) == values


@pytest.mark.parametrize(("claim", "value", "scale", "same"), [
    ("91,3 %", 0.913, True, True),
    ("91,3 %", 0.8734, True, False),
    ("87 %", 0.8734, True, True),  # rounded to the claim's digits
    ("0,861", 0.8611, False, True),
    ("0.87", 0.78, False, False),
    ("1.250", 1.25, False, True),  # one of its readings
    ("1.250", 1205, False, False),  # neither reading
    ("1 205", 1205, False, True),
])
def test_same_quantity(claim: str, value: float, scale: bool, same: bool) -> None:
    assert same_quantity(number_readings(claim)[0], value, scale) is same


def test_receipt_shapes() -> None:
    assert metric_values('{"split": "test", "accuracy": 0.8734, "n": 10000}') == {"accuracy": [0.8734]}
    assert metric_values("val_loss=0.412 top1: 76.5%") == {"val_loss": [0.412], "top1": [0.765]}
    assert name_spans("macro F1 0,861", "macro_f1") and name_spans("l'accuratezza del 91%", "accuracy")
    assert not name_spans("the run took 91 s", "accuracy")
    assert scalar_values("1205\n") == (1205.0,) and scalar_values("(4812, 9)") == (4812.0, 9.0)
    assert scalar_values("INSERT 0 12") == ()
    assert listing_items('{"options": ["A", "B"]}') == (("A", "B"),)
    assert listing_items("a.bin\nb.bin\nc.bin") == (("a.bin", "b.bin", "c.bin"),)
