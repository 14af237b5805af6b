"""Read-only by data, per program family (issue 24 item 3): a failed call of a data or infrastructure tool that
only reads is side-effect free whatever its message, and its near-miss write stays "may write".

Cases written for this test (not taken from any counterexample suite); the final answers are in several languages,
one (Swahili) with no vocabulary in the rules config: the decision must not depend on the words around the call.
"""

from __future__ import annotations

import pytest
from test_editor_stopped_values import retried

from judge.facts.values import states
from judge.model import Trajectory
from judge.repair import offline_edit
from judge.repair.calls import call_sites, command_is_read_only, side_effect_free
from judge.repair.textref import Detectors
from judge.testing.builders import call, issue, say, tool, trajectory

# (case, command, receipt, exit code, final answer, side-effect free)
CALLS: list[tuple[str, str, str, int, str, bool]] = [
    # SQL clients: the statements in the quoted SQL decide
    ("psql-select-typo", "psql -d shop -c 'select sku, qty from stock wher qty < 5'",
     'ERROR:  syntax error at or near "qty"', 1, "Hakuna bidhaa chini ya 5.", True),
    ("psql-delete", "psql -d shop -c 'delete from stock wher qty = 0'",
     'ERROR:  syntax error at or near "qty"', 1, "Gelöscht.", False),
    ("psql-cte-delete", "psql -d shop -c 'with d as (delete from stock returning *) select count(*) from d'",
     'ERROR:  relation "stock" does not exist', 1, "Done.", False),
    ("psql-explain-analyze", "psql -c 'explain analyze update stock set qty = 0'", "ERROR: permission denied", 1,
     "Done.", False),
    ("psql-file", "psql -d shop -f report.sql", "ERROR:  column \"qtty\" does not exist", 1, "Done.", False),
    ("sqlite-select", "sqlite3 app.db 'SELECT name FROM userz LIMIT 3'", "Error: no such table: userz", 1,
     "Usuarios: ana, bo, cy.", True),
    ("sqlite-insert", "sqlite3 app.db \"INSERT INTO users(name) VALUES ('x')\"", "Error: no such table: users", 1,
     "Hecho.", False),
    ("mysql-show", "mysql -u ro -e 'SHOW TABLES; SELECT COUNT(*) FROM orderz'", "ERROR 1146 (42S02): Table 'orderz' doesn't exist",
     1, "Il y a 3 tables.", True),
    ("bq-select", "bq query --nouse_legacy_sql 'SELECT COUNT(*) FROM ds.evnts'", "Not found: Table proj:ds.evnts", 2,
     "イベントは 120 件です。", True),
    ("select-into-out-file", "psql -c 'select * from t' > dump.csv", "ERROR: relation t does not exist", 1, "Done.", False),
    # kubectl / docker / helm / gh / aws / terraform / git / dbt
    ("kubectl-logs", "kubectl -n etl logs deploy/workrs --tail=20", 'error: deployments.apps "workrs" not found', 1,
     "Логи worker: всё в порядке.", True),
    ("kubectl-apply", "kubectl apply -f deploy/workers.yaml", 'deployment.apps/workers configured\nError from server (Conflict): service "workers" changed', 1,
     "Applied.", False),
    ("docker-logs", "docker logs --tail 5 web-2", "Error response from daemon: No such container: web-2", 1,
     "Log web-1: OK.", True),
    ("docker-rm", "docker rm -f web-2", "Error response from daemon: removal of container web-2 is already in progress", 1,
     "Removed.", False),
    ("helm-status", "helm status paymnts -n prod", "Error: release: not found", 1, "Release payments: deployed.", True),
    ("helm-upgrade", "helm upgrade payments ./chart -n prod", "Error: UPGRADE FAILED: timed out waiting for the condition",
     1, "Upgraded.", False),
    ("gh-run-view", "gh run view 99999 --log", "HTTP 404: Not Found (https://api.github.com/repos/o/r/actions/runs/99999)",
     1, "Run 12 è passato.", True),
    ("gh-release-create", "gh release create v1.2.0 --notes 'fix'", "https://github.com/o/r/releases/tag/v1.2.0\nfailed to upload asset: connection reset", 1, "Released.", False),
    ("gh-api-post", "gh api -X POST repos/o/r/issues -f title=x", "HTTP 404: Not Found", 1, "Opened.", False),
    ("aws-describe", "aws ec2 describe-instances --instance-ids i-0abc", "An error occurred (InvalidInstanceID.NotFound)",
     254, "Inga instanser hittades.", True),
    ("terraform-plan", "terraform plan -var-file=prod.tfvars", "Error: Invalid value for input variable", 1,
     "Plan: 2 to add.", True),
    ("terraform-plan-out", "terraform plan -out prod.plan", "Error: Failed to write plan file: permission denied", 1, "Done.", False),
    ("terraform-apply", "terraform apply -auto-approve", "Error: creating S3 bucket: BucketAlreadyExists", 1, "Done.", False),
    ("git-rev-parse", "git rev-parse --verify origin/mian", "fatal: Needed a single revision", 128, "main = 4f2a9c1.", True),
    ("dbt-ls", "dbt ls --select ordrs", "Runtime Error: no nodes selected", 2, "Модели: orders.", True),
    ("dbt-run", "dbt run --select orders", "Database Error in model orders: relation does not exist", 1, "Done.", False),
]


