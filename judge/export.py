"""Training-sample export: released trajectories as fine-tuning samples, split train/test by query group.

**Samples.** By default a trajectory becomes *one* sample holding the whole conversation, and every assistant
message says whether it is trained: ``weight`` 1 or 0 in the OpenAI chat fine-tuning form, ``mask`` true or
false in the Anthropic form, ``weight`` in the Hugging Face form. ``per_turn`` keeps the reference design's
expansion instead: each trained turn becomes its own sample of "given the history so far, what comes next?",
holding every message up to that turn, with only that last assistant message trained.

**Which turns are trained** (:func:`trained_turns`). Release is decided per trajectory by the gate (score 4/5 and
the authenticity, format and outcome checks); there is no per-turn release. A turn is trained when its trajectory
is exported and the turn has something to train on in the target form (text, tool calls, or reasoning where the
export keeps it: a reasoning-only turn is not trained when reasoning is dropped). A released trajectory has
no majority issue, so every such turn of it is trained. A trajectory exported with ``include_unreleased`` may
have majority issues: the turn of the first one and every turn after it get weight 0, since the reference
design regenerates the suffix from the faulty decision on (Online repair), so nothing from it on is trusted;
environment-ledger issues count as well (the turns after a broken environment answered broken receipts), and
an issue with no turn leaves no turn trained. A sample with no trained turn is not written (counted).

**Reasoning** (native thinking) per target (:data:`REASONING_MODES`):

* ``openai``: the chat fine-tuning format has no reasoning field, so it is dropped by default; ``think-tags``
  maps it into the assistant content as ``<think>...</think>`` before the answer (the convention of
  open-weight reasoning models' chat templates).
* ``anthropic``: kept (default) as ``thinking`` blocks with their ``signature`` (and ``redacted_thinking`` with
  its ``data``) exactly as the log recorded them; reasoning from a source that does not sign it becomes an
  unsigned ``thinking`` block (counted in ``split.json``: the API refuses unsigned blocks in a request).
  ``drop`` leaves it out.
* ``hf``: kept (default) as ``reasoning_content`` on assistant messages (the field name of DeepSeek's API and of
  the Qwen and vLLM chat templates); ``think-tags`` or ``drop`` as for OpenAI.

In ``per_turn`` samples only the trained turn keeps its reasoning (the reference design: the model never
learns from reasoning it would not see); in the one-sample form each assistant message keeps its own, since
each is a target.

**Empty tool output.** A tool result with no text (the tool printed nothing) is written as the marker
:data:`EMPTY_TOOL_OUTPUT`, ``(no output)``, in every form: OpenAI's format requires non-empty content on a tool
message, and the marker tells the trained model that the call ran and printed nothing rather than that the result
was lost. ``split.json`` counts them (``empty_tool_results_marked``).

**Files.** ``train.jsonl`` and ``test.jsonl`` (``hf``: ``train.parquet``, ``test.parquet`` and a ``README.md``
dataset card that ``datasets.load_dataset`` reads), ``index.jsonl`` mapping each sample (split and 1-based
line) to its trajectory and query, so the sample lines carry no key outside the target format, and
``split.json`` with the counts, the filters and the OpenAI format check (:mod:`judge.export_check`): when that
check finds an error the files stay for inspection, ``format_check_passed`` is false and ``judge export`` exits 1.

**Split.** By ``query_id``: every trajectory of one original query lands on one side, so a repeated trial of a
task never leaks from training into test. The split is a pure function of the query ids and the seed (a seeded
hash orders the queries), so it does not depend on input order, and adding new queries does not move old
ones across sides.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from judge import rundir
from judge.model import Message, ToolCall, ToolSpec, Trajectory
from judge.rundir import RunDir, TrajectoryHead
from judge.schema import ScoreRow

ExportFormat = Literal["openai", "anthropic", "hf"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = ("openai", "anthropic", "hf")

# The reasoning modes each target accepts; the first is its default ("auto").
REASONING_MODES: dict[str, tuple[str, ...]] = {
    "openai": ("drop", "think-tags"),
    "anthropic": ("keep", "drop"),
    "hf": ("keep", "drop", "think-tags"),
}

TRAIN_FILE = "train.jsonl"
TEST_FILE = "test.jsonl"
SPLIT_FILE = "split.json"
INDEX_FILE = "index.jsonl"
CARD_FILE = "README.md"
SIDES = ("train", "test")

# What an empty tool result becomes in a sample (module docstring, "Empty tool output").
EMPTY_TOOL_OUTPUT = "(no output)"

# OpenAI's per-example limit for gpt-4o / gpt-4.1 fine-tuning (the cookbook recipe's 4,096 was gpt-3.5's).
DEFAULT_MAX_TOKENS = 65_536


@dataclass(frozen=True)
class ExportOptions:
    """What to export, in which form, and how to split it."""

    test_size: float = 0.1
    seed: int = 0
    min_score: int | None = None
    include_unreleased: bool = False
    exclude_categories: tuple[str, ...] = ()
    format: ExportFormat = "openai"
    per_turn: bool = False
    reasoning: str = "auto"
    max_tokens: int = DEFAULT_MAX_TOKENS

    def __post_init__(self) -> None:
        if not 0.0 <= self.test_size < 1.0:
            raise ValueError(f"--test-size must be in [0, 1), got {self.test_size}")
        if self.format not in EXPORT_FORMATS:
            raise ValueError(f"--format must be one of {', '.join(EXPORT_FORMATS)}, got {self.format!r}")
        allowed = REASONING_MODES[self.format]
        if self.reasoning != "auto" and self.reasoning not in allowed:
            raise ValueError(f"--reasoning for --format {self.format} must be auto or one of {', '.join(allowed)}, "
                             f"got {self.reasoning!r}")
        if self.max_tokens < 1:
            raise ValueError(f"--max-tokens must be positive, got {self.max_tokens}")

    @property
    def reasoning_mode(self) -> str:
        """The reasoning mode in force (``auto`` resolved to the target's default)."""
        return REASONING_MODES[self.format][0] if self.reasoning == "auto" else self.reasoning


@dataclass
class Selection:
    """The trajectories chosen for export (id -> query id, in run order) and, for every one left out, why."""

    chosen: dict[str, str] = field(default_factory=dict)
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


def select(trajectories: Iterable[Trajectory | TrajectoryHead], scores: Mapping[str, ScoreRow],
           options: ExportOptions) -> Selection:
    """Apply the filters of ``options`` to the run's trajectories (ids and query ids are all it reads)."""
    selection = Selection()
    for trajectory in trajectories:
        reason = exclusion_reason(scores.get(trajectory.id), options)
        if reason is None:
            selection.chosen[trajectory.id] = trajectory.query_id
        else:
            selection.excluded[trajectory.id] = reason
    return selection


def has_target(message: Message, with_reasoning: bool = True) -> bool:
    """An assistant message with nothing in it teaches nothing: it is not a training target. Its reasoning counts
    only where the export keeps reasoning (``with_reasoning``)."""
    reasoning = with_reasoning and bool((message.reasoning or "").strip() or message.thinking)
    return bool(message.content.strip() or message.tool_calls or reasoning)


def first_faulty_turn(score: ScoreRow | None) -> int | None:
    """The earliest turn a majority (or environment-ledger) issue names; 0 when one names no turn; None if none."""
    if score is None:
        return None
    turns = [issue.turn if issue.turn is not None else 0 for issue in [*score.issues, *score.environment]]
    return min(turns) if turns else None


def trained_turns(trajectory: Trajectory, score: ScoreRow | None, with_reasoning: bool = True) -> set[int]:
    """The turns with weight 1 (module docstring, "Which turns are trained"). Pure."""
    cut = first_faulty_turn(score)
    return {
        message.turn
        for message in trajectory.messages
        if message.role == "assistant" and message.turn is not None and has_target(message, with_reasoning)
        and (cut is None or message.turn < cut)
    }


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


def _arguments_text(call: ToolCall) -> str:
    # The source's own text when there is one (it is what the model wrote, even when it did not parse).
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments if call.arguments is not None else {}, ensure_ascii=False)


