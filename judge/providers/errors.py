"""Typed provider errors: every SDK exception is classified into one of these kinds.

The retry loop (:mod:`judge.providers.retry`) decides on the kind alone, so provider modules only have to
map their SDK's exceptions here. Messages never include request headers, so an API key cannot leak into a
log, a verdict or the store through an error text.
"""

from __future__ import annotations

from typing import Any, Literal

ErrorKind = Literal["rate_limited", "server_error", "timeout", "connection_error", "bad_output", "context_overflow",
                    "refusal", "auth", "bad_request"]

# Words of a 429 whose quota (not rate) is exhausted: OpenAI's insufficient_quota ("You exceeded your current
# quota, please check your plan and billing details"), a used-up credit balance. Narrow on purpose: Azure's
# transient 429 links to "aka.ms/oai/quotaincrease", and Gemini's per-minute limits say "Quota exceeded".
_QUOTA_MARKERS = ("insufficient_quota", "exceeded your current quota", "plan and billing", "credit balance")
# Kinds worth another attempt after a pause; the others fail the same way every time.
RETRYABLE_KINDS: frozenset[str] = frozenset({"rate_limited", "server_error", "timeout", "connection_error", "bad_output"})


class ProviderError(Exception):
    """A provider call that did not produce a completion.

    ``kind`` is the classification; ``retry_after`` is the server's requested pause in seconds (from a
    ``Retry-After`` header), when it sent one; ``status`` is the HTTP status, when there was one.
    """

    kind: ErrorKind = "server_error"

    def __init__(self, message: str, *, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status
        # The call's attempts, failed ones included: judge.providers.retry.Attempt rows, set by its retry loop (not
        # typed as such: retry imports this module).
        self.attempts: list[Any] = []

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS and not self.quota_exhausted

    @property
    def quota_exhausted(self) -> bool:
        """A 429 that says the account's quota or credit is used up: unlike a rate limit, waiting does not help."""
        return self.kind == "rate_limited" and any(word in str(self).lower() for word in _QUOTA_MARKERS)

    def __str__(self) -> str:
        base = super().__str__()
        return f"{self.kind}: {base}" if not base.startswith(self.kind) else base


class RateLimited(ProviderError):
    kind: ErrorKind = "rate_limited"


class ServerError(ProviderError):
    kind: ErrorKind = "server_error"


class ProviderTimeout(ProviderError):
    kind: ErrorKind = "timeout"


class ConnectionFailed(ProviderError):
    """No connection to the server (refused, unknown host, connect timeout, TLS handshake): the request was
    never sent, so it cost nothing."""

    kind: ErrorKind = "connection_error"


class BadOutput(ProviderError):
    """The server answered, but not with a response the SDK could read (e.g. a malformed JSON body)."""

    kind: ErrorKind = "bad_output"


class ContextOverflow(ProviderError):
    kind: ErrorKind = "context_overflow"


class Refused(ProviderError):
    kind: ErrorKind = "refusal"


class AuthError(ProviderError):
    kind: ErrorKind = "auth"


class BadRequest(ProviderError):
    """A request the server rejects as invalid (4xx other than auth/rate/context): retrying cannot help."""

    kind: ErrorKind = "bad_request"


def unscored_reason(error: ProviderError) -> str:
    """The reason a call that ended with ``error`` is unscored: ``context_overflow``, ``refusal`` and
    ``connection_error`` keep their kind (a rerun or a bigger model can tell them apart); every other error is
    ``provider_error``."""
    return error.kind if error.kind in ("context_overflow", "refusal", "connection_error") else "provider_error"


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` (or ``retry-after-ms``) header value; None when absent or unreadable.

    Only the delta-seconds form is read; an HTTP-date falls back to our own backoff, which is safe.
    """
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "context length",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "input is too long",
)


def looks_like_context_overflow(message: str) -> bool:
    """Whether a 400 error text says the prompt was too long (wording differs across servers)."""
    lowered = message.lower()
    return any(marker in lowered for marker in _CONTEXT_MARKERS)


def classify_status(status: int, message: str, retry_after: float | None) -> ProviderError:
    """Map an HTTP status (and the error text) to a typed error."""
    if status == 429:
        return RateLimited(message, retry_after=retry_after, status=status)
    if status in (401, 403):
        return AuthError(message, status=status)
    if status in (408,):
        return ProviderTimeout(message, retry_after=retry_after, status=status)
    if status >= 500:
        return ServerError(message, retry_after=retry_after, status=status)
    if status in (400, 413, 422) and looks_like_context_overflow(message):
        return ContextOverflow(message, status=status)
    if status == 413:
        return ContextOverflow(message, status=status)
    return BadRequest(message, status=status)