@pytest.mark.parametrize(("case", "command", "receipt", "code", "final", "free"), CALLS, ids=[row[0] for row in CALLS])
def test_read_only_failures_are_side_effect_free(case: str, command: str, receipt: str, code: int, final: str,
                                                 free: bool) -> None:
    original = trajectory("t", [say("", call("c1", "Bash", command=command)), tool("c1", receipt, error=True, exit_code=code),
                                say(final)], query="Do the task.")
    site = call_sites(original)[0]
    assert side_effect_free(site, original)[0] is free, (case, side_effect_free(site, original)[1])


# (SQL client segment, only reads)
SQL: list[tuple[str, bool]] = [
    ("psql -c \"select * from t where state = 'delete'\"", True),   # a word inside a string literal is data
    ("psql -c 'select 1; drop table t'", False),
    ("psql -c 'select * into backup from t'", False),
    ("duckdb x.db -c 'describe t'", True),
    ("sqlite3 app.db '.tables'", True),
    ("sqlite3 app.db '.import data.csv t'", False),
    ("sqlite3 -cmd 'delete from t' app.db 'select 1'", False),
    ("psql -d crm", False),  # no SQL to read: an interactive session may write
]


@pytest.mark.parametrize(("command", "reads"), SQL, ids=[row[0] for row in SQL])
def test_sql_clients_read_by_their_statements(command: str, reads: bool) -> None:
    assert command_is_read_only(command)[0] is reads, command_is_read_only(command)[1]


@pytest.mark.parametrize(("text", "value", "stated"), [
    ("Log shop-api-1: two GET requests.", "api-1", False),
    ("Container api-1-old restarted.", "api-1", False),
    ("Container api-1 restarted.", "api-1", True),
    ("Pod web-2, then api-1.", "api-1", True),
    ("Rows: 12 and 2.", "2", True),
])
def test_a_hyphen_joined_id_is_one_token(text: str, value: str, stated: bool) -> None:
    assert states(text, value) is stated


# --- end to end: the editor deletes a read-only failure and refuses only a real reference -------------------------


# (case, trajectory, edited)
DELETIONS: list[tuple[str, Trajectory, bool]] = [
    # the answer quotes commit subjects the kept read printed ("retry failed uploads"): data, not talk of a failure
    ("pl-git-log-quotes-output", retried("git log --oneline main..origin/relase",
                                         "fatal: ambiguous argument 'main..origin/relase': unknown revision", 128,
                                         "git log --oneline main..origin/release",
                                         "7c1d2e3 retry failed uploads\n0b9a8f7 bump version",
                                         "Dwa commity: 7c1d2e3 (retry failed uploads) i 0b9a8f7 (bump version).",
                                         "Jakie commity ma origin/release?"), True),
    ("sw-psql-select-typo", retried("psql -d duka -At -c 'select count(*) form orders'",
                                    'ERROR:  syntax error at or near "form"', 1,
                                    "psql -d duka -At -c 'select count(*) from orders'", "4127",
                                    "Kuna maagizo 4127.", "Kuna maagizo mangapi?"), True),
    ("nl-docker-logs-longer-name", retried("docker logs --tail 2 db-1", "Error response from daemon: No such container: db-1",
                                           1, "docker logs --tail 2 shop-db-1", "ready to accept connections\ncheckpoint complete",
                                           "Logboek van shop-db-1: de database accepteert verbindingen.",
                                           "Laat de laatste logregels van de database zien."), True),
    # near misses: a write that failed is never deleted on a read-only reading
    ("sw-psql-delete", retried("psql -d duka -c 'delete form orders where id = 7'",
                               'ERROR:  syntax error at or near "form"', 1,
                               "psql -d duka -c 'delete from orders where id = 7'", "DELETE 1",
                               "Agizo 7 limefutwa.", "Futa agizo 7."), False),
    ("en-terraform-apply", retried("terraform apply -auto-approve", "aws_s3_bucket.logs: Creating...\n"
                                   "Error: creating S3 bucket: BucketAlreadyExists", 1,
                                   "terraform apply -auto-approve -var name=logs-2", "Apply complete! Resources: 1 added.",
                                   "The bucket exists now.", "Create the logs bucket."), False),
]


