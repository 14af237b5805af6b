"""Issue 24 item 3 (Z5): the offline editor's wrong decisions, by principle.

Cases written here (not from any held-out set), in several languages, one of them (Swahili, Finnish) with no
vocabulary in the rules config, read through the real importer (OpenAI chat records). Table-driven.

- a later sentence that reports a kept listing (its rows' cells, a status column with ``failed``) does not talk of a
  deleted failure: sharing the listing's words is no reference;
- a value the deleted receipt quoted (an error's hint: "did you mean 'Stichtag'?") or offered in a list of
  alternatives ("options: Mpya, Imemalizika", "available: 3.2.1, 3.3.0") that the next call then uses is a
  returned-value dependency, in any language (not the respelling of a word the call sent: "relase" -> "release"); a value the call sent itself, or that another receipt showed first,
  is not;
- the next call of the same program with the refused word respelt ("npm run tests" -> "npm test") is the correction
  of a call its program refused to start, not a change of course;
- a read whose short answer names its own argument that the corrected run dropped failed by its content (exit 0);
- a GPU query (nvidia-smi with query and display flags only) is a read, a reset is not;
- a rewritten final answer that no longer reports, in any way the ledger reads, the failed change its kept receipt
  shows is a flip, also in a language with no vocabulary; a rewording that keeps the failure's words, quote or mark,
  and a cut, are not.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge.model import Trajectory, number_turns
from judge.repair import offline_edit
from judge.repair.textref import Detectors
from judge.repair.validators import validate_edit
from judge.testing.builders import bash_chat, issue


def chat(query: str, steps: list[tuple[str, str, int] | str]) -> Trajectory:
    """Bash calls and assistant texts; a text right before a call goes into that call's message."""
    return bash_chat(query, steps, record_id="z5", text_joins_next_call=True)


def without_first_call(original: Trajectory) -> tuple[Trajectory, list[int]]:
    """The rewriter output that drops the first call and its receipt and keeps everything else verbatim."""
    drop = {i for i, m in enumerate(original.messages)
            if any(c.id == "c1" for c in m.tool_calls) or (m.receipt is not None and m.receipt.call_id == "c1")}
    message_map = [i for i in range(len(original.messages)) if i not in drop]
    edited = original.model_copy(deep=True)
    edited.messages = [edited.messages[i] for i in message_map]
    number_turns(edited.messages)
    return edited, message_map


# --- a sentence that reports a kept listing is no reference to the deleted failure -------------------------------

LISTINGS: list[tuple[str, Trajectory]] = [
    ("de-status-column", chat("Zeig die letzten Läufe des Jobs nightly_export.", [
        ("jobctl runs list --job nightly_exprot", "job nightly_exprot not found", 1),
        ("jobctl runs list --job nightly_export --limit 3", "nightly_export run-0412 success\n"
         "nightly_export run-0411 success\nnightly_export run-0410 failed", 0),
        "Letzte Läufe von nightly_export: run-0412 success, run-0411 success, run-0410 failed."])),
    ("sw-status-column", chat("Onyesha mizunguko ya mwisho ya kazi ripoti_wiki.", [
        ("jobctl runs list --job ripoti_wki", "job ripoti_wki not found", 1),
        ("jobctl runs list --job ripoti_wiki --limit 3", "ripoti_wiki r-88 success\nripoti_wiki r-87 failed\n"
         "ripoti_wiki r-86 success", 0),
        "Mizunguko ya mwisho ya ripoti_wiki: r-88 success, r-87 failed, r-86 success."])),
    ("pt-table-cells", chat("Quais clientes ativos há na tabela tblCl5 (Base bascnVd2)?", [
        ("lark-cli base +record-list --base bascnVd2 --table tblC15 --filter \"Ativo = true\"",
         "Error: 404 TableIdNotFound: tblC15", 1),
        ("lark-cli base +record-list --base bascnVd2 --table tblCl5 --filter \"Ativo = true\" --fields Nome",
         "recCl1  Almeida lda\nrecCl4  Barros sa\nrecCl7  Costa lda", 0),
        "Há três clientes ativos: Almeida lda, Barros sa e Costa lda."])),
]


