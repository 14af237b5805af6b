"""One reading of a shell command (judge/facts/shell.py): the fact ledger's ``Action.read_only`` and the editor's /
continuation harness's ``is_read_only`` give the same answer for every command.

READ_ONLY is table-driven. Rows marked ``agreed`` are commands both old paths (repair/calls.py's program lists and
the ledger's ``read_only_commands`` matched on the whole command) answered alike: the answer is kept. The other rows
are where they disagreed; the note says what each old path answered and why the chosen answer is right.
"""

from __future__ import annotations

import pytest
from test_rules_detectors import A, U, build, sh

from judge.facts import ledger_of
from judge.facts.shell import read_command
from judge.model import ToolCall
from judge.repair.calls import command_is_read_only, is_read_only

AGREED = "agreed"

# (command, only reads, note)
READ_ONLY: list[tuple[str, bool, str]] = [
    # --- both old paths agreed: kept
    ("ls -la", True, AGREED),
    ("cat README.md", True, AGREED),
    ("grep -rn foo src", True, AGREED),
    ("git status", True, AGREED),
    ("git log --oneline -5", True, AGREED),
    ("git diff HEAD~1", True, AGREED),
    ("git show HEAD", True, AGREED),
    ("head -n 20 app.py", True, AGREED),
    ("wc -l *.py", True, AGREED),
    ("pwd", True, AGREED),
    ("find . -name '*.py'", True, AGREED),
    ("echo hello", True, AGREED),
    ("echo 'rm -rf /'", True, AGREED),
    ("tree src", True, AGREED),
    ("less f", True, AGREED),
    ("stat f", True, AGREED),
    ("which python", True, AGREED),
    ("grep 'a;b' f", True, AGREED),
    ("cat `ls`", True, AGREED),
    ("ls 2>&1", True, AGREED),
    ("cat a.txt | grep foo | wc -l", True, AGREED),
    ("lark-cli base record list --table t1", True, AGREED),
    ("lark-cli base +record-list", True, AGREED),
    ("gh pr view 12", True, AGREED),
    ("kubectl get pods", True, AGREED),
    ("lark-cli base record create --help", True, AGREED),
    ("node --version", True, AGREED),
    ("gndctl help stands", True, AGREED),
    ("redis-cli -h", True, AGREED),
    # usage words that are options of a write: the value of --version, the host of -h, the name given to create
    ("botctl fw push --version 4.2.1 --fleet dock-3", False, "issue 24 E3: --version anywhere made any push read-only"),
    ("redis-cli -h cache.internal SET k v", False, "issue 24 E3: -h HOST is a host, not help"),
    ("lark-cli base record create --name help", False, "issue 24 E3: a flag's value 'help' is no help request"),
    ("rm -rf build", False, AGREED),
    ("mv a.txt b.txt", False, AGREED),
    ("cp a b", False, AGREED),
    ("mkdir -p out", False, AGREED),
    ("touch x", False, AGREED),
    ("chmod +x run.sh", False, AGREED),
    ("echo hi > out.txt", False, AGREED),
    ("cat a >> b", False, AGREED),
    ("sed -i 's/a/b/' f.py", False, AGREED),
    ("ls | tee listing.txt", False, AGREED),
    ("echo x | tee -a log.txt", False, AGREED),
    ("git commit -m 'x'", False, AGREED),
    ("git push", False, AGREED),
    ("git stash", False, AGREED),
    ("git checkout main", False, AGREED),
    ("npm install", False, AGREED),
    ("pip install requests", False, AGREED),
    ("python app.py", False, AGREED),
    ("python -c 'print(1)'", False, AGREED),
    ("pytest -q", False, AGREED),
    ("make", False, AGREED),
    ("cd src && make", False, AGREED),
    ("curl -X POST http://x", False, AGREED),
    ("curl http://x | bash", False, AGREED),
    ("docker ps", True, "issue 24 item 3: docker ps lists containers (read_only_commands, per program family)"),
    ("docker rm web", False, AGREED),
    ("kubectl delete pod x", False, AGREED),
    ("lark-cli base record create --data '{}'", False, AGREED),
    ("sed -n '1,10p' f.py", False, AGREED),
    # --- disagreements: a write anywhere outside quotes wins (the ledger matched only the start)
    ("ls && rm -rf build", False, "ledger said read-only: its pattern matched 'ls' at the start"),
    ("cat a; rm b", False, "ledger said read-only (start matched)"),
    ("ls || touch x", False, "ledger said read-only (start matched)"),
    ("ls\nrm x", False, "ledger said read-only (start matched)"),
    ("ls & rm x", False, "ledger said read-only (start matched); '&' runs rm in the background"),
    ("git status && git commit -am x", False, "ledger said read-only (start matched)"),
    ("ls && npm install", False, "ledger said read-only (start matched); npm install is no read"),
    ("find . -name '*.pyc' -delete", False, "ledger said read-only: '^find' ignored -delete"),
    ("find . -exec rm {} \\;", False, "ledger said read-only: '^find' ignored -exec"),
    ("cat f | sh", False, "ledger said read-only: piping into a shell runs the file"),
    ("ls | xargs rm", False, "ledger said read-only (start matched)"),
    ("find . | xargs grep foo", False, "ledger said read-only; xargs is not in the vocabulary: kept a write (safe side)"),
    ('echo "$(rm -rf x)"', False, "ledger said read-only: a command substitution runs inside double quotes"),
    ("sleep 1 & ls", False, "editor said read-only: it took 'ls' after '&' for a GET-like subcommand of sleep"),
    # --- disagreements: quoted operators and redirects are arguments (the ledger split or matched them)
    ("jq '.items[] | select(.a > 3)' data.json", True, "ledger said write: it read '> 3' as a redirect"),
    ("jq '.a || .b' data.json", True, "ledger said not read-only: jq was not in its list"),
    ("grep 'x > y' f", True, "ledger said write: it read '> y' as a redirect to file y"),
    ("cd src && ls", True, "ledger said not read-only: its pattern needed the read at the start"),
    ("FOO=1 ls", True, "ledger said not read-only: an assignment prefix hid the program"),
    # --- disagreements: the vocabularies, united (built-in list or the YAML's read_only_commands)
    ("ll", True, "editor said write: 'll' is only in the YAML list"),
    ("ll -a", True, "editor said write: 'll' is only in the YAML list"),
    ("sort f.txt", True, "ledger said not read-only: sort is only in the built-in list"),
    ("jq . a.json", True, "ledger said not read-only (built-in list only)"),
    ("diff a b", True, "ledger said not read-only (built-in list only)"),
    ("env", True, "ledger said not read-only (built-in list only)"),
    ("date", True, "ledger said not read-only (built-in list only)"),
    ("du -sh .", True, "ledger said not read-only (built-in list only)"),
    ("git branch", True, "ledger said not read-only (its git list was status/diff/log/show)"),
    ("git remote -v", True, "ledger said not read-only (its git list was status/diff/log/show)"),
    ("git branch -a", True, "ledger said not read-only (its git list was status/diff/log/show)"),
    ("git branch -D feature", False, "editor said read-only: any 'git branch' counted as a listing"),
    ("git branch new-feature", False, "editor said read-only: 'git branch NAME' creates a branch"),
    ("git remote add origin u", False, "editor said read-only: any 'git remote' counted as a listing"),
    ("test -f x", True, "ledger said not read-only (built-in list only)"),
    ("[ -f x ]", True, "ledger said not read-only (built-in list only)"),
    # --- disagreements: a redirect to /dev/null writes no file
    ("ls > /dev/null", True, "editor said write: any '>' counted"),
    ("grep foo f 2>/dev/null", True, "editor said write: any '>' counted"),
    ("echo done > /dev/null", True, "editor said write: any '>' counted"),
    ('echo x > "$OUT"', False, "ledger said read-only: its redirect pattern skipped a quoted variable"),
    # --- issue 24 task D: GET-like verbs are the rules config's read_only_verbs (data), read per segment
    ("lark-cli base +record-count --base bascnA1 --table tblB2", True, "both said write: count was no GET-like verb"),
    ("lark-cli base record count --table tblB2", True, "both said write: count was no GET-like verb"),
    ("cd work && lark-cli base +record-count --table tblB2", True, "every segment reads"),
    ("lark-cli base +record-count --table tblB2 | jq .total", True, "a pipeline of reads"),
    ("lark-cli base +record-count --table tblB2 && notify-send done", False, "notify-send is unknown: it may write"),
    ("git log -1 && pip install requests", False, "one segment installs"),
    ("mytool create --name list", False, "both said read-only: a flag's value was taken for a subcommand"),
    ("gh issue create --title show", False, "both said read-only: a flag's value was taken for a subcommand"),
    ("lark-cli base +record-create --json list.json", False, "create writes"),
]


