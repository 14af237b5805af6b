import pytest
from utils.date import parse_date


def test_slash_format():
    assert parse_date('2026/03/05').day == 5


def test_invalid_raises():
    with pytest.raises(ValueError):
        parse_date('05-03-2026')
