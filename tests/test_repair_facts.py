"""The offline editor on the fact ledger (issue 24, item 3): deletions refused for effects and dependencies,
edited trajectories that share nothing with their original, and bad "rewriter outputs" (edited trajectories
written by hand here) rejected by the same validators, each with the kind of refusal it stands for."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import BaseModel

from judge.model import ToolSpec, Trajectory, Usage
from judge.repair import offline_edit
from judge.repair.dependencies import SentenceEdit
from judge.repair.editor import apply_edit
from judge.repair.validators import ValidatorResult, validate_edit
from judge.testing.builders import call, issue, say, tool, trajectory

BATCH = "lark-cli base record batch-create --table tblOrd001 --json @orders.json"


def base_session() -> Trajectory:
    """T1 creates 3 records (ids in the receipt), T2's read-back lists them, T3 reports them."""
    return trajectory("base", [
        say("Creating the orders.", call("c1", "Bash", command=BATCH)),
        tool("c1", "created 3 records: recAAA111, recBBB222, recCCC333", exit_code=0),
        say("Reading them back.", call("c2", "Bash", command="lark-cli base record list --table tblOrd001")),
        tool("c2", '[{"id": "recAAA111"}, {"id": "recBBB222"}, {"id": "recCCC333"}]', exit_code=0),
        say("I added 3 orders: recAAA111, recBBB222 and recCCC333."),
    ], query="Add the 3 orders of orders.json to table tblOrd001 and report their ids.")


def failed_then_fixed() -> Trajectory:
    """T1 fails (an invalid field), T2 says so and redoes it, T3 reports."""
    return trajectory("fixed", [
        say("Creating the orders.", call("c1", "Bash", command=BATCH + " --strict")),
        tool("c1", "Error: unknown flag --strict", error=True, exit_code=2),
        say("The --strict flag is unsupported; retrying without it.", call("c2", "Bash", command=BATCH)),
        tool("c2", "created 3 records: recAAA111, recBBB222, recCCC333", exit_code=0),
        say("The 3 orders are in: recAAA111, recBBB222, recCCC333."),
    ], query="Add the 3 orders of orders.json to table tblOrd001.")


def partial_batch() -> Trajectory:
    """T1's batch fails after creating 2 of 5 rows (an invalid value, which reads like a rejection); T2 redoes it."""
    return trajectory("partial", [
        say("Creating the orders.", call("c1", "Bash", command=BATCH)),
        tool("c1", "created 2 of 5 rows\nError: invalid value for field Owner", error=True, exit_code=1),
        say("Retrying with the owner set.", call("c2", "Bash", command=BATCH + " --owner me")),
        tool("c2", "created 5 records", exit_code=0),
        say("The 5 orders are in."),
    ], query="Add the 5 orders of orders.json.")


def refusals(results: list[ValidatorResult]) -> set[str]:
    return {r.kind or r.name for r in results if not r.passed}


def test_apply_edit_returns_a_deep_copy() -> None:
    original = failed_then_fixed()
    edited, _, _ = apply_edit(original, {"c1"}, [])
    edited_call = next(c for m in edited.messages for c in m.tool_calls)
    original_call = next(c for m in original.messages for c in m.tool_calls if c.id == edited_call.id)
    assert edited_call is not original_call
    assert isinstance(edited_call.arguments, dict)
    edited_call.arguments["command"] = "rm -rf /"
    assert isinstance(original_call.arguments, dict) and original_call.arguments["command"] == BATCH
    receipts = [m.receipt for m in edited.messages if m.receipt is not None]
    assert all(r is not o for r in receipts for o in (m.receipt for m in original.messages))


def _objects(value: object) -> list[object]:
    """Every mutable object inside a trajectory (models, lists, dicts), depth first."""
    if isinstance(value, BaseModel):
        parts = [*value.__dict__.values(), *(value.__pydantic_extra__ or {}).values()]
    elif isinstance(value, dict):
        parts = list(value.values())
    elif isinstance(value, list):
        parts = list(value)
    else:
        return []
    return [value, *(o for part in parts for o in _objects(part))]


