"""The scalar rules both load paths share: what a plain YAML scalar is, and the limits.

``quickload`` (the fast path) and ``plainload`` (PyYAML and cattrs, the reference
``tests/scenario/test_quickload.py`` checks the fast path against) must read every value
alike, so each rule lives once, here, and neither path borrows it from the other:

- the YAML 1.2 core-schema resolvers (``yes``, ``on`` and ``2026-07-28`` are strings)
  and how a resolved scalar becomes a value, refusing what JSON cannot carry (a
  float literal that would be infinity, ``.nan``, an integer past ``MAX_INT_DIGITS``);
- the nesting bound ``MAX_DEPTH``;
- durations (``250ms``, ``1.5s``, ``2m``; templated ones checked, rendered later);
- which member of a union accepts a value (by its shape, first wins), and how an
  error message names a value.

Plain code over strings and values: no I/O, and neither yaml nor cattrs (the fast
path imports this on every cold spawn; the plain path's imports are the cost it avoids).
"""

from __future__ import annotations

import math
import re
import typing
from collections.abc import Callable
from typing import Any, Literal

import attrs

from mockmcp.scenario.model import base as model

STR = "tag:yaml.org,2002:str"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
BOOL = "tag:yaml.org,2002:bool"
NULL = "tag:yaml.org,2002:null"

# YAML 1.2 core schema: (tag, pattern, first characters), in resolution order.
CORE_SCHEMA: list[tuple[str, re.Pattern[str], list[str]]] = [
    (BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")),
    (NULL, re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]),
    (INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")),
    (
        FLOAT,
        re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
        list("-+0123456789."),
    ),
]
_RESOLVERS: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
for _tag, _pattern, _first in CORE_SCHEMA:
    for _ch in _first:
        _RESOLVERS.setdefault(_ch, []).append((_tag, _pattern))

# Python's default limit for int <-> str conversion: a longer integer could be
# loaded but never sent (``json.dumps`` raises), so the loader refuses it.
MAX_INT_DIGITS = 4300
_INT_BOUND = 10**MAX_INT_DIGITS
# Nesting of mappings and lists, counted from the top of the file (see loader).
MAX_DEPTH = 100


class Refused(ValueError):
    """A scalar the scenario format does not accept; the message is for the author."""


def resolve_plain(value: str) -> str:
    """The tag of a plain scalar, as PyYAML's resolver gives it with the core schema."""
    for tag, pattern in _RESOLVERS.get(value[:1], ()):
        if pattern.match(value):
            return tag
    return STR


def abbrev(text: str) -> str:
    return text if len(text) <= 20 else f"{text[:8]}...{text[-8:]} ({len(text)} characters)"


def scalar(tag: str, v: str) -> Any:
    """A resolved scalar's value; raises ``Refused`` for what JSON cannot carry."""
    if tag == STR:
        return v
    if tag == NULL:
        return None
    if tag == BOOL:
        return v.lower() == "true"
    if tag == INT:
        # refused past MAX_INT_DIGITS digits before converting a long decimal (which
        # Python itself refuses); a hex or octal one is checked by value
        if v[:2] in ("0x", "0o"):
            n = int(v, 0)
        else:
            n = int(v) if len(v.lstrip("+-")) <= MAX_INT_DIGITS else _INT_BOUND
        if abs(n) >= _INT_BOUND:
            raise Refused(f"integer {abbrev(v)} has more than {MAX_INT_DIGITS} digits")
        return n
    if tag == FLOAT:
        if "inf" in v.lower() or "nan" in v.lower():
            raise Refused(f"{v} is not a JSON number")
        f = float(v)
        if not math.isfinite(f):
            raise Refused(f"{abbrev(v)} is too large for a JSON number (it would be infinity)")
        return f
    raise Refused(f"unsupported YAML tag {tag}")


def show(value: Any) -> str:
    """A value as an error message names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m)\s*$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0}


def parse_duration(value: Any) -> model.Duration:
    """``250ms``, ``1.5s`` or ``2m`` as a Duration; a templated one is checked and kept
    to be rendered per request. Raises TypeError (not a string) or ValueError."""
    if type(value) is not str:
        raise TypeError(f"expected a duration like '250ms' or '1.5s', got {show(value)}")
    if "{{" in value:
        from mockmcp.scenario.templates import compile_string  # only scenarios with templated durations need it

        compile_string(value)  # a template that cannot parse is refused here (TemplateError is a ValueError)
        return model.Duration(0.0, value)
    m = _DURATION.match(value)
    if not m:
        raise ValueError(f"invalid duration {value!r}: use a number with ms, s or m (like '250ms')")
    seconds = float(m.group(1)) * _UNIT[m.group(2)]
    if not math.isfinite(seconds):
        raise ValueError(f"duration {abbrev(value)} is too long to be a number")
    return model.Duration(seconds)


def acceptor(tp: Any) -> Callable[[Any], bool]:
    """Does a value have the shape of ``tp``? Picks the member of a union (first wins)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return lambda v: True
    if tp is type(None):
        return lambda v: v is None
    if tp is float:
        return lambda v: type(v) in (int, float)
    exact = {str: str, int: int, bool: bool, model.Duration: str}.get(tp)
    if exact is not None:
        return lambda v: type(v) is exact
    if origin is list:
        return lambda v: type(v) is list
    if origin is dict or attrs.has(tp):
        return lambda v: type(v) is dict
    if origin is Literal:
        choices = typing.get_args(tp)
        return lambda v: any(v == a and type(v) is type(a) for a in choices)
    return lambda v: False
