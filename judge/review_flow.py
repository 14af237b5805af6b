"""The terminal flow of ``judge review RUN``: each trajectory turn by turn with its issues, then prompts.

For each trajectory chosen (:func:`select`), the flow prints the machine's result and a compact transcript with
every issue cluster under the turn it names, then asks, one line each: confirm or reject each cluster, add an
issue the judges missed, decide the release. Every answer is appended to ``overrides.jsonl`` at once (quitting
or a lost terminal keeps what was decided). Input is read line by line from any stream, so a script (or a test)
can drive it through stdin; the end of the input ends the session like ``q``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from judge import rundir
from judge.model import Message
from judge.review import ReviewError, ReviewItem, check_turn
from judge.rundir import RunDir
from judge.schema import CATEGORIES, SEVERITIES, Cluster, Issue, OverrideRow
from judge.terminal import clip, shown

Only = Literal["issues", "unreleased", "released", "all", "stale"]
ONLY_CHOICES: tuple[str, ...] = ("issues", "unreleased", "released", "all", "stale")

Ask = Callable[[str], "str | None"]  # shows a prompt, returns the line typed (None: the input ended)


class Quit(Exception):
    """The reviewer typed q, or the input ended."""


def wanted(item: ReviewItem, only: str) -> bool:
    """Whether ``--only`` takes this trajectory (pure)."""
    if only == "issues":
        return bool(item.clusters)
    if only == "unreleased":
        return not item.machine.release
    if only == "released":
        return item.machine.release
    if only == "stale":
        return bool(item.stale())
    return True


def select(items: Iterable[ReviewItem], only: str, *, again: bool = False) -> Iterator[ReviewItem]:
    """The trajectories to review: those ``only`` takes, without the ones already decided on (unless ``again``, or
    ``only`` is ``stale``: a stale decision is one to make again)."""
    for item in items:
        if not wanted(item, only):
            continue
        current = [row for row, _ in _current(item)]
        if current and not again and only != "stale":
            continue
        yield item


def _current(item: ReviewItem) -> list[tuple[OverrideRow, str | None]]:
    """The latest decisions of a trajectory (undone ones left out), each with why it is stale (None: it applies)."""
    stale = {id(row): why for row, why in item.stale()}
    return [(row, stale.get(id(row))) for row in item.latest().values() if row.kind != "undo"]


def describe_decision(row: OverrideRow) -> str:
    """One line for a decision: ``rejected c2 (alice, 2026-01-02T10:00:00+00:00): reason``."""
    if row.kind == "add-issue" and row.issue is not None:
        turn = f"T{row.issue.turn}" if row.issue.turn is not None else "T?"
        what = f"added {row.target}: {turn} {row.issue.severity} {row.issue.category}: {row.issue.description}"
    elif row.kind == "release-override":
        what = "released" if row.release else "held"
    else:
        what = {"confirm-issue": "confirmed", "reject-issue": "rejected", "undo": "undid"}[row.kind] + f" {row.target}"
    return f"{what} ({row.reviewer}, {row.at})" + (f": {row.reason}" if row.reason else "")


@dataclass
class SessionStats:
    shown: int = 0
    recorded: list[OverrideRow] = field(default_factory=list)
    quit: bool = False


class ReviewSession:
    """One reviewer going through trajectories; ``console`` is a rich Console, ``ask`` reads one answer."""

    def __init__(self, run: RunDir, reviewer: str, console: Any, ask: Ask, *, max_chars: int = 300):
        self.run = run
        self.reviewer = reviewer
        self.console = console
        self.ask_line = ask
        self.max_chars = max_chars
        self.stats = SessionStats()

    # --- input ---

    def ask(self, prompt: str) -> str:
        answer = self.ask_line(prompt)
        if answer is None:
            raise Quit
        return answer.strip()

    def choose(self, prompt: str, choices: dict[str, str], default: str) -> str:
        """A one-letter answer among ``choices`` (letter -> meaning); empty: ``default``; ``q`` quits."""
        keys = "/".join(choices)
        while True:
            answer = self.ask(f"{prompt} [{keys}, ? help] ({default}): ").lower() or default
            if answer == "q":
                raise Quit
            if answer in choices:
                return answer
            self.console.print("  " + ", ".join(f"{k}: {v}" for k, v in choices.items()) + ", q: quit", style="dim")

    def record(self, item: ReviewItem, kind: Any, **fields: Any) -> OverrideRow | None:
        try:
            row = item.decide(kind, reviewer=self.reviewer, **fields)
        except ReviewError as error:
            self.console.print(f"  not recorded: {shown(error)}", style="red")
            return None
        self.run.append_rows(rundir.OVERRIDES, [row])  # at once: quitting keeps every answer given
        self.stats.recorded.append(row)
        self.console.print(f"  recorded: {shown(describe_decision(row))}", style="green")
        return row

    # --- the flow ---

    def review(self, items: Iterable[ReviewItem], total: int | None = None) -> SessionStats:
        """Go through ``items`` until the end or ``q``; returns what was recorded."""
        try:
            for number, item in enumerate(items, start=1):
                self.stats.shown += 1
                self.show(item, number, total)
                self.review_one(item)
        except Quit:
            self.stats.quit = True
        return self.stats

    def review_one(self, item: ReviewItem) -> None:
        decided = {row.target: (row, why) for row, why in _current(item)}
        for cluster in sorted(item.clusters, key=lambda c: (not c.majority, c.turn is None, c.turn or 0, c.cluster)):
            before = decided.get(cluster.cluster)
            note = f" (now: {describe_decision(before[0])}{', stale' if before[1] else ''})" if before else ""
            label = f"{cluster.cluster} ({'majority' if cluster.majority else 'minority'}, {_turn(cluster.turn)} " \
                    f"{cluster.severity} {cluster.category}){note}"
            answer = self.choose(shown(label), {"c": "confirm", "r": "reject", "s": "skip"}, "s")
            if answer == "c":
                self.record(item, "confirm-issue", target=cluster.cluster)
            elif answer == "r":
                reason = self.ask("  why (optional): ")
                self.record(item, "reject-issue", target=cluster.cluster, reason=reason)
        while self.choose("add an issue the judges missed?", {"a": "add", "n": "no"}, "n") == "a":
            issue = self.ask_issue(item)
            if issue is not None:
                self.record(item, "add-issue", issue=issue)
        machine = item.machine
        checks = machine.failed_checks
        said = "released" if machine.release else "held" + (f" (failed checks: {', '.join(checks)})" if checks else "")
        answer = self.choose(f"release? the judges: {said}", {"r": "release", "h": "hold", "s": "skip"}, "s")
        if answer in ("r", "h"):
            release = answer == "r"
            reason = self.ask("  reason (optional when you agree with the judges): ")
            if release != machine.release and not reason:
                what = "releasing over failed checks" if release and checks else "overriding the judges"
                reason = self.ask(f"  {what} needs a reason: ")
            if release != machine.release and not reason:
                self.console.print("  not recorded: no reason given", style="red")
            else:
                self.record(item, "release-override", release=release, reason=reason)

    def ask_issue(self, item: ReviewItem) -> Issue | None:
        """Ask for an added issue's fields; None (nothing recorded) on a bad answer."""
        turn_text = self.ask(f"  turn (1-{item.trajectory.turn_count}, or - if none): ").upper().removeprefix("T")
        category = self.ask(f"  category ({'/'.join(CATEGORIES)}): ").lower()
        severity = self.ask(f"  severity ({'/'.join(SEVERITIES)}): ").lower()
        description = self.ask("  description: ")
        evidence = self.ask("  evidence quoted from the trajectory (optional): ")
        try:
            turn = None if turn_text in ("", "-", "?") else int(turn_text)
            check_turn(item.trajectory, turn)
            # validated: a category or severity outside the vocabulary is a ValidationError (a ValueError)
            return Issue.model_validate({"turn": turn, "category": category, "severity": severity,
                                         "description": description, "evidence": evidence})
        except (ValueError, ReviewError) as error:
            message = str(error).splitlines()
            self.console.print(f"  not recorded: {shown(' '.join(message[:3]))}", style="red")
            return None

    # --- display ---

    def show(self, item: ReviewItem, number: int, total: int | None) -> None:
        console, trajectory, machine = self.console, item.trajectory, item.machine
        where = f"[{number}/{total}] " if total else f"[{number}] "
        console.print()
        console.print(f"[bold]── {where}{shown(trajectory.id, identifier=True)}[/bold]")
        score = machine.score if machine.score is not None else "none"
        released = "[green]released[/green]" if machine.release else "[red]held[/red]"
        console.print(f"judges: score {score}, {released}; {shown(machine.reason)}")
        if machine.failed_checks:
            console.print(f"failed checks: {shown(', '.join(machine.failed_checks))}", style="red")
        for row, why in _current(item):
            console.print(f"decided: {shown(describe_decision(row))}" + (f" [yellow](stale: {shown(why)})[/yellow]" if why else ""))
        console.print(f"[bold]Query:[/bold] {shown(clip(trajectory.query, self.max_chars))}")
        pinned: dict[int, list[Cluster]] = {}
        loose: list[Cluster] = []
        turns = {m.turn for m in trajectory.messages if m.role == "assistant"}
        for cluster in item.clusters:
            if cluster.turn is not None and cluster.turn in turns:
                pinned.setdefault(cluster.turn, []).append(cluster)
            else:
                loose.append(cluster)
        turn = None  # the issues of a turn go after its receipts, before the next turn
        for message in trajectory.messages:
            if message.role == "assistant":
                for cluster in pinned.get(turn, []) if turn is not None else []:
                    self.show_cluster(cluster)
                turn = message.turn
            if message.role == "user" and message.content.strip() == trajectory.query.strip():
                continue  # the query, shown above
            self.show_message(message)
        for cluster in pinned.get(turn, []) if turn is not None else []:
            self.show_cluster(cluster)
        if loose:
            console.print("\n[bold]issues without a turn in the trajectory[/bold]")
            for cluster in loose:
                self.show_cluster(cluster)
        console.print()

    def show_message(self, message: Message) -> None:
        console, limit = self.console, self.max_chars
        if message.role == "assistant":
            text = " ".join(message.content.split())
            console.print(f"[bold cyan]T{message.turn}[/bold cyan] {shown(clip(text, limit))}")
            for call in message.tool_calls:
                arguments = call.raw_arguments if call.arguments_error else json.dumps(call.arguments, ensure_ascii=False, default=str)
                console.print(f"   [magenta]-> {shown(call.name, identifier=True)}[/magenta] {shown(clip(arguments, limit))}")
        elif message.role == "tool" and message.receipt is not None:
            receipt = message.receipt
            failed = receipt.is_error or receipt.exit_code not in (None, 0)
            status = ("ERROR" if receipt.is_error else "ok") + (f", exit {receipt.exit_code}" if receipt.exit_code is not None else "")
            body = " ".join(receipt.content.split())
            style = "red" if failed else "green"
            console.print(f"   [{style}]<- {shown(status)}[/{style}] {shown(clip(body, limit))}")
        elif message.role == "user":
            console.print(f"[bold]user[/bold] {shown(clip(' '.join(message.content.split()), limit))}")

    def show_cluster(self, cluster: Cluster) -> None:
        flag = "[bold red]⚑ majority[/bold red]" if cluster.majority else "[dim]○ minority[/dim]"
        tag = f" · {shown(cluster.tag)}" if cluster.tag else ""
        self.console.print(f"   {flag} [bold]{cluster.cluster}[/bold] {_turn(cluster.turn)} {cluster.severity} "
                           f"{cluster.category}{tag} · {cluster.votes}/{cluster.panel_size} votes")
        self.console.print(f"     {shown(clip(cluster.description, self.max_chars))}")
        evidence = next((m.issue.evidence for m in cluster.members if m.issue.evidence), "")
        if evidence:
            self.console.print(f"     evidence: “{shown(clip(evidence, self.max_chars))}”", style="dim")


def _turn(turn: int | None) -> str:
    return f"T{turn}" if turn is not None else "T?"


__all__ = ["ONLY_CHOICES", "Quit", "ReviewSession", "SessionStats", "describe_decision", "select", "wanted"]
