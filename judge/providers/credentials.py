"""Credentials in judge specs and configs: used at runtime, never recorded.

A judge URL may carry credentials (``http://user:PASSWORD@host/v1``, ``?api_key=...``) and a panel config's
``params`` may hold headers (``Authorization``) or keys named like ``token``/``secret``/``password``. The
provider uses them in memory (:func:`split_credentials`); everything that writes a spec or a config to the
run directory, the store or the terminal goes through :func:`redact` - the one place that decides what a
secret looks like.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

REDACTED = "***"

# Words that make a name secret when they appear as a whole word of it (``X-Api-Key``, ``access_token``,
# ``clientSecret``); ``max_tokens`` is not ``token``, so settings are left alone.
_SECRET_WORDS = frozenset({
    "key", "apikey", "token", "secret", "password", "passwd", "pwd", "passphrase", "authorization", "auth",
    "bearer", "cookie", "credential", "credentials", "signature", "sig", "session", "jwt",
})
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_AUTH_VALUE = re.compile(r"^\s*(bearer|basic|token)\s+\S", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Whether a setting, header or query parameter of this name holds a secret."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()
    words = [w for w in re.split(r"[^a-z0-9]+", spaced) if w]
    return "".join(words) in _SECRET_WORDS or any(word in _SECRET_WORDS for word in words)


def redact(value: Any) -> Any:
    """A copy of ``value`` (a spec, URL, config mapping, list...) that is safe to record.

    URLs (also inside a spec such as ``openai-compatible:m@http://u:p@h/v1``) lose their user info and the
    values of secret-named query parameters; mapping entries with a secret-looking name, and any string
    that is an ``Authorization`` value (``Bearer ...``), become ``***``. Everything else is kept as is.
    """
    if isinstance(value, str):
        return REDACTED if _AUTH_VALUE.match(value) else strip_credentials(value)
    if isinstance(value, Mapping):
        return {key: (REDACTED if is_secret_name(str(key)) and value[key] not in (None, "") else redact(value[key]))
                for key in value}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(item) for item in value)
    return value


def strip_credentials(url_or_spec: str | None) -> str | None:
    """``url_or_spec`` without ``user:password@`` and with secret query values replaced by ``***``."""
    if not url_or_spec:
        return url_or_spec
    scheme = _SCHEME.search(url_or_spec)
    if scheme is None:
        return url_or_spec
    head, url = url_or_spec[:scheme.start()], url_or_spec[scheme.start():]
    try:
        parts = urlsplit(url)
        host = _host(parts)
    except ValueError:
        return head + url.split("://", 1)[0] + "://" + REDACTED  # unreadable: keep nothing of it
    query = "&".join(_redact_query_item(item) for item in parts.query.split("&")) if parts.query else ""
    if parts.username is None and parts.password is None and query == parts.query:
        return url_or_spec  # nothing to hide: the text stays exactly as written (it is part of cache keys)
    return head + urlunsplit((parts.scheme, host, parts.path, query, parts.fragment))


def split_credentials(url: str | None) -> tuple[str | None, dict[str, str], dict[str, str]]:
    """For the SDK clients: the URL without credentials, the headers and the query parameters they become.

    ``user:password@`` becomes an HTTP Basic ``Authorization`` header (what httpx would send; aiohttp refuses
    credentials in the URL beside the SDK's own header). Every query parameter moves to the client's default
    query, so it is sent with each request instead of being lost when the SDK appends its path.
    """
    if not url:
        return url, {}, {}
    parts = urlsplit(url)
    headers: dict[str, str] = {}
    if parts.username is not None or parts.password is not None:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    query: dict[str, str] = {}
    for item in parts.query.split("&") if parts.query else []:
        name, _, value = item.partition("=")
        query[unquote(name)] = unquote(value)
    clean = urlunsplit((parts.scheme, _host(parts), parts.path, "", parts.fragment))
    return clean, headers, query


def _host(parts: Any) -> str:
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    if parts.port:
        host += f":{parts.port}"
    return host


def _redact_query_item(item: str) -> str:
    name, sep, _ = item.partition("=")
    return f"{name}={REDACTED}" if sep and is_secret_name(unquote(name)) else item
