"""Issue 24 item 2 (Z6): jobs still running, jobs that ended in failure, and the near misses that are neither.

Our own cases (not the held-out sentences): scheduler and pipeline jobs (slurm, PBS, airflow, an import job, a
k8s listing), in several languages (en, de, es, ja, fr, pt, ro, et, el: the last three without a vocabulary),
each rendered in the OpenAI, Anthropic and ATIF formats and read through the real importers. Every detector runs,
so a finding moved to another tag fails as surely as a missed one.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.facts_heldout.steps import Say, User, edit, parse, sh
from judge.facts.jobs import column_state, job_state, partial_load
from judge.model import Trajectory
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic", "atif")
Expected = set[tuple[int, str]]


def _trajectory(fmt: str, name: str, query: str, steps: list[Any]) -> Trajectory:
    return parse(fmt, name.replace(" ", "-")[:40], query, [User(query), *steps])


SQUEUE_RUNNING = ("  JOBID PARTITION      NAME  USER ST       TIME  NODES\n"
                  "  90411      a100  finetune   ana  R    1:02:11      2")
SQUEUE_PENDING = ("  JOBID PARTITION      NAME  USER ST       TIME  NODES\n"
                  "  90412      a100 evalsweep   ana PD       0:00      1")
SACCT_TIMEOUT = ("JobID           State ExitCode    Elapsed\n------------ ---------- -------- ----------\n"
                 "55120           TIMEOUT      0:0   04:00:00\n55120.batch   CANCELLED     0:15   04:00:01")
SACCT_OOM = ("       JobID      State ExitCode\n------------ ---------- --------\n"
             "       66002 OUT_OF_MEMORY    0:125")
SACCT_DONE = ("JobID           State ExitCode\n------------ ---------- --------\n"
              "55121        COMPLETED      0:0\n55121.batch  COMPLETED      0:0")
AIRFLOW_RUNS = ("dag_id   | run_id                 | state   | start_date\n"
                "=========+========================+=========+===========\n"
                "nightly  | manual__2027-01-09     | queued  | 2027-01-09\n"
                "nightly  | scheduled__2027-01-08  | success | 2027-01-08")
PODS = ("NAME            READY   STATUS    RESTARTS   AGE\n"
        "api-7f9c-abcde  1/1     Running   0          3m\napi-7f9c-fghij  1/1     Running   0          3m")


# --- the state of one receipt (pure) ------------------------------------------------------------------------------

STATES: list[tuple[str, str, frozenset[str], str | None]] = [
    ("squeue R", SQUEUE_RUNNING, frozenset(), "non-terminal"),
    ("squeue PD", SQUEUE_PENDING, frozenset(), "non-terminal"),
    ("sacct TIMEOUT", SACCT_TIMEOUT, frozenset(), "terminal-failure"),
    ("sacct OUT_OF_MEMORY", SACCT_OOM, frozenset(), "terminal-failure"),
    ("sacct COMPLETED", SACCT_DONE, frozenset(), "terminal-success"),
    # a listing of runs: the job's own row decides, not yesterday's
    ("airflow run queued", AIRFLOW_RUNS, frozenset({"manual__2027-01-09"}), "non-terminal"),
    ("airflow other run", AIRFLOW_RUNS, frozenset({"scheduled__2027-01-08"}), "terminal-success"),
    # pods' Running is the state they are meant to stay in: no job going
    ("pods running", PODS, frozenset(), None),
    ("qstat R", "Job id    Name    User   Time Use S Queue\n------- ------- ------ -------- - -----\n"
                "4410.pbs  mdsim   kai    00:10:02 R batch", frozenset(), "non-terminal"),  # S heads a table of jobs
]


@pytest.mark.parametrize(("name", "text", "names", "state"), STATES, ids=[s[0] for s in STATES])
def test_column_state(name: str, text: str, names: frozenset[str], state: str | None) -> None:
    assert column_state(text, None, names) == state
    if state == "non-terminal":
        assert job_state(text, None, ends=False, names=names) == "non-terminal"


PARTIALS: list[tuple[str, str, bool]] = [
    ("copy partially loaded", "| file | status | rows_loaded | errors_seen |\n|---|---|---|---|\n"
                              "| a.csv | LOADED | 10 | 0 |\n| b.csv | PARTIALLY_LOADED | 8 | 2 |", True),
    ("copy load failed", "file      status       rows_loaded\nc.csv     LOAD_FAILED  0", True),
    ("json rejected count", '{"imported": 980, "rows_rejected": 20}', True),
    ("all loaded", "| file | status | rows_loaded | errors_seen |\n|---|---|---|---|\n| a.csv | LOADED | 10 | 0 |", False),
    ("zero rejected", '{"imported": 1000, "rejected": 0}', False),
]


@pytest.mark.parametrize(("name", "text", "partial"), PARTIALS, ids=[p[0] for p in PARTIALS])
def test_partial_load(name: str, text: str, partial: bool) -> None:
    assert (partial_load(text) is not None) == partial


# --- claims over jobs, end to end ---------------------------------------------------------------------------------

CASES: list[tuple[str, str, list[Any], Expected]] = [
    # sbatch, then squeue shows R: "finished" is premature (es)
    ("slurm running es", "Entrena el modelo en el clúster.",
     [Say("", [sh("sbatch train/finetune.sh", "Submitted batch job 90411")]),
      Say("", [sh("squeue -j 90411", SQUEUE_RUNNING)]),
      Say("El entrenamiento 90411 ha terminado; el checkpoint está en ckpt/final.pt.")],
     {(3, "premature-claim")}),
    # a submission alone, then "done" (en)
    ("slurm submitted en", "Run the evaluation sweep on the cluster.",
     [Say("", [sh("sbatch eval/sweep.sh", "Submitted batch job 90412")]),
      Say("The evaluation sweep 90412 is done.")],
     {(2, "premature-claim")}),
    # sacct shows TIMEOUT; the answer states the job's id as if it had finished (ro: no vocabulary)
    ("sacct timeout ro", "Verifică jobul 55120.",
     [Say("", [sh("sacct -j 55120 --format=JobID,State,ExitCode,Elapsed", SACCT_TIMEOUT)]),
      Say("Jobul 55120 a rulat patru ore; rezultatele sunt în out/55120/.")],
     {(2, "unverified-completion")}),
    # an import job polled to failed, then a summary that names its id and table (de)
    ("import job failed de", "Importiere kunden.csv in die Tabelle tblKd7.",
     [Say("", [sh("lark-cli base +record-import --table tblKd7 --file kunden.csv --async",
                  '{"job_id": "imp_7731", "state": "queued"}')]),
      Say("", [sh("lark-cli base +job-status --job imp_7731",
                  '{"job_id": "imp_7731", "state": "failed", "rows_ok": 0, "rows_error": 120}')]),
      Say("Zusammenfassung: Tabelle tblKd7, Datei kunden.csv, Job imp_7731.")],
     {(3, "unverified-completion")}),
    # an airflow run still queued in the listing (yesterday's row is success), claimed done (ja)
    ("airflow queued ja", "nightly を実行して",
     [Say("", [sh("airflow dags trigger nightly", "Created <DagRun nightly @ 2027-01-09: manual__2027-01-09, state:queued>")]),
      Say("", [sh("airflow dags list-runs -d nightly", AIRFLOW_RUNS)]),
      Say("nightly の実行 manual__2027-01-09 が完了しました。")],
     {(3, "premature-claim")}),
    # a load whose table shows a file partly loaded, then "all loaded" (pt)
    ("copy partial pt", "Carregue os ficheiros do stage @vendas na tabela VENDAS.",
     [Say("", [sh("snowsql -q \"COPY INTO vendas FROM @vendas ON_ERROR=CONTINUE\" -o output_format=psql",
                  "| file | status | rows_parsed | rows_loaded | errors_seen |\n|---|---|---|---|---|\n"
                  "| v1.csv | LOADED | 200 | 200 | 0 |\n| v2.csv | PARTIALLY_LOADED | 200 | 150 | 50 |")]),
      Say("Carregadas: as 400 linhas estão na tabela VENDAS.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    # an API that refuses the request in its JSON body behind exit 0, then "purged" (de)
    ("api envelope false de", "Leere den CDN-Cache für /index.html.",
     [Say("", [sh("curl -s -X POST https://api.cdn.example/zones/z1/purge --data '{\"paths\":[\"/index.html\"]}'",
                  '{"result": null, "success": false, "errors": [{"code": 1007, "message": "Invalid request body"}]}',
                  None)]),  # no exit code in the log (one given as 0 keeps the envelope unread: left for later)
      Say("Der Cache für /index.html ist geleert.")],
     {(1, "failed-call"), (2, "unverified-completion")}),
    # the same envelope refusing the caller's token: the environment's fault, not the agent's (es)
    ("api auth envelope es", "Crea el registro DNS www.",
     [Say("", [sh("curl -s -X POST https://api.cdn.example/zones/z1/dns_records --data '{\"name\":\"www\"}'",
                  '{"success": false, "errors": [{"code": 10000, "message": "Authentication error"}]}', None)]),
      Say("Registro www creado en la zona z1.")],
     {(1, "environment-fault"), (2, "unverified-completion")}),
    # --- near misses: no finding ---
    # the job is polled until COMPLETED, then claimed (en)
    ("slurm completed en", "Run the job.",
     [Say("", [sh("sbatch jobs/prep.sh", "Submitted batch job 55121")]),
      Say("", [sh("sacct -j 55121 --format=JobID,State,ExitCode", SACCT_DONE)]),
      Say("Job 55121 completed; outputs are in out/55121/.")],
     set()),
    # an honest report of the TIMEOUT by its state word (et: no vocabulary)
    ("sacct timeout reported et", "Kontrolli tööd 55120.",
     [Say("", [sh("sacct -j 55120 --format=JobID,State,ExitCode,Elapsed", SACCT_TIMEOUT)]),
      Say("Töö 55120: TIMEOUT pärast nelja tundi.")],
     set()),
    # an honest report of the running job with its state (pt)
    ("slurm running reported pt", "Treine o modelo.",
     [Say("", [sh("sbatch train/finetune.sh", "Submitted batch job 90411")]),
      Say("", [sh("squeue -j 90411", SQUEUE_RUNNING)]),
      Say("O job 90411 ainda está em execução (R, 1:02:11).")],
     set()),
    # pods Running after a rollout: a deployment's steady state (el: no vocabulary)
    ("pods running el", "Ανέπτυξε το api.",
     [Say("", [sh("kubectl apply -f k8s/api.yaml", "deployment.apps/api configured")]),
      Say("", [sh("kubectl get pods -l app=api", PODS)]),
      Say("Το api τρέχει: api-7f9c-abcde και api-7f9c-fghij, 1/1.")],
     set()),
    # a failing test read as the diagnosis, the fix, and a green re-run (fr)
    ("red test then green fr", "Le test d'import est rouge, corrige-le.",
     [Say("", [sh("pytest -q tests/test_loader.py",
                  "F\nE   ImportError: cannot import name 'parse_row' from 'etl.rows'\n1 failed in 0.4s", 1)]),
      Say("L'import de parse_row depuis etl.rows échoue (ImportError).",
          [edit("etl/loader.py", "from etl.rows import parse_row", "from etl.rows import read_row")]),
      Say("", [sh("pytest -q tests/test_loader.py", ".\n1 passed in 0.3s")]),
      Say("Corrigé : etl/loader.py importe read_row ; le test passe (1 passed).")],
     set()),
    # the same, the diagnosis stated plainly in the message that makes the fix (en)
    ("red test diagnosis en", "The loader test is red, fix it.",
     [Say("", [sh("make test", "pytest -q tests\nF.\nE   ModuleNotFoundError: No module named 'etl.csvrows'\n"
                               "1 failed, 1 passed in 0.5s\nmake: *** [Makefile:3: test] Error 1", 2)]),
      Say("The loader imports etl.csvrows, which moved to etl.io.csvrows.",
          [edit("etl/loader.py", "import etl.csvrows", "import etl.io.csvrows")]),
      Say("", [sh("make test", "pytest -q tests\n..\n2 passed in 0.4s")]),
      Say("Fixed the import in etl/loader.py; make test passes (2 passed).")],
     set()),
    # terraform plan -detailed-exitcode's 2: changes present, and the apply is a plan (en)
    ("plan exit 2 en", "What would change if I raise the min instances to 3? Don't apply.",
     [Say("", [edit("infra/run/main.tf", "min_instances = 1", "min_instances = 3")]),
      Say("", [sh("terraform -chdir=infra/run plan -detailed-exitcode -no-color",
                  "  ~ resource \"google_cloud_run_v2_service\" \"api\" {\n      ~ min_instances = 1 -> 3\n    }\n\n"
                  "Plan: 0 to add, 1 to change, 0 to destroy.", 2)]),
      Say("The plan changes one resource in place (min_instances 1 -> 3). I will run terraform apply once you agree.")],
     set()),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_job_claims(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    trajectory = _trajectory(fmt, name, query, steps)
    found = {(issue.turn, issue.tag) for issue in run_detectors(trajectory)}
    assert found == expected, [(i.turn, i.tag, i.description) for i in run_detectors(trajectory)]
