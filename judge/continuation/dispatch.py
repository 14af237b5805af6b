"""Where a tool call of a continuation goes: a reusable receipt, the user's mapping, the sandbox, or nowhere.

Order: a read-only call whose name + argument hash match a reusable prefix receipt that is still fresh is
``served`` from it; a tool the mapping names is ``mapped``; a sandbox tool is ``executed`` in the working copy
(``refused`` when its path leaves the copy; a shell command may also get a canned receipt from the mapping);
anything else is ``unsupported`` and stops the arm. A state-changing Bash call killed before it ended (its
timeout, a signal) is ``unknown``: what it wrote is not known, so the arm stops. Every call leaves a
:class:`ToolEvent`. Receipts show the working copy under its stable name (:meth:`Sandbox.shown`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Literal

from judge.continuation.mapping import CommandMapping
from judge.continuation.sandbox import HardLinked, OutsideWorkingCopy, Sandbox
from judge.continuation.tools import ArgumentError, normalise
from judge.model import Receipt, ToolCall
from judge.repair.calls import CallSite, is_read_only, rejected_before_running
from judge.repair.tickets import ReusableReceipt, Ticket

Disposition = Literal["executed", "served", "mapped", "refused", "unsupported", "unknown"]

# bash's own words for a program it cannot find ("bash: line 1: lark-cli: command not found").
_NOT_FOUND = re.compile(r"^(?:bash: )?(?:line \d+: )?([^\s:]+): command not found$", re.MULTILINE)


@dataclass
class ToolEvent:
    """What happened to one tool call: recorded in the continuation's metadata and the arm log."""

    turn: int
    call_id: str
    name: str
    disposition: Disposition
    detail: str = ""
    is_error: bool | None = None
    exit_code: int | None = None
    resumed: bool = False  # served from the arm's call ledger by a resumed run (it ran before the kill)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> ToolEvent:
        """The event of :meth:`as_dict` (a ledger row's)."""
        return cls(**{k: v for k, v in row.items() if k in cls.__dataclass_fields__})


@dataclass
class Dispatch:
    """A call's receipt (None when no one could run it) and its event."""

    receipt: Receipt | None
    event: ToolEvent

    @property
    def unknown(self) -> bool:
        """The call may have changed state and was killed before it ended: its outcome is unknown."""
        return self.event.disposition == "unknown"


def changes_state(site: CallSite) -> bool:
    """A prefix call that may have changed the environment: not read-only, and not refused before it ran."""
    return not is_read_only(site.call)[0] and not rejected_before_running(site.receipt)


class ReceiptCache:
    """The ticket's reusable receipts of read-only calls, served while the state they saw still holds.

    A receipt is servable when it succeeded and no state-changing call followed it in the prefix; the whole
    cache goes stale at the first state-changing call of the continuation. A stale read is executed again.
    """

    def __init__(self, ticket: Ticket, sites: list[CallSite]) -> None:
        position = {(s.call.id, s.turn): i for i, s in enumerate(sites)}
        last_write = max((i for i, s in enumerate(sites) if changes_state(s)), default=-1)
        self._by_key: dict[tuple[str, str], ReusableReceipt] = {}
        for receipt in ticket.reusable_receipts:
            at = position.get((receipt.call_id, receipt.turn))
            if receipt.read_only and not receipt.is_error and at is not None and at > last_write:
                self._by_key[(receipt.name, receipt.argument_hash)] = receipt
        self.fresh = True

    def __len__(self) -> int:
        return len(self._by_key) if self.fresh else 0

    def lookup(self, call: ToolCall) -> ReusableReceipt | None:
        if not self.fresh:
            return None
        return self._by_key.get((call.name, call.argument_hash()))

    def state_changed(self) -> None:
        self.fresh = False


class ToolDispatcher:
    """Runs the tool calls of one arm (its sandbox, the user's mapping, the ticket's reusable receipts)."""

    def __init__(self, sandbox: Sandbox, mapping: CommandMapping | None = None, cache: ReceiptCache | None = None) -> None:
        self.sandbox = sandbox
        self.mapping = mapping or CommandMapping()
        self.cache = cache
        self.mapping.install(sandbox)

    async def dispatch(self, call: ToolCall, turn: int, *, serve: bool = True) -> Dispatch:
        """Run (or serve, or map) one call. ``serve=False`` never serves a recorded receipt (replaying writes)."""
        def done(receipt: Receipt | None, disposition: Disposition, detail: str = "") -> Dispatch:
            if receipt is not None:
                receipt = receipt.model_copy(update={"call_id": call.id, "name": call.name,
                                                     "content": self.sandbox.shown(receipt.content)})
                if disposition != "served" and not is_read_only(call)[0] and self.cache is not None:
                    self.cache.state_changed()
            return Dispatch(receipt, ToolEvent(turn, call.id, call.name, disposition, detail,
                                               receipt.is_error if receipt else None, receipt.exit_code if receipt else None))

        recorded = self.cache.lookup(call) if serve and self.cache is not None else None
        if recorded is not None:
            receipt = Receipt(content=recorded.content, is_error=recorded.is_error, exit_code=recorded.exit_code)
            return done(receipt, "served", f"receipt of {recorded.call_id} (T{recorded.turn})")
        rule = self.mapping.tool_rule(call.name)
        if rule is not None:
            receipt = await self.mapping.run_tool(rule, call, self.sandbox)
            return done(receipt, "mapped", f"{rule.source}: {'canned receipt' if rule.receipt else rule.run}")
        try:
            sandbox_call = normalise(call)
        except ArgumentError as error:
            return done(Receipt(content=str(error), is_error=True), "refused", "invalid arguments")
        if sandbox_call is None:
            return done(None, "unsupported", f"no sandbox tool and no mapping for tool {call.name!r}")
        if sandbox_call.kind != "bash":
            path = sandbox_call.args.get("path")
            if path is not None:
                try:
                    self.sandbox.resolve(path, write=sandbox_call.kind in ("write", "edit", "insert"))
                except OutsideWorkingCopy as error:
                    why = "a hard-linked file" if isinstance(error, HardLinked) else "path outside the working copy"
                    return done(Receipt(content=str(error), is_error=True), "refused", why)
            return done(await self.sandbox.run(sandbox_call), "executed")
        command = sandbox_call.args["command"]
        canned = self.mapping.command_rule(command)
        if canned is not None:
            return done(canned.receipt, "mapped", f"{canned.source}: canned receipt for '{' '.join(canned.words)}'")
        external = self.mapping.external_in(command)
        if external:
            return done(None, "unsupported", f"{', '.join(external)} must not run here (external) and no mapping serves this command")
        receipt = await self.sandbox.run(sandbox_call)
        if self.sandbox.last_killed and not is_read_only(call)[0]:
            return done(receipt, "unknown", f"{self.sandbox.last_killed}: what it wrote is unknown")
        used = self.mapping.used_programs(self.sandbox)
        missing = sorted(set(_NOT_FOUND.findall(receipt.content)) - set(used))
        if missing:
            # The original environment had this program; "command not found" here is the sandbox's gap, not
            # the agent's error, so the agent never sees it. The output is kept in the event for the record.
            return done(None, "unsupported", f"{', '.join(missing)} not found in the sandbox and not mapped; "
                                             f"output: {receipt.content[:300]}")
        return done(receipt, "executed", f"mapped programs: {', '.join(used)}" if used else "")
