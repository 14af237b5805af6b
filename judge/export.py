"""Training-sample export: per-turn samples of released trajectories, split by query group.

Each trajectory with N assistant turns becomes N samples of "given the history so far, what comes next?"
(reference design, section on training): sample k holds every message up to and including the k-th
assistant message, and only that last assistant message is trained. Earlier assistant messages stay in
the history with weight 0 (OpenAI form) or mask false (Anthropic form), and lose their native reasoning:
reasoning is kept only on the trained turn, so the model never learns from reasoning it would not see.

The train/test split is by ``query_id``: every trajectory of one original query lands on one side, so a
repeated trial of a task never leaks from training into test. The split is a pure function of the query
ids and the seed (a seeded hash orders the queries), so it does not depend on input order, and adding new
queries does not move old ones across sides.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from judge import rundir
from judge.model import Message, Trajectory
from judge.rundir import RunDir
from judge.schema import ScoreRow

ExportFormat = Literal["openai", "anthropic"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("openai", "anthropic")

TRAIN_FILE = "train.jsonl"
TEST_FILE = "test.jsonl"
SPLIT_FILE = "split.json"


@dataclass(frozen=True)
class ExportOptions:
    """What to export and how to split it."""

    test_size: float = 0.1
    seed: int = 0
    min_score: int | None = None
    include_unreleased: bool = False
    exclude_categories: tuple[str, ...] = ()
    format: ExportFormat = "openai"

    def __post_init__(self) -> None:
        if not 0.0 <= self.test_size < 1.0:
            raise ValueError(f"--test-size must be in [0, 1), got {self.test_size}")
        if self.format not in EXPORT_FORMATS:
            raise ValueError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, got {self.format!r}")


@dataclass
class Selection:
    """The trajectories chosen for export and, for every one left out, why."""

    chosen: list[Trajectory] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)  # trajectory id -> reason


# --- selection ---------------------------------------------------------------------------------


def exclusion_reason(score: ScoreRow | None, options: ExportOptions) -> str | None:
    """Why a trajectory is not exported (None = export it). Pure: decided from its score row alone."""
    if score is None:
        return "not scored"
    if not options.include_unreleased and not score.release:
        return "not released"
    if options.min_score is not None and (score.score is None or score.score < options.min_score):
        return f"score {score.score} below --min-score {options.min_score}"
    excluded = set(options.exclude_categories)
    hit = sorted({issue.category for issue in [*score.issues, *score.environment]} & excluded)
    if hit:
        return f"has a majority {', '.join(hit)} issue (excluded category)"
    return None


def select(trajectories: Iterable[Trajectory], scores: dict[str, ScoreRow], options: ExportOptions) -> Selection:
    """Apply the filters of ``options`` to the run's trajectories."""
    selection = Selection()
    for trajectory in trajectories:
        reason = exclusion_reason(scores.get(trajectory.id), options)
        if reason is None:
            selection.chosen.append(trajectory)
        else:
            selection.excluded[trajectory.id] = reason
    return selection


# --- split -------------------------------------------------------------------------------------


def query_order_key(query_id: str, seed: int) -> str:
    """Seeded, order-independent position of a query in the split order."""
    return hashlib.sha256(f"{seed}\x00{query_id}".encode()).hexdigest()


def split_queries(trajectory_counts: dict[str, int], test_size: float, seed: int) -> set[str]:
    """Choose the test-side query ids.

    Queries are taken in seeded-hash order until the test side holds at least ``test_size`` of the
    trajectories (the ratio is in trajectories, as in the reference design's 186/21 split). With more than
    one query and ``test_size > 0`` the test side gets at least one query and the train side keeps at least
    one.
    """
    if test_size <= 0 or len(trajectory_counts) < 2:
        return set()
    total = sum(trajectory_counts.values())
    target = test_size * total
    order = sorted(trajectory_counts, key=lambda q: (query_order_key(q, seed), q))
    test: set[str] = set()
    held = 0
    for query_id in order[:-1]:  # the last query always stays on the train side
        if test and held >= target:
            break
        test.add(query_id)
        held += trajectory_counts[query_id]
    return test


# --- sample rendering ----------------------------------------------------------------------------


