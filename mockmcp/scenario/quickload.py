"""The fast load path: plain YAML into data and data into the model, without yaml or cattrs.

Why: a cold spawn paid ~40 ms importing PyYAML and cattrs and generating cattrs'
structure code, and a 100,000-rule scenario spent most of its 9 s in PyYAML's
Python-level node objects, position bookkeeping and cattrs' per-value dispatch.

The rule this module keeps: it is never the one that says no. ``parse`` reads the
common, plain subset of YAML (block mappings and sequences, one-line flow
collections, plain and one-line quoted scalars, comments) and returns ``None`` for
anything else or anything doubtful; ``structure`` returns ``None`` for any value the
strict converter would refuse. The loader then runs the plain path (PyYAML with
marks, cattrs), which finds and locates the problem, so every error and warning
comes from one place. ``tests/scenario/test_quickload.py`` checks both paths agree over
generated YAML and data.

The scalar rules (the YAML 1.2 core-schema resolvers, the conversion of a resolved
scalar, durations, the limits and which union member accepts a value) are not this
module's: both paths take them from ``scalars``, so the plain path, the reference
this one is checked against, does not depend on it.
"""

from __future__ import annotations

import functools
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, Union

import attrs

from mockmcp.scenario.model import base as model
from mockmcp.scenario.model import catalog as model_steps
from mockmcp.scenario.model.catalog import STEP_KEYS, Step
from mockmcp.scenario.scalars import MAX_DEPTH, Refused, acceptor, parse_duration, resolve_plain, scalar

# ------------------------------------------------------------------ YAML subset


class _Unsupported(Exception):
    """Outside the subset (or doubtful): the plain path decides."""


