"""Classify exceptions of the official SDKs (openai, anthropic) into typed provider errors.

Both SDKs share one shape (they are generated from the same toolkit): ``APIStatusError`` with
``status_code`` and ``response``, ``APITimeoutError``, ``APIConnectionError``, ``APIResponseValidationError``.
The error text is the server's message only; headers (and so keys) are never included.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from types import ModuleType

import httpx

from judge.providers.errors import (
    BadOutput,
    ConnectionFailed,
    ProviderError,
    ProviderTimeout,
    ServerError,
    classify_status,
    parse_retry_after,
)
from judge.secrets import scrub_error


def classify_sdk_error(sdk: ModuleType, error: BaseException) -> ProviderError:
    """Return the typed error for an exception raised by ``sdk`` (the imported openai or anthropic module).

    The message is scrubbed of every registered secret (:func:`judge.secrets.scrub`): some servers
    echo the key they rejected, and a transport's message may hold the URL with its query.
    """
    return scrub_error(_classify(sdk, error))


# Failures while opening the connection, before any byte of the request is sent, by exception class name:
# the SDKs wrap them (openai's aiohttp transport even as a timeout), and httpx may come as a fork (httpx2).
_CONNECT_FAILURES = frozenset({"ConnectError", "ConnectTimeout", "ClientConnectorError", "ClientConnectorDNSError",
                               "ClientConnectorCertificateError", "ClientConnectorSSLError", "ClientProxyConnectionError"})


def connect_failure(error: BaseException) -> BaseException | None:
    """The exception in ``error``'s chain showing the connection was never made, if there is one."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ConnectionRefusedError, socket.gaierror, ssl.SSLCertVerificationError)) \
                or type(current).__name__ in _CONNECT_FAILURES:
            return current
        current = current.__cause__ or current.__context__
    return None


def _classify(sdk: ModuleType, error: BaseException) -> ProviderError:
    if isinstance(error, ProviderError):
        return error
    refused = connect_failure(error)
    if refused is not None:
        root = _root(refused)
        return ConnectionFailed(f"no connection to the server ({type(root).__name__}: {_short(root)})")
    if isinstance(error, (sdk.APITimeoutError, httpx.TimeoutException, asyncio.TimeoutError, TimeoutError)):
        return ProviderTimeout("the request timed out")
    if isinstance(error, sdk.APIResponseValidationError):
        return BadOutput(f"the server's response did not match the API shape ({_short(error)})")
    if isinstance(error, sdk.APIStatusError):
        response = error.response
        retry_after = _retry_after(response)
        return classify_status(error.status_code, _server_message(error), retry_after)
    if isinstance(error, sdk.APIConnectionError):
        return ServerError(f"could not reach the server ({type(error.__cause__ or error).__name__})")
    if isinstance(error, ValueError):  # json.JSONDecodeError: the body was not JSON
        return BadOutput(f"unreadable response body ({type(error).__name__}: {_short(error)})")
    if isinstance(error, (httpx.HTTPError, OSError)):
        return ServerError(f"{type(error).__name__}: {_short(error)}")
    raise error  # a programming error (TypeError, ...) must not be retried as if the server failed


def _root(error: BaseException) -> BaseException:
    """The innermost cause (the OS error says most: 'Connect call failed', 'Name or service not known')."""
    seen: set[int] = set()
    while (inner := error.__cause__ or error.__context__) is not None and id(error) not in seen:
        seen.add(id(error))
        error = inner
    return error


def _retry_after(response: httpx.Response | None) -> float | None:
    if response is None:
        return None
    millis = response.headers.get("retry-after-ms")
    if millis is not None:
        value = parse_retry_after(millis)
        if value is not None:
            return value / 1000.0
    return parse_retry_after(response.headers.get("retry-after"))


def _server_message(error: BaseException) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            text = inner.get("message") or inner.get("type") or json.dumps(inner)[:300]
            code = inner.get("code") or inner.get("type")
            return f"{text} [{code}]" if code and code not in str(text) else str(text)
    status = getattr(error, "status_code", "?")
    return f"HTTP {status}: {_short(error)}"


def _short(error: BaseException, limit: int = 300) -> str:
    text = str(error)
    return text if len(text) <= limit else text[:limit] + "..."
