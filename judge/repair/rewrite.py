"""Capability route: an equivalent rewrite of the query, accepted only after an independent requirement check.

The rewriter (prompts/rewrite-v1.md) and the checker (prompts/rewrite-check-v2.md) are separate calls to
separate models (the same model checking its own rewrite tends to leave out what it dropped; ``judge repair``
refuses the rewriter's model as checker unless told to allow it). The checker sees only the two texts and the
requirements found mechanically in the original (:mod:`judge.repair.requirements`). It lists every explicit
requirement of the original, each with a verbatim quote from the original and the verbatim words of the rewrite
that keep it. Its claims are then verified here: every quote must occur in its text (normalised as evidence
quotes are, :func:`judge.evidence.occurs_in`), and every mechanically found requirement must be covered by the
list. The rewrite passes only when the list is non-empty and nothing is missing or unverifiable. Judging stays
anchored to the original query.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from judge.evidence import occurs_in
from judge.model import Trajectory, Usage
from judge.pricing import add_costs
from judge.repair.prompting import ModelCaller, Provider, call_json, neutralise, render_prompt
from judge.repair.requirements import extract_requirements, uncovered
from judge.schema import ScoredIssue

REWRITE_PROMPT = "rewrite-v1"
CHECK_PROMPT = "rewrite-check-v2"
REWRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"rewrite": {"type": "string"}, "notes": {"type": "string"}},
    "required": ["rewrite", "notes"],
    "additionalProperties": False,
}
CHECK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "requirements": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "requirement": {"type": "string"},
                    "original_quote": {"type": "string"},
                    "rewrite_quote": {"type": ["string", "null"]},
                },
                "required": ["requirement", "original_quote", "rewrite_quote"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["requirements"],
    "additionalProperties": False,
}


class RequirementMatch(BaseModel):
    requirement: str
    original_quote: str
    rewrite_quote: str | None
    matched: bool
    problem: str | None = None


class FoundRequirement(BaseModel):
    """A requirement found mechanically in the original, and whether the checker's list covered it."""

    kind: str
    text: str
    covered: bool
    problem: str | None = None


class RewriteOutcome(BaseModel):
    """The rewrite, its check, whether it passed, and what both calls cost."""

    rewrite: str | None = None
    passed: bool = False
    reason: str
    requirements: list[RequirementMatch] = Field(default_factory=list)
    found: list[FoundRequirement] = Field(default_factory=list)
    checker: str | None = None  # the checker's model (provider:model)
    independent: bool | None = None  # False: the checker is the rewriter's model
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None  # both calls, failed attempts included (None: unpriced or unknown)
    prompt_versions: list[str] = Field(default_factory=lambda: [REWRITE_PROMPT, CHECK_PROMPT])

    def check_summary(self) -> dict[str, Any]:
        return {"passed": self.passed, "reason": self.reason, "requirements": [r.model_dump() for r in self.requirements],
                "found": [f.model_dump() for f in self.found], "checker": self.checker,
                "independent": self.independent, "prompts": self.prompt_versions}


def verify_requirements(original: str, rewrite: str, items: list[dict[str, Any]]) -> tuple[bool, list[RequirementMatch], str]:
    """Check the checker: quotes must occur verbatim; every requirement must be carried by the rewrite; every
    requirement found mechanically in the original must be in the list (see :func:`check_requirements`)."""
    passed, matches, _, reason = check_requirements(original, rewrite, items)
    return passed, matches, reason


