"""Small matplotlib charts rendered to inline SVG (Agg backend, no display, no network).

Charts are drawn from numbers and from labels of fixed vocabularies (scores, categories, vote counts); no
free text from the data reaches a chart. The SVG is post-processed so that several charts can live in one
page: ids get a per-chart prefix, and matplotlib's global ``<style>`` block (which would apply to the whole
HTML page) is dropped; its one rule lives in the report's stylesheet instead.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import matplotlib

matplotlib.use("Agg")  # before pyplot: never try to open a display

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

SCORE_COLOURS = {"2": "#c0392b", "3": "#e08e0b", "4": "#3f8f5f", "5": "#1f6f43", "unscored": "#9aa0a6"}
SEVERITY_COLOURS = {"severe": "#c0392b", "minor": "#e0a82e"}
VOTE_COLOUR, VOTE_MAJORITY_COLOUR = "#b9c2cc", "#35618f"

_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",  # text stays text: small files, the page's fonts, selectable labels
    "svg.hashsalt": "trajudge",  # stable clip-path ids, so the same run renders the same bytes
    "font.family": "sans-serif",
    "font.size": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#8a939c",
    "axes.labelcolor": "#3c4650",
    "xtick.color": "#3c4650",
    "ytick.color": "#3c4650",
    "text.usetex": False,
}


def _to_svg(figure: Figure, prefix: str, title: str) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]  # drop the XML declaration and DOCTYPE: not allowed inside HTML
    svg = re.sub(r"<style[^>]*>.*?</style>", "", svg, flags=re.DOTALL)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.DOTALL)
    svg = re.sub(r'\bid="', f'id="{prefix}-', svg)
    svg = svg.replace("url(#", f"url(#{prefix}-").replace('xlink:href="#', f'xlink:href="#{prefix}-')
    # Accessible name; the title is one of our own fixed strings, escaped anyway.
    safe_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    svg = svg.replace("<svg ", f'<svg class="plot" role="img" aria-label="{safe_title}" ', 1)
    return svg


def _integer_ticks(axis: Axis) -> None:
    """Whole-number ticks on a count axis (its default locator, an AutoLocator, is a MaxNLocator)."""
    cast(MaxNLocator, axis.get_major_locator()).set_params(integer=True)


def _bar_labels(axes: Axes, bars: BarContainer, values: Sequence[float], horizontal: bool = False) -> None:
    for bar, value in zip(bars, values):
        if not value:
            continue
        if horizontal:
            axes.annotate(f"{int(value)}", (bar.get_x() + bar.get_width(), bar.get_y() + bar.get_height() / 2),
                          xytext=(3, 0), textcoords="offset points", va="center", fontsize=9, color="#3c4650")
        else:
            axes.annotate(f"{int(value)}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                          xytext=(0, 2), textcoords="offset points", ha="center", fontsize=9, color="#3c4650")


def score_chart(counts: dict[str, int]) -> str:
    """Bars of trajectories per score, unscored last and grey."""
    # Scores are integers (or "unscored"); any other key would be a label from the data, so it is refused.
    keys = sorted((k for k in counts if k != "unscored"), key=int)
    keys.append("unscored")
    values = [int(counts.get(k, 0)) for k in keys]
    with plt.rc_context(_RC):
        figure, axes = plt.subplots(figsize=(4.6, 2.6))
        bars = axes.bar(range(len(keys)), values, color=[SCORE_COLOURS.get(k, "#6c7a89") for k in keys], width=0.65)
        axes.set_xticks(range(len(keys)), [k if k != "unscored" else "none" for k in keys])
        axes.set_xlabel("score")
        axes.set_ylabel("trajectories")
        _integer_ticks(axes.yaxis)
        axes.set_ylim(0, max(values + [1]) * 1.18)
        _bar_labels(axes, bars, values)
        return _to_svg(figure, "plot-scores", "Trajectories per score")


def category_chart(grid: dict[str, dict[str, int]]) -> str:
    """Horizontal bars of majority issues per category, split into severe and minor."""
    categories = list(grid)
    severe = [int(grid[c].get("severe", 0)) for c in categories]
    minor = [int(grid[c].get("minor", 0)) for c in categories]
    with plt.rc_context(_RC):
        figure, axes = plt.subplots(figsize=(4.6, 2.6))
        positions = range(len(categories))
        axes.barh(positions, severe, color=SEVERITY_COLOURS["severe"], label="severe", height=0.6)
        bars = axes.barh(positions, minor, left=severe, color=SEVERITY_COLOURS["minor"], label="minor", height=0.6)
        totals = [s + m for s, m in zip(severe, minor)]
        for bar, total in zip(bars, totals):
            if total:
                axes.annotate(str(total), (total, bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                              textcoords="offset points", va="center", fontsize=9, color="#3c4650")
        axes.set_yticks(list(positions), categories)
        axes.invert_yaxis()
        axes.set_xlabel("majority issues")
        _integer_ticks(axes.xaxis)
        axes.set_xlim(0, max(totals + [1]) * 1.2)
        axes.legend(frameon=False, fontsize=9, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
        return _to_svg(figure, "plot-categories", "Majority issues per category and severity")


def vote_chart(histogram: dict[str, int] | dict[int, int], majority_votes: int | None) -> str:
    """Bars of clusters per number of votes; the bars that reach a majority are dark."""
    counts = {int(k): int(v) for k, v in histogram.items()}  # labels are made from integers only
    keys = sorted(counts)
    values = [counts[k] for k in keys]
    colours = [VOTE_MAJORITY_COLOUR if majority_votes and k >= majority_votes else VOTE_COLOUR for k in keys]
    with plt.rc_context(_RC):
        figure, axes = plt.subplots(figsize=(4.6, 2.6))
        bars = axes.bar(range(len(keys)), values, color=colours, width=0.6)
        axes.set_xticks(range(len(keys)), [f"{k} vote{'s' if k != 1 else ''}" for k in keys])
        axes.set_ylabel("issue clusters")
        axes.set_xlim(-0.6, max(len(keys), 3) - 0.4)  # a panel of one still gets a narrow bar
        _integer_ticks(axes.yaxis)
        axes.set_ylim(0, max(values + [1]) * 1.18)
        _bar_labels(axes, bars, values)
        return _to_svg(figure, "plot-votes", "Issue clusters per number of votes")
