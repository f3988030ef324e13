"""W3C Trace Context and Baggage formats, for the client checks of ``_meta``.

basic/index.mdx reserves the ``_meta`` keys ``traceparent``, ``tracestate`` and
``baggage`` and says their values MUST follow W3C Trace Context (traceparent,
tracestate) and W3C Baggage. Each function returns why a value does not
(``None``: it does). Pure string rules, sans-I/O; each regex is linear (no
nested repetition), and lengths are checked before any matching.
"""

from __future__ import annotations

import re
from typing import Any

_HEX = "0123456789abcdef"
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
# tracestate keys: a simple key, or tenant@system (multi-tenant vendors)
_TS_KEY = re.compile(r"[a-z][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13}")
_TS_VALUE = re.compile(r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")
_TS_MAX_MEMBERS = 32
# baggage: key is an RFC 7230 token, value baggage-octets (percent-encoded otherwise)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BAGGAGE_VALUE = re.compile(r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_BAGGAGE_MAX_BYTES = 8192
_BAGGAGE_MAX_MEMBERS = 180


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def traceparent_problem(value: Any) -> str | None:
    """``version-traceid-parentid-flags``, lowercase hex; version ff, an all-zero trace
    id or parent id are invalid; a later version may append ``-...`` fields."""
    if type(value) is not str:
        return f"traceparent must be a string, got {_show(value)}"
    if len(value) > 512:
        return f"traceparent is {len(value)} characters long (version 00 has 55)"
    m = _TRACEPARENT.match(value)
    if m is None:
        return f"traceparent {_show(value)} is not version-traceid-parentid-flags in lowercase hex (2-32-16-2 digits)"
    version, trace_id, parent_id, _ = m.groups()
    rest = value[m.end():]
    if version == "ff":
        return "traceparent version ff is invalid"
    if version == "00" and rest:
        return f"traceparent version 00 has exactly 55 characters, got {len(value)}"
    if rest and not rest.startswith("-"):
        return f"traceparent {_show(value)}: fields after the flags must follow a '-'"
    if trace_id == "0" * 32:
        return "traceparent trace-id is all zeros (invalid)"
    if parent_id == "0" * 16:
        return "traceparent parent-id is all zeros (invalid)"
    return None


def tracestate_problem(value: Any) -> str | None:
    """Up to 32 comma-separated ``key=value`` members, keys unique."""
    if type(value) is not str:
        return f"tracestate must be a string, got {_show(value)}"
    if len(value) > 32 * 512:
        return f"tracestate is {len(value)} characters long"
    members = [m.strip(" \t") for m in value.split(",")]
    members = [m for m in members if m]  # empty members are allowed and ignored
    if len(members) > _TS_MAX_MEMBERS:
        return f"tracestate has {len(members)} members, more than {_TS_MAX_MEMBERS}"
    seen: set[str] = set()
    for member in members:
        key, eq, val = member.partition("=")
        if not eq:
            return f"tracestate member {_show(member)} is not key=value"
        if _TS_KEY.fullmatch(key) is None:
            return f"tracestate key {_show(key)} is not a valid key (lowercase letters, digits, _-*/, optionally tenant@system)"
        if _TS_VALUE.fullmatch(val) is None:
            return f"tracestate value {_show(val)} of {key!r} is not 1-256 printable ASCII characters without ',' and '=' (not ending in a space)"
        if key in seen:
            return f"tracestate key {key!r} appears twice"
        seen.add(key)
    return None


def baggage_problem(value: Any) -> str | None:
    """Comma-separated ``key=value`` members (each with optional ``;property``),
    at most 8192 bytes and 180 members."""
    if type(value) is not str:
        return f"baggage must be a string, got {_show(value)}"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > _BAGGAGE_MAX_BYTES:
        return f"baggage is {size} bytes, more than {_BAGGAGE_MAX_BYTES}"
    members = value.split(",")
    if len(members) > _BAGGAGE_MAX_MEMBERS:
        return f"baggage has {len(members)} members, more than {_BAGGAGE_MAX_MEMBERS}"
    for member in members:
        pair, *properties = member.split(";")
        key, eq, val = pair.partition("=")
        key, val = key.strip(" \t"), val.strip(" \t")
        if not eq or _TOKEN.fullmatch(key) is None:
            return f"baggage member {_show(member.strip())} is not key=value with a token key"
        if _BAGGAGE_VALUE.fullmatch(val) is None or _PERCENT.search(val):
            return f"baggage value {_show(val)} of {key!r} has characters that must be percent-encoded"
        for prop in properties:
            pkey, peq, pval = prop.partition("=")
            if _TOKEN.fullmatch(pkey.strip(" \t")) is None or (peq and (_BAGGAGE_VALUE.fullmatch(pval.strip(" \t")) is None or _PERCENT.search(pval))):
                return f"baggage property {_show(prop.strip())} of {key!r} is not a token or token=value"
    return None


CHECKS = {"traceparent": traceparent_problem, "tracestate": tracestate_problem, "baggage": baggage_problem}
