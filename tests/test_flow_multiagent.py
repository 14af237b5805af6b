"""The decisive step in multi-agent chats (issue 24 item 5): a task message that quotes the query hands over the
user's values (the walk no longer blames it), the final answer's origin as a rule beside the judge, the judge with
it as a reported fall-back, and the fixed dev/test split of the labelled sets.

Every log here is hand-written in the shape of an AG2 group chat (an expert restates the task, experts write code,
a terminal runs it); none is copied from a dataset.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_validate import issue

from judge.facts import ledger_of
from judge.facts.flow import answer_origin, fact_words, restates_query, trace_origin
from judge.importers._common import Source
from judge.importers.labels import LabelledFailure, TrajectoryLabels
from judge.importers.who_and_when import parse
from judge.model import Message, Trajectory
from judge.validate import BASELINES, evaluate, first_agent_turn, label_half

QUESTION = "Which vendor earns the least relative to its rent? Give its type."
TASK = (f"You are given a task and a plan.\n# General Task\n{QUESTION} Please solve the problem carefully."
        "The attached file path is: ../files/3f2a9c1e-77b0-4d1e-9a55-0c6e2b7d8f10.xlsx\n# Plan\n1. read 2. compute")
PATH = "../files/3f2a9c1e-77b0-4d1e-9a55-0c6e2b7d8f10.xlsx"


def chat(*steps: tuple[str, str], question: str = QUESTION) -> Trajectory:
    """An AG2-like chat: (speaker, content) pairs; ``Computer_terminal`` is the terminal."""
    record = {"question": question, "question_ID": "q1", "is_correct": False,
              "history": [{"name": name, "role": "user", "content": content} for name, content in steps]}
    return parse(record, Source(file="/tmp/chat.json", index=0))


def code(path: str, body: str = "df = pd.read_excel(path)") -> str:
    return f"Let me read it.\n```python\nimport pandas as pd\npath = '{path}'\n{body}\n```"


FAILED = "exitcode: 1 (execution failed)\nCode output: KeyError: \"None of ['vendor', 'rent'] are in the columns\""
NO_CODE = "There is no code from the last 1 message for me to execute."


# (what, content, query, expected)
RESTATES: list[tuple[str, str, str, bool]] = [
    ("the manager's task message quotes the whole query", TASK, QUESTION, True),
    ("line breaks and spaces do not matter", TASK.replace(" ", "\n  "), QUESTION, True),
    ("a message quoting part of the query is not the task", "Which vendor earns the least? Let me check.", QUESTION, False),
    ("a very short query is quoted by chance, not handed over", "ok, fix it now", "fix it", False),
    ("no content", "", QUESTION, False),
]


@pytest.mark.parametrize(("what", "content", "query", "expected"), RESTATES, ids=[r[0] for r in RESTATES])
def test_restates_query(what: str, content: str, query: str, expected: bool) -> None:
    assert restates_query(Message(role="assistant", content=content), query) is expected


# (what, text, expected facts)
FACTS: list[tuple[str, str, set[str]]] = [
    ("numbers in any form, names mid-sentence", "The total is 3,200 for Sunrise Bakery in 2023.", {"3,200", "sunrise", "bakery", "2023"}),
    ("a capital that opens a sentence or a line is no name", "Verified. The answer is kiosk.\nNext we stop.", set()),
    ("a list item's first word opens a line", "Results:\n- Harry likes Fishing", {"fishing"}),
    ("words mixing letters and digits are numbers", "use model e4 and file v2.xlsx", {"e4", "v2.xlsx"}),
    ("another language: names and numbers, no word list", "Der Umsatz von Müller war 512 Euro.", {"umsatz", "müller", "512", "euro"}),
    ("a script without letter case gives its numbers", "答案是 1550 号", {"1550"}),
]


@pytest.mark.parametrize(("what", "text", "expected"), FACTS, ids=[f[0] for f in FACTS])
def test_fact_words(what: str, text: str, expected: set[str]) -> None:
    assert fact_words(text) == expected


# (what, steps, failure turn, expected origin turn, flow found)
WALKS: list[tuple[str, list[tuple[str, str]], int, int, bool]] = [
    ("a file id the task message added is the user's: the failing code is its own origin",
     [("Data_Expert", TASK), ("Computer_terminal", NO_CODE), ("Finance_Expert", code(PATH)), ("Computer_terminal", FAILED)],
     2, 2, False),
    ("an id an agent stated without any output showing it is still the unchecked origin",
     [("Data_Expert", TASK), ("Computer_terminal", NO_CODE),
      ("Finance_Expert", "The cleaned copy is ../files/7b1e4d2a-1c3f-4e5a-8b9c-0d1e2f3a4b5c.xlsx, use that."),
      ("Data_Expert", code("../files/7b1e4d2a-1c3f-4e5a-8b9c-0d1e2f3a4b5c.xlsx")), ("Computer_terminal", FAILED)],
     3, 2, True),
]


@pytest.mark.parametrize(("what", "steps", "failure", "origin", "flow"), WALKS, ids=[w[0] for w in WALKS])
def test_the_walk_does_not_blame_the_task_message(what: str, steps: list[tuple[str, str]], failure: int, origin: int,
                                                  flow: bool) -> None:
    found = trace_origin(ledger_of(chat(*steps)), failure)
    assert (found.turn, found.failure_turn, found.found) == (origin, failure, flow)


# (what, steps, expected origin turn or None, expected answer turn)
ANSWERS: list[tuple[str, list[tuple[str, Any]], int | None, int | None]] = [
    ("the answer's value first appears in a terminal output: the turn whose code printed it",
     [("Data_Expert", TASK), ("Computer_terminal", NO_CODE), ("Finance_Expert", code(PATH)),
      ("Computer_terminal", "exitcode: 0 (execution succeeded)\nCode output: lowest ratio: Sunrise Bakery, type Food"),
      ("Verification_Expert", "Verified. The vendor is Sunrise Bakery and its type is Food."),
      ("Verification_Expert", "TERMINATE")],
     2, 3),
    ("an agent asserts the wrong fact without running anything: its message is the origin",
     [("Data_Expert", TASK), ("Computer_terminal", NO_CODE),
      ("Finance_Expert", "From experience such a mall's weakest tenant is usually a Kiosk."),
      ("Verification_Expert", "Agreed, the answer is Kiosk."), ("Verification_Expert", "TERMINATE")],
     2, 3),
    ("words the query or the task message held are not the answer's new fact",
     [("Data_Expert", TASK), ("Computer_terminal", NO_CODE),
      ("Finance_Expert", "We need the vendor type, so I will read the file."),
      ("Verification_Expert", "The vendor type is Finance."), ("Verification_Expert", "TERMINATE")],
     3, 3),
    ("a chat with no final answer has no origin",
     [("Data_Expert", TASK), ("Computer_terminal", NO_CODE), ("Finance_Expert", "TERMINATE")],
     None, None),
]


@pytest.mark.parametrize(("what", "steps", "origin", "answer"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_answer_origin(what: str, steps: list[tuple[str, str]], origin: int | None, answer: int | None) -> None:
    found = answer_origin(chat(*steps))
    if origin is None:
        assert found is None
        return
    assert found is not None and (found.turn, found.failure_turn) == (origin, answer)
    assert found.chain[0].turn == origin and found.chain[-1].turn == answer


def test_the_fall_back_is_its_own_row_and_the_judge_row_stays_the_judges() -> None:
    """Two chats labelled at the answer's origin (T2): the judge finds a failure in one (at T3), none in the other.
    The judge's row counts only its own prediction; the fall-back row adds the answer's origin where it found none."""
    asserted = chat(("Data_Expert", TASK), ("Computer_terminal", NO_CODE),
                    ("Finance_Expert", "From experience such a mall's weakest tenant is usually a Kiosk."),
                    ("Verification_Expert", "Agreed, the answer is Kiosk."), ("Verification_Expert", "TERMINATE"))
    other = asserted.model_copy(update={"id": "ww-other"})
    # Who&When steps are history indexes: T2 is history[2]
    labels = [TrajectoryLabels(label_id=name, kind="who-and-when", failures=[LabelledFailure(step=2, agent="Finance_Expert", is_root=True)])
              for name in ("a", "b")]
    issues = {other.id: [issue(3)]}
    report = evaluate(labels, {"a": asserted, "b": other}, issues, {asserted.id: True, other.id: True}, "who-and-when", k=0)
    rows = report.predictors
    assert (rows["judge"].step_exact.hits, rows["judge"].step_exact.n) == (0, 2)
    assert rows["answer-origin"].step_exact.hits == 2
    assert rows["judge-or-answer-origin"].step_exact.hits == 1  # the judge's T3 is kept where it has one
    assert {"answer-origin", "judge-or-answer-origin"} <= set(BASELINES)


# (what, steps, expected first agent turn)
FIRST_STEPS: list[tuple[str, list[tuple[str, str]], int]] = [
    ("a chat opened by a task message: the next agent turn", [("Data_Expert", TASK), ("Computer_terminal", NO_CODE),
                                                              ("Finance_Expert", "I will read the file.")], 2),
    ("a chat whose first agent works at once: T1", [("Data_Expert", "I will read the file first."),
                                                    ("Finance_Expert", "Then I compute.")], 1),
]


@pytest.mark.parametrize(("what", "steps", "turn"), FIRST_STEPS, ids=[f[0] for f in FIRST_STEPS])
def test_first_agent_turn(what: str, steps: list[tuple[str, str]], turn: int) -> None:
    assert first_agent_turn(chat(*steps)) == turn


# (label id, half): the split is the first byte of sha256(label id), even = dev; fixed for ever
HALVES: list[tuple[str, str]] = [
    ("Algorithm-Generated/1.json", "test"),
    ("Hand-Crafted/1.json", "test"),
    ("Algorithm-Generated/10.json", "dev"),
    ("2", "dev"),
]


@pytest.mark.parametrize(("label_id", "half"), HALVES)
def test_label_half_is_a_fixed_hash(label_id: str, half: str) -> None:
    assert label_half(label_id) == half