def check_requirements(original: str, rewrite: str, items: list[dict[str, Any]]
                       ) -> tuple[bool, list[RequirementMatch], list[FoundRequirement], str]:
    """:func:`verify_requirements` with the mechanically found requirements and whether each was covered."""
    matches: list[RequirementMatch] = []
    for item in items:
        requirement = str(item.get("requirement") or "")
        quote = str(item.get("original_quote") or "")
        carried = item.get("rewrite_quote")
        carried = str(carried) if carried else None
        problem = None
        if not occurs_in(quote, original):
            problem = "the original quote is not in the original query"
        elif not carried:
            problem = "the rewrite drops or changes it"
        elif not occurs_in(carried, rewrite):
            problem = "the rewrite quote is not in the rewrite"
        matches.append(RequirementMatch(requirement=requirement, original_quote=quote, rewrite_quote=carried,
                                        matched=problem is None, problem=problem))
    # An item lists a requirement when its original quote is verified; it keeps it only when its rewrite quote is too.
    listed = [(m.original_quote, m.rewrite_quote if m.matched else None) for m in matches
              if m.problem != "the original quote is not in the original query"]
    mechanical = extract_requirements(original)
    missing = dict(uncovered(mechanical, listed))
    found = [FoundRequirement(kind=req.kind, text=req.text, covered=req not in missing, problem=missing.get(req))
             for req in mechanical]
    if not items:
        return False, [], found, "the check listed no requirement"
    problems = [f"{m.requirement} ({m.problem})" for m in matches if not m.matched]
    problems += [f"{f.kind} {f.text!r} ({f.problem})" for f in found if not f.covered]
    if problems:
        return False, matches, found, f"{len(problems)} requirement(s) not kept: " + "; ".join(problems)
    return True, matches, found, f"all {len(matches)} explicit requirement(s) kept ({len(found)} found mechanically, all covered)"


def same_model(spec: str, other: str) -> bool:
    """Whether two specs name the same model, whichever provider or server serves it (``openai:gpt-4o`` and
    ``openai-compatible:gpt-4o@URL`` are one model): such a checker is not independent of the rewriter."""

    def name(value: str) -> str:
        return value.partition(":")[2].partition("@")[0].strip().lower() or value.strip().lower()

    return name(spec) == name(other)


def _model_of(target: Provider | ModelCaller) -> str:
    provider = target.provider if isinstance(target, ModelCaller) else target
    return f"{provider.provider}:{provider.model}"


async def rewrite_query(model: Provider | ModelCaller, trajectory: Trajectory, issue: ScoredIssue,
                        evidence: list[str], *, checker: Provider | ModelCaller) -> RewriteOutcome:
    """Rewrite the query for a capability limit (``model``) and check it with ``checker``: two calls on the
    teacher's call path (:func:`judge.repair.prompting.call_json`), both counted in usage and cost. Never raises."""
    checker_model = _model_of(checker)
    independent = not same_model(_model_of(model), checker_model)
    usage = Usage()
    messages = render_prompt(REWRITE_PROMPT, query=neutralise(trajectory.query), description=neutralise(issue.description),
                             evidence=neutralise("\n".join(evidence)))
    written = await call_json(model, messages, REWRITE_SCHEMA, schema_name="rewrite", purpose=REWRITE_PROMPT,
                              trajectory_id=trajectory.id, max_tokens=2000)
    usage, cost = usage + written.usage, written.cost_usd
    rewrite = (written.parsed or {}).get("rewrite")
    if not isinstance(rewrite, str) or not rewrite.strip():
        return RewriteOutcome(reason=f"no rewrite: {written.error or 'empty rewrite'}", usage=usage, cost_usd=cost,
                              checker=checker_model, independent=independent)
    found = extract_requirements(trajectory.query)
    listed = "\n".join(f"- {r.kind}: {r.text}" for r in found) or "(none)"
    check_messages = render_prompt(CHECK_PROMPT, query=neutralise(trajectory.query), rewrite=neutralise(rewrite),
                                   found=neutralise(listed))
    checked = await call_json(checker, check_messages, CHECK_SCHEMA, schema_name="requirements", purpose=CHECK_PROMPT,
                              trajectory_id=trajectory.id, max_tokens=3000)
    usage, cost = usage + checked.usage, add_costs(cost, checked.cost_usd)
    common: dict[str, Any] = {"rewrite": rewrite, "usage": usage, "cost_usd": cost, "checker": checker_model,
                              "independent": independent}
    if checked.parsed is None or not isinstance(checked.parsed.get("requirements"), list):
        return RewriteOutcome(reason=f"the requirement check failed: {checked.error or 'no list'}", **common)
    items = [i for i in checked.parsed["requirements"] if isinstance(i, dict)]
    passed, matches, found_rows, reason = check_requirements(trajectory.query, rewrite, items)
    return RewriteOutcome(passed=passed, reason=reason, requirements=matches, found=found_rows, **common)