# Characters the subset refuses anywhere: tabs, carriage returns, YAML's other line
# breaks, byte-order marks and every non-printable character.
# Written as the refused characters, not as the negation of the accepted ones: the same
# set, but the negated class took 5 ms to compile, on every cold spawn.
_OUTSIDE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff]")
_BLOCK_KEY = re.compile(r"([^\s\-?:,\[\]{}#&*!|>'\"%@`][^:#]*?) *:(?: +|$)")
_SINGLE = re.compile(r"'((?:[^']|'')*)'")
_DOUBLE = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(?:([\\\"ntr])|x([0-9a-fA-F]{2})|u([0-9a-fA-F]{4}))")
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
# a content line: its indentation and its text (blank and comment-only lines do not match)
_LINE = re.compile(r"^( *)([^ #\n](?:[^\n]*[^ \n])?) *$", re.M)
_QUOTED_KEY_END = re.compile(r" *:(?: +|$)")


def parse(text: str) -> Any:
    """The data of a YAML document in the subset, or ``None`` (the plain path decides)."""
    if _OUTSIDE.search(text):
        return None
    lines = [(len(indent), body) for indent, body in _LINE.findall(text)]
    if not lines or lines[0][0] != 0 or lines[0][1].startswith(("---", "...", "%")):
        return None
    try:
        value, end = _Block(lines).node(0, 0, 0)
    except (_Unsupported, Refused, RecursionError):
        return None
    finally:
        # the per-line caches hold slices of this file: a served process need not keep them
        _key.cache_clear()
        _flow_json.cache_clear()
    return value if end == len(lines) else None


class _Block:
    """Block structure over the document's content lines: (indent, stripped text)."""

    def __init__(self, lines: list[tuple[int, str]]) -> None:
        self.lines = lines

    def node(self, i: int, indent: int, depth: int, found: tuple[str, str] | None = None) -> tuple[Any, int]:
        """The node starting at line ``i`` (indented by ``indent``); returns it and the next line.
        ``found`` is the line's ``key: rest`` when the caller has split it already (each
        key is split once: it was a tenth of the load time of a large file)."""
        if depth >= MAX_DEPTH:
            raise _Unsupported
        if found is None:
            body = self.lines[i][1]
            if body == "-" or body.startswith("- "):
                return self.sequence(i, indent, depth)
            found = _key(body)
            if found is None:
                return _value(body, depth), i + 1  # a line indented below it is refused by the caller
        return self.mapping(i, indent, depth, found)

    def _child(self, i: int, parent: int, depth: int, rest: str) -> tuple[Any, int]:
        """The value after ``key:`` or ``-`` on line ``i``: inline, nested below, or null."""
        lines = self.lines
        below = i + 1 < len(lines) and lines[i + 1][0] > parent
        if rest:
            if below:
                raise _Unsupported  # a continuation line or a nested block after a value
            return _value(rest, depth), i + 1
        if below:
            return self.node(i + 1, lines[i + 1][0], depth + 1)
        return None, i + 1

    def mapping(self, i: int, indent: int, depth: int, first: tuple[str, str]) -> tuple[dict[str, Any], int]:
        """The block mapping whose first line ``i`` splits into ``first``."""
        out: dict[str, Any] = {}
        lines, n = self.lines, len(self.lines)
        found: tuple[str, str] | None = first
        while found is not None:
            key, rest = found
            if key in out:
                raise _Unsupported
            if rest:  # the commonest line, ``key: value``, read here rather than in _child
                if i + 1 < n and lines[i + 1][0] > indent:
                    raise _Unsupported  # a continuation line or a nested block after a value
                out[key] = _value(rest, depth + 1)
                i += 1
            elif i + 1 < n and lines[i + 1][0] == indent and (lines[i + 1][1] == "-" or lines[i + 1][1].startswith("- ")):
                out[key], i = self.sequence(i + 1, indent, depth + 1)  # a sequence at the key's own indent
            else:
                out[key], i = self._child(i, indent, depth + 1, rest)
            if i == n or lines[i][0] != indent:
                break
            found = _key(lines[i][1])
            if found is None:
                raise _Unsupported
        if i < n and lines[i][0] > indent:
            raise _Unsupported
        return out, i

    def sequence(self, i: int, indent: int, depth: int) -> tuple[list[Any], int]:
        out: list[Any] = []
        lines, n = self.lines, len(self.lines)
        while i < n and lines[i][0] == indent and (lines[i][1] == "-" or lines[i][1].startswith("- ")):
            rest = lines[i][1][1:]
            inner = rest.lstrip(" ")
            found = None if not inner or inner == "-" or inner.startswith("- ") else _key(inner)
            if found is not None or inner == "-" or inner.startswith("- "):
                # a compact nested node (``- name: x``): it sits where its text starts
                lines[i] = (indent + 1 + len(rest) - len(inner), inner)
                value, i = self.node(i, lines[i][0], depth + 1, found)
                out.append(value)
            else:
                value, i = self._child(i, indent, depth + 1, _rest(inner))
                out.append(value)
        if i < n and lines[i][0] > indent:
            raise _Unsupported
        return out, i


@functools.lru_cache(maxsize=4096)
def _key(body: str) -> tuple[str, str] | None:
    """``key: rest`` as (key, rest without a trailing comment), or None (cached by
    line: scenarios repeat lines like ``- when: {nth: 0}`` and ``replies:`` often)."""
    if body[0] in "'\"":
        key, end = _quoted(body, 0)
        m = _QUOTED_KEY_END.match(body, end)
        if m is None:
            return None
        return key, _rest(body[m.end() :])
    m = _BLOCK_KEY.match(body)
    if m is None:
        return None
    key = m.group(1)
    if type(_plain(key)) is not str:
        raise _Unsupported  # the plain path says keys must be strings
    return key, _rest(body[m.end() :])


def _rest(text: str) -> str:
    """What follows ``key:`` or ``-``: nothing when it is only a comment."""
    return "" if text.startswith("#") else text


def _value(text: str, depth: int) -> Any:
    """A one-line value in block context: flow collection, quoted or plain scalar."""
    first = text[0]
    if first in "[{'\"":
        if first == "[" or first == "{":
            converted, nesting, end = _flow_json(text)
            value = _flow(converted, depth + nesting)
        else:
            value, end = _quoted(text, 0)
        tail = text[end:]
        after = tail.lstrip(" ")
        if after and not (after[0] == "#" and len(after) < len(tail)):
            raise _Unsupported  # only a comment may follow, after a space
        return value
    if text[0] in "?:,]}#&*!|>%@`" or (text[0] == "-" and (len(text) == 1 or text[1] == " ")):
        raise _Unsupported
    cut = text.find(" #")
    plain = (text if cut < 0 else text[:cut]).rstrip(" ")
    if ": " in plain or plain.endswith(":"):
        raise _Unsupported
    return _plain(plain)


@functools.lru_cache(maxsize=4096)
def _plain(text: str) -> Any:
    """A plain scalar's value (immutable, so one per distinct text is shared)."""
    return scalar(resolve_plain(text), text)


def _quoted(text: str, i: int) -> tuple[str, int]:
    if text[i] == "'":
        m = _SINGLE.match(text, i)
        if m is None:
            raise _Unsupported
        return m.group(1).replace("''", "'"), m.end()
    m = _DOUBLE.match(text, i)
    if m is None:
        raise _Unsupported
    return _unescape_double(m.group(1)), m.end()


def _unescape_double(raw: str) -> str:
    if "\\" not in raw:
        return raw
    if "\\" in _ESCAPE.sub("", raw):
        raise _Unsupported  # an escape outside the few the subset reads
    return _ESCAPE.sub(_unescape, raw)


def _unescape(m: re.Match[str]) -> str:
    if m.group(1):
        return _ESCAPES[m.group(1)]
    code = int(m.group(2) or m.group(3), 16)
    if 0xD800 <= code <= 0xDFFF or (code < 0x20 and code not in (9, 10, 13)) or 0x7F <= code < 0xA0:
        raise _Unsupported
    return chr(code)


# A one-line flow collection is checked token by token by one regex (indicators, ``: ``,
# quoted and plain scalars), its scalars are rewritten as JSON, and ``json`` (C) reads
# the result: the grammar of ``{}``/``[]`` with ``,`` and ``: `` is JSON's, so what it
# refuses (``[a: b]``, ``{a, b}``, trailing commas, non-string keys) is declined.
_SCALAR = r"""'((?:[^']|'')*)'|"((?:[^"\\]|\\.)*)"|((?:[^\s\-?:,\[\]{}#&*!|>'"%@`]|-(?=[^\s,\[\]{}]))[^:,\[\]{}#?]*)"""
_FLOW_TOKENS = re.compile(rf"(?: *(?:[{{}}\[\],]|: |{_SCALAR}))*")
_FLOW_SCALAR = re.compile(_SCALAR)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Unsupported  # a duplicate key
    return out


_SCAN = json.JSONDecoder(object_pairs_hook=_pairs).raw_decode
# Without a comma no object has two pairs, so none can repeat a key: plain dicts, in C.
_SCAN_NO_COMMA = json.JSONDecoder().raw_decode


def _flow(converted: str, depth: int) -> Any:
    """A flow collection's value from its JSON text (``_flow_json``); ``depth`` counts its nesting."""
    if depth >= MAX_DEPTH:
        raise _Unsupported
    try:
        value, used = (_SCAN if "," in converted else _SCAN_NO_COMMA)(converted, 0)
    except (ValueError, StopIteration):  # json's refusal: not a flow collection the subset reads
        raise _Unsupported from None
    if used != len(converted):
        raise _Unsupported
    return value


@functools.lru_cache(maxsize=4096)
def _flow_json(text: str) -> tuple[str, int, int]:
    """The flow collection at the start of ``text`` as JSON text, its nesting (an upper
    bound) and where it ends. Cached by text: scenarios repeat the same ``when`` and
    ``steps`` lines many times, and json then reads each copy into fresh (mutable) data."""
    end = _FLOW_TOKENS.match(text).end()  # type: ignore[union-attr]  # matches the empty string at least
    body = text[:end]
    return _FLOW_SCALAR.sub(_scalar_json, body), body.count("{") + body.count("["), end


def _scalar_json(m: re.Match[str]) -> str:
    kind = m.lastindex  # the one alternative that matched: 1 single, 2 double, 3 plain
    if kind == 3:
        return _plain_json(m.group(3).rstrip(" "))
    if kind == 1:
        text = m.group(1).replace("''", "'")
        # the subset admits no control character, so only these two need escaping in JSON
        return '"' + text + '"' if '"' not in text and "\\" not in text else json.dumps(text)
    double = m.group(2)
    return m.group(0) if "\\" not in double else json.dumps(_unescape_double(double))


@functools.lru_cache(maxsize=4096)
def _plain_json(text: str) -> str:
    return json.dumps(_plain(text))


# ------------------------------------------------------------------ structuring


class _Bail(Exception):
    """A value the strict converter would refuse: the plain path explains it."""


Structurer = Callable[[Any], Any]


def structure(data: Any) -> model.Scenario | None:
    """The scenario the strict converter would build from ``data``, or ``None``
    where it would refuse something (then the loader runs the converter)."""
    try:
        return typing.cast(model.Scenario, _Structure().get(model.Scenario)(data))
    except _Bail:
        return None


class _Structure:
    """One structure function per type, built from the model's annotations (no exec)."""

    def __init__(self) -> None:
        self._built: dict[Any, Structurer] = {}
        self._matches: dict[str, model.Match] = {}

    def get(self, tp: Any) -> Structurer:
        fn = self._built.get(tp)
        if fn is None:
            self._built[tp] = lambda v: self._built[tp](v)  # recursive types see this until built
            fn = self._built[tp] = self._make(tp)
        return fn

    def _make(self, tp: Any) -> Structurer:
        origin = typing.get_origin(tp)
        if tp is Any or origin is dict:
            return _passthrough(acceptor(tp))
        if tp is float:
            return _checked(acceptor(tp), float)
        if tp in (str, int, bool) or origin is Literal:
            return _passthrough(acceptor(tp))
        if tp is model.Duration:
            return _duration
        if tp is model.Match:
            return self._match(self._class(model.Match))
        if origin is list:
            return self._list(tp)
        if tp == Step:
            return self._step()
        if origin in (Union, types.UnionType):
            return self._union(tp)
        if attrs.has(tp):
            return self._class(tp)
        raise TypeError(f"no structure function for {tp}")  # pragma: no cover - a model type the loader cannot read

    def _list(self, tp: Any) -> Structurer:
        (item,) = typing.get_args(tp) or (Any,)
        if item is Any:
            return _passthrough(acceptor(list))
        sub = self.get(item)

        def run(value: Any) -> Any:
            if type(value) is not list:
                raise _Bail
            return [sub(v) for v in value]

        return run

    def _union(self, tp: Any) -> Structurer:
        members = [(acceptor(a), None if a is Any or a is type(None) else self.get(a)) for a in typing.get_args(tp)]

        def run(value: Any) -> Any:
            for accepts, sub in members:
                if accepts(value):
                    return value if sub is None else sub(value)
            raise _Bail

        return run

    def _step(self) -> Structurer:
        kinds = {key: self.get(cls) for key, cls in STEP_KEYS.items()}
        # a one-key step (``{text: hi}``, the usual one) whose class needs only that key:
        # its class, the field's alias and structure function, without the class's checks
        alone = {key: (cls, f.alias, self.get(_hints(cls)[f.name]))
                 for key, cls in STEP_KEYS.items()
                 for f in attrs.fields(cls) if f.metadata.get("key", f.name) == key and _required(cls) == {key}}

        def run(value: Any) -> Any:
            if type(value) is not dict:
                raise _Bail
            if len(value) == 1:
                (key,) = value
                spec = alone.get(key)
                if spec is not None:
                    return spec[0](**{spec[1]: spec[2](value[key])})
                if key in kinds:
                    return kinds[key](value)
                raise _Bail
            found = [k for k in value if k in kinds]
            if len(found) != 1:
                raise _Bail
            return kinds[found[0]](value)

        return run

    def _class(self, cls: type) -> Structurer:
        hints = _hints(cls)
        table = {f.metadata.get("key", f.name): (f.alias, self.get(hints[f.name])) for f in attrs.fields(cls) if f.init}
        required = _required(cls)

        def run(value: Any) -> Any:
            if type(value) is not dict or not required <= value.keys():
                raise _Bail
            kwargs = {}
            for key, v in value.items():
                spec = table.get(key)
                if spec is None:
                    raise _Bail
                kwargs[spec[0]] = spec[1](v)
            return cls(**kwargs)

        return run

    def _match(self, build: Structurer) -> Structurer:
        """Equal ``when`` blocks become one shared (frozen) Match, as in the converter.

        The converter's key is ``json.dumps(value, sort_keys=True)``; the same block
        written the same way is first looked up by ``repr`` (C, a fifth of the cost,
        and equal only for data equal type for type, so it never joins what json
        would keep apart), and only a new spelling pays for the json key."""
        matches = self._matches
        seen: dict[str, model.Match] = {}

        def run(value: Any) -> Any:
            spelling = repr(value)
            found = seen.get(spelling)
            if found is not None:
                return found
            try:
                key = json.dumps(value, sort_keys=True)
            except (TypeError, ValueError):
                return build(value)
            found = matches.get(key)
            if found is None:
                found = matches[key] = build(value)
            seen[spelling] = found
            return found

        return run


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A model class's field types (evaluated once: the step dispatch and the class both need them)."""
    return typing.get_type_hints(cls, model_steps.NAMESPACE)


def _required(cls: type) -> frozenset[str]:
    """The scenario keys a model class cannot do without."""
    return frozenset(f.metadata.get("key", f.name) for f in attrs.fields(cls) if f.init and f.default is attrs.NOTHING)


def _passthrough(accepts: Callable[[Any], bool]) -> Structurer:
    def run(value: Any) -> Any:
        if not accepts(value):
            raise _Bail
        return value

    return run


def _checked(accepts: Callable[[Any], bool], kind: type) -> Structurer:
    def run(value: Any) -> Any:
        if not accepts(value):
            raise _Bail
        try:
            return kind(value)
        except OverflowError:  # an integer too large for a float: the converter reports it
            raise _Bail from None

    return run


def _duration(value: Any) -> model.Duration:
    try:
        return parse_duration(value)
    except (TypeError, ValueError):  # the documented ways parse_duration refuses
        raise _Bail from None
