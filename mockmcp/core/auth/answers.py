"""What the authorization core answers, and its client mistakes built into answers in one place.

An answer is plain data (status, headers, body) that the HTTP shell writes as it is. A client
mistake is an exception carrying what it must be answered with, raised where it is found:

- ``OAuthError``: at the authorization server's endpoints, a JSON error body
  (RFC 6749 5.2, RFC 7591 3.2.2): ``invalid_request``, ``invalid_client`` (401, with a
  ``Basic`` challenge when the client tried Basic), ``invalid_grant``, ``unsupported_grant_type``,
  ``invalid_scope``, ``invalid_target``, ``invalid_redirect_uri``, ``invalid_client_metadata``;
- ``RedirectError``: an authorization request refused after its client and redirect URI were
  found good, sent back to the client on its redirect URI (RFC 6749 4.1.2.1);
- ``BearerError``: at the protected resource, a ``WWW-Authenticate: Bearer`` challenge
  (RFC 6750 3, RFC 9728 5.1): ``401`` without a token or with an invalid one, ``403
  insufficient_scope``, ``400 invalid_request``.

``answer_for`` is the one builder of their answers.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple
from urllib.parse import urlencode

Headers = tuple[tuple[bytes, bytes], ...]

NO_STORE: Headers = ((b"cache-control", b"no-store"), (b"pragma", b"no-cache"))
JSON_TYPE: Headers = ((b"content-type", b"application/json"),)


class HttpAnswer(NamedTuple):
    status: int
    headers: Headers
    body: bytes


def json_answer(status: int, document: Any, headers: Headers = ()) -> HttpAnswer:
    """``allow_nan=False``: an answer is JSON or nothing (what it echoes was read strictly, so no
    NaN can reach it; were one to, this refuses loudly rather than send a body no client parses)."""
    return HttpAnswer(status, JSON_TYPE + headers, json.dumps(document, separators=(",", ":"), allow_nan=False).encode())


def redirect(location: str) -> HttpAnswer:
    """A ``302`` to the client's redirect URI: the client follows nothing, it reads ``Location``."""
    return HttpAnswer(302, ((b"location", location.encode()), *NO_STORE), b"")


def with_query(uri: str, params: dict[str, str]) -> str:
    """``uri`` with ``params`` added to its query (its own query kept, RFC 6749 3.1.2)."""
    if not params:
        return uri
    fragmentless = uri.split("#", 1)[0]
    joiner = "&" if "?" in fragmentless else "?"
    return fragmentless + joiner + urlencode(params)


class AuthMistake(Exception):
    """A client mistake the authorization core answers (the base of the three kinds)."""


class OAuthError(AuthMistake):
    def __init__(self, error: str, description: str, *, status: int = 400) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.status = status  # 401 (invalid_client) challenges Basic, the scheme the server takes (RFC 6749 5.2)


class RedirectError(AuthMistake):
    def __init__(self, error: str, description: str, redirect_uri: str, state: str | None, iss: str | None) -> None:
        super().__init__(f"{error}: {description}")
        self.error = error
        self.description = description
        self.redirect_uri = redirect_uri
        self.state = state
        self.iss = iss


class BearerError(AuthMistake):
    """``error`` is None for a request without a token (RFC 6750 3.1: no error code then)."""

    def __init__(self, status: int, error: str | None, description: str, *, resource_metadata: str | None,
                 scope: list[str] | None) -> None:
        super().__init__(f"{error or 'unauthorized'}: {description}")
        self.status = status
        self.error = error
        self.description = description
        self.resource_metadata = resource_metadata
        self.scope = scope


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(err: BearerError) -> str:
    parts = []
    if err.resource_metadata is not None:
        parts.append(f"resource_metadata={_quoted(err.resource_metadata)}")
    if err.scope:
        parts.append(f"scope={_quoted(' '.join(err.scope))}")
    if err.error is not None:
        parts.append(f"error={_quoted(err.error)}")
        parts.append(f"error_description={_quoted(err.description)}")
    return "Bearer " + ", ".join(parts) if parts else "Bearer"


def answer_for(mistake: AuthMistake) -> HttpAnswer:
    """The one builder of the answers to the authorization core's client mistakes."""
    if isinstance(mistake, BearerError):
        body = {"error": mistake.error or "unauthorized", "error_description": mistake.description}
        return json_answer(mistake.status, body, ((b"www-authenticate", challenge(mistake).encode()),))
    if isinstance(mistake, RedirectError):
        params = {"error": mistake.error, "error_description": mistake.description}
        if mistake.state is not None:
            params["state"] = mistake.state
        if mistake.iss is not None:
            params["iss"] = mistake.iss
        return redirect(with_query(mistake.redirect_uri, params))
    assert isinstance(mistake, OAuthError)
    extra: Headers = NO_STORE
    if mistake.status == 401:
        extra = ((b"www-authenticate", b'Basic realm="mockmcp"'), *NO_STORE)  # the scheme the server takes
    return json_answer(mistake.status, {"error": mistake.error, "error_description": mistake.description}, extra)