def _arguments_text(call: Any) -> str:
    # The source's own text when there is one (it is what the model wrote, even when it did not parse).
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments if call.arguments is not None else {}, ensure_ascii=False)


def _tool_text(message: Message) -> str:
    if message.content:
        return message.content
    return message.receipt.content if message.receipt else ""


def history_with_query(trajectory: Trajectory) -> list[Message]:
    """The messages, with the query as a user message when the source did not include one before T1."""
    messages = list(trajectory.messages)
    first_assistant = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    if not any(m.role == "user" for m in messages[:first_assistant]) and trajectory.query:
        insert_at = sum(1 for m in messages[:first_assistant] if m.role == "system")
        messages.insert(insert_at, Message(role="user", content=trajectory.query, turn=0))
    return messages


def has_target(message: Message) -> bool:
    """An assistant message with nothing in it teaches nothing: it is not a training target."""
    return bool(message.content.strip() or message.tool_calls or (message.reasoning or "").strip())


def openai_messages(history: Sequence[Message]) -> list[dict[str, Any]]:
    """OpenAI chat fine-tuning messages; the last message is the trained assistant turn.

    A tool result whose call id pairs with an earlier call becomes ``role: tool``; one that cannot be paired
    (formats that run actions written in text) becomes a user message, since the API rejects unpaired tool
    messages. ``reasoning`` (not part of the OpenAI schema) is written on the trained turn only.
    """
    out: list[dict[str, Any]] = []
    call_ids: set[str] = set()
    last = len(history) - 1
    for index, message in enumerate(history):
        if message.role == "assistant":
            row: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if message.name:
                row["name"] = message.name
            if message.tool_calls:
                row["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _arguments_text(c)}}
                    for c in message.tool_calls
                ]
                call_ids.update(c.id for c in message.tool_calls)
            if index == last and message.reasoning:
                row["reasoning"] = message.reasoning
            row["weight"] = 1 if index == last else 0
            out.append(row)
        elif message.role == "tool":
            call_id = message.receipt.call_id if message.receipt else None
            if call_id and call_id in call_ids:
                out.append({"role": "tool", "tool_call_id": call_id, "content": _tool_text(message)})
            else:
                name = (message.receipt.name if message.receipt else None) or message.name or "tool"
                out.append({"role": "user", "content": f"[{name} result]\n{_tool_text(message)}"})
        else:
            row = {"role": message.role, "content": message.content}
            if message.name:
                row["name"] = message.name
            out.append(row)
    return out


def anthropic_sample(history: Sequence[Message]) -> dict[str, Any]:
    """Anthropic Messages form: ``system`` text, alternating ``messages`` and a parallel ``mask`` list.

    ``mask[i]`` is true only for the trained (last) assistant message. Consecutive user-side messages (user
    text, tool results) are merged into one user message, as the API requires alternation. Leading system
    messages go to ``system``; a later system message becomes user text. ``thinking`` is kept on the
    trained turn only.
    """
    system_parts: list[str] = []
    messages: list[dict[str, Any]] = []
    started = False
    last = len(history) - 1

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})

    for index, message in enumerate(history):
        if message.role == "system" and not started:
            system_parts.append(message.content)
            continue
        started = True
        if message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if index == last and message.reasoning:
                blocks.append({"type": "thinking", "thinking": message.reasoning})
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls:
                arguments = call.arguments if not call.arguments_error else {"raw": call.raw_arguments}
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments or {}})
            # A new assistant message always starts its own entry, so the trained turn is one mask position.
            messages.append({"role": "assistant", "content": blocks})
        elif message.role == "tool":
            receipt = message.receipt
            if receipt and receipt.call_id:
                push("user", [{"type": "tool_result", "tool_use_id": receipt.call_id, "content": _tool_text(message),
                               "is_error": receipt.is_error}])
            else:
                push("user", [{"type": "text", "text": f"[tool result]\n{_tool_text(message)}"}])
        else:
            text = message.content if message.role == "user" else f"[system]\n{message.content}"
            push("user", [{"type": "text", "text": text}])
    mask = [False] * len(messages)
    if messages and messages[-1]["role"] == "assistant":
        mask[-1] = True
    return {"system": "\n\n".join(p for p in system_parts if p), "messages": messages, "mask": mask}


