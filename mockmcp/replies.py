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
from typing import Any, Callable

from . import jsonrpc, model, templates
from .actions import Send
from .context import ROOTS, RequestContext
from .envelope import Envelope

# A private-use code point around a counter: written unescaped by the encoder, and
# checked to occur exactly once in the encoded response (else: not compiled).
_MARK_PREFIX = "\ue000mockmcp-hole-"
_MARK = _MARK_PREFIX + "{}\ue000"
_ENVELOPE_KEYS = ("_meta", "resultType", "ttlMs", "cacheScope")

_encode_str: Callable[[str], str] = json.encoder.encode_basestring
_encode_any: Callable[[Any], str] = jsonrpc.encode_text  # the very encoder of the general path

# What fills a hole, evaluated per request: the id, the uri, a template's value (as
# text, or as JSON), or a template that is one path read from the context (ROOTS).
_ID, _URI, _VALUE, _TEXT, _PATH_VALUE, _PATH_TEXT = range(6)


class CompiledReply:
    """Fragments of one encoded response and the holes between them."""

    __slots__ = ("fragments", "holes")

    def __init__(self, fragments: list[str], holes: list[tuple[int, Any]]) -> None:
        self.fragments = fragments  # len(holes) + 1 pieces of encoded JSON
        self.holes = holes  # (kind, template or None)

    def send(self, ctx: RequestContext) -> Send | None:
        """The response for this request (``None``: a value needs the general path)."""
        frags = self.fragments
        parts = [frags[0]]
        i = 1
        for kind, tpl in self.holes:
            value: Any
            if kind == _ID:
                value = ctx.id
            elif kind == _PATH_TEXT:
                value = templates.walk(tpl[0](ctx), tpl[1])
                if type(value) is not str:
                    value = templates.to_text(value)
            elif kind == _PATH_VALUE:
                value = templates.walk(tpl[0](ctx), tpl[1])
            elif kind == _URI:
                value = ctx.uri
            elif kind == _TEXT:
                value = tpl.render(ctx.scope())
                if type(value) is not str:
                    value = templates.to_text(value)
            else:
                value = tpl.render(ctx.scope())
            t = type(value)
            if t is str:
                parts.append(_encode_str(value))
            elif t is int:
                parts.append(int.__repr__(value))
            else:
                parts.append(_encode_any(value))
            parts.append(frags[i])
            i += 1
        try:
            data = "".join(parts).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from the request: the general path escapes it
            return None
        return Send(None, data, True)


class ReplyCache:
    """The compiled form of each final ``text``/``result`` step, per method, made on first use.

    Keyed by ``id(step)``; each entry holds the step itself, so the id can
    never be reused by another object while the entry lives.
    """

    __slots__ = ("envelope", "_compiled")

    def __init__(self, envelope: Envelope) -> None:
        self.envelope = envelope
        self._compiled: dict[int, tuple[model.Step, str, CompiledReply | None]] = {}

    def send(self, step: model.Step, ctx: RequestContext) -> Send | None:
        """The response ``step`` gives to this request, or ``None``: take the general path."""
        entry = self._compiled.get(id(step))
        if entry is None or entry[1] != ctx.method:
            entry = (step, ctx.method, compile_reply(self.envelope, ctx.method, step))
            self._compiled[id(step)] = entry
        compiled = entry[2]
        return None if compiled is None else compiled.send(ctx)

    def compiled(self) -> int:
        """How many steps have a compiled form (tests check the compiled path ran)."""
        return sum(1 for _, _, reply in self._compiled.values() if reply is not None)


def compile_reply(envelope: Envelope, method: str, step: model.Step) -> CompiledReply | None:
    """Compile ``step`` as answered to ``method``, or ``None`` if it takes the general path."""
    holes: list[tuple[int, Any]] = []  # hole n is written as _MARK.format(n)

    def hole(kind: int, tpl: Any) -> str:
        whole = None if tpl is None else tpl.whole
        if whole is not None and whole[0] == "path" and whole[1][0] in ROOTS:
            # one path from a name the context holds: walked from it, no scope() built
            kind, tpl = (_PATH_TEXT if kind == _TEXT else _PATH_VALUE), (ROOTS[whole[1][0]], whole[1][1:])
        holes.append((kind, tpl))
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
    used: list[tuple[int, Any]] = []
    pos = 0
    for at, length, h in cuts:
        fragments.append(text[pos:at])
        used.append(h)
        pos = at + length
    fragments.append(text[pos:])
    if any(_MARK_PREFIX in f for f in fragments):
        return None  # a placeholder survived in another form: do not guess
    return CompiledReply(fragments, used)


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
