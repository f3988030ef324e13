"""A plain, deterministic YAML emitter for JSON-like values (cassettes), without PyYAML.

Cassettes are read by people in code review and re-recorded often, so the text must be
stable and diff well: block mappings and sequences (one key per line), the caller's key
order, and every string either plain (when it cannot be read as anything else) or in
double quotes with escapes. Lists of lists are written in flow style on one line.

What this writes is a subset both loaders read the same way (``tests/record/test_cassette.py``
round-trips generated values through the plain loader's YAML). Characters a YAML reader
refuses or treats as line breaks (control characters, NEL, LS, PS, BOM, U+FFFE/FFFF,
lone surrogates) are always escaped. Sans-I/O: no yaml import, so recording never loads it.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

# Plain scalars we allow: word-like text that YAML's core schema reads as a string.
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./@+-]*(?: [A-Za-z0-9_./@+()-]+)*\Z")
_RESERVED = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n", "~"})
_NEEDS_ESCAPE = re.compile("[\x00-\x1f\"\\\\\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def quote(text: str) -> str:
    """``text`` as a YAML double-quoted scalar (one line, every risky character escaped)."""
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def scalar(value: Any) -> str:
    """One scalar in YAML 1.2 core schema form."""
    if type(value) is str:
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        if not math.isfinite(value):
            raise ValueError(f"not a JSON number: {value!r}")
        text = repr(value)
        if "." in text:
            return text
        # "1e+16" is a float to YAML 1.2 but a string to YAML 1.1 readers (PyYAML's safe_load wants
        # a dot): "1.0e+16" is a float to both
        mantissa, e, exponent = text.partition("e")
        return f"{mantissa}.0{e}{exponent}"
    raise TypeError(f"not a JSON scalar: {type(value).__name__}")


@functools.lru_cache(maxsize=1 << 16)
def _string(value: str) -> str:
    """A string, plain where YAML reads it back as this string, else quoted (keys and
    values repeat a lot in a cassette: each is worked out once)."""
    if len(value) < 200 and _PLAIN.match(value) and value.lower() not in _RESERVED:
        return value
    return quote(value)


def _key(key: Any) -> str:
    if type(key) is not str:
        raise TypeError(f"mapping keys must be strings, got {type(key).__name__}")
    return scalar(key)


def flow(value: Any) -> str:
    """A value in flow style on one line (``{a: 1}``-like, but with every string quoted)."""
    if type(value) is dict:
        return "{" + ", ".join(f"{quote(k) if type(k) is str else _key(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if type(value) is list:
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if type(value) is str:
        return quote(value)
    return scalar(value)


def _block(value: Any, indent: int, out: list[str], first: str | None = None) -> None:
    """Append the lines of a non-empty mapping or sequence at ``indent`` spaces; ``first``
    replaces the indentation of the first line (``- `` of the sequence item it is in)."""
    pad = " " * indent
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str:
                raise TypeError(f"mapping keys must be strings, got {type(k).__name__}")
            head = (pad if first is None else first) + _string(k) + ":"
            first = None
            tv = type(v)
            if tv is str:  # the common case first, without the calls _inline makes
                out.append(head + " " + _string(v))
            elif (tv is dict or tv is list) and v:
                out.append(head)
                _block(v, indent + 2, out)
            else:
                out.append(head + " " + _inline(v))
        return
    for item in value:
        lead = (pad if first is None else first) + "- "
        first = None
        ti = type(item)
        if ti is str:
            out.append(lead + _string(item))
        elif ti is dict and item:
            _block(item, indent + 2, out, lead)
        else:
            out.append(lead + _inline(item))


def _inline(value: Any) -> str:
    if type(value) is dict:
        return "{}" if not value else flow(value)
    if type(value) is list:
        return "[]" if not value else flow(value)
    return scalar(value)


def dump(value: dict[str, Any], *, header: str = "") -> str:
    """A whole document: ``header`` lines (comments) first, then the mapping in block style."""
    out = [f"# {line}" if line else "#" for line in header.splitlines()]
    if value:
        _block(value, 0, out)
    else:
        out.append("{}")
    return "\n".join(out) + "\n"


__all__ = ["dump", "flow", "quote", "scalar"]
