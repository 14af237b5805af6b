"""Small bar charts written directly as inline SVG (no plotting library: three bar charts do not need one).

Charts are drawn from numbers and from labels of fixed vocabularies (scores, categories, vote counts); no
free text from the data reaches a chart, and every label is escaped anyway. Colours are presentation
attributes, never ``style`` attributes, so the report's Content-Security-Policy can forbid inline styles.
Several charts live in one page: each chart's ids carry its own prefix. The same numbers always give the
same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

SCORE_COLOURS = {"2": "#c0392b", "3": "#e08e0b", "4": "#3f8f5f", "5": "#1f6f43", "unscored": "#9aa0a6"}
SEVERITY_COLOURS = {"severe": "#c0392b", "minor": "#e0a82e"}
VOTE_COLOUR, VOTE_MAJORITY_COLOUR = "#b9c2cc", "#35618f"
INK, AXIS = "#3c4650", "#8a939c"

WIDTH, HEIGHT = 460, 260  # the chart's own units; report.css scales it to the column
FONT = 10  # px, the page's sans-serif
CHAR_WIDTH = 6.2  # an upper estimate of one character's advance at FONT px, to reserve room for tick labels
TOP, RIGHT = 12, 12


def score_chart(counts: dict[str, int]) -> str:
    """Bars of trajectories per score, unscored last and grey."""
    # Scores are integers (or "unscored"); any other key would be a label from the data, so it is refused.
    keys = sorted((k for k in counts if k != "unscored"), key=int)
    keys.append("unscored")
    values = [int(counts.get(k, 0)) for k in keys]
    return _column_chart("plot-scores", "Trajectories per score", [k if k != "unscored" else "none" for k in keys],
                         values, [SCORE_COLOURS.get(k, "#6c7a89") for k in keys], x_label="score",
                         y_label="trajectories", bar_width=0.65)


def vote_chart(histogram: dict[str, int] | dict[int, int], majority_votes: int | None) -> str:
    """Bars of clusters per number of votes; the bars that reach a majority are dark."""
    counts = {int(k): int(v) for k, v in histogram.items()}  # labels are made from integers only
    keys = sorted(counts)
    colours = [VOTE_MAJORITY_COLOUR if majority_votes and k >= majority_votes else VOTE_COLOUR for k in keys]
    return _column_chart("plot-votes", "Issue clusters per number of votes",
                         [f"{k} vote{'s' if k != 1 else ''}" for k in keys], [counts[k] for k in keys], colours,
                         x_label=None, y_label="issue clusters", bar_width=0.6,
                         slots=max(len(keys), 3))  # a panel of one still gets a narrow bar


def category_chart(grid: dict[str, dict[str, int]]) -> str:
    """Horizontal bars of majority issues per category, split into severe and minor, the total at the end."""
    categories = list(grid)
    severe = [int(grid[c].get("severe", 0)) for c in categories]
    minor = [int(grid[c].get("minor", 0)) for c in categories]
    totals = [s + m for s, m in zip(severe, minor)]
    prefix = "plot-categories"
    legend_height = 22
    left = 8 + CHAR_WIDTH * max((len(c) for c in categories), default=1)
    bottom = 36
    plot_w, plot_h = WIDTH - left - RIGHT - 24, HEIGHT - TOP - legend_height - bottom  # 24: room for a total
    top = TOP + legend_height
    ticks, limit = _ticks(max(totals + [1]) * 1.2)
    x_of = _scale(limit, left, plot_w)
    slot = plot_h / max(len(categories), 1)
    parts: list[str] = [_legend(prefix, [("severe", SEVERITY_COLOURS["severe"]), ("minor", SEVERITY_COLOURS["minor"])],
                                left + plot_w / 2, TOP + 8)]
    bars: list[str] = []
    for index, (category, s, m, total) in enumerate(zip(categories, severe, minor, totals)):
        y = top + slot * index + slot * 0.2
        height = slot * 0.6
        for start, value, colour in ((0, s, SEVERITY_COLOURS["severe"]), (s, m, SEVERITY_COLOURS["minor"])):
            if value:
                bars.append(_rect(x_of(start), y, x_of(start + value) - x_of(start), height, colour))
        if total:
            bars.append(_text(x_of(total) + 3, y + height / 2 + FONT * 0.35, str(total), anchor="start", size=9))
        parts.append(_text(left - 5, y + height / 2 + FONT * 0.35, category, anchor="end"))
    parts.append(f'<g id="{prefix}-bars">{"".join(bars)}</g>')
    axis = _frame(left, top, plot_w, plot_h)
    for tick in ticks:
        x = x_of(tick)
        axis.append(_line(x, top + plot_h, x, top + plot_h + 4))
        axis.append(_text(x, top + plot_h + 15, str(tick)))
    axis.append(_text(left + plot_w / 2, HEIGHT - 6, "majority issues"))
    parts.append(f'<g id="{prefix}-axes">{"".join(axis)}</g>')
    return _svg(prefix, "Majority issues per category and severity", parts)


def _column_chart(prefix: str, title: str, labels: Sequence[str], values: Sequence[int], colours: Sequence[str], *,
                  x_label: str | None, y_label: str, bar_width: float, slots: int | None = None) -> str:
    ticks, limit = _ticks(max(list(values) + [1]) * 1.18)
    left = 24 + CHAR_WIDTH * max(len(str(t)) for t in ticks)  # the rotated axis label, then the tick labels
    bottom = 38 if x_label else 24
    plot_w, plot_h = WIDTH - left - RIGHT, HEIGHT - TOP - bottom
    y_of = _scale(limit, TOP + plot_h, -plot_h)
    slot = plot_w / max(slots or len(values), 1)
    bars: list[str] = []
    axis = _frame(left, TOP, plot_w, plot_h)
    for index, (label, value, colour) in enumerate(zip(labels, values, colours)):
        centre = left + slot * (index + 0.5)
        if value:
            bars.append(_rect(centre - slot * bar_width / 2, y_of(value), slot * bar_width, y_of(0) - y_of(value),
                              colour))
            bars.append(_text(centre, y_of(value) - 3, str(value), size=9))
        axis.append(_text(centre, TOP + plot_h + 15, label))
    for tick in ticks:
        y = y_of(tick)
        axis.append(_line(left - 4, y, left, y))
        axis.append(_text(left - 6, y + FONT * 0.35, str(tick), anchor="end"))
    if x_label:
        axis.append(_text(left + plot_w / 2, HEIGHT - 6, x_label))
    middle = TOP + plot_h / 2
    axis.append(f'<text x="12" y="{_n(middle)}" transform="rotate(-90 12 {_n(middle)})" text-anchor="middle" '
                f'font-size="{FONT}" fill="{INK}">{escape(y_label)}</text>')
    return _svg(prefix, title, [f'<g id="{prefix}-bars">{"".join(bars)}</g>', f'<g id="{prefix}-axes">{"".join(axis)}</g>'])


def _frame(left: float, top: float, width: float, height: float) -> list[str]:
    """The plot area's left and bottom axis lines."""
    return [_line(left, top, left, top + height), _line(left, top + height, left + width, top + height)]


