"""SIMULATED judge server: an OpenAI-compatible endpoint that imitates a three-judge panel. NOT A MODEL.

It exists for benchmarks and demos on machines that cannot reach an LLM API. It is given a truth table
(per trajectory, identified by its query text and turn count: the defects it contains) and answers each judge request
with those defects, as a noisy judge would: wording varies by "judge" (the request's seed picks one of
three personas), some defects are missed, some false alarms are added, the turn is sometimes off by one,
and a configurable share of requests fail (HTTP 500, 429 with Retry-After, or malformed content).
Randomness is seeded by (query, seed), so a rerun gives the same answers.

It speaks the prompt it is sent: to judge-v2 it also names the critical step (the earliest severe defect of
the truth row) and, when the trajectory comes in windows, reports only the defects of the turns a window
reviews (issues without a turn in the last window only). False alarms come with an invented quote, so the
evidence check flags them (``evidence_verified: false``).

Every verdict's reasoning starts with "[SIMULATED JUDGE]" so its output can never be mistaken for a real
model's. Priced with made-up numbers (``openai-compatible:simjudge*`` in rubrics/prices.yaml).

Run it: ``python -m judge.testing.simjudge --port 8765 --truth truth.jsonl --latency 0.2`` then
``judge score INPUT --out DIR --judge openai-compatible:simjudge@http://127.0.0.1:8765/v1``.
The truth file is JSON Lines: ``{"query": ..., "turn_count": n, "issues": [{"turn", "category", "severity", "description",
"tag"}], "efficiency": "high"}``; :func:`truth_from_verdicts` derives one from a run (e.g. of the rules judge).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judge.testing.servers import FakeLLMServer, Scripted

SIMULATION_LABEL = "[SIMULATED JUDGE]"
SIMULATED_MODEL = "simjudge (SIMULATION, not a model)"  # the model name every verdict row will carry

_PHRASES = (
    ("{description}", "The trajectory shows this at T{turn}."),
    ("At T{turn} the agent went wrong: {lower}", "Evidence is in the receipts of that turn."),
    ("Problem ({tag}): {lower}", "This is what a careful reviewer would flag."),
)
# (category, severity, description, tag, an invented quote that the evidence check will not find)
_FALSE_ALARMS = (
    ("semantic", "minor", "The agent did not explain why it chose this approach.", "missing-rationale",
     "I'll just try something and see."),
    ("code", "minor", "An unnecessary command was run to list the directory again.", "redundant-call", "$ ls -la  # again"),
    ("semantic", "minor", "The final message does not summarise the change.", "weak-summary", "Done, see above."),
)


@dataclass
class SimConfig:
    """Noise of the simulated panel; all rates are probabilities per request or per defect."""

    latency_s: float = 0.2
    miss_rate: float = 0.1
    false_alarm_rate: float = 0.1
    turn_jitter_rate: float = 0.1
    error_rate: float = 0.0  # HTTP 500
    rate_limit_rate: float = 0.0  # HTTP 429 with Retry-After
    malformed_rate: float = 0.0  # content that is not a valid verdict


def load_truth(path: Path | str) -> dict[str, dict[str, Any]]:
    """Truth rows keyed by query text; errors name the file and line."""
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row.get("query"), str):
                raise KeyError("query")
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{path}:{number}: not a truth row ({error})") from error
        rows.append(row)
    return _index(rows)


def _index(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Rows keyed by (query, turn_count) - continuations of one query differ in length - and by query alone."""
    table: dict[str, dict[str, Any]] = {}
    for row in rows:
        table.setdefault(_key(row["query"], None), row)
        if row.get("turn_count"):
            table[_key(row["query"], int(row["turn_count"]))] = row
    return table


def _key(query: str, turns: int | None) -> str:
    return f"{_norm(query)}\x00{turns if turns else ''}"


def truth_from_verdicts(run_dir: Path | str) -> list[dict[str, Any]]:
    """Truth rows from a run directory's trajectories + verdicts (e.g. a rules-judge run)."""
    from judge.rundir import RunDir

    run = RunDir(run_dir)
    verdicts = run.verdicts_by_trajectory()
    rows = []
    for trajectory in run.trajectories():
        passes = [v for v in verdicts.get(trajectory.id, []) if v.status == "ok"]
        issues = [i.model_dump() for i in passes[0].issues] if passes else []
        rows.append({"query": trajectory.query, "turn_count": trajectory.turn_count, "issues": issues,
                     "efficiency": passes[0].efficiency if passes else "medium"})
    return rows


