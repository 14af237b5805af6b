"""The offline editor's dependency checks and validators on the fact ledger (issue 24 items 1 and 3): returned
values by first appearance, retries by call path, references to the deleted failure tied by values, resource
and turn (a paraphrase several turns later naming no call), premature claims on the ledger's claims (in any
language), and the final answer's support by the data a receipt returned. Table-driven where the cases share a
shape; each case is built here, none comes from the held-out sets."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge.model import Message, Trajectory
from judge.repair import offline_edit
from judge.repair.editor import EditResult, apply_edit
from judge.repair.textref import Detectors
from judge.repair.validators import find_premature_claims, validate_edit
from judge.testing.builders import call, issue, say, tool, trajectory

CREATE = "lark-cli base +record-create --base bascnShop01 --table tblProd01 --json @products.json"
BAD = CREATE + " --records products.json"
UNKNOWN_FLAG = "Error: unknown flag: --records\nRun 'lark-cli base +record-create --help' for usage."
CREATED = json.dumps({"record_ids": [f"recP{i}a9Kx2" for i in range(6)]})


def failed_first(*rest: Message, query: str = "Add the 6 sample products to the Products table.") -> Trajectory:
    """T1 fails on an unknown flag (rejected before it ran), then ``rest``."""
    return trajectory("t", [say("", call("c1", "Bash", command=BAD)), tool("c1", UNKNOWN_FLAG, error=True, exit_code=2),
                            *rest], query=query)


def kinds(result: EditResult) -> dict[str, str]:
    return {d.kind: d.status for d in result.dependencies}


# --- dependency checks ----------------------------------------------------------------------------------


def test_help_and_a_shortcut_retry_are_not_decisions_on_the_failure(detectors: Detectors) -> None:
    """`+record-create --help` only prints usage (read-only), `--help` is no value the failure handed on, and the
    same shortcut with other flags is the retry: the failed call is deletable once nothing refers to it."""
    original = failed_first(
        say("", call("c2", "Bash", command="lark-cli base +record-create --help")),
        tool("c2", "Usage: lark-cli base +record-create --base ID --table ID --json FILE", exit_code=0),
        say("", call("c3", "Bash", command=CREATE)), tool("c3", CREATED, exit_code=0),
        say("6 products added."),
    )
    result = offline_edit(original, issue(1), detectors=detectors)
    assert result.status == "edited", result.reason
    assert kinds(result)["control"] == "resolved" and "returned-values" not in kinds(result)


@pytest.mark.parametrize(("later_receipt", "blocking"), [
    ("", True),                              # only the deleted receipt ever showed fldQty09: the fix rests on it
    ('{"fields": ["fldQty09"]}', False),     # a kept receipt shows it before it is used: that one is its source
])
def test_a_returned_value_blocks_until_another_receipt_shows_it(detectors: Detectors, later_receipt: str,
                                                                blocking: bool) -> None:
    create = "lark-cli base +field-create --base bascnInv07 --table tblStock3 --name Qty --type number"
    steps: list[Message] = [say("", call("c1", "Bash", command=create)),
                            tool("c1", "Error: field 'Qty' already exists as fldQty09; invalid argument", error=True, exit_code=1)]
    if later_receipt:
        steps += [say("", call("c2", "Bash", command="lark-cli base +field-list --base bascnInv07 --table tblStock3")),
                  tool("c2", later_receipt, exit_code=0)]
    steps += [say("", call("c3", "Bash", command="lark-cli base +field-update --base bascnInv07 --table tblStock3 --field fldQty09 --type number")),
              tool("c3", '{"ok": true}', exit_code=0), say("Qty is numeric now.")]
    result = offline_edit(trajectory("v", steps, query="Make the Qty field numeric."), issue(1), detectors=detectors)
    returned = [d for d in result.dependencies if d.kind == "returned-values"]
    assert bool(returned) is blocking, result.dependencies
    if blocking:
        assert returned[0].evidence == "fldQty09" and result.status == "online"


LATE = "Since my first try did not work out I re-sent the rows with the right option"


def _late(final: str) -> Trajectory:
    """A failure, its retry, two more turns, and a final answer that mentions the failure by paraphrase only."""
    return failed_first(
        say("", call("c2", "Bash", command=CREATE)), tool("c2", CREATED, exit_code=0),
        say("", call("c3", "Bash", command="lark-cli base +record-list --base bascnShop01 --table tblProd01")),
        tool("c3", json.dumps({"items": [{"Name": n} for n in ["Pen", "Tape", "Ruler", "Ink", "Clip", "Pad"]]}), exit_code=0),
        say("", call("c4", "Bash", command="lark-cli base +table-get --base bascnShop01 --table tblProd01")),
        tool("c4", '{"name": "Products"}', exit_code=0),
        say(final),
    )


@pytest.mark.parametrize(("final", "status", "action"), [
    (LATE + ". All 6 products are in the table.", "edited", "removed"),          # cut; the answer stays
    (LATE + ", and all 6 products are now in the table.", "pending", "flagged"),  # the whole answer: neither kept nor cut
])
def test_a_late_paraphrase_naming_no_call_is_tied_to_the_deleted_failure_by_turn(
        detectors: Detectors, final: str, status: str, action: str) -> None:
    result = offline_edit(_late(final), issue(1), detectors=detectors)
    assert result.status == status, result.reason
    assert [(s.text.startswith("Since my first try"), s.action) for s in result.sentences] == [(True, action)]


def test_a_careless_edit_keeping_the_late_paraphrase_is_refused(detectors: Detectors) -> None:
    original = _late(LATE + ". All 6 products are in the table.")
    careless, message_map, _ = apply_edit(original, {"c1"}, [])
    refused = {r.kind for r in validate_edit(original, careless, message_map, ["c1"], detectors) if not r.passed}
    assert "reference" in refused


def test_a_later_failure_keeps_its_own_paraphrase(detectors: Detectors) -> None:
    """The deleted failure is not the last one before the text: the paraphrase is about the later failure."""
    original = failed_first(
        say("", call("c2", "Bash", command=CREATE)), tool("c2", CREATED, exit_code=0),
        say("", call("c3", "Bash", command="lark-cli base +dashboard-create --base bascnShop01 --name Stock")),
        tool("c3", "Error: quota exceeded for dashboards", error=True, exit_code=1),
        say("", call("c4", "Bash", command="lark-cli base +record-list --base bascnShop01 --table tblProd01")),
        tool("c4", CREATED, exit_code=0),
        say(LATE.replace("re-sent the rows with the right option", "left the dashboard out") + ". The 6 products are in."),
    )
    result = offline_edit(original, issue(1), detectors=detectors)
    assert not any(s.text.startswith("Since my first try") for s in result.sentences), result.sentences


# --- premature claims on the ledger's claims ---------------------------------------------------------------


PREMATURE: list[tuple[str, Callable[[], Trajectory], bool]] = [
    ("zh claim in the message that makes an English-argument call", lambda: trajectory("p", [
        say("商品已全部创建。", call("c1", "Bash", command=CREATE)), tool("c1", CREATED, exit_code=0), say("好了。")]), True),
    ("ja claim in the message that makes an English-argument call", lambda: trajectory("p", [
        say("商品を登録しました。", call("c1", "Bash", command=CREATE)), tool("c1", CREATED, exit_code=0), say("以上です。")]), True),
    ("de claim before the call", lambda: trajectory("p", [
        say("Die Produkte wurden erstellt.", call("c0", "Read", file_path="products.json")), tool("c0", "[...]"),
        say("", call("c1", "Bash", command=CREATE)), tool("c1", CREATED, exit_code=0), say("Fertig.")]), True),
    ("near miss: zh report of the previous success", lambda: trajectory("p", [
        say("", call("c0", "Bash", command="lark-cli base +table-create --base bascnShop01 --name Products")),
        tool("c0", '{"table_id": "tblProd01"}', exit_code=0),
        say("表已创建。", call("c1", "Bash", command=CREATE)), tool("c1", CREATED, exit_code=0), say("好了。")]), False),
    ("near miss: zh claim after the receipt", lambda: trajectory("p", [
        say("", call("c1", "Bash", command=CREATE)), tool("c1", CREATED, exit_code=0), say("商品已全部创建。")]), False),
]


@pytest.mark.parametrize(("what", "make", "premature"), PREMATURE, ids=[p[0] for p in PREMATURE])
def test_premature_claims_on_the_ledger(detectors: Detectors, what: str, make: Callable[[], Trajectory],
                                        premature: bool) -> None:
    assert bool(find_premature_claims(make(), detectors)) is premature


# --- the final answer's support ----------------------------------------------------------------------------


LOOKUP = "lark-cli base +record-list --base bascnInv07 --table tblStock3 --fields Name,Stock"


@pytest.mark.parametrize(("final", "refused"), [
    ("The lowest stock is Stapler, with 2 left.", True),   # names and a small number only the lookup returned
    ("最も在庫が少ないのはホチキスです。", True),
    ("I could not read the stock.", False),                 # states nothing the lookup returned
])
def test_a_rewrite_that_drops_the_lookup_behind_the_answer_is_refused(detectors: Detectors, final: str,
                                                                       refused: bool) -> None:
    receipt = "Warning: 1 attachment could not be downloaded\n" + json.dumps(
        {"items": [{"Name": "Pen", "Stock": 40}, {"Name": "Stapler", "Stock": 2}, {"Name": "ホチキス", "Stock": 2}]})
    original = trajectory("lookup", [say("", call("c1", "Bash", command=LOOKUP)), tool("c1", receipt, exit_code=1),
                                     say(final)], query="Which product has the lowest stock?")
    edited, message_map, _ = apply_edit(original, {"c1"}, [])
    results = validate_edit(original, edited, message_map, ["c1"], detectors)
    assert ("unsupported-final" in {r.kind for r in results if not r.passed}) is refused
