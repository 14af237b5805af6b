"""The viewer's transcript (every message of a trajectory) as HTML, written in Python.

The transcript is the innermost loop of the report: every message of every trajectory, a few million escaped
values in a large batch. Rendered through Jinja macros it was about half of the report's CPU (each ``{{ }}``
is a finalize call, an escape call and a Markup object); here each value is escaped once by
:func:`html_text`, which does exactly what ``{{ value }}`` does in the HTML environment (the same finalize,
the same escape), and the markup is joined as plain strings. The rest of the page - the section around the
transcript, the issue markers pinned to a turn - stays in ``reports/viewer.html.j2``, which calls
``transcript(v, issue_marker)``; the output is the one the template loop wrote, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from markupsafe import Markup, escape

from judge.report.viewer import Block, TrajectoryView, plural
from judge.visible import visible


def html_finalize(value: Any) -> Any:
    """The HTML environment's finalize: data text passes through :func:`visible`; our own Markup is left alone."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value)
    return value


def html_text(value: Any) -> str:
    """``value`` as ``{{ value }}`` writes it in the HTML environment (finalize, then autoescape)."""
    return escape(html_finalize(value))


def transcript(view: TrajectoryView, issue_marker: Callable[[Any], Any]) -> Markup:
    """Every message of ``view`` in source order (``issue_marker``: the template's macro for a pinned issue)."""
    parts: list[str] = []
    for block in view.blocks:
        if block.role == "assistant":
            _assistant(parts, view.anchor, block, issue_marker)
        elif block.role == "tool":
            _tool(parts, block)
        else:
            _other(parts, block)
    return Markup("".join(parts))


def _assistant(parts: list[str], anchor: str, b: Block, issue_marker: Callable[[Any], Any]) -> None:
    h = html_text
    classes = "msg assistant"
    if b.issues:
        classes += " has-issues"
        if not any(issue.severity == "severe" for issue in b.issues):
            classes += " only-minor"
    parts.append(f'  <div class="{classes}" id="{h(anchor)}-T{h(b.turn)}">\n'
                 f'    <div class="who"><span class="turn">T{h(b.turn)}</span>assistant')
    if b.name:
        parts.append(f" · {h(b.name)}")
    parts.append("</div>\n")
    for issue in b.issues:
        parts.append(h(issue_marker(issue)))
    if b.reasoning:
        parts.append(f'<details><summary>reasoning</summary><div class="text">{h(b.reasoning)}</div></details>')
    if b.content:
        parts.append(f'<div class="text">{h(b.content)}</div>')
    for c in b.calls:
        parts.append(f'    <div class="call"><span class="name mono">{h(c.name)}</span> '
                     f'<span class="muted small mono">{h(c.id)}</span>')
        if not c.answered:
            parts.append(' <span class="err-flag small">no receipt</span>')
        if c.arguments_error:
            parts.append(f'<span class="bad-args small">arguments do not parse: {h(c.arguments_error)}</span>')
        if c.long:
            parts.append(f'<details><summary>{len(c.arguments):,} characters · <span class="preview">{h(c.preview)}</span>'
                         f'</summary><pre>{h(c.arguments)}</pre></details>\n')
        elif c.arguments:
            parts.append(f"<pre>{h(c.arguments)}</pre>")
        parts.append("    </div>\n")
    if b.minority_count:
        parts.append(f'<div class="minority-note">{h(plural(b.minority_count, "minority issue"))}'
                     " at this turn, listed apart below.</div>")
    parts.append("  </div>\n")


def _tool(parts: list[str], b: Block) -> None:
    h = html_text
    r = b.receipt
    parts.append(f'  <div class="msg tool{" error" if r and r.is_error else ""}">\n'
                 '    <div class="receipt-head"><span class="who">receipt')
    if b.turn is not None:
        parts.append(f" · T{h(b.turn)}")
    parts.append("</span>\n")
    if r:
        parts.append(f'<span class="mono small">{h(r.name or "")} {h(r.call_id or "")}</span>')
        if r.is_error:
            parts.append('<span class="err-flag">✗ error')
            if r.exit_code is not None:
                parts.append(f" (exit {h(r.exit_code)})")
            parts.append("</span>")
        elif r.exit_code is not None:
            parts.append(f'<span class="muted small">exit {h(r.exit_code)}</span>')
    parts.append("    </div>\n")
    text = r.content if r else b.content
    if r and r.long:
        parts.append(f'    <details><summary>{len(text):,} characters · <span class="preview">{h(r.preview)}</span></summary>'
                     f"<pre>{h(text)}</pre></details>\n")
    elif text:
        parts.append(f"<pre>{h(text)}</pre>")
    else:
        parts.append('<p class="muted small">(empty)</p>')
    parts.append("  </div>\n")


def _other(parts: list[str], b: Block) -> None:
    h = html_text
    parts.append(f'  <div class="msg {h(b.role)}">\n    <div class="who">{h(b.role)}')
    if b.name:
        parts.append(f" · {h(b.name)}")
    if b.turn:
        parts.append(f" · after T{h(b.turn)}")
    parts.append("</div>\n")
    if b.long:
        parts.append(f'<details><summary>{len(b.content):,} characters</summary><div class="text">{h(b.content)}</div></details>')
    else:
        parts.append(f'<div class="text">{h(b.content)}</div>')
    parts.append("  </div>\n")
