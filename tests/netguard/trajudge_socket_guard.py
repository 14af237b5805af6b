"""The tests' socket guard: any connection or name lookup that would leave this machine is refused.

One implementation for both places it runs: tests/conftest.py installs it in the pytest process (undone at the
end of the session), and ``sitecustomize.py`` beside this file installs it at the start of every Python process a
test starts (conftest puts this folder first on ``PYTHONPATH`` and names a log file in :data:`LOG_ENV`). A refusal
raises :class:`BlockedConnection` at once, before any DNS query or packet, and is recorded: in the pytest
process in :attr:`SocketGuard.blocked`, in a child process as a line of the log, which the test that started it
reads at its teardown. So code that swallows the exception (a provider's error path, a fallback) still fails the
test, in a child process too.

Loopback (127.0.0.0/8, ::1, ``localhost``) is allowed: the fake LLM servers of judge.testing.servers and the
browser tests' beacon server listen there. Unix sockets, socketpairs and netlink are not checked. Not covered:
processes that are not Python (Chromium, Ray's raylet and GCS), Ray's dashboard head (sitecustomize.py says why),
and a child started with ``-I``, ``-S`` or ``-E`` or without the inherited ``PYTHONPATH``.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

LOG_ENV = "TRAJUDGE_SOCKET_GUARD_LOG"
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
    """Wraps socket connect/connect_ex/sendto and getaddrinfo; ``blocked`` lists what was refused, and with
    ``log`` each refusal is also appended to that file (one line, naming the process)."""

    Blocked = BlockedConnection  # for tests that expect a refusal (conftest is not imported by test modules)
    is_loopback = staticmethod(is_loopback)

    def __init__(self, log: str | None = None) -> None:
        self.blocked: list[str] = []
        self.log = log
        self.children_log: str | None = None
        self._children_read = 0

    def refuse(self, what: str) -> BlockedConnection:
        self.blocked.append(what)
        if self.log:
            line = f"pid {os.getpid()} ({' '.join(sys.argv)[:200]}): {what}\n"
            with open(self.log, "a", encoding="utf-8") as log:  # one short append: whole lines from any process
                log.write(line)
        return BlockedConnection(f"socket guard: {what} refused - tests may only reach loopback (127.0.0.1, ::1, localhost)")

    def check_address(self, sock: socket.socket, address: Any, action: str) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return  # Unix sockets, socketpairs and netlink stay on this machine
        host = address[0] if isinstance(address, tuple) and address else address
        if not is_loopback(host):
            raise self.refuse(f"{action} to {address!r}")

    def watch_children(self, log: str) -> None:
        """:meth:`take` also returns what child processes append to ``log`` (the file their guards are given)."""
        self.children_log, self._children_read = log, 0

    def take(self) -> list[str]:
        """The refusals since the last call, this process's and its children's (a test that expects refusals
        consumes them)."""
        taken, self.blocked = self.blocked, []
        if self.children_log is not None:
            lines, self._children_read = read_log(self.children_log, self._children_read)
            taken += [f"in a child process, {line}" for line in lines]
        return taken

    def install(self, setattr_: Callable[[Any, str, Any], None] = setattr) -> None:
        """Wrap the socket functions; ``setattr_``: how (a MonkeyPatch's, to undo it; the builtin in a child)."""
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

        setattr_(socket.socket, "connect", connect)
        setattr_(socket.socket, "connect_ex", connect_ex)
        setattr_(socket.socket, "sendto", sendto)
        setattr_(socket, "getaddrinfo", getaddrinfo)


def read_log(path: str, offset: int) -> tuple[list[str], int]:
    """The lines child processes appended to the log since ``offset``, and the new offset."""
    try:
        with open(path, "rb") as log:
            log.seek(offset)
            data = log.read()
    except FileNotFoundError:
        return [], offset
    complete = data[: data.rfind(b"\n") + 1]  # a line being written is read at the next check
    return complete.decode("utf-8", "replace").splitlines(), offset + len(complete)


def child_pythonpath(*paths: Any) -> str:
    """``PYTHONPATH`` for a child process a test starts: ``paths`` first, then the inherited one, which puts this
    folder (and so the guard) on the child's path."""
    return os.pathsep.join(filter(None, [*map(str, paths), os.environ.get("PYTHONPATH")]))