def _ticks(top: float) -> tuple[list[int], float]:
    """Whole-number ticks from 0 in steps of 1, 2 or 5 times a power of ten (at most 6 of them), and the axis
    limit: ``top``, never below the last tick."""
    raw = max(top / 5, 1.0)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    ticks = list(range(0, int(top) + 1, int(step)))
    return ticks, max(top, float(ticks[-1]))


def _scale(limit: float, origin: float, length: float) -> Callable[[float], float]:
    """Data value -> chart coordinate: 0 at ``origin``, ``limit`` at ``origin + length``."""
    return lambda value: origin + length * value / limit


def _legend(prefix: str, entries: Sequence[tuple[str, str]], centre: float, y: float) -> str:
    widths = [14 + CHAR_WIDTH * len(name) + 12 for name, _ in entries]
    x = centre - sum(widths) / 2
    items: list[str] = []
    for (name, colour), width in zip(entries, widths):
        items.append(_rect(x, y - 5, 10, 10, colour) + _text(x + 14, y + FONT * 0.35, name, anchor="start", size=9))
        x += width
    return f'<g id="{prefix}-legend">{"".join(items)}</g>'


def _svg(prefix: str, title: str, parts: Sequence[str]) -> str:
    return (f'<svg class="plot" role="img" aria-label="{escape(title)}" id="{prefix}-chart" '
            f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
            f'font-family="sans-serif">{"".join(parts)}</svg>')


def _rect(x: float, y: float, width: float, height: float, colour: str) -> str:
    return f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(width)}" height="{_n(height)}" fill="{colour}"/>'


def _line(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{_n(x1)}" y1="{_n(y1)}" x2="{_n(x2)}" y2="{_n(y2)}" stroke="{AXIS}" stroke-width="1"/>'


def _text(x: float, y: float, text: str, *, anchor: str = "middle", size: int = FONT) -> str:
    return (f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" font-size="{size}" fill="{INK}">'
            f'{escape(text)}</text>')


def _n(value: float) -> str:
    """A coordinate to 0.1 unit, without a trailing ``.0``: short and the same bytes every time."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text
