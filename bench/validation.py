"""Regenerate the tables of docs/validation.md: the rules judge on the labelled shared datasets, with baselines.

    python bench/validation.py [--datasets ../shared/datasets] [--work DIR] [--write docs/validation.md]

Runs exactly the commands docs/validation.md lists (``judge score ... --judge rules`` then ``judge validate ...
--markdown``), each as a subprocess of this Python, and prints the Markdown blocks. With ``--write FILE`` it
replaces, in that file, only the blocks between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``
markers (the header with date and commit, the runs table, one table per labelled set, and the exact-step
comparison with the trivial baselines and the published dependency-guided LLM method, on the whole set and on its
fixed dev and test halves, ``judge.validate.label_half``); the prose around them is kept, and must be re-read by hand when the figures move. The commit is ``git rev-parse HEAD`` of this checkout,
marked ``+ uncommitted changes`` when the tree is not clean, so a figure always names the code that made it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the halves are evaluated in-process: this checkout's judge, as the subprocesses use

from judge.importers.labels import LabelKind  # noqa: E402
from judge.validate import HALVES, validate_run  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from judge.cli import main; sys.argv[0] = 'judge'; sys.exit(main())"]

# name -> (input under the datasets folder, labels under it and their kind; None: release check only)
RUNS: dict[str, tuple[str, tuple[str, LabelKind] | None]] = {
    "ww-hc": ("who_and_when/Hand-Crafted", ("who_and_when/Hand-Crafted", "who-and-when")),
    "ww-ag": ("who_and_when/Algorithm-Generated", ("who_and_when/Algorithm-Generated", "who-and-when")),
    "agentrx-tau": ("agentrx/tau_retail/tau_dataset_failed.json", ("agentrx/ground_truth/tau_ground_truth.json", "agentrx")),
    "mast": ("mast_mad_human", ("mast_mad_human/MAD_human_labelled_dataset.json", "mast")),
    "tau-airline": ("tau_bench_trajectories", None),
}


# Exact-step accuracy of the published dependency-guided LLM failure-attribution method on Who&When, as issue 24
# states it (46% on Algorithm-Generated, 29% on Hand-Crafted); it counts history steps, ours counts turns.
DEPENDENCY_GUIDED = {"ww-ag": 0.46, "ww-hc": 0.29}
STEP_SETS = {"ww-hc": "Who&When Hand-Crafted", "ww-ag": "Who&When Algorithm-Generated", "agentrx-tau": "AgentRx tau retail"}
TRIVIAL = {"always-first": "always T1", "always-last": "always last", "first-failed-call": "first failed call",
           "first-agent-step": "first agent step"}
# Rules beside the judge, never counted as the judge: the final answer's origin, and the judge with it as fall-back.
RULES = {"answer-origin": "answer origin (rule)", "judge-or-answer-origin": "judge, else answer origin (fall-back)"}


def judge(*args: str) -> str:
    """Run ``judge ARGS`` with this checkout first on the path; its stdout, or an error with its stderr."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"judge {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    return f"`{head}`" + (" + uncommitted changes" if dirty else "")


def runs_table(work: Path) -> str:
    """One row per run: imported, rejected, scores, recorded outcomes, recorded failures scored 4-5, released."""
    lines = ["| run | trajectories | rejected | scores 2 / 3 / 4 / 5 / unscored | recorded success / failure / unknown "
             "| failures scored 4-5 | released | released recorded failures |",
             "|---|---:|---:|---|---|---:|---:|---:|"]
    for name in RUNS:
        summary = json.loads((work / name / "summary.json").read_text(encoding="utf-8"))
        counts, outcomes = summary["scores"]["counts"], summary["outcomes"]
        totals = outcomes["totals"]
        lines.append(
            f"| {name} | {summary['inputs']['trajectories']} | {summary['inputs']['rejects']} "
            f"| {' / '.join(str(counts[k]) for k in ('2', '3', '4', '5', 'unscored'))} "
            f"| {totals['success']} / {totals['failure']} / {totals['unknown'] + totals['partial']} "
            f"| {outcomes['failures_scored_4_or_5']} | {summary['release']['released']} "
            f"| {len(outcomes['released_failures'])} |")
    return "\n".join(lines)


def _rate_cell(rate: dict[str, Any]) -> str:
    return f"{100 * rate['value']:.1f}% ({rate['hits']:g}/{rate['n']})" if rate["n"] else "n/a"


def step_comparison(reports: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Exact step of the judge beside always-T1, always-last, first-failed-call, the answer-origin rule and the
    judge with that rule as fall-back, and the published dependency-guided method: one row per labelled set and
    part (``all``, ``dev``, ``test``), and a sentence per set and part saying where the judge's own row stands
    (``reports``: set -> part -> validate's JSON)."""
    lines = ["| set | part | judge (ours) | always T1 | always last | first failed call | first agent step | best trivial "
             "| answer origin (rule) | judge, else answer origin (fall-back) | published dependency-guided LLM |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    verdicts = []
    for name, label in STEP_SETS.items():
        for part, report in reports.get(name, {}).items():
            predictors = report["predictors"]
            cell = {key: _rate_cell(predictors[key]["step_exact"]) for key in ("judge", *TRIVIAL, *RULES)}
            ours = predictors["judge"]["step_exact"]["value"]
            fallback = predictors["judge-or-answer-origin"]["step_exact"]["value"]
            best_name, best = max(((TRIVIAL[k], predictors[k]["step_exact"]["value"]) for k in TRIVIAL), key=lambda kv: kv[1])
            published = DEPENDENCY_GUIDED.get(name)
            lines.append(f"| {label} | {part} | {cell['judge']} | {cell['always-first']} | {cell['always-last']} "
                         f"| {cell['first-failed-call']} | {cell['first-agent-step']} | {100 * best:.1f}% ({best_name}) | {cell['answer-origin']} "
                         f"| {cell['judge-or-answer-origin']} | {f'{100 * published:.0f}%' if published is not None else 'n/a'} |")
            sentence = (f"- {label}, {part}: the offline judge is {_where(ours, best)} the best trivial baseline "
                        f"({100 * ours:.1f}% vs {100 * best:.1f}%, {best_name}); with the fall-back "
                        f"{100 * fallback:.1f}%, {_where(fallback, best)} it")
            if published is not None:
                sentence += f"; the published dependency-guided LLM method: {100 * published:.0f}%"
            verdicts.append(sentence + ".")
    return "\n".join([*lines, "", *verdicts,
                      "- exact step = the decisive turn named exactly; the published figures count history steps, ours turns.",
                      "- parts: `all` is the whole set (seen before: an upper bound); `dev` the half developed on; `test` "
                      "the half held out from this change (`judge.validate.label_half`, docs above)."])


def _where(value: float, best: float) -> str:
    return "above" if value > best else ("level with" if value == best else "below")


def replace_blocks(text: str, blocks: dict[str, str]) -> str:
    """``text`` with each ``<!-- generated:NAME -->...<!-- /generated:NAME -->`` body replaced; a missing marker is an error."""
    for name, body in blocks.items():
        pattern = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(<!-- /generated:{re.escape(name)} -->)", re.DOTALL)
        if not pattern.search(text):
            raise SystemExit(f"no <!-- generated:{name} --> block in the file")
        text = pattern.sub(lambda m, body=body: m.group(1) + body.rstrip("\n") + "\n" + m.group(2), text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=REPO.parent / "shared" / "datasets")
    parser.add_argument("--work", type=Path, default=None, help="where the runs go (default: a temporary folder)")
    parser.add_argument("--write", type=Path, default=None, help="the Markdown file whose generated blocks to replace")
    args = parser.parse_args()
    if not args.datasets.exists():
        raise SystemExit(f"datasets not found: {args.datasets}")
    work = args.work or Path(tempfile.mkdtemp(prefix="trajudge-validation-"))
    blocks: dict[str, str] = {}
    reports: dict[str, dict[str, dict[str, Any]]] = {}
    for name, (source, labels) in RUNS.items():
        out = work / name
        judge("score", str(args.datasets / source), "--judge", "rules", "--out", str(out))
        if labels is not None:
            path, kind = labels
            report = work / f"{name}.json"
            printed = judge("validate", str(out), "--labels", str(args.datasets / path), "--kind", kind, "--markdown",
                            "--json-out", str(report)).replace(f"wrote {report}\n", "")
            title, tables = printed.split("\n", 1)
            blocks[name] = f"{title}\n{tables}"
            reports[name] = {"all": json.loads(report.read_text(encoding="utf-8"))}
            if name in STEP_SETS:
                for half in HALVES:
                    reports[name][half] = validate_run(out, args.datasets / path, kind, half=half).to_json()
    blocks["runs"] = runs_table(work)
    blocks["step-comparison"] = step_comparison(reports)
    blocks["header"] = (f"Generated {dt.date.today().isoformat()} from trajudge commit {commit()} by "
                        "`bench/validation.py`; data: the copies in `../shared/datasets/` (see each folder's SOURCE.md).")
    if args.write:
        args.write.write_text(replace_blocks(args.write.read_text(encoding="utf-8"), blocks), encoding="utf-8")
        print(f"wrote the generated blocks of {args.write} (runs in {work})")
    else:
        for name, body in blocks.items():
            print(f"<!-- generated:{name} -->\n{body}\n")


if __name__ == "__main__":
    main()