def _with_parts() -> Trajectory:
    """failed_then_fixed with nested arguments, tool schemas, usage and metadata extra: what a copy must not share."""
    original = failed_then_fixed()
    original.messages[2].tool_calls[0].arguments = {"command": BATCH, "env": {"vars": ["A", "B"]}}
    original.messages[4].usage = Usage(input_tokens=3, output_tokens=4)
    original.metadata.tools = [ToolSpec(name="Bash", parameters={"type": "object", "properties": {"command": {}}})]
    original.metadata.extra = {"labels": ["x"], "nested": {"k": [1, 2]}}
    return original


@pytest.mark.parametrize("deleted", [set(), {"c1"}])
def test_apply_edit_shares_no_object_and_reads_as_a_pydantic_deep_copy(deleted: set[str]) -> None:
    original = _with_parts()
    before = original.model_dump_json()
    edited, message_map, _ = apply_edit(original, deleted, [])
    shared = {id(o) for o in _objects(original)} & {id(o) for o in _objects(edited)}
    assert not shared
    assert original.model_dump_json() == before
    # What pydantic's generic deep copy of the same messages would give, fields set included.
    for index, message in zip(message_map, edited.messages):
        reference = original.messages[index].model_copy(deep=True)
        assert message.model_fields_set == reference.model_fields_set
        assert message.model_dump(exclude={"turn"}) == reference.model_dump(exclude={"turn"})
    assert edited.metadata.model_dump(exclude={"extra"}) == original.metadata.model_dump(exclude={"extra"})


def test_a_trial_edit_reads_as_the_real_one_and_leaves_the_original_as_it_was() -> None:
    original = _with_parts()
    before = original.model_dump_json()
    sentence = "The --strict flag is unsupported; retrying without it."
    cut = [SentenceEdit(message_index=4, turn=2, field="content", start=0, end=len(sentence), text=sentence,
                        margin=0.5, action="removed", why="refers to the deleted failure")]
    real = apply_edit(original, {"c1"}, cut)
    trial = apply_edit(original, {"c1"}, cut, trial=True)
    assert trial[0].model_dump() == real[0].model_dump() and trial[1:] == real[1:]
    assert original.model_dump_json() == before  # turns renumbered and text cut on the trial's own messages
    assert trial[0].messages is not original.messages and trial[0].metadata is not original.metadata


def test_a_failed_batch_that_created_rows_is_not_deleted(detectors) -> None:  # type: ignore[no-untyped-def]
    result = offline_edit(partial_batch(), issue(1), detectors=detectors)
    assert result.status == "online" and "effects" in result.reason
    assert result.edited is None


def test_an_honest_deletion_passes(detectors) -> None:  # type: ignore[no-untyped-def]
    original = failed_then_fixed()
    result = offline_edit(original, issue(1), detectors=detectors)
    assert result.status == "edited", result.reason
    assert result.edited is not None
    assert refusals(validate_edit(original, result.edited, result.message_map, ["c1"], detectors)) == set()


def _rewrite(original: Trajectory, change: Callable[[Trajectory], None]) -> Trajectory:
    edited = original.model_copy(deep=True)
    change(edited)
    return edited


def _set(index: int, text: str) -> Callable[[Trajectory], None]:
    def change(t: Trajectory) -> None:
        t.messages[index].content = text
    return change


# (what, the original, its rewrite, kept message indexes (None: all), deleted call ids, expected refusal kind).
# Message 0 is the system prompt, 1 the query, 2 the first assistant turn.
REWRITES: list[tuple[str, Callable[[], Trajectory], Callable[[Trajectory], None], list[int] | None, list[str], str]] = [
    ("a value stated before the receipt that first shows it", base_session,
     _set(2, "Creating the orders; recCCC333 will be the last one."), None, [], "order"),
    ("an id changed in text", base_session, _set(6, "I added 3 orders: recAAA111, recBBB222 and recCCC334."), None, [],
     "order"),
    ("a future-tense claim", failed_then_fixed, _set(4, "The orders will be created in a moment."), None, [],
     "future-claim"),
    ("a zh claim in the message that makes an English-argument call", base_session,
     _set(2, "订单已全部创建。"), None, [], "order"),
    ("a ja claim in the message that makes an English-argument call", base_session,
     _set(2, "注文を作成しました。"), None, [], "order"),
    ("a failure turned into success with its receipt kept", failed_then_fixed,
     _set(4, "The first call worked; running it once more."), None, [], "flip"),
]


