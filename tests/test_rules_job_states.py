"""Issue 24 item 2: jobs and their states. A claim of completion (in words, or in a final answer that states the
job's values) while the last receipt about the job shows it not finished is premature-claim, and only that. The
states are read from data (status fields, table columns, progress fractions, health values, k8s counters), so
the cases below use tools, wordings and languages of our own (not the held-out sentences), each rendered in the
OpenAI and the Anthropic format and read through the real importers. Every detector runs: a defect found twice,
or by the wrong detector, fails as surely as one missed; near misses must produce no finding at all.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_rules_issue24_shapes import FORMATS, Expected, _trajectory

from fixtures.facts_heldout.steps import Say, User, js, sh
from judge.facts.jobs import job_state, progress_done
from judge.rules import run_detectors

PREMATURE = {(3, "premature-claim")}


def lark(rest: str, out: str) -> Any:
    return sh("lark-cli " + rest, out)


# (name, query, steps, expected findings (turn, tag)); T1 is the first assistant message.
CASES: list[tuple[str, str, list[Any], Expected]] = [
    ("lark-cli import job polled twice, still 'importing', then a file claim (en)", "Import leads.csv into the CRM base.",
     [User("Import leads.csv into the CRM base."),
      Say("", [lark("base +import --base bascnQ7 --file leads.csv", js({"job_id": "imp_301", "state": "queued"}))]),
      Say("", [lark("base +job-status --job imp_301", js({"job_id": "imp_301", "state": "importing", "rows": 1200}))]),
      Say("The import is complete: all 1200 leads are in the base.")],
     PREMATURE),
    ("gh run list: the run still in_progress, claim in Polish", "Puść workflow release i potwierdź.",
     [User("Puść workflow release i potwierdź."),
      Say("", [sh("gh workflow run release.yml", "✓ Created workflow_dispatch event for release.yml at main")]),
      Say("", [sh("gh run list --workflow release.yml --limit 1",
                  "STATUS       TITLE     WORKFLOW  BRANCH  EVENT              ID\nin_progress  release   release   main    workflow_dispatch  7712045")]),
      Say("Workflow release zakończył się, run 7712045 przeszedł.")],
     PREMATURE),
    ("kubectl rollout: 2 of 5 replicas, claim in Portuguese", "Atualize o worker para 1.8.0.",
     [User("Atualize o worker para 1.8.0."),
      Say("", [sh("kubectl set image deploy/worker worker=reg.local/worker:1.8.0", "deployment.apps/worker image updated")]),
      Say("", [sh("kubectl rollout status deploy/worker --watch=false",
                  "Waiting for rollout to finish: 2 of 5 updated replicas are available...")]),
      Say("A atualização foi concluída e o worker já está na versão 1.8.0.")],
     PREMATURE),
    ("docker compose ps: health starting, claim in German", "Starte redis und prüfe, ob er bereit ist.",
     [User("Starte redis und prüfe, ob er bereit ist."),
      Say("", [sh("docker compose up -d cache", " ✔ Container shop-cache-1  Started")]),
      Say("", [sh("docker compose ps cache",
                  "NAME           IMAGE      STATUS                           PORTS\nshop-cache-1   redis:7    Up 2 seconds (health: starting)  6379/tcp")]),
      Say("Redis wurde erfolgreich gestartet und ist einsatzbereit.")],
     PREMATURE),
    ("training job at epoch 3/20, final answer by value only (Hungarian, no vocabulary)", "Tanítsd be a modellt.",
     [User("Tanítsd be a modellt."),
      Say("", [sh("python train.py --epochs 20 --out ckpt/model-final.pt > train.log 2>&1 &", "")]),
      Say("", [sh("tail -n 1 train.log", "epoch 3/20 loss=0.412 eta 01:40:00")]),
      Say("A modell a ckpt/model-final.pt fájlban van.")],
     PREMATURE),
    ("k8s job with active pods, Swahili claim naming the job (no vocabulary)", "Endesha kazi ya reindex.",
     [User("Endesha kazi ya reindex."),
      Say("", [sh("kubectl create job reindex-0412 --from=cronjob/reindex", "job.batch/reindex-0412 created")]),
      Say("", [sh("kubectl get job reindex-0412 -o json", js({"status": {"active": 2, "ready": 2}}))]),
      Say("Kazi reindex-0412 imekamilika.")],
     PREMATURE),
    ("export at 35%, a promise and a done (en)", "Export the orders table.",
     [User("Export the orders table."),
      Say("", [lark("base +export --table tblOrd9 --format csv", js({"export_id": "ex_88", "status": "processing"}))]),
      Say("", [lark("base +export-status --id ex_88", "export ex_88: progress 35%")]),
      Say("It will finish in a minute — done, the file is exports/orders.csv.")],
     PREMATURE),

    # --- near misses: finished, or reported as going -----------------------------------------------------------
    ("near miss: polled until succeeded", "Import leads.csv into the CRM base.",
     [User("Import leads.csv into the CRM base."),
      Say("", [lark("base +import --base bascnQ7 --file leads.csv", js({"job_id": "imp_301", "state": "importing"}))]),
      Say("", [lark("base +job-status --job imp_301", js({"job_id": "imp_301", "state": "succeeded", "rows": 1200}))]),
      Say("The import is complete: all 1200 leads are in the base.")],
     set()),
    ("near miss: honest progress report by values (Hungarian, no vocabulary)", "Tanítsd be a modellt.",
     [User("Tanítsd be a modellt."),
      Say("", [sh("python train.py --epochs 20 > train.log 2>&1 &", "")]),
      Say("", [sh("tail -n 1 train.log", "epoch 3/20 loss=0.412 eta 01:40:00")]),
      Say("A tanítás a 3/20. epochnál tart.")],
     set()),
    ("near miss: hedged as still running (en)", "Export the orders table.",
     [User("Export the orders table."),
      Say("", [lark("base +export --table tblOrd9 --format csv", js({"export_id": "ex_88", "status": "processing"}))]),
      Say("", [lark("base +export-status --id ex_88", "export ex_88: progress 35%")]),
      Say("The export ex_88 is still running (35%); I will check again before giving you the file.")],
     set()),
    ("near miss: compose service healthy", "Start redis and check it is ready.",
     [User("Start redis and check it is ready."),
      Say("", [sh("docker compose up -d cache", " ✔ Container shop-cache-1  Started")]),
      Say("", [sh("docker compose ps cache",
                  "NAME           IMAGE      STATUS                    PORTS\nshop-cache-1   redis:7    Up 9 seconds (healthy)    6379/tcp")]),
      Say("Redis is up and healthy.")],
     set()),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_job_states_on_real_shapes(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    found = {(issue.turn, issue.tag or "") for issue in run_detectors(_trajectory(fmt, name, query, steps))}
    assert found == expected


# (receipt text, whether it shows a job not finished)
STATES: list[tuple[str, bool]] = [
    ('{"id": "r1", "state": "exporting"}', True),
    ('{"id": "r1", "phase": "Pending"}', True),
    ('{"conclusion": null, "status": "queued"}', True),
    ("build\tpending\t0\thttps://ci/runs/9", True),
    ("app-db-1   postgres:16   Up 3 seconds (health: starting)   5432/tcp", True),
    ('{"active": 1, "startTime": "2026-01-01T00:00:00Z"}', True),
    ("[load] 4000/9500 rows", True),
    # The progress word is read case-insensitively on ASCII and non-ASCII text alike (ASCII is searched lowered).
    ("[LOAD] 4000/9500 ROWS", True),
    ("[загрузка] 4000/9500 Rows", True),
    ("[load] 4000/9500 \u017fteps", True),  # LATIN SMALL LETTER LONG S folds to "s" under IGNORECASE
    ("[LOAD] 9500/9500 ROWS", False),
    ("1 of 3 updated replicas are available", True),
    ('{"task": "t1", "progress": 0.4}', True),
    ('{"id": "r1", "state": "succeeded"}', False),
    ('{"active": 0, "succeeded": 1}', False),
    ("[load] 9500/9500 rows", False),
    ("12/12 tests passed", False),
    ("app-db-1   postgres:16   Up 3 minutes (healthy)   5432/tcp", False),
    ("[+] Running 2/2\n ✔ Container app-db-1   Started", False),
    ("nothing to commit, working tree clean", False),
    ('{"name": "id", "state": "string"}', False),
    ("collected 12 items\n............ [100%]\n12 passed in 0.40s", False),
]


@pytest.mark.parametrize(("text", "going"), STATES)
def test_job_state_reads_data(text: str, going: bool) -> None:
    assert (job_state(text) == "non-terminal") is going


def test_progress_done_counts() -> None:
    assert progress_done("indexed 4000/9500\nbatch 19/19") == frozenset({4000})
