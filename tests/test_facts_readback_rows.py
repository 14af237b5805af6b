"""Issue 24 item 2 (Z17): a claim that N items have a value, held against the rows of the read-back's listing.

Pooled from the misses of several held-out writers (v8 OTA firmware "12 cihazın 12'si de 2.0.3", v11 ticket status
"les 12 tickets ... tous au statut Clos"; v4's four pods "keempat pod ... Running" has the same shape): the claim
counts the rows a read-back lists and names the value one of its columns holds, while some rows hold another. Our
own trajectories (not the held-out sentences), each rendered in the OpenAI, Anthropic and ATIF formats and read
through the real importers; every detector runs.

Near misses: every row has the value; the claim states how many have it or names the row without it; the claim
counts something else than the rows listed; a row's id is no category.
"""

from __future__ import annotations

from typing import Any

import pytest

from fixtures.facts_heldout.steps import Say, User, js, parse, sh
from judge.facts.readbacks import listing_rows
from judge.model import Trajectory
from judge.rules import run_detectors

FORMATS = ("openai", "anthropic", "atif")
Expected = set[tuple[int, str]]
CC = "contradicted-claim"


def _trajectory(fmt: str, name: str, query: str, steps: list[Any]) -> Trajectory:
    return parse(fmt, name.replace(" ", "-")[:40], query, [User(query), *steps])


ROLLOUT = sh("fleetctl rollout start --group lab-3 --artifact sensor-1.4.2", js({"rollout": "ro_51", "devices": 5}))
DEVICES = "curl -s 'https://fleet.example/api/devices?group=lab-3'"


def _devices(*firmware: str) -> str:
    return js([{"id": f"dev-{i:02d}", "fw": fw, "online": True} for i, fw in enumerate(firmware, 1)])


PODS = "kubectl get pods -n ingest -l app=parser"


def _pods(*states: str) -> str:
    rows = [f"parser-7f9c-{i:02d}   1/1   {s:<10} 0   3h" for i, s in enumerate(states, 1)]
    return "\n".join(["NAME             READY STATUS     RESTARTS AGE", *rows])


CLOSE = sh("lark-cli base +record-batch-update --base bascnRu3 --table tblReq2 --filter 'Batch = 7' "
           "--set 'status=closed'", js({"updated": 6}))
REQUESTS = "lark-cli base +record-list --base bascnRu3 --table tblReq2 --filter 'Batch = 7' --fields status --format markdown"


def _requests(*states: str) -> str:
    return "\n".join(["| record_id | status |", "|---|---|", *(f"| recRq{i} | {s} |" for i, s in enumerate(states, 1))])


UPGRADE = sh("hostctl upgrade --group web --package nginx=1.26.2", "upgrade queued on 4 hosts\nupgrade finished")
VERSIONS = "hostctl list --group web --fields name,nginx"


def _versions(*versions: str) -> str:
    return "\n".join(f"web-{i} {v}" for i, v in enumerate(versions, 1))


