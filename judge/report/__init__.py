"""Batch reports of a stored run: ``summary.json``, ``report.md`` and a self-contained ``report.html`` with
the trajectory viewer. Everything is computed from the run directory alone (no judge call, no network).

- :func:`build_summary` computes the figures and writes ``summary.json``;
- :func:`build_report` writes all three files and returns their paths.
"""

from judge.report.render import build_report
from judge.report.summary import build_summary

__all__ = ["build_report", "build_summary"]