def expand(trajectory: Trajectory, fmt: ExportFormat = "openai") -> list[dict[str, Any]]:
    """One sample row per assistant turn that has something to train on, in turn order.

    Each row carries ``trajectory_id``, ``query_id`` and ``turn`` beside the format's fields, and ``tools``
    when the trajectory's metadata has a ``tools`` list.
    """
    history = history_with_query(trajectory)
    # Tool definitions, when the source recorded them (metadata "tools"), in the format's own shape as given.
    tools = (trajectory.metadata.extra or {}).get("tools")
    rows: list[dict[str, Any]] = []
    for index, message in enumerate(history):
        if message.role != "assistant" or not has_target(message):
            continue
        prefix = history[: index + 1]
        row: dict[str, Any] = {"trajectory_id": trajectory.id, "query_id": trajectory.query_id, "turn": message.turn}
        if fmt == "openai":
            row["messages"] = openai_messages(prefix)
        else:
            row.update(anthropic_sample(prefix))
        if tools:
            row["tools"] = tools
        rows.append(row)
    return rows


# --- the whole export ---------------------------------------------------------------------------


class SplitLeakError(AssertionError):
    """A query ended up on both sides of the split (a bug: the split is by query)."""


def export_run(run_dir: Path, out_dir: Path, options: ExportOptions) -> dict[str, Any]:
    """Write ``train.jsonl``, ``test.jsonl`` and ``split.json`` for the run and return the split record."""
    run = RunDir(run_dir)
    for name in (rundir.TRAJECTORIES, rundir.SCORES):
        if not run.has(name):
            raise FileNotFoundError(f"{run.path / name} not found: `judge export` needs a scored run directory")
    selection = select(run.trajectories(), run.scores_by_trajectory(), options)

    per_query = Counter(t.query_id for t in selection.chosen)
    test_queries = split_queries(dict(per_query), options.test_size, options.seed)

    # Samples repeat the whole history, so a batch's samples can be far larger than the batch: they are
    # streamed to disk one trajectory at a time, never held together in memory.
    samples: dict[str, int] = {"train": 0, "test": 0}
    trajectories: dict[str, int] = {"train": 0, "test": 0}
    queries: dict[str, set[str]] = defaultdict(set)
    skipped_empty = 0

    def side_rows(side: str) -> Iterator[dict[str, Any]]:
        nonlocal skipped_empty
        for trajectory in selection.chosen:
            if ("test" if trajectory.query_id in test_queries else "train") != side:
                continue
            rows = expand(trajectory, options.format)
            skipped_empty += sum(1 for m in trajectory.messages if m.role == "assistant") - len(rows)
            samples[side] += len(rows)
            trajectories[side] += 1
            queries[side].add(trajectory.query_id)
            yield from rows

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for side, name in (("train", TRAIN_FILE), ("test", TEST_FILE)):
        rundir.write_jsonl(rundir.safe_child(out_dir, name), side_rows(side))

    overlap = sorted(queries["train"] & queries["test"])
    if overlap:  # cannot happen by construction; checked because a leak would silently inflate test scores
        for name in (TRAIN_FILE, TEST_FILE):
            (out_dir / name).unlink(missing_ok=True)  # never leave a leaking split behind
        raise SplitLeakError(f"queries on both sides of the split: {overlap[:10]}")

    record: dict[str, Any] = {
        "run": str(run.path),
        "format": options.format,
        "seed": options.seed,
        "test_size": options.test_size,
        "filters": {
            "min_score": options.min_score,
            "include_unreleased": options.include_unreleased,
            "exclude_categories": list(options.exclude_categories),
        },
        "train": {"trajectories": trajectories["train"], "queries": len(queries["train"]), "samples": samples["train"]},
        "test": {"trajectories": trajectories["test"], "queries": len(queries["test"]), "samples": samples["test"]},
        "excluded": {"trajectories": len(selection.excluded), "by_reason": dict(Counter(selection.excluded.values()))},
        "skipped_empty_turns": skipped_empty,
        "query_overlap": overlap,
        "disjoint_by_query": not overlap,
        "test_queries": sorted(test_queries),
    }
    rundir.write_json(rundir.safe_child(out_dir, SPLIT_FILE), record)
    return record
