"""The one redaction vocabulary: which names hold secrets, what replaces them, how one is named.

The recorder's ``Redactor`` (``record/redact.py``) keeps secrets out of cassettes; the journal
keeps them out of what it writes of an HTTP request (its ``Authorization`` header, a cookie,
an API key); the authorization front's journal events name a token, code or client id by a
fingerprint only. All three need the same answer to "is this a secret?" and the same
placeholder, so a reader of a cassette, a journal, a report or a timeline sees one convention.
They sit here, in the lowest layer, because the recorder and the verifier may not import each
other. Sans-I/O: no regular expression is compiled at import (this is on the spawn path of
every verified run).
"""

from __future__ import annotations

import hashlib

PLACEHOLDER = "[REDACTED]"
# Words that mark a name as secret wherever they appear in it (case and separators ignored).
DEFAULT_SECRET_WORDS = ("authorization", "token", "apikey", "password", "passwd", "secret", "cookie")
# Protocol keys that contain such a word but carry no secret.
NOT_SECRETS = frozenset({"progresstoken", "maxtokens", "totaltokens", "inputtokens", "outputtokens"})
# HTTP authentication schemes whose credential follows the scheme name and one space (RFC 9110 11.4):
# the scheme is kept (what kind of credential was sent is not a secret), the credential is not.
AUTH_SCHEMES = frozenset({"bearer", "basic", "dpop", "token", "apikey", "mac"})


def norm(name: str) -> str:
    """A name as the vocabulary compares it: lower case, no ``_`` or ``-``."""
    return name.lower().replace("_", "").replace("-", "")


def secret_name(name: str, words: tuple[str, ...] = DEFAULT_SECRET_WORDS, exact: frozenset[str] = frozenset()) -> bool:
    """Does a key or header called ``name`` hold a secret? (``exact``: normalized names that always do.)"""
    n = norm(name)
    return n in exact or (n not in NOT_SECRETS and any(w in n for w in words))


def split_credential(value: str) -> tuple[str, str] | None:
    """``("Bearer", "abc")`` for ``"Bearer abc"``: a known scheme and its credential; else None."""
    scheme, sep, credential = value.strip().partition(" ")
    credential = credential.strip()
    if not sep or not credential or scheme.lower() not in AUTH_SCHEMES:
        return None
    return scheme, credential


def redact_header(name: str, value: str) -> str:
    """A request header's value as a journal may keep it: a secret-looking header's value is
    ``PLACEHOLDER``, after its scheme when it has one (``Bearer [REDACTED]``, so a reader still
    sees what kind of credential was sent); any other header as it was."""
    if not secret_name(name):
        return value
    parts = split_credential(value)
    return PLACEHOLDER if parts is None else f"{parts[0]} {PLACEHOLDER}"


def redact_headers(headers: dict[str, str]) -> dict[str, str]:
    """``headers`` with every secret value redacted (the same mapping when none is secret)."""
    out: dict[str, str] | None = None
    for name, value in headers.items():
        safe = redact_header(name, value)
        if safe is not value:
            if out is None:
                out = dict(headers)
            out[name] = safe
    return headers if out is None else out


def fingerprint(secret: str) -> str:
    """A short stable name for a secret (the first 12 hex digits of its SHA-256): two records can be
    seen to carry the same token or code without either holding it, and it cannot be turned back
    into one (a 256-bit token is not found from 48 bits of its hash)."""
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()[:12]


__all__ = ["AUTH_SCHEMES", "DEFAULT_SECRET_WORDS", "NOT_SECRETS", "PLACEHOLDER", "fingerprint", "norm",
           "redact_header", "redact_headers", "secret_name", "split_credential"]
