"""Batch reports of a stored run: ``summary.json``, ``report.md`` and ``report.html`` with the trajectory viewer.
Everything is computed from the run directory alone (no judge call, no network), streaming the run once.

- :func:`build_summary` computes the figures and writes ``summary.json``;
- :func:`build_report` writes all three files (and ``report_data/`` for a large batch) and returns their paths;
- :class:`ReportStream` writes them from entries fed one trajectory at a time (what build_report does for a run);
- :func:`serve` (``judge view``) serves a run's report on 127.0.0.1.
"""

from judge.report.render import LAYOUTS, ReportStream, build_report, build_summary
from judge.report.serve import serve

__all__ = ["LAYOUTS", "ReportStream", "build_report", "build_summary", "serve"]
