"""The viewer's transcript, rendered in Python (judge/report/transcript.py): escaping and the marks of each kind
of message. The page around it is covered by test_report.py; the byte-for-byte match with the former template
loop was checked on the example batch and synthetic runs when the renderer replaced it."""

from __future__ import annotations

import pytest

from judge.report.render import viewer_macros
from judge.report.transcript import html_text, transcript
from judge.report.viewer import Block, CallView, IssueView, ReceiptView, TrajectoryView, Wording


def _view(*blocks: Block) -> TrajectoryView:
    return TrajectoryView(id="t", anchor="t-abc", query="q", score=3, score_key="3", release=False, reason="r",
                          valid_passes=1, panel_size=1, efficiency_votes=[], checks=[], failed_checks=[], metadata=[],
                          blocks=list(blocks), unpinned=[], minority=[], environment=[], passes=[], repair=None,
                          categories=[], tags=[], turns=1)


def _render(*blocks: Block) -> str:
    return str(transcript(_view(*blocks), viewer_macros().issue_marker))


@pytest.mark.parametrize(("value", "written"), [
    ("<b>&\"'", "&lt;b&gt;&amp;&#34;&#39;"),
    ("evil\u202etxt.exe", "evil\\u202etxt.exe"),  # a bidi override shows as an escape
    ("\x1b[2J", "\\x1b[2J"),
    (3, "3"),
    (None, "None"),
])
def test_html_text_is_the_environment_finalize_then_escape(value, written):
    assert html_text(value) == written


@pytest.mark.parametrize(("block", "present", "absent"), [
    (Block(role="assistant", turn=2, content="<script>x</script>", name="a\u202eb"),
     ['id="t-abc-T2"', "T2</span>assistant · a\\u202eb", "&lt;script&gt;x&lt;/script&gt;"], ["<script>"]),
    (Block(role="assistant", turn=1, content="", calls=[CallView("c1", "Bash", "{}", None, answered=False)]),
     ['<span class="name mono">Bash</span>', "no receipt", "<pre>{}</pre>"], ["arguments do not parse"]),
    (Block(role="assistant", turn=1, content="", calls=[CallView("c1", "Bash", "x" * 800, "bad json", True, long=True,
                                                                 preview="xx")]),
     ["arguments do not parse: bad json", "<details><summary>800 characters"], ["no receipt"]),
    (Block(role="assistant", turn=4, content="done", minority_count=1234),
     ["1,234 minority issues at this turn"], []),
    (Block(role="tool", turn=1, content=""), ['<p class="muted small">(empty)</p>', "receipt · T1"], ["err-flag"]),
    (Block(role="tool", turn=1, content="", receipt=ReceiptView("c1", "Bash", "boom", True, 2, False, "boom")),
     ['class="msg tool error"', "✗ error (exit 2)", "<pre>boom</pre>"], []),
    (Block(role="tool", turn=None, content="", receipt=ReceiptView(None, None, "ok", False, 0, False, "ok")),
     ['<span class="muted small">exit 0</span>'], ["receipt · T", "err-flag"]),
    (Block(role="system", turn=0, content="y" * 2000, long=True),
     ["<details><summary>2,000 characters</summary>"], ["after T"]),
    (Block(role="user", turn=3, content="more"), ["user · after T3", '<div class="text">more</div>'], ["<details>"]),
])
def test_each_kind_of_message(block, present, absent):
    html = _render(block)
    for text in present:
        assert text in html
    for text in absent:
        assert text not in html


def test_pinned_issues_use_the_template_marker_and_mark_the_turn():
    issue = IssueView("c1", 2, "semantic", "minor", None, "said <done>", 2, 3, True, [Wording("rules#1", 2, "w", "")])
    html = _render(Block(role="assistant", turn=2, content="hi", issues=[issue]))
    assert 'class="msg assistant has-issues only-minor"' in html
    assert 'data-issue="c1"' in html and "said &lt;done&gt;" in html and "2/3 votes" in html
    severe = IssueView("c2", 2, "semantic", "severe", None, "d", 2, 3, True, [])
    assert "only-minor" not in _render(Block(role="assistant", turn=2, content="hi", issues=[issue, severe]))
