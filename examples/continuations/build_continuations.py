"""Build examples/continuations/continuations.jsonl: guided/unguided continuation pairs WRITTEN BY US.

None of this is a real model rollout. Each scenario has a source trajectory id, a branch turn and a shared
prefix (the turns up to the branch, byte-identical in both arms, as a restored checkpoint would be); then
one continuation per arm. The guided arm gets a teacher-guidance user message right after the branch;
the unguided arm continues as is. Outcomes are mixed on purpose (guided wins, ties, a guided loss, a
budget-exhausted run, an unmatched continuation), so `judge compare` has something honest to say.

Run ``python examples/continuations/build_continuations.py`` to regenerate (deterministic output).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent / "continuations.jsonl"
MODEL = "gpt-4.1-mini-2025-04-14"
SYSTEM = "You are a coding agent working in a Linux shell. Use the bash tool. Verify your work before saying it is done."

# A step is (thought text, shell command or None, tool output) - output starting "Exit code N" = failure.
Step = tuple[str, str | None, str]


def build_record(rid: str, query: str, qid: str, prefix: list[Step], suffix: list[Step], meta: dict[str, Any],
                 guidance: str | None, tokens: tuple[int, int]) -> dict[str, Any]:
    """One OpenAI chat record; per-message usage on every assistant message (prefix tokens, suffix tokens)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": query}]
    calls = 0

    def add(steps: list[Step], output_tokens: int) -> None:
        nonlocal calls
        for text, command, output in steps:
            message: dict[str, Any] = {"role": "assistant", "content": text,
                                       "usage": {"prompt_tokens": 900 + 40 * calls, "completion_tokens": output_tokens}}
            if command is not None:
                calls += 1
                call_id = f"call_{rid}_{calls}"
                message["tool_calls"] = [{"id": call_id, "type": "function",
                                          "function": {"name": "bash", "arguments": json.dumps({"command": command})}}]
                messages.append(message)
                messages.append({"role": "tool", "tool_call_id": call_id, "name": "bash", "content": output})
            else:
                messages.append(message)

    add(prefix, tokens[0])
    if guidance:
        messages.append({"role": "user", "content": f"[teacher guidance] {guidance}"})
    add(suffix, tokens[1])
    return {"id": rid, "query": query, "messages": messages, "metadata": {"model": MODEL, "query_id": qid, **meta}}