def tool_text(message: Message) -> str:
    """A tool message's text in a sample: its content, else its receipt's, else :data:`EMPTY_TOOL_OUTPUT`."""
    if message.content:
        return message.content
    return (message.receipt.content if message.receipt else "") or EMPTY_TOOL_OUTPUT


def history_with_query(trajectory: Trajectory) -> list[Message]:
    """The messages, with the query as a user message when the source did not include one before T1."""
    messages = list(trajectory.messages)
    first_assistant = next((i for i, m in enumerate(messages) if m.role == "assistant"), len(messages))
    if not any(m.role == "user" for m in messages[:first_assistant]) and trajectory.query:
        insert_at = sum(1 for m in messages[:first_assistant] if m.role == "system")
        messages.insert(insert_at, Message(role="user", content=trajectory.query, turn=0))
    return messages


def think_tagged(reasoning: str, content: str) -> str:
    """Reasoning mapped into the content, as open-weight reasoning models' chat templates write it."""
    return f"<think>\n{reasoning}\n</think>\n\n{content}"


def openai_messages(history: Sequence[Message], trained: set[int], *, reasoning: str = "drop",
                    reasoning_turns: set[int] | None = None, reasoning_key: str | None = None) -> list[dict[str, Any]]:
    """OpenAI chat fine-tuning messages; an assistant message weighs 1 when its turn is in ``trained``.

    A tool result whose call id pairs with an earlier call becomes ``role: tool``; one that cannot be paired
    (formats that run actions written in text) becomes a user message, since the API rejects unpaired tool
    messages. An assistant message with nothing to show (no text, no calls, its reasoning dropped) is left
    out: the format requires content or tool calls. Reasoning (of the turns in ``reasoning_turns``, default
    all) is ``think-tags`` mapped into the content, ``keep`` written under ``reasoning_key`` (the Hugging Face
    form's ``reasoning_content``; the OpenAI form has no such key), or dropped.
    """
    out: list[dict[str, Any]] = []
    call_ids: set[str] = set()
    for message in history:
        if message.role == "assistant":
            content = message.content
            thought = message.reasoning if reasoning_turns is None or message.turn in reasoning_turns else None
            if thought and reasoning == "think-tags":
                content = think_tagged(thought, content)
            if not content.strip() and not message.tool_calls and not (thought and reasoning == "keep"):
                continue
            row: dict[str, Any] = {"role": "assistant", "content": content or None}
            if message.name:
                row["name"] = message.name
            if message.tool_calls:
                row["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _arguments_text(c)}}
                    for c in message.tool_calls
                ]
                call_ids.update(c.id for c in message.tool_calls)
            if thought and reasoning == "keep" and reasoning_key:
                row[reasoning_key] = thought
            row["weight"] = 1 if message.turn in trained else 0
            out.append(row)
        elif message.role == "tool":
            call_id = message.receipt.call_id if message.receipt else None
            if call_id and call_id in call_ids:
                out.append({"role": "tool", "tool_call_id": call_id, "content": tool_text(message)})
            else:
                name = (message.receipt.name if message.receipt else None) or message.name or "tool"
                out.append({"role": "user", "content": f"[{name} result]\n{tool_text(message)}"})
        else:
            row = {"role": message.role, "content": message.content}
            if message.name:
                row["name"] = message.name
            out.append(row)
    return out


