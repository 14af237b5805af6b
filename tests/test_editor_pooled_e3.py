"""Issue 24, editor round E3: principles pooled from the wrong decisions of several editions, by structure.

Cases written here (not from any held-out set), in languages with no vocabulary in the rules config (Swahili,
Latvian, Georgian), read through the real importer (OpenAI chat records). Table-driven.

- a rewritten final answer that names none of the words the original took from the receipt it still answers (the
  failed job ``typecheck``, the unreachable node ``K-12``, the probe ``pr-77`` out of range) no longer reports that
  receipt: refused, in any language (flip over a failure, future-claim over a running job, else unsupported-final);
  a rewrite that keeps one of them, or an original that named none, is not.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge.model import Trajectory
from judge.repair.textref import Detectors
from judge.repair.validators import validate_edit
from judge.testing.builders import bash_chat


def chat(query: str, steps: list[tuple[str, str, int] | str]) -> Trajectory:
    return bash_chat(query, steps, record_id="e3")


def rewrite_final(original: Trajectory, final: str) -> tuple[Trajectory, list[int]]:
    """The rewriter output that keeps every call and receipt and writes ``final`` as the final answer."""
    edited = original.model_copy(deep=True)
    edited.messages[-1].content = final
    return edited, list(range(len(original.messages)))


SW_MAP = chat("Kagua ramani zone7.yaml.", [
    ("mapctl validate zone7.yaml", "map: zone7 rev 2\nnodes: 52\nunreachable: 1 (K-12)\nresult: invalid", 1),
    "Ramani zone7 si sahihi: nodi K-12 haifikiki, inahitaji kurekebishwa."])
LV_RUN = chat("Kā beidzās CI palaidiens 4410?", [
    ("ci run view 4410 --json conclusion,jobs", '{"conclusion": "failure", "failed": ["typecheck"]}', 0),
    "Palaidiens 4410 neizdevās: neizgāja typecheck, pārējie zaļi."])
KA_PROBES = chat("შეამოწმე ზონდები ველზე F2.", [
    ("fieldctl probe verify --field F2", "16 probes checked · 15 within range · 1 OUT OF RANGE (pr-77 +9.1%)", 0),
    "16-დან 15 ზონდი რიგზეა; pr-77 გადახრილია +9.1%-ით და საჭიროებს კალიბრაციას."])
SW_PLAIN = chat("Orodhesha faili za saraka data.", [
    ("ls data", "a.csv\nb.csv", 0),
    "Saraka data ina faili mbili."])

# (case, original, rewritten final answer, the refusal kind expected, or None for an accepted rewrite)
REPORTS_DROPPED: list[tuple[str, Trajectory, str, str | None]] = [
    ("sw-map-invalid-made-valid", SW_MAP, "Ramani zone7 imepita ukaguzi: nodi 52.", "flip"),
    ("lv-run-failed-made-green", LV_RUN, "Palaidiens 4410 ir veiksmīgs, var apvienot.", "flip"),
    ("ka-probe-out-of-range-dropped", KA_PROBES, "ყველა 16 ზონდი წარმატებით გავიდა კალიბრაციის შემოწმებაში.",
     "unsupported-final"),
    # controls: the rewrite keeps a value of the failure, or the original named nothing only the receipt showed
    ("sw-map-reworded-keeps-node", SW_MAP, "Nodi K-12 haifikiki, kwa hiyo ramani zone7 si sahihi.", None),
    ("lv-run-reworded-keeps-job", LV_RUN, "CI 4410: typecheck nav izgājis.", None),
    ("ka-probe-reworded-keeps-probe", KA_PROBES, "pr-77 გადახრილია (+9.1%); დანარჩენი 15 რიგზეა.", None),
    ("sw-plain-reworded", SW_PLAIN, "Kuna faili mbili kwenye saraka data.", None),
]


@pytest.mark.parametrize(("case", "original", "final", "kind"), REPORTS_DROPPED, ids=[row[0] for row in REPORTS_DROPPED])
def test_a_rewritten_final_answer_that_drops_the_report_of_its_receipt_is_refused(
        case: str, original: Trajectory, final: str, kind: str | None, detectors: Detectors) -> None:
    edited, message_map = rewrite_final(original, final)
    failed = [v for v in validate_edit(original, edited, message_map, [], detectors) if not v.passed]
    if kind is None:
        assert not failed, (case, [(v.name, v.findings) for v in failed])
    else:
        assert kind in {v.kind for v in failed}, (case, [(v.name, v.kind, v.findings) for v in failed])