class SimulatedJudge:
    """The responder of the simulated server: request -> :class:`Scripted` response. A SIMULATION."""

    def __init__(self, truth: dict[str, dict[str, Any]] | list[dict[str, Any]], config: SimConfig | None = None):
        self.truth = truth if isinstance(truth, dict) else _index(truth)
        self.config = config or SimConfig()
        # Matching a request imports judge.prompting (and the trajectory models): ~0.15 s that would otherwise fall
        # on the first request, while the server's loop holds every other request of the first wave - a cold start
        # of the simulator that a benchmark would charge to the client (an empty truth table never loads it here).
        _norm("")
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> Scripted:
        # The data sits in the first user message (the system message also mentions the tags, in prose).
        prompt = next((_text(m.get("content")) for m in request.get("messages", []) if m.get("role") == "user"), "")
        query = _extract(prompt, "query")
        turns = int(_extract_attr(prompt, "turns") or 0)
        review = _review(prompt)  # judge-v2 only: the turns this call reviews
        seed = int(request.get("seed") or 0)
        corrective = sum(1 for m in request.get("messages", []) if m.get("role") == "assistant")
        windowed = review is not None and review != (1, turns)
        key = f"{query}\x00{seed}\x00{corrective}" + (f"\x00{review}" if windowed else "")  # a window draws its own
        with self._lock:
            self._seen[key] = attempt = self._seen.get(key, 0) + 1
        # Failures are drawn per attempt (a retry can succeed); the verdict per request key (stable on retry).
        roll = _rng(f"{key}\x00attempt{attempt}").random()
        rng = _rng(key)
        delay = self.config.latency_s
        if roll < self.config.error_rate:
            return Scripted(status=500, error_message="simulated server error", delay_s=delay)
        roll -= self.config.error_rate
        if roll < self.config.rate_limit_rate:
            return Scripted(status=429, headers={"retry-after": "0.05"}, error_message="simulated rate limit", delay_s=delay / 4)
        roll -= self.config.rate_limit_rate
        if roll < self.config.malformed_rate and corrective == 0:
            return Scripted(content=f"{SIMULATION_LABEL} Here is my verdict: the agent did fine", delay_s=delay)
        row = self.truth.get(_key(query, turns)) or self.truth.get(_key(query, None), {})
        turn_count = turns or int(row.get("turn_count") or 1)
        return Scripted(content=self.verdict(row, seed % 3, turn_count, rng, review=review,
                                             recovered=_asks_recovered(request)), delay_s=delay)

    def verdict(self, row: dict[str, Any], persona: int, turn_count: int, rng: random.Random,
                review: tuple[int, int] | None = None, recovered: bool = False) -> dict[str, Any]:
        """One simulated judge's verdict on a trajectory with the known defects of ``row``.

        ``review`` (judge-v2): the turns the request reviews; the answer then has ``critical_turn`` and keeps to
        those turns. None: a judge-v1 answer. ``recovered`` (judge-v2.1 asks for it): each issue says whether an
        environment fault was recovered, as the truth row says.
        """
        low, high = review or (1, turn_count)
        last = high >= turn_count
        issues = []
        for defect in row.get("issues", []):
            turn = defect.get("turn")
            if review and (turn is None and not last or turn is not None and not low <= turn <= high):
                continue  # another window's defect
            if rng.random() < self.config.miss_rate:
                continue
            if turn is not None and rng.random() < self.config.turn_jitter_rate:
                turn = min(high, max(low, turn + rng.choice((-1, 1))))
            head, tail = _PHRASES[persona]
            description = defect.get("description") or "A defect."
            fields = {"description": description, "lower": description[:1].lower() + description[1:],
                      "turn": turn if turn is not None else "?", "tag": defect.get("tag") or "issue"}
            issues.append({"turn": turn, "description": f"{head.format(**fields)} {tail.format(**fields)}", "evidence": defect.get("evidence") or "",
                           "category": defect.get("category", "semantic"), "severity": defect.get("severity", "minor"),
                           "tag": defect.get("tag")})
            if recovered:
                issues[-1]["recovered"] = defect.get("recovered") if issues[-1]["category"] == "environment" else None
        if rng.random() < self.config.false_alarm_rate and turn_count:
            category, severity, description, tag, quote = rng.choice(_FALSE_ALARMS)
            issues.append({"turn": rng.randint(low, high), "description": description, "evidence": quote,
                           "category": category, "severity": severity, "tag": tag})
            if recovered:
                issues[-1]["recovered"] = None
        efficiency = row.get("efficiency") or "medium"
        if rng.random() < 0.15:
            efficiency = rng.choice(["high", "medium", "low"])
        answer: dict[str, Any] = {"reasoning": f"{SIMULATED_NOTE} persona {persona + 1}; {len(issues)} issue(s).",
                                  "issues": issues}
        if review:
            severe = [i["turn"] for i in issues if i["severity"] == "severe" and i["turn"] is not None]
            answer["critical_turn"] = min(severe) if severe else None
        answer["efficiency"] = efficiency
        return answer


