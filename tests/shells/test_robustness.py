"""Property-based tests: any bytes, any chunking, the core answers sanely and never raises.

Hypothesis generates inputs over the three layers a byte goes through before a
scenario sees it: framing (lines), JSON-RPC decoding, and the engine (through
``Connection`` and the real shell, on the fake link). The properties are the issue's: any chunking
of any input gives the same lines; decoding raises only ``ClientError``; every
well-formed request is answered exactly once; every line written is one valid
JSON message; nothing escapes ``Connection``.
"""

from __future__ import annotations

import json
from typing import Any

from support.fakelink import FakeLink
from support.messages import META
from hypothesis import HealthCheck, given, settings, strategies as st

from mockmcp.wire import errors
from mockmcp.wire import jsonrpc
from mockmcp.core.connection import Connection
from mockmcp.launch.boot import new_engine
from mockmcp.wire.framing import LineFramer, Oversized
from mockmcp.scenario.loader import load

# 60 examples each: tests/wire/test_fuzz.py (grammar-based, core and process) carries the depth now.
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_DEFAULT = load("default", use_cache=False)[0]


# ------------------------------------------------------------------ framing


def reference_lines(data: bytes, max_line: int) -> list[Any]:
    """What framing must produce: split on \\n, strip one \\r, mark over-long lines, keep a final partial line."""
    parts = data.split(b"\n")
    out: list[Any] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if last and not part:
            break
        if len(part) > max_line:
            out.append(("oversized", len(part)))
        else:
            out.append(part[:-1] if part.endswith(b"\r") else part)
    return out


def framed(data: bytes, cuts: list[int], max_line: int) -> list[Any]:
    framer = LineFramer(max_line)
    out: list[Any] = []
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    for a, b in zip(points, points[1:]):
        out += framer.feed(data[a:b])
    out += framer.close()
    return [("oversized", x.length) if isinstance(x, Oversized) else x for x in out]


line_bytes = st.lists(
    st.one_of(st.binary(max_size=40), st.sampled_from([b"\n", b"\r\n", b"\r", b"{}", b"\n\n"])), max_size=30
).map(b"".join)


@SETTINGS
@given(data=line_bytes, cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=20),
       max_line=st.sampled_from([4, 16, 1 << 20]))
def test_any_chunking_yields_the_same_lines(data, cuts, max_line):
    assert framed(data, cuts, max_line) == reference_lines(data, max_line)


# ------------------------------------------------------------------ decoding

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12).filter(lambda s: "wf-" not in s),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.one_of(st.sampled_from(["jsonrpc", "id", "method", "params", "_meta", "name", "arguments", "uri", "requestId"]),
                  st.text(max_size=8)), inner, max_size=5),
    max_leaves=25,
)
METHODS = ["server/discover", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
           "resources/read", "resources/templates/list", "completion/complete", "initialize", "ping",
           "notifications/cancelled", "no/such/method"]