def thinking_blocks(message: Message) -> list[dict[str, Any]]:
    """The message's native reasoning as Anthropic blocks: the recorded blocks verbatim (with signatures) when
    the log has them, else one unsigned ``thinking`` block of the reasoning text."""
    if message.thinking:
        blocks = []
        for block in message.thinking:
            if block.type == "redacted_thinking":
                blocks.append({"type": "redacted_thinking", "data": block.data or ""})
            else:
                item: dict[str, Any] = {"type": "thinking", "thinking": block.thinking}
                if block.signature is not None:
                    item["signature"] = block.signature
                blocks.append(item)
        return blocks
    if message.reasoning:
        return [{"type": "thinking", "thinking": message.reasoning}]
    return []


def anthropic_sample(history: Sequence[Message], trained: set[int] | None = None, *, reasoning: str = "keep",
                     reasoning_turns: set[int] | None = None) -> dict[str, Any]:
    """Anthropic Messages form: ``system`` text, ``messages`` and a parallel ``mask`` list.

    ``mask[i]`` is true for the assistant messages whose turn is in ``trained`` (default: the last assistant
    message only, the per-turn form). Consecutive user-side messages (user text, tool results) are merged
    into one user message, as the API requires alternation; each assistant message keeps its own entry, so a
    turn is one mask position. Leading system messages go to ``system``; a later system message becomes user
    text. Thinking blocks (:func:`thinking_blocks`) lead the assistant content for the turns in
    ``reasoning_turns`` (default all) unless ``reasoning`` is ``drop``.
    """
    if trained is None:
        last = next((m.turn for m in reversed(history) if m.role == "assistant"), None)
        trained = {last} if last is not None else set()
    system_parts: list[str] = []
    messages: list[dict[str, Any]] = []
    mask: list[bool] = []
    started = False

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
            mask.append(False)

    for message in history:
        if message.role == "system" and not started:
            system_parts.append(message.content)
            continue
        started = True
        if message.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if reasoning != "drop" and (reasoning_turns is None or message.turn in reasoning_turns):
                blocks.extend(thinking_blocks(message))
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls:
                arguments = call.arguments if not call.arguments_error else {"raw": call.raw_arguments}
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments or {}})
            messages.append({"role": "assistant", "content": blocks})
            mask.append(message.turn in trained)
        elif message.role == "tool":
            receipt = message.receipt
            if receipt and receipt.call_id:
                push("user", [{"type": "tool_result", "tool_use_id": receipt.call_id, "content": tool_text(message),
                               "is_error": receipt.is_error}])
            else:
                push("user", [{"type": "text", "text": f"[tool result]\n{tool_text(message)}"}])
        else:
            text = message.content if message.role == "user" else f"[system]\n{message.content}"
            push("user", [{"type": "text", "text": text}])
    return {"system": "\n\n".join(p for p in system_parts if p), "messages": messages, "mask": mask}


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Recorded tool schemas as the OpenAI ``tools`` list."""
    return [tool.as_openai() for tool in tools]


def anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Recorded tool schemas as Anthropic tools."""
    return [tool.as_anthropic() for tool in tools]


