"""tau-bench / AgentRx records: ``{task_id, trial, reward, info, traj: [OpenAI chat messages], records?}``.

``traj`` holds OpenAI chat messages (AgentRx adds a 1-based ``index``; ``source_index`` here is the 0-based
position, so AgentRx ``step_number`` = ``source_index + 1``). tau-bench tools report failures as text that
starts with ``Error:``; such receipts are marked ``is_error``.

Ids: the policy in the system prompt names the domain (``# Retail agent policy``), so the id is
``tau-<domain>-<task_id>-t<trial>`` and the query group is ``tau-<domain>-<task_id>`` (retail task 0 and airline
task 0 are different tasks); without a recognisable domain, ``tau-<task_id>-t<trial>``. The raw ``task_id`` is
kept in ``metadata.extra``. The query is the simulated user's first message (what the agent saw); the
user-simulator instruction stays in ``metadata.extra['info']``. ``reward`` is the recorded outcome (1 success,
0 failure; a reward that is not a finite number is unreadable and holds the trajectory at the gate).
"""

from __future__ import annotations

import re
from typing import Any

from judge.importers._common import (
    RecordError,
    Source,
    as_dict,
    build_metadata,
    build_trajectory,
    loose_value,
    require_list,
)
from judge.importers.openai_chat import convert_messages
from judge.model import Trajectory
from judge.outcome import from_reward

NAME = "tau"

_DOMAIN = re.compile(r"#\s*([A-Za-z]+)\s+agent\s+policy", re.IGNORECASE)


def detect(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("traj"), list) and ("task_id" in obj or "reward" in obj)


def _reports_error(text: str) -> bool:
    return text.lstrip().startswith("Error:")


def domain_of(raw_messages: list[Any]) -> str | None:
    for message in raw_messages[:2]:
        if isinstance(message, dict) and message.get("role") == "system":
            match = _DOMAIN.search(str(message.get("content") or "")[:200])
            if match:
                return match.group(1).lower()
    return None


def parse(record: Any, src: Source) -> Trajectory:
    if not isinstance(record, dict):
        raise RecordError("record is not a JSON object")
    raw_messages = require_list(record, "traj")
    messages = convert_messages(raw_messages, error_text=_reports_error)
    task_id = loose_value(record.get("task_id"))
    trial = loose_value(record.get("trial"))
    domain = domain_of(raw_messages)
    prefix = f"tau-{domain}" if domain else "tau"
    trajectory_id = query_id = None
    if task_id is not None:
        query_id = f"{prefix}-{task_id}"
        trajectory_id = f"{query_id}-t{trial if trial is not None else 0}"
    reward = loose_value(record.get("reward"))
    recorded = from_reward(reward)  # tau-bench grades 0/1; NaN or a non-number is unreadable, never "no outcome"
    outcome = recorded.status if recorded.status in ("success", "failure") else None
    extra = {k: v for k, v in record.items() if k not in ("traj", "reward", "metadata")}
    if domain:
        extra["domain"] = domain
    meta = as_dict(record.get("metadata"))
    metadata = build_metadata(NAME, src, {"reward": reward, "outcome": outcome}, extra, meta, outcome=recorded)
    return build_trajectory(
        NAME, src, messages, trajectory_id=trajectory_id, query_id=meta.get("query_id") or query_id, metadata=metadata
    )