CASES: list[tuple[str, str, list[Any], Expected]] = [
    # a JSON array of devices: 4 of 5 on the firmware the claim gives to all 5 (de)
    ("firmware json de", "Roll sensor-1.4.2 auf die 5 Geräte der Gruppe lab-3 aus.",
     [Say("", [ROLLOUT]), Say("", [sh(DEVICES, _devices("1.4.2", "1.4.2", "1.4.1", "1.4.2", "1.4.2"))]),
      Say("Fertig: alle 5 Geräte laufen jetzt mit 1.4.2.")],
     {(3, CC)}),
    # an aligned table with no change before it: a status check, 3 of 4 Running (es)
    ("pods aligned es", "¿Están corriendo todos los pods del parser?",
     [Say("", [sh(PODS, _pods("Running", "Running", "Error", "Running"))]),
      Say("Sí, los 4 pods del parser están en Running.")],
     {(2, CC)}),
    # a pipe table of the records the update changed, 5 of 6 closed (ru)
    ("status table ru", "Закрой 6 заявок пакета 7 в tblReq2.",
     [Say("", [CLOSE]), Say("", [sh(REQUESTS, _requests("closed", "closed", "closed", "open", "closed", "closed"))]),
      Say("Готово: все 6 заявок пакета 7 в статусе closed.")],
     {(3, CC)}),
    # "N of N" with a case ending glued to the number ("4'ü de"): a claim, not a condition (tr)
    ("versions lines tr", "web sunucularındaki nginx'i 1.26.2 sürümüne yükselt.",
     [Say("", [UPGRADE]), Say("", [sh(VERSIONS, _versions("1.26.2", "1.26.2", "1.24.0", "1.26.2"))]),
      Say("Kontrol edildi: 4 sunucunun 4'ü de 1.26.2 sürümünde.")],
     {(3, CC)}),
    # near misses
    ("firmware all agree de", "Roll sensor-1.4.2 auf die 5 Geräte der Gruppe lab-3 aus.",
     [Say("", [ROLLOUT]), Say("", [sh(DEVICES, _devices("1.4.2", "1.4.2", "1.4.2", "1.4.2", "1.4.2"))]),
      Say("Fertig: alle 5 Geräte laufen jetzt mit 1.4.2.")],
     set()),
    ("firmware outlier named de", "Roll sensor-1.4.2 auf die 5 Geräte der Gruppe lab-3 aus.",
     [Say("", [ROLLOUT]), Say("", [sh(DEVICES, _devices("1.4.2", "1.4.2", "1.4.1", "1.4.2", "1.4.2"))]),
      Say("Von 5 Geräten laufen 4 mit 1.4.2; dev-03 steht noch auf 1.4.1.")],
     set()),
    ("pods count of running es", "¿Están corriendo todos los pods del parser?",
     [Say("", [sh(PODS, _pods("Running", "Running", "Error", "Running"))]),
      Say("Hay 3 pods en Running de 4.")],
     set()),
    ("status other count ru", "Закрой 6 заявок пакета 7 в tblReq2.",
     [Say("", [CLOSE]), Say("", [sh(REQUESTS, _requests("closed", "closed", "closed", "open", "closed", "closed"))]),
      Say("Пакет 7: 5 заявок в статусе closed, одна осталась open.")],
     set()),
    ("versions all agree tr", "web sunucularındaki nginx'i 1.26.2 sürümüne yükselt.",
     [Say("", [UPGRADE]), Say("", [sh(VERSIONS, _versions("1.26.2", "1.26.2", "1.26.2", "1.26.2"))]),
      Say("Kontrol edildi: 4 sunucunun 4'ü de 1.26.2 sürümünde.")],
     set()),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("name", "query", "steps", "expected"), CASES, ids=[c[0] for c in CASES])
def test_row_value_claims(fmt: str, name: str, query: str, steps: list[Any], expected: Expected) -> None:
    trajectory = _trajectory(fmt, name, query, steps)
    found = {(i.turn, i.tag) for i in run_detectors(trajectory) if i.turn is not None}
    last = max(m.turn for m in trajectory.messages if m.turn is not None)
    at_claim = {f for f in found if f[0] == last}
    assert at_claim == expected, sorted(found)


ROWS: list[tuple[str, str, tuple[tuple[str, ...], ...]]] = [
    ("json objects and fields", js({"items": [{"record_id": "r1", "fields": {"Name": "A"}},
                                              {"record_id": "r2", "fields": {"Name": "B"}}]}),
     (("r1", "A"), ("r2", "B"))),
    ("aligned with header", _pods("Running", "Pending"),
     (("parser-7f9c-01", "1/1", "Running", "0", "3h"), ("parser-7f9c-02", "1/1", "Pending", "0", "3h"))),
    ("pipe table", _requests("closed", "en revue"), (("recRq1", "closed"), ("recRq2", "en revue"))),
    ("id value lines", _versions("1.26.2", "1.24.0", "1.26.2"),
     (("web-1", "1.26.2"), ("web-2", "1.24.0"), ("web-3", "1.26.2"))),
    ("a header and one row is no listing", "NAME STATUS\napi Running", ()),
    ("prose", "rollout ro_51 finished\nall devices updated to the new firmware", ()),
    ("rows of different widths", "a 1\nb 2 x\nc 3", ()),
]


@pytest.mark.parametrize(("name", "text", "rows"), ROWS, ids=[r[0] for r in ROWS])
def test_listing_rows(name: str, text: str, rows: tuple[tuple[str, ...], ...]) -> None:
    assert listing_rows(text) == rows