@dataclass
class Sample:
    """One sample line and what the index records about it."""

    row: dict[str, Any]
    turn: int | None  # the trained turn of a per-turn sample; None for the one-sample form
    trained: list[int]


def render(history: Sequence[Message], trajectory: Trajectory, trained: set[int], options: ExportOptions,
           reasoning_turns: set[int] | None) -> dict[str, Any]:
    """One sample in the target format (no id keys: those go to the index)."""
    mode = options.reasoning_mode
    tools = trajectory.metadata.tools
    if options.format == "anthropic":
        row = anthropic_sample(history, trained, reasoning=mode, reasoning_turns=reasoning_turns)
        if tools:
            row["tools"] = anthropic_tools(tools)
        return row
    key = "reasoning_content" if options.format == "hf" else None
    row = {"messages": openai_messages(history, trained, reasoning=mode, reasoning_turns=reasoning_turns, reasoning_key=key)}
    if tools:
        row["tools"] = openai_tools(tools)
    return row


def samples(trajectory: Trajectory, trained: set[int], options: ExportOptions) -> list[Sample]:
    """The samples of one trajectory: one with per-message weights, or (``per_turn``) one per trained turn."""
    if not trained:
        return []
    history = history_with_query(trajectory)
    if not options.per_turn:
        return [Sample(render(history, trajectory, trained, options, None), None, sorted(trained))]
    out = []
    for index, message in enumerate(history):
        if message.role == "assistant" and message.turn in trained:
            turn = {message.turn}
            out.append(Sample(render(history[: index + 1], trajectory, turn, options, turn), message.turn, [message.turn]))
    return out


# --- the whole export ---------------------------------------------------------------------------


class SplitLeakError(AssertionError):
    """A query ended up on both sides of the split (a bug: the split is by query)."""


@dataclass
class _Tally:
    samples: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SIDES, 0))
    trajectories: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SIDES, 0))
    trained: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SIDES, 0))
    queries: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    empty_turns: int = 0
    untrained_after_issue: int = 0
    without_trained_turn: int = 0
    unsigned_thinking: int = 0
    empty_tool_results: int = 0


def sample_files(fmt: ExportFormat) -> dict[str, str]:
    """Split side -> file name for a format."""
    if fmt == "hf":
        return {"train": "train.parquet", "test": "test.parquet"}
    return {"train": TRAIN_FILE, "test": TEST_FILE}


