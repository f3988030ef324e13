"""Compiled replies: a one-step answer pre-encoded once, with holes for what varies.

Most scripted answers are a single ``text`` or ``result`` step. Built the
general way, every request renders the step, wraps it in the result envelope
(``resultType``, ``serverInfo``, cache hints) and JSON-encodes the whole
response, though only the request id and the template values ever change.
``compile_reply`` builds that response once through the engine's own
functions, with a unique placeholder string in each varying position, encodes
it, and cuts it at the placeholders. Answering is then: evaluate each hole,
JSON-encode that value alone, join. Because the fragments come from the
general path itself, both produce the same bytes (a test compares them over
every bundled scenario).

What is not compiled (``None``) takes the general path: anything but one
``text`` or ``result`` step, templates in object keys, a ``result`` whose
envelope fields (``_meta``, ``resultType``, cache hints) are templated or that
is not an object, and values a hole cannot encode alone (lone surrogates).
Sans-I/O.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

from mockmcp.wire import jsonrpc
from mockmcp.scenario.model import base as model
from mockmcp.scenario import templates
from mockmcp.core.actions import Send
from mockmcp.core.context import ROOTS, RequestContext
from mockmcp.core.envelope import Envelope

if TYPE_CHECKING:
    from mockmcp.scenario.model.catalog import Step

# A private-use code point around a counter: written unescaped by the encoder, and
# checked to occur exactly once in the encoded response (else: not compiled).
_MARK_PREFIX = "\ue000mockmcp-hole-"
_MARK = _MARK_PREFIX + "{}\ue000"
_ENVELOPE_KEYS = ("_meta", "resultType", "ttlMs", "cacheScope")

_encode_str: Callable[[str], str] = json.encoder.encode_basestring
_encode_any: Callable[[Any], str] = jsonrpc.encode_text  # the very encoder of the general path

# What a hole holds: the request id, the uri, a template's value (as JSON) or its text.
_ID, _URI, _VALUE, _TEXT = range(4)


Fill = Callable[[RequestContext], str]
"""What fills one hole after the id: the hole's value for this request, encoded as JSON text."""

Render = Callable[[RequestContext], str]
"""A compiled reply: the whole encoded response line for one request."""


def _renderer(fragments: list[str], fills: list[Fill | None]) -> Render:
    """The response line for one request: ``fragments`` joined with each hole filled.

    Written out for the common shapes, so answering is one call per template hole and
    one join, with no dispatch on a hole's kind per request (decided when its fill was
    made). The request id (``None`` in ``fills``) is always the first hole, since the
    envelope starts with it; ids are strings or integers, written inline.
    """
    assert fills[:1] == [None] and None not in fills[1:]  # (compile_reply: the id first, once)
    rest = [f for f in fills[1:] if f is not None]  # (the same list, typed without None)
    match rest, fragments:
        case [], [f0, f1]:
            return lambda ctx: "".join((f0, str(ctx.id) if type(ctx.id) is int else _encoded(ctx.id), f1))
        case [a], [f0, f1, f2]:
            return lambda ctx: "".join((f0, str(ctx.id) if type(ctx.id) is int else _encoded(ctx.id), f1, a(ctx), f2))
        case [a, b], [f0, f1, f2, f3]:
            return lambda ctx: "".join(
                (f0, str(ctx.id) if type(ctx.id) is int else _encoded(ctx.id), f1, a(ctx), f2, b(ctx), f3))
    first, pairs = fragments[0], list(zip([_fill_id, *rest], fragments[1:]))
    return lambda ctx: first + "".join([fill(ctx) + frag for fill, frag in pairs])


def _fill(kind: int, tpl: Any) -> Fill | None:
    """The fill of one hole, decided once (``None``: the request id, which the renderer
    writes itself). A template that is one path read from a name the context holds
    (``ROOTS``) is walked from it, without building the template scope."""
    if kind == _ID:
        return None
    if kind == _URI:
        return _fill_uri
    whole = tpl.whole
    if whole is not None and whole[0] == "path" and whole[1][0] in ROOTS:
        return _fill_path(whole[1][0], tuple(whole[1][1:]), kind == _TEXT)
    return _fill_template(tpl, kind == _TEXT)


def _encoded(value: Any) -> str:
    """``value`` as JSON text, by the general path's encoder (strings and integers without its frames)."""
    t = type(value)
    if t is str:
        return _encode_str(value)
    if t is int:
        return int.__repr__(value)
    return _encode_any(value)


def _as_text(value: Any) -> str:
    """``value`` as it reads inside text (``templates.to_text``), encoded as a JSON string."""
    return _encode_str(value if type(value) is str else templates.to_text(value))


def _fill_id(ctx: RequestContext) -> str:
    return _encoded(ctx.id)


def _fill_uri(ctx: RequestContext) -> str:
    return _encoded(ctx.uri)


