"""Render ``report.html`` (summary, plots, trajectory index with filters, one viewer section per trajectory)
and ``report.md`` (the same content as text) from the stored run.

Safety: every value from the data is escaped. The HTML environment has ``autoescape=True`` and the templates
never mark data safe; the only unescaped insertions are our own stylesheet and script (read from
``reports/``) and the SVG charts drawn from numbers and fixed labels. The Markdown environment escapes every
``{{ }}`` output through ``finalize``, so a template cannot forget to. A Content-Security-Policy meta tag
forbids every load from anywhere (no other host, no file, no data: except images) and lets run only the
script and stylesheet whose hashes it lists, so even a missed escape could not run a script. Both
environments also pass every value through :func:`judge.visible.visible`, so a bidi override in an id
(``U+202E``) or an ANSI sequence in a receipt shows as an escape (``\u202e``) instead of reordering the text.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from judge import rundir
from judge.cluster import majority_floor
from judge.report import plots
from judge.report.load import RunData, load_run, manifest_json
from judge.report.summary import scores_by_trajectory, summarise
from judge.report.viewer import TrajectoryView, anchor_id, build_views
from judge.resources import resource_dir
from judge.rundir import RunDir
from judge.visible import visible

HTML_TEMPLATE = "report.html.j2"
MD_TEMPLATE = "report.md.j2"
CSS_FILE = "report.css"
JS_FILE = "report.js"


def build_report(run_dir: Path) -> dict[str, Path]:
    """Write ``summary.json``, ``report.html`` and ``report.md`` into ``run_dir``; return their paths by name.

    Reads the run directory only (no judge call, no network). The viewer is part of ``report.html``: one
    section per trajectory, reached from the index.
    """
    run = RunDir(run_dir)
    data = load_run(run.path)
    summary = summarise(data)
    scores = scores_by_trajectory(data.trajectories, data.scores)
    views = build_views(data.trajectories, scores, data.clusters, data.verdicts, data.repairs)
    paths = {"summary": run.write_json(rundir.SUMMARY, summary), "report_md": run.file(rundir.REPORT_MD),
             "report_html": run.file(rundir.REPORT_HTML)}
    _write_text(paths["report_md"], render_markdown(summary, views))
    _write_text(paths["report_html"], render_html(data, summary, views))
    return paths


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# --- formatting filters (shared by both environments) ------------------------------------------


def fmt_int(value: Any) -> str:
    return "–" if value is None else f"{int(value):,}"


def fmt_pct(value: Any, digits: int = 0) -> str:
    return "–" if value is None else f"{100 * float(value):.{digits}f}%"


def fmt_usd(value: Any) -> str:
    if value is None:
        return "unknown"
    value = float(value)
    return f"${value:,.4f}" if 0 < value < 1 else f"${value:,.2f}"


def fmt_seconds(value: Any) -> str:
    if value is None:
        return "unknown"
    seconds = float(value)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min {seconds:02d} s"


def fmt_number(value: Any, digits: int = 2) -> str:
    if isinstance(value, bool) or value is None:
        return "–" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def plain(value: Any) -> str:
    """A config value as short text: mappings as ``k=v, ...``, lists joined, None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, dict):
        return ", ".join(f"{k}={plain(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(plain(v) for v in value)
    return str(value)


def json_text(value: Any) -> str:
    """JSON as a plain string, so the template escapes it like any other text (e.g. inside an attribute)."""
    return json.dumps(value, ensure_ascii=False)


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


FILTERS = {"int": fmt_int, "pct": fmt_pct, "usd": fmt_usd, "seconds": fmt_seconds, "number": fmt_number,
           "plural": plural, "json_text": json_text, "plain": plain, "anchor": anchor_id}


# --- HTML --------------------------------------------------------------------------------------


def csp_hash(text: str) -> str:
    """The CSP source expression allowing exactly this inline script or stylesheet."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(css: str, js: str) -> str:
    """No load from anywhere; only our own inline stylesheet and script (by hash) may apply or run.

    ``style-src-attr 'unsafe-inline'`` is there because matplotlib's SVG sets colours in ``style`` attributes;
    no data ever reaches an attribute unescaped, and with every fetch forbidden a style cannot send anything
    out. The ``style-src 'unsafe-inline'`` fallback only matters to browsers too old for ``style-src-elem``.
    """
    return "; ".join([
        "default-src 'none'",
        f"script-src {csp_hash(js)}",
        f"style-src-elem {csp_hash(css)}",
        "style-src-attr 'unsafe-inline'",
        "style-src 'unsafe-inline'",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
    ])


def _html_finalize(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, Markup):  # data; our own Markup is left alone
        return visible(value)
    return value


@functools.lru_cache(maxsize=1)
def html_environment() -> Environment:
    """The HTML environment (cached: compiling the templates costs more than rendering them)."""
    env = Environment(
        loader=FileSystemLoader(str(resource_dir("reports"))),
        finalize=_html_finalize,  # control and bidi characters from the data become visible escapes
        autoescape=True,  # always, whatever the template's name
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


def render_html(data: RunData, summary: dict[str, Any], views: list[TrajectoryView]) -> str:
    """The self-contained report page."""
    env = html_environment()
    base = resource_dir("reports")
    css = (base / CSS_FILE).read_text(encoding="utf-8")
    js = (base / JS_FILE).read_text(encoding="utf-8")
    panel_size = summary["panel"].get("size")
    majority_votes = majority_floor(panel_size) if isinstance(panel_size, int) and panel_size > 0 else None
    charts = {
        "scores": Markup(plots.score_chart(summary["scores"]["counts"])),
        "categories": Markup(plots.category_chart(summary["issues"]["majority"]["by_category_severity"])),
        "votes": Markup(plots.vote_chart(summary["agreement"]["vote_histogram"], majority_votes)),
    }
    all_tags = sorted({tag for view in views for tag in view.tags})
    return env.get_template(HTML_TEMPLATE).render(
        s=summary,
        views=views,
        charts=charts,
        all_tags=all_tags,
        run_name=data.run_dir.resolve().name,
        manifest_text=manifest_json(data.manifest),
        css=Markup(css),  # our own file, hashed into the CSP below
        js=Markup(js),
        csp=content_security_policy(css, js),
    )


# --- Markdown ----------------------------------------------------------------------------------

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>()#+!|~&])")


def md_escape(value: Any) -> str:
    """Inline Markdown text that renders as the literal string: punctuation escaped, newlines folded.

    CommonMark lets any ASCII punctuation be backslash-escaped, so ``<script>`` becomes ``\\<script\\>`` and
    renders as text; ``|`` cannot break a table and a newline cannot start a heading or a list.
    """
    if value is None:
        return ""
    text = visible(re.sub(r"\s+", " ", str(value)))
    return _MD_SPECIAL.sub(r"\\\1", text)


def _md_finalize(value: Any) -> Any:
    if isinstance(value, Markup):  # template-made text marked as trusted (our own Markdown)
        return str(value)
    return md_escape(value)


@functools.lru_cache(maxsize=1)
def markdown_environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(resource_dir("reports"))),
        autoescape=False,
        finalize=_md_finalize,  # every {{ }} is escaped for Markdown
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(FILTERS)
    return env


def render_markdown(summary: dict[str, Any], views: list[TrajectoryView]) -> str:
    """The Markdown report: the summary's content, then each trajectory's verdict and majority issues."""
    return markdown_environment().get_template(MD_TEMPLATE).render(s=summary, views=views)
