"""Running continuation tickets (docs/continuation-tickets.md): the provider-independent harness.

- :mod:`~judge.continuation.sandbox`: one arm's working copy with Bash, Read, Write, Edit (not a security
  boundary: run it in a container for untrusted agents);
- :mod:`~judge.continuation.confine`: how tool processes run: bubblewrap (``--sandbox bwrap``) or unconfined;
- :mod:`~judge.continuation.tools`: tool names, aliases used by real logs, schemas;
- :mod:`~judge.continuation.mapping`: the user's mapping for tools the sandbox cannot run;
- :mod:`~judge.continuation.dispatch`: where each call goes (reused receipt, mapping, sandbox, or a stop);
- :mod:`~judge.continuation.restore`: the checkpoint's conversation and environment;
- :mod:`~judge.continuation.agent`: the :class:`Agent` interface and :class:`ScriptedAgent`;
- :mod:`~judge.continuation.model_agent`: :class:`ProviderAgent`, any registered LLM provider as the agent, on the
  judges' call path (retries, limits, the run's budget, recorded attempts, kept answers); :func:`make_agent`;
- :mod:`~judge.continuation.ledger`: the write-ahead call ledger (a killed run resumes) and the appended output;
- :mod:`~judge.continuation.correction`: runtime correction (a code/argument error -> teacher guidance -> rewind);
- :mod:`~judge.continuation.runner`: the run loop, budgets, output records.
"""

from judge.continuation.agent import Agent, AgentError, AgentReply, AgentRequest, ScriptedAgent
from judge.continuation.confine import Confinement, SandboxUnavailable
from judge.continuation.correction import Correction, TemplateTeacher, make_teacher
from judge.continuation.dispatch import ReceiptCache, ToolDispatcher, ToolEvent
from judge.continuation.mapping import CommandMapping, MappingError
from judge.continuation.model_agent import ProviderAgent, make_agent
from judge.continuation.restore import Environments, EnvironmentSource, Stop, StopReason
from judge.continuation.runner import (
    ArmResult,
    Budget,
    ContinueOptions,
    arm_log_path,
    continue_tickets,
    load_tickets,
    run_ticket,
    run_tickets,
    write_results,
)
from judge.continuation.sandbox import Limits, Sandbox
from judge.continuation.tools import SandboxCall, normalise

__all__ = [
    "Agent", "AgentError", "AgentReply", "AgentRequest", "ArmResult", "Budget", "CommandMapping", "Confinement", "ContinueOptions",
    "Correction", "TemplateTeacher", "make_teacher",
    "EnvironmentSource", "Environments", "Limits", "MappingError", "ReceiptCache", "Sandbox", "SandboxCall", "SandboxUnavailable",
    "ProviderAgent", "ScriptedAgent", "Stop", "StopReason", "ToolDispatcher", "ToolEvent", "arm_log_path", "continue_tickets", "make_agent",
    "load_tickets", "normalise", "run_ticket", "run_tickets", "write_results",
]
