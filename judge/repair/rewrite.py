"""Capability route: an equivalent rewrite of the query, accepted only after an independent requirement check.

The rewriter (prompts/rewrite-v1.md) and the checker (prompts/rewrite-check-v1.md) are separate calls; the
checker sees only the two texts. The checker lists the original's explicit requirements, each with a verbatim
quote from the original and the verbatim words of the rewrite that carry it. Its claims are then verified
here: every quote must really occur in its text (whitespace and case aside). The rewrite passes only when the
list is non-empty and every requirement is matched. Judging stays anchored to the original query.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from judge.model import Trajectory, Usage
from judge.pricing import add_costs
from judge.repair.prompting import ModelCaller, Provider, call_json, neutralise, render_prompt
from judge.schema import ScoredIssue

REWRITE_PROMPT = "rewrite-v1"
CHECK_PROMPT = "rewrite-check-v1"
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


class RewriteOutcome(BaseModel):
    """The rewrite, its check, whether it passed, and what both calls cost."""

    rewrite: str | None = None
    passed: bool = False
    reason: str
    requirements: list[RequirementMatch] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None  # both calls, failed attempts included (None: unpriced or unknown)
    prompt_versions: list[str] = Field(default_factory=lambda: [REWRITE_PROMPT, CHECK_PROMPT])

    def check_summary(self) -> dict[str, Any]:
        return {"passed": self.passed, "reason": self.reason, "requirements": [r.model_dump() for r in self.requirements],
                "prompts": self.prompt_versions}


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip().lower()


def verify_requirements(original: str, rewrite: str, items: list[dict[str, Any]]) -> tuple[bool, list[RequirementMatch], str]:
    """Check the checker: quotes must occur verbatim; every requirement must be carried by the rewrite."""
    if not items:
        return False, [], "the check listed no requirement"
    matches: list[RequirementMatch] = []
    for item in items:
        requirement = str(item.get("requirement", ""))
        quote = str(item.get("original_quote", ""))
        carried = item.get("rewrite_quote")
        problem = None
        if not quote or _norm(quote) not in _norm(original):
            problem = "the original quote is not in the original query"
        elif not carried:
            problem = "the rewrite drops or changes it"
        elif _norm(str(carried)) not in _norm(rewrite):
            problem = "the rewrite quote is not in the rewrite"
        matches.append(RequirementMatch(requirement=requirement, original_quote=quote,
                                        rewrite_quote=carried if carried else None, matched=problem is None, problem=problem))
    missing = [m for m in matches if not m.matched]
    if missing:
        return False, matches, f"{len(missing)} of {len(matches)} requirement(s) not kept: " + "; ".join(
            f"{m.requirement} ({m.problem})" for m in missing)
    return True, matches, f"all {len(matches)} explicit requirement(s) kept"


async def rewrite_query(model: Provider | ModelCaller, trajectory: Trajectory, issue: ScoredIssue,
                        evidence: list[str]) -> RewriteOutcome:
    """Rewrite the query for a capability limit and check it independently (two calls on the teacher's call path,
    :func:`judge.repair.prompting.call_json`). Never raises."""
    usage = Usage()
    messages = render_prompt(REWRITE_PROMPT, query=neutralise(trajectory.query), description=neutralise(issue.description),
                             evidence=neutralise("\n".join(evidence)))
    written = await call_json(model, messages, REWRITE_SCHEMA, schema_name="rewrite", purpose=REWRITE_PROMPT,
                              trajectory_id=trajectory.id, max_tokens=2000)
    usage, cost = usage + written.usage, written.cost_usd
    rewrite = (written.parsed or {}).get("rewrite")
    if not isinstance(rewrite, str) or not rewrite.strip():
        return RewriteOutcome(reason=f"no rewrite: {written.error or 'empty rewrite'}", usage=usage, cost_usd=cost)
    check_messages = render_prompt(CHECK_PROMPT, query=neutralise(trajectory.query), rewrite=neutralise(rewrite))
    checked = await call_json(model, check_messages, CHECK_SCHEMA, schema_name="requirements", purpose=CHECK_PROMPT,
                              trajectory_id=trajectory.id, max_tokens=2000)
    usage, cost = usage + checked.usage, add_costs(cost, checked.cost_usd)
    if checked.parsed is None or not isinstance(checked.parsed.get("requirements"), list):
        return RewriteOutcome(rewrite=rewrite, reason=f"the requirement check failed: {checked.error or 'no list'}", usage=usage,
                              cost_usd=cost)
    passed, matches, reason = verify_requirements(trajectory.query, rewrite, checked.parsed["requirements"])
    return RewriteOutcome(rewrite=rewrite, passed=passed, reason=reason, requirements=matches, usage=usage, cost_usd=cost)
