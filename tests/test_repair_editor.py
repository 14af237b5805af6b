"""The offline editor: the four dependency kinds (positive and negative), the validators, the reference design's
two constructed counterexamples, and re-scoring of edited trajectories with the rules judge."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from fixtures.repair import cases
from judge.model import Message
from judge.repair import offline_edit
from judge.repair.calls import call_sites
from judge.repair.editor import apply_edit
from judge.repair.validators import (
    information_order,
    no_failed_receipt_made_success,
    no_premature_claim,
    no_reference_to_deleted_failure,
    validate_edit,
)


def deps(result, kind):
    return [d for d in result.dependencies if d.kind == kind]


# --- textual context --------------------------------------------------------------------------------


@pytest.mark.parametrize("reference", [
    "Since the earlier attempt didn't go through, I'll try again with the right path.",  # the design's paraphrase
    "前面那步没成功，重新来。",
    "さっきのはダメだったので、別の場所を読みます。",
    "That failed, so retry with the other path.",
])
def test_paraphrased_reference_to_the_deleted_failure_is_cut(detectors, reference):
    traj = cases.read_retry(reference)
    result = offline_edit(traj, cases.issue(1), detectors=detectors)
    assert result.status == "edited", result.reason
    assert result.route == "offline-edit"
    assert [s.text for s in result.sentences] == [reference]
    assert deps(result, "textual")[0].status == "resolved"
    texts = " ".join(m.content for m in result.edited.messages)
    assert reference not in texts
    # the retry is now T1, and the final answer T2; the mapping says so
    assert result.turn_map == {1: None, 2: 1, 3: 2}
    assert [m.turn for m in result.edited.messages if m.role == "assistant"] == [1, 2]
    assert all(v.passed for v in result.validators), [v for v in result.validators if not v.passed]
    assert "-tool[c1] ERROR" in result.diff and "# turns: T1->removed" in result.diff


def test_retry_that_does_not_mention_the_failure_keeps_its_text(detectors):
    traj = cases.read_retry_silent()
    result = offline_edit(traj, cases.issue(1), detectors=detectors)
    assert result.status == "edited"
    assert result.sentences == []
    assert deps(result, "textual")[0].status == "none"
    assert "Reading the service file under config/." in [m.content for m in result.edited.messages]


def test_a_reference_too_long_to_cut_is_flagged_and_pending(detectors):
    result = offline_edit(cases.long_reference(), cases.issue(1), detectors=detectors)
    assert result.status == "pending" and result.route == "pending"
    assert [s.action for s in result.sentences] == ["flagged"]
    assert deps(result, "textual")[0].status == "unknown"
    assert result.edited is None


# --- returned values ----------------------------------------------------------------------------------


def test_a_value_only_the_failed_receipt_returned_sends_the_issue_online(detectors):
    result = offline_edit(cases.returned_value(used=True), cases.issue(1), detectors=detectors)
    found = deps(result, "returned-values")
    assert [d.status for d in found] == ["blocking"] and found[0].evidence == "tblQ7x9Kp2Lm"
    assert result.status == "online" and result.route == "online-guided"
    assert result.calls == ["c1"] and result.removed_calls == [] and result.edited is None


def test_receipt_values_that_are_not_used_later_do_not_block(detectors):
    result = offline_edit(cases.returned_value(used=False), cases.issue(1), detectors=detectors)
    assert deps(result, "returned-values") == []
    assert result.status == "edited", result.reason


# --- resource state ---------------------------------------------------------------------------------------


def test_a_write_with_unknown_outcome_cannot_be_deleted(detectors):
    result = offline_edit(cases.write_unknown(), cases.issue(1), detectors=detectors)
    state = deps(result, "resource-state")
    assert state[0].status == "blocking" and "does not show that nothing was changed" in state[0].detail
    assert result.route == "online-guided"


def test_a_write_rejected_before_it_ran_is_side_effect_free(detectors):
    result = offline_edit(cases.write_rejected(), cases.issue(1), detectors=detectors)
    assert deps(result, "resource-state")[0].status == "none"
    assert "rejected before it ran" in deps(result, "resource-state")[0].detail
    assert result.status == "edited", result.reason
    assert "Wrong flag" not in " ".join(m.content for m in result.edited.messages)


def test_a_read_only_call_has_no_resource_dependency(detectors):
    result = offline_edit(cases.read_retry_silent(), cases.issue(1), detectors=detectors)
    assert deps(result, "resource-state")[0].status == "none"


# --- control conditions ---------------------------------------------------------------------------------


def test_a_fallback_chosen_because_of_the_failure_is_a_control_dependency(detectors):
    result = offline_edit(cases.fallback_write(), cases.issue(1), detectors=detectors)
    control = deps(result, "control")
    assert control[0].status == "blocking" and control[0].turn == 2
    assert result.route == "online-guided"


def test_a_retry_is_a_resolved_control_dependency(detectors):
    result = offline_edit(cases.read_retry_silent(), cases.issue(1), detectors=detectors)
    control = deps(result, "control")
    assert control[0].status == "resolved" and "retries Read" in control[0].detail


def test_no_later_decision_means_no_control_dependency(detectors):
    traj = cases.trajectory("read-then-answer", [
        cases.say("Checking the file.", cases.call("c1", "Read", file_path="config.yaml")),
        cases.tool("c1", "Error: ENOENT: no such file or directory", error=True),
        cases.say("The service listens on port 8080, as the query's runbook says."),
    ])
    result = offline_edit(traj, cases.issue(1), detectors=detectors)
    assert deps(result, "control")[0].status == "none"


# --- validators and the reference design's counterexamples --------------------------------------------


@pytest.mark.parametrize("reference", [
    "Since the earlier attempt didn't go through, I'll try again with the right path.",
    "前面那步没成功，重新来。",
    "Retrying with the path under config/.",  # weak alone; caught because it sits where the failure was answered
])
def test_counterexample_paraphrased_reference_left_by_a_careless_edit_is_caught(detectors, reference):
    """A careless editor deletes the failed call but keeps the paraphrased reference: the validator fails."""
    traj = cases.read_retry(reference)
    careless, message_map, _ = apply_edit(traj, {"c1"}, [])  # no sentence cut
    result = no_reference_to_deleted_failure(traj, careless, message_map, ["c1"], detectors)
    assert not result.passed
    assert reference in result.findings[0]


IMPORT = "lark-cli base records create --table-id tblPr0d8KqW3 --json @products.json"
DASHBOARD = "lark-cli base dashboard create --name 'Stock by category' --group-by Category"


@pytest.mark.parametrize("messages", [
    pytest.param(lambda c: [  # the claim sits in the message that makes the call
        c.say("The products were imported successfully.", c.call("c2", "Bash", command=IMPORT)),
        c.tool("c2", '{"ok": true, "data": {"records": 6}}'),
        c.say("Six products are in the table."),
    ], id="same-message"),
    pytest.param(lambda c: [  # the claim comes a turn before the operation is even attempted
        c.say("Importing.", c.call("c2", "Bash", command=IMPORT)),
        c.tool("c2", '{"ok": true, "data": {"records": 6}}'),
        c.say("Products imported, and the stock-by-category dashboard is created.", c.call("c3", "Read", file_path="notes.md")),
        c.tool("c3", "notes"),
        c.say("Creating it.", c.call("c4", "Bash", command=DASHBOARD)),
        c.tool("c4", '{"ok": true}'),
        c.say("Done."),
    ], id="future-operation"),
])
def test_counterexample_premature_claim_of_a_future_operation_is_caught(detectors, messages):
    """An edit that leaves a success claim before the receipt that could support it must not pass."""
    traj = cases.trajectory("premature", messages(cases), query="Import products.json into table tblPr0d8KqW3 and add a dashboard.")
    result = no_premature_claim(traj, detectors)
    assert not result.passed
    assert "before its receipt" in result.findings[0]


def test_a_status_report_of_the_previous_receipt_is_not_premature(detectors):
    traj = cases.trajectory("status", [
        cases.say("", cases.call("c1", "Bash", command="lark-cli base create --name Inventory")),
        cases.tool("c1", '{"ok": true, "data": {"base_token": "bascnInv7Qx2LmR"}}'),
        cases.say("Base created. Now the Products table.", cases.call("c2", "Bash", command="lark-cli base table create --base-token bascnInv7Qx2LmR --name Products")),
        cases.tool("c2", '{"ok": true}'),
        cases.say("Both exist."),
    ])
    assert no_premature_claim(traj, detectors).passed


def test_a_claim_after_its_receipt_is_not_premature(detectors):
    traj = cases.trajectory("in-order", [
        cases.say("Importing.", cases.call("c2", "Bash", command="lark-cli base records create --table-id tblPr0d8KqW3 --json @products.json")),
        cases.tool("c2", '{"ok": true, "data": {"records": 6}}'),
        cases.say("The products were imported successfully."),
    ], query="Import products.json into table tblPr0d8KqW3.")
    assert no_premature_claim(traj, detectors).passed


def test_a_failed_receipt_turned_into_success_is_caught():
    traj = cases.read_retry_silent()
    forged = traj.model_copy(deep=True)
    forged.messages[3].receipt.is_error = False  # the T1 receipt now "succeeds"
    result = no_failed_receipt_made_success(traj, forged)
    assert not result.passed and "now reads as success" in result.findings[0]


def test_information_order_catches_reordering_and_values_before_their_receipt():
    traj = cases.returned_value(used=True)
    moved = traj.model_copy(deep=True)
    # the receipt that returned tblQ7x9Kp2Lm removed: its value now appears from nowhere at T2
    moved.messages = [m for m in moved.messages if not (m.receipt and m.receipt.call_id == "c1")]
    moved.messages[2].tool_calls = []
    message_map = [0, 1, 2, 4, 5, 6]
    result = information_order(traj, moved, message_map)
    assert not result.passed and any("tblQ7x9Kp2Lm" in f for f in result.findings)
    swapped = traj.model_copy(deep=True)
    assert not information_order(traj, swapped, [0, 1, 3, 2, 4, 5, 6]).passed


def test_validators_pass_on_an_honest_edit(detectors):
    traj = cases.read_retry()
    result = offline_edit(traj, cases.issue(1), detectors=detectors)
    names = {v.name: v.passed for v in validate_edit(traj, result.edited, result.message_map, ["c1"], detectors)}
    assert names == {"no-reference-to-deleted-failure": True, "no-premature-claim": True,
                     "no-failed-receipt-made-success": True, "information-order": True, "rules-judge": True,
                     "no-side-effects-removed": True, "no-dependency-removed": True, "final-answer-supported": True,
                     "rewritten-values-supported": True,
                     "new-claims-supported": True, "final-report-kept": True}


def test_wording_fix_removes_a_phantom_failure_reference(detectors):
    traj = cases.phantom_reference()
    result = offline_edit(traj, cases.issue(2, category="semantic", tag="phantom-failure-reference"), detectors=detectors)
    assert result.status == "edited", result.reason
    assert result.edited.messages[-1].content == "The service listens on port 8080."


# --- re-scoring the edited trajectory with the rules judge -----------------------------------------------


@pytest.mark.parametrize("builder", [cases.read_retry, cases.write_rejected, cases.read_retry_silent])
def test_edited_trajectory_rescores_without_the_removed_defect(detectors, builder):
    rules = pytest.importorskip("judge.rules")
    traj = builder()
    before = rules.run_detectors(traj)
    # The failure was retried successfully: no rules finding (docs/finding-tags.md); an issue naming it (an LLM
    # judge's, a reviewer's) still has the editor remove the call, and the edit brings no finding in.
    assert before == []
    result = offline_edit(traj, cases.issue(1), detectors=detectors)
    assert result.status == "edited", result.reason
    assert rules.run_detectors(result.edited) == []


def test_receipts_are_compared_by_call_id(detectors):
    traj = cases.read_retry()
    result = offline_edit(traj, cases.issue(1), detectors=detectors)
    kept = {s.call.id: s.receipt for s in call_sites(result.edited)}
    assert set(kept) == {"c2"} and kept["c2"] == next(s.receipt for s in call_sites(traj) if s.call.id == "c2")
    assert isinstance(result.edited.messages[2], Message)
    assert result.edited.id == "read-retry+edit" and result.edited.metadata.extra["edited_from"] == "read-retry"


def test_receipts_paired_by_position_are_removed_with_their_call(detectors):
    """Formats without call ids on results (paired by position) are edited the same way."""
    traj = cases.read_retry_silent()
    for message in traj.messages:
        if message.receipt is not None:
            message.receipt.call_id = None
    assert [s.receipt.is_error for s in call_sites(traj)] == [True, False]
    result = offline_edit(traj, cases.issue(1), detectors=detectors)
    assert result.status == "edited", result.reason
    assert [m.role for m in result.edited.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert result.edited.messages[3].receipt.content.startswith("service:")


def test_a_user_who_answered_the_failure_is_a_control_dependency(detectors):
    """In a conversation (tau-bench style) the user's reply to a failure cannot be edited away."""
    traj = cases.trajectory("conversation", [
        cases.say("", cases.call("c1", "find_user_id_by_email", email="fatima@example.com")),
        cases.tool("c1", "Error: user not found", error=True),
        cases.say("I couldn't find that email. Could you give me your name and zip code?"),
        Message(role="user", content="Oh no! Fatima Taylor, 32169."),
        cases.say("", cases.call("c2", "find_user_id_by_name_zip", first_name="Fatima", last_name="Taylor", zip="32169")),
        cases.tool("c2", "fatima_taylor_3452"),
        cases.say("Found your account."),
    ], query="Help me with my order.")
    result = offline_edit(traj, cases.issue(1), detectors=detectors)
    control = deps(result, "control")
    assert control[0].status == "blocking" and "user message" in control[0].detail
    assert result.route == "online-guided"


