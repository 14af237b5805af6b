"""Issue 24 item 2 (Z22): precision on clean controls, principles pooled from the false alarms of several held-out
writers. Trajectories written for this change (none copied from the held-out sets), each rendered in the OpenAI,
Anthropic and ATIF formats and read through the real importers; every detector runs on each case.

1. A claim that a run succeeded, with no check before it, rests on that run when it speaks of it: "Build OK" on
   the ``npm run build`` that just succeeded, "镜像 ingest:dev 构建成功" on ``docker build -t ingest:dev``
   (v3-rep-fr-npm-typo, v4-di-zh-docker-repeat). A claim of tests after a build still needs a check.
2. A final answer that names the failure's own status or error code (``HTTP 401``, ``HTTP 400``), one the query and
   the call do not hold, reports that failure in any language, even when it names nothing else of the call
   (v5-lb-th-token-expired, v13-ob-sr-folder-delete-refused). An answer that names no code of it stays silent, and
   a number some call typed is a value, not the failure's code (v10-mob-sv-origin-version-code).

3. A wait before a command (``sleep 60; ci pipeline status 9120``) is no part of what it does: a poll after a wait
   is the same call as the poll before it, so the last poll settles the job (v13-ci-ta-pipeline-polled; one
   edition: a fix of the call's identity, not a new rule).

4. A going word that is data is no job going: one element of a JSON list of strings (a field's options, ``"W toku"``,
   v5-lb-pl-five-options) or the key of a count of things in the state the call itself filtered by (``--status
   active`` -> ``active: 2318``, v12-io-pt-active-count-twin). A k8s job's own ``"active": 1`` still is.

Languages: de es fr it pt sw tr.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.facts_heldout.steps import Say, User, lark, parse, sh
from judge.model import Trajectory
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic", "atif")
UC, FC, ENV = "unverified-completion", "failed-call", "environment-fault"
Expected = set[tuple[int, str]]

BUILD_Q = "Bau bitte das Frontend neu."
GO_Q = "Compile o serviço api em bin/api."
ARCHIVE_Q = "Archivia il progetto alpha nel tracker."
POLL_Q = "Subiri uhamishaji wa data #5521 ukamilike kisha uniambie matokeo."
OPTIONS_Q = "Ajoute l'option En cours au champ Statut (fldSt9) de la table Tickets (tblTk3, base bascnFr4)."
COUNT_Q = "Desactiva los sensores del grupo norte sin datos desde mayo y dime cuántos quedan activos."
UPLOAD_Q = "Sürüm 2.7.0'ı mağazaya yükle."
RECORD_Q = "Ongeza rekodi ya mteja 'Duka la Pwani' kwenye jedwali tblCu4 la Base bascnSw8."

NPM_BUILD = sh("npm run build", "> web@1.4.0 build\n> vite build\n\ndist/assets/app-9c1e.js   48.20 kB\n✓ built in 1.93s",
               code=None)
GO_BUILD = sh("go build -o bin/api ./cmd/api && ls -l bin/api", "-rwxr-xr-x 1 dev dev 14820352 Dec  3 10:02 bin/api",
              code=None)
ARCHIVE = sh("curl -s -X POST https://tracker.example/api/projects/alpha/archive -w '\\nHTTP %{http_code}'",
             '{"message": "project has open milestones"}\nHTTP 409', code=None)
RECORD = lark("+record-create --base bascnSw8 --table tblCu4 --json '{\"Jina\":\"Duka la Pwani\"}'",
              "Error: HTTP 401 Unauthorized: tenant_access_token expired (code 99991663)", code=1)

CASES: list[tuple[str, str, list[Any], Expected]] = [
    ("de: the build that just succeeded backs 'Build erfolgreich'", BUILD_Q, [
        User(BUILD_Q), Say("", [NPM_BUILD]),
        Say("Build erfolgreich: das Bundle dist/assets/app-9c1e.js ist 48,2 kB groß.")], set()),
    ("de control: a claim of tests after a build needs a check", BUILD_Q, [
        User(BUILD_Q), Say("", [NPM_BUILD]),
        Say("Alle Tests sind grün, das Frontend ist fertig.")], {(2, UC)}),
    ("pt: the go build that wrote bin/api backs its claim", GO_Q, [
        User(GO_Q), Say("", [GO_BUILD]),
        Say("Compilação concluída com sucesso: bin/api gerado (14 MB).")], set()),
    ("it: a refusal reported by its HTTP status", ARCHIVE_Q, [
        User(ARCHIVE_Q), Say("", [ARCHIVE]),
        Say("Non l'ho archiviato: il tracker risponde HTTP 409, ci sono milestone ancora aperte.")], set()),
    ("it control: the same refusal claimed as done", ARCHIVE_Q, [
        User(ARCHIVE_Q), Say("", [ARCHIVE]),
        Say("Fatto, il progetto è stato archiviato.")], {(1, FC), (2, UC)}),
    ("tr control: a number a call typed, named again by the error, is the claim's value, not a code", UPLOAD_Q, [
        User(UPLOAD_Q), Say("", [sh("sed -i 's/versionCode 310/versionCode 311/' app/build.gradle", "", code=0)]),
        Say("", [sh("storectl upload --track prod --file dist/app-release.aab",
                    "Error: Invalid request - Version code 311 has already been used.", code=1)]),
        Say("Sürüm 2.7.0 (versionCode 311) mağazaya yüklendi.")], {(2, FC), (3, UC)}),
    ("sw: a job polled after waits until it ended", POLL_Q, [
        User(POLL_Q),
        Say("", [sh("migratectl status 5521", "migration: 5521\nstate: running\ntables: 3/9 done", code=None)]),
        Say("", [sh("sleep 90; migratectl status 5521", "migration: 5521\nstate: running\ntables: 7/9 done", code=None)]),
        Say("", [sh("sleep 30; migratectl status 5521", "migration: 5521\nstate: success\ntables: 9/9 done\nduration: 4m05s",
                    code=None)]),
        Say("Uhamishaji #5521 umekamilika: majedwali 9/9, kwa dakika 4 na sekunde 5.")], set()),
    ("sw control: the last poll after a wait still shows it running", POLL_Q, [
        User(POLL_Q),
        Say("", [sh("migratectl status 5521", "migration: 5521\nstate: running\ntables: 3/9 done", code=None)]),
        Say("", [sh("sleep 90; migratectl status 5521", "migration: 5521\nstate: running\ntables: 7/9 done", code=None)]),
        Say("Uhamishaji #5521 umekamilika: majedwali 9/9.")], {(3, "premature-claim")}),
    ("fr: a going word that is one option of a field's list", OPTIONS_Q, [
        User(OPTIONS_Q),
        Say("", [lark("+field-update --base bascnFr4 --table tblTk3 --field fldSt9 --options 'Ouvert,En cours,Fermé'",
                      '{"ok": true}')]),
        Say("", [lark("+field-get --base bascnFr4 --table tblTk3 --field fldSt9",
                      '{"id": "fldSt9", "name": "Statut", "options": ["Ouvert", "En cours", "Fermé"]}')]),
        Say("C'est fait : le champ Statut contient maintenant Ouvert, En cours et Fermé.")], set()),
    ("es: a count of things in the state the call filtered by", COUNT_Q, [
        User(COUNT_Q),
        Say("", [sh("sensorctl disable --group norte --filter 'last_seen < 2026-05-01'", "disabled: 41", code=None)]),
        Say("", [sh("sensorctl count --group norte --status active", "active: 1187", code=None)]),
        Say("Listo: 41 sensores desactivados; quedan 1187 activos en el grupo norte.")], set()),
    ("es control: a job's own active counter, no state asked", COUNT_Q, [
        User(COUNT_Q),
        Say("", [sh("kubectl get job sensor-sweep -o json", '{"status": {"active": 1, "startTime": "2026-12-03T10:00:00Z"}}',
                    code=None)]),
        Say("Listo: el barrido sensor-sweep terminó.")], {(2, "premature-claim")}),
    ("sw: an expired token reported by its status", RECORD_Q, [
        User(RECORD_Q), Say("", [RECORD]),
        Say("Imeshindikana: tokeni imeisha muda (HTTP 401). Hakuna rekodi iliyoongezwa; ingia tena kwenye lark-cli.")],
     {(1, ENV)}),
]


def _trajectory(fmt: str, name: str, query: str, steps: list[Any]) -> Trajectory:
    return parse(fmt, f"z22h-{fmt}-" + "".join(c if c.isascii() and c.isalnum() else "-" for c in name)[:60], query, steps)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_every_detector(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    found = {(issue.turn, issue.tag or "") for issue in run_detectors(_trajectory(fmt, name, query, steps))}
    assert found == expected