@pytest.mark.parametrize(("command", "expected", "note"), READ_ONLY, ids=[row[0] for row in READ_ONLY])
def test_editor_and_ledger_read_a_command_alike(command: str, expected: bool, note: str) -> None:
    call = ToolCall(id="c1", name="Bash", arguments={"command": command})
    trajectory = build(U("Look around."), A("", sh(command, "ok", 0)), A("Finished."))
    ledger_read_only = ledger_of(trajectory).actions[0].read_only
    assert (command_is_read_only(command)[0], is_read_only(call)[0], ledger_read_only) == (expected,) * 3, note


# (command, files written)
WRITES: list[tuple[str, tuple[str, ...]]] = [
    ("echo hi > out.txt", ("out.txt",)),
    ("cat a >> 'my notes.md'", ("my notes.md",)),
    ("make 2> err.log", ("err.log",)),
    ("ls &> all.log", ("all.log",)),
    ("ls | tee a.txt b.txt", ("a.txt", "b.txt")),
    ("ls | tee -a log.txt", ("log.txt",)),
    ("sed -i 's/a/b/' f.py g.py", ("f.py", "g.py")),
    ("sed -i.bak -e 's/a/b/' f.py", ("f.py",)),
    ("ls > /dev/null 2>&1", ()),
    ("jq '.a > 3' data.json", ()),
    ("grep 'x > y' f", ()),
    ("echo 'a' | jq '.' > out.json && cat out.json", ("out.json",)),
    ('echo x > "$OUT"', ()),  # a write (see READ_ONLY) to a file no name tells
]


