"""Shared test set-up: a socket guard for every test, and fake LLM providers.

- **Socket guard** (autouse, whole session): any connection or name lookup that would leave this machine fails
  the test. Loopback (127.0.0.0/8, ::1, ``localhost``) is allowed: the fake LLM servers of
  judge.testing.servers and the browser tests' beacon server listen there. A blocked attempt raises
  :class:`BlockedConnection` at once (before any DNS query or packet), and is also recorded, so a test whose
  code swallows the exception (a provider error path, a fallback) still fails at teardown. The Python processes
  that tests start are guarded too, through tests/netguard/sitecustomize.py (see
  tests/netguard/trajudge_socket_guard.py; a test that sets ``PYTHONPATH`` for a child keeps the inherited one
  with ``child_pythonpath``). Not guarded: processes that are not Python (Chromium, Ray's raylet and GCS), Ray's
  dashboard head (its start-up asks the cloud metadata endpoints), and a child started with ``-I``, ``-S`` or
  ``-E`` or without the inherited ``PYTHONPATH``.
- **fake_providers**: registers the provider ``fake`` (:class:`judge.testing.fake_provider.FakeProviders`):
  queued :class:`judge.testing.fake_provider.FakeProvider` objects, one per spec, so a panel, a judge or a
  repair run built from specs (``fake:gpt-4o``) talks to scripted answers instead of an SDK.

- **batch**: a JSON Lines file of three synthetic trajectories (:func:`judge.testing.synthetic.synthetic_batch`),
  the input of the CLI and provider-fault tests; a module's own ``batch`` fixture overrides it.

- **Shared cache** (autouse): each test gets its own empty cache folder (``TRAJUDGE_CACHE_DIR``), so no test
  reads or writes the user's cache, and no test's answers save another test its calls.

- **detectors**: the editor's text-reference detectors (:func:`judge.repair.textref.get_detectors`), shared by
  the session (the embedding model loads once per process).

- **Secrets** (autouse): the secrets a test registered (judge.secrets) are forgotten after it, so
  that one test's key is not scrubbed from another's output.

Builders of trajectories, messages, issues, verdicts and clusters are in :mod:`judge.testing.builders`; the
fixture modules under tests/fixtures import as ``fixtures.<folder>.<module>`` (pytest ``pythonpath``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from judge.secrets import forget_secrets
from judge.testing.fake_provider import FakeProviders
from judge.testing.synthetic import synthetic_batch

if TYPE_CHECKING:
    from judge.repair.textref import Detectors

_GUARD_DIR = Path(__file__).resolve().parent / "netguard"
if _GUARD_DIR.is_dir() and str(_GUARD_DIR) not in sys.path:  # a copy of this file elsewhere has it on PYTHONPATH
    sys.path.insert(0, str(_GUARD_DIR))

import trajudge_socket_guard  # noqa: E402  (tests/netguard: also what every child process imports at start-up)
from trajudge_socket_guard import SocketGuard  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def socket_guard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SocketGuard]:
    """The session's guard (installed before any other fixture); request it to inspect refusals. Python processes
    that tests start get it too: its folder goes first on ``PYTHONPATH`` (its ``sitecustomize`` installs it) and
    their refusals go to a log that each test's teardown reads."""
    guard = SocketGuard()
    log = str(tmp_path_factory.mktemp("socket-guard") / "refused.log")
    guard.watch_children(log)
    folder = str(Path(trajudge_socket_guard.__file__).resolve().parent)
    with pytest.MonkeyPatch.context() as patch:
        guard.install(patch.setattr)
        patch.setenv(trajudge_socket_guard.LOG_ENV, log)
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [folder, os.environ.get("PYTHONPATH")])))
        yield guard


@pytest.fixture(autouse=True)
def _no_connection_left_this_machine(socket_guard: SocketGuard) -> Iterator[None]:
    yield  # a refusal in a module or session fixture's set-up is reported by the test it was set up for
    refused = socket_guard.take()
    if refused:
        pytest.fail("the test tried to reach the network: " + "; ".join(refused), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _session_shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Module and session fixtures (which run before a test's own fixtures) never use the user's cache either."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRAJUDGE_CACHE_DIR", str(tmp_path_factory.mktemp("session-shared-cache")))
        yield


@pytest.fixture(autouse=True)
def _own_shared_cache(_session_shared_cache: None, tmp_path_factory: pytest.TempPathFactory,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAJUDGE_CACHE_DIR", str(tmp_path_factory.mktemp("shared-cache")))


@pytest.fixture(autouse=True)
def _forget_secrets() -> Iterator[None]:
    yield
    forget_secrets()


@pytest.fixture
def fake_providers() -> Iterator[FakeProviders]:
    """Register the provider ``fake``: every spec ``fake:MODEL`` is a queued :class:`FakeProvider` (no SDK, no
    HTTP, no key needed), reached through the provider registry like any other provider."""
    with FakeProviders().registered() as providers:
        yield providers


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    """Three synthetic trajectories as a JSON Lines file (the input the CLI and provider-fault tests score)."""
    trajectories, _ = synthetic_batch(3)
    path = tmp_path / "batch.jsonl"
    path.write_text("".join(t.to_json_line() + "\n" for t in trajectories))
    return path


@pytest.fixture(scope="session")
def detectors() -> Detectors:
    """The editor's text-reference detectors, one set for the session."""
    from judge.repair.textref import get_detectors  # imported here: most test modules never load the editor

    return get_detectors()
