"""``example:WORD``: a deterministic judge that flags every assistant turn whose text contains WORD."""

from __future__ import annotations

from typing import Any

from judge.judges import AttemptHook, BaseJudge, JudgeIdentity, register_judge
from judge.model import Trajectory, Usage
from judge.schema import Issue, Verdict


class WordJudge(BaseJudge):
    """Deterministic: it runs once and forms a panel of one on its own."""

    deterministic = True
    default_passes = 1

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.word = spec.partition(":")[2] or "TODO"

    def cache_identity(self) -> JudgeIdentity:
        return {"provider": "example", "model": "word-judge", "prompt": "example-v1", "params": {"word": self.word}}

    async def __call__(self, trajectory: Trajectory, pass_index: int, *, on_attempt: AttemptHook | None = None,
                       on_send: AttemptHook | None = None) -> Verdict:
        issues = [Issue(turn=m.turn, category="semantic", severity="minor", tag="example-word", evidence=m.content,
                        description=f"The agent left {self.word!r} in its message.")
                  for m in trajectory.messages
                  if m.role == "assistant" and self.word.lower() in m.content.lower()]
        return Verdict(trajectory_id=trajectory.id, judge=self.spec, pass_index=pass_index,
                       pass_key=f"{self.spec}#{pass_index}", status="ok", issues=issues, efficiency="high",
                       model="word-judge", prompt_version="example-v1", deterministic=True, cost_usd=0.0,
                       usage=Usage(input_tokens=0, output_tokens=0))


@register_judge("example")
def make_word_judge(spec: str, options: dict[str, Any]) -> WordJudge:
    return WordJudge(spec)
