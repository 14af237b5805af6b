"""Shared test set-up: a socket guard for every test, and fake LLM providers.

- **Socket guard** (autouse, whole session): any connection or name lookup that would leave this machine fails
  the test. Loopback (127.0.0.0/8, ::1, ``localhost``) is allowed: the fake LLM servers of
  judge.testing.servers and the browser tests' beacon server listen there. A blocked attempt raises
  :class:`BlockedConnection` at once (before any DNS query or packet), and is also recorded, so a test whose
  code swallows the exception (a provider error path, a fallback) still fails at teardown. Subprocesses that
  tests start are not covered.
- **fake_providers**: registers the provider ``fake`` (:class:`judge.testing.fake_provider.FakeProviders`):
  queued :class:`judge.testing.fake_provider.FakeProvider` objects, one per spec, so a panel, a judge or a
  repair run built from specs (``fake:gpt-4o``) talks to scripted answers instead of an SDK.

- **batch**: a JSON Lines file of three synthetic trajectories (:func:`judge.testing.synthetic.synthetic_batch`),
  the input of the CLI and provider-fault tests; a module's own ``batch`` fixture overrides it.

- **Shared cache** (autouse): each test gets its own empty cache folder (``TRAJUDGE_CACHE_DIR``), so no test
  reads or writes the user's cache, and no test's answers save another test its calls.

Builders of trajectories, messages, issues, verdicts and clusters are in :mod:`judge.testing.builders`; the
fixture modules under tests/fixtures import as ``fixtures.<folder>.<module>`` (pytest ``pythonpath``).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge.testing.fake_provider import FakeProviders
from judge.testing.synthetic import synthetic_batch

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


class BlockedConnection(RuntimeError):
    """A test tried to reach a host other than this machine. Not an OSError: it must not pass for a network
    failure that the code under test is built to survive."""


def is_loopback(host: Any) -> bool:
    """Whether ``host`` (an address literal or a name) is this machine, decided without any lookup."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%", 1)[0].rstrip(".").lower()  # [::1], fe80::1%eth0, "localhost."
    if name in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False  # a host name: allowing it would need a DNS query
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


def is_address_literal(host: Any) -> bool:
    try:
        ipaddress.ip_address(str(host).strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


class SocketGuard:
    """Wraps socket connect/connect_ex/sendto and getaddrinfo; ``blocked`` lists what was refused."""

    Blocked = BlockedConnection  # for tests that expect a refusal (conftest is not imported by test modules)
    is_loopback = staticmethod(is_loopback)

    def __init__(self) -> None:
        self.blocked: list[str] = []

    def refuse(self, what: str) -> BlockedConnection:
        self.blocked.append(what)
        return BlockedConnection(f"socket guard: {what} refused - tests may only reach loopback (127.0.0.1, ::1, localhost)")

    def check_address(self, sock: socket.socket, address: Any, action: str) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return  # Unix sockets, socketpairs and netlink stay on this machine
        host = address[0] if isinstance(address, tuple) and address else address
        if not is_loopback(host):
            raise self.refuse(f"{action} to {address!r}")

    def take(self) -> list[str]:
        """The refusals since the last call (a test that expects refusals consumes them)."""
        taken, self.blocked = self.blocked, []
        return taken

    def install(self, patch: pytest.MonkeyPatch) -> None:
        guard = self
        real_connect, real_connect_ex, real_sendto = socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto
        real_getaddrinfo = socket.getaddrinfo

        def connect(sock: socket.socket, address: Any) -> None:
            guard.check_address(sock, address, "connect")
            return real_connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            guard.check_address(sock, address, "connect")
            return real_connect_ex(sock, address)

        def sendto(sock: socket.socket, data: Any, *args: Any) -> int:
            guard.check_address(sock, args[-1], "sendto")  # sendto(data, address) or sendto(data, flags, address)
            return real_sendto(sock, data, *args)  # type: ignore[arg-type]

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host is not None and not is_loopback(host) and not is_address_literal(host):
                raise guard.refuse(f"name lookup of {host!r}")
            return real_getaddrinfo(host, *args, **kwargs)

        patch.setattr(socket.socket, "connect", connect)
        patch.setattr(socket.socket, "connect_ex", connect_ex)
        patch.setattr(socket.socket, "sendto", sendto)
        patch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture(scope="session", autouse=True)
def socket_guard() -> Iterator[SocketGuard]:
    """The session's guard (installed before any other fixture); request it to inspect refusals."""
    guard = SocketGuard()
    with pytest.MonkeyPatch.context() as patch:
        guard.install(patch)
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
