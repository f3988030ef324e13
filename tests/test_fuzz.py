"""A grammar-based fuzzer of input lines: no line a client can send crashes the mock or silences it.

Lines are JSON generated from a grammar (plain values and JSON-RPC envelopes
around the bundled ``default`` scenario's tools), then mutated the ways hostile
or broken clients write them: missing values, numbers JSON does not allow or no
double holds, deep nesting, lone surrogates, duplicate keys, truncation,
bytes that are not UTF-8. Each line is followed by a probe request that must
be answered exactly once. It would have found the crashes on client input that
tests/test_hardening_input.py pins one by one.
"""

from __future__ import annotations

import json
from typing import Any

from conftest import META, run_mock
from hypothesis import HealthCheck, given, settings, strategies as st

from mockmcp.actions import Plan, Send
from mockmcp.connection import Connection
from mockmcp.loader import load
from mockmcp.run import new_engine

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


def probe(n: int) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": f"probe-{n}", "method": "server/discover", "params": {"_meta": META}}) + "\n").encode()


def sent_lines(conn: Connection, data: bytes) -> list[bytes]:
    out = []
    for plan in conn.receive_data(data):
        if type(plan) is Plan:
            out += [a.data for a in plan.all_actions() if type(a) is Send]
    return out


def check_output(lines: list[bytes], probes: int) -> None:
    """Every line is one JSON object; each probe is answered exactly once, successfully."""
    answered: dict[str, int] = {}
    for raw in lines:
        assert raw.endswith(b"\n") and raw.count(b"\n") == 1, raw[:200]
        msg = json.loads(raw)
        assert type(msg) is dict, raw[:200]
        rid = msg.get("id")
        if type(rid) is str and rid.startswith("probe-"):
            assert "result" in msg, msg
            answered[rid] = answered.get(rid, 0) + 1
    assert answered == {f"probe-{n}": 1 for n in range(probes)}


DEFAULT = load("default", use_cache=False)[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(line=mutated())
def test_fuzzed_lines_through_the_core(line: bytes) -> None:
    conn = Connection(new_engine(DEFAULT, seed=0, state_key=b"k"))
    check_output(sent_lines(conn, line + b"\n") + sent_lines(conn, probe(0)), 1)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(lines=st.lists(mutated(), min_size=60, max_size=80))
def test_fuzzed_lines_through_the_process(lines: list[bytes]) -> None:
    data = b"".join(line + b"\n" + probe(n) for n, line in enumerate(lines))
    proc = run_mock("run", "default", input=data, timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr[-3000:]
    check_output(proc.stdout.splitlines(keepends=True), len(lines))