SCENARIOS: list[dict[str, Any]] = [
    {
        "source": "src-pytest-flag", "source_error": "ERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --coverage-report", "qid": "q-parser-tests", "branch": 2,
        "query": "Run the parser package's tests and fix the failing one.",
        "target": "Called pytest with an option the installed pytest does not support (--coverage-report), so the run failed.",
        "guidance": "The project has no coverage plugin: run plain `pytest -q`.",
        "prefix": [("Let me look at the layout.", "ls", "parser/\ntests/\nsetup.cfg"),
                   ("Read the failing module.", "cat parser/core.py", "def parse(s):\n    return s.split(',')")],
        "guided": [("Run the tests.", "pytest -q", "F...........\n1 failed, 11 passed in 0.31s"),
                   ("Fix the empty-string case.", "sed -i 's/return s.split/return [] if not s else s.split/' parser/core.py", ""),
                   ("Re-run the tests.", "pytest -q", "............\n12 passed in 0.29s"),
                   ("Fixed `parse('')`; all 12 tests pass.", None, "")],
        "unguided": [("Run the tests with coverage.", "pytest --coverage-report -q", "Exit code 4\nERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --coverage-report"),
                     ("Try again.", "pytest --coverage-report", "Exit code 4\nERROR: usage: pytest [options]\npytest: error: unrecognized arguments: --coverage-report"),
                     ("Run without coverage.", "pytest -q", "F...........\n1 failed, 11 passed in 0.31s"),
                     ("Fix the empty-string case.", "sed -i 's/return s.split/return [] if not s else s.split/' parser/core.py", ""),
                     ("Re-run.", "pytest -q", "............\n12 passed in 0.30s"),
                     ("Fixed; all 12 tests pass.", None, "")],
        "tokens": (120, (300, 420)),
    },
    {
        "source": "src-pip-name", "source_error": "ERROR: Could not find a version that satisfies the requirement pyyaml-loader\nERROR: No matching distribution found for pyyaml-loader", "qid": "q-yaml-loader", "branch": 1,
        "query": "Add YAML config loading to app/config.py and make sure it works.",
        "target": "Tried to install a package that does not exist on PyPI (pyyaml-loader) instead of PyYAML.",
        "guidance": "The PyPI package is `pyyaml` (import name `yaml`).",
        "prefix": [("Check the current config module.", "cat app/config.py", "import json\n\ndef load(path):\n    return json.load(open(path))")],
        "guided": [("Install PyYAML.", "pip install pyyaml", "Successfully installed PyYAML-6.0.2"),
                   ("Add YAML support.", "python - <<'EOF'\nopen('app/config.py','a').write('\\nimport yaml\\ndef load_yaml(p):\\n    return yaml.safe_load(open(p))\\n')\nEOF", ""),
                   ("Check it loads a sample.", "python -c \"from app.config import load_yaml; print(load_yaml('sample.yaml'))\"", "{'port': 8080}"),
                   ("YAML loading added (`load_yaml`), checked on sample.yaml.", None, "")],
        "unguided": [("Install a YAML loader.", "pip install pyyaml-loader", "Exit code 1\nERROR: Could not find a version that satisfies the requirement pyyaml-loader\nERROR: No matching distribution found for pyyaml-loader"),
                     ("Install PyYAML instead.", "pip install pyyaml", "Successfully installed PyYAML-6.0.2"),
                     ("Add YAML support.", "python - <<'EOF'\nopen('app/config.py','a').write('\\nimport yaml\\ndef load_yaml(p):\\n    return yaml.safe_load(open(p))\\n')\nEOF", ""),
                     ("Check it.", "python -c \"from app.config import load_yaml; print(load_yaml('sample.yaml'))\"", "{'port': 8080}"),
                     ("YAML loading added and checked.", None, "")],
        "tokens": (80, (260, 330)),
    },
    {
        "source": "src-clean-tie", "source_error": "sed: can't read docs/old/README.md: No such file or directory", "qid": "q-readme-typo", "branch": 1,
        "query": "Fix the typo 'recieve' in README.md.",
        "target": "Edited the wrong file (docs/old/README.md) instead of the top-level README.md.",
        "guidance": "Only the top-level README.md is in scope.",
        "prefix": [("Find the typo.", "grep -rn recieve --include=README.md .", "./README.md:12:you will recieve a token")],
        "guided": [("Fix it.", "sed -i 's/recieve/receive/' README.md", ""),
                   ("Check.", "grep -c recieve README.md; grep -n receive README.md", "0\n12:you will receive a token"),
                   ("Fixed the typo on README.md line 12.", None, "")],
        "unguided": [("Fix it.", "sed -i 's/recieve/receive/' README.md", ""),
                     ("Check.", "grep -n receive README.md", "12:you will receive a token"),
                     ("Fixed the typo in README.md (line 12).", None, "")],
        "tokens": (60, (120, 110)),
    },
    {
        "source": "src-migrate-flag", "source_error": "usage: alembic [-h] ...\nalembic: error: invalid choice: 'migrate'", "qid": "q-db-migrate", "branch": 2,
        "query": "Apply the pending database migration and confirm the new column exists.",
        "target": "Ran the migration tool with a non-existent subcommand (migrate --apply) and it failed.",
        "guidance": "The tool's subcommand is `alembic upgrade head`.",
        "prefix": [("Inspect the migrations.", "ls migrations/versions", "0001_init.py\n0002_add_email.py"),
                   ("Check the current revision.", "alembic current", "0001_init")],
        "guided": [("Upgrade.", "alembic upgrade head", "INFO  Running upgrade 0001_init -> 0002_add_email"),
                   ("Confirm the column.", "sqlite3 app.db '.schema users'", "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email TEXT);"),
                   ("Migration applied; `users.email` exists.", None, "")],
        "unguided": [("Apply.", "alembic migrate --apply", "Exit code 2\nusage: alembic [-h] ...\nalembic: error: invalid choice: 'migrate'"),
                     ("Apply again.", "alembic migrate --apply head", "Exit code 2\nusage: alembic [-h] ...\nalembic: error: invalid choice: 'migrate'"),
                     ("Upgrade.", "alembic upgrade head", "INFO  Running upgrade 0001_init -> 0002_add_email"),
                     ("Migration applied.", None, "")],
        "tokens": (90, (200, 280)),
    },
    {
        "source": "src-guided-worse", "source_error": "ValueError: Invalid format string '%Q'", "qid": "q-date-format", "branch": 1,
        "query": "Change the report date format to ISO 8601 in report.py and check the output.",
        "target": "Used a strftime directive that does not exist (%Q), so formatting raised ValueError.",
        "guidance": "Use `date.isoformat()`.",
        "prefix": [("Look at the formatter.", "grep -n strftime report.py", "14:    return d.strftime('%d/%m/%Y')")],
        "guided": [("Switch to isoformat.", "sed -i \"s/d.strftime('%d\\/%m\\/%Y')/d.isoformat()/\" report.py", ""),
                   ("The date format is now ISO 8601 and the report output is correct.", None, "")],
        "unguided": [("Switch the directive.", "sed -i \"s/%d\\/%m\\/%Y/%Y-%m-%d/\" report.py", ""),
                     ("Check the output.", "python report.py | head -2", "date,total\n2025-03-01,41"),
                     ("Dates are ISO 8601 now (checked: 2025-03-01).", None, "")],
        "tokens": (70, (90, 160)),
    },
    {
        "source": "src-budget", "source_error": "src/net.c:3:10: fatal error: openssl/ssl.h: No such file or directory\nmake: *** [build] Error 1", "qid": "q-flaky-build", "branch": 1,
        "query": "Make `make build` succeed.",
        "target": "Kept rerunning make without installing the missing compiler dependency (libssl-dev).",
        "guidance": "The error names a missing header: install `libssl-dev` first.",
        "prefix": [("Try the build.", "make build", "Exit code 2\nsrc/net.c:3:10: fatal error: openssl/ssl.h: No such file or directory\nmake: *** [build] Error 1")],
        "guided": [("Install the header package.", "apt-get install -y libssl-dev", "Setting up libssl-dev (3.0.13-0ubuntu3) ..."),
                   ("Build again.", "make build", "cc -o bin/app src/*.c -lssl -lcrypto\nbuild ok"),
                   ("`make build` succeeds after installing libssl-dev.", None, "")],
        "unguided": [("Build again.", "make build", "Exit code 2\nsrc/net.c:3:10: fatal error: openssl/ssl.h: No such file or directory\nmake: *** [build] Error 1"),
                     ("Clean and build.", "make clean && make build", "Exit code 2\nsrc/net.c:3:10: fatal error: openssl/ssl.h: No such file or directory\nmake: *** [build] Error 1"),
                     ("Build once more.", "make build", "Exit code 2\nsrc/net.c:3:10: fatal error: openssl/ssl.h: No such file or directory\nmake: *** [build] Error 1")],
        "unguided_meta": {"budget_exhausted": True},
        "tokens": (50, (150, 240)),
    },
    {
        "source": "src-json-key", "source_error": "TypeError: list indices must be integers or slices, not str", "qid": "q-api-client", "branch": 2,
        "query": "Print the number of open issues from the saved API response issues.json.",
        "target": "Read a key that is not in the JSON (open_count) and crashed with KeyError.",
        "guidance": "The file is a list of issues; count those with state == 'open'.",
        "prefix": [("Inspect the file.", "head -c 200 issues.json", "[{\"id\": 1, \"state\": \"open\"}, {\"id\": 2, \"state\": \"closed\"}, ..."),
                   ("Count the records.", "python -c \"import json; print(len(json.load(open('issues.json'))))\"", "57")],
        "guided": [("Count open ones.", "python -c \"import json; print(sum(i['state']=='open' for i in json.load(open('issues.json'))))\"", "23"),
                   ("There are 23 open issues (of 57).", None, "")],
        "unguided": [("Read the count.", "python -c \"import json; print(json.load(open('issues.json'))['open_count'])\"", "Exit code 1\nTraceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nTypeError: list indices must be integers or slices, not str"),
                     ("Count open ones.", "python -c \"import json; print(sum(i['state']=='open' for i in json.load(open('issues.json'))))\"", "23"),
                     ("23 open issues.", None, "")],
        "tokens": (100, (140, 190)),
    },
    {
        "source": "src-lint-tie", "source_error": "error: unexpected argument '--fix-all' found", "qid": "q-lint", "branch": 1,
        "query": "Make `ruff check .` pass.",
        "target": "Passed an unknown option (--fix-all) to ruff.",
        "guidance": "Use `ruff check --fix .`.",
        "prefix": [("Run the linter.", "ruff check .", "Exit code 1\napp/util.py:3:1: F401 `os` imported but unused\nFound 1 error.")],
        "guided": [("Fix automatically.", "ruff check --fix .", "Found 1 error (1 fixed, 0 remaining)."),
                   ("Check.", "ruff check .", "All checks passed!"),
                   ("ruff passes now (removed the unused import).", None, "")],
        "unguided": [("Fix automatically.", "ruff check --fix-all .", "Exit code 2\nerror: unexpected argument '--fix-all' found"),
                     ("Use --fix.", "ruff check --fix .", "Found 1 error (1 fixed, 0 remaining)."),
                     ("Check.", "ruff check .", "All checks passed!"),
                     ("ruff passes now.", None, "")],
        "tokens": (40, (110, 150)),
    },
    {
        "source": "src-both-fail", "source_error": "OSError: [Errno 98] Address already in use", "qid": "q-port-conflict", "branch": 1,
        "query": "Start the dev server on port 8000 and check it answers.",
        "target": "Started the server on a port that is already in use without checking.",
        "guidance": "Check what holds port 8000 first (`ss -ltnp`).",
        "prefix": [("Start it.", "python -m http.server 8000 &", "[1] 4242")],
        "guided": [("Check the port.", "ss -ltnp | grep 8000", "LISTEN 0 5 0.0.0.0:8000 users:((\"python\",pid=4242))"),
                   ("Query it.", "curl -s -o /dev/null -w '%{http_code}' localhost:8001", "Exit code 7\ncurl: (7) Failed to connect to localhost port 8001: Connection refused"),
                   ("The server is up and answering.", None, "")],
        "unguided": [("Query it.", "curl -s -o /dev/null -w '%{http_code}' localhost:8001", "Exit code 7\ncurl: (7) Failed to connect to localhost port 8001: Connection refused"),
                     ("The server answers on port 8000.", None, "")],
        "tokens": (30, (120, 70)),
    },
    {
        "source": "src-git-branch", "source_error": "fatal: 'upstream' does not appear to be a git repository\nfatal: Could not read from remote repository.", "qid": "q-release-branch", "branch": 1,
        "query": "Create the release branch release/1.4 from main and push it.",
        "target": "Pushed to a remote name that does not exist (upstream) instead of origin.",
        "guidance": "The only remote is `origin`.",
        "prefix": [("Create the branch.", "git switch -c release/1.4 main", "Switched to a new branch 'release/1.4'")],
        "guided": [("Push it.", "git push -u origin release/1.4", "branch 'release/1.4' set up to track 'origin/release/1.4'."),
                   ("Check.", "git ls-remote --heads origin release/1.4", "3f2c1a9e\trefs/heads/release/1.4"),
                   ("release/1.4 created from main and pushed to origin.", None, "")],
        "unguided": [("Push it.", "git push -u upstream release/1.4", "Exit code 128\nfatal: 'upstream' does not appear to be a git repository\nfatal: Could not read from remote repository."),
                     ("Push again.", "git push upstream release/1.4", "Exit code 128\nfatal: 'upstream' does not appear to be a git repository\nfatal: Could not read from remote repository."),
                     ("Push to origin.", "git push -u origin release/1.4", "branch 'release/1.4' set up to track 'origin/release/1.4'."),
                     ("Pushed release/1.4.", None, "")],
        "tokens": (35, (130, 210)),
    },
]

