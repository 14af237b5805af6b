"""Issue 24, editor round E2: principles pooled from the wrong decisions of several editions, by structure.

Cases written here (not from any held-out set), in languages with no vocabulary in the rules config (Slovenian,
Swahili, Romanian, Estonian), read through the real importer (OpenAI chat records). Table-driven.

- a rewrite that deletes a failed call and inserts into a sentence of the final answer it keeps whole a run of
  words that shows nothing a receipt, a call or the query shows ("v drugem poskusu", "Baada ya kurekebisha ...") tells how the agent got past
  the failure: a reference to the deleted failure, in any language; added values, the query's own words, an
  unchanged final answer and a reworded one are not.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge.model import Trajectory, number_turns
from judge.repair.textref import Detectors
from judge.repair.validators import validate_edit
from judge.testing.builders import bash_chat


def chat(query: str, steps: list[tuple[str, str, int] | str]) -> Trajectory:
    return bash_chat(query, steps, record_id="e2", text_joins_next_call=True)


def rewrite_without_first_call(original: Trajectory, final: str) -> tuple[Trajectory, list[int]]:
    """The rewriter output that drops the first call and its receipt and writes ``final`` as the final answer."""
    drop = {i for i, m in enumerate(original.messages)
            if any(c.id == "c1" for c in m.tool_calls) or (m.receipt is not None and m.receipt.call_id == "c1")}
    message_map = [i for i in range(len(original.messages)) if i not in drop]
    edited = original.model_copy(deep=True)
    edited.messages = [edited.messages[i] for i in message_map]
    edited.messages[-1].content = final
    number_turns(edited.messages)
    return edited, message_map


SL_FIELD = chat("Dodaj številsko polje Teža v tabelo tblPk3 (baza bascnSl1).", [
    ("lark-cli base +field-create --base bascnSl1 --table tblPk3 --json '{\"name\":\"Teža\",\"type\":\"numeric\"}'",
     "Error: unknown field type 'numeric'", 1),
    ("lark-cli base +field-create --base bascnSl1 --table tblPk3 --json '{\"name\":\"Teža\",\"type\":\"number\"}'",
     '{"field_id": "fldTz4"}', 0),
    "Polje Teža (fldTz4) je ustvarjeno."])
SW_COUNT = chat("Jedwali Maagizo (tblMg7, Base bascnSw2) lina rekodi ngapi?", [
    ("lark-cli base +record-count --base bascnSw2 --table tblMG7", "Error: 404 TableIdNotFound: tblMG7", 1),
    ("lark-cli base +record-count --base bascnSw2 --table tblMg7", '{"count": 2310}', 0),
    "Jedwali Maagizo lina rekodi 2310."])
RO_FIELD = chat("Adaugă câmpul Termen de tip dată în tabelul tblRo2 (baza bascnRo1).", [
    ("lark-cli base +field-create --base bascnRo1 --table tblRo2 --json '{\"name\":\"Termen\",\"type\":\"datetime\"}'",
     "Error: unknown field type 'datetime'", 1),
    ("lark-cli base +field-create --base bascnRo1 --table tblRo2 --json '{\"name\":\"Termen\",\"type\":\"date\"}'",
     '{"field_id": "fldRo5"}', 0),
    "Am adăugat câmpul Termen (fldRo5)."])

# (case, original, rewritten final answer, refused as a reference)
ADDED_STORIES: list[tuple[str, Trajectory, str, bool]] = [
    ("sl-second-try", SL_FIELD, "Polje Teža (fldTz4) je ustvarjeno v drugem poskusu.", True),
    ("sw-after-fixing-the-id", SW_COUNT,
     "Baada ya kurekebisha kitambulisho cha jedwali, jedwali Maagizo lina rekodi 2310.", True),
    ("ro-after-correcting-the-type", RO_FIELD, "După corectarea tipului, am adăugat câmpul Termen (fldRo5).", True),
    # controls: the final answer kept, values added (the type the call set), the query's own words added
    ("sl-kept", SL_FIELD, "Polje Teža (fldTz4) je ustvarjeno.", False),
    ("sl-value-added", SL_FIELD, "Polje Teža (fldTz4, number) je ustvarjeno.", False),
    ("ro-query-words-added", RO_FIELD, "Am adăugat câmpul Termen de tip dată în tabelul tblRo2 (fldRo5).", False),
    ("sw-reworded-with-values", SW_COUNT, "Maagizo (tblMg7): rekodi 2310.", False),
    # a reworded answer (the original sentence not kept whole) is no insertion, whatever new words it has
    ("sl-reworded", SL_FIELD, "Ustvaril sem novo številsko polje z identifikatorjem fldTz4.", False),
]


@pytest.mark.parametrize(("case", "original", "final", "refused"), ADDED_STORIES, ids=[row[0] for row in ADDED_STORIES])
def test_a_story_added_to_the_final_answer_of_a_deletion_is_a_reference(
        case: str, original: Trajectory, final: str, refused: bool, detectors: Detectors) -> None:
    edited, message_map = rewrite_without_first_call(original, final)
    failed = [v for v in validate_edit(original, edited, message_map, ["c1"], detectors) if not v.passed]
    if refused:
        assert "reference" in {v.kind for v in failed}, (case, [(v.name, v.findings) for v in failed])
    else:
        assert not failed, (case, [(v.name, v.findings) for v in failed])
