"""Hostile JSON lines from a grammar: the generators every surface's fuzz test draws from.

Plain values and JSON-RPC envelopes around the bundled ``default`` scenario's tools, mutated the
ways broken clients write them (missing values, numbers JSON does not allow, deep nesting, lone
surrogates, duplicate keys, truncation).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from support.messages import META

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
BAD_NUMBERS = ["+1", ".5", "0x10", "01", "1e400", "-1e999", "1.", "-", "NaN", "Infinity", "9" * 4301, "1" + "0" * 400]


def envelope(rid: Any, method: str, params: Any) -> str:
    msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    return json.dumps(msg)


TOOL_CALLS = st.builds(
    lambda rid, name, args: envelope(rid, "tools/call", {"name": name, "arguments": args, "_meta": META}),
    st.integers(0, 10**6) | st.text(max_size=6),
    st.sampled_from(["echo", "add", "get_weather", "missing"]),
    st.dictionaries(st.sampled_from(["a", "b", "text", "city"]), VALUES, max_size=3),
)
ADDS = st.builds(
    lambda rid, a, b: '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"add","arguments":{"a":%s,"b":%s},"_meta":%s}}'
    % (rid, a, b, json.dumps(META)),
    st.integers(0, 10**6),
    st.sampled_from(["1.5", "1e308", "-1e308", "0", "2"] + BAD_NUMBERS),
    st.sampled_from(["1" + "0" * 309, "1" + "0" * 4299, "1e308", "3"] + BAD_NUMBERS),
)
OTHER_REQUESTS = st.builds(
    lambda rid, method, params: envelope(rid, method, params),
    st.integers(0, 10**6) | st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["tools/list", "prompts/get", "resources/read", "server/discover", "ping", "notifications/cancelled", "x"]),
    VALUES,
)
DOCUMENTS = st.one_of(VALUES.map(json.dumps), TOOL_CALLS, ADDS, OTHER_REQUESTS)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """One generated JSON text, mutated zero or more times, as the bytes of one line."""
    text = draw(DOCUMENTS)
    for _ in range(draw(st.integers(0, 2))):
        text = draw(st.sampled_from(MUTATIONS))(draw, text)
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()) and draw(st.booleans()):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\r"])) + data[at:]
    return data.replace(b"\n", b"")


def _spot(draw: st.DrawFn, text: str, char: str) -> int | None:
    """A random position right after ``char`` in ``text`` (``None`` if there is none)."""
    spots = [i + 1 for i, c in enumerate(text) if c == char]
    return draw(st.sampled_from(spots)) if spots else None


def _drop_value(draw: st.DrawFn, text: str) -> str:
    at = _spot(draw, text, ":")
    if at is None:
        return text
    end = min((i for i in (text.find(",", at), text.find("}", at)) if i >= 0), default=len(text))
    return text[:at] + text[end:]


def _bad_number(draw: st.DrawFn, text: str) -> str:
    at = _spot(draw, text, ":")
    if at is None:
        return text
    return text[:at] + draw(st.sampled_from(BAD_NUMBERS)) + "," + text[at:]


def _deep(draw: st.DrawFn, text: str) -> str:
    depth = draw(st.sampled_from([63, 64, 65, 100, 900, 990, 1100, 20_000]))
    at = _spot(draw, text, ":")
    nest = "[" * depth + "1" + "]" * depth
    if at is None:
        return nest
    return text[:at] + nest + "," + text[at:]


def _surrogate(draw: st.DrawFn, text: str) -> str:
    at = _spot(draw, text, '"')
    if at is None:
        return text
    return text[:at] + draw(st.sampled_from(["\\ud800", "\\udfff", "\ud800", "\\u0000"])) + text[at:]


def _duplicate_key(draw: st.DrawFn, text: str) -> str:
    at = _spot(draw, text, "{")
    if at is None:
        return text
    return text[:at] + draw(st.sampled_from(['"id":1,', '"method":"ping",', '"jsonrpc":"1.0",', '"params":[],'])) + text[at:]


def _truncate(draw: st.DrawFn, text: str) -> str:
    return text[: draw(st.integers(0, max(len(text) - 1, 0)))]


MUTATIONS = [_drop_value, _bad_number, _deep, _surrogate, _duplicate_key, _truncate]