@pytest.mark.parametrize(("case", "original"), LISTINGS, ids=[row[0] for row in LISTINGS])
def test_a_sentence_reporting_a_kept_listing_is_no_reference(case: str, original: Trajectory,
                                                             detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert result.status == "edited", (case, result.reason)
    assert not result.sentences, (case, [s.text for s in result.sentences])
    edited, message_map = without_first_call(original)
    failed = [v for v in validate_edit(original, edited, message_map, ["c1"], detectors) if not v.passed]
    assert not failed, (case, [(v.name, v.findings) for v in failed])


# A sentence that talks of the deleted failure is still one (the control of the rows above).
REFERENCES: list[tuple[str, Trajectory]] = [
    ("en-first-try", chat("Show the last runs of nightly_export.", [
        ("jobctl runs list --job nightly_exprot", "job nightly_exprot not found", 1),
        ("jobctl runs list --job nightly_export --limit 2", "nightly_export run-0412 success\n"
         "nightly_export run-0411 failed", 0),
        "My first attempt used a misspelt job name, so the listing failed before I corrected it.\n"
        "Runs: run-0412 success, run-0411 failed."])),
]


@pytest.mark.parametrize(("case", "original"), REFERENCES, ids=[row[0] for row in REFERENCES])
def test_a_sentence_about_the_deleted_failure_is_still_cut(case: str, original: Trajectory,
                                                           detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert [s.text for s in result.sentences if s.action == "removed"][:1] == [
        "My first attempt used a misspelt job name, so the listing failed before I corrected it."], (case, result.reason)


# --- a value the deleted receipt quoted and the next call used -------------------------------------------------------

# (case, trajectory, the deletion must be refused for a dependency)
HINTS: list[tuple[str, Trajectory, bool]] = [
    ("de-field-hint", chat("Liste die überfälligen Aufgaben in tblAu3 (Base bascnAu1).", [
        ("lark-cli base +record-list --base bascnAu1 --table tblAu3 --filter \"Frist < TODAY()\"",
         "Error: 400 FieldNameNotFound: 'Frist' (did you mean 'Stichtag'?)", 1),
        "Ich nehme das vorgeschlagene Feld.",
        ("lark-cli base +record-list --base bascnAu1 --table tblAu3 --filter \"Stichtag < TODAY()\" --fields Titel",
         "recAu2  Rechnung senden", 0),
        "Überfällig: Rechnung senden."]), True),
    ("fi-field-hint", chat("Listaa myöhässä olevat tehtävät taulusta tblTe4 (Base bascnTe1).", [
        ("lark-cli base +record-list --base bascnTe1 --table tblTe4 --filter \"Määräaika < TODAY()\"",
         "Error: 400 FieldNameNotFound: 'Määräaika' (did you mean 'Eräpäivä'?)", 1),
        ("lark-cli base +record-list --base bascnTe1 --table tblTe4 --filter \"Eräpäivä < TODAY()\" --fields Otsikko",
         "recTe5  Lasku lähettämättä", 0),
        "Myöhässä: Lasku lähettämättä."]), True),
    ("ko-field-hint", chat("bascnKo2 의 tblKo7 에서 마감이 지난 작업을 보여 줘.", [
        ("lark-cli base +record-list --base bascnKo2 --table tblKo7 --filter \"기한 < TODAY()\"",
         "Error: 400 FieldNameNotFound: '기한' (did you mean '마감일'?)", 1),
        ("lark-cli base +record-list --base bascnKo2 --table tblKo7 --filter \"마감일 < TODAY()\" --fields 제목",
         "recKo3  계약 갱신", 0),
        "마감이 지난 작업: 계약 갱신."]), True),
    # A list of alternatives the error offers (after a colon or parenthesis), unquoted: the item the retry takes.
    ("sw-option-list", chat("Weka hali ya kazi recKz4 (tblKz2, Base bascnKz1) kuwa Imekamilika.", [
        ("lark-cli base +record-update --base bascnKz1 --table tblKz2 --ids recKz4 --json '{\"Hali\":\"Imekamilika\"}'",
         "Error: 400 OptionNotFound: 'Imekamilika' (options: Mpya, Inaendelea, Imemalizika)", 1),
        ("lark-cli base +record-update --base bascnKz1 --table tblKz2 --ids recKz4 --json '{\"Hali\":\"Imemalizika\"}'",
         '{"updated": 1}', 0),
        "Kazi recKz4 ina hali Imemalizika."]), True),
    ("fi-version-list", chat("Julkaise laskentapalvelu alueelle eu-north.", [
        ("fleetctl rollout --service billing --build stable --regions eu-north",
         "Error: tag 'stable' is not allowed; available: 3.2.1, 3.3.0", 1),
        ("fleetctl rollout --service billing --build 3.3.0 --regions eu-north", "eu-north: 8/8 healthy", 0),
        "Laskentapalvelu 3.3.0 on käynnissä alueella eu-north (8/8)."]), True),
    # controls: the listed item the retry uses is its own argument already, or the respelling of its typo ("relase"
    # -> "release"); JSON's commas list nothing
    ("en-list-own-argument", chat("Set recEn9 (tblEn2, Base bascnEn1) to Done.", [
        ("lark-cli base +record-update --base bascnEn1 --table tblEn2 --ids recEn9 --json '{\"State\":\"done\"}'",
         "Error: 400 OptionNotFound: 'done' (options: Todo, Doing, Done)", 1),
        ("lark-cli base +record-update --base bascnEn1 --table tblEn2 --ids recEn9 --json '{\"State\":\"Done\"}'",
         '{"updated": 1}', 0),
        "recEn9 is Done."]), False),
    ("sv-listed-respelling", chat("Kompilera shaders för konsolbygget.", [
        ("./build.sh shaders --platform ps5 --profile relase",
         "error: unknown profile 'relase' (expected: debug, release, profile)", 2),
        ("./build.sh shaders --platform ps5 --profile release", "compiled 3,412 shaders in 6m12s", 0),
        "3 412 shaders kompilerade."]), False),
    # a listed version near the one the call sent is the receipt's value, not a respelling: numbers are exact
    ("de-listed-version-near-twin", chat("Rolle den Rechnungsdienst 1.6 in eu-central aus.", [
        ("fleetctl rollout --service billing --build 1.6 --regions eu-central",
         "Error: tag '1.6' is not allowed; available: 1.6.4, 1.7.0", 1),
        ("fleetctl rollout --service billing --build 1.6.4 --regions eu-central", "eu-central: 6/6 healthy", 0),
        "Rechnungsdienst 1.6.4 läuft in eu-central (6/6)."]), True),
    ("en-json-commas", chat("Count the open tickets of project 7.", [
        ("ticketctl count --project 7 --state opne", '{"error": "bad state", "project": 7, "hint": 2}', 1),
        ("ticketctl count --project 7 --state open", '{"count": 2, "project": 7}', 0),
        "Project 7 has 2 open tickets."]), False),
    # controls: the quoted value is the call's own argument; the value the retry uses came from another receipt
    ("en-own-argument", chat("List the overdue tasks in tblEn3 (Base bascnEn1).", [
        ("lark-cli base +record-list --base bascnEn1 --table tblEn3 --filter \"Due < TODAY()\"",
         "Error: 400 FieldNameNotFound: 'Due'", 1),
        ("lark-cli base +field-list --base bascnEn1 --table tblEn3", "fldEn1  Title\nfldEn2  Deadline", 0),
        ("lark-cli base +record-list --base bascnEn1 --table tblEn3 --filter \"Deadline < TODAY()\" --fields Title",
         "recEn4  Send invoice", 0),
        "Overdue: Send invoice."]), False),
    ("sw-shown-by-another-receipt", chat("Orodhesha kazi zilizochelewa katika tblSw3 (Base bascnSw1).", [
        ("lark-cli base +record-list --base bascnSw1 --table tblSw3 --filter \"Tarehe < TODAY()\"",
         "Error: 400 FieldNameNotFound: 'Tarehe' (did you mean 'Mwisho'?)", 1),
        ("lark-cli base +field-list --base bascnSw1 --table tblSw3", "fldSw1  Kichwa\nfldSw2  Mwisho", 0),
        ("lark-cli base +record-list --base bascnSw1 --table tblSw3 --filter \"Mwisho < TODAY()\" --fields Kichwa",
         "recSw4  Tuma ankara", 0),
        "Zilizochelewa: Tuma ankara."]), False),
]


@pytest.mark.parametrize(("case", "original", "dependent"), HINTS, ids=[row[0] for row in HINTS])
def test_a_value_only_the_deleted_receipt_quoted_is_a_dependency(case: str, original: Trajectory, dependent: bool,
                                                                detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    if dependent:
        assert result.status != "edited", (case, result.reason)
        assert result.reasons[:1] == ["dependency"], (case, result.reasons, result.reason)
    else:
        assert result.status == "edited", (case, result.reason)


def test_a_rewrite_that_keeps_the_hinted_value_is_refused(detectors: Detectors) -> None:
    original = HINTS[0][1]
    edited, message_map = without_first_call(original)
    failed = [v for v in validate_edit(original, edited, message_map, ["c1"], detectors) if not v.passed]
    assert "dependency" in {v.kind for v in failed}, [(v.name, v.findings) for v in failed]


# --- the same program with the refused word respelt is a corrected retry ---------------------------------------------

RESPELT: list[tuple[str, Trajectory]] = [
    ("pl-npm-script", chat("Uruchom testy jednostkowe.", [
        ("npm run tests", 'npm ERR! Missing script: "tests"', 1),
        "Skrypt nazywa się test.",
        ("npm test", "Test Files  4 passed (4)\n     Tests  52 passed (52)", 0),
        "52 testy przeszły w 4 plikach."])),
    ("hu-npm-script", chat("Futtasd a lintet.", [
        ("npm run lnt", 'npm ERR! Missing script: "lnt"', 1),
        ("npm run lint", "0 problems", 0),
        "A lint lefutott, 0 hiba."])),
]


@pytest.mark.parametrize(("case", "original"), RESPELT, ids=[row[0] for row in RESPELT])
def test_the_respelt_call_of_the_same_program_is_its_correction(case: str, original: Trajectory,
                                                                detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert result.status == "edited", (case, result.reason)
    control = [d for d in result.dependencies if d.kind == "control"]
    assert all(d.status != "blocking" for d in control), (case, control)


# --- a read that failed by its content, not its exit code ------------------------------------------------------------

# (case, trajectory, the editor deletes the first call)
CONTENT_FAILURES: list[tuple[str, Trajectory, bool]] = [
    ("zh-kubectl-namespace", chat("billing 命名空间里有哪些 deployment？", [
        ("kubectl get deployments -n biling", "No resources found in biling namespace.", 0),
        ("kubectl get deployments -n billing -o name", "deployment.apps/invoice-api\ndeployment.apps/ledger", 0),
        "billing 里有 2 个 deployment：invoice-api 和 ledger。"]), True),
    ("et-kubectl-namespace", chat("Millised podid töötavad nimeruumis arve?", [
        ("kubectl get pods -n arvee", "No resources found in arvee namespace.", 0),
        ("kubectl get pods -n arve -o name", "pod/arve-api-7c9d-x2", 0),
        "Nimeruumis arve töötab üks pod: arve-api-7c9d-x2."]), True),
    # the answer named no argument of the call: nothing shows it failed
    ("en-empty-listing", chat("Which pods run in billing?", [
        ("kubectl get pods -n billing", "No resources found.", 0),
        ("kubectl get pods -A -o name", "pod/invoice-api-1", 0),
        "No pods run in billing."]), False),
]


@pytest.mark.parametrize(("case", "original", "deleted"), CONTENT_FAILURES, ids=[row[0] for row in CONTENT_FAILURES])
def test_a_read_that_failed_by_its_content_is_deletable(case: str, original: Trajectory, deleted: bool,
                                                        detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert (result.status == "edited") is deleted, (case, result.reason)
    if deleted:
        assert result.removed_calls == ["c1"]
        assert result.edited is not None and result.edited.messages is not original.messages
        assert all(a is not b for a, b in zip(result.edited.messages, original.messages))


# --- GPU queries are reads; GPU settings are not ------------------------------------------------------------------

GPU: list[tuple[str, Trajectory, bool]] = [
    ("ja-nvidia-smi-index", chat("GPU 2 の空きメモリは？", [
        ("nvidia-smi -i 7 --query-gpu=memory.free --format=csv", "No devices were found", 6),
        ("nvidia-smi -i 2 --query-gpu=memory.free --format=csv,noheader", "40110 MiB", 0),
        "GPU 2 の空きメモリは 40110 MiB です。"]), True),
    # a reset changes the GPU: its failure proves nothing about what it did
    ("fr-nvidia-smi-reset", chat("Réinitialise la GPU 1.", [
        ("nvidia-smi -i 1 --gpu-reset", "Unable to reset GPU 00000000:3B:00.0 because it's being used by some other "
         "process", 255),
        ("nvidia-smi -i 1 --gpu-reset", "GPU 00000000:3B:00.0 was successfully reset.", 0),
        "La GPU 1 est réinitialisée."]), False),
]


@pytest.mark.parametrize(("case", "original", "deleted"), GPU, ids=[row[0] for row in GPU])
def test_a_gpu_query_is_side_effect_free(case: str, original: Trajectory, deleted: bool, detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert (result.status == "edited") is deleted, (case, result.reason)


# --- a rewritten final answer that no longer reports the failure its kept receipt shows -------------------------------

DBT_FAILED = ("dbt run --select fct_orders", "1 of 1 ERROR creating sql table model marts.fct_orders ... [ERROR in 0.4s]\n"
              "Database Error in model fct_orders\n  division by zero\nDone. PASS=0 WARN=0 ERROR=1 SKIP=0 TOTAL=1", 1)

# (case, query, original final answer, rewritten final answer, refused as a flip)
FLIPS: list[tuple[str, str, str, str, bool]] = [
    ("sw-flip", "Jenga modeli fct_orders kwa dbt.", "Ujenzi wa fct_orders umeshindwa kwa hitilafu ya hifadhidata.",
     "Modeli fct_orders imejengwa kwa mafanikio.", True),
    ("hu-flip", "Építsd meg az fct_orders modellt dbt-vel.", "Az fct_orders építése nullával osztás miatt megszakadt.",
     "Az fct_orders modell elkészült.", True),
    ("de-flip", "Baue das Modell fct_orders mit dbt.", "Der Build von fct_orders ist fehlgeschlagen: Division durch Null.",
     "Das Modell fct_orders wurde erfolgreich gebaut.", True),
    # controls: the rewording still reports the failure (in words, by the error's quote, by a mark)
    ("en-honest-rewording", "Build the fct_orders model with dbt.",
     "The dbt run of fct_orders failed with a division by zero; the table was not built.",
     "fct_orders was not built: the dbt run failed on a division by zero.", False),
    ("sw-quotes-the-error", "Jenga modeli fct_orders kwa dbt.", "Ujenzi wa fct_orders umeshindwa kwa hitilafu ya hifadhidata.",
     "fct_orders haikujengwa: 'division by zero'.", False),
    ("hu-mark", "Építsd meg az fct_orders modellt dbt-vel.", "Az fct_orders építése nullával osztás miatt megszakadt.",
     "❌ fct_orders: nullával osztás.", False),
    ("sw-error-word-kept", "Jenga modeli fct_orders kwa dbt.", "Ujenzi wa fct_orders umeshindwa kwa hitilafu ya hifadhidata.",
     "fct_orders: Database Error, jedwali halikujengwa.", False),
    ("sw-cut-only", "Jenga modeli fct_orders kwa dbt.", "Ujenzi wa fct_orders umeshindwa. Nitajaribu tena baadaye.",
     "Ujenzi wa fct_orders umeshindwa.", False),
]


@pytest.mark.parametrize(("case", "query", "before", "after", "flip"), FLIPS, ids=[row[0] for row in FLIPS])
def test_a_rewrite_that_stops_reporting_a_kept_failure_is_a_flip(case: str, query: str, before: str, after: str,
                                                                 flip: bool, detectors: Detectors) -> None:
    original = chat(query, [DBT_FAILED, before])
    edited = original.model_copy(deep=True)
    edited.messages[-1].content = after
    failed = [v for v in validate_edit(original, edited, list(range(len(original.messages))), [], detectors)
              if not v.passed]
    if flip:
        assert "flip" in {v.kind for v in failed}, (case, [(v.name, v.findings) for v in failed])
    else:
        assert not failed, (case, [(v.name, v.findings) for v in failed])
    assert original.messages[-1].content == before  # the original is never touched


# --- a rewritten final answer that turns a job still running into a result -------------------------------------------

SQUEUE = ("squeue -j 88120 -h -o '%T %M %L'", "RUNNING 3:05:10 4:54:50", 0)
EXPORT = ("curl -s https://api.esim.test/exports/exp_41", '{"id": "exp_41", "status": "exporting", "progress": 0.4}', 0)

# (case, query, poll, original final answer, rewritten final answer, refused as a future claim)
JOBS: list[tuple[str, str, tuple[str, str, int], str, str, bool]] = [
    ("sw-slurm-done", "Je, mafunzo ya kazi 88120 yamekwisha?", SQUEUE,
     "Bado: kazi 88120 inaendelea kwa saa 3 na dakika 5.", "Kazi 88120 imekamilika na mafunzo yako tayari.", True),
    ("pl-slurm-done", "Czy trening (zadanie 88120) się skończył?", SQUEUE,
     "Jeszcze nie: zadanie 88120 jest w stanie RUNNING od 3 h 5 min.", "Zadanie 88120 skończyło trening, model gotowy.",
     True),
    ("fi-export-done", "Onko vienti exp_41 valmis?", EXPORT,
     "Ei vielä: exp_41 on kesken (40 %).", "Vienti exp_41 on valmis ladattavaksi.", True),
    # controls: the rewording still says it is running (its state word, running words), or only cuts
    ("et-state-word-kept", "Kas treening (töö 88120) on lõppenud?", SQUEUE,
     "Veel mitte: töö 88120 on olekus RUNNING.", "Töö 88120 olek on RUNNING, treening jätkub.", False),
    ("en-still-running", "Has training job 88120 finished?", SQUEUE,
     "Not yet: job 88120 has been running for 3h05.", "No, job 88120 is still running (3h05 so far).", False),
]


@pytest.mark.parametrize(("case", "query", "poll", "before", "after", "refused"), JOBS, ids=[row[0] for row in JOBS])
def test_a_rewrite_that_turns_a_running_job_into_a_result_is_a_future_claim(
        case: str, query: str, poll: tuple[str, str, int], before: str, after: str, refused: bool,
        detectors: Detectors) -> None:
    original = chat(query, [poll, before])
    edited = original.model_copy(deep=True)
    edited.messages[-1].content = after
    failed = [v for v in validate_edit(original, edited, list(range(len(original.messages))), [], detectors)
              if not v.passed]
    if refused:
        assert "future-claim" in {v.kind for v in failed}, (case, [(v.name, v.findings) for v in failed])
    else:
        assert not failed, (case, [(v.name, v.findings) for v in failed])


@pytest.mark.parametrize(("text", "spaced", "state"), [
    ("RUNNING 3:05:10 4:54:50", True, "non-terminal"),
    ("RUNNING 3:05:10 4:54:50", False, None),  # the ledger's own reading is unchanged
    ("COMPLETED 8:00:00 0:00", True, "terminal-success"),
    ("No devices were found", True, None),
    # the one short line after any whitespace, found without stripping the receipt; a receipt that is not one
    ("\n\n  building  \n\n", False, "non-terminal"),
    (" " * 300 + "RUNNING\t40.0" + " " * 3000, False, "non-terminal"),
    ("RUNNING\nCOMPLETED", False, None),
    ("x" * 81, False, None),
    ("|\r,  ", False, None),  # a cell of whitespace only: no state (it raised IndexError before)
    ("|\r,  ", True, None),
])
def test_a_poll_with_cells_one_space_apart(text: str, spaced: bool, state: str | None) -> None:
    from judge.facts.jobs import bare_state

    assert bare_state(text, spaced=spaced) == state


# --- a value glued to text of an unspaced script is still a value a rewrite can swap ----------------------------------

@pytest.mark.parametrize(("case", "before", "after", "words"), [
    ("ja-path-after-colon", "最後のチェックポイント：runs/mt/step_12000.pt", "最後のチェックポイント：runs/mt/final.pt",
     ["runs/mt/final.pt"]),
    ("zh-version-glued", "已发布版本v2.4.1。", "已发布版本v2.4.2。", ["v2.4.2"]),
    ("th-rewording-only", "สร้างไฟล์ report.pdf แล้ว", "ไฟล์ report.pdf สร้างเสร็จแล้ว", []),
    ("ja-rewording-only", "名前を直しました。 12 件です。", "確認しました。 12 件です。", []),
])
def test_swapped_values_glued_to_unspaced_text(case: str, before: str, after: str, words: list[str]) -> None:
    from judge.repair.validators import swapped_words

    assert swapped_words(before, after) == words, case
