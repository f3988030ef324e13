"""Strict, bounded parsing of what an OAuth client sends: form bodies, query strings, Basic
credentials, JSON registration bodies.

Strict because a mock that judges clients must not guess: an escape that is not ``%XX``, bytes
that are not UTF-8, a repeated parameter (RFC 6749 3.1, 3.2) or a body past ``MAX_FORM_BYTES``
is ``invalid_request``; a parameter sent without a value counts as omitted (RFC 6749 3.1).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import unquote_to_bytes

from mockmcp.core.auth.answers import OAuthError
from mockmcp.wire.jsonrpc import JsonRefused, strict_loads

MAX_FORM_BYTES = 64 * 1024  # a form body or query string
MAX_PARAMS = 64
MAX_JSON_BYTES = 64 * 1024  # a registration request
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
FORM_TYPE = "application/x-www-form-urlencoded"


def _decode(raw: str, what: str) -> str:
    if _BAD_ESCAPE.search(raw):
        raise OAuthError("invalid_request", f"{what}: a '%' that is not a %XX escape")
    try:
        return unquote_to_bytes(raw.replace("+", " ")).decode("utf-8")
    except UnicodeDecodeError:
        raise OAuthError("invalid_request", f"{what}: not UTF-8 once decoded") from None


def parse_pairs(text: str, what: str) -> dict[str, str]:
    """``a=1&b=2`` as a mapping; a repeated name or a malformed escape is ``invalid_request``."""
    if len(text) > MAX_FORM_BYTES:
        raise OAuthError("invalid_request", f"the {what} is over {MAX_FORM_BYTES} bytes")
    out: dict[str, str] = {}
    seen: set[str] = set()
    pieces = [p for p in text.split("&") if p] if text else []
    if len(pieces) > MAX_PARAMS:
        raise OAuthError("invalid_request", f"the {what} has more than {MAX_PARAMS} parameters")
    for piece in pieces:
        raw_name, _, raw_value = piece.partition("=")
        name = _decode(raw_name, what)
        if not name:
            raise OAuthError("invalid_request", f"the {what} has a parameter without a name")
        if name in seen:
            raise OAuthError("invalid_request", f"parameter {name!r} is repeated in the {what} (RFC 6749 3.1)")
        seen.add(name)
        value = _decode(raw_value, what)
        if value:  # a parameter without a value is omitted (RFC 6749 3.1)
            out[name] = value
    return out


def parse_form(body: bytes, content_type: str | None) -> dict[str, str]:
    """A POST's ``application/x-www-form-urlencoded`` body (RFC 6749 3.2)."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind != FORM_TYPE:
        raise OAuthError("invalid_request", f"the body must be {FORM_TYPE} (got {content_type or 'no content type'})")
    if len(body) > MAX_FORM_BYTES:
        raise OAuthError("invalid_request", f"the form body is over {MAX_FORM_BYTES} bytes")
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        raise OAuthError("invalid_request", "a form body is ASCII (other characters are %XX-escaped)") from None
    return parse_pairs(text.strip(), "form body")


def query_of(target: str) -> str:
    return target.split("?", 1)[1].split("#", 1)[0] if "?" in target else ""


_AUTHORIZATION = re.compile(r"(\S*)(\s*)(.*)", re.S)


def split_authorization(header: str) -> tuple[str, str, str]:
    """An ``Authorization`` header as its scheme, the whitespace after it and its credentials
    (RFC 9110 11.4: ``scheme 1*SP credentials``). Split on any whitespace, so that credentials
    after a tab are never read as part of the scheme (and never echoed as one); the caller
    refuses a gap that is not spaces (``gap_problem``)."""
    m = _AUTHORIZATION.fullmatch(header.strip())
    assert m is not None  # (the pattern matches any text)
    return m.group(1), m.group(2), m.group(3)


def scheme_shown(scheme: str, credentials: str) -> str:
    """How an error message names the scheme a client used: only when credentials follow it (a
    lone word may be a credential sent without a scheme, and is never echoed)."""
    return f"{scheme[:30]!r}" if credentials and len(scheme) <= 30 else "a header that is not '<scheme> <credentials>'"


def gap_problem(scheme: str, gap: str) -> str | None:
    """Why the whitespace between a scheme and its credentials is malformed (None: spaces)."""
    if gap.strip(" "):  # a tab (or another whitespace character): RFC 9110 11.4 allows only spaces
        return f"the Authorization header separates {scheme[:30]!r} from its credentials by a tab: use a space (RFC 9110 11.4)"
    return None


def basic_credentials(header: str) -> tuple[str, str]:
    """``Authorization: Basic ...`` as (client_id, secret), each form-urlencoded first (RFC 6749 2.3.1)."""
    scheme, gap, rest = split_authorization(header)
    if not rest:
        raise OAuthError("invalid_client", "the Basic credentials are missing (Basic base64(client_id:secret))", status=401)
    problem = gap_problem(scheme, gap)
    if problem is not None:
        raise OAuthError("invalid_client", problem, status=401)
    try:
        raw = base64.b64decode(rest.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise OAuthError("invalid_client", "the Basic credentials are not base64 of UTF-8 text", status=401) from None
    user, colon, password = raw.partition(":")
    if not colon:
        raise OAuthError("invalid_client", "the Basic credentials have no ':'", status=401)
    return _decode(user, "Basic credentials"), _decode(password, "Basic credentials")


def parse_json_object(body: bytes, content_type: str | None, error: str) -> dict[str, Any]:
    """A registration request's JSON object (RFC 7591 3.1); anything else is ``error``, and so is
    JSON past the limits of a client's line (``wire.jsonrpc.strict_loads``: NaN, a number out of
    range, nesting deeper than ``MAX_DEPTH``)."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise OAuthError(error, f"the body must be application/json (got {content_type or 'no content type'})")
    if len(body) > MAX_JSON_BYTES:
        raise OAuthError(error, f"the body is over {MAX_JSON_BYTES} bytes")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OAuthError(error, f"the body is not UTF-8 (at byte {exc.start})") from None
    try:  # as strictly as a client's line: what is read is echoed, and must encode again
        value = strict_loads(text)
    except JsonRefused as exc:
        raise OAuthError(error, f"the body is refused: {exc.reason}") from None
    if not isinstance(value, dict):
        raise OAuthError(error, "the body must be a JSON object")
    return value