def _fill_path(root: str, path: tuple[Any, ...], text: bool) -> Fill:
    """The fill of a template that is one path from a name the context holds (``ROOTS``)."""
    read = ROOTS[root]
    rest = list(path)
    if len(rest) == 1 and type(rest[0]) is str:  # `arguments.text`: one get, as walk() would
        key = rest[0]
        if text:

            def one_key_text(ctx: RequestContext) -> str:
                cur = read(ctx)
                value = cur.get(key) if type(cur) is dict else templates.walk(cur, rest)
                return _encode_str(value) if type(value) is str else _as_text(value)

            return one_key_text
        return lambda ctx: _encoded(cur.get(key) if type(cur := read(ctx)) is dict else templates.walk(cur, rest))
    convert = _as_text if text else _encoded
    return lambda ctx: convert(templates.walk(read(ctx), rest))


def _fill_template(tpl: Any, text: bool) -> Fill:
    """The fill of any other template: rendered from the whole scope."""
    convert = _as_text if text else _encoded
    return lambda ctx: convert(tpl.render(ctx.scope()))


class ReplyCache:
    """The compiled form of each final ``text``/``result`` step, per method, made on first use.

    Keyed by ``id(step)``; each entry holds the step itself, so the id can
    never be reused by another object while the entry lives.
    """

    __slots__ = ("envelope", "_compiled")

    def __init__(self, envelope: Envelope) -> None:
        self.envelope = envelope
        self._compiled: dict[int, tuple[Step, str, Render | None]] = {}

    def send(self, step: Step, ctx: RequestContext) -> Send | None:
        """The response ``step`` gives to this request, or ``None``: take the general path."""
        entry = self._compiled.get(id(step))
        if entry is None or entry[1] != ctx.method:
            entry = (step, ctx.method, compile_reply(self.envelope, ctx.method, step))
            self._compiled[id(step)] = entry
        render = entry[2]
        if render is None:
            return None
        try:
            return Send(None, render(ctx).encode("utf-8"), True)
        except UnicodeEncodeError:  # a lone surrogate from the request: the general path escapes it
            return None

    def compiled(self) -> int:
        """How many steps have a compiled form (tests check the compiled path ran)."""
        return sum(1 for _, _, reply in self._compiled.values() if reply is not None)


def compile_reply(envelope: Envelope, method: str, step: Step) -> Render | None:
    """Compile ``step`` as answered to ``method``, or ``None`` if it takes the general path."""
    holes: list[Fill | None] = []  # hole n is written as _MARK.format(n)

    def hole(kind: int, tpl: Any) -> str:
        holes.append(_fill(kind, tpl))
        return _MARK.format(len(holes) - 1)

    rid = hole(_ID, None)
    match step:
        case model.TextStep():
            text = step.text
            if "{{" in text:
                text = hole(_TEXT, templates.compile_string(text))
            result = envelope.complete(method, envelope.text_result(method, hole(_URI, None), text))
        case model.ResultStep():
            value = step.result
            if type(value) is not dict or any(templates.has_template(value.get(k)) for k in _ENVELOPE_KEYS if k in value):
                return None
            try:
                value = _with_holes(value, hole)
            except _NotCompilable:
                return None
            result = envelope.complete(method, value)
        case _:
            return None
    text = _encode_any({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n"
    cuts = []  # (where, length, hole) of each placeholder written
    for n, h in enumerate(holes):
        quoted = '"' + _MARK.format(n) + '"'
        at = text.find(quoted)
        if at < 0:
            continue  # a hole the envelope dropped (the uri of a non-resource answer)
        if text.find(quoted, at + 1) >= 0:
            return None
        cuts.append((at, len(quoted), h))
    cuts.sort(key=lambda c: c[0])
    fragments: list[str] = []
    used: list[Fill | None] = []
    pos = 0
    for at, length, h in cuts:
        fragments.append(text[pos:at])
        used.append(h)
        pos = at + length
    fragments.append(text[pos:])
    if any(_MARK_PREFIX in f for f in fragments):
        return None  # a placeholder survived in another form: do not guess
    return _renderer(fragments, used)


class _NotCompilable(Exception):
    pass


def _with_holes(value: Any, hole: Callable[[int, Any], str]) -> Any:
    """``value`` with each template string replaced by a hole's placeholder."""
    if type(value) is str:
        if "{{" not in value:
            return value
        tpl = templates.compile_string(value)
        return hole(_VALUE if tpl.whole is not None else _TEXT, tpl)
    if type(value) is dict:
        out: dict[str, Any] = {}
        for k, v in value.items():
            if type(k) is not str or "{{" in k:
                raise _NotCompilable
            out[k] = _with_holes(v, hole)
        return out
    if type(value) is list:
        return [_with_holes(v, hole) for v in value]
    return value