@pytest.mark.parametrize(("case", "original", "edited"), DELETIONS, ids=[row[0] for row in DELETIONS])
def test_editor_deletes_read_only_failures(case: str, original: Trajectory, edited: bool, detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert (result.status == "edited") is edited, (case, result.status, result.reason)


def test_a_sentence_the_vocabularies_read_as_a_failure_is_cut_with_the_call(detectors: Detectors) -> None:
    """Next to the retry, "Sorguda hata var, düzeltiyorum." (tr: an error in the query, fixing it) speaks of the
    deleted failure in words of the rules vocabularies: it gets the explicit bar, as an English failure word does,
    and is cut with the call."""
    original = trajectory("t", [
        say("", call("c1", "Bash", command="psql -d depo -At -c 'select count(*) form stok'")),
        tool("c1", 'ERROR:  syntax error at or near "form"', error=True, exit_code=1),
        say("Sorguda hata var, düzeltiyorum.", call("c2", "Bash", command="psql -d depo -At -c 'select count(*) from stok'")),
        tool("c2", "8812", exit_code=0),
        say("Stokta 8812 kayıt var.")], query="Stok tablosunda kaç kayıt var?")
    result = offline_edit(original, issue(1), detectors=detectors)
    assert result.status == "edited", result.reason
    assert [s.text for s in result.sentences if s.action == "removed"] == ["Sorguda hata var, düzeltiyorum."], result.sentences


@pytest.mark.parametrize(("text", "receipt", "left"), [
    ("Two commits: a1 (retry on 502) and b2.", "a1 fix: retry on 502\nb2 docs", "Two commits: a1 and b2."),
    ("That failed, so I retried.", "That failed", "That failed, so I retried."),  # two words are no quote
    ("前のコマンドは失敗しました。", "失敗", "前のコマンドは失敗しました。"),
])
def test_unquoted_drops_runs_a_receipt_printed(text: str, receipt: str, left: str) -> None:
    from judge.repair.dependencies import unquoted  # new here: imported in the test so the rest runs on older code

    assert unquoted(text, [receipt]) == left


@pytest.mark.parametrize(("text", "receipts", "left"), [
    # A run is a quote of one receipt: three words printed by two receipts, a line apart, are not one.
    ("alpha beta gamma delta", ["alpha beta", "gamma delta"], "alpha beta gamma delta"),
    ("see alpha beta gamma now", ["x", "", "alpha beta gamma delta"], "see now"),
    ("no  receipts  here", [], "no receipts here"),
    ("no  receipts  here", ["", ""], "no receipts here"),
])
def test_unquoted_reads_each_receipt_on_its_own(text: str, receipts: list[str], left: str) -> None:
    from judge.repair.dependencies import unquoted

    assert unquoted(text, receipts) == left


@pytest.mark.parametrize(("text", "values"), [
    ("recHd27 ARCHIVE 10.0.0.9 xe-0/0/3 build Build the", {"rechd27", "archive", "10.0.0.9", "xe-0/0/3"}),
    ("user_id AppStore a@b Stapler 4410923", {"user_id", "appstore", "a@b", "4410923"}),
    ("ÄrgerÜber café ²x ÉCOLE Москва МОСКВА procentowego", {"ärgerüber", "²x", "école", "москва"}),
])
def test_receipt_values_are_ids_numbers_and_names_in_mixed_or_upper_case(text: str, values: set[str]) -> None:
    from judge.repair.dependencies import receipt_values

    assert receipt_values(text) == values