@st.composite
def message_like(draw) -> bytes:
    """A JSON object that looks like JSON-RPC, with every field possibly wrong."""
    msg: dict[str, Any] = {}
    if draw(st.booleans()):
        msg["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "1.0", 2.0, None]))
    if draw(st.booleans()):
        msg["id"] = draw(st.one_of(st.integers(), st.none(), st.booleans(), st.floats(allow_nan=False, allow_infinity=False), json_value))
    if draw(st.booleans()):
        msg["method"] = draw(st.one_of(st.sampled_from(METHODS), json_value))
    if draw(st.booleans()):
        params = draw(st.one_of(json_value, st.dictionaries(st.sampled_from(["name", "arguments", "uri", "cursor", "requestId", "ref", "argument"]), json_value, max_size=4)))
        if isinstance(params, dict) and draw(st.booleans()):
            params["_meta"] = draw(st.one_of(st.just(META), json_value))
        msg["params"] = params
    for key in ("result", "error"):
        if draw(st.integers(0, 9)) == 0:
            msg[key] = draw(json_value)
    return json.dumps(msg).encode()


garbage_line = st.one_of(
    st.binary(max_size=60).map(lambda b: b.replace(b"\n", b" ")),
    json_value.map(lambda v: json.dumps(v).encode()),
    message_like(),
    message_like().map(lambda b: b[: len(b) // 2]),
    st.sampled_from([b"\x00", b"\xff\xfe", b"[]", b"[" * 2000, b"1e400", b'{"id":1e999}', b"NaN", b"\xed\xa0\x80"]),
)


@SETTINGS
@given(line=st.one_of(garbage_line, st.binary(max_size=200)))
def test_decoding_raises_only_client_errors(line):
    try:
        msg = jsonrpc.decode(line)
    except errors.ClientError as exc:
        response = exc.response()
        assert response["error"]["code"] in (-32700, -32600, -32602)
        json.dumps(response, allow_nan=False)
        return
    assert isinstance(msg, (jsonrpc.Request, jsonrpc.Notification, jsonrpc.ClientResponse))


# ------------------------------------------------------------------ engine


@st.composite
def well_formed(draw, n: int) -> tuple[str, bytes]:
    """A well-formed request with a unique string id (its arguments may still be wrong for the tool)."""
    method = draw(st.sampled_from(["server/discover", "tools/list", "tools/call", "prompts/list", "prompts/get",
                                   "resources/list", "resources/read", "resources/templates/list",
                                   "completion/complete", "no/such/method"]))
    params: dict[str, Any] = {}
    if method == "tools/call":
        params = {"name": draw(st.sampled_from(["echo", "add", "get_weather", "nope"])),
                  "arguments": draw(st.dictionaries(st.sampled_from(["text", "a", "b", "city"]), json_value, max_size=3))}
    elif method in ("prompts/get", "resources/read"):
        params = draw(st.dictionaries(st.sampled_from(["name", "uri", "arguments"]), json_value, max_size=3))
    elif draw(st.booleans()):
        params = draw(st.dictionaries(st.sampled_from(["cursor", "ref", "argument"]), json_value, max_size=2))
    meta = dict(META)
    if draw(st.integers(0, 4)) == 0:
        meta["io.modelcontextprotocol/protocolVersion"] = draw(st.sampled_from(["2025-06-18", "1999-01-01"]))
    params["_meta"] = meta
    rid = f"wf-{n}"
    return method, json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


@st.composite
def session(draw) -> tuple[list[bytes], dict[str, str]]:
    lines: list[bytes] = []
    expected: dict[str, str] = {}
    for i in range(draw(st.integers(1, 25))):
        if draw(st.booleans()):
            method, data = draw(well_formed(i))
            expected[f"wf-{i}"] = method
            lines.append(data)
        else:
            lines.append(draw(garbage_line))
    return lines, expected


@SETTINGS
@given(s=session(), cuts=st.lists(st.integers(min_value=0, max_value=5000), max_size=8), crlf=st.booleans())
def test_every_well_formed_request_is_answered_once_with_valid_json(schema, s, cuts, crlf):
    lines, expected = s
    data = (b"\r\n" if crlf else b"\n").join(lines) + b"\n"
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    with FakeLink(new_engine(_DEFAULT)) as link:
        for a, b in zip(points, points[1:]):
            link.send(data[a:b])  # nothing may escape Connection or the shell
        link.eof()
        out = b"".join(link.written)
    assert out == b"" or out.endswith(b"\n")
    answered: dict[Any, int] = {}
    for raw in out.split(b"\n")[:-1]:
        msg = json.loads(raw)  # every line is one JSON value
        rid = msg.get("id")
        method = expected.get(rid) if isinstance(rid, str) else None
        if isinstance(rid, str) and rid.startswith("wf-"):
            answered[rid] = answered.get(rid, 0) + 1
        schema.check(msg, method)
    assert answered == {rid: 1 for rid in expected}


@SETTINGS
@given(lines=st.lists(garbage_line, max_size=30))
def test_the_engine_raises_only_client_errors(lines):
    engine = new_engine(_DEFAULT)
    for line in lines:
        try:
            msg = jsonrpc.decode(line)
            engine.handle(msg)
        except errors.ClientError:
            pass
    conn = Connection(new_engine(_DEFAULT))
    for line in lines:
        conn.receive_data(line + b"\n")  # the boundary: nothing escapes
    conn.receive_eof()
