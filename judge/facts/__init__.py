"""The fact ledger: one reading of a trajectory that every stage uses (DESIGN.md, style 13).

Built once per trajectory object (:func:`ledger_of`), it holds what the trajectory did and what each receipt
shows, as facts (documented in docs/architecture.md, "The fact ledger"):

- **actions** (:class:`Action`): each tool call with its receipt, its outcome (``ok`` / ``error`` /
  ``environment`` / ``missing``) and its *status*, read from the exit code and the content: ``ok``, ``failed``,
  ``partial`` (failed, but the receipt shows some effect), ``unknown`` (timeout, killed, no receipt), ``noop``
  (success that created or changed nothing), ``running`` (still running / queued);
- **values** (:class:`Value`): ids, numbers, paths, names and counts (incl. the length of a listed collection),
  each with where it first appears (query, receipt, argument, agent text) and every later use;
- **artifact versions** (:class:`Version`): each successful write of a file makes a new version; each check is
  bound to the versions it ran on;
- **claims** (:class:`Claim`): assistant sentences that assert state in any tense, their values, and the
  receipts that support them (or none);
- **dependencies** (:class:`Dependency`): what each action rests on (resource state, returned values, control
  conditions, text), from the value and artifact flows;
- **recovery** (:class:`Recovery`): how the agent got past a failed call (redone, its state shown by a later
  success, or honestly reported), or that it did not.

The vocabularies (claim verbs, running and no-op phrases) are data in ``rubrics/rules-v2.yaml``. The rules judge
(:mod:`judge.rules`), the release gate and the offline editor (:mod:`judge.repair`) import this package; it
imports neither.
"""

from __future__ import annotations

from judge.facts.analysis import Action, Analysis, Sentence, Speech, analyse, analysis_of
from judge.facts.config import RulesConfig
from judge.facts.ledger import Claim, Dependency, Ledger, Recovery, Status, Value, Version, ledger_of

__all__ = [
    "Action", "Analysis", "Claim", "Dependency", "Ledger", "Recovery", "RulesConfig", "Sentence", "Speech", "Status",
    "Value", "Version", "analyse", "analysis_of", "ledger_of",
]
