"""The detector registry: every set of detector names other modules use is a view of what the detectors declare."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from judge.gate import AUTHENTICITY_DETECTORS, release_checks
from judge.model import Trajectory
from judge.repair.editor import WORDING_TAGS
from judge.repair.tickets import PLAN_TAGS
from judge.repair.validators import RULE_DETECTORS
from judge.rules import (
    DETECTOR_NAMES,
    DETECTORS,
    ROLES,
    Analysis,
    DetectorNames,
    MastGroups,
    RulesConfig,
    default_config,
    detector,
    detector_spec,
    run_detectors,
    unregister,
)
from judge.schema import Issue
from judge.testing.builders import say, trajectory
from judge.validate import RULES_TAG_TO_MAST


def test_derived_sets_equal_the_literal_sets_they_replace() -> None:
    # Migration record (issue 13): until then each module held its own literal set of detector names. The views
    # derived from the registry hold exactly the same names. Two of the old tuples listed them in another order;
    # the views follow the registry (the order detectors run in): the release gate's failed checks and the edit
    # validator's findings are now listed in that order.
    # Issue 24 added noop-success, silent-check-failure and contradicted-claim, and renamed plan-receipt-mismatch
    # to unchecked-tick (the shared finding vocabulary).
    assert DETECTOR_NAMES == (
        "failed-call", "repeated-failure", "environment-fault", "noop-success", "unverified-completion",
        "silent-check-failure", "contradicted-claim", "unchecked-tick",
        "stale-evidence", "premature-claim", "phantom-failure-reference", "unpaired-call-id", "budget-exhausted",
    )
    old_gate = ("unverified-completion", "stale-evidence", "premature-claim", "phantom-failure-reference",
                "unchecked-tick", "unpaired-call-id", "noop-success", "silent-check-failure", "contradicted-claim")
    assert set(AUTHENTICITY_DETECTORS) == set(old_gate) and len(AUTHENTICITY_DETECTORS) == len(old_gate)
    assert tuple(AUTHENTICITY_DETECTORS) == tuple(n for n in DETECTOR_NAMES if n in old_gate)
    assert dict(RULES_TAG_TO_MAST) == {
        "repeated-failure": "repetition",
        "unverified-completion": "verification",
        "unchecked-tick": "verification",
        "stale-evidence": "verification",
        "premature-claim": "verification",
        "phantom-failure-reference": "reasoning-action",
        "budget-exhausted": "termination",
        "failed-call": None,
        "noop-success": None,
        "silent-check-failure": "verification",
        "contradicted-claim": "verification",
    }
    old_validators = ["premature-claim", "phantom-failure-reference", "unverified-completion", "unchecked-tick",
                      "silent-check-failure", "contradicted-claim"]
    assert sorted(RULE_DETECTORS) == sorted(old_validators) and len(RULE_DETECTORS) == len(old_validators)
    assert set(PLAN_TAGS) == {"unverified-completion", "unchecked-tick", "premature-claim", "stale-evidence",
                              "silent-check-failure"}
    assert set(WORDING_TAGS) == {"phantom-failure-reference", "premature-claim", "wording", "stale-reference", "typo"}


def test_every_issue_carries_the_category_its_detector_declares() -> None:
    declared = {name: detector_spec(name).category for name in DETECTOR_NAMES}
    assert declared == {
        "failed-call": "code", "repeated-failure": "code", "environment-fault": "environment",
        "unverified-completion": "semantic", "unchecked-tick": "semantic", "stale-evidence": "semantic",
        "premature-claim": "semantic", "phantom-failure-reference": "semantic", "unpaired-call-id": "environment",
        "budget-exhausted": "capability", "noop-success": "code", "silent-check-failure": "semantic",
        "contradicted-claim": "semantic",
    }


# --- a detector registered by a test -----------------------------------------------------------------

NAME = "shouting-answer"


def _shouting(an: Analysis) -> list[Issue]:
    """Flags an assistant message written in capitals (a toy rule for the registry test)."""
    return [
        Issue(turn=m.turn, category=detector_spec(NAME).category, severity=an.config.settings(NAME).severity,
              description="The answer shouts.", evidence=m.content, tag=NAME)
        for m in an.trajectory.messages if m.role == "assistant" and m.content.isupper()
    ]


@pytest.fixture
def shouting() -> Iterator[str]:
    detector(NAME, "semantic", roles=("authenticity", "wording"), mast="verification")(_shouting)
    try:
        yield NAME
    finally:
        unregister(NAME)


def _trajectory(answer: str) -> Trajectory:
    return trajectory("t", [say(answer)], "Say hello.")


def test_a_registered_detector_is_in_every_view_of_its_roles_and_no_other(shouting: str) -> None:
    assert DETECTOR_NAMES[-1] == shouting and shouting in DETECTORS
    assert shouting in AUTHENTICITY_DETECTORS and AUTHENTICITY_DETECTORS[-1] == shouting
    assert shouting in WORDING_TAGS and shouting in list(WORDING_TAGS)
    assert shouting not in PLAN_TAGS and shouting not in RULE_DETECTORS
    assert RULES_TAG_TO_MAST[shouting] == "verification"
    # it runs with the others and the gate checks it
    issues = run_detectors(_trajectory("HELLO"))
    assert [(i.tag, i.category, i.turn) for i in issues] == [(shouting, "semantic", 1)]
    assert DETECTORS[shouting](_trajectory("Hello.")) == []
    assert f"authenticity:{shouting}" in release_checks(_trajectory("HELLO"))


def test_a_registered_detector_takes_its_config_entry(shouting: str, tmp_path: Path) -> None:
    data = yaml.safe_load(Path(default_config().source or "").read_text(encoding="utf-8"))
    data["detectors"][shouting] = {"severity": "minor"}
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    config = RulesConfig.load(path)
    assert [i.severity for i in run_detectors(_trajectory("HELLO"), config=config)] == ["minor"]
    data["detectors"][shouting] = {"enabled": False}
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    assert run_detectors(_trajectory("HELLO"), config=RulesConfig.load(path)) == []


def test_unregistering_removes_it_from_the_views(shouting: str) -> None:
    unregister(shouting)
    try:
        assert shouting not in DETECTOR_NAMES and shouting not in AUTHENTICITY_DETECTORS
        assert shouting not in RULES_TAG_TO_MAST and len(DETECTOR_NAMES) == 13
        with pytest.raises(ValueError, match="unknown detector"):
            run_detectors(_trajectory("HELLO"), [shouting])
    finally:
        detector(NAME, "semantic")(_shouting)  # the fixture unregisters it again


@pytest.mark.parametrize(("args", "kwargs", "message"), [
    (("failed-call", "code"), {}, "already registered"),
    (("new-one", "code"), {"roles": ("gate",)}, "unknown role"),
    (("new-one", "bug"), {}, "unknown category"),
    (("new-one", "environment"), {"mast": "verification"}, "no MAST group"),
])
def test_bad_registrations_are_refused(args: tuple[str, str], kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        detector(*args, **kwargs)(_shouting)  # type: ignore[arg-type]
    assert "new-one" not in DETECTOR_NAMES


def test_views() -> None:
    assert set(ROLES) == {"authenticity", "plan", "wording", "edit-check"}
    with pytest.raises(ValueError, match="unknown role"):
        DetectorNames("gate")  # type: ignore[arg-type]
    view = DetectorNames("plan", also=("typo",))
    assert view == (*PLAN_TAGS, "typo") and view[-1] == "typo" and "typo" in view and "failed-call" not in view
    assert view != ["typo"] and 3 not in view
    # environment detectors are never a MAST failure: not even "no group"
    assert "environment-fault" not in MastGroups() and "unpaired-call-id" not in MastGroups()
    with pytest.raises(KeyError):
        MastGroups()["environment-fault"]