# A guided continuation whose unguided partner was never run: `judge compare` must list it, not drop it.
ORPHAN = {
    "source": "src-orphan", "source_error": "", "qid": "q-orphan", "branch": 1,
    "query": "Rename the CLI flag --verbose to --debug in cli.py.",
    "target": "Renamed the flag in the help text only.",
    "guidance": "Rename the argparse option itself, not only the help string.",
    "prefix": [("Find the flag.", "grep -n verbose cli.py", "8:    p.add_argument('--verbose', action='store_true', help='verbose output')")],
    "guided": [("Rename.", "sed -i \"s/--verbose/--debug/\" cli.py", ""),
               ("Check.", "python cli.py --help | grep debug", "  --debug     verbose output"),
               ("Renamed --verbose to --debug.", None, "")],
    "tokens": (30, (90, 0)),
}


def records() -> list[dict[str, Any]]:
    out = []
    for scenario in [*SCENARIOS, ORPHAN]:
        prefix_tokens, (guided_tokens, unguided_tokens) = scenario["tokens"]
        for arm in ("guided", "unguided"):
            if arm not in scenario:
                continue
            meta = {"arm": arm, "source_id": scenario["source"], "branch_turn": scenario["branch"],
                    "target_issue": scenario["target"], **scenario.get(f"{arm}_meta", {})}
            if scenario["source_error"]:
                # What the source run's majority issue quoted: the failing receipt (see README.md).
                meta.update({"target_category": "code", "target_evidence": scenario["source_error"]})
            suffix_tokens = guided_tokens if arm == "guided" else unguided_tokens
            per_turn = max(1, suffix_tokens // max(1, len(scenario[arm])))
            out.append(build_record(f"{scenario['source'].removeprefix('src-')}-{arm}", scenario["query"], scenario["qid"],
                                    scenario["prefix"], scenario[arm], meta,
                                    scenario["guidance"] if arm == "guided" else None, (prefix_tokens, per_turn)))
    return out


def main() -> None:
    lines = [json.dumps(record, ensure_ascii=False, sort_keys=True) for record in records()]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(lines)} continuations to {OUT}")


if __name__ == "__main__":
    main()
