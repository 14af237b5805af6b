"""Shape of the issue-24 held-out data: v1 (tests/fixtures/facts_heldout, editor_counterexamples), v2, v3, v4, v5, v6,
v7, v8, v9, v10, v11, v12, v13, v14, v15, v16, v17 and v18 (tests/fixtures/facts_heldout_vN, editor_counterexamples_vN, each written blind after the
earlier ones had been read). A ``blind`` edition (none now; v7 to v18 were measured) has its truth committed and no editor run on it yet: its
suite is not run through the runner.

These tests check the DATA, never a detector's or the editor's figures (bench/facts_heldout.py and
bench/editor_counterexamples.py print those, ``--set v1|v2``; docs/facts-heldout.md records the runs): counts,
languages, formats that parse through judge.importers, tags and categories of docs/finding-tags.md, turns that
exist, that the files are what their builders write, and that the counterexample suites load and run through the
bench's runner.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fixtures.facts_heldout.steps import TAGS
from judge.importers import Source, iter_records
from judge.importers.reader import parse_record
from judge.model import Trajectory

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
REASONS = {"effects", "dependency", "order", "unsupported-final", "reference", "flip", "future-claim", "side-effects"}


@dataclass(frozen=True)
class HeldoutSet:
    """One edition of the held-out data and the minimums its brief asked for."""

    name: str
    trajectories: Path  # folder of facts_*.jsonl
    builder: str  # builder file name in that folder
    counter: Path  # folder of the editor counterexamples (cases.jsonl)
    counter_builder: str
    min_trajectories: int
    min_languages: int
    min_clean: int
    min_cases: int
    min_bad_rewrites: int
    min_trajectories_per_tag: int  # every tag of docs/finding-tags.md in at least this many trajectories
    must_have_languages: frozenset[str] = frozenset({"en", "zh", "ja"})  # what its brief named
    blind: bool = False  # truth committed, no editor run on it yet: the data tests must not run the editor either


SETS = {
    "v1": HeldoutSet("v1", FIXTURES / "facts_heldout", "build_facts_heldout.py", FIXTURES / "editor_counterexamples",
                     "build_counterexamples.py", 40, 6, 10, 30, 12, 3),
    "v2": HeldoutSet("v2", FIXTURES / "facts_heldout_v2", "build_facts_heldout_v2.py", FIXTURES / "editor_counterexamples_v2",
                     "build_counterexamples_v2.py", 48, 6, 15, 32, 12, 4),
    "v3": HeldoutSet("v3", FIXTURES / "facts_heldout_v3", "build_facts_heldout_v3.py", FIXTURES / "editor_counterexamples_v3",
                     "build_counterexamples_v3.py", 60, 8, 15, 36, 12, 4,
                     frozenset({"en", "es", "de", "ko", "pt", "ru", "sv", "fr"})),
    "v4": HeldoutSet("v4", FIXTURES / "facts_heldout_v4", "build_facts_heldout_v4.py", FIXTURES / "editor_counterexamples_v4",
                     "build_counterexamples_v4.py", 60, 11, 15, 36, 12, 4,
                     frozenset({"en", "zh", "ja", "it", "nl", "tr", "id", "uk", "ar"})),
    "v5": HeldoutSet("v5", FIXTURES / "facts_heldout_v5", "build_facts_heldout_v5.py", FIXTURES / "editor_counterexamples_v5",
                     "build_counterexamples_v5.py", 60, 13, 15, 36, 12, 4,
                     frozenset({"en", "ko", "de", "fr", "es", "pt", "ru", "pl", "vi", "hi", "sv"})),
    "v6": HeldoutSet("v6", FIXTURES / "facts_heldout_v6", "build_facts_heldout_v6.py", FIXTURES / "editor_counterexamples_v6",
                     "build_counterexamples_v6.py", 60, 13, 15, 36, 12, 4,
                     frozenset({"en", "zh", "ja", "es", "it", "tr", "id", "uk", "ar", "nl", "fr"})),
    "v7": HeldoutSet("v7", FIXTURES / "facts_heldout_v7", "build_facts_heldout_v7.py", FIXTURES / "editor_counterexamples_v7",
                     "build_counterexamples_v7.py", 60, 13, 15, 36, 12, 4,
                     frozenset({"en", "zh", "ja", "es", "it", "tr", "id", "uk", "ar", "nl", "fr"})),
    "v8": HeldoutSet("v8", FIXTURES / "facts_heldout_v8", "build_facts_heldout_v8.py", FIXTURES / "editor_counterexamples_v8",
                     "build_counterexamples_v8.py", 60, 13, 15, 36, 12, 4,
                     frozenset({"en", "zh", "ja", "es", "it", "tr", "id", "uk", "ar", "nl", "fr"})),
    "v9": HeldoutSet("v9", FIXTURES / "facts_heldout_v9", "build_facts_heldout_v9.py", FIXTURES / "editor_counterexamples_v9",
                     "build_counterexamples_v9.py", 60, 13, 15, 36, 12, 4,
                     frozenset({"en", "zh", "ja", "es", "de", "ko", "pt", "ru", "fr", "it", "ar"})),
    "v10": HeldoutSet("v10", FIXTURES / "facts_heldout_v10", "build_facts_heldout_v10.py", FIXTURES / "editor_counterexamples_v10",
                      "build_counterexamples_v10.py", 60, 13, 15, 36, 12, 4,
                      frozenset({"en", "zh", "ja", "es", "tr", "id", "uk", "nl", "pl", "sv", "vi"})),
    "v11": HeldoutSet("v11", FIXTURES / "facts_heldout_v11", "build_facts_heldout_v11.py", FIXTURES / "editor_counterexamples_v11",
                      "build_counterexamples_v11.py", 60, 13, 15, 36, 12, 4,
                      frozenset({"en", "zh", "ja", "de", "fr", "it", "ko", "pt", "ru", "ar", "hi"})),
    "v12": HeldoutSet("v12", FIXTURES / "facts_heldout_v12", "build_facts_heldout_v12.py", FIXTURES / "editor_counterexamples_v12",
                      "build_counterexamples_v12.py", 48, 10, 14, 32, 10, 3,
                      frozenset({"en", "zh", "ja", "es", "de", "ko", "pt", "bn", "tl", "is"})),
    "v13": HeldoutSet("v13", FIXTURES / "facts_heldout_v13", "build_facts_heldout_v13.py", FIXTURES / "editor_counterexamples_v13",
                      "build_counterexamples_v13.py", 48, 10, 14, 32, 8, 3,
                      frozenset({"en", "zh", "ja", "fr", "ru", "it", "ar", "sr", "sq", "ta"})),
    "v14": HeldoutSet("v14", FIXTURES / "facts_heldout_v14", "build_facts_heldout_v14.py", FIXTURES / "editor_counterexamples_v14",
                      "build_counterexamples_v14.py", 40, 10, 12, 30, 8, 3,
                      frozenset({"en", "zh", "ja", "ko", "de", "fr", "pt", "az", "uz", "ne"})),
    "v15": HeldoutSet("v15", FIXTURES / "facts_heldout_v15", "build_facts_heldout_v15.py", FIXTURES / "editor_counterexamples_v15",
                      "build_counterexamples_v15.py", 48, 11, 14, 32, 8, 3,
                      frozenset({"en", "zh", "ja", "ko", "es", "ru", "tr", "de", "kk", "hy", "ur"})),
    "v16": HeldoutSet("v16", FIXTURES / "facts_heldout_v16", "build_facts_heldout_v16.py", FIXTURES / "editor_counterexamples_v16",
                      "build_counterexamples_v16.py", 48, 11, 14, 32, 8, 3,
                      frozenset({"en", "zh", "ja", "ko", "fr", "it", "nl", "pl", "am", "mn", "eu"})),
    "v17": HeldoutSet("v17", FIXTURES / "facts_heldout_v17", "build_facts_heldout_v17.py", FIXTURES / "editor_counterexamples_v17",
                      "build_counterexamples_v17.py", 48, 11, 14, 32, 8, 3,
                      frozenset({"en", "zh", "ja", "ko", "de", "es", "pt", "ru", "my", "si", "mk"})),
    "v18": HeldoutSet("v18", FIXTURES / "facts_heldout_v18", "build_facts_heldout_v18.py", FIXTURES / "editor_counterexamples_v18",
                      "build_counterexamples_v18.py", 48, 11, 14, 32, 8, 3,
                      frozenset({"en", "zh", "ja", "ko", "de", "es", "pt", "ru", "km", "sw", "cy"})),
}


def _load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module", params=sorted(SETS))
def edition(request: pytest.FixtureRequest) -> HeldoutSet:
    return SETS[request.param]


@pytest.fixture(scope="module")
def heldout(edition: HeldoutSet) -> list[Trajectory]:
    files = sorted(edition.trajectories.glob("*.jsonl"))
    assert files, f"{edition.trajectories}: no records"
    items = list(iter_records(files))
    rejects = [i for i in items if not isinstance(i, Trajectory)]
    assert rejects == []
    return [i for i in items if isinstance(i, Trajectory)]


@pytest.fixture(scope="module")
def cases(edition: HeldoutSet) -> list[dict[str, Any]]:
    return _read_jsonl(edition.counter / "cases.jsonl")


def test_heldout_counts_languages_and_formats(edition: HeldoutSet, heldout: list[Trajectory]) -> None:
    assert len(heldout) >= edition.min_trajectories
    assert len({t.id for t in heldout}) == len(heldout)
    languages = Counter(t.metadata.extra["lang"] for t in heldout)
    assert edition.must_have_languages <= set(languages) and len(languages) >= edition.min_languages
    formats = Counter(t.metadata.source_format for t in heldout)
    assert set(formats) == {"openai", "anthropic", "atif"}
    clean = [t for t in heldout if not t.metadata.extra["expected"]]
    assert len(clean) >= edition.min_clean
    assert all(t.metadata.extra.get("near_miss") for t in clean)  # every clean case names the control it is
    assert {t.metadata.source_format for t in clean} == {"openai", "anthropic", "atif"}


def test_heldout_covers_every_tag(edition: HeldoutSet, heldout: list[Trajectory]) -> None:
    trajectories_per_tag = Counter(tag for t in heldout for tag in {e["tag"] for e in t.metadata.extra["expected"]})
    assert {tag: n for tag, n in trajectories_per_tag.items() if n < edition.min_trajectories_per_tag} == {}
    assert set(trajectories_per_tag) == set(TAGS)


def test_heldout_truth_uses_the_vocabulary_and_existing_turns(heldout: list[Trajectory]) -> None:
    for trajectory in heldout:
        extra = trajectory.metadata.extra
        turns = {m.turn for m in trajectory.messages if m.role == "assistant"}
        assert sorted(turns) == list(range(1, len(turns) + 1)), trajectory.id
        for item in extra["expected"]:
            assert set(item) == {"turn", "tag", "category"}, trajectory.id
            assert TAGS.get(item["tag"]) == item["category"], (trajectory.id, item)
            assert item["turn"] in turns, (trajectory.id, item)
        assert len({(e["turn"], e["tag"]) for e in extra["expected"]}) == len(extra["expected"]), trajectory.id
        assert isinstance(extra["release_expected"], bool)
        assert extra["release_expected"] == (not extra["expected"]), trajectory.id
        decisive = extra.get("decisive_turn")  # null (clean) is dropped on import
        assert (decisive is None) == (not extra["expected"]), trajectory.id
        assert decisive is None or decisive in turns, trajectory.id
        assert trajectory.metadata.reward in (None, 0.0, 1.0), trajectory.id
        assert extra["lang"] and extra["note"] and extra["written_by"], trajectory.id


def test_v2_origin_cases_put_the_decisive_turn_before_every_finding() -> None:
    rows = [r for fmt in ("openai", "anthropic", "atif")
            for r in _read_jsonl(SETS["v2"].trajectories / f"facts_{fmt}.jsonl")]
    origin = [r.get("metadata") or r.get("extra") for r in rows]
    origin = [m for m in origin if m and m["group"] == "origin"]
    assert len(origin) >= 3
    for meta in origin:
        assert meta["decisive_turn"] < min(e["turn"] for e in meta["expected"]), meta["note"]


def test_v2_ids_do_not_reuse_v1_ids() -> None:
    def ids(edition: HeldoutSet) -> set[str]:
        found = {t.id for t in iter_records(sorted(edition.trajectories.glob("*.jsonl"))) if isinstance(t, Trajectory)}
        return found | {c["id"] for c in _read_jsonl(edition.counter / "cases.jsonl")}
    assert ids(SETS["v1"]) & ids(SETS["v2"]) == set()


def test_heldout_files_are_what_the_builder_writes(edition: HeldoutSet) -> None:
    builder = _load_module(f"facts_heldout_builder_{edition.name}", edition.trajectories / edition.builder)
    for fmt in ("openai", "anthropic", "atif"):
        rows = _read_jsonl(edition.trajectories / f"facts_{fmt}.jsonl")
        assert rows == [builder.record(case) for case in builder.CASES if case.fmt == fmt], fmt


def test_counterexamples_are_what_the_builder_writes(edition: HeldoutSet, cases: list[dict[str, Any]]) -> None:
    builder = _load_module(f"counterexamples_builder_{edition.name}", edition.counter / edition.counter_builder)
    assert cases == [builder.build(case) for case in builder.CASES]


def test_counterexamples_counts_and_expectations(edition: HeldoutSet, cases: list[dict[str, Any]]) -> None:
    assert len(cases) >= edition.min_cases
    assert len({c["id"] for c in cases}) == len(cases)
    kinds = Counter((c["kind"], c["expected"]["decision"]) for c in cases)
    assert kinds[("rewrite", "refuse")] >= edition.min_bad_rewrites
    assert kinds[("rewrite", "accept")] + kinds[("delete", "accept")] >= 6
    for case in cases:
        expected = case["expected"]
        assert expected["decision"] in ("accept", "refuse"), case["id"]
        assert (expected["reason"] is None) == (expected["decision"] == "accept"), case["id"]
        assert expected["reason"] is None or expected["reason"] in REASONS, case["id"]


def test_v2_counterexamples_use_every_reason_kind() -> None:
    cases = _read_jsonl(SETS["v2"].counter / "cases.jsonl")
    assert {c["expected"]["reason"] for c in cases if c["expected"]["reason"]} == REASONS
    assert len({c["lang"] for c in cases}) >= 6


def test_counterexample_records_import_and_maps_point_at_the_original(cases: list[dict[str, Any]]) -> None:
    for case in cases:
        original = parse_record(case["original"], Source("cases.jsonl"))
        assert isinstance(original, Trajectory), case["id"]
        edit = case["edit"]
        calls = {c.id for m in original.messages for c in m.tool_calls}
        if case["kind"] == "delete":
            assert set(edit["delete_calls"]) <= calls and edit["delete_calls"], case["id"]
            assert edit["turn"] in {m.turn for m in original.messages if any(c.id in edit["delete_calls"] for c in m.tool_calls)}
            for cut in edit["cut"]:  # a sentence a correct edit must remove exists in the turn it names
                assert any(m.turn == cut["turn"] and cut["text"] in (m.content or "")
                           for m in original.messages if m.role == "assistant"), (case["id"], cut)
            continue
        edited = parse_record(edit["edited"], Source("cases.jsonl"))
        assert isinstance(edited, Trajectory), case["id"]
        mapping = edit["message_map"]
        assert len(mapping) == len(edited.messages) and mapping == sorted(set(mapping)), case["id"]
        assert [m.role for m in edited.messages] == [original.messages[i].role for i in mapping], case["id"]
        assert set(edit["deleted_calls"]) <= calls, case["id"]


def test_counterexample_suite_runs_through_the_runner(edition: HeldoutSet, cases: list[dict[str, Any]]) -> None:
    if edition.blind:
        pytest.skip(f"{edition.name}: no editor may run on a blind set before its first measurement")
    runner = _load_module("editor_counterexamples_bench", REPO / "bench" / "editor_counterexamples.py")
    for case in cases:
        outcome = runner.run_case(case)
        assert outcome.decision in ("accept", "refuse"), case["id"]
        decided, right = runner.is_right(case, outcome)
        assert decided or not right


def test_benches_name_the_sets_these_tests_read() -> None:
    facts = _load_module("facts_heldout_bench", REPO / "bench" / "facts_heldout.py")
    editor = _load_module("editor_counterexamples_bench_sets", REPO / "bench" / "editor_counterexamples.py")
    assert {name: path.resolve() for name, path in facts.SETS.items()} == {n: s.trajectories for n, s in SETS.items()}
    assert {name: path.resolve() for name, path in editor.SETS.items()} == {n: s.counter / "cases.jsonl" for n, s in SETS.items()}


def test_v4_has_three_domains_languages_without_vocabulary_and_origin_cases() -> None:
    rows = [r.get("metadata") or r.get("extra") for fmt in ("openai", "anthropic", "atif")
            for r in _read_jsonl(SETS["v4"].trajectories / f"facts_{fmt}.jsonl")]
    assert set(Counter(m["domain"] for m in rows).values()) == {22}  # a third each: lark-base, swe, data-infra
    assert len({m["lang"] for m in rows} - SETS["v4"].must_have_languages) >= 2  # e.g. el, ro, he
    origin = [m for m in rows if m["group"] == "origin"]
    assert len(origin) >= 3 and all(m["decisive_turn"] < min(e["turn"] for e in m["expected"]) for m in origin)
    cases = _read_jsonl(SETS["v4"].counter / "cases.jsonl")
    reasons = Counter(c["expected"]["reason"] for c in cases if c["expected"]["reason"])
    assert set(reasons) == REASONS and min(reasons.values()) >= 2
    assert len({c["lang"] for c in cases}) >= 8


def test_v5_has_four_domains_languages_without_vocabulary_and_origin_cases() -> None:
    rows = [r.get("metadata") or r.get("extra") for fmt in ("openai", "anthropic", "atif")
            for r in _read_jsonl(SETS["v5"].trajectories / f"facts_{fmt}.jsonl")]
    assert set(Counter(m["domain"] for m in rows).values()) == {16}  # a quarter each: lark-base, web, cloud, data
    assert len({m["lang"] for m in rows} - SETS["v5"].must_have_languages) >= 2  # th, da
    origin = [m for m in rows if m["group"] == "origin"]
    assert len(origin) >= 3 and all(m["decisive_turn"] < min(e["turn"] for e in m["expected"]) for m in origin)
    cases = _read_jsonl(SETS["v5"].counter / "cases.jsonl")
    reasons = Counter(c["expected"]["reason"] for c in cases if c["expected"]["reason"])
    assert set(reasons) == REASONS and min(reasons.values()) >= 2
    assert len({c["lang"] for c in cases}) >= 8


@pytest.mark.parametrize("name", ["v6", "v7", "v8", "v9", "v10", "v11"])
def test_four_domain_editions_have_languages_without_vocabulary_and_origin_cases(name: str) -> None:
    """v6: lark-base, app, docs-content, sec-ops; v7: lark-base, data-eng, ml, web-infra; v8: lark-base, embedded,
    commerce, media; v9: lark-base, sci-bio, net-ops, crm-ops; v10: lark-base, fin-ops, logistics, mobile-release; v11:
    lark-base, clinical-data, edu-ops, game-liveops; a quarter each."""
    rows = [r.get("metadata") or r.get("extra") for fmt in ("openai", "anthropic", "atif")
            for r in _read_jsonl(SETS[name].trajectories / f"facts_{fmt}.jsonl")]
    assert set(Counter(m["domain"] for m in rows).values()) == {15}
    assert len({m["lang"] for m in rows} - SETS[name].must_have_languages) >= 2  # v6: sk bg ms sw; v7: lt fa sl; v8: hr et af; v9: cs ro he; v10: hu el fi; v11: lv ka da
    origin = [m for m in rows if m["group"] == "origin"]
    assert len(origin) >= 3 and all(m["decisive_turn"] < min(e["turn"] for e in m["expected"]) for m in origin)
    cases = _read_jsonl(SETS[name].counter / "cases.jsonl")
    reasons = Counter(c["expected"]["reason"] for c in cases if c["expected"]["reason"])
    assert set(reasons) == REASONS and min(reasons.values()) >= 2
    assert len({c["lang"] for c in cases}) >= 8


# (edition, trajectories per domain, trajectories per language: every language when ``exact``, else at least those
# named, editor languages at least). The three languages of each edition without a claims vocabulary: v12 bn tl is,
# v13 sr sq ta, v14 az uz ne, v15 kk hy ur, v16 am mn eu, v17 my si mk, v18 km sw cy.
FOUR_DOMAIN_EDITIONS: list[tuple[str, dict[str, int], dict[str, int], bool, int]] = [
    ("v12", {"lark-base": 12, "hr-payroll": 12, "iot-fleet": 12, "research-lab": 12}, {"bn": 1, "tl": 1, "is": 1},
     False, 10),
    ("v13", {"lark-base": 12, "legal-ops": 12, "ci-cd": 12, "observability": 12}, {"sr": 5, "sq": 5, "ta": 5}, False, 8),
    ("v14", {"lark-base": 10, "energy-grid": 10, "retail-pos": 10, "translation-ops": 10},
     {"en": 4, "zh": 4, "ja": 4, "ko": 4, "de": 4, "fr": 4, "pt": 4, "az": 4, "uz": 4, "ne": 4}, True, 10),
    ("v15", {"lark-base": 12, "insurance-claims": 12, "telecom-provisioning": 12, "event-ticketing": 12},
     {"en": 6, "zh": 5, "ja": 5, "ko": 4, "es": 4, "ru": 4, "tr": 4, "de": 4, "kk": 4, "hy": 4, "ur": 4}, True, 10),
    ("v16", {"lark-base": 12, "property-management": 12, "pharmacy-ops": 12, "warehouse-robotics": 12},
     {"en": 6, "zh": 5, "ja": 5, "ko": 4, "fr": 4, "it": 4, "nl": 4, "pl": 4, "am": 4, "mn": 4, "eu": 4}, True, 10),
    ("v17", {"lark-base": 12, "airport-ground-ops": 12, "agri-irrigation": 12, "museum-collections": 12},
     {"en": 6, "zh": 5, "ja": 5, "ko": 4, "de": 4, "es": 4, "pt": 4, "ru": 4, "my": 4, "si": 4, "mk": 4}, True, 10),
    ("v18", {"lark-base": 12, "hotel-operations": 12, "municipal-permits": 12, "veterinary-clinic": 12},
     {"en": 6, "zh": 5, "ja": 5, "ko": 4, "de": 4, "es": 4, "pt": 4, "ru": 4, "km": 4, "sw": 4, "cy": 4}, True, 10),
]


@pytest.mark.parametrize(("name", "domains", "languages", "exact", "editor_languages"), FOUR_DOMAIN_EDITIONS,
                         ids=[row[0] for row in FOUR_DOMAIN_EDITIONS])
def test_editions_have_their_domains_languages_and_origin_cases(name: str, domains: dict[str, int],
                                                                 languages: dict[str, int], exact: bool,
                                                                 editor_languages: int) -> None:
    """v12-v18: four domains of equal size, the languages each writer was given (three without a claims
    vocabulary), four origin cases whose decisive turn comes before every finding, every editor reason twice."""
    rows = [r.get("metadata") or r.get("extra") for fmt in ("openai", "anthropic", "atif")
            for r in _read_jsonl(SETS[name].trajectories / f"facts_{fmt}.jsonl")]
    assert Counter(m["domain"] for m in rows) == domains
    counted = Counter(m["lang"] for m in rows)
    assert counted == languages if exact else all(counted[lang] >= n for lang, n in languages.items())
    origin = [m for m in rows if m["group"] == "origin"]
    assert len(origin) >= 4 and all(m["decisive_turn"] < min(e["turn"] for e in m["expected"]) for m in origin)
    cases = _read_jsonl(SETS[name].counter / "cases.jsonl")
    reasons = Counter(c["expected"]["reason"] for c in cases if c["expected"]["reason"])
    assert set(reasons) == REASONS and min(reasons.values()) >= 2
    assert len({c["lang"] for c in cases}) >= editor_languages