def export_run(run_dir: Path, out_dir: Path, options: ExportOptions) -> dict[str, Any]:
    """Write the sample files, ``index.jsonl`` and ``split.json`` for the run; return the split record."""
    run = RunDir(run_dir)
    for name in (rundir.TRAJECTORIES, rundir.SCORES):
        if not run.has(name):
            raise FileNotFoundError(f"{run.path / name} not found: `judge export` needs a scored run directory")
    if options.format == "hf":
        from judge.export_hf import require_pyarrow

        require_pyarrow()
    scores = run.scores_by_trajectory()
    # The split needs every chosen query first: a light pass reads ids and query ids only, then one pass over the
    # trajectories writes both sides. Samples can be far larger than the batch (per-turn samples repeat the
    # history): they are streamed to disk one trajectory at a time, never held together in memory.
    selection = select(run.trajectory_heads(), scores, options)
    per_query = Counter(selection.chosen.values())
    test_queries = split_queries(dict(per_query), options.test_size, options.seed)
    tally = _Tally()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = sample_files(options.format)
    index_path = rundir.safe_child(out_dir, INDEX_FILE)
    test_index_path = index_path.with_name(index_path.name + ".test")
    with ExitStack() as stack:
        index_out = {"train": stack.enter_context(rundir.JsonlWriter(index_path))}
        if options.format == "hf":
            from judge.export_hf import SampleWriter

            sinks: dict[str, Any] = {side: stack.enter_context(SampleWriter(rundir.safe_child(out_dir, files[side])))
                                     for side in SIDES}
        else:
            sinks = {side: stack.enter_context(rundir.JsonlWriter(rundir.safe_child(out_dir, files[side])))
                     for side in SIDES}
        with rundir.JsonlWriter(test_index_path) as index_out["test"]:
            for trajectory in run.trajectories():
                if trajectory.id not in selection.chosen:
                    continue
                side = "test" if trajectory.query_id in test_queries else "train"
                score = scores.get(trajectory.id)
                keeps = options.reasoning_mode != "drop"
                trained = trained_turns(trajectory, score, keeps)
                targets = [m for m in trajectory.messages if m.role == "assistant"]
                tally.empty_turns += sum(1 for m in targets if not has_target(m, keeps))
                tally.untrained_after_issue += sum(1 for m in targets if has_target(m, keeps) and m.turn not in trained)
                tally.trajectories[side] += 1
                tally.queries[side].add(trajectory.query_id)
                tally.empty_tool_results += sum(1 for m in trajectory.messages
                                                if m.role == "tool" and tool_text(m) == EMPTY_TOOL_OUTPUT)
                made = samples(trajectory, trained, options)
                if not made:
                    tally.without_trained_turn += 1
                    continue
                if options.format == "anthropic" and options.reasoning_mode == "keep":
                    tally.unsigned_thinking += sum(
                        1 for s in made for m in s.row["messages"] for b in m["content"]
                        if b.get("type") == "thinking" and "signature" not in b)
                for sample in made:
                    tally.samples[side] += 1
                    tally.trained[side] += len(sample.trained)
                    entry: dict[str, Any] = {"split": side, "line": tally.samples[side], "trajectory_id": trajectory.id,
                                             "query_id": trajectory.query_id}
                    if options.per_turn:
                        entry["turn"] = sample.turn
                    entry["trained_turns"] = sample.trained
                    index_out[side].write(entry)
                    if options.format == "hf":
                        sinks[side].write(sample.row, {"trajectory_id": trajectory.id, "query_id": trajectory.query_id,
                                                       "turn": sample.turn})
                    else:
                        sinks[side].write(sample.row)
        try:
            index_out["train"].append_lines(test_index_path)  # the test rows follow the train rows
        finally:
            test_index_path.unlink()
    if options.format == "hf":
        files = {side: name for side, name in files.items() if tally.samples[side]}  # no rows, no file (see SampleWriter)

    overlap = sorted(tally.queries["train"] & tally.queries["test"])
    if overlap:  # cannot happen by construction; checked because a leak would silently inflate test scores
        for name in [*sample_files(options.format).values(), INDEX_FILE]:
            (out_dir / name).unlink(missing_ok=True)  # never leave a leaking split behind
        raise SplitLeakError(f"queries on both sides of the split: {overlap[:10]}")
    record: dict[str, Any] = {
        "run": str(run.path),
        "format": options.format,
        "per_turn": options.per_turn,
        "reasoning": options.reasoning_mode,
        "seed": options.seed,
        "test_size": options.test_size,
        "filters": {
            "min_score": options.min_score,
            "include_unreleased": options.include_unreleased,
            "exclude_categories": list(options.exclude_categories),
        },
        "files": {**files, "index": INDEX_FILE},
        **{side: {"trajectories": tally.trajectories[side], "queries": len(tally.queries[side]),
                  "samples": tally.samples[side], "trained_turns": tally.trained[side]} for side in SIDES},
        "excluded": {"trajectories": len(selection.excluded), "by_reason": dict(Counter(selection.excluded.values()))},
        "skipped_empty_turns": tally.empty_turns,
        "empty_tool_results_marked": tally.empty_tool_results,
        "untrained_turns_after_issue": tally.untrained_after_issue,
        "trajectories_without_trained_turn": tally.without_trained_turn,
        "query_overlap": overlap,
        "disjoint_by_query": not overlap,
        "test_queries": sorted(test_queries),
    }
    if options.format == "anthropic":
        record["unsigned_thinking_blocks"] = tally.unsigned_thinking
    if options.format == "openai":
        from judge.export_check import check_openai_file

        record["format_check"] = {side: check_openai_file(out_dir / files[side], options.max_tokens).as_dict()
                                  for side in SIDES}
        record["format_check_passed"] = not any(check["errors"] for check in record["format_check"].values())
    if options.format == "hf":
        from judge.export_hf import write_card

        write_card(out_dir / CARD_FILE, record)
    rundir.write_json(rundir.safe_child(out_dir, SPLIT_FILE), record)
    return record
