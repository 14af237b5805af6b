"""The sentence detectors the editor and validators rely on, measured on held-out sentences (not the exemplars),
and the call classification (read-only / rejected before it ran), table-driven."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge.model import Receipt, ToolCall
from judge.repair.calls import (
    command_is_read_only,
    is_read_only,
    rejected_before_running,
)
from judge.repair.textref import (
    FAILURE_REFERENCES,
    ORDINARY_TEXT,
    clauses,
    remove_spans,
    split_sentences,
)

# Held-out: none of these is an exemplar. Written by us, en/zh/ja, with the two sentences of the brief.
REFERENCES = [
    "Since the earlier attempt didn't go through, I'll try again",
    "前面那步没成功，重新来",
    "Hmm, no luck with that one - let me have another go.",
    "さっきのはダメだったので、やり直します。",
    "上次没弄好，再试一遍。",
    "The file was not found, so reading the new location.",
    "Since reading the config failed, I'll write a default one instead.",
    "That blew up; trying once more with quotes.",
    "报错了，我检查一下参数再跑。",
    "うまくいかなかったので、オプションを変えてもう一度。",
]
ORDINARY = [
    "Let me list the records in the table.",
    "I'll try the dashboard now.",
    "The previous step created the table successfully.",
    "Now I will write the summary.",
    "All 6 movements were added.",
    "The dashboard shows stock by category.",
    "Reading the service file under config/.",
    "テストを実行します。",
    "接下来导入六条样例数据。",
    "Base created. Now the Products table.",
]


def test_held_out_sentences_are_disjoint_from_the_exemplars():
    assert not (set(REFERENCES) | set(ORDINARY)) & (set(FAILURE_REFERENCES) | set(ORDINARY_TEXT))


def test_failure_reference_detector_recall_and_precision_near_a_failure(detectors):
    """Near a failure (the editor's structural cue) the detector must find paraphrases and leave ordinary text."""
    found = detectors.failure_reference(REFERENCES, [True] * len(REFERENCES))
    false = detectors.failure_reference(ORDINARY, [True] * len(ORDINARY))
    recall = sum(hit for hit, _ in found) / len(REFERENCES)
    false_alarms = sum(hit for hit, _ in false)
    print(f"failure references near a failure: recall {recall:.2f}, false alarms {false_alarms}/{len(ORDINARY)}")
    assert found[0][0] and found[1][0], "the reference design's paraphrases must be caught"
    assert recall >= 0.9
    assert false_alarms == 0


def test_far_from_a_failure_only_clear_references_count(detectors):
    """Without a cue the bar is higher: ordinary text never passes it."""
    assert not any(hit for hit, _ in detectors.failure_reference(ORDINARY, [False] * len(ORDINARY)))
    # the reference design's two paraphrases are clear enough to pass even without a cue
    assert [hit for hit, _ in detectors.failure_reference(REFERENCES[:2], [False, False])] == [True, True]


@pytest.mark.parametrize("sentence, claim", [
    ("The records were imported successfully.", True),
    ("I have already created the dashboard and it works.", True),
    ("仪表盘已经创建好了。", True),
    ("ダッシュボードを作成しました。", True),
    ("All six products were written to the table.", True),
    ("I will import the records next.", False),
    ("Let me create the dashboard.", False),
    ("接下来创建仪表盘。", False),
    ("ダッシュボードを作成します。", False),
    ("The import failed.", False),
])
def test_success_claims(detectors, sentence, claim):
    assert detectors.success_claim([sentence])[0][0] is claim


@pytest.mark.parametrize("text, pieces", [
    ("First one. Second!\n第三句。第四句？ 最后", ["First one.", "Second!", "第三句。", "第四句？", "最后"]),
    ("Port 8080. Use v1.2 today.", ["Port 8080.", "Use v1.2 today."]),
    ("", []),
])
def test_split_sentences_keeps_exact_spans(text, pieces):
    sentences = split_sentences(text)
    assert [s.text for s in sentences] == pieces
    assert all(text[s.start:s.end] == s.text for s in sentences)


def test_remove_spans_tidies_whitespace():
    text = "Retrying now. The port is 8080."
    assert remove_spans(text, [(0, 13)]) == "The port is 8080."


@pytest.mark.parametrize("sentence, expected", [
    ("さっきのはダメだったので、別の場所を読みます。", ["さっきのはダメだったので", "別の場所を読みます。"]),
    ("Since that failed, I'll retry.", ["Since that failed", "I'll retry."]),
    ("Short.", []),
])
def test_clauses(sentence, expected):
    assert clauses(sentence) == expected


@pytest.mark.parametrize("command, read_only", [
    ("ls -la", True),
    ("cat a.txt | grep port", True),
    ("lark-cli base records list --table-id tbl1", True),
    ("lark-cli base records create --help", True),
    ("lark-cli base +record-list --base bascn1 --table tbl1", True),  # a shortcut names its verb last
    ("lark-cli base +table-get --base bascn1 --table tbl1", True),
    ("lark-cli base +record-batch-create --table tbl1 --json @rows.json", False),
    ("git status && git diff", True),
    ("gh pr view 12", True),
    ("find . -name '*.py'", True),
    ("find . -name '*.pyc' -delete", False),
    ("echo hi > out.txt", False),
    ("rm -rf build", False),
    ("sed -i 's/a/b/' f.py", False),
    ("lark-cli base table create --name Products", False),
    ("pip install -e .", False),
    ("git commit -m x", False),
    ("curl https://x.sh | sh", False),
    # Operators inside quotes are arguments, not new commands (a jq filter's pipes, a grep alternation).
    ("lark-cli base +record-list --table tbl1 | jq '[.items[] | select(.qty > 0)] | length'", True),
    ("grep -E 'a|b;c' notes.txt", True),
    ('jq ".items | map(.id)" out.json && echo "done; ok"', True),
    ("cat a.txt | grep x ; rm a.txt", False),
    ("ls 'a;b' && rm -rf build", False),
    ('echo "$(rm -rf build)"', False),  # a command substitution runs inside double quotes
    ("cat \"`rm -rf build`\"", False),
])
def test_command_read_only(command, read_only):
    assert command_is_read_only(command)[0] is read_only


@pytest.mark.parametrize("call, read_only", [
    (ToolCall(id="1", name="Read", arguments={"file_path": "a"}), True),
    (ToolCall(id="1", name="get_weather", arguments={"city": "x"}), True),
    (ToolCall(id="1", name="str_replace_based_edit_tool", arguments={"command": "view", "path": "a"}), True),
    (ToolCall(id="1", name="str_replace_based_edit_tool", arguments={"command": "create", "path": "a"}), False),
    (ToolCall(id="1", name="Write", arguments={"file_path": "a", "content": "x"}), False),
    (ToolCall(id="1", name="TodoWrite", arguments={"todos": []}), False),
    (ToolCall(id="1", name="Bash", arguments={"command": "ls"}), True),
    (ToolCall(id="1", name="Bash", arguments={"command": "make"}), False),
])
def test_tool_read_only(call, read_only):
    assert is_read_only(call)[0] is read_only


@pytest.mark.parametrize("content, error, rejected", [
    ("Error: unknown flag: --records", True, True),
    ("InvalidParameter: 12 validation errors", True, True),
    ("usage: tool [-h] ...", True, True),
    ("参数错误：不支持的选项", True, True),
    ("不正な引数です", True, True),
    ("Error: request timed out after 30s", True, False),
    ("500 Internal Server Error", True, False),
    ("Error: unknown flag: --records", False, False),  # not a failed receipt
])
def test_rejected_before_running(content, error, rejected):
    receipt = Receipt(call_id="1", content=content, is_error=error)
    assert rejected_before_running(receipt) is rejected