def _asks_recovered(request: dict[str, Any]) -> bool:
    """Whether the request's forced schema has the judge-v2.1 issue field ``recovered``."""
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    items = ((schema.get("properties") or {}).get("issues") or {}).get("items") or {}
    return "recovered" in (items.get("properties") or {})


SIMULATED_NOTE = f"{SIMULATION_LABEL} This verdict was produced by a simulation, not a language model:"


def simulated_server(truth: dict[str, dict[str, Any]] | list[dict[str, Any]], config: SimConfig | None = None,
                     port: int = 0) -> FakeLLMServer:
    """An OpenAI-compatible server (not started) answering as the SIMULATED judge panel."""
    return FakeLLMServer("openai", responder=SimulatedJudge(truth, config), port=port, model="simjudge",
                         response_model=SIMULATED_MODEL)


def _rng(key: str) -> random.Random:
    return random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:12], 16))


def _norm(text: str) -> str:
    # The judge prompt carries the neutralised query; compare on the neutralised, whitespace-trimmed form.
    from judge.prompting import neutralise

    return neutralise(text).strip()


def _extract(prompt: str, tag: str) -> str:
    found = re.search(rf"<{tag}[^>]*>\n?(.*?)\n?</{tag}>", prompt, re.DOTALL)
    return found.group(1) if found else ""


def _extract_attr(prompt: str, name: str) -> str | None:
    found = re.search(rf'<trajectory[^>]*\s{name}="(\d+)"[^>]*>', prompt)
    return found.group(1) if found else None


def _review(prompt: str) -> tuple[int, int] | None:
    """The turns a judge-v2 request reviews (``review="T4-T9"``); None for judge-v1 requests."""
    found = re.search(r'<trajectory[^>]*\sreview="T(\d+)-T(\d+)"', prompt)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _text(content: Any) -> str:
    """Message content as text: a string, or Anthropic-style content blocks."""
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")) for block in content if isinstance(block, dict))
    return str(content or "")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m judge.testing.simjudge",
                                     description="SIMULATED judge server (OpenAI-compatible). Not a model.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--truth", type=Path,
                        help="truth table (JSON Lines), or a run directory whose verdicts become the truth; "
                             "without it every trajectory looks clean")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--miss-rate", type=float, default=0.1)
    parser.add_argument("--false-alarm-rate", type=float, default=0.1)
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--rate-limit-rate", type=float, default=0.0)
    parser.add_argument("--malformed-rate", type=float, default=0.0)
    args = parser.parse_args(argv)
    if args.truth is None:
        truth: dict[str, dict[str, Any]] | list[dict[str, Any]] = {}
    elif args.truth.is_dir():
        truth = truth_from_verdicts(args.truth)
    else:
        truth = load_truth(args.truth)
    config = SimConfig(latency_s=args.latency, miss_rate=args.miss_rate, false_alarm_rate=args.false_alarm_rate,
                       error_rate=args.error_rate, rate_limit_rate=args.rate_limit_rate, malformed_rate=args.malformed_rate)
    server = simulated_server(truth, config, port=args.port)
    server.start()
    print(f"SIMULATED judge server (not a model) on {server.base_url} - {len(truth)} truth rows; "
          f"use --judge openai-compatible:simjudge@{server.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