def test_the_edit_is_judged_on_what_it_changed(detectors):
    """A premature claim already in the original is not the edit's doing (the judges report it); the same
    claim moved before its receipt by an edit is."""
    from judge.repair.validators import no_new_premature_claim

    create = "lark-cli base table create --name Products"
    traj = cases.trajectory("pre-existing", [
        cases.say("The Products table was created successfully.",
                  cases.call("c0", "Read", file_path="notes.md"), cases.call("c1", "Read", file_path="config.yaml")),
        cases.tool("c0", "notes"),
        cases.tool("c1", "Error: ENOENT: no such file or directory", error=True),
        cases.say("", cases.call("c2", "Read", file_path="config/service.yaml")),
        cases.tool("c2", "port: 8080"),
        cases.say("", cases.call("c3", "Bash", command=create)),
        cases.tool("c3", '{"ok": true}'),
        cases.say("Port 8080."),
    ])
    result = offline_edit(traj, cases.issue(1), detectors=detectors)
    assert result.status == "edited", result.reason
    claim = next(v for v in result.validators if v.name == "no-premature-claim")
    assert claim.passed and "1 already in the original" in claim.detail
    assert not no_premature_claim(result.edited, detectors).passed  # the absolute check still sees it

    honest = cases.trajectory("honest", [
        cases.say("", cases.call("c3", "Bash", command=create)),
        cases.tool("c3", '{"ok": true}'),
        cases.say("The Products table was created successfully."),
    ])
    careless = honest.model_copy(deep=True)
    careless.messages[2].content, careless.messages[4].content = "The Products table was created successfully.", "Done."
    assert no_new_premature_claim(honest, honest, detectors).passed
    assert not no_new_premature_claim(honest, careless, detectors).passed


