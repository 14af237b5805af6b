"""Issue 24, editor round E3: principles pooled from the wrong decisions of several editions, by structure.

Cases written here (not from any held-out set), in languages with no vocabulary in the rules config (Swahili,
Latvian, Georgian), read through the real importer (OpenAI chat records). Table-driven.

- a rewritten final answer that names none of the words the original took from the receipt it still answers (the
  failed job ``typecheck``, the unreachable node ``K-12``, the probe ``pr-77`` out of range) no longer reports that
  receipt: refused, in any language (flip over a failure, future-claim over a running job, else unsupported-final);
  a rewrite that keeps one of them, or an original that named none, is not.
- a sentence naming the deleted call's wrong id with a particle of an unspaced script glued to it ("TNT-00383으로",
  "ORD-5512を") names that id: the deletion cuts it and is accepted; the retry's id glued the same way is kept.
- a number a rewrite writes into a turn before the receipt that prints it as its whole output (a count query's
  ``42``), glued to a counter ("42건") or not, is written early (``order``).
- a value the deleted error offers that respells the call's own word is the call's correction only when it is the one
  twin offered: "unknown section 'GOLD' (sections: GOLD-A, GOLD-B, S1)" -> GOLD-A is a choice only the receipt
  gave (``dependency``); "unknown region 'nort' (north, south)" -> north is the typo fixed.
- a rewrite that drops the original final answer's sentence on a part of the request no call touched (it names the
  query's words no call or receipt holds, and nothing a call or receipt shows) while its final answer still names
  that part claims it (``unsupported-final``), unless the new sentence reads as not done.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from judge.model import Trajectory
from judge.repair import offline_edit
from judge.repair.textref import Detectors
from judge.repair.validators import validate_edit
from judge.testing.builders import bash_chat, issue


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
EN_SAVED = chat("Write the summary to report.md.", [
    ("docgen write --out report.md", "Saved successfully", 0),
    "Report saved successfully."])
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
    # over a receipt that shows no problem, dropping its plain words ("saved", "successfully") is wording
    ("en-plain-receipt-words-reworded", EN_SAVED, "The summary is in report.md.", None),
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


KO_TENANT = chat("세입자 TNT-00512의 연락처를 알려 주세요.", [
    ("propctl tenant get TNT-00521", "Error: tenant TNT-00521 not found", 1),
    ("propctl tenant get TNT-00512 -o yaml", "tenant: TNT-00512\nname: 김서연\nphone: 010-5512-7781", 0),
    "처음에 세입자 번호를 TNT-00521으로 잘못 입력했습니다. TNT-00512 김서연 님의 연락처는 010-5512-7781 입니다."])
JA_ORDER = chat("注文 ORD-5512 の配送状況を教えてください。", [
    ("shopctl order get ORD-5521", "Error: order ORD-5521 not found", 1),
    ("shopctl order get ORD-5512", "order: ORD-5512\nstatus: shipped\ncarrier: YMT-88120", 0),
    "最初に ORD-5521を照会してしまいました。ORD-5512は発送済みです（YMT-88120）。"])

# (case, original, the sentence that must be cut)
GLUED_WRONG_IDS: list[tuple[str, Trajectory, str]] = [
    ("ko-id-with-particle", KO_TENANT, "처음에 세입자 번호를 TNT-00521으로 잘못 입력했습니다."),
    ("ja-id-with-particle", JA_ORDER, "最初に ORD-5521を照会してしまいました。"),
]


@pytest.mark.parametrize(("case", "original", "cut"), GLUED_WRONG_IDS, ids=[row[0] for row in GLUED_WRONG_IDS])
def test_a_wrong_id_glued_to_a_particle_is_still_named(case: str, original: Trajectory, cut: str,
                                                      detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    assert result.status == "edited", (case, result.reason)
    assert result.edited is not None
    final = result.edited.messages[-1].content or ""
    assert cut not in final and "TNT-00521" not in final and "ORD-5521" not in final
    assert "TNT-00512" in final or "ORD-5512" in final  # the retry's id, glued the same way, is kept


def test_unglued_splits_only_where_latin_meets_an_unspaced_script() -> None:
    from judge.repair.dependencies import unglued

    assert unglued("TNT-00383으로 잘못") == "TNT-00383 으로 잘못"
    assert unglued("ORD-5521を照会") == "ORD-5521 を照会"
    assert unglued("table tblAb1 (v2.0)") == "table tblAb1 (v2.0)"


KO_COUNT = bash_chat("오늘 갱신 대상 처방을 일괄 제출해 주세요.", [
    "갱신 대상 처방을 조회한 뒤 일괄 제출하겠습니다.",
    ("rxctl refill due --date 2026-12-04 --count", "37", 0),
    ("rxctl refill submit --due 2026-12-04", "refill batch RB-20261204 submitted", 0),
    "오늘 갱신 대상 37건을 RB-20261204 배치로 제출했습니다."], record_id="e3")

# (case, the rewritten plan turn, refused as order)
EARLY_COUNTS: list[tuple[str, str, bool]] = [
    ("ko-count-glued-to-counter", "갱신 대상 37건을 일괄 제출하겠습니다.", True),
    ("ko-count-spaced", "갱신 대상 37 건을 일괄 제출하겠습니다.", True),
    ("ko-plan-reworded-no-count", "갱신 대상 처방을 확인하고 제출하겠습니다.", False),
]


@pytest.mark.parametrize(("case", "plan", "refused"), EARLY_COUNTS, ids=[row[0] for row in EARLY_COUNTS])
def test_a_count_written_before_the_receipt_that_prints_it_alone_is_early(case: str, plan: str, refused: bool,
                                                                          detectors: Detectors) -> None:
    edited = KO_COUNT.model_copy(deep=True)
    plan_index = next(i for i, m in enumerate(edited.messages) if m.role == "assistant")
    edited.messages[plan_index].content = plan
    failed = [v for v in validate_edit(KO_COUNT, edited, list(range(len(KO_COUNT.messages))), [], detectors)
              if not v.passed]
    if refused:
        assert "order" in {v.kind for v in failed}, (case, [(v.name, v.findings) for v in failed])
    else:
        assert not failed, (case, [(v.name, v.findings) for v in failed])


def hold(query: str, wrong: str, error: str, right: str, final: str) -> Trajectory:
    return chat(query, [(f"tixctl holds create --event EV-41 --section {wrong} --count 4", error, 1),
                        (f"tixctl holds create --event EV-41 --section {right} --count 4", f"hold: HLD-77\nsection: {right}", 0),
                        final])


# (case, original, the deletion refused as a dependency)
OFFERED_TWINS: list[tuple[str, Trajectory, bool]] = [
    ("two-twins-offered", hold("Shika viti 4 vya GOLD kwa EV-41.", "GOLD",
                               "Error: unknown section 'GOLD' (sections: GOLD-A, GOLD-B, S1)", "GOLD-A",
                               "Viti 4 vimeshikwa katika GOLD-A (HLD-77)."), True),
    ("one-twin-offered", hold("Shika viti 4 vya sehemu ya kaskazini kwa EV-41.", "nort",
                              "Error: unknown section 'nort' (sections: north, south, east)", "north",
                              "Viti 4 vimeshikwa katika north (HLD-77)."), False),
]


@pytest.mark.parametrize(("case", "original", "dependent"), OFFERED_TWINS, ids=[row[0] for row in OFFERED_TWINS])
def test_a_choice_among_offered_twins_rests_on_the_receipt(case: str, original: Trajectory, dependent: bool,
                                                           detectors: Detectors) -> None:
    result = offline_edit(original, issue(1), detectors=detectors)
    if dependent:
        assert result.status != "edited" and "dependency" in result.reasons, (case, result.reason)
    else:
        assert result.status == "edited", (case, result.reason)


EN_VIEW = chat("Create a view 'Late' in Orders (tblOr4, bascnEn2) and send it to Billing.", [
    ("lark-cli base +view-create --base bascnEn2 --table tblOr4 --name Late", '{"view_id": "vewLt3", "records": 12}', 0),
    "Created the view Late (vewLt3, 12 orders). Sending it to Billing is still to do."])
SW_VIEW = chat("Unda mwonekano Marehemu katika tblOr4 (bascnSw3) na umtumie Uhasibu.", [
    ("lark-cli base +view-create --base bascnSw3 --table tblOr4 --name Marehemu", '{"view_id": "vewMr5"}', 0),
    "Mwonekano Marehemu (vewMr5) umeundwa. Kumtumia Uhasibu bado."])

# (case, original, rewritten final answer, refused as unsupported-final)
UNDONE_PARTS: list[tuple[str, Trajectory, str, bool]] = [
    ("en-send-claimed", EN_VIEW, "Created the view Late (vewLt3, 12 orders) and sent it to Billing.", True),
    ("sw-send-claimed", SW_VIEW, "Mwonekano Marehemu (vewMr5) umeundwa na kutumwa kwa Uhasibu.", True),
    ("en-undone-part-reworded", EN_VIEW, "Created the view Late (vewLt3, 12 orders). It has not been sent to Billing yet.",
     False),
    ("en-undone-part-asked", EN_VIEW, "Created the view Late (vewLt3, 12 orders). Should I send it to Billing?", False),
    ("en-unchanged", EN_VIEW, "Created the view Late (vewLt3, 12 orders). Sending it to Billing is still to do.", False),
]


@pytest.mark.parametrize(("case", "original", "final", "refused"), UNDONE_PARTS, ids=[row[0] for row in UNDONE_PARTS])
def test_a_rewrite_that_claims_the_part_the_original_left_undone_is_refused(
        case: str, original: Trajectory, final: str, refused: bool, detectors: Detectors) -> None:
    edited, message_map = rewrite_final(original, final)
    failed = [v for v in validate_edit(original, edited, message_map, [], detectors) if not v.passed]
    if refused:
        assert "unsupported-final" in {v.kind for v in failed}, (case, [(v.name, v.kind, v.findings) for v in failed])
    else:
        assert not failed, (case, [(v.name, v.findings) for v in failed])
