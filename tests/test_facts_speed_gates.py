"""Issue 24's speed budget, round two: the cheap exact tests and shared readings that keep the rules judge within
budget must not change a reading. Table-driven: each gate's edge cases (the shapes just inside and just outside
what it lets through), and the claim sentences an analysis reads once and shares."""

from __future__ import annotations

import uuid

import pytest

from judge.facts.analysis import analyse, read_sentences
from judge.facts.config import default_config
from judge.facts.jobs import job_state
from judge.facts.readbacks import may_name, name_spans
from judge.facts.values import states, status_values
from judge.model import Message, Trajectory, TrajectoryMetadata, number_turns

# job_state(ends=False): only a tab- or column-aligned row can wait, only a "/", "of", "%" or progress key can count
# short of a total.
GOING = [
    ("build\tpending\t0", "non-terminal"),  # a tab-aligned row
    ("ci/build    queued    12s", "non-terminal"),  # column-aligned
    ("build pending", None),  # one space: prose, not a table row
    ("indexed 4000/9500 documents", "non-terminal"),
    ("1 of 3 updated replicas are available", "non-terminal"),
    ("1 OF 3 replicas", None),  # the fraction's "of" is lower case
    ("progress: 40%", "non-terminal"),
    ('{"progress": 0.4}', "non-terminal"),
    ("rows written, 40 percent", None),  # no fraction, no "%"
    ("9500/9500 rows indexed", None),  # at its total
    ("3 passed in 0.02s", None),
]


@pytest.mark.parametrize(("text", "state"), GOING)
def test_job_state_going(text: str, state: str | None) -> None:
    assert job_state(text, ends=False) == state


STATES = [
    ("created rec001 and rec002", "rec001", True),
    ("created rec0012", "rec001", False),  # a longer token, not the value
    ("the api-1 service", "api-1", True),
    ("the shop-api-1 service", "api-1", False),  # hyphen-joined: another id
    ("created REC001", "rec001", False),  # case counts
    ("未找到 订单 已删除", "订单", True),
    ("Fix calc.py.", "0.123456", False),
]


@pytest.mark.parametrize(("text", "value", "stated"), STATES)
def test_states(text: str, value: str, stated: bool) -> None:
    assert states(text, value) is stated


def test_status_values_memo_keeps_near_apart() -> None:
    listing = '[{"id": "rec1", "status": "shipped"}, {"id": "rec2", "status": "pending"}]'
    assert status_values(listing) == {"shipped", "pending"}
    assert status_values(listing, frozenset({"rec2"})) == {"pending"}
    assert status_values(listing) == {"shipped", "pending"}


def _trajectory(texts: list[str]) -> Trajectory:
    messages = [Message(role="user", content="Fix calc.py.")]
    messages += [Message(role="assistant", content=text) for text in texts]
    return Trajectory(id="t", query="Fix calc.py.", query_id="q", messages=number_turns(messages),
                      metadata=TrajectoryMetadata(source_format="test"))


def test_repeated_claim_sentence_read_once_and_shared() -> None:
    config = default_config()
    # Texts no other test speaks (the speech memo is process-wide: a message it knows is not read again).
    tag = uuid.uuid4().hex[:8]
    analysis = analyse(_trajectory([f"I've updated calc.py; all tests pass. (step 1, {tag})",
                                    f"I've updated calc.py; all tests pass. (step 2, {tag})"]), config)
    first, second = (speech.sentences for speech in analysis.speeches)
    assert first and first[0] is second[0]
    assert analysis.cache["sentences"][first[0].text] is first[0]
    # The same reading as a sentence read alone.
    assert first[0] == read_sentences(first[0].text, config.patterns)[0]


def test_read_sentences_copies_known_readings() -> None:
    config = default_config()
    analysis = analyse(_trajectory(["Done. I've updated calc.py; all tests pass."]), config)
    region = analysis.speeches[0].region
    known = analysis.cache["sentences"]
    fresh = read_sentences(region, config.patterns)
    shared = read_sentences(region, config.patterns, known)
    assert shared == fresh
    for sentence in shared:
        assert all(sentence is not kept for kept in known.values())  # a copy: callers may set is_claim
    before = {text: sentence.is_claim for text, sentence in known.items()}
    shared[-1].is_claim = not shared[-1].is_claim
    assert {text: sentence.is_claim for text, sentence in known.items()} == before
    # Sentences read afresh are copies too: the batch's memo of readings (patterns.memo_sentences) stays as read.
    claim = next(at for at, sentence in enumerate(fresh) if sentence.is_claim)
    fresh[claim].is_claim = False
    assert read_sentences(region, config.patterns)[claim].is_claim


# may_name: False only when no part of the text can name the field (a literal test of the name's stem gates the
# label search of every number of a claim sentence against every key of every read-back).
NAMES = [
    ("accuratezza del 91,3%", "accuracy", True),  # the stem "accur" of a long word
    ("| rows | 12 |", "rows", True),
    ("12 rows_processed", "processed", True),  # "_" reads as a space
    ("Crowsnest: 12", "rows", True),  # inside a word: the stem is there, the pattern decides
    ("Your flight is booked for 12 May.", "price", False),
    ("Total: 340 USD", "amount", False),
    ("ΣΤΑΣΙΣ 3", "στασις", True),  # a sigma: its lower case depends on its neighbours, never gated
    ("Prix: 12 €", "prix", True),
]


@pytest.mark.parametrize(("text", "name", "may"), NAMES)
def test_may_name_is_false_only_when_no_part_names_the_field(text: str, name: str, may: bool) -> None:
    assert may_name(text, name) is may
    if not may:
        assert not any(name_spans(text[i:j], name) for i in range(len(text)) for j in range(i + 1, len(text) + 1))