@pytest.mark.parametrize(("command", "files"), WRITES, ids=[row[0] for row in WRITES])
def test_files_written_are_read_outside_quotes(command: str, files: tuple[str, ...]) -> None:
    assert read_command(command).writes == files
    trajectory = build(U("Write it."), A("", sh(command, "ok", 0)), A("Finished."))
    assert ledger_of(trajectory).actions[0].writes == files


# (command, segments)
SEGMENTS: list[tuple[str, tuple[str, ...]]] = [
    ("jq '.items[] | select(.a > 3)' data.json", ("jq '.items[] | select(.a > 3)' data.json",)),
    ("ls && rm -rf build", ("ls", "rm -rf build")),
    ("a; b || c | d\ne & f", ("a", "b", "c", "d", "e", "f")),
    ("ls > x 2>&1 && cat x", ("ls > x 2>&1", "cat x")),
    ("grep 'a;b' f", ("grep 'a;b' f",)),
]


@pytest.mark.parametrize(("command", "segments"), SEGMENTS, ids=[row[0] for row in SEGMENTS])
def test_segments_split_outside_quotes(command: str, segments: tuple[str, ...]) -> None:
    assert tuple(s.text for s in read_command(command).segments) == segments


def test_a_quoted_chain_operator_does_not_change_the_intent() -> None:
    # The intent head is the last command of a chain; a jq filter's '||' is no chain.
    command = "jq '.a || .b' data.json"
    trajectory = build(U("Read it."), A("", sh(command, "1", 0)), A("Finished."))
    assert ledger_of(trajectory).actions[0].intent == "Bash:jq"
    trajectory = build(U("Build it."), A("", sh("cd src && make all", "ok", 0)), A("Finished."))
    assert ledger_of(trajectory).actions[0].intent == "Bash:make all"


def test_words_of_gives_a_fresh_list_each_call() -> None:
    # words_of is memoised: a caller changing the list it got must not change what the next caller reads.
    from judge.facts.shell import words_of

    first = words_of("FOO=1 grep -q 'a b' file")
    assert first == ["grep", "-q", "a b", "file"]
    first.append("changed")
    assert words_of("FOO=1 grep -q 'a b' file") == ["grep", "-q", "a b", "file"]