IMPORT_OK = '{"ok": true, "data": {"records": 6}}'


@pytest.mark.parametrize("receipt, error, status, route", [
    (IMPORT_OK, False, "edited", "offline-edit"),                      # it did succeed: the claim only came early
    ("Error: request timed out", True, "online", "online-regenerate"),  # it never succeeded: a false belief
])
def test_premature_claim_is_cut_only_when_the_operation_later_succeeded(detectors, receipt, error, status, route):
    traj = cases.trajectory("early-claim", [
        cases.say("Writing the rows now. The products were imported successfully.", cases.call("c2", "Bash", command=IMPORT)),
        cases.tool("c2", receipt, error=error, exit_code=1 if error else 0),
        cases.say("Six products are in the table." if not error else "The import timed out."),
    ], query="Import products.json into table tblPr0d8KqW3.")
    result = offline_edit(traj, cases.issue(1, category="semantic", severity="severe", tag="premature-claim"), detectors=detectors)
    assert (result.status, result.route) == (status, route), result.reason
    if status == "edited":
        assert result.edited.messages[2].content == "Writing the rows now."
        assert [s.text for s in result.sentences] == ["The products were imported successfully."]
        assert no_premature_claim(result.edited, detectors).passed
        assert all(v.passed for v in result.validators)
        rules = pytest.importorskip("judge.rules")
        assert rules.run_detectors(result.edited) == []  # the edit leaves nothing for the rules judge