@pytest.mark.parametrize(("what", "make", "change", "kept", "deleted", "kind"), REWRITES, ids=[r[0] for r in REWRITES])
def test_a_bad_rewriter_output_is_refused(detectors, what: str, make: Callable[[], Trajectory],  # type: ignore[no-untyped-def]
                                          change: Callable[[Trajectory], None], kept: list[int] | None,
                                          deleted: list[str], kind: str) -> None:
    original = make()
    edited = _rewrite(original, change)
    message_map = kept if kept is not None else list(range(len(original.messages)))
    assert kind in refusals(validate_edit(original, edited, message_map, deleted, detectors))


def _drop(original: Trajectory, call_id: str) -> tuple[Trajectory, list[int]]:
    """The rewriter's deletion of one call (and its receipt), turns renumbered as apply_edit does."""
    edited, message_map, _ = apply_edit(original, {call_id}, [])
    return edited, message_map


def test_deleting_a_call_with_side_effects_is_refused(detectors) -> None:  # type: ignore[no-untyped-def]
    original = base_session()
    edited, message_map = _drop(original, "c1")
    kinds = refusals(validate_edit(original, edited, message_map, ["c1"], detectors))
    assert "side-effects" in kinds


def test_deleting_a_call_whose_receipt_shows_effects_is_refused(detectors) -> None:  # type: ignore[no-untyped-def]
    original = partial_batch()
    edited, message_map = _drop(original, "c1")
    assert "effects" in refusals(validate_edit(original, edited, message_map, ["c1"], detectors))


def test_deleting_the_only_lookup_behind_the_final_answer_is_refused(detectors) -> None:  # type: ignore[no-untyped-def]
    original = trajectory("lookup", [
        say("Looking the order up.", call("c1", "Bash", command="lark-cli base record get --table tblOrd001 --id recAAA111")),
        tool("c1", '{"id": "recAAA111", "amount": 4250}', exit_code=0),
        say("Order recAAA111 is for 4250."),
    ], query="What is the amount of order recAAA111 in table tblOrd001?")
    edited, message_map = _drop(original, "c1")
    kinds = refusals(validate_edit(original, edited, message_map, ["c1"], detectors))
    assert {"unsupported-final", "dependency"} <= kinds


def test_a_late_paraphrase_of_the_deleted_failure_is_refused(detectors) -> None:  # type: ignore[no-untyped-def]
    original = trajectory("late", [
        say("Reading the config.", call("c1", "Read", file_path="config.yaml")),
        tool("c1", "Error: ENOENT: no such file or directory, open 'config.yaml'", error=True),
        say("Reading the service file.", call("c2", "Read", file_path="config/service.yaml")),
        tool("c2", "service:\n  name: billing\n  port: 8080\n"),
        say("Listing the Base tables.", call("c3", "Bash", command="lark-cli base table list")),
        tool("c3", '[{"id": "tblOrd001"}]', exit_code=0),
        say("Since the earlier read failed, I double-checked everything; the service listens on 8080."),
    ], query="Which port does the billing service use?")
    edited, message_map = _drop(original, "c1")
    assert "reference" in refusals(validate_edit(original, edited, message_map, ["c1"], detectors))


def test_a_failure_shown_only_by_its_content_is_a_failed_call(detectors) -> None:  # type: ignore[no-untyped-def]
    # Anthropic-style tool results carry no exit code: the ledger reads the failure from the content.
    unflagged = trajectory("unflagged", [
        say("Finding the table.", call("c1", "Bash", command="lark-cli base table get --name Order")),
        tool("c1", "Error: table 'Order' not found"),
        say("Listing the tables.", call("c2", "Bash", command="lark-cli base table list")),
        tool("c2", '[{"id": "tblOrd001", "name": "Orders"}]'),
        say("The Orders table is tblOrd001."),
    ], query="Which id does the Orders table have?")
    result = offline_edit(unflagged, issue(1), detectors=detectors)
    assert result.kind == "remove-failed-call" and result.calls == ["c1"]
    assert result.status == "edited", result.reason
